"""memdream rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.review.rollback import RollbackResult


def rollback(
    run: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--run", metavar="RUN_ID", show_default=False,
                     help="The dream run to undo (an id from `memdream log`, or a unique prefix). "
                          "Default: the last dream not undone yet."),
    ] = None,
    to: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--to", metavar="REV", show_default=False,
                     help="Undo every dream after this git revision instead."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be undone; change nothing.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Also undo the later dreams that built on --run (they are listed).")
    ] = False,
    redream: Annotated[
        bool,
        typer.Option("--redream", help="Let the next dream read the undone events again (after a rule or a "
                                       "setting was fixed) instead of quarantining them. On a run rolled back "
                                       "before: release its quarantined events."),
    ] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Undo a dream with a new commit (history is kept): cards, archive, plan, index and audit files
    come back as they were before the run.

    The undone run's raw events are quarantined so that the next scheduled dream does not make the
    same cards again; --redream lets it read them again. Refuses while memory files have
    uncommitted changes, and when later dreams built on the run unless --force.
    """
    from memdream.memory.store import Memory
    from memdream.review.rollback import rollback as undo

    result = undo(Memory(memory_root(memory, tenant)), run=run, to=to, dry_run=dry_run, force=force, redream=redream)
    emit(result, output, _render)


def _render(result: RollbackResult) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    if result.released_only:
        run = result.undone[0].run
        verb = "would release" if result.dry_run else "released"
        console.print(f"{verb} the events of run {run} (rolled back in {result.target[:10]}): "
                      "the next dream reads them")
        return
    verb = "would undo" if result.dry_run else "undid"
    for item in result.undone:
        console.print(f"{verb} run {item.run} ({item.short}, {item.time}): {item.subject}")
    console.print(f"memory files as of {result.target[:10]}; {len(result.files)} file(s) changed")
    fate = ("wait for the next dream (--redream)" if result.redream
            else "are quarantined: the next dream leaves them alone")
    if result.dry_run:
        console.print(f"dry run: nothing changed; the events would {fate.replace('are ', 'be ')}")
    else:
        console.print(f"committed {result.commit[:10] if result.commit else '-'}; the events {fate}")
