"""Forgetting what is never used: recall's usage log becomes reference counts, and a capacity per scope.

Recall appends every answer to ``.memdream/usage.jsonl`` (local, not in git). Dream folds it into
each card's ``reference_count`` (total times recalled) and writes only the cards whose count changed.
The log may be missing (a fresh clone) or rotated: a count already in a card is never lowered.

Decay asks :func:`memdream.dream.usage.last_recall` whether a card past its TTL is still used. This stage then applies
``dream.forget.capacity_per_scope``: when a layer of a scope holds more active cards than that, the
lowest-value ones are archived (:func:`card_value`); ``keep`` cards, conflicting cards and cards
this run already changed are never archived for capacity.
"""

from __future__ import annotations

import math
from datetime import datetime

from memdream.clock import parse_timestamp
from memdream.dream.model import DreamContext, Operation
from memdream.dream.usage import DEFAULT_IMPORTANCE, last_recall, usage
from memdream.memory.card import ARCHIVED, CONFLICTING, Card

GLOBAL_SCOPE = "global"  # where cards without a scope count
# card value = importance·0.3 + confidence·0.2 + references·0.3 + recency·0.2 (each in [0, 1])
VALUE_WEIGHTS = {"importance": 0.3, "confidence": 0.2, "references": 0.3, "recency": 0.2}
REFERENCE_HALF = 3  # references = n / (n + 3): one recall 0.25, three 0.5, nine 0.75


def run(ctx: DreamContext) -> None:
    fold_references(ctx)
    try:
        capacity = ctx.settings.get("dream.forget.capacity_per_scope")
    except KeyError:  # settings built by hand (tests, replays) without the forget section
        capacity = None
    if capacity is not None:
        enforce_capacity(ctx, int(capacity))


def fold_references(ctx: DreamContext) -> None:
    """Each card's ``reference_count`` becomes the log's count, or stays where it was when higher."""
    for card_id, count in usage(ctx).counts.items():
        card = ctx.cards.get(card_id)
        if card is not None and count > (card.reference_count or 0):
            card.reference_count = count  # updated_at stays: a count is no change of content


def card_value(card: Card, now: datetime, last_recalled: datetime | None, half_life_days: float) -> float:
    """How much keeping the card active is worth, in [0, 1]; capacity archives the lowest first.

    recency halves every ``half_life_days`` since the card was last verified, changed or recalled.
    """
    count = card.reference_count or 0
    moments = [parse_timestamp(card.last_verified_at or card.updated_at), parse_timestamp(card.updated_at)]
    if last_recalled is not None:
        moments.append(last_recalled)
    age_days = max(0.0, (now - min(max(moments), now)).total_seconds() / 86400)
    parts = {
        "importance": DEFAULT_IMPORTANCE if card.importance is None else card.importance,
        "confidence": card.confidence,
        "references": count / (count + REFERENCE_HALF),
        "recency": math.pow(0.5, age_days / half_life_days) if half_life_days > 0 else 0.0,
    }
    return round(sum(VALUE_WEIGHTS[name] * part for name, part in parts.items()), 4)


def _groups(ctx: DreamContext) -> dict[tuple[str, str], list[Card]]:
    """Active cards by (scope, layer): a flood of facts must not push a project's lessons out."""
    groups: dict[tuple[str, str], list[Card]] = {}
    for card in ctx.active_cards():
        scope = (card.scope or "").strip() or GLOBAL_SCOPE
        groups.setdefault((scope, card.type), []).append(card)
    return groups


def _evictable(card: Card, touched: set[str]) -> bool:
    return card.ttl_policy != "keep" and card.status != CONFLICTING and card.id not in touched


def enforce_capacity(ctx: DreamContext, capacity: int) -> None:
    """Archive the lowest-value cards of each (scope, layer) holding more than ``capacity`` active cards."""
    now = parse_timestamp(ctx.now)
    half_life = float(ctx.settings.get("recall.recency_half_life_days"))
    touched = {operation.card for operation in ctx.ops}
    for (scope, layer), cards in sorted(_groups(ctx).items()):
        excess = len(cards) - capacity
        if excess <= 0:
            continue
        valued = sorted((card_value(card, now, last_recall(ctx, card.id, now), half_life), card.id, card)
                        for card in cards if _evictable(card, touched))
        for value, _, card in valued[:excess]:
            card.status, card.updated_at = ARCHIVED, ctx.now
            reason = f"capacity of scope {scope} ({capacity} {layer}s): lowest value {value:.3f}"
            ctx.record(Operation("archive", card.id, reason, [e.ref for e in card.evidence[-3:]],
                                 card.confidence, card.confidence))
