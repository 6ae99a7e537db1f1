"""Tokens: lowercase unicode words, stopwords out, a light stemmer, numbers kept."""

from __future__ import annotations

import pytest

from memdream.recall.render import trim
from memdream.recall.text import stem, tokenize


@pytest.mark.parametrize(("words", "same"), [
    (["painting", "painted", "paints", "paint"], True),
    (["agencies", "agency"], True),
    (["running", "runs", "run", "ran"], True),
    (["went", "go", "goes"], True),
    (["hoped", "hoping", "hope"], True),
    (["children", "child"], True),
    (["bucket", "bucked"], False),
])
def test_stemming(words: list[str], same: bool) -> None:
    assert (len({stem(word) for word in words}) == 1) is same


def test_tokenize_keeps_numbers_and_unicode_and_drops_stopwords() -> None:
    assert tokenize("When did the Région eu-west-1 move to 日本 in 2023?") == [
        "région", "eu", "west", "1", "mov", "日本", "2023"]


def test_short_words_and_non_words_are_left_alone() -> None:
    assert stem("bus") == "bus" and stem("v16") == "v16" and stem("is") == "is"


def test_trim_keeps_matching_sentences_and_marks_elisions() -> None:
    text = ("Hey! Long time no see. I went to the pottery class yesterday and loved it. "
            "The weather was awful all week. Anyway, how are the kids?")
    assert trim(text, frozenset(tokenize("pottery class"))) == (
        "… I went to the pottery class yesterday and loved it. …")
    assert trim("short text stays whole", frozenset()) == "short text stays whole"
    assert trim(text, frozenset(tokenize("pottery")), above=0) == " ".join(text.split())
