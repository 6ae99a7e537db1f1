"""Errors every developer recognises (CRLF line endings, a port that is taken, …) are one lesson of a
project whatever their line says; a program not on PATH is one lesson, whether a session found what
does its job or not; and Claude Code's Edit that wants the file read first is a lesson of the harness.

The extractor is fed event dicts shaped as ingest stores a Codex rollout; the end-to-end tests run the
real command line on Claude Code and Codex transcripts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors import error_fix
from memdream.dream.model import Episode
from tests.transcripts import ClaudeSession, CodexSession

SHEBANG_CR = "/usr/bin/env: 'bash\\r': No such file or directory"
LINE_CR = "scripts/lib.sh: line 4: $'\\r': command not found"
NOT_READ = "File has not been read yet. Read it first before writing to it."


class Session:
    """One session's events as ingest stores them: shell commands and other tools' calls, with results."""

    def __init__(self, name: str, project: str = "billing-api") -> None:
        self.name, self.project = name, project
        self.events: list[dict[str, Any]] = []

    def _add(self, **fields: Any) -> dict[str, Any]:
        second = 7 * (len(self.events) + 1)
        event = {"session": self.name, "id": f"e{len(self.events) + 1}",
                 "ts": f"2026-11-02T10:{second // 60:02d}:{second % 60:02d}Z", "tags": [f"project:{self.project}"],
                 **fields}
        self.events.append(event)
        return event

    def shell(self, command: str, output: str = "", code: int = 0) -> None:
        call = self._add(kind="tool_call", actor="agent", tool="shell_command", call_id=f"c{len(self.events)}",
                         args={"command": command})
        self._add(kind="tool_result", actor="tool", tool="shell_command", call_id=call["call_id"], ok=code == 0,
                  args={"command": command}, text=f"Exit code: {code}\nWall time: 0.1 seconds\nOutput:\n{output}")

    def tool(self, name: str, path: str, output: str = "", ok: bool = True) -> None:
        call = self._add(kind="tool_call", actor="agent", tool=name, call_id=f"c{len(self.events)}",
                         args={"file_path": path})
        result: dict[str, Any] = {"text": output} if ok else {"error": f"<tool_use_error>{output}</tool_use_error>"}
        self._add(kind="tool_result", actor="tool", tool=name, call_id=call["call_id"], ok=ok,
                  args={"command": f"{name} {path}"}, **result)

    def lessons(self) -> list[tuple[str, str, str]]:
        """(attribute, value, statement) of every candidate the extractor gives for this session alone."""
        found = error_fix.extract(Episode(self.name, 1, self.events), None)
        return [(candidate.names[1], candidate.piece.value or "", candidate.piece.statement or "")
                for candidate in found]


# -- well-known classes ------------------------------------------------------------------------------------


def test_a_step_that_merely_came_before_the_retry_is_no_fix_of_a_known_error() -> None:
    session = Session("s1")
    session.shell("./scripts/build.sh --all", LINE_CR, code=127)
    session.shell("git stash", "Saved working directory and index state WIP on main")
    session.shell("./scripts/build.sh --all", "built 3 targets")
    assert session.lessons() == [(
        "error: crlf", "CRLF line endings",
        "In billing-api, running `./scripts/build.sh --all` fails with `…$'\\r': command not found` (CRLF line "
        "endings).")]


def test_the_step_about_the_error_is_its_fix_even_when_another_came_after_it() -> None:
    session = Session("s1")
    session.shell("./scripts/deploy.sh staging", SHEBANG_CR, code=127)
    session.shell("sed -i 's/\\r$//' scripts/deploy.sh")
    session.shell("git stash", "Saved working directory and index state WIP on main")
    session.shell("./scripts/deploy.sh staging", "deployed")
    [(attribute, value, text)] = session.lessons()
    assert (attribute, value) == ("error: crlf", "sed")
    assert text == (f"In billing-api, running `./scripts/deploy.sh staging` fails with `{SHEBANG_CR}` (CRLF line "
                    "endings); `sed -i 's/\\r$//' <file>` fixes it.")


@pytest.mark.parametrize(("command", "output", "attribute", "diagnosis"), [
    ("npm run dev", "Error: listen EADDRINUSE: address already in use :::3000", "error: port in use",
     "the port is taken"),
    ("docker compose up -d db", "Error response from daemon: driver failed programming external connectivity: "
     "Bind for 0.0.0.0:5432 failed: port is already allocated", "error: port in use", "the port is taken"),
    ("git push", "git@github.com: Permission denied (publickey).\nfatal: Could not read from remote repository.",
     "error: ssh publickey", "no SSH key for the remote"),
    ("npm run dev", "Error: ENOSPC: System limit for number of file watchers reached, watch '/home/dev/app/src'",
     "error: file watchers", "the inotify watch limit is reached"),
    ("docker build -t app .", "failed to copy files: write /var/lib/docker/tmp/x: no space left on device",
     "error: disk full", "the disk is full"),
])
def test_a_known_error_says_its_diagnosis_whatever_program_printed_it(command: str, output: str, attribute: str,
                                                                       diagnosis: str) -> None:
    session = Session("s1")
    session.shell(command, output, code=1)
    session.shell("cat README.md", "# billing")
    [(found, value, text)] = session.lessons()
    assert (found, value) == (attribute, diagnosis)
    assert text.startswith(f"In billing-api, running `{command}` fails with `") and text.endswith(f"({diagnosis}).")


def test_a_fix_about_the_cause_is_named() -> None:
    session = Session("s1")
    session.shell("npm run dev", "Error: listen EADDRINUSE: address already in use :::3000", code=1)
    session.shell("lsof -ti :3000 | xargs kill")
    session.shell("npm run dev", "ready on http://localhost:3000")
    [(_, value, text)] = session.lessons()
    assert value == "lsof"
    assert text == ("In billing-api, running `npm run dev` fails with `Error: listen EADDRINUSE: address already in use "
                    ":::3000` (the port is taken); `lsof -ti :3000 | xargs kill` fixes it.")


def test_a_missing_module_is_a_lesson_only_with_a_fix_about_the_environment() -> None:
    error = "E   ModuleNotFoundError: No module named 'invoices'"
    alone = Session("s1")
    alone.shell("pytest -q", error, code=4)
    alone.shell("pytest -q", "12 passed in 0.31s")  # the module was written in between: no lesson
    assert alone.lessons() == []
    before_retry = Session("s2")
    before_retry.shell("pytest -q", error, code=4)
    before_retry.shell("git stash", "Saved working directory")
    before_retry.shell("pytest -q", "12 passed in 0.31s")
    assert before_retry.lessons() == []
    wrapped = Session("s3")
    wrapped.shell("pytest -q", error, code=4)
    wrapped.shell("uv run pytest -q", "12 passed in 0.31s")
    assert wrapped.lessons() == [(
        "error: no module", "uv run pytest",
        "In billing-api, running the tests with `pytest -q` fails with `ModuleNotFoundError: No module named "
        "'invoices'` (the package is not installed in the Python that ran it); run it as `uv run pytest -q` "
        "instead.")]


def test_an_error_of_no_known_class_keeps_its_own_key() -> None:
    session = Session("s1")
    session.shell("alembic upgrade head", "connection to server at \"localhost\", port 5433 failed: Connection "
                  "refused", code=1)
    session.shell("docker compose up -d db", "Container db Started")
    session.shell("alembic upgrade head", "Running upgrade")
    [(attribute, value, _)] = session.lessons()
    assert attribute.startswith("fix: alembic: ") and value == "docker compose up"


# -- a program not on PATH -----------------------------------------------------------------------------------


def test_a_missing_program_with_or_without_a_fix_is_one_key() -> None:
    fixed = Session("s1")
    fixed.shell("cd app && task build", "bash: line 1: task: command not found", code=127)
    fixed.shell("cd app && make build", "go build -o bin/app")
    never = Session("s2")
    never.shell("task build", "bash: line 1: task: command not found", code=127)
    never.shell("git diff", "diff --git a/main.go b/main.go")
    assert fixed.lessons() == [(
        "missing: task", "make build",
        "In billing-api, `task` is not installed (`bash: line 1: task: command not found`, exit 127); instead of `task "
        "build`, `make build` works.")]
    assert [attribute for attribute, _, _ in never.lessons()] == ["missing: task"]


def test_the_same_folder_is_not_a_fix() -> None:
    session = Session("s1")
    session.shell("cd app && task build", "bash: line 1: task: command not found", code=127)
    session.shell("cd app && make check", "all good")  # another job, run from the same folder
    assert session.lessons() == [
        ("missing: task", "not on PATH", "In billing-api, `task` is not on PATH (`bash: line 1: task: command not "
                                         "found`, exit 127).")]


# -- a tool that is not a shell ----------------------------------------------------------------------------


def test_edit_before_read_is_a_lesson_of_the_harness() -> None:
    session = Session("s1")
    session.tool("Edit", "/home/dev/billing-api/src/app.py", NOT_READ, ok=False)
    session.tool("Edit", "/home/dev/billing-api/src/app.py", NOT_READ, ok=False)  # tried again as it was
    session.tool("Read", "/home/dev/billing-api/src/app.py", "     1→import os")
    session.tool("MultiEdit", "/home/dev/billing-api/src/app.py", "Applied 2 edits")
    [candidate] = error_fix.extract(Episode("s1", 1, session.events), None)
    assert candidate.names == ("edit tools", f"fix: {NOT_READ}") and candidate.piece.scope == "global"
    assert candidate.piece.value == "Read" and candidate.piece.ref == "log://s1#e6"
    assert candidate.piece.statement == f"`Edit` fails with `{NOT_READ}`; `Read` the file first."


def test_no_harness_lesson_when_the_read_did_not_fix_it_or_was_not_named() -> None:
    path = "/home/dev/billing-api/src/app.py"
    still = Session("s1")
    still.tool("Edit", path, NOT_READ, ok=False)
    still.tool("Read", path, "     1→import os")
    still.tool("Edit", path, NOT_READ, ok=False)
    still.tool("Write", path, "File created successfully")
    unnamed = Session("s2")
    unnamed.tool("Edit", path, "String to replace not found in file.", ok=False)
    unnamed.tool("Read", path, "     1→import os")
    unnamed.tool("Edit", path, "The file has been updated.")
    unneeded = Session("s3")
    unneeded.tool("Edit", path, NOT_READ, ok=False)
    unneeded.tool("Write", path, "File created successfully")
    unneeded.tool("Read", path, "     1→import os")
    other_file = Session("s4")
    other_file.tool("Edit", path, NOT_READ, ok=False)
    other_file.tool("Read", "/home/dev/billing-api/src/other.py", "     1→import os")
    other_file.tool("Edit", path, "The file has been updated.")
    for session in (still, unnamed, unneeded, other_file):
        assert session.lessons() == [], session.name


# -- end to end: the command line on transcripts --------------------------------------------------------


class Memdream:
    def __init__(self, tmp_path: Path) -> None:
        self.root, self.home = tmp_path / "memory", tmp_path
        keep = {name: value for name, value in os.environ.items() if not name.startswith(("GIT_", "MEMDREAM_"))}
        self.env = {**keep, "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": str(tmp_path / "none"),
                    "GIT_CONFIG_NOSYSTEM": "1", "NO_COLOR": "1", "MEMDREAM_NOW": "2026-11-20T00:00:00Z"}
        self("init", self.root)

    def __call__(self, *args: str | Path) -> str:
        return subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                              env=self.env, cwd=self.home, check=True).stdout

    def dream(self, logs: Path) -> None:
        self("ingest", logs, "-m", self.root)
        self("dream", "-m", self.root)

    def lessons(self, *status: str) -> list[dict[str, Any]]:
        """The error-fix lessons: the active ones, or those of ``--status`` ``status``."""
        cards = json.loads(self("cards", "-m", self.root, "--format", "json", "--type", "lesson",
                                *(("--status", *status) if status else ())))
        return [card for card in cards if "error-fix" in card.get("tags", [])]


def _start(day: int) -> datetime:
    return datetime(2026, 11, day, 9, 0, tzinfo=timezone.utc)


def _codex(folder: Path, day: int, steps: list[tuple[str, str, int]]) -> None:
    session = CodexSession(f"019ab73e-8c11-7ad2-b604-5987800000{day:02d}", "/home/dev/billing-api", _start(day),
                           cli_version="0.63.0")
    session.user("Run the build.")
    for command, output, code in steps:
        session.shell(command, output, exit_code=code)
    session.assistant("Done.")
    session.write(folder)


def test_two_sessions_of_one_class_add_up_and_the_fix_about_it_wins(tmp_path: Path) -> None:
    _codex(tmp_path / "logs", 2, [("./scripts/deploy.sh staging", SHEBANG_CR, 127),
                                  ("sed -i 's/\\r$//' scripts/deploy.sh", "", 0),
                                  ("./scripts/deploy.sh staging", "deployed", 0)])
    _codex(tmp_path / "logs", 3, [("./scripts/build.sh --all", LINE_CR, 127),
                                  ("git stash", "Saved working directory and index state WIP on main", 0),
                                  ("./scripts/build.sh --all", "built 3 targets", 0)])
    cli = Memdream(tmp_path)
    cli.dream(tmp_path / "logs")
    [lesson] = cli.lessons()
    assert lesson["statement"] == (f"In billing-api, running `./scripts/deploy.sh staging` fails with `{SHEBANG_CR}` "
                                   "(CRLF line endings); `sed -i 's/\\r$//' <file>` fixes it.")
    assert len({item["ref"].split("#")[0] for item in lesson["evidence"]}) == 2  # both sessions
    assert "git stash" not in json.dumps(lesson) and cli.lessons("superseded") == []


def test_a_missing_program_is_one_card_and_a_fix_found_later_replaces_what_it_said(tmp_path: Path) -> None:
    never = [("task build", "bash: line 1: task: command not found", 127), ("git status --short", " M main.go", 0)]
    _codex(tmp_path / "first", 2, never)
    _codex(tmp_path / "first", 3, never)
    cli = Memdream(tmp_path)
    cli.dream(tmp_path / "first")
    assert [card["statement"] for card in cli.lessons()] == [
        "In billing-api, `task` is not on PATH (`bash: line 1: task: command not found`)."]
    _codex(tmp_path / "later", 5, [("cd app && task build", "bash: line 1: task: command not found", 127),
                                   ("cd app && make build", "go build -o bin/app", 0)])
    cli.dream(tmp_path / "later")
    [lesson] = cli.lessons()
    assert lesson["statement"] == ("In billing-api, `task` is not installed (`bash: line 1: task: command not "
                                   "found`); instead of `task build`, `make build` works.")
    assert [card["value"] for card in cli.lessons("superseded")] == ["not on PATH"]
    _codex(tmp_path / "again", 7, never)  # a session that never got past it is more evidence of the fix
    cli.dream(tmp_path / "again")
    [again] = cli.lessons()
    assert again["id"] == lesson["id"] and again["value"] == "make build"


def test_edit_before_read_in_two_projects_is_one_global_lesson(tmp_path: Path) -> None:
    for number, project in enumerate(("billing-api", "invoices-web")):
        session = ClaudeSession(f"7c1e0a2b-4d5f-4a6b-9c8d-0e1f2a3b4c5{number}", f"/home/dev/{project}",
                                _start(2 + number))
        session.user("Add a health check to the app.")
        path = f"/home/dev/{project}/src/app.py"
        session.tool("Edit", {"file_path": path, "old_string": "app = App()", "new_string": "app = App(health=True)"},
                     NOT_READ, error=True)
        session.tool("Read", {"file_path": path}, "from web import App\napp = App()")
        session.tool("Edit", {"file_path": path, "old_string": "app = App()", "new_string": "app = App(health=True)"},
                     f"The file {path} has been updated.")
        session.write(tmp_path / "logs")
    cli = Memdream(tmp_path)
    cli.dream(tmp_path / "logs")
    [lesson] = cli.lessons()
    assert lesson["scope"] == "global" and lesson["subject"] == "edit tools"
    assert lesson["statement"] == f"`Edit` fails with `{NOT_READ}`; `Read` the file first."


def test_a_fix_an_earlier_dream_kept_pending_is_what_a_later_session_adds_up_to(tmp_path: Path) -> None:
    _codex(tmp_path / "first", 2, [("./scripts/deploy.sh staging", SHEBANG_CR, 127),
                                   ("sed -i 's/\\r$//' scripts/deploy.sh", "", 0),
                                   ("./scripts/deploy.sh staging", "deployed", 0)])
    cli = Memdream(tmp_path)
    cli.dream(tmp_path / "first")
    assert cli.lessons() == []  # one session: evidence, not yet a card
    _codex(tmp_path / "later", 4, [("./scripts/build.sh --all", LINE_CR, 127),
                                   ("git stash", "Saved working directory and index state WIP on main", 0),
                                   ("./scripts/build.sh --all", "built 3 targets", 0)])
    cli.dream(tmp_path / "later")
    [lesson] = cli.lessons()
    assert lesson["value"] == "sed" and lesson["statement"].endswith("`sed -i 's/\\r$//' <file>` fixes it.")
