"""memdream ingest end to end: real git memories, real files, real subprocesses where it matters."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memdream.ingest import pipeline
from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer, SegmentWriter, canonical_json, line_hash
from tests.gitutil import git

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
EVENTS = LOGS / "memdream" / "events.jsonl"  # 18 events, 15 with ids
CLAUDE = LOGS / "claude-code" / "session.jsonl"
INVALID_JSON = LOGS / "bad" / "invalid-json.jsonl"  # line 3 is cut


# -- helpers ------------------------------------------------------------------------------------


@pytest.fixture
def memory(memory: Path) -> Path:
    """These tests follow each ingest's own commit (`ingest.commit: each`); the default, folding
    the manifest into the next dream's commit, is tested in test_manifest_commit.py."""
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("commit: with-dream", "commit: each"),
                      encoding="utf-8")
    git(memory, "commit", "-q", "-am", "ingest commits each run")
    return memory


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def segment_files(root: Path) -> list[Path]:
    folder = root / "raw" / "segments"
    return sorted(path for path in folder.glob("*") if not path.name.startswith(".")) if folder.is_dir() else []


def staging_files(root: Path) -> list[Path]:
    folder = root / "raw" / "segments"
    return sorted(folder.glob(".staging-*")) if folder.is_dir() else []


def manifest(root: Path) -> list[dict[str, Any]]:
    path = root / "raw" / "MANIFEST.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stored(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in segment_files(root)
            for line in path.read_text(encoding="utf-8").splitlines()]


def snapshot(root: Path) -> dict[str, Any]:
    """What an aborted run must leave exactly as it was."""
    path = root / "raw" / "MANIFEST.jsonl"
    return {
        "head": head(root), "segments": [p.name for p in segment_files(root)], "staging": staging_files(root),
        "manifest": path.read_bytes() if path.exists() else None,
        "status": git(root, "status", "--porcelain", "--untracked-files=all"),
        "salience": (root / ".memdream" / "ingest" / "salience.json").exists(),
    }


def report_of(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def event(session: str, second: int, kind: str = "note", **fields: Any) -> str:
    return json.dumps({"session": session, "ts": f"2026-11-07T09:{second // 60 % 60:02d}:{second % 60:02d}Z",
                       "kind": kind, **fields})


def cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


# -- a first ingest -----------------------------------------------------------------------------


def test_ingest_stores_canonical_events_pins_the_segment_in_the_manifest_and_commits_it(run: Any, memory: Path) -> None:
    before = head(memory)
    result = run("ingest", EVENTS, "-m", memory)
    assert result.exit_code == 0, result.stderr
    assert "18 event(s) added in segment(s) 000001.jsonl" in result.stdout
    assert result.stderr == ""

    segment = memory / "raw" / "segments" / "000001.jsonl"
    assert segment_files(memory) == [segment] and staging_files(memory) == []
    lines = segment.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 18
    source = [json.loads(line) for line in EVENTS.read_text(encoding="utf-8").splitlines()]
    for line, original in zip(lines, source):
        stored_event = json.loads(line)
        assert line == canonical_json(stored_event)  # sorted keys, no spaces
        for key, value in original.items():  # everything the log said is kept (tags: extended)
            assert (stored_event[key][:len(value)] if key == "tags" else stored_event[key]) == value
        assert stored_event["actor"] and stored_event["id"]
        assert any(tag.startswith("episode:") for tag in stored_event["tags"])
    ids = [json.loads(line)["id"] for line in lines]
    assert len(set(ids)) == 18 and "u1" in ids

    records = manifest(memory)
    assert len(records) == 1
    assert records[0]["segment"] == "000001.jsonl" and records[0]["events"] == 18
    assert records[0]["sha256"] == hashlib.sha256(segment.read_bytes()).hexdigest()
    assert records[0]["first_ts"] == "2026-11-07T09:12:03Z" and records[0]["last_ts"] == "2026-11-07T09:31:15Z"
    assert records[0]["created_at"] == "2026-11-30T12:00:00Z"  # MEMDREAM_NOW

    assert git(memory, "rev-parse", "HEAD~1").strip() == before
    assert git(memory, "log", "-1", "--format=%s").strip() == "memdream ingest: 18 event(s) in 1 segment(s)"
    assert "Memdream-Ingest: 000001.jsonl" in git(memory, "log", "-1", "--format=%B")
    assert git(memory, "show", "--name-only", "--format=", "HEAD").split() == ["raw/MANIFEST.jsonl"]
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(memory, "ls-files", "raw").split() == ["raw/MANIFEST.jsonl"]  # segments stay local


def test_json_report_counts_what_was_read_added_and_stored(run: Any, memory: Path) -> None:
    report = report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))
    assert (report["read"], report["added"], report["duplicates"], report["skipped_lines"]) == (18, 18, 0, 0)
    assert [s["segment"] for s in report["segments"]] == ["000001.jsonl"]
    assert report["commit"] == head(memory)
    assert report["sources"][0]["format"] == "memdream" and report["sources"][0]["source"] == str(EVENTS)


