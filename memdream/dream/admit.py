"""Admit: not everything becomes memory.

A new fact key becomes a card only when its admission score is high enough:

    U = value · (1 − observable) / size − λ · retrieval_cost

- value: reuse signals: sessions beyond the first that mention the key, +2 when a tool, the user
  or an outcome verified it, +1 per piece of user feedback;
- observable: the share of sessions in which a tool read the attribute (state the agent can
  look up again costs nothing to forget);
- size: the statement's length in units of 100 bytes;
- retrieval_cost: the number of active cards (each new card makes every recall a bit harder).

Volatile state (the value changes in most observations) and observable state (a tool reads it
in most sessions) are never admitted, and cards that turn out to be such state are archived.

Volatility is also learned per attribute, across subjects: when the tool re-readings of an attribute,
summed over all its subjects (:func:`memdream.dream.state.attribute_stats`), changed the value in most
of them, the attribute is volatile for every subject, even one read only once ("The cpu-load of
sso-bridge is 7643."). No key of a volatile attribute is admitted, whoever stated its value: a user
who reports a reading reports state too ("the cpu-load limit is 80" is another attribute). Active fact
cards of such an attribute are archived, unless ``ttl_policy: keep`` (a person pinned them) or
``conflicting`` (a person must look).

Keys that are not admitted keep their evidence, pending, for a later dream to reconsider.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memdream.dream.model import AttributeStats, DreamContext, FactKey, KeyStats, Operation, Refusal
from memdream.dream.state import attribute_stats
from memdream.dream.verify import Proposal, described, finish_versions, materialize, statement_for
from memdream.memory.card import ARCHIVED, CONFLICTING

MAX_PENDING = 50
MIN_SESSIONS = 3  # observability needs a few sessions to mean anything
MIN_CHANGES = 2  # one change is an update (an upgrade, a move), not a volatile state
# An attribute's volatility needs a few re-reads of more than one subject: one subject's changing
# value is its key's own business (state_reason), and two upgrades read before and after are not state.
MIN_ATTRIBUTE_RE_READS = 3
MIN_ATTRIBUTE_SUBJECTS = 2
VOLATILE_ATTRIBUTE = "volatile attribute"


@dataclass(frozen=True)
class Admission:
    admitted: bool
    score: float
    reason: str
    why: str = ""  # the reason in words, with the numbers compared (`dream --explain`)
    parts: dict[str, float] = field(default_factory=dict)  # the score's parts, when the score decided


def volatility(stats: KeyStats) -> float:
    """The share of tool readings whose value differs from the reading before."""
    if stats.changes < MIN_CHANGES:
        return 0.0
    return stats.changes / (stats.observations - 1)


def volatile_attributes(ctx: DreamContext) -> dict[str, AttributeStats]:
    """The attributes whose tool re-readings, over all subjects, changed the value in most of them."""
    threshold = float(ctx.settings.get("dream.admit.volatility_threshold"))
    return {
        name: stats for name, stats in attribute_stats(ctx.key_stats).items()
        if stats.re_reads >= MIN_ATTRIBUTE_RE_READS and stats.subjects >= MIN_ATTRIBUTE_SUBJECTS
        and stats.changes >= MIN_CHANGES and stats.changes / stats.re_reads > threshold
    }


def volatile_reason(attribute: str, stats: AttributeStats) -> str:
    return f"{VOLATILE_ATTRIBUTE} {attribute}: readings changed on {stats.changes} of {stats.re_reads} re-reads"


def observable(stats: KeyStats, sessions_total: int) -> float:
    """The share of all sessions in which a tool read the attribute."""
    if len(stats.tool_sessions) < MIN_SESSIONS or sessions_total == 0:
        return 0.0
    return len(stats.tool_sessions) / sessions_total


def state_reason(ctx: DreamContext, stats: KeyStats) -> str | None:
    """Why this key is state rather than memory, or None."""
    changing = volatility(stats)
    if changing > float(ctx.settings.get("dream.admit.volatility_threshold")):
        return f"volatile: the value changed in {stats.changes} of {stats.observations - 1} readings"
    share = observable(stats, len(ctx.sessions_seen))
    if share > float(ctx.settings.get("dream.admit.observable_session_share")):
        return f"observable: a tool read it in {len(stats.tool_sessions)} of {len(ctx.sessions_seen)} sessions"
    return None


# A bare reading with a unit of time, size or count ("1380s", "512 MB", "37 connections"): what a tool
# reads of running state changes with every reading, even when this key was read only once so far.
_READING = re.compile(r"^\s*-?\d+(?:[.,]\d+)?\s*(?:ms|s|sec|secs|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|"
                      r"b|kb|mb|gb|tb|kib|mib|gib|tib|bytes?|%|percent|items?|connections?|jobs?|requests?|"
                      r"messages?|tasks?|processes?|threads?|files?|rows?)\s*$", re.IGNORECASE)


def suspect_reading(proposal: Proposal) -> bool:
    """The current value is a tool's reading of a number with a time, size or count unit, and no
    user said it: state, not memory, until someone confirms it."""
    if not proposal.active or not _READING.match(proposal.active[0].value):
        return False
    supports = proposal.active[0].supports
    return any(piece.tool_read for piece in supports) and not any(piece.kind == "feedback" for piece in supports)


def _by_source(ctx: DreamContext, proposal: Proposal) -> Admission | None:
    """Extractors whose evidence has its own admission rule: lessons from error -> fix must recur
    in sessions; the user's own instructions are admitted as said."""
    pieces = [piece for version in proposal.versions for piece in version.supports]
    sources = {piece.source for piece in pieces}
    if "error-fix" in sources:
        sessions = len({piece.session for piece in pieces})
        needed = int(ctx.settings.get("dream.learn.lesson_min_sessions"))
        why = (f"one-off: this error and its fix were seen in {sessions} session(s); a lesson needs {needed} "
               f"(dream.learn.lesson_min_sessions)")
        return Admission(sessions >= needed, float(sessions), "admitted" if sessions >= needed else "one-off", why)
    if "instructions" in sources:
        return Admission(True, 1.0, "admitted")
    return None


