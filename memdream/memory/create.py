"""`memdream init`: lay out a new memory folder as a git repository with a first commit."""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from memdream import __version__, gitops, yamlio
from memdream.clock import now_iso
from memdream.errors import GitError, UsageError
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


def textconv_command() -> str:
    """The diff driver command; the running interpreter, so it works inside a venv and from cron."""
    return f"{shlex.quote(sys.executable)} -m memdream textconv"


def _check_target(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a folder")
    if root.is_dir():
        extra = [entry.name for entry in root.iterdir() if entry.name != ".git"]
        if extra:
            raise UsageError(f"{root} is not empty and not a memory (found {', '.join(sorted(extra)[:3])}); "
                             "choose an empty or new folder")


def init_memory(root: Path) -> InitResult:
    """Create a memory at ``root``; an existing memory is left exactly as it is.

    git is checked for first, and an init that fails removes what it created (never a folder
    that was there before), so that `memdream init` can simply be run again.
    """
    root = Path(root)
    if (root / CONFIG_FILE).is_file():
        return InitResult(root.resolve(), created=False, commit=None)
    _check_target(root)
    if shutil.which("git") is None:
        raise GitError("git is not installed (not found on PATH): install git, then run `memdream init` again")
    created_top = _first_missing(root)
    existing = {entry.name for entry in root.iterdir()} if root.is_dir() else set()
    try:
        return _create(root)
    except BaseException:
        _undo(root, created_top, existing)
        raise


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


def _create(root: Path) -> InitResult:
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
    yamlio.write_atomic(paths.config, default_config_text())
    yamlio.dump_file(paths.plan, Plan.empty(now_iso()).to_dict())
    yamlio.write_atomic(paths.index, EMPTY_INDEX)
    yamlio.write_atomic(root / ".gitignore", GITIGNORE)
    yamlio.write_atomic(root / ".gitattributes", GITATTRIBUTES)
    if not gitops.is_repo(root):
        gitops.init_repo(root)
    gitops.set_local_config(root, "diff.memdream.textconv", textconv_command())
    sha = gitops.commit(root, "memdream init", trailers={"Memdream-Version": __version__})
    Settings.load(paths.config, cache_dir=paths.state / "cache")  # checked and stamped once, here
    return InitResult(root.resolve(), created=True, commit=sha)
