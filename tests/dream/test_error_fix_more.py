"""Error → fix lessons from what real shells print: a harness's header and a login profile's warning
above every output, a search that finds nothing until another tool of its family finds it, a program
that is not on PATH in session after session.

Events are shaped as ingest stores a Codex CLI 0.6x rollout (the ``shell_command`` tool, its output a
string under an ``Exit code`` header); the last test runs the real command line on such rollouts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdream.dream.extractors import error_fix
from memdream.dream.extractors._runs import preamble, runs
from memdream.dream.model import Episode
from memdream.toolcalls import error_line, exit_code
from tests.transcripts import CodexSession

PROFILE = "/opt/homebrew/Library/Homebrew/cmd/shellenv.sh: line 18: /bin/ps: Operation not permitted"
FOUND = "./.config/specs/billing-rules.spec.yaml"


def header(code: int, output: str) -> str:
    return f"Exit code: {code}\nWall time: 0.1 seconds\nOutput:\n{output}"


class Session:
    """One Codex session's events as ingest stores them, every output under the shell's preamble."""

    def __init__(self, name: str, project: str = "billing-api", preamble: str | None = PROFILE) -> None:
        self.name, self.project, self.preamble = name, project, preamble
        self.events: list[dict[str, Any]] = []

    def _add(self, **fields: Any) -> dict[str, Any]:
        second = 7 * (len(self.events) + 1)
        event = {"session": self.name, "id": f"e{len(self.events) + 1}", "ts": f"2026-11-02T10:{second // 60:02d}:"
                 f"{second % 60:02d}Z", "tags": [f"project:{self.project}"], **fields}
        self.events.append(event)
        return event

    def shell(self, command: str, output: str = "", code: int = 0) -> dict[str, Any]:
        call = self._add(kind="tool_call", actor="agent", tool="shell_command", call_id=f"c{len(self.events)}",
                         args={"command": command, "workdir": "/home/dev/billing-api"})
        shown = f"{self.preamble}\n{output}" if self.preamble else output
        return self._add(kind="tool_result", actor="tool", tool="shell_command", call_id=call["call_id"],
                         ok=code == 0, args={"command": command}, text=header(code, shown))

    def edit(self, path: str) -> None:
        call = self._add(kind="tool_call", actor="agent", tool="apply_patch", call_id=f"c{len(self.events)}",
                         args={"input": f"*** Begin Patch\n*** Add File: {path}\n*** End Patch"})
        self._add(kind="tool_result", actor="tool", tool="apply_patch", call_id=call["call_id"], ok=True,
                  text=f"Success. Updated the following files:\nA {path}\n")

    def lessons(self) -> list[tuple[str, str, str]]:
        """(attribute, value, statement) of every candidate the extractor gives."""
        found = error_fix.extract(Episode(self.name, 1, self.events), None)  # type: ignore[arg-type]
        return [(candidate.names[1], candidate.piece.value or "", candidate.piece.statement or "")
                for candidate in found]


def searched(session: Session, failed: str, fixed: str = "find . -name '*.spec.yaml'") -> Session:
    session.shell("ls", "README.md\npyproject.toml\nsrc")
    session.shell(failed, code=1)
    session.shell(fixed, FOUND)
    session.shell("cat pyproject.toml", "[project]\nname = 'billing-api'")
    return session


def test_the_harness_header_is_noise_and_an_empty_output_has_no_error_line() -> None:
    assert error_line(header(1, "")) == ""
    assert exit_code(header(127, "")) == 127 and exit_code("all good") is None
    assert error_line(header(127, f"{PROFILE}\nzsh:1: command not found: pytest\n")) == (
        "zsh:1: command not found: pytest")


def test_a_label_over_a_list_is_not_the_error_line_its_first_item_is() -> None:
    assert error_line(header(1, "Options:\n  1. Codex requires compatible models\n  2. Update profile")) == (
        "Codex requires compatible models")
    assert error_line(header(1, "Suggestions:\n- run setup first")) == "run setup first"
    # A label that a telling line would be: joined to what it labels.
    assert error_line(header(1, "Error:\n  Cannot find module 'left-pad'")) == "Error: Cannot find module 'left-pad'"
    # A first line that says something keeps its place, even when it ends in a colon.
    assert error_line(header(1, "The following paths are ignored by one of your .gitignore files:\ndist")) == (
        "The following paths are ignored by one of your .gitignore files:")


def test_the_shells_preamble_is_what_successes_of_two_programs_start_with() -> None:
    session = searched(Session("s1"), "rg --files -g '*.spec.yaml'")
    assert preamble(runs(session.events)) == [PROFILE]
    alone = Session("s2")
    alone.shell("ls", "README.md")
    alone.shell("ls src", "app.py")
    assert preamble(runs(alone.events)) == []  # one program: its output, not the shell's


def test_a_search_that_finds_nothing_and_another_tool_that_finds_it() -> None:
    [(attribute, value, text)] = searched(Session("s1"), "rg --files -g '*.spec.yaml'").lessons()
    assert attribute == "fix: rg: no output (exit <n>): *.spec.yaml" and value == "find"
    assert text == ("In billing-api, `rg --files -g '*.spec.yaml'` finds nothing (exit 1); "
                    "`find . -name '*.spec.yaml'` works.")
    assert "shellenv" not in text and "Wall time" not in text


def test_the_same_search_quoted_another_way_is_the_same_lesson() -> None:
    first = searched(Session("s1"), "rg --files -g '*.spec.yaml'").lessons()
    second = searched(Session("s2"), 'rg --files -g"*.spec.yaml"').lessons()
    assert [lesson[:2] for lesson in first] == [lesson[:2] for lesson in second] != []


def test_no_lesson_from_searches_on_other_targets_or_for_other_jobs_or_after_an_edit() -> None:
    assert searched(Session("s1"), "rg --files -g '*.spec.yaml'", "find . -name '*.toml'").lessons() == []
    assert searched(Session("s2"), "rg -n 'spec.yaml' src", "find src -name 'spec.yaml'").lessons() == []
    empty = Session("s3")
    empty.shell("ls", "README.md")
    empty.shell("rg --files -g '*.spec.yaml'", code=1)
    empty.shell("find . -name '*.spec.yaml'")  # finds nothing either
    empty.shell("cat README.md", "# billing")
    assert empty.lessons() == []
    written = Session("s4")
    written.shell("ls", "README.md")
    written.shell("rg --files -g '*.spec.yaml'", code=1)
    written.edit("rules.spec.yaml")
    written.shell("find . -name '*.spec.yaml'", "./rules.spec.yaml")
    written.shell("cat README.md", "# billing")
    assert written.lessons() == []


def test_a_look_at_a_missing_file_stays_no_lesson() -> None:
    session = Session("s1")
    session.shell("ls", "README.md")
    session.shell("sed -n '1,200p' src/quickfix.py", "sed: src/quickfix.py: No such file or directory", code=1)
    session.shell("find src -name 'quickfix.py'", "./src/billing/quickfix.py")
    session.shell("cat src/billing/quickfix.py", "def fix(): ...")
    assert session.lessons() == []


def test_a_silent_exit_that_is_an_answer_is_no_failure() -> None:
    session = Session("s1", preamble=None)
    session.shell("test -f .env", code=1)
    session.shell("cp .env.example .env")
    session.shell("test -f .env")
    session.shell("git diff --quiet", code=1)
    session.shell("git stash")
    session.shell("git diff --quiet")
    assert session.lessons() == []


def test_a_silent_failure_fixed_by_a_wrapper() -> None:
    session = Session("s1", preamble=None)
    session.shell("make check", code=2)
    session.shell("poetry run make check", "All checks passed")
    assert session.lessons() == [(
        "fix: make: no output (exit <n>): check", "poetry run make",
        "In billing-api, running `make check` fails with no output (exit 2); run it as `poetry run make check` "
        "instead.")]


def test_a_program_never_found_is_a_lesson_of_its_own() -> None:
    for name, shell_said in (("s1", "zsh:1: command not found: pytest"), ("s2", "sh: 1: pytest: not found")):
        session = Session(name)
        session.shell("ls", "README.md")
        session.shell("cat pyproject.toml", "[project]")
        session.shell("pytest -q", shell_said, code=127)
        session.shell("git diff", "diff --git a/src/app.py b/src/app.py")
        assert session.lessons() == [
            ("missing: pytest", "not on PATH", f"In billing-api, `pytest` is not on PATH (`{shell_said}`, exit 127).")]


def test_a_missing_program_the_session_got_past_is_no_missing_lesson() -> None:
    wrapped = Session("s1")
    wrapped.shell("ls", "README.md")
    wrapped.shell("pytest -q", "zsh:1: command not found: pytest", code=127)
    wrapped.shell("python -m pytest -q", "12 passed in 0.31s")
    assert [attribute for attribute, _, _ in wrapped.lessons()] == ["missing: pytest"]  # its fix says how
    activated = Session("s2")
    activated.shell("ls", "README.md")
    activated.shell("pytest -q", "zsh:1: command not found: pytest", code=127)
    activated.shell("source .venv/bin/activate && pytest -q", "12 passed in 0.31s")
    assert activated.lessons() == []
    late = Session("s3")
    late.shell("python scripts/report.py", "bash: line 1: python: command not found", code=127)
    for number in range(error_fix.WINDOW + 1):
        late.shell(f"ls src/part{number}", "a.py")
    late.shell("python3 scripts/report.py", "report written")
    assert late.lessons() == []


def test_a_missing_search_tool_and_another_of_its_family() -> None:
    session = Session("s1", preamble=None)
    session.shell('rg -n "def total" src', "bash: line 1: rg: command not found", code=127)
    session.shell('grep -rn "def total" src', "src/billing/totals.py:3:def total(items):")
    assert session.lessons() == [(
        "missing: rg", "grep",
        "In billing-api, `rg` is not installed (`bash: line 1: rg: command not found`, exit 127); use `grep` instead.")]
    other_job = Session("s2", preamble=None)
    other_job.shell('rg -l "billing"', "bash: line 1: rg: command not found", code=127)
    other_job.shell('find . -type d -name "billing"', "./src/billing")
    assert other_job.lessons() == []  # finding a folder by name is not searching the text; it went on without rg


def test_a_two_word_tool_of_a_family() -> None:
    session = Session("s1", preamble=None)
    session.shell("docker-compose up -d db", "bash: line 1: docker-compose: command not found", code=127)
    session.shell("docker compose up -d db", "Container billing-db  Started")
    [(_, value, text)] = session.lessons()
    assert value == "docker compose up"
    assert text == ("In billing-api, `docker-compose` is not installed (`bash: line 1: docker-compose: command not "
                    "found`, exit 127); use `docker compose` instead.")


def _rollout(folder: Path, number: int, quoted: str) -> None:
    """A Codex CLI 0.63 rollout: ``shell_command`` calls, outputs under the header and the profile's warning."""
    start = datetime(2026, 11, 2 + number, 9, 0, tzinfo=timezone.utc)
    session = CodexSession(f"019ab73e-8c11-7ad2-b604-59878{number:07d}", "/home/dev/billing-api", start,
                           cli_version="0.63.0")
    session.user("Apply the billing spec.")

    def shell(command: str, output: str = "", code: int = 0) -> None:
        call_id = session._call("shell_command", {"command": command, "workdir": session.cwd})
        session._output(call_id, header(code, f"{PROFILE}\n{output}"))

    shell("ls", "README.md\npyproject.toml\nsrc\n")
    shell(f"rg --files -g{quoted}", code=1)
    shell("find . -name '*.spec.yaml'", FOUND + "\n")
    shell(f"cat {FOUND}", "target_file: src/billing/totals.py\n")
    shell("pytest -q", "zsh:1: command not found: pytest\n", code=127)
    shell("git diff --stat", " src/billing/totals.py | 2 +-\n")
    session.assistant("Applied the spec; the tests could not run here.")
    session.write(folder)


