"""Opting out: `ingest.exclude` globs (the file's path, the folder a session ran in) and the
`#memdream:off` marker, on real Claude Code and Codex transcripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.ingest.exclude import KEEP_OUT_MARKER, Exclude
from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer
from tests.transcripts import ClaudeSession, CodexSession, claude_project_dir

START = datetime(2026, 11, 20, 9, 0, tzinfo=timezone.utc)
SECRET_CWD = "/home/dev/secret-project"
OPEN_CWD = "/home/dev/billing-api"


@pytest.mark.parametrize(("glob", "path", "excluded"), [
    ("**/secret-project/**", "/home/dev/secret-project/notes/a.jsonl", True),
    ("**/secret-project/**", "/home/dev/secret-project", True),  # the folder itself: a session's cwd
    ("**/secret-project/**", "/home/dev/not-secret-project/a.jsonl", False),
    ("secret-*", "/home/dev/secret-stuff/a.jsonl", True),  # no "/": any one name of the path
    ("secret-*", "/home/dev/secrets/a.jsonl", False),
    ("*.private.jsonl", "/logs/x/today.private.jsonl", True),
    ("/logs/*.jsonl", "/logs/x/today.jsonl", False),  # "*" stays within one folder
    ("/logs/**/*.jsonl", "/logs/x/y/today.jsonl", True),
    ("~/scratch/**", "HOME/scratch/a/b.jsonl", True),
    ("notes/*.md", "/repo/notes/AGENTS.md", True),  # relative: found at any depth
    ("notes/*.md", "/repo/notes/deep/AGENTS.md", False),
])
def test_globs(glob: str, path: str, excluded: bool) -> None:
    path = path.replace("HOME", os.environ["HOME"])
    assert (Exclude.of([glob]).match(path) == glob) is excluded


def test_no_globs_exclude_nothing() -> None:
    assert not Exclude.of([]) and Exclude.of([]).match("/anything") is None


def memdream(*args: str | os.PathLike[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdream", *map(os.fspath, args)], capture_output=True, text=True,
                          input=stdin, env={**os.environ, "COLUMNS": "200"})


def set_exclude(memory: Path, globs: list[str]) -> None:
    config = memory / "memdream.yaml"
    text = config.read_text(encoding="utf-8")
    assert text.count("\n  exclude: []\n") == 1  # memdream init writes the documented default
    config.write_text(text.replace("\n  exclude: []\n", f"\n  exclude: {json.dumps(globs)}\n"), encoding="utf-8")


def ingest_json(memory: Path, *paths: Path) -> dict[str, Any]:
    done = memdream("ingest", *paths, "-m", memory, "-f", "json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def stored_sessions(memory: Path) -> set[str]:
    return {event["session"] for _, event in RawLayer(MemoryPaths(memory)).iter_events()}


def claude(session_id: str, cwd: str, last_words: str = "Thanks, that's all.") -> ClaudeSession:
    s = ClaudeSession(session_id, cwd, START)
    s.user("Add a health check endpoint at /healthz.")
    s.assistant("I'll add the route and a test.")
    s.bash("poetry run pytest -q tests/test_health.py", "1 passed in 0.41s")
    s.user(last_words)
    return s


def codex(session_id: str, cwd: str, last_words: str = "Looks good.") -> CodexSession:
    s = CodexSession(session_id, cwd, START)
    s.user("Rename the invoice CSV export to invoices.csv.")
    s.shell("rg -l export_csv", "billing/export.py")
    s.assistant("Renamed in billing/export.py.")
    s.user(last_words)
    s.task_complete("Renamed.")
    return s


CLAUDE_OPEN, CLAUDE_SECRET = "0f0e0d0c-1111-4222-8333-944445555666", "1a1b1c1d-2222-4333-8444-a55556666777"
CODEX_OPEN, CODEX_SECRET = "019a0000-0000-7000-8000-00000000000a", "019a0000-0000-7000-8000-00000000000b"


def test_a_glob_keeps_out_files_by_path_and_sessions_by_the_folder_they_ran_in(memory: Path, tmp_path: Path) -> None:
    set_exclude(memory, ["**/secret-project/**"])
    logs = tmp_path / "logs"
    # Claude Code names its folders after the cwd with dashes: only the session's cwd tells.
    claude(CLAUDE_OPEN, OPEN_CWD).write(logs / "claude" / claude_project_dir(OPEN_CWD))
    claude(CLAUDE_SECRET, SECRET_CWD).write(logs / "claude" / claude_project_dir(SECRET_CWD))
    codex(CODEX_OPEN, OPEN_CWD).write(logs / "codex" / "2026" / "11" / "20")
    codex(CODEX_SECRET, f"{SECRET_CWD}/api").write(logs / "codex" / "2026" / "11" / "20")
    kept_file = logs / "secret-project" / "notes.jsonl"  # matched by its own path
    kept_file.parent.mkdir(parents=True)
    kept_file.write_text(json.dumps({"session": "n", "ts": "2026-11-20T09:00:00Z", "kind": "note",
                                     "text": "the vault is at 10.0.0.7"}) + "\n", encoding="utf-8")

    report = ingest_json(memory, logs)
    assert report["excluded"] == 3
    reasons = {Path(item["source"]).name: item["excluded"] for item in report["sources"] if item["excluded"]}
    assert reasons["notes.jsonl"] == ["matches ingest.exclude '**/secret-project/**'"]
    assert reasons[f"{CLAUDE_SECRET}.jsonl"] == [
        f"session {CLAUDE_SECRET}: ran in {SECRET_CWD}, which matches ingest.exclude '**/secret-project/**'"]
    assert any(name.endswith(f"{CODEX_SECRET}.jsonl") for name in reasons)
    assert stored_sessions(memory) == {CLAUDE_OPEN, CODEX_OPEN}

    text = memdream("ingest", logs, "-m", memory)
    assert text.returncode == 0, text.stderr
    assert f"{kept_file}: excluded (matches ingest.exclude '**/secret-project/**')" in text.stdout
    assert f"excluded: {logs / 'claude' / claude_project_dir(SECRET_CWD) / (CLAUDE_SECRET + '.jsonl')}: session " \
           f"{CLAUDE_SECRET}: ran in {SECRET_CWD}" in text.stdout


def test_a_session_where_the_user_wrote_the_marker_is_not_ingested_at_all(memory: Path, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    claude(CLAUDE_OPEN, OPEN_CWD).write(logs / "claude")
    # The marker comes last, after events that would have been stored already.
    claude(CLAUDE_SECRET, OPEN_CWD, f"This one stays private {KEEP_OUT_MARKER}").write(logs / "claude")
    codex(CODEX_OPEN, OPEN_CWD).write(logs / "codex")
    codex(CODEX_SECRET, OPEN_CWD, f"{KEEP_OUT_MARKER.upper()} please").write(logs / "codex")

    report = ingest_json(memory, logs)
    assert report["excluded"] == 2
    assert {reason for item in report["sources"] for reason in item["excluded"]} == {
        f"session {CLAUDE_SECRET}: the user wrote {KEEP_OUT_MARKER}",
        f"session {CODEX_SECRET}: the user wrote {KEEP_OUT_MARKER}"}
    assert {item["added"] for item in report["sources"] if item["excluded"]} == {0}
    assert stored_sessions(memory) == {CLAUDE_OPEN, CODEX_OPEN}
    segments = "".join(path.read_text(encoding="utf-8") for path in (memory / "raw" / "segments").glob("*.jsonl"))
    assert "stays private" not in segments and CLAUDE_SECRET not in segments

    again = ingest_json(memory, logs)  # the same answer every time, nothing added
    assert (again["added"], again["excluded"]) == (0, 2)


@pytest.mark.parametrize("workers", [0, 2])  # read in this process, or prepared by worker processes
def test_one_marked_session_of_a_file_of_several_leaves_the_others_in(memory: Path, tmp_path: Path,
                                                                      workers: int) -> None:
    config = memory / "memdream.yaml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("\n  workers: auto\n", f"\n  workers: {workers}\n"), encoding="utf-8")
    events = [
        {"session": "a", "ts": "2026-11-20T09:00:00Z", "kind": "message", "text": "The build runs on port 8080."},
        {"session": "b", "ts": "2026-11-20T09:00:01Z", "kind": "message", "text": "my salary is 1234"},
        {"session": "a", "ts": "2026-11-20T09:00:02Z", "kind": "message", "actor": "agent", "text": "Noted."},
        {"session": "b", "ts": "2026-11-20T09:00:03Z", "kind": "message", "text": f"{KEEP_OUT_MARKER} forget this"},
    ]
    log = tmp_path / "mixed.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    report = ingest_json(memory, log)
    assert (report["added"], report["excluded"]) == (2, 1)
    assert stored_sessions(memory) == {"a"}
    # An agent quoting the marker does not keep a session out: only the user's own words do.
    quoted = [{"session": "c", "ts": "2026-11-20T10:00:00Z", "kind": "message", "actor": "agent",
               "text": f"Write {KEEP_OUT_MARKER} to keep a session out."}]
    log.write_text(json.dumps(quoted[0]) + "\n", encoding="utf-8")
    assert ingest_json(memory, log)["excluded"] == 0


def test_stdin_with_a_marked_session_is_refused_whole(memory: Path) -> None:
    line = json.dumps({"session": "s", "ts": "2026-11-20T09:00:00Z", "kind": "message", "text": KEEP_OUT_MARKER})
    done = memdream("ingest", "-", "-m", memory, "--log-format", "memdream", stdin=line + "\n")
    assert done.returncode == 1
    assert done.stderr.strip() == (f"memdream: <stdin>: a session in it is marked {KEEP_OUT_MARKER} and stdin "
                                   "cannot be read twice: pass the log as a file")
    assert stored_sessions(memory) == set()


def test_instruction_files_are_excluded_by_path_too(memory: Path, tmp_path: Path) -> None:
    set_exclude(memory, ["secret-project"])
    kept = tmp_path / "secret-project" / "CLAUDE.md"
    kept.parent.mkdir()
    kept.write_text("- Always use the staging vault.\n", encoding="utf-8")
    report = ingest_json(memory, kept)
    assert (report["added"], report["excluded"], report["sources"][0]["format"]) == (0, 1, "excluded")


def test_what_memdream_records_itself_is_never_excluded_by_path(memory: Path) -> None:
    from memdream.ingest.record import record
    from memdream.memory.store import Memory

    set_exclude(memory, [f"{memory}/**"])  # a glob that happens to cover the memory folder itself
    note = {"session": "memdream-cli/2026-11-30", "id": "note-1", "ts": "2026-11-30T12:00:00Z", "kind": "note",
            "actor": "user", "text": "The staging database listens on port 6432."}
    recorded = record(Memory(memory), [note])
    assert recorded.added == 1 and stored_sessions(memory) == {"memdream-cli/2026-11-30"}
