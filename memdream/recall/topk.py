"""The best few raw events of a BM25 sum, exactly, without summing the score of every event.

``RawRanker.bm25`` (memdream.recall.rank) sums, for every event that holds a query term, each term's
weight times the event's part (and a bonus where the term is the speaker), term by term in a fixed
order; recall's coverage check then takes the best few of the sums (``rank.largest``: best score
first, events of equal score in the order the sum first met them). Most queries of a batch need no
more than that, yet the sum touches every posting of every term: tens of thousands of events for a
question in common words. :func:`best` gives the same events, in the same order, with the same scores,
scoring only the events that could be among them:

- Subsets of the query's terms are taken by decreasing bound (the sum of each term's largest
  contribution). An event that holds exactly the terms X scores at most bound(X): once the k-th best
  score found is above the next subset's bound, no event not yet found can enter.
- The events holding every term of a subset of two or more are a set intersection (done in C).
- The events of one term are taken by tiers of equal part, best first. When the subset of that term
  alone comes, every event that holds it and another term has been found (a larger subset bounds
  higher), so those left hold that term only and score alike within a tier: only the first k of a
  tier, in the sum's order, can be among the best.
- Every event found is scored with the sum's own additions in the sum's order (the same floats), and
  events of equal score are ordered as the sum's dict met them.

tests/recall/test_topk.py holds :func:`best` to the exhaustive sum on random postings.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Set
from itertools import combinations, groupby, repeat
from operator import add
from typing import NamedTuple

# A bound is compared with the scores found with this much slack: it is a sum of the same terms added
# in another order, which may differ from the score it bounds in the last bits.
SLACK = 1e-9


class Tier(NamedTuple):
    """Events of one term with one part and one speaker flag, in the order the sum visits them."""

    unit: float  # part + speaker_weight when the term is the event's speaker: the contribution per weight
    events: list[int]


class TermPostings:
    """One token's postings over every segment of a ranker, by global event number.

    ``parts`` holds the events whose text holds the token, in the order the sum visits them (segment by
    segment, each in event order); ``spoken`` those whose speaker it is; ``late`` those of ``spoken``
    that ``parts`` lacks (the sum visits them after the segment's ``parts``)."""

    __slots__ = ("events", "late", "parts", "size", "spoken", "tiers", "top")

    def __init__(self, parts: dict[int, float], spoken: frozenset[int], speaker_weight: float) -> None:
        self.parts = parts
        self.spoken = spoken
        self.late = spoken - parts.keys()
        self.events: Set[int] = frozenset(parts.keys() | spoken) if spoken else frozenset(parts)
        self.tiers = _tiers(parts, spoken, self.late, speaker_weight)
        self.top = self.tiers[0].unit if self.tiers else 0.0
        self.size = len(parts) + len(spoken)


def _tiers(parts: dict[int, float], spoken: frozenset[int], late: frozenset[int],
           speaker_weight: float) -> list[Tier]:
    """The events of a term grouped by equal contribution, best first, each group in visit order."""
    if not spoken:  # the common case, in C: a stable sort keeps the visit order within a part
        ranked = sorted(parts, key=parts.__getitem__, reverse=True)
        return [Tier(part, list(group)) for part, group in groupby(ranked, key=parts.__getitem__)]
    # A tier holds text events or speaker-only ones (part 0.0), never both: in each, the sum visits
    # them in event order.
    visit = list(parts) + sorted(late)
    keys = {event: (parts.get(event, 0.0), event in spoken) for event in visit}
    ranked = sorted(visit, key=lambda event: keys[event][0] + speaker_weight * keys[event][1], reverse=True)
    return [Tier(part + speaker_weight * flag, list(group))
            for (part, flag), group in groupby(ranked, key=keys.__getitem__)]


class Term(NamedTuple):
    """A query term as the sum adds it: its postings, its weight (query weight times idf) and its
    speaker bonus (computed as the sum computes it)."""

    postings: TermPostings
    weight: float
    bonus: float


def best(terms: list[Term], count: int, segment_of: Callable[[int], int],
         max_scored: int) -> list[tuple[int, float]] | None:
    """``rank.largest(bm25, count)`` of the sum over ``terms`` (in the sum's order): (event, score) best
    first; None when more than ``max_scored`` events would be scored (the plain sum is cheaper then).
    ``segment_of``: the segment number of a global event number."""
    bounds = [term.weight * term.postings.top * (1 + SLACK) for term in terms]
    subsets = sorted((subset for size in range(len(terms), 0, -1) for subset in combinations(range(len(terms)), size)),
                     key=lambda subset: (-sum(bounds[number] for number in subset), -len(subset)))
    scored: dict[int, float] = {}
    floor = _Floor(scored, count)
    for subset in subsets:
        if floor.excludes(sum(bounds[number] for number in subset)):
            break
        if len(subset) > 1:
            found = _holding_all([terms[number].postings.events for number in subset]) - scored.keys()
            if len(scored) + len(found) > max_scored:
                return None
            _score(scored, list(found), terms)
        else:
            _walk_tiers(scored, terms, subset[0], floor, count)
    return _ordered(scored, count, terms, segment_of)


def _holding_all(sets: list[Set[int]]) -> Set[int]:
    """The events in every one of ``sets``, smallest first (an intersection costs its smaller side)."""
    ordered = sorted(sets, key=len)
    found = ordered[0]
    for other in ordered[1:]:
        found = found & other
        if not found:
            break
    return found


def _walk_tiers(scored: dict[int, float], terms: list[Term], number: int, floor: _Floor, count: int) -> None:
    """Score the events of term ``number`` that hold no other term (every other has been found), tier
    by tier while a tier can still reach the best ``count``; of a tier, the first ``count`` not yet
    scored (they score alike, and the sum meets them in this order)."""
    term = terms[number]
    for tier in term.postings.tiers:
        if floor.excludes(term.weight * tier.unit * (1 + SLACK)):
            return
        fresh: list[int] = []
        for event in tier.events:
            if event not in scored:
                fresh.append(event)
                if len(fresh) == count:
                    break
        _score(scored, fresh, terms)


def _score(scored: dict[int, float], events: list[int], terms: list[Term]) -> None:
    """The sum's score of each of ``events``, added as the sum adds it: term by term, part then bonus.
    An absent part or bonus adds 0.0, which leaves a non-negative float unchanged (in C, a term at a time)."""
    if not events:
        return
    totals = [0.0] * len(events)
    for term in terms:
        parts = term.postings.parts
        totals = list(map(add, totals, map(term.weight.__mul__, map(parts.get, events, repeat(0.0)))))
        if term.postings.spoken:
            totals = list(map(add, totals, map(term.bonus.__mul__, map(term.postings.spoken.__contains__, events))))
    scored.update(zip(events, totals))


class _Floor:
    """The k-th best score found so far: no event that cannot reach it can be among the best k."""

    def __init__(self, scored: dict[int, float], count: int) -> None:
        self.scored = scored
        self.count = count
        self.seen = -1
        self.value = 0.0

    def excludes(self, bound: float) -> bool:
        if len(self.scored) < self.count:
            return False
        if len(self.scored) != self.seen:  # only grows: its size says whether it changed
            self.seen = len(self.scored)
            self.value = heapq.nlargest(self.count, self.scored.values())[-1]
        return bound < self.value


def _ordered(scored: dict[int, float], count: int, terms: list[Term],
             segment_of: Callable[[int], int]) -> list[tuple[int, float]]:
    """The best ``count`` of ``scored``, best first, events of equal score in the order the sum's dict
    holds them (:func:`_in_visit_order`)."""
    if len(scored) <= count:
        last = min(scored.values(), default=0.0)
    else:
        last = heapq.nlargest(count, scored.values())[-1]
    above: dict[float, list[int]] = {}
    tied: list[int] = []
    for event, score in scored.items():
        if score > last:
            above.setdefault(score, []).append(event)
        elif score == last:
            tied.append(event)
    ranked: list[int] = []
    for score in sorted(above, reverse=True):
        ranked += _in_visit_order(above[score], terms, segment_of)
    ranked += _in_visit_order(tied, terms, segment_of)[:count - len(ranked)]
    return [(event, scored[event]) for event in ranked]


def _in_visit_order(events: list[int], terms: list[Term], segment_of: Callable[[int], int]) -> list[int]:
    """``events`` in the order the sum first meets them: by the first term (in the sum's order) that
    holds them, then as that term visits them (segment by segment: those holding it in their text in
    event order, then those holding it as speaker only)."""
    if len(events) < 2:
        return events
    left: Set[int] = set(events)
    ordered: list[int] = []
    for term in terms:
        held = left & term.postings.events
        if not held:
            continue
        left = left - held
        late = term.postings.late
        if late:
            ordered += sorted(held, key=lambda event: (segment_of(event), event in late, event))  # noqa: B023
        else:
            ordered += sorted(held)
        if not left:
            break
    return ordered
