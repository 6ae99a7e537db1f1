"""Verify and correct — corrections before additions.

For each fact key, all evidence (the cards' own and the new pieces, in time order) is folded
into versions of the value:

- a new value backed by strong evidence newer than the current value's strong support
  supersedes it: a new card with ``supersedes``, the old one archived with ``superseded_by``;
- a new value with only weak evidence against a strongly supported one is recorded as
  contradicting evidence, nothing more;
- when neither side has strong evidence both stay, marked ``conflicting``, until strong
  evidence settles it;
- a strong rejection (user feedback) of the only value archives it.

Keys that already have cards are corrected here; new keys become proposals that the admit
stage accepts or keeps pending.
"""

from __future__ import annotations

from typing import Any

from memdream.dream.keys import induced_keys
from memdream.dream.model import DreamContext, FactKey, Piece, Refusal
from memdream.dream.values import same_value
from memdream.dream.versions import (
    SETTLES_AGAINST_USER,
    USER_WORD,
    Proposal,
    Version,
    cards_by_any_key,
    finish_versions,
    materialize,
    rejections,
)
from memdream.memory.card import ARCHIVED, Card, Evidence


def _pieces_of(card: Card, evidence: list[Evidence]) -> tuple[list[Piece], list[Piece]]:
    def piece(evidence: Evidence) -> Piece:
        return Piece(ref=evidence.ref, session=evidence.session, ts=evidence.ts or card.created_at,
                     kind=evidence.kind or "note", stance=evidence.stance, value=card.value, hash=evidence.hash)

    supports = [piece(item) for item in evidence if item.stance == "supports"]
    against = [piece(item) for item in evidence if item.stance == "contradicts"]
    return supports, against


def _find(active: list[Version], value: str | None, threshold: float) -> Version | None:
    if value is None:
        return None
    return next((version for version in active if same_value(version.value, value, threshold)), None)


def _contests(piece: Piece, active: list[Version]) -> bool:
    """A strong piece that is not the user's word, against a value the user gave."""
    return piece.kind != USER_WORD and any(version.user_backed for version in active)


def _settles(piece: Piece, active: list[Version]) -> bool:
    if not piece.strong or len(active) < 2:
        return False
    return piece.kind in SETTLES_AGAINST_USER or not any(version.user_backed for version in active)


def fold(active: list[Version], pieces: list[Piece], threshold: float) -> list[Version]:
    """Apply ``pieces`` (time order) to the ``active`` versions; returns every version touched or made."""
    versions = list(active)
    for piece in pieces:
        match = _find(active, piece.value, threshold)
        if piece.stance == "contradicts":
            if match is None:  # already retired (a correction's new value came first): keep the record
                retired = _find([v for v in versions if v not in active], piece.value, threshold)
                if retired is not None:
                    retired.against.append(piece)
            else:
                match.against.append(piece)
                if piece.strong and not match.strong_since(piece.ts):
                    match.rejected, match.cause = True, piece
                    active.remove(match)
            continue
        if match is not None:
            match.supports.append(piece)
            if _settles(piece, active):
                for other in [version for version in active if version is not match]:
                    other.superseded_by, other.cause = match, piece
                active[:] = [match]
            continue
        newest_strong = max((v.latest_strong() or "" for v in active), default="")
        if active and piece.strong and piece.ts >= newest_strong and _contests(piece, active):
            new = Version(piece.value or "", supports=[piece])  # both stay, flagged, until settled
            active.append(new)
            versions.append(new)
        elif not active or (piece.strong and piece.ts >= newest_strong):
            new = Version(piece.value or "", supports=[piece])
            for old in active:
                old.superseded_by, old.cause = new, piece
            active[:] = [new]
            versions.append(new)
        elif piece.strong or newest_strong:
            # An older strong reading, or a weak claim against strong evidence: dissent, recorded.
            for version in active:
                version.against.append(piece)
        else:
            new = Version(piece.value or "", supports=[piece])
            active.append(new)
            versions.append(new)
    return versions


