"""memdream dream (and --if-needed: the triggers' decision, then the dream's report)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.dream.budget import DreamBudget
    from memdream.dream.explain import Explanation, NotAdmitted
    from memdream.dream.pipeline import DreamReport
    from memdream.memory.store import Memory
    from memdream.schedule.triggers import Decision, IfNeededResult


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
    explain: Annotated[bool, typer.Option(
        "--explain", help="Why not: after the report, list what the run admitted, then each candidate it did not "
                          "admit (subject · attribute), with the card it would have been, the reason the rule gave "
                          "(the admission score and its parts, volatile or observable state, too few sessions, the "
                          "user's rejection) and up to 3 pieces of its evidence; JSON: an 'explain' object. Meant "
                          "with --dry-run; allowed on a real run too, which it explains (a cron log keeps why)."),
    ] = False,
    commit: Annotated[bool, typer.Option(
        "--commit", help="In a memory that a project repository tracks (init --in-repo): commit the memory's "
                         "files (only them) instead of staging them.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
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
    options = {"extractor": extractor, "commit_in_project": commit, "budget": _budget(max_events, max_seconds),
               "explain": explain}
    if if_needed:  # the triggers decide (no dream stage imported unless one runs)
        from memdream.schedule.triggers import dream_if_needed

        chosen = Memory(memory_root(memory, tenant))
        result = dream_if_needed(chosen, dry_run=dry_run, **options)
        _embed_cards(chosen, result.report)
        emit(result, output, _render_if_needed)
        return
    from memdream.dream.pipeline import dream as run_dream
    from memdream.progress import Progress, terminal_output

    shown = Progress.for_output(terminal_output(output is DataFormat.json))
    chosen = Memory(memory_root(memory, tenant))
    report = run_dream(chosen, dry_run=dry_run, progress=shown, **options)  # type: ignore[arg-type]
    _embed_cards(chosen, report)
    emit(report, output, _render)


def _embed_cards(memory: Memory, report: DreamReport | None) -> None:
    """recall.embed: after a dream (committed: its cards are what recall will read), the model and the
    vectors of the cards new or changed since (memdream.recall.embed.prepare). A model that cannot be
    had is one more warning of the report, never a failed dream."""
    if report is None or report.dry_run or not memory.settings.get("recall.embed.enabled"):
        return
    from memdream.recall.embed import prepare

    prepared = prepare(memory)
    if prepared is not None and prepared.warning:
        report.warnings.append(prepared.warning)


def _budget(max_events: int | None, max_seconds: float | None) -> DreamBudget | None:
    if max_events is None and max_seconds is None:
        return None
    from memdream.dream.budget import DreamBudget

    return DreamBudget(max_events, max_seconds)


def _render_if_needed(result: IfNeededResult) -> None:
    """The decision and each trigger, then the dream's own report when one ran."""
    from memdream.render import stdout_console

    _render_decision(result.decision, stdout_console())
    if result.report is not None:
        _render(result.report)


def _render_decision(decision: Decision, console: Any) -> None:
    console.print(decision.reason)
    for name, trigger in decision.triggers.items():
        if name == "recovery" and not trigger.holds:
            continue  # the usual case: nothing to say
        console.print(f"  {name:<10} {'yes' if trigger.holds else 'no ':<4} {trigger.reason}")


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
    if report.explained is not None:
        _render_explanation(report.explained, console)


KEY_CHARS, STATEMENT_CHARS = 160, 240  # a lesson's key may hold a whole error message: JSON has it all


def _render_explanation(explained: Explanation, console: Any) -> None:
    """The new cards one line each, then one block per candidate left out (by reason, then score)."""
    console.print("")
    console.print(f"why not: {len(explained.not_admitted)} candidate(s) not admitted, "
                  f"{len(explained.admitted)} new card(s) admitted")
    for card in explained.admitted:
        key = f"{card.subject} · {card.attribute}" if card.attribute else card.subject
        console.print(f"  admitted {card.card} ({card.layer}) {key}")
    for item in explained.not_admitted:
        console.print("")
        for line in _block(item):
            console.print(line)


def _block(item: NotAdmitted) -> list[str]:
    """One candidate: its key and layer, the card it would have been, why not, its evidence."""
    lines = [f"not admitted: {_cut(item.key, KEY_CHARS)} ({item.layer})"]
    if item.statement:
        lines.append(f"  would say: {_cut(item.statement, STATEMENT_CHARS)}")
    lines.append(f"  why: {item.why}")
    total = len(item.evidence) + item.more
    lines.append(f"  evidence: {total} piece(s)" + (f", the newest {len(item.evidence)} shown" if item.more else ""))
    for quote in item.evidence:
        said = f'"{quote.text}"' if quote.text else ("(no text)" if quote.text == "" else
                                                     "(read by an earlier dream: `memdream show` it)")
        stance = "" if quote.stance == "supports" else f" {quote.stance}"
        lines.append(f"    {quote.ref} {quote.kind}{stance} {said}".rstrip())
    if item.more:
        lines.append(f"    … and {item.more} more")
    return lines


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"
