"""`memdream dream --if-needed` on real memories: which trigger holds, and a dream (a commit) only then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from memdream.clock import format_timestamp, parse_timestamp
from tests.gitutil import git
from tests.transcripts import ClaudeSession, billing_api_project, claude_project_dir

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def stamp(moment: datetime) -> str:
    return format_timestamp(moment)


def events(session: str, start: datetime, count: int, goal: str = "restore the nightly export") -> list[dict[str, Any]]:
    """``count`` events of one agent session, a minute apart, ending at ``start + count - 1`` minutes."""
    found: list[dict[str, Any]] = [{"session": session, "ts": stamp(start), "kind": "goal", "goal": goal}]
    for number in range(1, count):
        found.append({"session": session, "ts": stamp(start + timedelta(minutes=number)), "kind": "note",
                      "id": f"n{number}", "text": f"checked the export step {number}"})
    return found


def ingest(run: Any, memory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: list[dict[str, Any]],
           at: datetime) -> None:
    """Ingest ``batch`` with the clock at ``at`` (the manifest record's created_at)."""
    monkeypatch.setenv("MEMDREAM_NOW", stamp(at))
    path = tmp_path / f"log-{len(list(tmp_path.glob('log-*')))}.jsonl"
    path.write_text("".join(json.dumps(event) + "\n" for event in batch), encoding="utf-8")
    result = run("ingest", path, "-m", memory)
    assert result.exit_code == 0, result.stderr


def set_triggers(memory: Path, **values: Any) -> None:
    """Settings are tracked (dream refuses uncommitted ones): write and commit them as a person would."""
    config = yamlio.load_file(memory / "memdream.yaml") or {}
    config.setdefault("dream", {})["triggers"] = values
    (memory / "memdream.yaml").write_text(yamlio.dumps(config), encoding="utf-8")
    git(memory, "commit", "-qm", "triggers", "memdream.yaml")


def if_needed(run: Any, memory: Path, monkeypatch: pytest.MonkeyPatch, at: datetime) -> dict[str, Any]:
    monkeypatch.setenv("MEMDREAM_NOW", stamp(at))
    result = run("dream", "--if-needed", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def log(memory: Path) -> list[str]:
    return git(memory, "log", "--format=%H %s").splitlines()


def status(memory: Path) -> str:
    return git(memory, "status", "--porcelain", "--untracked-files=all", "--", ".", ":!raw/MANIFEST.jsonl")


# -- no trigger: nothing happens -----------------------------------------------------------------

def test_nothing_pending_commits_nothing_and_says_why(memory: Path) -> None:
    before, tracked = log(memory), status(memory)
    env = {**os.environ, "MEMDREAM_NOW": stamp(T0)}
    done = subprocess.run([sys.executable, "-m", "memdream", "dream", "--if-needed", "-m", str(memory)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no dream: nothing pending")
    assert "pending    no" in done.stdout
    as_json = subprocess.run([sys.executable, "-m", "memdream", "dream", "--if-needed", "-m", str(memory), "-f", "json"],
                             capture_output=True, text=True, env=env, timeout=120)
    data = json.loads(as_json.stdout)
    assert data["dreamed"] is False and data["fired"] == []
    assert data["triggers"]["pending"] == {"holds": False, "events": 0, "segments": 0, "checkpoint": 0, "waiting": 0,
                                           "reason": "nothing pending (no raw event after segment 000000)"}
    assert "dream" not in data
    assert log(memory) == before and status(memory) == tracked
    assert not (memory / ".memdream" / "dream" / "state.json").exists()  # no dream ran, not even an empty one


def test_pending_below_threshold_and_recent_dream_does_not_dream(run: Any, memory: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(hours=1), 5), T0)
    assert run("dream", "-m", memory).exit_code == 0  # the last dream: at T0
    ingest(run, memory, tmp_path, monkeypatch, events("s-2", T0 + timedelta(minutes=10), 8), T0 + timedelta(hours=1))
    before = log(memory)
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=3))
    assert data["dreamed"] is False
    triggers = data["triggers"]
    assert triggers["pending"]["holds"] and triggers["pending"]["events"] == 8
    assert triggers["threshold"]["holds"] is False
    assert triggers["threshold"]["events"] == 8 and triggers["threshold"]["min_pending_events"] == 200
    assert triggers["threshold"]["conflicts"] == 0  # counted: it could have changed the outcome
    assert triggers["idle"]["holds"] is True
    assert triggers["schedule"] == {"holds": False, "hours": 3.0, "max_hours_between": 24, "last_dream": stamp(T0),
                                    "reason": "last dream 3 h ago < 24 h"}
    assert data["reason"].startswith("no dream: neither threshold nor schedule holds (8 pending event(s) < 200")
    assert log(memory) == before


def test_pending_over_threshold_and_idle_dreams(run: Any, memory: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    set_triggers(memory, min_pending_events=10, idle_minutes=30)
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(hours=1), 3), T0)
    assert run("dream", "-m", memory).exit_code == 0
    ingest(run, memory, tmp_path, monkeypatch, events("s-2", T0 + timedelta(minutes=5), 12), T0 + timedelta(minutes=20))
    before = log(memory)
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=1))
    assert data["dreamed"] is True and data["fired"] == ["threshold"]
    assert data["reason"].startswith("dream needed: threshold (12 pending event(s) >= 10")
    assert data["triggers"]["threshold"]["conflicts"] is None  # not counted: the events sufficed
    assert data["dream"]["events"] == 12 and data["dream"]["consumed_segments"] == [2, 2]
    after = log(memory)
    assert len(after) == len(before) + 1 and after[1:] == before
    assert "Memdream-Consumed: segments 000002..000002" in git(memory, "log", "-1", "--format=%B")
    again = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=1, minutes=1))
    assert again["dreamed"] is False and again["triggers"]["pending"]["events"] == 0


