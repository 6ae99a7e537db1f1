"""The hook spool: `enqueue --from-hook` as a real process, then `ingest --spool` consumes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream.ingest import spool

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
CLAUDE = LOGS / "claude-code" / "session.jsonl"
CLAUDE_SESSION = "7f3c2a91-5d4e-4b8a-9c61-2e8f0d4b7a13"
VENV_SCRIPT = Path(sys.executable).with_name("memdream")


def payload(transcript: Path | str, session: str = CLAUDE_SESSION, event: str = "SessionEnd") -> dict[str, Any]:
    return {"session_id": session, "transcript_path": str(transcript), "cwd": "/home/dana/src/billing-export",
            "hook_event_name": event, "reason": "exit"}


def enqueue(memory: Path, stdin: str | bytes, *command: str) -> subprocess.CompletedProcess[bytes]:
    argv = list(command) or [sys.executable, "-m", "memdream"]
    data = stdin.encode() if isinstance(stdin, str) else stdin
    return subprocess.run([*argv, "enqueue", "--from-hook", "-m", str(memory)], input=data, capture_output=True,
                          env=dict(os.environ), timeout=60)


def spool_lines(memory: Path) -> list[dict[str, Any]]:
    path = memory / ".memdream" / "spool.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def leftovers(memory: Path) -> list[str]:
    return sorted(path.name for path in (memory / ".memdream").glob("spool.jsonl*"))


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / f"{CLAUDE_SESSION}.jsonl"
    path.parent.mkdir()
    shutil.copy(CLAUDE, path)
    return path


def report_of(result: Any) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# -- enqueue ------------------------------------------------------------------------------------


def test_enqueue_from_hook_appends_one_line_and_prints_nothing(memory: Path, transcript: Path) -> None:
    done = enqueue(memory, json.dumps(payload(transcript)))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    [line] = spool_lines(memory)
    assert line["payload"] == payload(transcript)
    assert line["received_at"].endswith("Z")
    assert (memory / ".memdream" / "spool.jsonl").stat().st_mode & 0o777 == 0o600
    # A second hook appends; nothing is read or ingested at hook time.
    assert enqueue(memory, json.dumps(payload(transcript, event="PreCompact"))).returncode == 0
    assert [line["payload"]["hook_event_name"] for line in spool_lines(memory)] == ["SessionEnd", "PreCompact"]
    assert not (memory / "raw" / "segments").exists()


def test_the_installed_script_takes_the_same_fast_path(memory: Path, transcript: Path) -> None:
    if not VENV_SCRIPT.exists():
        pytest.skip("memdream script not installed next to this interpreter")
    done = enqueue(memory, json.dumps(payload(transcript)), str(VENV_SCRIPT))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert len(spool_lines(memory)) == 1


@pytest.mark.parametrize("stdin", [
    b"", b"not json", b"[1, 2]", b'{"session_id": "x"}', b'{"transcript_path": 7}', b"\xff\xfe",
])
def test_a_bad_payload_exits_1_with_one_line_and_spools_nothing(memory: Path, stdin: bytes) -> None:
    done = enqueue(memory, stdin)
    assert done.returncode == 1 and done.stdout == b""
    message = done.stderr.decode()
    assert message.startswith("memdream: enqueue: ") and message.count("\n") == 1 and "Traceback" not in message
    assert spool_lines(memory) == []


def test_enqueue_into_a_folder_that_is_no_memory_fails_with_one_line(tmp_path: Path, transcript: Path) -> None:
    done = enqueue(tmp_path / "nowhere", json.dumps(payload(transcript)))
    assert done.returncode == 1 and done.stderr.decode().count("\n") == 1
    assert b"is not a folder" in done.stderr and not (tmp_path / "nowhere").exists()


def test_enqueue_through_the_cli_framework_also_works(run: Any, memory: Path, transcript: Path) -> None:
    result = run("enqueue", "--from-hook", "-m", memory, input=json.dumps(payload(transcript)))
    assert result.exit_code == 0 and result.stdout == ""
    assert len(spool_lines(memory)) == 1
    assert run("enqueue", "-m", memory).exit_code == 2


# -- ingest --spool -----------------------------------------------------------------------------


def test_ingest_spool_reads_the_transcript_and_consumes_the_spool(run: Any, memory: Path, transcript: Path) -> None:
    for _ in range(2):  # the same transcript twice (PreCompact then SessionEnd): read once
        assert enqueue(memory, json.dumps(payload(transcript))).returncode == 0
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["added"] > 0 and report["missing_transcripts"] == [] and report["failed_transcripts"] == []
    assert [(s["source"], s["format"]) for s in report["sources"]] == [(str(transcript), "claude-code")]
    events = [json.loads(line) for line in (memory / "raw" / "segments" / "000001.jsonl").read_text().splitlines()]
    assert len(events) == report["added"] and {e["session"] for e in events} == {CLAUDE_SESSION}
    assert leftovers(memory) == []  # consumed

    again = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert (again["added"], again["sources"], again["segments"], again["commit"]) == (0, [], [], None)
    assert "0 event(s) added (nothing new)" in run("ingest", "--spool", "-m", memory).stdout


def test_a_new_hook_for_a_grown_transcript_adds_only_the_new_events(run: Any, memory: Path, transcript: Path) -> None:
    enqueue(memory, json.dumps(payload(transcript)))
    first = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))["added"]
    with open(transcript, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"type": "user", "sessionId": CLAUDE_SESSION, "uuid": "late-1",
                                 "timestamp": "2026-11-07T10:00:00Z",
                                 "message": {"role": "user", "content": "thanks, that fixed it"}}) + "\n")
    enqueue(memory, json.dumps(payload(transcript)))
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert (report["added"], report["duplicates"]) == (1, first)


def test_a_transcript_that_no_longer_exists_is_reported(run: Any, memory: Path, transcript: Path,
                                                        tmp_path: Path) -> None:
    gone = tmp_path / "claude" / "deleted-session.jsonl"
    enqueue(memory, json.dumps(payload(gone, session="deleted-session")))
    enqueue(memory, json.dumps(payload(transcript)))
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["missing_transcripts"] == [str(gone)]
    assert report["added"] > 0  # the other transcript is ingested all the same
    assert leftovers(memory) == []
    text = _text_report(run, memory, gone)
    assert f"spooled transcript no longer exists: {gone}" in text


def _text_report(run: Any, memory: Path, gone: Path) -> str:
    enqueue(memory, json.dumps(payload(gone, session="deleted-session")))
    result = run("ingest", "--spool", "-m", memory)
    assert result.exit_code == 0
    return str(result.stdout)


def test_an_unreadable_transcript_is_skipped_and_does_not_block_the_spool(run: Any, memory: Path,
                                                                          transcript: Path, tmp_path: Path) -> None:
    cut = tmp_path / "claude" / "cut.jsonl"
    cut.write_text(CLAUDE.read_text(encoding="utf-8")[:-40], encoding="utf-8")  # last line cut (PreCompact)
    empty = tmp_path / "claude" / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    for path in (cut, empty, transcript):
        enqueue(memory, json.dumps(payload(path)))
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["failed_transcripts"] == [f"{empty}: empty input, nothing to ingest"]
    # A cut last line is a transcript still being written: what comes before it is kept, the line waits.
    assert report["partial_lines"] == [f"{cut}:40"]
    assert [(s["source"], s["added"] > 0) for s in report["sources"]] == [(str(cut), True), (str(transcript), True)]
    assert leftovers(memory) == []
    assert report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))["failed_transcripts"] == []


def test_a_bad_explicit_input_still_fails_the_run_and_keeps_the_spool(run: Any, memory: Path, transcript: Path,
                                                                      tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session": "s", "ts": "2026-11-07T09:00:00Z", "kind": "note"}\n{not json\n', encoding="utf-8")
    enqueue(memory, json.dumps(payload(transcript)))
    result = run("ingest", bad, "--spool", "-m", memory)
    assert result.exit_code == 1 and result.stderr.startswith(f"memdream: {bad}:2: not valid JSON")
    assert leftovers(memory) != []  # claimed, not consumed: the next run takes it
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["added"] > 0 and leftovers(memory) == []


def test_a_spool_line_cut_by_a_crash_is_ignored(run: Any, memory: Path, transcript: Path) -> None:
    enqueue(memory, json.dumps(payload(transcript)))
    with open(memory / ".memdream" / "spool.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"received_at": "2026-11-07T10:00:00Z", "payload": {"transcript_pa')
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["added"] > 0 and report["missing_transcripts"] == []


def test_claim_takes_leftovers_of_an_earlier_run_first(tmp_path: Path) -> None:
    state = tmp_path / "state"
    spool.enqueue(state, {"transcript_path": "/new"})
    old = state / "spool.jsonl.12345.processing"
    old.write_text(json.dumps({"payload": {"transcript_path": "/old"}}) + "\n", encoding="utf-8")
    os.utime(old, (1, 1))
    claimed = spool.claim(state)
    assert [path.name for path in claimed][0] == old.name and len(claimed) == 2
    assert not (state / "spool.jsonl").exists()
    assert spool.transcripts(claimed) == ([], ["/old", "/new"])
    spool.release(claimed)
    assert list(state.iterdir()) == []


def test_an_unreadable_spooled_transcript_is_skipped(run: Any, memory: Path, transcript: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from memdream.ingest import sources

    locked = tmp_path / "claude" / "other-user.jsonl"
    shutil.copy(CLAUDE, locked)
    real_open = sources.Source.open

    def open_as_another_user(self: sources.Source) -> Any:  # root reads mode-000 files: simulate EACCES
        if self.path == locked:
            raise PermissionError(13, "Permission denied", str(locked))
        return real_open(self)

    monkeypatch.setattr(sources.Source, "open", open_as_another_user)
    for path in (locked, transcript):
        enqueue(memory, json.dumps(payload(path)))
    report = report_of(run("ingest", "--spool", "-m", memory, "--format", "json"))
    assert report["failed_transcripts"] == [f"{locked}: cannot read (Permission denied)"]
    assert [s["source"] for s in report["sources"]] == [str(transcript)] and report["added"] > 0
    assert leftovers(memory) == []


def test_format_option_applies_to_named_inputs_not_to_spooled_transcripts(run: Any, memory: Path,
                                                                          transcript: Path) -> None:
    enqueue(memory, json.dumps(payload(transcript)))
    events = LOGS / "memdream" / "events.jsonl"
    report = report_of(run("ingest", events, "--log-format", "memdream", "--spool", "-m", memory, "--format", "json"))
    assert [(Path(s["source"]).name, s["format"]) for s in report["sources"]] == [
        ("events.jsonl", "memdream"), (transcript.name, "claude-code")]
    assert report["failed_transcripts"] == []
