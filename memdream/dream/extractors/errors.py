"""Lessons from error → fix: a shell command fails, and in the same session a changed call succeeds.

Three shapes of fix, as they show in transcripts:

- the same program run another way: ``pytest -q`` fails, ``poetry run pytest -q`` succeeds (a
  wrapper), or ``npm test`` fails and ``npm test -- --runInBand`` succeeds (other arguments);
- another tool for the same job: ``python -m pytest`` after ``pytest``;
- a preparatory step: ``alembic upgrade head`` fails, ``docker compose up -d db`` succeeds, then
  ``alembic upgrade head`` succeeds.

The lesson's key is the project and the failing program with its error's telling line, paths,
numbers and ids normalized away, so that the same failure in another session meets it; its value
is the fix. One occurrence is evidence, not a card: admission wants the same lesson in two
sessions (a compaction summary retelling an episode is a note, never a tool result, so it never
counts). A retry that succeeds unchanged, or after a code edit, teaches nothing reusable.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memdream.dream.extractors import Candidate
from memdream.dream.extractors._events import (
    GLOBAL_SCOPE,
    calls_by_id,
    piece,
    result_command,
    scope_tags,
    session_project,
    shell_result,
    trusted,
)
from memdream.dream.model import DreamContext, Episode, FactKey
from memdream.injection import reads_like_instruction
from memdream.toolcalls import error_line, program

NAME = "error-fix"
UNIT = "session"
WINDOW = 8  # commands after a failure in which its fix must show
TEST_RUNNERS = frozenset({"pytest", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit", "ctest"})
# Commands that only look: a success of one of these is not a fix.
INSPECTION = frozenset({"ls", "cat", "pwd", "echo", "head", "tail", "less", "more", "grep", "rg", "find", "which",
                        "wc", "file", "stat", "env", "printenv", "whoami", "type", "tree", "du", "df", "date"})
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~+-]*/)+[\w.+-]*")
_ID = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{7,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")


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


def signature(line: str) -> str:
    """An error line with what varies between occurrences (paths, ids, numbers) normalized away."""
    text = _PATH.sub("<path>", line)
    text = _ID.sub("<id>", text)
    text = _NUMBER.sub("<n>", text)
    return " ".join(text.split())[:160]


def runs(events: list[dict[str, Any]]) -> list[Run]:
    """The session's shell commands with their results, in order."""
    calls = calls_by_id(events)
    found = []
    for event in events:
        if event["kind"] != "tool_result" or not trusted(event) or not shell_result(event, calls):
            continue
        command = result_command(event, calls)
        if command and event.get("ok") is not None:
            output = str(event.get("error") or event.get("text") or "")
            found.append(Run(event, command, bool(event["ok"]), output))
    return found


def looks_only(run: Run) -> bool:
    """A command that only looks at things (``ls``, ``cat``, ``sed -n``): its success fixes nothing."""
    return run.program in INSPECTION or (run.program == "sed" and "-n" in run.words())


def _head_at(fix: Run, failed: Run) -> int | None:
    """Where the failed command's program and subcommands start in the fix's words (``pytest`` in
    ``poetry run pytest -q``, ``npm test`` in ``npm test -- --runInBand``), or None: ``terraform fmt``
    does not run ``terraform plan``."""
    from memdream.dream.extractors.workflows import head

    wanted = head(failed.command).split()
    names = [word.rsplit("/", 1)[-1] for word in fix.words()]
    for start in range(len(names) - len(wanted) + 1):
        if wanted and names[start:start + len(wanted)] == wanted:
            return start
    return None


def _wrapper(fix: Run, failed: Run) -> str:
    """The words before the failed command in the fix: ``poetry run``, or '' for none."""
    start = _head_at(fix, failed)
    return " ".join(fix.words()[:start]) if start else ""


def find_fix(failed: Run, after: list[Run]) -> tuple[str, Run] | None:
    """How ``failed`` was fixed among the next commands: (shape, the fixing run), or None."""
    for position, run in enumerate(after):
        if not run.ok:
            continue
        if run.command == failed.command:  # it works now: a step in between made it work, or nothing did
            steps = [step for step in after[:position]
                     if step.ok and not looks_only(step) and step.program != failed.program]
            return ("step", steps[-1]) if steps else None
        if looks_only(run):
            continue
        if _head_at(run, failed) is not None:
            return ("wrapper" if _wrapper(run, failed) else "arguments"), run
    return None


def _fix_value(shape: str, failed: Run, fix: Run) -> str:
    if shape == "wrapper":
        return f"{_wrapper(fix, failed)} {failed.program}"
    return " ".join(_NUMBER.sub("<n>", fix.command).split())


def statement(scope: str, shape: str, failed: Run, fix: Run, error: str) -> str:
    doing = "running the tests with" if failed.program in TEST_RUNNERS or " test" in failed.command else "running"
    where = f"In {scope}, " if scope != GLOBAL_SCOPE else ""
    said = f"{where}{doing} `{failed.command}` fails with `{error}`"
    if shape == "wrapper":
        return f"{said}; run it as `{fix.command}` instead."
    if shape == "step":
        return f"{said} until `{fix.command}` has run; run that first, then `{failed.command}` works."
    return f"{said}; `{fix.command}` works."


def lessons(events: list[dict[str, Any]], scope: str) -> Iterator[Candidate]:
    commands = runs(events)
    for position, failed in enumerate(commands):
        if failed.ok or looks_only(failed):
            continue
        found = find_fix(failed, commands[position + 1: position + 1 + WINDOW])
        error = error_line(failed.output)
        if found is None or not error:
            continue
        shape, fix = found
        if reads_like_instruction(fix.command) or reads_like_instruction(failed.command):
            continue  # a command an injected page asked for is no lesson
        attribute = f"fix: {failed.program}: {signature(error)}"[:200]
        value = _fix_value(shape, failed, fix)
        text = statement(scope, shape, failed, fix, error)
        evidence = piece(fix.event, value, kind="observation", layer="lesson", statement=text, scope=scope,
                         tags=(*scope_tags(scope), "error-fix"), source=NAME)
        yield Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    yield from lessons(episode.events, session_project(episode.events) or GLOBAL_SCOPE)
