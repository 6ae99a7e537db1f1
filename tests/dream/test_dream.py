"""Dream end to end on a real git memory: ingest a generated multi-session log, dream, inspect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memdream import yamlio
from tests.dream.generator import build, write
from tests.gitutil import git


def load(root: Path, folder: str) -> dict[str, dict]:
    return {p.stem: yamlio.load_file(p) for p in sorted((root / folder).rglob("*.yaml"))}


def active_by_key(root: Path) -> dict[tuple[str, str], list[dict]]:
    found: dict[tuple[str, str], list[dict]] = {}
    for card in load(root, "cards").values():
        if "attribute" in card:
            found.setdefault((card["subject"], card["attribute"]), []).append(card)
    return found


@pytest.fixture
def dreamed(memory: Path, tmp_path: Path, run, monkeypatch) -> Path:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    log = write(tmp_path / "agent.jsonl", build())
    assert run("ingest", log, "-m", memory).exit_code == 0
    result = run("dream", "-m", memory)
    assert result.exit_code == 0, result.stderr
    return memory


def test_every_current_fact_has_one_active_card_with_the_current_value(dreamed: Path) -> None:
    by_key = active_by_key(dreamed)
    values = {key: [card["value"] for card in cards] for key, cards in by_key.items()}
    assert values[("export-bucket", "region")] == ["eu-central-1"]
    assert values[("deploy", "command")] == ["make deploy ENV=prod"]
    assert values[("postgres", "version")] == ["16.1"]
    assert values[("API", "base url")] == ["https://api.acme.example"]
    assert set(values) == {("export-bucket", "region"), ("deploy", "command"), ("postgres", "version"),
                           ("API", "base url")}


def test_corrected_fact_is_verified_by_tool_and_user(dreamed: Path) -> None:
    (card,) = active_by_key(dreamed)[("export-bucket", "region")]
    assert card["status"] == "verified"
    kinds = {(e["ref"], e["kind"], e["stance"]) for e in card["evidence"]}
    assert ("log://s-02#r-loc", "observation", "supports") in kinds
    assert ("log://s-02#f-loc", "feedback", "supports") in kinds
    assert all(e["hash"].startswith("sha256:") for e in card["evidence"])


def test_old_values_are_archived_with_the_supersession_chain(dreamed: Path) -> None:
    archived = load(dreamed, "archive")
    active = {card["id"]: card for cards in active_by_key(dreamed).values() for card in cards}
    old_values = {(c["subject"], c["attribute"], c["value"]): c for c in archived.values() if "attribute" in c}
    for key, old, new in [(("export-bucket", "region"), "eu-west-1", "eu-central-1"),
                          (("deploy", "command"), "make deploy", "make deploy ENV=prod"),
                          (("postgres", "version"), "15.4", "16.1")]:
        old_card = old_values[(*key, old)]
        assert old_card["status"] == "superseded"
        (successor,) = old_card["superseded_by"]
        assert active[successor]["value"] == new
        assert old_card["id"] in active[successor]["supersedes"]


def test_no_volatile_reading_and_no_injected_instruction_is_a_card(dreamed: Path) -> None:
    everything = {**load(dreamed, "cards"), **load(dreamed, "archive")}
    subjects = {card["subject"] for card in everything.values()}
    assert "ci" not in subjects
    assert "agent" not in subjects
    assert "evil.example" not in json.dumps(list(everything.values()))


def test_the_plan_is_current(dreamed: Path) -> None:
    plan = yamlio.load_file(dreamed / "plan.yaml")
    assert plan["goal"] == "move the export to the new cluster"
    assert [item["text"] for item in plan["next"]] == ["check the export of day 6", "update the runbook"]
    assert plan["next"][0]["evidence"] == ["log://s-06#p"]
    done = [item["text"] for item in plan["done"]]
    assert "day 6 triage" in done and "nightly export restored" in done


def test_one_commit_with_trailers_and_an_audit_file(dreamed: Path) -> None:
    message = git(dreamed, "log", "-1", "--format=%B")
    assert message.startswith("memdream dream: ")
    assert "Memdream-Run: " in message and "Memdream-Consumed: segments 000001..000001" in message
    run_id = message.split("Memdream-Run: ")[1].split()[0]
    audit = [json.loads(line) for line in (dreamed / "audit" / f"{run_id}.jsonl").read_text().splitlines()]
    ops = [line["op"] for line in audit]
    assert ops.index("supersede") < ops.index("add")  # corrections before additions
    assert {"supersede", "add"} <= set(ops)
    for line in audit:
        assert line["run"] == run_id and line["card"]
        if line["op"] == "evidence":  # what a card holds beyond the pieces it shows
            assert line["added"] and all(item["ref"].startswith("log://") for item in line["added"])
            continue
        assert line["reason"] and "confidence_before" in line and "confidence_after" in line
    assert git(dreamed, "status", "--porcelain") == ""
    assert "cards/facts/" in (dreamed / "INDEX.md").read_text()


def test_lint_passes_after_dreaming(dreamed: Path, run) -> None:
    result = run("lint", dreamed)
    assert result.exit_code == 0, result.stdout


def test_dreaming_again_changes_nothing(dreamed: Path, run) -> None:
    head = git(dreamed, "rev-parse", "HEAD")
    result = run("dream", "-m", dreamed, "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["commit"] is None and report["changes"] == []
    assert git(dreamed, "rev-parse", "HEAD") == head


def test_dreaming_the_same_events_again_without_local_state_changes_nothing(dreamed: Path, run) -> None:
    """The checkpoint is lost (a fresh clone keeps git, not .memdream/): it comes back from git."""
    import shutil

    shutil.rmtree(dreamed / ".memdream" / "dream")
    head = git(dreamed, "rev-parse", "HEAD")
    report = json.loads(run("dream", "-m", dreamed, "-f", "json").stdout)
    assert report["changes"] == [] and git(dreamed, "rev-parse", "HEAD") == head


def test_metrics_are_reported(dreamed: Path, tmp_path: Path, run, memory: Path) -> None:
    more = write(tmp_path / "more.jsonl", [
        {"session": "s-07", "ts": "2026-11-13T09:00:00Z", "kind": "tool_result", "id": "loc2", "tool": "aws",
         "ok": True, "text": "LocationConstraint: eu-north-1",
         "fact": {"subject": "export-bucket", "attribute": "region", "value": "eu-north-1"}}])
    run("ingest", more, "-m", dreamed)
    report = json.loads(run("dream", "-m", dreamed, "-f", "json").stdout)
    # The user confirmed eu-central-1: a newer tool reading against the user's word is a conflict
    # (both shown, flagged), not a replacement.
    assert report["before"]["active_cards"] == 4 and report["after"]["active_cards"] == 5
    assert report["after"]["superseded"] == report["before"]["superseded"]
    assert sum(report["after"]["confidence"].values()) == 5
    assert report["counts"] == {"conflict": 1, "add": 1}
    assert {card["status"] for card in active_by_key(dreamed)[("export-bucket", "region")]} == {"conflicting"}


def test_a_value_that_keeps_changing_is_archived_as_state(dreamed: Path, tmp_path: Path, run) -> None:
    """postgres.version read 15.4, 16.1, 16.1, then 17.0: most readings changed it."""
    more = write(tmp_path / "more.jsonl", [
        {"session": "s-07", "ts": "2026-11-13T09:00:00Z", "kind": "tool_result", "id": "pg4", "tool": "psql",
         "ok": True, "text": "PostgreSQL 17.0",
         "fact": {"subject": "postgres", "attribute": "version", "value": "17.0"}}])
    run("ingest", more, "-m", dreamed)
    report = json.loads(run("dream", "-m", dreamed, "-f", "json").stdout)
    assert [op["op"] for op in report["operations"]] == ["supersede", "add", "archive"]
    assert "volatile" in report["operations"][-1]["reason"]
    assert ("postgres", "version") not in active_by_key(dreamed)
    assert run("lint", dreamed).exit_code == 0
