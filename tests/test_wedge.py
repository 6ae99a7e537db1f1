"""A killed or failing run never wedges the memory: stale git locks, interrupted dreams, a full disk,
a read-only memory, git missing. Real git, real subprocesses, a real kill -9."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from memdream import gitops
from memdream.commands.init import init_memory
from memdream.errors import Busy, GitError
from memdream.memory import cardcache, locate
from memdream.memory.journal import journal_path
from memdream.memory.lock import index_lock, writer_lock
from tests.dream.generator import build, write
from tests.gitutil import git
from tests.killing import kill_before_commit

PENDING = "memdream: an interrupted dream is pending; run `memdream dream` to recover\n"


def memdream(*args: str | os.PathLike[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdream", *map(os.fspath, args)], capture_output=True,
                          text=True, env={**os.environ, **env}, timeout=120)


@pytest.fixture
def ingested(memory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    done = memdream("ingest", write(tmp_path / "agent.jsonl", build()), "-m", memory)
    assert done.returncode == 0, done.stderr
    return memory


def stale_index_lock(root: Path, age: float = 60.0) -> Path:
    """An index.lock as a kill -9 during `git add` leaves it, ``age`` seconds old."""
    lock = root / ".git" / "index.lock"
    lock.write_bytes(b"")
    os.utime(lock, (time.time() - age, time.time() - age))
    return lock


# -- a stale .git/index.lock ------------------------------------------------------------------------
def commit_each_ingest(memory: Path) -> None:
    """`ingest.commit: each`: the ingest itself commits (by default the next dream does)."""
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("commit: with-dream", "commit: each"),
                      encoding="utf-8")
    git(memory, "commit", "-q", "-am", "ingest commits each run")


def test_ingest_removes_a_stale_index_lock_reports_it_and_commits(memory: Path, tmp_path: Path) -> None:
    commit_each_ingest(memory)
    lock = stale_index_lock(memory)
    head = git(memory, "rev-parse", "HEAD")
    done = memdream("ingest", write(tmp_path / "agent.jsonl", build(sessions=1)), "-m", memory)
    assert done.returncode == 0, done.stderr
    assert f"memdream: warning: removed a stale {lock}" in done.stderr
    assert not lock.exists()
    assert git(memory, "rev-parse", "HEAD") != head
    assert "memdream ingest" in git(memory, "log", "-1", "--format=%s")


def test_dream_removes_a_stale_index_lock_reports_it_and_commits(ingested: Path) -> None:
    lock = stale_index_lock(ingested)
    head = git(ingested, "rev-parse", "HEAD")
    done = memdream("dream", "-m", ingested)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and "removed a stale" in done.stderr
    assert not lock.exists()
    assert git(ingested, "rev-parse", "HEAD") != head and git(ingested, "status", "--porcelain") == ""


def test_a_fresh_index_lock_is_waited_for_before_it_counts_as_stale(memory: Path, tmp_path: Path) -> None:
    commit_each_ingest(memory)
    lock = stale_index_lock(memory, age=0)
    started = time.monotonic()
    done = memdream("ingest", write(tmp_path / "agent.jsonl", build(sessions=1)), "-m", memory,
                    MEMDREAM_LOCK_WAIT="0")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started >= gitops.STALE_INDEX_LOCK - 0.5  # a live `git add` gets its time
    assert "removed a stale" in done.stderr and not lock.exists()


def test_a_lock_that_goes_away_is_simply_waited_for(memory: Path) -> None:
    lock = stale_index_lock(memory, age=0)
    remover = subprocess.Popen([sys.executable, "-c", f"import os, time; time.sleep(1); os.remove({str(lock)!r})"])
    try:
        with writer_lock(memory / ".memdream"):
            gitops.settle_index_lock(memory, index_lock(memory / ".memdream"))
    finally:
        remover.wait()
    assert not lock.exists()


def test_without_memdreams_writer_lock_an_index_lock_is_never_removed(memory: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", "0.3")
    lock = stale_index_lock(memory)
    with pytest.raises(Busy) as raised:
        gitops.commit(memory, "by hand", allow_empty=True, index_lock=index_lock(memory / ".memdream"))
    assert str(raised.value) == f"git is busy: {lock} exists; remove {lock} if no git process is running"
    assert lock.exists()


def test_in_a_project_repository_the_lock_is_the_users_never_removed(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", "0.3")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    inside = project / "memory"
    inside.mkdir()
    lock = stale_index_lock(project)
    with writer_lock(inside / ".memdream"), pytest.raises(Busy) as raised:
        gitops.settle_index_lock(inside, index_lock(inside / ".memdream"))
    assert "if no git process is running" in str(raised.value) and str(lock) in str(raised.value)
    assert lock.exists()


# -- an interrupted dream ---------------------------------------------------------------------------
def kill_dream_before_its_commit(root: Path, marker: Path) -> None:
    """Start a dream and kill -9 it between the file swap and the commit (a test hook pauses it there)."""
    kill_before_commit(["dream", "-m", str(root)], marker)


def test_readers_refuse_a_memory_with_an_interrupted_dream_until_dream_recovers(ingested: Path, tmp_path: Path,
                                                                                run) -> None:
    """kill -9 between the file swap and the commit, then every reader says what to do."""
    head = git(ingested, "rev-parse", "HEAD")
    kill_dream_before_its_commit(ingested, tmp_path / "paused")
    assert journal_path(ingested).exists() and git(ingested, "rev-parse", "HEAD") == head
    assert git(ingested, "status", "--porcelain")  # half-written tracked files
    for args in (["lint", ingested], ["lint", "-m", ingested, "-f", "json"], ["recall", "deploy", "-m", ingested],
                 ["cards", "-m", ingested], ["show", "f-anything", "-m", ingested],
                 ["dream", "--dry-run", "-m", ingested]):  # a dry run cannot recover: it must not read either
        done = memdream(*args)
        assert (done.returncode, done.stderr, done.stdout) == (1, PENDING, ""), args
    typer_recall = run("recall", "deploy", "-m", ingested)  # in-process: the same command line
    assert (typer_recall.exit_code, typer_recall.stderr) == (1, PENDING)

    done = memdream("dream", "-m", ingested)
    assert done.returncode == 0, done.stderr
    assert not journal_path(ingested).exists()
    assert memdream("lint", ingested).returncode == 0
    assert memdream("recall", "deploy", "-m", ingested).returncode == 0
    assert memdream("cards", "-m", ingested).returncode == 0


def test_recovery_gets_past_a_stale_index_lock_too(ingested: Path, tmp_path: Path) -> None:
    """A kill -9 mid-dream and a git killed mid-commit: the next dream restores, commits, reports."""
    head = git(ingested, "rev-parse", "HEAD")
    kill_dream_before_its_commit(ingested, tmp_path / "paused")
    lock = stale_index_lock(ingested)
    done = memdream("dream", "-m", ingested)
    assert done.returncode == 0, done.stderr
    assert "removed a stale" in done.stderr and "recovered from an interrupted dream" in done.stdout
    assert not lock.exists() and not journal_path(ingested).exists()
    assert git(ingested, "rev-parse", "HEAD") != head and git(ingested, "status", "--porcelain") == ""


def test_a_writers_journal_is_what_readers_check(memory: Path) -> None:
    from memdream.errors import InterruptedDream
    from memdream.memory import journal

    written = journal.begin(memory, "run-1")
    assert written == journal_path(memory) and journal.dream_pending(memory)
    with pytest.raises(InterruptedDream):
        journal.require_settled(memory)
    journal.end(memory)
    journal.require_settled(memory)


# -- a full disk, a read-only memory ----------------------------------------------------------------
def test_a_full_disk_during_a_dream_is_one_line(ingested: Path, run, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdream import yamlio

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(yamlio, "write_atomic", full)
    result = run("dream", "-m", ingested)
    assert result.exit_code == 1
    assert result.stderr.startswith("memdream: no space left on device while writing ")
    assert result.stderr.count("\n") == 1 and "internal error" not in result.stderr


@pytest.mark.parametrize(("code", "said"), [
    (errno.ENOSPC, "no space left on device while writing /m/raw/x"),
    (errno.EDQUOT, "no space left on device while writing /m/raw/x"),
    (errno.EROFS, "the memory is read-only: cannot write /m/raw/x (read-only file system)"),
    (errno.EACCES, "permission denied: /m/raw/x"),
])
def test_the_command_line_maps_disk_errors_to_one_line(code: int, said: str, run,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(explicit: Path | None, tenant: str | None = None) -> Path:
        raise OSError(code, os.strerror(code), "/m/raw/x")

    monkeypatch.setattr(locate, "find_memory_root", unreadable)
    result = run("cards")
    assert (result.exit_code, result.stderr) == (1, f"memdream: {said}\n")


def test_an_unexpected_os_error_is_still_an_internal_error(run, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(explicit: Path | None, tenant: str | None = None) -> Path:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(locate, "find_memory_root", unreadable)
    result = run("recall", "deploy")
    assert result.exit_code == 1 and result.stderr.startswith("memdream: internal error: OSError")


def _as_another_user() -> list[str]:
    """Root ignores file permissions: as root (CI), run the commands as nobody instead."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file permissions cannot be tested")
    return ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]


