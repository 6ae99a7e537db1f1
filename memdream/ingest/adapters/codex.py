"""Codex CLI rollout files (``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``).

Lines are envelopes ``{"timestamp", "type", "payload"}``. Codex records the conversation twice:
``response_item`` lines are what the model saw (messages, tool calls and their outputs) and
``event_msg`` lines are what the UI showed (``user_message``, ``agent_message``, turn ends).
Messages are taken from ``response_item``, the fuller record that every version writes; an
``event_msg`` message is used only when no ``response_item`` message of that role has the same
text, so a rollout written without response items still yields its conversation, once.
Turn ends (``task_complete``, ``turn_aborted``) exist only as ``event_msg``.

Besides the conversation, the adapter keeps what dream learns from: the session's first real
request as a ``goal``, each ``update_plan`` call as a ``plan``, the call's command line on each
output (``args.command``), the words the user typed after declining an approval or interrupting
a turn (on the ``feedback``), compaction summaries (``compacted`` lines) as ``summary`` notes,
and the project (``project:<name>``, from ``session_meta``'s repository URL or ``cwd``) as a tag.

The older format (first line a bare ``{id, timestamp, instructions}``, then bare response
items with no timestamps) is read too: its events are dated from the session's start plus one
millisecond per line, so that they keep their order (the newest todo list is the last one), and
are marked ``meta.ts_synthetic``.

The shell tool has had several names (``shell``, ``shell_command``, ``local_shell``,
``exec_command``); an ``exec_command`` still running when it returned ("Process running with
session ID N") is continued by ``write_stdin`` calls on that session, whose outputs are the
command's: they carry its command line and its exit code. A review sub-agent's rollout
(``session_meta.source.subagent``) is tagged ``sidechain``: its prompt is Codex's, not the
user's goal. Every record left out (reasoning, token counts, ghost snapshots, ``state`` lines of
the legacy format, types not invented yet) is counted in the report by type.

Tool calls get ``<call_id>`` as id, their outputs ``<call_id>.out`` and their plans
``<call_id>:plan``; other events get none and the pipeline derives one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from memdream.clock import parse_timestamp
from memdream.harness import is_own_words, own_words
from memdream.ingest.adapters._common import (
    Clock,
    Event,
    add_tags,
    checked,
    compact,
    goal_before,
    head_lines,
    load_object,
    mapping,
    numbered,
    parse_arguments,
    plan_after,
    project_tag,
    string,
    text_of,
    todo_items,
)
from memdream.ingest.adapters.context import ParseContext
from memdream.memory.project import project_name
from memdream.memory.tags import SIDECHAIN_TAG, SUMMARY_TAG
from memdream.toolcalls import command_line

NAME = "codex"

_LEGACY_META = "legacy_meta"  # the first line of a 2025 rollout, read as its session_meta
_ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_TEXT_PARTS = ("input_text", "output_text", "text")
# User-role messages Codex writes itself: the sandbox description, AGENTS.md, abort notices.
_CONTEXT_BLOBS = (
    "<environment_context>",
    "<user_instructions>",
    "<turn_aborted>",
    "# AGENTS.md instructions for",
)
# The first line of the summary Codex writes when it compacts the conversation.
SUMMARY_PREFIX = "Another language model started to solve this problem"
# User-role text that is not a request of the user's either: what Codex says on their behalf.
_NOT_REQUESTS = tuple(
    blob.lower()
    for blob in (
        *_CONTEXT_BLOBS,
        "<user_shell_command>",
        "<subagent_notification>",
        "<context_update>",
        SUMMARY_PREFIX,
    )
)
# The outputs Codex substitutes when the user declines an approval prompt.
_DECLINED = ("exec command rejected by user", "patch rejected by user")
PLAN_TOOL = "update_plan"
_CALL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
# An exec_command that outlived its wait; write_stdin calls on the session read the rest.
_RUNNING = re.compile(r"^Process running with session ID (\d+)", re.MULTILINE)
_STDIN_TOOL = "write_stdin"
_EXEC_TOOL = "exec_command"
_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code)\s*(-?\d+)", re.MULTILINE)
# Only unmistakable failure openings: a tool that merely prints the word "error" did not fail. Codex's
# 2025 builds wrote a sandboxed command's failure as "failed in sandbox MacosSeatbelt with execution
# error: ..., exit code: 101, stdout: ..." (or "... command timed out"), with no exit-code header.
_FAILURE = re.compile(r"^(?:error:|failed to |execution error|command failed|failed in sandbox )", re.IGNORECASE)
_ROLE_ACTOR = {"user": "user", "assistant": "agent"}
_CUT_FIRST_LINE = re.compile(
    r'^\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(?:' + "|".join(_ENVELOPES) + ')"'
)


_Record = tuple[int, str, dict[str, Any], Any]  # line number, envelope type, payload, timestamp


@dataclass
class _State:
    clock: Clock = field(default_factory=Clock)
    session: str | None = None
    context: dict[str, str] | None = None  # the session's cwd etc., for the first event's meta
    tools: dict[str, str] = field(default_factory=dict)  # call_id -> tool name
    commands: dict[str, str] = field(default_factory=dict)  # call_id -> what the call did, in one line
    said: set[tuple[str, str]] = field(default_factory=set)  # (role, text) of response_item messages
    emitted: set[str] = field(default_factory=set)
    project: str | None = None
    goals: set[str] = field(default_factory=set)  # sessions whose goal is out already
    records: list[_Record] = field(default_factory=list)
    position: int = 0  # the index in ``records`` of the record being read
    running: dict[int, str] = field(default_factory=dict)  # exec session id -> the command it runs
    subagent: bool = False  # a review (or other) sub-agent's rollout: its prompt is not the user's
    legacy: bool = False  # the 2025 format: times made from the start and the order of lines


def sniff(head: str) -> bool:
    for text, value in head_lines(head, limit=1):
        if isinstance(value, dict):
            return _is_envelope(value) or _is_legacy_meta(value)
        # session_meta can carry the whole system prompt and run past the head: read its opening.
        return value is None and _CUT_FIRST_LINE.match(text) is not None
    return False


def _is_envelope(line: dict[str, Any]) -> bool:
    return line.get("type") in _ENVELOPES and isinstance(line.get("payload"), dict) and "timestamp" in line


def _is_legacy_meta(line: dict[str, Any]) -> bool:
    return (
        "type" not in line
        and "id" in line
        and "timestamp" in line
        and ("instructions" in line or "git" in line)
    )


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    # Read the whole rollout first: whether an event_msg message is a duplicate depends on
    # response items that can come after it.
    records = list(_records(lines, ctx))
    state = _State(said=_response_messages(records), records=records)
    for position, (lineno, kind, payload, ts) in enumerate(records):
        state.clock.see(ts)
        state.position = position
        handler = _handler(kind, payload)
        if handler is None:
            ctx.skip_type(f"{kind}:{string(payload.get('type')) or '?'}" if kind != "turn_context" else kind)
            continue
        for event in handler(payload, state):
            finished = _finish(event, lineno, ctx, state)
            if finished is not None:
                yield from _with_goal_and_plan(finished, lineno, ctx, state)


def _records(lines: Iterator[str], ctx: ParseContext) -> Iterator[_Record]:
    """Each line as (line number, envelope type, payload, timestamp), in both rollout formats."""
    first = True
    start: datetime | None = None  # a legacy rollout's start: its lines have no time of their own
    for lineno, text in numbered(lines):
        line = load_object(text, lineno, ctx)
        if line is None:
            continue
        if isinstance(line.get("payload"), dict) and isinstance(line.get("type"), str):
            # Envelope types this adapter does not know still carry the time.
            yield lineno, line["type"], line["payload"], line.get("timestamp")
        elif first and _is_legacy_meta(line):
            start = _start_of(line.get("timestamp"))
            yield lineno, _LEGACY_META, line, line.get("timestamp")
        elif isinstance(line.get("type"), str):  # legacy: a bare response item
            yield lineno, "response_item", line, _line_time(start, lineno)
        elif "record_type" in line:  # legacy {"record_type": "state"} lines are bookkeeping
            ctx.skip_type(str(line["record_type"]))
        else:
            ctx.bad(lineno, "not a Codex rollout line: no 'type'")
        first = False


def _start_of(value: Any) -> datetime | None:
    try:
        return parse_timestamp(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _line_time(start: datetime | None, lineno: int) -> str | None:
    """A legacy line's time: the session's start plus one millisecond per line (None: unknown start)."""
    if start is None:
        return None
    moment = (start + timedelta(milliseconds=lineno)).astimezone(timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def _response_messages(records: list[_Record]) -> set[tuple[str, str]]:
    return {
        (string(payload.get("role")) or "", _message_text(payload).strip())
        for _, kind, payload, _ in records
        if kind == "response_item" and payload.get("type") == "message"
    }


def _finish(event: Event, lineno: int, ctx: ParseContext, state: _State) -> Event | None:
    ts = state.clock.stamp(None, lineno, ctx)
    if ts is None:
        return None
    # A forked or resumed rollout can replay earlier items; an id is one event.
    if "id" in event:
        if event["id"] in state.emitted:
            return None
        state.emitted.add(event["id"])
    finished: Event = {"session": ctx.session_for(state.session), "ts": ts, **event}
    add_tags(finished, *((SIDECHAIN_TAG,) if state.subagent else ()), *project_tag(state.project))
    if state.context:
        finished["meta"] = state.context
        state.context = {}
    if state.legacy:
        finished["meta"] = {**finished.get("meta", {}), "ts_synthetic": True}
    return finished if checked(finished, lineno, ctx) else None


def _with_goal_and_plan(event: Event, lineno: int, ctx: ParseContext, state: _State) -> Iterator[Event]:
    """``event``, after the session's goal when it is the first request, before its plan when it writes one."""
    if _asks(event) and event["session"] not in state.goals and not state.subagent:
        goal = _dated_like(goal_before(event), state)
        if goal is not None and checked(goal, lineno, ctx):
            state.goals.add(goal["session"])
            yield goal
    yield event
    if event["kind"] == "tool_call" and event.get("tool") == PLAN_TOOL:
        plan = _dated_like(plan_after(event, todo_items(event.get("args", {}).get("plan"), "step")), state)
        if plan is not None and checked(plan, lineno, ctx):
            yield plan