# -- idempotency --------------------------------------------------------------------------------


def test_ingesting_the_same_file_again_adds_nothing_and_makes_no_commit(run: Any, memory: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    before, segment_bytes = head(memory), (memory / "raw" / "segments" / "000001.jsonl").read_bytes()
    report = report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))
    assert (report["added"], report["duplicates"], report["segments"], report["commit"]) == (0, 18, [], None)
    assert [p.name for p in segment_files(memory)] == ["000001.jsonl"]
    assert (memory / "raw" / "segments" / "000001.jsonl").read_bytes() == segment_bytes
    assert head(memory) == before and len(manifest(memory)) == 1
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""
    assert "0 event(s) added (nothing new)" in run("ingest", EVENTS, "-m", memory).stdout


def test_events_without_ids_get_stable_derived_ids_so_a_reingest_adds_nothing(run: Any, memory: Path,
                                                                             tmp_path: Path) -> None:
    log = tmp_path / "noids.jsonl"
    lines = [event("s-a", 1, "goal", goal="ship it"), event("s-a", 2, text="same words"),
             event("s-a", 2, text="same words"),  # an identical repeat is a second event
             event("s-a", 3, "message", text="hello"), event("s-b", 4, text="other session")]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert first["added"] == 5
    ids = [e["id"] for e in stored(memory)]
    assert len(set(ids)) == 5 and ids[2] == ids[1] + "-2"
    before = head(memory)

    again = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert (again["added"], again["duplicates"]) == (0, 5)
    assert head(memory) == before and [e["id"] for e in stored(memory)] == ids


def test_an_appended_log_adds_exactly_the_new_lines(run: Any, memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "growing.jsonl"
    shutil.copy(EVENTS, log)
    run("ingest", log, "-m", memory)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(event("s-0007", 3000, text="with an id", id="late1") + "\n")
        handle.write(event("s-0007", 3001, text="no id") + "\n")
        handle.write(event("s-0008", 3002, "goal", goal="a new session") + "\n")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert (report["added"], report["duplicates"]) == (3, 18)
    assert [p.name for p in segment_files(memory)] == ["000001.jsonl", "000002.jsonl"]
    assert len(stored(memory)) == 21 and len({(e["session"], e["id"]) for e in stored(memory)}) == 21
    assert [r["events"] for r in manifest(memory)] == [18, 3]
    assert git(memory, "log", "-1", "--format=%s").strip() == "memdream ingest: 3 event(s) in 1 segment(s)"


# -- redaction ----------------------------------------------------------------------------------

PEM_BODY = "MIIEowIBAAKCAQEA7bqSecretBody0123456789abcdefABCDEF"
SECRETS = {
    "aws-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "api-key": "sk-proj-Abcdefghij0123456789XYZabcdefghij",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "private-key": f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
    "secret": "password=hunter2xyz",
    "email": "dana.smith@example.com",
    "phone": "+1 415 555 0132",
    "card-number": "4111 1111 1111 1111",
}
# What must not be found anywhere afterwards (the secret part of each, in a few spellings).
NEEDLES = [
    "AKIAIOSFODNN7EXAMPLE", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "sk-proj-Abcdefghij0123456789XYZ",
    "eyJhbGciOiJIUzI1NiJ9", PEM_BODY, "hunter2xyz", "dana.smith@example.com", "dana.smith", "415 555 0132",
    "4111 1111 1111 1111", "4111111111111111",
]
SECRET_TEXT = "deploy notes: " + " | ".join(SECRETS.values()) + " | end"


def _memdream_log() -> str:
    return "\n".join([
        event("sec-md", 1, "message", id="m1", text=SECRET_TEXT),
        event("sec-md", 2, "tool_call", id="c1", tool="shell", args={"cmd": SECRET_TEXT}, call_id="k1"),
        event("sec-md", 3, "note", id="n1", text="meta carries it", meta={"env": SECRET_TEXT}),
    ]) + "\n"


def _claude_log() -> str:
    base = {"sessionId": "sec-claude", "cwd": "/home/dana", "version": "2.0.31", "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "u-1", "timestamp": "2026-11-07T09:00:01Z",
         "message": {"role": "user", "content": SECRET_TEXT}},
        {**base, "type": "assistant", "uuid": "a-1", "timestamp": "2026-11-07T09:00:02Z",
         "message": {"role": "assistant", "model": "claude-sonnet-4-5", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": SECRET_TEXT}}]}},
        {**base, "type": "user", "uuid": "u-2", "timestamp": "2026-11-07T09:00:03Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": SECRET_TEXT, "is_error": True}]}},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def _openai_log() -> str:
    return json.dumps([
        {"role": "system", "content": "be helpful"},
        {"role": "user", "content": SECRET_TEXT},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "run", "arguments": json.dumps({"cmd": SECRET_TEXT})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": SECRET_TEXT},
    ], indent=2)


