"""`memdream recall --explain`: why each item was chosen (relevance with the matched words, recency,
references, confidence; resident plan and instructions; the raw fallback), without changing what
recall returns or the contract of its output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.recall.helpers import check_contract, commit_all, fact, message, write_card, write_events, write_plan

QUERY = "which port does the auth service listen on"


@pytest.fixture
def recallable(memory: Path, tmp_path: Path, run: Any) -> Path:
    write_plan(memory, "ship the login page", ["wire the auth service"])
    write_card(memory, **fact("f-auth", "auth-service", "port", "8443", statement="The auth service listens on 8443.",
                              confidence=0.9, reference_count=4, evidence=[{"ref": "log://s-1#a1"}]))
    write_card(memory, **fact("f-db", "billing-db", "host", "db-2", statement="The billing database host is db-2.",
                              evidence=[{"ref": "log://s-1#a2"}]))
    write_card(memory, id="l-format", type="lesson", subject="user", attribute=None, value=None,
               statement="Always format code with syntax highlighting.", scope="global", tags=["preference"],
               evidence=[{"ref": "log://u#1", "stance": "supports", "kind": "feedback"}], confidence=0.8)
    commit_all(memory)
    events = [message("s-9", "m1", "2026-11-20T10:00:00Z", "the auth service port was changed by ops last week"),
              message("s-9", "m2", "2026-11-20T10:01:00Z", "lunch is at noon")]
    assert run("ingest", write_events(tmp_path / "raw.jsonl", events), "-m", memory).exit_code == 0
    return memory


def _recall(run: Any, memory: Path, *args: str) -> dict[str, Any]:
    result = run("recall", QUERY, "-m", memory, "-f", "json", *args)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    check_contract(data)
    return data


def test_every_item_says_why_and_the_result_is_otherwise_the_same(recallable: Path, run: Any) -> None:
    plain = _recall(run, recallable)
    explained = _recall(run, recallable, "--explain")
    assert all("explain" not in item for item in plain["items"])
    assert all("explain" in item for item in explained["items"])
    assert explained["context"] == plain["context"] and explained["bytes"] == plain["bytes"]
    assert [{k: v for k, v in item.items() if k != "explain"} for item in explained["items"]] == plain["items"]
    assert {item["source"] for item in explained["items"]} == {"plan", "card", "raw"}


def test_a_cards_score_is_the_sum_of_its_explained_parts(recallable: Path, run: Any) -> None:
    items = {item["id"]: item for item in _recall(run, recallable, "--explain")["items"]}
    why = items["f-auth"]["explain"]
    parts = ("relevance", "recency", "references", "confidence")
    assert sum(why[name]["points"] for name in parts) == pytest.approx(items["f-auth"]["score"], abs=1e-3)
    assert why["score"] == items["f-auth"]["score"]
    assert set(why["relevance"]["matched"]) == {"port", "auth", "service", "listen"}  # stems: "listens"
    assert why["relevance"]["value"] == 1.0 and why["confidence"]["value"] == 0.9
    assert why["relevance"]["coverage"] == 1.0  # it holds every word of the query: it answers
    assert why["references"]["count"] == 4
    assert why["recency"]["age_days"] == 23.1  # card_data's 2026-11-07T09:40 to the clock's 2026-11-30T12:00
    assert {why[name]["weight"] for name in parts} == {0.45, 0.2, 0.15}


def test_resident_items_and_the_raw_fallback_say_so(recallable: Path, run: Any) -> None:
    items = {item["id"]: item for item in _recall(run, recallable, "--explain")["items"]}
    assert items["plan"]["explain"]["resident"] == "plan"
    assert items["l-format"]["explain"]["resident"] == "instruction"
    assert items["l-format"]["explain"]["scope"] == "global"
    raw = items["log://s-9#m1"]["explain"]
    assert "fallback" in raw and set(raw["relevance"]["matched"]) >= {"auth", "port"}
    assert raw["recency"]["age_days"] == 10.1


def test_text_shows_a_why_line_under_each_item(recallable: Path, run: Any) -> None:
    plain = run("recall", QUERY, "-m", recallable).stdout
    explained = run("recall", QUERY, "-m", recallable, "--explain").stdout
    lines = explained.splitlines()
    assert [line for line in lines if not line.startswith("  why: ")] == plain.splitlines()
    plan_lines = 2  # "Plan: ..." and "Next: ..." are one item
    assert len(lines) == 2 * len(plain.splitlines()) - plan_lines + 1
    auth = next(number for number, line in enumerate(lines) if "auth service listens on 8443" in line)
    assert lines[auth + 1].startswith("  why: score ") and "matched: port, auth, service, listen" in lines[auth + 1]
    assert "standing instruction" in explained and "raw fallback" in explained


def test_batch_queries_can_explain_too(recallable: Path, tmp_path: Path, run: Any) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text(f"{QUERY}\nbilling database host\n", encoding="utf-8")
    result = run("recall", "--queries", queries, "--explain", "-m", recallable)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == 2 and all("explain" in item for answer in answers for item in answer["items"])
