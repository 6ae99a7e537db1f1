"""A clone that ingests keeps its provenance (issue 21.3): the hash a card cites covers what the source
said, not what ingest added from its own history (episode numbers, salience, project). Real processes: a
memory fed one transcript at a time, as hooks feed it, dreamed; a git clone (no raw layer) that ingests the
same transcripts at once; lint and `audit --verify` on both. Cards of older versions cite the hash of the
stored line: their raw layers keep verifying."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from memdream.memory.raw import event_hash, line_hash
from tests.gitutil import git
from tests.review.test_audit import clone_of, copy_of, memdream, new_memory, ok
from tests.transcripts import billing_api_project


@pytest.fixture(scope="module")
def fed_by_hooks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """Seven sessions ingested one by one (each ingest its own run), then one dream."""
    base = tmp_path_factory.mktemp("hooks")
    root = new_memory(base / "mem")
    logs = billing_api_project(base / "logs", small=True)
    for log in logs:
        ok(memdream(root, "ingest", str(log), "-m", str(root)))
    ok(memdream(root, "dream", "-m", str(root)))
    return root, logs


def stored_lines(memory: Path) -> dict[tuple[str, str], bytes]:
    """(session, id) -> the stored line, read from the segments without memdream."""
    found = {}
    for segment in sorted((memory / "raw" / "segments").glob("*.jsonl")):
        for line in segment.read_bytes().splitlines():
            event = json.loads(line)
            found.setdefault((event["session"], event["id"]), line)
    return found


def cited(memory: Path) -> dict[tuple[str, str], str]:
    """(session, id) -> the hash cited for it, on a card file or held in an audit file."""
    items = [item for path in [*memory.glob("cards/*/*.yaml"), *memory.glob("archive/*/*.yaml")]
             for item in yamlio.load_file(path)["evidence"]]
    for path in memory.glob("audit/*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        items += [item for record in records if record["op"] == "evidence" for item in record["added"]]
    found = {}
    for item in items:
        session, _, event_id = item["ref"].removeprefix("log://").partition("#")
        found[(session, event_id)] = item["hash"]
    return found


def verify(memory: Path) -> subprocess.CompletedProcess[str]:
    return memdream(memory, "audit", "--verify", "-m", str(memory))


def test_a_clone_that_ingests_the_same_transcripts_still_verifies(fed_by_hooks: Any, tmp_path: Path) -> None:
    origin, logs = fed_by_hooks
    clone = clone_of(origin, tmp_path)
    ok(memdream(clone, "ingest", str(logs[0].parents[2]), "-m", str(clone)))  # the whole folder at once
    here, there = stored_lines(origin), stored_lines(clone)
    citations = cited(origin)
    # The scenario: the clone stored some cited event with other ingest tags (another line) ...
    assert any(here[key] != there[key] for key in citations)
    # ... and the same event hash, the one the cards cite.
    assert all(event_hash(there[key]) == digest for key, digest in citations.items())
    linted = memdream(clone, "lint", str(clone))
    assert (linted.returncode, linted.stdout) == (0, ""), linted.stdout
    assert "7 segment(s) of the raw manifest were never here" in linted.stderr
    assert ": 0 ref(s) not in the segments here were not checked" in linted.stderr
    verified = verify(clone)
    assert verified.returncode == 0, verified.stdout
    assert "checked against raw events" in verified.stderr


def test_refs_into_segments_a_clone_never_had_are_not_checked_not_missing(fed_by_hooks: Any,
                                                                          tmp_path: Path) -> None:
    origin, logs = fed_by_hooks
    clone = clone_of(origin, tmp_path)
    ok(memdream(clone, "ingest", str(logs[-1]), "-m", str(clone)))  # one session of seven
    linted = memdream(clone, "lint", str(clone))
    assert (linted.returncode, linted.stdout) == (0, ""), linted.stdout
    assert "never here (cloned without the raw layer)" in linted.stderr
    verified = verify(clone)
    assert verified.returncode == 0, verified.stdout
    assert "7 segment(s) of raw/MANIFEST.jsonl were never here" in verified.stderr


def test_a_segment_this_memory_wrote_and_lost_is_still_a_problem(fed_by_hooks: Any, tmp_path: Path) -> None:
    memory = copy_of(fed_by_hooks[0], tmp_path)
    (memory / "raw" / "segments" / "000001.jsonl").unlink()  # its dedup index in .memdream/ says it was here
    verified = verify(memory)
    assert verified.returncode == 1
    assert "raw/segments/000001.jsonl: listed in raw/MANIFEST.jsonl but missing" in verified.stdout


def cite_line_hashes(memory: Path) -> int:
    """What versions before the event hash wrote: cards and audit lines citing ``sha256:`` of the stored line.
    Written into the dream's own commit (amended), as an older dream would have made it."""
    lines = stored_lines(memory)

    def line_digest(ref: str) -> str:
        session, _, event_id = ref.removeprefix("log://").partition("#")
        return "sha256:" + hashlib.sha256(lines[(session, event_id)]).hexdigest()

    changed = 0
    for path in [*memory.glob("cards/*/*.yaml"), *memory.glob("archive/*/*.yaml")]:
        data = yamlio.load_file(path)
        for item in data["evidence"]:
            changed += item["hash"] != line_digest(item["ref"])
            item["hash"] = line_digest(item["ref"])
        path.write_text(yamlio.dumps(data), encoding="utf-8")
    for path in memory.glob("audit/*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for record in records:
            for item in record.get("added", []) if record["op"] == "evidence" else []:
                item["hash"] = line_digest(item["ref"])
        path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records),
                        encoding="utf-8")
    git(memory, "commit", "-q", "--amend", "--no-edit", "-a")
    return changed