def _dated_like(derived: Event | None, state: _State) -> Event | None:
    """A goal or plan event, marked as its source is when the rollout's times are made up."""
    if derived is not None and state.legacy:
        derived["meta"] = {"ts_synthetic": True}
    return derived


def _asks(event: Event) -> bool:
    """A user-role message that may set the goal: not a blob Codex wrote (goal_before then reads what,
    if anything, it asks for: the user's words, or the command a prompt file expands)."""
    text = event.get("text")
    return (event["kind"] == "message" and event.get("actor") == "user" and isinstance(text, str)
            and not text.lstrip()[:64].lower().startswith(_NOT_REQUESTS))


def _is_request(event: Event) -> bool:
    return event["kind"] == "message" and event.get("actor") == "user" and _is_request_text(event.get("text"))


def _is_request_text(text: Any) -> bool:
    """Whether a user-role text is something the user typed (not a blob Codex wrote for them)."""
    # The opening is enough to know a blob; a pasted log can be megabytes.
    return (isinstance(text, str) and bool(text.strip()) and not text.lstrip()[:64].lower().startswith(_NOT_REQUESTS)
            and is_own_words(text))


def _handler(kind: str, payload: dict[str, Any]) -> _Handler | None:
    """What reads a record; None for one left out (counted by the caller)."""
    if kind == "session_meta":
        return _session_meta
    if kind == _LEGACY_META:
        return _legacy_meta
    item = string(payload.get("type")) or ""
    if kind == "response_item":
        return _RESPONSE_ITEMS.get(item)
    if kind == "event_msg":
        return _EVENT_MSGS.get(item)
    if kind == "compacted":
        return _compacted
    return None  # turn_context: model settings, not events; envelope types not invented yet