def _codex_log() -> str:
    stamp = "2026-11-07T09:00:00.000Z"
    lines = [
        {"timestamp": stamp, "type": "session_meta", "payload": {"id": "sec-codex", "timestamp": stamp, "cwd": "/w"}},
        {"timestamp": stamp, "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": SECRET_TEXT}]}},
        {"timestamp": stamp, "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "call_id": "call_9", "arguments": json.dumps({"cmd": SECRET_TEXT})}},
        {"timestamp": stamp, "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_9", "output": SECRET_TEXT}},
    ]
    return "\n".join(json.dumps(line) for line in lines) + "\n"


def _every_byte_of(memory: Path) -> list[tuple[str, bytes]]:
    found = [(str(path), path.read_bytes()) for path in memory.rglob("*") if path.is_file()]
    # Git objects are compressed: ask git for every version of every file, and every message.
    found.append(("git log -p --all", git(memory, "log", "-p", "--all", "--format=%H %B").encode()))
    revisions = git(memory, "rev-list", "--all").split()
    found.append(("git grep", git(memory, "grep", "-I", "-h", "-e", "", *revisions).encode()))
    return found


def test_secrets_in_every_format_are_redacted_before_anything_reaches_disk(run: Any, memory: Path,
                                                                           tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a-memdream.jsonl").write_text(_memdream_log(), encoding="utf-8")
    (logs / "b-claude.jsonl").write_text(_claude_log(), encoding="utf-8")
    (logs / "c-chat.json").write_text(_openai_log(), encoding="utf-8")
    (logs / "d-codex.jsonl").write_text(_codex_log(), encoding="utf-8")
    report = report_of(run("ingest", logs, "-m", memory, "--format", "json"))

    assert [s["format"] for s in report["sources"]] == ["memdream", "claude-code", "openai-chat", "codex"]
    # Three places in each source; claude's failed result carries it twice (text and error). Adapters
    # copy some of it further (a session's goal, the command line onto its result): more, never fewer.
    places = {"memdream": 3, "claude-code": 4, "openai-chat": 3, "codex": 3}
    for source in report["sources"]:
        assert source["added"] >= 3
        assert set(source["redactions"]) == set(SECRETS), source
        assert all(count >= places[source["format"]] for count in source["redactions"].values()), source
    assert report["redactions"] == {kind: sum(source["redactions"][kind] for source in report["sources"])
                                    for kind in SECRETS}

    events = stored(memory)
    assert sum(1 for e in events if "[REDACTED:aws-key]" in canonical_json(e)) >= sum(places.values()) - 1
    for name, data in _every_byte_of(memory):
        for needle in NEEDLES:
            assert needle.encode() not in data, f"{needle!r} found in {name}"
    text = "".join(canonical_json(e) for e in events)
    for kind in SECRETS:
        assert f"[REDACTED:{kind}]" in text


def test_secret_keys_and_free_tags_are_redacted_too(run: Any, memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "keys.jsonl"
    log.write_text("\n".join([
        event("s", 1, "tool_call", id="c1", tool="db", args={"password": "two words", "db_token": "tok-1"}),
        event("s", 2, "note", id="n1", text="labelled", tags=["customer:dana.smith@example.com", "billing"]),
        event("s", 3, "note", id="n2", fact={"subject": "dana.smith@example.com", "attribute": "phone",
                                             "value": "+1 415 555 0132"}),
    ]) + "\n", encoding="utf-8")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert report["redactions"] == {"email": 2, "phone": 1, "secret": 2}
    events = {e["id"]: e for e in stored(memory)}
    assert events["c1"]["args"] == {"password": "[REDACTED:secret]", "db_token": "[REDACTED:secret]"}
    assert events["n1"]["tags"][:2] == ["customer:[REDACTED:email]", "billing"]
    assert events["n2"]["fact"]["subject"] == "[REDACTED:email]"
    for _, data in _every_byte_of(memory):
        assert b"dana.smith" not in data and b"two words" not in data and b"tok-1" not in data


# -- malformed input: one line on stderr, nothing written -----------------------------------------


def test_invalid_json_names_file_and_line_and_writes_nothing(run: Any, memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "bad.jsonl"
    shutil.copy(INVALID_JSON, log)
    before = snapshot(memory)
    result = run("ingest", log, "-m", memory)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"memdream: {log}:3: not valid JSON")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert snapshot(memory) == before
    assert segment_files(memory) == [] and manifest(memory) == []


def test_a_bad_line_in_any_input_aborts_the_whole_run_so_nothing_of_the_run_is_written(
        run: Any, memory: Path, tmp_path: Path) -> None:
    """All or nothing per run: the good first file is not kept when the second file is bad."""
    good, bad = tmp_path / "1-good.jsonl", tmp_path / "2-bad.jsonl"
    shutil.copy(EVENTS, good)
    shutil.copy(INVALID_JSON, bad)
    before = snapshot(memory)
    result = run("ingest", good, bad, "-m", memory)
    assert result.exit_code == 1 and result.stderr.startswith(f"memdream: {bad}:3: not valid JSON")
    assert snapshot(memory) == before
    # Nothing was remembered either: the good file still ingests in full afterwards.
    assert report_of(run("ingest", good, "-m", memory, "--format", "json"))["added"] == 18


def test_skip_bad_stores_the_other_lines_and_reports_the_skipped_one(run: Any, memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "bad.jsonl"
    shutil.copy(INVALID_JSON, log)
    report = report_of(run("ingest", log, "--skip-bad", "-m", memory, "--format", "json"))
    assert (report["added"], report["skipped_lines"]) == (3, 1)
    [skipped] = report["sources"][0]["skipped_lines"]
    assert skipped["line"] == 3 and skipped["reason"].startswith("not valid JSON")
    assert [e["kind"] for e in stored(memory)] == ["goal", "note", "outcome"]
    text = run("ingest", log, "--skip-bad", "-m", memory).stdout
    assert "1 bad line(s) skipped" in text and f"skipped {log}:3: not valid JSON" in text


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("notes.txt", b"Dear diary,\ntoday the export failed again.\n", "unknown log format"),
    ("empty.jsonl", b"", "empty input"),
    ("blank.jsonl", b"\n  \n\n", "empty input"),
    ("blob.jsonl", b'{"session":"s"}\x00\x01\x02binary', "binary data"),
    ("latin1.jsonl", b'{"session":"s","ts":"2026-11-07T09:12:03Z","kind":"note","text":"caf\xe9"}\n', "not UTF-8"),
])
def test_inputs_that_are_not_logs_fail_with_one_line_and_change_nothing(
        run: Any, memory: Path, tmp_path: Path, name: str, content: bytes, expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    before = snapshot(memory)
    result = run("ingest", path, "-m", memory)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"memdream: {path}") and expected in result.stderr
    assert result.stderr.count("\n") == 1
    assert snapshot(memory) == before


def test_a_missing_path_is_a_usage_error(run: Any, memory: Path, tmp_path: Path) -> None:
    before = snapshot(memory)
    result = run("ingest", EVENTS, tmp_path / "nope.jsonl", "-m", memory)
    assert result.exit_code == 2
    assert result.stderr == f"memdream: {tmp_path / 'nope.jsonl'}: no such file or folder\n"
    assert snapshot(memory) == before


def test_a_folder_without_logs_fails_with_one_line(run: Any, memory: Path, tmp_path: Path) -> None:
    folder = tmp_path / "nothing"
    (folder / ".hidden").mkdir(parents=True)
    (folder / "readme.txt").write_text("not a log", encoding="utf-8")
    (folder / ".hidden" / "x.jsonl").write_text(EVENTS.read_text(encoding="utf-8"), encoding="utf-8")
    before = snapshot(memory)
    result = run("ingest", folder, "-m", memory)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"memdream: {folder}: no log files") and result.stderr.count("\n") == 1
    assert snapshot(memory) == before


