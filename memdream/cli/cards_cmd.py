"""memdream cards / memdream show."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memdream.cli.options import (
    CardStatusOption,
    CardTypeOption,
    DataFormat,
    FormatOption,
    MemoryOption,
    SubjectOption,
    TenantOption,
    memory_root,
)
from memdream.cli.output import emit
from memdream.memory.card import ARCHIVED, SUPERSEDED

if TYPE_CHECKING:
    from memdream.memory.query import ListedCard
    from memdream.review.provenance import RawEventView


def cards(
    card_type: CardTypeOption = None,
    status: CardStatusOption = None,
    subject: SubjectOption = None,
    archived: Annotated[bool, typer.Option("--archived", help="Include cards in archive/.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """List cards, newest first, filtered by type, status and subject.

    Refuses (exit 1) while an interrupted dream is pending: run `memdream dream` to recover.
    """
    from memdream.memory.journal import require_settled
    from memdream.memory.query import CardFilter, list_cards

    root = memory_root(memory, tenant)
    require_settled(root)
    listed = list_cards(root, CardFilter(card_type, status, subject, archived or bool(
        status in (SUPERSEDED, ARCHIVED))))
    emit(listed, output, _render_table)


def _render_table(listed: list[ListedCard]) -> None:
    """One line per card; the statement's first line is cut to the terminal width."""
    from memdream.render import stdout_console

    console = stdout_console()
    found = [item.card for item in listed]
    if not found:
        console.print("No cards match.")
        return
    keys = [f"{card.subject}.{card.attribute}" if card.attribute else card.subject for card in found]
    id_width = max(len(card.id) for card in found)
    key_width = min(28, max(len(key) for key in keys))
    room = max(30, console.width - id_width - key_width - 31)
    console.print(f"{'id':<{id_width}}  {'type':<8}  {'status':<11}  conf  {'subject':<{key_width}}  statement",
                  style="bold")
    for card, key in zip(found, keys):
        statement = card.statement.strip().splitlines()[0]
        if len(statement) > room or "\n" in card.statement.strip():
            statement = statement[: room - 1] + "…"
        key = key if len(key) <= key_width else key[: key_width - 1] + "…"
        console.print(f"{card.id:<{id_width}}  {card.type:<8}  {card.status:<11}  {card.confidence:.2f}  "
                      f"{key:<{key_width}}  {statement}")
    console.print(f"{len(found)} card(s)", style="dim")


def show(
    card_id: Annotated[str, typer.Argument(help="Card id (as in `memdream cards`), or log://<session>#<id> for "
                                                "a raw event.", metavar="CARD_ID")],
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Show one card (active or archived) with its file path, or one raw event (log://<session>#<id>)
    with its segment, line, hash checks and the cards that cite it.

    Refuses (exit 1) while an interrupted dream is pending: run `memdream dream` to recover.
    """
    from memdream.memory.journal import require_settled
    from memdream.memory.query import find_card

    root = memory_root(memory, tenant)
    require_settled(root)
    if card_id.startswith("log://"):
        from memdream.review.provenance import show_event

        emit(show_event(root, card_id), output, _render_event)
    else:
        emit(find_card(root, card_id), output, _render_card)


def _render_card(item: ListedCard) -> None:
    import sys

    from memdream import yamlio

    sys.stdout.write(f"# {item.path}\n{yamlio.dumps(item.card.to_dict())}")


def _render_event(view: RawEventView) -> None:
    """One raw event: its JSON (pretty), where it is stored, its hash checks, who cites it."""
    import json
    import sys

    stored = view.stored
    sys.stdout.write(
        f"# {stored.ref}\n# raw/segments/{stored.segment} line {stored.line}\n"
        f"# hash {stored.hash} (dedup index: {view.index_check}; segment against raw/MANIFEST.jsonl: "
        f"{view.segment_check})\n{json.dumps(stored.event, ensure_ascii=False, indent=2)}\n")
    cited = [f"{card_id} ({path}{', held in the audit files' if where == 'audit' else ''})"
             for card_id, path, where in view.cited_by]
    sys.stdout.write(f"cited by: {', '.join(cited) if cited else 'no card'}\n")
