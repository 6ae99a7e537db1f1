"""Tokens: lowercase unicode words, stopwords out, a light stemmer, numbers kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdream.recall.render import ELLIPSIS, window
from memdream.recall.text import related, stem, tokenize
from tests.recall.helpers import commit_all, fact, recall_json, write_card


@pytest.mark.parametrize(("words", "same"), [
    (["painting", "painted", "paints", "paint"], True),
    (["agencies", "agency"], True),
    (["running", "runs", "run", "ran"], True),
    (["went", "go", "goes"], True),
    (["hoped", "hoping", "hope"], True),
    (["children", "child"], True),
    (["bucket", "bucked"], False),
    (["docs", "doc", "documentation", "documents"], True),  # a developer's abbreviation is its long form
    (["repo", "repos", "repository", "repositories"], True),
    (["db", "database", "databases"], True),
    (["env", "environment"], True),
    (["pytest", "test"], False),  # a tool and the broader word are two words
    (["postgres", "database"], False),
])
def test_stemming(words: list[str], same: bool) -> None:
    assert (len({stem(word) for word in words}) == 1) is same


def test_tokenize_keeps_numbers_and_unicode_and_drops_stopwords() -> None:
    assert tokenize("When did the Région eu-west-1 move to 日本 in 2023?") == [
        "région", "eu", "west", "1", "mov", "日本", "2023"]


def test_short_words_and_non_words_are_left_alone() -> None:
    assert stem("bus") == "bus" and stem("v16") == "v16" and stem("is") == "is"


def test_window_keeps_the_words_around_the_match_and_marks_elisions() -> None:
    text = ("Hey! Long time no see. I went to the pottery class yesterday and loved it. "
            "The weather was awful all week. Anyway, how are the kids?")
    cut = window(text, frozenset(tokenize("pottery class")), 80, margin=40)
    assert "pottery class yesterday" in cut and cut.startswith(ELLIPSIS) and cut.endswith(ELLIPSIS)
    assert len(cut) <= 80 and "kids" not in cut
    assert window("short text stays whole", frozenset(), 80) == "short text stays whole"
    assert window(text, frozenset(tokenize("kids")), 400).endswith("how are the kids?")  # the margin, not all
    assert window(text, frozenset(tokenize("kids")), 400, margin=400) == " ".join(text.split())



def test_a_question_in_one_spelling_finds_a_memory_in_the_other(memory: Path, run: Any) -> None:
    write_card(memory, **fact("f-1a2b3c", "api", "documentation", "the wiki",
                              "The API documentation lives in the wiki's Billing space."))
    commit_all(memory)
    answer = recall_json(run, memory, "where are the docs?")
    assert "the wiki's Billing space" in answer["context"]


def test_a_general_word_reaches_out_to_the_tools_it_names_one_way() -> None:
    assert related(tokenize("run the tests"))["pytest"] == "test"
    assert "postgr" in related(tokenize("which db"))  # db is database, which names postgres
    assert related(tokenize("run pytest")) == {}  # a tool names nothing further
    assert "jest" not in related(tokenize("tests with jest"))  # what the query holds is not added


def test_a_question_about_the_port_finds_the_local_address(memory: Path, run: Any) -> None:
    assert related(tokenize("which port"))["localhost"] == "port"
    write_card(memory, **fact("f-4d5e6f", "frontend", "dev server", "npm run dev",
                              "Run `npm run dev`; it serves http://localhost:5173."))
    write_card(memory, **fact("f-7a8b9c", "backend", "linter", "ruff", "Lint with `ruff check`."))
    commit_all(memory)
    answer = recall_json(run, memory, "which port?")
    assert "localhost:5173" in answer["context"] and "ruff" not in answer["context"]
