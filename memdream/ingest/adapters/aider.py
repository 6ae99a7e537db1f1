"""aider chat histories: the ``.aider.chat.history.md`` aider appends to in the repository's root.

aider writes Markdown (``aider/io.py``). Each run opens with ``# aider chat started at YYYY-MM-DD
HH:MM:SS`` (local time, no zone: read as UTC, as naive times are in raw events): one session per run.
In a run:

- ``#### `` lines are what the user typed; consecutive ones are one multi-line input. In architect
  mode aider also logs so the architect's answer that it hands to the editor model: an input that
  repeats the answer before it is that hand-off, not the user's words, and is left out (the answer is
  in the log already, as the model's).
- ``> `` lines are aider's own output: its banner, prompts and their answers, ``Applied edit to x``,
  ``Commit abc1234 msg``, errors, and in older versions what ``/run`` printed.
- everything else is the model's answer, ``<thinking-content-…>`` blocks included (dropped).

aider ends every line it writes for the user or for itself with two spaces (a Markdown line break); a
message of its own spanning lines has ``> `` on its first line only and the two spaces on its last. The
model's answer has neither: within an answer, a ``#### `` or ``> `` line without them is the answer's
own Markdown (a heading, a quote, a line of a file it writes), not the user nor aider. A history whose
trailing spaces were stripped loses that: there only code blocks and thinking keep such lines in the answer.

**Events.** What the user typed is a ``message``; the first real request of a run also sets its ``goal``
(a greeting or a "yes" is no task). Not requests: the answers to aider's own prompts (``Add file to the
chat? … [Yes]: skip``; the ``> `` line after it holds the answer, kept with the output) and slash
commands. ``/run X``, ``!X``, ``/test X`` and ``/lint`` are a ``tool_call`` (``shell``, or ``lint``)
that aider's next output answers as its ``tool_result``; ``/ask X``, ``/code X``, ``/architect X`` and
``/context X`` are the request ``X`` in a mode. Commands that only show (``/ls``, ``/tokens``, ``/help``
…) are skipped with their output: they change nothing. Any other command (``/add``, ``/drop``,
``/undo``, ``/commit``, ``/model``, ``/clear``, ``/exit`` … and mistyped ones) is a ``note`` of actor
``system``: it changed what aider worked with, which the output after it shows, or ended the run (after
a command aider did not know, that shows which one does the job); not ``user``, because a user's note is
their word (``memdream remember``), and a command is none. aider's output is a ``tool_result`` (tool
``aider``) without its token counts and hints; a ``Running X`` line in it (a shell command the model
proposed and the user allowed) is a ``tool_call`` answered by the output after it. The run's first
output, before anything was typed, is its banner (command line, version, model, repository): a ``note``
of actor ``system``; the model answers only what was typed, so text before the first input is the
banner's too (a ``--message`` of several lines continues the command line unmarked). A result whose
output shows a failure (a traceback, ``error:``, ``SomethingError:``, an edit aider could not apply,
``N failed``) has ``ok: false`` and its first failing line as ``error``; otherwise ``ok`` is left out:
aider never writes an exit code.

**Sessions, ids and times.** A run's session is ``aider/<project>/<start>`` (``aider/<start>``
without a project; a second run started in the same second gets ``-2``): the history grows at its
end, so each run keeps its session when the file is ingested again, and so do its events their ids,
``l<n>`` by line within the run (``<start>.l<n>`` under ``--session``, which puts every run in one
session). A goal's id is its message's and ``:goal``. The file gives one time per run: an event's time
is the run's start plus one millisecond per line to where it starts, marked ``meta.ts_synthetic``.

**Project.** aider writes the history in the repository's root: the project is that folder's
(:func:`memdream.memory.project.project_name`). A history in the home folder (aider run outside a
repository) and stdin have none.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from memdream.ingest.adapters._common import Event, add_tags, checked, compact, goal_before, project_tag
from memdream.ingest.adapters.context import ParseContext
from memdream.memory.project import project_name

NAME = "aider"
HISTORY_FILE = ".aider.chat.history.md"  # aider's default --chat-history-file

_HEADER = re.compile(r"^# aider chat started at (?P<when>.*?)\s*$")
_HEADER_TIME = "%Y-%m-%d %H:%M:%S"
_MARK = "  "  # aider's end of each line it writes itself
_THINKING_OPEN = re.compile(r"^<thinking-content-[0-9a-f]+>$")
_THINKING_CLOSE = re.compile(r"^</thinking-content-[0-9a-f]+>$")
_THINKING = re.compile(r"<(thinking-content-[0-9a-f]+)>.*?(?:</\1>|\Z)", re.DOTALL)  # cut short: to the end
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_PROMPT_ANSWER = re.compile(r"\?\s*\(Y\)es/\(N\)o\b.*:\s*\S*$")
_COMMAND = re.compile(r"^/(?P<name>[a-z][a-z-]*)(?:\s+(?P<args>.*))?$", re.DOTALL)
_BANG = re.compile(r"^!(?P<args>\S.*)$", re.DOTALL)  # aider's alias of /run
_RUNNING = re.compile(r"^Running (?P<command>\S.*)$")
# In architect mode aider sends the architect's answer to the editor model as the next input, and logs
# it as typed (``#### `` lines): an input that opens with this much of the answer before it is that.
HANDOFF_PREFIX = 200
# aider's output that says nothing about the work: costs, hints, its ^C echo.
_NOISE = re.compile(r"^(?:Tokens: .* sent\b.*|You can use /undo to undo .*|\^C again to exit)$")
_FAILURE = re.compile(
    r"^(?:Traceback \(most recent call last\)|(?:error|fatal|FAILED)\b"
    r"|\S*(?:Error|Exception):"  # ValueError: …, litellm.AuthenticationError: …
    r"|.*\bdid not conform to the edit format|.*\bSEARCH/REPLACE blocks? failed to match"
    r"|.*\b[1-9]\d* failed\b|.*\b(?:exit (?:code|status)|non-zero exit status):? *[1-9])",
    re.IGNORECASE,
)
_SHELL_COMMANDS = {"run": "shell", "test": "shell", "lint": "lint"}
_MODE_COMMANDS = frozenset({"ask", "code", "architect", "context"})  # with words after them: a request
_SHOW_COMMANDS = frozenset({"help", "ls", "tokens", "map", "map-refresh", "settings", "diff", "copy"})
_NOT_REQUESTS = frozenset({"hi", "hello", "hey", "y", "yes", "n", "no", "ok", "okay", "thanks", "thank you",
                           "go ahead", "continue", "proceed", "привет", "да", "нет", "ок", "спасибо"})

_Kind = Literal["user", "tool", "agent"]


@dataclass
class _Turn:
    """Consecutive lines of one speaker: what the user typed, aider's output, or the model's answer."""

    kind: _Kind
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, text without prefix)

    @property
    def line(self) -> int:
        return self.lines[0][0]

    def text(self) -> str:
        return "\n".join(text.rstrip() for _, text in self.lines).strip()


@dataclass
class _Run:
    """One ``# aider chat started at`` block: where it starts and what its events are named."""

    header: int  # the header's line number
    start: datetime
    session: str
    id_prefix: str  # "" when the run has a session of its own
    tags: tuple[str, ...]

    def id_of(self, line: int) -> str:
        return f"{self.id_prefix}l{line - self.header}"

    def ts_of(self, line: int) -> str:
        moment = self.start + timedelta(milliseconds=line - self.header)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class _Draft:
    """An event before its session, id and time, and the line it starts at."""

    line: int
    event: Event
    request: bool = False  # a user message asking for something: may set the goal
    call: int | None = None  # the line of the tool call this call or result belongs to (its call_id)


