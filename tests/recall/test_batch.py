"""A Recaller that answers many queries (recall --queries, the MCP server) keeps what it computed: a
token's merged postings, the best events of a set of terms, the raw events it read. Whatever it kept,
and however small the room to keep it, each answer is the one a fresh Recaller gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdream.recall import engine, rank
from memdream.recall.engine import Recaller, RecallOptions
from tests.recall.helpers import commit_all, fact, message, write_card, write_events

SUBJECTS = ["export-bucket", "postgres", "deploy", "queue"]
ATTRIBUTES = ["region", "version", "owner", "schedule"]
QUERIES = ["what is the region of postgres", "queue owner and schedule", "which version did we set last time",
           "export bucket region", "Ann", "please look at deploy again", "what is the region of postgres",
           "nightly job queue failing", "deploy schedule", "Bob said what about the version",
           "queue owner and schedule", "zzz nothing matches"]


def events() -> list[dict[str, Any]]:
    """Events of a few shapes (equal scores everywhere, as a real log of one tool has), two speakers."""
    found: list[dict[str, Any]] = []
    for number in range(240):
        subject, attribute = SUBJECTS[number % 4], ATTRIBUTES[(number // 4) % 4]
        ts = f"2026-{1 + number % 12:02d}-{1 + number % 28:02d}T10:{number % 60:02d}:00Z"
        if number % 3:
            found.append(message(f"s-{number // 20}", f"m{number}", ts, f"please look at {subject} and its {attribute}",
                                 speaker=("Ann", "Bob")[number % 2]))
        else:
            found.append({"session": f"s-{number // 20}", "id": f"n{number}", "ts": ts, "kind": "note",
                          "text": f"{subject} {attribute} is v{number % 7}"})
    return found


@pytest.fixture
def logged(memory: Path, tmp_path: Path, run: Any) -> Path:
    for number, subject in enumerate(SUBJECTS):
        write_card(memory, **fact(f"f-{number}", subject, "owner", f"team {number}",
                                  evidence=[{"ref": f"log://s-{number}#n{number * 3}"}]))
    commit_all(memory)
    result = run("ingest", write_events(tmp_path / "log.jsonl", events()), "-m", memory)
    assert result.exit_code == 0, result.stderr
    return memory


def fresh(memory: Path, query: str, budget: int) -> dict[str, Any]:
    (memory / ".memdream" / "usage.jsonl").unlink(missing_ok=True)  # each Recaller reads the same counts
    recaller = Recaller(memory, RecallOptions(budget=budget))
    try:
        return recaller.recall(query).to_dict()
    finally:
        recaller.close()


@pytest.mark.parametrize("room", ["default", "tiny"])
@pytest.mark.parametrize("budget", [400, 2000, 6000])
def test_a_batch_answers_as_fresh_recallers_do(logged: Path, room: str, budget: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    expected = [fresh(logged, query, budget) for query in QUERIES]
    if room == "tiny":  # what is kept is dropped again and again
        monkeypatch.setattr(engine, "KEPT_EVENTS", 3)
        monkeypatch.setattr(rank, "KEPT_POSTINGS", 50)
        monkeypatch.setattr(rank, "KEPT_BESTS", 2)
    (logged / ".memdream" / "usage.jsonl").unlink(missing_ok=True)
    recaller = Recaller(logged, RecallOptions(budget=budget))
    try:
        assert [recaller.recall(query).to_dict() for query in QUERIES] == expected
    finally:
        recaller.close()
