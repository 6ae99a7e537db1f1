"""Claude Code session transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``), 1.0 to 2.1.

``user`` and ``assistant`` lines carry the conversation. Of the other record types, the session's
titles are kept (``ai-title``, ``custom-title``, and a ``summary`` line whose ``leafUuid`` is a
record of this file), as ``note`` events tagged ``title``, placed at the record they name; a
compaction (``compact_boundary``, then the summary the model wrote, flagged ``isCompactSummary``
or, in older versions, only recognisable by its opening words) is a ``note`` tagged ``summary``,
never the user's words. Every other type is the harness's bookkeeping (``progress``,
``attachment``, ``mode``, ``permission-mode``, ``last-prompt``, ``queue-operation``,
``file-history-snapshot``, ``system`` notices, and types not invented yet): read, counted in the
report by type, and left out. Claude Code also writes harness text *as* user lines (``isMeta``
caveats, a command's output); those are left out too, so that what is left is what the user and
the agent actually said and did. A message the harness made up in the agent's name (model
``<synthetic>``: API errors) is a ``note`` tagged ``synthetic``. What a hook said back to the agent
("Stop hook feedback: … Cannot exit with unstaged changes") is a ``note`` of the system tagged ``hook``:
the harness stopping the agent is worth finding later, and it is never the user's words.

A slash command the user typed is a user line of tags (``<command-message>deploy is running…``,
``<command-name>/deploy``, ``<command-args>the staging branch``). A command that asks the agent for
something (a command file of the project's or the user's, a plugin's, a built-in prompt like
``/init``) is followed by its expansion, the file's text, in an ``isMeta`` user line whose parent is
the command line: the command is then one ``message`` of the user, tagged ``command``, whose text is
the line as the user typed it (``/deploy the staging branch``), so that the raw layer shows what
they ran and keeps their own words. The expansion stays out (the file's text, not the user's); what
it says the command is for, when it says it (a ``Purpose:`` line, a ``description:`` front matter,
a heading that names the command: ``# /deploy — Ship a release``), rides along on the command as
``meta.command_description``. Claude Code drops a command file's front matter when it expands it,
and a body's first lines are orders to the model ("IT IS CRITICAL THAT YOU FOLLOW THESE STEPS",
"Please analyze this codebase…"), not what a developer would call the command's purpose: they are
not taken for one. The harness's own local commands (``/clear``, ``/compact``, ``/model``,
``/cost``, ``/plugin``, …: no expansion follows, their output is a ``<local-command-stdout>`` line)
stay out with their output: they ask the agent nothing and change nothing it did. A ``/clear``
marks no boundary inside a session: Claude Code starts a new session file for it and writes the
``/clear`` line first in that file, so the session itself is the boundary; a ``/compact`` leaves
its summary, which is kept (above); a model or plugin switch is a one-off.

A command is held until the next conversation record shows whether its expansion follows, and
comes out only then, at its own time and with its own line's ``uuid`` as id; so a file cut between
the two (a transcript still being written) gives the command once, when its expansion is there. It
never takes the session's context (``meta`` of the first event) nor the place of the words that
explain a rejection: the events a memory stored before commands were kept stay the same, and a
second ingest of the same file adds only the commands and the goals they set.

Sub-agents write their turns inline (``isSidechain``, 1.0) or into ``agent-<id>.jsonl`` files
beside the session or under ``<session>/subagents/`` (2.x); either way their records carry the
parent's ``sessionId``, so they join the parent session, tagged ``sidechain``: their tool errors
and fixes count, but a sub-agent's prompt is never the user's goal.

Dream learns from more than the conversation, so the adapter also keeps: the session's first
real request as a ``goal``, each todo list as a ``plan`` (``TodoWrite``'s whole list; in 2.1 the
list that ``TaskCreate`` and ``TaskUpdate`` calls build up), the call's command line on
each tool result (``args.command``; a background command's output, read later with ``BashOutput`` or
``TaskOutput``, reads as that command's result), the words the user typed after rejecting or interrupting
a tool use (on the ``feedback``), and the project (``project:<name>``, from ``cwd``) as a tag.
A command is a request when it says what for: with the user's arguments (``/deploy the staging
branch``), or by the description its expansion gives (``/publish-session — Publish the session as
a gist``). A bare command names a procedure, not the task: the user's next request, the session's
title or its summary names that, as for a template run as it stands (``/bmad:…:create-tech-spec``
asks the user what to specify, and the answer is the goal).

Ids come from the line's ``uuid`` (``<uuid>``, or ``<uuid>.<block index>`` when one line
yields several events), so ``log://<sessionId>#<uuid>`` stays stable across ingests; a goal
or plan takes the id of the event it comes from plus ``:goal`` / ``:plan``; a title
``<leafUuid>:title`` or ``title:<digest of its text>``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memdream.harness import HOOK_FEEDBACK, command_request, headline, is_own_words, own_words
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
from memdream.ingest.adapters.context import ParseContext
from memdream.memory.project import project_name
from memdream.memory.tags import (
    COMMAND_TAG,
    HOOK_TAG,
    INTERRUPTED_TAG,
    SIDECHAIN_TAG,
    SUMMARY_TAG,
    SYNTHETIC_TAG,
    TITLE_TAG,
)
from memdream.toolcalls import OUTPUT_READERS, command_line, is_shell

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
# 2.1 keeps the todo list as tasks: each TaskCreate adds one ("Task #3 created successfully: ..."),
# each TaskUpdate changes one by its id.
TASK_CREATE, TASK_UPDATE = "TaskCreate", "TaskUpdate"
# A shell command run in the background answers with its id; what it prints comes later, through a
# call of an output reader naming that id (toolcalls.OUTPUT_READERS: BashOutput's ``bash_id``, TaskOutput's
# ``task_id``).
_BACKGROUND = re.compile(r"^Command running in background with ID: ([\w.-]+)")
_BACKGROUND_FAILED = "<status>failed</status>"
_TASK_NUMBER = re.compile(r"Task #(\d+)")
# Text the harness writes into user lines: slash commands, local shell escapes, reminders.
COMMAND_TAGS = ("<command-name>", "<command-message>", "<command-args>")
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

# A slash command's line: the command's name and the arguments the user typed after it (some versions
# leave the arguments' tag open).
_COMMAND_NAME = re.compile(r"<command-name>\s*(?P<name>[^<\s]+)[^<]*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(?P<args>.*?)(?:</command-args>|\Z)", re.DOTALL)
# What a command's expansion says the command is for (module doc): its Purpose line near the top, its
# front matter's description, or the title of a heading that names it ("# /deploy — Ship a release").
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<body>.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_DESCRIPTION = re.compile(r"^description[ \t]*:[ \t]*(?P<text>.*\S)", re.IGNORECASE | re.MULTILINE)
_PURPOSE = re.compile(r"^[ \t>*_-]*purpose[ \t]*[*_]*[ \t]*:[*_]*[ \t]*(?P<text>.*\S)", re.IGNORECASE | re.MULTILINE)
_TITLE = re.compile(r"#{1,6}[ \t]+(?P<name>/[A-Za-z](?:[\w.:-]*\w)?)[ \t]*(?:[—–:-]+[ \t]*(?P<title>.*\S))?[ \t]*$")
PURPOSE_LINES = 20  # a Purpose line further down is a step's, not the command's
DESCRIPTION_LIMIT = 200  # characters: one line, as a goal or a card shows it

_CONVERSATION = ("user", "assistant")
# Title records and the field that holds the title.
_TITLES = {"ai-title": "aiTitle", "custom-title": "customTitle"}


@dataclass
class _Call:
    event_id: str | None
    tool: str | None
    command: str | None = None  # what the call did, in one line: copied onto its result
    reads_background: bool = False  # a BashOutput/TaskOutput call: its result is ``command``'s output


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
                feedback["text"] = (own_words(event["text"]) or event["text"]).strip()
        elif not _agent_acts(event):
            self.held.append(event)
            return []
        return [*self.release(), event]

    def release(self) -> list[Event]:
        """The events held, the feedback among them as it is."""
        out, self.feedback, self.held = self.held, [], []
        return out


@dataclass
class _Command:
    """A slash command the user typed, held until the next conversation record shows whether Claude
    Code expanded it (a request to the agent) or ran it itself (a local command: left out)."""

    event: Event  # the command as a message of the user, finished but for its description
    uuid: str | None  # its line's: the expansion's parentUuid
    lineno: int

    @property
    def has_args(self) -> bool:
        return len(str(self.event["text"]).split(None, 1)) > 1


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
    stamps: dict[str, Any] = field(default_factory=dict)  # uuid -> its record's time, where titles point
    summaries: dict[str, str] = field(default_factory=dict)  # leafUuid -> title, until that record comes
    titles: set[str] = field(default_factory=set)  # title texts out already
    untimed: list[str] = field(default_factory=list)  # titles read before any record had a time
    tasks: dict[str, list[str]] = field(default_factory=dict)  # task id -> [subject, status] (2.1 todos)
    task_calls: dict[str, str] = field(default_factory=dict)  # TaskCreate call id -> the id it assumed
    command: _Command | None = None  # a command line waiting for its expansion
    background: dict[str, tuple[str, str]] = field(default_factory=dict)  # shell id -> (tool, command line)


_TYPE_FIRST = re.compile(r'\{\s*"type"\s*:\s*"[\w-]+"\s*,')  # a record that names its type first


def sniff(head: str) -> bool:
    for text, value in head_lines(head, limit=8):
        if not isinstance(value, dict):
            # A cut first line: Claude Code's field names are distinctive enough, and so is its envelope (a
            # record type, then its session: the SDK's first record queues the whole prompt, often >8 KB).
            return value is None and '"sessionId"' in text and (
                '"parentUuid"' in text or '"uuid"' in text
                or (_TYPE_FIRST.match(text) is not None and '"payload"' not in text))
        verdict = _claude_line(value)
        if verdict is not None:
            return verdict
    return False


def _claude_line(line: dict[str, Any]) -> bool | None:
    """Whether a line is Claude Code's, by its envelope rather than its type (new versions bring new
    types); None when this line cannot tell and the next one must."""
    if not isinstance(line.get("type"), str) or "payload" in line:  # memdream's "kind", Codex's envelope
        return False
    if "sessionId" in line:  # every record of a session names it, whatever its type
        return True
    if line["type"] == "summary":  # titles at the top of a file name no session, only a record
        return "leafUuid" in line
    if line["type"] == "file-history-snapshot":
        return "messageId" in line
    return None


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    state = _State()
    for lineno, text in numbered(lines):
        line = load_object(text, lineno, ctx)
        if line is None:
            continue
        _see_project(line, state)
        for event in _record_events(line, lineno, ctx, state):
            yield from state.unexplained.offer(event)
    for event in _command_events(None, ctx, state):
        yield from state.unexplained.offer(event)
    yield from state.unexplained.release()
    for _ in state.summaries:  # titles of records in other files: another session's
        ctx.skip_type("summary (another session's)")
    for _ in state.untimed:
        ctx.skip_type("ai-title (no time in the file)")


def _record_events(line: dict[str, Any], lineno: int, ctx: ParseContext, state: _State) -> Iterator[Event]:
    """The events of one record, whatever its type."""
    kind = string(line.get("type"))
    if kind in _CONVERSATION:
        yield from _command_events(line, ctx, state)
        if line.get("isMeta") and not _is_hook_feedback(line):
            ctx.skip_type(f"{kind} (isMeta)")
            return
        uuid = line.get("uuid")
        if isinstance(uuid, str):
            # A resumed session can repeat a record verbatim; one event per record keeps ids unique.
            if uuid in state.seen:
                return
            state.seen.add(uuid)
        yield from _line_events(line, lineno, ctx, state)
        if isinstance(uuid, str):
            yield from _titles_at(uuid, line, lineno, ctx, state)
    elif kind is not None and kind in _TITLES:
        yield from _title(string(line.get(_TITLES[kind])), None, line, lineno, ctx, state)
    elif kind == "summary":
        yield from _summary_title(line, lineno, ctx, state)
    elif kind == "system" and line.get("subtype") == "compact_boundary":
        state.clock.see(line.get("timestamp"))  # the summary follows as a user line
    else:
        ctx.skip_type(_type_name(line))
        state.clock.see(line.get("timestamp"))


def _type_name(line: dict[str, Any]) -> str:
    """How the report names a record type: ``progress``, ``system:api_error``, ``(no type)``."""
    kind = line.get("type")
    if not isinstance(kind, str):
        return "(no type)"
    subtype = line.get("subtype")
    return f"{kind}:{subtype}" if kind == "system" and isinstance(subtype, str) else kind


# --- titles -----------------------------------------------------------------------------------


def _summary_title(line: dict[str, Any], lineno: int, ctx: ParseContext, state: _State) -> Iterator[Event]:
    """A ``summary`` line titles the conversation that ends at record ``leafUuid``: this session's when
    that record is in this file (it may come before or after the line), else another's, not kept."""
    leaf, text = string(line.get("leafUuid")), string(line.get("summary"))
    if leaf is None or text is None:
        ctx.skip_type("summary")
        return
    if leaf in state.stamps:
        yield from _title(text, leaf, line, lineno, ctx, state, state.stamps[leaf])
    else:
        state.summaries[leaf] = text


