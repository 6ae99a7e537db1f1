"""The usage log: which cards each recall returned, for dream to fold into reference counts.

.memdream/usage.jsonl gets one line per recall: ``{"ts", "query": <sha256 prefix>, "cards": [ids]}``.
The query is stored as a hash (the usage log is not a second copy of what agents asked). Lines are
written with O_APPEND in one ``write`` each, so concurrent recalls never interleave within a line.
Recall writes it, dream reads it (reference counts, forgetting): memory state that both share.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.memory import cachefile
from memdream.memory.paths import MemoryPaths

if TYPE_CHECKING:
    from memdream.memory.store import Memory

USAGE_FILE = "usage.jsonl"
# Re-save the counted prefix of the usage log once this many new bytes were read past it.
_RESAVE_BYTES = 1 << 16
# What the counting cache holds: (log bytes counted, counts, last recall times). A cache of
# another version is counted again from the log.
CACHE_VERSION = 1


def usage_path(paths: MemoryPaths) -> Path:
    return paths.state / USAGE_FILE


def cache_path(paths: MemoryPaths) -> Path:
    """Where the counts of the log's first N bytes are kept."""
    return paths.state / "cache" / "usage.pickle"


def read_cache(path: Path) -> Any:
    """The cached counts, or None when missing, corrupt or of another version."""
    return cachefile.read(path, CACHE_VERSION)


def write_cache(path: Path, payload: Any) -> None:
    """Atomic: concurrent recalls see the old cache or the new one. A read-only memory just skips it."""
    cachefile.write(path, CACHE_VERSION, payload)


def query_hash(query: str) -> str:
    import hashlib  # here: only a recall that logs its use pays for loading OpenSSL (~4 ms a process)

    return hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]


class UsageLog:
    """Appends usage lines to the memory's usage log; open once, write many (batch recall)."""

    def __init__(self, paths: MemoryPaths) -> None:
        self.path = usage_path(paths)
        self.fd: int | None = None

    def append(self, ts: str, query: str, card_ids: list[str]) -> None:
        line = json.dumps({"ts": ts, "query": query_hash(query), "cards": card_ids}, separators=(",", ":"))
        try:
            if self.fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(self.fd, (line + "\n").encode("utf-8"))
        except OSError:
            pass  # a read-only memory still answers recalls

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class Usage:
    """What the usage log says about each card: how many recalls returned it, and the last one's time."""

    counts: dict[str, int] = field(default_factory=dict)
    last_used: dict[str, str] = field(default_factory=dict)  # card id -> ts of the newest recall naming it


def usage_counts(memory: Memory) -> dict[str, int]:
    """How many recalls returned each card, over the whole usage log (for dream's reference counts)."""
    return usage_at(memory.paths).counts


def counts_at(paths: MemoryPaths) -> dict[str, int]:
    return usage_at(paths).counts


def usage_at(paths: MemoryPaths) -> Usage:
    """Counts and last recall times of the whole usage log; empty when there is no log (a clone).

    Counting is incremental: what the log's first N bytes say is cached, and only what was
    appended since is read. A log that shrank (rotated, deleted) is counted again from the start,
    and so is one whose cache has an older format (counts without times).
    """
    path = usage_path(paths)
    cached = read_cache(cache_path(paths))
    valid = isinstance(cached, tuple) and len(cached) == 3
    offset, usage = (cached[0], Usage(dict(cached[1]), dict(cached[2]))) if valid else (0, Usage())
    try:
        size = os.path.getsize(path)
    except OSError:
        return Usage()
    if size < offset:
        offset, usage = 0, Usage()
    if size == offset:
        return usage
    with open(path, "rb") as handle:
        handle.seek(offset)
        tail = handle.read(size - offset)
    complete = tail.rfind(b"\n") + 1  # a line still being written is counted next time
    _count(tail[:complete], usage)
    if complete >= _RESAVE_BYTES or not valid:
        write_cache(cache_path(paths), (offset + complete, usage.counts, usage.last_used))
    return usage


def _count(lines: bytes, usage: Usage) -> None:
    counts, last_used = Counter(usage.counts), usage.last_used
    for raw in lines.splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        cards = [card for card in entry.get("cards", ()) if isinstance(card, str)]
        counts.update(cards)
        ts = entry.get("ts")
        if isinstance(ts, str):  # recall writes one format (format_timestamp): strings order as times
            for card in cards:
                if ts > last_used.get(card, ""):
                    last_used[card] = ts
    usage.counts = dict(counts)
