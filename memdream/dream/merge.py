"""Merge: one source of truth.

Before verification, new fact keys that are a near-duplicate spelling of a known key in the
same subject ('base-url' / 'base-urls') are folded into it. After verification, active cards
of one subject whose statements say the same thing in other words are merged into the older
card with the union of their evidence; the other is archived as superseded by it. Comparisons
are blocked by subject, so cost grows with the largest subject, not with the memory.
"""

from __future__ import annotations

from memdream.dream.model import DreamContext, FactKey, Operation, normalize_name
from memdream.memory.card import SUPERSEDED, Card
from memdream.memory.evidence_log import union


def _threshold(ctx: DreamContext) -> float:
    return float(ctx.settings.get("dream.merge.similarity_threshold"))


def canonicalize_keys(ctx: DreamContext) -> None:
    """Move new evidence filed under a near-duplicate attribute to the known spelling."""
    from rapidfuzz import fuzz

    subjects = {key.subject for key in ctx.pieces}  # only theirs are compared: not every key's
    spellings: dict[str, set[str]] = {}
    for source in (ctx.key_stats, ctx.cards_by_key()):
        for key in source:
            if key.subject in subjects:
                spellings.setdefault(key.subject, set()).add(key.attribute)
    known = {subject: sorted(attributes) for subject, attributes in spellings.items()}
    for key in sorted(ctx.pieces):
        candidates = known.get(key.subject, [])
        if key.attribute in candidates:
            continue
        match = next((name for name in candidates if fuzz.ratio(name, key.attribute) >= _threshold(ctx)), None)
        if match is None:
            known.setdefault(key.subject, []).append(key.attribute)
            continue
        target = FactKey(key.subject, match)
        ctx.pieces.setdefault(target, []).extend(ctx.pieces.pop(key))
        names = ctx.key_names.pop(key, None)
        if names is not None:
            ctx.key_names.setdefault(target, names)


def _union_evidence(ctx: DreamContext, keep: Card, drop: Card) -> None:
    keep.evidence = union(ctx.full_evidence(keep), ctx.full_evidence(drop))


def merge_statements(ctx: DreamContext, touched: set[str]) -> None:
    """Merge near-duplicate active cards in subjects that this run touched."""
    from rapidfuzz import fuzz

    # Only blocks holding a card this run touched can merge: the others are not built.
    wanted = {(card.type, normalize_name(card.subject)) for card in map(ctx.cards.get, touched) if card is not None}
    blocks: dict[tuple[str, str], list[Card]] = {}
    for card in ctx.active_cards():
        block = (card.type, normalize_name(card.subject))
        if block in wanted:
            blocks.setdefault(block, []).append(card)
    for _, cards in sorted(blocks.items()):
        if len(cards) < 2 or not any(card.id in touched for card in cards):
            continue
        cards.sort(key=lambda card: (card.created_at, card.id))
        for index, keep in enumerate(cards):
            if not keep.is_active:
                continue
            for drop in cards[index + 1:]:
                if not drop.is_active or keep.attribute is not None or drop.attribute is not None:
                    continue  # one card per fact key is verify's job; conflicting cards stay apart
                if fuzz.token_set_ratio(keep.statement, drop.statement) < _threshold(ctx):
                    continue
                before = keep.confidence
                _union_evidence(ctx, keep, drop)
                keep.confidence = max(keep.confidence, drop.confidence)
                keep.updated_at = drop.updated_at = ctx.now
                drop.status, drop.superseded_by = SUPERSEDED, sorted({*drop.superseded_by, keep.id})
                keep.supersedes = sorted({*keep.supersedes, drop.id})
                ctx.record(Operation("merge", keep.id, f"same statement as {drop.id} in other words",
                                     [e.ref for e in drop.evidence[-3:]], before, keep.confidence,
                                     cards=[drop.id]))


def run_keys(ctx: DreamContext) -> None:
    canonicalize_keys(ctx)


def run_statements(ctx: DreamContext) -> None:
    merge_statements(ctx, {operation.card for operation in ctx.ops})
