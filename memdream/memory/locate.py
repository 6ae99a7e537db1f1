"""Finding the memory a command works on: --memory, else MEMDREAM_MEMORY, else the nearest ancestor."""

from __future__ import annotations

import os
from pathlib import Path

from memdream.errors import MemoryNotFound
from memdream.memory.paths import CONFIG_FILE

MEMORY_ENV = "MEMDREAM_MEMORY"


def find_memory_root(explicit: Path | None = None, start: Path | None = None) -> Path:
    """The root folder of the memory to use; raises :class:`MemoryNotFound` with the places looked at."""
    if explicit is not None:
        return _require(Path(explicit), "--memory")
    from_env = os.environ.get(MEMORY_ENV)
    if from_env:
        return _require(Path(from_env), MEMORY_ENV)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    raise MemoryNotFound(
        f"no memory found: {here} and its parents hold no {CONFIG_FILE} "
        f"(pass --memory PATH, set {MEMORY_ENV}, or run `memdream init`)"
    )


def _require(path: Path, source: str) -> Path:
    if not path.is_dir():
        raise MemoryNotFound(f"{source}: {path} is not a folder")
    if not (path / CONFIG_FILE).is_file():
        raise MemoryNotFound(
            f"{source}: {path} is not a memdream memory (no {CONFIG_FILE}; run `memdream init {path}`)")
    return path.resolve()
