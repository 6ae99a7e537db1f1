"""`memdream diff`: a semantic diff of the memory between two revisions, by default the last dream's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from tests.gitutil import git
from tests.review.dream_history import (
    FIRST_GOAL,
    SECOND_GOAL,
    History,
    built_once,
    card_id,
    copy_of,
    dream,
    event,
    first_commit,
    hand_commit,
    ingest,
    json_of,
    memdream,
    region,
    rollback_commit,
    write_events,
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> History:
    return built_once(tmp_path_factory)


@pytest.fixture
def history(built: History, tmp_path: Path) -> History:
    return copy_of(built, tmp_path / "mem")


def _ids(entries: list[dict[str, Any]]) -> list[str]:
    return [entry["id"] for entry in entries]


def _archived_id(root: Path, subject: str) -> str:
    (path,) = [path for path in (root / "archive").rglob("*.yaml") if f"subject: {subject}\n" in path.read_text()]
    return path.stem


def test_by_default_diff_shows_exactly_what_the_last_dream_did(history: History) -> None:
    root = history.root
    data = json_of("diff", "-m", root)
    assert data["runs"] == [history.second]
    assert data["to"] == git(root, "rev-parse", "HEAD").strip()
    assert data["from"] == git(root, "rev-parse", "HEAD~1").strip()
    (moved,) = data["superseded"]
    assert (moved["old_value"], moved["new_value"]) == ("eu-west-1", "eu-central-1")
    assert moved["key"] == "export-bucket.region"
    assert moved["old"] == _archived_id(root, "export-bucket") and moved["new"] == card_id(root, "export-bucket")
    assert "replaced by 'eu-central-1'" in moved["reason"]
    (archived,) = data["archived"]
    assert archived["key"] == "staging database host.is" and archived["value"] == "db-staging-2.acme.internal"
    assert archived["reason"] == "'db-staging-2.acme.internal' rejected by user feedback"
    # The first dream's cards are not news: neither the billing port it added nor the region it added.
    assert data["added"] == [] and data["removed"] == [] and data["merged"] == []
    assert data["changed"] == []
    plan = data["plan"]
    assert plan["goal"] == [FIRST_GOAL, SECOND_GOAL]
    assert plan["next_added"] == ["Deploy refunds to staging"]
    assert plan["done_added"] == ["Add the refund endpoint", "Write tests for refunds"]
    assert sorted(plan["next_removed"]) == ["Add the refund endpoint", "Write tests for refunds"]


def test_diff_of_the_last_dream_ignores_commits_that_follow_it(history: History) -> None:
    before = json_of("diff", "-m", history.root)
    (history.root / "NOTES.md").write_text("reviewed on Monday\n", encoding="utf-8")
    hand_commit(history.root, "notes")
    assert json_of("diff", "-m", history.root) == before


def test_diff_across_both_dreams_shows_both(history: History) -> None:
    root = history.root
    data = json_of("diff", first_commit(root), "HEAD", "-m", root)
    assert data["runs"] == [history.first, history.second]
    added = {entry["key"]: entry for entry in data["added"]}
    assert set(added) == {"billing service.port"}  # dream 1's card that dream 2 left alone
    assert added["billing service.port"]["value"] == "8081"
    assert added["billing service.port"]["type"] == "fact" and added["billing service.port"]["evidence"] >= 2
    (moved,) = data["superseded"]  # made by dream 1, replaced by dream 2
    assert (moved["old_value"], moved["new_value"]) == ("eu-west-1", "eu-central-1")
    assert [entry["key"] for entry in data["archived"]] == ["staging database host.is"]
    assert data["plan"]["goal"] == ["", SECOND_GOAL]
    # One revision: that revision against HEAD.
    assert json_of("diff", first_commit(root), "-m", root) == data


def test_run_option_shows_that_run_against_its_parent(history: History) -> None:
    data = json_of("diff", "--run", history.first, "-m", history.root)
    assert data["runs"] == [history.first]
    assert sorted(entry["key"] for entry in data["added"]) == [
        "billing service.port", "export-bucket.region", "staging database host.is"]
    assert data["superseded"] == [] and data["archived"] == []
    assert data["plan"]["goal"] == ["", FIRST_GOAL]
    assert data["plan"]["next_added"] == ["Add the refund endpoint", "Write tests for refunds"]
    # A unique prefix of the run id will do: both runs share the fixed clock, so the prefix goes one
    # character into the random part past what the second run's id shares with it.
    shared = len(os.path.commonprefix([history.first, history.second]))
    prefix = history.first[:shared + 1]
    assert len(prefix) < len(history.first)  # a prefix, not the whole id
    assert json_of("diff", "-r", prefix, "-m", history.root) == data


def test_a_hand_edit_committed_by_a_person_shows_in_diff_of_its_commit(history: History) -> None:
    root = history.root
    path = root / "cards" / "facts" / f"{card_id(root, 'billing service')}.yaml"
    card = yamlio.load_file(path)
    old_confidence = card["confidence"]
    card.update(value="8082", statement="The billing service listens on port 8082.", confidence=0.5,
                tags=["checked-by-hand"])
    path.write_text(yamlio.dumps(card), encoding="utf-8")
    hand_commit(root, "billing moved to port 8082")
    data = json_of("diff", "HEAD~1", "HEAD", "-m", root)
    assert data["runs"] == []
    (change,) = data["changed"]
    assert change["id"] == card["id"] and change["key"] == "billing service.port"
    assert change["value"] == ["8081", "8082"]
    assert change["confidence"] == [old_confidence, 0.5]
    assert change["fields"] == ["statement", "tags"] and change["status"] is None
    assert data["added"] == data["superseded"] == data["archived"] == data["removed"] == []
    text = memdream("diff", "HEAD~1", "HEAD", "-m", root).stdout
    assert f"{card['id']}  billing service.port  value 8081 -> 8082; confidence {old_confidence:.2f} -> 0.50" in text
    # The default diff still shows the last dream, not the hand edit.
    assert json_of("diff", "-m", root)["runs"] == [history.second]


def test_status_changes_and_removed_cards_show(history: History) -> None:
    root = history.root
    port = root / "cards" / "facts" / f"{card_id(root, 'billing service')}.yaml"
    card = yamlio.load_file(port)
    card["status"] = "conflicting"
    port.write_text(yamlio.dumps(card), encoding="utf-8")
    region_card = root / "cards" / "facts" / f"{card_id(root, 'export-bucket')}.yaml"
    removed_id = region_card.stem
    region_card.unlink()
    hand_commit(root, "a reviewer's edits")
    data = json_of("diff", "HEAD~1", "-m", root)
    assert [(entry["id"], entry["status"]) for entry in data["changed"]] == [(card["id"], ["verified", "conflicting"])]
    assert _ids(data["removed"]) == [removed_id] and data["removed"][0]["value"] == "eu-central-1"


def test_a_rollback_shows_the_cards_it_removed_and_the_ones_it_restored(history: History) -> None:
    root = history.root
    last = json_of("diff", "-m", root)
    new_card, old_card = last["superseded"][0]["new"], last["superseded"][0]["old"]
    host = last["archived"][0]["id"]
    rollback_commit(root, history.second)
    data = json_of("diff", "HEAD~1", "HEAD", "-m", root)
    assert _ids(data["removed"]) == [new_card]
    restored = {entry["id"]: entry for entry in data["changed"]}
    assert set(restored) == {old_card, host}
    assert restored[old_card]["restored"] and restored[old_card]["status"] == ["superseded", "verified"]
    assert restored[host]["restored"] and restored[host]["status"][1] == "verified"
    assert data["plan"]["goal"] == [SECOND_GOAL, FIRST_GOAL]
    assert data["plan"]["done_removed"] == ["Add the refund endpoint", "Write tests for refunds"]
    # The default diff is still the last dream's commit (a rollback is not a dream).
    assert json_of("diff", "-m", root)["runs"] == [history.second]


def test_new_evidence_shows_as_evidence_added(history: History, tmp_path: Path) -> None:
    root = history.root
    region_id = card_id(root, "export-bucket")
    more = [event("s-20", "r20", "2026-11-20T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1",
                  tool="aws", ok=True, fact=region("eu-central-1"))]
    more += [event(f"s-{n}", f"c{n}", f"2026-11-{n}T15:00:00Z", "message", f"review pull request {n}")
             for n in range(21, 26)]
    ingest(root, [write_events(tmp_path / "more.jsonl", more)])
    third = dream(root)
    data = json_of("diff", "-m", root)
    assert data["runs"] == [third]
    (change,) = [entry for entry in data["changed"] if entry["id"] == region_id]
    assert change["evidence_added"] == 1 and change["value"] is None and change["status"] is None
    assert "evidence +1" in memdream("diff", "-m", root).stdout


def test_a_merge_of_two_cards_shows_as_merged(memory: Path) -> None:
    """Dream merges cards without a fact key whose statements say the same; a person's commit that does
    the same is recognised from the card files (no audit line to say so)."""
    lesson: dict[str, Any] = {"type": "lesson", "subject": "billing-api", "scope": "billing-api", "status": "verified",
              "confidence": 0.8, "created_at": "2026-11-07T09:40:00Z", "updated_at": "2026-11-07T09:40:00Z",
              "ttl_policy": "keep"}
    folder = memory / "cards" / "lessons"
    first = {"ref": "log://s-1#e1", "stance": "supports", "kind": "outcome"}
    second = {"ref": "log://s-2#e2", "stance": "supports", "kind": "outcome"}
    keep = {**lesson, "id": "l-keep", "statement": "Run the tests with poetry run pytest.", "evidence": [first]}
    drop = {**lesson, "id": "l-drop", "statement": "Run tests via poetry run pytest.", "evidence": [second]}
    for card in (keep, drop):
        (folder / f"{card['id']}.yaml").write_text(yamlio.dumps(card), encoding="utf-8")
    hand_commit(memory, "two lessons")
    keep.update(evidence=[first, second], supersedes=["l-drop"])
    drop.update(status="superseded", superseded_by=["l-keep"])
    (folder / "l-keep.yaml").write_text(yamlio.dumps(keep), encoding="utf-8")
    (folder / "l-drop.yaml").unlink()
    (memory / "archive" / "lessons" / "l-drop.yaml").write_text(yamlio.dumps(drop), encoding="utf-8")
    hand_commit(memory, "merge the two lessons")
    data = json_of("diff", "HEAD~1", "-m", memory)
    assert [(entry["old"], entry["new"]) for entry in data["merged"]] == [("l-drop", "l-keep")]
    assert data["superseded"] == [] and data["archived"] == []
    assert [(entry["id"], entry["evidence_added"]) for entry in data["changed"]] == [("l-keep", 1)]


def test_bad_revisions_and_runs_are_one_line_usage_errors(history: History) -> None:
    for args in (["no-such-rev"], ["HEAD", "no-such-rev"], ["--run", "1999-01-01"], ["HEAD~1", "--run", history.first]):
        done = memdream("diff", *args, "-m", history.root)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("memdream: ") and done.stdout == ""
    assert "unknown revision 'no-such-rev'" in memdream("diff", "no-such-rev", "-m", history.root).stderr


def test_without_a_dream_diff_says_so(memory: Path) -> None:
    done = memdream("diff", "-m", memory)
    assert done.returncode == 1 and "no dream yet" in done.stderr and done.stderr.count("\n") == 1
    # Revisions can still be compared (here: nothing changed).
    same = memdream("diff", "HEAD", "HEAD", "-m", memory)
    assert same.returncode == 0 and "No changes to cards or the plan." in same.stdout


def test_text_in_a_pipe_is_one_plain_line_per_change(history: History) -> None:
    done = memdream("diff", "-m", history.root)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0].startswith("memory diff ") and history.second in lines[0]
    assert "superseded (1)" in lines and "archived (1)" in lines and "plan (6)" in lines
    assert any("export-bucket.region  eu-west-1 -> eu-central-1" in line for line in lines)
    assert f"  goal  {FIRST_GOAL!r} -> {SECOND_GOAL!r}" in lines
    assert "  done +  Add the refund endpoint" in lines
    assert "\x1b[" not in done.stdout


def test_diff_works_on_a_clone_without_the_raw_layer(history: History, tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(history.root), str(clone)], check=True)
    assert not (clone / "raw" / "segments").exists()
    assert json_of("diff", "-m", clone) == json_of("diff", "-m", history.root)
    assert json_of("diff", first_commit(clone), "-m", clone)["runs"] == [history.first, history.second]
