"""Turn jsonschema errors into messages a person can act on, with the node to point at."""

from __future__ import annotations

import difflib
from typing import Any

from memdream.lint.positions import NodeLocator, Position

# Patterns of the schemas, described in words instead of echoing the regular expression.
_PATTERN_WORDS = {
    "timestamp": "is not an ISO 8601 timestamp (e.g. 2026-11-07T09:12:03Z)",
    "card_id": "is not a valid card id (lowercase letters, digits, '.', '_', '-')",
    "log://": "is not an evidence reference of the form log://<session>#<event-id>",
    "keep|decay": "is not a ttl policy (keep or decay-<days>d)",
    "sha256": "is not a digest of the form sha256:<64 hex digits>",
}


def _describe_pattern(error: Any) -> str:
    pattern = str(error.validator_value)
    if pattern.startswith("^[0-9]{4}-"):
        words = _PATTERN_WORDS["timestamp"]
    elif pattern.startswith("^[a-z0-9][a-z0-9._-]"):
        words = _PATTERN_WORDS["card_id"]
    else:
        words = next((text for key, text in _PATTERN_WORDS.items() if key in pattern), "")
        words = words or f"does not match the pattern {pattern}"
    return f"{error.instance!r} {words}"


def _field_name(path: list[str | int]) -> str:
    shown = ""
    for part in path:
        shown += f"[{part}]" if isinstance(part, int) else (f".{part}" if shown else str(part))
    return shown


def describe(error: Any, locator: NodeLocator) -> tuple[Position, str]:
    """Position and one-line message for one jsonschema ``ValidationError``."""
    path: list[str | int] = list(error.absolute_path)
    where = _field_name(path)
    prefix = f"{where}: " if where else ""
    validator = error.validator
    if validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(known))
        name = extra[0] if extra else "?"
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return locator.key([*path, name]), f"{prefix}unknown field {name!r}{hint}"
    if validator == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else "?"
        return locator.value(path), f"{prefix}missing required field {missing!r}"
    if validator == "pattern":
        return locator.value(path), f"{prefix}{_describe_pattern(error)}"
    if validator == "enum":
        allowed = ", ".join(str(value) for value in error.validator_value)
        return locator.value(path), f"{prefix}{error.instance!r} is not one of: {allowed}"
    if validator == "minItems" and error.validator_value == 1:
        return locator.value(path), f"{prefix}must not be empty"
    if validator == "type" and not path:
        return locator.value(path), f"document must be a YAML mapping, not {type(error.instance).__name__}"
    return locator.value(path), f"{prefix}{error.message}"