def _legacy_meta(payload: dict[str, Any], state: _State) -> list[Event]:
    state.legacy = state.session is None
    return _session_meta(payload, state)


def _session_meta(payload: dict[str, Any], state: _State) -> list[Event]:
    # A forked rollout repeats its parent's session_meta further down: the first one names the file.
    if state.session is None:
        state.subagent = "subagent" in mapping(payload.get("source"))
    state.session = state.session or string(payload.get("id"))
    if state.clock.last is None:
        state.clock.see(payload.get("timestamp"))  # legacy rollouts: the only time in the file
    if state.context is None:
        git = mapping(payload.get("git"))
        state.project = project_name(string(payload.get("cwd")), string(git.get("repository_url")))
        found = {
            "cwd": payload.get("cwd"),
            "git_branch": git.get("branch"),
            "codex_version": payload.get("cli_version"),
        }
        state.context = {key: value for key, value in found.items() if isinstance(value, str) and value}
    return []


# --- response items ---------------------------------------------------------------------------


def _message_text(payload: dict[str, Any]) -> str:
    return text_of(payload.get("content"), _TEXT_PARTS)


def _message(role: Any, text: str) -> list[Event]:
    actor = _ROLE_ACTOR.get(role) if isinstance(role, str) else None
    stripped = text.strip()
    if actor is None or not stripped:
        return []  # developer and system messages are instructions, not conversation
    if actor == "user" and stripped.startswith(_CONTEXT_BLOBS):
        return []
    return [{"kind": "message", "actor": actor, "text": text}]


