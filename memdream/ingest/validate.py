"""A fast check that an event matches raw-event.schema.json, for the ingest hot path.

jsonschema costs tens of microseconds per event; ingest must sustain 50,000 events/s. This
check implements the same constraints directly; tests assert it agrees with jsonschema on
generated events. When it finds a problem, jsonschema is asked for the exact message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from memdream import clock, schemas

# Everything below is read from raw-event.schema.json: enums, caps, patterns and the field list
# exist once, in the schema. The schema's patterns are applied as jsonschema applies them
# (``re.search``): Python's ``$`` also matches before one final newline, so "s-1\n" passes the
# schema and must pass here too.
_SCHEMA = schemas.bundled("raw-event")
_PROPERTIES: dict[str, dict[str, Any]] = _SCHEMA["properties"]
_FACT_PROPERTIES: dict[str, dict[str, Any]] = _PROPERTIES["fact"]["properties"]
FIELDS = frozenset(_PROPERTIES)
REQUIRED = tuple(_SCHEMA["required"])
KINDS = frozenset(_PROPERTIES["kind"]["enum"])
ACTORS = frozenset(_PROPERTIES["actor"]["enum"])
VERDICTS = frozenset(_PROPERTIES["verdict"]["enum"])
DEFAULT_ACTOR = {
    "message": "user", "note": "agent", "tool_call": "agent", "goal": "agent", "plan": "agent",
    "tool_result": "tool", "feedback": "user", "outcome": "system",
}
assert set(DEFAULT_ACTOR) == KINDS and set(DEFAULT_ACTOR.values()) <= ACTORS
_TS = re.compile(_PROPERTIES["ts"]["pattern"])
_NO_SPACE = re.compile(_PROPERTIES["id"]["pattern"])
_SESSION = re.compile(_PROPERTIES["session"]["pattern"])
_SESSION_LENGTHS = (_PROPERTIES["session"]["minLength"], _PROPERTIES["session"]["maxLength"])
_ID_LENGTHS = (_PROPERTIES["id"]["minLength"], _PROPERTIES["id"]["maxLength"])
# Free strings (no pattern), and the caps of those that have one.
_STRINGS = tuple(name for name, rule in _PROPERTIES.items() if rule.get("type") == "string" and "pattern" not in rule)
_MAX = {name: int(_PROPERTIES[name]["maxLength"]) for name in _STRINGS if "maxLength" in _PROPERTIES[name]}
_FACT_LENGTHS = {name: (rule.get("minLength", 0), rule["maxLength"]) for name, rule in _FACT_PROPERTIES.items()}
_JSON_TYPES: dict[str, type] = {"string": str, "boolean": bool, "object": dict, "array": list}


def _str_list(value: Any) -> bool:
    if not isinstance(value, list):
        return False
    for item in value:
        if not isinstance(item, str):
            return False
    return True


def _fact_ok(fact: Any) -> bool:
    if not isinstance(fact, dict) or len(fact) != len(_FACT_LENGTHS):
        return False
    for name, (shortest, longest) in _FACT_LENGTHS.items():
        value = fact.get(name)
        if not isinstance(value, str) or not shortest <= len(value) <= longest:
            return False
    return True


def _no_space(value: str) -> bool:
    # Every character that `\s` matches but " " is unprintable, so a printable value without " "
    # passes; anything else (including "id\n", which the schema's `$` lets through) asks the regex.
    return (value.isprintable() and " " not in value) or _NO_SPACE.search(value) is not None


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _capped_string(cap: int) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and len(value) <= cap


# One check per field of the schema, each the whole of that field's rules; a field not in this
# table is not allowed (additionalProperties: false).
_CHECKS: dict[str, Callable[[Any], bool]] = {
    "session": lambda v: (isinstance(v, str) and _SESSION_LENGTHS[0] <= len(v) <= _SESSION_LENGTHS[1]
                          and _SESSION.search(v) is not None),
    "ts": lambda v: isinstance(v, str) and _TS.search(v) is not None,
    "kind": lambda v: isinstance(v, str) and v in KINDS,
    "id": lambda v: isinstance(v, str) and _ID_LENGTHS[0] <= len(v) <= _ID_LENGTHS[1] and _no_space(v),
    "actor": lambda v: isinstance(v, str) and v in ACTORS,
    "verdict": lambda v: isinstance(v, str) and v in VERDICTS,
    "ok": lambda v: isinstance(v, bool),
    "args": lambda v: isinstance(v, dict),
    "meta": lambda v: isinstance(v, dict),
    "fact": _fact_ok,
    "next": _str_list, "done": _str_list, "tags": _str_list,
    **{name: _capped_string(_MAX[name]) if name in _MAX else _string for name in _STRINGS},
}
assert set(_CHECKS) == FIELDS


# The hot path checks an event against a plan made once per set of field names (in order): the
# JSON type every field must have, then the value checks that a type alone does not settle.
_TYPES: dict[str, type] = {name: _JSON_TYPES[rule.get("type", "string")] for name, rule in _PROPERTIES.items()}
assert set(_TYPES) == FIELDS
_SETTLED_BY_TYPE = frozenset(name for name, rule in _PROPERTIES.items() if set(rule) <= {"type", "description"})
_CHECKED_FIRST = frozenset({"session", "ts", "kind"})
assert _CHECKED_FIRST == frozenset(REQUIRED)
_ENUMS = {"actor": ACTORS, "verdict": VERDICTS}
_CAPPED = frozenset(_MAX)  # free strings with a length cap
_VALUE_CHECKS: dict[str, Callable[[Any], bool]] = {"fact": _fact_ok, "next": _str_list, "done": _str_list,
                                                   "tags": _str_list}
assert {"id", *_ENUMS, *_CAPPED, *_VALUE_CHECKS} == FIELDS - _SETTLED_BY_TYPE - _CHECKED_FIRST
# (types of the fields in order, enum fields and their values, capped fields, other checks)
Plan = tuple[tuple[type, ...], tuple[tuple[str, frozenset[str]], ...], tuple[tuple[str, int], ...],
             tuple[tuple[str, Callable[[Any], bool]], ...]]
_PLANS: dict[tuple[str, ...], Plan | None] = {}
_PLANS_MAX = 1024
_UNPLANNED: Any = object()
_KNOWN_SESSIONS: set[str] = set()  # sessions already found valid (a log has few, each many times)
_KNOWN_SESSIONS_MAX = 4096
_ts_search = _TS.search


def _plan(names: tuple[str, ...]) -> Plan | None:
    """The plan for events with these fields; None when the names alone make them invalid."""
    if not FIELDS.issuperset(names) or not _CHECKED_FIRST.issubset(names):
        return None
    return (tuple(_TYPES[name] for name in names),
            tuple((name, _ENUMS[name]) for name in names if name in _ENUMS),
            tuple((name, _MAX[name]) for name in names if name in _CAPPED),
            tuple((name, _VALUE_CHECKS[name]) for name in names if name in _VALUE_CHECKS))


def fast_valid(event: dict[str, Any]) -> bool:
    """True exactly when ``event`` is valid against the raw event schema."""
    names = tuple(event)
    plan = _PLANS.get(names, _UNPLANNED)
    if plan is _UNPLANNED:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        plan = _PLANS[names] = _plan(names)
    if plan is None:
        return False
    types, enums, capped, checks = plan
    if tuple(map(type, event.values())) != types:
        return _fields_valid(event)  # a wrong type, or a subclass (str subclasses are strings)
    session = event["session"]
    if session not in _KNOWN_SESSIONS:
        if not _CHECKS["session"](session):
            return False
        if len(_KNOWN_SESSIONS) >= _KNOWN_SESSIONS_MAX:
            _KNOWN_SESSIONS.clear()
        _KNOWN_SESSIONS.add(session)
    if event["kind"] not in KINDS or _ts_search(event["ts"]) is None:
        return False
    event_id = event.get("id")
    if event_id is not None and not (_ID_LENGTHS[0] <= len(event_id) <= _ID_LENGTHS[1] and _no_space(event_id)):
        return False
    for name, allowed in enums:
        if event[name] not in allowed:
            return False
    for name, cap in capped:
        if len(event[name]) > cap:
            return False
    for name, check in checks:
        if not check(event[name]):
            return False
    return True


def _fields_valid(event: dict[str, Any]) -> bool:
    """Field by field, each with its whole rule."""
    if "session" not in event or "ts" not in event or "kind" not in event:
        return False
    checks = _CHECKS
    for name, value in event.items():
        check = checks.get(name)
        if check is None or not check(value):
            return False
    return True


# The schema's pattern says what a timestamp looks like, not that it names a moment: these do.
_VALID_DATES: set[str] = set()  # "YYYY-MM-DD" already found in the calendar (a log has few)
_VALID_DATES_MAX = 4096
FUTURE_TOLERANCE = timedelta(days=1)  # clocks drift and zones differ; beyond this a time is in the future


def calendar_valid(ts: str) -> bool:
    """Whether ``ts``, which matches the schema's pattern, names a real moment: month 1-12, a day
    of that month, hours below 24, minutes and seconds below 60, an offset below 24 hours."""
    if ts[-1:] == "\n":  # the pattern's `$` lets one final newline through
        ts = ts[:-1]
    day = ts[:10]
    if day not in _VALID_DATES:
        try:
            date.fromisoformat(day)
        except ValueError:
            return False
        if len(_VALID_DATES) >= _VALID_DATES_MAX:
            _VALID_DATES.clear()
        _VALID_DATES.add(day)
    if ts[11:13] > "23" or ts[14:16] > "59" or ts[17:19] > "59":
        return False
    return not (len(ts) > 20 and ts[-6] in "+-" and (ts[-5:-3] > "23" or ts[-2:] > "59"))


_USUAL_MINUTES: dict[str, bool] = {}  # "YYYY-MM-DDTHH:MM" of a real minute well before the future cutoff


def usual_ts(ts: str) -> bool:
    """For the hot path: True when ``ts`` (which matches the schema's pattern) is a real moment well
    before the future cutoff, mostly in one lookup (a log has few distinct minutes); False sends the
    event to :func:`calendar_valid` and :func:`is_future`, which say what is wrong with it."""
    if not _USUAL_MINUTES.get(ts[:16], False) and not _remember_minute(ts[:16]):
        return False
    return ts[17:19] <= "59" and (len(ts) <= 20 or calendar_valid(ts))


def _remember_minute(minute: str) -> bool:
    if not _future:
        set_ingest_clock(clock.now())
    usual = minute[:10] < _future[0][0] and calendar_valid(minute + ":00Z")
    if usual:
        if len(_USUAL_MINUTES) >= _VALID_DATES_MAX:
            _USUAL_MINUTES.clear()
        _USUAL_MINUTES[minute] = True
    return usual


def ts_problem(ts: Any) -> str | None:
    """Why a timestamp that passes the schema is not a moment; None when it is one (or is no string)."""
    if isinstance(ts, str) and _ts_search(ts) is not None and not calendar_valid(ts):
        return f"ts: not a valid date and time: {ts!r}"
    return None


# The latest time an event may carry, and a date two days before it: an event dated before that
# is in the past whatever its offset (below a day), which a string comparison tells.
_future: list[tuple[str, datetime]] = []


def set_ingest_clock(now: datetime) -> None:
    """Start a run at ``now``: events dated later than ``now`` + :data:`FUTURE_TOLERANCE` are future ones."""
    cutoff = now + FUTURE_TOLERANCE
    _future[:] = [((cutoff - timedelta(days=2)).strftime("%Y-%m-%d"), cutoff)]
    _USUAL_MINUTES.clear()


def is_future(ts: str) -> bool:
    """Whether the valid timestamp ``ts`` lies beyond the tolerance after the ingest clock."""
    if not _future:
        set_ingest_clock(clock.now())
    early, cutoff = _future[0]
    if ts[:10] < early:  # the usual event: a string comparison
        return False
    try:
        return clock.parse_timestamp(ts) > cutoff
    except ValueError:
        return False


def first_error(event: dict[str, Any]) -> str | None:
    """None when valid, else one line naming the field and the problem."""
    if fast_valid(event):
        return None
    errors = schemas.iter_errors("raw-event", event, fast=False)
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
_CONTENT_CAPS = {"speaker": _MAX["speaker"]}
_FACT_CONTENT_CAPS = {name: longest for name, (_, longest) in _FACT_LENGTHS.items()}


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