def _titles_at(uuid: str, line: dict[str, Any], lineno: int, ctx: ParseContext, state: _State
               ) -> Iterator[Event]:
    """Titles waiting for this record: a summary naming it, titles read before any time was known."""
    ts = state.clock.last
    state.stamps[uuid] = ts
    waiting = state.summaries.pop(uuid, None)
    if waiting is not None:
        yield from _title(waiting, uuid, line, lineno, ctx, state, ts)
    untimed, state.untimed = state.untimed, []
    for text in untimed:
        yield from _title(text, None, line, lineno, ctx, state, ts)


def _title(text: str | None, leaf: str | None, line: dict[str, Any], lineno: int, ctx: ParseContext,
           state: _State, ts: Any = None) -> Iterator[Event]:
    """A title as a ``note`` tagged ``title``, dated at the record it names (or the last time seen: title
    records have none of their own), so that a file that grows dates it the same way each time."""
    if text is None or not text.strip():
        ctx.skip_type(_type_name(line))
        return
    text = text.strip()
    if text in state.titles:
        return
    ts = ts if ts is not None else state.clock.last
    if ts is None:
        state.untimed.append(text)
        return
    state.titles.add(text)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=4).hexdigest()
    event: Event = {"session": ctx.session_for(string(line.get("sessionId")) or state.session), "ts": ts,
                    "id": f"{leaf}:title" if leaf else f"title:{digest}", "kind": "note", "actor": "system",
                    "text": text}
    add_tags(event, TITLE_TAG, *project_tag(state.project))
    if checked(event, lineno, ctx):
        yield event


