"""`memdream audit CARD_ID` and `memdream show log://…` on real memories: real `memdream` processes
ingest and dream a log in which a tool reading changes between sessions (two dreams), and real
Claude Code / Codex transcripts of a project; a clone made with git has no raw layer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dream.generator import build, write
from tests.gitutil import git
from tests.transcripts import billing_api_project

NOW = "2026-11-30T12:00:00Z"


def memdream(root: Path, *args: str, now: str = NOW) -> subprocess.CompletedProcess[str]:
    """One `memdream` process, as cron or CI runs it (no git identity, no colour)."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_", "MEMDREAM_", "GITHUB_"))}
    home = root.parent / "home"
    home.mkdir(exist_ok=True)
    env.update(HOME=str(home), GIT_CONFIG_GLOBAL=str(home / "no-gitconfig"), GIT_CONFIG_NOSYSTEM="1",
               NO_COLOR="1", MEMDREAM_NOW=now)
    done = subprocess.run([sys.executable, "-m", "memdream", *args], cwd=root.parent, env=env, capture_output=True,
                          text=True, timeout=180, check=False)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def new_memory(root: Path) -> Path:
    root.parent.mkdir(parents=True, exist_ok=True)
    ok(memdream(root, "init", str(root)))
    return root


def build_changing_fact(root: Path) -> Path:
    """Six sessions of a project, dreamed in two batches: psql says 15.4 in session 1, then 16.1 in
    session 4, so the second dream supersedes the first dream's card (and other keys change too)."""
    new_memory(root)
    events = build()
    for name, sessions, now in (("first", ("s-01", "s-02", "s-03"), "2026-11-08T03:00:00Z"),
                                ("second", ("s-04", "s-05", "s-06"), "2026-11-14T03:00:00Z")):
        log = write(root.parent / f"{name}.jsonl", [event for event in events if event["session"] in sessions])
        ok(memdream(root, "ingest", str(log), "-m", str(root), now=now))
        ok(memdream(root, "dream", "-m", str(root), now=now))
    return root


def build_transcripts(root: Path) -> Path:
    """Two weeks of Claude Code and Codex sessions on billing-api, ingested and dreamed."""
    new_memory(root)
    billing_api_project(root.parent / "logs", small=True)
    ok(memdream(root, "ingest", str(root.parent / "logs"), "-m", str(root)))
    ok(memdream(root, "dream", "-m", str(root)))
    return root


