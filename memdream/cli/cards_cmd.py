"""memdream cards / memdream show."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, memory_root

if TYPE_CHECKING:
    from memdream.memory.card import Card


def cards(
    card_type: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--type", "-t", help="fact, strategy or lesson.", show_default=False),
    ] = None,
    status: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--status", "-s", help="verified, inferred, conflicting, superseded or archived.",
                     show_default=False),
    ] = None,
    subject: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--subject", help="Only cards about this subject (case-insensitive substring).",
                     show_default=False),
    ] = None,
    archived: Annotated[bool, typer.Option("--archived", help="Include cards in archive/.")] = False,
    memory: MemoryOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """List cards, newest first, filtered by type, status and subject."""
    from memdream.memory.query import CardFilter, list_cards
    from memdream.render import print_json

    listed = list_cards(memory_root(memory), CardFilter(card_type, status, subject, archived or bool(
        status in ("superseded", "archived"))))
    if output is DataFormat.json:
        print_json([{**item.card.to_dict(), "path": item.path} for item in listed])
        return
    _render_table([item.card for item in listed])


def _render_table(found: list[Card]) -> None:
    from rich.table import Table

    from memdream.render import stdout_console

    console = stdout_console()
    if not found:
        console.print("No cards match.")
        return
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold")
    for column in ("id", "type", "status", "conf", "subject", "statement"):
        table.add_column(column, overflow="fold" if column == "statement" else "ellipsis",
                         no_wrap=column != "statement")
    for card in found:
        key = f"{card.subject}.{card.attribute}" if card.attribute else card.subject
        table.add_row(card.id, card.type, card.status, f"{card.confidence:.2f}", key, card.statement)
    console.print(table)
    console.print(f"{len(found)} card(s)", style="dim")


def show(
    card_id: Annotated[str, typer.Argument(help="Card id (as in `memdream cards`).")],
    memory: MemoryOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Show one card (active or archived) with its file path."""
    import sys

    from memdream import yamlio
    from memdream.memory.query import find_card
    from memdream.render import print_json

    item = find_card(memory_root(memory), card_id)
    if output is DataFormat.json:
        print_json({**item.card.to_dict(), "path": item.path})
        return
    sys.stdout.write(f"# {item.path}\n{yamlio.dumps(item.card.to_dict())}")
