"""Lint on a clone without the raw layer (CI): it says plainly that evidence was not checked against
raw events (a notice, exit 0) and checks what it can: references well formed, the hashes dream
cites present, the manifest's segment list consistent. Memories are made by real ingest and dream
processes (a log whose facts change, dreamed twice: two raw segments) and cloned with git."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from tests.gitutil import git
from tests.review.test_audit import build_changing_fact, build_transcripts, clone_of, memdream

NOTICE = "notice: evidence was not checked against raw events: the raw layer is not here ({} refs)\n"


@pytest.fixture(scope="module")
def dreamed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_changing_fact(tmp_path_factory.mktemp("changing") / "mem")


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_transcripts(tmp_path_factory.mktemp("transcripts") / "mem")


def lint(memory: Path, *args: str) -> Any:
    return memdream(memory, "lint", str(memory), *args)


def reference_count(memory: Path) -> int:
    """Every evidence reference, counted from the files: on cards, held in the audit files only, on the plan."""
    inline: dict[str, set[str]] = {}
    for path in [*memory.glob("cards/*/*.yaml"), *memory.glob("archive/*/*.yaml")]:
        card = yamlio.load_file(path)
        inline[card["id"]] = {item["ref"] for item in card["evidence"]}
    held: dict[str, set[str]] = {}
    for path in memory.glob("audit/*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["op"] == "evidence":
                held.setdefault(record["card"], set()).update(item["ref"] for item in record["added"])
    plan = yamlio.load_file(memory / "plan.yaml")
    on_plan = sum(len(item.get("evidence", [])) for section in ("next", "done") for item in plan.get(section, []))
    return sum(len(refs) for refs in inline.values()) + on_plan + sum(
        len(refs - inline.get(card_id, set())) for card_id, refs in held.items())


@pytest.mark.parametrize("template", ["dreamed", "transcripts"])
def test_lint_on_a_clone_says_evidence_was_not_checked(template: str, request: pytest.FixtureRequest,
                                                       tmp_path: Path) -> None:
    memory: Path = request.getfixturevalue(template)
    here = lint(memory)
    assert (here.returncode, here.stdout) == (0, "") and "notice" not in here.stderr, here.stderr
    clone = clone_of(memory, tmp_path)
    refs = reference_count(clone)
    assert refs > 10
    done = lint(clone)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    assert done.stderr.startswith(NOTICE.format(refs)) and done.stderr.endswith("no problems\n")
    report = json.loads(lint(clone, "-f", "json").stdout)
    assert report["ok"] and report["findings"] == []
    assert report["notices"] == [NOTICE.format(refs).removeprefix("notice: ").rstrip("\n")]
    assert json.loads(lint(memory, "-f", "json").stdout)["notices"] == []


def test_a_hand_removed_hash_is_a_finding_without_raw_events(dreamed: Path, tmp_path: Path) -> None:
    clone = clone_of(dreamed, tmp_path)
    path = next(clone.glob("cards/facts/*.yaml"))
    text = path.read_text()
    line = next(line for line in text.splitlines() if line.strip().startswith("hash: sha256:"))
    path.write_text(text.replace(line + "\n", "", 1))
    git(clone, "commit", "-q", "-am", "hand edit")
    done = lint(clone)
    assert done.returncode == 1
    ref_line = text.splitlines().index(line)  # the ref sits on the line above the removed hash (1-based: same)
    ref = text.splitlines()[ref_line - 1].split("ref: ")[1]
    relative = path.relative_to(clone.parent).as_posix()  # lint runs beside the memory
    assert done.stdout == (f"{relative}:{ref_line}:8: {ref} cites no hash (dream cites the sha256 of every event: "
                           "was it edited by hand?) [evidence-hash]\n")
    assert NOTICE.format(reference_count(clone)) in done.stderr


def test_held_evidence_with_a_malformed_ref_or_hash_is_a_finding(transcripts: Path, tmp_path: Path) -> None:
    clone = clone_of(transcripts, tmp_path)
    audit = next(clone.glob("audit/*.jsonl"))
    lines = audit.read_text().splitlines()
    number = next(index for index, line in enumerate(lines) if '"op": "evidence"' in line)
    record = json.loads(lines[number])
    record["added"][0]["ref"] = "log://no-event-part"
    record["added"][1]["hash"] = "sha256:" + "z" * 64
    lines[number] = json.dumps(record, ensure_ascii=False)
    audit.write_text("\n".join(lines) + "\n")
    done = lint(clone)
    relative = audit.relative_to(clone.parent).as_posix()
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"{relative}:{number + 1}:1: evidence held for {record['card']}: 'log://no-event-part' is not a "
        "reference log://<session>#<id> [audit]",
        f"{relative}:{number + 1}:1: evidence held for {record['card']}: {record['added'][1]['ref']} cites no "
        "sha256:<64 hex digits> hash [audit]",
    ]


def test_the_manifest_segment_list_is_checked_without_segments(dreamed: Path, tmp_path: Path) -> None:
    clone = clone_of(dreamed, tmp_path)
    manifest = clone / "raw" / "MANIFEST.jsonl"
    first, second = (json.loads(line) for line in manifest.read_text().splitlines())
    broken = [first, dict(second, segment="000003.jsonl"), dict(first), dict(second, segment="000004.jsonl",
                                                                                sha256="abc"),
              {k: v for k, v in dict(second, segment="000005.jsonl").items() if k != "events"},
              dict(second, segment="000006.jsonl", last_ts="yesterday")]
    manifest.write_text("".join(json.dumps(record, sort_keys=True) + "\n" for record in broken))
    done = lint(clone)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "mem/raw/MANIFEST.jsonl:2:1: segment 000003.jsonl breaks the numbering: expected 000002.jsonl [manifest]",
        "mem/raw/MANIFEST.jsonl:3:1: segment 000001.jsonl is listed twice [manifest]",
        "mem/raw/MANIFEST.jsonl:4:1: segment 000004.jsonl breaks the numbering: expected 000002.jsonl [manifest]",
        "mem/raw/MANIFEST.jsonl:5:1: segment 000005.jsonl: events is not a count [manifest]",
        "mem/raw/MANIFEST.jsonl:6:1: segment 000006.jsonl: last_ts is not an ISO 8601 time [manifest]",
    ]


def test_a_consistent_manifest_of_two_ingests_passes_with_segments_too(dreamed: Path) -> None:
    records = [json.loads(line) for line in (dreamed / "raw" / "MANIFEST.jsonl").read_text().splitlines()]
    assert [record["segment"] for record in records] == ["000001.jsonl", "000002.jsonl"]
    assert all(re.fullmatch(r"[0-9a-f]{64}", record["sha256"]) for record in records)
    assert lint(dreamed).returncode == 0
