"""Reading a memory's git history: commits with their trailers, files at a revision, what changed.

This is the place for GitPython (its import costs ~100 ms, which review commands can pay;
the commands that run on every agent turn never import this module). Writing stays in
:mod:`memdream.gitops` as plain subprocesses.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.errors import GitError, UsageError

if TYPE_CHECKING:
    import git

_TRAILER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*): (.*)$")


@dataclass(frozen=True)
class CommitInfo:
    """One commit as review commands need it."""

    sha: str
    time: str  # committer time, ISO 8601 in UTC
    author: str
    subject: str
    message: str
    parents: tuple[str, ...]
    trailers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def short(self) -> str:
        return self.sha[:10]

    def trailer(self, key: str) -> str | None:
        """The last value of trailer ``key`` (trailer keys compare case-insensitively, as git's)."""
        for name, values in self.trailers.items():
            if name.lower() == key.lower() and values:
                return values[-1]
        return None


@dataclass(frozen=True)
class FileChange:
    """One file that differs between two revisions; a missing side is None."""

    path: str  # the path on the newer side, or on the older side when deleted
    old_path: str | None
    new_path: str | None
    old_text: str | None
    new_text: str | None


def parse_trailers(message: str) -> dict[str, list[str]]:
    """The ``Key: value`` lines of a message's last paragraph (git's trailer block)."""
    paragraphs = [part for part in message.strip().split("\n\n") if part.strip()]
    if len(paragraphs) < 2:
        return {}
    found: dict[str, list[str]] = {}
    for line in paragraphs[-1].splitlines():
        match = _TRAILER.match(line.strip())
        if match is None:
            return {}  # not a trailer block: a body paragraph that happens to come last
        found.setdefault(match.group(1), []).append(match.group(2).strip())
    return found


def _repo(root: Path) -> git.Repo:
    """The repository that keeps the memory: its own, or the project's it is a folder of."""
    import git

    try:
        return git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise GitError(f"{root} is not a git repository") from None


_PREFIXES: dict[str, str] = {}


def _prefix(root: Path) -> str:
    """Where the memory sits in its repository, as paths there start: "" for a memory's own
    repository, "memory/" for the folder `memdream init --in-repo memory` made in a project."""
    key = str(root)
    if key not in _PREFIXES:
        top = _repo(root).working_tree_dir
        inside = Path(root).resolve().relative_to(Path(str(top)).resolve()).as_posix() if top else "."
        _PREFIXES[key] = "" if inside == "." else inside + "/"
    return _PREFIXES[key]


def _inside(root: Path, paths: Iterable[str]) -> list[str]:
    """Memory paths as the repository names them; the whole memory folder when none are given."""
    prefix = _prefix(root)
    named = [prefix + path for path in paths]
    return named or ([prefix.rstrip("/")] if prefix else [])


def _outside(root: Path, path: str) -> str:
    return path.removeprefix(_prefix(root))


def _info(commit: Any) -> CommitInfo:
    message = commit.message if isinstance(commit.message, str) else commit.message.decode("utf-8", "replace")
    moment = _dt.datetime.fromtimestamp(commit.committed_date, tz=_dt.timezone.utc)
    return CommitInfo(
        sha=commit.hexsha, time=moment.strftime("%Y-%m-%dT%H:%M:%SZ"),
        author=f"{commit.author.name} <{commit.author.email}>",
        subject=message.split("\n", 1)[0].strip(), message=message,
        parents=tuple(parent.hexsha for parent in commit.parents), trailers=parse_trailers(message),
    )


def has_commits(root: Path) -> bool:
    try:
        return bool(_repo(root).head.commit)
    except ValueError:  # a repository without commits
        return False


def resolve(root: Path, rev: str) -> str:
    """The full sha of ``rev`` (any git revision: a sha, HEAD~2, a tag); one-line error otherwise."""
    import git

    repo = _repo(root)
    try:
        return str(repo.commit(rev).hexsha)
    except (git.BadName, ValueError, git.GitCommandError):
        raise UsageError(f"unknown revision {rev!r} in {root}") from None


def commits(root: Path, rev: str = "HEAD", paths: Sequence[str] = (), max_count: int | None = None) -> list[CommitInfo]:
    """Commits reachable from ``rev`` (touching ``paths`` when given), newest first."""
    import git

    repo = _repo(root)
    if not has_commits(root):
        return []
    kwargs: dict[str, Any] = {}
    if max_count is not None:
        kwargs["max_count"] = max_count
    try:
        return [_info(commit) for commit in repo.iter_commits(rev, paths=_inside(root, paths) or "", **kwargs)]
    except (git.BadName, ValueError, git.GitCommandError):
        raise UsageError(f"unknown revision {rev!r} in {root}") from None


def commit_info(root: Path, rev: str) -> CommitInfo:
    return _info(_repo(root).commit(resolve(root, rev)))


def read_text(root: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` (relative to the repository) at ``rev``; None where it did not exist."""
    tree = _repo(root).commit(resolve(root, rev)).tree
    try:
        blob = tree / (_prefix(root) + path)
    except KeyError:
        return None
    data: bytes = blob.data_stream.read()
    return data.decode("utf-8", "replace")


def files_at(root: Path, rev: str, prefixes: Iterable[str]) -> dict[str, str]:
    """Every file under the folders or files ``prefixes`` at ``rev``: path -> text."""
    tree = _repo(root).commit(resolve(root, rev)).tree
    found: dict[str, str] = {}
    for prefix in _inside(root, prefixes):
        try:
            item: Any = tree / prefix
        except KeyError:
            continue
        items = [item] if item.type == "blob" else [entry for entry in item.traverse() if entry.type == "blob"]
        for blob in items:
            found[_outside(root, str(blob.path))] = _blob_text(blob)
    return found


def changes(root: Path, old_rev: str, new_rev: str, paths: Sequence[str] = ()) -> list[FileChange]:
    """The files that differ between ``old_rev`` and ``new_rev`` (under ``paths``), with both texts."""
    repo = _repo(root)
    old = repo.commit(resolve(root, old_rev))
    new = repo.commit(resolve(root, new_rev))
    found: list[FileChange] = []
    named: Any = _inside(root, paths) or None
    for item in old.diff(new, paths=named):
        old_text = _blob_text(item.a_blob) if item.a_blob is not None and not item.new_file else None
        new_text = _blob_text(item.b_blob) if item.b_blob is not None and not item.deleted_file else None
        old_path = _outside(root, item.a_path or "") if old_text is not None else None
        new_path = _outside(root, item.b_path or "") if new_text is not None else None
        found.append(FileChange(new_path or old_path or "", old_path, new_path, old_text, new_text))
    return sorted(found, key=lambda change: change.path)


def _blob_text(blob: Any) -> str:
    data: bytes = blob.data_stream.read()
    return data.decode("utf-8", "replace")


def empty_tree_changes(root: Path, new_rev: str, paths: Sequence[str]) -> list[FileChange]:
    """Every file under ``paths`` at ``new_rev`` as added (the first commit has no parent to diff)."""
    return [FileChange(path, None, path, None, text) for path, text in sorted(files_at(root, new_rev, paths).items())]


def commits_with_trailers(root: Path, keys: Sequence[str], rev: str = "HEAD",
                          max_count: int | None = None) -> list[CommitInfo]:
    """Commits reachable from ``rev`` that carry one of the trailers ``keys``, newest first.

    git filters the messages itself (``--grep``), so a history of ten thousand ingest or hand
    commits costs what its dream and rollback commits cost; the trailer block is checked again here
    because ``--grep`` also matches a body line that merely looks like a trailer.
    """
    import git

    if not has_commits(root):
        return []
    pattern = "^(" + "|".join(re.escape(key) for key in keys) + "): "
    wanted = {key.lower() for key in keys}
    found: list[CommitInfo] = []
    try:
        for commit in _repo(root).iter_commits(rev, grep=pattern, extended_regexp=True, regexp_ignore_case=True):
            info = _info(commit)
            if wanted & {name.lower() for name in info.trailers}:
                found.append(info)
            if max_count is not None and len(found) >= max_count:
                break
    except (git.BadName, ValueError, git.GitCommandError):
        raise UsageError(f"unknown revision {rev!r} in {root}") from None
    return found


def path_history(root: Path, paths: Sequence[str], rev: str = "HEAD") -> list[tuple[CommitInfo, list[tuple[str, str]]]]:
    """Each commit reachable from ``rev`` that added (``A``), modified (``M``) or deleted (``D``) files
    under ``paths``, newest first, with (status, path) of those files; a rename is a delete and an add.

    One ``git log`` for the whole history (provenance checks ask about thousands of card files);
    merge commits list no files, so a file is credited to the commit that really changed it.
    """
    repo = _repo(root)
    if not has_commits(root):
        return []
    output = _plain_paths(repo, "log", rev, "--no-renames", "--name-status", "--format=%x00%H", "--",
                          *_inside(root, paths))
    found: list[tuple[CommitInfo, list[tuple[str, str]]]] = []
    for chunk in output.split("\x00"):
        lines = [line for line in chunk.splitlines() if line.strip()]
        if lines:
            touched = [(status[:1], _outside(root, path))
                       for status, _, path in (line.partition("\t") for line in lines[1:])]
            found.append((_info(repo.commit(lines[0].strip())), touched))
    return found


def _plain_paths(repo: git.Repo, *args: str) -> str:
    """A git command's output with paths unquoted (core.quotePath off: card names are plain anyway)."""
    output: str = repo.git.execute(["git", "-c", "core.quotePath=false", *args])
    return output


def uncommitted_paths(root: Path, paths: Sequence[str]) -> set[str]:
    """Files under ``paths`` that differ from HEAD or are untracked (ignored files aside)."""
    repo = _repo(root)
    output = _plain_paths(repo, "status", "--porcelain", "--untracked-files=all", "--no-renames", "--",
                          *_inside(root, paths))
    return {_outside(root, line[3:]) for line in output.splitlines() if len(line) > 3}


def read_texts(root: Path, wanted: Sequence[tuple[str, str]]) -> list[str | None]:
    """The text of each ``(rev, path)`` (None where it did not exist), read by one ``git cat-file
    --batch``: GitPython's ``tree / path`` parses and checks every entry of each folder on the way
    (~100 ms for an audit folder of a thousand runs), once per file."""
    import os
    import subprocess

    if not wanted:
        return []
    prefix = _prefix(root)
    specs = "".join(f"{rev}:{prefix}{path}\n" for rev, path in wanted)
    environment = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], input=specs.encode("utf-8"),
                              capture_output=True, env=environment, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise GitError(f"git cat-file failed in {root}: {error}") from None
    return _batch_texts(done.stdout, len(wanted))


def _batch_texts(output: bytes, count: int) -> list[str | None]:
    """``git cat-file --batch`` output: per object ``<sha> <type> <size>\\n<data>\\n``, or ``<spec> missing``."""
    texts: list[str | None] = []
    position = 0
    for _ in range(count):
        end = output.index(b"\n", position)
        header = output[position:end].split()
        position = end + 1
        if len(header) != 3:  # "<spec> missing" or "ambiguous": no data follows
            texts.append(None)
            continue
        size = int(header[2])
        data = output[position:position + size]
        texts.append(data.decode("utf-8", "replace") if header[1] == b"blob" else None)  # a folder is no file
        position += size + 1
    return texts


def is_ancestor(root: Path, ancestor: str, rev: str = "HEAD") -> bool:
    """Whether the commit ``ancestor`` is in the history of ``rev``."""
    repo = _repo(root)
    return bool(repo.is_ancestor(repo.commit(resolve(root, ancestor)), repo.commit(resolve(root, rev))))
