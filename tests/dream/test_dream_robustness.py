"""Dream under the conditions cron gives it: dry runs, concurrent writers, kill -9, dirty trees, clones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdream import yamlio
from tests.dream.generator import build, write
from tests.gitutil import git
from tests.killing import kill_before_commit


def tree(root: Path) -> dict[str, bytes]:
    """Every tracked-area file's bytes (what a dream may change)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] in ("cards", "archive", "audit", "plan.yaml", "INDEX.md")}


@pytest.fixture
def ingested(memory: Path, tmp_path: Path, run, monkeypatch) -> Path:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    assert run("ingest", write(tmp_path / "agent.jsonl", build()), "-m", memory).exit_code == 0
    return memory


def test_dry_run_prints_the_changeset_and_writes_nothing(ingested: Path, run) -> None:
    head, before = git(ingested, "rev-parse", "HEAD"), tree(ingested)
    result = run("dream", "--dry-run", "-m", ingested)
    assert result.exit_code == 0
    assert "dry run:" in result.stdout and "write  cards/facts/" in result.stdout
    assert git(ingested, "rev-parse", "HEAD") == head and tree(ingested) == before
    assert not (ingested / ".memdream" / "dream" / "state.json").exists()
    assert json.loads(run("dream", "--dry-run", "-m", ingested, "-f", "json").stdout)["dry_run"] is True


def test_nothing_to_do_makes_no_commit(memory: Path, run) -> None:
    head = git(memory, "rev-parse", "HEAD")
    result = run("dream", "-m", memory)
    assert result.exit_code == 0 and "nothing to change; no commit" in result.stdout
    assert git(memory, "rev-parse", "HEAD") == head


def test_a_dirty_tree_is_refused(ingested: Path, run) -> None:
    (ingested / "plan.yaml").write_text((ingested / "plan.yaml").read_text().replace("goal: ''", "goal: mine"))
    result = run("dream", "-m", ingested)
    assert result.exit_code == 1
    assert result.stderr == ("memdream: uncommitted changes in plan.yaml: commit or stash them before "
                             "dreaming\n")


def test_a_second_writer_exits_75(ingested: Path, monkeypatch) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from memdream.memory.lock import writer_lock\n"
         f"with writer_lock(Path({str(ingested / '.memdream')!r})):\n"
         "    print('locked', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        env = {**os.environ, "MEMDREAM_LOCK_WAIT": "0.2"}
        result = subprocess.run([sys.executable, "-m", "memdream", "dream", "-m", str(ingested)], env=env,
                                capture_output=True, text=True)
        assert result.returncode == 75
        assert result.stderr.startswith("memdream: memory is busy: memdream pid ")
        assert result.stderr.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()


def test_kill_9_mid_dream_leaves_the_last_commit_and_the_next_dream_finishes(ingested: Path, tmp_path: Path,
                                                                             run) -> None:
    """Kill the dream between writing files and committing (a pause point set by a test hook)."""
    head, before = git(ingested, "rev-parse", "HEAD"), tree(ingested)
    kill_before_commit(["dream", "-m", str(ingested)], tmp_path / "paused")
    assert tree(ingested) != before  # files were already being swapped in
    assert git(ingested, "rev-parse", "HEAD") == head
    result = run("dream", "-m", ingested)
    assert result.exit_code == 0, result.stderr
    assert "recovered from an interrupted dream" in result.stdout
    assert git(ingested, "rev-parse", "HEAD") != head and git(ingested, "status", "--porcelain") == ""
    assert run("lint", ingested).exit_code == 0
    assert json.loads(run("dream", "-m", ingested, "-f", "json").stdout)["changes"] == []


def test_a_clone_without_raw_layer_or_local_state_dreams_on(ingested: Path, tmp_path: Path, run) -> None:
    run("dream", "-m", ingested)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ingested), str(clone)], check=True)
    assert not (clone / "raw" / "segments").exists() and not (clone / ".memdream").exists()
    head = git(clone, "rev-parse", "HEAD")
    assert json.loads(run("dream", "-m", clone, "-f", "json").stdout)["changes"] == []
    assert git(clone, "rev-parse", "HEAD") == head
    new = write(tmp_path / "new.jsonl", [{"session": "s-09", "ts": "2026-11-13T10:00:00Z", "kind": "tool_result",
                                          "id": "loc9", "tool": "curl", "ok": True,
                                          "text": "base: https://api2.acme.example",
                                          "fact": {"subject": "API", "attribute": "base url",
                                                   "value": "https://api2.acme.example"}}])
    assert run("ingest", new, "-m", clone).exit_code == 0
    assert (clone / "raw" / "segments" / "000002.jsonl").exists()  # numbering goes on from the manifest
    report = json.loads(run("dream", "-m", clone, "-f", "json").stdout)
    assert report["consumed_segments"] == [2, 2] and report["counts"] == {"supersede": 1, "add": 1}


