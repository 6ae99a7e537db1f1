"""One composer, two policies (issue 22): `recall` and the MCP recall tool compose with RECALL, `memdream
context` (the SessionStart hook, --export) with SESSION_START: the same Recaller, the same plan, instructions
and conflicts, what differs said by memdream.recall.policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memdream.integrations.startup import build_context
from memdream.recall.engine import Recaller, RecallOptions
from memdream.recall.policy import RECALL, SESSION_START
from tests.recall.helpers import commit_all, write_card, write_events
from tests.recall.test_answering import export_log, lesson, long_plan


def instructions_and_a_conflict(memory: Path, run: Any, tmp_path: Path) -> None:
    long_plan(memory)
    for number in range(6):
        write_card(memory, **lesson(f"l-{number}", f"Standing rule {number}: keep commits small and signed.",
                                    "global", ["instruction"], confidence=0.9 - number / 100))
    for card_id, value in (("f-b", "6432"), ("f-a", "5433")):
        write_card(memory, id=card_id, subject="staging db", attribute="port", value=value, status="conflicting",
                   statement=f"The staging db listens on port {value}.",
                   evidence=[{"ref": f"log://c#{card_id}", "stance": "supports"}])
    commit_all(memory)
    result = run("ingest", write_events(tmp_path / "log.jsonl", export_log()), "-m", memory)
    assert result.exit_code == 0, result.stderr


def share_of(items: list[Any], source: str) -> int:
    return sum(len(((item.text if item.source == "plan" else "- " + item.text)).encode()) + 1
               for item in items if item.source == source or (source == "resident" and item.resident))


def test_the_session_start_is_recalls_composer_with_its_own_policy(memory: Path, run: Any, tmp_path: Path) -> None:
    instructions_and_a_conflict(memory, run, tmp_path)
    usage = memory / ".memdream" / "usage.jsonl"
    recaller = Recaller(memory, RecallOptions(budget=2000), SESSION_START)
    try:
        started = recaller.recall("")
    finally:
        recaller.close()
    assert not usage.exists()  # nothing was asked: no card is counted as used
    sources = [item.source for item in started.items]
    assert sources[0] == "plan" and "raw" not in sources  # no question, no raw events
    assert "…[cut]" not in started.items[0].text and "step 9:" in started.items[0].text  # whole
    assert share_of(started.items, "plan") > 2000 * 0.25  # first, outside the resident share
    assert share_of(started.items, "resident") <= 2000 * 0.5
    [conflict] = [item for item in started.items if "⚠ conflict" in item.text]
    assert conflict.id == "f-a" and "5433" in conflict.text and "6432" in conflict.text  # one item, by id
    # `memdream context` is that composition, framed.
    assert build_context(memory, 2000).body == started.context

    asked = Recaller(memory, RecallOptions(budget=2000), RECALL)
    try:
        answered = asked.recall("why does the nightly export job fail?")
    finally:
        asked.close()
    assert share_of(answered.items, "plan") + share_of(answered.items, "resident") <= 2000 * 0.25
    assert any(item.source == "raw" for item in answered.items)
    assert usage.exists()


def test_a_frame_leaves_its_room_out_of_the_budget(memory: Path, run: Any, tmp_path: Path) -> None:
    instructions_and_a_conflict(memory, run, tmp_path)
    framed = build_context(memory, 700, frame=lambda scope: 200)
    assert framed.budget == 700 and len(framed.body.encode()) <= 500
    recaller = Recaller(memory, RecallOptions(budget=700), SESSION_START)
    try:
        assert recaller.recall("", 500).context == framed.body
    finally:
        recaller.close()


def test_only_the_strict_policy_leaves_a_project_it_does_not_know_empty(memory: Path) -> None:
    write_card(memory, **lesson("l-alpha", "In alpha, run make check before any commit.", "alpha",
                                ["instruction", "project:alpha"]))
    write_card(memory, **lesson("l-any", "Always answer in English.", "global", ["preference"]))
    commit_all(memory)
    for policy, empty in ((SESSION_START, True), (RECALL, False)):
        recaller = Recaller(memory, RecallOptions(cwd="/home/dev/gamma"), policy)
        try:
            result = recaller.recall("")
        finally:
            recaller.close()
        assert (result.context == "") is empty, policy
    recaller = Recaller(memory, RecallOptions(cwd="/home/dev/alpha"), SESSION_START)
    assert recaller.scope == "alpha" and not recaller.unknown_scope
    assert [item.id for item in recaller.recall("").items] == ["l-alpha", "l-any"]
    recaller.close()


def test_conflict_partners_are_the_conflicting_cards_of_a_fact_key(memory: Path) -> None:
    for card_id, value, status in (("f-c", "7000", "conflicting"), ("f-a", "5433", "conflicting"),
                                   ("f-b", "6432", "conflicting"), ("f-d", "1", "verified")):
        write_card(memory, id=card_id, subject="staging db", attribute="port", value=value, status=status,
                   evidence=[{"ref": f"log://c#{card_id}", "stance": "supports"}])
    write_card(memory, id="f-e", subject="other", attribute="port", value="1")
    commit_all(memory)
    recaller = Recaller(memory)
    cards = recaller.cards
    docs = {cards.ids[number]: cards.doc(number) for number in range(len(cards))}
    recaller.close()
    assert [doc.id for doc in cards.conflict_partners(docs["f-b"])] == ["f-b", "f-a", "f-c"]
    assert [doc.id for doc in cards.conflict_partners(docs["f-d"])] == ["f-d"]
    assert [doc.id for doc in cards.conflict_partners(docs["f-e"])] == ["f-e"]
