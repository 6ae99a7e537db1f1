"""A session with neither a request of the user's own nor a title (a command template run as it
stands) is known by its summary: the agent's last message, when the session did some work and that
message is not a question. End to end through real processes: init, ingest, dream, plan.yaml."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

TEMPLATE = ("## User Input\n\n```text\n\n```\n\nYou **MUST** consider the user input before proceeding (if not "
            "empty).\n\n## Outline\n\n1. Run `scripts/check.sh --json` and write tasks.md.")


def memdream(*args: str | Path) -> None:
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def dreamed_plan(root: Path, sessions: list[list[dict[str, Any]]]) -> dict[str, Any]:
    lines = []
    for number, events in enumerate(sessions, start=1):
        lines += [{"session": f"s{number}", "ts": f"2026-11-0{number}T09:00:{second:02d}Z",
                   "tags": ["project:billing-api"], **event} for second, event in enumerate(events)]
    log = root / "events.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    memory = root / "memory"
    memdream("init", memory)
    memdream("ingest", log, "--log-format", "memdream", "-m", memory)
    memdream("dream", "-m", memory)
    return yaml.safe_load((memory / "plan.yaml").read_text())


def worked(report: str, calls: int = 3) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"kind": "message", "actor": "user", "text": TEMPLATE}]
    for number in range(calls):
        events += [{"kind": "tool_call", "actor": "agent", "tool": "shell", "id": f"c{number}",
                    "args": {"command": f"cat part{number}.md"}},
                   {"kind": "tool_result", "actor": "tool", "tool": "shell", "call_id": f"c{number}", "ok": True,
                    "text": "..."}]
    return [*events, {"kind": "message", "actor": "agent", "text": "Looking at the spec first."},
            {"kind": "message", "actor": "agent", "text": report}]


FIRST = [{"kind": "goal", "actor": "user", "goal": "fix the rounding of invoice totals"}]


def test_a_template_run_is_known_by_what_its_last_message_reports(tmp_path: Path) -> None:
    plan = dreamed_plan(tmp_path, [FIRST, worked("**Tasks Overview**\n- Task plan saved to `specs/007-export/tasks.md`, "
                                                 "28 checklist items.\n\nNext: run the setup phase.")])
    assert plan["goal"] == "Tasks Overview - Task plan saved to `specs/007-export/tasks.md`, 28 checklist items."
    assert [item["scope"] for item in plan["goals"]] == ["billing-api"]
    assert plan["goals"][0]["evidence"][0].startswith("log://s2#")


def test_a_session_that_did_little_or_ends_on_a_question_keeps_the_older_goal(tmp_path: Path) -> None:
    idle = worked("Which spec should I run this on?", calls=3)
    barely = worked("Read the instructions. All set.", calls=2)
    plan = dreamed_plan(tmp_path, [FIRST, idle, barely])
    assert plan["goal"] == "fix the rounding of invoice totals"


def test_a_bare_first_request_gives_way_to_the_next_one_that_spells_the_task_out(tmp_path: Path) -> None:
    spelled = "Look at the push-to-talk hotkey again: it always inserts the same text, find why."
    bare = [{"kind": "goal", "actor": "user", "goal": "We were working on the task."},
            {"kind": "message", "actor": "user", "text": "We were working on the task."},
            {"kind": "message", "actor": "agent", "text": "Which task?"},
            {"kind": "message", "actor": "user", "text": spelled}]
    plan = dreamed_plan(tmp_path, [FIRST, bare])
    assert plan["goal"] == spelled
    assert plan["goals"][0]["evidence"][0].startswith("log://s2#")


def test_a_short_first_request_that_names_its_object_stays_the_goal(tmp_path: Path) -> None:
    named = [{"kind": "goal", "actor": "user", "goal": "Fix the rounding in billing/rounding.py"},
             {"kind": "message", "actor": "user", "text": "Fix the rounding in billing/rounding.py"},
             {"kind": "message", "actor": "user", "text": "Also make sure the tests for the yen rounding keep passing."}]
    plan = dreamed_plan(tmp_path, [FIRST, named])
    assert plan["goal"] == "Fix the rounding in billing/rounding.py"


def test_an_outcome_that_heads_a_list_is_no_done_item(tmp_path: Path) -> None:
    """A turn's last message ending on a colon introduces an answer ("Available tool groups in this
    session:"), it reports no work done; one that says what was done is a done item."""
    plan = dreamed_plan(tmp_path, [[
        *FIRST,
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Available tool groups in this session:\n\n- web"},
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Rounded invoice totals to cents. Tests pass."},
    ]])
    assert [item["text"] for item in plan["done"]] == ["Rounded invoice totals to cents."]


def test_a_greeting_a_question_and_a_sub_agents_report_are_no_done_items(tmp_path: Path) -> None:
    plan = dreamed_plan(tmp_path, [[
        *FIRST,
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Hi."},
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Which of the two exports do you mean?"},
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Edited only docs/paper.md as asked.",
         "tags": ["project:billing-api", "sidechain"]},
        {"kind": "outcome", "actor": "system", "ok": True, "text": "Rounded invoice totals to cents."},
    ]])
    assert [item["text"] for item in plan["done"]] == ["Rounded invoice totals to cents."]


def test_a_command_run_later_in_a_session_is_the_task_it_ends_on(tmp_path: Path) -> None:
    """The user asked for one thing, then ran a slash command: the session ends on that command's task, and
    the plan's goal says so; a command run first and a request typed after it leave the request the goal."""
    later = [{"kind": "goal", "actor": "user", "goal": "write three short poems about the weather"},
             {"kind": "message", "actor": "user", "text": "write three short poems about the weather"},
             {"kind": "message", "actor": "agent", "text": "Here they are."},
             {"kind": "message", "actor": "user", "text": "/publish-session", "tags": ["project:billing-api",
                                                                                     "command"]}]
    (tmp_path / "later").mkdir()
    plan = dreamed_plan(tmp_path / "later", [FIRST, later])
    assert plan["goal"] == "/publish-session"
    first = [{"kind": "message", "actor": "user", "text": "/init", "tags": ["project:billing-api", "command"],
              "meta": {"command_description": "Write a CLAUDE.md for this project"}},
             {"kind": "goal", "actor": "user", "goal": "now fix the rounding of invoice totals"}]
    (tmp_path / "first").mkdir()
    plan = dreamed_plan(tmp_path / "first", [FIRST, first])
    assert plan["goal"] == "now fix the rounding of invoice totals"
