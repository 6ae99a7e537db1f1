"""memdream confirm / reject / correct: a person's verdict on a card, recorded for the next dream."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.review.verdict import VerdictResult

CardArgument = Annotated[str, typer.Argument(help="Card id (as in `memdream cards`).", metavar="CARD_ID")]
NoteOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--note", metavar="TEXT", show_default=False,
                 help="Why (kept as the feedback's text). For `correct` on a lesson or strategy: the corrected "
                      "statement."),
]
ValueOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--value", metavar="VALUE", show_default=False,
                 help="`correct` only: the right value of the card's fact key (required for a fact)."),
]


def confirm(card_id: CardArgument, value: ValueOption = None, note: NoteOption = None, memory: MemoryOption = None,
            tenant: TenantOption = None, output: FormatOption = DataFormat.text) -> None:
    """Record that the card is right: the next dream counts your word as strong support."""
    _verdict("confirm", card_id, value, note, memory, tenant, output)


def reject(card_id: CardArgument, value: ValueOption = None, note: NoteOption = None, memory: MemoryOption = None,
           tenant: TenantOption = None, output: FormatOption = DataFormat.text) -> None:
    """Record that the card is wrong: the next dream archives it, and agent notes or tool readings of the
    same value do not bring it back (only your newer word or an outcome does)."""
    _verdict("reject", card_id, value, note, memory, tenant, output)


def correct(card_id: CardArgument, value: ValueOption = None, note: NoteOption = None, memory: MemoryOption = None,
            tenant: TenantOption = None, output: FormatOption = DataFormat.text) -> None:
    """Record the card's right value (--value for a fact, --note for a lesson or strategy): the next dream
    supersedes the card with it, on your authority."""
    _verdict("correct", card_id, value, note, memory, tenant, output)


def _verdict(verdict: str, card_id: str, value: str | None, note: str | None, memory: Path | None,
             tenant: str | None, output: DataFormat) -> None:
    from memdream.review.verdict import VerdictRequest, record_verdict

    emit(record_verdict(memory_root(memory, tenant), VerdictRequest(verdict, card_id, value, note)), output, _render)


def _render(result: VerdictResult) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    what = {"confirm": "confirmed", "reject": "rejected", "correct": "corrected"}[result.verdict]
    fact = result.event.get("fact")
    value = f" to {fact['value']!r}" if fact else ""
    stored = "recorded" if result.added else "already recorded"
    console.print(f"{result.card.id} {what}{value}: {stored} as {result.ref}")
    console.print("the next `memdream dream` applies it")
