"""The shell commands of a session, as the extractors read them: each command with its result, the
program and subcommands it runs, and which commands only look at things; and the calls of the other
tools (an agent's Read, Edit, Write), each with what it worked on and its result."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from memdream.dream.extractors._events import calls_by_id, result_command, shell_result, trusted
from memdream.toolcalls import OUTPUT_READERS, main_argument, output_lines, program

TEST_RUNNERS = frozenset({"pytest", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest"})
# Commands that only look: a success of one of these is not a fix.
INSPECTION = frozenset({"ls", "cat", "pwd", "echo", "head", "tail", "less", "more", "grep", "rg", "find", "which",
                        "wc", "file", "stat", "env", "printenv", "whoami", "type", "tree", "du", "df", "date"})
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9_:-]*$")


@dataclass(frozen=True)
class Run:
    """One shell command and its result."""

    event: dict[str, Any]
    command: str
    ok: bool
    output: str

    @property
    def program(self) -> str:
        return program(self.command)

    def words(self) -> list[str]:
        try:
            return shlex.split(self.command)
        except ValueError:
            return self.command.split()


def runs(events: list[dict[str, Any]]) -> list[Run]:
    """The session's shell commands with their results, in order. A command that ran on in the background
    (a dev server, a long build) is one run: what later reads of its output (:data:`OUTPUT_READERS`)
    got is added to its output, and the last read says whether it failed; counted apart, each read
    would be one more run of the command."""
    calls = calls_by_id(events)
    found: list[Run] = []
    running: dict[str, int | None] = {}  # command line -> its run in ``found`` (None: no result yet)
    for event in events:
        if event["kind"] != "tool_result" or not trusted(event) or not shell_result(event, calls):
            continue
        command = result_command(event, calls)
        if not command:
            continue
        reader = calls.get(str(event.get("call_id") or ""), {}).get("tool") in OUTPUT_READERS
        if not reader:
            running[command] = None  # a new start of the command: reads from now on are this one's
        if event.get("ok") is None:
            continue  # still running, no exit status yet (Codex): a later read says how it ended
        output = str(event.get("error") or event.get("text") or "")
        at = running.get(command)
        if reader and at is not None:
            started = found[at]
            found[at] = replace(started, ok=bool(event["ok"]), output=f"{started.output}\n{output}")
            continue
        running[command] = len(found)
        found.append(Run(event, command, bool(event["ok"]), output))
    return found


@dataclass(frozen=True)
class ToolUse:
    """One call of a tool that is not a shell (``Edit``, ``Read``) and its result."""

    event: dict[str, Any]
    tool: str
    target: str  # the file it worked on (its main argument), '' when it names none
    ok: bool
    output: str


def tool_uses(events: list[dict[str, Any]]) -> list[ToolUse]:
    """The session's calls of tools that are not a shell, with their results, in order. What a call
    worked on is its call's main argument (``file_path``), else what ingest's one-line summary of it
    names after the tool (``Edit src/app.py``)."""
    calls = calls_by_id(events)
    found = []
    for event in events:
        if event["kind"] != "tool_result" or not trusted(event) or event.get("ok") is None:
            continue
        call = calls.get(str(event.get("call_id") or ""), {})
        tool = str(event.get("tool") or call.get("tool") or "")
        if not tool or shell_result(event, calls):
            continue
        target = main_argument(call.get("args")) or _summary_target(tool, event.get("args"))
        output = str(event.get("error") or event.get("text") or "")
        found.append(ToolUse(event, tool, target, bool(event["ok"]), output))
    return found


def _summary_target(tool: str, args: Any) -> str:
    summary = args.get("command") if isinstance(args, dict) else None
    if not isinstance(summary, str) or not summary.startswith(f"{tool} "):
        return ""
    return summary[len(tool) + 1:].strip()


PREAMBLE_DEPTH = 3  # lines a shell's start-up files may print


def preamble(commands: list[Run]) -> list[str]:
    """The lines the shell printed above every command's output (a login profile's warning, an
    environment notice), as :func:`memdream.toolcalls.output_lines` reads them: the leading lines
    that most successful outputs share, outputs of two programs or more. They are the environment's:
    in a failed command's output they are not its error, and with nothing else it printed nothing."""
    outputs = [(run.program, output_lines(run.output)) for run in commands if run.ok]
    found: list[str] = []
    while len(found) < PREAMBLE_DEPTH:
        sharing: dict[str, list[str]] = {}
        for name, lines in outputs:
            if len(lines) > len(found) and lines[:len(found)] == found:
                sharing.setdefault(lines[len(found)], []).append(name)
        line, names = max(sharing.items(), key=lambda item: len(item[1]), default=("", []))
        if len(set(names)) < 2 or len(names) * 2 <= len(outputs):
            break
        found.append(line)
    return found


def without_preamble(commands: list[Run]) -> list[Run]:
    """The session's commands with the shell's :func:`preamble` taken out of their outputs."""
    lines = preamble(commands)
    return [replace(run, output=_strip(run.output, lines)) for run in commands] if lines else commands


def _strip(output: str, lines: list[str]) -> str:
    """``output`` without ``lines`` where they lead what it says (a harness's header stays)."""
    kept, pending = [], list(lines)
    for raw in output.splitlines():
        said = output_lines(raw)
        if said and pending and said[0] == pending[0]:
            pending.pop(0)
            continue
        if said:
            pending = []
        kept.append(raw)
    return "\n".join(kept)


# Subcommands that only look, of programs that also change things (``git status``; ``git commit`` changes).
LOOKING_SUBCOMMANDS = frozenset({"git status", "git diff", "git log", "git show", "git branch", "git remote",
                                 "git fetch"})


def looks_only(run: Run) -> bool:
    """A command that only looks at things (``ls``, ``cat``, ``sed -n``): its success fixes nothing."""
    return run.program in INSPECTION or (run.program == "sed" and "-n" in run.words())


def head(command: str) -> str:
    """The program and its subcommands: ``git commit`` for ``git commit -m "…"``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]  # environment assignments
    if not words:
        return ""
    kept = [words[0].rsplit("/", 1)[-1]]
    for word in words[1:4]:
        if not _SUBCOMMAND.match(word) or "." in word or "/" in word:
            break
        kept.append(word)
    return " ".join(kept)
