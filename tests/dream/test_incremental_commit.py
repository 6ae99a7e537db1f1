"""What an incremental dream commits, now that it names exactly the files it wrote or deleted, and
the card cache it leaves behind: real git memories, the CLI in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memdream.memory.cardcache import load_cards
from memdream.memory.store import Memory
from tests.dream.generator import write
from tests.gitutil import git

READING = {"session": "a", "ts": "2026-01-01T10:00:00Z", "kind": "tool_result", "id": "r1", "tool": "cat",
           "ok": True, "fact": {"subject": "api", "attribute": "owner", "value": "team-a"}}
CONFIRM = {"session": "a", "ts": "2026-01-01T10:01:00Z", "kind": "feedback", "id": "f1", "verdict": "confirm",
           "target": "r1"}


def one_card(memory: Path, tmp_path: Path, run, monkeypatch) -> Path:
    """A memory whose first dream made one fact card; its file."""
    monkeypatch.setenv("MEMDREAM_NOW", "2026-01-02T00:00:00Z")
    assert run("ingest", write(tmp_path / "a.jsonl", [READING, CONFIRM]), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    (card,) = (memory / "cards" / "facts").glob("*.yaml")
    return card


def test_the_dream_that_writes_a_card_leaves_the_cache_warm(memory: Path, tmp_path: Path, run,
                                                           monkeypatch) -> None:
    card = one_card(memory, tmp_path, run, monkeypatch)
    info = card.stat()
    card.write_bytes(b"\t" * info.st_size)  # same size and mtime: only the cache still knows the card
    os.utime(card, ns=(info.st_atime_ns, info.st_mtime_ns))
    (cached,) = load_cards(Memory(memory))
    assert (cached.card.subject, cached.card.value, cached.relpath) == ("api", "team-a",
                                                                        f"cards/facts/{card.name}")


def test_a_card_moved_to_the_archive_is_committed_as_a_move(memory: Path, tmp_path: Path, run,
                                                           monkeypatch) -> None:
    card = one_card(memory, tmp_path, run, monkeypatch)
    monkeypatch.setenv("MEMDREAM_NOW", "2026-05-01T00:00:00Z")  # > 90 days: demoted
    assert run("dream", "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-09-01T00:00:00Z")  # and again: archived
    report = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert [op["op"] for op in report["operations"]] == ["archive"]
    changed = git(memory, "show", "--name-status", "--no-renames", "--format=", "HEAD").splitlines()
    assert f"D\tcards/facts/{card.name}" in changed and f"A\tarchive/facts/{card.name}" in changed
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""
    assert [item.relpath for item in load_cards(Memory(memory))] == [f"archive/facts/{card.name}"]


def test_a_dirty_card_file_is_still_refused(memory: Path, tmp_path: Path, run, monkeypatch) -> None:
    card = one_card(memory, tmp_path, run, monkeypatch)
    card.write_text(card.read_text(encoding="utf-8").replace("team-a", "team-b"), encoding="utf-8")
    result = run("dream", "-m", memory)
    assert result.exit_code == 1
    assert result.stderr == (f"memdream: uncommitted changes in cards/facts/{card.name}: commit or stash them "
                             "before dreaming\n")
    git(memory, "checkout", "--", ".")
    (memory / "cards" / "facts" / "f-stray.yaml").write_text(card.read_text(encoding="utf-8"), encoding="utf-8")
    result = run("dream", "-m", memory)
    assert result.exit_code == 1 and "uncommitted changes in cards/facts/f-stray.yaml" in result.stderr


def test_what_a_person_staged_elsewhere_stays_out_of_the_dream_commit(memory: Path, tmp_path: Path, run,
                                                                     monkeypatch) -> None:
    (memory / "notes.md").write_text("my notes\n", encoding="utf-8")
    git(memory, "add", "notes.md")
    one_card(memory, tmp_path, run, monkeypatch)
    assert "notes.md" not in git(memory, "show", "--name-only", "--format=", "HEAD").split()
    assert git(memory, "diff", "--cached", "--name-only").split() == ["notes.md"]


def test_a_file_git_ignores_falls_back_to_committing_the_folders(memory: Path, tmp_path: Path, run,
                                                                 monkeypatch) -> None:
    with open(memory / ".gitignore", "a", encoding="utf-8") as handle:
        handle.write("audit/*.jsonl\n")  # the dream's audit file is then one git refuses to add by name
    git(memory, "commit", "-qam", "ignore audit")
    card = one_card(memory, tmp_path, run, monkeypatch)
    committed = git(memory, "show", "--name-only", "--format=", "HEAD").split()
    assert f"cards/facts/{card.name}" in committed and not any(path.startswith("audit/") for path in committed)
    assert git(memory, "status", "--porcelain") == ""