def sniff(head: str) -> bool:
    """A history opens with the header of its first run (after aider's blank line)."""
    first = next((line for line in head.lstrip("\ufeff").splitlines() if line.strip()), "")
    return _HEADER.match(first) is not None


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[Event]:
    project = _project(ctx)
    starts: Counter[str] = Counter()  # runs per start second: a second run in one second gets "-2"
    run: _Run | None = None
    splitter = _Splitter()
    preamble = True  # before the first header: what is there is reported once, then skipped
    for lineno, raw in enumerate(lines, start=1):
        header = _HEADER.match(raw.lstrip("\ufeff") if lineno == 1 else raw)
        if header is not None:
            if run is not None:
                yield from _run_events(run, splitter.turns, ctx)
            run = _open_run(header.group("when"), lineno, ctx, project, starts)
            splitter, preamble = _Splitter(), False
        elif run is not None:
            splitter.add(lineno, raw)
        elif preamble and raw.strip():
            ctx.bad(lineno, "not an aider chat history: expected '# aider chat started at YYYY-MM-DD HH:MM:SS' "
                            "before this line")
            preamble = False
    if run is not None:
        yield from _run_events(run, splitter.turns, ctx)


def _project(ctx: ParseContext) -> str | None:
    """The project of the folder holding the history: aider writes it in the repository's root."""
    if ctx.source == "<stdin>":
        return None
    folder = Path(ctx.source).absolute().parent
    if folder == Path(os.path.expanduser("~")):  # aider run outside any repository
        return None
    return project_name(str(folder))


