"""Claude Code session transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``).

Only ``user`` and ``assistant`` lines carry the conversation; every other line type
(``summary`` titles, ``system`` notices, ``file-history-snapshot`` undo data, ...) is the
harness's bookkeeping and is skipped. Claude Code also writes harness text *as* user lines
(``isMeta`` caveats, slash-command echoes); those are skipped too, so that what is left is
what the user and the agent actually said and did. A compaction summary (``isCompactSummary``)
is the one harness line kept, as a ``summary`` note: after a compaction it is the only record
of what the session had done.

Dream learns from more than the conversation, so the adapter also keeps: the session's first
real request as a ``goal``, each ``TodoWrite`` list as a ``plan``, the call's command line on
each tool result (``args.command``), the words the user typed after rejecting or interrupting
a tool use (on the ``feedback``), and the project (``project:<name>``, from ``cwd``) as a tag.

Ids come from the line's ``uuid`` (``<uuid>``, or ``<uuid>.<block index>`` when one line
yields several events), so ``log://<sessionId>#<uuid>`` stays stable across ingests; a goal
or plan takes the id of the event it comes from plus ``:goal`` / ``:plan``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memdream.ingest.adapters import ParseContext
from memdream.ingest.adapters._common import (
    Clock,
    Event,
    add_tags,
    checked,
    compact,
    goal_before,
    head_lines,
    load_object,
    number_ids,
    numbered,
    plan_after,
    project_tag,
    string,
    text_of,
    todo_items,
)
from memdream.memory.project import project_name
from memdream.memory.tags import SIDECHAIN_TAG, SUMMARY_TAG
from memdream.toolcalls import command_line

NAME = "claude-code"

# The fixed texts Claude Code puts in a tool_result when the user says no to a tool use.
REJECTED = "The user doesn't want to proceed with this tool use"
CANCELLED = "The user doesn't want to take this action right now"
USER_SAID = "the user said:"
# Newer versions append this hint to the model after the user's words; it is not theirs.
MEMORY_HINT = "\n\nNote: The user's next message may contain"
INTERRUPTED = "[Request interrupted by user"
INTERRUPTED_TOOL = "[Request interrupted by user for tool use]"
INTERRUPTION_TEXT = "interrupted by user"  # the feedback's text until the user says more
COMPACT_SUMMARY = "This session is being continued from a previous conversation"
TODO_TOOL = "TodoWrite"
# Text the harness writes into user lines: slash commands, local shell escapes, reminders.
HARNESS_TAGS = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
)
# User lines that are not a request of the user's: the harness's notices and hook output.
NOT_REQUESTS = (
    *HARNESS_TAGS,
    "<task-notification>",
    "<local-command-caveat>",
    "<user-prompt-submit-hook>",
    INTERRUPTED,
    COMPACT_SUMMARY,  # older versions wrote the summary without isCompactSummary
)
# Assistant lines the harness makes up itself (API errors, "No response requested.").
SYNTHETIC_MODEL = "<synthetic>"

_CONVERSATION = ("user", "assistant")
_KNOWN_TYPES = ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation")


@dataclass
class _Call:
    event_id: str | None
    tool: str | None
    command: str | None = None  # what the call did, in one line: copied onto its result


@dataclass
class _Unexplained:
    """Rejections and interruptions the user has not explained yet, and the events written after them.

    The user's next message, when it comes before the agent acts again, says what they wanted
    instead: it becomes the text of each such feedback (Claude Code often writes a rejected tool
    use and an interruption marker for one "no"). The events in between wait with the feedback,
    so that everything still comes out in the order it was written.
    """

    feedback: list[Event] = field(default_factory=list)
    held: list[Event] = field(default_factory=list)  # everything from the first such feedback on

    def offer(self, event: Event) -> list[Event]:
        """The events that can go out now that ``event`` has come."""
        if _awaits_words(event):
            self.feedback.append(event)
            self.held.append(event)
            return []
        if not self.feedback:
            return [event]
        if _is_request(event):
            for feedback in self.feedback:
                feedback["text"] = event["text"].strip()
        elif not _agent_acts(event):
            self.held.append(event)
            return []
        return [*self.release(), event]

    def release(self) -> list[Event]:
        """The events held, the feedback among them as it is."""
        out, self.feedback, self.held = self.held, [], []
        return out


@dataclass
class _State:
    clock: Clock = field(default_factory=Clock)
    session: str | None = None
    calls: dict[str, _Call] = field(default_factory=dict)
    # The tool call the user stopped by interrupting; the "[Request interrupted ...]" line after it
    # is the user's verdict on that call.
    cancelled: str | None = None
    context: dict[str, str] | None = None
    seen: set[str] = field(default_factory=set)
    project: str | None = None
    project_known: bool = False  # the first line with a cwd decides the project
    goals: set[str] = field(default_factory=set)  # sessions whose goal is out already
    unexplained: _Unexplained = field(default_factory=_Unexplained)


def sniff(head: str) -> bool:
    for text, value in head_lines(head, limit=5):
        if isinstance(value, dict):
            return _looks_like_claude(value)
        # A cut first line: Claude Code's field names are distinctive enough.
        return value is None and '"sessionId"' in text and ('"parentUuid"' in text or '"uuid"' in text)
    return False


def _looks_like_claude(line: dict[str, Any]) -> bool:
    kind = line.get("type")
    if kind == "summary":
        return "leafUuid" in line
    if kind == "file-history-snapshot":
        return "messageId" in line
    if kind == "queue-operation":  # prompts queued while the agent works: no uuid of their own
        return "sessionId" in line
    return kind in _KNOWN_TYPES and "sessionId" in line and "uuid" in line


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    state = _State()
    for lineno, text in numbered(lines):
        line = load_object(text, lineno, ctx)
        if line is None:
            continue
        _see_project(line, state)
        if not _is_conversation(line):
            continue
        uuid = line.get("uuid")
        if isinstance(uuid, str):
            # A resumed session can repeat a record verbatim; one event per record keeps ids unique.
            if uuid in state.seen:
                continue
            state.seen.add(uuid)
        for event in _line_events(line, lineno, ctx, state):
            yield from state.unexplained.offer(event)
    yield from state.unexplained.release()


def _see_project(line: dict[str, Any], state: _State) -> None:
    cwd = string(line.get("cwd"))
    if cwd is not None and not state.project_known:
        state.project, state.project_known = project_name(cwd), True


def _is_conversation(line: dict[str, Any]) -> bool:
    if line.get("type") not in _CONVERSATION or line.get("isMeta"):
        return False
    message = line.get("message")
    return not (isinstance(message, dict) and message.get("model") == SYNTHETIC_MODEL)


def _line_events(line: dict[str, Any], lineno: int, ctx: ParseContext, state: _State) -> Iterator[Event]:
    message = line.get("message")
    if not isinstance(message, dict):
        ctx.bad(lineno, "message: expected an object")
        return
    ts = state.clock.stamp(line.get("timestamp"), lineno, ctx)
    if ts is None:
        return
    state.session = string(line.get("sessionId")) or state.session
    if state.context is None:
        state.context = _context(line)
    if line.get("isCompactSummary"):
        drafts = _summary(message.get("content"))
    else:
        drafts = _drafts(line["type"], message.get("content"), state)
    uuid = string(line.get("uuid"))
    for event in number_ids(uuid, drafts):
        event = _finish(event, line, ts, ctx.session_for(state.session), state)
        if not checked(event, lineno, ctx):
            continue
        goal = _goal(event, line, state)
        if goal is not None and checked(goal, lineno, ctx):
            state.goals.add(goal["session"])
            yield goal
        yield event
        plan = _plan(event)
        if plan is not None and checked(plan, lineno, ctx):
            yield plan


def _summary(content: Any) -> list[tuple[int, Event]]:
    """A compaction summary as a note: what the session did before its context was compacted."""
    text = text_of(content)
    if not text.strip():
        return []
    return [(0, {"kind": "note", "actor": "system", "text": text, "tags": [SUMMARY_TAG]})]


def _goal(event: Event, line: dict[str, Any], state: _State) -> Event | None:
    """The session's goal when ``event`` is its first request (a subagent's prompt is not one)."""
    if line.get("isSidechain") or event["session"] in state.goals or not _is_request(event):
        return None
    return goal_before(event)


def _plan(event: Event) -> Event | None:
    if event["kind"] != "tool_call" or event.get("tool") != TODO_TOOL:
        return None
    return plan_after(event, todo_items(event.get("args", {}).get("todos"), "content"))


def _is_request(event: Event) -> bool:
    """A message the user typed in the main conversation (not the harness's text)."""
    if event["kind"] != "message" or event.get("actor") != "user" or SIDECHAIN_TAG in event.get("tags", []):
        return False
    return not event.get("text", "").strip().startswith(NOT_REQUESTS)


def _agent_acts(event: Event) -> bool:
    return event["kind"] == "tool_call" or (event["kind"] == "message" and event.get("actor") == "agent")


def _awaits_words(event: Event) -> bool:
    """A rejection or interruption that carries no words of the user's yet."""
    return (
        event["kind"] == "feedback"
        and event.get("verdict") == "reject"
        and event.get("text", INTERRUPTION_TEXT) == INTERRUPTION_TEXT
    )


def _context(line: dict[str, Any]) -> dict[str, str]:
    """Where the session ran, for the first event's meta (later lines repeat it)."""
    names = {"cwd": "cwd", "gitBranch": "git_branch", "version": "claude_code_version"}
    return {
        ours: line[theirs]
        for theirs, ours in names.items()
        if isinstance(line.get(theirs), str) and line[theirs]
    }


def _finish(event: Event, line: dict[str, Any], ts: Any, session: str, state: _State) -> Event:
    finished: Event = {"session": session, "ts": ts, **event}
    add_tags(finished, *((SIDECHAIN_TAG,) if line.get("isSidechain") else ()), *project_tag(state.project))
    if state.context:
        finished["meta"] = state.context
        state.context = {}  # empty, not None: only the first event carries it
    if finished["kind"] == "tool_call" and isinstance(finished.get("call_id"), str):
        tool = finished.get("tool")
        state.calls[finished["call_id"]] = _Call(finished.get("id"), tool, command_line(tool, finished.get("args")))
    return finished


def _drafts(role: str, content: Any, state: _State) -> list[tuple[int, Event]]:
    """The events of one line's content, each with its block index (for ids)."""
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        return []
    drafts: list[tuple[int, Event]] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        event = _user_block(block, state) if role == "user" else _assistant_block(block)
        if event is not None:
            drafts.append((index, event))
    return drafts


def _assistant_block(block: dict[str, Any]) -> Event | None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if isinstance(text, str) and text.strip():
            return {"kind": "message", "actor": "agent", "text": text}
        return None
    if kind == "tool_use":
        arguments = block.get("input")
        return compact(
            {
                "kind": "tool_call",
                "actor": "agent",
                "tool": string(block.get("name")),
                "args": arguments if isinstance(arguments, dict) else {"input": arguments},
                "call_id": string(block.get("id")),
            }
        )
    return None  # thinking, redacted_thinking, server tool blocks: not part of the record


def _user_block(block: dict[str, Any], state: _State) -> Event | None:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return _user_text(block["text"], state)
    if kind == "tool_result":
        return _tool_result(block, state)
    return None  # images, documents


def _user_text(text: str, state: _State) -> Event | None:
    stripped = text.strip()
    if not stripped or stripped.startswith(HARNESS_TAGS):
        return None
    if stripped.startswith(INTERRUPTED):
        target = state.cancelled if stripped.startswith(INTERRUPTED_TOOL) else None
        state.cancelled = None
        return compact(
            {
                "kind": "feedback",
                "actor": "user",
                "verdict": "reject",
                "target": target,
                "text": INTERRUPTION_TEXT,
            }
        )
    return {"kind": "message", "actor": "user", "text": text}


def _tool_result(block: dict[str, Any], state: _State) -> Event | None:
    call_id = string(block.get("tool_use_id"))
    call = state.calls.get(call_id or "", _Call(None, None))
    text = text_of(block.get("content"))
    if text.startswith(REJECTED):
        # The user said no: a judgement on the call, not a failure of the tool.
        return compact(
            {
                "kind": "feedback",
                "actor": "user",
                "verdict": "reject",
                "target": call.event_id,
                "text": _comment(text),
            }
        )
    if text.startswith(CANCELLED):
        # The interruption line that follows carries the verdict; this result only says which call.
        state.cancelled = call.event_id
        return None
    failed = bool(block.get("is_error"))
    return compact(
        {
            "kind": "tool_result",
            "actor": "tool",
            "tool": call.tool,
            "args": {"command": call.command} if call.command else None,
            "call_id": call_id,
            "ok": not failed,
            "text": text,
            "error": text if failed else None,
        }
    )


def _comment(rejection: str) -> str | None:
    """What the user typed when rejecting, if anything."""
    found = re.search(re.escape(USER_SAID), rejection, flags=re.IGNORECASE)
    if found is None:
        return None
    said = rejection[found.end() :]
    hint = said.find(MEMORY_HINT)
    if hint >= 0:
        said = said[:hint]
    return said.strip() or None
