"""memdream review: the cards a person should look at, with the verdict commands that settle them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.review.queue import ReviewQueue


def review(
    runs: Annotated[int, typer.Option("--runs", "-n", metavar="N", min=0,
                                      help="Look at the cards added or demoted by the last N dreams.")] = 3,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """List what a person should look at: conflicts, demoted cards, low-confidence cards that recall
    returned, and the new cards of the last --runs dreams, each with `memdream confirm|reject|correct ID`.

    Prints "nothing to review" (exit 0) when there is nothing. Read only.
    """
    from memdream.review.queue import review_queue

    emit(review_queue(memory_root(memory, tenant), runs), output, _render)


def _render(queue: ReviewQueue) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    if not queue.items:
        console.print("nothing to review")
        return
    for item in queue.items:
        card = item.card
        key = f"{card.subject}.{card.attribute}" if card.attribute else card.subject
        console.print(f"{card.id}  {card.type} {card.status} {card.confidence:.2f}  {key}", style="bold")
        console.print(f"  {' '.join(card.statement.split())}")
        for reason in item.reasons:
            console.print(f"  - {reason}")
        console.print(f"  {'  |  '.join(item.commands)}", style="dim")
    console.print(f"{len(queue.items)} card(s) to review", style="dim")
