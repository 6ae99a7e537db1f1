"""Property: the pruned top-k of the raw first stage (RawRanker.best, memdream.recall.topk) is exactly
the exhaustive sum's best (rank.largest over RawRanker.bm25): the same events, order and scores."""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdream.recall.index import Postings, SegmentIndex
from memdream.recall.rank import RawRanker, largest

TOKENS = ["alpha", "beta", "gamma", "delta", "caroline", "melanie"]
# Few distinct parts, as events of one shape give (ties everywhere), and some of any value; 3.0 is the
# speaker bonus: an event holding a word ties one whose speaker it is, and the order of the sum decides.
PARTS = st.one_of(st.sampled_from([0.9385, 1.0404, 1.0416, 1.2703, 1.2716, 1.3157, 3.0]),
                  st.floats(0.05, 2.2, allow_nan=False, allow_infinity=False))


@st.composite
def segments(draw: Any) -> list[SegmentIndex]:
    found = []
    for number in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 40))
        lists: dict[str, tuple[list[int], list[float]]] = {}
        speakers: dict[str, tuple[list[int], list[float]]] = {}
        for token in TOKENS:
            docs = sorted(draw(st.sets(st.integers(0, size - 1), max_size=size)))
            if docs:
                lists[token] = (docs, [draw(PARTS) for _ in docs])
            said = sorted(draw(st.sets(st.integers(0, size - 1), max_size=size // 3)))
            if said:
                speakers[token] = (said, [1] * len(said))
        index = SegmentIndex(segment=f"s{number}", sha256="0", offsets=array("q", range(size)))
        index.postings = Postings(lists, "f")
        index.speakers = Postings(speakers, "i")
        found.append(index)
    return found


queries = st.dictionaries(st.sampled_from([*TOKENS, "absent"]), st.sampled_from([1.0, 2.0, 0.5, 0.137]),
                          min_size=1, max_size=5)


def no_events(events: list[int]) -> dict[int, dict[str, Any]]:
    raise AssertionError("ranking the first stage reads no event")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(segments=segments(), query=queries, count=st.integers(1, 12))
def test_best_is_the_exhaustive_top(segments: list[SegmentIndex], query: dict[str, float], count: int) -> None:
    ranker = RawRanker(segments, no_events, lambda event: [])
    assert ranker.best(query, count) is None or not ranker.bm25(query)  # postings are kept from the second ask
    assert ranker.best(query, count) == largest(ranker.bm25(query), count)
