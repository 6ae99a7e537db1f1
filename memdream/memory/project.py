"""The project a session worked on, as one short name: ``billing-api``.

Ingest tags every event of a transcript with ``project:<name>``, and dream scopes what it learns
by it, so the name must be the same for every checkout of one repository: the main work tree,
each ``git worktree`` and a clone on another machine. The repository says who it is best (its
remote URL); a folder that still exists asks git; a path alone is read by the usual worktree
layouts; else the folder's own name is all there is.

A temporary folder is no project (a scripted run in ``/tmp/tmpqwh7888i``, a scratch copy in
``/tmp/work``): what was learned there belongs to no repository anyone will open again, so such a
session gets no project and dream gives it nothing project-scoped. A remote URL still names it.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator

MAX_NAME = 60
# Folders that hold one checkout per branch inside or beside the main one.
_WORKTREE_HOLDERS = (".worktrees", "worktrees")
_WORKTREES_SUFFIX = "-worktrees"
_NOT_NAME = re.compile(r"[^a-z0-9._-]+")


def project_name(cwd: str | None, repository_url: str | None = None) -> str | None:
    """The project name for a session run in ``cwd`` (and a known remote URL); None when unknown."""
    return _project_name(cwd or None, repository_url or None)


@functools.lru_cache(maxsize=1024)
def _project_name(cwd: str | None, repository_url: str | None) -> str | None:
    # A spool holds many transcripts of the same few folders: git runs once per folder and URL.
    for candidate in _candidates(cwd, repository_url):
        name = clean_name(candidate)
        if name is not None:
            return name
    return None


# Python's tempfile names (tmp + 8 random characters), and the folders systems keep temporary files in.
_TEMP_NAME = re.compile(r"tmp[a-z0-9_]{6,}")
_TEMP_ROOTS = ("/tmp/", "/var/tmp/", "/private/tmp/")


def is_temporary_name(name: str) -> bool:
    """Whether a folder (or project) name is one tempfile made: ``tmpqwh7888i``."""
    return _TEMP_NAME.fullmatch(name.lower()) is not None


def is_temporary(cwd: str) -> bool:
    """Whether ``cwd`` is a temporary folder: a tempfile-made one anywhere, or a folder right under a
    temporary root (``/tmp/work``; deeper folders there may be a checkout someone works in)."""
    parts = [part for part in re.split(r"[/\\]+", cwd.strip()) if part]
    if not parts or is_temporary_name(parts[-1]):
        return True
    path = "/" + "/".join(parts) + "/"
    for root in _TEMP_ROOTS:
        if path.startswith(root):
            return path.count("/") - root.count("/") <= 1
    return False


def _candidates(cwd: str | None, repository_url: str | None) -> Iterator[str | None]:
    if repository_url is not None:
        yield name_from_url(repository_url)
    if cwd is None or is_temporary(cwd):
        return
    if os.path.isdir(cwd):
        yield from _from_git(cwd)
    yield name_from_path(cwd)


def _from_git(cwd: str) -> Iterator[str | None]:
    from memdream import gitops

    common = gitops.query(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common is None:
        return  # not inside a work tree (or no git): the path is all there is
    url = gitops.query(cwd, "config", "--get", "remote.origin.url")
    if url is not None:
        yield name_from_url(url)
    yield _main_worktree_name(common)


def _main_worktree_name(common_dir: str) -> str:
    """The main work tree's folder: the parent of the shared ``.git`` (a bare ``x.git`` names itself)."""
    path = common_dir.rstrip("/\\")
    base = os.path.basename(path)
    if base == ".git":
        return os.path.basename(os.path.dirname(path))
    return base.removesuffix(".git")


def name_from_url(url: str) -> str | None:
    """The repository name in a remote URL: ``git@github.com:acme/billing-api.git`` -> ``billing-api``."""
    path = url.strip().rstrip("/\\")
    last = re.split(r"[/\\:]", path)[-1]
    return last.removesuffix(".git") or None


def name_from_path(cwd: str) -> str | None:
    """The project of a folder that is not here to ask: worktree layouts, else its own name."""
    parts = [part for part in re.split(r"[/\\]+", cwd.strip()) if part]
    for index in range(len(parts) - 2, -1, -1):  # the innermost layout wins; a branch follows it
        part = parts[index]
        if part.endswith(_WORKTREES_SUFFIX) and len(part) > len(_WORKTREES_SUFFIX):
            return part.removesuffix(_WORKTREES_SUFFIX)
        if part in _WORKTREE_HOLDERS and index >= 1:
            before = index - 2 if parts[index - 1] == ".claude" and part == "worktrees" else index - 1
            if before >= 0:
                return parts[before]
    return parts[-1] if parts else None


def clean_name(raw: str | None) -> str | None:
    """``raw`` lowercased, reduced to ``[a-z0-9._-]``, at most 60 characters; None when nothing is left."""
    if raw is None:
        return None
    name = _NOT_NAME.sub("-", raw.lower()).strip("-._")
    name = name[:MAX_NAME].strip("-._")
    return name or None
