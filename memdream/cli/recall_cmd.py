"""memdream recall: one query (text or JSON), or a file of queries (one JSON object per line)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

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

if TYPE_CHECKING:
    from memdream.recall.engine import RecallOptions, RecallResult


def recall(
    query: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="What the agent needs to know (free text).", metavar="QUERY", show_default=False),
    ] = None,
    budget: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--budget", "-b", metavar="BYTES", show_default=False,
                     help="Most bytes (UTF-8) of context to print. Default: recall.budget in memdream.yaml."),
    ] = None,
    card_type: CardTypeOption = None,
    status: CardStatusOption = None,
    subject: SubjectOption = None,
    since: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--since", metavar="DATE", show_default=False,
                     help="Only cards verified or updated, and events logged, at or after this ISO 8601 date or time."),
    ] = None,
    include_archived: Annotated[
        bool, typer.Option("--include-archived", help="Also superseded and archived cards.")] = False,
    scope: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--scope", metavar="PROJECT", show_default=False,
                     help="The project whose plan and standing instructions to show. Default: the current "
                          "folder's project when the memory knows it; else what applies everywhere, and a "
                          "project's plan items and instructions that match QUERY."),
    ] = None,
    queries: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--queries", metavar="FILE", show_default=False,
                     help="Answer every line of this file (blank lines skipped, '-' for stdin); prints one JSON "
                          "object per line."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Say why each item was chosen: relevance (matched words), recency, "
                                             "references, confidence, or resident (plan, standing instructions). "
                                             "Text: a 'why:' line under each item (outside the budget); JSON: an "
                                             "'explain' object per item.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Print the context an agent should get for QUERY: the plan, then the best memories, within --budget bytes.

    The plan and the user's standing instructions of the scope come first, whatever the query, within
    recall.resident_share of the budget; then the cards that answer QUERY (ranked by relevance, recency,
    references and confidence; one per fact key; conflicts shown together); then raw events, cut to the
    part that matches, for the rest of the budget (--type and --status leave raw events out; with --subject,
    those that mention it). Never changes the memory's tracked files; appends which
    cards were returned to .memdream/usage.jsonl. Refuses (exit 1) while an interrupted dream is pending:
    run `memdream dream` to recover.
    """
    from memdream.memory.journal import require_settled
    from memdream.recall.engine import RecallOptions

    if (query is None) == (queries is None):
        from memdream.errors import UsageError

        raise UsageError("give one QUERY or --queries FILE")
    options = RecallOptions(budget=budget, card_type=card_type, status=status, subject=subject, since=since,
                            include_archived=include_archived, scope=scope, explain=explain)
    options.check()
    root = memory_root(memory, tenant)
    require_settled(root)  # one stat: a killed dream's half-written cards are never served
    if options.scope is None:  # the scope is the project of the folder recall runs in
        options = _with_cwd(options)
    if queries is not None:
        _answer_each(root, _read_queries(queries), options)
    else:
        assert query is not None
        _answer(root, query, options, output)


def _answer(root: Path, query: str, options: RecallOptions, output: DataFormat) -> None:
    from memdream.recall import engine

    emit(engine.recall(root, query, options), output, _render_explained if options.explain else _render)


def _render(result: RecallResult) -> None:
    sys.stdout.write(result.context)


def _render_explained(result: RecallResult) -> None:
    """Each item with a 'why:' line under it."""
    from memdream.recall.explain import explained_text

    sys.stdout.write(explained_text(result.items))


def _answer_each(root: Path, lines: list[str], options: RecallOptions) -> None:
    """One JSON object per query line, written as each is answered (one index load for all)."""
    from memdream.recall.engine import Recaller

    recaller = Recaller(root, options)
    try:
        for line in lines:
            sys.stdout.write(json.dumps(recaller.recall(line).to_dict(), ensure_ascii=False) + "\n")
    finally:
        recaller.close()


def _read_queries(path: Path) -> list[str]:
    """One query per line, blank lines skipped; '-' reads standard input."""
    from memdream.errors import InvalidInput, UsageError

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--queries {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput(f"--queries {path}: cannot be read: {error}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _with_cwd(options: RecallOptions) -> RecallOptions:
    """``options`` with the folder recall runs in (unchanged if that folder is gone)."""
    import os
    from dataclasses import replace

    try:
        return replace(options, cwd=os.getcwd())
    except OSError:
        return options
