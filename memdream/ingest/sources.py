"""Input sources for ingest: files, folders (recursively) and stdin, each checked before parsing.

Stdin is streamed, never read whole (``ingest - < /dev/zero`` must fail, not fill memory), and
no line is read past :data:`MAX_LINE_BYTES`: a longer one is a bad line.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any, BinaryIO, cast

from memdream import clock
from memdream.errors import InvalidInput, UsageError
from memdream.ingest.adapters.context import ParseContext
from memdream.ingest.validate import set_ingest_clock

HEAD_BYTES = 8192
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson", ".log")
MAX_LINE_BYTES = 64 << 20  # one event or message; a longer line is a bad line, never read whole
_SKIP_BYTES = 1 << 20  # the rest of a line too long is read (and dropped) in pieces of this size


def too_long() -> str:
    """Why a line longer than :data:`MAX_LINE_BYTES` is bad."""
    return f"line longer than {MAX_LINE_BYTES} bytes"


class _Rewindable(io.RawIOBase):
    """A pipe whose first bytes can be read again: format detection reads the head of stdin,
    then parsing starts over. Only the first :data:`HEAD_BYTES` * 2 are kept."""

    def __init__(self, pipe: BinaryIO, keep: int = 2 * HEAD_BYTES) -> None:
        super().__init__()
        self._read1 = getattr(pipe, "read1", pipe.read)  # what one read of the pipe gives
        self._keep = keep
        self._kept = bytearray()  # the first bytes of the pipe: everything read while len < keep
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset + (self._position if whence == io.SEEK_CUR else 0)
        if whence == io.SEEK_END or not (target == self._position
                                          or 0 <= target <= len(self._kept) >= self._position):
            raise io.UnsupportedOperation("stdin can only start over within its first bytes")
        self._position = target
        return target

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        kept = len(self._kept)
        if self._position < kept:
            data = bytes(self._kept[self._position:self._position + len(view)])
        elif self._position == kept < self._keep:  # still keeping: read no more than is kept
            data = self._read1(min(len(view), self._keep - kept))
            self._kept += data
        else:
            data = self._read1(len(view))
        view[:len(data)] = data
        self._position += len(data)
        return len(data)


class EmptyInput(InvalidInput):
    """A source with nothing in it: fatal when named, skipped inside a folder (agents leave empty
    transcripts behind: ``~/.claude/projects`` has them)."""


@dataclass(frozen=True)
class Source:
    """One input stream: shown as ``name`` in messages; ``path`` is None for stdin."""

    name: str
    path: Path | None
    stdin: BinaryIO | None = None
    in_folder: bool = False  # found by walking a folder: an empty one is skipped, not fatal

    @property
    def stem(self) -> str:
        return self.path.stem if self.path is not None else "stdin"

    def modified(self) -> float | None:
        """The file's modification time (Unix seconds); None for stdin."""
        return self.path.stat().st_mtime if self.path is not None else None

    def open(self) -> BinaryIO:
        if self.path is None:
            return cast(BinaryIO, io.BufferedReader(_Rewindable(self.stdin or io.BytesIO())))
        return open(self.path, "rb")


def resolve(arguments: list[str]) -> list[Source]:
    """Expand PATH arguments: a folder contributes its log files (recursively, sorted), '-' is stdin."""
    set_ingest_clock(clock.now())  # the run starts: what "the future" is for its events
    sources: list[Source] = []
    for argument in arguments:
        if argument == "-":
            sources.append(Source("<stdin>", None, sys.stdin.buffer))
            continue
        path = Path(argument)
        if path.is_dir():
            found = sorted(item for item in path.rglob("*") if _wanted_in_folder(path, item))
            if not found:
                raise InvalidInput(f"{argument}: no log files ({', '.join(LOG_SUFFIXES)}), aider chat histories "
                                   "(.aider.chat.history.md) nor instruction files (CLAUDE.md, AGENTS.md, ...) "
                                   "in this folder")
            sources.extend(Source(str(item), item, in_folder=True) for item in found)
        elif path.is_file():
            sources.append(Source(argument, path))
        else:
            raise UsageError(f"{argument}: no such file or folder")
    return sources