def test_nothing_to_ingest_is_a_usage_error(run: Any, memory: Path) -> None:
    result = run("ingest", "-m", memory)
    assert result.exit_code == 2 and "nothing to ingest" in result.stderr


def test_a_wrong_format_names_the_file_and_line_not_a_traceback(run: Any, memory: Path) -> None:
    before = snapshot(memory)
    result = run("ingest", "--log-format", "codex", EVENTS, "-m", memory)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"memdream: {EVENTS}:1: ") and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert snapshot(memory) == before
    unknown = run("ingest", "--log-format", "yaml", EVENTS, "-m", memory)
    assert unknown.exit_code == 1 and unknown.stderr.startswith("memdream: unknown format 'yaml'")


def test_strict_mode_rejects_unknown_fields_that_are_otherwise_kept_under_meta(run: Any, memory: Path) -> None:
    unknown = LOGS / "bad" / "unknown-field.jsonl"
    strict = run("ingest", "--strict", unknown, "-m", memory)
    assert strict.exit_code == 1 and strict.stderr.startswith(f"memdream: {unknown}:1: unknown field 'model'")
    assert report_of(run("ingest", unknown, "-m", memory, "--format", "json"))["added"] == 1
    assert stored(memory)[0]["meta"] == {"model": "gpt-5", "run": 3}


# -- sources ------------------------------------------------------------------------------------


def test_stdin_is_read_with_a_session_override(run: Any, memory: Path) -> None:
    text = EVENTS.read_text(encoding="utf-8")
    report = report_of(run("ingest", "-", "--session", "piped/run-1", "-m", memory, "--format", "json", input=text))
    assert report["added"] == 18 and report["sources"][0]["source"] == "<stdin>"
    assert {e["session"] for e in stored(memory)} == {"piped/run-1"}
    # Same input again through stdin: the same ids, so nothing new.
    assert report_of(run("ingest", "-", "--session", "piped/run-1", "-m", memory, "--format", "json",
                         input=text))["added"] == 0