def test_a_read_only_memory_answers_readers_and_refuses_writers(ingested: Path, tmp_path: Path) -> None:
    prefix = _as_another_user()
    assert memdream("dream", "-m", ingested).returncode == 0
    place = Path(tempfile.mkdtemp(prefix="memdream-ro-"))  # outside pytest's 0700 folders: nobody can enter
    try:
        shutil.copytree(ingested, place / "mem", symlinks=True)
        write(place / "more.jsonl", build(1))
        subprocess.run(["chmod", "-R", "a-w,a+rX", str(place)], check=True)
        env = {**os.environ, "HOME": str(place)}

        def as_reader(*args: str | Path) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*prefix, sys.executable, "-m", "memdream", *map(os.fspath, args)],
                                  capture_output=True, text=True, env=env, timeout=120)

        recalled = as_reader("recall", "deploy", "-m", place / "mem")
        assert recalled.returncode == 0 and recalled.stderr == "" and recalled.stdout
        listed = as_reader("cards", "-m", place / "mem")
        assert listed.returncode == 0 and listed.stderr == ""
        for args in (["dream", "-m", place / "mem"], ["ingest", place / "more.jsonl", "-m", place / "mem"]):
            done = as_reader(*args)
            assert done.returncode == 1 and done.stderr.count("\n") == 1, (args, done.stderr)
            assert done.stderr.startswith("memdream: the memory is read-only"), (args, done.stderr)
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(place)], check=True)
        shutil.rmtree(place, ignore_errors=True)