def _see_project(line: dict[str, Any], state: _State) -> None:
    cwd = string(line.get("cwd"))
    if cwd is not None and not state.project_known:
        state.project, state.project_known = project_name(cwd), True


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
    content = message.get("content")
    if line.get("isCompactSummary") or (line["type"] == "user" and _is_compact_summary(content)):
        drafts = _note(content, SUMMARY_TAG)
    elif message.get("model") == SYNTHETIC_MODEL:
        drafts = _note(content, SYNTHETIC_TAG)
    elif _is_hook_feedback(line):
        drafts = _note(content, HOOK_TAG)
    else:
        drafts = _drafts(line["type"], content, state)
    uuid = string(line.get("uuid"))
    if len(drafts) == 1 and COMMAND_TAG in drafts[0][1].get("tags", ()):
        _hold_command(drafts[0][1], uuid, line, ts, lineno, ctx, state)
        return
    drafts = [(index, draft) for index, draft in drafts if COMMAND_TAG not in draft.get("tags", ())]
    for event in number_ids(uuid, drafts):
        event = _finish(event, line, ts, ctx.session_for(state.session), state)
        if not checked(event, lineno, ctx):
            continue
        goal = _goal(event, line, state)
        if goal is not None and checked(goal, lineno, ctx):
            state.goals.add(goal["session"])
            yield goal
        yield event
        plan = _plan(event, state)
        if plan is not None and checked(plan, lineno, ctx):
            yield plan