def test_an_agent_writing_now_is_not_idle_until_idle_minutes_pass(run: Any, memory: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    set_triggers(memory, min_pending_events=5, idle_minutes=30)
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(minutes=9), 10), T0)  # last event: T0
    before = log(memory)
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(minutes=1))
    assert data["dreamed"] is False
    idle = data["triggers"]["idle"]
    assert idle["holds"] is False and idle["minutes"] == 1.0 and idle["idle_minutes"] == 30
    assert idle["last_activity"] == stamp(T0) and idle["source"] == "newest event of raw segment 000001.jsonl"
    assert data["reason"] == ("no dream yet: threshold and schedule hold, but not idle: last agent activity 1 min ago "
                              "< 30 min: newest event of raw segment 000001.jsonl")
    assert log(memory) == before
    later = if_needed(run, memory, monkeypatch, T0 + timedelta(minutes=30))
    assert later["dreamed"] is True and later["fired"] == ["threshold", "schedule"]
    assert len(log(memory)) == len(before) + 1


def test_last_dream_older_than_max_hours_dreams_below_the_threshold(run: Any, memory: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    set_triggers(memory, min_pending_events=100, max_hours_between=6)
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(hours=1), 3), T0)
    assert run("dream", "-m", memory).exit_code == 0
    ingest(run, memory, tmp_path, monkeypatch, events("s-2", T0 + timedelta(hours=1), 4), T0 + timedelta(hours=2))
    early = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=5, minutes=59))
    assert early["dreamed"] is False and early["triggers"]["schedule"]["reason"] == "last dream 5.98 h ago < 6 h"
    before = log(memory)
    due = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=6))
    assert due["dreamed"] is True and due["fired"] == ["schedule"]
    assert due["triggers"]["schedule"]["reason"] == "last dream 6 h ago >= 6 h"
    assert len(log(memory)) == len(before) + 1


def test_a_dream_that_changed_nothing_still_counts_as_the_last_dream(run: Any, memory: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # No commit carries its time; the local state does (dream.state's last_run).
    monkeypatch.setenv("MEMDREAM_NOW", stamp(T0))
    assert run("dream", "-m", memory).exit_code == 0
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0, 3), T0 + timedelta(hours=1))
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=2))
    assert data["triggers"]["schedule"]["last_dream"] == stamp(T0) and data["dreamed"] is False


