"""Admit: the stage that makes cards of new keys whose admission score is high enough
(:mod:`memdream.dream.admission` says how the score is made), keeps the others pending with the
reason, and archives cards whose key proved to be volatile or observable state."""

from __future__ import annotations

from memdream.dream.admission import (
    Admission,
    assess,
    state_reason,
    volatile_attributes,
    volatile_reason,
)
from memdream.dream.model import AttributeStats, DreamContext, FactKey, KeyStats, Operation, Refusal
from memdream.dream.versions import Proposal, described, finish_versions, materialize, statement_for
from memdream.memory.card import ARCHIVED, CONFLICTING

MAX_PENDING = 50


def _refusal(ctx: DreamContext, proposal: Proposal, admission: Admission) -> Refusal:
    """What the proposal's card would have been (as :func:`materialize` would shape it), and why not."""
    version = proposal.active[0] if proposal.active else proposal.versions[-1] if proposal.versions else None
    shape = described(version) if version is not None else None
    statement = shape.statement if shape is not None else (
        statement_for(*proposal.names, version.value) if version is not None else None)
    pieces = [piece for each in proposal.versions for piece in (*each.supports, *each.against)]
    return Refusal(proposal.key, proposal.names, admission.reason, admission.why or admission.reason,
                   pieces or list(ctx.pieces.get(proposal.key, [])),
                   layer=shape.layer if shape is not None else "fact", statement=statement,
                   score=admission.score if admission.parts else None, parts=admission.parts)


def _keep_pending(ctx: DreamContext, key: FactKey, proposal: Proposal) -> None:
    stats = ctx.key_stats.setdefault(key, KeyStats())
    pieces = {piece.ref: piece for piece in [*stats.pending, *ctx.pieces.get(key, [])]}
    stats.pending = sorted(pieces.values(), key=lambda p: (p.ts, p.ref))[-MAX_PENDING:]


def _retire_state_cards(ctx: DreamContext) -> None:
    """Cards whose key proved to be volatile or observable state go to the archive."""
    by_key = ctx.cards_by_key()  # only keys this run read: sorting all of them costs O(memory)
    for key in sorted(key for key in by_key if key in ctx.pieces and key in ctx.key_stats):
        reason = state_reason(ctx, ctx.key_stats[key])
        if reason is None:
            continue
        for card in by_key[key]:
            before = card.confidence
            card.status, card.updated_at = ARCHIVED, ctx.now
            ctx.record(Operation("archive", card.id, f"not memory: {reason}",
                                 [e.ref for e in card.evidence[-3:]], before, card.confidence))


def _retire_volatile_attributes(ctx: DreamContext, volatile: dict[str, AttributeStats]) -> None:
    """Fact cards of an attribute that proved volatile go to the archive, whether or not this run
    read their subject: that is the point of learning it per attribute."""
    by_key = ctx.cards_by_key()
    for key in sorted(key for key in by_key if key.attribute in volatile):
        for card in by_key[key]:
            if card.type != "fact" or card.ttl_policy == "keep" or card.status == CONFLICTING:
                continue
            before = card.confidence
            card.status, card.updated_at = ARCHIVED, ctx.now
            ctx.record(Operation("archive", card.id, volatile_reason(key.attribute, volatile[key.attribute]),
                                 [e.ref for e in card.evidence[-3:]], before, card.confidence))


def run(ctx: DreamContext) -> None:
    _retire_state_cards(ctx)
    volatile = volatile_attributes(ctx)
    _retire_volatile_attributes(ctx, volatile)
    active = len(ctx.active_cards())
    for key in sorted(ctx.proposals):
        proposal: Proposal = ctx.proposals[key]
        admission = assess(ctx, proposal, active, volatile)
        if not admission.admitted:
            ctx.refuse(_refusal(ctx, proposal, admission))
            _keep_pending(ctx, key, proposal)
            continue
        materialize(ctx, proposal)
        finish_versions(ctx, proposal)
        if key in ctx.key_stats:
            ctx.key_stats[key].pending = []
        active += 1