# Folders of other people's code: an AGENTS.md in a dependency holds its authors' rules, not the user's.
_VENDORED = frozenset({"node_modules", "site-packages", "vendor", "third_party"})


def _wanted_in_folder(folder: Path, item: Path) -> bool:
    """A log file, aider's chat history, or a file agents read their instructions from (CLAUDE.md,
    AGENTS.md, a Codex memories folder's MEMORY.md), outside hidden folders (but the folder named may
    be one: ~/.codex). Hidden files are left out too, but for ``.aider.chat.history.md``: aider hides it."""
    from memdream.ingest.adapters.aider import HISTORY_FILE
    from memdream.ingest.adapters.memory_files import is_memory_file

    parts = item.relative_to(folder).parts
    hidden_file = item.name.startswith(".") and item.name != HISTORY_FILE
    if hidden_file or any(part.startswith(".") for part in parts[:-1]) or not item.is_file():
        return False
    if item.suffix.lower() in LOG_SUFFIXES:
        return True
    return (is_memory_file(item) or item.name == HISTORY_FILE) and not _VENDORED.intersection(parts)


def head_text(source: Source, stream: BinaryIO) -> str:
    """The first few KB as text, for format detection; rejects empty and binary input."""
    head = stream.read(HEAD_BYTES)
    stream.seek(0)
    if not head.strip():
        raise EmptyInput(f"{source.name}: empty input, nothing to ingest")
    if b"\x00" in head:
        raise InvalidInput(f"{source.name}: binary data, not a text log")
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start >= len(head) - 4:  # a character cut by the head's fixed size
            return head[: error.start].decode("utf-8")
        raise InvalidInput(f"{source.name}: not UTF-8 text (byte {error.start})") from None


def text_lines(stream: BinaryIO, ctx: ParseContext) -> Iterator[str]:
    """Decoded lines, streaming. A line that is not UTF-8 is reported through ``ctx`` and, when
    skipping is allowed, passed on as a blank line so that line numbers stay right."""
    readline, limit = stream.readline, MAX_LINE_BYTES + 1  # + 1: room for the line's "\n"
    number = 0
    while True:
        raw = readline(limit)
        if not raw:
            return
        number += 1
        if raw[-1:] != b"\n" and len(raw) < limit:
            ctx.unterminated = number  # the end of the file, cut: perhaps a line still being written
        if len(raw) == limit and raw[-1:] != b"\n":
            ctx.bad(number, too_long())  # raises unless skipping: before reading the rest
            _skip_rest(stream)
            yield "\n"
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            ctx.bad(number, "not UTF-8 text")
            yield "\n"


def spans_lines(head: str) -> bool:
    """Whether the input is JSON records laid out over several lines each (a transcript pretty-printed by
    ``jq .`` or an editor): its first non-blank line is a lone opening brace."""
    for line in head.lstrip("\ufeff").splitlines():
        if line.strip():
            return line.strip() == "{"
    return False


def joined_records(lines: Iterable[str], ctx: ParseContext | None = None) -> Iterator[str]:
    """Records laid out over several lines each, each as one line followed by a blank line for every
    other line it spanned, so that the line numbers an adapter reports stay the file's. A record ends at
    a closing brace in the first column (where a pretty-printer closes a top-level object); since no JSON
    string holds a line break, joining its lines without their indentation changes no value. A one-line
    record passes as it is. A record longer than :data:`MAX_LINE_BYTES` is a bad line, as a long line is."""
    record: list[str] = []
    size = first = 0
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not record:
            if text != "{":
                yield text + "\n"  # blank, or a record on one line
                continue
            first = number
        record.append(text)
        size += len(text)
        if size > MAX_LINE_BYTES:
            if ctx is not None:
                ctx.bad(first, too_long())  # raises unless skipping
            yield from repeat("\n", number - first + 1)
            record, size = [], 0
            continue
        if line.startswith("}"):
            yield "".join(record) + "\n"
            yield from repeat("\n", len(record) - 1)
            record, size = [], 0
    if record:  # cut: the adapter says the line is not JSON, or a file still being written
        yield "".join(record) + "\n"


def _skip_rest(stream: BinaryIO) -> None:
    """Read the rest of the current line without holding it."""
    while True:
        piece = stream.readline(_SKIP_BYTES)
        if not piece or piece.endswith(b"\n"):
            return
