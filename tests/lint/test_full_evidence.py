"""Provenance over the full evidence list: a card shows its newest evidence and ``evidence_count``,
the audit files hold the rest, and lint checks every reference of both (invariant 5), and that
the count matches what is held.

Memories are real: `memdream init` (a git repository), a Claude Code transcript ingested by
`memdream ingest` as a real process, cards and audit lines written the way dream writes them.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memdream import yamlio
from memdream.memory.card import Card, Evidence
from memdream.memory.evidence_log import evidence_line
from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer
from memdream.memory.refs import event_ref
from tests.transcripts import ClaudeSession

RUN = "2026-11-14T03-00-00Z-1c2d"
CARD = Path("cards/facts/f-3a9c21.yaml")


def memdream(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.run([sys.executable, "-m", "memdream", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


@pytest.fixture
def events(memory: Path, tmp_path: Path) -> list[Evidence]:
    """Seven tool readings of the export bucket's region, ingested; as evidence, oldest first."""
    session = ClaudeSession("4f7c2a9e-1b3d-4c5e-8f60-7a8b9c0d1e2f", "/home/dev/billing-api",
                            datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc))
    session.user("Where does the export job write its files?")
    for day in range(7):
        session.bash(f"aws s3api get-bucket-location --bucket billing-exports-{day}",
                     '{"LocationConstraint": "eu-central-1"}')
    session.assistant("The export buckets are in eu-central-1.")
    log = session.write(tmp_path / "logs")
    done = memdream(memory, "ingest", "-m", str(memory), str(log))
    assert done.returncode == 0, done.stderr
    raw = RawLayer(MemoryPaths(memory))
    readings = [event for _, event in raw.iter_events() if event.get("kind") == "tool_result"]
    keys = raw.keys()
    assert len(readings) == 7
    return [Evidence(ref=event_ref(event["session"], event["id"]), stance="supports", kind="observation",
                     hash=keys[(event["session"], event["id"])], ts=event["ts"]) for event in readings]


def write_card(memory: Path, inline: list[Evidence], count: int | None) -> Path:
    card = Card(id="f-3a9c21", type="fact", subject="export-bucket", attribute="region", value="eu-central-1",
                statement="The export buckets live in eu-central-1.", status="verified", confidence=0.95,
                evidence=inline, created_at="2026-11-02T09:10:00Z", updated_at="2026-11-14T03:00:00Z",
                ttl_policy="decay-90d", evidence_count=count)
    data = card.to_dict()
    data["evidence"] = [item.to_dict() for item in inline]  # these, whatever dream would show
    if count is not None:
        data["evidence_count"] = count  # as written, even when it disagrees with the lists
    path = memory / CARD
    path.write_text(yamlio.dumps(yamlio.ordered(data, list(data))), encoding="utf-8")
    return path


def write_audit(memory: Path, added: list[Evidence], run: str = RUN) -> Path:
    path = memory / "audit" / f"{run}.jsonl"
    path.parent.mkdir(exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"run": run, "op": "merge", "card": "f-3a9c21"}) + "\n")
        handle.write(json.dumps(evidence_line(run, "f-3a9c21", added)) + "\n")
    return path


def findings(memory: Path, *args: str) -> list[str]:
    done = memdream(memory, "lint", *args)
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def line_of(path: Path, key: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(key))


def test_a_card_with_its_older_evidence_in_the_audit_files_is_clean(memory: Path, events: list[Evidence]) -> None:
    write_card(memory, events[-3:], count=7)
    write_audit(memory, events[:4])
    done = memdream(memory, "lint")
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr


def test_an_audit_held_ref_without_its_raw_event_is_reported_at_the_card(
        memory: Path, events: list[Evidence]) -> None:
    gone = Evidence(ref=events[0].ref.rsplit("#", 1)[0] + "#never-ingested", kind="observation",
                    ts="2026-11-01T09:00:00Z", hash=events[0].hash)
    card = write_card(memory, events[-3:], count=8)
    write_audit(memory, [gone, *events[:4]])
    assert findings(memory) == [
        f"{CARD.as_posix()}:{line_of(card, 'evidence_count:')}:1: {gone.ref} (held in the audit files) names no "
        "event in the raw layer [provenance]"]


