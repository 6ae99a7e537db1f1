"""Errors propagate along derived_from: cards built on a card that was superseded or archived in
this run are demoted (verified → inferred, confidence halved) and flagged for review, and so are
the cards built on those, transitively."""

from __future__ import annotations

from memdream.dream.model import DreamContext, Operation
from memdream.memory.card import INFERRED, VERIFIED


def run(ctx: DreamContext) -> None:
    retired = {operation.card for operation in ctx.ops if operation.op == "archive"}
    retired |= {old for operation in ctx.ops if operation.op in ("supersede", "merge") for old in operation.cards}
    dependants: dict[str, list[str]] = {}
    for card in ctx.cards.values():
        for parent in card.derived_from:
            dependants.setdefault(parent, []).append(card.id)
    queue = sorted(retired)
    demoted: set[str] = set()
    while queue:
        parent = queue.pop(0)
        for child_id in sorted(dependants.get(parent, [])):
            child = ctx.cards[child_id]
            if child_id in demoted or not child.is_active:
                continue
            demoted.add(child_id)
            before = child.confidence
            if child.status == VERIFIED:
                child.status = INFERRED
            child.confidence = round(child.confidence * 0.5, 2)
            successor = ctx.cards[parent].superseded_by
            what = f"superseded by {', '.join(successor)}" if successor else "no longer trusted"
            child.review = f"depends on {parent}, {what} ({ctx.now[:10]}): re-check before relying on it"
            child.updated_at = ctx.now
            ctx.record(Operation("demote", child_id, child.review, [], before, child.confidence, cards=[parent]))
            queue.append(child_id)
