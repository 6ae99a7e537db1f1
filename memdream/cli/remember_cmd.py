"""memdream remember: the user's own note, with the user's authority, for the next dream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.commands.remember import Remembered


def remember(
    text: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="The note: an instruction (\"always run make test before pushing\") or a fact "
                            "(\"the staging database listens on port 6432\").", metavar="TEXT", show_default=False),
    ] = None,
    subject: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--subject", metavar="TEXT", show_default=False,
                     help="The fact's subject (with --attribute and --value)."),
    ] = None,
    attribute: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--attribute", metavar="TEXT", show_default=False, help="The fact's attribute."),
    ] = None,
    value: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--value", metavar="TEXT", show_default=False, help="The fact's value."),
    ] = None,
    scope: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--scope", metavar="PROJECT", show_default=False,
                     help="The project the note applies to. Default: every project."),
    ] = None,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Record a note in your own words for the next dream: a standing instruction or a fact.

    The note is a raw event (session memdream-cli/<date>, actor user), redacted like any ingest;
    `memdream dream` makes it a card with your authority, and git shows the change. The same note
    given twice the same day is stored once.
    """
    from memdream.clock import now_iso
    from memdream.commands.remember import USER, Fact, note_event, store
    from memdream.errors import UsageError
    from memdream.ingest.record import cli_session
    from memdream.memory.store import Memory

    if scope is not None and not scope.strip():
        raise UsageError("--scope must name a project, not be empty")
    given = [part for part in (subject, attribute, value) if part and part.strip()]
    if given and len(given) < 3:
        raise UsageError("a fact needs --subject, --attribute and --value (all three)")
    fact = Fact.of(subject, attribute, value)
    if not (text and text.strip()) and fact is None:
        raise UsageError("give TEXT, or --subject, --attribute and --value")
    ts = now_iso()
    event = note_event(text or "", actor=USER, session=cli_session(ts), ts=ts, fact=fact,
                       scope=scope.strip() if scope else None, via="memdream remember")
    emit(store(Memory(memory_root(memory, tenant)), event), output, _render)


def _render(stored: Remembered) -> None:
    from memdream.render import stdout_console

    stdout_console().print(stored.summary())