def _open_run(when: str, lineno: int, ctx: ParseContext, project: str | None, starts: Counter[str]) -> _Run | None:
    try:
        start = datetime.strptime(when, _HEADER_TIME)
    except ValueError:
        ctx.bad(lineno, f"not a start time (YYYY-MM-DD HH:MM:SS): {when!r}")
        return None
    stamp = start.strftime("%Y%m%dT%H%M%S")
    starts[stamp] += 1
    if starts[stamp] > 1:
        stamp = f"{stamp}-{starts[stamp]}"
    if ctx.session:
        return _Run(lineno, start, ctx.session, f"{stamp}.", project_tag(project))
    session = f"aider/{project}/{stamp}" if project else f"aider/{stamp}"
    return _Run(lineno, start, session, "", project_tag(project))


class _Splitter:
    """Splits the lines of one run into turns: what the user typed, aider's output, the model's answers."""

    def __init__(self) -> None:
        self.turns: list[_Turn] = []
        self.marked = False  # aider's two-space line ends seen: its lines can be told from the answer's
        self.output_open = False  # a message of aider's is still to end (its last line has the mark)
        self.gap = False  # a blank line since the current turn's last line
        self.fence: str | None = None  # the open code fence of the answer
        self.thinking = False  # in the answer's thinking block
        self.typed = False  # an input seen: the model answers only after one

    def add(self, lineno: int, raw: str) -> None:
        line = raw.rstrip("\r\n")
        marked = line.endswith(_MARK)
        self.marked = self.marked or marked
        current = self.turns[-1] if self.turns else None
        if not line.strip():
            self.gap = True
            if current is not None and (current.kind == "agent" or self.output_open):
                current.lines.append((lineno, ""))
            return
        kind = self._kind(line, marked)
        if self.output_open and not (kind == "user" and marked):
            kind = "tool"  # the next line of a message of aider's, whatever it looks like
        elif kind == "agent" and current is not None and current.kind == "tool" and not self.gap:
            kind = "tool"  # an answer starts after a blank line: this is aider's message going on
        elif kind == "agent" and not self.typed:
            kind = "tool"  # nothing asked yet: the banner going on (a command line whose --message spans lines)
        self.typed = self.typed or kind == "user"
        if kind == "tool":
            self.output_open = self.marked and not marked
        self._append(kind, lineno, line)

    def _kind(self, line: str, marked: bool) -> _Kind:
        if not (_is_input(line) or _is_output(line)):
            return "agent"
        in_answer = bool(self.turns) and self.turns[-1].kind == "agent"
        if in_answer and not marked and (self.marked or self.fence is not None or self.thinking):
            return "agent"  # the answer's own heading, quote or file line
        return "user" if _is_input(line) else "tool"

    def _append(self, kind: _Kind, lineno: int, line: str) -> None:
        text = _input_text(line) if kind == "user" else _output_text(line) if kind == "tool" else line
        current = self.turns[-1] if self.turns else None
        if current is None or current.kind != kind or (kind == "user" and self.gap):
            current = _Turn(kind)
            self.turns.append(current)
            self.fence, self.thinking = None, False
        current.lines.append((lineno, text))
        self.gap = False
        if kind == "agent":
            self._follow(line)

    def _follow(self, line: str) -> None:
        """Follow the answer's code fences and thinking block: their lines are the answer's, whatever they look like."""
        stripped = line.strip()
        if self.thinking:
            self.thinking = _THINKING_CLOSE.match(stripped) is None
            return
        if _THINKING_OPEN.match(stripped):
            self.thinking = True
            return
        fence = _FENCE.match(line)
        if fence is None:
            return
        if self.fence is None:
            self.fence = fence.group(1)
        elif stripped.startswith(self.fence) and not stripped.strip(self.fence[0]):
            self.fence = None


