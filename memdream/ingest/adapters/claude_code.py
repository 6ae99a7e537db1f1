"""Claude Code session transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``).

Only ``user`` and ``assistant`` lines carry the conversation; every other line type
(``summary`` titles, ``system`` notices, ``file-history-snapshot`` undo data, ...) is the
harness's bookkeeping and is skipped. Claude Code also writes harness text *as* user lines
(``isMeta`` caveats, slash-command echoes, compaction summaries); those are skipped too, so
that what is left is what the user and the agent actually said and did.

Ids come from the line's ``uuid`` (``<uuid>``, or ``<uuid>.<block index>`` when one line
yields several events), so ``log://<sessionId>#<uuid>`` stays stable across ingests.
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
    checked,
    compact,
    head_lines,
    load_object,
    number_ids,
    numbered,
    string,
    text_of,
)

NAME = "claude-code"

# The fixed texts Claude Code puts in a tool_result when the user says no to a tool use.
REJECTED = "The user doesn't want to proceed with this tool use"
CANCELLED = "The user doesn't want to take this action right now"
USER_SAID = "the user said:"
# Newer versions append this hint to the model after the user's words; it is not theirs.
MEMORY_HINT = "\n\nNote: The user's next message may contain"
INTERRUPTED = "[Request interrupted by user"
INTERRUPTED_TOOL = "[Request interrupted by user for tool use]"
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
# Assistant lines the harness makes up itself (API errors, "No response requested.").
SYNTHETIC_MODEL = "<synthetic>"

_CONVERSATION = ("user", "assistant")
_KNOWN_TYPES = ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation")


@dataclass
class _Call:
    event_id: str | None
    tool: str | None


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
        if line is None or not _is_conversation(line):
            continue
        uuid = line.get("uuid")
        if isinstance(uuid, str):
            # A resumed session can repeat a record verbatim; one event per record keeps ids unique.
            if uuid in state.seen:
                continue
            state.seen.add(uuid)
        yield from _line_events(line, lineno, ctx, state)


def _is_conversation(line: dict[str, Any]) -> bool:
    if line.get("type") not in _CONVERSATION:
        return False
    if line.get("isMeta") or line.get("isCompactSummary"):
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
    drafts = _drafts(line["type"], message.get("content"), state)
    uuid = string(line.get("uuid"))
    for event in number_ids(uuid, drafts):
        event = _finish(event, line, ts, ctx.session_for(state.session), state)
        if checked(event, lineno, ctx):
            yield event


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
    if line.get("isSidechain"):
        finished["tags"] = ["sidechain"]
    if state.context:
        finished["meta"] = state.context
        state.context = {}  # empty, not None: only the first event carries it
    if finished["kind"] == "tool_call" and isinstance(finished.get("call_id"), str):
        state.calls[finished["call_id"]] = _Call(finished.get("id"), finished.get("tool"))
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
                "text": "interrupted by user",
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
