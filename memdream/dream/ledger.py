"""The dream ledger: which raw events each dream consumed, which are quarantined, which wait.

The checkpoint (state.json ``consumed``: the last raw segment dreamed) says how far dreaming has
read. The ledger says what became of what it read, per run and episode:

- ``consumed``: dreamed by ``run``; a rollback of that run quarantines them;
- ``quarantined``: their run was rolled back; no dream reads them again (a deterministic dream
  would simply re-apply them), and the statistics rebuilt after a rollback leave them out;
- ``pending``: to be dreamed by the next run although they are below the checkpoint
  (`memdream rollback --redream`, after a rule or a setting was fixed).

An entry names segments ``first..last`` and, optionally, the episodes ``(session, number)`` it
covers in them (None: every event there). It lives in ``.memdream/dream/ledger.json``: local
state like the checkpoint, rebuilt from commit trailers when lost (a fresh clone).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream import yamlio
from memdream.memory import trailers as trailer
from memdream.memory.tags import episode_of

LEDGER_VERSION = 1
CONSUMED, QUARANTINED, PENDING = "consumed", "quarantined", "pending"
# Trailers of the commits the ledger is rebuilt from.

EpisodeKey = tuple[str, int]


@dataclass
class Entry:
    run: str
    first: int
    last: int
    status: str
    episodes: frozenset[EpisodeKey] | None = None  # None: every event of the segments

    def covers(self, segment: int, event: dict[str, Any]) -> bool:
        if not self.first <= segment <= self.last:
            return False
        return self.episodes is None or (event.get("session", ""), episode_of(event.get("tags") or ())) in self.episodes

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"run": self.run, "segments": [self.first, self.last], "status": self.status}
        if self.episodes is not None:
            data["episodes"] = [list(item) for item in sorted(self.episodes)]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Entry:
        episodes = data.get("episodes")
        return cls(run=str(data["run"]), first=int(data["segments"][0]), last=int(data["segments"][1]),
                   status=str(data["status"]),
                   episodes=None if episodes is None else frozenset((str(s), int(n)) for s, n in episodes))


@dataclass
class Ledger:
    entries: list[Entry]
    rebuilt: bool = False
    head: str | None = None  # the commit the saved ledger describes: another HEAD means rebuild

    # -- questions ------------------------------------------------------------------------------
    def runs(self, status: str) -> list[str]:
        """The runs with entries in ``status``, in ledger order, each once."""
        return list(dict.fromkeys(entry.run for entry in self.entries if entry.status == status))

    def held_back(self, segment: int, event: dict[str, Any]) -> bool:
        """Whether an event below the checkpoint is not part of what dreaming has learned
        (quarantined, or waiting to be dreamed again)."""
        return any(entry.status != CONSUMED and entry.covers(segment, event) for entry in self.entries)

    def waiting(self) -> list[Entry]:
        return [entry for entry in self.entries if entry.status == PENDING]

    def status_of(self, run: str) -> str | None:
        statuses = {entry.status for entry in self.entries if entry.run == run}
        for status in (QUARANTINED, PENDING, CONSUMED):
            if status in statuses:
                return status
        return None

    # -- changes --------------------------------------------------------------------------------
    def consumed(self, run: str, first: int, last: int) -> None:
        """A dream run consumed every event of segments ``first..last``."""
        self.entries.append(Entry(run, first, last, CONSUMED))

    def redreamed(self, run: str) -> list[str]:
        """The dream ``run`` consumed every waiting entry; returns the runs they came from."""
        earlier = self.runs(PENDING)
        for entry in self.entries:
            if entry.status == PENDING:
                entry.status, entry.run = CONSUMED, run
        return earlier

    def defer(self, run: str, first: int, last: int, episodes: Iterable[EpisodeKey]) -> None:
        """Episodes of segments ``first..last`` that the budgeted run ``run`` left for the next dream."""
        for episode in episodes:
            self.entries.append(Entry(run, first, last, PENDING, frozenset([episode])))

    def quarantine(self, runs: Iterable[str]) -> None:
        self._move(runs, CONSUMED, QUARANTINED)

    def release(self, runs: Iterable[str]) -> None:
        """Quarantined (or still consumed, when a rollback asks for --redream) events wait again."""
        self._move(runs, QUARANTINED, PENDING)
        self._move(runs, CONSUMED, PENDING)

    def _move(self, runs: Iterable[str], old: str, new: str) -> None:
        wanted = set(runs)
        for entry in self.entries:
            if entry.run in wanted and entry.status == old:
                entry.status = new

    def to_dict(self) -> dict[str, Any]:
        return {"version": LEDGER_VERSION, "head": self.head, "entries": [entry.to_dict() for entry in self.entries]}


def ledger_path(state_dir: Path) -> Path:
    return state_dir / "dream" / "ledger.json"


def load(state_dir: Path, root: Path) -> Ledger:
    """The saved ledger when it describes the current commit, else one rebuilt from the commits
    (a fresh clone, a lost state folder, a crash between a commit and the save, a commit by hand)."""
    from memdream import gitops

    head = gitops.head_or_none(root)
    try:
        data = json.loads(ledger_path(state_dir).read_text(encoding="utf-8"))
        if data.get("version") == LEDGER_VERSION:
            saved = Ledger([Entry.from_dict(item) for item in data["entries"]], head=data.get("head"))
            if saved.head == head:
                return saved
            later = gitops.trailer_history(root, since=saved.head) if saved.head and head else None
            if later is not None:  # commits made since it was saved: replay what they did
                for trailers in later:
                    apply_trailers(saved, trailers)
                saved.head = head
                return saved
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    ledger = rebuild(root)
    ledger.head = head
    return ledger


def save(state_dir: Path, ledger: Ledger, head: str | None) -> None:
    ledger.head = head
    # Not synced: a ledger that does not describe HEAD (or cannot be read) is rebuilt from the commits (load).
    yamlio.write_atomic(ledger_path(state_dir), json.dumps(ledger.to_dict(), ensure_ascii=False), sync=False)


def rebuild(root: Path) -> Ledger:
    """The ledger as the commit trailers tell it, oldest commit first."""
    from memdream import gitops

    ledger = Ledger([], rebuilt=True)
    if not gitops.is_repo(root):
        return ledger
    for trailers in gitops.trailer_history(root) or []:
        apply_trailers(ledger, trailers)
    return ledger


def apply_trailers(ledger: Ledger, trailers: dict[str, list[str]]) -> None:
    """Replay what one commit did to the ledger."""
    runs = trailers.get(trailer.RUN) or []
    if runs:
        run = runs[-1]
        for earlier in trailers.get(trailer.REDREAMED, []):
            for entry in ledger.entries:
                if entry.run == earlier and entry.status == PENDING:
                    entry.status, entry.run = CONSUMED, run
        for value in trailers.get(trailer.CONSUMED, []):
            bounds = _segment_bounds(value)
            if bounds is not None:
                ledger.consumed(run, *bounds)
        for value in trailers.get(trailer.DEFERRED, []):
            parsed = parse_deferred(value)
            if parsed is not None:
                ledger.defer(run, parsed[0], parsed[1], [parsed[2]])
    ledger.quarantine(trailers.get(trailer.QUARANTINE, []))
    ledger.release(trailers.get(trailer.REDREAM, []))


def deferred_trailer(first: int, last: int, episode: EpisodeKey) -> str:
    return f"{first}..{last} {episode[0]}#{episode[1]}"


def parse_deferred(value: str) -> tuple[int, int, EpisodeKey] | None:
    """``1..3 session#2`` -> (1, 3, ("session", 2)); a session may hold spaces, never ``#``."""
    span, _, episode = value.partition(" ")
    first, sep, last = span.partition("..")
    session, hash_sign, number = episode.rpartition("#")
    if not sep or not hash_sign or not (first.isdigit() and last.isdigit() and number.isdigit()):
        return None
    return int(first), int(last), (session, int(number))


def _segment_bounds(value: str) -> tuple[int, int] | None:
    """``segments 000001..000003`` -> (1, 3)."""
    _, _, span = value.partition(" ")
    first, sep, last = span.partition("..")
    if not sep or not first.isdigit() or not last.isdigit():
        return None
    return int(first), int(last)


def waiting_events(entries: list[Entry], segments: Iterator[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The events of ``segments`` (name, event) that a waiting entry covers, in stored order."""
    found = []
    for name, event in segments:
        number = segment_number(name)
        if any(entry.covers(number, event) for entry in entries):
            found.append(event)
    return found


def segment_number(name: str) -> int:
    stem = name.split(".")[0]
    return int(stem) if stem.isdigit() else 0
