"""memdream rollback: undo a bad dream as a new commit, quarantine its events, dream them again on request.

Real processes on a real memory: two weeks of billing-api sessions (Claude Code and Codex
transcripts) dreamed in two batches, as cron would.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream.commands.init import init_memory
from tests.gitutil import git
from tests.killing import kill_before_commit
from tests.review.dream_history import bare_environment, bookkeeping_commit
from tests.transcripts import billing_api_project, chat_file

MEMORY_FILES = ("cards", "archive", "plan.yaml", "INDEX.md", "audit")


class Memdream:
    """The real command line, as a subprocess with cron's bare environment, on one memory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(self, *args: str | Path, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args), "--memory", str(self.root)],
                              capture_output=True, text=True, env=dict(os.environ), cwd=self.root.parent,
                              input=input)
        if check and done.returncode != 0:
            raise AssertionError(f"memdream {args[0]} exited {done.returncode}: {done.stderr}")
        return done

    def json(self, *args: str | Path) -> Any:
        return json.loads(self(*args, "--format", "json").stdout)


def files(root: Path) -> dict[str, bytes]:
    """Every memory file (not raw/, not local state) and its bytes."""
    found = {}
    for name in MEMORY_FILES:
        path = root / name
        items = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for item in items:
            found[item.relative_to(root).as_posix()] = item.read_bytes()
    return found


def active_cards(memdream: Memdream) -> dict[str, Any]:
    return {card["id"]: (card["status"], card.get("value"), card["statement"]) for card in memdream.json("cards")}


Dreamed = tuple[Path, dict[str, bytes], dict[str, bytes], list[str]]


@pytest.fixture(scope="module")
def dreamed_twice_once(tmp_path_factory: pytest.TempPathFactory) -> Dreamed:
    """Sessions 1-4 dreamed, then sessions 5-7 and a chat file: the memory, its files after each dream and
    the run ids. Built once for the module (two real ingests and dreams); each test gets a copy."""
    tmp_path = tmp_path_factory.mktemp("dreamed-twice")
    with bare_environment(tmp_path_factory):
        logs = billing_api_project(tmp_path / "logs", small=True)
        root = tmp_path / "mem"
        init_memory(root)
        memdream = Memdream(root)
        memdream("ingest", *logs[:4])
        first = memdream.json("dream")
        after_first = files(root)
        chat = chat_file(tmp_path / "chat.json", [  # a chat-completions file in the second batch too
            {"role": "user", "content": "The staging database listens on port 6543 now."},
            {"role": "assistant", "content": "Noted: staging database on port 6543."}])
        memdream("ingest", *logs[4:], chat)
        second = memdream.json("dream")
    assert second["counts"], "the second batch must change something for a rollback to undo"
    return root, after_first, files(root), [first["run"], second["run"]]


@pytest.fixture
def dreamed_twice(dreamed_twice_once: Dreamed, tmp_path: Path) -> tuple[Memdream, dict[str, bytes], dict[str, bytes],
                                                                         list[str]]:
    """A copy of :func:`dreamed_twice_once`'s memory (moved, as a user may move a memory folder)."""
    root, after_first, after_second, runs = dreamed_twice_once
    copy = tmp_path / "mem"
    shutil.copytree(root, copy, symlinks=True)
    return Memdream(copy), after_first, after_second, runs


def test_rollback_of_the_last_dream_restores_the_cards_byte_for_byte_and_keeps_history(dreamed_twice) -> None:
    memdream, after_first, after_second, runs = dreamed_twice
    before = git(memdream.root, "rev-list", "--count", "HEAD").strip()
    result = memdream.json("rollback")
    assert [item["run"] for item in result["undone"]] == [runs[1]] and result["events"] == "quarantined"
    assert files(memdream.root) == after_first
    # A new commit: the dream it undoes stays in the history, named in the trailers.
    assert int(git(memdream.root, "rev-list", "--count", "HEAD")) == int(before) + 1
    message = git(memdream.root, "log", "-1", "--format=%B")
    assert f"Memdream-Rollback: {runs[1]}" in message and f"Memdream-Quarantine: {runs[1]}" in message
    assert git(memdream.root, "status", "--porcelain") == ""
    # The last dream's diff says it was undone, and by which commit.
    assert memdream.json("diff")["rolled_back_by"] == result["commit"]
    assert any(item["run"] == runs[1] and item["rolled_back_by"] == result["commit"] for item in memdream.json("log"))


