"""A constraint the user lists in two requests ("Constraints: - Preserve agent-first design") is a standing
instruction of the project; one listed once binds its task, and one naming a file or "this" stays with
it (memdream.dream.extractors.instructions, "constraints the user repeats"). End to end: a real Claude
Code transcript, ingest, dream, cards."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors.instructions import constraints
from tests.transcripts import ClaudeSession, pytest_passed

START = datetime(2026, 10, 5, 9, 0, tzinfo=timezone.utc)
AUDIT = ("Audit the billing service before the release.\n\nObjectives:\n1. Find dead code\n2. Check the error "
         "paths\n\nConstraints:\n- Keep the public API stable\n- Do not touch src/legacy.py\n- Prefer small modules"
         "{extra}\n\nProvide:\n- A prioritized list of issues")


@pytest.mark.parametrize(("text", "found"), [
    (AUDIT.format(extra=""), ["Keep the public API stable", "Prefer small modules"]),
    ("**Constraints:**\n\n* No new dependencies.\n* Keep this function as it is", ["No new dependencies"]),
    ("Rules:\n1. Tests before code\n2) Never squash merge\nThanks!\n- not an item of the list", [
        "Tests before code", "Never squash merge"]),
    ("Constraints are tight this week.\n- Keep the API", []),  # a sentence, not a list's head
    ("Requirements:\n- Add a /health endpoint", []),  # what the task asks for, not how to work
])
def test_the_items_of_a_constraints_list(text: str, found: list[str]) -> None:
    assert constraints(text) == found


@pytest.fixture
def cards(memory: Path, run: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-01T00:00:00Z")
    session = ClaudeSession("4f1c2d3e-5a6b-4c7d-8e9f-0a1b2c3d4e77", "/home/dev/billing", START)
    for extra in ("", "\n- Use the staging database"):  # the audit prompt, pasted again with one more item
        session.user(AUDIT.format(extra=extra))
        session.bash("pytest -q", pytest_passed(40, 2.5))
        session.assistant("Audit done: three issues, listed above.")
    logs = tmp_path / "logs"
    session.write(logs / "claude" / "billing")
    for command in (("ingest", os.fspath(logs), "-m", memory), ("dream", "-m", memory)):
        result = run(*command)
        assert result.exit_code == 0, result.stderr
    result = run("cards", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return list(json.loads(result.stdout))


def test_a_constraint_of_two_requests_is_a_standing_instruction(cards: list[dict[str, Any]]) -> None:
    statements = [str(card["statement"]) for card in cards if "instruction" in (card.get("tags") or ())]
    assert sorted(statement.partition('"')[2].rstrip('"') for statement in statements) == [
        "Keep the public API stable", "Prefer small modules"]
    assert all(statement.startswith("In billing, the user's standing instruction (a constraint of 2 requests)")
               for statement in statements)
    assert all(card["scope"] == "billing" for card in cards if str(card["statement"]) in statements)
