"""memdream recall."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, memory_root


def recall(
    query: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="What the agent needs to know (free text).", metavar="QUERY", show_default=False),
    ] = None,
    budget: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--budget", "-b", help="Most bytes (UTF-8) of context to print. Default: recall.budget "
                                            "in memdream.yaml.", show_default=False),
    ] = None,
    card_type: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--type", "-t", help="Only cards of this type: fact, strategy or lesson (no raw events).",
                     show_default=False),
    ] = None,
    status: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--status", "-s", help="Only cards with this status (no raw events).", show_default=False),
    ] = None,
    subject: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--subject", help="Only cards about this subject (case-insensitive substring); raw events "
                                       "that mention it.", show_default=False),
    ] = None,
    since: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--since", help="Only cards verified or updated, and events logged, at or after this ISO "
                                     "8601 date or time.", show_default=False),
    ] = None,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Also superseded and archived cards.")] = False,
    scope: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--scope", help="The project whose plan and standing instructions to show. Default: the "
                                     "current folder's project when the memory has scoped ones, else all.",
                     show_default=False),
    ] = None,
    queries: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--queries", help="Answer every line of this file (blank lines skipped, '-' for stdin); "
                                       "prints one JSON object per line.", show_default=False),
    ] = None,
    memory: MemoryOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Print the context an agent should get for QUERY: the plan, then the best memories, within --budget bytes.

    The plan and the user's standing instructions of the scope come first, whatever the query; then
    cards (ranked by relevance, recency, references and confidence; one per fact key; conflicts shown
    together); raw events only when cards do not fill the budget. Never changes the memory's tracked
    files; appends which cards were returned to .memdream/usage.jsonl. Refuses (exit 1) while an
    interrupted dream is pending: run `memdream dream` to recover.
    """
    from memdream.memory.journal import require_settled
    from memdream.recall.command import run
    from memdream.recall.engine import RecallOptions

    options = RecallOptions(budget=budget, card_type=card_type, status=status, subject=subject, since=since,
                            include_archived=include_archived, scope=scope)
    root = memory_root(memory)
    require_settled(root)
    run(root, query, queries, options, as_json=output is DataFormat.json)
