"""Every real agent log ingests: the real sessions of shared/bench, Claude Code 2.1, live files, bad files.

The real files (``shared/bench/real-sessions``: Claude Code 1.0 to 2.1, Codex current and legacy, aider)
are read through the command line users run; what they lack (2.1's newer record types, a file still
being written, a broken file in a folder) is built in the exact shape the agents write.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.ingest.adapters import ParseContext, claude_code, codex, detect
from tests.transcripts import ClaudeSession

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "real-sessions"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/bench/real-sessions is not here")
CWD = "/home/dev/billing-api"
START = datetime(2026, 11, 10, 8, 0, tzinfo=timezone.utc)


def memdream(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                          check=False)


def ingest(memory: Path, *paths: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    done = memdream("ingest", *paths, "-m", memory, "-f", "json", *extra)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def stored(memory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for segment in sorted((memory / "raw" / "segments").glob("*.jsonl"))
            for line in segment.read_text(encoding="utf-8").splitlines()]


def parse(adapter: Any, path: Path) -> tuple[list[dict[str, Any]], ParseContext]:
    ctx = ParseContext(source=str(path), default_session=path.stem)
    with open(path, encoding="utf-8") as handle:
        return list(adapter.parse(iter(handle), ctx)), ctx


# --- the real sessions -------------------------------------------------------------------------------------


@needs_real
def test_every_real_session_ingests_whole_and_a_second_ingest_adds_nothing(memory: Path) -> None:
    first = ingest(memory, REAL)
    assert first["skipped_files"] == [] and first["skipped_lines"] == 0 and first["partial_lines"] == []
    formats = {Path(item["source"]).relative_to(REAL).parts[0]: item["format"] for item in first["sources"]}
    assert formats["AlexShchuka__mozgoslav"] == formats["AFI-Protocol__afi-core"] == "aider"
    assert formats["JaydenXsoe__ocodex"] == formats["MoonLadderStudios__MoonMind"] == "codex"
    assert formats["moredip__session-share"] == formats["d-kimuson__claude-code-viewer"] == "claude-code"
    read = {item["source"] for item in first["sources"]}
    logs = {str(path) for path in REAL.rglob("*") if path.suffix == ".jsonl" or path.name == ".aider.chat.history.md"}
    assert read == logs  # every log file, the hidden aider histories and the subagent folders included
    assert all(item["added"] > 0 for item in first["sources"])
    # What was left out is named, by record type: bookkeeping, never the conversation.
    skipped = first["skipped_record_types"]
    assert {"progress", "file-history-snapshot", "queue-operation", "state", "response_item:reasoning"} <= set(skipped)
    assert not {"user", "assistant", "response_item:message", "response_item:function_call"} & set(skipped)
    again = ingest(memory, REAL)
    assert again["added"] == 0 and again["duplicates"] == first["added"]
    assert len(stored(memory)) == first["added"]


@needs_real
def test_real_subagent_files_join_their_parent_session_without_giving_it_a_goal(memory: Path) -> None:
    folder = REAL / "moredip__session-share"
    ingest(memory, folder)
    events = stored(memory)
    parent = "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68"
    agents = [event for event in events if event["session"] == parent and "sidechain" in event.get("tags", [])]
    assert len(agents) >= 10 and any(event["kind"] == "tool_call" and event["tool"] == "WebSearch" for event in agents)
    goals = [event for event in events if event["kind"] == "goal"]
    assert goals and all("sidechain" not in event.get("tags", []) for event in goals)
    titles = [event for event in events if "title" in event.get("tags", [])]
    assert [(event["session"], event["kind"], event["actor"]) for event in titles] == [(parent, "note", "system")]


@needs_real
def test_real_compaction_is_a_summary_and_never_the_users_words() -> None:
    events, ctx = parse(claude_code, REAL / "codemie-ai__codemie-code" / "claude" / "session-624a4a58.jsonl")
    summaries = [event for event in events if "summary" in event.get("tags", [])]
    assert len(summaries) == 1 and summaries[0]["actor"] == "system" and summaries[0]["kind"] == "note"
    opening = claude_code.COMPACT_SUMMARY
    assert not [event for event in events if event["kind"] in ("message", "goal")
                and str(event.get("text") or event.get("goal")).startswith(opening)]
    assert "system:compact_boundary" not in ctx.skipped_types  # understood, not skipped


@needs_real
def test_real_legacy_codex_rollouts_take_their_time_from_the_first_line_and_keep_their_order() -> None:
    path = sorted((REAL / "JaydenXsoe__ocodex" / "legacy-format").glob("rollout-*.jsonl"))[0]
    events, ctx = parse(codex, path)
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    times = [event["ts"] for event in events]
    assert times == sorted(times) and times[0] > first["timestamp"] and times[0][:16] == first["timestamp"][:16]
    assert all(event["meta"]["ts_synthetic"] for event in events)
    assert {event["session"] for event in events} == {first["id"]}
    kinds = [event["kind"] for event in events]
    assert kinds.count("tool_call") == kinds.count("tool_result") > 50
    assert "plan" in kinds and kinds.index("goal") < kinds.index("tool_call")
    assert ctx.skipped_types["state"] > 100


@needs_real
def test_real_exec_command_outputs_read_through_write_stdin_are_the_commands() -> None:
    path = next((REAL / "codemie-ai__codemie-code" / "codex").glob("rollout-2026-05-11T11-26-55-*.jsonl"))
    events, _ = parse(codex, path)
    calls = {event.get("call_id"): event for event in events if event["kind"] == "tool_call"}
    continued = [event for event in events if event["kind"] == "tool_result"
                 and calls.get(event.get("call_id"), {}).get("tool") == "write_stdin"]
    assert continued and all(event["tool"] == "exec_command" and event["args"]["command"] for event in continued)
    assert any(event.get("ok") is not None for event in continued)  # the exit code came with a write_stdin


# --- Claude Code 2.1 -----------------------------------------------------------------------------------------


def session_21() -> tuple[ClaudeSession, ClaudeSession]:
    """A 2.1 session whose first line is a record type older versions did not write, with a sub-agent."""
    session = ClaudeSession("9d2f7a11-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START, version="2.1.14")
    session.record("permission-mode", permissionMode="default")
    session.record("file-history-snapshot", messageId="m-1", snapshot={"trackedFileBackups": {}},
                   isSnapshotUpdate=False)
    session.user("Invoice totals are off by a cent: fix the rounding in billing/totals.py")
    session.record("attachment", attachment={"type": "todo_reminder", "content": []})
    session.task_create("Find where totals are rounded", 1)
    session.task_create("Round half to even", 2)
    session.task_update(1, "completed")
    session.record("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse"})
    session.tool("Agent", {"description": "Find rounding", "prompt": "Search the code for rounding calls",
                           "subagent_type": "Explore"}, "totals.py:42 uses round()")
    session.synthetic("API Error: Connection error.")
    session.interrupt()
    session.user("Use Decimal, not float.")
    session.record("ai-title", aiTitle="Fix invoice rounding")
    session.record("last-prompt", lastPrompt="Use Decimal, not float.")
    session.record("queue-operation", operation="enqueue", content="and add a test")
    session.compact("The user asked to fix rounding; totals.py:42 was changed to Decimal.")
    session.record("mode", mode="normal")
    session.record("brand-new-type", something=1)
    agent = session.subagent("a1b2c3d")
    agent.user("Search the code for rounding calls")
    agent.bash("grep -rn 'round(' billing", "billing/totals.py:42: return round(total, 2)")
    return session, agent


def test_a_21_session_with_a_subagent_folder_ingests_as_one_session(memory: Path, tmp_path: Path) -> None:
    session, agent = session_21()
    folder = tmp_path / "projects" / "-home-dev-billing-api"
    main = session.write(folder)
    agent.write_agent(folder / session.session_id / "subagents")
    assert detect(main.read_text(encoding="utf-8")[:8192]) == "claude-code"  # first line: permission-mode
    report = ingest(memory, folder)
    assert [item["format"] for item in report["sources"]] == ["claude-code", "claude-code"]
    assert report["skipped_record_types"] == {
        "permission-mode": 1, "file-history-snapshot": 1, "attachment": 1, "progress": 1, "last-prompt": 1,
        "queue-operation": 1, "mode": 1, "brand-new-type": 1}
    text = memdream("ingest", folder, "-m", memory).stdout
    assert "skipped record types: " in text and "brand-new-type 1" in text
    events = stored(memory)
    assert {event["session"] for event in events} == {session.session_id}
    by_kind = {kind: [event for event in events if event["kind"] == kind] for kind in
               ("goal", "plan", "note", "feedback")}
    assert [event["goal"] for event in by_kind["goal"]] == [
        "Invoice totals are off by a cent: fix the rounding in billing/totals.py"]
    assert [(event["next"], event.get("done")) for event in by_kind["plan"]] == [
        (["Find where totals are rounded"], None),
        (["Find where totals are rounded", "Round half to even"], None),
        (["Round half to even"], ["Find where totals are rounded"])]
    notes = {tuple(event["tags"][:1]): event["text"] for event in by_kind["note"]}
    assert notes[("synthetic",)] == "API Error: Connection error."
    assert notes[("title",)] == "Fix invoice rounding"
    assert notes[("summary",)].endswith("totals.py:42 was changed to Decimal.")
    (interruption,) = by_kind["feedback"]
    assert "interrupted" in interruption["tags"] and interruption["text"] == "Use Decimal, not float."
    users = [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "user"]
    assert not [text for text in users if "previous conversation" in text or "API Error" in text]
    sidechain = [event for event in events if "sidechain" in event.get("tags", [])]
    assert {event["kind"] for event in sidechain} == {"message", "tool_call", "tool_result"}
    assert any(event.get("tool") == "Agent" for event in events if event["kind"] == "tool_call")


def test_titles_before_any_time_wait_for_the_first_record_that_has_one(tmp_path: Path) -> None:
    session = ClaudeSession("5e1f7a11-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START, version="2.1.14")
    session.record("ai-title", aiTitle="Rename the export bucket")
    session.lines.insert(0, {"type": "summary", "summary": "Bucket rename", "leafUuid": "not-in-this-file"})
    session.user("Rename the export bucket to acme-exports-eu")
    events, ctx = parse(claude_code, session.write(tmp_path))
    assert [(event["kind"], event.get("text") or event.get("goal")) for event in events][:3] == [
        ("goal", "Rename the export bucket to acme-exports-eu"),
        ("message", "Rename the export bucket to acme-exports-eu"), ("note", "Rename the export bucket")]
    assert events[2]["ts"] == events[1]["ts"] and events[2]["id"].startswith("title:")
    assert ctx.skipped_types == {"summary (another session's)": 1}


# --- live files and bad files ----------------------------------------------------------------------------------


def test_a_live_transcript_ingested_while_it_grows_stores_each_event_once(memory: Path, tmp_path: Path) -> None:
    session, _ = session_21()
    whole = session.write(tmp_path / "full").read_bytes()
    live = tmp_path / "live" / f"{session.session_id}.jsonl"
    live.parent.mkdir()
    ends = [index + 1 for index, byte in enumerate(whole) if byte == ord("\n")]
    # Cut mid-line at every few lines: what cron sees while the agent writes.
    for number, end in enumerate(ends, start=1):
        if number % 3:
            continue
        live.write_bytes(whole[:end - 7])
        report = ingest(memory, live)
        assert report["partial_lines"] == [f"{live}:{number}"]
        assert report["skipped_files"] == []
    live.write_bytes(whole)
    last = ingest(memory, live)
    assert last["partial_lines"] == [] and ingest(memory, live)["added"] == 0
    reference = tmp_path / "ref-mem"
    assert memdream("init", reference).returncode == 0
    ingest(reference, tmp_path / "full")
    ids = [(event["session"], event["id"]) for event in stored(memory)]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted((event["session"], event["id"]) for event in stored(reference))


def test_a_broken_file_in_a_folder_is_skipped_and_named_and_the_others_are_stored(memory: Path,
                                                                                     tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    good = ClaudeSession("7a2f7a11-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    good.user("Run the tests")
    good.bash("pytest -q", "3 passed")
    good.write(folder)
    broken = folder / "broken.jsonl"
    lines = good.write(tmp_path / "copy").read_text(encoding="utf-8").splitlines()
    broken.write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n", encoding="utf-8")
    (folder / "notes.json").write_text('{"what": "not a log"}', encoding="utf-8")
    done = memdream("ingest", folder, "-m", memory)
    assert done.returncode == 0, done.stderr
    assert f"file skipped: {broken}:2: not valid JSON" in done.stdout
    assert f"file skipped: {folder / 'notes.json'}: unknown log format" in done.stdout
    report = json.loads(memdream("ingest", folder, "-m", memory, "-f", "json").stdout)
    assert [item.split(":")[0] for item in report["skipped_files"]] == [str(broken), str(folder / "notes.json")]
    assert len(stored(memory)) == 4  # the good file's goal, request, call and result; nothing of the broken one
    strict = memdream("ingest", folder, "-m", memory, "--strict")
    assert strict.returncode == 1 and strict.stderr.startswith(f"memdream: {broken}:2: not valid JSON")
    named = memdream("ingest", broken, "-m", memory)  # a file named on its own still fails
    assert named.returncode == 1 and "not valid JSON" in named.stderr


# --- Codex: review sub-agents, ghost snapshots, the newer shell names ------------------------------------------


def codex_line(ts: str, kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n"


def test_a_codex_review_subagent_is_a_sidechain_and_its_prompt_no_goal(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-11-10T08-00-00-019a0000-0000-7000-8000-000000000001.jsonl"
    path.write_text("".join([
        codex_line("2026-11-10T08:00:00.000Z", "session_meta", {
            "id": "019a0000-0000-7000-8000-000000000001", "timestamp": "2026-11-10T08:00:00.000Z", "cwd": CWD,
            "cli_version": "0.63.0", "source": {"subagent": "review"}}),
        codex_line("2026-11-10T08:00:01.000Z", "response_item", {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Review the diff"}]}),
        codex_line("2026-11-10T08:00:02.000Z", "response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
        codex_line("2026-11-10T08:00:03.000Z", "response_item", {
            "type": "function_call", "name": "shell_command", "call_id": "c1",
            "arguments": json.dumps({"command": "git diff --stat"})}),
        codex_line("2026-11-10T08:00:04.000Z", "response_item", {
            "type": "function_call_output", "call_id": "c1", "output": "Exit code: 0\nOutput:\n 2 files changed"}),
        codex_line("2026-11-10T08:00:05.000Z", "event_msg", {"type": "entered_review_mode"}),
    ]), encoding="utf-8")
    events, ctx = parse(codex, path)
    assert [event["kind"] for event in events] == ["message", "tool_call", "tool_result"]
    assert all("sidechain" in event["tags"] for event in events)
    assert events[2]["ok"] is True and events[2]["args"] == {"command": "git diff --stat"}
    assert ctx.skipped_types == {"response_item:ghost_snapshot": 1, "event_msg:entered_review_mode": 1}


@needs_real
def test_a_prompt_files_command_is_a_sessions_goal_and_a_greeting_is_not(memory: Path) -> None:
    ingest(memory, REAL / "EdofEngland__code_butler")
    goals = [event["goal"] for event in stored(memory) if event["kind"] == "goal"]
    assert goals and all(goal == "/butler-exec — Execute a ButlerSpec" for goal in goals)  # not "/", not "shell"


# --- records laid out over several lines ------------------------------------------------------------------


def _pretty(source: Path, target: Path) -> Path:
    """``source``'s records pretty-printed one after another, as ``jq . session.jsonl`` writes them."""
    lines = source.read_text(encoding="utf-8").splitlines()
    target.write_text("".join(json.dumps(json.loads(line), indent=2, ensure_ascii=False) + "\n" for line in lines),
                      encoding="utf-8")
    return target


