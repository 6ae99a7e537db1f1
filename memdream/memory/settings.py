"""memdream.yaml: the defaults, the user's overrides, validated by the config schema."""

from __future__ import annotations

import copy
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
        return cls(_deep_merge(_defaults(), user))

    @classmethod
    def load(cls, path: Path) -> Settings:
        if not path.exists():
            return cls.defaults()
        try:
            user = yamlio.load_file(path)
        except Exception as error:  # yaml.YAMLError, UnicodeDecodeError
            raise InvalidMemory(f"{path.name}: cannot be read: {_one_line(error)}") from None
        if user is None:
            user = {}
        if not isinstance(user, dict):
            raise InvalidMemory(f"{path.name}: must be a mapping of settings")
        return cls.from_mapping(user, source=path.name)

    def get(self, dotted: str) -> Any:
        node: Any = self.values
        for part in dotted.split("."):
            node = node[part]
        return node


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())
