"""`memdream review`: new cards of the last dreams, conflicts, demoted cards and low-confidence cards that
recall returned, each with the verdict commands; "nothing to review" when there is nothing."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.gitutil import git
from tests.transcripts import ClaudeSession

CWD = "/home/dev/shop"
START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def _dream(run: Any, memory: Path, *paths: Path) -> None:
    for path in paths:
        assert run("ingest", path, "-m", memory).exit_code == 0
    result = run("dream", "-m", memory)
    assert result.exit_code == 0, result.stderr


def _review(run: Any, memory: Path, *args: str) -> dict[str, Any]:
    result = run("review", *args, "-m", memory, "-f", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _said(folder: Path, name: str, day: int, text: str) -> Path:
    session = ClaudeSession(name, CWD, START + timedelta(days=day))
    session.user("Please wire the refund endpoint.")
    session.user(text)
    session.bash("git status --short", " M src/app.py")  # an agent action that teaches nothing
    return session.write(folder)


def test_an_empty_memory_has_nothing_to_review(memory: Path, run: Any) -> None:
    result = run("review", "-m", memory)
    assert result.exit_code == 0 and result.stdout.strip() == "nothing to review"
    assert _review(run, memory) == {"runs": [], "items": []}


def test_new_cards_of_the_last_dreams_newest_first_with_commands(memory: Path, tmp_path: Path, run: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-03T03:00:00Z")
    _dream(run, memory, _said(tmp_path / "a", "sess-1", 0, "The staging database listens on port 5433."))
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-04T03:00:00Z")
    _dream(run, memory, _said(tmp_path / "b", "sess-2", 1, "The export bucket is in eu-central-1."))
    data = _review(run, memory)
    assert [item["attribute"] for item in data["items"]] == ["location", "port"]  # the newest run first
    assert data["runs"][0] > data["runs"][1]
    first = data["items"][0]
    assert first["kinds"] == ["new"] and first["run"] == data["runs"][0]
    assert first["commands"] == [f"memdream confirm {first['card']}", f"memdream reject {first['card']}",
                                 f"memdream correct {first['card']} --value '<the right value>'"]
    assert [item["attribute"] for item in _review(run, memory, "--runs", "1")["items"]] == ["location"]
    assert _review(run, memory, "--runs", "0")["items"] == []
    text = run("review", "-m", memory).stdout
    assert f"memdream reject {first['card']}" in text and "2 card(s) to review" in text


def test_a_rejected_card_leaves_the_queue(memory: Path, tmp_path: Path, run: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-03T03:00:00Z")
    _dream(run, memory, _said(tmp_path / "a", "sess-1", 0, "The staging database listens on port 5433."))
    (item,) = _review(run, memory)["items"]
    assert run("reject", item["card"], "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-04T03:00:00Z")
    _dream(run, memory)
    assert run("review", "-m", memory).stdout.strip() == "nothing to review"


def test_conflicts_come_first(memory: Path, tmp_path: Path, run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    fact = {"subject": "staging-db", "attribute": "host"}
    events = [
        {"session": "s-1", "ts": "2026-11-09T10:00:30Z", "kind": "note", "id": "n1", "text": "host is db-1",
         "fact": {**fact, "value": "db-staging-1"}},
        {"session": "s-1", "ts": "2026-11-09T10:01:15Z", "kind": "feedback", "id": "f1", "verdict": "correct",
         "target": "n1", "text": "No, it is db-staging-2.", "fact": {**fact, "value": "db-staging-2"}},
        {"session": "s-2", "ts": "2026-11-12T13:07:55Z", "kind": "tool_result", "id": "r6", "tool": "bash",
         "ok": True, "text": "DATABASE_HOST=db-staging-1", "fact": {**fact, "value": "db-staging-1"}},
    ]
    _dream(run, memory, _write(tmp_path / "a.jsonl", events),
           _said(tmp_path / "b", "sess-3", 0, "The export bucket is in eu-central-1."))
    items = _review(run, memory)["items"]
    assert [item["kinds"] for item in items] == [["conflict", "new"], ["conflict", "new"], ["new"]]
    assert {item["value"] for item in items[:2]} == {"db-staging-1", "db-staging-2"}


def test_demoted_cards_are_listed_with_the_reason(memory: Path, tmp_path: Path, run: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    events = [{"session": "a", "ts": "2026-01-01T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "cat",
               "ok": True, "fact": {"subject": "api", "attribute": "owner", "value": "team-a"}},
              {"session": "a", "ts": "2026-01-01T10:01:00Z", "kind": "feedback", "id": "f1", "verdict": "confirm",
               "target": "r1"}]
    monkeypatch.setenv("MEMDREAM_NOW", "2026-01-02T00:00:00Z")
    _dream(run, memory, _write(tmp_path / "a.jsonl", events))
    monkeypatch.setenv("MEMDREAM_NOW", "2026-05-01T00:00:00Z")  # > 90 days: decay demotes it
    _dream(run, memory)
    (item,) = _review(run, memory, "--runs", "1")["items"]
    assert item["kinds"] == ["demoted"] and "demoted in run" in item["reasons"][0]


def test_low_confidence_cards_that_recall_returned(memory: Path, write_card: Any, run: Any) -> None:
    write_card(id="f-low", subject="cache", attribute="ttl", value="300s", statement="The cache ttl is 300s.",
               confidence=0.35, status="inferred",
               evidence=[{"ref": "log://s-1#n1", "stance": "supports", "kind": "note"}])
    write_card(id="f-sure", subject="cache", attribute="size", value="2 GB", statement="The cache size is 2 GB.",
               confidence=0.9)
    git(memory, "add", "-A")
    git(memory, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "cards")
    assert _review(run, memory)["items"] == []  # nobody recalled them yet
    assert run("recall", "cache ttl and size", "-m", memory).exit_code == 0
    (item,) = _review(run, memory)["items"]
    assert item["card"] == "f-low" and item["kinds"] == ["low-confidence"]
    assert item["reasons"] == ["recall returned it 1 time(s) at confidence 0.35"]


def test_a_negative_run_count_is_a_usage_error(memory: Path, run: Any) -> None:
    result = run("review", "--runs", "-1", "-m", memory)
    assert result.exit_code == 2 and "--runs" in result.stderr