def test_two_codex_sessions_make_both_lessons_and_nothing_of_the_profiles_warning(tmp_path: Path) -> None:
    _rollout(tmp_path / "logs", 1, " '*.spec.yaml'")
    _rollout(tmp_path / "logs", 2, '"*.spec.yaml"')
    memory = tmp_path / "memory"
    env = {**{name: value for name, value in os.environ.items() if not name.startswith(("GIT_", "MEMDREAM_"))},
           "HOME": str(tmp_path), "GIT_CONFIG_GLOBAL": str(tmp_path / "none"), "GIT_CONFIG_NOSYSTEM": "1",
           "NO_COLOR": "1", "MEMDREAM_NOW": "2026-11-20T00:00:00Z"}

    def memdream(*args: str | Path) -> str:
        done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, check=True)
        return done.stdout

    memdream("init", memory)
    memdream("ingest", tmp_path / "logs", "-m", memory)
    memdream("dream", "-m", memory)
    cards = json.loads(memdream("cards", "-m", memory, "--format", "json", "--type", "lesson"))
    statements = sorted(card["statement"] for card in cards if "error-fix" in card.get("tags", []))
    assert statements == [
        "In billing-api, `pytest` is not on PATH (`zsh:1: command not found: pytest`, exit 127).",
        "In billing-api, `rg --files -g\"*.spec.yaml\"` finds nothing (exit 1); `find . -name '*.spec.yaml'` works.",
    ]
    assert not any("shellenv" in json.dumps(card) for card in cards)


def test_a_hooks_refusal_is_its_first_line_of_prose_when_that_line_refuses() -> None:
    stop = "Stop hook feedback:\n[/x/stop.sh]: # Running Quality Checks...\n\n# Dirty\n\nCannot exit with unstaged changes."
    assert error_fix.hook_refusal(stop) == ("Stop", "Cannot exit with unstaged changes.")
    assert error_fix.hook_refusal("SubagentStop hook feedback:\n[x]: Not allowed to stop: 3 tests fail") == (
        "SubagentStop", "Not allowed to stop: 3 tests fail")
    reflect = "Stop hook feedback:\n[x]: # Check\n\nBefore exiting, analyze whether you are done. If you cannot, say so."
    assert error_fix.hook_refusal(reflect) is None  # a reflection it asks for: no command satisfies it
    assert error_fix.hook_refusal("Cannot exit with unstaged changes.") is None  # not a hook's feedback
