"""Forgetting what is never used: recall's usage log becomes reference counts, a card past its TTL that
nobody recalls loses weight and is archived, a recalled one stays, and a capacity per scope archives the
lowest-value cards first. Real memories, the real `recall` writing the usage log, real dreams moved
through time with MEMDREAM_NOW, all as `python -m memdream` processes."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from memdream import yamlio
from memdream.memory.paths import MemoryPaths
from memdream.memory.usage import cache_path, read_cache, usage_at, write_cache
from tests.conftest import card_data
from tests.gitutil import git
from tests.transcripts import billing_api_project

START = "2026-11-30T12:00:00Z"
OLD = "2026-01-01T00:00:00Z"  # eleven months before START: past a 90-day TTL


def memdream(memory: Path, now: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMDREAM_NOW": now}
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args), "-m", str(memory)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


def dream(memory: Path, now: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(memdream(memory, now, "dream", "-f", "json").stdout)
    return report


def recall(memory: Path, now: str, *queries: str) -> None:
    """The real recall command answering ``queries`` (one process), which appends to the usage log."""
    batch = memory.parent / "queries.txt"
    batch.write_text("".join(query + "\n" for query in queries), encoding="utf-8")
    memdream(memory, now, "recall", "--queries", batch)


def ingest_news(memory: Path, now: str) -> None:
    """One ordinary event ingested, so that the next dream reads events (usage alone makes no commit):
    ``log://a#r1``, the event the cards of :func:`write_facts` cite."""
    log = memory.parent / "news.jsonl"
    log.write_text(json.dumps({"session": "a", "id": "r1", "ts": now, "kind": "message",
                               "text": "review pull request 12"}) + "\n", encoding="utf-8")
    memdream(memory, now, "ingest", log)


def write_facts(memory: Path, specs: dict[str, dict[str, Any]], message: str = "cards by hand") -> None:
    """Fact cards ``id -> fields`` (each with its own words, so that a recall finds just it), committed."""
    for card_id, fields in specs.items():
        data = card_data(id=card_id, evidence=[{"ref": "log://a#r1", "stance": "supports", "kind": "observation"}],
                         **fields)
        (memory / "cards" / "facts" / f"{card_id}.yaml").write_text(yamlio.dumps(data), encoding="utf-8")
    git(memory, "add", "cards")
    git(memory, "commit", "-q", "-m", message)


def card(memory: Path, card_id: str) -> dict[str, Any]:
    found = [*memory.glob(f"cards/*/{card_id}.yaml"), *memory.glob(f"archive/*/{card_id}.yaml")]
    assert len(found) == 1, found
    data: dict[str, Any] = yaml.safe_load(found[0].read_text(encoding="utf-8"))
    return data


