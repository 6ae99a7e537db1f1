"""The only module that talks to git: commits, the index and working tree, and the history the review
commands read (commits with their trailers, files at a revision, what changed between two).

Every operation is a plain ``git`` subprocess; GitPython is not imported. Measured on a memory of 500
dream commits over 2,000 cards (2 shared cores, medians; issue 22): importing GitPython costs
190-250 ms, more than any review command's own git work; the trailers of 500 commits take 120 ms
through its commit objects against 25 ms from one ``git log``; a file at a revision 17 ms through its
tree (35 ms with a new ``Repo``) against 8 ms from ``git cat-file``, and 100 files 840 ms against 37 ms
from one ``git cat-file --batch``; the files that differ between two revisions, with both texts,
~135 ms against 25 ms (``git diff-tree`` and one ``cat-file --batch``); resolving a revision 13 ms
against 5 ms; ``git init`` the same either way. Nothing was faster through GitPython.

The layer is self-contained: it takes what it needs from its callers (the memory folder, how to treat
git's index lock: :class:`IndexLock`) and imports nothing of memdream but its errors.

Paths are the memory's own (``cards/facts/x.yaml``), also for a memory that is a folder of a project's
repository (`memdream init --in-repo`): git runs in the memory folder, so it reads the paths it is given
relative to it, and what git prints relative to the top of the repository is made the memory's again.

memdream runs from cron with a bare environment: no git identity, maybe no HOME. Commits therefore
carry an explicit fallback identity when none is configured.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.errors import Busy, DiskFull, GitError, MemdreamError, ReadOnlyMemory, UsageError

FALLBACK_NAME = "memdream"
FALLBACK_EMAIL = "memdream@localhost"
INDEX_LOCK_WAIT = 10.0  # seconds to wait for a git process's index.lock (MEMDREAM_LOCK_WAIT overrides)
# An index.lock at least this old, in a memory's own repository while this process holds memdream's
# writer lock, was left by a killed git (a commit takes milliseconds): it is removed.
STALE_INDEX_LOCK = 5.0
# git matches every index entry against every named path: 3,000 names in a 10,000-file index cost
# more than naming the folders (measured: 3.5 s against 1.9 s); 69 names cost half of it.
NAMED_FILES = 200
QUERY_TIMEOUT = 2.0  # seconds: a hung network filesystem must not stall an ingest
# A variable like these, set by a git hook that runs memdream, would point `git -C` elsewhere.
_LOCATION_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX")


# -- running git ------------------------------------------------------------------------------------

def _git(root: Path, args: Sequence[str], env: Mapping[str, str] | None = None, stdin: bytes | None = None,
         ok_codes: Sequence[int] = ()) -> bytes:
    """Run one git command in the memory folder ``root`` (C locale, no prompt, paths printed as
    they are: ``core.quotePath`` off); its output. ``ok_codes``: exit statuses besides 0 that are an
    answer, not a failure (``check-ignore`` says "none ignored" with 1)."""
    if not is_repo(root):
        raise GitError(f"{root} is not a git repository")
    command, environment = _invocation(args, env)
    try:
        if stdin is None:
            done = subprocess.run(command, cwd=root, env=environment, capture_output=True, stdin=subprocess.DEVNULL,
                                  check=False)
        else:
            done = subprocess.run(command, cwd=root, env=environment, capture_output=True, input=stdin, check=False)
    except OSError as error:
        raise GitError(f"git {args[0]} failed: {error.strerror or error}") from None
    return _output(root, args, done.returncode, done.stdout, done.stderr, ok_codes)


def _invocation(args: Sequence[str], env: Mapping[str, str] | None) -> tuple[list[str], dict[str, str]]:
    environment = {**os.environ, **dict(env or {}), "LANGUAGE": "C", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    return ["git", "-c", "core.quotePath=false", *args], environment


def _output(root: Path, args: Sequence[str], code: int, stdout: bytes, stderr: bytes,
            ok_codes: Sequence[int] = ()) -> bytes:
    """A finished git command's output; its failure as one exception."""
    if code != 0 and code not in ok_codes:
        said = stderr or stdout or f"exit status {code}".encode()
        raise _git_failure(root, args[0], " ".join(said.decode("utf-8", "replace").split()))
    return stdout