def test_stdin_without_session_keeps_the_sessions_of_the_log(run: Any, memory: Path) -> None:
    report = report_of(run("ingest", "-", "-m", memory, "--format", "json", input=event("s-x", 1, text="t") + "\n"))
    assert report["added"] == 1 and stored(memory)[0]["session"] == "s-x"


def test_folders_are_read_recursively_and_hidden_files_are_skipped(run: Any, memory: Path, tmp_path: Path) -> None:
    root = tmp_path / "logs"
    for relative, session in [("a.jsonl", "top"), ("deep/er/b.ndjson", "deep"), ("c.log", "log-suffix"),
                              (".hidden.jsonl", "hidden-file"), (".git/d.jsonl", "hidden-folder"),
                              ("deep/.cache/e.jsonl", "hidden-subfolder"), ("notes.md", "not-a-log")]:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(event(session, 1, text="x") + "\n", encoding="utf-8")
    report = report_of(run("ingest", root, "-m", memory, "--format", "json"))
    assert [Path(s["source"]).name for s in report["sources"]] == ["a.jsonl", "c.log", "b.ndjson"]
    assert {e["session"] for e in stored(memory)} == {"top", "deep", "log-suffix"}


# -- crash safety -------------------------------------------------------------------------------

BIG_EVENTS = 300_000


def _big_log(path: Path, count: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for number in range(count):
            handle.write(f'{{"session":"big-{number % 7}","ts":"2026-11-07T09:{number // 60 % 60:02d}:'
                         f'{number % 60:02d}Z","kind":"note","id":"n{number}","text":"event {number}"}}\n')


def _check_raw_layer(memory: Path) -> None:
    """Every visible segment is whole, and the manifest describes exactly what is there."""
    for path in segment_files(memory):
        data = path.read_bytes()
        assert data.endswith(b"\n"), path
        for line in data.decode("utf-8").splitlines():
            json.loads(line)
    layer = RawLayer(MemoryPaths(memory))
    assert layer.verify() == []
    assert {r["segment"] for r in manifest(memory)} <= {p.name for p in segment_files(memory)}
    for record in manifest(memory):  # each dedup index cache says exactly what its segment holds
        lines = (memory / "raw" / "segments" / record["segment"]).read_text(encoding="utf-8").splitlines()
        expected = [(json.loads(line)["session"], json.loads(line)["id"], line_hash(line)) for line in lines]
        assert layer._segment_rows(record["segment"]) == expected
        assert len(lines) == record["events"]


def test_kill_9_during_ingest_leaves_no_partial_line_and_a_rerun_stores_every_event_once(
        memory: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    _big_log(big, BIG_EVENTS)
    child = subprocess.Popen([sys.executable, "-m", "memdream", "ingest", str(big), "-m", str(memory)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cli_env())
    try:
        deadline = time.monotonic() + 120
        while not any(path.stat().st_size > 0 for path in staging_files(memory) if path.exists()):
            assert child.poll() is None, f"ingest ended before it could be killed: {child.stderr.read()!r}"
            assert time.monotonic() < deadline, "no staging segment appeared"
            time.sleep(0.005)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.stderr is not None
        child.stderr.close()
    assert child.returncode == -signal.SIGKILL
    assert staging_files(memory)  # the killed run left its staging file behind...
    _check_raw_layer(memory)  # ...but nothing visible is partial

    done = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(big), "-m", str(memory), "--format", "json"],
                          capture_output=True, text=True, env=cli_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    assert staging_files(memory) == []  # abandoned staging dropped
    assert list((memory / ".memdream" / "ingest" / "keys").glob(".staging-*")) == []
    _check_raw_layer(memory)
    events = stored(memory)
    assert len(events) == BIG_EVENTS
    assert len({(e["session"], e["id"]) for e in events}) == BIG_EVENTS
    assert sum(r["events"] for r in manifest(memory)) == BIG_EVENTS
    assert [r["events"] for r in manifest(memory)] == [50_000] * 6  # ingest.segment_max_events
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""


def _orphan(memory: Path, lines: list[str]) -> str:
    """A complete segment renamed into place whose manifest line was lost (a crash in between)."""
    layer = RawLayer(MemoryPaths(memory))
    writer = SegmentWriter(layer, 1000)
    for line in lines:
        writer.write(line)
    [record] = writer.publish("2026-11-30T11:00:00Z")
    kept = [line for line in layer.manifest_path.read_text(encoding="utf-8").splitlines()
            if json.loads(line)["segment"] != record.segment]
    layer.manifest_path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return record.segment


def test_an_orphan_segment_is_adopted_by_the_next_ingest(run: Any, memory: Path, tmp_path: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    orphan_events = [{"session": "orph", "ts": f"2026-11-08T10:00:0{n}Z", "kind": "note", "id": f"o{n}",
                      "actor": "agent", "text": f"orphan {n}"} for n in range(3)]
    name = _orphan(memory, [canonical_json(e) for e in orphan_events])
    assert name == "000002.jsonl"
    assert [r["segment"] for r in manifest(memory)] == ["000001.jsonl"]
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""  # the manifest as committed

    log = tmp_path / "more.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in orphan_events) + "\n" + event("new", 1, text="new") + "\n",
                   encoding="utf-8")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert report["recovered_segments"] == ["000002.jsonl"]
    assert (report["added"], report["duplicates"]) == (1, 3)  # the adopted events count as stored
    assert [r["segment"] for r in manifest(memory)] == ["000001.jsonl", "000002.jsonl", "000003.jsonl"]
    assert manifest(memory)[1]["events"] == 3
    _check_raw_layer(memory)
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""


def test_an_orphan_is_adopted_and_committed_even_when_nothing_new_arrives(run: Any, memory: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    before = head(memory)
    _orphan(memory, [canonical_json({"session": "o", "ts": "2026-11-08T10:00:00Z", "kind": "note", "id": "o1"})])
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""
    report = report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))
    assert report["recovered_segments"] == ["000002.jsonl"] and report["added"] == 0
    assert git(memory, "rev-parse", "HEAD~1").strip() == before
    assert "Memdream-Ingest: recovered" in git(memory, "log", "-1", "--format=%B")
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_manifest_left_uncommitted_by_a_crash_is_committed_by_the_next_run(run: Any, memory: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    # Killed after the manifest was written but before git commit: the manifest is ahead of HEAD.
    git(memory, "reset", "--soft", "HEAD~1")
    git(memory, "reset", "--quiet", "--", "raw/MANIFEST.jsonl")
    assert git(memory, "status", "--porcelain", "--untracked-files=all").strip() == "?? raw/MANIFEST.jsonl"
    report = report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))
    assert report["added"] == 0 and report["commit"] == head(memory)
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""


