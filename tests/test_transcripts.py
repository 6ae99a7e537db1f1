"""The transcript builder (tests/transcripts.py) writes what memdream's adapters accept, and its billing-api
scenario holds what its constants name. Ingest runs as a real process, as `make demo` runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests import transcripts as t

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample-memory" / "logs" / "billing-api"


@dataclass(frozen=True)
class Ingested:
    files: list[Path]
    memory: Path
    report: dict[str, Any]
    events: list[dict[str, Any]]


def _bare_env(home: Path) -> dict[str, str]:
    """What cron gives memdream: no git identity or config, no colour, a fixed clock."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(home / "no-gitconfig"), "NO_COLOR": "1", "MEMDREAM_NOW": "2026-11-30T12:00:00Z"}


def _memdream(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], env=env, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr + done.stdout
    return done


def _raw_events(memory: Path) -> list[dict[str, Any]]:
    events = [json.loads(line) for segment in sorted((memory / "raw" / "segments").glob("*.jsonl"))
              for line in segment.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sorted(events, key=lambda event: event["ts"])  # stable: keeps each session's order


@pytest.fixture(scope="module", params=[False, True], ids=["full", "small"])
def ingested(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    """The scenario written, then `memdream init` and `memdream ingest` on it (once per module and size)."""
    base = tmp_path_factory.mktemp("billing-small" if request.param else "billing")
    env = _bare_env(base)
    files = t.billing_api_project(base / "logs", small=request.param)
    _memdream(env, "init", base / "mem")
    done = _memdream(env, "ingest", base / "logs", "-m", base / "mem", "--format", "json")
    return Ingested(files, base / "mem", json.loads(done.stdout), _raw_events(base / "mem"))


def _by_session(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        grouped[event["session"]].append(event)
    return grouped


def _command(event: dict[str, Any]) -> str:
    """The shell command of a tool call: Claude Code's string, or the script of Codex's ``bash -lc`` argv."""
    command = event.get("args", {}).get("command", "")
    return str(command[2] if isinstance(command, list) else command)


def _shell_steps(events: list[dict[str, Any]]) -> list[tuple[str, bool | None]]:
    """(command, ok) for each shell call of a session, in order; ok is None when nothing came back."""
    results = {event.get("call_id"): event.get("ok") for event in events if event["kind"] == "tool_result"}
    return [(_command(event), results.get(event.get("call_id")))
            for event in events if event["kind"] == "tool_call" and event.get("tool") in ("Bash", "shell")]


def _follows(steps: list[tuple[str, bool | None]], prefixes: tuple[str, ...]) -> bool:
    """Whether successful steps start with ``prefixes`` in this order, other steps allowed in between."""
    wanted = iter(prefixes)
    current = next(wanted)
    for command, ok in steps:
        if ok and command.startswith(current):
            current = next(wanted, "")
            if not current:
                return True
    return False


# --- ingest ---------------------------------------------------------------------------------------------


def test_ingest_adds_events_from_every_file_and_skips_no_line(ingested: Ingested) -> None:
    sources = {Path(item["source"]).resolve(): item for item in ingested.report["sources"]}
    assert set(sources) == {path.resolve() for path in ingested.files}
    for path in ingested.files:
        item = sources[path.resolve()]
        assert item["format"] == ("codex" if "codex" in path.parts else "claude-code"), path
        assert item["added"] > 5 and item["skipped_lines"] == [], item
    assert ingested.report["skipped_lines"] == 0 and ingested.report["failed_transcripts"] == []


def test_no_secret_reaches_the_memory(ingested: Ingested) -> None:
    assert {"aws-key", "github-token"} <= set(ingested.report["redactions"])
    files = [path for path in ingested.memory.rglob("*") if path.is_file()]
    assert any(path.parts[-3:-1] == ("raw", "segments") for path in files)
    for path in files:
        data = path.read_bytes()
        for secret in t.SECRETS:
            assert secret.encode() not in data, f"{secret} in {path}"


def test_every_session_is_read_with_its_context(ingested: Ingested) -> None:
    sessions = _by_session(ingested.events)
    assert set(sessions) == {*t.CLAUDE_SESSIONS, *t.CODEX_SESSIONS}
    # Only the first event of a session carries where it ran.
    cwds = {session: next(e["meta"]["cwd"] for e in events if "meta" in e) for session, events in sessions.items()}
    assert [s for s, cwd in cwds.items() if cwd == t.WORKTREE_CWD] == [t.CLAUDE_SESSIONS[2]]
    assert all(cwd in (t.PROJECT_CWD, t.WORKTREE_CWD) for cwd in cwds.values())


def test_recurring_error_is_fixed_the_same_way_in_several_sessions(ingested: Ingested) -> None:
    fixed_in = []
    for session, events in _by_session(ingested.events).items():
        steps = _shell_steps(events)
        failures = [n for n, (command, ok) in enumerate(steps) if command == t.FAILING_COMMAND and ok is False]
        if failures:
            assert any(command == t.FIX_COMMAND and ok for command, ok in steps[failures[0] + 1:]), session
            fixed_in.append(session)
    assert len(fixed_in) >= 2 and set(fixed_in) & set(t.CODEX_SESSIONS) and set(fixed_in) & set(t.CLAUDE_SESSIONS)
    failed = [e for e in ingested.events if e["kind"] == "tool_result" and t.RECURRING_ERROR in e.get("text", "")]
    assert all(event.get("ok") is False for event in failed)


def test_one_off_error_happens_in_one_session(ingested: Ingested) -> None:
    sessions = {e["session"] for e in ingested.events
                if e["kind"] == "tool_result" and e.get("ok") is False and t.ONE_OFF_ERROR in e.get("text", "")}
    assert len(sessions) == 1
    steps = _shell_steps(_by_session(ingested.events)[sessions.pop()])
    assert [(c, ok) for c, ok in steps if c in (t.ONE_OFF_COMMAND, t.ONE_OFF_FIX)] == [
        (t.ONE_OFF_COMMAND, False), (t.ONE_OFF_FIX, True), (t.ONE_OFF_COMMAND, True)]


def test_workflow_recurs_in_sessions_that_end_with_a_commit(ingested: Ingested) -> None:
    following = [session for session, events in _by_session(ingested.events).items()
                 if _follows(_shell_steps(events), t.WORKFLOW)]
    assert len(following) >= 3
    messages = {command.split('"')[1] for events in _by_session(ingested.events).values()
                for command, ok in _shell_steps(events) if ok and command.startswith("git commit -m")}
    assert messages == set(t.COMMIT_MESSAGES)


def test_rejections_carry_the_users_words_and_their_target(ingested: Ingested) -> None:
    calls = {e["id"]: _command(e) for e in ingested.events if e["kind"] == "tool_call"}
    rejected = [e for e in ingested.events if e["kind"] == "feedback" and e["verdict"] == "reject" and e.get("target")]
    claude = [e for e in rejected if e["session"] in t.CLAUDE_SESSIONS]
    codex = [e for e in rejected if e["session"] in t.CODEX_SESSIONS]
    assert [(calls[e["target"]], e.get("text")) for e in claude] == [(t.REJECTED_COMMAND, t.REJECTION_WORDS)]
    assert [calls[e["target"]] for e in codex] == [t.CODEX_REJECTED_COMMAND]
    codex_session = _by_session(ingested.events)[codex[0]["session"]]
    after = codex_session[codex_session.index(codex[0]) + 1:]
    assert [e["text"] for e in after if e["kind"] == "message" and e["actor"] == "user"][0] == t.CODEX_REJECTION_WORDS


def test_interruptions_are_feedback(ingested: Ingested) -> None:
    interrupted = {e["session"] for e in ingested.events if e["kind"] == "feedback" and not e.get("target")}
    assert interrupted == {t.CLAUDE_SESSIONS[3], t.CODEX_SESSIONS[1]}


def test_what_the_user_said_is_read_as_user_messages(ingested: Ingested) -> None:
    said = " ".join(e["text"] for e in ingested.events if e["kind"] == "message" and e["actor"] == "user")
    for sentence in (t.USER_INSTRUCTION, t.USER_PREFERENCE, t.OLD_PORT_STATEMENT, t.NEW_PORT_STATEMENT,
                     t.BUCKET_STATEMENT, t.QUESTION, t.NEGATION, t.NEWEST_GOAL):
        assert said.count(sentence) == 1, sentence
    old = next(e for e in ingested.events if t.OLD_PORT_STATEMENT in e.get("text", ""))
    new = next(e for e in ingested.events if t.NEW_PORT_STATEMENT in e.get("text", ""))
    assert old["ts"] < new["ts"]


def test_harness_text_is_not_conversation(ingested: Ingested) -> None:
    texts = [e.get("text", "") for e in ingested.events if e["kind"] == "message"]
    assert not any(text.startswith(("This session is being continued", "Caveat:", "<environment_context>"))
                   for text in texts)
    # The compaction summary repeats a pytest episode in words: it is no failure of its own.
    failures = [e for e in ingested.events if e["kind"] == "tool_result" and t.RECURRING_ERROR in e.get("text", "")]
    assert len(failures) == 3 and all(e.get("ok") is False for e in failures)
    assert not any(t.RECURRING_ERROR in e.get("text", "") for e in ingested.events if e["kind"] == "message")


def test_injected_instruction_is_untrusted(ingested: Ingested) -> None:
    carrying = [e for e in ingested.events if t.INJECTED in e.get("text", "")]
    assert len(carrying) == 1 and carrying[0]["kind"] == "tool_result"
    assert "untrusted-instruction" in carrying[0]["tags"]


# --- the files themselves -------------------------------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _claude_files(files: list[Path]) -> Iterator[Path]:
    return (path for path in files if "claude-code" in path.parts)


def test_sessions_are_two_weeks_of_november_in_order(tmp_path: Path) -> None:
    files = t.billing_api_project(tmp_path)
    assert len(list(_claude_files(files))) >= 5 and len(files) - len(list(_claude_files(files))) >= 2
    spans = []
    for path in files:
        stamps = [line["timestamp"] for line in _lines(path) if "timestamp" in line]
        assert stamps == sorted(stamps) and all(s.endswith("Z") and len(s) == 24 for s in stamps), path
        spans.append((stamps[0], stamps[-1]))
    assert all(earlier[1] < later[0] for earlier, later in zip(spans, spans[1:]))
    first, last = (datetime.fromisoformat(stamp.replace("Z", "+00:00")) for stamp in (spans[0][0], spans[-1][1]))
    assert first.month == last.month == 11 and 12 <= (last - first).days <= 16


def test_claude_lines_chain_and_carry_the_session_fields(tmp_path: Path) -> None:
    for path in _claude_files(t.billing_api_project(tmp_path)):
        parent = None
        for line in _lines(path):
            if line.get("subtype") == "compact_boundary":
                assert line["parentUuid"] is None and line["logicalParentUuid"] == parent
            else:
                assert line["parentUuid"] == parent
            assert line["sessionId"] == path.stem and line["userType"] == "external" and line["isSidechain"] is False
            if line["type"] == "assistant":
                assert line["message"]["id"].startswith("msg_01") and "usage" in line["message"]
            parent = line["uuid"]


def test_codex_rollouts_name_the_repository(tmp_path: Path) -> None:
    rollouts = [path for path in t.billing_api_project(tmp_path) if "codex" in path.parts]
    for path in rollouts:
        meta = _lines(path)[0]
        assert meta["type"] == "session_meta" and meta["payload"]["git"]["repository_url"] == t.REPOSITORY_URL
        assert path.name.startswith("rollout-2026-11-") and path.name.endswith(f"-{meta['payload']['id']}.jsonl")
    plans = [line for path in rollouts for line in _lines(path)
             if line["type"] == "response_item" and line["payload"].get("name") == "update_plan"]
    assert plans and any(line["type"] == "compacted" for path in rollouts for line in _lines(path))


def test_newest_session_ends_with_the_current_todo_list(tmp_path: Path) -> None:
    newest = t.billing_api_project(tmp_path)[-1]
    todos = [block["input"]["todos"] for line in _lines(newest) if line["type"] == "assistant"
             for block in line["message"]["content"] if block.get("name") == "TodoWrite"]
    assert len(todos) >= 2 and _lines(newest)[0]["message"]["content"] == t.NEWEST_GOAL
    assert [(todo["content"], todo["status"]) for todo in todos[-1]] == list(t.NEWEST_TODOS)
    assert {"in_progress", "pending"} <= {status for _, status in t.NEWEST_TODOS}


def test_volatile_numbers_vary_between_sessions(tmp_path: Path) -> None:
    summaries = {found for path in t.billing_api_project(tmp_path)
                 for found in re.findall(r"\d+ passed in [0-9.]+s", path.read_text(encoding="utf-8"))}
    assert len(summaries) >= 6


def test_output_is_deterministic(tmp_path: Path) -> None:
    first = t.billing_api_project(tmp_path / "a")
    second = t.billing_api_project(tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in first] == [p.relative_to(tmp_path / "b") for p in second]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second))


def test_sample_logs_match_the_builder(tmp_path: Path) -> None:
    """sample-memory/logs/billing-api is what scripts/make_sample_logs.py writes: rerun it after changing the
    builder or the scenario."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_sample_logs
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    made = make_sample_logs.make(tmp_path)
    kept = sorted(path for path in SAMPLE.rglob("*.jsonl"))
    assert sorted(path.relative_to(tmp_path) for path in made) == [path.relative_to(SAMPLE) for path in kept]
    assert all((tmp_path / path.relative_to(SAMPLE)).read_bytes() == path.read_bytes() for path in kept)
