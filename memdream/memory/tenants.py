"""Tenants: one memory each, side by side under one root (``<root>/<NAME>/``, its own git repository).

A command asked for tenant NAME (``--tenant``, or ``MEMDREAM_TENANT``) opens ``<root>/<NAME>`` and only
it: nothing here lists or walks the root. The root comes from ``MEMDREAM_ROOT``, else from ``root:`` in
the user's settings file (``$XDG_CONFIG_HOME/memdream/config.yaml``, by default
``~/.config/memdream/config.yaml``). The folder must say it is NAME's: its memdream.yaml's ``tenant``
is NAME, so a memory moved or renamed into another tenant's place is refused instead of read or written.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream.errors import InvalidInput, InvalidMemory, MemoryNotFound, UsageError
from memdream.memory.paths import CONFIG_FILE

ROOT_ENV = "MEMDREAM_ROOT"
DEFAULT_TENANT = "default"  # what memdream.yaml says when it names no tenant
USER_CONFIG_KEYS = ("root",)
# The tenant names memdream.yaml accepts (schemas/config.schema.json): no '/', no leading dot, no '..'
# alone, never empty; a name is one folder under the root.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
NAME_RULE = "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a digit"


@dataclass(frozen=True)
class TenantRoot:
    """The folder that holds the tenants' memories, and where that was said (shown in errors)."""

    path: Path
    source: str  # ROOT_ENV, or the user settings file it was read from

    @property
    def from_environment(self) -> bool:
        return self.source == ROOT_ENV


def check_name(name: str, source: str) -> str:
    """``name`` when it can name a tenant, else a usage error saying why (``source``: who gave it).
    ``default`` is what memdream.yaml says of a memory outside any root: no tenant's name."""
    if NAME_PATTERN.fullmatch(name) is None:
        raise UsageError(f"{source}: {name!r} is not a tenant name ({NAME_RULE})")
    if name == DEFAULT_TENANT:
        raise UsageError(f"{source}: {DEFAULT_TENANT!r} names the memory of no tenant: choose another name")
    return name


def user_config_path() -> Path:
    """``$XDG_CONFIG_HOME/memdream/config.yaml``; an unset or relative XDG_CONFIG_HOME means ~/.config
    (the XDG base directory rule)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    folder = Path(base) if os.path.isabs(base) else Path.home() / ".config"
    return folder / "memdream" / "config.yaml"


def tenant_root() -> TenantRoot:
    """The root of the tenants: ``MEMDREAM_ROOT``, else ``root:`` in the user settings file."""
    from_env = os.environ.get(ROOT_ENV, "")
    if from_env:
        return TenantRoot(Path(from_env).expanduser().absolute(), ROOT_ENV)
    config = user_config_path()
    configured = read_user_root(config)
    if configured is None:
        raise MemoryNotFound(f"no tenant root: set {ROOT_ENV}, or 'root: PATH' in {config}")
    return TenantRoot(configured, str(config))


def read_user_root(config: Path) -> Path | None:
    """``root`` of the user settings file ``config`` (None when the file or the key is absent); a file
    that says anything else is an error naming the file, never ignored."""
    data = _read_user_config(config)
    root = data.get("root")
    if root is None:
        return None
    if not isinstance(root, str) or not root.strip():
        raise InvalidInput(f"{config}: root must be a folder path")
    path = Path(root).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"{config}: root {root!r} must be an absolute path (or start with ~)")
    return path


def _read_user_config(config: Path) -> dict[str, Any]:
    from memdream import yamlio

    try:
        data = yamlio.load_file(config)
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise InvalidInput(f"{config}: cannot be read: {error.strerror}") from None
    except Exception as error:  # yaml.YAMLError, UnicodeDecodeError
        raise InvalidInput(f"{config}: not valid YAML: {' '.join(str(error).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InvalidInput(f"{config}: must be a mapping of settings (root: PATH)")
    unknown = sorted(str(key) for key in data if key not in USER_CONFIG_KEYS)
    if unknown:
        raise InvalidInput(f"{config}: unknown setting {unknown[0]!r} (known: {', '.join(USER_CONFIG_KEYS)})")
    return data


def tenant_folder(name: str, source: str) -> tuple[TenantRoot, Path]:
    """The root and ``<root>/<name>``, the folder of tenant ``name``'s memory (which may not exist yet)."""
    check_name(name, source)
    root = tenant_root()
    return root, root.path / name


def memory_tenant(memory: Path) -> str:
    """The tenant the memory at ``memory`` says it belongs to (its memdream.yaml's ``tenant``)."""
    from memdream import yamlio

    config = memory / CONFIG_FILE
    try:
        data = yamlio.load_file(config)
    except Exception as error:  # OSError, yaml.YAMLError, UnicodeDecodeError
        raise InvalidMemory(f"{config}: cannot be read: {' '.join(str(error).split())}") from None
    tenant = data.get("tenant", DEFAULT_TENANT) if isinstance(data, dict) else DEFAULT_TENANT
    return tenant if isinstance(tenant, str) else repr(tenant)


def open_tenant(name: str, source: str) -> Path:
    """The memory of tenant ``name``: ``<root>/<name>``, a memory whose memdream.yaml names ``name``."""
    root, folder = tenant_folder(name, source)
    if not (folder / CONFIG_FILE).is_file():
        raise MemoryNotFound(f"{source} {name}: no memory at {folder} (root from {root.source}; "
                             f"`memdream init --tenant {name}` creates it)")
    require_tenant(folder, name)
    return folder.resolve()


def require_tenant(memory: Path, name: str) -> None:
    """Refuse a memory that says it belongs to another tenant than ``name``."""
    says = memory_tenant(memory)
    if says != name:
        hint = f" (a memory of no tenant becomes {name}'s with 'tenant: {name}' in its {CONFIG_FILE})" \
            if says == DEFAULT_TENANT else ""
        raise InvalidMemory(f"{memory}: its {CONFIG_FILE} says tenant {says!r}, not {name!r}: a memory moved or "
                            f"renamed into the place of tenant {name} is not opened{hint}")
