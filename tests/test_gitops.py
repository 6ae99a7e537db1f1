"""gitops.commit with named files: the commit git's plumbing makes is the one `git commit -- files`
would make (message, tree, reflog), and it steps aside where it would not be."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from memdream import gitops
from memdream.errors import GitError
from tests.gitutil import git

MESSAGES = [
    "subject",
    "subject\n\nbody line   \n\n\n\nMemdream-Run: r1\n",
    "\n\n  subject with spaces  \t\n\n\tindented body\r\n\n",
    "subject\n\n# not a comment for -m\n\nKey: value  \nOther: x\n\n\n",
]


@pytest.mark.parametrize("message", MESSAGES)
def test_a_message_is_cleaned_as_git_commit_m_cleans_it(message: str) -> None:
    stripped = subprocess.run(["git", "stripspace"], input=message, capture_output=True, text=True, check=True)
    assert gitops.clean_message(message) == stripped.stdout


def write(root: Path, name: str, text: str) -> str:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text, encoding="utf-8")
    return name


def test_named_files_make_the_commit_git_commit_makes(memory: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    subprocess.run(["cp", "-a", str(memory), str(twin)], check=True)
    files = [write(root, "cards/facts/f-1.yaml", "a: 1\n") for root in (memory, twin)][0]
    message = gitops.format_message("subject  ", "body\n\n\n", {"Memdream-Run": "r1"})
    dates = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    made = gitops._commit_named(memory, message, [files], False, False, {**gitops.identity_env(memory), **dates})
    git(twin, "add", files)
    subprocess.run(["git", "-C", str(twin), "commit", "-q", "--no-verify", "-m", message, "--", files], check=True,
                   env={**os.environ, **gitops.identity_env(twin), **dates})
    assert made == git(twin, "rev-parse", "HEAD").strip()
    assert git(memory, "reflog", "-1", "--format=%gs") == git(twin, "reflog", "-1", "--format=%gs")
    assert git(memory, "status", "--porcelain") == ""


def test_a_post_commit_hook_still_runs(memory: Path) -> None:
    hook = memory / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\ntouch \"$(git rev-parse --git-dir)/hook-ran\"\n", encoding="utf-8")
    hook.chmod(0o755)
    name = write(memory, "cards/facts/f-1.yaml", "a: 1\n")
    sha = gitops.commit(memory, "add a card", paths=["cards"], files=[name])
    assert (memory / ".git" / "hook-ran").exists()
    assert sha == git(memory, "rev-parse", "HEAD").strip()
    assert git(memory, "show", "--name-only", "--format=", "HEAD").split() == [name]


def test_nothing_changed_is_refused_as_git_commit_refuses_it(memory: Path) -> None:
    with pytest.raises(GitError):
        gitops.commit(memory, "nothing", paths=["cards"], files=["plan.yaml"])


@pytest.mark.parametrize(("threshold", "by_plumbing"), [(1, True), (1 << 40, False)])
def test_the_plumbing_serves_a_large_index_and_git_commit_a_small_one(memory: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       threshold: int, by_plumbing: bool) -> None:
    """Seven plumbing processes beat `git add` + `git commit -- files` only where the index is large; both
    paths make the same commit of the named files."""
    calls: list[str] = []
    named = gitops._commit_named
    monkeypatch.setattr(gitops, "PLUMBING_INDEX_BYTES", threshold)
    monkeypatch.setattr(gitops, "_commit_named", lambda *args: calls.append("plumbing") or named(*args))
    name = write(memory, "cards/facts/f-1.yaml", "a: 1\n")
    sha = gitops.commit(memory, "add a card", paths=["cards"], files=[name])
    assert bool(calls) is by_plumbing
    assert sha == git(memory, "rev-parse", "HEAD").strip()
    assert git(memory, "show", "--name-only", "--format=", "HEAD").split() == [name]
    assert git(memory, "status", "--porcelain") == ""
