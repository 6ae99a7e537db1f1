"""Preferences in the user's own words ("I prefer", "I'd rather", "I like", "I don't like", "please use")
become standing cards scoped like instructions; a one-time request that looks alike does not (issue 23).

Real Claude Code and Codex files under tmp_path, through the command line: ingest, dream, cards."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors import instructions
from tests.transcripts import ClaudeSession, CodexSession, pytest_passed

START = datetime(2026, 10, 5, 9, 0, tzinfo=timezone.utc)
STANDING = {"preference", "instruction", "correction"}

RULES = {  # what the user says -> (kind, scope)
    "I prefer pnpm over npm.": ("preference", "web-shop"),
    "I'd rather keep components small, under 150 lines.": ("preference", "web-shop"),
    "I really like Tailwind for styling, much more than CSS modules.": ("preference", "web-shop"),
    "I don't like default exports, named ones are easier to grep.": ("preference", "web-shop"),
    "Please use date-fns for dates in every module.": ("preference", "web-shop"),
    "Across all projects, I prefer short answers without apologies.": ("preference", "global"),
    "Never push to main, open a pull request.": ("instruction", "web-shop"),
}
ONE_TIME = [
    "I'd rather you fix the failing snapshot tests first.",
    "I like this layout, go ahead and wire it up.",
    "I prefer the second option you listed.",
    "Please use the mock server for this run.",
    "I don't like that name, rename it to CartDrawer.",
    "I'd like a summary of what changed.",
]


def _write_sessions(logs: Path) -> None:
    session = ClaudeSession("4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e5f", "/home/dev/web-shop", START)
    for number, said in enumerate([*RULES, *ONE_TIME]):
        session.user(f"Add the cart drawer, step {number}. {said}" if number % 2 else said)
        session.bash("pnpm test", pytest_passed(40, 2.5))
        session.assistant("Done, the tests pass.")
    session.write(logs / "claude" / "web-shop")
    codex = CodexSession("0199aaaa-0001-7a21-8d3c-1f4e5b6a7c90", "/home/dev/infra", START,
                         repository_url="git@github.com:acme/infra.git")
    codex.user("Do not use sudo.")
    codex.shell("terraform plan", "Plan: 1 to add, 0 to change, 0 to destroy.")
    codex.assistant("Planned without sudo.")
    codex.write(logs / "codex")


@pytest.fixture
def standing(memory: Path, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-01T00:00:00Z")
    logs = tmp_path / "logs"
    _write_sessions(logs)
    for command in (("ingest", os.fspath(logs), "-m", memory), ("dream", "-m", memory)):
        result = run(*command)
        assert result.exit_code == 0, result.stderr
    result = run("cards", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return [card for card in json.loads(result.stdout)
            if card["type"] == "lesson" and STANDING.intersection(card.get("tags") or ())]


def _quoted(card: dict[str, Any]) -> str:
    return str(card["statement"]).partition('"')[2].rpartition('"')[0]


def test_preferences_in_the_users_words_become_cards_scoped_like_instructions(standing: list[dict[str, Any]]) -> None:
    found = {_quoted(card): card for card in standing}
    for said, (kind, scope) in RULES.items():
        assert said in found, f"no card for {said!r}"
        card = found[said]
        assert kind in card["tags"] and card["scope"] == scope
        assert (f"project:{scope}" in card["tags"]) == (scope != "global")


def test_one_time_requests_that_look_alike_make_no_card(standing: list[dict[str, Any]]) -> None:
    quoted = [_quoted(card) for card in standing]
    assert not [said for said in ONE_TIME if said in quoted]
    assert sorted(quoted) == sorted([*RULES, "Do not use sudo."])


def test_a_prohibition_that_opens_with_do_not_is_no_question(standing: list[dict[str, Any]]) -> None:
    [card] = [card for card in standing if _quoted(card) == "Do not use sudo."]
    assert card["scope"] == "infra" and "instruction" in card["tags"]


@pytest.mark.parametrize(("sentence", "topic"), [
    ("I like dataclasses for plain records, not dicts.", "dataclasses for plain records"),
    ("We generally prefer Tailwind to plain CSS modules.", "tailwind to plain css modules"),
    ("I don't like notebooks checked into the repo.", "notebooks checked into the repo"),
    ("Small thing about style: I don't like default exports.", "default exports"),
    ("I hate magic numbers in config files.", "magic numbers in config files"),
])
def test_preference_forms_and_their_topics(sentence: str, topic: str) -> None:
    assert instructions.classify(sentence) == "preference"
    assert instructions.topic(sentence) == topic


@pytest.mark.parametrize("sentence", [
    "I like it, ship it.", "I love how this turned out.", "I prefer your first suggestion.",
    "I'd rather you didn't touch the config today.", "Please use the sample file in tests/data/orders.csv.",
    "I would like you to fix the bug.", "I prefer the new version.",
])
def test_reactions_and_requests_for_the_task_at_hand_are_no_preferences(sentence: str) -> None:
    assert instructions.classify(sentence) is None
