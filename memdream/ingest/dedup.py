"""The dedup index of an ingest run: the (session, id) of every event stored, and what claimed it.

It is the one thing ingest keeps per event, so it is kept small: one id string and one dict
entry per event, grouped by session (no tuple per event), and it also answers the question
of each input file ("was this id already used earlier in this file?") without a second set.
Each id maps to who claimed it:

- ``0``: stored before this input;
- ``n`` (the input's number, from 1): added by input n of this run;
- ``-n``: stored before input n, and seen again in it (a second sighting in input n is then a
  repeated id, not a duplicate of something stored).

Rolling back an input (a malformed line fails the whole file) drops what it added and turns
its ``-n`` marks back into ``0``; it walks the whole index, which only happens on that error.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

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
        """Record an event the current input stored."""
        self._session(session)[event_id] = self.input

    def claim(self, session: str, event_id: str) -> int:
        """Sight ``event_id`` in the current input: NEW (now recorded as added by this input:
        the caller stores it), STORED (a duplicate of an event stored before this input) or
        REPEATED (the input used this id before)."""
        ids = self._session(session)
        owner = ids.get(event_id)
        if owner is None:
            ids[event_id] = self.input
            return NEW
        if owner == self.input or owner == -self.input:
            return REPEATED
        ids[event_id] = -self.input
        return STORED

    def rollback(self) -> None:
        """Forget what the current input added or sighted."""
        current = self.input
        for session, ids in list(self._ids.items()):
            for event_id, owner in list(ids.items()):
                if owner == current:
                    del ids[event_id]
                elif owner == -current:
                    ids[event_id] = 0
            if not ids:
                del self._ids[session]
