"""When ingest's manifest reaches git (`ingest.commit`): by default with the next dream, so that
`git log` of a memory reads as a history of dreams, not of cron's ingests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.gitutil import git
from tests.transcripts import billing_api_project, chat_file


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def set_commit_mode(root: Path, mode: str) -> None:
    config = root / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("commit: with-dream", f"commit: {mode}"),
                      encoding="utf-8")
    git(root, "commit", "-q", "-am", f"ingest.commit: {mode}")


def report(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_ingests_make_no_commit_and_the_next_dream_carries_their_manifest(memory: Path, run, tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)[:3]  # Claude Code and Codex sessions
    logs.append(chat_file(tmp_path / "chat.json", [
        {"role": "user", "content": "Which port does the billing service listen on?"},
        {"role": "assistant", "content": "It listens on port 8081, per config/service.yaml."}]))
    for log in logs:  # cron's ingests every half hour
        assert report(run("ingest", log, "-m", memory, "--format", "json"))["commit"] is None
    assert subjects(memory) == ["memdream init"]
    assert git(memory, "status", "--porcelain", "--untracked-files=all").strip() == "?? raw/MANIFEST.jsonl"
    dreamed = report(run("dream", "-m", memory, "--format", "json"))
    assert dreamed["ingested"] == ["000001.jsonl", "000002.jsonl", "000003.jsonl", "000004.jsonl"]
    assert subjects(memory)[0].startswith("memdream dream: ") and len(subjects(memory)) == 2
    message = git(memory, "log", "-1", "--format=%B")
    assert "Memdream-Ingest: 000001.jsonl, 000002.jsonl, 000003.jsonl, 000004.jsonl" in message
    assert "raw/MANIFEST.jsonl" in git(memory, "show", "--name-only", "--format=", "HEAD").split()
    assert git(memory, "status", "--porcelain") == ""


def test_a_dream_that_learns_nothing_still_commits_the_manifest(memory: Path, run, tmp_path: Path) -> None:
    log = tmp_path / "chatter.jsonl"
    log.write_text(json.dumps({"session": "s1", "ts": "2026-11-29T10:00:00Z", "kind": "message",
                               "text": "good morning"}) + "\n")
    run("ingest", log, "-m", memory)
    dreamed = report(run("dream", "-m", memory, "--format", "json"))
    assert dreamed["operations"] == [] and dreamed["commit"] is not None
    assert subjects(memory)[0] == "memdream dream: 1 event(s), no card changed"
    assert git(memory, "status", "--porcelain") == ""
    assert report(run("dream", "-m", memory, "--format", "json"))["commit"] is None  # nothing new: no commit


def test_the_waiting_manifest_does_not_make_the_memory_dirty(memory: Path, run, tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    run("ingest", logs[0], "-m", memory)
    run("dream", "-m", memory)
    run("ingest", logs[1], "-m", memory)
    assert report(run("dream", "-m", memory, "--format", "json"))["commit"] is not None


@pytest.mark.parametrize("mode", ["each", "daily"])
def test_each_and_daily_modes_commit_at_ingest(memory: Path, run, tmp_path: Path, monkeypatch, mode: str) -> None:
    set_commit_mode(memory, mode)
    logs = billing_api_project(tmp_path / "logs", small=True)
    assert report(run("ingest", logs[0], "-m", memory, "--format", "json"))["commit"] is not None
    second = report(run("ingest", logs[1], "-m", memory, "--format", "json"))["commit"]
    assert (second is None) == (mode == "daily")  # the same day: the dream commits the rest
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-01T08:00:00Z")
    assert report(run("ingest", logs[2], "-m", memory, "--format", "json"))["commit"] is not None
    ingests = [subject for subject in subjects(memory) if subject.startswith("memdream ingest")]
    assert len(ingests) == (3 if mode == "each" else 2)


def test_with_track_raw_the_dream_commits_the_new_segments_too(memory: Path, run, tmp_path: Path) -> None:
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("track_raw: false", "track_raw: true"),
                      encoding="utf-8")
    git(memory, "commit", "-q", "-am", "track raw")
    logs = billing_api_project(tmp_path / "logs", small=True)
    run("ingest", logs[0], "-m", memory)
    run("ingest", logs[1], "-m", memory)
    assert report(run("dream", "-m", memory, "--format", "json"))["commit"] is not None
    tracked = git(memory, "ls-files", "raw").split()
    assert tracked == ["raw/MANIFEST.jsonl", "raw/segments/000001.jsonl", "raw/segments/000002.jsonl"]
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""
