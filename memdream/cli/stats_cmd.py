"""memdream stats: what a memory holds and how its dreams have been going, with the trend drawn."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from rich.console import Console

    from memdream.render import PlainConsole
    from memdream.review.stats import DreamFigures, Stats

# The bars of a dream's row: what it added, corrected, archived, left in conflict. A terminal gets
# coloured blocks; a pipe (cron's mail, a log file) one ASCII character per kind.
_BAR_KINDS = (("add", "+", "green"), ("corrections", "!", "yellow"), ("archive", "-", "magenta"),
              ("conflict", "x", "red"))
_BAR_WIDTH = 40
_SPARK_RICH = "▁▂▃▄▅▆▇█"
_SPARK_PLAIN = "_.-=+*#@"


def stats(
    days: Annotated[int, typer.Option("--days", "-d", metavar="N", min=1,
                                      help="Usage: the share of active cards recalled in the last N days.")] = 30,
    runs: Annotated[int, typer.Option("--runs", "-n", metavar="K", min=0,
                                      help="Dreams: the figures and trend of the last K runs.")] = 10,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Figures of the memory: active and archived cards by type and status, files, bytes and a token
    estimate of the active memory, conflicts, confidence, near-duplicate pairs, cards past their TTL,
    the share of cards recalled lately, and what each of the last dreams added and corrected (drawn).

    Read only; reads the card cache, the manifest of the raw layer, the usage log and the audit files
    (no git, no raw event). A memory with no dream yet shows zeros and says so.
    """
    from memdream.review.stats import memory_stats

    emit(memory_stats(memory_root(memory, tenant), days, runs), output, _render)


def _render(result: Stats) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    for line in _summary(result):
        console.print(line)
    console.print("")
    _render_dreams(console, result)


def _summary(result: Stats) -> list[str]:
    size, active, archived = result.size, result.active, result.archived
    lines = [
        f"cards       {active.total} active ({_parts(active.by_type)}; {_parts(active.by_status)})",
        f"            {archived.total} archived ({_parts(archived.by_type)}; {_parts(archived.by_status)})",
        f"size        {size['active']['files']} files, {_bytes(size['active']['bytes'])}, "
        f"~{size['active']['tokens']:,} tokens (active cards, plan.yaml, INDEX.md; tokens = bytes / 4)",
        f"            archive {size['archive']['files']} file(s), {_bytes(size['archive']['bytes'])}; "
        f"audit {size['audit']['files']} file(s), {_bytes(size['audit']['bytes'])}",
        f"raw         {size['raw']['events']:,} events in {size['raw']['segments']} segments"
        + (f" ({size['raw']['segments_here']} here, {_bytes(size['raw']['bytes'])})"
           if size["raw"]["segments"] else ""),
        f"conflicts   {result.conflicts} open",
        f"confidence  {_parts(result.confidence)}",
    ]
    redundancy, stale = result.redundancy, result.staleness
    pairs = redundancy["pairs"]
    lines.append(f"redundancy  {pairs} near-duplicate pair(s) over {redundancy['cards']} card(s)"
                 + (": " + ", ".join("/".join(pair["cards"]) for pair in redundancy["examples"][:3])
                    + (" ..." if pairs > 3 else "") if pairs else ""))
    lines.append(f"staleness   {stale['stale']} of {stale['with_ttl']} decaying card(s) past their TTL"
                 + (f" (longest overdue: {stale['examples'][0]['card']}, {stale['examples'][0]['days_past']} days)"
                    if stale["stale"] else ""))
    lines.append(_usage_line(result.usage))
    return lines


def _usage_line(usage: dict[str, Any]) -> str:
    if not usage["logged"]:
        return "usage       no usage log here (.memdream/usage.jsonl: recall writes it; a fresh clone has none)"
    share = usage["share"]
    percent = "-" if share is None else f"{float(share) * 100:.0f} %"
    return f"usage       {percent} of active cards recalled in the last {usage['days']} days " \
           f"({usage['recalled']} of {usage['active']})"


def _parts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items())


def _bytes(count: int) -> str:
    return f"{count:,} B" if count < 10_000 else f"{count / 1024:,.1f} KiB" if count < 10 << 20 \
        else f"{count / (1 << 20):,.1f} MiB"


def _render_dreams(console: Console | PlainConsole, result: Stats) -> None:
    from memdream.render import PlainConsole

    if not result.dream_count:
        console.print("dreams      no dream yet: `memdream dream` consolidates ingested events")
        return
    shown = result.dreams
    console.print(f"dreams      {result.dream_count} run(s); {result.corrections_per_dream} correction(s) per dream "
                  f"over the last {len(shown)}, oldest first:")
    if not shown:
        return
    plain = isinstance(console, PlainConsole)
    marks = plain or bool(getattr(console, "no_color", False))  # colourless blocks would all look alike
    head = f"  {'run':<16}  add  cor  arc  con  "
    _print_cells(console, head, [(1, mark, colour, f" {name}  ") for name, mark, colour in _BAR_KINDS], marks)
    scale = max(1, max(_total(run) for run in shown))
    for run in shown:
        head = f"  {run.time:<16}  {run.ops.get('add', 0):>3}  {run.corrections:>3}  {run.ops.get('archive', 0):>3}  " \
               f"{run.ops.get('conflict', 0):>3}  "
        _print_cells(console, head, [(*cell, "") for cell in _cells(run, scale)], marks)
    if len(shown) > 1:
        for label, values in (("corrections", [run.corrections for run in shown]),
                              ("additions", [run.ops.get("add", 0) for run in shown])):
            console.print(f"  {label:<11}  {_spark(values, plain)}  (max {max(values)}, last {values[-1]})")


def _total(run: DreamFigures) -> int:
    return sum(_amount(run, name) for name, _, _ in _BAR_KINDS)


def _amount(run: DreamFigures, name: str) -> int:
    return run.corrections if name == "corrections" else run.ops.get(name, 0)


def _cells(run: DreamFigures, scale: int) -> list[tuple[int, str, str]]:
    """(width, ASCII mark, colour) of each kind's piece of the bar: a kind that happened shows at least
    one cell, the longest bar is _BAR_WIDTH."""
    cells = []
    for name, mark, colour in _BAR_KINDS:
        amount = _amount(run, name)
        width = max(1, round(amount * _BAR_WIDTH / scale)) if amount else 0
        cells.append((width, mark, colour))
    return cells


def _print_cells(console: Console | PlainConsole, head: str, cells: list[tuple[int, str, str, str]],
                 marks: bool) -> None:
    """``head``, then each cell: ``width`` times its mark (ASCII) or a block in its colour, then its label."""
    if marks:
        console.print((head + "".join(mark * width + label for width, mark, _, label in cells)).rstrip())
        return
    from rich.text import Text

    text = Text(head)
    for width, _, colour, label in cells:
        text.append("█" * width, style=colour)
        text.append(label)
    text.rstrip()
    console.print(text)


def _spark(values: list[int], plain: bool) -> str:
    """One character per run, its height the run's share of the largest."""
    ramp = _SPARK_PLAIN if plain else _SPARK_RICH
    top = max(values) or 1
    return "".join(ramp[min(len(ramp) - 1, round(value * (len(ramp) - 1) / top))] for value in values)