def test_recalls_without_new_events_make_no_commit_for_rollback_to_undo(dreamed_twice) -> None:
    """Issue 21.2: a dream after some recalls committed their counts alone, and rollback undid that."""
    memdream, after_first, after_second, runs = dreamed_twice
    statements = [card["statement"] for card in memdream.json("cards")]
    memdream("recall", "--queries", "-", input="\n".join(statements) + "\n")
    assert (memdream.root / ".memdream" / "usage.jsonl").read_text(encoding="utf-8").count('"cards":["') >= 1
    head = git(memdream.root, "rev-parse", "HEAD")
    report = memdream.json("dream")
    assert report["commit"] is None and report["changes"] == [] and report["events"] == 0
    assert git(memdream.root, "rev-parse", "HEAD") == head and files(memdream.root) == after_second
    assert [item["run"] for item in memdream.json("rollback")["undone"]] == [runs[1]]
    assert files(memdream.root) == after_first


def test_rollback_passes_over_an_older_versions_bookkeeping_dream(dreamed_twice) -> None:
    memdream, after_first, _, runs = dreamed_twice
    bookkeeping_commit(memdream.root)
    refused = memdream("rollback", "--run", runs[0], check=False)  # the bookkeeping run is no later dream
    assert refused.returncode == 1 and runs[1] in refused.stderr and "b00c" not in refused.stderr
    result = memdream.json("rollback")
    assert [item["run"] for item in result["undone"]] == [runs[1]]
    assert files(memdream.root) == after_first  # the counts went with the files of the dream before them


def test_the_next_dream_leaves_quarantined_events_alone_even_with_its_state_lost(dreamed_twice) -> None:
    memdream, after_first, _, _ = dreamed_twice
    memdream("rollback")
    head = git(memdream.root, "rev-parse", "HEAD")
    assert memdream.json("dream")["operations"] == []
    assert files(memdream.root) == after_first and git(memdream.root, "rev-parse", "HEAD") == head
    shutil.rmtree(memdream.root / ".memdream")  # a fresh clone: ledger and statistics rebuilt from git
    assert memdream.json("dream")["operations"] == []
    assert files(memdream.root) == after_first


def test_redream_applies_the_undone_events_again(dreamed_twice) -> None:
    memdream, _, after_second, runs = dreamed_twice
    memdream("rollback")
    memdream("dream")
    released = memdream.json("rollback", "--run", runs[1], "--redream")
    assert released["released_only"] is True
    again = memdream.json("dream")
    assert again["redreamed"] == [runs[1]] and again["counts"]
    cards = {path: data for path, data in files(memdream.root).items() if path.startswith(("cards/", "archive/"))}
    assert cards == {path: data for path, data in after_second.items() if path.startswith(("cards/", "archive/"))}
    assert f"Memdream-Redreamed: {runs[1]}" in git(memdream.root, "log", "-1", "--format=%B")


def test_rollback_with_redream_lets_the_next_dream_read_the_events_at_once(dreamed_twice) -> None:
    memdream, after_first, after_second, runs = dreamed_twice
    assert memdream.json("rollback", "--redream")["events"] == "redream"
    assert files(memdream.root) == after_first
    memdream("dream")
    assert {p: d for p, d in files(memdream.root).items() if p.startswith("cards/")} == \
        {p: d for p, d in after_second.items() if p.startswith("cards/")}


def test_a_run_that_later_dreams_built_on_needs_force_which_names_them(dreamed_twice) -> None:
    memdream, _, _, runs = dreamed_twice
    refused = memdream("rollback", "--run", runs[0], check=False)
    assert refused.returncode == 1 and runs[1] in refused.stderr and "--force" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    forced = memdream.json("rollback", "--run", runs[0], "--force")
    assert [item["run"] for item in forced["undone"]] == [runs[1], runs[0]]
    assert not list((memdream.root / "cards").rglob("*.yaml"))


