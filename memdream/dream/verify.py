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

import hashlib
from dataclasses import dataclass, field
from typing import Any

from memdream.dream.model import DreamContext, FactKey, Operation, Piece, Refusal
from memdream.dream.values import confidence, same_value, status_of
from memdream.memory.card import ARCHIVED, CONFLICTING, SUPERSEDED, Card, Evidence


@dataclass
class Version:
    """One value a fact key held, with its evidence; maybe already a card."""

    value: str
    supports: list[Piece] = field(default_factory=list)
    against: list[Piece] = field(default_factory=list)
    card: Card | None = None
    superseded_by: Version | None = None
    cause: Piece | None = None  # the piece that superseded or rejected it
    rejected: bool = False

    def strong_since(self, ts: str) -> bool:
        return any(piece.strong and piece.ts >= ts for piece in self.supports)

    def latest_strong(self) -> str | None:
        return max((piece.ts for piece in self.supports if piece.strong), default=None)

    @property
    def user_backed(self) -> bool:
        """The user said this value (a correction, a confirmation or a statement)."""
        return any(piece.kind == USER_WORD for piece in self.supports)


@dataclass
class Proposal:
    """The outcome of the fold for one key: every version, and those still active."""

    key: FactKey
    names: tuple[str, str]
    versions: list[Version]
    active: list[Version]


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


# The precedence dream follows (docs/memory-format.md, "Which evidence wins"): the user's word
# outranks what a tool read, what a tool read outranks what the agent noted. A newer piece of the
# same or a higher rank replaces the value; a newer tool reading against the user's word does not
# (a stale config file read again must not undo a correction): the key becomes conflicting until
# the user's word or an outcome settles it. Repetition settles nothing: the same stale file is
# read in every session.
USER_WORD = "feedback"
SETTLES_AGAINST_USER = frozenset({USER_WORD, "outcome"})


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


def card_id(prefix: str, key: FactKey, value: str, first_ref: str, taken: set[str] | dict[str, Card]) -> str:
    """A stable id from what the card is (so re-dreaming the same events yields the same ids)."""
    digest = hashlib.sha256(f"{key.subject}\x1f{key.attribute}\x1f{value}\x1f{first_ref}".encode()).hexdigest()
    for length in range(6, len(digest), 2):
        candidate = f"{prefix}-{digest[:length]}"
        if candidate not in taken:
            return candidate
    raise AssertionError("sha256 ran out of digits")


def statement_for(subject: str, attribute: str, value: str) -> str:
    return f"The {attribute} of {subject} is {value}."


PREFIX = {"fact": "f", "lesson": "l", "strategy": "s"}


def described(version: Version) -> Piece | None:
    """The newest supporting piece that says what its card looks like (an extractor's)."""
    pieces = [piece for piece in version.supports if piece.statement]
    return max(pieces, key=lambda p: (p.ts, p.ref)) if pieces else None


def _shape(card: Card, piece: Piece | None) -> None:
    """Statement, scope and tags from the newest extractor piece (the layer is fixed at creation)."""
    if piece is None or piece.statement is None:
        return
    card.statement = piece.statement
    if piece.scope and (card.type != "fact" or piece.scope != "global"):
        card.scope = piece.scope
    card.tags = sorted({*card.tags, *piece.tags})


def _evidence(version: Version) -> list[Evidence]:
    items: dict[str, Evidence] = {}
    for piece in sorted(version.supports, key=lambda p: (p.ts, p.ref)):
        items.setdefault(piece.ref, piece.evidence("supports"))
    for piece in sorted(version.against, key=lambda p: (p.ts, p.ref)):
        items.setdefault(piece.ref, piece.evidence("contradicts"))
    # All of it: the card file shows the newest few, the audit files hold the rest (evidence_log).
    return sorted(items.values(), key=lambda e: (e.ts or "", e.ref))


