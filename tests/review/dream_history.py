"""A memory with a history of two dreams, built by real ingest and dream of realistic logs.

Dream 1 reads two Claude Code sessions (the user's goal, a todo list, two facts the user states) and
raw tool readings of the export bucket's region (eu-west-1). Dream 2 reads a later session (a new
goal, two todos done, one new), readings that show the bucket moved to eu-central-1 (a supersede)
and the user's rejection of the staging database host card (an archive).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import make_bare
from tests.gitutil import git
from tests.transcripts import ClaudeSession

START = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
CWD = "/home/dev/shop"
FIRST_GOAL = "Please add the refund endpoint to the billing service."
SECOND_GOAL = "Now deploy the refund endpoint to staging."


@dataclass(frozen=True)
class History:
    root: Path
    first: str  # run ids
    second: str


def region(value: str) -> dict[str, str]:
    return {"subject": "export-bucket", "attribute": "region", "value": value}


def event(session: str, event_id: str, ts: str, kind: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": ts, "kind": kind, "text": text, **fields}


def write_events(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in events), encoding="utf-8")
    return path


def first_logs(folder: Path) -> list[Path]:
    sessions = folder / "claude"
    for number in range(2):
        session = ClaudeSession(f"sess-{number}", CWD, START + timedelta(days=number))
        session.user(FIRST_GOAL)
        session.todo([("Add the refund endpoint", "in_progress"), ("Write tests for refunds", "pending")])
        session.user("The staging database host is db-staging-2.acme.internal.")
        session.user("The billing service listens on port 8081.")
        session.bash("git status --short", " M src/refunds.py")  # an agent action that teaches nothing
        session.write(sessions)
    readings = [
        event("s-01", "r1", "2026-11-02T09:00:00Z", "tool_result", "LocationConstraint: eu-west-1", tool="aws",
              ok=True, fact=region("eu-west-1")),
        event("s-01", "n1", "2026-11-02T09:05:00Z", "note", "The export bucket is in eu-west-1.",
              fact=region("eu-west-1")),
        event("s-02", "r2", "2026-11-03T09:00:00Z", "tool_result", "LocationConstraint: eu-west-1", tool="aws",
              ok=True, fact=region("eu-west-1")),
    ]
    return [sessions, write_events(folder / "readings-1.jsonl", readings)]


def second_logs(folder: Path, rejected_card: str) -> list[Path]:
    sessions = folder / "claude-2"
    session = ClaudeSession("sess-5", CWD, START + timedelta(days=6))
    session.user(SECOND_GOAL)
    session.todo([("Add the refund endpoint", "completed"), ("Write tests for refunds", "completed"),
                  ("Deploy refunds to staging", "in_progress")])
    session.bash("git status --short", " M src/refunds.py")
    session.write(sessions)
    events = [
        event("s-04", "r4", "2026-11-08T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1", tool="aws",
              ok=True, fact=region("eu-central-1")),
        event("s-04", "n4", "2026-11-08T09:05:00Z", "note", "The export bucket region is eu-central-1 now.",
              fact=region("eu-central-1")),
        event("s-05", "r5", "2026-11-10T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1", tool="aws",
              ok=True, fact=region("eu-central-1")),
        event("s-05", "f5", "2026-11-10T10:00:00Z", "feedback", "that host is gone", verdict="reject",
              target=rejected_card),
    ]
    # Quiet sessions: the region is memory, not state a tool reads in most sessions.
    events += [event(f"s-{n:02d}", f"c{n}", f"2026-11-{n:02d}T15:00:00Z", "message", f"review pull request {n}")
               for n in range(7, 14)]
    return [sessions, write_events(folder / "readings-2.jsonl", events)]


def memdream(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command line as users run it: a real process."""
    return subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False)


def dream(root: Path) -> str:
    """One dream through the command line; its run id."""
    done = memdream("dream", "-m", root, "-f", "json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["run"])


def ingest(root: Path, paths: list[Path]) -> None:
    done = memdream("ingest", *paths, "-m", root)
    assert done.returncode == 0, done.stderr


def card_id(root: Path, subject: str) -> str:
    (path,) = [path for path in (root / "cards").rglob("*.yaml") if f"subject: {subject}\n" in path.read_text()]
    return path.stem


def build(root: Path, logs: Path) -> History:
    """Two dreams over ``root`` (a memory made by `memdream init`)."""
    logs.mkdir(parents=True, exist_ok=True)
    ingest(root, first_logs(logs))
    first = dream(root)
    ingest(root, second_logs(logs, card_id(root, "staging database host")))
    second = dream(root)
    return History(root, first, second)


def json_of(*args: str | Path) -> Any:
    done = memdream(*args, "-f", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def first_commit(root: Path) -> str:
    return git(root, "rev-list", "--max-parents=0", "HEAD").strip()


def hand_commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def rollback_commit(root: Path, run_id: str) -> str:
    """Undo a dream as `memdream rollback` records it: a revert commit with a Memdream-Rollback trailer."""
    sha = git(root, "log", "-1", "--format=%H", "--extended-regexp", f"--grep=^Memdream-Run: {run_id}$").strip()
    git(root, "revert", "--no-commit", sha)
    git(root, "commit", "-qm", f"memdream rollback: undo {run_id}\n\nMemdream-Rollback: {run_id}")
    return git(root, "rev-parse", "HEAD").strip()


def bookkeeping_commit(root: Path, run_id: str = "2026-11-30T12-30-00Z-b00c") -> str:
    """A dream commit as versions before issue 21 made one after recalls and no new event: a card's
    reference count raised, no audit file, no ledger trailer, subject "plan and index"."""
    import yaml

    from memdream import yamlio

    card = sorted((root / "cards").rglob("*.yaml"))[0]
    data = yaml.safe_load(card.read_text(encoding="utf-8"))
    data["reference_count"] = int(data.get("reference_count") or 0) + 3
    card.write_text(yamlio.dumps(data), encoding="utf-8")
    git(root, "add", "cards")
    body = "events: 0 in 0 episode(s), 0 below budget"
    git(root, "commit", "-qm", f"memdream dream: plan and index\n\n{body}\n\nMemdream-Run: {run_id}")
    return git(root, "rev-parse", "HEAD").strip()


@contextmanager
def bare_environment(factory: pytest.TempPathFactory) -> Iterator[None]:
    """The environment the autouse fixture gives each test (tests/conftest.py), for a module fixture
    (which is built before it): no git identity, no global config, the fixed clock."""
    with pytest.MonkeyPatch.context() as patch:
        make_bare(patch, factory.mktemp("home"))
        yield


def built_once(factory: pytest.TempPathFactory) -> History:
    """The two-dream memory, built once for a test module in the bare environment."""
    with bare_environment(factory):
        base = factory.mktemp("history")
        assert memdream("init", base / "mem").returncode == 0
        return build(base / "mem", base / "logs")


def copy_of(history: History, where: Path) -> History:
    """A private copy (git history, raw layer and local state) that a test may change."""
    shutil.copytree(history.root, where, symlinks=True)
    return History(where, history.first, history.second)