def copy_of(template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "work" / "mem"
    shutil.copytree(template, target, symlinks=True)
    return target


def clone_of(memory: Path, tmp_path: Path) -> Path:
    """What CI checks out: the tracked files only (raw/segments is ignored, so it is not there)."""
    target = tmp_path / "ci" / "mem"
    target.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", str(memory), str(target)], check=True, capture_output=True)
    assert (target / "raw" / "MANIFEST.jsonl").is_file() and not (target / "raw" / "segments").exists()
    return target


def cards(memory: Path) -> list[dict[str, Any]]:
    return json.loads(ok(memdream(memory, "cards", "--archived", "-f", "json", "-m", str(memory))))


def card_with(memory: Path, **fields: str) -> dict[str, Any]:
    (found,) = [card for card in cards(memory) if all(card.get(key) == value for key, value in fields.items())]
    return found


def audit_json(memory: Path, card_id: str) -> dict[str, Any]:
    return json.loads(ok(memdream(memory, "audit", card_id, "-f", "json", "-m", str(memory))))


@pytest.fixture(scope="module")
def changing_fact_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_changing_fact(tmp_path_factory.mktemp("changing") / "mem")


@pytest.fixture(scope="module")
def transcripts_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_transcripts(tmp_path_factory.mktemp("transcripts") / "mem")


def test_audit_of_a_superseded_fact_shows_both_versions_and_the_evidence_that_overturned_it(
        changing_fact_template: Path) -> None:
    memory = changing_fact_template
    old = card_with(memory, subject="postgres", value="15.4")
    new = card_with(memory, subject="postgres", value="16.1")
    trail = audit_json(memory, old["id"])

    assert trail["card"]["status"] == "superseded" and trail["path"] == f"archive/facts/{old['id']}.yaml"
    assert [(v["id"], v["relation"], v["value"]) for v in trail["versions"]] == [
        (old["id"], "this", "15.4"), (new["id"], "newer", "16.1")]
    (overturn,) = trail["versions"][1]["superseded_by_operation"]
    assert overturn["op"] == "supersede" and overturn["cards"] == [old["id"]]
    (cause,) = overturn["evidence_resolved"]
    assert (cause["ref"], cause["check"]) == ("log://s-04#pg2", "found")
    assert cause["event"]["kind"] == "tool_result" and cause["event"]["excerpt"].startswith("PostgreSQL 16.1")
    assert cause["event"]["session"] == "s-04" and cause["event"]["ts"] == "2026-11-08T09:03:00Z"
    (own,) = trail["evidence"]
    assert (own["ref"], own["check"], own["where"]) == ("log://s-01#pg1", "ok", "card")
    assert own["event"]["excerpt"].startswith("PostgreSQL 15.4") and own["event"]["actor"] == "tool"
    # made by the first dream, superseded by the second: both operations, both commits
    runs = {op["op"]: op["run"] for op in trail["operations"]}
    assert set(runs) == {"add", "supersede"} and runs["add"] < runs["supersede"]
    assert [commit["trailers"]["Memdream-Run"] for commit in trail["commits"]] == [
        [runs["supersede"]], [runs["add"]]]


def test_audit_text_reads_as_the_story_of_the_fact(changing_fact_template: Path) -> None:
    memory = changing_fact_template
    new = card_with(memory, subject="postgres", value="16.1")
    old = card_with(memory, subject="postgres", value="15.4")
    text = ok(memdream(memory, "audit", new["id"], "-m", str(memory)))
    versions = text[text.index("Versions (oldest first)"):text.index("Audit operations")]
    assert versions.index(f"{old['id']}  15.4  superseded") < versions.index(f"{new['id']}  16.1  verified")
    assert "<- this card" in versions.splitlines()[2]
    assert "log://s-04#pg2  event found" in versions and "PostgreSQL 16.1" in versions
    evidence = text[text.index("Evidence"):text.index("Versions")]
    assert "log://s-04#pg2  supports observation  hash ok" in evidence
    assert "log://s-05#pg3  supports observation  hash ok" in evidence
    assert "memdream dream: 1 superseded" in text[text.index("Commits"):]


def test_an_unknown_card_is_one_line_and_exit_1(changing_fact_template: Path) -> None:
    done = memdream(changing_fact_template, "audit", "f-000000", "-m", str(changing_fact_template))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("memdream: no card with id 'f-000000'") and done.stderr.count("\n") == 1
    neither = memdream(changing_fact_template, "audit", "-m", str(changing_fact_template))
    assert neither.returncode == 2 and "CARD_ID or --verify" in neither.stderr


def test_audit_of_a_lesson_from_transcripts_resolves_held_evidence_and_derived_cards(
        transcripts_template: Path) -> None:
    memory = transcripts_template
    strategy = next(card for card in cards(memory) if card["type"] == "strategy" and card.get("derived_from"))
    (lesson_id,) = strategy["derived_from"]
    trail = audit_json(memory, lesson_id)
    assert trail["card"]["evidence_count"] == len(trail["evidence"]) > len(trail["card"]["evidence"])
    assert {item["where"] for item in trail["evidence"]} == {"card", "audit"}
    assert all(item["check"] == "ok" for item in trail["evidence"])
    assert all(item["event"]["kind"] == "tool_result" and "passed" in item["event"]["excerpt"]
               for item in trail["evidence"])
    assert all(len(item["event"]["excerpt"]) <= 160 for item in trail["evidence"])
    assert [item["id"] for item in trail["derived"]] == [strategy["id"]]
    assert {op["op"] for op in trail["operations"]} == {"add", "evidence"}
    back = audit_json(memory, strategy["id"])
    assert [(item["id"], item["exists"]) for item in back["derived_from"]] == [(lesson_id, True)]


def test_audit_on_a_clone_without_raw_events_says_so_per_reference(transcripts_template: Path,
                                                                   tmp_path: Path) -> None:
    clone = clone_of(transcripts_template, tmp_path)
    fact = card_with(clone, subject="staging database", status="superseded")
    trail = audit_json(clone, fact["id"])
    assert trail["raw_layer"] is False
    assert [item["check"] for item in trail["evidence"]] == ["raw layer absent"]
    assert len(trail["commits"]) == 1 and len(trail["versions"]) == 2
    text = ok(memdream(clone, "audit", fact["id"], "-m", str(clone)))
    assert "the raw layer is not here, hashes not checked" in text


def test_show_a_raw_event_with_where_it_is_stored_and_who_cites_it(changing_fact_template: Path) -> None:
    memory = changing_fact_template
    new = card_with(memory, subject="postgres", value="16.1")
    text = ok(memdream(memory, "show", "log://s-04#pg2", "-m", str(memory)))
    lines = text.splitlines()
    assert lines[0] == "# log://s-04#pg2"
    assert lines[1].startswith("# raw/segments/000002.jsonl line ")
    assert "(dedup index: ok; segment against raw/MANIFEST.jsonl: ok)" in lines[2]
    assert '"text": "PostgreSQL 16.1",' in text  # pretty JSON
    assert lines[-1] == f"cited by: {new['id']} (cards/facts/{new['id']}.yaml)"
    view = json.loads(ok(memdream(memory, "show", "log://s-04#pg2", "-f", "json", "-m", str(memory))))
    stored = (memory / view["segment"]).read_bytes().splitlines()[view["line"] - 1]
    assert json.loads(stored) == view["event"]
    assert view["hash"] == next(e["hash"] for e in new["evidence"] if e["ref"] == "log://s-04#pg2")
    assert (view["index_check"], view["segment_check"]) == ("ok", "ok")


def test_show_of_an_event_an_older_card_holds_in_the_audit_files(transcripts_template: Path) -> None:
    memory = transcripts_template
    lesson = next(card for card in cards(memory) if card.get("evidence_count", 0) > len(card["evidence"]))
    trail = audit_json(memory, lesson["id"])
    held = next(item["ref"] for item in trail["evidence"] if item["where"] == "audit")
    view = json.loads(ok(memdream(memory, "show", held, "-f", "json", "-m", str(memory))))
    assert {"id": lesson["id"], "path": f"cards/lessons/{lesson['id']}.yaml", "where": "audit"} in view["cited_by"]


def test_show_of_an_unknown_event_or_without_the_raw_layer_is_one_line(changing_fact_template: Path,
                                                                       tmp_path: Path) -> None:
    memory = changing_fact_template
    missing = memdream(memory, "show", "log://s-04#never", "-m", str(memory))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == f"memdream: no raw event log://s-04#never in {memory}\n"
    clone = clone_of(memory, tmp_path)
    absent = memdream(clone, "show", "log://s-04#pg2", "-m", str(clone))
    assert absent.returncode == 1 and absent.stderr.count("\n") == 1
    assert "the raw layer is not here" in absent.stderr


def test_show_says_when_a_stored_line_no_longer_matches_the_manifest(changing_fact_template: Path,
                                                                     tmp_path: Path) -> None:
    memory = copy_of(changing_fact_template, tmp_path)
    segment = memory / "raw" / "segments" / "000002.jsonl"
    segment.write_bytes(segment.read_bytes().replace(b"PostgreSQL 16.1", b"PostgreSQL 16.2"))
    view = json.loads(ok(memdream(memory, "show", "log://s-04#pg2", "-f", "json", "-m", str(memory))))
    assert (view["index_check"], view["segment_check"]) == ("mismatch", "changed")
    assert git(memory, "status", "--porcelain") == ""  # showing changes nothing tracked
