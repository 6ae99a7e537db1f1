"""`memdream confirm|reject|correct`: a person's verdict is a feedback event with the user's authority,
and after the next dream it sticks (a rejected value stays rejected when agent notes or tool readings
of it come again; a correction holds against older stale readings; a confirmation verifies).

End to end: Claude Code transcripts (tests/transcripts.py) and memdream-format tool readings through
real ingest, the verdict through the command line, real dreams in a real git repository.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from memdream.memory.raw import RawLayer
from memdream.memory.store import Memory
from tests.transcripts import ClaudeSession

CWD = "/home/dev/shop"
START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
PORT_SAID = "The staging database listens on port 5433."


def _session(folder: Path, name: str, day: int, *turns: tuple[str, str]) -> Path:
    """A Claude Code session in the shop project: ("user"|"agent", text) turns, a test run between."""
    session = ClaudeSession(name, CWD, START + timedelta(days=day))
    session.user("Please wire the refund endpoint to the staging database.")
    for speaker, text in turns:
        if speaker == "user":
            session.user(text)
        else:
            session.assistant(text)
    session.bash("pytest -q", "12 passed in 0.41s")
    return session.write(folder)


def _reading(tmp_path: Path, name: str, at: datetime, value: str) -> Path:
    """A tool reading of the port in memdream's own format (tool results carry their fact there)."""
    event = {"session": name, "ts": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "kind": "tool_result", "id": "r1",
             "tool": "bash", "ok": True, "text": f"PGPORT={value}",
             "fact": {"subject": "staging database", "attribute": "port", "value": value}}
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(event) + "\n", encoding="utf-8")
    return path


def _ingest_and_dream(run: Any, memory: Path, *paths: Path) -> dict[str, Any]:
    for path in paths:
        result = run("ingest", path, "-m", memory)
        assert result.exit_code == 0, result.stderr
    dreamed = run("dream", "-m", memory, "-f", "json")
    assert dreamed.exit_code == 0, dreamed.stderr
    report: dict[str, Any] = json.loads(dreamed.stdout)
    return report


def _cards(memory: Path, folder: str = "cards") -> list[dict[str, Any]]:
    return [yamlio.load_file(path) for path in sorted((memory / folder).rglob("*.yaml"))]


def _port_cards(memory: Path, folder: str = "cards") -> list[dict[str, Any]]:
    return [card for card in _cards(memory, folder) if card.get("attribute") == "port"]


