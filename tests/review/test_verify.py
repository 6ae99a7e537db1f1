"""`memdream audit --verify` over whole memories made by real ingest and dream processes: clean ones
pass, a hand-edited evidence reference and a tampered raw event are caught; on a git clone without
the raw layer (CI) dream-made cards pass, a card added by hand is flagged until its commit carries
`Memdream-Human-Edit: Name <email>`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from tests.gitutil import git
from tests.review.test_audit import build_changing_fact, build_transcripts, card_with, clone_of, copy_of, memdream

HUMAN = "Memdream-Human-Edit: Ada Lovelace <ada@example.org>"


@pytest.fixture(scope="module")
def changing_fact_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_changing_fact(tmp_path_factory.mktemp("changing") / "mem")


@pytest.fixture(scope="module")
def transcripts_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_transcripts(tmp_path_factory.mktemp("transcripts") / "mem")


def verify(memory: Path) -> tuple[int, dict[str, Any]]:
    done = memdream(memory, "audit", "--verify", "-f", "json", "-m", str(memory))
    return done.returncode, json.loads(done.stdout)


def messages(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(problem["path"], problem["message"]) for problem in result["problems"]]


def card_path(memory: Path, card: dict[str, Any]) -> Path:
    return memory / "cards" / {"fact": "facts", "lesson": "lessons", "strategy": "strategies"}[card["type"]] / \
        f"{card['id']}.yaml"


@pytest.mark.parametrize("template", ["changing_fact_template", "transcripts_template"])
def test_a_dreamed_memory_verifies(template: str, request: pytest.FixtureRequest) -> None:
    memory: Path = request.getfixturevalue(template)
    done = memdream(memory, "audit", "--verify", "-m", str(memory))
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    assert done.stderr.startswith("ok: ") and "checked against raw events, commits checked" in done.stderr
    code, result = verify(memory)
    assert code == 0 and result["ok"] and result["raw_checked"] and result["git_checked"]
    assert result["refs"] >= result["cards"] > 0 and result["notices"] == []


def test_a_hand_edited_evidence_reference_is_caught(changing_fact_template: Path, tmp_path: Path) -> None:
    memory = copy_of(changing_fact_template, tmp_path)
    card = card_with(memory, subject="postgres", value="16.1")
    path = card_path(memory, card)
    path.write_text(path.read_text().replace("log://s-05#pg3", "log://s-05#pg9"))
    git(memory, "commit", "-q", "-am", "Fix the postgres evidence")
    code, result = verify(memory)
    shown = f"cards/facts/{card['id']}.yaml"
    assert code == 1
    found = messages(result)
    assert (shown, "log://s-05#pg9 names no event in the raw layer") in found
    assert any(where == shown and message.startswith("not made by dream: review by hand (added or changed by "
                                                     "commit ") and '"Fix the postgres evidence" of t <t@t>' in message
               for where, message in found)
    assert len(found) == 2, found
    text = memdream(memory, "audit", "--verify", "-m", str(memory))
    assert text.returncode == 1 and f"{shown}: log://s-05#pg9 names no event in the raw layer" in text.stdout
    assert "2 provenance problem(s)" in text.stderr


def test_a_tampered_raw_event_is_caught(changing_fact_template: Path, tmp_path: Path) -> None:
    memory = copy_of(changing_fact_template, tmp_path)
    card = card_with(memory, subject="postgres", value="16.1")
    segment = memory / "raw" / "segments" / "000002.jsonl"
    data = segment.read_bytes()
    assert data.count(b"PostgreSQL 16.1") == 2  # pg2 and pg3: change one character of one line
    segment.write_bytes(data.replace(b"PostgreSQL 16.1", b"PostgreSQL 16.7", 1))
    code, result = verify(memory)
    assert code == 1
    assert messages(result) == [
        (f"cards/facts/{card['id']}.yaml", "hash of log://s-04#pg2 does not match the stored event (the event or "
                                           "the card changed)"),
        ("raw/segments/000002.jsonl", "changed since ingest: its sha256 is not the one raw/MANIFEST.jsonl pinned "
                                      "(restore it from a backup)"),
    ]


def test_broken_chains_and_cards_without_evidence_are_listed_together(changing_fact_template: Path,
                                                                      tmp_path: Path) -> None:
    memory = copy_of(changing_fact_template, tmp_path)
    old = card_with(memory, subject="postgres", value="15.4")
    new = card_with(memory, subject="postgres", value="16.1")
    archived = memory / "archive" / "facts" / f"{old['id']}.yaml"
    data = yamlio.load_file(archived)
    data["superseded_by"] = ["f-999999"]
    data["evidence"] = []
    archived.write_text(yamlio.dumps(data))
    git(memory, "commit", "-q", "-am", "tidy", "-m", HUMAN)
    code, result = verify(memory)
    shown = f"archive/facts/{old['id']}.yaml"
    assert code == 1
    assert sorted(messages(result)) == sorted([
        (shown, f"{old['id']} cites no evidence"),
        (shown, "superseded_by: no card has id 'f-999999' (broken chain)"),
        (f"cards/facts/{new['id']}.yaml", f"supersedes: {old['id']} does not name {new['id']} in its "
                                          "superseded_by (broken chain)"),
    ])
    assert result["human_edits"] == [{"path": shown, "by": "Ada Lovelace <ada@example.org>"}]


def test_a_clone_without_raw_events_verifies_what_it_can(transcripts_template: Path, tmp_path: Path) -> None:
    clone = clone_of(transcripts_template, tmp_path)
    done = memdream(clone, "audit", "--verify", "-m", str(clone))
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
    assert "notice: evidence was not checked against raw events: the raw layer is not here" in done.stderr
    code, result = verify(clone)
    assert code == 0 and not result["raw_checked"] and result["git_checked"]


def test_a_card_added_by_hand_in_a_clone_is_flagged_until_marked_as_a_persons_edit(
        transcripts_template: Path, tmp_path: Path) -> None:
    clone = clone_of(transcripts_template, tmp_path)
    lesson = next(card for card in json.loads(memdream(clone, "cards", "-f", "json", "-m", str(clone)).stdout)
                  if card["type"] == "lesson")
    added = dict(lesson, id="l-0a0a0a", subject="billing-api.instruction: deploy on fridays",
                 statement="In billing-api, the user's standing instruction: deploy on Fridays.")
    added.pop("path")
    target = clone / "cards" / "lessons" / "l-0a0a0a.yaml"
    target.write_text(yamlio.dumps(added))
    uncommitted = verify(clone)[1]
    assert messages(uncommitted) == [("cards/lessons/l-0a0a0a.yaml", "uncommitted change: not made by dream: review "
                                      "by hand (a person marks a reviewed edit with a trailer 'Memdream-Human-Edit: "
                                      "Name <email>', in the commit)")]
    git(clone, "add", "cards/lessons/l-0a0a0a.yaml")
    git(clone, "commit", "-q", "-m", "Add the Friday rule")
    code, result = verify(clone)
    assert code == 1
    ((path, message),) = messages(result)
    assert path == "cards/lessons/l-0a0a0a.yaml" and message.startswith("not made by dream: review by hand")
    git(clone, "commit", "-q", "--amend", "-m", "Add the Friday rule", "-m", "Memdream-Human-Edit: nobody")
    assert "names no person: write 'Name <email>'" in messages(verify(clone)[1])[0][1]
    git(clone, "commit", "-q", "--amend", "-m", "Add the Friday rule", "-m", HUMAN)
    code, result = verify(clone)
    assert (code, result["problems"]) == (0, [])
    assert result["human_edits"] == [{"path": "cards/lessons/l-0a0a0a.yaml", "by": "Ada Lovelace <ada@example.org>"}]


def test_a_forged_audit_line_and_a_forged_run_trailer_are_caught(changing_fact_template: Path,
                                                                 tmp_path: Path) -> None:
    clone = clone_of(changing_fact_template, tmp_path)
    card = card_with(clone, subject="postgres", value="16.1")
    forged = dict(card, id="f-0b0b0b", value="17.0", statement="The version of postgres is 17.0.")
    for name in ("path", "supersedes"):
        forged.pop(name)
    (clone / "cards" / "facts" / "f-0b0b0b.yaml").write_text(yamlio.dumps(forged))
    run = sorted(path.stem for path in (clone / "audit").glob("*.jsonl"))[-1]
    with open(clone / "audit" / f"{run}.jsonl", "a") as handle:
        handle.write(json.dumps({"run": run, "op": "add", "card": "f-0b0b0b", "reason": "new fact"}) + "\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "memdream dream: 1 added", "-m", f"Memdream-Run: {run}")
    code, result = verify(clone)
    head = git(clone, "rev-parse", "HEAD")[:10]
    assert code == 1
    assert messages(result) == [
        (f"audit/{run}.jsonl", f'changed after its dream run by commit {head} "memdream dream: 1 added" of t <t@t> '
                               "(audit files are written once): review by hand; a person marks a reviewed edit with "
                               "a trailer 'Memdream-Human-Edit: Name <email>'"),
        ("cards/facts/f-0b0b0b.yaml", f"changed by commit {head}, which claims run {run} while audit/{run}.jsonl "
                                      "was committed by another: review by hand"),
    ]


def test_an_uncommitted_memory_without_git_history_is_told_so(tmp_path: Path) -> None:
    memory = tmp_path / "plain" / "mem"
    shutil.copytree(Path(__file__).parents[1] / "cases" / "lint" / "valid" / "small", memory)
    done = memdream(memory, "audit", "--verify", "-m", str(memory))
    assert "notice: commits were not checked: the memory is not a git repository with commits" in done.stderr
