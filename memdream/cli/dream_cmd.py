"""memdream dream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, memory_root

if TYPE_CHECKING:
    from memdream.dream.pipeline import DreamReport


def dream(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the changeset that would be committed; "
                                                            "write nothing.")] = False,
    extractor: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--extractor", metavar="CMD",
                     help="Model extractor command for this run (see docs/extractor.md), instead of "
                          "dream.extractor.command; '' turns it off.", show_default=False),
    ] = None,
    memory: MemoryOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Consolidate new raw events into cards: verify and correct, merge, admit, plan; one commit.

    Meant for cron when the agent is idle. Exits 75 when another memdream process holds the memory.
    A model extractor that fails is a warning, never a failed dream.
    """
    from memdream.dream.pipeline import dream as run_dream
    from memdream.memory.store import Memory
    from memdream.render import print_json

    report = run_dream(Memory(memory_root(memory)), dry_run=dry_run, extractor=extractor)
    if output is DataFormat.json:
        print_json(report.to_dict())
    else:
        _render(report)


def _render(report: DreamReport) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    if report.recovered:
        console.print("recovered from an interrupted dream: tracked files restored to the last commit")
    if report.consumed:
        first, last = report.consumed
        console.print(f"dreamed {report.events} event(s) from segments {first:06d}..{last:06d} "
                      f"in {report.episodes} episode(s)" + (f", {report.skipped_episodes} below budget"
                                                            if report.skipped_episodes else ""))
    for name in report.missing_segments:
        console.print(f"raw segment {name} is not here (cloned without the raw layer?): skipped")
    for warning in report.warnings:
        console.print(f"warning: {warning}")
    for item in report.operations:
        extra = f" ({', '.join(item['cards'])})" if item.get("cards") else ""
        console.print(f"  {item['op']:<9} {item['card']}{extra}: {item['reason']}")
    if report.not_admitted:
        console.print("not admitted: " + ", ".join(f"{n} key(s) {why}" for why, n in report.not_admitted.items()))
    before, after = report.before, report.after
    console.print(f"active cards {before.active_cards} -> {after.active_cards}, bytes {before.bytes} -> "
                  f"{after.bytes}, conflicts {before.conflicts} -> {after.conflicts}, archive "
                  f"{before.superseded + before.archived} -> {after.superseded + after.archived}")
    console.print("confidence: " + "  ".join(f"{bin_}: {n}" for bin_, n in after.confidence.items()))
    if report.dry_run:
        console.print(f"dry run: {len(report.changes)} file change(s) would be committed, nothing written")
        for change in report.changes:
            console.print(f"  {change.action:<6} {change.path}")
    elif report.commit:
        console.print(f"committed {report.commit[:10]} ({len(report.changes)} file(s)), run {report.run_id}")
    else:
        console.print("nothing to change; no commit")
