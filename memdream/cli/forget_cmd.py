"""memdream forget --subject S | --session ID | --card ID: erase it from the memory, leave a tombstone."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit
from memdream.errors import UsageError

if TYPE_CHECKING:
    from memdream.review.forget import ForgetResult


def forget(
    subject: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--subject", metavar="S", show_default=False,
                     help="A subject (a person, a tool, a project): what `memdream export --subject S` shows; "
                          "other cards that name S keep their place, with S replaced by [forgotten]."),
    ] = None,
    session: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--session", metavar="ID", show_default=False,
                     help="A session: every event of it and the cards citing it. Ingesting the same log "
                          "again does not bring it back."),
    ] = None,
    card: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--card", metavar="ID", show_default=False,
                     help="A card, with every version of its chain and the events only it cites."),
    ] = None,
    purge_history: Annotated[
        bool,
        typer.Option("--purge-history",
                     help="Also rewrite git history (git filter-repo) so that no commit, message or object "
                          "keeps it; reflogs expired, old objects pruned. Copies pushed or cloned elsewhere "
                          "are not reached."),
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would be erased; change nothing.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Erase one subject, session or card from the memory: cards (active and archived), raw events,
    audit lines, plan items and local caches; other cards that name it are redacted.

    One commit, with a tombstone in audit/ that says what kind of thing went, how much, and when (never
    what). Without --purge-history, earlier commits still hold it. Refuses while memory files have
    uncommitted changes. What erasure reaches and what it cannot is in the README.
    """
    from memdream.memory.store import Memory
    from memdream.review.forget import forget as erase

    if [subject, session, card].count(None) != 2:
        raise UsageError("give exactly one of --subject, --session or --card (see 'memdream forget --help')")
    result = erase(Memory(memory_root(memory, tenant)), subject=subject, session=session, card=card,
                   purge_history=purge_history, dry_run=dry_run)
    emit(result, output, _render)
    if result.empty and not result.history_rewritten:
        sys.stderr.write(f"note: nothing in this memory is about that {result.kind}; nothing changed\n")


def _render(result: ForgetResult) -> None:
    from memdream.render import stdout_console
    from memdream.review.forget import HISTORY_KEPT, NOT_REACHED

    console = stdout_console()
    counts = result.counts()
    verb = "would erase" if result.dry_run else "erased"
    console.print(f"{verb} one {result.kind}: {counts['cards']} card(s), {counts['archived']} archived version(s), "
                  f"{counts['events']} raw event(s) in {counts['segments']} segment(s), "
                  f"{counts['audit_lines']} audit line(s), {counts['plan_items']} plan item(s)")
    for name, ids in (("cards", result.cards), ("archived", result.archived), ("redacted", result.redacted)):
        if ids:
            console.print(f"{name}: {', '.join(ids)}")
    if result.raw_layer != "present":
        console.print(f"note: the raw layer is {result.raw_layer} here: events not here were not erased")
    if result.dry_run:
        console.print("dry run: nothing changed")
        return
    if result.commit:
        console.print(f"committed {result.commit[:10]} (tombstone audit/{result.forget_id}.jsonl); "
                      f"{result.local_files} local file(s) of .memdream/ cleaned")
    if result.history_rewritten:
        console.print("history rewritten: commit ids changed; no commit, message or object of this "
                      f"repository holds it any more; {NOT_REACHED}")
    elif not result.empty:
        console.print(f"{HISTORY_KEPT}; {NOT_REACHED}")