# --- slash commands ------------------------------------------------------------------------------


def _typed_command(text: str) -> Event | None:
    """The command a command line holds, as the user typed it; None for a line without a command's name."""
    found = _COMMAND_NAME.search(text)
    if found is None:
        return None
    name = found["name"] if found["name"].startswith("/") else "/" + found["name"]
    given = _COMMAND_ARGS.search(text)
    args = given["args"].strip() if given else ""
    return {"kind": "message", "actor": "user", "text": f"{name} {args}" if args else name, "tags": [COMMAND_TAG]}


def _hold_command(draft: Event, uuid: str | None, line: dict[str, Any], ts: Any, lineno: int, ctx: ParseContext,
                  state: _State) -> None:
    """Keep a command line until the next record says what it was (module doc). A sub-agent types no
    command: a command line in a sidechain is left out as before."""
    if line.get("isSidechain"):
        return
    event: Event = {"session": ctx.session_for(state.session), "ts": ts, **draft}
    if uuid is not None:
        event["id"] = uuid
    add_tags(event, *project_tag(state.project))
    if checked(event, lineno, ctx):
        state.command = _Command(event, uuid, lineno)


def _command_events(line: dict[str, Any] | None, ctx: ParseContext, state: _State) -> Iterator[Event]:
    """The command held, now that ``line`` (the next conversation record; None at the end of the file)
    shows whether its expansion follows: with it, the command and the goal it may set (module doc);
    without it, a local command of the harness, left out."""
    held, state.command = state.command, None
    if held is None:
        return
    expansion = _expansion(held, line)
    if expansion is None:
        ctx.skip_type("user (local command)")
        return
    event = held.event
    description = _description(expansion, event["text"].split(None, 1)[0])
    if description is not None:
        event["meta"] = {"command_description": description}
    if event["session"] not in state.goals and (held.has_args or description is not None):
        asked = event["text"] if held.has_args else command_request(event["text"], description)
        goal = goal_before({**event, "text": asked})
        if goal is not None and checked(goal, held.lineno, ctx):
            state.goals.add(goal["session"])
            yield goal
    yield event


