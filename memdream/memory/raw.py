"""The raw layer: append-only segment files of normalized events, pinned by a tracked manifest.

raw/segments/NNNNNN.jsonl   one canonical-JSON event per line; written once, never rewritten
raw/MANIFEST.jsonl          tracked in git: one line per segment with its sha256 and event count
.memdream/ingest/keys/      per segment, the (session, id, hash) of its events: the dedup index

A segment is staged under a temporary name, fsynced and renamed into place; only then is the
manifest (atomically) rewritten. A crash leaves at most an orphan segment, which the next
writer adopts after checking every line parses; never a partial line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memdream.errors import InvalidMemory
from memdream.memory.paths import MemoryPaths
from memdream.yamlio import write_atomic

SEGMENTS = "segments"
MANIFEST = "MANIFEST.jsonl"
STAGING_PREFIX = ".staging-"


def canonical_json(event: dict[str, Any]) -> str:
    """The one serialization of an event: its hash and its stored line are both this."""
    return json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def event_hash(line: str) -> str:
    return "sha256:" + hashlib.sha256(line.encode("utf-8")).hexdigest()


def event_ref(session: str, event_id: str) -> str:
    return f"log://{session}#{event_id}"


@dataclass(frozen=True)
class SegmentRecord:
    segment: str
    sha256: str
    events: int
    first_ts: str
    last_ts: str
    created_at: str


@dataclass(frozen=True)
class EventKey:
    session: str
    id: str
    hash: str


class RawLayer:
    def __init__(self, paths: MemoryPaths) -> None:
        self.paths = paths
        self.dir = paths.raw / SEGMENTS
        self.manifest_path = paths.raw / MANIFEST
        self.keys_dir = paths.state / "ingest" / "keys"

    # -- manifest -------------------------------------------------------------------------------
    def manifest(self) -> list[SegmentRecord]:
        if not self.manifest_path.exists():
            return []
        records = []
        for number, line in enumerate(self.manifest_path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(SegmentRecord(**json.loads(line)))
            except (ValueError, TypeError):
                raise InvalidMemory(f"raw/{MANIFEST}:{number}: not a manifest record") from None
        return records

    def _write_manifest(self, records: list[SegmentRecord]) -> None:
        text = "".join(json.dumps(asdict(record), sort_keys=True) + "\n" for record in records)
        write_atomic(self.manifest_path, text)

    def segment_path(self, name: str) -> Path:
        return self.dir / name

    def present(self) -> bool:
        """Whether segment files are here (a clone may carry the manifest without them)."""
        return self.dir.is_dir() and any(self.dir.glob("*.jsonl"))

    # -- reading --------------------------------------------------------------------------------
    def iter_lines(self, name: str) -> Iterator[str]:
        with open(self.segment_path(name), encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    yield line.rstrip("\n")

    def iter_events(self, names: list[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(segment name, event) for the given segments (default: all in the manifest, present ones)."""
        for name in names if names is not None else [record.segment for record in self.manifest()]:
            if self.segment_path(name).exists():
                for line in self.iter_lines(name):
                    yield name, json.loads(line)

    def keys(self) -> dict[tuple[str, str], str]:
        """(session, id) -> event hash for every event the raw layer holds: the dedup index."""
        index: dict[tuple[str, str], str] = {}
        for record in self.manifest():
            for key in self._segment_keys(record.segment):
                index[(key.session, key.id)] = key.hash
        return index

    def _segment_keys(self, name: str) -> list[EventKey]:
        cached = self.keys_dir / f"{name}.keys"
        if cached.exists():
            return [EventKey(*line.split("\t")) for line in cached.read_text(encoding="utf-8").splitlines()]
        if not self.segment_path(name).exists():
            return []  # cloned without the raw layer: nothing to deduplicate against
        keys = [self._key_of(line) for line in self.iter_lines(name)]
        self._write_keys(name, keys)
        return keys

    @staticmethod
    def _key_of(line: str) -> EventKey:
        event = json.loads(line)
        return EventKey(event["session"], event["id"], event_hash(line))

    def _write_keys(self, name: str, keys: list[EventKey]) -> None:
        write_atomic(self.keys_dir / f"{name}.keys", "".join(f"{k.session}\t{k.id}\t{k.hash}\n" for k in keys))

    # -- writing --------------------------------------------------------------------------------
    def next_number(self) -> int:
        names = {record.segment for record in self.manifest()}
        if self.dir.is_dir():
            names.update(path.name for path in self.dir.glob("*.jsonl"))
        numbers = [int(name.split(".")[0]) for name in names if name.split(".")[0].isdigit()]
        return max(numbers, default=0) + 1

    def recover(self, now: str) -> list[str]:
        """Drop abandoned staging files; adopt complete segments a crash left out of the manifest."""
        if not self.dir.is_dir():
            return []
        for staging in self.dir.glob(f"{STAGING_PREFIX}*"):
            staging.unlink(missing_ok=True)
        known = {record.segment for record in self.manifest()}
        orphans = sorted(path.name for path in self.dir.glob("*.jsonl") if path.name not in known)
        if orphans:
            self.commit([self.describe(name, now) for name in orphans])
        return orphans

    def describe(self, name: str, now: str) -> SegmentRecord:
        """Hash and count a segment file already in place."""
        digest, count, first, last = hashlib.sha256(), 0, "", ""
        with open(self.segment_path(name), "rb") as handle:
            for raw in handle:
                digest.update(raw)
                ts = json.loads(raw)["ts"]
                first, last, count = first or ts, ts, count + 1
        return SegmentRecord(name, digest.hexdigest(), count, first, last, now)

    def commit(self, records: list[SegmentRecord]) -> None:
        """Add segments that are already in place to the manifest and the dedup index."""
        for record in records:
            self._segment_keys(record.segment)
        self._write_manifest([*self.manifest(), *records])

    def verify(self) -> list[str]:
        """Problems between manifest and files: missing segments, changed hashes or counts."""
        problems = []
        for record in self.manifest():
            path = self.segment_path(record.segment)
            if not path.exists():
                problems.append(f"raw/{SEGMENTS}/{record.segment}: missing")
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != record.sha256:
                problems.append(f"raw/{SEGMENTS}/{record.segment}: content changed (sha256 mismatch)")
        return problems


