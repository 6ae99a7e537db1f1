"""memdream audit CARD_ID / memdream audit --verify: where memories come from."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit
from memdream.errors import UsageError
from memdream.memory import trailers as trailer

if TYPE_CHECKING:
    from rich.console import Console

    from memdream.render import PlainConsole
    from memdream.review.provenance import CardAudit, ResolvedEvidence
    from memdream.review.verify import VerifyResult


def audit(
    card_id: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(metavar="CARD_ID", help="The card to trace (active or archived).", show_default=False),
    ] = None,
    verify: Annotated[bool, typer.Option("--verify", help="Check the provenance of the whole memory instead "
                                                          "(for CI, next to `memdream lint`).")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Trace a card to the raw events behind it: evidence (hash checked), versions, derived cards,
    audit operations, commits.

    With --verify: every evidence reference resolves and its hash matches, no card lacks evidence,
    no chain is broken, every card was made by a dream run or marked as a person's edit. Exit 1
    with the list of problems, 0 when there is none.
    """
    from memdream.memory.journal import require_settled

    if verify == (card_id is not None):
        raise UsageError("give a CARD_ID or --verify (see 'memdream audit --help')")
    root = memory_root(memory, tenant)
    require_settled(root)
    if verify:
        from memdream.review.verify import verify_memory

        result = verify_memory(root)
        emit(result, output, _render_verify)
        if not result.ok:
            raise typer.Exit(1)
        return
    from memdream.review.provenance import audit_card

    emit(audit_card(root, card_id or ""), output, _render_audit)


def _render_verify(result: VerifyResult) -> None:
    for problem in sorted(result.problems):
        sys.stdout.write(f"{problem.where}: {problem.message}\n")
    for notice in result.notices:
        sys.stderr.write(f"notice: {notice}\n")
    checked = f"{result.cards} card(s), {result.refs} evidence ref(s)" + \
        (", checked against raw events" if result.raw_checked else "") + \
        (", commits checked" if result.git_checked else "")
    marked = f"; {len(result.human_edits)} file(s) marked as a person's edit" if result.human_edits else ""
    if result.problems:
        sys.stderr.write(f"{len(result.problems)} provenance problem(s); {checked}{marked}\n")
    else:
        sys.stderr.write(f"ok: {checked}{marked}\n")


def _render_audit(trail: CardAudit) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    card = trail.card
    key = f"{card.subject}.{card.attribute} = {card.value}" if card.attribute else card.subject
    console.print(f"{card.id}  {card.type}  {card.status}  confidence {card.confidence:.2f}  ({trail.path})",
                  style="bold")
    console.print(f"  {key}")
    console.print(f"  {' '.join(card.statement.split())}")
    _render_evidence(console, trail)
    _render_versions(console, trail)
    for title, related in (("Derived from", trail.derived_from), ("Cards derived from it", trail.derived)):
        if related:
            console.print(f"\n{title}", style="bold")
            for item in related:
                what = f"{item.card.type} {item.card.status}: {' '.join(item.card.statement.split())[:100]}" \
                    if item.card is not None else "missing (broken link)"
                console.print(f"  {item.card_id}  {what}")
    console.print(f"\nAudit operations ({len(trail.operations)})", style="bold")
    for line in trail.operations:
        console.print(f"  {line.run}  {_operation(line.data)}")
    console.print(f"\nCommits ({len(trail.commits)})", style="bold")
    for commit in trail.commits:
        run = commit.trailer(trailer.RUN)
        console.print(f"  {commit.short}  {commit.time}  {commit.subject}" + (f"  [run {run}]" if run else ""))
    if trail.git_note:
        console.print(f"  ({trail.git_note})")


def _render_evidence(console: Console | PlainConsole, trail: CardAudit) -> None:
    held = sum(1 for item in trail.evidence if item.where == "audit")
    raw = "" if trail.raw_present else ": the raw layer is not here, hashes not checked"
    console.print(f"\nEvidence ({len(trail.evidence)}; {held} held in the audit files){raw}", style="bold")
    for item in trail.evidence:
        _render_ref(console, item, "  ")


def _render_ref(console: Console | PlainConsole, item: ResolvedEvidence, indent: str) -> None:
    evidence = item.evidence
    kind = " ".join(part for part in (evidence.stance if item.where != "operation" else "", evidence.kind or "")
                    if part)
    check = f"event {item.check}" if item.where == "operation" else f"hash {item.check}"
    held = "  (held in the audit files)" if item.where == "audit" else ""
    console.print(f"{indent}{evidence.ref}  {kind + '  ' if kind else ''}{check}{held}")
    if item.stored is not None:
        event = item.stored.event
        from memdream.review.provenance import excerpt

        console.print(f"{indent}  {event.get('ts')}  {event.get('session')}  {event.get('kind')}  "
                      f"{event.get('actor', '')}: {excerpt(event)}")


def _render_versions(console: Console | PlainConsole, trail: CardAudit) -> None:
    if len(trail.versions) < 2:
        return
    console.print("\nVersions (oldest first)", style="bold")
    for version in trail.versions:
        card, mark = version.card, "  <- this card" if version.relation == "this" else ""
        if card is None:
            console.print(f"  {version.card_id}  missing (broken chain){mark}")
            continue
        console.print(f"  {card.id}  {card.value if card.value is not None else card.statement[:60]}  "
                      f"{card.status}  created {card.created_at}  updated {card.updated_at}{mark}")
        for line, resolved in version.made_by:
            console.print(f"    superseded {', '.join(line.data.get('cards') or [])} in run {line.run}: "
                          f"{line.data.get('reason', '')}")
            for item in resolved:
                _render_ref(console, item, "      ")


def _operation(data: dict[str, object]) -> str:
    op = str(data.get("op", "?"))
    if op == "evidence":
        added = data.get("added")
        return f"evidence  {data.get('card')}: {len(added) if isinstance(added, list) else 0} piece(s) held"
    others = data.get("cards")
    also = f" ({', '.join(str(item) for item in others)})" if isinstance(others, list) and others else ""
    change = ""
    if data.get("confidence_before") is not None or data.get("confidence_after") is not None:
        before, after = (data.get(name) for name in ("confidence_before", "confidence_after"))
        change = f"  confidence {'-' if before is None else before} -> {'-' if after is None else after}"
    return f"{op:<9} {data.get('card')}{also}: {data.get('reason', '')}{change}"
