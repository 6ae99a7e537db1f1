"""A memory inside a project repository (`memdream init --in-repo`): a folder the project tracks,
staged by memdream and committed by the user; raw events stay ignored; never a commit on the
user's branch unless asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gitutil import git
from tests.transcripts import billing_api_project


def memdream(cwd: Path, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ))
    if check and done.returncode != 0:
        raise AssertionError(f"memdream {args[0]} exited {done.returncode}: {done.stderr}")
    return done


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project repository with one commit of its own and a file the user has staged."""
    root = tmp_path / "billing-api"
    root.mkdir()
    git(root, "init", "-q")
    (root / "app.py").write_text("print('billing')\n")
    git(root, "add", "app.py")
    git(root, "commit", "-q", "-m", "the project")
    (root / "work.py").write_text("# the user's own change\n")
    git(root, "add", "work.py")
    return root


def commits(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def staged(root: Path) -> list[str]:
    return git(root, "diff", "--cached", "--name-only").splitlines()


def test_a_memory_in_a_project_works_end_to_end_from_the_project_root(project: Path, tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    made = memdream(project, "init", "memory", "--in-repo")
    assert "staged, not committed" in made.stdout
    assert not (project / "memory" / ".git").exists()
    assert "memory/memdream.yaml" in staged(project) and commits(project) == ["the project"]

    memdream(project, "ingest", *logs, "--memory", "memory")
    dreamed = memdream(project, "dream", "--memory", "memory", "--format", "json")
    report = json.loads(dreamed.stdout)
    assert report["commit"] is None and Path(report["staged_in"]).resolve() == project.resolve()
    assert commits(project) == ["the project"]
    names = staged(project)
    assert any(name.startswith("memory/cards/") for name in names)
    assert "memory/raw/MANIFEST.jsonl" in names
    assert not any(name.startswith(("memory/raw/segments", "memory/.memdream")) for name in names)
    assert "work.py" in names  # the user's own staged work is left as it was

    linted = memdream(project, "lint", "memory")
    assert linted.returncode == 0, linted.stdout + linted.stderr

    # What the last dream staged is no obstacle to the next one; only a person's unstaged edit is.
    assert memdream(project, "dream", "--memory", "memory").returncode == 0
    card = next((project / "memory" / "cards").rglob("*.yaml"))
    card.write_text(card.read_text() + "# edited by hand\n")
    refused = memdream(project, "dream", "--memory", "memory", check=False)
    assert refused.returncode == 1 and "unstaged changes" in refused.stderr


def test_init_commit_commits_only_the_memory_folder(project: Path) -> None:
    memdream(project, "init", "memory", "--in-repo", "--commit")
    assert commits(project) == ["memdream init", "the project"]
    assert all(name.startswith("memory/") for name in git(project, "show", "--name-only", "--format=", "HEAD").split())
    assert staged(project) == ["work.py"]  # still staged, not swept into memdream's commit


def test_rollback_refuses_in_a_project_repository(project: Path) -> None:
    memdream(project, "init", "memory", "--in-repo")
    refused = memdream(project, "rollback", "--memory", "memory", check=False)
    assert refused.returncode == 1 and "undo a dream with git" in refused.stderr


def test_in_repo_outside_any_repository_is_a_usage_error(tmp_path: Path) -> None:
    refused = memdream(tmp_path, "init", "memory", "--in-repo", check=False)
    assert refused.returncode == 2 and "not inside a git repository" in refused.stderr
    assert not (tmp_path / "memory").exists()


def test_a_standalone_memory_inside_a_project_is_named_as_such(project: Path) -> None:
    made = memdream(project, "init", "memory")
    assert (project / "memory" / ".git").is_dir()
    assert "embedded repository" in made.stdout and "--in-repo" in made.stdout


def test_dream_commit_commits_only_the_memory_paths(project: Path, tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    memdream(project, "init", "memory", "--in-repo", "--commit")
    memdream(project, "ingest", *logs[:3], "--memory", "memory")
    memdream(project, "dream", "--memory", "memory", "--commit")
    assert commits(project)[0].startswith("memdream dream: ")
    changed = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert changed and all(name.startswith("memory/") for name in changed)
    assert "memory/raw/MANIFEST.jsonl" in changed
    assert staged(project) == ["work.py"]


def test_review_commands_read_the_memory_folder_of_the_project(project: Path, tmp_path: Path) -> None:
    """log, diff and audit --verify work on the memory's paths inside the project's history; dream
    output that a person committed (no trailers) is accepted with the run's audit file."""
    logs = billing_api_project(tmp_path / "logs", small=True)
    memdream(project, "init", "memory", "--in-repo")
    memdream(project, "ingest", *logs[:3], "--memory", "memory")
    memdream(project, "dream", "--memory", "memory")
    git(project, "commit", "-q", "-m", "memory: first dream")  # the person commits what dream staged
    verified = memdream(project, "audit", "--verify", "--memory", "memory", check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    memdream(project, "ingest", *logs[3:], "--memory", "memory")
    memdream(project, "dream", "--memory", "memory", "--commit")
    logged = json.loads(memdream(project, "log", "--memory", "memory", "--format", "json").stdout)
    assert logged and logged[0]["kind"] == "dream"
    changed = json.loads(memdream(project, "diff", "--memory", "memory", "--format", "json").stdout)
    assert any(changed[section] for section in ("added", "superseded", "changed", "archived"))