class Running:
    """A git command started while its caller does other work; :meth:`text` waits for its output (as
    :func:`_run` would have returned it). Who starts one waits for it, or closes it."""

    def __init__(self, root: Path, *args: str) -> None:
        if not is_repo(root):
            raise GitError(f"{root} is not a git repository")
        self.root, self.args = root, args
        command, environment = _invocation(args, None)
        try:
            self.process = subprocess.Popen(command, cwd=root, env=environment, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            raise GitError(f"git {args[0]} failed: {error.strerror or error}") from None

    def text(self) -> str:
        stdout, stderr = self.process.communicate()
        output = _output(self.root, self.args, self.process.returncode, stdout, stderr)
        return output.decode("utf-8", "replace").removesuffix("\n")

    def close(self) -> None:
        """Wait for the command if nobody did (its caller failed first): no process is left behind."""
        if self.process.returncode is None:
            self.process.communicate()


def _run(root: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None,
         ok_codes: Sequence[int] = ()) -> str:
    """A git command's output as text, without the final newline."""
    output = _git(root, args, env, None if stdin is None else stdin.encode("utf-8"), ok_codes)
    return output.decode("utf-8", "replace").removesuffix("\n")


def _succeeds(root: Path, *args: str) -> bool:
    """Whether a git command that answers by its exit status says yes."""
    try:
        _git(root, args)
    except GitError:
        return False
    return True


def _git_failure(root: Path, command: str, detail: str) -> MemdreamError:
    """A failed git command as one line; a full disk or a read-only memory said as such."""
    if "No space left on device" in detail or "Disk quota exceeded" in detail:
        return DiskFull(f"no space left on device while writing {root} (git {command}: {detail})")
    if "Read-only file system" in detail or ("Permission denied" in detail and "Unable to create" in detail):
        return ReadOnlyMemory(f"the memory is read-only: git {command} cannot write in {root} ({detail})")
    return GitError(f"git {command} failed: {detail}")


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


# -- where the memory is ----------------------------------------------------------------------------

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


_PREFIXES: dict[str, str] = {}


def _prefix(root: Path) -> str:
    """Where the memory sits in its repository, as git's paths there start: "" for a memory's own
    repository, "memory/" for the folder `memdream init --in-repo memory` made in a project."""
    key = str(Path(root).absolute())
    if key not in _PREFIXES:
        _PREFIXES[key] = "" if (Path(root) / ".git").exists() else _run(root, "rev-parse", "--show-prefix")
    return _PREFIXES[key]


def _outside(root: Path, path: str) -> str:
    """A path as git prints it (from the top of the repository) as the memory names it."""
    return path.removeprefix(_prefix(root))


def _within(root: Path, paths: Iterable[str]) -> list[str]:
    """Pathspecs for ``paths``; when none are given, the memory folder in a project's repository (no
    pathspec there is the whole project), none in the memory's own (``.`` would leave out empty commits)."""
    return list(paths) or (["."] if _prefix(root) else [])


# -- creating a repository --------------------------------------------------------------------------

def init_repo(root: Path) -> None:
    """Make ``root`` (an existing folder) a repository of its own, on the branch main."""
    for args in (["init", "--quiet", "--initial-branch=main"], ["init", "--quiet"]):  # git < 2.28: no --initial-branch
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  env={**os.environ, "LC_ALL": "C"}, check=False)
        except OSError as error:
            raise GitError(f"git init failed: {error.strerror or error}") from None
        if done.returncode == 0:
            return
        if "initial-branch" not in done.stderr:
            break
    raise GitError(f"git init failed: {' '.join((done.stderr or done.stdout).split())}")


def set_local_config(root: Path, key: str, value: str) -> None:
    _run(root, "config", "--local", key, value)


# -- commits ----------------------------------------------------------------------------------------

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


@dataclass(frozen=True)
class IndexLock:
    """How a write treats an ``index.lock`` another git process holds: it waits up to ``wait``
    seconds for it to go. ``writer``: the caller holds memdream's writer lock on this memory, so in
    the memory's own repository no other memdream writer runs and a lock that has not gone away after
    :data:`STALE_INDEX_LOCK` seconds was left by a killed git: it is removed (with a warning on
    stderr). In a repository the memory only lives inside (a project's), the lock may be the user's
    or their editor's: it is waited for and never removed."""

    wait: float = INDEX_LOCK_WAIT
    writer: bool = False