def usage_lines(memory: Path) -> list[dict[str, Any]]:
    text = (memory / ".memdream" / "usage.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def audit(memory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted((memory / "audit").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def ops(report: dict[str, Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for operation in report["operations"]:
        found.setdefault(operation["op"], []).append(operation["card"])
    return found


FACTS = {
    "f-queue": dict(subject="billing queue", attribute="broker", value="rabbitmq",
                    statement="The billing queue runs on rabbitmq."),
    "f-grafana": dict(subject="grafana", attribute="folder", value="ops-dashboards",
                      statement="Grafana dashboards live in the ops-dashboards folder."),
    "f-backup": dict(subject="nightly backup", attribute="window", value="02:00 UTC",
                     statement="The nightly backup window opens at 02:00 UTC."),
}


def test_recalled_cards_get_their_reference_count_and_only_changed_cards_are_written(memory: Path) -> None:
    write_facts(memory, {card_id: {**fields, "updated_at": "2026-11-29T00:00:00Z"} for card_id, fields in FACTS.items()})
    recall(memory, START, "which broker does the billing queue use", "billing queue rabbitmq", "grafana dashboards")
    counted = Counter(card_id for line in usage_lines(memory) for card_id in line["cards"])
    assert counted["f-queue"] >= 2 and counted["f-grafana"] >= 1

    alone = dream(memory, START)  # usage alone is bookkeeping: it waits for a dream that reads events
    assert alone["commit"] is None and alone["changes"] == []
    assert all(card(memory, card_id).get("reference_count") is None for card_id in FACTS)
    assert git(memory, "log", "-1", "--format=%s").strip() == "cards by hand"

    ingest_news(memory, START)
    report = dream(memory, START)
    assert report["commit"] and report["operations"] == []  # counting is no move for the audit
    for card_id in FACTS:
        assert card(memory, card_id).get("reference_count") == (counted[card_id] or None)
    assert card(memory, "f-queue")["updated_at"] == "2026-11-29T00:00:00Z"  # a count does not reset decay
    written = {change["path"] for change in report["changes"] if change["path"].startswith("cards/")}
    assert written == {f"cards/facts/{card_id}.yaml" for card_id in counted}

    again = dream(memory, "2026-11-30T13:00:00Z")  # nothing recalled since: no card is written again
    assert again["commit"] is None and again["changes"] == []
    assert memdream(memory, START, "lint").returncode == 0


def test_past_its_ttl_a_card_nobody_recalls_is_archived_and_a_recalled_one_stays(memory: Path) -> None:
    write_facts(memory, {
        card_id: {**fields, "status": "verified", "created_at": OLD, "updated_at": OLD, "importance": 0.8}
        for card_id, fields in FACTS.items()
    })
    recall(memory, "2026-06-01T09:00:00Z", "grafana dashboards folder")  # long ago: not "in use" any more
    recall(memory, "2026-11-25T09:00:00Z", "billing queue broker")

    first = dream(memory, START)
    assert sorted(ops(first)["demote"]) == sorted(FACTS)  # recalled or not, nothing re-verified them
    reasons = {operation["card"]: operation["reason"] for operation in first["operations"]}
    assert reasons["f-queue"] == "not re-verified in 90 days (recalled 2026-11-25: kept active while used)"
    assert reasons["f-grafana"] == "not re-verified in 90 days and not recalled since 2026-06-01"
    assert reasons["f-backup"] == "not re-verified in 90 days and never recalled"
    assert card(memory, "f-queue")["importance"] == 0.8  # in use: keeps its weight
    assert card(memory, "f-grafana")["importance"] == card(memory, "f-backup")["importance"] == 0.4

    recall(memory, "2027-02-20T09:00:00Z", "billing queue rabbitmq")  # still in use three months on
    later = "2027-03-02T12:00:00Z"  # 92 days after the demotion
    second = dream(memory, later)
    assert sorted(ops(second)) == ["archive"] and sorted(ops(second)["archive"]) == ["f-backup", "f-grafana"]
    assert [card(memory, card_id)["status"] for card_id in ("f-queue", "f-grafana", "f-backup")] == \
        ["inferred", "archived", "archived"]
    archived = {line["card"]: line["reason"] for line in audit(memory) if line["op"] == "archive"}
    assert archived == {"f-grafana": "not re-verified in 90 days and not recalled since 2026-06-01",
                        "f-backup": "not re-verified in 90 days and never recalled"}

    # Once nobody recalls it for 90 days, the used card goes the same way.
    gone = dream(memory, "2027-05-22T12:00:00Z")
    assert ops(gone) == {"archive": ["f-queue"]}
    assert gone["operations"][0]["reason"] == "not re-verified in 90 days and not recalled since 2027-02-20"
    assert memdream(memory, later, "lint").returncode == 0


def _value(importance: float, confidence: float, references: int, age_days: float) -> float:
    """The documented value formula (docs/memory-format.md), written out independently."""
    recency: float = 0.5 ** (age_days / 30)  # recall.recency_half_life_days
    return 0.3 * importance + 0.2 * confidence + 0.3 * references / (references + 3) + 0.2 * recency


def test_capacity_per_scope_archives_the_lowest_value_cards_first(memory: Path) -> None:
    day = "2026-11-29T12:00:00Z"  # every card and recall one day before the dream: equal recency
    specs: dict[str, dict[str, Any]] = {
        "f-high": dict(subject="postgres", attribute="version", value="16", statement="Postgres runs version 16.",
                       importance=0.9, confidence=0.9),
        "f-used": dict(subject="grafana", attribute="folder", value="ops-dashboards",
                       statement="Grafana dashboards live in the ops-dashboards folder.", importance=0.2,
                       confidence=0.6),
        "f-mid": dict(subject="nightly backup", attribute="window", value="02:00 UTC",
                      statement="The nightly backup window opens at 02:00 UTC.", importance=0.5, confidence=0.7),
        "f-low-a": dict(subject="lint step", attribute="tool", value="ruff", statement="The lint step uses ruff.",
                        importance=0.1, confidence=0.5),
        "f-low-b": dict(subject="format step", attribute="tool", value="black",
                        statement="The format step uses black.", importance=0.1, confidence=0.5),
        "f-keep": dict(subject="oncall", attribute="pager", value="opsgenie", statement="Oncall pages go to opsgenie.",
                       importance=0.0, confidence=0.3, ttl_policy="keep"),
        "f-split-1": dict(subject="cdn", attribute="vendor", value="fastly", statement="The CDN vendor is fastly.",
                          status="conflicting", importance=0.0, confidence=0.3),
        "f-split-2": dict(subject="cdn", attribute="vendor", value="cloudfront",
                          statement="The CDN vendor is cloudfront.", status="conflicting", importance=0.0,
                          confidence=0.3),
        # Another scope, at its capacity: the global flood does not touch it.
        **{f"f-acme-{n}": dict(subject=f"acme service {n}", attribute="port", value=str(8000 + n), scope="acme-shop",
                               statement=f"Acme service {n} listens on port {8000 + n}.", importance=0.0,
                               confidence=0.3) for n in range(3)},
    }
    write_facts(memory, {card_id: {**fields, "created_at": day, "updated_at": day} for card_id, fields in specs.items()})
    recall(memory, day, *["grafana dashboards ops-dashboards folder"] * 5)
    assert sum("f-used" in line["cards"] for line in usage_lines(memory)) == 5

    (memory / "memdream.yaml").write_text("version: 1\ndream:\n  forget:\n    capacity_per_scope: 7\n")
    git(memory, "commit", "-q", "-am", "capacity 7")
    first = dream(memory, START)
    assert ops(first) == {"archive": ["f-low-a"]}  # 8 global facts, one over: the lower id of two equal values
    expected = f"capacity of scope global (7 facts): lowest value {_value(0.1, 0.5, 0, 1):.3f}"
    assert first["operations"][0]["reason"] == expected

    (memory / "memdream.yaml").write_text("version: 1\ndream:\n  forget:\n    capacity_per_scope: 5\n")
    git(memory, "commit", "-q", "-am", "capacity 5")
    second = dream(memory, "2026-11-30T13:00:00Z")
    # 7 left, 2 over; keep and conflicting cards stay: the two lowest others go; five recalls save f-used.
    assert _value(0.2, 0.6, 5, 1) > _value(0.5, 0.7, 0, 1)
    assert sorted(ops(second)["archive"]) == ["f-low-b", "f-mid"]
    active = {path.stem for path in (memory / "cards" / "facts").glob("*.yaml")}
    assert active == {"f-high", "f-used", "f-keep", "f-split-1", "f-split-2", "f-acme-0", "f-acme-1", "f-acme-2"}
    lines = [line for line in audit(memory) if line["op"] == "archive"]
    assert [line["card"] for line in lines] == ["f-low-a", "f-low-b", "f-mid"]
    assert all(line["reason"].startswith("capacity of scope global (") for line in lines)
    assert memdream(memory, START, "lint").returncode == 0


def test_a_clone_without_the_usage_log_keeps_its_counts(memory: Path, tmp_path: Path) -> None:
    write_facts(memory, {card_id: {**fields, "updated_at": "2026-11-29T00:00:00Z"} for card_id, fields in FACTS.items()})
    recall(memory, START, *["billing queue rabbitmq"] * 4)
    ingest_news(memory, START)
    dream(memory, START)
    counted = card(memory, "f-queue")["reference_count"]
    assert counted >= 4

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(memory), str(clone))
    assert not (clone / ".memdream" / "usage.jsonl").exists()
    recall(clone, START, "billing queue rabbitmq")  # this clone's own log counts one
    ingest_news(clone, START)
    report = dream(clone, "2026-11-30T13:00:00Z")
    assert card(clone, "f-queue")["reference_count"] == counted  # never lowered
    assert not any(change["path"].startswith("cards/") for change in report["changes"])

    (memory / ".memdream" / "usage.jsonl").unlink()  # a rotated log: the same
    assert dream(memory, "2026-11-30T13:00:00Z")["changes"] == []
    assert card(memory, "f-queue")["reference_count"] == counted