@pytest.fixture
def port_card(memory: Path, tmp_path: Path, run: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A memory whose one fact card, from the user's words in a transcript, says port 5433."""
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-03T03:00:00Z")
    folder = tmp_path / "first"
    _session(folder, "sess-1", 0, ("user", PORT_SAID), ("agent", "Thanks, I will use that port."))
    _ingest_and_dream(run, memory, folder)
    (card,) = _port_cards(memory)
    assert card["value"] == "5433"
    return str(card["id"])


def _verdict(run: Any, memory: Path, *args: str) -> dict[str, Any]:
    result = run(*args, "-m", memory, "-f", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _stored(memory: Path, ref: str) -> dict[str, Any]:
    session, _, event_id = ref.removeprefix("log://").partition("#")
    raw = RawLayer(Memory(memory).paths)
    found = [event for _, event in raw.iter_events([r.segment for r in raw.manifest()])
             if event["session"] == session and event["id"] == event_id]
    assert len(found) == 1
    return found[0]


# -- recording ---------------------------------------------------------------------------------------------

def test_reject_records_a_feedback_event_and_writes_no_card(memory: Path, port_card: str, run: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-04T09:30:00Z")
    before = {path: path.read_bytes() for path in (memory / "cards").rglob("*.yaml")}
    result = run("reject", port_card, "--note", "That was the old port.", "-m", memory)
    assert result.exit_code == 0, result.stderr
    assert "log://memdream-cli/2026-11-04#reject-" in result.stdout
    assert "next `memdream dream` applies it" in result.stdout
    assert {path: path.read_bytes() for path in (memory / "cards").rglob("*.yaml")} == before
    ref = result.stdout.split(" as ", 1)[1].split()[0]
    event = _stored(memory, ref)
    assert {key: event[key] for key in ("kind", "actor", "verdict", "target", "text", "ts")} == {
        "kind": "feedback", "actor": "user", "verdict": "reject", "target": port_card,
        "text": "That was the old port.", "ts": "2026-11-04T09:30:00Z"}
    assert "fact" not in event


def test_correct_records_the_cards_key_with_the_new_value(memory: Path, port_card: str, run: Any) -> None:
    data = _verdict(run, memory, "correct", port_card, "--value", "6432")
    event = _stored(memory, data["ref"])
    assert event["verdict"] == "correct" and event["target"] == port_card
    assert event["fact"] == {"subject": "staging database", "attribute": "port", "value": "6432"}
    assert data["recorded"] is True


@pytest.mark.parametrize(("args", "code", "words"), [
    (("reject", "f-nosuch"), 1, "no card with id 'f-nosuch'"),
    (("confirm", "{card}", "--value", "1"), 2, "--value is for `memdream correct`"),
    (("reject", "{card}", "--value", "1"), 2, "--value is for `memdream correct`"),
    (("correct", "{card}"), 2, "give its right value with --value"),
    (("correct", "{card}", "--value", "5433"), 2, "use `memdream confirm"),
])
def test_verdicts_that_cannot_apply_are_one_line_errors(memory: Path, port_card: str, run: Any,
                                                        args: tuple[str, ...], code: int, words: str) -> None:
    result = run(*(arg.format(card=port_card) for arg in args), "-m", memory)
    assert result.exit_code == code
    assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_installed_command_records_a_verdict(memory: Path, port_card: str) -> None:
    done = subprocess.run([sys.executable, "-m", "memdream", "confirm", port_card, "-m", str(memory)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{port_card} confirmed: recorded as log://memdream-cli/" in done.stdout


# -- the verdict sticks ---------------------------------------------------------------------------------

def test_a_rejected_card_stays_rejected_after_the_next_dream(memory: Path, port_card: str, tmp_path: Path,
                                                             run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    assert run("reject", port_card, "--note", "No, staging moved off 5433.", "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    report = _ingest_and_dream(run, memory)
    assert ("archive", port_card) in {(op["op"], op["card"]) for op in report["operations"]}
    assert _port_cards(memory) == []
    # The next batch carries the same claim again: the agent says it in two new sessions, a tool reads
    # a stale .env file before and after the verdict, and an old transcript of the user's is ingested late.
    folder = tmp_path / "again"
    _session(folder, "sess-2", 5, ("agent", "The staging database listens on port 5433."))
    _session(folder, "sess-3", 6, ("agent", "The staging database listens on port 5433."))
    _session(folder, "sess-0", -1, ("user", PORT_SAID))  # older than the verdict
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-09T03:00:00Z")
    _ingest_and_dream(run, memory, folder, _reading(tmp_path, "env-old", START + timedelta(days=1), "5433"),
                      _reading(tmp_path, "env-new", START + timedelta(days=6), "5433"))
    assert _port_cards(memory) == []
    # ... and the dream after that one too (nothing new: nothing revives it).
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-10T03:00:00Z")
    _ingest_and_dream(run, memory)
    assert _port_cards(memory) == []
    (archived,) = _port_cards(memory, "archive")
    assert archived["status"] == "archived" and archived["id"] == port_card
    assert run("lint", memory).exit_code == 0


def test_a_newer_word_of_the_user_brings_a_rejected_value_back(memory: Path, port_card: str, tmp_path: Path,
                                                               run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    assert run("reject", port_card, "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    _ingest_and_dream(run, memory)
    folder = tmp_path / "later"
    _session(folder, "sess-9", 8, ("user", "Sorry, I was wrong. " + PORT_SAID))
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-12T03:00:00Z")
    _ingest_and_dream(run, memory, folder)
    assert [card["value"] for card in _port_cards(memory)] == ["5433"]


def test_a_correction_holds_against_stale_readings_and_agent_notes(memory: Path, port_card: str, tmp_path: Path,
                                                                   run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    assert run("correct", port_card, "--value", "6432", "--note", "It moved to 6432.", "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    report = _ingest_and_dream(run, memory)
    assert "supersede" in report["counts"]
    (card,) = _port_cards(memory)
    assert card["value"] == "6432" and card["supersedes"] == [port_card] and card["status"] != "conflicting"
    assert any(item["kind"] == "feedback" and item["ref"].startswith("log://memdream-cli/")
               for item in card["evidence"])  # the user's authority
    (old,) = _port_cards(memory, "archive")
    assert old["superseded_by"] == [card["id"]]
    folder = tmp_path / "stale"
    _session(folder, "sess-4", 5, ("agent", "The staging database listens on port 5433."))
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-08T03:00:00Z")
    _ingest_and_dream(run, memory, folder, _reading(tmp_path, "env-old", START + timedelta(days=1), "5433"))
    assert [(card["value"], card["status"] != "conflicting") for card in _port_cards(memory)] == [("6432", True)]
    assert run("lint", memory).exit_code == 0


def test_a_confirmed_card_is_verified_and_no_less_sure(memory: Path, port_card: str, run: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (before,) = _port_cards(memory)
    assert before["status"] == "inferred"  # one statement of the user's
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    assert run("confirm", port_card, "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    _ingest_and_dream(run, memory)
    (after,) = _port_cards(memory)
    assert after["id"] == port_card and after["status"] == "verified"
    assert after["confidence"] >= before["confidence"]


INSTRUCTION = "Never push to main, open a pull request instead."


@pytest.fixture
def instruction_card(memory: Path, tmp_path: Path, run: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-03T03:00:00Z")
    folder = tmp_path / "said"
    _session(folder, "sess-1", 0, ("user", INSTRUCTION), ("agent", "Understood."))
    _ingest_and_dream(run, memory, folder)
    (lesson,) = [card for card in _cards(memory) if card["type"] == "lesson"]
    return lesson


def test_correcting_a_lesson_keeps_it_a_lesson_with_the_new_statement(memory: Path, instruction_card: dict[str, Any],
                                                                      run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    note = "Push to main only through a reviewed pull request; hotfix branches may be pushed directly."
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    result = run("correct", instruction_card["id"], "--note", note, "-m", memory)
    assert result.exit_code == 0, result.stderr
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    _ingest_and_dream(run, memory)
    (lesson,) = [card for card in _cards(memory) if card["attribute"] == instruction_card["attribute"]]
    assert lesson["type"] == "lesson" and lesson["statement"] == note
    assert lesson["scope"] == instruction_card["scope"] and lesson["supersedes"] == [instruction_card["id"]]
    assert (memory / "cards" / "lessons" / f"{lesson['id']}.yaml").exists()
    assert run("lint", memory).exit_code == 0


def test_a_rejected_instruction_stays_rejected_when_an_old_transcript_repeats_it(
        memory: Path, instruction_card: dict[str, Any], tmp_path: Path, run: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-05T09:00:00Z")
    assert run("reject", instruction_card["id"], "-m", memory).exit_code == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-06T03:00:00Z")
    _ingest_and_dream(run, memory)
    folder = tmp_path / "old"
    _session(folder, "sess-0", -1, ("user", INSTRUCTION))  # said before the verdict, ingested after it
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-07T03:00:00Z")
    _ingest_and_dream(run, memory, folder)
    assert [card for card in _cards(memory) if card["type"] == "lesson"] == []