def materialize(ctx: DreamContext, proposal: Proposal) -> None:
    """Turn a proposal into card changes and audit operations."""
    min_evidence = int(ctx.settings.get("dream.verify.verified_min_evidence"))
    threshold = float(ctx.settings.get("dream.verify.verified_threshold"))
    ttl = str(ctx.settings.get("dream.decay.default_ttl"))
    subject, attribute = proposal.names
    for version in proposal.versions:
        before = version.card.confidence if version.card else None
        conflicting = version in proposal.active and len(proposal.active) > 1
        status = CONFLICTING if conflicting else status_of(version.supports, version.against, min_evidence,
                                                              threshold)
        score = confidence(version.supports, version.against)
        card = version.card
        shape = described(version)
        if card is None:
            first = min(version.supports, key=lambda p: (p.ts, p.ref)).ref if version.supports else ""
            layer = shape.layer if shape is not None else "fact"
            card = Card(
                id=card_id(PREFIX[layer], proposal.key, version.value, first, ctx.cards), type=layer, subject=subject,
                attribute=attribute, value=version.value, statement=statement_for(subject, attribute, version.value),
                status=status, confidence=score, evidence=[], created_at=ctx.now, updated_at=ctx.now,
                ttl_policy=ttl,
            )
            ctx.cards[card.id] = card
            version.card = card
        _shape(card, shape)
        card.evidence = _evidence(version)
        card.confidence, card.status = score, status
        strong = version.latest_strong()
        if strong and (card.last_verified_at is None or strong > card.last_verified_at):
            card.last_verified_at = strong
        _record(ctx, version, before)


def _record(ctx: DreamContext, version: Version, before: float | None) -> None:
    card = version.card
    assert card is not None
    refs = [piece.ref for piece in version.supports[-5:]]
    if before is None:
        reason = f"new {card.type} {card.subject}.{card.attribute} = {card.value}"
        ctx.record(Operation("add", card.id, reason, refs, None, card.confidence))
    elif version.superseded_by is not None or version.rejected:
        return  # the supersede or archive operation tells this card's story
    elif card.status == CONFLICTING:
        ctx.record(Operation("conflict", card.id, "values diverge and no side has strong evidence", refs,
                             before, card.confidence))
    else:
        ctx.record(Operation("update", card.id, "new evidence", refs, before, card.confidence))


def finish_versions(ctx: DreamContext, proposal: Proposal) -> None:
    """Archive what the fold retired: superseded versions and rejected values."""
    for version in proposal.versions:
        card = version.card
        if card is None or card.status in (SUPERSEDED, ARCHIVED):
            continue
        cause = version.cause
        refs = [cause.ref] if cause else []
        if version.superseded_by is not None and version.superseded_by.card is not None:
            new = version.superseded_by.card
            card.status, card.superseded_by = SUPERSEDED, sorted({*card.superseded_by, new.id})
            new.supersedes = sorted({*new.supersedes, card.id})
            kind = cause.kind if cause else "evidence"
            ctx.record(Operation("supersede", new.id, f"{card.value!r} replaced by {new.value!r} on {kind} "
                                 f"evidence", refs, card.confidence, new.confidence, cards=[card.id]))
        elif version.rejected:
            card.status = ARCHIVED
            ctx.record(Operation("archive", card.id, f"{card.value!r} rejected by user feedback", refs,
                                 card.confidence, card.confidence))
        else:
            continue
        card.updated_at = ctx.now


def rejections(ctx: DreamContext, cited: list[Card]) -> list[tuple[str, str]]:
    """(value, when) of the key's cards that the user's rejection archived: the newest piece of
    the user's word against the card is at least as new as its newest strong support."""
    found = []
    for card in cited:
        if card.status != ARCHIVED or card.value is None:
            continue
        if not any(item.stance == "contradicts" and item.kind == USER_WORD for item in card.evidence):
            continue  # the user's "no" that archived it is the card's newest evidence, always shown inline
        evidence = ctx.full_evidence(card)
        said_no = max((e.ts or "" for e in evidence if e.stance == "contradicts" and e.kind == USER_WORD), default="")
        strong = max((e.ts or "" for e in evidence if e.stance == "supports" and e.is_strong), default="")
        if said_no and said_no >= strong:
            found.append((card.value, said_no))
    return found


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


def cards_by_any_key(ctx: DreamContext) -> dict[FactKey, list[Card]]:
    """Every card of each fact key, archived ones too."""
    found: dict[FactKey, list[Card]] = {}
    for card in ctx.cards.values():
        if card.attribute is not None:
            found.setdefault(FactKey.of(card.subject, card.attribute), []).append(card)
    return found


def refs_by_key(ctx: DreamContext) -> dict[FactKey, set[str]]:
    """The refs each key's cards cite (all of them: reads the audit files for large cards)."""
    return {key: {item.ref for card in cards for item in ctx.full_evidence(card)}
            for key, cards in cards_by_any_key(ctx).items()}


def run(ctx: DreamContext) -> None:
    """Correct the keys that already have cards; leave proposals for new keys to the admit stage."""
    by_key = ctx.cards_by_key()
    every = cards_by_any_key(ctx)
    from memdream.dream.induce import workflow_keys

    induced = set(workflow_keys(ctx))  # strategies: many sessions at once, the induce stage's job
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
