"""The only module that talks to git. Everything else asks it for commits, status and history.

memdream runs from cron with a bare environment: no git identity, maybe no HOME. Commits
therefore carry an explicit fallback identity when none is configured.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from memdream.errors import Busy, DiskFull, GitError, MemdreamError, ReadOnlyMemory
from memdream.memory.lock import holds_writer_lock, lock_wait_seconds
from memdream.memory.paths import STATE_DIR

FALLBACK_NAME = "memdream"
FALLBACK_EMAIL = "memdream@localhost"
INDEX_LOCK_WAIT = 10.0  # seconds to wait for a git process's index.lock (MEMDREAM_LOCK_WAIT overrides)
# An index.lock at least this old, in a memory's own repository while this process holds memdream's
# writer lock, was left by a killed git (a commit takes milliseconds): it is removed.
STALE_INDEX_LOCK = 5.0
# git matches every index entry against every named path: 3,000 names in a 10,000-file index cost
# more than naming the folders (measured: 3.5 s against 1.9 s); 69 names cost half of it.
NAMED_FILES = 200


def _run(root: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None) -> str:
    """Run one git command in ``root``; its output without the final newline.

    A plain subprocess, as GitPython's ``execute`` would run it (C locale, no prompt), without
    importing GitPython: every ingest and dream makes a few of these calls, and the import alone
    costs ~100 ms.
    """
    if not is_repo(root):
        raise GitError(f"{root} is not a git repository")
    environment = {**os.environ, **dict(env or {}), "LANGUAGE": "C", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    try:
        if stdin is None:
            done = subprocess.run(["git", *args], cwd=root, env=environment, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL)
        else:
            done = subprocess.run(["git", *args], cwd=root, env=environment, capture_output=True, text=True,
                                  input=stdin)
    except OSError as error:
        raise GitError(f"git {args[0]} failed: {error.strerror or error}") from None
    if done.returncode != 0:
        detail = " ".join((done.stderr or done.stdout or f"exit status {done.returncode}").split())
        raise _git_failure(root, args[0], detail)
    return done.stdout.removesuffix("\n")


def _git_failure(root: Path, command: str, detail: str) -> MemdreamError:
    """A failed git command as one line; a full disk or a read-only memory said as such."""
    if "No space left on device" in detail or "Disk quota exceeded" in detail:
        return DiskFull(f"no space left on device while writing {root} (git {command}: {detail})")
    if "Read-only file system" in detail or ("Permission denied" in detail and "Unable to create" in detail):
        return ReadOnlyMemory(f"the memory is read-only: git {command} cannot write in {root} ({detail})")
    return GitError(f"git {command} failed: {detail}")


def is_repo(root: Path) -> bool:
    """Whether git keeps the memory at ``root``: its own repository, or a project's (in_project)."""
    return (root / ".git").exists() or in_project(root)


def in_project(root: Path) -> bool:
    """Whether the memory at ``root`` is a folder tracked by an enclosing project repository
    (`memdream init --in-repo`) rather than a repository of its own. There memdream stages what
    it writes and commits only when asked: the branch is the user's."""
    return not (root / ".git").exists() and project_top(root) is not None


def project_top(root: Path) -> str | None:
    """The top folder of the repository that encloses ``root`` (None outside any)."""
    return _toplevel(str(Path(root).absolute()))


_TOPLEVELS: dict[str, str] = {}  # only found tops are kept: a folder may become a memory later


def _toplevel(folder: str) -> str | None:
    if folder in _TOPLEVELS:
        return _TOPLEVELS[folder]
    if not os.path.isdir(folder):
        return None
    found = query(folder, "rev-parse", "--show-toplevel")
    if found is not None:
        _TOPLEVELS[folder] = found
    return found


def init_repo(root: Path) -> None:
    import git

    try:
        git.Repo.init(root, initial_branch="main")
    except TypeError:  # very old git: no --initial-branch
        git.Repo.init(root)
    except git.GitCommandError as error:
        raise GitError(f"git init failed: {' '.join(str(error).split())}") from None


def set_local_config(root: Path, key: str, value: str) -> None:
    _run(root, "config", "--local", key, value)


def identity_env(root: Path) -> dict[str, str]:
    """Author/committer variables to add when git has no identity configured for this repo."""
    env: dict[str, str] = {}
    configured: set[str] | None = None  # asked once, and only when the environment lacks a name
    for role in ("AUTHOR", "COMMITTER"):
        if os.environ.get(f"GIT_{role}_NAME") and os.environ.get(f"GIT_{role}_EMAIL"):
            continue
        if configured is None:
            configured = _configured_identity(root)
        if "user.name" not in configured:
            env[f"GIT_{role}_NAME"] = FALLBACK_NAME
        if "user.email" not in configured:
            env[f"GIT_{role}_EMAIL"] = FALLBACK_EMAIL
    return env


