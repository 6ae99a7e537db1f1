"""`memdream recall` on real memories: the output contract, ranking rules, filters, fallback, batch, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memdream.memory.store import Memory
from memdream.memory.usage import usage_counts
from tests.recall.helpers import (
    check_contract,
    commit_all,
    fact,
    git,
    message,
    recall_json,
    write_card,
    write_events,
    write_plan,
)


def card_items(data: dict) -> list[dict]:
    return [item for item in data["items"] if item["source"] == "card"]


def raw_items(data: dict) -> list[dict]:
    return [item for item in data["items"] if item["source"] == "raw"]


@pytest.fixture
def facts(memory: Path) -> Path:
    write_plan(memory, "restore the nightly export", ["check the bucket region", "rerun the export job"])
    write_card(memory, **fact("f-region", "export-bucket", "region", "eu-central-1",
                              evidence=[{"ref": "log://s-1#r1", "stance": "supports", "kind": "observation"}]))
    write_card(memory, **fact("f-owner", "export-bucket", "owner", "data-platform team",
                              evidence=[{"ref": "log://s-1#r2", "stance": "supports"}]))
    write_card(memory, **fact("f-pg", "postgres", "version", "16.1", status="inferred", confidence=0.6,
                              evidence=[{"ref": "log://s-2#r9", "stance": "supports"}]))
    write_card(memory, id="s-deploy", type="strategy", subject="deploy", attribute=None, value=None,
               statement="Deploy with make deploy ENV=prod after the tests pass.", scope="deploying the service",
               evidence=[{"ref": "log://s-3#n1", "stance": "supports"}])
    commit_all(memory)
    return memory


# -- the contract ------------------------------------------------------------------------------
def test_json_contract_plan_first_then_cards(facts: Path, run) -> None:
    data = recall_json(run, facts, "which region is the export bucket in", "--budget", "2000")
    assert data["query"] == "which region is the export bucket in" and data["budget"] == 2000
    assert data["items"][0] == {"source": "plan", "id": "plan",
                                "text": "Plan: restore the nightly export\n"
                                        "Next: check the bucket region; rerun the export job"}
    first = data["items"][1]
    assert first["id"] == "f-region" and first["type"] == "fact" and first["status"] == "verified"
    assert first["evidence"] == ["log://s-1#r1"] and first["ts"] == "2026-11-07T09:40:00Z"
    assert 0 < first["score"] <= 1
    assert "eu-central-1" in first["text"] and first["text"].startswith("[2026-11-07] ")
    scores = [item["score"] for item in card_items(data)]
    assert scores == sorted(scores, reverse=True)


def test_text_format_prints_exactly_the_context(facts: Path, run) -> None:
    data = recall_json(run, facts, "export bucket", "--budget", "700")
    result = run("recall", "export bucket", "--budget", "700", "-m", facts)
    assert result.exit_code == 0 and result.stdout == data["context"]


def test_status_is_shown_where_not_verified(facts: Path, run) -> None:
    data = recall_json(run, facts, "postgres version")
    (item,) = card_items(data)
    assert item["text"] == "[2026-11-07] (inferred) The postgres version is 16.1."


def test_strategies_show_their_scope(facts: Path, run) -> None:
    data = recall_json(run, facts, "how do I deploy")
    assert card_items(data)[0]["text"] == ("[2026-11-07] strategy: Deploy with make deploy ENV=prod after the "
                                           "tests pass. (scope: deploying the service)")


@pytest.mark.parametrize("budget", [64, 100, 150, 300, 1000, 5000])
def test_context_never_exceeds_the_budget(facts: Path, run, budget: int) -> None:
    data = recall_json(run, facts, "export bucket region owner postgres deploy", "--budget", str(budget))
    assert data["bytes"] <= budget


def test_no_relevant_card_no_item(facts: Path, run) -> None:
    data = recall_json(run, facts, "kubernetes ingress certificate")
    assert [item["source"] for item in data["items"]] == ["plan"]


def test_an_item_that_does_not_fit_is_skipped_and_smaller_ones_still_fit(memory: Path, run) -> None:
    write_card(memory, **fact("f-long", "widget", "history", "long", statement="widget " + "history " * 60))
    write_card(memory, **fact("f-short", "widget", "color", "blue", statement="The widget is blue.",
                              confidence=0.1, evidence=[{"ref": "log://s-1#b", "stance": "supports"}]))
    data = recall_json(run, memory, "widget history", "--budget", "200")
    assert [item["id"] for item in card_items(data)] == ["f-short"]


def test_a_long_item_is_cut_only_as_a_last_resort(memory: Path, run) -> None:
    write_card(memory, **fact("f-long", "widget", "history", "long", statement="widget " + "history " * 60))
    data = recall_json(run, memory, "widget history", "--budget", "120")
    (item,) = card_items(data)
    assert item["text"].endswith("…[cut]") and data["bytes"] <= 120


def test_default_budget_comes_from_memdream_yaml(facts: Path, run) -> None:
    config = facts / "memdream.yaml"
    config.write_text(config.read_text().replace("budget: 2000", "budget: 150"))
    data = recall_json(run, facts, "export bucket")
    assert data["budget"] == 150 and data["bytes"] <= 150


# -- ranking rules -----------------------------------------------------------------------------
def test_fuzzy_entity_names(facts: Path, run) -> None:
    for query in ("exportbucket", "export bucket", "export-buckets", "exprt-bucket"):
        data = recall_json(run, facts, query)
        assert {item["id"] for item in card_items(data)} >= {"f-region", "f-owner"}, query


def test_fuzzy_names_do_not_confuse_numbers(memory: Path, run) -> None:
    write_card(memory, **fact("f-3", "postgres-3", "owner", "ann"))
    write_card(memory, **fact("f-33", "postgres-33", "owner", "bob", evidence=[{"ref": "log://x#2"}]))
    data = recall_json(run, memory, "postgres3")
    assert [item["id"] for item in card_items(data)] == ["f-3"]


def test_recency_confidence_and_references_break_ties(memory: Path, run) -> None:
    write_card(memory, **fact("f-old", "cache", "ttl", "60s", statement="cache ttl setting",
                              updated_at="2025-01-01T00:00:00Z", evidence=[{"ref": "log://a#1"}]))
    write_card(memory, **fact("f-new", "cache", "size", "2GB", statement="cache size setting",
                              updated_at="2026-11-29T00:00:00Z", evidence=[{"ref": "log://a#2"}]))
    assert [i["id"] for i in card_items(recall_json(run, memory, "cache setting"))] == ["f-new", "f-old"]
    write_card(memory, **fact("f-old", "cache", "ttl", "60s", statement="cache ttl setting", confidence=1.0,
                              updated_at="2025-01-01T00:00:00Z", reference_count=50, evidence=[{"ref": "log://a#1"}]))
    write_card(memory, **fact("f-new", "cache", "size", "2GB", statement="cache size setting", confidence=0.1,
                              updated_at="2026-11-29T00:00:00Z", evidence=[{"ref": "log://a#2"}]))
    assert [i["id"] for i in card_items(recall_json(run, memory, "cache setting"))] == ["f-old", "f-new"]


def test_conflicting_cards_are_shown_together_with_a_marker(memory: Path, run) -> None:
    write_card(memory, **fact("f-a", "export-bucket", "region", "eu-west-1", status="conflicting", confidence=0.5,
                              evidence=[{"ref": "log://s-1#n1", "stance": "supports"}]))
    write_card(memory, **fact("f-b", "export-bucket", "region", "eu-central-1", status="conflicting",
                              confidence=0.5, evidence=[{"ref": "log://s-2#n7", "stance": "supports"}]))
    data = recall_json(run, memory, "export bucket region")
    (item,) = card_items(data)
    assert item["status"] == "conflicting" and "⚠ conflict" in item["text"]
    assert "eu-west-1" in item["text"] and "eu-central-1" in item["text"]
    assert set(item["evidence"]) == {"log://s-1#n1", "log://s-2#n7"}
    assert {item["id"], *item["conflicts"]} == {"f-a", "f-b"}


def test_one_card_per_fact_key(memory: Path, run) -> None:
    # Two active cards on one key is a lint error; recall still shows only the best of them.
    write_card(memory, **fact("f-a", "API", "base url", "https://a.example", confidence=0.9,
                              evidence=[{"ref": "log://s#1"}]))
    write_card(memory, **fact("f-b", "api", "base-url", "https://b.example", confidence=0.3,
                              evidence=[{"ref": "log://s#2"}]))
    data = recall_json(run, memory, "api base url")
    assert [item["id"] for item in card_items(data)] == ["f-a"]


def test_cards_standing_on_the_same_single_event_are_deduplicated(memory: Path, run) -> None:
    same = [{"ref": "log://s-1#n1", "stance": "supports"}]
    write_card(memory, **fact("f-a", "queue", "limit", "100", confidence=0.9, evidence=same))
    write_card(memory, **fact("f-b", "queue", "max-size", "100", statement="queue limit max size 100",
                              confidence=0.4, evidence=same))
    data = recall_json(run, memory, "queue limit")
    assert [item["id"] for item in card_items(data)] == ["f-a"]


def test_archived_and_superseded_only_with_include_archived(memory: Path, run) -> None:
    write_card(memory, **fact("f-now", "postgres", "version", "16.1", supersedes=["f-old"]))
    write_card(memory, archived=True, **fact("f-old", "postgres", "version", "15.4", status="superseded",
                                             superseded_by=["f-now"], evidence=[{"ref": "log://s#o"}]))
    write_card(memory, **fact("f-gone", "postgres", "port", "5433", status="archived",
                              evidence=[{"ref": "log://s#p"}]))
    plain = recall_json(run, memory, "postgres version port")
    assert [item["id"] for item in card_items(plain)] == ["f-now"]
    everything = recall_json(run, memory, "postgres version port", "--include-archived")
    shown = {item["id"]: item for item in card_items(everything)}
    assert set(shown) == {"f-now", "f-old", "f-gone"}
    assert "(superseded)" in shown["f-old"]["text"] and "(archived)" in shown["f-gone"]["text"]


# -- filters -----------------------------------------------------------------------------------
def test_filters_type_status_subject_since(facts: Path, run) -> None:
    query = "export bucket region owner postgres version deploy"
    assert {i["id"] for i in card_items(recall_json(run, facts, query, "--type", "strategy"))} == {"s-deploy"}
    assert {i["id"] for i in card_items(recall_json(run, facts, query, "--status", "inferred"))} == {"f-pg"}
    assert {i["id"] for i in card_items(recall_json(run, facts, query, "--subject", "EXPORT bucket"))} == {
        "f-region", "f-owner"}
    write_card(facts, **fact("f-late", "postgres", "port", "5432", updated_at="2026-11-29T10:00:00Z",
                             evidence=[{"ref": "log://s-9#1"}]))
    assert {i["id"] for i in card_items(recall_json(run, facts, query + " port", "--since", "2026-11-20"))} == {
        "f-late"}


def test_status_superseded_implies_the_archive(memory: Path, run) -> None:
    write_card(memory, archived=True, **fact("f-old", "postgres", "version", "15.4", status="superseded"))
    data = recall_json(run, memory, "postgres version", "--status", "superseded")
    assert [item["id"] for item in card_items(data)] == ["f-old"]


# -- raw fallback ------------------------------------------------------------------------------
@pytest.fixture
def with_raw(facts: Path, tmp_path: Path, run) -> Path:
    events = [
        message("chat/S1", "D1:1", "2026-10-02T10:00:00Z", "I moved the export bucket to Frankfurt yesterday.",
                speaker="Ann"),
        message("chat/S1", "D1:2", "2026-10-02T10:00:01Z", "Great, did the nightly job follow?", speaker="Bob"),
        message("chat/S1", "D1:3", "2026-10-02T10:00:02Z", "Yes, after I changed the job config.", speaker="Ann"),
        {"session": "s-1", "id": "r1", "ts": "2026-10-03T09:00:00Z", "kind": "tool_result", "tool": "aws",
         "text": "LocationConstraint: eu-central-1 for the export bucket"},
        {"session": "s-4", "id": "n1", "ts": "2026-10-05T09:00:00Z", "kind": "note",
         "text": "the export bucket lifecycle rule deletes objects after 30 days"},
        {"session": "s-4", "id": "c1", "ts": "2026-10-05T09:01:00Z", "kind": "tool_call", "tool": "aws",
         "args": {"cmd": "export bucket lifecycle"}},
    ]
    result = run("ingest", write_events(tmp_path / "log.jsonl", events), "-m", facts)
    assert result.exit_code == 0, result.stderr
    return facts


def test_raw_fallback_when_cards_do_not_fill_the_budget(with_raw: Path, run) -> None:
    data = recall_json(run, with_raw, "when did the export bucket move to Frankfurt", "--budget", "3000")
    sources = [item["source"] for item in data["items"]]
    assert sources[0] == "plan" and "card" in sources and "raw" in sources
    assert sources.index("raw") > max(i for i, source in enumerate(sources) if source == "card")
    raw = {item["id"]: item for item in raw_items(data)}
    moved = raw["log://chat/S1#D1:1"]
    assert moved["text"] == "[2026-10-02] Ann: I moved the export bucket to Frankfurt yesterday."
    assert moved["evidence"] == ["log://chat/S1#D1:1"] and moved["ts"] == "2026-10-02T10:00:00Z"
    assert moved["type"] == "message" and 0 < moved["score"] <= 1
    # the speaker falls back to the actor; tool calls are not recalled
    assert raw["log://s-4#n1"]["text"].startswith("[2026-10-05] agent: ")
    assert "log://s-4#c1" not in raw


def test_raw_already_cited_by_a_returned_card_is_not_repeated(with_raw: Path, run) -> None:
    data = recall_json(run, with_raw, "export bucket region eu-central-1", "--budget", "3000")
    assert "f-region" in [item["id"] for item in card_items(data)]
    assert "log://s-1#r1" not in [item["id"] for item in raw_items(data)]


def test_no_raw_when_cards_fill_the_budget(with_raw: Path, run) -> None:
    for number in range(30):
        write_card(with_raw, **fact(f"f-x{number}", f"export-bucket-{number}", "region", "eu-central-1",
                                    evidence=[{"ref": f"log://z#{number}"}]))
    data = recall_json(run, with_raw, "export bucket region", "--budget", "600")
    assert len(card_items(data)) > 3 and not raw_items(data)


def test_neighbouring_turns_come_along(with_raw: Path, run) -> None:
    data = recall_json(run, with_raw, "did the nightly job follow", "--budget", "3000")
    ids = [item["id"] for item in raw_items(data)]
    assert ids[0] == "log://chat/S1#D1:2"
    assert "log://chat/S1#D1:3" in ids  # the answer shares no word with the question


def test_raw_filters(with_raw: Path, run) -> None:
    query = "export bucket Frankfurt lifecycle"
    since = recall_json(run, with_raw, query, "--since", "2026-10-04", "--budget", "3000")
    assert {item["id"] for item in raw_items(since)} == {"log://s-4#n1"}
    typed = recall_json(run, with_raw, query, "--type", "fact", "--budget", "3000")
    assert not raw_items(typed)


# -- batch, usage, read-only -------------------------------------------------------------------
def test_queries_file_prints_one_json_object_per_line(facts: Path, run, tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("export bucket region\n\n   \npostgres version\ndeploy\n", encoding="utf-8")
    result = run("recall", "--queries", queries, "--budget", "500", "-m", facts)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    answers = [json.loads(line) for line in lines]
    assert [answer["query"] for answer in answers] == ["export bucket region", "postgres version", "deploy"]
    for answer in answers:
        check_contract(answer)
        assert answer["budget"] == 500
    assert card_items(answers[1])[0]["id"] == "f-pg"


def test_usage_is_appended_and_no_tracked_file_changes(facts: Path, run, tmp_path: Path) -> None:
    assert git(facts, "status", "--porcelain") == ""
    recall_json(run, facts, "export bucket region")
    queries = tmp_path / "q.txt"
    queries.write_text("postgres version\nexport bucket owner\n")
    assert run("recall", "--queries", queries, "-m", facts).exit_code == 0
    lines = [json.loads(line) for line in (facts / ".memdream" / "usage.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    assert lines[0]["cards"][0] == "f-region" and lines[0]["ts"] == "2026-11-30T12:00:00Z"
    assert "export" not in lines[0]["query"]  # a hash, not the query text
    counts = usage_counts(Memory(facts))
    assert counts["f-region"] >= 1 and counts["f-pg"] == 1
    assert git(facts, "status", "--porcelain") == ""


def test_usage_counts_feed_the_reference_signal(memory: Path, run) -> None:
    write_card(memory, **fact("f-a", "cache", "ttl", "60s", statement="cache setting one",
                              evidence=[{"ref": "log://a#1"}]))
    write_card(memory, **fact("f-b", "cache", "size", "2GB", statement="cache setting two",
                              evidence=[{"ref": "log://a#2"}]))
    assert [i["id"] for i in card_items(recall_json(run, memory, "cache setting"))] == ["f-a", "f-b"]
    for _ in range(5):
        recall_json(run, memory, "size 2GB")
    assert [i["id"] for i in card_items(recall_json(run, memory, "cache setting"))] == ["f-b", "f-a"]


# -- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "code", "message"), [
    (["q", "--budget", "10"], 2, "memdream: --budget must be at least 64 bytes, not 10"),
    (["--queries", "missing.txt"], 2, "memdream: --queries missing.txt: no such file"),
    ([], 2, "memdream: give one QUERY or --queries FILE"),
    (["q", "--type", "rumour"], 2, "memdream: --type must be one of fact, strategy, lesson, not 'rumour'"),
    (["q", "--since", "last week"], 2, "memdream: --since 'last week' is not an ISO 8601 date or time"),
])
def test_errors_are_one_line(facts: Path, run, chdir, args: list[str], code: int, message: str) -> None:
    chdir(facts.parent)
    result = run("recall", *args, "-m", facts)
    assert result.exit_code == code
    assert result.stderr == message + "\n"


def test_real_process(facts: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memdream", "recall", "export bucket", "-m", str(facts),
                           "--format", "json", "--budget", "400"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    check_contract(json.loads(done.stdout))


def test_cli_import_does_not_load_recall() -> None:
    code = "import sys, memdream.cli; print(sorted(m for m in sys.modules if m.startswith('memdream.recall')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
