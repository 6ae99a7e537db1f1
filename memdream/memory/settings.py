"""memdream.yaml: the defaults, the user's overrides, validated by the config schema."""

from __future__ import annotations

import copy
import hashlib
from functools import cache
from pathlib import Path
from typing import Any

from memdream import schemas, yamlio
from memdream.errors import InvalidMemory

DEFAULT_CONFIG_FILE = Path(__file__).with_name("default_config.yaml")


@cache
def _defaults() -> dict[str, Any]:
    data: dict[str, Any] = yamlio.load_file(DEFAULT_CONFIG_FILE)
    return data


def default_config_text() -> str:
    """The documented memdream.yaml that `init` writes."""
    return DEFAULT_CONFIG_FILE.read_text(encoding="utf-8")


# Settings renamed: (the section, the old key, the new key). A memdream.yaml with the old key
# still means the same; where both are given, the new one wins.
RENAMED = ((("dream", "selection"), "max_segments", "max_episodes"),)


def _renamed(user: dict[str, Any]) -> dict[str, Any]:
    """``user`` with every old key under its new name (a copy when anything moved)."""
    for path, old, new in RENAMED:
        section: Any = user
        for part in path:
            section = section.get(part) if isinstance(section, dict) else None
        if isinstance(section, dict) and old in section:
            user = copy.deepcopy(user)
            section = user
            for part in path:
                section = section[part]
            value = section.pop(old)
            section.setdefault(new, value)
    return user


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


class Settings:
    """Settings of one memory; ``get("recall.weights.relevance")`` reads a dotted path."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    @classmethod
    def defaults(cls) -> Settings:
        return cls(copy.deepcopy(_defaults()))

    @classmethod
    def from_mapping(cls, user: dict[str, Any], source: str = "memdream.yaml") -> Settings:
        errors = schemas.iter_errors("config", user)
        if errors:
            where = "/".join(str(part) for part in errors[0].absolute_path) or "(top)"
            raise InvalidMemory(f"{source}: {where}: {errors[0].message} (run `memdream lint` for all errors)")
        return cls(_deep_merge(_defaults(), _renamed(user)))

    @classmethod
    def load(cls, path: Path, cache_dir: Path | None = None) -> Settings:
        """The settings in ``path``. ``cache_dir``: where to remember that this very text was
        found valid, so that later commands skip the schema check (and importing jsonschema:
        ~100 ms of every command's start-up)."""
        if not path.exists():
            return cls.defaults()
        try:
            text = path.read_bytes()
            user = yamlio.load_bytes(text)
        except Exception as error:  # yaml.YAMLError, UnicodeDecodeError
            raise InvalidMemory(f"{path.name}: cannot be read: {_one_line(error)}") from None
        if user is None:
            user = {}
        if not isinstance(user, dict):
            raise InvalidMemory(f"{path.name}: must be a mapping of settings")
        stamp = _validity_stamp(text) if cache_dir is not None else None
        marker = cache_dir / _VALID_MARKER if cache_dir is not None else None
        if marker is not None and _read(marker) == stamp:
            return cls(_deep_merge(_defaults(), _renamed(user)))
        settings = cls.from_mapping(user, source=path.name)
        if marker is not None and stamp is not None:
            try:
                yamlio.write_atomic(marker, stamp)
            except OSError:
                pass  # a read-only memory: validated again next time
        return settings

    def get(self, dotted: str) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            node = node[part]
        return node


_VALID_MARKER = "settings.valid"


def _validity_stamp(text: bytes) -> str:
    """What a validation result depends on: the text and the schema it was checked against."""
    digest = hashlib.sha256(text)
    digest.update(b"\0" + (schemas.schema_dir() / "config.schema.json").read_bytes())
    return digest.hexdigest()


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # missing, unreadable or garbled: check again
        return None


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())
