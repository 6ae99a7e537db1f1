"""validate.fast_valid agrees exactly with jsonschema on raw events; first_error names the problem."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memdream import schemas
from memdream.ingest.validate import ACTORS, FIELDS, KINDS, VERDICTS, fast_valid, first_error

# -- generators ---------------------------------------------------------------------------------

TIMESTAMPS = st.one_of(
    st.sampled_from([
        "2026-11-07T09:12:03Z", "2026-11-07T09:12:03", "2026-11-07T09:12:03.123456+02:00",
        "2026-11-07T09:12:03-05:30", "2026-11-07T09:12:03.5Z", "9999-99-99T99:99:99Z",
    ]),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})?\Z"),
)
BAD_TIMESTAMPS = st.sampled_from([
    "", "2026-11-07", "2026-11-07 09:12:03Z", "2026-11-07T09:12Z", "2026-11-07T09:12:03+0200",
    "2026-11-07T09:12:03.Z", " 2026-11-07T09:12:03Z", "2026-11-07T09:12:03Z ", "2026-11-07T09:12:03Zjunk",
    "2026-11-07T09:12:03Z\n", "\n2026-11-07T09:12:03Z", "２０２６-11-07T09:12:03Z", "2026-11-07T09:12:03z",
])
NAMES = st.text(min_size=1, max_size=20).filter(lambda s: "#" not in s and not any(c.isspace() for c in s))
SHORT_TEXT = st.text(max_size=40)
JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), SHORT_TEXT)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(SHORT_TEXT, inner, max_size=3)), max_leaves=8)
OBJECTS = st.dictionaries(SHORT_TEXT, JSON_VALUES, max_size=3)
STRING_LISTS = st.lists(SHORT_TEXT, max_size=3)
FACTS = st.fixed_dictionaries({
    "subject": st.text(min_size=1, max_size=30), "attribute": st.text(min_size=1, max_size=30),
    "value": st.text(max_size=50),
})

OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "id": NAMES, "actor": st.sampled_from(sorted(ACTORS)), "speaker": SHORT_TEXT, "text": SHORT_TEXT,
    "tool": SHORT_TEXT, "args": OBJECTS, "call_id": SHORT_TEXT, "ok": st.booleans(), "error": SHORT_TEXT,
    "fact": FACTS, "verdict": st.sampled_from(sorted(VERDICTS)), "target": SHORT_TEXT, "goal": SHORT_TEXT,
    "next": STRING_LISTS, "done": STRING_LISTS, "tags": STRING_LISTS, "meta": OBJECTS,
}


@st.composite
def valid_events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {
        "session": draw(NAMES), "ts": draw(TIMESTAMPS), "kind": draw(st.sampled_from(sorted(KINDS))),
    }
    for name in draw(st.lists(st.sampled_from(sorted(OPTIONAL)), unique=True, max_size=8)):
        event[name] = draw(OPTIONAL[name])
    return event


# Values of the wrong JSON type for a field, plus Python-only look-alikes (tuple, int-bool).
WRONG_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.just([]), st.just({}),
    st.just(["goal"]), st.just({"kind": "goal"}), st.just(("a",)), st.just(1.0), st.just(0), SHORT_TEXT,
)


def _long(n: int) -> str:
    return "x" * n


@st.composite
def mutated_events(draw: st.DrawFn) -> dict[str, Any]:
    event = draw(valid_events())
    mutation = draw(st.sampled_from([
        "wrong_type", "missing_required", "bad_ts", "bad_kind", "extra_field", "bad_fact", "long_string",
        "bad_enum", "bad_list_item", "bad_name", "several",
    ]))
    rounds = draw(st.integers(2, 4)) if mutation == "several" else 1
    for _ in range(rounds):
        chosen = mutation if mutation != "several" else draw(st.sampled_from([
            "wrong_type", "missing_required", "bad_ts", "bad_kind", "extra_field", "bad_fact", "long_string"]))
        _mutate(draw, event, chosen)
    return event


def _mutate(draw: st.DrawFn, event: dict[str, Any], mutation: str) -> None:  # noqa: C901 - one case each
    if mutation == "wrong_type":
        event[draw(st.sampled_from(sorted(FIELDS)))] = draw(WRONG_VALUES)
    elif mutation == "missing_required":
        event.pop(draw(st.sampled_from(["session", "ts", "kind"])), None)
    elif mutation == "bad_ts":
        event["ts"] = draw(BAD_TIMESTAMPS)
    elif mutation == "bad_kind":
        event["kind"] = draw(st.one_of(st.sampled_from(["", "Goal", "goals", "tool-call", "event", " goal"]),
                                       WRONG_VALUES))
    elif mutation == "extra_field":
        event[draw(st.sampled_from(["Text", "timestamp", "role", "", "session ", "content"]))] = draw(JSON_VALUES)
    elif mutation == "bad_fact":
        fact = {"subject": "s", "attribute": "a", "value": "v"}
        variant = draw(st.sampled_from(["missing", "extra", "empty_subject", "empty_attribute", "long_subject",
                                        "long_attribute", "long_value", "wrong_type", "not_object"]))
        if variant == "missing":
            fact.pop(draw(st.sampled_from(sorted(fact))))
        elif variant == "extra":
            fact["source"] = "x"
        elif variant in ("empty_subject", "empty_attribute"):
            fact[variant.split("_")[1]] = ""
        elif variant in ("long_subject", "long_attribute"):
            fact[variant.split("_")[1]] = _long(draw(st.sampled_from([200, 201])))
        elif variant == "long_value":
            fact["value"] = _long(draw(st.sampled_from([2000, 2001])))
        elif variant == "wrong_type":
            fact[draw(st.sampled_from(sorted(fact)))] = draw(WRONG_VALUES)
        event["fact"] = draw(st.just([fact])) if variant == "not_object" else fact
    elif mutation == "long_string":
        name = draw(st.sampled_from(["session", "id", "speaker", "tool", "call_id", "target", "text", "goal"]))
        limit = 512 if name == "session" else 256
        event[name] = _long(draw(st.sampled_from([limit - 1, limit, limit + 1, 5000])))
    elif mutation == "bad_enum":
        name = draw(st.sampled_from(["actor", "verdict"]))
        event[name] = draw(st.one_of(st.sampled_from(["", "User", "assistant", "approve"]), WRONG_VALUES))
    elif mutation == "bad_list_item":
        event[draw(st.sampled_from(["next", "done", "tags"]))] = ["ok", draw(WRONG_VALUES)]
    elif mutation == "bad_name":
        name = draw(st.sampled_from(["session", "id"]))
        event[name] = draw(st.sampled_from(["", "a b", "a\tb", "a#b", "a\n", "\na", "a\u00a0b", "a\u2028",
                                            "#", " ", "trailing\n\n"]))


def _agree(event: dict[str, Any]) -> None:
    snapshot = copy.deepcopy(event)
    expected = bool(schemas.validator("raw-event").is_valid(event))  # jsonschema itself
    assert fast_valid(event) is expected, event
    assert (first_error(event) is None) is expected, event
    assert event == snapshot  # neither check changes the event


# -- the property -------------------------------------------------------------------------------

@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_events())
def test_generated_valid_events_are_valid_for_both(event: dict[str, Any]) -> None:
    assert schemas.is_valid("raw-event", event), event
    _agree(event)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_events())
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": ["goal"]})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "note", "actor": {"a": 1}})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "feedback", "verdict": ["confirm"]})
@example({"session": "s\n", "ts": "2026-11-07T09:12:03Z", "kind": "note"})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z\n", "kind": "note"})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "note", "id": "n1\n"})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "note", "ok": 1})
@example({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "plan", "next": ("a",)})
def test_fast_valid_agrees_with_jsonschema_on_mutated_events(event: dict[str, Any]) -> None:
    _agree(event)


def test_the_fast_check_knows_exactly_the_fields_of_the_schema() -> None:
    assert set(schemas.bundled("raw-event")["properties"]) == FIELDS
    assert schemas.bundled("raw-event")["required"] == ["session", "ts", "kind"]


# -- messages -----------------------------------------------------------------------------------

BASE = {"session": "s-1", "ts": "2026-11-07T09:12:03Z", "kind": "note"}


@pytest.mark.parametrize(("event", "expected"), [
    (BASE, None),
    ({**BASE, "colour": "red"}, "unknown field 'colour'"),
    ({k: v for k, v in BASE.items() if k != "kind"}, "'kind' is a required property"),
    ({**BASE, "kind": "thought"}, "kind: 'thought' is not one of"),
    ({**BASE, "ts": "yesterday"}, "ts: 'yesterday' does not match"),
    ({**BASE, "ok": "yes"}, "ok: 'yes' is not of type 'boolean'"),
    ({**BASE, "fact": {"subject": "a", "attribute": "b"}}, "fact: 'value' is a required property"),
    ({**BASE, "fact": {"subject": "a", "attribute": "b", "value": "c", "why": "d"}},
     "fact: Additional properties are not allowed ('why' was unexpected)"),
    ({**BASE, "tags": ["a", 1]}, "tags/1: 1 is not of type 'string'"),
    ({**BASE, "tool": "t" * 257}, "tool: '" + "t" * 257 + "' is too long"),
])
def test_first_error_names_the_field_and_the_problem(event: dict[str, Any], expected: str | None) -> None:
    found = first_error(event)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found.startswith(expected), found
        assert "\n" not in found