def test_dry_run_changes_nothing(dreamed_twice) -> None:
    memdream, _, after_second, runs = dreamed_twice
    head = git(memdream.root, "rev-parse", "HEAD")
    result = memdream.json("rollback", "--dry-run")
    assert result["dry_run"] and result["commit"] is None and result["files"]
    assert files(memdream.root) == after_second and git(memdream.root, "rev-parse", "HEAD") == head
    assert memdream.json("rollback")["undone"][0]["run"] == runs[1]  # the dry run quarantined nothing either


def test_uncommitted_changes_refuse_but_ingest_bookkeeping_does_not(dreamed_twice, tmp_path: Path) -> None:
    memdream, _, after_second, _ = dreamed_twice
    card = next((memdream.root / "cards").rglob("*.yaml"))
    card.write_text(card.read_text() + "# a person's edit\n")
    refused = memdream("rollback", check=False)
    assert refused.returncode == 1 and "uncommitted changes" in refused.stderr
    git(memdream.root, "checkout", "--", ".")
    note = tmp_path / "note.jsonl"
    note.write_text(json.dumps({"session": "later", "ts": "2026-11-29T10:00:00Z", "kind": "note",
                                "text": "waiting for the next dream"}) + "\n")
    memdream("ingest", note)
    assert "raw/MANIFEST.jsonl" in git(memdream.root, "status", "--porcelain")
    memdream("rollback")
    assert "raw/MANIFEST.jsonl" in git(memdream.root, "status", "--porcelain")  # left for the next dream


def test_already_rolled_back_and_unknown_runs_are_one_line_errors(dreamed_twice) -> None:
    memdream, _, _, runs = dreamed_twice
    memdream("rollback")
    again = memdream("rollback", "--run", runs[1], check=False)
    assert again.returncode == 1 and "rolled back already" in again.stderr
    unknown = memdream("rollback", "--run", "1999-01-01", check=False)
    assert unknown.returncode == 1 and "no dream run" in unknown.stderr
    both = memdream("rollback", "--run", runs[1], "--to", "HEAD~1", check=False)
    assert both.returncode == 2


def test_rollback_to_a_revision_undoes_every_dream_after_it(dreamed_twice) -> None:
    memdream, _, _, runs = dreamed_twice
    init = git(memdream.root, "rev-list", "--max-parents=0", "HEAD").strip()
    result = memdream.json("rollback", "--to", init)
    assert [item["run"] for item in result["undone"]] == [runs[1], runs[0]]
    assert git(memdream.root, "diff", "--stat", init, "HEAD", "--", *MEMORY_FILES) == ""


def test_a_rollback_killed_before_its_commit_is_undone_by_the_next_writer(dreamed_twice, tmp_path: Path) -> None:
    memdream, _, after_second, runs = dreamed_twice
    kill_before_commit(["rollback", "--memory", str(memdream.root)], tmp_path / "paused")
    assert files(memdream.root) != after_second  # half done: the files are restored, nothing committed
    refused = memdream("cards", check=False)
    assert refused.returncode == 1 and "interrupted" in refused.stderr
    memdream("dream")  # the next writer puts the files back as HEAD has them
    assert files(memdream.root) == after_second
    assert memdream.json("rollback")["undone"][0]["run"] == runs[1]  # and the rollback can simply be run again


def test_a_clone_without_raw_events_keeps_released_events_waiting(dreamed_twice, tmp_path: Path) -> None:
    memdream, after_first, _, runs = dreamed_twice
    memdream("rollback", "--redream")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(memdream.root), str(clone)], check=True)
    cloned = Memdream(clone)
    report = cloned.json("dream")
    assert report["redreamed"] == [] and any("not here" in warning for warning in report["warnings"])
    assert files(clone) == after_first
    assert "Memdream-Redreamed" not in git(clone, "log", "-1", "--format=%B")


def test_rollback_to_a_commit_outside_the_history_is_a_usage_error(dreamed_twice) -> None:
    memdream, _, after_second, _ = dreamed_twice
    git(memdream.root, "checkout", "-q", "-b", "side", "HEAD~1")
    git(memdream.root, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    side = git(memdream.root, "rev-parse", "HEAD").strip()
    git(memdream.root, "checkout", "-q", "main")
    refused = memdream("rollback", "--to", side, check=False)
    assert refused.returncode == 2 and "not in the history of HEAD" in refused.stderr
    assert files(memdream.root) == after_second
