"""memdream dream."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, memory_root

if TYPE_CHECKING:
    from memdream.dream.budget import DreamBudget
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
    if_needed: Annotated[bool, typer.Option(
        "--if-needed", help="Dream only when a trigger holds (dream.triggers: pending events or conflicts, idle, "
                            "hours since the last dream); otherwise say which did not hold and exit 0. "
                            "For cron: see docs/scheduling.md.")] = False,
    max_events: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-events", metavar="N", show_default=False,
                     help="Dream whole episodes, oldest first, up to N events; the rest wait for the next run."),
    ] = None,
    max_seconds: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--max-seconds", metavar="S", show_default=False,
                     help="Like --max-events, with N from the speed the last dream measured (an estimate)."),
    ] = None,
    commit: Annotated[bool, typer.Option(
        "--commit", help="In a memory that a project repository tracks (init --in-repo): commit the memory's "
                         "files (only them) instead of staging them.")] = False,
    memory: MemoryOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Consolidate new raw events into cards: verify and correct, merge, admit, plan; one commit.

    Meant for cron when the agent is idle. Exits 75 when another memdream process holds the memory.
    A model extractor that fails is a warning, never a failed dream.
    """
    from memdream.errors import UsageError
    from memdream.memory.store import Memory

    if (max_events is not None and max_events < 1) or (max_seconds is not None and not max_seconds > 0):
        raise UsageError("--max-events and --max-seconds take a positive number")
    options = {"extractor": extractor, "commit_in_project": commit, "budget": _budget(max_events, max_seconds)}
    if if_needed:  # the triggers decide (no dream stage imported unless one runs); rendered by `schedule`'s module
        from memdream.cli.schedule_cmd import render_if_needed
        from memdream.schedule.triggers import dream_if_needed

        result = dream_if_needed(Memory(memory_root(memory)), dry_run=dry_run, **options)
        render_if_needed(result, output, _render)
        return
    from memdream.dream.pipeline import dream as run_dream
    from memdream.progress import Progress, terminal_output
    from memdream.render import print_json

    shown = Progress.for_output(terminal_output(output is DataFormat.json))
    report = run_dream(Memory(memory_root(memory)), dry_run=dry_run, progress=shown, **options)  # type: ignore[arg-type]
    if output is DataFormat.json:
        print_json(report.to_dict())
    else:
        _render(report)


def _budget(max_events: int | None, max_seconds: float | None) -> DreamBudget | None:
    if max_events is None and max_seconds is None:
        return None
    from memdream.dream.budget import DreamBudget

    return DreamBudget(max_events, max_seconds)


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
    if report.redreamed:
        console.print(f"dreamed the waiting events of run(s) {', '.join(report.redreamed)}")
    if report.deferred:
        console.print(f"budget reached: {len(report.deferred)} episode(s) wait for the next dream")
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
    elif report.staged_in:
        console.print(f"staged {len(report.changes)} file(s) in the repository {report.staged_in}, run "
                      f"{report.run_id}: not committed (`git commit` them, or dream with --commit)")
    else:
        console.print("nothing to change; no commit")
