"""The fast yes/no schema check (fastjsonschema, draft 7) answers as jsonschema (2020-12) does on
the bundled schemas: a document it calls valid is valid, and ``is_valid``/``iter_errors`` are
jsonschema's answers whatever the fast check says."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from memdream import schemas
from tests.conftest import card_data

PLAN = {"goal": "ship the refund endpoint", "next": [{"text": "run the tests", "evidence": ["log://s-1#e2"],
                                                       "scope": "billing-api"}],
        "done": [], "updated_at": "2026-11-07T09:40:00Z"}
EVENT = {"session": "s-1", "id": "e1", "ts": "2026-11-07T09:40:00Z", "kind": "tool_result", "tool": "bash",
         "ok": True, "text": "12 passed", "args": {"command": "pytest -q"}, "tags": ["salience:weak"]}
CONFIG = {"version": 1, "dream": {"admit": {"volatility_threshold": 0.5}}, "recall": {"budget": 2000}}
VALID = {"card": card_data(evidence_count=7, tags=["project:billing-api"], importance=0.5, reference_count=3),
         "plan": PLAN, "raw-event": EVENT, "config": CONFIG}

# What a mutation may put in place of a value: the kinds of wrong a hand-edited file has.
ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5000), st.sampled_from([0.0, 1.0, 1.5, -0.5, 2.0, float("inf")]),
    st.sampled_from(["", "x", "verified", "decay-0d", "decay-90d", "keep", "log://s#e", "log://s e#1",
                     "sha256:" + "a" * 64, "2026-11-07", "2026-11-07T09:40:00Z", "F-1", "f-1", "bad id"]),
    st.just([]), st.just([1, 1]), st.just(["a", "a"]), st.just({}), st.just({"ref": "log://s#e"}),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    name = draw(st.sampled_from(sorted(VALID)))
    document = copy.deepcopy(VALID[name])
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(document)
        path = draw(st.sampled_from(paths))
        parent = document
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "delete", "add"]))
        if action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "evidence_count", "scope", "value", "attribute"]))] = \
                copy.deepcopy(draw(ODD_VALUES))
        else:
            parent[path[-1]] = copy.deepcopy(draw(ODD_VALUES))
    return name, document


@settings(max_examples=1500, deadline=None)
@given(mutated())
def test_the_fast_check_never_passes_what_jsonschema_rejects(case: tuple[str, Any]) -> None:
    name, document = case
    strict = bool(schemas.validator(name).is_valid(document))
    if schemas._fast_valid(name, document):
        assert strict, document
    assert schemas.is_valid(name, document) == strict
    assert (schemas.iter_errors(name, document) == []) == strict


def test_valid_documents_pass_and_messages_still_come_from_jsonschema() -> None:
    for name, document in VALID.items():
        assert schemas._fast_valid(name, document) and schemas.iter_errors(name, document) == []
    (error,) = schemas.iter_errors("card", card_data(status="maybe"))
    assert "'maybe' is not one of" in error.message
