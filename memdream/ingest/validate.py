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


def _no_space(value: str) -> bool:
    # Every character that `\s` matches but " " is unprintable, so a printable value without " "
    # passes; anything else (including "id\n", which the schema's `$` lets through) asks the regex.
    return (value.isprintable() and " " not in value) or _NO_SPACE.search(value) is not None


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
    "id": lambda v: isinstance(v, str) and 1 <= len(v) <= 256 and _no_space(v),
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


# The checks again, for the hot loop: fields that only need to be strings map to ``str`` (no
# call), the three that fast_valid checks first map to None.
_RULES: dict[str, Any] = {
    **_CHECKS, "text": str, "error": str, "goal": str, "session": None, "ts": None, "kind": None,
}
_KNOWN_SESSIONS: set[str] = set()  # sessions already found valid (a log has few, each many times)
_KNOWN_SESSIONS_MAX = 4096


def fast_valid(event: dict[str, Any]) -> bool:
    """True exactly when ``event`` is valid against the raw event schema."""
    session, kind = event.get("session"), event.get("kind")
    if type(session) is str and session in _KNOWN_SESSIONS:
        pass
    elif _CHECKS["session"](session):
        if len(_KNOWN_SESSIONS) >= _KNOWN_SESSIONS_MAX:
            _KNOWN_SESSIONS.clear()
        _KNOWN_SESSIONS.add(session)  # type: ignore[arg-type]  # checked: a valid session is a str
    else:
        return False
    if not (isinstance(kind, str) and kind in KINDS and _CHECKS["ts"](event.get("ts"))):
        return False
    rules = _RULES
    for name, value in event.items():
        rule = rules.get(name, False)
        if rule is str:
            if not isinstance(value, str):
                return False
        elif rule is False or (rule is not None and not rule(value)):
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


# Length caps of the schema on content fields. A placeholder can be longer than the secret it
# replaces, so a valid value near its cap can outgrow it through redaction alone.
_CONTENT_CAPS = {"speaker": 256}
_FACT_CONTENT_CAPS = {"subject": 200, "attribute": 200, "value": 2000}


def fit_caps(event: dict[str, Any]) -> bool:
    """Cut content fields that redaction pushed over their schema cap; whether any was cut."""
    cut = False
    for name, cap in _CONTENT_CAPS.items():
        if isinstance(event.get(name), str) and len(event[name]) > cap:
            event[name], cut = event[name][:cap], True
    fact = event.get("fact")
    if isinstance(fact, dict):
        for name, cap in _FACT_CONTENT_CAPS.items():
            if isinstance(fact.get(name), str) and len(fact[name]) > cap:
                fact[name], cut = fact[name][:cap], True
    return cut
