"""memdream log / memdream diff: the history of dreams and what one of them (or any two revisions) changed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from rich.console import Console

    from memdream.render import PlainConsole
    from memdream.review.diff import MemoryDiff
    from memdream.review.history import DreamRun

_COUNT_HEADS = (("add", "add"), ("merge", "mrg"), ("supersede", "sup"), ("archive", "arch"), ("conflict", "conf"),
                ("demote", "dem"), ("update", "upd"))


def log(
    limit: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--limit", "-n", metavar="N", show_default=False, min=1,
                     help="Show at most N entries (the newest)."),
    ] = None,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """The history of dreams, newest first: run id, time, commit, events consumed and what each did.

    Read from the git history alone (commit trailers and the audit file of each run at its commit), so it
    works on a clone without raw events. Rolled-back runs are marked; rollbacks are listed too.
    """
    from memdream.review.history import dream_runs

    emit(dream_runs(memory_root(memory, tenant), limit), output, _render_log)


def _render_log(runs: list[DreamRun]) -> None:
    from memdream.render import PlainConsole, stdout_console

    console = stdout_console()
    if not runs:
        console.print("No dream yet: `memdream dream` consolidates ingested events and commits its first run.")
        return
    rows = [_log_row(run) for run in runs]
    heads = ["run", "date", "commit", "events", *(head for _, head in _COUNT_HEADS), ""]
    numeric = range(3, 4 + len(_COUNT_HEADS))
    if isinstance(console, PlainConsole):
        _plain_table(console, heads, rows, numeric)
    else:
        _rich_table(console, heads, rows, numeric)


def _log_row(run: DreamRun) -> list[str]:
    date = run.time.replace("T", " ").removesuffix("Z")[:16]
    if run.kind == "rollback":
        return [run.run or "-", date, run.short, "", *("" for _ in _COUNT_HEADS),
                "rollback of " + ", ".join(run.undoes)]
    counts = [str(run.counts.get(op, 0)) for op, _ in _COUNT_HEADS]
    note = f"rolled back by {run.rolled_back_by[:10]}" if run.rolled_back_by else ""
    return [run.run or "-", date, run.short, "-" if run.events is None else str(run.events), *counts, note]


def _plain_table(console: PlainConsole, heads: list[str], rows: list[list[str]], numeric: range) -> None:
    """Aligned columns for a pipe: numbers right, text left, no trailing spaces."""
    widths = [max(len(row[column]) for row in [heads, *rows]) for column in range(len(heads))]
    for row in [heads, *rows]:
        cells = [cell.rjust(width) if column in numeric else cell.ljust(width)
                 for column, (cell, width) in enumerate(zip(row, widths))]
        console.print("  ".join(cells).rstrip())


def _rich_table(console: Console, heads: list[str], rows: list[list[str]], numeric: range) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column, head in enumerate(heads):
        table.add_column(head, justify="right" if column in numeric else "left", no_wrap=column < 3)
    for row in rows:
        table.add_row(*row, style="dim" if row[-1] else None)
    console.print(table)


def diff(
    rev_a: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(metavar="REV_A", show_default=False,
                       help="The older revision (any git revision). Default: the parent of the last dream."),
    ] = None,
    rev_b: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(metavar="REV_B", show_default=False, help="The newer revision. Default: HEAD."),
    ] = None,
    run: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--run", "-r", metavar="ID", show_default=False,
                     help="What this dream run changed (its commit against its parent); a unique prefix will do."),
    ] = None,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """What changed in the memory, card by card: by default what the last dream did.

    Cards added, superseded (old value -> new value), merged, archived (with the reason), changed
    (status, confidence, evidence, value), removed, and plan changes, computed from the card files at both
    revisions: hand edits and rollbacks show too. Exit 1 when there is no dream to show yet.
    """
    from memdream.review.diff import semantic_diff

    emit(semantic_diff(memory_root(memory, tenant), rev_a, rev_b, run), output, _render_diff)


def _render_diff(result: MemoryDiff) -> None:
    from memdream.render import PlainConsole, stdout_console

    console = stdout_console()
    runs = f" ({_runs_shown(result.runs)})" if result.runs else ""
    console.print(f"memory diff {(result.old or 'empty')[:10]}..{result.new[:10]}{runs}", style="bold")
    if result.rolled_back_by:
        console.print(f"(this dream was rolled back by {result.rolled_back_by[:10]}: `memdream diff "
                      f"{result.new[:10]} {result.rolled_back_by[:10]}` shows the undoing)")
    if result.empty:
        console.print("No changes to cards or the plan.")
    for title, heads, rows in _diff_sections(result):
        if not rows:
            continue
        console.print("")
        console.print(f"{title} ({len(rows)})", style="bold")
        if isinstance(console, PlainConsole):
            for row in rows:
                console.print("  " + "  ".join(cell for cell in row if cell))
        else:
            _rich_table(console, heads, rows, numeric=range(0))
    for path in result.unreadable:
        console.print(f"not a card (unreadable YAML): {path}")


def _runs_shown(runs: list[str]) -> str:
    """The dream runs a diff spans; many (a month of nightly dreams) as the first, the last and a count."""
    if len(runs) <= 3:
        return ", ".join(runs)
    return f"{runs[0]} .. {runs[-1]}: {len(runs)} dreams"


def _diff_sections(result: MemoryDiff) -> list[tuple[str, list[str], list[list[str]]]]:
    plan = result.plan
    plan_rows = ([["goal", f"{plan.goal[0]!r} -> {plan.goal[1]!r}"]] if plan.goal else [])
    plan_rows += [["next +", text] for text in plan.next_added] + [["next -", text] for text in plan.next_removed]
    plan_rows += [["done +", text] for text in plan.done_added] + [["done -", text] for text in plan.done_removed]
    return [
        ("superseded", ["old", "new", "key", "value", "why"],
         [[item.old, "-> " + item.new, item.key, f"{item.old_value} -> {item.new_value}", _why(item.reason)]
          for item in result.superseded]),
        ("merged", ["merged", "into", "key", "why"],
         [[item.old, "-> " + item.new, item.key, _why(item.reason)] for item in result.merged]),
        ("added", ["id", "type", "key", "value or statement", "conf"],
         [[card.id, card.type, card.key, _shown(card.value, card.statement), _conf(card.confidence)]
          for card in result.added]),
        ("archived", ["id", "type", "key", "value or statement", "why"],
         [[item.card.id, item.card.type, item.card.key, _shown(item.card.value, item.card.statement),
           _why(item.reason)] for item in result.archived]),
        ("changed", ["id", "key", "what"], [[item.id, item.key, _what(item)] for item in result.changed]),
        ("removed", ["id", "type", "key", "value or statement"],
         [[card.id, card.type, card.key, _shown(card.value, card.statement)] for card in result.removed]),
        ("plan", ["", "item"], plan_rows),
    ]


def _what(change: object) -> str:
    from memdream.review.diff import Change

    assert isinstance(change, Change)
    parts = ["restored from archive"] if change.restored else []
    if change.status:
        parts.append(f"status {change.status[0]} -> {change.status[1]}")
    if change.value:
        parts.append(f"value {change.value[0]} -> {change.value[1]}")
    if change.confidence:
        parts.append(f"confidence {change.confidence[0]:.2f} -> {change.confidence[1]:.2f}")
    if change.evidence_added:
        parts.append(f"evidence {change.evidence_added:+d}")
    if change.fields:
        parts.append("changed " + ", ".join(change.fields))
    return "; ".join(parts)


def _shown(value: str | None, statement: str) -> str:
    text = value if value is not None else statement.splitlines()[0] if statement else ""
    return text if len(text) <= 80 else text[:79] + "…"


def _why(reason: str | None) -> str:
    return f"({reason})" if reason else ""


def _conf(confidence: float | None) -> str:
    return "" if confidence is None else f"{confidence:.2f}"
