"""What a tool call did, in one line: ``pytest -q``, ``Read src/app.py``, ``WebFetch https://…``.

Ingest copies this line onto the tool's result (``args.command``) so that a result reads alone,
dream builds lessons and strategies from it, and recall shows it in front of the output. Agents
name their tools differently (Claude Code's ``Bash``, Codex's ``shell`` / ``exec_command`` /
``local_shell``, a chat model's functions); shell tools give their command line, the others their
name and main argument.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

MAX_COMMAND = 300
# Tools whose arguments are a shell command line.
SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "local_shell", "run_shell_command", "terminal",
                         "run_terminal_cmd", "execute_command", "shell_command"})
# Tools that read more output of a shell command still running, and the argument naming which one:
# Claude Code's BashOutput (1.x) and TaskOutput (2.x), Codex's write_stdin. Ingest gives their results
# that command's line; dream counts such a read as part of the run it continues.
OUTPUT_READERS = {"BashOutput": "bash_id", "TaskOutput": "task_id", "write_stdin": "session_id"}
# The argument that says what a non-shell tool worked on, by preference.
_MAIN_ARGS = ("file_path", "path", "notebook_path", "url", "pattern", "query", "description", "cmd", "command")
# A shell wrapper around the real command: ``bash -lc "pytest -q"``.
_WRAPPERS = (("bash", "-lc"), ("bash", "-c"), ("sh", "-c"), ("zsh", "-lc"), ("zsh", "-c"), ("/bin/bash", "-lc"),
             ("/bin/bash", "-c"), ("/bin/sh", "-c"))


def is_shell(tool: str | None) -> bool:
    return (tool or "").lower() in SHELL_TOOLS


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[0] + (" …" if len(lines) > 1 else "")
    if len(line) <= MAX_COMMAND:
        return line
    # Cut between words: half a token (a key, a token) is no longer what redaction recognizes.
    kept = line[:MAX_COMMAND - 1].rsplit(None, 1)[0] if " " in line[:MAX_COMMAND - 1] else ""
    return kept.rstrip() + " …" if kept else "…"


def _argv(value: Any) -> str | None:
    """A command given as a string or an argv list (Codex), unwrapped from ``bash -lc``."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        for wrapper in _WRAPPERS:
            if len(value) == 3 and tuple(value[:2]) == wrapper:
                return str(value[2])
        return shlex.join(value)
    return None


def shell_command(args: dict[str, Any]) -> str | None:
    for name in ("command", "cmd", "commands"):
        found = _argv(args.get(name))
        if found:
            return found
    return None


def main_argument(args: Any) -> str | None:
    """What a call of a tool that is not a shell worked on: its file, path, URL or pattern, by preference."""
    arguments = args if isinstance(args, dict) else {}
    for name in _MAIN_ARGS:
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def command_line(tool: str | None, args: Any) -> str | None:
    """The one-line summary of a call of ``tool`` with ``args``; None when there is nothing to say."""
    arguments = args if isinstance(args, dict) else {}
    if is_shell(tool):
        found = shell_command(arguments)
        return _one_line(found) if found else None
    if not tool:
        return None
    value = main_argument(arguments)
    return _one_line(f"{tool} {value}" if value else tool)


# ``cd somewhere && `` in front of the command that matters (agents run everything from a subfolder so).
_CD_PREFIX = re.compile(r"^\s*cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)\s*")


def without_cd(command: str) -> str:
    """``command`` without the ``cd <folder> &&`` steps in front of it: ``cargo fmt --all`` for
    ``cd codex-rs && cargo fmt --all``."""
    while True:
        found = _CD_PREFIX.match(command)
        if found is None or found.end() == len(command):
            return command
        command = command[found.end():]


def program(command: str) -> str:
    """The program a shell command runs: ``poetry`` in ``FOO=1 poetry run pytest``, ``cargo`` in
    ``cd codex-rs && cargo fmt``."""
    command = without_cd(command)
    try:
        words = shlex.split(command, comments=False)
    except ValueError:
        words = command.split()
    for word in words:
        if "=" in word and not word.startswith(("-", "/", ".")) and word.split("=", 1)[0].isidentifier():
            continue  # an environment assignment
        return word.rsplit("/", 1)[-1]
    return ""


