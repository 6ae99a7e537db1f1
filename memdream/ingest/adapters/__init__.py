"""Log format adapters. Each turns one input stream into raw events (dicts of raw-events.md).

An adapter is a module with ``NAME``, ``sniff(head) -> bool`` (does this text look like my
format?) and ``parse(lines, ctx) -> Iterator[dict]``. Adding a format is adding a module and
one line in ``ADAPTERS``. Adapters never redact and never write: the pipeline does both.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol

from memdream.errors import InvalidInput


@dataclass
class ParseContext:
    """What an adapter knows about the stream it parses, and where it reports bad lines."""

    source: str  # shown in errors: a path, or "<stdin>"
    default_session: str  # used when the log names no session (ingest: see memdream.ingest.source_ids)
    session: str | None = None  # --session NAME: overrides every session in the input
    strict: bool = False  # unknown fields are errors instead of being moved under meta
    skip_bad: bool = False  # --skip-bad: count and skip malformed lines instead of failing
    modified: float | None = None  # the source's modification time (Unix seconds); None: unknown (stdin)
    skipped: list[tuple[int, str]] = field(default_factory=list)

    def bad(self, line: int, reason: str) -> None:
        """Report a malformed line: raises, or records it when skipping is allowed."""
        if self.skip_bad:
            self.skipped.append((line, reason))
            return
        raise InvalidInput(f"{self.source}:{line}: {reason}")

    def session_for(self, found: str | None) -> str:
        return self.session or found or self.default_session


class Adapter(Protocol):
    NAME: str

    def sniff(self, head: str) -> bool: ...

    def parse(self, lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]: ...


def _load() -> dict[str, ModuleType]:
    from memdream.ingest.adapters import claude_code, codex, memdream_jsonl, memory_files, openai_chat

    return {module.NAME: module for module in (memdream_jsonl, claude_code, codex, openai_chat, memory_files)}


def adapters() -> dict[str, ModuleType]:
    """Registry: format name -> adapter module (imported on first use)."""
    return _load()


def detect(head: str) -> str | None:
    """The first adapter whose ``sniff`` accepts ``head`` (the input's first few KB)."""
    for name, module in adapters().items():
        if module.sniff(head):
            return name
    return None