def test_an_old_usage_cache_is_rebuilt_with_last_recall_times(memory: Path) -> None:
    write_facts(memory, {card_id: {**fields, "updated_at": "2026-11-29T00:00:00Z"} for card_id, fields in FACTS.items()})
    recall(memory, "2026-11-20T08:00:00Z", "billing queue rabbitmq")
    recall(memory, "2026-11-28T08:00:00Z", "billing queue rabbitmq")
    paths = MemoryPaths(memory)
    log_size = (memory / ".memdream" / "usage.jsonl").stat().st_size
    # What the previous version cached: (offset, counts), no times; its counts are stale on purpose.
    write_cache(cache_path(paths), (log_size, {"f-queue": 99}))
    memdream(memory, START, "recall", "billing queue")  # the recall command still works with it

    usage = usage_at(paths)
    assert usage.counts["f-queue"] == 3  # counted again from the log, not the stale 99
    assert usage.last_used["f-queue"] == START
    # The recall rewrote the cache in the new format, from the log (it counts before it appends its own line).
    cached = read_cache(cache_path(paths))
    assert isinstance(cached, tuple) and len(cached) == 3
    assert cached[1] == {"f-queue": 2} and cached[2] == {"f-queue": "2026-11-28T08:00:00Z"}

    # Incremental: a recall appended later moves the time, an unfinished line waits.
    with open(memory / ".memdream" / "usage.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"ts":"2026-12-01T00:00:00Z","query":"q","cards":["f-backup"]}\n{"ts":"2026-12-02')
    usage = usage_at(paths)
    assert usage.counts["f-queue"] == 3 and usage.counts["f-backup"] >= 1
    assert usage.last_used["f-backup"] == "2026-12-01T00:00:00Z" and usage.last_used["f-queue"] == START


def test_cards_learned_from_transcripts_count_the_recalls_that_returned_them(memory: Path, tmp_path: Path) -> None:
    now = "2026-11-20T00:00:00Z"
    logs = tmp_path / "logs"
    billing_api_project(logs)
    memdream(memory, now, "ingest", logs)
    dream(memory, now)
    recall(memory, now, "how do I run the tests", "pytest ModuleNotFoundError", "how do I run the tests")
    counted = Counter(card_id for line in usage_lines(memory) for card_id in line["cards"])
    assert counted, "recall returned no card"
    ingest_news(memory, "2026-11-20T01:00:00Z")
    dream(memory, "2026-11-20T01:00:00Z")
    learned = {path.stem: yaml.safe_load(path.read_text(encoding="utf-8"))
               for path in [*memory.glob("cards/*/*.yaml"), *memory.glob("archive/*/*.yaml")]}
    assert {card_id: learned[card_id].get("reference_count") for card_id in counted} == dict(counted)
    assert all("reference_count" not in data for card_id, data in learned.items() if card_id not in counted)
    assert memdream(memory, now, "lint").returncode == 0


def test_value_formula_in_the_docs_matches_the_stage() -> None:
    from memdream.dream.forget import card_value
    from memdream.memory.card import Card

    now = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    made = Card.from_dict(card_data(importance=0.6, confidence=0.8, reference_count=6,
                                    updated_at="2026-11-15T12:00:00Z", last_verified_at="2026-11-15T12:00:00Z"))
    assert math.isclose(card_value(made, now, None, 30), round(_value(0.6, 0.8, 6, 15), 4))
    recalled = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)  # a recall today makes it fresh
    assert math.isclose(card_value(made, now, recalled, 30), round(_value(0.6, 0.8, 6, 0), 4))