def test_recall_and_cards_work_when_their_cache_cannot_be_written(ingested: Path) -> None:
    """Even as root: .memdream/cache is a file, so nothing can be created under it."""
    assert memdream("dream", "-m", ingested).returncode == 0
    cache = ingested / ".memdream" / "cache"
    subprocess.run(["rm", "-rf", str(cache)], check=True)
    cache.write_text("not a folder")
    recalled = memdream("recall", "deploy", "-m", ingested)
    assert recalled.returncode == 0 and recalled.stderr == "" and recalled.stdout
    listed = memdream("cards", "-m", ingested, "-f", "json")
    assert listed.returncode == 0 and listed.stderr == "" and listed.stdout.startswith("[")
    assert cache.read_text() == "not a folder"


def test_the_card_cache_skips_an_unwritable_place(memory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = memory / ".memdream" / "blocker"
    blocker.write_text("")
    cardcache._save(blocker / "cards.pickle", {})  # mkdir under a file fails: no error, no cache
    assert blocker.read_text() == ""

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cardcache.pickle, "dump", full)
    target = memory / ".memdream" / "cache" / "cards.pickle"
    cardcache._save(target, {})
    assert not target.exists() and not list(target.parent.glob("*.tmp"))


# -- init without git -------------------------------------------------------------------------------
def test_init_without_git_says_so_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "new" / "mem"
    done = memdream("init", target, PATH=str(tmp_path / "no-bin"))
    assert done.returncode == 1
    assert done.stderr == ("memdream: git is not installed (not found on PATH): install git, then run "
                           "`memdream init` again\n")
    assert not (tmp_path / "new").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert memdream("init", empty, PATH=str(tmp_path / "no-bin")).returncode == 1
    assert empty.is_dir() and list(empty.iterdir()) == []


def test_a_failed_init_removes_what_it_created_but_not_a_folder_that_was_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> str:
        raise GitError("git commit failed: simulated")

    monkeypatch.setattr(gitops, "commit", broken)
    with pytest.raises(GitError):
        init_memory(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(GitError):
        init_memory(existing)
    assert existing.is_dir() and list(existing.iterdir()) == []
    monkeypatch.undo()
    assert init_memory(existing).created  # and init can simply run again
    assert (existing / ".git").is_dir() and git(existing, "log", "--format=%s") == "memdream init\n"


@pytest.mark.parametrize(("detail", "said"), [
    ("fatal: Unable to create '/m/.git/index.lock': No space left on device", "no space left on device while writing"),
    ("fatal: Unable to create '/m/.git/index.lock': Read-only file system", "the memory is read-only: git add"),
    ("fatal: Unable to create '/m/.git/index.lock': Permission denied", "the memory is read-only: git add"),
    ("error: open(\"notes.txt\"): Permission denied", "git add failed: error: open"),
])
def test_git_failures_of_a_full_disk_or_a_read_only_memory_say_so(detail: str, said: str) -> None:
    assert str(gitops._git_failure(Path("/m"), "add", detail)).startswith(said)