def test_conflicting_cards_over_their_threshold_trigger_a_dream(run: Any, memory: Path, tmp_path: Path, write_card: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    set_triggers(memory, min_pending_events=100, min_conflicts=2, max_hours_between=None)
    for number, value in enumerate(("eu-west-1", "eu-central-1"), 1):
        write_card(id=f"f-00000{number}", value=value, status="conflicting", confidence=0.4,
                   statement=f"The export bucket lives in {value}.")
    git(memory, "add", "cards")
    git(memory, "commit", "-qm", "two conflicting cards")
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(hours=2), 4), T0)
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=1))
    assert data["fired"] == ["threshold"] and data["dreamed"] is True
    threshold = data["triggers"]["threshold"]
    assert threshold["conflicts"] == 2 and threshold["conflicts_from"] == "cards"  # INDEX.md predates them
    assert threshold["reason"] == "4 pending event(s) < 100, 2 conflicting card(s) >= 2"
    assert (memory / "INDEX.md").read_text(encoding="utf-8").count(" (conflicting) ") == 2  # the dream kept them

    # Now INDEX.md is newer than every card: it answers, without loading a card.
    ingest(run, memory, tmp_path, monkeypatch, events("s-2", T0 - timedelta(hours=1), 2), T0 + timedelta(hours=1))
    again = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=2))
    assert again["dreamed"] is True
    assert (again["triggers"]["threshold"]["conflicts"], again["triggers"]["threshold"]["conflicts_from"]) == (
        2, "INDEX.md")
    # A card removed by hand after the dream: INDEX.md may be stale, so the cards are counted.
    time.sleep(0.05)  # past the file system's timestamp tick
    git(memory, "rm", "-q", "cards/facts/f-000002.yaml")
    git(memory, "commit", "-qm", "settled by hand")
    ingest(run, memory, tmp_path, monkeypatch, events("s-3", T0 - timedelta(hours=1), 2), T0 + timedelta(hours=2))
    settled = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=3))
    assert (settled["triggers"]["threshold"]["conflicts"], settled["triggers"]["threshold"]["conflicts_from"]) == (
        1, "cards")
    assert settled["dreamed"] is False


def test_with_no_threshold_and_no_schedule_anything_pending_dreams_when_idle(
        run: Any, memory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    set_triggers(memory, min_pending_events=None, min_conflicts=None, max_hours_between=None, idle_minutes=None)
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0, 2), T0)
    data = if_needed(run, memory, monkeypatch, T0)
    assert data["dreamed"] is True and data["fired"] == ["pending"]
    assert data["triggers"]["idle"]["reason"] == "idle_minutes off: idleness not required"


def test_an_interrupted_dream_is_recovered_whatever_the_triggers_say(run: Any, memory: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0, 3), T0)
    journal = memory / ".memdream" / "dream" / "journal.json"
    journal.parent.mkdir(parents=True, exist_ok=True)
    journal.write_text(json.dumps({"run": "2026-11-30T11-00-00Z-dead"}), encoding="utf-8")
    data = if_needed(run, memory, monkeypatch, T0)  # not idle: the events are from just now
    assert data["triggers"]["idle"]["holds"] is False
    assert data["fired"] == ["recovery"] and data["dreamed"] is True and data["dream"]["recovered"] is True
    assert data["reason"].startswith("dream needed: recovery (an interrupted dream left its journal")
    assert not journal.exists()


def test_episodes_a_budgeted_dream_left_waiting_are_resumed_below_the_threshold(
        run: Any, memory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memdream.dream.budget import DreamBudget
    from memdream.dream.pipeline import dream
    from memdream.memory.store import Memory

    batch = [*events("s-1", T0 - timedelta(hours=3), 4), *events("s-2", T0 - timedelta(hours=2), 4, "rotate the keys"),
             *events("s-3", T0 - timedelta(hours=1), 4, "move the bucket")]  # the plan changes: a commit
    ingest(run, memory, tmp_path, monkeypatch, batch, T0)
    report = dream(Memory(memory), budget=DreamBudget(max_events=4))  # one session's episode, the rest wait
    assert report.deferred
    data = if_needed(run, memory, monkeypatch, T0 + timedelta(hours=1))  # last dream 1 h ago, 0 new events
    pending = data["triggers"]["pending"]
    assert pending["events"] == 0 and pending["waiting"] == len(report.deferred) and pending["holds"] is True
    assert data["fired"] == ["waiting"] and data["dreamed"] is True
    assert data["dream"]["events"] == 8
    assert if_needed(run, memory, monkeypatch, T0 + timedelta(hours=1))["triggers"]["pending"]["holds"] is False


def test_future_dated_events_count_from_their_ingest_not_their_date(run: Any, memory: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # An agent whose clock runs two days ahead must not keep the memory "busy" for two days.
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 + timedelta(days=2), 3), T0)
    busy = if_needed(run, memory, monkeypatch, T0 + timedelta(minutes=5))
    assert busy["triggers"]["idle"]["last_activity"] == stamp(T0) and busy["dreamed"] is False
    idle = if_needed(run, memory, monkeypatch, T0 + timedelta(minutes=15))
    assert idle["triggers"]["idle"]["holds"] is True and idle["dreamed"] is True


