"""Finding the memory a command works on, and only that one.

In order: ``--memory PATH``; ``--tenant NAME`` (``<root>/<NAME>``, see :mod:`memdream.memory.tenants`);
``MEMDREAM_TENANT``; ``MEMDREAM_MEMORY``; the nearest folder above the working directory that holds
memdream.yaml. What the command line says beats the environment; two answers at one level (``--memory``
with ``--tenant``, or both variables) are a usage error rather than a guess, because a wrong guess
would read or write another tenant's memory.
"""

from __future__ import annotations

import os
from pathlib import Path

from memdream.errors import MemoryNotFound, UsageError
from memdream.memory.paths import CONFIG_FILE

MEMORY_ENV = "MEMDREAM_MEMORY"
TENANT_ENV = "MEMDREAM_TENANT"


def find_memory_root(explicit: Path | None = None, start: Path | None = None, tenant: str | None = None) -> Path:
    """The root folder of the memory to use; raises :class:`MemoryNotFound` with the places looked at."""
    if explicit is not None and tenant is not None:
        raise UsageError("--memory and --tenant both name a memory: give one of them")
    if explicit is not None:
        return _require(Path(explicit), "--memory")
    if tenant is not None:
        return _tenant_memory(tenant, "--tenant")
    from_env, tenant_env = os.environ.get(MEMORY_ENV), os.environ.get(TENANT_ENV)
    if from_env and tenant_env:
        raise UsageError(f"{MEMORY_ENV} and {TENANT_ENV} are both set: unset one, or pass --memory or --tenant")
    if tenant_env:
        return _tenant_memory(tenant_env, TENANT_ENV)
    if from_env:
        return _require(Path(from_env), MEMORY_ENV)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_FILE).is_file():
            return folder
    raise MemoryNotFound(
        f"no memory found: {here} and its parents hold no {CONFIG_FILE} "
        f"(pass --memory PATH or --tenant NAME, set {MEMORY_ENV}, or run `memdream init`)"
    )


def requested_tenant(tenant: str | None = None) -> str | None:
    """The tenant a command is asked for: ``--tenant``, else ``MEMDREAM_TENANT`` (None: no tenant)."""
    return tenant if tenant is not None else os.environ.get(TENANT_ENV) or None


def _tenant_memory(name: str, source: str) -> Path:
    from memdream.memory.tenants import open_tenant

    return open_tenant(name, source)


def _require(path: Path, source: str) -> Path:
    if not path.is_dir():
        raise MemoryNotFound(f"{source}: {path} is not a folder")
    if not (path / CONFIG_FILE).is_file():
        raise MemoryNotFound(
            f"{source}: {path} is not a memdream memory (no {CONFIG_FILE}; run `memdream init {path}`)")
    return path.resolve()
