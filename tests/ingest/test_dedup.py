"""The dedup index answers what the single-process path answers, and rolls an input back exactly."""

from __future__ import annotations

from memdream.ingest.dedup import NEW, REPEATED, STORED, DedupIndex


def test_a_stored_id_is_a_duplicate_once_then_a_repeated_id_in_the_same_input() -> None:
    index = DedupIndex([("s", "a")])
    index.begin()
    assert index.claim("s", "a") == STORED
    assert index.claim("s", "a") == REPEATED
    index.begin()  # the next input may meet it again
    assert index.claim("s", "a") == STORED


def test_a_new_id_is_claimed_then_repeated_and_known_to_later_inputs() -> None:
    index = DedupIndex()
    index.begin()
    assert index.claim("s", "b") == NEW
    assert index.claim("s", "b") == REPEATED
    assert ("s", "b") in index and ("t", "b") not in index
    index.begin()
    assert index.claim("s", "b") == STORED


def test_an_id_derived_earlier_in_the_input_is_a_duplicate_not_a_repeated_id() -> None:
    index = DedupIndex()
    index.begin()
    index.add("s", "e1a2b3")  # an event without id, stored under the id derived from it
    assert index.claim("s", "e1a2b3") == STORED  # the same id written out later in the file
    assert index.claim("s", "e1a2b3") == REPEATED  # and a second time


def test_rollback_forgets_what_the_input_added_and_sighted_and_nothing_else() -> None:
    index = DedupIndex([("s", "old")])
    index.begin()
    assert index.claim("s", "kept") == NEW
    index.begin()
    assert index.claim("s", "new") == NEW
    index.add("s", "derived")
    assert index.claim("s", "derived") == STORED
    assert index.claim("s", "old") == STORED
    assert index.claim("s", "kept") == STORED
    index.rollback()
    assert ("s", "new") not in index and ("s", "derived") not in index
    assert ("s", "old") in index and ("s", "kept") in index and len(index) == 2
    index.begin()  # sightings were forgotten too: each is a plain duplicate again
    assert index.claim("s", "old") == STORED and index.claim("s", "kept") == STORED
