"""What the adapters share: reading JSON lines, carrying timestamps, checking events.

Every adapter reports a malformed line through ``ctx.bad`` with a 1-based line number and
checks each event it builds against ``raw-event.schema.json`` before yielding it, so a bad
source line never turns into an invalid raw event further down the pipeline.

It also builds the events an adapter derives from another one (a session's goal from its first
request, a plan from a todo-list tool call) the same way in every format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from memdream import jsonio, schemas
from memdream.harness import headline, request
from memdream.ingest.adapters.context import CUT_LINE_REASON, ParseContext
from memdream.ingest.validate import calendar_valid, fast_valid, is_future, ts_problem
from memdream.memory.tags import FUTURE_TAG, PROJECT_TAG, SIDECHAIN_TAG

Event = dict[str, Any]

MAX_ID = 256  # raw-event.schema.json
# Todo statuses as Claude Code's TodoWrite and Codex's update_plan write them.
_PLANNED = ("pending", "in_progress")
_DONE = ("completed",)

# jsonschema's pattern messages quote the whole regex; these say what is wrong instead.
_PATTERN_HINTS = {
    "ts": "not an ISO 8601 timestamp",
    "session": "must be non-empty, without whitespace or '#'",
    "id": "must be non-empty, without whitespace",
}

_BOM = "\ufeff"


def numbered(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """The non-blank lines with their 1-based numbers, stripped of line endings and a BOM."""
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if lineno == 1:
            text = text.lstrip(_BOM).strip()
        if text:
            yield lineno, text


def json_error(exc: json.JSONDecodeError) -> str:
    if isinstance(exc, jsonio.LimitError):  # valid JSON, maybe, but too deep or too long to read
        return f"JSON {exc.msg}"
    # The decoder's own "line 1 column 5" would contradict our line numbers: keep the column only.
    return f"{CUT_LINE_REASON}: {exc.msg} (column {exc.colno})"


def load_object(text: str, lineno: int, ctx: ParseContext) -> dict[str, Any] | None:
    """One line as a JSON object, or None after reporting why it is not one."""
    try:
        value = jsonio.loads(text)
    except json.JSONDecodeError as exc:  # limits (depth, integer length) included
        ctx.bad(lineno, json_error(exc))
        return None
    if not isinstance(value, dict):
        ctx.bad(lineno, f"not a JSON object but {type(value).__name__}")
        return None
    return value


def describe(error: Any) -> str:
    """A jsonschema error as ``<field>: <message>``."""
    path = ".".join(str(part) for part in error.absolute_path)
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        field = ".".join(part for part in (path, missing[0] if missing else "") if part)
        return f"{field}: required field is missing"
    if error.validator == "pattern" and path in _PATTERN_HINTS:
        return f"{path}: {_PATTERN_HINTS[path]}: {error.instance!r}"
    return f"{path or 'event'}: {error.message}"


def schema_problem(event: Event) -> str | None:
    # jsonschema costs ~90 us an event; the fast check agrees with it and jsonschema then
    # only explains the rare failure.
    if fast_valid(event):
        return None if calendar_valid(event["ts"]) else ts_problem(event["ts"])
    errors = schemas.iter_errors("raw-event", event)
    return describe(errors[0]) if errors else ts_problem(event.get("ts"))


def checked(event: Event, lineno: int, ctx: ParseContext) -> bool:
    """Whether ``event`` is a valid raw event; reports the first schema error when not."""
    problem = schema_problem(event)
    if problem is not None:
        ctx.bad(lineno, problem)
        return False
    if is_future(event["ts"]):  # kept, but dream and readers can tell (see memdream.dream.decay)
        add_tags(event, FUTURE_TAG)
    return True


class Clock:
    """The timestamp of the current line: its own, else the last one seen (logs omit some)."""

    def __init__(self) -> None:
        self.last: Any = None

    def see(self, value: Any) -> None:
        if value is not None and value != "":
            self.last = value

    def stamp(self, value: Any, lineno: int, ctx: ParseContext) -> Any:
        """``value`` or the inherited time; None (reported) when no line so far had one."""
        self.see(value)
        if self.last is None:
            ctx.bad(lineno, "no timestamp on this line nor on any line before it")
        return self.last


def text_of(content: Any, kinds: Iterable[str] = ("text",)) -> str:
    """The text of a content field: a string, or the text of a list of typed parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    wanted = set(kinds)
    parts = [
        part["text"]
        for part in content
        if isinstance(part, dict) and string(part.get("type")) in wanted and isinstance(part.get("text"), str)
    ]
    return "\n".join(parts)


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: sources omit or garble nested objects."""
    return value if isinstance(value, dict) else {}


def string(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool arguments as an object; OpenAI-style APIs send them as a JSON string that may be broken."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = jsonio.loads(raw)
        except json.JSONDecodeError:
            return {"raw": raw}
        if isinstance(value, dict):
            return value
    return {"raw": raw if isinstance(raw, str) else json.dumps(raw)}


def number_ids(base: str | None, drafts: list[tuple[int, Event]]) -> list[Event]:
    """Ids for the events one source record produced: ``base`` alone, or ``base.<n>`` for several."""
    if base is None:
        return [event for _, event in drafts]
    if len(drafts) == 1:
        return [{**drafts[0][1], "id": base}]
    return [{**event, "id": f"{base}.{n}"} for n, event in drafts]


def compact(event: Event) -> Event:
    """Drop the optional fields a source left empty, so events carry only what is known."""
    return {key: value for key, value in event.items() if value is not None and value != "" and value != []}


_FIRST_KEYS = re.compile(r"\s*\{")


def head_lines(head: str, limit: int = 8) -> Iterator[tuple[str, Any]]:
    """The first non-blank lines of ``head`` with their JSON value (None when not JSON).

    The head is cut at a fixed size, so its last line may be incomplete: it is yielded
    with None, and callers fall back to looking at its raw text.
    """
    count = 0
    for line in head.lstrip(_BOM).splitlines():
        text = line.strip()
        if not text:
            continue
        value: Any = None
        if _FIRST_KEYS.match(text):
            try:
                value = jsonio.loads(text)
            except json.JSONDecodeError:
                value = None
        yield text, value
        count += 1
        if count >= limit:
            return


def add_tags(event: Event, *tags: str) -> Event:
    """``event`` with ``tags`` appended to its own, each once."""
    if not tags:
        return event
    own = event.get("tags")
    if not own:  # the usual case, on every event of a transcript: no tags of its own
        event["tags"] = list(dict.fromkeys(tags)) if len(tags) > 1 else list(tags)
    else:
        event["tags"] = own + [tag for tag in dict.fromkeys(tags) if tag not in own]
    return event


def project_tag(name: str | None) -> tuple[str, ...]:
    """The ``project:<name>`` tag, or no tag when the project is unknown."""
    return (PROJECT_TAG + name,) if name else ()


def derived_id(base: Any, suffix: str) -> str | None:
    """``<base><suffix>`` for an event derived from the one with id ``base``; None when that has none
    or the result would be too long (the pipeline then derives one from the content)."""
    if not isinstance(base, str) or len(base) + len(suffix) > MAX_ID:
        return None
    return base + suffix


def goal_before(message: Event) -> Event | None:
    """The goal a session's first request sets, to be placed just before the request's message;
    None when the message asks for nothing (a template's expansion without the user's words or a
    command's title, a greeting, a "yes": :func:`memdream.harness.request`): the next request sets
    the goal then.

    Dream reads goals to know what a session was for; the message itself stays as it is, so the
    ids of events already ingested do not change.
    """
    goal = headline(request(message.get("text")) or "")
    if not goal:
        return None
    event: Event = {"session": message["session"], "ts": message["ts"], "kind": "goal", "actor": "user",
                    "goal": goal}
    return _derived_from(message, event, ":goal")


def plan_after(call: Event, items: Any) -> Event | None:
    """The plan a todo-list tool call writes, to be placed just after the call.

    ``items`` are ``(text, status)`` pairs; pending and in-progress items are what comes next,
    completed ones what is done, others (or a list with nothing left) say nothing.
    """
    upcoming: list[str] = []
    done: list[str] = []
    for text, status in items:
        if not isinstance(text, str) or not text.strip():
            continue
        if status in _PLANNED:
            upcoming.append(text.strip())
        elif status in _DONE:
            done.append(text.strip())
    if not upcoming and not done:
        return None
    event: Event = {"session": call["session"], "ts": call["ts"], "kind": "plan", "actor": "agent",
                    "next": upcoming, "done": done}
    return _derived_from(call, compact(event), ":plan")


def _derived_from(source: Event, event: Event, suffix: str) -> Event:
    """``event`` with the id and the tags of ``source`` (its project) carried over."""
    event_id = derived_id(source.get("id"), suffix)
    if event_id is not None:
        event["id"] = event_id
    tags = [tag for tag in source.get("tags") or [] if tag.startswith(PROJECT_TAG) or tag == SIDECHAIN_TAG]
    return add_tags(event, *tags)


def todo_items(todos: Any, text_key: str) -> list[tuple[Any, Any]]:
    """``(text, status)`` of each item of a todo list; anything that is not an item is left out."""
    if not isinstance(todos, list):
        return []
    return [(item.get(text_key), item.get("status")) for item in todos if isinstance(item, dict)]
