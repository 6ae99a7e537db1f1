"""Decay: forgetting on purpose, never deleting.

A card with ``ttl_policy: decay-<N>d`` that nothing re-verified for N days is demoted
(verified → inferred, flagged for review); an inferred card left unverified for another N days
is archived. ``keep`` cards and conflicting cards (which need a person) never decay.
"""

from __future__ import annotations

from memdream.clock import parse_timestamp
from memdream.dream.model import DreamContext, Operation


def _days(policy: str) -> int | None:
    if policy.startswith("decay-") and policy.endswith("d"):
        return int(policy[6:-1])
    return None


def run(ctx: DreamContext) -> None:
    now = parse_timestamp(ctx.now)
    touched = {operation.card for operation in ctx.ops}
    for card in sorted(ctx.active_cards(), key=lambda c: c.id):
        days = _days(card.ttl_policy)
        if days is None or card.status == "conflicting" or card.id in touched:
            continue
        verified_age = (now - parse_timestamp(card.last_verified_at or card.updated_at)).days
        changed_age = (now - parse_timestamp(card.updated_at)).days
        before = card.confidence
        refs = [e.ref for e in card.evidence[-3:]]
        if card.status == "verified" and verified_age > days:
            card.status, card.updated_at = "inferred", ctx.now
            card.review = f"not re-verified in {days} days"
            ctx.record(Operation("demote", card.id, card.review, refs, before, card.confidence))
        elif card.status == "inferred" and verified_age > days and changed_age > days:
            card.status, card.updated_at = "archived", ctx.now
            ctx.record(Operation("archive", card.id, f"decayed: unverified for more than {days} days", refs,
                                 before, card.confidence))
