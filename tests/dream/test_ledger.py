"""The dream ledger: what each run consumed, what a rollback quarantined, what waits; rebuilt from
commit trailers when the local state is lost."""

from __future__ import annotations

from pathlib import Path

from memdream import gitops
from memdream.dream import ledger as ledger_mod
from memdream.dream.ledger import CONSUMED, PENDING, QUARANTINED, Entry, Ledger, apply_trailers, parse_deferred


def event(session: str, episode: int) -> dict[str, object]:
    return {"session": session, "tags": [f"episode:{episode}"]}


def test_trailers_replay_consume_quarantine_release_and_resume() -> None:
    ledger = Ledger([])
    apply_trailers(ledger, {"Memdream-Run": ["r1"], "Memdream-Consumed": ["segments 000001..000002"]})
    apply_trailers(ledger, {"Memdream-Run": ["r2"], "Memdream-Consumed": ["segments 000003..000003"],
                            "Memdream-Deferred": ["3..3 claude/s 7#2"]})
    assert ledger.status_of("r1") == CONSUMED and ledger.status_of("r2") == PENDING
    assert ledger.held_back(3, event("claude/s 7", 2)) and not ledger.held_back(3, event("claude/s 7", 1))
    apply_trailers(ledger, {"Memdream-Rollback": ["r1"], "Memdream-Quarantine": ["r1"]})
    assert ledger.status_of("r1") == QUARANTINED and ledger.held_back(1, event("any", 0))
    apply_trailers(ledger, {"Memdream-Redream": ["r1"]})
    assert ledger.status_of("r1") == PENDING
    apply_trailers(ledger, {"Memdream-Run": ["r3"], "Memdream-Redreamed": ["r1", "r2"]})
    assert {entry.status for entry in ledger.entries} == {CONSUMED}
    assert {entry.run for entry in ledger.entries if entry.first in (1, 3) and entry.episodes} == {"r3"}


def test_deferred_values_parse_sessions_with_spaces_and_refuse_garbage() -> None:
    assert parse_deferred("1..3 a b#c#4") == (1, 3, ("a b#c", 4))
    for bad in ("1..x s#1", "13 s#1", "1..3 s", "1..3 s#x", ""):
        assert parse_deferred(bad) is None


def test_a_saved_ledger_catches_up_with_commits_made_since(memory: Path) -> None:
    state = memory / ".memdream"
    saved = Ledger([Entry("r1", 1, 1, CONSUMED)])
    ledger_mod.save(state, saved, gitops.resolve(memory))
    gitops.commit(memory, "memdream rollback: undo dream run r1", trailers=[("Memdream-Rollback", "r1"),
                  ("Memdream-Quarantine", "r1")], allow_empty=True)
    caught_up = ledger_mod.load(state, memory)
    assert caught_up.status_of("r1") == QUARANTINED and caught_up.head == gitops.resolve(memory)


def test_a_lost_ledger_is_rebuilt_from_the_trailers(memory: Path) -> None:
    gitops.commit(memory, "memdream dream: 1 added", trailers=[("Memdream-Run", "r9"),
                  ("Memdream-Consumed", "segments 000001..000004")], allow_empty=True)
    rebuilt = ledger_mod.load(memory / ".memdream", memory)
    assert rebuilt.rebuilt and [entry.to_dict() for entry in rebuilt.entries] == [
        {"run": "r9", "segments": [1, 4], "status": CONSUMED}]
