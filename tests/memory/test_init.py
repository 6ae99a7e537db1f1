from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from memdream import gitops, yamlio
from memdream.commands.init import init_memory
from memdream.memory.store import Memory
from tests.gitutil import git


def test_init_creates_the_layout_and_one_commit_without_git_identity(tmp_path: Path, run) -> None:
    result = run("init", tmp_path / "m")
    root = tmp_path / "m"
    assert result.exit_code == 0, result.output
    for rel in ("memdream.yaml", "plan.yaml", "INDEX.md", ".gitignore", ".gitattributes",
                "cards/facts", "cards/strategies", "cards/lessons", "archive/facts", "audit", "raw", ".memdream"):
        assert (root / rel).exists(), rel
    assert git(root, "log", "--format=%an <%ae>|%s").splitlines() == ["memdream <memdream@localhost>|memdream init"]
    assert "Memdream-Version: " in git(root, "log", "-1", "--format=%B")
    assert git(root, "status", "--porcelain") == ""
    tracked = git(root, "ls-files").split()
    assert "memdream.yaml" in tracked and "cards/facts/.gitkeep" in tracked
    assert not any(path.startswith((".memdream", "raw/")) for path in tracked)


def test_init_configures_the_diff_driver(memory: Path) -> None:
    assert "diff=memdream" in (memory / ".gitattributes").read_text()
    driver = git(memory, "config", "--local", "diff.memdream.textconv").strip()
    # memdream from PATH when it is there (a clone needs one global setting), else this interpreter's
    assert driver == "memdream textconv" if shutil.which("memdream") else driver.endswith("-m memdream textconv")


def test_init_writes_a_valid_plan_and_documented_settings(memory: Path) -> None:
    mem = Memory(memory)
    plan = mem.load_plan()
    assert plan.goal == "" and plan.next == [] and plan.updated_at == "2026-11-30T12:00:00Z"
    assert "# memdream settings" in (memory / "memdream.yaml").read_text()
    assert mem.settings.get("recall.weights.relevance") == 0.45


def test_init_on_an_existing_memory_changes_nothing(memory: Path, run) -> None:
    head = gitops.resolve(memory)
    before = {p: p.read_bytes() for p in memory.rglob("*") if p.is_file() and ".git/" not in str(p)}
    result = run("init", memory)
    assert result.exit_code == 0
    assert "already a memory; nothing changed" in result.stdout
    assert gitops.resolve(memory) == head
    after = {p: p.read_bytes() for p in memory.rglob("*") if p.is_file() and ".git/" not in str(p)}
    assert after == before


def test_init_refuses_a_non_empty_folder(tmp_path: Path, run) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    result = run("init", tmp_path)
    assert result.exit_code == 2
    assert result.stderr.startswith("memdream: ") and "not empty" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_textconv_hides_formatting_only_changes_in_git_diff(memory: Path, write_card) -> None:
    path = write_card()
    gitops.commit(memory, "add card")
    data = yamlio.loads(path.read_text())
    # Same content, other key order and quoting: only formatting changed.
    reordered = "\n".join(f"{key}: {yamlio.dumps(value).strip()}" if not isinstance(value, list)
                          else f"{key}:\n" + yamlio.dumps(value) for key, value in reversed(list(data.items())))
    path.write_text(reordered + "\n")
    assert git(memory, "diff", "--stat") != ""  # the bytes changed
    assert git(memory, "diff") == ""  # but through the driver nothing did
    path.write_text(path.read_text().replace("eu-central-1", "us-east-1"))
    assert "+value: us-east-1" in git(memory, "diff")


def test_init_inside_a_git_repository_makes_a_nested_memory(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    result = init_memory(tmp_path / "memory")
    assert result.created and (tmp_path / "memory" / ".git").is_dir()


def test_the_diff_driver_is_memdream_from_path_when_it_is_there(tmp_path: Path, monkeypatch) -> None:
    """A clone (or the same memory on another machine) then diffs with one global setting:
    git config --global diff.memdream.textconv "memdream textconv"."""
    tools = tmp_path / "bin"
    tools.mkdir()
    script = tools / "memdream"
    script.write_text(f"#!/bin/sh\nexec {shutil.which('python3') or 'python3'} -m memdream \"$@\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    root = tmp_path / "m"
    init_memory(root)
    assert git(root, "config", "--local", "diff.memdream.textconv").strip() == "memdream textconv"
