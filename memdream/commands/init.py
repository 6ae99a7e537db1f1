"""`memdream init`: lay out a new memory folder as a git repository with a first commit."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream import __version__, gitops, yamlio
from memdream.clock import now_iso
from memdream.errors import GitError, UsageError
from memdream.memory import trailers as trailer
from memdream.memory.lock import index_lock
from memdream.memory.paths import CONFIG_FILE, LAYERS, MemoryPaths
from memdream.memory.plan import Plan
from memdream.memory.settings import Settings, default_config_text

GITIGNORE = """\
# Raw events stay local by default (size, erasure requests); raw/MANIFEST.jsonl pins their hashes.
raw/*
!raw/MANIFEST.jsonl
# Local state: ingest offsets, dream checkpoint, usage log, caches, lock.
.memdream/
"""

GITATTRIBUTES = """\
# Show cards and the plan through memdream's textconv: canonical form, so diffs show real changes only.
cards/**/*.yaml diff=memdream
archive/**/*.yaml diff=memdream
plan.yaml diff=memdream
"""

EMPTY_INDEX = "# Memory index\n\nNo cards yet: `memdream dream` rebuilds this file.\n"


@dataclass(frozen=True)
class InitResult:
    root: Path
    created: bool
    commit: str | None
    in_project: str | None = None  # --in-repo: the project repository that tracks the memory
    inside: str | None = None  # a memory with its own repository, made inside this other repository

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "created": self.created, "commit": self.commit,
                "in_project": self.in_project, "inside": self.inside}


TEXTCONV_FROM_PATH = "memdream textconv"


def textconv_command() -> str:
    """The diff driver command: `memdream textconv` from PATH when memdream is on it (a clone on
    another machine then needs only the one global setting the README gives); otherwise the
    running interpreter's, so that a memory made from a virtualenv that is not on PATH diffs too."""
    if shutil.which("memdream") is not None:
        return TEXTCONV_FROM_PATH
    return f"{shlex.quote(sys.executable)} -m memdream textconv"


def _check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    if root.is_dir():
        extra = [entry.name for entry in root.iterdir() if entry.name != ".git"]
        if extra:
            raise UsageError(f"{root} is not empty and not a memory (found {', '.join(sorted(extra)[:3])}); "
                             "choose an empty or new folder")


def init_tenant(name: str, source: str = "--tenant") -> InitResult:
    """Create tenant ``name``'s memory: ``<root>/<name>``, its own git repository, its memdream.yaml
    saying ``tenant: <name>``. An existing memory there is left as it is, if it is ``name``'s."""
    from memdream.memory.tenants import require_tenant, tenant_folder

    _, folder = tenant_folder(name, source)
    if (folder / CONFIG_FILE).is_file():
        require_tenant(folder, name)
    return init_memory(folder, tenant=name)


def init_memory(root: Path, in_repo: bool = False, commit: bool = False, tenant: str | None = None) -> InitResult:
    """Create a memory at ``root``; an existing memory is left exactly as it is.

    ``in_repo``: the memory is a folder of the enclosing project repository (no repository of its
    own): its files are staged there, and committed (only the memory's paths) with ``commit``.
    ``tenant``: the tenant its memdream.yaml names (default: ``default``).
    git is checked for first, and an init that fails removes what it created (never a folder
    that was there before), so that `memdream init` can simply be run again.
    """
    root = Path(root)
    if (root / CONFIG_FILE).is_file():
        return InitResult(root.resolve(), created=False, commit=None)
    if tenant is not None and in_repo:
        raise UsageError("a tenant's memory is its own git repository: leave out --in-repo")
    _check_target(root)
    if shutil.which("git") is None:
        raise GitError("git is not installed (not found on PATH): install git, then run `memdream init` again")
    if commit and not in_repo:
        raise UsageError("--commit is for --in-repo: a memory with its own repository always commits")
    created_top = _first_missing(root)
    enclosing = gitops.project_top(_nearest_existing(root))
    if in_repo and enclosing is None:
        raise UsageError(f"--in-repo: {root} is not inside a git repository (run `git init` there first, "
                         "or leave out --in-repo for a memory with its own repository)")
    existing = {entry.name for entry in root.iterdir()} if root.is_dir() else set()
    try:
        if in_repo:
            return _create_in_project(root, str(enclosing), commit)
        made = _create(root, tenant)
    except BaseException:
        _undo(root, created_top, existing)
        raise
    inside = enclosing if enclosing is not None and Path(enclosing).resolve() != made.root else None
    return InitResult(made.root, made.created, made.commit, inside=inside)


