"""Admission: not everything becomes memory.

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

from memdream.dream.model import AttributeStats, DreamContext, KeyStats
from memdream.dream.state import attribute_stats
from memdream.dream.versions import Proposal, statement_for

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


# Extractors whose lessons are a tool's errors (error -> fix, a command aider does not have): one
# occurrence is evidence, not a rule.
RECURRING_LESSONS = frozenset({"error-fix", "aider"})


def _by_source(ctx: DreamContext, proposal: Proposal) -> Admission | None:
    """Extractors whose evidence has its own admission rule: lessons from a tool's errors must recur
    in sessions; the user's own instructions are admitted as said."""
    pieces = [piece for version in proposal.versions for piece in version.supports]
    sources = {piece.source for piece in pieces}
    if any(piece.layer == "lesson" and piece.source in RECURRING_LESSONS for piece in pieces):
        sessions = len({piece.session for piece in pieces})
        needed = int(ctx.settings.get("dream.learn.lesson_min_sessions"))
        # The same error twice in one session before the fix worked recurs as much as once in each of two.
        recurred = any(piece.recurred for piece in pieces)
        admitted = sessions >= needed or recurred
        why = (f"one-off: this error and its fix were seen once, in {sessions} session(s); a lesson needs "
               f"{needed} sessions (dream.learn.lesson_min_sessions) or the error twice before its fix")
        score = float(max(sessions, 2) if recurred else sessions)
        return Admission(admitted, score, "admitted" if admitted else "one-off", why)
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