def overruled(piece: Piece, refused: list[tuple[str, str]], threshold: float) -> bool:
    """Whether ``piece`` claims a value the user rejected and cannot bring it back. Only a newer
    word of the user's or an outcome can: an agent's note repeats what it believed, a tool reading
    (older, or newer: the same stale file read again) does not outrank the user's verdict. The
    piece is dropped, as evidence older than a value's strong support is (the key's cards keep
    the record of the rejection; the audit file has the archive operation)."""
    if piece.stance != "supports" or piece.value is None:
        return False
    for value, when in refused:
        if same_value(value, piece.value, threshold):
            return not (piece.kind in SETTLES_AGAINST_USER and piece.ts > when)
    return False


def _refuse_overruled(ctx: DreamContext, key: FactKey, pieces: list[Piece], refused: list[tuple[str, str]],
                      cited: list[Card], threshold: float) -> None:
    """Every new piece of the key claims a value the user rejected: counted and kept with why."""
    claimed = pieces[0].value or ""
    value, when = next(((value, when) for value, when in refused if same_value(value, claimed, threshold)), refused[0])
    card = next((card for card in cited if card.status == ARCHIVED and card.value == value), cited[0])
    ctx.refuse(Refusal(key, (card.subject, card.attribute or key.attribute), "rejected by the user",
                       f"rejected by the user: the user rejected {value!r} ({when}); only a newer word of theirs or "
                       f"an outcome brings it back", pieces, layer=card.type, statement=card.statement))


def propose(ctx: DreamContext, key: FactKey, existing: list[Card], cited: list[Card]) -> Proposal | None:
    """Fold the key's new evidence into its versions; None when nothing about it is new.
    ``cited``: every card of the key, archived ones too: what they cite is not new."""
    threshold = float(ctx.settings.get("dream.merge.similarity_threshold"))
    pending = ctx.key_stats[key].pending if key in ctx.key_stats and not existing else []
    candidates = [*pending, *ctx.pieces.get(key, [])]
    if not candidates:
        return None
    known = {item.ref for card in cited for item in ctx.full_evidence(card)}
    fresh = [piece for piece in candidates if piece.ref not in known]
    refused = rejections(ctx, cited)
    if refused:  # a value the user rejected stays rejected (memdream reject, docs/verdicts.md)
        kept = [piece for piece in fresh if not overruled(piece, refused, threshold)]
        if fresh and not kept:
            _refuse_overruled(ctx, key, fresh, refused, cited, threshold)
        fresh = kept
    if not fresh:
        return None
    active = []
    for card in sorted(existing, key=lambda c: c.id):
        supports, against = _pieces_of(card, ctx.full_evidence(card))
        active.append(Version(card.value or "", supports=supports, against=against, card=card))
    unique = {(piece.ref, piece.stance): piece for piece in fresh}
    # A correction supports the new value and contradicts the old one in one event: the new value
    # first, so that the old one is superseded by it rather than merely rejected.
    pieces = sorted(unique.values(), key=lambda p: (p.ts, p.ref, p.stance != "supports"))
    versions = fold(active, pieces, threshold)
    names = (existing[0].subject, existing[0].attribute or key.attribute) if existing else ctx.key_names[key]
    return Proposal(key, names, versions, active)


def run(ctx: DreamContext) -> None:
    """Correct the keys that already have cards; leave proposals for new keys to the admit stage."""
    by_key = ctx.cards_by_key()
    every = cards_by_any_key(ctx)
    induced = set(induced_keys(ctx))  # strategies: many sessions at once, the induce stage's job
    for key in sorted(ctx.pieces):
        if key in induced:
            continue
        existing = by_key.get(key, [])
        proposal = propose(ctx, key, existing, every.get(key, []))
        if proposal is None:
            continue
        if existing:
            _apply_existing(ctx, proposal, {id(card): card.to_dict() for card in existing})
        else:
            ctx.proposals[key] = proposal


def _apply_existing(ctx: DreamContext, proposal: Proposal, before: dict[int, dict[str, Any]]) -> None:
    operations = len(ctx.ops)
    materialize(ctx, proposal)
    finish_versions(ctx, proposal)
    # An existing card whose content did not change needs no update operation.
    kept = []
    for operation in ctx.ops[operations:]:
        card = ctx.cards[operation.card]
        if operation.op == "update" and before.get(id(card)) == card.to_dict():
            continue
        kept.append(operation)
    del ctx.ops[operations:]
    ctx.ops.extend(kept)
    for version in proposal.versions:
        if version.card is not None and before.get(id(version.card)) not in (None, version.card.to_dict()):
            version.card.updated_at = ctx.now
