"""`memdream log`: the history of dreams from commits, trailers and the audit file of each run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.gitutil import git
from tests.review.dream_history import (
    History,
    bookkeeping_commit,
    built_once,
    copy_of,
    json_of,
    memdream,
    rollback_commit,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> History:
    return built_once(tmp_path_factory)


@pytest.fixture
def history(built: History, tmp_path: Path) -> History:
    return copy_of(built, tmp_path / "mem")


def _audit_counts(root: Path, run_id: str) -> dict[str, int]:
    """The operations of a run as its audit file holds them, counted independently of memdream."""
    counts = {op: 0 for op in ("add", "merge", "supersede", "archive", "conflict", "demote", "update")}
    for line in (root / "audit" / f"{run_id}.jsonl").read_text(encoding="utf-8").splitlines():
        op = json.loads(line)["op"]
        if op != "evidence":
            counts[op] += 1
    return counts


def _trailer(root: Path, sha: str, key: str) -> str:
    return git(root, "log", "-1", f"--format=%(trailers:key={key},valueonly)", sha).strip()


def test_log_lists_both_dreams_newest_first_with_their_trailers_and_audit_counts(history: History) -> None:
    entries = json_of("log", "-m", history.root)
    assert [entry["run"] for entry in entries] == [history.second, history.first]
    assert all(entry["kind"] == "dream" and entry["rolled_back_by"] is None for entry in entries)
    for entry in entries:
        assert entry["commit"] == git(history.root, "log", "-1", "--format=%H", "--extended-regexp",
                                      f"--grep=^Memdream-Run: {entry['run']}$").strip()
        assert entry["events"] == int(_trailer(history.root, entry["commit"], "Memdream-Events"))
        assert entry["counts"] == _audit_counts(history.root, entry["run"])
        assert entry["time"].endswith("Z")
    assert [entry["segments"] for entry in entries] == [[2, 2], [1, 1]]
    second = entries[0]["counts"]
    assert second["supersede"] == 1 and second["archive"] == 1  # the region moved; the host was rejected
    assert entries[1]["counts"]["add"] == 3 and entries[1]["counts"]["supersede"] == 0


def test_log_in_a_pipe_is_an_aligned_table(history: History) -> None:
    done = memdream("log", "-m", history.root)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["run", "date", "commit", "events", "add", "mrg", "sup", "arch", "conf", "dem", "upd"]
    assert lines[1].startswith(history.second) and lines[2].startswith(history.first)
    assert len(lines) == 3
    # Columns line up: each count ends where its heading ends.
    end_of_sup = lines[0].index("sup") + len("sup")
    assert lines[1][end_of_sup - 1] == "1" and lines[2][end_of_sup - 1] == "0"
    sha = git(history.root, "rev-parse", "HEAD").strip()
    assert sha[:10] in lines[1]


def test_limit_shows_the_newest_entries(history: History) -> None:
    entries = json_of("log", "-m", history.root, "--limit", "1")
    assert [entry["run"] for entry in entries] == [history.second]
    assert memdream("log", "-m", history.root, "--limit", "0").returncode == 2


def test_a_rolled_back_dream_is_marked_and_keeps_its_counts_after_its_audit_file_is_gone(history: History) -> None:
    before = json_of("log", "-m", history.root)
    sha = rollback_commit(history.root, history.second)
    assert not (history.root / "audit" / f"{history.second}.jsonl").exists()
    entries = json_of("log", "-m", history.root)
    assert [entry["kind"] for entry in entries] == ["rollback", "dream", "dream"]
    assert entries[0]["commit"] == sha and entries[0]["undoes"] == [history.second]
    assert entries[1]["run"] == history.second and entries[1]["rolled_back_by"] == sha
    assert entries[1]["counts"] == before[0]["counts"]
    assert entries[2]["rolled_back_by"] is None
    text = memdream("log", "-m", history.root).stdout
    assert f"rollback of {history.second}" in text and f"rolled back by {sha[:10]}" in text


def test_commits_that_are_not_dreams_are_left_out(history: History) -> None:
    card = next((history.root / "cards" / "facts").glob("*.yaml"))
    card.write_text(card.read_text(encoding="utf-8").replace("confidence:", "importance: 0.9\nconfidence:", 1),
                    encoding="utf-8")
    git(history.root, "commit", "-qam", "raise the importance by hand\n\nMemdream-Note: not a dream")
    assert [entry["run"] for entry in json_of("log", "-m", history.root)] == [history.second, history.first]


def test_a_dream_that_changed_only_bookkeeping_is_left_out(history: History) -> None:
    """Issue 21.2: an older version committed recall's usage counts alone as a dream."""
    bookkeeping_commit(history.root)
    assert [entry["run"] for entry in json_of("log", "-m", history.root)] == [history.second, history.first]
    assert [entry["run"] for entry in json_of("log", "-m", history.root, "--limit", "1")] == [history.second]
    assert history.second in memdream("log", "-m", history.root).stdout.splitlines()[1]


def test_a_memory_without_dreams_says_so(memory: Path) -> None:
    done = memdream("log", "-m", memory)
    assert done.returncode == 0
    assert done.stdout.startswith("No dream yet")
    assert json_of("log", "-m", memory) == []


def test_log_works_on_a_clone_without_the_raw_layer(history: History, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(history.root), str(clone)], check=True)
    assert not (clone / "raw" / "segments").exists() and not (clone / ".memdream").exists()
    entries: list[dict[str, Any]] = json_of("log", "-m", clone)
    assert entries == json_of("log", "-m", history.root)


def test_a_dream_commit_without_its_audit_file_or_trailers_counts_nothing(memory: Path) -> None:
    """A hand-made commit that claims to be a run (no audit file, no Consumed/Events trailers)."""
    (memory / "audit" / "2026-11-29T00-00-00Z-beef.jsonl").mkdir(parents=True)  # a folder, not a file
    (memory / "audit" / "2026-11-29T00-00-00Z-beef.jsonl" / "x").write_text("{}\n", encoding="utf-8")
    git(memory, "add", "-A")
    git(memory, "commit", "-qm", "imported\n\nMemdream-Run: 2026-11-29T00-00-00Z-beef")
    git(memory, "commit", "-q", "--allow-empty", "-m", "imported too\n\nMemdream-Run: 2026-11-30T00-00-00Z-cafe")
    entries = json_of("log", "-m", memory)
    assert [entry["run"] for entry in entries] == ["2026-11-30T00-00-00Z-cafe", "2026-11-29T00-00-00Z-beef"]
    for entry in entries:
        assert entry["events"] is None and entry["segments"] is None
        assert set(entry["counts"].values()) == {0}