def test_old_transcripts_ingested_now_are_no_agent_at_work(run: Any, memory: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    files = billing_api_project(tmp_path / "logs", small=True)  # two weeks of sessions, long finished
    monkeypatch.setenv("MEMDREAM_NOW", stamp(T0))
    assert run("ingest", tmp_path / "logs", "-m", memory).exit_code == 0
    data = if_needed(run, memory, monkeypatch, T0)
    newest = max(parse_timestamp(json.loads(line)["timestamp"]) for path in files
                 for line in path.read_text(encoding="utf-8").splitlines() if '"timestamp"' in line)
    assert data["triggers"]["idle"]["holds"] is True
    assert parse_timestamp(data["triggers"]["idle"]["last_activity"]) <= newest < T0
    assert data["dreamed"] is True and data["dream"]["commit"]


def test_a_claude_session_that_just_ended_keeps_it_from_dreaming(run: Any, memory: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    session = ClaudeSession("9a1c5e2f-3b4d-4e6f-8a7b-1c2d3e4f5a6b", "/home/dana/src/billing-api",
                            T0 - timedelta(minutes=20))
    session.user("Run the test suite and fix what fails.")
    session.bash("poetry run pytest -q", "42 passed in 3.10s")
    session.assistant("All 42 tests pass.")
    path = session.write(tmp_path / "claude" / claude_project_dir("/home/dana/src/billing-api"))
    ended = max(parse_timestamp(line["timestamp"]) for line in session.lines)
    monkeypatch.setenv("MEMDREAM_NOW", stamp(ended + timedelta(minutes=1)))
    assert run("ingest", path, "-m", memory).exit_code == 0
    data = if_needed(run, memory, monkeypatch, ended + timedelta(minutes=5))
    assert data["dreamed"] is False and data["triggers"]["idle"]["holds"] is False
    assert parse_timestamp(data["triggers"]["idle"]["last_activity"]) == ended.replace(microsecond=0)
    assert if_needed(run, memory, monkeypatch, ended + timedelta(minutes=16))["dreamed"] is True


def test_a_hook_still_in_the_spool_is_activity(run: Any, memory: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(hours=3), 3), T0 - timedelta(hours=2))
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("", encoding="utf-8")
    payload = {"session_id": "s-9", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    assert run("enqueue", "--from-hook", "-m", memory, input=json.dumps(payload)).exit_code == 0
    queued = json.loads((memory / ".memdream" / "spool.jsonl").read_text(encoding="utf-8"))["received_at"]
    data = if_needed(run, memory, monkeypatch, parse_timestamp(queued) + timedelta(minutes=2))
    idle = data["triggers"]["idle"]
    assert idle["source"] == "a hook queued in the spool, not yet ingested" and idle["last_activity"] == queued
    assert idle["holds"] is False and data["dreamed"] is False


def test_text_output_names_each_trigger_with_values(run: Any, memory: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ingest(run, memory, tmp_path, monkeypatch, events("s-1", T0 - timedelta(minutes=4), 5), T0)
    monkeypatch.setenv("MEMDREAM_NOW", stamp(T0 + timedelta(minutes=10)))
    result = run("dream", "--if-needed", "-m", memory)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "no dream yet: schedule holds, but not idle: last agent activity 10 min ago < 15 min: newest event of raw "
        "segment 000001.jsonl",
        "  pending    yes  5 event(s) pending in 1 segment(s) after segment 000000",
        "  threshold  no   5 pending event(s) < 200, 0 conflicting card(s) < 3",
        "  idle       no   last agent activity 10 min ago < 15 min: newest event of raw segment 000001.jsonl",
        "  schedule   yes  no dream yet",
    ]
