"""OpenAI chat-completion transcripts: a JSON array of messages, ``{"messages": [...]}``, or JSONL.

The format has no session and usually no times. The session is ``--session``, else the default
the pipeline gives (:mod:`memdream.ingest.source_ids`: the file's stem and a digest of its path and
first event). A message's time is its ``timestamp`` (ISO 8601) or ``created`` (Unix seconds), else
the last one seen, else synthetic, marked ``meta.ts_synthetic``: the file's modification time
minus one millisecond per message that follows (message ``i`` of ``n`` gets ``mtime - (n-1-i)
ms``). So the times keep the messages' order and never pass the moment the file was last written
(the last message is at most that old); milliseconds keep a long chat within seconds of it. Stdin
has no mtime: the ingest clock stands in. Ids never depend on these times (the mtime moves when
the file grows), and dedup leaves a synthetic time out of the content it compares.

Ids are ``m<index>`` by position in the message list, ``m<index>.<n>`` when one message yields
several events (its text, then each tool call), so re-ingesting the same file gives the same ids.
System and developer messages are instructions, not conversation, and are skipped.

The first user message also sets the session's ``goal`` (id ``m<index>:goal``, just before the
message), and each tool result carries the command line of the call it answers (``args.command``).
The format says nothing about a project: its events carry no ``project:`` tag.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from memdream import clock, jsonio
from memdream.ingest.adapters._common import (
    Event,
    checked,
    compact,
    goal_before,
    head_lines,
    json_error,
    load_object,
    mapping,
    number_ids,
    numbered,
    parse_arguments,
    string,
    text_of,
)
from memdream.ingest.adapters.context import ParseContext
from memdream.toolcalls import command_line

NAME = "openai-chat"

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_SKIPPED_ROLES = ("system", "developer")
_ROLES = ("user", "assistant", "tool", "function", *_SKIPPED_ROLES)
_TEXT_PARTS = ("text", "input_text", "output_text")
_MESSAGES_KEY = re.compile(r'"messages"\s*:\s*\[')


@dataclass
class _State:
    last_ts: str | None = None
    tools: dict[str, str] = field(default_factory=dict)  # tool call id -> function name
    commands: dict[str, str] = field(default_factory=dict)  # tool call id -> what the call did, in one line
    goal_set: bool = False  # the first user message sets the goal, once
    last_written: datetime = _EPOCH  # the source's mtime (to the millisecond): the latest synthetic time
    count: int = 0  # messages in the file


def sniff(head: str) -> bool:
    start = head.lstrip("\ufeff \t\r\n")
    if start.startswith("["):
        return re.match(r"\[\s*\{", start) is not None and '"role"' in start
    if re.match(r'\{\s*"messages"\s*:', start):
        return True
    for text, value in head_lines(start, limit=1):
        if isinstance(value, dict):
            return ("role" in value and "session" not in value) or isinstance(value.get("messages"), list)
        # A pretty-printed or cut object: its first line alone says little; its keys say more.
        return value is None and text.startswith("{") and '"messages"' in start and '"role"' in start
    return False


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    # A JSON document spans lines, so the whole text is needed before anything can be read.
    text = "".join(lines).lstrip("\ufeff")
    messages = _document(text, ctx)
    if messages is None:
        messages = _jsonl(text, ctx)
    state = _State(last_written=_last_written(ctx), count=len(messages))
    for index, (lineno, message) in enumerate(messages):
        yield from _message_events(index, lineno, message, ctx, state)


def _last_written(ctx: ParseContext) -> datetime:
    moment = datetime.fromtimestamp(ctx.modified, timezone.utc) if ctx.modified is not None else clock.now()
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def _document(text: str, ctx: ParseContext) -> list[tuple[int, Any]] | None:
    """The messages of a whole-document file with their line numbers; None when it is JSONL."""
    stripped = text.strip()
    if not stripped:
        return []
    try:
        document = jsonio.loads(stripped)  # refuses what is nested too deeply, before parsing
    except json.JSONDecodeError as exc:
        if stripped.startswith("["):
            ctx.unterminated = None  # a document is written whole, not line by line: a cut one is broken
            ctx.bad(_line_of(text, text.find(stripped) + exc.pos), json_error(exc))
            return []
        return None  # several JSON values, one per line
    if isinstance(document, list):
        return _with_lines(text, text.find("["), document)
    if isinstance(document, dict) and isinstance(document.get("messages"), list):
        found = _MESSAGES_KEY.search(text)
        return _with_lines(text, found.end() - 1 if found else -1, document["messages"])
    if isinstance(document, dict) and "role" in document:
        return [(1, document)]  # a JSONL file of a single message
    ctx.unterminated = None
    ctx.bad(1, 'expected a list of chat messages or an object with "messages"')
    return []


def _with_lines(text: str, bracket: int, messages: list[Any]) -> list[tuple[int, Any]]:
    starts = _element_offsets(text, bracket) if bracket >= 0 else []
    if len(starts) != len(messages):  # the "messages" key found was not the top-level one
        return [(1, message) for message in messages]
    return [(_line_of(text, start), message) for start, message in zip(starts, messages)]


def _element_offsets(text: str, bracket: int) -> list[int]:
    """Where each element of the JSON array opening at ``bracket`` starts, for error line numbers."""
    decoder = json.JSONDecoder()
    offsets: list[int] = []
    position = _skip_space(text, bracket + 1)
    try:
        while position < len(text) and text[position] != "]":
            offsets.append(position)
            _, end = decoder.raw_decode(text, position)
            position = _skip_space(text, end)
            if position < len(text) and text[position] == ",":
                position = _skip_space(text, position + 1)
    except (json.JSONDecodeError, RecursionError):
        return []
    return offsets


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, max(offset, 0)) + 1


def _jsonl(text: str, ctx: ParseContext) -> list[tuple[int, Any]]:
    messages: list[tuple[int, Any]] = []
    for lineno, line in numbered(text.splitlines()):
        message = load_object(line, lineno, ctx)
        if message is None:
            continue
        if "messages" in message and "role" not in message:
            ctx.bad(lineno, "expected one chat message per line, found a whole conversation")
            continue
        messages.append((lineno, message))
    return messages


def _message_events(
    index: int, lineno: int, message: Any, ctx: ParseContext, state: _State
) -> Iterator[Event]:
    if not isinstance(message, dict):
        ctx.bad(lineno, "message: expected an object")
        return
    role = message.get("role")
    if role not in _ROLES:
        ctx.bad(lineno, f"role: unknown role {role!r}")
        return
    ts, synthetic = _time(index, message, state)
    drafts = _drafts(message, state)
    for event in number_ids(f"m{index}", list(enumerate(drafts))):
        event = {"session": ctx.session_for(None), "ts": ts, **event}
        if synthetic:
            event["meta"] = {"ts_synthetic": True}
        if checked(event, lineno, ctx):
            yield from _with_goal(event, lineno, ctx, state)


def _with_goal(event: Event, lineno: int, ctx: ParseContext, state: _State) -> Iterator[Event]:
    """``event``, after the goal it sets when it is the conversation's first user message."""
    if not state.goal_set and event["kind"] == "message" and event.get("actor") == "user":
        goal = goal_before(event)
        if goal is not None:
            if "meta" in event:
                goal["meta"] = dict(event["meta"])
            if checked(goal, lineno, ctx):
                state.goal_set = True
                yield goal
    yield event