def test_cards_citing_the_stored_lines_hash_keep_verifying(fed_by_hooks: Any, tmp_path: Path) -> None:
    memory = copy_of(fed_by_hooks[0], tmp_path)
    assert cite_line_hashes(memory) > 10  # every event carries ingest's tags: the two hashes differ
    linted = memdream(memory, "lint", str(memory))
    assert (linted.returncode, linted.stdout) == (0, ""), linted.stdout
    verified = verify(memory)
    assert verified.returncode == 0, verified.stdout
    card_id = next((memory / "cards").rglob("*.yaml")).stem
    audit = json.loads(ok(memdream(memory, "audit", card_id, "-f", "json", "-m", str(memory))))
    assert {item["check"] for item in audit["evidence"]} == {"ok"}


def test_the_event_hash_leaves_out_what_ingest_adds() -> None:
    event = {"session": "s-1", "id": "r1", "ts": "2026-11-07T09:13:41Z", "kind": "tool_result", "tool": "aws",
             "ok": True, "text": "LocationConstraint: eu-central-1", "tags": ["sidechain"]}
    tagged = {**event, "tags": ["sidechain", "episode:9", "salience:medium", "project:billing-api", "workaround"]}
    assert event_hash(tagged) == event_hash(event) != line_hash(json.dumps(tagged))
    assert event_hash({**tagged, "tags": ["sidechain", "episode:8"]}) == event_hash(event)
    untagged = {key: value for key, value in event.items() if key != "tags"}
    assert event_hash({**untagged, "tags": ["episode:1", "salience:weak"]}) == event_hash(untagged)
    assert event_hash({**event, "text": "LocationConstraint: eu-west-1"}) != event_hash(event)
    assert event_hash({**event, "id": "r2"}) != event_hash(event)
    # A time ingest made up (a chat file's modification time) is no part of what the source said.
    made_up = {**event, "meta": {"ts_synthetic": True}}
    assert event_hash({**made_up, "ts": "2026-12-01T00:00:00Z"}) == event_hash(made_up)
    assert event_hash({**event, "ts": "2026-12-01T00:00:00Z"}) != event_hash(event)
