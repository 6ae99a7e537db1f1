"""The dedup index of an ingest run: the (session, id) of every event stored, and what claimed it.

It is the one thing ingest keeps per event, so it is kept small: one id string and one dict
entry per event, grouped by session (no tuple per event), and it also answers the question
of each input file ("was this id already used earlier in this file?") without a second set.
Each id maps to a small int; for input ``n`` of the run (from 1):

- ``0``: stored before this run, or by an earlier input of it;
- ``2n``: the input's own id, first used in input n and stored by it;
- ``2n + 1``: an id input n derived (its event had none) and stored;
- ``-2n``: stored before input n, then used as an id in it;
- ``-(2n + 1)``: derived and stored by input n, then used as an id in it.

An id used twice in one input is a repeated id (a bad line); an id equal to one stored earlier,
or derived earlier in the same input, is a duplicate: the same answers as the single-process
path, whose adapter keeps the ids of the input in a set of its own. Rolling back an input (a
malformed line fails the whole file) walks the whole index, which only happens on that error.

:class:`Forgotten` is what `memdream forget` erased: ingest leaves those sessions and events out when the
same log comes again, so that an erasure holds (digests of their ids are kept, never their content).
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memdream.errors import InvalidMemory

NEW, STORED, REPEATED = 0, 1, 2  # what claim() found


class DedupIndex:
    def __init__(self, stored: Iterable[tuple[str, str]] = ()) -> None:
        self._ids: dict[str, dict[str, int]] = {}
        for session, event_id in stored:
            self._session(session)[event_id] = 0
        self.input = 0

    def _session(self, session: str) -> dict[str, int]:
        ids = self._ids.get(session)
        if ids is None:
            ids = self._ids[sys.intern(session)] = {}
        return ids

    def begin(self) -> None:
        """Start the next input of the run."""
        self.input += 1

    def __contains__(self, key: tuple[str, str]) -> bool:
        ids = self._ids.get(key[0])
        return ids is not None and key[1] in ids

    def __len__(self) -> int:
        return sum(len(ids) for ids in self._ids.values())

    def add(self, session: str, event_id: str) -> None:
        """Record an event the current input stored without claiming its id (a derived id, or
        any event of the single-process path, whose adapter checks ids itself)."""
        self._session(session)[event_id] = 2 * self.input + 1

    def ids_of(self, session: str) -> dict[str, int]:
        """The ids of ``session`` (id -> owner), for a caller that claims many: an id not in it is NEW,
        claimed by setting it to :attr:`own` (what :meth:`claim` does, without a call an event); any
        other id goes through :meth:`claim`."""
        return self._session(session)

    @property
    def own(self) -> int:
        """What an id first used and stored by the current input maps to."""
        return 2 * self.input

    def claim(self, session: str, event_id: str) -> int:
        """Use ``event_id`` in the current input: NEW (now recorded as stored by this input: the
        caller stores the event), STORED (a duplicate of a stored event) or REPEATED (this input
        used the id before)."""
        ids = self._session(session)
        owner = ids.get(event_id)
        own, derived = 2 * self.input, 2 * self.input + 1
        if owner is None:
            ids[event_id] = own
            return NEW
        if owner == own or owner == -own or owner == -derived:
            return REPEATED
        ids[event_id] = -derived if owner == derived else -own
        return STORED

    def rollback(self) -> None:
        """Forget what the current input added or sighted."""
        own, derived = 2 * self.input, 2 * self.input + 1
        added = {own, derived, -derived}
        for session, ids in list(self._ids.items()):
            for event_id, owner in list(ids.items()):
                if owner in added:
                    del ids[event_id]
                elif owner == -own:
                    ids[event_id] = 0
            if not ids:
                del self._ids[session]


class ContentIndex:
    """The content fingerprint (:func:`memdream.ingest.source_ids.fingerprint`) of events by
    ``(session, id)``, so that an id taken by other content is never taken for a duplicate.

    Events stored before the run are read back from the raw layer the first time an id of their
    session is seen again: ``load(session)`` gives the events of the segments holding that session
    which were not read yet (other sessions' too: they are kept, so no segment is read twice).
    Events this run stores are recorded as they are written, except those of a file prepared by
    worker processes (one digest per event of a big file would double the run's memory): such an
    id seen again in the same run counts as a duplicate, as before.
    """

    def __init__(self, load: Callable[[str], Iterable[dict[str, Any]]],
                 fingerprint: Callable[[dict[str, Any]], str]) -> None:
        self._load, self._fingerprint = load, fingerprint
        self._stored: dict[str, dict[str, str]] = {}
        self._loaded: set[str] = set()
        self._run: dict[tuple[str, str], str] = {}
        self._input: list[tuple[str, str]] = []

    def get(self, session: str, event_id: str) -> str | None:
        """The fingerprint of the event stored as ``(session, id)``; None when it is not known."""
        found = self._run.get((session, event_id))
        if found is not None:
            return found
        if session not in self._loaded:
            self._loaded.add(session)
            stored, fingerprint = self._stored, self._fingerprint
            for event in self._load(session):
                ids = stored.get(event["session"])
                if ids is None:
                    ids = stored[event["session"]] = {}
                ids[event["id"]] = fingerprint(event)
        return self._stored.get(session, {}).get(event_id)

    def begin(self) -> None:
        """Start the next input of the run."""
        self._input = []

    def add(self, session: str, event_id: str, fingerprint: str) -> None:
        """Record an event the current input stored."""
        self._run[(session, event_id)] = fingerprint
        self._input.append((session, event_id))

    def rollback(self) -> None:
        """Forget what the current input stored."""
        for key in self._input:
            self._run.pop(key, None)
        self._input = []


FORGOTTEN_FILE = "forgotten.json"


def forgotten_path(state_dir: Path) -> Path:
    """Beside ingest's other dedup state: ``.memdream/ingest/forgotten.json``."""
    return state_dir / "ingest" / FORGOTTEN_FILE


def forgotten_digest(*parts: str) -> str:
    """The digest that stands for a forgotten session (its id) or event (session and id): a hash of
    the identifiers, never the content (the canonical JSON of the list, so no pair of parts collides)."""
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


class Forgotten:
    """What `memdream forget` erased, for ingest to leave out when the same log is ingested again:
    digests of session ids (a forgotten session) and of (session, id) pairs (forgotten events)."""

    def __init__(self, sessions: Iterable[str] = (), events: Iterable[str] = ()) -> None:
        self.sessions, self.events = set(sessions), set(events)
        self._checked: dict[str, bool] = {}  # session -> forgotten (one digest a session, not an event)

    def __bool__(self) -> bool:
        return bool(self.sessions or self.events)

    @classmethod
    def load(cls, state_dir: Path) -> Forgotten:
        try:
            data = json.loads(forgotten_path(state_dir).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except ValueError:
            raise InvalidMemory(f"{forgotten_path(state_dir)}: not what `memdream forget` writes; restore "
                                "it from a backup (without it, ingest would store forgotten events again)") from None
        return cls(data.get("sessions", []), data.get("events", []))

    def save(self, state_dir: Path) -> None:
        from memdream import yamlio

        data = {"version": 1, "sessions": sorted(self.sessions), "events": sorted(self.events)}
        yamlio.write_atomic(forgotten_path(state_dir), json.dumps(data, indent=0) + "\n")

    def forget_session(self, session: str) -> None:
        self.sessions.add(forgotten_digest(session))

    def forget_event(self, session: str, event_id: str) -> None:
        self.events.add(forgotten_digest(session, event_id))

    def holds_session(self, session: str) -> bool:
        found = self._checked.get(session)
        if found is None:
            found = self._checked[session] = bool(self.sessions) and forgotten_digest(session) in self.sessions
        return found

    def holds(self, session: str, event_id: str) -> bool:
        """Whether the event ``(session, id)`` was forgotten, alone or with its session."""
        return self.holds_session(session) or \
            (bool(self.events) and forgotten_digest(session, event_id) in self.events)