def test_abandoned_staging_files_are_removed_and_numbering_goes_on(run: Any, memory: Path) -> None:
    folder = memory / "raw" / "segments"
    folder.mkdir(parents=True)
    (folder / ".staging-99999-000001.jsonl").write_text('{"session":"s","ts":"2026-11-07T09:00:0', encoding="utf-8")
    report = report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))
    assert report["recovered_segments"] == [] and report["added"] == 18
    assert staging_files(memory) == [] and [p.name for p in segment_files(memory)] == ["000001.jsonl"]


# -- the writer lock ----------------------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from pathlib import Path
from memdream.memory.lock import writer_lock
with writer_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_lock(memory: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(memory / ".memdream"), str(seconds)],
                              stdout=subprocess.PIPE, text=True, env=cli_env())
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_ingest_exits_75_with_one_line_while_another_process_holds_the_lock(
        run: Any, memory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", "0.2")
    holder = _hold_lock(memory, 60)
    try:
        before = snapshot(memory)
        started = time.monotonic()
        result = run("ingest", EVENTS, "-m", memory)
        waited = time.monotonic() - started
        assert result.exit_code == 75
        assert result.stderr.startswith("memdream: memory is busy: memdream pid ")
        assert f"pid {holder.pid} holds" in result.stderr and result.stderr.count("\n") == 1
        assert 0.2 <= waited < 10
        assert snapshot(memory) == before
    finally:
        holder.kill()
        holder.wait()
    # A kill frees the lock: no stale lock to clean up.
    assert report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))["added"] == 18


def test_ingest_waits_for_the_lock_to_be_released(run: Any, memory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", "20")
    holder = _hold_lock(memory, 0.5)
    try:
        assert report_of(run("ingest", EVENTS, "-m", memory, "--format", "json"))["added"] == 18
    finally:
        holder.wait()


def test_busy_exit_code_from_a_real_process(memory: Path) -> None:
    holder = _hold_lock(memory, 60)
    try:
        done = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(EVENTS), "-m", str(memory)],
                              capture_output=True, text=True, env=cli_env(MEMDREAM_LOCK_WAIT="0"), timeout=60)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 75 and done.stdout == ""
    assert done.stderr.startswith("memdream: memory is busy") and done.stderr.count("\n") == 1


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_lock_wait_is_a_usage_error(run: Any, memory: Path, monkeypatch: pytest.MonkeyPatch,
                                          value: str) -> None:
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", value)
    result = run("ingest", EVENTS, "-m", memory)
    assert result.exit_code == 2 and "MEMDREAM_LOCK_WAIT" in result.stderr
    assert segment_files(memory) == []


def test_lock_wait_defaults_to_thirty_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    from memdream.memory.lock import lock_wait_seconds

    monkeypatch.delenv("MEMDREAM_LOCK_WAIT", raising=False)
    assert lock_wait_seconds(pipeline.LOCK_WAIT_SECONDS) == pipeline.LOCK_WAIT_SECONDS == 30.0
    monkeypatch.setenv("MEMDREAM_LOCK_WAIT", " 0.25 ")
    assert lock_wait_seconds(pipeline.LOCK_WAIT_SECONDS) == 0.25


