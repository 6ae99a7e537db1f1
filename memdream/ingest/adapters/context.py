"""What an adapter is, and what it knows about the stream it parses: :class:`ParseContext` (the
source, the session, where bad lines are reported, what was skipped on purpose)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from memdream.errors import InvalidInput

# How a line that is not (yet) whole JSON is reported (memdream.ingest.adapters._common.json_error).
CUT_LINE_REASON = "not valid JSON"


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
    # Records the adapter read and left out on purpose, by type (``progress``, ``event_msg:token_count``):
    # counted so that a format change shows in the report instead of passing in silence.
    skipped_types: Counter[str] = field(default_factory=Counter)
    # The number of a last line that has no line end yet: a log still being written (or copied
    # mid-write). Set by the reader before it yields that line.
    unterminated: int | None = None
    # Set when that line could not be read: it is left for the next ingest, once it is whole.
    partial: int | None = None

    def bad(self, line: int, reason: str) -> None:
        """Report a malformed line: raises, or records it when skipping is allowed.

        A cut last line is no error at all: what comes before it is kept, and the line is
        read again by the next ingest, once the agent has finished writing it."""
        if line == self.unterminated and reason.startswith(CUT_LINE_REASON):
            self.partial = line
            return
        if self.skip_bad:
            self.skipped.append((line, reason))
            return
        raise InvalidInput(f"{self.source}:{line}: {reason}")

    def skip_type(self, name: str) -> None:
        """Count a record of type ``name`` left out on purpose."""
        self.skipped_types[name] += 1

    def session_for(self, found: str | None) -> str:
        return self.session or found or self.default_session


class Adapter(Protocol):
    NAME: str

    def sniff(self, head: str) -> bool: ...

    def parse(self, lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]: ...
