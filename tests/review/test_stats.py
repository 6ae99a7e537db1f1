"""`memdream stats`: the figures of a memory (cards, size, conflicts, confidence, redundancy, staleness,
usage) and of its dreams (operations and corrections per run, the trend drawn), on sample-memory and on
memories made through the real command line: ingest, dream, recall, reject and correct."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdream.memory.card import Card
from memdream.review.stats import redundancy
from tests.review.dream_history import History, built_once, card_id, copy_of, dream, memdream

SAMPLE = Path(__file__).resolve().parents[2] / "sample-memory"
KEYS = ["now", "cards", "size", "conflicts", "confidence", "redundancy", "staleness", "usage", "dreams"]


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return built_once(tmp_path_factory)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A copy: stats writes the card cache under .memdream/, which sample-memory must not get."""
    return Path(shutil.copytree(SAMPLE, tmp_path / "sample"))


def stats(run: Any, root: Path, *args: str) -> dict[str, Any]:
    result = run("stats", "-m", root, "-f", "json", *args)
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_sample_memory_figures(sample: Path, run: Any) -> None:
    data = stats(run, sample)
    assert list(data) == KEYS
    active, archived = data["cards"]["active"], data["cards"]["archived"]
    assert active == {"total": 23, "by_type": {"fact": 13, "strategy": 3, "lesson": 7},
                      "by_status": {"verified": 5, "inferred": 16, "conflicting": 2}}
    assert archived == {"total": 6, "by_type": {"fact": 6, "strategy": 0, "lesson": 0},
                        "by_status": {"superseded": 6, "archived": 0}}
    card_bytes = sum(path.stat().st_size for path in (sample / "cards").rglob("*.yaml"))
    active_bytes = card_bytes + (sample / "plan.yaml").stat().st_size + (sample / "INDEX.md").stat().st_size
    assert data["size"]["active"] == {"files": 25, "bytes": active_bytes, "tokens": -(-active_bytes // 4)}
    assert data["size"]["archive"]["files"] == 6
    assert data["size"]["raw"] == {"segments": 2, "segments_here": 0, "events": 370, "bytes": 0}  # the manifest's
    assert data["conflicts"] == 2
    assert data["confidence"] == {"0.0-0.2": 0, "0.2-0.4": 0, "0.4-0.6": 0, "0.6-0.8": 18, "0.8-1.0": 5}
    assert data["redundancy"]["pairs"] == 0
    assert data["usage"] == {"logged": False, "days": 30, "recalled": None, "share": None, "active": 23}
    (only,) = data["dreams"]["runs"]
    assert data["dreams"]["count"] == 1 and data["dreams"]["last"] == only["run"] == "2026-11-17T03-00-00Z-b883"
    assert (only["add"], only["supersede"], only["archive"], only["conflict"], only["corrections"]) == (29, 6, 0, 0, 6)
    assert data["dreams"]["corrections_per_dream"] == 6.0


def test_sample_memory_text_draws_the_dreams(sample: Path, run: Any) -> None:
    result = run("stats", "-m", sample)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert "23 active (fact 13, strategy 3, lesson 7; verified 5, inferred 16, conflicting 2)" in text
    assert "conflicts   2 open" in text
    assert "no usage log here" in text and "0 %" not in text
    row = next(line for line in text.splitlines() if line.startswith("  2026-11-17 03:00"))
    assert row.split()[2:6] == ["29", "6", "0", "0"]
    assert row.endswith("+" * 33 + "!" * 7)  # 29 adds and 6 corrections on a 40-column scale, ASCII in a pipe
    assert all(ord(char) < 128 for char in text)


@pytest.mark.parametrize(("moment", "stale"), [("2026-12-01T00:00:00Z", 0), ("2027-02-08T00:00:00Z", 6),
                                               ("2027-06-01T00:00:00Z", 23)])
def test_staleness_follows_the_clock(sample: Path, run: Any, monkeypatch: pytest.MonkeyPatch, moment: str,
                                     stale: int) -> None:
    """All sample cards are decay-90d, last verified 2026-11-02 .. 11-12 (six before 11-09)."""
    monkeypatch.setenv("MEMDREAM_NOW", moment)
    figures = stats(run, sample)["staleness"]
    assert (figures["stale"], figures["with_ttl"]) == (stale, 23)
    assert len(figures["examples"]) == min(stale, 10)


def test_a_near_duplicate_card_is_a_redundant_pair(sample: Path, run: Any) -> None:
    original = sample / "cards" / "lessons" / "l-24d000.yaml"
    text = original.read_text(encoding="utf-8")
    (sample / "cards" / "lessons" / "l-24d001.yaml").write_text(
        text.replace("id: l-24d000", "id: l-24d001").replace("run the slow suite'", "run the slow suites'")
        .replace("ten minutes.", "ten minutes!"), encoding="utf-8")
    figures = stats(run, sample)["redundancy"]
    assert figures["pairs"] == 1 and figures["cards"] == 2
    assert figures["examples"][0]["cards"] == ["l-24d000", "l-24d001"]


def _card(card_id: str, subject: str, statement: str, **fields: Any) -> Card:
    return Card(id=card_id, type="lesson", subject=subject, statement=statement, status="inferred",
                confidence=0.6, evidence=[], created_at="2026-11-01T00:00:00Z", updated_at="2026-11-01T00:00:00Z",
                ttl_policy="keep", **fields)


def test_redundancy_compares_within_blocks_and_keeps_numbers_apart() -> None:
    cards = [
        _card("l-1", "deploy", "Run make deploy ENV=prod from the repository root."),
        _card("l-2", "Deploy", "Run make deploy ENV=prod from the repository root"),  # same, other spelling
        _card("l-3", "deploy", "Run make deploy ENV=prod from the repository root on port 8080."),
        _card("l-4", "deploy", "Run make deploy ENV=prod from the repository root on port 8081."),  # numbers differ
        _card("l-5", "ci", "Run make deploy ENV=prod from the repository root."),  # identical, other subject
        _card("l-6", "release", "Run make deploy ENV=prod from the repo root."),  # near, other subject: not looked for
        _card("f-1", "db", "db.port = 5433", attribute="port", value="5433"),
        _card("f-2", "DB", "db.port = 5433.", attribute="Port", value="5433"),  # one fact key: a conflict, no pair
    ]
    figures = redundancy(cards, 92.0)
    assert sorted(tuple(example["cards"]) for example in figures["examples"]) == [
        ("l-1", "l-2"), ("l-1", "l-5"), ("l-2", "l-5")]


def test_a_memory_without_dreams_shows_zeros(memory: Path, run: Any) -> None:
    data = stats(run, memory)
    assert data["cards"]["active"]["total"] == 0 and data["conflicts"] == 0
    assert data["dreams"] == {"count": 0, "last": None, "shown": 0, "corrections_per_dream": None, "runs": []}
    assert data["size"]["active"]["files"] == 2  # plan.yaml, INDEX.md
    result = run("stats", "-m", memory)
    assert result.exit_code == 0 and "no dream yet" in result.stdout


def test_not_a_memory_is_one_line(tmp_path: Path) -> None:
    done = memdream("stats", "-m", tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("memdream: ") and done.stderr.count("\n") == 1
    assert "is not a memdream memory" in done.stderr


@pytest.mark.parametrize("args", [["--days", "0"], ["--runs", "-1"], ["--format", "yaml"], ["--days", "week"]])
def test_usage_errors_are_one_line_and_exit_2(memory: Path, args: list[str]) -> None:
    done = memdream("stats", "-m", memory, *args)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr


def test_help_names_values_by_what_they_are() -> None:
    done = memdream("stats", "--help")
    assert done.returncode == 0 and done.stdout.startswith("Usage: memdream stats ")
    assert "--days N" in done.stdout and "--runs K" in done.stdout and "--format text|json" in done.stdout
    assert "<int>" not in done.stdout and "INTEGER" not in done.stdout


def test_dreams_recalls_and_verdicts(history: History, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     run: Any) -> None:
    """Dream 1 adds cards, dream 2 supersedes the bucket's region and archives the host the user rejected;
    a recall makes usage; `memdream correct` and a third dream supersede the port."""
    copy = copy_of(history, tmp_path / "mem")
    root = copy.root
    first = stats(run, root)
    assert first["usage"]["logged"] is False  # no recall yet
    runs = first["dreams"]["runs"]
    assert [item["run"] for item in runs] == [history.first, history.second]
    assert runs[0]["supersede"] == 0 and runs[0]["corrections"] == 0 and runs[0]["add"] >= 3
    assert (runs[1]["supersede"], runs[1]["rejected"], runs[1]["corrections"]) == (1, 1, 2)
    assert first["dreams"]["corrections_per_dream"] == 1.0

    recalled = memdream("recall", "export bucket region", "-m", root, "-f", "json")
    assert recalled.returncode == 0, recalled.stderr
    returned = {card for line in (root / ".memdream" / "usage.jsonl").read_text().splitlines()
                for card in json.loads(line)["cards"]}
    assert returned
    usage = stats(run, root)["usage"]
    active = first["cards"]["active"]["total"]
    assert usage == {"logged": True, "days": 30, "recalled": len(returned), "share": round(len(returned) / active, 4),
                     "active": active}
    monkeypatch.setenv("MEMDREAM_NOW", "2027-03-01T00:00:00Z")  # the recall is months old now
    assert stats(run, root, "--days", "7")["usage"]["recalled"] == 0
    monkeypatch.undo()
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-30T12:00:00Z")

    port = card_id(root, "billing service")
    assert memdream("correct", port, "--value", "8082", "-m", root).returncode == 0
    monkeypatch.setenv("MEMDREAM_NOW", "2026-12-01T03:00:00Z")
    third = dream(root)
    data = stats(run, root)
    assert data["dreams"]["count"] == 3 and data["dreams"]["last"] == third
    assert data["dreams"]["runs"][-1]["supersede"] == 1 and data["dreams"]["runs"][-1]["corrections"] == 1
    assert data["dreams"]["corrections_per_dream"] == 1.0
    assert [item["run"] for item in stats(run, root, "--runs", "2")["dreams"]["runs"]] == [history.second, third]
    assert stats(run, root, "--runs", "0")["dreams"]["runs"] == []

    text = run("stats", "-m", root).stdout
    assert "dreams      3 run(s); 1.0 correction(s) per dream over the last 3" in text
    assert "  corrections  _@+  (max 2, last 1)" in text  # 0, 2, 1: the trend as one character per dream
    rows = [line for line in text.splitlines() if line.startswith("  2026-")]
    assert len(rows) == 3 and "!!" in rows[1] and "-" in rows[1].split()[-1]  # corrections and the archive drawn


def test_a_clone_without_local_state_says_it_has_no_usage_log(history: History, tmp_path: Path, run: Any) -> None:
    copy = copy_of(history, tmp_path / "mem")
    assert memdream("recall", "export bucket region", "-m", copy.root).returncode == 0
    assert stats(run, copy.root)["usage"]["logged"] is True
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(copy.root), str(clone)], check=True)
    assert not (clone / ".memdream").exists()
    here, there = stats(run, copy.root), stats(run, clone)
    assert there["usage"] == {"logged": False, "days": 30, "recalled": None, "share": None,
                              "active": here["cards"]["active"]["total"]}
    assert there["cards"] == here["cards"] and there["dreams"] == here["dreams"]
    assert there["size"]["raw"]["events"] == here["size"]["raw"]["events"] and there["size"]["raw"]["bytes"] == 0
    assert "no usage log here" in run("stats", "-m", clone).stdout


def test_runs_of_one_second_keep_their_commit_order_in_a_clone(history: History, tmp_path: Path, run: Any) -> None:
    """Both dreams of the history ran under one fixed clock; a clone writes every file at once, so the
    files' times cannot say which ran first: the commits that added them do."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(history.root), str(clone)], check=True)
    first, second = (clone / "audit" / f"{run_id}.jsonl" for run_id in (history.first, history.second))
    os.utime(first, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))  # the older run, written later
    os.utime(second, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    assert [item["run"] for item in stats(run, clone)["dreams"]["runs"]] == [history.first, history.second]
