"""No silent data loss on ingest: sessions derived from a source are unique per source and stable while
it grows, an id taken by other content is never a duplicate, chat messages without times take the
file's modification time (issue 11, item 5). Real memories, real files, `python -m memdream` processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tests.ingest.test_pipeline import stored
from tests.transcripts import ClaudeSession, CodexSession, chat_file

START = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
MTIME = 1794128400.0  # 2026-11-08T09:00:00Z

EXPORT_CHAT = [
    {"role": "system", "content": "You are the ops assistant."},
    {"role": "user", "content": "Why is the nightly export failing?"},
    {"role": "assistant", "content": "The export bucket moved to eu-central-1 in October."},
]
MORE = [
    {"role": "user", "content": "Update the export job's region then."},
    {"role": "assistant", "content": "Done: EXPORT_REGION=eu-central-1, the job ran green."},
]
# What the adapter wrote for EXPORT_CHAT in chat.json before sessions were derived from the source:
# the stem as the session, 1970 plus the message index as the time (produced by that code, verbatim).
OLD_SCHEME = [
    {"session": "chat", "ts": "1970-01-01T00:00:01Z", "kind": "goal", "actor": "user",
     "goal": "Why is the nightly export failing?", "id": "m1:goal", "meta": {"ts_synthetic": True}},
    {"session": "chat", "ts": "1970-01-01T00:00:01Z", "kind": "message", "actor": "user",
     "text": "Why is the nightly export failing?", "id": "m1", "meta": {"ts_synthetic": True}},
    {"session": "chat", "ts": "1970-01-01T00:00:02Z", "kind": "message", "actor": "agent",
     "text": "The export bucket moved to eu-central-1 in October.", "id": "m2", "meta": {"ts_synthetic": True}},
]


def ingest(memory: Path, *paths: Path | str, fmt: str | None = None, as_json: bool = True) -> Any:
    args = [sys.executable, "-m", "memdream", "ingest", *map(str, paths), "-m", str(memory)]
    args += ["--format", fmt] if fmt else []
    args += ["--format", "json"] if as_json else []
    done = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if as_json else done.stdout


def keys(events: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(event["session"], event["id"]) for event in events}


def texts(events: list[dict[str, Any]], session: str) -> list[str]:
    return [event["text"] for event in events if event["session"] == session and event["kind"] == "message"]


def test_same_named_chat_files_in_two_folders_are_two_sessions(memory: Path, tmp_path: Path) -> None:
    first = chat_file(tmp_path / "a" / "chat.json", EXPORT_CHAT)
    second = chat_file(tmp_path / "b" / "chat.json", [{"role": "user", "content": "Rotate the staging DB password."},
                                                      {"role": "assistant", "content": "Rotated; vault updated."}])
    assert ingest(memory, first)["added"] == 3
    report = ingest(memory, second)
    assert (report["added"], report["duplicates"]) == (3, 0)
    sessions = sorted({event["session"] for event in stored(memory)})
    assert len(sessions) == 2 and all(session.startswith("chat-") for session in sessions)
    # Even the same conversation in two places is two sources: nothing of the second is lost.
    twin = chat_file(tmp_path / "c" / "chat.json", EXPORT_CHAT)
    assert ingest(memory, twin)["added"] == 3
    # And each file, ingested again, is recognised.
    again = ingest(memory, tmp_path / "a", tmp_path / "b", tmp_path / "c")
    assert (again["added"], again["duplicates"]) == (0, 9)


def test_a_growing_chat_file_adds_only_its_new_messages_and_keeps_its_ids(memory: Path, tmp_path: Path) -> None:
    path = chat_file(tmp_path / "chat.json", EXPORT_CHAT)
    os.utime(path, (MTIME, MTIME))
    ingest(memory, path)
    before = stored(memory)
    chat_file(path, EXPORT_CHAT + MORE)  # the file grows: a later mtime, so later synthetic times
    report = ingest(memory, path)
    assert (report["added"], report["duplicates"], report["id_collisions"]) == (2, 3, 0)
    after = stored(memory)
    assert after[:3] == before  # append-only: the old events, their ids and times, untouched
    (session,) = {event["session"] for event in after}
    assert [event["id"] for event in after] == ["m1:goal", "m1", "m2", "m3", "m4"]
    assert texts(after, session)[-1] == MORE[-1]["content"]


def test_a_raw_layer_of_the_old_scheme_keeps_its_refs_and_a_reingest_adds_only_the_new(memory: Path,
                                                                                     tmp_path: Path) -> None:
    old = tmp_path / "old-scheme.jsonl"
    old.write_text("".join(json.dumps(event) + "\n" for event in OLD_SCHEME), encoding="utf-8")
    ingest(memory, old, fmt="memdream")
    before = stored(memory)
    path = chat_file(tmp_path / "a" / "chat.json", EXPORT_CHAT + MORE)
    report = ingest(memory, path)
    assert (report["added"], report["duplicates"], report["id_collisions"]) == (2, 3, 0)
    after = stored(memory)
    assert after[:3] == before
    assert keys(after) == {("chat", event_id) for event_id in ("m1:goal", "m1", "m2", "m3", "m4")}
    # Another chat.json, other content: the stem is taken, so it gets a session of its own.
    other = chat_file(tmp_path / "b" / "chat.json", [{"role": "user", "content": "Rotate the staging DB password."}])
    assert ingest(memory, other)["added"] == 2
    assert len({event["session"] for event in stored(memory)}) == 2


def test_a_claude_transcript_ingested_at_precompact_and_at_session_end_gets_no_new_ids_for_old_lines(
        memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("5b0e7c1a-2f4d-4c3e-9a51-0d6f2b8e4a17", "/home/dev/billing-api", START)
    session.user("The nightly export fails, find out why.")
    session.bash("aws s3api get-bucket-location --bucket exports", '{"LocationConstraint": "eu-central-1"}')
    session.assistant("The bucket is in eu-central-1 now; the job still points at eu-west-1.")
    path = session.write(tmp_path / "projects" / "-home-dev-billing-api")
    first = ingest(memory, path)  # PreCompact
    before = stored(memory)
    session.compact("The export job pointed at the old region.")
    session.bash("sed -i s/eu-west-1/eu-central-1/ export.env", "")
    session.assistant("Fixed the region.")
    session.write(tmp_path / "projects" / "-home-dev-billing-api")
    second = ingest(memory, path)  # SessionEnd
    after = stored(memory)
    assert second["duplicates"] == first["added"] and second["id_collisions"] == 0
    assert after[:len(before)] == before
    assert {event["session"] for event in after} == {session.session_id}  # its own id, as before
    new_ids = [event["id"] for event in after[len(before):]]
    assert len(new_ids) == second["added"] and not keys(before) & keys(after[len(before):])
    assert all(event_id not in {e["id"] for e in before} for event_id in new_ids)


def test_a_codex_rollout_that_grows_keeps_its_session_and_ids(memory: Path, tmp_path: Path) -> None:
    rollout = CodexSession("0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "/home/dev/billing-api", START)
    rollout.user("Run the tests.")
    rollout.shell("poetry run pytest -q", "12 passed in 0.52s")
    folder = tmp_path / "sessions"
    path = rollout.write(folder)
    first = ingest(memory, path)
    rollout.assistant("All 12 tests pass.")
    rollout.task_complete("All 12 tests pass.")
    rollout.write(folder)
    second = ingest(memory, path)
    assert second["duplicates"] == first["added"] and second["added"] > 0 and second["id_collisions"] == 0
    assert {event["session"] for event in stored(memory)} == {rollout.session_id}


def test_an_id_taken_by_other_content_is_stored_under_another_id_and_reported(memory: Path, tmp_path: Path) -> None:
    def note(text: str) -> str:
        return json.dumps({"session": "ops", "ts": "2026-11-07T09:12:09Z", "kind": "note", "id": "n1", "text": text})

    (tmp_path / "first.jsonl").write_text(note("export bucket is eu-west-1") + "\n", encoding="utf-8")
    (tmp_path / "second.jsonl").write_text(note("export bucket is eu-central-1") + "\n", encoding="utf-8")
    ingest(memory, tmp_path / "first.jsonl")
    report = ingest(memory, tmp_path / "second.jsonl")
    assert (report["added"], report["duplicates"], report["id_collisions"]) == (1, 0, 1)
    events = stored(memory)
    assert [event["text"] for event in events] == ["export bucket is eu-west-1", "export bucket is eu-central-1"]
    assert events[0]["id"] == "n1" and events[1]["id"].startswith("n1~")
    # The collided event has a stable id: a re-ingest finds it, and the text report says what happened.
    again = ingest(memory, tmp_path / "second.jsonl")
    assert (again["added"], again["duplicates"], again["id_collisions"]) == (0, 1, 0)
    (tmp_path / "third.jsonl").write_text(note("export bucket is us-east-1") + "\n", encoding="utf-8")
    text = ingest(memory, tmp_path / "third.jsonl", as_json=False)
    assert "1 event(s) whose id was taken by other content: stored under <id>~<digest>" in text


def test_an_id_collision_inside_one_run_is_stored_too(memory: Path, tmp_path: Path) -> None:
    for name, value in (("one", "eu-west-1"), ("two", "eu-central-1")):
        (tmp_path / f"{name}.jsonl").write_text(json.dumps(
            {"session": "ops", "ts": "2026-11-07T09:12:09Z", "kind": "note", "id": "n1", "text": value}) + "\n")
    report = ingest(memory, tmp_path / "one.jsonl", tmp_path / "two.jsonl")
    assert (report["added"], report["id_collisions"]) == (2, 1)


def test_chat_messages_without_times_take_the_file_mtime_in_order_and_the_report_says_so(
        memory: Path, tmp_path: Path) -> None:
    path = chat_file(tmp_path / "chat.json", EXPORT_CHAT + MORE)
    os.utime(path, (MTIME, MTIME))
    text = ingest(memory, path, as_json=False)
    assert "5 message(s) had no time of their own: dated by the file's modification time" in text
    events = stored(memory)
    times = [event["ts"] for event in events]
    assert times == sorted(times) and times[-1] == "2026-11-08T09:00:00.000Z"
    assert times[0] == "2026-11-08T08:59:59.997Z"  # message 1 of 5: three later messages, 1 ms each
    assert all(event["meta"]["ts_synthetic"] is True for event in events)
    timed = chat_file(tmp_path / "timed" / "chat.json",
                      [{"role": "user", "content": "hello", "timestamp": "2026-11-08T10:00:00Z"}])
    assert ingest(memory, timed)["synthetic_timestamps"] == 0


def test_a_folder_with_one_empty_transcript_still_ingests_the_others(memory: Path, tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    chat_file(folder / "a" / "chat.json", EXPORT_CHAT)
    chat_file(folder / "b" / "chat.json", MORE)
    (folder / "c").mkdir()
    (folder / "c" / "chat.json").write_text("", encoding="utf-8")
    report = ingest(memory, folder)
    assert report["added"] == 6 and report["empty_files"] == [str(folder / "c" / "chat.json")]


def test_stdin_chat_gets_a_session_from_its_first_message(memory: Path) -> None:
    data = json.dumps(EXPORT_CHAT)
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "memdream", "ingest", "-", "-m", str(memory), "--format", "json"],
                              input=data, capture_output=True, text=True, env=dict(os.environ))
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["duplicates"] == 3
    (session,) = {event["session"] for event in stored(memory)}
    assert session.startswith("stdin-")


def test_an_id_collision_in_a_file_prepared_by_worker_processes_is_stored_too(memory: Path, tmp_path: Path) -> None:
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  workers: auto\n", "  workers: 2\n"),
                      encoding="utf-8")

    def notes(*texts: str) -> str:
        return "".join(json.dumps({"session": "ops", "ts": "2026-11-07T09:12:09Z", "kind": "note", "id": f"n{n}",
                                   "text": text}) + "\n" for n, text in enumerate(texts, 1))

    (tmp_path / "first.jsonl").write_text(notes("export bucket is eu-west-1"), encoding="utf-8")
    (tmp_path / "second.jsonl").write_text(notes("export bucket is eu-central-1", "job rerun at 09:30"),
                                           encoding="utf-8")
    ingest(memory, tmp_path / "first.jsonl")
    report = ingest(memory, tmp_path / "second.jsonl")
    assert (report["added"], report["duplicates"], report["id_collisions"]) == (2, 0, 1)
    assert [event["text"] for event in stored(memory)] == [
        "export bucket is eu-west-1", "export bucket is eu-central-1", "job rerun at 09:30"]
    again = ingest(memory, tmp_path / "second.jsonl")
    assert (again["added"], again["duplicates"], again["id_collisions"]) == (0, 2, 0)
