"""The log format adapters: each fixture parsed end to end, plus the edge cases of each format."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memdream import schemas
from memdream.errors import InvalidInput
from memdream.ingest.adapters import (
    NAMES,
    ParseContext,
    adapters,
    claude_code,
    codex,
    detect,
    memdream_jsonl,
    openai_chat,
)

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
CLAUDE = LOGS / "claude-code" / "session.jsonl"
CODEX = next((LOGS / "codex").glob("rollout-*.jsonl"))
CHAT_JSON = LOGS / "openai-chat" / "conversation.json"
CHAT_JSONL = LOGS / "openai-chat" / "conversation.jsonl"
EVENTS = LOGS / "memdream" / "events.jsonl"
BAD = LOGS / "bad"

CLAUDE_SESSION = "7f3c2a91-5d4e-4b8a-9c61-2e8f0d4b7a13"
CODEX_SESSION = "019a5d1e-3b7c-7e42-a8f1-6c2d9b0e4f57"

# (adapter, fixture) for every well-formed fixture.
FIXTURES = [
    (memdream_jsonl, EVENTS),
    (claude_code, CLAUDE),
    (codex, CODEX),
    (openai_chat, CHAT_JSON),
    (openai_chat, CHAT_JSONL),
]
FIXTURE_IDS = [path.name for _, path in FIXTURES]


def context(path: Path | str, **options: Any) -> ParseContext:
    return ParseContext(source=str(path), default_session=Path(path).stem, **options)


def parse_file(adapter: ModuleType, path: Path, **options: Any) -> tuple[list[dict[str, Any]], ParseContext]:
    ctx = context(path, **options)
    with open(path, encoding="utf-8", newline="") as handle:
        events = list(adapter.parse(iter(handle), ctx))
    return events, ctx


def parse_text(adapter: ModuleType, text: str, **options: Any) -> tuple[list[dict[str, Any]], ParseContext]:
    ctx = context("log.jsonl", **options)
    return list(adapter.parse(iter(text.splitlines(keepends=True)), ctx)), ctx


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [event["kind"] for event in events]


def by_id(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {event["id"]: event for event in events if "id" in event}


def source_lines(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# --- properties every adapter must have ---------------------------------------------------------


@pytest.mark.parametrize(("adapter", "path"), FIXTURES, ids=FIXTURE_IDS)
def test_every_event_is_a_valid_raw_event(adapter: ModuleType, path: Path) -> None:
    events, ctx = parse_file(adapter, path)
    assert events
    for event in events:
        assert schemas.iter_errors("raw-event", event) == [], event
    assert ctx.skipped == []


@pytest.mark.parametrize(("adapter", "path"), FIXTURES, ids=FIXTURE_IDS)
def test_ids_are_unique_within_a_session_and_stable_across_parses(adapter: ModuleType, path: Path) -> None:
    first, _ = parse_file(adapter, path)
    second, _ = parse_file(adapter, path)
    assert first == second
    ids = Counter((event["session"], event["id"]) for event in first if "id" in event)
    assert [key for key, count in ids.items() if count > 1] == []


@pytest.mark.parametrize(("adapter", "path"), FIXTURES, ids=FIXTURE_IDS)
def test_session_option_overrides_every_session(adapter: ModuleType, path: Path) -> None:
    events, _ = parse_file(adapter, path, session="team/incident-42")
    assert {event["session"] for event in events} == {"team/incident-42"}


@pytest.mark.parametrize(("adapter", "path"), FIXTURES, ids=FIXTURE_IDS)
def test_tool_results_pair_with_an_earlier_call(adapter: ModuleType, path: Path) -> None:
    events, _ = parse_file(adapter, path)
    calls: dict[str, str | None] = {}
    for event in events:
        if event["kind"] == "tool_call" and "call_id" in event:
            calls[event["call_id"]] = event.get("tool")
        if event["kind"] == "tool_result" and "call_id" in event:
            assert event["call_id"] in calls, event
            assert event.get("tool") == calls[event["call_id"]]


@pytest.mark.parametrize(
    ("adapter", "path"), FIXTURES[:3] + FIXTURES[4:], ids=FIXTURE_IDS[:3] + FIXTURE_IDS[4:]
)
def test_invalid_json_on_line_three_names_source_and_line(adapter: ModuleType, path: Path) -> None:
    good = path.read_text(encoding="utf-8").splitlines(keepends=True)[:2]
    text = "".join(good) + good[1][: len(good[1]) // 2] + "\n" + "".join(good)
    with pytest.raises(InvalidInput) as raised:
        parse_text(adapter, text)
    assert str(raised.value).startswith("log.jsonl:3: not valid JSON: ")


@pytest.mark.parametrize("adapter", [memdream_jsonl, claude_code, codex, openai_chat], ids=lambda a: a.NAME)
def test_empty_input_yields_nothing(adapter: ModuleType) -> None:
    assert parse_text(adapter, "")[0] == []
    assert parse_text(adapter, "\n  \n")[0] == []


@pytest.mark.parametrize("adapter", [memdream_jsonl, claude_code, codex, openai_chat], ids=lambda a: a.NAME)
def test_binary_input_is_a_bad_line_not_a_crash(adapter: ModuleType) -> None:
    text = bytes(range(256)).decode("utf-8", errors="replace")
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:1: "):
        parse_text(adapter, text)
    events, ctx = parse_text(adapter, text, skip_bad=True)
    assert events == []
    assert ctx.skipped and ctx.skipped[0][0] == 1


def _locations(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place inside a JSON value, as a key path."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _locations(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _locations(item, (*here, index))
    return found


def _replace(value: Any, where: tuple[Any, ...], new: Any) -> Any:
    if not where:
        return new
    copy = json.loads(json.dumps(value))
    holder = copy
    for key in where[:-1]:
        holder = holder[key]
    holder[where[-1]] = new
    return copy


@pytest.mark.parametrize(("adapter", "path"), FIXTURES, ids=FIXTURE_IDS)
def test_any_damaged_field_yields_valid_events_or_bad_lines(adapter: ModuleType, path: Path) -> None:
    # Real logs drift between tool versions: any field may be missing, null or of another type.
    # Each field of each line is damaged in turn, parsed after the two lines before it.
    records = source_lines(path) if path.suffix == ".jsonl" else json.loads(path.read_text(encoding="utf-8"))
    for index, record in enumerate(records):
        for where in _locations(record):
            odd: Any
            for odd in (None, [], {}, 7):
                window = [*records[max(0, index - 2) : index], _replace(record, where, odd)]
                text = jsonl(*window) if path.suffix == ".jsonl" else json.dumps(window)
                events, _ = parse_text(adapter, text, skip_bad=True)
                for event in events:
                    assert schemas.iter_errors("raw-event", event) == [], (where, odd, event)


# --- detect ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "name"),
    [
        (EVENTS, "memdream"),
        (CLAUDE, "claude-code"),
        (CODEX, "codex"),
        (CHAT_JSON, "openai-chat"),
        (CHAT_JSONL, "openai-chat"),
        (BAD / "missing-kind.jsonl", "memdream"),
    ],
    ids=lambda value: value.name if isinstance(value, Path) else value,
)
def test_detect_picks_the_adapter_from_the_first_8kb(path: Path, name: str) -> None:
    with open(path, encoding="utf-8") as handle:
        assert detect(handle.read(8192)) == name


def test_the_names_the_command_line_lists_are_the_registry_in_its_order() -> None:
    assert tuple(adapters()) == NAMES


def test_detect_returns_none_for_prose_empty_and_binary() -> None:
    assert detect("We met on Tuesday to discuss the export.\nIt failed again [see logs].\n") is None
    assert detect("[Request interrupted by user]") is None
    assert detect("") is None
    assert detect(bytes(range(256)).decode("utf-8", errors="replace")) is None
    assert detect('{"just": "an object"}\n') is None


def test_detect_reads_a_first_line_cut_by_the_head_limit() -> None:
    meta = {"timestamp": "2026-11-07T09:12:03.118Z", "type": "session_meta"}
    meta["payload"] = {"id": CODEX_SESSION, "instructions": "x" * 20000}  # type: ignore[assignment]
    assert detect(json.dumps(meta, separators=(",", ":"))[:8192]) == "codex"
    claude_line = CLAUDE.read_text(encoding="utf-8").splitlines()[3]
    long_line = claude_line.replace(
        '"content":"<command-name>', '"content":"' + "y" * 9000 + "<command-name>"
    )
    assert detect(long_line[:8192]) == "claude-code"
    # The Agent SDK's first record queues the whole prompt: a type, a session, no uuid in the first 8 KB.
    queued = {"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-07-08T04:55:26.955Z",
              "sessionId": "045b8d10-13e8-4df9-8bf9-7aaed45d5ba1", "content": "Review this change. " + "w " * 6000}
    assert detect(json.dumps(queued, separators=(",", ":"))[:8192]) == "claude-code"
    event = {"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "tool_result", "text": "z" * 9000}
    assert detect(json.dumps(event)[:8192]) == "memdream"
    pretty = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, indent=2)
    assert detect(pretty) == "openai-chat"


def test_registry_names_match_modules() -> None:
    assert set(adapters()) == {"memdream", "claude-code", "codex", "openai-chat", "aider", "memory-file"}


def test_detect_accepts_the_locomo_bench_events() -> None:
    bench = (
        Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo-dev" / "conv-26" / "events.jsonl"
    )
    if not bench.exists():
        pytest.skip("shared bench data not present")
    with open(bench, encoding="utf-8") as handle:
        assert detect(handle.read(8192)) == "memdream"
    events, _ = parse_file(memdream_jsonl, bench)
    assert len(events) == 419


# --- memdream JSONL -------------------------------------------------------------------------------


def test_memdream_fixture_kinds_and_defaults() -> None:
    events, _ = parse_file(memdream_jsonl, EVENTS)
    assert kinds(events) == [
        "goal", "message", "plan", "note", "tool_call", "tool_result", "tool_call", "tool_result", "message",
        "feedback", "feedback", "tool_call", "tool_result", "note", "plan", "tool_call", "tool_result", "outcome",
    ]  # fmt: skip
    actors = {event["kind"]: event["actor"] for event in events if event["kind"] != "message"}
    assert actors == {
        "goal": "agent",
        "plan": "agent",
        "note": "agent",
        "tool_call": "agent",
        "tool_result": "tool",
        "feedback": "user",
        "outcome": "system",
    }
    assert [event["actor"] for event in events if event["kind"] == "message"] == ["user", "agent"]
    assert by_id(events)["r1"]["fact"] == {
        "subject": "export-bucket",
        "attribute": "region",
        "value": "eu-central-1",
    }
    assert by_id(events)["f2"]["verdict"] == "correct"
    assert sum(1 for event in events if "id" not in event) == 3  # left for the pipeline to derive


def test_memdream_events_pass_through_unchanged_apart_from_actor() -> None:
    events, _ = parse_file(memdream_jsonl, EVENTS)
    for event, source in zip(events, source_lines(EVENTS)):
        assert {key: value for key, value in event.items() if key != "actor" or "actor" in source} == source


def test_memdream_goal_with_only_text_is_accepted() -> None:
    events, _ = parse_text(
        memdream_jsonl,
        jsonl({"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "goal", "text": "ship it"}),
    )
    assert events == [
        {"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "goal", "text": "ship it", "actor": "agent"}
    ]


def test_memdream_unknown_field_is_moved_under_meta() -> None:
    events, _ = parse_file(memdream_jsonl, BAD / "unknown-field.jsonl")
    assert events[0]["meta"] == {"model": "gpt-5", "run": 3}
    assert "model" not in events[0]


def test_memdream_unknown_field_is_an_error_in_strict_mode() -> None:
    path = BAD / "unknown-field.jsonl"
    with pytest.raises(InvalidInput) as raised:
        parse_file(memdream_jsonl, path, strict=True)
    assert str(raised.value) == f"{path}:1: unknown field 'model'"


def test_memdream_bad_json_on_line_three() -> None:
    path = BAD / "invalid-json.jsonl"
    with pytest.raises(InvalidInput) as raised:
        parse_file(memdream_jsonl, path)
    assert str(raised.value).startswith(f"{path}:3: not valid JSON: ")


def test_memdream_skip_bad_records_the_line_and_keeps_the_rest() -> None:
    events, ctx = parse_file(memdream_jsonl, BAD / "invalid-json.jsonl", skip_bad=True)
    assert kinds(events) == ["goal", "note", "outcome"]
    assert [line for line, _ in ctx.skipped] == [3]
    assert ctx.skipped[0][1].startswith("not valid JSON: ")


def test_memdream_missing_kind_names_the_field() -> None:
    path = BAD / "missing-kind.jsonl"
    with pytest.raises(InvalidInput) as raised:
        parse_file(memdream_jsonl, path)
    assert str(raised.value) == f"{path}:2: kind: required field is missing"


def test_memdream_unknown_kind_names_the_field() -> None:
    path = BAD / "unknown-kind.jsonl"
    with pytest.raises(InvalidInput) as raised:
        parse_file(memdream_jsonl, path)
    assert str(raised.value).startswith(f"{path}:1: kind: 'thought' is not one of")


def test_memdream_empty_file() -> None:
    events, ctx = parse_file(memdream_jsonl, BAD / "empty.jsonl")
    assert events == [] and ctx.skipped == []
    assert detect((BAD / "empty.jsonl").read_text()) is None


def test_memdream_session_is_required_unless_given() -> None:
    text = jsonl({"ts": "2026-11-07T09:12:03Z", "kind": "note", "text": "x"})
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:1: session: required field is missing$"):
        parse_text(memdream_jsonl, text)
    assert parse_text(memdream_jsonl, text, session="s")[0][0]["session"] == "s"


def test_memdream_bad_timestamp_and_non_object_lines() -> None:
    text = jsonl({"session": "s", "ts": "yesterday", "kind": "note"}) + "[1, 2]\n"
    events, ctx = parse_text(memdream_jsonl, text, skip_bad=True)
    assert events == []
    assert ctx.skipped == [
        (1, "ts: not an ISO 8601 timestamp: 'yesterday'"),
        (2, "not a JSON object but list"),
    ]


def test_memdream_duplicate_id_in_a_session_is_an_error() -> None:
    line = {"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "note", "id": "n1"}
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:2: id: 'n1' is already used in session 's'$"):
        parse_text(memdream_jsonl, jsonl(line, line))
    assert len(parse_text(memdream_jsonl, jsonl(line, {**line, "session": "t"}))[0]) == 2


def test_memdream_reads_crlf_and_bom() -> None:
    text = (
        "\ufeff"
        + json.dumps({"session": "s", "ts": "2026-11-07T09:12:03", "kind": "outcome", "ok": True})
        + "\r\n"
    )
    assert parse_text(memdream_jsonl, text)[0][0]["actor"] == "system"


# --- Claude Code ----------------------------------------------------------------------------------


def claude_events() -> list[dict[str, Any]]:
    return parse_file(claude_code, CLAUDE)[0]


def test_claude_kinds_sequence() -> None:
    assert kinds(claude_events()) == [
        "goal", "message",  # the task
        "message", "tool_call", "tool_result",  # pytest fails
        "tool_call", "tool_result",  # Read bucket.py
        "message", "tool_call", "feedback",  # Edit settings.py, rejected with a comment
        "message", "tool_call", "tool_result", "tool_call", "tool_result",  # Read config, Edit bucket.py
        "tool_call", "message", "tool_call", "tool_result", "message", "tool_result",  # Task + sidechain
        "tool_call", "feedback",  # full suite, interrupted
        "message", "tool_call", "tool_result",
        "message", "feedback",  # interrupted while answering
        "message", "tool_call", "tool_result", "tool_call", "tool_result", "message",
    ]  # fmt: skip


def test_claude_ids_are_the_line_uuids() -> None:
    events = claude_events()
    lines = source_lines(CLAUDE)
    multi = next(
        line for line in lines if line["type"] == "assistant" and len(line["message"]["content"]) == 2
    )
    ids = by_id(events)
    assert ids[multi["uuid"] + ".0"]["kind"] == "message"
    assert ids[multi["uuid"] + ".1"]["kind"] == "tool_call"
    assert events[0]["id"] == lines[5]["uuid"] + ":goal"
    assert events[1]["id"] == lines[5]["uuid"]
    assert all("id" in event for event in events)
    assert {event["session"] for event in events} == {CLAUDE_SESSION}


def test_claude_skips_meta_commands_summary_thinking_and_bookkeeping() -> None:
    events = claude_events()
    lines = source_lines(CLAUDE)
    skipped = [line.get("uuid") for line in lines[:5]] + [
        line["uuid"] for line in lines if line["type"] == "system"
    ]
    ids = {event["id"].split(".")[0] for event in events}
    assert not ids & set(skipped)
    texts = " ".join(event.get("text", "") for event in events)
    for marker in (
        "Caveat:",
        "<command-name>",
        "<local-command-stdout>",
        "Let me run the export tests",
        "Nightly export",
    ):
        assert marker not in texts


def test_claude_tool_results() -> None:
    events = claude_events()
    results = [event for event in events if event["kind"] == "tool_result"]
    assert [event["ok"] for event in results] == [False, True, True, True, True, True, True, False, True]
    failed = results[0]
    assert (
        failed["tool"] == "Bash"
        and failed["error"] == failed["text"]
        and "KeyError: 'region'" in failed["text"]
    )
    assert all("error" not in event for event in results if event["ok"])
    task = next(event for event in results if event["tool"] == "Task")
    assert task["text"].startswith("Found one other lookup")
    call = next(event for event in events if event["kind"] == "tool_call" and event["tool"] == "Bash")
    assert call["args"] == {
        "command": "pytest tests/test_export.py -q",
        "description": "Run the export tests",
    }
    assert call["call_id"] == "toolu_01HcDgW8xq3KpN5v2RzT7mYb"


def test_claude_rejected_tool_use_is_feedback_on_the_call() -> None:
    events = claude_events()
    rejection = next(
        event
        for event in events
        if event["kind"] == "feedback" and event.get("text") != "interrupted by user"
    )
    target = by_id(events)[rejection["target"]]
    assert target["kind"] == "tool_call" and target["tool"] == "Edit" and target["id"].endswith(".1")
    assert rejection["verdict"] == "reject" and rejection["actor"] == "user"
    assert rejection["text"] == (
        "don't touch settings.py: the bucket moved to eu-central-1 in October, the region lives in config/buckets.yaml now"
    )
    assert not any(
        event["kind"] == "tool_result" and event.get("call_id") == target["call_id"] for event in events
    )


def test_claude_interruptions() -> None:
    # Each interruption is followed by the user's next message: its words become the feedback's text.
    events = claude_events()
    lines = source_lines(CLAUDE)
    markers = {line["uuid"] for line in lines if "[Request interrupted" in json.dumps(line.get("message"))}
    interrupted = [event for event in events if event["id"] in markers]
    assert [event["verdict"] for event in interrupted] == ["reject", "reject"]
    assert [event["text"] for event in interrupted] == [
        "Don't run the whole suite, it needs docker. Just run test_export.py again.",
        "Fix report.py the same way and commit both with message 'read export region from bucket config'.",
    ]
    cancelled = by_id(events)[interrupted[0]["target"]]
    assert cancelled["kind"] == "tool_call" and cancelled["args"]["command"] == "pytest -q"
    assert "target" not in interrupted[1]
    assert not any(
        event.get("call_id") == cancelled["call_id"] for event in events if event["kind"] == "tool_result"
    )


def test_claude_sidechain_is_kept_and_tagged() -> None:
    tagged = [event for event in claude_events() if "sidechain" in event.get("tags", [])]
    assert kinds(tagged) == ["message", "tool_call", "tool_result", "message"]
    assert tagged[1]["tool"] == "Grep"


def test_claude_context_meta_on_the_first_event_only() -> None:
    # The goal derived from the first message comes before it; the message keeps the meta it had.
    events = claude_events()
    assert events[0]["kind"] == "goal" and "meta" not in events[0]
    assert events[1]["meta"] == {
        "cwd": "/home/dana/src/billing-export",
        "git_branch": "fix/nightly-export",
        "claude_code_version": "2.0.31",
    }
    assert all("meta" not in event for event in events[2:])


def _claude_line(kind: str, uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": kind,
        "sessionId": "sess-1",
        "uuid": uuid,
        "timestamp": "2026-11-07T10:00:00.000Z",
    }
    line["message"] = {"role": kind, "content": content}
    return {**line, **extra}


def test_claude_rejection_without_comment_and_with_memory_hint() -> None:
    call = _claude_line(
        "assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Write", "input": {"file_path": "x"}}]
    )
    bare = (
        claude_code.REJECTED
        + ". The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed."
    )
    hinted = (
        claude_code.REJECTED + ". To tell you how to proceed, the user said:\nuse the staging bucket\n\n"
        "Note: The user's next message may contain a correction or preference. Pay close attention."
    )
    results = [
        _claude_line(
            "user", f"u{n}", [{"type": "tool_result", "tool_use_id": "t1", "content": text, "is_error": True}]
        )
        for n, text in enumerate((bare, hinted))
    ]
    events, _ = parse_text(claude_code, jsonl(call, *results))
    assert events[1] == {"session": "sess-1", "ts": "2026-11-07T10:00:00.000Z", "kind": "feedback", "actor": "user", "verdict": "reject", "target": "a1", "id": "u0"}  # fmt: skip
    assert events[2]["text"] == "use the staging bucket"


def test_claude_timestamps_inherit_and_must_exist_somewhere() -> None:
    first = _claude_line("user", "u1", "fix the rounding bug")
    second = {
        key: value for key, value in _claude_line("assistant", "a1", "hi").items() if key != "timestamp"
    }
    events, _ = parse_text(claude_code, jsonl(first, second))
    assert [event["ts"] for event in events] == ["2026-11-07T10:00:00.000Z"] * 3  # goal, request, hi
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:1: no timestamp"):
        parse_text(claude_code, jsonl(second))


def test_claude_repeated_record_and_bad_message() -> None:
    line = _claude_line("user", "u1", "fix the rounding bug")
    events, ctx = parse_text(
        claude_code, jsonl(line, line, {**line, "uuid": "u2", "message": "oops"}), skip_bad=True
    )
    assert kinds(events) == ["goal", "message"]
    assert ctx.skipped == [(3, "message: expected an object")]


def test_claude_session_falls_back_to_the_file_stem() -> None:
    line = {key: value for key, value in _claude_line("user", "u1", "hello").items() if key != "sessionId"}
    assert parse_text(claude_code, jsonl(line))[0][0]["session"] == "log"


# --- Codex ----------------------------------------------------------------------------------------


def codex_events() -> list[dict[str, Any]]:
    return parse_file(codex, CODEX)[0]


def test_codex_kinds_sequence() -> None:
    assert kinds(codex_events()) == [
        "goal", "message",
        "tool_call", "tool_result",  # pytest: exit 1
        "tool_call", "tool_result",  # rg: exit 0
        "message",
        "tool_call", "tool_result",  # apply_patch
        "tool_call", "tool_result",  # pytest: exit 0
        "tool_call", "feedback",  # git push, declined
        "message", "outcome",
        "message", "tool_call", "feedback", "tool_result",  # full suite, interrupted
        "message", "message", "outcome",
    ]  # fmt: skip


def test_codex_messages_come_once_and_context_blobs_are_skipped() -> None:
    events = codex_events()
    messages = [event for event in events if event["kind"] == "message"]
    assert [event["actor"] for event in messages] == ["user", "agent", "agent", "user", "user", "agent"]
    texts = [event["text"] for event in messages]
    assert len(texts) == len(set(texts))
    assert not any(text.startswith(("<environment_context>", "<user_instructions>")) for text in texts)
    assert all("id" not in event for event in messages)


def test_codex_exit_codes_decide_ok() -> None:
    events = codex_events()
    ids = by_id(events)
    failed = ids["call_Qm8sV2xKp4NdR7tWz1LcYb3F.out"]
    assert (
        failed["ok"] is False
        and failed["tool"] == "shell"
        and failed["call_id"] == "call_Qm8sV2xKp4NdR7tWz1LcYb3F"
    )
    assert failed["error"] == failed["text"] and failed["text"].startswith("..F")
    assert ids["call_Hb3nT9wLc5XrK2vQm8PzDf6J.out"]["ok"] is True
    assert ids["call_Vt6pW3zRj9KmB1xNc4QsLh8D.out"] == {
        **ids["call_Vt6pW3zRj9KmB1xNc4QsLh8D.out"],
        "tool": "apply_patch",
        "ok": True,
        "text": "Success. Updated the following files:\nM export/bucket.py\n",
    }
    assert "ok" not in ids["call_Kd9wT4nHb7QxR2mVs5LcPz8F.out"]  # "aborted": the output does not say
    call = ids["call_Qm8sV2xKp4NdR7tWz1LcYb3F"]
    assert call["args"] == {
        "command": ["bash", "-lc", "pytest -q tests/test_export.py"],
        "workdir": "/home/dana/src/billing-export",
    }
    assert ids["call_Vt6pW3zRj9KmB1xNc4QsLh8D"]["args"]["input"].startswith("*** Begin Patch")


def test_codex_declined_approval_and_aborted_turn_are_feedback() -> None:
    events = codex_events()
    declined = by_id(events)["call_Zc5mR8vBn2TxK6wLp9DsQj4G.out"]
    assert declined["kind"] == "feedback" and declined["verdict"] == "reject"
    assert declined["target"] == "call_Zc5mR8vBn2TxK6wLp9DsQj4G" and declined["actor"] == "user"
    assert "text" not in declined  # the agent answered before the user said anything
    # The user's next message after the interrupted turn says why: it is the feedback's text.
    aborted = [event for event in events if event["kind"] == "feedback" and "target" not in event]
    assert len(aborted) == 1 and aborted[0]["verdict"] == "reject"
    assert aborted[0]["text"] == "stop, the full suite needs docker. Just summarize what you changed."


def test_codex_task_complete_is_an_outcome() -> None:
    outcomes = [event for event in codex_events() if event["kind"] == "outcome"]
    assert [event["ok"] for event in outcomes] == [True, True]
    assert outcomes[0]["text"].startswith("Fixed: `bucket_for`")


def test_codex_session_and_context() -> None:
    events = codex_events()
    assert {event["session"] for event in events} == {CODEX_SESSION}
    # The goal derived from the first message comes before it; the message keeps the meta it had.
    assert events[0]["kind"] == "goal" and "meta" not in events[0]
    assert events[1]["meta"] == {
        "cwd": "/home/dana/src/billing-export",
        "git_branch": "main",
        "codex_version": "0.58.0",
    }
    assert all("meta" not in event for event in events[2:])
    assert events[0]["ts"] == events[1]["ts"] == "2026-11-07T09:12:17.318Z"


def _envelope(kind: str, payload: dict[str, Any], ts: str = "2026-11-07T10:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def test_codex_event_msg_message_is_used_when_no_response_item_has_it() -> None:
    text = jsonl(
        _envelope("session_meta", {"id": "s1", "cwd": "/w"}),
        _envelope("event_msg", {"type": "user_message", "message": "only in the UI stream"}),
        _envelope("event_msg", {"type": "agent_message", "message": "said twice"}),
        _envelope(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "said twice"}],
            },
        ),
    )
    events, _ = parse_text(codex, text)
    assert [(event["actor"], event["text"]) for event in events if event["kind"] == "message"] == [
        ("user", "only in the UI stream"),
        ("agent", "said twice"),
    ]


def test_codex_outputs_without_json_metadata() -> None:
    call = {"type": "function_call", "name": "exec_command", "arguments": "cmd=ls -la", "call_id": "c1"}
    text = jsonl(
        _envelope("session_meta", {"id": "s1"}),
        _envelope("response_item", call),
        _envelope(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Exit code: 2\nWall time: 0.1 seconds\nOutput:\nls: cannot access",
            },
        ),
        _envelope("response_item", {**call, "call_id": "c2", "arguments": {"cmd": "true"}}),
        _envelope(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": "Chunk ID: 1\nProcess exited with code 0\nOutput:\n",
            },
        ),
        _envelope("response_item", {**call, "call_id": "c3"}),
        _envelope(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "c3",
                "output": "failed to parse function arguments: missing field `cmd`",
            },
        ),
        _envelope("event_msg", {"type": "turn_aborted", "reason": "replaced"}),
    )
    events, _ = parse_text(codex, text)
    assert events[0]["args"] == {"raw": "cmd=ls -la"}
    assert events[2]["args"] == {"cmd": "true"}
    assert [event.get("ok") for event in events if event["kind"] == "tool_result"] == [False, True, False]
    assert events[-1] == {**events[-1], "kind": "outcome", "ok": False, "text": "turn aborted: replaced"}


def test_codex_legacy_rollout_format() -> None:
    text = jsonl(
        {
            "id": "5f1c0e3a-1111-4222-8333-944455556666",
            "timestamp": "2025-05-07T17:24:21.123Z",
            "instructions": None,
            "git": {"branch": "dev"},
        },
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list the files"}]},
        {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "call_1"},
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": '{"output":"a\\nb\\n","metadata":{"exit_code":0}}',
        },
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "name": "shell", "arguments": '{"command":["cargo","test"]}', "call_id": "call_2"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error, exit code: 101,"
            " stdout: \nrunning 3 tests\ntest result: ok. 3 passed",
        },
    )
    events, _ = parse_text(codex, text)
    assert kinds(events) == ["goal", "message", "tool_call", "tool_result", "tool_call", "tool_result"]
    # The 2025 builds' sandbox failure has no exit-code header: its opening words say it failed.
    assert events[5]["ok"] is False
    assert {event["session"] for event in events} == {"5f1c0e3a-1111-4222-8333-944455556666"}
    # No times of their own: the session's start and the order of lines, one millisecond a line.
    times = [event["ts"] for event in events]
    assert times[0] == times[1] > "2025-05-07T17:24:21.123Z" and times == sorted(times) and len(set(times)) == 5
    assert all(event["meta"]["ts_synthetic"] is True for event in events)
    assert events[3]["ok"] is True and events[3]["text"] == "a\nb\n"
    assert detect(text) == "codex"


def test_codex_replayed_call_is_emitted_once_and_untimed_log_is_bad() -> None:
    call = _envelope(
        "response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
    )
    assert len(parse_text(codex, jsonl(call, call))[0]) == 1
    bare = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:1: no timestamp"):
        parse_text(codex, jsonl(bare))


# --- OpenAI chat ----------------------------------------------------------------------------------


def test_openai_array_with_tool_calls() -> None:
    events, _ = parse_file(openai_chat, CHAT_JSON, modified=1794128400.0)  # 2026-11-08T09:00:00Z
    assert kinds(events) == [
        "goal", "message", "tool_call", "tool_call", "tool_result", "tool_result", "message",
        "message", "message", "tool_call", "tool_result", "message",
        "message", "tool_call", "tool_result", "message",
    ]  # fmt: skip
    assert [event["id"] for event in events[:7]] == ["m1:goal", "m1", "m2.0", "m2.1", "m3", "m4", "m5"]
    assert [event["id"] for event in events[8:10]] == ["m7.0", "m7.1"]
    assert {event["session"] for event in events} == {"conversation"}
    # No times in the file: its mtime, one millisecond back per later message (14 messages).
    assert events[0]["ts"] == "2026-11-08T08:59:59.988Z" and events[-1]["ts"] == "2026-11-08T09:00:00.000Z"
    assert all(event["meta"] == {"ts_synthetic": True} for event in events)
    weather = [event for event in events if event.get("tool") == "get_weather"]
    assert [event["call_id"] for event in weather[:2]] == [event["call_id"] for event in weather[2:]]
    assert weather[1]["args"] == {"city": "Berlin", "date": "2026-11-08"}
    assert all("ok" not in event for event in events if event["kind"] == "tool_result")
    assert events[7]["text"] == "Berlin then. Book the cheapest morning flight from Amsterdam."


def test_openai_jsonl_keeps_timestamps_and_speakers() -> None:
    events, _ = parse_file(openai_chat, CHAT_JSONL)
    assert kinds(events) == ["goal", "message", "tool_call", "tool_result", "message", "message", "message"]
    assert [event["id"] for event in events] == ["m1:goal", "m1", "m2", "m3", "m4", "m5", "m6"]
    assert [event["ts"] for event in events][4:] == [
        "2026-11-07T14:02:15Z",
        "2026-11-07T14:02:15Z",
        "2026-11-07T14:03:02Z",
    ]
    assert events[1]["speaker"] == "priya" and events[1]["actor"] == "user"
    assert events[3]["tool"] == "lookup_rota"
    assert all("meta" not in event for event in events)


def test_openai_messages_object_reports_the_line_of_a_bad_message() -> None:
    document = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "beep"}],
    }
    text = json.dumps(document, indent=2)
    with pytest.raises(InvalidInput) as raised:
        parse_text(openai_chat, text)
    assert str(raised.value) == "log.jsonl:8: role: unknown role 'robot'"
    events, ctx = parse_text(openai_chat, text, skip_bad=True)
    assert [event["text"] for event in events if event["kind"] == "message"] == ["hi"]
    assert ctx.skipped == [(8, "role: unknown role 'robot'")]


def test_openai_broken_array_reports_its_line() -> None:
    text = '[\n  {"role": "user", "content": "hi"},\n  {"role": "assistant", "content": }\n]\n'
    with pytest.raises(InvalidInput, match=r"^log\.jsonl:3: not valid JSON: "):
        parse_text(openai_chat, text)


def test_openai_created_times_and_legacy_function_calls() -> None:
    text = jsonl(
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": "lookup", "arguments": '{"q": 1}'},
            "created": 1794042723,
        },
        {"role": "function", "name": "lookup", "content": "42"},
    )
    events, _ = parse_text(openai_chat, text)
    assert [event["ts"] for event in events] == ["2026-11-07T09:12:03Z"] * 2
    assert events[0]["args"] == {"q": 1} and events[1]["tool"] == "lookup"


def test_openai_conversation_per_line_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="one chat message per line"):
        parse_text(openai_chat, jsonl({"messages": [{"role": "user", "content": "a"}]}, {"messages": []}))