def commit(
    root: Path,
    subject: str,
    body: str = "",
    trailers: Trailers | None = None,
    paths: Sequence[str] = (".",),
    allow_empty: bool = False,
    force: bool = False,
    files: Sequence[str] = (),
    index_lock: IndexLock | None = None,
) -> str:
    """Stage ``paths`` (honouring .gitignore unless ``force``) and commit; returns the new commit's sha.

    ``files``: every file under ``paths`` the caller wrote or deleted, when it knows them; only those
    are staged and committed. In a memory of ten thousand cards, naming folders makes git compare
    every card file to the index twice; naming the files costs what changed. In a large repository
    (:func:`_large_index`) they are committed by git's plumbing (:func:`_commit_named`) when nothing
    stands in its way; else by ``git commit`` naming them (up to :data:`NAMED_FILES`); should git
    refuse the list (a path it ignores, a git before 2.25), the folders are named after all.
    """
    settle_index_lock(root, index_lock)
    message = format_message(subject, body, trailers)
    identity = identity_env(root)
    if files and _large_index(root):
        try:
            made = _commit_named(root, message, files, force, allow_empty, identity)
        except (DiskFull, ReadOnlyMemory):
            raise
        except GitError:
            made = None
        if made is not None:
            return made
    args = ["commit", "--quiet", "--no-verify", "--no-gpg-sign", "-m", message]
    if allow_empty:
        args.append("--allow-empty")
    if files and len(files) <= NAMED_FILES:
        try:
            _commit_files(root, args, files, force, identity)
            return resolve(root)
        except (DiskFull, ReadOnlyMemory):
            raise
        except GitError:
            pass
    _run(root, "add", "--all", *(["--force"] if force else []), "--", *paths)
    # Naming the paths again commits only them, never something else a person had staged.
    _run(root, *args, "--", *paths, env=identity)
    return resolve(root)


# An index this large (~3,000 entries) makes `git add` and `git commit -- files` cost more than the seven
# plumbing processes of :func:`_commit_named`; below it, the two porcelain processes are cheaper.
PLUMBING_INDEX_BYTES = 256 * 1024


def _large_index(root: Path) -> bool:
    """Whether the memory's own repository has an index of :data:`PLUMBING_INDEX_BYTES` or more (a memory
    inside a project's repository commits as ``git commit`` does)."""
    try:
        return (root / ".git" / "index").stat().st_size >= PLUMBING_INDEX_BYTES
    except OSError:
        return False


# Hooks that `git commit --no-verify` still runs and git's plumbing does not: with one of them, a
# commit is made by `git commit`, so that it runs as the person set it up.
_COMMIT_HOOKS = ("hooks/prepare-commit-msg", "hooks/post-commit")


def _commit_named(root: Path, message: str, files: Sequence[str], force: bool, allow_empty: bool,
                  identity: Mapping[str, str]) -> str | None:
    """Commit exactly ``files`` as ``git commit -- files`` would, by plumbing: the new commit's sha, or
    None where that commit is not the one ``git commit`` would make (nothing changed; an ignored file
    named; a commit hook; an unborn branch; something else staged), which ``git commit`` then makes.

    Why plumbing: ``git add`` matches every index entry against every named path, and ``git commit
    -- files`` refreshes the whole index and builds a second one from HEAD; on ten thousand cards the
    two took ~150 ms for a 70-file dream. ``update-index`` looks the named paths up, ``write-tree``
    rebuilds only the folders they are in, and the ``diff-tree`` of HEAD's tree and the new one
    proves that the commit holds those files and nothing a person had staged besides."""
    listed = "\0".join(files) + "\0"
    if not force and _run(root, "check-ignore", "--no-index", "-z", "--stdin", stdin=listed, ok_codes=(1,)):
        return None  # `git add` refuses such a file by name; the folders are named instead
    asked = [part for hook in _COMMIT_HOOKS for part in ("--git-path", hook)]
    answer = _run(root, "rev-parse", *asked, "HEAD^{commit}", "HEAD^{tree}").split("\n")
    if len(answer) != len(_COMMIT_HOOKS) + 2:
        return None
    *hooks, parent, parent_tree = answer
    if any(os.access(root / hook, os.X_OK) for hook in hooks):
        return None
    _run(root, "update-index", "--add", "--remove", "-z", "--stdin", stdin=listed)
    tree = _run(root, "write-tree")
    if tree == parent_tree and not allow_empty:
        return None  # `git commit` says there is nothing to commit
    prefix = _prefix(root)
    changed = _run(root, "diff-tree", "-r", "-z", "--name-only", "--no-renames", parent_tree, tree).split("\0")
    if not {path for path in changed if path} <= {prefix + path for path in files}:
        return None  # the index holds more than these files: `git commit -- files` leaves that out
    text = clean_message(message)
    sha = _run(root, "commit-tree", "--no-gpg-sign", "-p", parent, "-F", "-", tree, env=identity, stdin=text)
    subject_line = text.split("\n", 1)[0]
    _run(root, "update-ref", "-m", f"commit: {subject_line}", "HEAD", sha, parent)  # the reflog line git writes
    try:  # as `git commit` does: gc when loose objects pile up (a dream makes ~70 a run)
        _run(root, "maintenance", "run", "--auto", "--quiet")
    except GitError:
        pass  # a git before 2.29, or housekeeping that failed: the commit is made all the same
    return sha