def _configured_identity(root: Path) -> set[str]:
    """Which of user.name and user.email git has a non-empty value for (the last one set wins)."""
    try:
        output = _run(root, "config", "--get-regexp", r"^user\.(name|email)$")
    except GitError:  # exit status 1: neither is set
        return set()
    values: dict[str, str] = {}
    for line in output.splitlines():
        key, _, value = line.partition(" ")
        values[key] = value
    return {key for key, value in values.items() if value.strip()}


Trailers = Mapping[str, str] | Sequence[tuple[str, str]]


def format_message(subject: str, body: str = "", trailers: Trailers | None = None) -> str:
    """A commit message; ``trailers`` as a mapping, or as (key, value) pairs when a key repeats."""
    parts = [subject.strip()]
    if body.strip():
        parts.append(body.strip())
    if trailers:
        pairs = trailers.items() if isinstance(trailers, Mapping) else trailers
        parts.append("\n".join(f"{key}: {value}" for key, value in pairs))
    return "\n\n".join(parts) + "\n"


def commit(
    root: Path,
    subject: str,
    body: str = "",
    trailers: Trailers | None = None,
    paths: Sequence[str] = (".",),
    allow_empty: bool = False,
    force: bool = False,
    files: Sequence[str] = (),
) -> str:
    """Stage ``paths`` (honouring .gitignore unless ``force``) and commit; returns the new commit's sha.

    ``files``: every file under ``paths`` the caller wrote or deleted, when it knows them; up to
    :data:`NAMED_FILES` of them, only those are staged and committed. In a memory of ten thousand
    cards, naming folders makes git compare every card file to the index twice; naming the files
    costs what changed. Should git refuse the list (a path it ignores, a git before 2.25), the
    folders are named after all.
    """
    settle_index_lock(root)
    args = ["commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", format_message(subject, body, trailers)]
    if allow_empty:
        args.append("--allow-empty")
    identity = identity_env(root)
    if files and len(files) <= NAMED_FILES:
        try:
            _commit_files(root, args, files, force, identity)
            return head_sha(root)
        except (DiskFull, ReadOnlyMemory):
            raise
        except GitError:
            pass
    _run(root, "add", "--all", *(["--force"] if force else []), "--", *paths)
    # Naming the paths again commits only them, never something else a person had staged.
    _run(root, *args, "--", *paths, env=identity)
    return head_sha(root)


def _commit_files(root: Path, args: list[str], files: Sequence[str], force: bool, identity: Mapping[str, str]) -> None:
    """Stage and commit exactly ``files`` (a deleted one stages its removal), named as literal
    paths on stdin: a card file's name is never read as a glob, and no list is too long."""
    listed = "\0".join(files) + "\0"
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    from_stdin = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    _run(root, "add", "--all", *(["--force"] if force else []), *from_stdin, env=literal, stdin=listed)
    _run(root, *args, *from_stdin, env={**identity, **literal}, stdin=listed)


def head_sha(root: Path) -> str:
    return _run(root, "rev-parse", "HEAD").strip()


def head_or_none(root: Path) -> str | None:
    """The sha of HEAD; None when the repository has no commit (or there is none)."""
    if not is_repo(root):
        return None
    try:
        return head_sha(root)
    except GitError:
        return None


def status_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Paths with uncommitted changes (tracked or untracked, not ignored)."""
    output = _run(root, "status", "--porcelain", "--untracked-files=all", "--", *pathspecs)
    return [line[3:] for line in output.splitlines() if line.strip()]


def stage(root: Path, paths: Sequence[str], force: bool = False) -> None:
    """Stage every change under ``paths`` (``force``: files .gitignore names too) for the next commit."""
    settle_index_lock(root)
    _run(root, "add", "--all", *(["--force"] if force else []), "--", *paths)


def staged_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Paths whose staged version differs from HEAD (what the next commit of them would hold)."""
    output = _run(root, "diff", "--cached", "--name-only", "--no-renames", "--relative", "--", *pathspecs)
    return [line for line in output.splitlines() if line.strip()]


