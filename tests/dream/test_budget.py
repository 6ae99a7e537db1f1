"""Budgeted dreams (`dream --max-events`): whole episodes, oldest first; the rest wait in the ledger
and the next run resumes there, even on a memory whose local state was lost."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from memdream.commands.init import init_memory
from memdream.dream.budget import DreamBudget, within
from memdream.dream.pipeline import dream
from memdream.memory.store import Memory
from tests.gitutil import git
from tests.transcripts import billing_api_project


def ingested(root: Path, logs: list[Path]) -> Memory:
    init_memory(root)
    subprocess.run([sys.executable, "-m", "memdream", "ingest", *map(str, logs), "-m", str(root)], check=True,
                   capture_output=True)
    return Memory(root)


def active(root: Path) -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(root.glob("cards/*/*.yaml"))}


def test_budgeted_runs_resume_and_end_where_one_run_ends(tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    whole = ingested(tmp_path / "whole", logs)
    one = dream(whole)
    parts = ingested(tmp_path / "parts", logs)
    runs = []
    while True:
        report = dream(parts, budget=DreamBudget(max_events=60))
        runs.append(report)
        assert report.events > 0
        if len(runs) == 2:
            shutil.rmtree(parts.root / ".memdream")  # a fresh clone mid-way: the trailers carry the ledger
        if not report.deferred:
            break
        assert len(runs) < 20, "a budgeted dream must make progress"
    assert len(runs) > 2 and sum(report.events for report in runs) == one.events
    assert active(parts.root).keys() == active(whole.root).keys()
    assert "Memdream-Deferred: " in git(parts.root, "log", "--format=%B")
    assert dream(parts).events == 0  # nothing left over


def test_within_takes_whole_episodes_oldest_first_and_at_least_one() -> None:
    def event(session: str, episode: int) -> dict[str, object]:
        return {"session": session, "tags": [f"episode:{episode}"]}

    events = [event("a", 1)] * 3 + [event("b", 1)] * 5 + [event("a", 2)] * 2
    kept, later = within(events, 4)
    assert kept == events[:3] and later == [("b", 1), ("a", 2)]
    kept, later = within(events, 2)  # the first episode alone is over budget: it is taken anyway
    assert kept == events[:3] and later == [("b", 1), ("a", 2)]
    assert within(events, None) == (events, [])


def test_the_command_line_budget_defers_and_says_so(tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    memory = ingested(tmp_path / "mem", logs[:3])
    done = subprocess.run([sys.executable, "-m", "memdream", "dream", "--max-events", "10", "-m", str(memory.root)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "episode(s) wait for the next dream" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "memdream", "dream", "--max-events", "0", "-m", str(memory.root)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
