"""Cards stay small (the newest evidence inline, the rest in the audit files), and the user's
correction is not silently undone by a later stale reading (the precedence in docs/memory-format.md)."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memdream import yamlio
from memdream.memory.card import INLINE_EVIDENCE
from memdream.memory.evidence_log import EvidenceLog
from tests.transcripts import ClaudeSession

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
CWD = "/home/dev/shop"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _write(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def _reading(session: str, at: datetime, value: str, number: int = 0) -> dict[str, Any]:
    return {"session": session, "ts": _stamp(at), "kind": "tool_result", "id": f"r{number}", "tool": "aws",
            "ok": True, "text": f"LocationConstraint: {value}",
            "fact": {"subject": "export-bucket", "attribute": "region", "value": value}}


def _mention(session: str, at: datetime, value: str, number: int) -> dict[str, Any]:
    """Mostly the agent's notes, a tool reading every fifth session (a key a tool reads in most
    sessions is not admitted: the agent can look it up)."""
    if number % 5 == 0:
        return _reading(session, at, value, number)
    return {"session": session, "ts": _stamp(at), "kind": "note", "id": f"r{number}",
            "text": f"Exports go to the bucket in {value}.",
            "fact": {"subject": "export-bucket", "attribute": "region", "value": value}}


def _active(root: Path) -> list[dict[str, Any]]:
    return [yamlio.load_file(path) for path in sorted((root / "cards").rglob("*.yaml"))]


def _card_files(root: Path, subject: str) -> list[Path]:
    return [path for path in sorted((root / "cards").rglob("*.yaml"))
            if yamlio.load_file(path)["subject"] == subject]


def test_a_fact_read_many_times_keeps_three_pieces_inline_and_all_in_the_audit(memory: Path, tmp_path: Path,
                                                                             run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-20T03:00:00Z")
    refs = []
    for batch in range(3):  # three dreams: the card grows across runs, as under cron
        events = []
        for index in range(10):
            number = batch * 10 + index
            events.append(_mention(f"s-{number:02d}", START + timedelta(hours=number), "eu-central-1", number))
            refs.append(f"log://s-{number:02d}#r{number}")
        assert run("ingest", _write(tmp_path / f"b{batch}.jsonl", events), "-m", memory).exit_code == 0
        assert run("dream", "-m", memory).exit_code == 0
    (path,) = _card_files(memory, "export-bucket")
    card = yamlio.load_file(path)
    assert len(card["evidence"]) == INLINE_EVIDENCE and card["evidence_count"] == 30
    assert [item["ref"] for item in card["evidence"]] == refs[-INLINE_EVIDENCE:]  # the newest
    assert card["status"] == "verified"
    assert path.stat().st_size < 900  # it was ~3.4 KB with 25 pieces inline
    held = EvidenceLog.load(memory / "audit").of(_as_card(card))
    assert sorted(item.ref for item in held) == sorted(refs)
    assert all(item.hash and item.hash.startswith("sha256:") for item in held)
    assert {item.kind for item in held} == {"observation", "note"}
    assert run("lint", memory).exit_code == 0


def test_the_dream_that_writes_evidence_lines_leaves_the_evidence_cache_warm(memory: Path, tmp_path: Path,
                                                                             run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-20T03:00:00Z")
    for batch in range(3):  # the third dream reads the log (held evidence) and writes evidence lines
        events = [_mention(f"s-{batch}{n}", START + timedelta(hours=10 * batch + n), "eu-central-1", 10 * batch + n)
                  for n in range(10)]
        assert run("ingest", _write(tmp_path / f"b{batch}.jsonl", events), "-m", memory).exit_code == 0
        assert run("dream", "-m", memory).exit_code == 0
    (path,) = _card_files(memory, "export-bucket")
    card = _as_card(yamlio.load_file(path))
    whole = EvidenceLog.load(memory / "audit").of(card)
    newest = max((memory / "audit").glob("*.jsonl"), key=lambda audit: audit.stat().st_mtime_ns)
    info = newest.stat()
    newest.write_bytes(b" " * info.st_size)  # same stat: only a cache that holds its lines still knows them
    os.utime(newest, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert EvidenceLog.load(memory / "audit", memory / ".memdream" / "cache").of(card) == whole


def _as_card(data: dict[str, Any]) -> Any:
    from memdream.memory.card import Card

    return Card.from_dict(data)


def test_a_clone_without_local_state_reads_the_held_evidence_from_the_audit_files(memory: Path, tmp_path: Path,
                                                                                 run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-20T03:00:00Z")
    first = [_mention(f"s-{n:02d}", START + timedelta(hours=n), "eu-central-1", n) for n in range(8)]
    assert run("ingest", _write(tmp_path / "a.jsonl", first), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(memory), str(clone)], check=True)
    assert not (clone / ".memdream").exists()
    more = [_mention("s-20", START + timedelta(days=3), "eu-central-1", 21)]
    assert run("ingest", _write(tmp_path / "b.jsonl", more), "-m", clone).exit_code == 0
    report = json.loads(run("dream", "-m", clone, "-f", "json").stdout)
    assert report["warnings"] == []
    (path,) = _card_files(clone, "export-bucket")
    card = yamlio.load_file(path)
    assert card["evidence_count"] == 9
    held = EvidenceLog.load(clone / "audit").of(_as_card(card))
    assert len(held) == 9 and "log://s-20#r21" in {item.ref for item in held}
    # Re-dreaming changes nothing and does not log the evidence twice.
    audit_lines = sum(1 for path in (clone / "audit").glob("*.jsonl") for _ in path.open())
    assert json.loads(run("dream", "-m", clone, "-f", "json").stdout)["changes"] == []
    assert sum(1 for path in (clone / "audit").glob("*.jsonl") for _ in path.open()) == audit_lines


def test_the_users_statement_repeated_in_transcripts_stays_one_small_card(memory: Path, tmp_path: Path,
                                                                          run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-20T03:00:00Z")
    folder = tmp_path / "projects"
    for number in range(7):
        session = ClaudeSession(f"sess-{number}", CWD, START + timedelta(days=number))
        session.user("Please add the refund endpoint to the billing service.")
        session.assistant("Sure, looking at the service first.")
        session.user("The staging database host is db-staging-2.acme.internal.")
        session.bash("pytest -q", "12 passed in 0.41s")
        session.write(folder)
    assert run("ingest", folder, "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    found = [card for card in _active(memory) if card.get("value") == "db-staging-2.acme.internal"]
    assert len(found) == 1
    assert len(found[0]["evidence"]) == INLINE_EVIDENCE and found[0]["evidence_count"] == 7
    assert run("lint", memory).exit_code == 0


def _correction_then_stale_reading() -> list[dict[str, Any]]:
    """The sample logs' story: the agent notes the old host, the user corrects it, and a later
    session reads a stale config file that still has the old host."""
    fact = {"subject": "staging-db", "attribute": "host"}
    return [
        {"session": "s-1", "ts": "2026-11-09T10:00:30Z", "kind": "note", "id": "n1",
         "text": "Staging DB host is db-staging-1.acme.internal.", "fact": {**fact, "value": "db-staging-1.acme.internal"}},
        {"session": "s-1", "ts": "2026-11-09T10:01:15Z", "kind": "feedback", "id": "f1", "verdict": "correct",
         "target": "n1", "text": "No, staging moved to db-staging-2.acme.internal last week.",
         "fact": {**fact, "value": "db-staging-2.acme.internal"}},
        {"session": "s-2", "ts": "2026-11-12T13:07:55Z", "kind": "tool_result", "id": "r6", "tool": "bash",
         "ok": True, "text": "APP_ENV=staging\nDATABASE_HOST=db-staging-1.acme.internal",
         "fact": {**fact, "value": "db-staging-1.acme.internal"}},
    ]


def _host_cards(root: Path) -> dict[str, str]:
    return {card["value"]: card["status"] for card in _active(root) if card.get("subject") == "staging-db"}


def test_a_stale_reading_after_the_users_correction_makes_the_key_conflicting(memory: Path, tmp_path: Path,
                                                                              run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    assert run("ingest", _write(tmp_path / "a.jsonl", _correction_then_stale_reading()), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    assert _host_cards(memory) == {"db-staging-2.acme.internal": "conflicting",
                                   "db-staging-1.acme.internal": "conflicting"}
    recalled = json.loads(run("recall", "staging database host", "-m", memory, "--format", "json").stdout)
    shown = [item for item in recalled["items"] if item["source"] == "card"]
    assert {item["status"] for item in shown} == {"conflicting"}
    assert "db-staging-2.acme.internal" in recalled["context"] and "db-staging-1.acme.internal" in recalled["context"]


def test_the_same_stale_file_read_again_settles_nothing_but_the_users_word_does(memory: Path, tmp_path: Path,
                                                                                run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-20T03:00:00Z")
    assert run("ingest", _write(tmp_path / "a.jsonl", _correction_then_stale_reading()), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    again = {**_correction_then_stale_reading()[2], "session": "s-3", "ts": "2026-11-13T09:00:00Z", "id": "r7"}
    assert run("ingest", _write(tmp_path / "b.jsonl", [again]), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    assert set(_host_cards(memory).values()) == {"conflicting"}
    settle = {"session": "s-4", "ts": "2026-11-14T09:00:00Z", "kind": "feedback", "id": "f9", "verdict": "confirm",
              "text": "Yes, db-staging-2.acme.internal is the staging host; the .env file is stale.",
              "fact": {"subject": "staging-db", "attribute": "host", "value": "db-staging-2.acme.internal"}}
    assert run("ingest", _write(tmp_path / "c.jsonl", [settle]), "-m", memory).exit_code == 0
    report = json.loads(run("dream", "-m", memory, "-f", "json").stdout)
    assert list(_host_cards(memory)) == ["db-staging-2.acme.internal"]
    assert "supersede" in {op["op"] for op in report["operations"]}


def test_a_newer_user_word_replaces_an_older_tool_reading(memory: Path, tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    events = [_reading("s-1", START, "eu-west-1", 1),
              {"session": "s-2", "ts": _stamp(START + timedelta(days=1)), "kind": "feedback", "id": "f2",
               "verdict": "correct", "text": "The export bucket moved to eu-central-1.",
               "fact": {"subject": "export-bucket", "attribute": "region", "value": "eu-central-1"}}]
    assert run("ingest", _write(tmp_path / "a.jsonl", events), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    values = {card["value"]: card["status"] for card in _active(memory) if card["subject"] == "export-bucket"}
    assert list(values) == ["eu-central-1"] and values["eu-central-1"] != "conflicting"


def test_a_newer_tool_reading_replaces_an_older_one(memory: Path, tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    events = [_reading("s-1", START, "eu-west-1", 1), _reading("s-2", START + timedelta(days=1), "eu-central-1", 2)]
    assert run("ingest", _write(tmp_path / "a.jsonl", events), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    assert [card["value"] for card in _active(memory) if card["subject"] == "export-bucket"] == ["eu-central-1"]


def test_the_demo_sample_logs_keep_the_users_staging_host_in_view(tmp_path: Path, run, monkeypatch) -> None:
    """The sample logs: the correction and the stale .env reading are both shown, flagged."""
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-16T03:00:00Z")
    root = tmp_path / "demo"
    assert run("init", root).exit_code == 0
    sample = Path(__file__).resolve().parents[2] / "sample-memory" / "logs" / "memdream"
    assert run("ingest", sample, "-m", root).exit_code == 0
    assert run("dream", "-m", root).exit_code == 0
    hosts = _host_cards(root)
    assert hosts.get("db-staging-2.acme.internal") == "conflicting"