def clean_message(message: str) -> str:
    """A commit message as ``git commit -m`` stores it (``--cleanup=whitespace``): trailing whitespace
    cut from every line, runs of empty lines made one, none first or last, a newline at the end."""
    kept: list[str] = []
    empty = False
    for line in message.split("\n"):
        line = line.rstrip(" \t\r")
        if not line:
            empty = bool(kept)
            continue
        if empty:
            kept.append("")
        kept.append(line)
        empty = False
    return "".join(line + "\n" for line in kept)


def _commit_files(root: Path, args: list[str], files: Sequence[str], force: bool, identity: Mapping[str, str]) -> None:
    """Stage and commit exactly ``files`` (a deleted one stages its removal), named as literal
    paths on stdin: a card file's name is never read as a glob, and no list is too long."""
    listed = "\0".join(files) + "\0"
    literal = {"GIT_LITERAL_PATHSPECS": "1"}
    from_stdin = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    _run(root, "add", "--all", *(["--force"] if force else []), *from_stdin, env=literal, stdin=listed)
    _run(root, *args, *from_stdin, env={**identity, **literal}, stdin=listed)


def stage(root: Path, paths: Sequence[str], force: bool = False, index_lock: IndexLock | None = None) -> None:
    """Stage every change under ``paths`` (``force``: files .gitignore names too) for the next commit."""
    settle_index_lock(root, index_lock)
    _run(root, "add", "--all", *(["--force"] if force else []), "--", *paths)


def settle_index_lock(root: Path, index_lock: IndexLock | None = None) -> None:
    """Make sure git can take its index lock before memdream writes the index.

    A kill -9 during ``git add`` / ``git commit`` leaves ``.git/index.lock`` and every later git
    write fails: ``index_lock`` says how long such a lock is waited for and whether it may be
    removed (:class:`IndexLock`; by default waited for, never removed).
    """
    index_lock = index_lock or IndexLock()
    own = root / ".git"
    if own.is_dir():
        lock, removable = own / "index.lock", index_lock.writer
    else:
        git_dir = query(str(root), "rev-parse", "--absolute-git-dir")
        if git_dir is None:
            return
        lock, removable = Path(git_dir) / "index.lock", False
    wait = index_lock.wait
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


# -- revisions --------------------------------------------------------------------------------------