def _expansion(held: _Command, line: dict[str, Any] | None) -> str | None:
    """The text of the command file Claude Code expanded for the command ``held``, when ``line`` is it: a
    user line flagged ``isMeta`` whose parent is the command line."""
    if line is None or line.get("type") != "user" or not line.get("isMeta"):
        return None
    if "parentUuid" in line and line["parentUuid"] != held.uuid:
        return None  # another notice of the harness (a caveat before the next local command)
    message = line.get("message")
    text = text_of(message.get("content")) if isinstance(message, dict) else ""
    return text if text.strip() else None


def _description(expansion: str, name: str) -> str | None:
    """What the expansion of command ``name`` says the command is for, in one line (module doc)."""
    text = expansion.strip()
    front = _FRONT_MATTER.match(text)
    body = text[front.end():].lstrip("\n") if front else text
    head = "\n".join(body.splitlines()[:PURPOSE_LINES])
    stated = _PURPOSE.search(head) or (_DESCRIPTION.search(front["body"]) if front else None)
    found = stated["text"] if stated else None
    if found is None:
        title = _TITLE.match(body.split("\n", 1)[0].strip())
        found = title["title"] if title and title["name"].lower() == name.lower() else None
    line = headline(found.strip().strip("\"'"), DESCRIPTION_LIMIT) if found else ""
    return line or None


def _is_hook_feedback(line: dict[str, Any]) -> bool:
    """A user line that is a hook's feedback to the agent (an isMeta line in 2.x, a plain one before)."""
    message = line.get("message")
    return (line.get("type") == "user" and isinstance(message, dict)
            and HOOK_FEEDBACK.match(text_of(message.get("content"))[:80]) is not None)


def _is_compact_summary(content: Any) -> bool:
    """Older versions wrote the compaction summary as a plain user line: known by its opening."""
    return text_of(content).lstrip().startswith(COMPACT_SUMMARY)


