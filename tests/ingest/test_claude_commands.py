"""Slash commands typed in Claude Code: the command the agent was asked to run is one event of the user's,
their own words kept, its expansion left out; the harness's local commands stay out; a command says what a
session is for when it says what for; a memory that ingested the log before keeps what it stored.

Transcripts are written as Claude Code writes them (:class:`tests.transcripts.ClaudeSession`: the command
line of tags, then the command file's expansion as an ``isMeta`` line whose parent is the command line;
a local command's output as a ``<local-command-stdout>`` line) and ingested through the command line
users run, on a memory made by ``memdream init``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.ingest.test_real_formats import ingest, stored
from tests.transcripts import ClaudeSession

CWD = "/home/dev/shop-web"
START = datetime(2026, 11, 10, 8, 0, tzinfo=timezone.utc)
DEPLOY_BODY = "Build the image from the branch, push it to the registry and roll it out.\n\n1. Run `make image`.\n"
TITLED = "# /publish-session — Publish this session as a gist\n\nRun `python3 scripts/publish.py` and print the URL.\n"
ORDERS = ("IT IS CRITICAL THAT YOU FOLLOW THESE STEPS - while staying in character:\n\n"
          "1. LOAD the FULL workflow.xml\n2. Ask the user what to specify.\n")
TOKEN = "ghp_0123456789abcdefghijABCDEFGHIJ012345"


def typed(session: ClaudeSession, name: str, args: str = "", expansion: str | None = None) -> str:
    """A slash command as Claude Code writes it; the uuid of its line. A command that asks the agent is
    followed by its expansion (a list of one text block, ``isMeta``, the command line its parent); a local
    command of the harness by its output."""
    line = (f"<command-message>{name.lstrip('/')} is running…</command-message>\n<command-name>{name}</command-name>"
            + (f"\n<command-args>{args}</command-args>" if args else ""))
    uid = session.user(line)
    if expansion is None:
        session.user("<local-command-stdout></local-command-stdout>")
    else:
        session.meta(expansion)
        session.lines[-1]["message"]["content"] = [{"type": "text", "text": expansion}]
    return uid


def texts(events: list[dict[str, Any]]) -> str:
    return json.dumps(events, ensure_ascii=False)


def test_a_command_is_one_message_of_the_user_with_their_words_and_sets_the_goal(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("c0dd0001-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    session.meta()  # the local-command caveat
    typed(session, "/clear")
    session.user("hi")
    command = typed(session, "/deploy", "the staging branch", DEPLOY_BODY)
    session.bash("make image", "built shop-web:staging")
    session.assistant("Deployed the staging branch.")
    report = ingest(memory, session.write(tmp_path / "logs"))

    events = stored(memory)
    [goal] = [event for event in events if event["kind"] == "goal"]
    [event] = [event for event in events if "command" in event.get("tags", [])]
    assert (event["kind"], event["actor"], event["text"], event["id"]) == (
        "message", "user", "/deploy the staging branch", command)
    assert "project:shop-web" in event["tags"] and "meta" not in event  # the expansion states no purpose
    assert (goal["goal"], goal["id"], goal["ts"]) == ("/deploy the staging branch", f"{command}:goal", event["ts"])
    assert events.index(goal) + 1 == events.index(event)  # the goal just before its request
    everything = texts(events)
    for harness in ("<command-", "<local-command", "Build the image", "Caveat:", "/clear"):
        assert harness not in everything
    assert report["skipped_record_types"]["user (local command)"] == 1  # /clear: read, counted, left out
    assert report["skipped_record_types"]["user (isMeta)"] == 2  # the caveat and the expansion


def test_a_command_without_arguments_names_the_task_by_its_description_or_not_at_all(memory: Path,
                                                                                      tmp_path: Path) -> None:
    described = ClaudeSession("c0dd0002-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    typed(described, "/publish-session", expansion=TITLED)
    described.bash("python3 scripts/publish.py", "https://gist.github.com/dev/4f2a")
    bare = ClaudeSession("c0dd0003-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    typed(bare, "/create-tech-spec", expansion=ORDERS)
    bare.assistant("What should the tech spec cover?")
    bare.user("A metrics plugin for codex sessions, like the one for claude")
    for session in (described, bare):
        ingest(memory, session.write(tmp_path / "logs"))

    events = stored(memory)
    goals = {event["session"]: event["goal"] for event in events if event["kind"] == "goal"}
    assert goals == {described.session_id: "/publish-session — Publish this session as a gist",
                     bare.session_id: "A metrics plugin for codex sessions, like the one for claude"}
    commands = {event["text"]: event.get("meta") for event in events if "command" in event.get("tags", [])}
    assert commands == {"/publish-session": {"command_description": "Publish this session as a gist"},
                        "/create-tech-spec": None}  # orders to the model are no description
    assert "python3 scripts/publish.py` and print" not in texts(events) and "IT IS CRITICAL" not in texts(events)


def test_local_commands_and_greetings_never_set_the_goal(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("c0dd0004-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    typed(session, "/clear")
    session.meta()
    typed(session, "/model", "sonnet")
    session.user("hello there")
    typed(session, "/compact", "keep the notes on the API")
    request = session.user("Rename the export bucket to acme-exports-eu in config/storage.toml")
    session.assistant("Renamed it.")
    report = ingest(memory, session.write(tmp_path / "logs"))
    events = stored(memory)
    assert [(event["goal"], event["id"]) for event in events if event["kind"] == "goal"] == [
        ("Rename the export bucket to acme-exports-eu in config/storage.toml", f"{request}:goal")]
    assert not [event for event in events if "command" in event.get("tags", [])]
    assert "sonnet" not in texts(events) and "keep the notes" not in texts(events)
    assert report["skipped_record_types"]["user (local command)"] == 3


def test_a_memory_that_ingested_the_log_before_gets_each_command_once(memory: Path, tmp_path: Path) -> None:
    """What the adapter read before commands were kept is this transcript without the command lines and their
    expansions (it dropped both, and nothing else depended on them): ingested first, then the whole file."""
    session = ClaudeSession("c0dd0005-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    typed(session, "/deploy", "the staging branch", DEPLOY_BODY)  # the first line: the session's context is not its
    session.bash("make image", "built shop-web:staging")
    session.interrupt()
    typed(session, "/deploy", f"again with {TOKEN}", DEPLOY_BODY)  # waits with the interruption, explains nothing
    words = session.user("Use the blue-green script instead of make.")
    session.bash("scripts/blue-green.sh staging", "switched staging to green")
    path = session.write(tmp_path / "logs")
    before = tmp_path / "before" / path.name
    before.parent.mkdir()
    before.write_text("".join(line + "\n" for line in path.read_text(encoding="utf-8").splitlines()
                              if "<command-name>" not in line and '"isMeta":true' not in line.replace(" ", "")),
                      encoding="utf-8")

    first = ingest(memory, before)
    old = stored(memory)
    [feedback] = [event for event in old if event["kind"] == "feedback"]
    assert feedback["text"] == "Use the blue-green script instead of make."
    assert [event["id"] for event in old if event["kind"] == "goal"] == [f"{words}:goal"]

    again = ingest(memory, path)
    events = stored(memory)
    assert events[:len(old)] == old
    new = events[len(old):]
    assert [(event["kind"], event.get("text") or event.get("goal")) for event in new] == [
        ("goal", "/deploy the staging branch"), ("message", "/deploy the staging branch"),
        ("message", "/deploy again with [REDACTED:github-token]")]
    assert (again["added"], again["duplicates"]) == (3, first["added"] - 1)  # the old goal is not read again
    assert not [event for event in new if "~" in event["id"] or "meta" in event]  # no old event stored again
    assert TOKEN not in texts(events)
    assert ingest(memory, path)["added"] == 0


def test_a_command_whose_expansion_is_not_written_yet_comes_once_when_it_is(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("c0dd0006-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    session.user("Check the staging deploy script for the rollout order")
    session.assistant("It rolls out api first, then web.")
    typed(session, "/deploy", "the staging branch", DEPLOY_BODY)
    session.assistant("Deploying.")
    path = session.write(tmp_path / "logs")
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(line + "\n" for line in lines[:-2]), encoding="utf-8")  # cut after the command line
    ingest(memory, path)
    assert not [event for event in stored(memory) if "command" in event.get("tags", [])]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    grown = ingest(memory, path)
    assert grown["added"] == 2  # the command and the agent's answer; the session's goal was set before
    assert [event["text"] for event in stored(memory) if "command" in event.get("tags", [])] == [
        "/deploy the staging branch"]
    assert ingest(memory, path)["added"] == 0


REAL = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "real-sessions"


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/bench/real-sessions is not here")
def test_real_commands_keep_the_user_s_words_and_leave_the_harness_s_text_out(memory: Path) -> None:
    for folder in ("d-kimuson__claude-code-viewer", "moredip__session-share", "codemie-ai__codemie-code/claude"):
        ingest(memory, REAL / folder)
    events = [event for event in stored(memory) if "sidechain" not in event.get("tags", [])]
    commands = [(event["session"][:8], event["text"]) for event in events if "command" in event.get("tags", [])]
    assert sorted(commands) == [
        ("0ccf1a04", "/publish-session"), ("0ccf1a04", "/publish-session"), ("1af7fc5e", "/init"),
        ("3fe1b6bc", "/bmad:bmm:workflows:create-tech-spec"), ("5c0375b4", "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"),
        ("fe5e1c67", "/orchestrator create TODO app by Next.js")]  # not /clear, not /plugin
    goals = {event["session"][:8]: event["goal"] for event in events if event["kind"] == "goal"}
    assert goals["5c0375b4"] == "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"
    assert goals["fe5e1c67"] == "/orchestrator create TODO app by Next.js"
    assert goals["3fe1b6bc"].startswith("analyze existing codex folder")  # a bare command: the user's request
    assert "1af7fc5e" not in goals  # /init alone: the session's summary says what it did
    users = texts([event for event in events if event.get("actor") == "user"])  # a tool may read such text
    for harness in ("Split complex tasks", "Publish the current session transcript by running", "IT IS CRITICAL",
                    "Please analyze this codebase", "<command-", "<local-command"):
        assert harness not in users


STOP_HOOK = ("Stop hook feedback:\n[${CLAUDE_PLUGIN_ROOT}/scripts/hooks/stop.sh]: # Uncommitted Changes Detected\n\n"
             "Cannot exit with unstaged changes.\n\nBefore stopping, please commit your changes.")


def test_what_a_hook_said_back_is_a_system_note_never_the_users_words(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("c0dd0009-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    session.user("Add a multiply function and a test for it.")
    session.assistant("Done.")
    session.meta(STOP_HOOK)  # Claude Code 2.x: an isMeta user line
    session.bash("git add -A && git commit -m 'Add multiply'", "[master 6322cf4] Add multiply")
    session.user(STOP_HOOK.replace("unstaged changes", "untracked files"))  # older versions: a plain user line
    ingest(memory, session.write(tmp_path / "logs"))

    notes = [event for event in stored(memory) if "hook" in event.get("tags", [])]
    assert [(note["kind"], note["actor"]) for note in notes] == [("note", "system")] * 2
    assert "Cannot exit with unstaged changes." in notes[0]["text"]
    assert "Cannot exit with untracked files." in notes[1]["text"]
    users = [event for event in stored(memory) if event.get("actor") == "user"]
    assert all("hook feedback" not in str(event.get("text") or event.get("goal")) for event in users)