# -- a memory cloned without its raw layer ------------------------------------------------------


def test_a_clone_without_raw_segments_ingests_and_continues_numbering(run: Any, memory: Path, tmp_path: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    run("ingest", CLAUDE, "-m", memory)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(memory), str(clone)], check=True)
    assert (clone / "raw" / "MANIFEST.jsonl").exists()
    assert not (clone / "raw" / "segments").exists() and not (clone / ".memdream").exists()

    log = tmp_path / "new.jsonl"
    log.write_text(event("after-clone", 1, text="fresh") + "\n", encoding="utf-8")
    report = report_of(run("ingest", log, "-m", clone, "--format", "json"))
    assert report["added"] == 1 and [s["segment"] for s in report["segments"]] == ["000003.jsonl"]
    assert [r["segment"] for r in manifest(clone)] == ["000001.jsonl", "000002.jsonl", "000003.jsonl"]
    assert [p.name for p in segment_files(clone)] == ["000003.jsonl"]
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""


def test_deleting_segments_and_state_keeps_the_numbering(run: Any, memory: Path, tmp_path: Path) -> None:
    run("ingest", EVENTS, "-m", memory)
    shutil.rmtree(memory / "raw" / "segments")
    shutil.rmtree(memory / ".memdream")
    log = tmp_path / "new.jsonl"
    log.write_text(event("later", 1, text="x") + "\n", encoding="utf-8")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert [s["segment"] for s in report["segments"]] == ["000002.jsonl"]
    assert [r["segment"] for r in manifest(memory)] == ["000001.jsonl", "000002.jsonl"]


# -- raw layer details --------------------------------------------------------------------------


def test_a_session_ending_in_a_newline_does_not_break_the_dedup_index(run: Any, memory: Path, tmp_path: Path) -> None:
    """The schema's `$` admits one trailing newline in a session or id; the keys cache must cope."""
    log = tmp_path / "nl.jsonl"
    log.write_text(json.dumps({"session": "s\n", "ts": "2026-11-07T09:00:00Z", "kind": "note", "id": "a\\b\n"})
                   + "\n", encoding="utf-8")
    assert report_of(run("ingest", log, "-m", memory, "--format", "json"))["added"] == 1
    again = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert (again["added"], again["duplicates"]) == (0, 1)
    keys = RawLayer(MemoryPaths(memory)).keys()
    assert list(keys) == [("s\n", "a\\b\n")]


