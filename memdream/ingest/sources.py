"""Input sources for ingest: files, folders (recursively) and stdin, each checked before parsing."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from memdream.errors import InvalidInput, UsageError
from memdream.ingest.adapters import ParseContext

HEAD_BYTES = 8192
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson", ".log")


@dataclass(frozen=True)
class Source:
    """One input stream: shown as ``name`` in messages; ``path`` is None for stdin."""

    name: str
    path: Path | None
    stdin_bytes: bytes | None = None

    @property
    def stem(self) -> str:
        return self.path.stem if self.path is not None else "stdin"

    def open(self) -> BinaryIO:
        if self.path is None:
            return io.BytesIO(self.stdin_bytes or b"")
        return open(self.path, "rb")


def resolve(arguments: list[str]) -> list[Source]:
    """Expand PATH arguments: a folder contributes its log files (recursively, sorted), '-' is stdin."""
    sources: list[Source] = []
    for argument in arguments:
        if argument == "-":
            sources.append(Source("<stdin>", None, sys.stdin.buffer.read()))
            continue
        path = Path(argument)
        if path.is_dir():
            found = sorted(
                item for item in path.rglob("*")
                if item.is_file() and item.suffix.lower() in LOG_SUFFIXES
                and not any(part.startswith(".") for part in item.relative_to(path).parts)
            )
            if not found:
                raise InvalidInput(f"{argument}: no log files ({', '.join(LOG_SUFFIXES)}) in this folder")
            sources.extend(Source(str(item), item) for item in found)
        elif path.is_file():
            sources.append(Source(argument, path))
        else:
            raise UsageError(f"{argument}: no such file or folder")
    return sources


def head_text(source: Source, stream: BinaryIO) -> str:
    """The first few KB as text, for format detection; rejects empty and binary input."""
    head = stream.read(HEAD_BYTES)
    stream.seek(0)
    if not head.strip():
        raise InvalidInput(f"{source.name}: empty input, nothing to ingest")
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
    for number, raw in enumerate(stream, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            ctx.bad(number, "not UTF-8 text")
            yield "\n"
