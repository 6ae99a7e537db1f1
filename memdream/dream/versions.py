"""Versions of a fact key's value, and how they become cards: what every stage that writes cards shares.

A :class:`Proposal` holds every :class:`Version` a key's value had, with its supporting and
contradicting evidence, and those still active. The verify stage folds evidence into versions, the
admit stage accepts or refuses new keys' proposals, the induce stage makes strategies; each of them
writes cards the same way: :func:`materialize` makes or updates the cards of a proposal,
:func:`finish_versions` archives what was superseded or rejected, both recording their operations.
Also here: stable card ids, the user's rejections a key's cards carry, and the evidence references
of each key's cards.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from memdream.dream.model import DreamContext, FactKey, Operation, Piece
from memdream.dream.values import confidence, status_of
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
    # What the supports say, read once: verify asks for every new piece of a key, and a key read by
    # thousands of events would otherwise cost their square. Supports only grow (append, extend), so
    # only pieces past ``_read`` are new.
    _read: int = field(default=0, repr=False, compare=False)
    _latest_strong: str | None = field(default=None, repr=False, compare=False)
    _user_backed: bool = field(default=False, repr=False, compare=False)

    def _catch_up(self) -> None:
        supports = self.supports
        if len(supports) < self._read:  # replaced by a shorter list: read it all again
            self._read, self._latest_strong, self._user_backed = 0, None, False
        for piece in supports[self._read:]:
            if piece.strong and (self._latest_strong is None or piece.ts > self._latest_strong):
                self._latest_strong = piece.ts
            self._user_backed = self._user_backed or piece.kind == USER_WORD
        self._read = len(supports)

    def strong_since(self, ts: str) -> bool:
        latest = self.latest_strong()
        return latest is not None and latest >= ts

    def latest_strong(self) -> str | None:
        self._catch_up()
        return self._latest_strong

    @property
    def user_backed(self) -> bool:
        """The user said this value (a correction, a confirmation or a statement)."""
        self._catch_up()
        return self._user_backed


@dataclass
class Proposal:
    """The outcome of the fold for one key: every version, and those still active."""

    key: FactKey
    names: tuple[str, str]
    versions: list[Version]
    active: list[Version]


# The precedence dream follows (docs/memory-format.md, "Which evidence wins"): the user's word
# outranks what a tool read, what a tool read outranks what the agent noted. A newer piece of the
# same or a higher rank replaces the value; a newer tool reading against the user's word does not
# (a stale config file read again must not undo a correction): the key becomes conflicting until
# the user's word or an outcome settles it. Repetition settles nothing: the same stale file is
# read in every session.
USER_WORD = "feedback"
SETTLES_AGAINST_USER = frozenset({USER_WORD, "outcome"})


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
