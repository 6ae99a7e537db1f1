"""A fast check that an event matches raw-event.schema.json, for the ingest hot path.

jsonschema costs tens of microseconds per event; ingest must sustain 50,000 events/s. This
check implements the same constraints directly; tests assert it agrees with jsonschema on
generated events. When it finds a problem, jsonschema is asked for the exact message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from memdream import schemas

KINDS = frozenset({"goal", "message", "note", "tool_call", "tool_result", "feedback", "outcome", "plan"})
ACTORS = frozenset({"user", "agent", "tool", "system"})
VERDICTS = frozenset({"confirm", "reject", "correct"})
DEFAULT_ACTOR = {
    "message": "user", "note": "agent", "tool_call": "agent", "goal": "agent", "plan": "agent",
    "tool_result": "tool", "feedback": "user", "outcome": "system",
}
# The schema's own patterns, applied as jsonschema applies them (``re.search``): Python's ``$``
# also matches before one final newline, so "s-1\n" passes the schema and must pass here too.
_TS = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})?$")
_NO_SPACE = re.compile(r"^[^\s]+$")
_SESSION = re.compile(r"^[^\s#]+$")
FIELDS = frozenset({
    "session", "ts", "kind", "id", "actor", "speaker", "text", "tool", "args", "call_id", "ok", "error",
    "fact", "verdict", "target", "goal", "next", "done", "tags", "meta",
})
_MAX = {"id": 256, "speaker": 256, "tool": 256, "call_id": 256, "target": 256}
_STRINGS = ("text", "error", "goal", "speaker", "tool", "call_id", "target")


def _str_list(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    for item in value:
        if not isinstance(item, str):
            return False
    return True


def _fact_ok(fact: Any) -> bool:
    if not isinstance(fact, dict) or len(fact) != 3:
        return False
    subject, attribute, value = fact.get("subject"), fact.get("attribute"), fact.get("value")
    return (
        isinstance(subject, str) and 1 <= len(subject) <= 200
        and isinstance(attribute, str) and 1 <= len(attribute) <= 200
        and isinstance(value, str) and len(value) <= 2000
    )


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _short_string(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 256


# One check per field of the schema, each the whole of that field's rules; a field not in this
# table is not allowed (additionalProperties: false).
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "session": lambda v: isinstance(v, str) and 1 <= len(v) <= 512 and _SESSION.search(v) is not None,
    "ts": lambda v: isinstance(v, str) and _TS.search(v) is not None,
    "kind": lambda v: isinstance(v, str) and v in KINDS,
    "id": lambda v: isinstance(v, str) and 1 <= len(v) <= 256 and _NO_SPACE.search(v) is not None,
    "actor": lambda v: isinstance(v, str) and v in ACTORS,
    "verdict": lambda v: isinstance(v, str) and v in VERDICTS,
    "ok": lambda v: isinstance(v, bool),
    "args": lambda v: isinstance(v, dict),
    "meta": lambda v: isinstance(v, dict),
    "fact": _fact_ok,
    "next": _str_list, "done": _str_list, "tags": _str_list,
    **{name: _short_string if name in _MAX else _string for name in _STRINGS},
}
assert set(_CHECKS) == FIELDS


def fast_valid(event: dict[str, Any]) -> bool:
    """True exactly when ``event`` is valid against the raw event schema."""
    if "session" not in event or "ts" not in event or "kind" not in event:
        return False
    checks = _CHECKS
    for name, value in event.items():
        check = checks.get(name)
        if check is None or not check(value):
            return False
    return True


def first_error(event: dict[str, Any]) -> str | None:
    """None when valid, else one line naming the field and the problem."""
    if fast_valid(event):
        return None
    errors = schemas.iter_errors("raw-event", event)
    if not errors:
        return None
    error = errors[0]
    where = "/".join(str(part) for part in error.absolute_path)
    if error.validator == "additionalProperties":
        unknown = sorted(set(error.instance) - FIELDS) if not where else []
        return f"unknown field {unknown[0]!r}" if unknown else f"{where}: {error.message}"
    return f"{where}: {error.message}" if where else error.message