def _is_input(line: str) -> bool:
    return line.startswith("#### ") or line.rstrip() == "####"


def _is_output(line: str) -> bool:
    return line.startswith("> ") or line.rstrip() == ">"


def _input_text(line: str) -> str:
    return line[5:] if line.startswith("#### ") else ""


def _output_text(line: str) -> str:
    if line.startswith("> "):
        return line[2:]
    return "" if line.rstrip() == ">" else line


def _run_events(run: _Run, turns: list[_Turn], ctx: ParseContext) -> Iterator[Event]:
    goal_set = False
    for draft in _drafts(_merged(turns)):
        event = _stamped(run, draft)
        if not checked(event, draft.line, ctx):
            continue
        if draft.request and not goal_set:
            goal = goal_before(event)
            if goal is not None:
                goal["meta"] = dict(event["meta"])
                if checked(goal, draft.line, ctx):
                    goal_set = True
                    yield goal
        yield event


def _stamped(run: _Run, draft: _Draft) -> Event:
    event: Event = {"session": run.session, "id": run.id_of(draft.line), "ts": run.ts_of(draft.line),
                    **draft.event, "meta": {"ts_synthetic": True}}
    if draft.call is not None:
        event["call_id"] = run.id_of(draft.call)
    return add_tags(event, *run.tags)


def _merged(turns: list[_Turn]) -> list[_Turn]:
    """The turns without the user's answers to aider's prompts: the output around one is one output."""
    kept: list[_Turn] = []
    for turn in turns:
        if turn.kind == "user" and _answers_prompt(turn):
            continue
        if kept and turn.kind == "tool" and kept[-1].kind == "tool":
            kept[-1].lines.extend(turn.lines)
            continue
        kept.append(turn)
    return kept


def _answers_prompt(turn: _Turn) -> bool:
    return len(turn.lines) == 1 and _PROMPT_ANSWER.search(turn.lines[0][1].rstrip()) is not None


def _drafts(turns: list[_Turn]) -> Iterator[_Draft]:
    spoken = False  # the run's first output, before anything was typed or answered, is its banner
    answer = ""  # the model's last answer, while nothing was typed after it
    index = 0
    while index < len(turns):
        turn = turns[index]
        following = turns[index + 1] if index + 1 < len(turns) and turns[index + 1].kind == "tool" else None
        index += 1
        if turn.kind == "agent":
            drafts = _answer(turn)
            answer = _words(drafts[0].event["text"]) if drafts else answer
            yield from drafts
        elif turn.kind == "tool":
            yield from _output_drafts(turn) if spoken else _banner(turn)
        elif answer and _words(turn.text()).startswith(answer[:HANDOFF_PREFIX]):
            answer = ""  # the architect's answer handed to the editor model: aider's input, not the user's
        else:
            answer = ""
            drafts, answered = _input_drafts(turn, following)
            yield from drafts
            index += answered
        spoken = True


