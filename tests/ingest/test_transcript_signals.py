"""What the adapters keep of a real transcript besides the conversation: the command a tool result answers,
the session's goal, the plan, compaction summaries, the project, and the user's words when they say no.

The lines are written as Claude Code 2.0, Codex CLI 0.58 and a chat-completions client write them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memdream import schemas
from memdream.harness import headline
from memdream.ingest.adapters import ParseContext, claude_code, codex, memdream_jsonl, openai_chat
from memdream.memory.project import clean_name, name_from_path, name_from_url, project_name
from tests.conftest import before_the_clock
from tests.gitutil import git

Event = dict[str, Any]

CWD = "/home/dev/billing-api"
CLAUDE_SESSION = "3f1c9a2e-7b4d-4e8a-9c61-2e8f0d4b7a13"
CODEX_SESSION = "019a77c4-2b3e-7f10-9c5d-4e8b1a2f6d37"
REQUEST = "Invoice totals are off by a cent for some currencies. Fix the rounding in billing/rounding.py."
CLAUDE_REJECT = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
    "to proceed."
)
CLAUDE_CANCELLED = (
    "The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell "
    "you how to proceed."
)
CLAUDE_SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. The conversation is "
    "summarized below:\nAnalysis:\nThe user asked to fix invoice rounding. `pytest -q` failed outside the "
    "virtualenv; `poetry run pytest -q` works.\n\nSummary:\n1. Primary Request and Intent: fix the rounding."
)
CODEX_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking process. You "
    "also have access to the state of the tools that were used by that language model. Use this to build on the "
    "work that has already been done and avoid duplicating work. Here is the summary produced by the other "
    "language model, use the information in this summary to  assist with your own analysis:"
)


# --- transcripts as the agents write them --------------------------------------------------------------


class Claude:
    """A Claude Code session file: one JSON object a line, chained by ``parentUuid``."""

    def __init__(self, cwd: str = CWD, session: str = CLAUDE_SESSION) -> None:
        self.cwd, self.session = cwd, session
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None

    def line(self, kind: str, message: dict[str, Any], **extra: Any) -> str:
        n = len(self.lines) + 1
        uuid = f"{n:08x}-5d4e-4b8a-9c61-2e8f0d4b7a13"
        self.lines.append({
            "parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session, "version": "2.0.37", "gitBranch": "main", "type": kind,
            "message": message, "uuid": uuid, "timestamp": f"2026-11-10T08:{n // 60:02d}:{n % 60:02d}.118Z",
            **extra,
        })
        self.parent = uuid
        return uuid

    def user(self, content: Any, **extra: Any) -> str:
        return self.line("user", {"role": "user", "content": content}, **extra)

    def assistant(self, *blocks: dict[str, Any], **extra: Any) -> str:
        message = {
            "model": "claude-sonnet-4-5-20250929", "id": f"msg_01Bill{len(self.lines):04d}", "type": "message",
            "role": "assistant", "content": list(blocks), "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 6, "cache_read_input_tokens": 16010, "output_tokens": 60},
        }
        return self.line("assistant", message, requestId=f"req_011CBill{len(self.lines):04d}", **extra)

    def tool_use(self, name: str, tool_input: dict[str, Any], **extra: Any) -> tuple[str, str]:
        tool_id = f"toolu_01Bill{len(self.lines):04d}Xq7Lm2Rt"
        return self.assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}, **extra), tool_id

    def tool_result(self, tool_id: str, content: str, is_error: bool = False, **extra: Any) -> str:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content, "is_error": is_error}
        return self.user([block], **extra)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


class Codex:
    """A Codex CLI rollout: ``{timestamp, type, payload}`` envelopes after a ``session_meta``."""

    def __init__(self, cwd: str = CWD, url: str | None = "git@github.com:acme/billing-api.git") -> None:
        git_info = {"commit_hash": "5d0c4a9e7b21f38c6a1d2e90b4f7c3a8e6d1b205", "branch": "main"}
        if url is not None:
            git_info["repository_url"] = url
        self.lines: list[dict[str, Any]] = []
        self.add("session_meta", {
            "id": CODEX_SESSION, "timestamp": "2026-11-12T10:02:11.402Z", "cwd": cwd, "originator": "codex_cli_rs",
            "cli_version": "0.58.0", "instructions": None, "source": "cli", "model_provider": "openai", "git": git_info,
        })
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
            "<environment_context>\n  <cwd>" + cwd + "</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            "</environment_context>")}]})

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        n = len(self.lines)
        self.lines.append({"timestamp": f"2026-11-12T10:03:{n:02d}.402Z", "type": kind, "payload": payload})

    def item(self, payload: dict[str, Any]) -> None:
        self.add("response_item", payload)

    def event(self, payload: dict[str, Any]) -> None:
        self.add("event_msg", payload)

    def user(self, text: str) -> None:
        self.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self.event({"type": "user_message", "message": text, "images": [], "kind": "plain"})

    def agent(self, text: str) -> None:
        self.event({"type": "agent_message", "message": text})
        self.item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})

    def call(self, name: str, arguments: dict[str, Any], call_id: str) -> None:
        self.item({"type": "function_call", "name": name, "arguments": json.dumps(arguments), "call_id": call_id})

    def shell(self, script: str, call_id: str) -> None:
        self.call("shell", {"command": ["bash", "-lc", script], "workdir": CWD, "timeout_ms": 120000}, call_id)

    def output(self, call_id: str, output: str, exit_code: int | None = 0) -> None:
        if exit_code is not None:
            output = json.dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": 0.4}})
        self.item({"type": "function_call_output", "call_id": call_id, "output": output})

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines), encoding="utf-8")
        return path


def parse(adapter: ModuleType, path: Path) -> list[Event]:
    before_the_clock(path)
    ctx = ParseContext(source=str(path), default_session=path.stem, modified=path.stat().st_mtime)
    with open(path, encoding="utf-8") as handle:
        events = list(adapter.parse(iter(handle), ctx))
    for event in events:
        assert schemas.iter_errors("raw-event", event) == [], event
    return events


def of_kind(events: list[Event], kind: str) -> list[Event]:
    return [event for event in events if event["kind"] == kind]


def stored(memory: Path) -> list[Event]:
    folder = memory / "raw" / "segments"
    return [json.loads(line) for path in sorted(folder.glob("[!.]*"))
            for line in path.read_text(encoding="utf-8").splitlines()]


def ingest(run: Any, memory: Path, path: Path) -> dict[str, Any]:
    result = run("ingest", path, "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


# --- 1. a tool result reads alone -----------------------------------------------------------------------


def test_claude_tool_result_names_the_command_of_its_call(tmp_path: Path) -> None:
    session = Claude()
    session.user(REQUEST)
    _, bash = session.tool_use("Bash", {"command": "pytest -q tests/test_rounding.py", "description": "Run tests"})
    session.tool_result(bash, "Exit code 1\nF\nAssertionError: 10.01 != 10.00", is_error=True)
    _, read = session.tool_use("Read", {"file_path": f"{CWD}/billing/rounding.py"})
    session.tool_result(read, "     1→from decimal import Decimal")
    session.tool_result("toolu_01NotInThisFile", "output of a call made before the file starts")
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    results = of_kind(events, "tool_result")
    assert [event.get("args") for event in results] == [
        {"command": "pytest -q tests/test_rounding.py"},
        {"command": f"Read {CWD}/billing/rounding.py"},
        None,
    ]
    assert [event.get("call_id") for event in results] == [bash, read, "toolu_01NotInThisFile"]


def test_codex_tool_result_names_the_command_of_its_call(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    rollout.shell("poetry run pytest -q", "call_Qm4vT8xN2bLc")
    rollout.output("call_Qm4vT8xN2bLc", "1 failed, 41 passed", exit_code=1)
    rollout.call("exec_command", {"cmd": "rg -n ROUND_HALF billing"}, "call_Hy7pR3kW9dJf")
    rollout.output("call_Hy7pR3kW9dJf", "Process exited with code 0\nOutput:\nbilling/rounding.py:3", exit_code=None)
    rollout.item({"type": "custom_tool_call", "status": "completed", "call_id": "call_Wn5cD1gF7hTs",
                  "name": "apply_patch", "input": "*** Begin Patch\n*** Update File: billing/rounding.py\n"})
    rollout.item({"type": "custom_tool_call_output", "call_id": "call_Wn5cD1gF7hTs",
                  "output": json.dumps({"output": "Success.", "metadata": {"exit_code": 0}})})
    rollout.item({"type": "local_shell_call", "call_id": "call_Lx2", "status": "completed",
                  "action": {"type": "exec", "command": ["git", "status", "--short"]}})
    rollout.output("call_Lx2", " M billing/rounding.py\n")
    rollout.output("call_Unknown", "no call for this output")
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    assert [(event["id"], event.get("args")) for event in of_kind(events, "tool_result")] == [
        ("call_Qm4vT8xN2bLc.out", {"command": "poetry run pytest -q"}),
        ("call_Hy7pR3kW9dJf.out", {"command": "rg -n ROUND_HALF billing"}),
        ("call_Wn5cD1gF7hTs.out", {"command": "apply_patch"}),
        ("call_Lx2.out", {"command": "git status --short"}),
        ("call_Unknown.out", None),
    ]


def test_openai_tool_result_names_the_command_of_its_call(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "You are the billing support assistant."},
        {"role": "user", "content": "Why is invoice INV-2291 one cent off?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_9f2cX1", "type": "function",
             "function": {"name": "get_invoice", "arguments": json.dumps({"query": "INV-2291"})}},
            {"id": "call_a71eQ4", "type": "function",
             "function": {"name": "run_shell_command", "arguments": json.dumps({"command": "billing-cli show 2291"})}},
        ]},
        {"role": "tool", "tool_call_id": "call_9f2cX1", "content": '{"total": "10.01"}'},
        {"role": "tool", "tool_call_id": "call_a71eQ4", "content": "total 10.01 EUR"},
        {"role": "tool", "tool_call_id": "call_gone", "content": "?"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages, indent=2), encoding="utf-8")
    results = of_kind(parse(openai_chat, path), "tool_result")
    assert [(event["id"], event.get("args")) for event in results] == [
        ("m3", {"command": "get_invoice INV-2291"}),
        ("m4", {"command": "billing-cli show 2291"}),
        ("m5", None),
    ]


# --- 2. the task of a session becomes a goal -------------------------------------------------------------


def test_claude_first_real_request_becomes_the_goal_before_its_message(tmp_path: Path) -> None:
    session = Claude()
    session.user("Caveat: The messages below were generated by the user while running local commands.", isMeta=True)
    session.user("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args>")
    session.user("<local-command-stdout>Set model to sonnet</local-command-stdout>")
    session.user("<task-notification>\n<task-id>b27a792</task-id>\n<status>completed</status>\n</task-notification>")
    request = session.user([{"type": "text", "text": REQUEST + "\n\nUse banker's rounding."},
                            {"type": "text", "text": "<system-reminder>The todo list is empty.</system-reminder>"}])
    _, task = session.tool_use("Task", {"description": "Find roundings", "prompt": "List every call of round()."})
    session.user("List every call of round().", isSidechain=True)
    session.tool_result(task, "billing/rounding.py:12")
    session.user("Also add a test for JPY, which has no minor unit.")
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    goals = of_kind(events, "goal")
    assert goals == [{
        "session": CLAUDE_SESSION, "ts": session.lines[4]["timestamp"], "kind": "goal", "actor": "user",
        "goal": REQUEST, "id": f"{request}:goal", "tags": ["project:billing-api"],
    }]
    message = events[events.index(goals[0]) + 1]  # the reminder block is skipped: one event, the line's uuid
    assert message["id"] == request and message["text"] == REQUEST + "\n\nUse banker's rounding."
    assert "goal" not in message and message["kind"] == "message"


def test_codex_first_real_request_becomes_the_goal_before_its_message(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": (
        "# AGENTS.md instructions for /home/dev/billing-api\n\n<INSTRUCTIONS>\nUse poetry.\n</INSTRUCTIONS>")}]})
    rollout.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<user_instructions>\nAlways run ruff.\n</user_instructions>"}]})
    rollout.user("  " + REQUEST.replace(". ", ".\n   ") + "\n\nThen commit.")
    rollout.agent("Looking at billing/rounding.py.")
    rollout.user("Also cover JPY.")
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    goals = of_kind(events, "goal")
    assert goals == [{"session": CODEX_SESSION, "ts": "2026-11-12T10:03:04.402Z", "kind": "goal", "actor": "user",
                      "goal": REQUEST, "tags": ["project:billing-api"]}]
    message = events[events.index(goals[0]) + 1]
    assert message["kind"] == "message" and message["text"].startswith("  Invoice totals") and "id" not in message
    assert message["meta"]["cwd"] == CWD  # the message keeps the session's context, as before


def test_openai_first_user_message_becomes_the_goal(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(message) + "\n" for message in [
        {"role": "system", "content": "You are the billing assistant."},
        {"role": "user", "content": "Why is invoice INV-2291 one cent off?", "name": "priya"},
        {"role": "assistant", "content": "Rounding: the total was rounded half up."},
        {"role": "user", "content": "Round half to even then."},
    ]), encoding="utf-8")
    os.utime(path, (1794128400.0, 1794128400.0))  # 2026-11-08T09:00:00Z
    events = parse(openai_chat, path)
    assert events[:2] == [
        {"session": "chat", "ts": "2026-11-08T08:59:59.998Z", "kind": "goal", "actor": "user",
         "goal": "Why is invoice INV-2291 one cent off?", "id": "m1:goal", "meta": {"ts_synthetic": True}},
        {"session": "chat", "ts": "2026-11-08T08:59:59.998Z", "kind": "message", "actor": "user", "speaker": "priya",
         "text": "Why is invoice INV-2291 one cent off?", "id": "m1", "meta": {"ts_synthetic": True}},
    ]
    assert len(of_kind(events, "goal")) == 1


def test_goal_headline_is_the_first_paragraph_cut_at_a_word() -> None:
    long = " ".join(f"word{n}" for n in range(80))
    goal = headline(long + "\n\nsecond paragraph")
    assert len(goal) <= 300 and goal.endswith("…")
    assert long.startswith(goal[:-1]) and long[len(goal) - 1] == " "
    assert headline("  fix\tthe\n  rounding  \n \nthen commit") == "fix the rounding"
    assert headline("x" * 400) == ""  # one enormous token is no headline
    # A first paragraph that ends in a colon heads the list after it: the list says what the task is.
    assert headline("Implement the grace period:\n\n1. Add the field\n2. Check it yearly\n\nThanks") == (
        "Implement the grace period: 1. Add the field 2. Check it yearly")
    assert headline("Fix these failures:\n\n===== test session starts =====") == "Fix these failures:"
    # A role prompt is no task: pasted after the request it is cut off, put first the task after it is kept.
    assert headline("Look into the hotkey bug, I follow the prompt below - You are the Analyzer Agent "
                    "(Cross-Service Investigator). Your goals: trace it") == (
        "Look into the hotkey bug, I follow the prompt below")
    assert headline("You are a senior Python engineer. Fix the failing export test.") == "Fix the failing export test."
    # A first paragraph that only sets the scene gives way to the one that asks.
    assert headline("We are in a cloud instance. The volume is /workspace.\n\nSessions vanish on restart. I want "
                    "you to link ~/.codex to /workspace/.codex") == (
        "Sessions vanish on restart. I want you to link ~/.codex to /workspace/.codex")
    assert headline("This is the billing API.\n\nIt rounds totals.") == "This is the billing API."  # asks nothing
    assert headline("You are auditing the core repository. Objectives: 1. Verify ESM") == (
        "You are auditing the core repository. Objectives: 1. Verify ESM")  # a task, told as what the agent does
    # Ingest redacts the goal, but only whole secrets: never leave half of one behind.
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
    assert headline(f"deploy with {key}") == "deploy with"
    assert headline("call " + "a " * 143 + "me on +1 415 555 0132") == "call " + "a " * 142 + "a me on…"


def test_ingest_stores_the_goal_and_a_second_ingest_adds_nothing(run: Any, memory: Path, tmp_path: Path) -> None:
    session = Claude()
    request = session.user(REQUEST)
    session.assistant({"type": "text", "text": "Reading billing/rounding.py first."})
    path = session.write(tmp_path / "projects" / "-home-dev-billing-api" / f"{CLAUDE_SESSION}.jsonl")
    assert ingest(run, memory, path)["added"] == 3
    goal = next(event for event in stored(memory) if event["kind"] == "goal")
    assert goal["id"] == f"{request}:goal" and goal["goal"] == REQUEST and "project:billing-api" in goal["tags"]
    report = ingest(run, memory, path)
    assert (report["added"], report["duplicates"]) == (0, 3)


# --- 3. todo lists become plans ---------------------------------------------------------------------------


def test_claude_todowrite_becomes_a_plan_after_the_call(tmp_path: Path) -> None:
    session = Claude()
    session.user(REQUEST)
    todos = [
        {"content": "Reproduce with a failing test", "status": "completed", "activeForm": "Reproducing"},
        {"content": "Fix billing/rounding.py", "status": "in_progress", "activeForm": "Fixing rounding"},
        {"content": "Run tests and ruff, then commit", "status": "pending", "activeForm": "Running tests"},
    ]
    first, tool_id = session.tool_use("TodoWrite", {"todos": todos})
    session.tool_result(tool_id, "Todos have been modified successfully. Ensure that you continue to use the todo "
                                 "list to track your progress. Please proceed with the current tasks if applicable")
    finished = {"todos": [{**todo, "status": "completed"} for todo in todos]}
    both = session.assistant({"type": "text", "text": "All done."},
                             {"type": "tool_use", "id": "toolu_2", "name": "TodoWrite", "input": finished})
    session.tool_use("TodoWrite", {"todos": []})
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    plans = of_kind(events, "plan")
    assert [{key: plan.get(key) for key in ("id", "next", "done", "actor")} for plan in plans] == [
        {"id": f"{first}:plan", "actor": "agent", "done": ["Reproduce with a failing test"],
         "next": ["Fix billing/rounding.py", "Run tests and ruff, then commit"]},
        {"id": f"{both}.1:plan", "actor": "agent", "next": None, "done": [todo["content"] for todo in todos]},
    ]
    assert events[events.index(plans[0]) - 1]["id"] == first  # right after the call, which stays
    assert plans[0]["tags"] == ["project:billing-api"] and plans[0]["ts"] == session.lines[1]["timestamp"]


def test_codex_update_plan_becomes_a_plan_after_the_call(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    plan = [{"step": "Reproduce with a failing test", "status": "completed"},
            {"step": "Fix billing/rounding.py", "status": "in_progress"},
            {"step": "Commit", "status": "pending"}]
    rollout.call("update_plan", {"explanation": "Start with a failing test.", "plan": plan}, "call_CHut3t3Vc4qy")
    rollout.output("call_CHut3t3Vc4qy", "Plan updated", exit_code=None)
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    kinds = [event["kind"] for event in events]
    assert kinds == ["goal", "message", "tool_call", "plan", "tool_result"]
    assert events[3] == {
        "session": CODEX_SESSION, "ts": events[2]["ts"], "kind": "plan", "actor": "agent",
        "next": ["Fix billing/rounding.py", "Commit"], "done": ["Reproduce with a failing test"],
        "id": "call_CHut3t3Vc4qy:plan", "tags": ["project:billing-api"],
    }


# --- 4. compaction summaries are kept ----------------------------------------------------------------------


def test_claude_compaction_summary_is_a_summary_note(tmp_path: Path) -> None:
    session = Claude()
    session.lines.append({"type": "summary", "summary": "Invoice rounding fix", "leafUuid": "e41f7c0a"})
    session.user(REQUEST)
    session.line("system", {}, subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                 compactMetadata={"trigger": "auto", "preTokens": 155000})
    summary = session.user(CLAUDE_SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    session.user([{"type": "text", "text": "Now also cover JPY."}])
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    notes = of_kind(events, "note")
    assert notes == [{"session": CLAUDE_SESSION, "ts": session.lines[3]["timestamp"], "kind": "note",
                      "actor": "system", "text": CLAUDE_SUMMARY, "tags": ["summary", "project:billing-api"],
                      "id": summary}]
    assert [event["kind"] for event in events] == ["goal", "message", "note", "message"]
    assert "Invoice rounding fix" not in json.dumps(events)  # the title line stays skipped


def test_codex_compacted_line_is_a_summary_note(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    summary = "Rounding fixed in billing/rounding.py with ROUND_HALF_EVEN; `poetry run pytest -q` passes."
    rollout.add("compacted", {"message": f"{CODEX_PREFIX}\n{summary}", "replacement_history": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": REQUEST}]}]})
    rollout.add("compacted", {"message": "", "replacement_history": []})  # a remote compaction: nothing to read
    rollout.item({"type": "compaction", "encrypted_content": "gAAAAABpM3Qx1Vn0-not-decryptable=="})
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    assert [event["kind"] for event in events] == ["goal", "message", "note"]
    assert events[2] == {"session": CODEX_SESSION, "ts": "2026-11-12T10:03:04.402Z", "kind": "note",
                         "actor": "system", "text": summary, "tags": ["summary", "project:billing-api"]}


# --- 5. the project as a tag -------------------------------------------------------------------------------


@pytest.mark.parametrize("url", [
    "git@github.com:acme/billing-api.git",
    "https://github.com/acme/billing-api",
    "https://github.com/acme/billing-api.git/",
    "ssh://git@gitlab.example.com:2222/acme/payments/billing-api.git",
    "file:///srv/git/Billing-API.git",
])
def test_project_name_from_a_repository_url(url: str) -> None:
    assert project_name("/somewhere/else", url) == "billing-api"
    assert project_name(None, url) == "billing-api"


@pytest.mark.parametrize(("cwd", "name"), [
    ("/home/dev/billing-api-worktrees/fix-rounding", "billing-api"),
    ("/home/dev/billing-api-worktrees/feat/jpy/minor-units", "billing-api"),
    ("/home/dev/billing-api/.worktrees/fix-rounding", "billing-api"),
    ("/home/dev/billing-api/.claude/worktrees/agent-a1b2c3", "billing-api"),
    ("/home/dev/billing-api/worktrees/fix-rounding", "billing-api"),
    ("/home/dev/billing-api/", "billing-api"),
    ("C:\\Users\\dev\\src\\Billing API", "billing-api"),
    ("/home/dev/src/Überweisungen 2026!", "berweisungen-2026"),
    ("/", None),
])
def test_project_name_from_the_path_alone(cwd: str, name: str | None) -> None:
    assert project_name(cwd) == name


def test_project_name_cleaning() -> None:
    assert clean_name("--My Project (v2).git--") == "my-project-v2-.git"
    assert clean_name("___") is None and clean_name(None) is None
    assert clean_name("a" * 80) == "a" * 60
    assert name_from_url("git@github.com:billing-api.git") == "billing-api"
    assert name_from_path("billing-api") == "billing-api"
    assert project_name(None) is None and project_name("") is None


def test_project_of_a_git_worktree_is_its_repository(tmp_path: Path) -> None:
    main = tmp_path / "src" / "billing"  # the folder name differs from the repository's
    main.mkdir(parents=True)
    git(main, "init", "-q")
    git(main, "remote", "add", "origin", "git@example.com:acme/billing-api.git")
    (main / "README.md").write_text("billing\n", encoding="utf-8")
    git(main, "add", "README.md")
    git(main, "commit", "-q", "-m", "first")
    worktree = tmp_path / "elsewhere" / "fix-rounding"
    git(main, "worktree", "add", "-q", "-b", "fix-rounding", str(worktree))
    (main / "billing").mkdir()

    assert project_name(str(main)) == "billing-api"
    assert project_name(str(worktree)) == "billing-api"
    assert project_name(str(main / "billing")) == "billing-api"


def test_project_of_a_git_worktree_without_remote_is_its_main_folder(tmp_path: Path) -> None:
    main = tmp_path / "Invoice-Service"
    main.mkdir()
    git(main, "init", "-q")
    git(main, "commit", "-q", "--allow-empty", "-m", "first")
    worktree = tmp_path / "wt" / "hotfix"
    git(main, "worktree", "add", "-q", "-b", "hotfix", str(worktree))
    assert project_name(str(worktree)) == "invoice-service"
    plain = tmp_path / "not-a-repo" / "notes"
    plain.mkdir(parents=True)
    assert project_name(str(plain)) == "notes"


def test_claude_events_carry_the_project_tag_through_ingest(run: Any, memory: Path, tmp_path: Path) -> None:
    session = Claude(cwd="/home/dev/billing-api-worktrees/fix-rounding")
    session.user(REQUEST)
    _, task = session.tool_use("Task", {"description": "Find roundings", "prompt": "List every round()."})
    session.user("List every round().", isSidechain=True)
    session.tool_result(task, "billing/rounding.py:12")
    session.user(CLAUDE_SUMMARY, isCompactSummary=True)
    path = session.write(tmp_path / "projects" / "-home-dev-billing-api-worktrees-fix-rounding" / "s.jsonl")
    ingest(run, memory, path)

    events = stored(memory)
    assert len(events) == 6
    for event in events:
        assert "project:billing-api" in event["tags"], event
        assert any(tag.startswith("episode:") for tag in event["tags"])  # the pipeline's tags come after ours
    assert next(event for event in events if event["kind"] == "note")["tags"][:2] == ["summary", "project:billing-api"]
    assert next(event for event in events if event.get("text") == "List every round().")["tags"][:2] == [
        "sidechain", "project:billing-api"]


def test_codex_events_carry_the_project_of_the_repository_url(tmp_path: Path) -> None:
    rollout = Codex(cwd="/home/dev/src/checkout-7", url="https://github.com/acme/billing-api.git")
    rollout.user(REQUEST)
    rollout.shell("poetry run pytest -q", "call_1")
    rollout.output("call_1", "42 passed")
    rollout.event({"type": "task_complete", "last_agent_message": "Done."})
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))
    assert {tag for event in events for tag in event["tags"]} == {"project:billing-api"}
    no_url = parse(codex, Codex(cwd="/home/dev/billing-api/.worktrees/jpy", url=None).write(tmp_path / "b.jsonl"))
    assert no_url == []  # nothing but the context: no events to tag
    rollout = Codex(cwd="/home/dev/billing-api/.worktrees/jpy", url=None)
    rollout.user(REQUEST)
    assert {tag for event in parse(codex, rollout.write(tmp_path / "c.jsonl")) for tag in event["tags"]} == {
        "project:billing-api"}


def test_chat_and_memdream_files_have_no_project(tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    events = tmp_path / "events.jsonl"
    events.write_text(json.dumps({"session": "s", "ts": "2026-11-07T09:00:00Z", "kind": "note", "text": "x"}) + "\n")
    for adapter, path in ((openai_chat, chat), (memdream_jsonl, events)):
        assert all("tags" not in event for event in parse(adapter, path))


# --- 6. the user's words when they reject or interrupt ------------------------------------------------------


def test_claude_interruption_takes_the_next_message_as_its_words(tmp_path: Path) -> None:
    session = Claude()
    session.user(REQUEST)
    call, tool_id = session.tool_use("Bash", {"command": "pytest -q", "description": "Run the full suite"})
    session.tool_result(tool_id, CLAUDE_CANCELLED, is_error=True)
    marker = session.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    words = session.user("Don't run the whole suite, it needs docker. Just run test_rounding.py.")
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    feedback = of_kind(events, "feedback")
    assert feedback == [{"session": CLAUDE_SESSION, "ts": session.lines[3]["timestamp"], "kind": "feedback",
                         "actor": "user", "verdict": "reject", "target": call,
                         "text": "Don't run the whole suite, it needs docker. Just run test_rounding.py.",
                         "id": marker, "tags": ["interrupted", "project:billing-api"]}]
    assert events[-1]["id"] == words and events[-1]["kind"] == "message"  # the message is still there


def test_claude_rejection_without_a_comment_takes_the_next_message(tmp_path: Path) -> None:
    session = Claude()
    session.user(REQUEST)
    call, tool_id = session.tool_use("Bash", {"command": "git push origin main"})
    session.tool_result(tool_id, CLAUDE_REJECT, is_error=True)
    session.user("Open a pull request instead of pushing to main.")
    again_call, again = session.tool_use("Bash", {"command": "git push origin main"})
    session.tool_result(again, CLAUDE_REJECT, is_error=True)
    session.assistant({"type": "text", "text": "Understood, I'll stop here."})  # the agent acts first
    session.user("[Request interrupted by user]")
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))

    feedback = of_kind(events, "feedback")
    assert [(event.get("target"), event.get("text")) for event in feedback] == [
        (call, "Open a pull request instead of pushing to main."),
        (again_call, None),
        (None, "interrupted by user"),  # nothing said after it
    ]
    assert [event["kind"] for event in events] == [
        "goal", "message", "tool_call", "feedback", "message", "tool_call", "feedback", "message", "feedback"]


def test_claude_one_no_written_twice_gives_both_feedbacks_the_words(tmp_path: Path) -> None:
    # A rejected tool use can be followed by an interruption marker before the user types.
    session = Claude()
    session.user(REQUEST)
    call, tool_id = session.tool_use("Edit", {"file_path": f"{CWD}/.env", "old_string": "A=1", "new_string": "A=2"})
    session.tool_result(tool_id, CLAUDE_REJECT, is_error=True)
    session.user([{"type": "text", "text": "[Request interrupted by user for tool use]"}])
    session.user("Leave .env alone; put the default in billing/settings.py.")
    events = parse(claude_code, session.write(tmp_path / "s.jsonl"))
    feedback = of_kind(events, "feedback")
    assert [(event.get("target"), event["text"]) for event in feedback] == [
        (call, "Leave .env alone; put the default in billing/settings.py."),
        (None, "Leave .env alone; put the default in billing/settings.py."),
    ]
    assert [event["kind"] for event in events][-3:] == ["feedback", "feedback", "message"]


def test_codex_declined_command_takes_the_next_user_message(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    rollout.shell("git push origin HEAD:main", "call_Zc5m")
    rollout.output("call_Zc5m", "exec command rejected by user", exit_code=None)
    rollout.event({"type": "token_count", "info": None})
    rollout.user("Never push to main; open a pull request.")
    rollout.item({"type": "custom_tool_call", "status": "completed", "call_id": "call_P1", "name": "apply_patch",
                  "input": "*** Begin Patch\n*** Delete File: .env\n*** End Patch"})
    rollout.item({"type": "custom_tool_call_output", "call_id": "call_P1", "output": "patch rejected by user"})
    rollout.agent("OK, I'll leave .env alone.")
    rollout.user("Thanks.")
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    feedback = of_kind(events, "feedback")
    assert [(event["id"], event["target"], event.get("text")) for event in feedback] == [
        ("call_Zc5m.out", "call_Zc5m", "Never push to main; open a pull request."),
        ("call_P1.out", "call_P1", None),  # the agent answered before the user said anything
    ]
    messages = [event["text"] for event in of_kind(events, "message") if event["actor"] == "user"]
    assert messages == [REQUEST, "Never push to main; open a pull request.", "Thanks."]


def test_codex_interrupted_turn_takes_the_next_user_message(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    rollout.shell("poetry run pytest -q -m slow", "call_Kd9w")
    rollout.event({"type": "turn_aborted", "reason": "interrupted"})
    rollout.output("call_Kd9w", "aborted", exit_code=None)
    rollout.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<turn_aborted>\nThe user interrupted the previous turn.\n</turn_aborted>"}]})
    rollout.user("Don't run the slow suite, it takes ten minutes.")
    rollout.shell("poetry run pytest -q", "call_Np2k")
    rollout.event({"type": "turn_aborted", "reason": "interrupted"})
    rollout.agent("Stopped.")
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))

    feedback = of_kind(events, "feedback")
    assert [event["text"] for event in feedback] == [
        "Don't run the slow suite, it takes ten minutes.",
        "turn aborted: interrupted",  # no words before the agent went on
    ]
    assert all(event["verdict"] == "reject" and event["actor"] == "user" for event in feedback)


def test_codex_declined_command_takes_the_answer_to_the_agents_question(tmp_path: Path) -> None:
    rollout = Codex()
    rollout.user(REQUEST)
    rollout.shell("git push --force", "call_F1")
    rollout.output("call_F1", "exec command rejected by user", exit_code=None)
    rollout.agent("The force-push was declined. How should I push it?")
    rollout.user("Never force-push, the branch is shared.")
    events = parse(codex, rollout.write(tmp_path / "rollout.jsonl"))
    [feedback] = of_kind(events, "feedback")
    assert (feedback["target"], feedback.get("text")) == ("call_F1", "Never force-push, the branch is shared.")


@pytest.mark.parametrize(("cwd", "name"), [
    ("/tmp/tmpqwh7888i", None), ("/tmp/work", None), ("/private/var/folders/x1/abc/T/tmpab12cd34", None),
    ("/home/dev/billing-api", "billing-api"), ("/tmp/pytest-of-dev/pytest-3/test_a0/billing-api", "billing-api"),
])
def test_a_temporary_folder_is_no_project(cwd: str, name: str | None) -> None:
    assert project_name(cwd) == name
    assert project_name(cwd, "git@github.com:acme/billing-api.git") == "billing-api"  # a remote still names it