def test_weak_notes_that_disagree_stay_as_conflicting_cards(memory: Path, tmp_path: Path, run) -> None:
    events = [
        {"session": "a", "ts": "2026-11-01T10:00:00Z", "kind": "note", "id": "n1", "text": "staging db is db-1",
         "fact": {"subject": "staging", "attribute": "db-host", "value": "db-1"}},
        {"session": "b", "ts": "2026-11-02T10:00:00Z", "kind": "note", "id": "n2", "text": "staging db is db-2",
         "fact": {"subject": "staging", "attribute": "db-host", "value": "db-2"}},
        {"session": "c", "ts": "2026-11-03T10:00:00Z", "kind": "note", "id": "n3", "text": "staging db is db-1",
         "fact": {"subject": "staging", "attribute": "db-host", "value": "db-1"}},
    ]
    run("ingest", write(tmp_path / "a.jsonl", events), "-m", memory)
    run("dream", "-m", memory)
    cards = [yamlio.load_file(p) for p in (memory / "cards" / "facts").glob("*.yaml")]
    assert sorted((c["value"], c["status"]) for c in cards) == [("db-1", "conflicting"), ("db-2", "conflicting")]
    assert run("lint", memory).exit_code == 0
    settle = [{"session": "d", "ts": "2026-11-04T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "psql",
               "ok": True, "text": "connected to db-2",
               "fact": {"subject": "staging", "attribute": "db-host", "value": "db-2"}}]
    run("ingest", write(tmp_path / "b.jsonl", settle), "-m", memory)
    report = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert "supersede" in report["counts"]
    cards = [yamlio.load_file(p) for p in (memory / "cards" / "facts").glob("*.yaml")]
    assert [(c["value"], c["status"]) for c in cards] == [("db-2", "verified")]  # a note and a tool read


def test_user_rejection_archives_a_value_and_demotes_what_was_derived_from_it(memory: Path, tmp_path: Path,
                                                                              run) -> None:
    observed = [{"session": "a", "ts": "2026-11-01T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "cat",
                 "ok": True, "text": "timeout=30", "fact": {"subject": "api", "attribute": "timeout", "value": "30s"}},
                {"session": "a", "ts": "2026-11-01T10:01:00Z", "kind": "feedback", "id": "f1", "verdict": "confirm",
                 "target": "r1"}]
    run("ingest", write(tmp_path / "a.jsonl", observed), "-m", memory)
    run("dream", "-m", memory)
    (fact_path,) = (memory / "cards" / "facts").glob("*.yaml")
    fact_id = fact_path.stem
    lesson = {"id": "l-000001", "type": "lesson", "subject": "api", "statement": "Retry after 30 s.",
              "scope": "api clients", "status": "verified", "confidence": 0.8, "derived_from": [fact_id],
              "evidence": [{"ref": "log://a#r1", "stance": "supports", "kind": "observation"}],
              "created_at": "2026-11-01T11:00:00Z", "updated_at": "2026-11-01T11:00:00Z", "ttl_policy": "keep"}
    (memory / "cards" / "lessons" / "l-000001.yaml").write_text(yamlio.dumps(lesson))
    git(memory, "add", "-A")
    git(memory, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "lesson")
    rejected = [{"session": "b", "ts": "2026-11-02T10:00:00Z", "kind": "feedback", "id": "f2", "verdict": "reject",
                 "target": fact_id, "text": "that timeout is wrong"}]
    run("ingest", write(tmp_path / "b.jsonl", rejected), "-m", memory)
    report = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert [op["op"] for op in report["operations"]] == ["demote", "archive"]
    assert (memory / "archive" / "facts" / f"{fact_id}.yaml").exists()
    demoted = yamlio.load_file(memory / "cards" / "lessons" / "l-000001.yaml")
    assert demoted["status"] == "inferred" and demoted["confidence"] == 0.4
    assert demoted["review"].startswith(f"depends on {fact_id}")
    assert run("lint", memory).exit_code == 0


def test_decay_demotes_then_archives_cards_nobody_reverified(memory: Path, tmp_path: Path, run,
                                                             monkeypatch) -> None:
    events = [{"session": "a", "ts": "2026-01-01T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "cat",
               "ok": True, "fact": {"subject": "api", "attribute": "owner", "value": "team-a"}},
              {"session": "a", "ts": "2026-01-01T10:01:00Z", "kind": "feedback", "id": "f1", "verdict": "confirm",
               "target": "r1"}]
    monkeypatch.setenv("MEMDREAM_NOW", "2026-01-02T00:00:00Z")
    run("ingest", write(tmp_path / "a.jsonl", events), "-m", memory)
    run("dream", "-m", memory)
    monkeypatch.setenv("MEMDREAM_NOW", "2026-05-01T00:00:00Z")  # > 90 days later
    first = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert [op["op"] for op in first["operations"]] == ["demote"]
    monkeypatch.setenv("MEMDREAM_NOW", "2026-09-01T00:00:00Z")
    second = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert [op["op"] for op in second["operations"]] == ["archive"]
    assert not list((memory / "cards" / "facts").glob("*.yaml"))
    assert run("lint", memory).exit_code == 0