def _words(text: str) -> str:
    return " ".join(text.split())


def _answer(turn: _Turn) -> list[_Draft]:
    text = _THINKING.sub("", turn.text()).strip()
    if not text:
        return []
    return [_Draft(turn.line, {"kind": "message", "actor": "agent", "text": text})]


def _banner(turn: _Turn) -> list[_Draft]:
    text = "\n".join(_kept(turn.lines))
    return [_Draft(turn.line, {"kind": "note", "actor": "system", "text": text})] if text else []


def _kept(lines: list[tuple[int, str]]) -> list[str]:
    """aider's output lines without blanks and noise."""
    kept = (text.rstrip() for _, text in lines)
    return [text for text in kept if text.strip() and _NOISE.match(text.strip()) is None]


def _input_drafts(turn: _Turn, following: _Turn | None) -> tuple[list[_Draft], int]:
    """What the user typed as events, and how many turns after it that took (the output of a command)."""
    text = turn.text()
    if not text or text == "<blank>":  # aider's mark of an empty input
        return [], 0
    command = _command(text)
    if command is None:
        return [_Draft(turn.line, {"kind": "message", "actor": "user", "text": text}, _is_request(text))], 0
    name, args = command
    answered = 1 if following is not None else 0
    if name in _SHELL_COMMANDS:
        return _shell(turn.line, _SHELL_COMMANDS[name], args or f"/{name}", following), answered
    if name in _MODE_COMMANDS and args:
        return [_Draft(turn.line, {"kind": "message", "actor": "user", "text": args}, _is_request(args))], 0
    if name in _SHOW_COMMANDS:
        return [], answered
    return [_Draft(turn.line, {"kind": "note", "actor": "system", "text": text})], 0


def _command(text: str) -> tuple[str, str] | None:
    """The slash command typed and its arguments (``!X`` is ``/run X``); None for a message."""
    bang = _BANG.match(text)
    if bang is not None:
        return "run", bang.group("args").strip()
    command = _COMMAND.match(text)
    if command is None:
        return None
    return command.group("name"), (command.group("args") or "").strip()


def _is_request(text: str) -> bool:
    words = " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())
    return bool(words) and words not in _NOT_REQUESTS


def _shell(line: int, tool: str, command: str, output: _Turn | None) -> list[_Draft]:
    """A command the user ran through aider, and its output when aider wrote it down."""
    call = _Draft(line, {"kind": "tool_call", "actor": "user", "tool": tool, "args": {"command": command}},
                  call=line)
    if output is None:
        return [call]
    return [call, *_result(output.lines, tool, command, line)]


def _output_drafts(turn: _Turn) -> list[_Draft]:
    """aider's output: a result, and a call for each shell command it ran, answered by what follows it."""
    drafts: list[_Draft] = []
    tool, command, call = "aider", "", None
    piece: list[tuple[int, str]] = []
    for line, text in turn.lines:
        running = _RUNNING.match(text.strip())
        if running is None:
            piece.append((line, text))
            continue
        drafts.extend(_result(piece, tool, command, call))
        tool, command, call, piece = "shell", running.group("command"), line, []
        drafts.append(_Draft(line, {"kind": "tool_call", "actor": "agent", "tool": tool,
                                    "args": {"command": command}}, call=line))
    drafts.extend(_result(piece, tool, command, call))
    return drafts


def _result(lines: list[tuple[int, str]], tool: str, command: str, call: int | None) -> list[_Draft]:
    """aider's output as a result (of the call on line ``call``, when it answers one)."""
    kept = _kept(lines)
    if not kept:
        return []
    failure = next((text.strip() for text in kept if _FAILURE.match(text.strip())), None)
    event = compact({
        "kind": "tool_result", "actor": "tool", "tool": tool, "text": "\n".join(kept),
        "args": {"command": command} if command else None,
        "ok": False if failure is not None else None, "error": failure,
    })
    return [_Draft(lines[0][0], event, call=call)]