def _response_message(payload: dict[str, Any], state: _State) -> list[Event]:
    return _message(payload.get("role"), _message_text(payload))


def _call(call_id: Any, tool: Any, args: dict[str, Any], state: _State) -> list[Event]:
    call_id, tool = string(call_id), string(tool)
    command, answered_by = command_line(tool, args), tool
    if tool == _STDIN_TOOL and args.get("session_id") in state.running:
        # More of a running command's output: its result reads as that command's.
        command, answered_by = state.running[args["session_id"]], _EXEC_TOOL
    if call_id and answered_by:
        state.tools[call_id] = answered_by
    if call_id and command:
        state.commands[call_id] = command
    return [
        compact(
            {
                "kind": "tool_call",
                "id": call_id,
                "actor": "agent",
                "tool": tool,
                "args": args,
                "call_id": call_id,
            }
        )
    ]


def _function_call(payload: dict[str, Any], state: _State) -> list[Event]:
    return _call(
        payload.get("call_id"), payload.get("name"), parse_arguments(payload.get("arguments")), state
    )


def _custom_tool_call(payload: dict[str, Any], state: _State) -> list[Event]:
    # Freeform tools (apply_patch) take raw text, not JSON.
    raw = payload.get("input")
    return _call(
        payload.get("call_id"), payload.get("name"), {"input": raw} if raw is not None else {}, state
    )


def _local_shell_call(payload: dict[str, Any], state: _State) -> list[Event]:
    action = mapping(payload.get("action"))
    return _call(payload.get("call_id") or payload.get("id"), "local_shell", action, state)


def _web_search_call(payload: dict[str, Any], state: _State) -> list[Event]:
    return [
        {"kind": "tool_call", "actor": "agent", "tool": "web_search", "args": mapping(payload.get("action"))}
    ]


def _call_output(payload: dict[str, Any], state: _State) -> list[Event]:
    call_id = string(payload.get("call_id"))
    text, ok = _output(payload.get("output"))
    out_id = f"{call_id}.out" if call_id else None
    if text.strip().startswith(_DECLINED):
        # The user declined the approval prompt: their verdict on the call, not a tool failure.
        feedback = {"kind": "feedback", "id": out_id, "actor": "user", "verdict": "reject", "target": call_id,
                    "text": _words_after(state)}
        return [compact(feedback)]
    command = state.commands.get(call_id or "")
    running = _RUNNING.search(text[:400]) if ok is None else None
    if running is not None and command:
        state.running[int(running.group(1))] = command
    result: Event = {
        "kind": "tool_result",
        "id": out_id,
        "actor": "tool",
        "tool": state.tools.get(call_id or ""),
        "args": {"command": command} if command else None,
        "call_id": call_id,
        "ok": ok,
        "text": text,
        "error": text if ok is False else None,
    }
    return [compact(result)]


def _output(raw: Any) -> tuple[str, bool | None]:
    """The output text and whether it succeeded (None when the output does not say)."""
    success: bool | None = None
    if isinstance(raw, dict):  # {content, success} as some versions serialize it
        success = raw.get("success") if isinstance(raw.get("success"), bool) else None
        raw = raw.get("content", raw.get("output"))
    if isinstance(raw, list):
        raw = text_of(raw, _TEXT_PARTS)
    if not isinstance(raw, str):
        return ("" if raw is None else json.dumps(raw)), success
    text, exit_code = _shell_output(raw)
    if exit_code is not None:
        return text, exit_code == 0
    if success is None and _FAILURE.match(text.lstrip()):
        success = False
    return text, success