class SegmentWriter:
    """Stages new segment files for one ingest run; nothing is visible until :meth:`publish`.

    ``mark``/``rollback`` let the caller drop everything one input file added, so that a bad
    line in a file leaves nothing of that file behind.
    """

    def __init__(self, raw: RawLayer, max_events: int) -> None:
        self.raw = raw
        self.max_events = max_events
        self.number = raw.next_number()
        self.staged: list[list[Any]] = []  # [final name, staging path, events] per staged file
        self._handle: Any = None
        raw.dir.mkdir(parents=True, exist_ok=True)

    def _open_next(self) -> None:
        self._close_current()
        name = f"{self.number + len(self.staged):06d}.jsonl"
        path = self.raw.dir / f"{STAGING_PREFIX}{os.getpid()}-{name}"
        self._handle = open(path, "wb")
        self.staged.append([name, path, 0])

    def _close_current(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            self._handle = None

    def write(self, line: str) -> None:
        if self._handle is None or self.staged[-1][2] >= self.max_events:
            self._open_next()
        self._handle.write(line.encode("utf-8") + b"\n")
        self.staged[-1][2] += 1

    def mark(self) -> tuple[int, int, int]:
        """A point to roll back to: (staged file index, byte position in it, its event count)."""
        if self._handle is None:
            return (len(self.staged), 0, 0)
        return (len(self.staged) - 1, self._handle.tell(), self.staged[-1][2])

    def rollback(self, mark: tuple[int, int, int]) -> None:
        index, position, count = mark
        self._close_current()
        while len(self.staged) > index + 1:
            self.staged.pop()[1].unlink(missing_ok=True)
        if len(self.staged) == index + 1:
            entry = self.staged[-1]
            self._handle = open(entry[1], "r+b")
            self._handle.truncate(position)
            self._handle.seek(position)
            entry[2] = count

    def publish(self, now: str) -> list[SegmentRecord]:
        """Move staged segments into place, then record them in the manifest."""
        self._close_current()
        records = []
        for name, path, count in self.staged:
            if count == 0:
                path.unlink(missing_ok=True)
                continue
            os.replace(path, self.raw.segment_path(name))
            records.append(self.raw.describe(name, now))
        _fsync_dir(self.raw.dir)
        self.staged = []
        if records:
            self.raw.commit(records)
        return records

    def abort(self) -> None:
        """Forget everything staged (on any error, or a dry run)."""
        if self._handle is not None:
            self._handle.close()
            self._handle = None
        for _, path, _ in self.staged:
            path.unlink(missing_ok=True)
        self.staged = []


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
