"""Standing preferences and instructions that bear on the query are the resident ones when the resident
share cannot hold them all (issue 23): "How should I install the new date-picker dependency?" gets "I prefer
pnpm over npm." though they share no word, and another project's preference stays out.

Real Claude Code files under tmp_path, ingested and dreamed through the command line."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.recall.index import CardDoc
from memdream.recall.resident import bearing_first
from tests.recall.helpers import recall_json
from tests.transcripts import ClaudeSession, pytest_passed

START = datetime(2026, 10, 5, 9, 0, tzinfo=timezone.utc)
WEB = [  # more than a quarter of the default budget holds
    "I prefer pnpm over npm.",
    "Never push to main, open a pull request.",
    "I really like Tailwind for styling, much more than CSS modules.",
    "From now on, write commit messages in the imperative mood.",
    "I don't like default exports, named ones are easier to grep.",
    "Always run the type checker before committing.",
    "I'd rather keep components small, under 150 lines.",
    "Don't ever add a new dependency without asking me.",
    "Please use date-fns for dates in every module.",
]
API = ["I prefer uv over pip for Python packages."]


def _session(session_id: str, cwd: str, said: list[str]) -> ClaudeSession:
    session = ClaudeSession(session_id, cwd, START)
    for number, words in enumerate(said):
        session.user(f"Fix the cart totals, part {number}. {words}")
        session.bash("pnpm test", pytest_passed(30 + number, 2.0))
        session.assistant("Fixed; the tests pass.")
    return session


@pytest.fixture
def dreamed(memory: Path, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-01T00:00:00Z")
    logs = tmp_path / "logs"
    _session("7a1b2c3d-0001-4c7d-8e9f-0a1b2c3d4e5f", "/home/dev/web-shop", WEB).write(logs / "web-shop")
    _session("7a1b2c3d-0002-4c7d-8e9f-0a1b2c3d4e5f", "/home/dev/api", API).write(logs / "api")
    for command in (("ingest", os.fspath(logs), "-m", memory), ("dream", "-m", memory)):
        result = run(*command)
        assert result.exit_code == 0, result.stderr
    return memory


def _resident(data: dict[str, Any]) -> list[str]:
    return [item["text"] for item in data["items"] if item.get("resident")]


def _holding(texts: list[str], words: str) -> list[int]:
    return [place for place, text in enumerate(texts) if words.lower() in text.lower()]


def test_the_rules_that_bear_on_the_query_are_resident_first(dreamed: Path, run: Any) -> None:
    data = recall_json(run, dreamed, "How should I install the new date-picker dependency?", "--scope", "web-shop")
    resident = _resident(data)
    assert 0 < len(resident) < len(WEB)  # the share holds only some of them
    # the rules about adding a dependency, first: one shares the word, the other is of that kind of request
    assert _holding(resident, "without asking me") == [0]
    assert _holding(resident, "pnpm over npm")[0] < 3
    assert not _holding(resident, "uv over pip")  # another project's
    spent = sum(len(("- " + text).encode()) + 1 for text in resident)
    assert spent <= data["budget"] // 4


@pytest.mark.parametrize(("query", "words"), [
    ("Can I push this fix directly?", "push to main"),
    ("Commit the settings page changes.", "imperative mood"),
    ("What should I use to style the new settings panel?", "tailwind for styling"),
    ("Add a library for date formatting.", "without asking me"),
])
def test_each_question_gets_the_rule_it_needs(dreamed: Path, run: Any, query: str, words: str) -> None:
    data = recall_json(run, dreamed, query, "--scope", "web-shop")
    assert _holding(_resident(data), words), _resident(data)


def test_with_no_bearing_the_order_is_best_first_as_before(dreamed: Path, run: Any) -> None:
    unrelated = _resident(recall_json(run, dreamed, "what happened on Tuesday", "--scope", "web-shop"))
    bearing = _resident(recall_json(run, dreamed, "install the new dependency", "--scope", "web-shop"))
    assert unrelated and unrelated != bearing and not _holding(unrelated, "pnpm over npm")
    assert _holding(_resident(recall_json(run, dreamed, "what happened on Tuesday", "--scope", "api")), "uv over pip")


def _doc(card_id: str, quoted: str, confidence: float = 0.8) -> CardDoc:
    return CardDoc(id=card_id, type="lesson", subject="web-shop", attribute=None, value=None,
                   statement=f'In web-shop, the user\'s standing preference: "{quoted}"', scope="web-shop",
                   status="inferred", confidence=confidence, ts="2026-10-05T09:00:00Z", epoch=0.0, evidence=(),
                   key=None, references=0, archived=False, tags=("preference", "project:web-shop"))


def test_bearing_first_keeps_every_card_and_orders_by_what_the_query_names() -> None:
    from memdream.recall.text import tokenize

    docs = [_doc("a", "Always run the type checker before committing."), _doc("b", "I prefer pnpm over npm."),
            _doc("c", "I like dataclasses for plain records.")]
    ordered = bearing_first(docs, frozenset(tokenize("which package manager should install it?")))
    assert [doc.id for doc in ordered] == ["b", "a", "c"]  # package -> pnpm, npm (related); the rest as given
    assert [doc.id for doc in bearing_first(docs, frozenset(tokenize("what is the new Refund record?")))] == [
        "c", "a", "b"]
    assert bearing_first(docs, frozenset()) == docs