def _shell_output(raw: str) -> tuple[str, int | None]:
    """Shell outputs: ``{"output", "metadata": {"exit_code"}}`` as JSON, or an ``Exit code: N`` header."""
    if raw.startswith("{"):
        try:
            decoded = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            decoded = None
        if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
            code = mapping(decoded.get("metadata")).get("exit_code")
            return decoded["output"], code if isinstance(code, int) and not isinstance(code, bool) else None
    header = _EXIT_CODE.search(raw[:400])
    return raw, int(header.group(1)) if header else None


# --- event messages ---------------------------------------------------------------------------


def _ui_message(role: str) -> Callable[[dict[str, Any], _State], list[Event]]:
    def handle(payload: dict[str, Any], state: _State) -> list[Event]:
        text = payload.get("message")
        if not isinstance(text, str) or (role, text.strip()) in state.said:
            return []
        return _message(role, text)

    return handle


def _task_complete(payload: dict[str, Any], state: _State) -> list[Event]:
    last = payload.get("last_agent_message")
    return [compact({"kind": "outcome", "actor": "system", "ok": True, "text": string(last)})]


def _turn_aborted(payload: dict[str, Any], state: _State) -> list[Event]:
    reason = string(payload.get("reason")) or "unknown"
    text = f"turn aborted: {reason}"
    if reason == "interrupted":
        said = _words_after(state) or text
        return [{"kind": "feedback", "actor": "user", "verdict": "reject", "text": said}]
    return [{"kind": "outcome", "actor": "system", "ok": False, "text": text}]


def _words_after(state: _State) -> str | None:
    """What the user typed next, before the agent acted again: why they said no. An agent that only
    asks how to go on ("how should I push it?") has not acted: the user's reply is still about the
    command it declined."""
    records = state.records
    for position in range(state.position + 1, len(records)):
        _, kind, payload, _ = records[position]
        item = string(payload.get("type")) or ""
        said = _user_words(kind, item, payload)
        if said is not None:
            return said
        if _agent_acts(kind, item, payload):
            return None
    return None


def _user_words(kind: str, item: str, payload: dict[str, Any]) -> str | None:
    if kind == "response_item" and item == "message" and payload.get("role") == "user":
        text: Any = _message_text(payload)
    elif kind == "event_msg" and item == "user_message":
        text = payload.get("message")
    else:
        return None
    if not _is_request_text(text):
        return None
    return (own_words(text) or "").strip() or None


def _agent_acts(kind: str, item: str, payload: dict[str, Any]) -> bool:
    if kind == "response_item" and item in _CALL_ITEMS:
        return True
    if kind == "response_item" and item == "message" and payload.get("role") == "assistant":
        return not _message_text(payload).rstrip().endswith("?")
    if kind == "event_msg" and item == "agent_message":
        return not str(payload.get("message") or "").rstrip().endswith("?")
    return False


# --- compaction -------------------------------------------------------------------------------


def _compacted(payload: dict[str, Any], state: _State) -> list[Event]:
    """The summary Codex wrote when it compacted the conversation (remote compactions leave it
    empty; their ``compaction`` response items are encrypted and say nothing readable)."""
    text = payload.get("message")
    if not isinstance(text, str):
        return []
    if text.startswith(SUMMARY_PREFIX):  # the instruction to the next model, not the summary
        text = text.partition("\n")[2]
    if not text.strip():
        return []
    return [{"kind": "note", "actor": "system", "text": text.strip(), "tags": [SUMMARY_TAG]}]


_Handler = Callable[[dict[str, Any], _State], list[Event]]

_RESPONSE_ITEMS: dict[str, _Handler] = {
    "message": _response_message,
    "function_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    "local_shell_call": _local_shell_call,
    "web_search_call": _web_search_call,
    "function_call_output": _call_output,
    "custom_tool_call_output": _call_output,
    # "reasoning" is absent on purpose: encrypted or summarized thinking, not a record of work.
}

_EVENT_MSGS: dict[str, _Handler] = {
    "user_message": _ui_message("user"),
    "agent_message": _ui_message("assistant"),
    "task_complete": _task_complete,
    "turn_aborted": _turn_aborted,
}
