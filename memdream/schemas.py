"""The JSON Schemas (package data) and validators built once per process."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_NAMES = ("card", "plan", "config", "raw-event")


def schema_dir() -> Path:
    """Installed wheels carry the schemas inside the package; a source checkout has them at the top."""
    packaged = Path(__file__).with_name("schemas")
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "schemas"


@cache
def load_schema(name: str) -> dict[str, Any]:
    if name not in SCHEMA_NAMES:
        raise KeyError(name)
    with open(schema_dir() / f"{name}.schema.json", encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


@cache
def validator(name: str) -> Any:
    """A compiled Draft 2020-12 validator; cross-schema ``$ref``s resolve through one registry."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = []
    for other in SCHEMA_NAMES:
        schema = load_schema(other)
        resources.append((schema["$id"], Resource.from_contents(schema)))
        resources.append((f"{other}.schema.json", Resource.from_contents(schema)))
    registry: Registry = Registry().with_resources(resources)
    return Draft202012Validator(load_schema(name), registry=registry)


def iter_errors(name: str, instance: Any) -> list[Any]:
    """All schema errors for ``instance``, sorted by their position in the document."""
    errors = list(validator(name).iter_errors(instance))
    errors.sort(key=lambda error: [str(part) for part in error.absolute_path])
    return errors


def is_valid(name: str, instance: Any) -> bool:
    return bool(validator(name).is_valid(instance))