def _time(index: int, message: dict[str, Any], state: _State) -> tuple[str, bool]:
    """The message's own time, else the last one seen, else a synthetic one (flagged)."""
    own = message.get("timestamp")
    created = message.get("created")
    if isinstance(own, str) and own:
        state.last_ts = own
    elif isinstance(created, (int, float)) and not isinstance(created, bool):
        try:
            state.last_ts = _iso(_EPOCH + timedelta(seconds=created))
        except (OverflowError, ValueError):
            pass  # not a plausible Unix time: treat the message as untimed
    if state.last_ts is not None:
        return state.last_ts, False
    synthetic = state.last_written - timedelta(milliseconds=state.count - 1 - index)
    return synthetic.strftime("%Y-%m-%dT%H:%M:%S.") + f"{synthetic.microsecond // 1000:03d}Z", True


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _drafts(message: dict[str, Any], state: _State) -> list[Event]:
    role = message["role"]
    if role in _SKIPPED_ROLES:
        return []
    if role in ("tool", "function"):
        return [_tool_result(message, state)]
    text = text_of(message.get("content"), _TEXT_PARTS)
    speaker = string(message.get("name"))
    drafts: list[Event] = []
    if text.strip():
        actor = "user" if role == "user" else "agent"
        drafts.append(compact({"kind": "message", "actor": actor, "speaker": speaker, "text": text}))
    if role == "assistant":
        drafts.extend(_tool_calls(message, state))
    return drafts


def _tool_calls(message: dict[str, Any], state: _State) -> list[Event]:
    calls = message.get("tool_calls")
    calls = [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []
    legacy = message.get("function_call")  # the pre-tools API: one call, no id
    if isinstance(legacy, dict):
        calls.append({"function": legacy})
    return [_tool_call(call, state) for call in calls]


def _tool_call(call: dict[str, Any], state: _State) -> Event:
    function = mapping(call.get("function"))
    name, call_id = string(function.get("name")), string(call.get("id"))
    if call_id and name:
        state.tools[call_id] = name
    arguments = parse_arguments(function.get("arguments"))
    command = command_line(name, arguments)
    if call_id and command:
        state.commands[call_id] = command
    return compact(
        {"kind": "tool_call", "actor": "agent", "tool": name, "args": arguments, "call_id": call_id}
    )


def _tool_result(message: dict[str, Any], state: _State) -> Event:
    call_id, name = string(message.get("tool_call_id")), string(message.get("name"))
    command = state.commands.get(call_id or "")
    # Chat transcripts do not say whether a tool succeeded: ok is left out rather than guessed.
    return compact(
        {
            "kind": "tool_result",
            "actor": "tool",
            "tool": state.tools.get(call_id or "") or name,
            "args": {"command": command} if command else None,
            "call_id": call_id,
            "text": text_of(message.get("content"), _TEXT_PARTS),
        }
    )