def _note(content: Any, tag: str) -> list[tuple[int, Event]]:
    """Text the harness wrote, as a system note: a compaction summary (what the session did before
    its context was compacted) or a made-up message (an API error)."""
    text = text_of(content)
    if not text.strip():
        return []
    return [(0, {"kind": "note", "actor": "system", "text": text, "tags": [tag]})]


def _goal(event: Event, line: dict[str, Any], state: _State) -> Event | None:
    """The session's goal when ``event`` is its first request (a subagent's prompt is not one)."""
    if line.get("isSidechain") or event["session"] in state.goals or not _is_request(event, own=False):
        return None
    return goal_before(event)


def _plan(event: Event, state: _State) -> Event | None:
    if event["kind"] != "tool_call":
        return None
    tool, args = event.get("tool"), event.get("args", {})
    if tool == TODO_TOOL:
        return plan_after(event, todo_items(args.get("todos"), "content"))
    if tool == TASK_CREATE and isinstance(args.get("subject"), str):
        # The id comes with the result; tasks are numbered in order, so assume the next one meanwhile.
        assumed = str(len(state.tasks) + 1)
        while assumed in state.tasks:
            assumed = str(int(assumed) + 1)
        state.tasks[assumed] = [args["subject"], "pending"]
        if isinstance(event.get("call_id"), str):
            state.task_calls[event["call_id"]] = assumed
    elif tool == TASK_UPDATE and str(args.get("taskId")) in state.tasks:
        task = state.tasks[str(args["taskId"])]
        if args.get("status") == "deleted":
            del state.tasks[str(args["taskId"])]
        else:
            task[0] = args["subject"] if isinstance(args.get("subject"), str) else task[0]
            task[1] = args["status"] if isinstance(args.get("status"), str) else task[1]
    else:
        return None
    return plan_after(event, [tuple(task) for task in state.tasks.values()])


def _task_created(call_id: str | None, text: str, state: _State) -> None:
    """Give a created task the id its result names, when it is not the one assumed."""
    assumed = state.task_calls.pop(call_id or "", None)
    found = _TASK_NUMBER.search(text)
    if assumed is None or found is None or found.group(1) == assumed or found.group(1) in state.tasks:
        return
    state.tasks = {found.group(1) if key == assumed else key: task for key, task in state.tasks.items()}


def _is_request(event: Event, own: bool = True) -> bool:
    """A message the user typed in the main conversation (not the harness's text); ``own=False``: or a
    template expanded in their turn (a goal may still come from it: the command it runs)."""
    tags = event.get("tags", [])
    if event["kind"] != "message" or event.get("actor") != "user" or SIDECHAIN_TAG in tags or COMMAND_TAG in tags:
        return False  # a command sets its goal itself, and explains no rejection (module doc)
    text = event.get("text", "")
    return not text.strip().startswith(NOT_REQUESTS) and (not own or is_own_words(text))


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
        read = _background_read(tool, finished.get("args"), state)
        if read is not None:
            state.calls[finished["call_id"]] = _Call(finished.get("id"), *read, reads_background=True)
        else:
            state.calls[finished["call_id"]] = _Call(finished.get("id"), tool, command_line(tool, finished.get("args")))
    return finished


def _background_read(tool: Any, args: Any, state: _State) -> tuple[str, str] | None:
    """The shell tool and command line whose background output a call of ``tool`` reads, or None: its
    result then reads as that command's result (what a dev server printed, a build's error)."""
    key = OUTPUT_READERS.get(tool) if isinstance(tool, str) else None
    shell_id = args.get(key) if key is not None and isinstance(args, dict) else None
    return state.background.get(shell_id) if isinstance(shell_id, str) else None


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
    if stripped.startswith(COMMAND_TAGS):
        return _typed_command(stripped)
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
                "tags": [INTERRUPTED_TAG],
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
    if call.tool == TASK_CREATE:
        _task_created(call_id, text, state)
    if call.tool and call.command and is_shell(call.tool) and (started := _BACKGROUND.match(text)):
        state.background[started.group(1)] = (call.tool, call.command)
    failed = bool(block.get("is_error")) or (call.reads_background and _BACKGROUND_FAILED in text)
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
