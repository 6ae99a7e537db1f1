"""The usage log: which cards each recall returned, for dream to fold into reference counts.

.memdream/usage.jsonl gets one line per recall: ``{"ts", "query": <sha256 prefix>, "cards": [ids]}``.
The query is stored as a hash (the usage log is not a second copy of what agents asked). Lines are
written with O_APPEND in one ``write`` each, so concurrent recalls never interleave within a line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from memdream.memory.paths import MemoryPaths
from memdream.recall.index import cache_dir, read_pickle, write_pickle

if TYPE_CHECKING:
    from memdream.memory.store import Memory

USAGE_FILE = "usage.jsonl"
# Re-save the counted prefix of the usage log once this many new bytes were read past it.
_RESAVE_BYTES = 1 << 16


def usage_path(paths: MemoryPaths) -> Path:
    return paths.state / USAGE_FILE


def query_hash(query: str) -> str:
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


def usage_counts(memory: Memory) -> dict[str, int]:
    """How many recalls returned each card, over the whole usage log (for dream's reference counts).

    Counting is incremental: the counts of the log's first N bytes are cached, and only what was
    appended since is read. A log that shrank (rotated, deleted) is counted again from the start.
    """
    return counts_at(memory.paths)


def counts_at(paths: MemoryPaths) -> dict[str, int]:
    path = usage_path(paths)
    cache_path = cache_dir(paths) / "usage.pickle"
    cached = read_pickle(cache_path)
    counts: Counter[str] = Counter()
    offset = 0
    if isinstance(cached, tuple) and len(cached) == 2:
        offset, counts = cached[0], Counter(cached[1])
    try:
        size = os.path.getsize(path)
    except OSError:
        return {}
    if size < offset:
        offset, counts = 0, Counter()
    if size == offset:
        return dict(counts)
    with open(path, "rb") as handle:
        handle.seek(offset)
        tail = handle.read(size - offset)
    complete = tail.rfind(b"\n") + 1  # a line still being written is counted next time
    for raw in tail[:complete].splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict):
            counts.update(card for card in entry.get("cards", ()) if isinstance(card, str))
    if complete >= _RESAVE_BYTES or not cached:
        write_pickle(cache_path, (offset + complete, dict(counts)))
    return dict(counts)
