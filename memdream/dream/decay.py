"""Decay: forgetting on purpose, never deleting.

A card with ``ttl_policy: decay-<N>d`` that nothing re-verified for N days is demoted
(verified → inferred, flagged for review); an inferred card left unverified for another N days
is archived. ``keep`` cards and conflicting cards (which need a person) never decay.

Use counts: a card that a recall returned within the last N days is still useful, so it is never
archived (it is still demoted: being recalled says nothing about being true, and the review flag
asks for the re-verification it lacks). A card nobody recalled in N days also loses weight when
demoted (its ``importance`` halves, so capacity and ranking let it go first), then is archived.

Decay trusts the clock, so it guards against a wrong one. A card moves at most one step per
dream. When this run's clock is more than :data:`CLOCK_JUMP_DAYS` after the previous dream's,
the run warns of a clock jump and archives nothing (demotions, which re-verification undoes,
still happen): a clock set years ahead must not forget the whole memory in one run. A time
after the run's clock (an event from a future-dated log made it the card's last verification)
is not believed: the card's age counts from when dream last changed it, at the latest now.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memdream.clock import format_timestamp, parse_timestamp
from memdream.dream import state as state_mod
from memdream.dream.model import DreamContext, Operation
from memdream.dream.usage import DEFAULT_IMPORTANCE, last_recall, unused_reason
from memdream.memory.card import ARCHIVED, CONFLICTING, INFERRED, VERIFIED, Card

# More than this since the previous dream: suspect the clock, archive nothing that run. A year, not a
# month: a memory dreamed rarely (a project picked up again) must still forget, one step at a time.
CLOCK_JUMP_DAYS = 365


def _days(policy: str) -> int | None:
    if policy.startswith("decay-") and policy.endswith("d"):
        return int(policy[6:-1])
    return None


def clock_jump(ctx: DreamContext, now: datetime) -> str | None:
    """The warning for a clock that moved more than :data:`CLOCK_JUMP_DAYS` since the previous dream."""
    if ctx.state_dir is None:
        return None
    previous = state_mod.previous_run(ctx.state_dir)
    if previous is None:
        return None
    try:
        gap = now - parse_timestamp(previous)
    except ValueError:
        return None
    if gap <= timedelta(days=CLOCK_JUMP_DAYS):
        return None
    return (f"clock jump: this dream's time {ctx.now} is {gap.days} days after the previous dream's "
            f"({previous}); decay archived nothing this run (run dream again if the clock is right)")


# The form memdream writes a time in (clock.format_timestamp), and the same with a fraction of a second (as
# logs give the times that become last_verified_at): UTC, so that whole seconds order as their text does.
_UTC_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z")


def _fresh(card: Card, cutoff: str, now_text: str) -> bool:
    """Whether the card was verified after ``cutoff`` (``days`` + 1 days before now: so neither step below
    applies), told from the text of its time: parsing two times of every card cost an incremental dream
    of ten thousand cards ~40 ms. ``cutoff`` and ``now_text`` are in the form memdream writes (or
    ``now_text`` is empty: never fresh). Any doubt says False, and the caller parses: another form (an
    edited file), the cutoff's own second, or a time in now's second with a fraction (maybe after now)."""
    found = _UTC_TIME.fullmatch(card.last_verified_at or card.updated_at)
    if not now_text or found is None:
        return False
    second, now_second = found.group(1), now_text[:19]
    # After the cutoff and not in the future: fewer than days + 1 whole days old. A future time is not
    # believed (see _ages) and takes the slow path.
    return cutoff[:19] < second and (second < now_second or second == now_second and found.group(2) is None)


def _ages(card: Card, now: datetime) -> tuple[int, int]:
    """(days since the card was last verified, days since dream last changed it), neither from the future."""
    changed = min(parse_timestamp(card.updated_at), now)
    verified = parse_timestamp(card.last_verified_at or card.updated_at)
    if verified > now:
        verified = changed
    return (now - verified).days, (now - changed).days


def run(ctx: DreamContext) -> None:
    now = parse_timestamp(ctx.now)
    jump = clock_jump(ctx, now)
    if jump is not None:
        ctx.warnings.append(jump)
    touched = {operation.card for operation in ctx.ops}
    now_text = ctx.now if _UTC_TIME.fullmatch(ctx.now) and "." not in ctx.now else ""
    cutoffs: dict[int, str] = {}
    ageing: list[tuple[Card, int]] = []
    for card in ctx.active_cards():
        days = _days(card.ttl_policy)
        if days is None or card.status == CONFLICTING or card.id in touched:
            continue
        cutoff = cutoffs.get(days)
        if cutoff is None:
            cutoff = cutoffs[days] = format_timestamp(now - timedelta(days=days + 1))
        if not _fresh(card, cutoff, now_text):
            ageing.append((card, days))
    for card, days in sorted(ageing, key=lambda pair: pair[0].id):
        verified_age, changed_age = _ages(card, now)
        if verified_age <= days:
            continue  # both steps below need it unverified for longer: most cards, at no further cost
        last = last_recall(ctx, card.id, now)
        used = last is not None and (now - last).days <= days
        # One step at most: a demoted card's updated_at is now, so it cannot be archived in this run.
        if card.status == VERIFIED and verified_age > days:
            _demote(ctx, card, days, now, last if used else None)
        elif card.status == INFERRED and verified_age > days and changed_age > days and jump is None and not used:
            before = card.confidence
            card.status, card.updated_at = ARCHIVED, ctx.now
            reason = f"not re-verified in {days} days and {unused_reason(ctx, card, now)}"
            ctx.record(Operation("archive", card.id, reason, _refs(card), before, card.confidence))


def _refs(card: Card) -> list[str]:
    return [e.ref for e in card.evidence[-3:]]


def _demote(ctx: DreamContext, card: Card, days: int, now: datetime, recalled: datetime | None) -> None:
    """verified → inferred, flagged for review; a card nobody recalled in ``days`` also loses weight."""
    before = card.confidence
    card.status, card.updated_at = INFERRED, ctx.now
    card.review = f"not re-verified in {days} days"
    if recalled is not None:
        reason = f"{card.review} (recalled {recalled.date().isoformat()}: kept active while used)"
    else:
        reason = f"{card.review} and {unused_reason(ctx, card, now)}"
        weight = DEFAULT_IMPORTANCE if card.importance is None else card.importance
        card.importance = round(weight / 2, 4)
    ctx.record(Operation("demote", card.id, reason, _refs(card), before, card.confidence))