# What a line must look like to tell what went wrong, best first: an exception class with its
# message, a compiler's or tool's own error prefix, then the OS's stock failure phrases.
_TELLING = (
    re.compile(r"\b[A-Z][A-Za-z0-9_.]*(?:Error|Exception|Failure)\b:?"),
    re.compile(r"^(?:error(?:\[[A-Z]?\d+\])?|fatal|ERROR|FATAL|FAILED|npm ERR!|E\d{3,4})\b[:!]?", re.IGNORECASE),
    re.compile(r"command not found|No such file or directory|Permission denied|Connection refused|not found|"
               r"cannot |can't |unable to |failed", re.IGNORECASE),
)
# The header a harness writes above a shell's output (Codex: "Exit code: 1", "Wall time: 0.1 seconds",
# "Output:"; its exec_command also a chunk id, a session id and a token count): no part of the output.
_HEADER = (r"Exit code:?\s*-?\d+|Process exited with code\s*-?\d+|Wall time:\s*[\d.]+\s*(?:seconds?|s|ms)?|Output:|"
           r"Chunk ID:\s*\w+|Original token count:\s*\d+|Process running with session ID\s*\d+")
_NOISE = re.compile(rf"^(?:{_HEADER}|Traceback \(most recent call last\):|-+|=+|\s*\^+\s*)$")
# Advice a tool prints next to its error (git's "hint:", rustc's "help:", npm's "npm notice"): not the error.
_HINT = re.compile(r"^(?:hint|help|note|notice|tip|npm notice|npm warn)\b\s*:?", re.IGNORECASE)
_TRACE_PREFIX = re.compile(r"^(?:E\s{2,}|>\s+|\|\s+)")
# The tags a harness wraps a tool's own error in (Claude Code: "<tool_use_error>File has not been read
# yet…</tool_use_error>"): no part of what the tool said.
_ERROR_TAG = re.compile(r"</?tool_use_error>")


def output_lines(output: str) -> list[str]:
    """The lines of a tool's output that say something: no harness header ("Exit code: 1", "Wall
    time: …", "Output:"), no rule lines, no hints, no blank lines; trace prefixes (pytest's ``E``) and
    a harness's error tags off."""
    lines = [_TRACE_PREFIX.sub("", _ERROR_TAG.sub("", line)).strip() for line in output.splitlines()]
    return [line for line in lines if line and not _NOISE.match(line) and not _HINT.match(line)]


_EXIT_CODE = re.compile(r"^\s*(?:Error: )?(?:Exit code:?|Process exited with code)\s*(-?\d+)\s*$", re.MULTILINE)


def exit_code(output: str) -> int | None:
    """The exit code a harness wrote above a shell's output ("Exit code: 1", Claude Code's "Exit
    code 1", "Process exited with code 1"), or None when it wrote none."""
    found = _EXIT_CODE.search(output[:400])
    return int(found.group(1)) if found else None


def telling_lines(output: str, limit: int = 2) -> list[str]:
    """The few lines of a tool's output that say what happened: for a failure the error lines
    (the most specific last, as tracebacks put it), else the last lines, which summarize."""
    lines = output_lines(output)
    for pattern in _TELLING:
        found = [line for line in lines if pattern.search(line)]
        if found:
            return [cut_line(line) for line in found[-limit:]]
    return [cut_line(line) for line in lines[-limit:]]


# A label over a list ("Options:", "Suggestions:", "Usage:"): it heads the list, it says nothing itself.
_LABEL = re.compile(r"^\w+(?:[ -]\w+){0,2}:$")
_LIST_MARKER = re.compile(r"^(?:\d+[.)]|[-*•])\s+")


def error_line(output: str) -> str:
    """The one line of a failed call's output that names the error ('' for an empty output): the
    most specific telling line, else the output's first line, which headlines what the rest lists
    ("The following paths are ignored by one of your .gitignore files:" before the paths); when that
    line is a bare label ("Options:"), the first item under it."""
    lines = output_lines(output)
    said = _labels_joined(lines)
    for pattern in _TELLING:
        found = [line for line in said if pattern.search(line)]
        if found:
            return cut_line(found[-1])
    if len(lines) > 1 and _LABEL.match(lines[0]):
        return cut_line(_LIST_MARKER.sub("", lines[1]))
    return cut_line(lines[0]) if lines else ""


def _labels_joined(lines: list[str]) -> list[str]:
    """The lines with each bare label joined to the line under it ("Error:" then "Cannot find module 'x'"
    is one line, "Error: Cannot find module 'x'"): the label says what kind of line it is, the next line what
    happened."""
    joined: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if _LABEL.match(line) and index + 1 < len(lines) and not _LABEL.match(lines[index + 1]):
            joined.append(f"{line} {_LIST_MARKER.sub('', lines[index + 1])}")
            index += 2
        else:
            joined.append(line)
            index += 1
    return joined


def cut_line(line: str, limit: int = 200) -> str:
    """``line`` within ``limit`` characters, cut with an ellipsis."""
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