def assess(ctx: DreamContext, proposal: Proposal, active_cards: int,
           volatile: dict[str, AttributeStats] | None = None) -> Admission:
    """Whether a new key becomes a card; ``volatile``: :func:`volatile_attributes`, when the caller has it."""
    volatile = volatile_attributes(ctx) if volatile is None else volatile
    if proposal.key.attribute in volatile:
        return Admission(False, 0.0, VOLATILE_ATTRIBUTE,
                         volatile_reason(proposal.names[1], volatile[proposal.key.attribute]))
    ruled = _by_source(ctx, proposal)
    if ruled is not None:
        return ruled
    if suspect_reading(proposal):
        return Admission(False, 0.0, "volatile", f"volatile: {proposal.active[0].value!r} is a tool's reading of a "
                                                 f"number with a unit, running state until the user confirms it")
    stats = ctx.key_stats.get(proposal.key, KeyStats())
    reason = state_reason(ctx, stats)
    if reason is not None:
        return Admission(False, 0.0, reason.split(":")[0], reason)
    pieces = [piece for version in proposal.versions for piece in version.supports]
    verified = any(piece.strong for piece in pieces)
    feedback = sum(1 for piece in pieces if piece.kind == "feedback")
    value = (len(stats.sessions) - 1) + 2 * verified + feedback
    share = observable(stats, len(ctx.sessions_seen))
    current = proposal.active[0].value if proposal.active else ""
    size = max(1.0, len(statement_for(*proposal.names, current).encode("utf-8")) / 100)
    cost = float(ctx.settings.get("dream.admit.retrieval_cost_lambda")) * active_cards
    score = value * (1 - share) / size - cost
    threshold = float(ctx.settings.get("dream.admit.min_score"))
    admitted = score >= threshold
    if admitted:
        return Admission(True, round(score, 4), "admitted")
    parts = {"value": float(value), "observable": round(share, 4), "size": round(size, 4),
             "retrieval_cost": round(cost, 6), "threshold": threshold}
    signals = (f"seen in {len(stats.sessions)} session(s), {'verified by' if verified else 'no'} strong evidence, "
               f"{feedback} piece(s) of user feedback")
    why = (f"no reuse signal: admission score {score:.4g} is below {threshold:g}: value {value} ({signals}) "
           f"· (1 − observable {share:.2f}) / size {size:.2f} − retrieval cost {cost:.4g} "
           f"({active_cards} active cards)")
    return Admission(False, round(score, 4), "no reuse signal", why, parts)


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