def show_file(root: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` at ``rev``; None when it did not exist there (or there is no commit)."""
    try:
        return _run(root, "show", f"{rev}:{path}") + "\n"
    except GitError:
        return None


def last_message_matching(root: Path, pattern: str) -> str | None:
    """The full message of the newest commit whose message matches ``pattern`` (a regex), if any."""
    try:
        output = _run(root, "log", "-1", "--extended-regexp", f"--grep={pattern}", "--format=%B")
    except GitError:  # no commits yet
        return None
    return output or None


def trailer_history(root: Path, since: str | None = None) -> list[dict[str, list[str]]] | None:
    """The trailers of every commit that has memdream trailers, oldest first (first-parent line);
    ``since``: only of the commits after that one (None when it is not an ancestor of HEAD)."""
    if since is not None:
        try:
            _run(root, "merge-base", "--is-ancestor", since, "HEAD")
        except GitError:
            return None
    span = [f"{since}..HEAD"] if since is not None else []
    try:
        output = _run(root, "log", "--reverse", "--first-parent", "--format=%x1e%(trailers:only,unfold)", *span)
    except GitError:  # no commits yet
        return []
    found = []
    for block in output.split("\x1e"):
        trailers: dict[str, list[str]] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(": ")
            if sep and key.startswith("Memdream-"):
                trailers.setdefault(key, []).append(value.strip())
        if trailers:
            found.append(trailers)
    return found


def restore_from(root: Path, rev: str, paths: Sequence[str]) -> None:
    """Make ``paths`` (index and working tree) what they were at ``rev``: files added since are
    removed, files changed or deleted since come back byte for byte."""
    settle_index_lock(root)
    added = _run(root, "diff", "--name-only", "--no-renames", "--diff-filter=A", rev, "HEAD", "--", *paths)
    if added.strip():
        _run(root, "rm", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", env={"GIT_LITERAL_PATHSPECS": "1"},
             stdin="\0".join(added.splitlines()) + "\0")
    at_rev = [path for path in paths if _exists_at(root, rev, path)]
    if at_rev:
        _run(root, "checkout", rev, "--", *at_rev)


def _exists_at(root: Path, rev: str, path: str) -> bool:
    try:
        _run(root, "cat-file", "-e", f"{rev}:{path}")
    except GitError:
        return False
    return True


def restore_paths(root: Path, paths: Sequence[str]) -> None:
    """Put ``paths`` back as HEAD has them and delete untracked files under them (crash recovery).
    In a project's repository, as the index has them: a dream there stages, the user commits."""
    existing = [path for path in paths if (root / path).exists() or _tracked(root, path)]
    if existing:
        settle_index_lock(root)
        staged = [path for path in existing if _tracked(root, path)] if in_project(root) else []
        if staged:
            _run(root, "checkout", "--", *staged)
        elif not in_project(root):
            _run(root, "reset", "-q", "HEAD", "--", *existing)  # files staged since HEAD become untracked
            _run(root, "checkout", "HEAD", "--", *existing)
        _run(root, "clean", "-fdq", "--", *existing)


def unstaged_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Paths whose working file differs from the index, or untracked and not ignored: in a
    project's repository, what a person changed that memdream has not staged."""
    changed = _run(root, "diff", "--name-only", "--relative", "--", *pathspecs).splitlines()
    untracked = _run(root, "ls-files", "--others", "--exclude-standard", "--", *pathspecs).splitlines()
    return [path for path in [*changed, *untracked] if path.strip()]


def _tracked(root: Path, path: str) -> bool:
    return bool(_run(root, "ls-files", "--", path).strip())


def settle_index_lock(root: Path) -> None:
    """Make sure git can take its index lock before memdream writes the index.

    A kill -9 during ``git add`` / ``git commit`` leaves ``.git/index.lock`` and every later git
    write fails. In a memory's own repository (``<root>/.git`` is its git folder) while this process
    holds memdream's writer lock, no other memdream writer runs, so a lock that has not gone away
    after :data:`STALE_INDEX_LOCK` seconds is removed (with a warning on stderr). In a repository
    the memory only lives inside (a project's), the lock may be the user's or their editor's: it is
    waited for and never removed.
    """
    own = root / ".git"
    if own.is_dir():
        lock, removable = own / "index.lock", holds_writer_lock(root / STATE_DIR)
    else:
        git_dir = query(str(root), "rev-parse", "--absolute-git-dir")
        if git_dir is None:
            return
        lock, removable = Path(git_dir) / "index.lock", False
    wait = lock_wait_seconds(INDEX_LOCK_WAIT)
    deadline = time.monotonic() + (max(wait, STALE_INDEX_LOCK + 1.0) if removable else wait)
    while True:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return
        if removable and age >= STALE_INDEX_LOCK:
            _remove_stale(lock, age)
            return
        if time.monotonic() >= deadline:
            raise Busy(f"git is busy: {lock} exists; remove {lock} if no git process is running")
        time.sleep(0.1)


def _remove_stale(lock: Path, age: float) -> None:
    try:
        lock.unlink()
    except FileNotFoundError:
        return
    sys.stderr.write(f"memdream: warning: removed a stale {lock} ({age:.0f} s old, left by a killed git)\n")
    sys.stderr.flush()


QUERY_TIMEOUT = 2.0  # seconds: a hung network filesystem must not stall an ingest
# A variable like these, set by a git hook that runs memdream, would point `git -C` elsewhere.
_LOCATION_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX")


def query(folder: str, *args: str) -> str | None:
    """The first line git prints for ``args`` run in ``folder`` (any folder, not a memory: the
    checkout a transcript was written in); None on any failure, a timeout included."""
    environment = {key: value for key, value in os.environ.items() if key not in _LOCATION_VARIABLES}
    environment.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"})
    try:
        done = subprocess.run(["git", "-C", folder, *args], env=environment, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=QUERY_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0 or not done.stdout.strip():
        return None
    return done.stdout.strip().splitlines()[0].strip()
