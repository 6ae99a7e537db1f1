"""The raw layer: append-only segment files of normalized events, pinned by a tracked manifest.

raw/segments/NNNNNN.jsonl   one canonical-JSON event per line; written once, rewritten only by
                            `memdream forget` (without the events it erases, the manifest updated)
raw/MANIFEST.jsonl          tracked in git: one line per segment with its sha256 and event count
.memdream/ingest/keys/      per segment, the (session, id, hash) of its events: the dedup index
                            (NNNNNN.jsonl.keys2: one tab-separated line per event, fields escaped)

A segment is staged under a temporary name, fsynced and renamed into place; only then is the
manifest (atomically) rewritten. A crash leaves at most an orphan segment, which the next
writer adopts after checking every line parses; never a partial line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from memdream import yamlio
from memdream.clock import parse_timestamp
from memdream.errors import InvalidMemory
from memdream.jsonio import dumps_canonical, loads
from memdream.memory.paths import MemoryPaths
from memdream.memory.tags import is_ingest_tag

SEGMENTS = "segments"
MANIFEST = "MANIFEST.jsonl"
STAGING_PREFIX = ".staging-"
# The dedup index cache. ".keys2": fields are escaped (the schema's `$` lets a session or id end
# in a newline, which broke the unescaped ".keys" files); old ".keys" files are simply rebuilt.
KEYS_SUFFIX = ".keys2"
_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_UNESCAPES = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def canonical_bytes(event: dict[str, Any]) -> bytes:
    """The one serialization of an event (see :func:`memdream.jsonio.dumps_canonical`): its
    stored line and, through that, its hash."""
    return dumps_canonical(event)


def canonical_json(event: dict[str, Any]) -> str:
    return dumps_canonical(event).decode("utf-8")


def source_content(event: dict[str, Any]) -> dict[str, Any]:
    """The event as its source said it: without the tags ingest adds from its own state (episode,
    salience, project, ...: :func:`memdream.memory.tags.is_ingest_tag`) and without a time ingest made
    up (``meta.ts_synthetic``: a file's modification time). The same source ingested into two memories,
    or into one in another order, gives the same content."""
    tags = event.get("tags")
    meta = event.get("meta")
    synthetic = isinstance(meta, dict) and meta.get("ts_synthetic") is True
    if not tags and not synthetic:
        return event
    content = dict(event)
    if tags:
        kept = [tag for tag in tags if not is_ingest_tag(tag)]
        if kept:
            content["tags"] = kept
        else:
            del content["tags"]
    if synthetic:
        content.pop("ts", None)
    return content


def event_hash(event: dict[str, Any] | str | bytes) -> str:
    """The hash cards cite for an event (``evidence[].hash``): ``sha256:`` of the canonical JSON of its
    :func:`source_content`, id and session included. ``event`` may be its stored line.

    Not the stored line's hash: a clone that ingests the same transcript numbers its episodes by what it
    ingested before, and the event it stores must still be the one the cards cite."""
    parsed = loads(event) if isinstance(event, (str, bytes)) else event
    return "sha256:" + hashlib.sha256(dumps_canonical(source_content(parsed))).hexdigest()


def line_hash(line: str | bytes) -> str:
    """``sha256:`` of a stored line: what the dedup index keeps, and what cards dreamed before
    :func:`event_hash` existed cite."""
    data = line.encode("utf-8") if isinstance(line, str) else line
    return "sha256:" + hashlib.sha256(data).hexdigest()


class StoredHashes(NamedTuple):
    """The two hashes a stored event answers to: its :func:`event_hash` and its line's."""

    event: str
    line: str

    def cited_by(self, digest: str) -> bool:
        """Whether a card citing ``digest`` cites this event: by its event hash, or by its line's hash
        as older dreams did (their raw layers keep verifying)."""
        return digest == self.event or digest == self.line


def stored_hashes(line: bytes, event: dict[str, Any]) -> StoredHashes:
    """The hashes of a stored ``line`` (newline removed) that encodes ``event``."""
    return StoredHashes(event_hash(event), line_hash(line))


def _before(one: str, other: str) -> bool:
    """Whether time ``one`` is before ``other``. As text when both are written alike (UTC ``Z``, the same
    precision: what agents' logs carry, and cheap on ingest's hot path), else as moments (an offset, a
    naive time); a time that does not parse compares as text."""
    if len(one) == len(other) and one[-1:] == other[-1:] == "Z":
        return one < other
    try:
        return parse_timestamp(one) < parse_timestamp(other)
    except ValueError:
        return one < other


def earliest(one: str, other: str) -> str:
    """The earlier of two event times: a segment's ``first_ts`` (a log's events need not be in order)."""
    return other if _before(other, one) else one


def latest(one: str, other: str) -> str:
    """The later of two event times: a segment's ``last_ts``."""
    return other if _before(one, other) else one


@dataclass(frozen=True)
class SegmentRecord:
    segment: str
    sha256: str
    events: int
    first_ts: str
    last_ts: str
    created_at: str


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
        yamlio.write_atomic(self.manifest_path, self.manifest_text(records))

    @staticmethod
    def manifest_text(records: list[SegmentRecord]) -> str:
        """The manifest's text for ``records``: one JSON line each, keys sorted."""
        return "".join(json.dumps(asdict(record), sort_keys=True) + "\n" for record in records)

    def reindex(self, name: str) -> None:
        """Rebuild the dedup index of a segment whose content was replaced (`memdream forget`)."""
        self.keys_path(name).unlink(missing_ok=True)
        self._segment_rows(name)

    def segment_path(self, name: str) -> Path:
        return self.dir / name

    def keys_path(self, name: str) -> Path:
        """The dedup index cache of one segment."""
        return self.keys_dir / f"{name}{KEYS_SUFFIX}"

    def present(self) -> bool:
        """Whether segment files are here (a clone may carry the manifest without them)."""
        return self.dir.is_dir() and any(self.dir.glob("*.jsonl"))

    def never_here(self, name: str) -> bool:
        """Whether this copy never had segment ``name`` (a clone that ingested since it was cloned):
        absent, and without the dedup index that writing or reading it here leaves in .memdream/.
        An absent segment with its index was here and is lost."""
        return not self.segment_path(name).exists() and not self.keys_path(name).exists()

    # -- reading --------------------------------------------------------------------------------
    def iter_lines(self, name: str) -> Iterator[str]:
        for _, line in self._numbered_lines(name):
            yield line

    def _numbered_lines(self, name: str) -> Iterator[tuple[int, str]]:
        """(line number, text) of the non-blank lines of a segment, newline removed."""
        with open(self.segment_path(name), "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if raw.strip():
                    try:
                        yield number, raw.decode("utf-8").rstrip("\n")
                    except UnicodeDecodeError as error:
                        raise self.damaged(name, number, error) from None

    def iter_events(self, names: list[str] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
        """(segment name, event) for the given segments (default: all in the manifest, present ones)."""
        for name in names if names is not None else [record.segment for record in self.manifest()]:
            if self.segment_path(name).exists():
                with open(self.segment_path(name), "rb") as handle:
                    for number, line in enumerate(handle, 1):
                        if line.strip():
                            yield name, self._event_of(name, number, line)

    def _event_of(self, name: str, number: int, line: bytes | str) -> dict[str, Any]:
        """The event of one segment line; :class:`InvalidMemory` naming the place when it is damaged."""
        try:
            event = loads(line)
        except ValueError as error:  # json.JSONDecodeError, jsonio.LimitError, UnicodeDecodeError
            raise self.damaged(name, number, error) from None
        if not isinstance(event, dict):
            raise self.damaged(name, number, TypeError("not a JSON object"))
        return event

    @staticmethod
    def damaged(name: str, number: int, error: Exception) -> InvalidMemory:
        """The one-line error for line ``number`` of segment ``name`` that is not a stored event
        (for every reader of segments: dream, recall's index, ingest's dedup)."""
        reason = " ".join(str(error).split())[:120]
        return InvalidMemory(f"raw/{SEGMENTS}/{name}:{number}: damaged raw segment ({type(error).__name__}: "
                             f"{reason}); restore it from git, then run `memdream lint`")

    def keys(self) -> dict[tuple[str, str], str]:
        """(session, id) -> event hash for every event the raw layer holds: the dedup index."""
        return {(session, event_id): digest for session, event_id, digest in self.key_rows()}

    def key_rows(self) -> Iterator[tuple[str, str, str]]:
        """(session, id, hash) of every event the raw layer holds, segment by segment."""
        for record in self.manifest():
            yield from self._segment_rows(record.segment)

    def _segment_rows(self, name: str) -> list[tuple[str, str, str]]:
        """(session, id, hash) of every event of a segment: from the cache, else from the segment."""
        cached = self.keys_path(name)
        if cached.exists():
            rows = (line.split("\t") for line in cached.read_text(encoding="utf-8").split("\n") if line)
            return [(_unescape(session), _unescape(event_id), digest) for session, event_id, digest in rows]
        if not self.segment_path(name).exists():
            return []  # cloned without the raw layer: nothing to deduplicate against
        found = [self._row_of(name, number, line) for number, line in self._numbered_lines(name)]
        self._write_keys(name, found)
        return found

    def _row_of(self, name: str, number: int, line: str) -> tuple[str, str, str]:
        event = self._event_of(name, number, line)
        try:
            return (event["session"], event["id"], line_hash(line))
        except KeyError as error:
            raise self.damaged(name, number, KeyError(f"no {error} field")) from None

    def _write_keys(self, name: str, rows: list[tuple[str, str, str]]) -> None:
        yamlio.write_atomic(self.keys_path(name), "".join(_key_line(*row) for row in rows))

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
        for staging in [*self.dir.glob(f"{STAGING_PREFIX}*"), *self.keys_dir.glob(f"{STAGING_PREFIX}*")]:
            staging.unlink(missing_ok=True)
        known = {record.segment for record in self.manifest()}
        orphans = sorted(path.name for path in self.dir.glob("*.jsonl") if path.name not in known)
        for name in orphans:  # an orphan's index is rebuilt from the orphan itself, never trusted
            self.keys_path(name).unlink(missing_ok=True)
        if orphans:
            self.commit([self.describe(name, now) for name in orphans])
        return orphans

    def describe(self, name: str, now: str) -> SegmentRecord:
        """Hash and count a segment file already in place."""
        digest, count, first, last = hashlib.sha256(), 0, "", ""
        with open(self.segment_path(name), "rb") as handle:
            for number, raw in enumerate(handle, 1):
                digest.update(raw)
                ts = self._event_of(name, number, raw).get("ts")
                if not isinstance(ts, str):
                    raise self.damaged(name, number, KeyError("no 'ts' field"))
                first, last, count = earliest(first or ts, ts), latest(last or ts, ts), count + 1
        return SegmentRecord(name, digest.hexdigest(), count, first, last, now)

    def commit(self, records: list[SegmentRecord]) -> None:
        """Add segments that are already in place to the manifest and the dedup index."""
        for record in records:
            if not self.keys_path(record.segment).exists():
                self._segment_rows(record.segment)
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

    Each staged segment has a staged dedup index beside it, written as the segment is, so that
    a run holds no per-event data in memory (beyond the batch being written) and publishing reads
    nothing back but the hash.
    ``mark``/``rollback`` let the caller drop everything one input file added, so that a bad
    line in a file leaves nothing of that file behind.
    """

    def __init__(self, raw: RawLayer, max_events: int) -> None:
        self.raw = raw
        self.max_events = max_events
        self.number = raw.next_number()
        self.staged: list[_Staged] = []
        self._handle: Any = None
        self._keys: Any = None
        self._entry: _Staged | None = None  # the segment being written, while one is open
        raw.dir.mkdir(parents=True, exist_ok=True)
        raw.keys_dir.mkdir(parents=True, exist_ok=True)

    def _open_next(self) -> None:
        self._close_current()
        name = f"{self.number + len(self.staged):06d}.jsonl"
        prefix = f"{STAGING_PREFIX}{os.getpid()}-"
        entry = _Staged(name, self.raw.dir / f"{prefix}{name}", self.raw.keys_dir / f"{prefix}{name}{KEYS_SUFFIX}")
        self._handle = open(entry.path, "wb")
        self._keys = open(entry.keys_path, "wb")
        self.staged.append(entry)
        self._entry = entry

    def _close_current(self) -> None:
        for handle in (self._handle, self._keys):
            if handle is not None:
                handle.flush()
                os.fsync(handle.fileno())
                handle.close()
        self._handle = self._keys = None
        self._entry = None

    def flush(self) -> None:
        """Hand buffered lines to the OS (before a fork: a child must not inherit them)."""
        for handle in (self._handle, self._keys):
            if handle is not None:
                handle.flush()

    def write(self, line: str | bytes, event: dict[str, Any] | None = None) -> str:
        """Stage one canonical line (``event``: the event it encodes, if at hand); returns its hash."""
        data = line.encode("utf-8") if isinstance(line, str) else line
        if event is None:
            event = loads(data)
        return self.write_fields(data, event["session"], event["id"], event["ts"])

    def write_fields(self, data: bytes, session: str, event_id: str, ts: str) -> str:
        """:meth:`write` of a line whose session, id and time the caller already has."""
        entry = self._entry
        if entry is None or entry.events >= self.max_events:
            self._open_next()
            entry = self._entry
            assert entry is not None
        digest = "sha256:" + _sha256(data).hexdigest()
        line = data + b"\n"
        self._handle.write(line)
        if entry.digest is not None:
            entry.digest.update(line)
        self._keys.write(_key_line(session, event_id, digest).encode("utf-8"))
        if entry.events:
            first, last = entry.first_ts, entry.last_ts
            if len(ts) == len(first) == len(last) and ts[-1:] == first[-1:] == last[-1:] == "Z":
                # What earliest/latest do for times written alike, inline: two calls an event were ~5 %
                # of an ingest of memdream-format events.
                if ts < first:
                    entry.first_ts = ts
                elif ts > last:
                    entry.last_ts = ts
            else:
                entry.first_ts, entry.last_ts = earliest(first, ts), latest(last, ts)
        else:
            entry.first_ts = entry.last_ts = ts
        entry.events += 1
        return digest

    def write_lines(self, lines: list[bytes], sessions: list[str], ids: list[str], stamps: list[str]) -> None:
        """:meth:`write_fields` of many lines at once (``sessions[i]``, ``ids[i]``, ``stamps[i]``: those of
        ``lines[i]``), the same bytes in the same files: one write a segment and its index for the lot,
        instead of two an event (a big ingest calls this once per prepared chunk)."""
        start = 0
        while start < len(lines):
            entry = self._entry
            if entry is None or entry.events >= self.max_events:
                self._open_next()
                entry = self._entry
                assert entry is not None
            end = min(len(lines), start + max(self.max_events - entry.events, 1))  # a fresh segment takes one
            self._append(entry, lines[start:end], sessions[start:end], ids[start:end], stamps[start:end])
            start = end

    def _append(self, entry: _Staged, lines: list[bytes], sessions: list[str], ids: list[str],
                stamps: list[str]) -> None:
        """Lines that all fit in ``entry``, the segment being written."""
        data = b"\n".join(lines) + b"\n"
        self._handle.write(data)
        if entry.digest is not None:
            entry.digest.update(data)  # the same digest as line by line: sha256 is a stream
        sha256 = _sha256
        plain = "".join(sessions) + "".join(ids)
        if not plain.isprintable() or "\\" in plain:  # a field to escape (rare): every field through _escape
            sessions, ids = [_escape(session) for session in sessions], [_escape(event_id) for event_id in ids]
        keys = [f"{session}\t{event_id}\tsha256:{sha256(line).hexdigest()}\n"
                for line, session, event_id in zip(lines, sessions, ids)]
        self._keys.write("".join(keys).encode("utf-8"))
        if entry.events:
            entry.first_ts, entry.last_ts = _span(entry.first_ts, entry.last_ts, stamps)
        else:
            entry.first_ts, entry.last_ts = _span(stamps[0], stamps[0], stamps)
        entry.events += len(lines)

    def mark(self) -> tuple[Any, ...]:
        """A point to roll back to: which staged file, where in it and its index, and its counts."""
        if self._handle is None:
            return (len(self.staged), 0, 0, 0, "", "")
        entry = self.staged[-1]
        return (len(self.staged) - 1, self._handle.tell(), self._keys.tell(), entry.events, entry.first_ts,
                entry.last_ts)

    def rollback(self, mark: tuple[Any, ...]) -> None:
        index, position, keys_position, events, first_ts, last_ts = mark
        self._close_current()
        while len(self.staged) > index + 1:
            dropped = self.staged.pop()
            dropped.path.unlink(missing_ok=True)
            dropped.keys_path.unlink(missing_ok=True)
        if len(self.staged) == index + 1:
            entry = self.staged[-1]
            self._handle = open(entry.path, "r+b")
            self._handle.truncate(position)
            self._handle.seek(position)
            self._keys = open(entry.keys_path, "r+b")
            self._keys.truncate(keys_position)
            self._keys.seek(keys_position)
            self._entry = entry
            entry.events, entry.first_ts, entry.last_ts = events, first_ts, last_ts
            entry.digest = None

    def publish(self, now: str) -> list[SegmentRecord]:
        """Move staged segments (then their indexes) into place, then record them in the manifest."""
        self._close_current()
        records = []
        for entry in self.staged:
            if not entry.events:
                entry.path.unlink(missing_ok=True)
                entry.keys_path.unlink(missing_ok=True)
                continue
            final = self.raw.segment_path(entry.name)
            os.replace(entry.path, final)
            # After the segment: an index in place always belongs to the segment of that name.
            os.replace(entry.keys_path, self.raw.keys_path(entry.name))
            sha256 = entry.digest.hexdigest() if entry.digest is not None else _file_sha256(final)
            records.append(SegmentRecord(entry.name, sha256, entry.events, entry.first_ts, entry.last_ts, now))
        _fsync_dir(self.raw.dir)
        _fsync_dir(self.raw.keys_dir)
        self.staged = []
        if records:
            self.raw.commit(records)
        return records

    def abort(self) -> None:
        """Forget everything staged (on any error, or a dry run)."""
        for handle in (self._handle, self._keys):
            if handle is not None:
                handle.close()
        self._handle = self._keys = None
        self._entry = None
        for entry in self.staged:
            entry.path.unlink(missing_ok=True)
            entry.keys_path.unlink(missing_ok=True)
        self.staged = []


@dataclass
class _Staged:
    """One segment being written: its final name, staging files, and what it holds so far."""

    name: str
    path: Path
    keys_path: Path
    events: int = 0
    first_ts: str = ""
    last_ts: str = ""
    # sha256 of what was written, kept as lines go out so that publishing need not read the
    # segment back; None after a rollback cut the file (then it is read back once).
    digest: Any = field(default_factory=hashlib.sha256)


def _span(first: str, last: str, stamps: list[str]) -> tuple[str, str]:
    """``first`` and ``last`` moved by :func:`earliest` and :func:`latest` over ``stamps`` in order."""
    width = len(first)
    if len(last) == width and first[-1:] == last[-1:] == "Z" and set(map(len, stamps)) == {width} \
            and "".join(stamps)[width - 1::width].count("Z") == len(stamps):
        # All written alike (as long as ``first``, each ending in Z): _before compares them as text, and
        # text's min and max are that fold at C speed.
        return min(first, min(stamps)), max(last, max(stamps))
    for ts in stamps:
        first, last = earliest(first, ts), latest(last, ts)
    return first, last


def _key_line(session: str, event_id: str, digest: str) -> str:
    return f"{_escape(session)}\t{_escape(event_id)}\t{digest}\n"


_sha256 = hashlib.sha256
_SPECIAL = re.compile(r"[\\\t\n\r]")


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _escape(field: str) -> str:
    # Tab, newline and carriage return are unprintable: a printable field needs escaping only
    # for a backslash.
    if field.isprintable() and "\\" not in field:
        return field
    return field.translate(_ESCAPES) if _SPECIAL.search(field) else field


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    out, chars = [], iter(field)
    for char in chars:
        out.append(_UNESCAPES.get(next(chars, "\\"), "") if char == "\\" else char)
    return "".join(out)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
