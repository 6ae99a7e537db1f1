"""The memdream JSONL format itself (raw-events.md): checked, completed, passed through.

Each non-blank line is one raw event. The adapter only enforces the contract: the schema,
unknown fields (an error in strict mode, otherwise kept under ``meta``), ids unique within a
session, the default actor of each kind, and ``--session``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memdream.ingest.adapters._common import Event, checked, head_lines, load_object, numbered
from memdream.ingest.adapters.context import ParseContext
from memdream.ingest.validate import DEFAULT_ACTOR, FIELDS

NAME = "memdream"

_REQUIRED = ("session", "ts", "kind")


def sniff(head: str) -> bool:
    """The first line is a JSON object naming a session, a time and a kind."""
    for text, value in head_lines(head, limit=1):
        if isinstance(value, dict):
            return all(key in value for key in _REQUIRED)
        # A first line longer than the head (a big tool output) is cut: look at its keys' names.
        return value is None and all(re.search(rf'"{key}"\s*:', text) for key in _REQUIRED)
    return False


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    used: set[tuple[str, str]] = set()
    for lineno, text in numbered(lines):
        event = parse_line(text, lineno, ctx)
        if event is not None and claim_id(event, used, lineno, ctx):
            yield event


def parse_line(text: str, lineno: int, ctx: ParseContext) -> Event | None:
    """One line as a checked event, or None after reporting why it is not one.

    Stateless, so that big inputs can be parsed in chunks by worker processes; the one check
    across lines, :func:`claim_id`, is left to the caller.
    """
    record = load_object(text, lineno, ctx)
    if record is None:
        return None
    event = normalize(record, lineno, ctx)
    if event is None or not checked(event, lineno, ctx):
        return None
    return event


def normalize(record: dict[str, Any], lineno: int, ctx: ParseContext) -> Event | None:
    """The record as an event: unknown fields moved under meta (or reported, in strict mode),
    ``--session`` applied, the kind's default actor added. The record itself when all its
    fields are known."""
    event = record
    if not record.keys() <= FIELDS:
        unknown = sorted(key for key in record if key not in FIELDS)
        if ctx.strict:
            ctx.bad(lineno, f"unknown field '{unknown[0]}'")
            return None
        meta = record.get("meta")
        if meta is not None and not isinstance(meta, dict):
            ctx.bad(lineno, "meta: must be an object")
            return None
        event = {key: value for key, value in record.items() if key in FIELDS}
        # The writer's own meta wins over a stray top-level field of the same name: it was explicit.
        event["meta"] = {**{key: record[key] for key in unknown}, **(meta or {})}
    if ctx.session is not None:
        event["session"] = ctx.session
    kind = event.get("kind")
    if "actor" not in event and isinstance(kind, str) and kind in DEFAULT_ACTOR:
        event["actor"] = DEFAULT_ACTOR[kind]
    return event


def repeated_id(session: str, event_id: str) -> str:
    """Why a line whose id the input already used is bad."""
    return f"id: '{event_id}' is already used in session '{session}'"


def claim_id(event: Event, used: set[tuple[str, str]], lineno: int, ctx: ParseContext) -> bool:
    """Ids address events (``log://session#id``), so a second event may not take one."""
    if "id" not in event:
        return True
    key = (event["session"], event["id"])
    if key in used:
        ctx.bad(lineno, repeated_id(event["session"], event["id"]))
        return False
    used.add(key)
    return True