def resolve(root: Path, rev: str = "HEAD") -> str:
    """The full sha of the commit ``rev`` names (a sha, HEAD~2, a tag); a one-line error otherwise."""
    try:
        if not rev.startswith("-"):  # never an option
            return _run(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except GitError:
        if not is_repo(root):
            raise
    raise UsageError(f"unknown revision {rev!r} in {root}")


def head_or_none(root: Path) -> str | None:
    """The sha of HEAD; None when the repository has no commit (or there is none)."""
    if not is_repo(root):
        return None
    try:
        return resolve(root)
    except MemdreamError:
        return None


def is_ancestor(root: Path, ancestor: str, rev: str = "HEAD") -> bool:
    """Whether the commit ``ancestor`` is in the history of ``rev``."""
    return _succeeds(root, "merge-base", "--is-ancestor", resolve(root, ancestor), resolve(root, rev))


# -- history ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CommitInfo:
    """One commit as review commands need it."""

    sha: str
    time: str  # committer time, ISO 8601 in UTC
    author: str
    subject: str
    message: str
    parents: tuple[str, ...]
    trailers: dict[str, list[str]] = field(default_factory=dict)  # as git reads them (git interpret-trailers)

    @property
    def short(self) -> str:
        return self.sha[:10]

    def trailer(self, key: str) -> str | None:
        """The last value of trailer ``key`` (trailer keys compare case-insensitively, as git's)."""
        for name, values in self.trailers.items():
            if name.lower() == key.lower() and values:
                return values[-1]
        return None


# One record a commit: fields split by \x1f, the trailers as git parses them (folded lines joined), then
# whatever git prints after the format (--name-status).
_FORMAT = "--format=%x1e%H%x1f%P%x1f%ct%x1f%an <%ae>%x1f%B%x1f%(trailers:only,unfold)%x1f"


def _log(root: Path, rev: str, *options: str, paths: Sequence[str] = ()) -> Iterator[tuple[CommitInfo, str]]:
    """``git log`` of ``rev`` (a revision or a range): each commit, and what git printed after it;
    none in a repository without commits. A revision git does not know is a :class:`UsageError`."""
    try:
        if rev.startswith("-"):  # never an option
            raise GitError(f"bad revision {rev!r}")
        output = _run(root, "log", _FORMAT, *options, rev, "--", *paths)
    except GitError:
        if not is_repo(root):
            raise
        if head_or_none(root) is None:
            return
        raise UsageError(f"unknown revision {rev!r} in {root}") from None
    for record in output.split("\x1e")[1:]:
        sha, parents, seconds, author, *message, trailers, rest = record.split("\x1f")
        text = "\x1f".join(message)
        moment = _dt.datetime.fromtimestamp(int(seconds), tz=_dt.timezone.utc)
        yield CommitInfo(sha=sha, time=moment.strftime("%Y-%m-%dT%H:%M:%SZ"), author=author,
                         subject=text.split("\n", 1)[0].strip(), message=text, parents=tuple(parents.split()),
                         trailers=_trailers(trailers)), rest


def _trailers(block: str) -> dict[str, list[str]]:
    """git's ``%(trailers:only,unfold)``: one ``Key: value`` a line, as git normalized it."""
    found: dict[str, list[str]] = {}
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            found.setdefault(key, []).append(value.strip())
    return found


def commits(root: Path, rev: str = "HEAD", paths: Sequence[str] = (), max_count: int | None = None) -> list[CommitInfo]:
    """Commits reachable from ``rev`` (touching ``paths`` when given), newest first."""
    limit = [f"--max-count={max_count}"] if max_count is not None else []
    return [info for info, _ in _log(root, rev, *limit, paths=_within(root, paths))]


def commit_info(root: Path, rev: str) -> CommitInfo:
    return commits(root, resolve(root, rev), max_count=1)[0]


def commits_with_trailers(root: Path, keys: Sequence[str], rev: str = "HEAD",
                          max_count: int | None = None) -> list[CommitInfo]:
    """Commits reachable from ``rev`` that carry one of the trailers ``keys``, newest first.

    git filters the messages itself (``--grep``), so a history of ten thousand ingest or hand
    commits costs what its dream and rollback commits cost; the trailers are checked again because
    ``--grep`` also matches a body line that merely looks like a trailer. With ``max_count``, git is
    asked for that many, and for more only when some of them were such body lines.
    """
    grep = ["--extended-regexp", "--regexp-ignore-case", "--grep=^(" + "|".join(re.escape(key) for key in keys) + "): "]
    wanted = {key.lower() for key in keys}

    def carries(info: CommitInfo) -> bool:
        return bool(wanted & {name.lower() for name in info.trailers})

    if max_count is None:
        return [info for info, _ in _log(root, rev, *grep) if carries(info)]
    found: list[CommitInfo] = []
    skip, page = 0, max_count
    while len(found) < max_count:
        batch = [info for info, _ in _log(root, rev, *grep, f"--skip={skip}", f"--max-count={page}")]
        found += [info for info in batch if carries(info)]
        if len(batch) < page:
            break
        skip, page = skip + page, page * 2
    return found[:max_count]


def trailer_history(root: Path, since: str | None = None) -> list[dict[str, list[str]]] | None:
    """The ``Memdream-`` trailers of every commit that has some, oldest first (first-parent line);
    ``since``: only of the commits after that one (None when it is not an ancestor of HEAD)."""
    if since is not None and not _succeeds(root, "merge-base", "--is-ancestor", since, "HEAD"):
        return None
    found = []
    for info, _ in _log(root, f"{since}..HEAD" if since is not None else "HEAD", "--reverse", "--first-parent"):
        trailers = {key: values for key, values in info.trailers.items() if key.startswith("Memdream-")}
        if trailers:
            found.append(trailers)
    return found


def last_message_matching(root: Path, pattern: str) -> str | None:
    """The full message of the newest commit whose message matches ``pattern`` (a regex), if any."""
    for info, _ in _log(root, "HEAD", "--max-count=1", "--extended-regexp", f"--grep={pattern}"):
        return info.message
    return None


def path_history(root: Path, paths: Sequence[str], rev: str = "HEAD") -> list[tuple[CommitInfo, list[tuple[str, str]]]]:
    """Each commit reachable from ``rev`` that added (``A``), modified (``M``) or deleted (``D``) files
    under ``paths``, newest first, with (status, path) of those files; a rename is a delete and an add.

    One ``git log`` for the whole history (provenance checks ask about thousands of card files);
    merge commits list no files, so a file is credited to the commit that really changed it.
    """
    found: list[tuple[CommitInfo, list[tuple[str, str]]]] = []
    for info, listed in _log(root, rev, "--no-renames", "--name-status", paths=_within(root, paths)):
        touched = [(status[:1], _outside(root, path))
                   for status, _, path in (line.partition("\t") for line in listed.splitlines() if line.strip())]
        found.append((info, touched))  # a merge commit lists no files
    return found


# -- files at a revision ----------------------------------------------------------------------------

@dataclass(frozen=True)
class FileChange:
    """One file that differs between two revisions; a missing side is None."""

    path: str  # the path on the newer side, or on the older side when deleted
    old_path: str | None
    new_path: str | None
    old_text: str | None
    new_text: str | None


def read_text(root: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` (relative to the memory) at ``rev``; None where it did not exist (or
    ``rev`` names no commit)."""
    return read_texts(root, [(rev, path)])[0]


def read_texts(root: Path, wanted: Sequence[tuple[str, str]]) -> list[str | None]:
    """The text of each ``(rev, path)`` (None where it did not exist), read by one ``git cat-file
    --batch`` however many there are."""
    prefix = _prefix(root) if wanted else ""
    return _objects(root, [f"{rev}:{prefix}{path}" for rev, path in wanted])


def _objects(root: Path, names: Sequence[str]) -> list[str | None]:
    """The text of each blob ``names`` names (``<rev>:<path>`` or a sha); None for a missing one or a folder."""
    if not names:
        return []
    output = _git(root, ["cat-file", "--batch"], stdin="".join(f"{name}\n" for name in names).encode("utf-8"))
    texts: list[str | None] = []
    position = 0
    for _ in names:  # per object ``<sha> <type> <size>\n<data>\n``, or ``<name> missing``
        end = output.index(b"\n", position)
        header = output[position:end].split()
        position = end + 1
        if len(header) != 3:  # "<name> missing" or "ambiguous": no data follows
            texts.append(None)
            continue
        size = int(header[2])
        data = output[position:position + size]
        texts.append(data.decode("utf-8", "replace") if header[1] == b"blob" else None)
        position += size + 1
    return texts


def changes(root: Path, old_rev: str, new_rev: str, paths: Sequence[str] = ()) -> list[FileChange]:
    """The files that differ between ``old_rev`` and ``new_rev`` (under ``paths``), with both texts;
    a file moved with little change is one change (git's rename detection, ``-M``)."""
    old, new = resolve(root, old_rev), resolve(root, new_rev)
    output = _git(root, ["diff-tree", "-r", "-z", "--raw", "-M", "--abbrev=40", "--full-index", "--no-color", old, new,
                         "--", *_within(root, paths)]).decode("utf-8", "replace")
    entries = []
    fields = iter(output.split("\0"))
    for meta in fields:  # ":<mode> <mode> <sha> <sha> <status>", then one path, two for a rename or copy
        if not meta.startswith(":"):
            continue
        _, _, old_sha, new_sha, status = meta[1:].split(" ", 4)
        old_path = next(fields)
        new_path = next(fields) if status[:1] in ("R", "C") else old_path
        entries.append((status[:1], old_sha, new_sha, _outside(root, old_path), _outside(root, new_path)))
    texts = iter(_objects(root, [sha for status, old_sha, new_sha, _, _ in entries
                                 for sha, side in ((old_sha, "A"), (new_sha, "D")) if status != side]))
    found = []
    for status, _, _, old_path, new_path in entries:
        old_text = next(texts) if status != "A" else None
        new_text = next(texts) if status != "D" else None
        shown_old = old_path if old_text is not None else None
        shown_new = new_path if new_text is not None else None
        found.append(FileChange(shown_new or shown_old or "", shown_old, shown_new, old_text, new_text))
    return sorted(found, key=lambda change: change.path)


def empty_tree_changes(root: Path, new_rev: str, paths: Sequence[str]) -> list[FileChange]:
    """Every file under ``paths`` at ``new_rev`` as added (the first commit has no parent to diff)."""
    listed = _run(root, "ls-tree", "-r", "-z", "--full-name", resolve(root, new_rev), "--", *_within(root, paths))
    blobs = [(_outside(root, path), meta.split()[2]) for meta, _, path in
             (entry.partition("\t") for entry in listed.split("\0") if entry) if meta.split()[1] == "blob"]
    texts = _objects(root, [sha for _, sha in blobs])
    return sorted((FileChange(path, None, path, None, text) for (path, _), text in zip(blobs, texts)),
                  key=lambda change: change.path)


# -- the working tree and the index -----------------------------------------------------------------

def status_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Files under ``pathspecs`` that differ from HEAD or are untracked (ignored ones aside), as the
    memory names them; a renamed file is its old and its new path."""
    return start_status(root, pathspecs).paths()


class Status(Running):
    """``git status`` of some paths, started: :meth:`paths` waits for what :func:`status_paths` gives."""

    def paths(self) -> list[str]:
        return [_outside(self.root, entry[3:]) for entry in self.text().split("\0") if len(entry) > 3]


def start_status(root: Path, pathspecs: Iterable[str] = ()) -> Status:
    """:func:`status_paths` started: git compares the files while the caller works (it stats every one)."""
    return Status(root, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames", "--",
                  *_within(root, pathspecs))


def staged_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Paths whose staged version differs from HEAD (what the next commit of them would hold)."""
    output = _run(root, "diff", "--cached", "--name-only", "--no-renames", "--relative", "--", *pathspecs)
    return [line for line in output.splitlines() if line.strip()]


def unstaged_paths(root: Path, pathspecs: Iterable[str] = ()) -> list[str]:
    """Paths whose working file differs from the index, or untracked and not ignored: in a
    project's repository, what a person changed that memdream has not staged."""
    changed = _run(root, "diff", "--name-only", "--relative", "--", *pathspecs).splitlines()
    untracked = _run(root, "ls-files", "--others", "--exclude-standard", "--", *pathspecs).splitlines()
    return [path for path in [*changed, *untracked] if path.strip()]


def restore_from(root: Path, rev: str, paths: Sequence[str], index_lock: IndexLock | None = None) -> None:
    """Make ``paths`` (index and working tree) what they were at ``rev``: files added since are
    removed, files changed or deleted since come back byte for byte."""
    settle_index_lock(root, index_lock)
    added = _run(root, "diff", "--name-only", "--no-renames", "--diff-filter=A", rev, "HEAD", "--", *paths)
    if added.strip():
        _run(root, "rm", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", env={"GIT_LITERAL_PATHSPECS": "1"},
             stdin="\0".join(added.splitlines()) + "\0")
    at_rev = [path for path in paths if _succeeds(root, "cat-file", "-e", f"{rev}:{_prefix(root)}{path}")]
    if at_rev:
        _run(root, "checkout", rev, "--", *at_rev)


def restore_paths(root: Path, paths: Sequence[str], index_lock: IndexLock | None = None) -> None:
    """Put ``paths`` back as HEAD has them and delete untracked files under them (crash recovery).
    In a project's repository, as the index has them: a dream there stages, the user commits."""
    existing = [path for path in paths if (root / path).exists() or _tracked(root, path)]
    if existing:
        settle_index_lock(root, index_lock)
        staged = [path for path in existing if _tracked(root, path)] if in_project(root) else []
        if staged:
            _run(root, "checkout", "--", *staged)
        elif not in_project(root):
            _run(root, "reset", "-q", "HEAD", "--", *existing)  # files staged since HEAD become untracked
            _run(root, "checkout", "HEAD", "--", *existing)
        _run(root, "clean", "-fdq", "--", *existing)


def _tracked(root: Path, path: str) -> bool:
    return bool(_run(root, "ls-files", "--", path).strip())


def tracked_paths(root: Path) -> list[str]:
    """Every file git tracks in the memory, as the memory names it."""
    listed = _run(root, "ls-files", "-z", "--full-name", "--", *_within(root, []))
    return [_outside(root, path) for path in listed.split("\0") if path]


# -- rewriting history ------------------------------------------------------------------------------

# What a history rewrite does to one file of one commit: its new bytes (the same object when nothing
# changes), or None to remove the file from that commit. Called with the path as the memory names it.
BlobCleaner = Callable[[str, bytes], "bytes | None"]
MessageCleaner = Callable[[bytes], bytes]
# Files that point at commits outside refs/ and would keep the old history reachable.
_PSEUDO_REFS = ("ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")


def tracked_blobs(root: Path, prefixes: Sequence[str]) -> list[tuple[str, str]]:
    """(path, blob sha) of every version of every file under ``prefixes`` that any commit of any ref
    holds (one ``git rev-list --objects``): what a history rewrite will meet there."""
    listed = _run(root, "rev-list", "--all", "--objects")
    found = []
    for line in listed.splitlines():
        sha, _, path = line.partition(" ")
        if path and any(path == prefix or path.startswith(prefix.rstrip("/") + "/") for prefix in prefixes):
            found.append((path, sha))
    return found


def blob_texts(root: Path, shas: Sequence[str]) -> list[str | None]:
    """The text of each blob ``shas`` names (None for a missing one), by one ``git cat-file --batch``."""
    return _objects(root, shas)


def rewrite_history(root: Path, clean_blob: BlobCleaner, clean_message: MessageCleaner) -> None:
    """Rewrite every commit of every ref so that each file holds what ``clean_blob`` makes of it and each
    message what ``clean_message`` makes of it; then leave no object of the old history behind: reflogs
    expired, backup refs deleted, garbage collected with ``--prune=now``.

    The rewrite is git filter-repo's (the tool git's own documentation recommends over filter-branch),
    used as a library: its commit callback sees each file with its path, which a blob callback does not.
    Commit ids change; empty commits are kept (a dream commit's trailers are the ledger's record). The
    memory's own repository only (never a project's, whose history is not the memory's to rewrite).
    """
    if in_project(root):
        raise GitError(f"{root} is a folder of the repository {project_top(root)}: memdream rewrites the "
                       "history of a memory's own repository only")
    try:
        import git_filter_repo as filter_repo
    except ImportError:
        raise GitError("rewriting history needs git-filter-repo (pip install git-filter-repo)") from None
    git_dir = root / ".git"
    _clear_filter_state(git_dir)
    for ref in _run(root, "for-each-ref", "--format=%(refname)", "refs/original/").splitlines():
        _run(root, "update-ref", "-d", ref)  # filter-branch's backups hold the old history
    reader = _BlobReader(root)
    try:
        _run_filter_repo(root, filter_repo, reader, clean_blob, clean_message)
    finally:
        reader.close()
        _clear_filter_state(git_dir)
    _forget_old_objects(root)


def _run_filter_repo(root: Path, filter_repo: Any, reader: _BlobReader, clean_blob: BlobCleaner,
                     clean_message: MessageCleaner) -> None:
    """One run of git filter-repo in ``root`` (it works in the current folder), its chatter kept off
    memdream's output; its fatal errors (SystemExit) as one-line :class:`GitError`."""
    import contextlib
    import io

    done: dict[tuple[bytes, bytes], Any] = {}  # (path, old blob) -> new blob (sha or mark), None: removed

    def rewrite_files(commit: Any, metadata: Any) -> None:
        changes = []
        for change in commit.file_changes:
            if change.type != b"M" or not change.blob_id:
                changes.append(change)
                continue
            key = (change.filename, change.blob_id)
            if key not in done:
                done[key] = _cleaned_blob(filter_repo, filter_instance, reader, clean_blob, change)
            new_id = done[key]
            if new_id is None:
                changes.append(filter_repo.FileChange(b"D", change.filename))
            else:
                change.blob_id = new_id
                changes.append(change)
        commit.file_changes = changes

    args = filter_repo.FilteringOptions.parse_args(
        ["--force", "--quiet", "--prune-empty", "never", "--prune-degenerate", "never",
         "--sensitive-data-removal", "--no-fetch"], error_on_empty=False)
    filter_instance = filter_repo.RepoFilter(args, commit_callback=rewrite_files,
                                             message_callback=lambda message: clean_message(message))
    here = os.getcwd()
    chatter = io.StringIO()
    try:
        os.chdir(root)
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            filter_instance.run()
    except SystemExit as error:
        said = " ".join(str(error.code or chatter.getvalue() or "failed").split())
        raise GitError(f"git filter-repo failed: {said}") from None
    finally:
        os.chdir(here)


def _cleaned_blob(filter_repo: Any, filter_instance: Any, reader: _BlobReader, clean_blob: BlobCleaner,
                  change: Any) -> Any:
    """The blob that replaces ``change``'s in the new history: its own sha when unchanged, the mark of a
    new one, None when the file leaves the commit."""
    data = reader.read(change.blob_id.decode("ascii"))
    cleaned = clean_blob(change.filename.decode("utf-8", "surrogateescape"), data)
    if cleaned is None:
        return None
    if cleaned == data:
        return change.blob_id
    blob = filter_repo.Blob(cleaned)
    filter_instance.insert(blob)
    return blob.id


class _BlobReader:
    """Blobs of the old history by id, from one long-lived ``git cat-file --batch``."""

    def __init__(self, root: Path) -> None:
        self._process = subprocess.Popen(["git", "cat-file", "--batch"], cwd=root, stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, env={**os.environ, "LC_ALL": "C"})

    def read(self, sha: str) -> bytes:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(sha.encode("ascii") + b"\n")
        self._process.stdin.flush()
        header = self._process.stdout.readline().split()
        if len(header) != 3:
            raise GitError(f"git cat-file: no blob {sha}")
        data = self._process.stdout.read(int(header[2]) + 1)
        return data[:-1]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait()


def _clear_filter_state(git_dir: Path) -> None:
    """filter-repo's notes of a run (old and new commit ids) removed, so that the next run starts anew (a
    run finding them asks questions on the terminal); and fast-import's crash reports, which quote the
    stream they were given (old content)."""
    import shutil

    shutil.rmtree(git_dir / "filter-repo", ignore_errors=True)
    for report in git_dir.glob("fast_import_crash_*"):
        report.unlink(missing_ok=True)


def _forget_old_objects(root: Path) -> None:
    """No object of the old history left: pseudo-refs that name old commits removed, every reflog
    expired, unreachable objects pruned now (filter-repo did so too; this holds whatever it left)."""
    for name in _PSEUDO_REFS:
        (root / ".git" / name).unlink(missing_ok=True)
    _run(root, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    _run(root, "gc", "--quiet", "--prune=now")