def test_salience_tags_continue_across_runs(run: Any, memory: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "part1.jsonl", tmp_path / "part2.jsonl"
    first.write_text("\n".join([event("s", 1, "goal", id="g1", goal="a"),
                                event("s", 2, "tool_result", id="r1", tool="aws", ok=False)]) + "\n", encoding="utf-8")
    second.write_text("\n".join([event("s", 3, "tool_result", id="r2", tool="aws", ok=True)]) + "\n", encoding="utf-8")
    run("ingest", first, "-m", memory)
    run("ingest", second, "-m", memory)
    tags = {e["id"]: e["tags"] for e in stored(memory)}
    assert tags["r1"] == ["episode:2", "salience:strong"]
    assert tags["r2"] == ["episode:2", "salience:medium", "workaround"]


def test_segment_writer_rollback_across_a_segment_boundary(memory: Path) -> None:
    layer = RawLayer(MemoryPaths(memory))
    writer = SegmentWriter(layer, max_events=4)
    lines = [canonical_json({"session": "w", "ts": f"2026-11-07T09:00:0{n}Z", "kind": "note", "id": f"n{n}"})
             for n in range(9)]
    for line in lines[:3]:
        writer.write(line)
    mark = writer.mark()
    for line in lines[3:9]:  # fills the first file, starts a second and a third
        writer.write(line)
    assert len(writer.staged) == 3
    writer.rollback(mark)
    writer.write(lines[8])
    [record] = writer.publish("2026-11-30T12:00:00Z")
    assert (record.segment, record.events, record.first_ts, record.last_ts) == (
        "000001.jsonl", 4, "2026-11-07T09:00:00Z", "2026-11-07T09:00:08Z")
    assert segment_files(memory)[0].read_text(encoding="utf-8") == "".join(line + "\n" for line in [*lines[:3], lines[8]])
    assert sorted(layer.keys()) == [("w", "n0"), ("w", "n1"), ("w", "n2"), ("w", "n8")]
    assert layer.verify() == [] and staging_files(memory) == []
    assert list(layer.keys_dir.glob(".staging-*")) == []


def test_segment_writer_rollback_to_the_start_publishes_nothing(memory: Path) -> None:
    layer = RawLayer(MemoryPaths(memory))
    writer = SegmentWriter(layer, max_events=2)
    mark = writer.mark()
    for n in range(5):
        writer.write(canonical_json({"session": "w", "ts": "2026-11-07T09:00:00Z", "kind": "note", "id": f"n{n}"}))
    writer.rollback(mark)
    assert writer.publish("2026-11-30T12:00:00Z") == []
    assert segment_files(memory) == [] and staging_files(memory) == [] and manifest(memory) == []
    assert list(layer.keys_dir.iterdir()) == []


def test_an_orphan_is_indexed_from_its_own_content_not_a_stale_cache(run: Any, memory: Path, tmp_path: Path) -> None:
    name = _orphan(memory, [canonical_json({"session": "o", "ts": "2026-11-08T10:00:00Z", "kind": "note", "id": "o1"})])
    layer = RawLayer(MemoryPaths(memory))
    layer.keys_path(name).write_text("o\tghost\tsha256:00\n", encoding="utf-8")  # left by an older crash
    log = tmp_path / "ghost.jsonl"
    log.write_text(event("o", 1, text="not stored yet", id="ghost") + "\n", encoding="utf-8")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert report["recovered_segments"] == [name] and report["added"] == 1
    assert ("o", "o1") in layer.keys()


KILL_AT = """
import os, signal, sys
from memdream import gitops
point, count = sys.argv[1], int(sys.argv[2])
calls = {"n": 0}
real_replace, real_commit = os.replace, gitops.commit

def replace(*args, **kwargs):
    real_replace(*args, **kwargs)
    if "raw" not in str(args[1]) and "keys" not in str(args[1]):
        return  # e.g. the settings' validity stamp: not part of publishing
    calls["n"] += 1
    if point == "replace" and calls["n"] == count:
        os.kill(os.getpid(), signal.SIGKILL)

def commit(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

os.replace = replace
if point == "commit":
    gitops.commit = commit
from memdream.cli import main
main(sys.argv[3:])
"""


@pytest.mark.parametrize(("point", "count", "orphans"), [
    ("replace", 1, ["000001.jsonl"]),  # segment 1 in place, nothing else
    ("replace", 2, ["000001.jsonl"]),  # segment 1 and its index in place
    ("replace", 3, ["000001.jsonl", "000002.jsonl"]),  # segment 2 in place too
    ("replace", 8, ["000001.jsonl", "000002.jsonl", "000003.jsonl", "000004.jsonl"]),  # all, no manifest
    ("commit", 0, []),  # manifest written, git commit not made
])
def test_kill_9_while_publishing_loses_and_doubles_nothing(memory: Path, tmp_path: Path, point: str, count: int,
                                                           orphans: list[str]) -> None:
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("segment_max_events: 50000",
                                                                 "segment_max_events: 1000"), encoding="utf-8")
    subprocess.run(["git", "-C", str(memory), "commit", "-q", "-am", "small segments"], check=True, env=cli_env(
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t"))
    big = tmp_path / "big.jsonl"
    _big_log(big, 3500)
    killed = subprocess.run([sys.executable, "-c", KILL_AT, point, str(count), "ingest", str(big), "-m", str(memory)],
                            capture_output=True, text=True, env=cli_env(), timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    _check_raw_layer(memory)

    done = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(big), "-m", str(memory), "--format", "json"],
                          capture_output=True, text=True, env=cli_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["recovered_segments"] == orphans
    assert report["added"] == 3500 - sum(r["events"] for r in manifest(memory)
                                         if r["segment"] not in {s["segment"] for s in report["segments"]})
    _check_raw_layer(memory)
    events = stored(memory)
    assert len(events) == 3500 and len({(e["session"], e["id"]) for e in events}) == 3500
    assert staging_files(memory) == [] and list((memory / ".memdream" / "ingest" / "keys").glob(".staging-*")) == []
    assert git(memory, "status", "--porcelain", "--untracked-files=all") == ""


def test_a_value_that_redaction_pushes_over_its_cap_is_cut_not_fatal(run: Any, memory: Path, tmp_path: Path) -> None:
    """A placeholder is longer than a short secret: a valid value near its cap would outgrow it."""
    log = tmp_path / "caps.jsonl"
    log.write_text("\n".join([
        event("s", 1, "note", id="n1", fact={"subject": "a" * 193 + " a@b.co", "attribute": "b",
                                             "value": "x" * 1993 + " a@b.co"}),
        event("s", 2, "message", id="m1", speaker="y" * 249 + " a@b.co", text="hi"),
    ]) + "\n", encoding="utf-8")
    report = report_of(run("ingest", log, "-m", memory, "--format", "json"))
    assert report["added"] == 2 and report["redactions"] == {"email": 3}
    stored_events = {e["id"]: e for e in stored(memory)}
    fact = stored_events["n1"]["fact"]
    assert len(fact["subject"]) == 200 and len(fact["value"]) == 2000
    assert fact["value"] == "x" * 1993 + " [REDAC"  # the placeholder is cut, the secret is gone
    assert len(stored_events["m1"]["speaker"]) == 256
    assert "a@b.co" not in (memory / "raw" / "segments" / "000001.jsonl").read_text(encoding="utf-8")