def _nearest_existing(root: Path) -> Path:
    for folder in (root.absolute(), *root.absolute().parents):
        if folder.is_dir():
            return folder
    return Path("/")


def _first_missing(root: Path) -> Path | None:
    """The outermost folder that ``mkdir -p root`` will create (None when ``root`` exists)."""
    missing = None
    for folder in (root.absolute(), *root.absolute().parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _undo(root: Path, created_top: Path | None, existing: set[str]) -> None:
    """Remove what a failed init made: the folders it created, or the entries it added to ``root``."""
    if created_top is not None:
        shutil.rmtree(created_top, ignore_errors=True)
        return
    for entry in root.iterdir():
        if entry.name in existing:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _create(root: Path, tenant: str | None = None) -> InitResult:
    _lay_out(root, tenant)
    if not (root / ".git").exists():  # its own repository, even inside a project's
        gitops.init_repo(root)
    gitops.set_local_config(root, "diff.memdream.textconv", textconv_command())
    sha = gitops.commit(root, "memdream init", trailers={trailer.VERSION: __version__},
                        index_lock=index_lock(MemoryPaths(root).state))
    _stamp_settings(root)
    return InitResult(root.resolve(), created=True, commit=sha)


def _create_in_project(root: Path, project: str, commit: bool) -> InitResult:
    """The memory as a folder of the project's repository: staged there, committed only on request."""
    _lay_out(root)
    if gitops.project_top(root) != project:  # e.g. the folder is ignored by the project: say so
        raise GitError(f"{root} is not part of the repository {project}")
    if not gitops.query(str(root), "config", "--local", "diff.memdream.textconv"):
        gitops.set_local_config(root, "diff.memdream.textconv", textconv_command())
    sha = None
    if commit:
        sha = gitops.commit(root, "memdream init", trailers={trailer.VERSION: __version__}, paths=["."],
                            index_lock=index_lock(MemoryPaths(root).state))
    else:
        gitops.stage(root, ["."], index_lock=index_lock(MemoryPaths(root).state))
    _stamp_settings(root)
    return InitResult(root.resolve(), created=True, commit=sha, in_project=project)


def _stamp_settings(root: Path) -> None:
    paths = MemoryPaths(root)
    Settings.load(paths.config, cache_dir=paths.state / "cache")  # checked and stamped once, here


def config_text(tenant: str | None = None) -> str:
    """The documented memdream.yaml, naming ``tenant`` when one is given."""
    text = default_config_text()
    if tenant is None:
        return text
    named, count = _TENANT_LINE.subn(f"tenant: {tenant}", text, count=1)
    if count != 1:
        raise AssertionError("default_config.yaml has no 'tenant: default' line")
    return named


_TENANT_LINE = re.compile(r"^tenant: default$", re.MULTILINE)


def _lay_out(root: Path, tenant: str | None = None) -> None:
    paths = MemoryPaths(root)
    root.mkdir(parents=True, exist_ok=True)
    for base in (paths.cards, paths.archive):
        for layer in LAYERS:
            (base / layer).mkdir(parents=True, exist_ok=True)
            (base / layer / ".gitkeep").touch()
    paths.audit.mkdir(exist_ok=True)
    (paths.audit / ".gitkeep").touch()
    paths.raw.mkdir(exist_ok=True)
    paths.state.mkdir(exist_ok=True)
    yamlio.write_atomic(paths.config, config_text(tenant))
    yamlio.dump_file(paths.plan, Plan.empty(now_iso()).to_dict())
    yamlio.write_atomic(paths.index, EMPTY_INDEX)
    yamlio.write_atomic(root / ".gitignore", GITIGNORE)
    yamlio.write_atomic(root / ".gitattributes", GITATTRIBUTES)
