"""The JSON Schemas (package data) and validators built once per process."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

SCHEMA_NAMES = ("card", "plan", "config", "raw-event", "extractor-output")


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


def _pointer(document: dict[str, Any], pointer: str) -> Any:
    node: Any = document
    for part in pointer.lstrip("/").split("/") if pointer.strip("/") else []:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _inline(node: Any, current: str) -> Any:
    """Replace every ``$ref`` by the schema it names (ours have no recursive refs).

    jsonschema resolves references on every use; inlined, validating a card costs half as much.
    """
    if isinstance(node, list):
        return [_inline(item, current) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target, _, pointer = str(node["$ref"]).partition("#")
        name = target.removesuffix(".schema.json") if target else current
        resolved = _inline(_pointer(load_schema(name), pointer), name)
        extra = {key: _inline(value, current) for key, value in node.items() if key != "$ref"}
        return {**resolved, **extra}
    return {key: _inline(value, current) for key, value in node.items() if key != "$defs"}


@cache
def bundled(name: str) -> dict[str, Any]:
    """The schema with all references inlined: what the validators run on."""
    schema: dict[str, Any] = _inline(load_schema(name), name)
    return schema


@cache
def validator(name: str) -> Any:
    """A Draft 2020-12 validator over the bundled schema, built once per process."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(bundled(name))


@cache
def _compiled(name: str) -> Any:
    """The bundled schema compiled to Python code (fastjsonschema), for the yes/no answer.

    jsonschema walks the schema anew for every document (about half a millisecond a card, five
    seconds for lint or a dream over 10,000 cards); most documents are valid and need only the
    answer. fastjsonschema implements draft 7; the bundled schemas have no references left and use
    only keywords that mean the same in draft 7 and 2020-12 (tests/test_schemas.py holds both to
    the same answers). Where it says invalid, jsonschema decides and gives the messages. One
    difference is left: a Python tuple counts as an array here, not for jsonschema; documents come
    from JSON and YAML, which never make one.
    """
    import fastjsonschema

    return fastjsonschema.compile(bundled(name), use_formats=False)


def _fast_valid(name: str, instance: Any) -> bool:
    from fastjsonschema import JsonSchemaException

    try:
        _compiled(name)(instance)
    except JsonSchemaException:
        return False
    return True


def iter_errors(name: str, instance: Any, fast: bool = True) -> list[Any]:
    """All schema errors for ``instance``, sorted by their position in the document. ``fast=False``:
    jsonschema alone (for a caller whose own fast check already said invalid)."""
    if fast and _fast_valid(name, instance):
        return []
    errors = list(validator(name).iter_errors(instance))
    errors.sort(key=lambda error: [str(part) for part in error.absolute_path])
    return errors


def is_valid(name: str, instance: Any) -> bool:
    return _fast_valid(name, instance) or bool(validator(name).is_valid(instance))