def test_an_audit_held_ref_whose_event_changed_is_reported(memory: Path, events: list[Evidence]) -> None:
    changed = Evidence(ref=events[1].ref, kind="observation", ts=events[1].ts, hash="sha256:" + "0" * 64)
    card = write_card(memory, events[-3:], count=7)
    write_audit(memory, [events[0], changed, *events[2:4]])
    assert findings(memory) == [
        f"{CARD.as_posix()}:{line_of(card, 'evidence_count:')}:1: hash of {events[1].ref} (held in the audit files) "
        "does not match the raw event (the event or the audit line changed) [provenance]"]


def test_a_lint_of_the_card_file_alone_sees_its_audit_held_refs(memory: Path, events: list[Evidence]) -> None:
    gone = Evidence(ref="log://s-elsewhere#e1", kind="observation", ts="2026-11-01T09:00:00Z")
    write_card(memory, events[-3:], count=8)
    write_audit(memory, [gone, *events[:4]])
    lines = findings(memory, str(CARD))
    assert len(lines) == 1 and "log://s-elsewhere#e1 (held in the audit files)" in lines[0]


def test_lost_audit_lines_are_reported_on_evidence_count(memory: Path, events: list[Evidence]) -> None:
    card = write_card(memory, events[-3:], count=7)
    write_audit(memory, events[:2])  # two of the four older entries are missing
    assert findings(memory) == [
        f"{CARD.as_posix()}:{line_of(card, 'evidence_count:')}:1: evidence_count is 7 but the card and the audit "
        "files hold 5 pieces of evidence: the full list was lost (restore the audit files from git) "
        "[evidence-count]"]


def test_a_deleted_audit_file_is_reported_even_without_a_raw_layer(memory: Path, events: list[Evidence]) -> None:
    write_card(memory, events[-3:], count=7)
    for path in (memory / "raw").rglob("*"):
        if path.is_file():
            path.unlink()  # a clone without the raw layer: provenance is skipped, the count is not
    lines = findings(memory)
    assert len(lines) == 1 and "evidence_count is 7 but the card and the audit files hold 3" in lines[0]


def test_a_count_below_the_inline_list_is_reported(memory: Path, events: list[Evidence]) -> None:
    card = write_card(memory, events[-3:], count=2)
    assert findings(memory) == [
        f"{CARD.as_posix()}:{line_of(card, 'evidence_count:')}:1: evidence_count is 2 but the card lists 3 pieces "
        "of evidence [evidence-count]"]


def test_a_malformed_evidence_line_is_reported_at_its_line(memory: Path, events: list[Evidence]) -> None:
    write_card(memory, events[-3:], count=7)
    audit = write_audit(memory, events[:4])
    with open(audit, "a", encoding="utf-8") as handle:
        no_ref = {"run": RUN, "op": "evidence", "card": "f-3a9c21", "added": [{"stance": "supports"}]}
        handle.write(json.dumps(no_ref) + "\n")
        handle.write(f'{{"run": "{RUN}", "op": "evidence", "card": \n')  # cut off mid-line
    assert findings(memory) == [
        f"audit/{RUN}.jsonl:3:1: evidence line with a malformed entry (each needs a ref and a stance of supports "
        "or contradicts): that entry is lost [audit]",
        f"audit/{RUN}.jsonl:4:1: malformed evidence line: its references are lost to dream and lint [audit]"]


def test_a_planted_evidence_cache_does_not_hide_lost_lines(memory: Path, events: list[Evidence]) -> None:
    """Dream caches the audit union under .memdream/cache; a memory under review may ship its own."""
    write_card(memory, events[-3:], count=7)
    cache = memory / ".memdream" / "cache" / "evidence-log.pickle"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(pickle.dumps((1, ({}, {"f-3a9c21": events[:4]}))))
    lines = findings(memory)
    assert len(lines) == 1 and "the full list was lost" in lines[0]