def test_a_pretty_printed_transcript_ingests_as_the_same_events(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("7e1d2f3a-9f41-4d6e-b8a3-2c7d1e9f0a61", "/home/dev/shop-web",
                            datetime(2026, 11, 10, 8, 0, tzinfo=timezone.utc))
    session.user("Fix the rounding of the cart totals, please.")
    session.bash("npm test", "Tests: 3 failed, 40 passed", exit_code=1)
    session.assistant("The rounding uses floats; switching to integer cents.")
    native = session.write(tmp_path / "native")
    pretty = _pretty(native, tmp_path / "claude-session.jsonl")
    report = ingest(memory, pretty)
    assert report["added"] > 0 and not report.get("bad_lines")
    events = stored(memory)
    assert any(event.get("text") == "Fix the rounding of the cart totals, please." for event in events)
    # The same records as one line each are the same events: nothing new.
    again = ingest(memory, native)
    assert again["added"] == 0 and len(stored(memory)) == len(events)


def test_a_broken_pretty_printed_record_is_reported_at_its_first_line(memory: Path, tmp_path: Path) -> None:
    good = {"session": "s1", "ts": "2026-11-01T09:00:00Z", "kind": "message", "actor": "user", "text": "hello"}
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(good, indent=2) + '\n{\n  "session": "s1",\n  "ts": 5\n  "kind": "note"\n}\n',
                    encoding="utf-8")
    done = memdream("ingest", path, "-m", memory)
    assert done.returncode != 0 and f"{path}:8: not valid JSON" in done.stderr  # the record opens on line 8
    assert not list((memory / "raw" / "segments").glob("*.jsonl"))  # nothing of the file went in
