"""`memdream context --session-start`: the SessionStart hook contract, run as Claude Code runs it (a
`python -m memdream` process, the hook's JSON on stdin), on a memory learned from real-format transcripts
of two projects (billing-api from tests/transcripts.py, and a second project, shop)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests import transcripts as scenario
from tests.transcripts import ClaudeSession, billing_api_project

NOW = "2026-11-20T00:00:00Z"
SHOP_CWD = "/home/dev/shop"
SHOP_INSTRUCTION = "Always use pnpm, never npm, in this repository."
SHOP_GOAL = "Add a wishlist page to the shop."


def cron_env(home: Path) -> dict[str, str]:
    """What a hook or cron gives memdream: no git identity, no colour, a fixed clock, no memory named."""
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("GIT_", "MEMDREAM_", "EMAIL", "GITHUB_"))}
    return {**keep, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / "none"), "GIT_CONFIG_NOSYSTEM": "1",
            "NO_COLOR": "1", "MEMDREAM_NOW": NOW}


def memdream(*args: str | Path, env: dict[str, str], cwd: Path, stdin: str | None = None,
             check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], input=stdin, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"memdream {args[0]} exited {done.returncode}: {done.stderr}")
    return done


def shop_session(start: datetime) -> ClaudeSession:
    """A session on another project: its own instruction and goal, which billing-api must never see."""
    session = ClaudeSession("7a1e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a01", SHOP_CWD, start)
    session.user(f"{SHOP_GOAL} {SHOP_INSTRUCTION}")
    session.assistant("I'll install the dependencies with pnpm and start on the page.")
    session.todo([("Add the wishlist route", "in_progress"), ("Add a wishlist button to product pages", "pending")])
    session.bash("pnpm install", "Packages: +412\nDone in 8.1s")
    return session


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """billing-api's two weeks and one shop session, ingested and dreamed by the real command line."""
    base = tmp_path_factory.mktemp("learned")
    logs = base / "logs"
    billing_api_project(logs)
    shop_session(datetime(2026, 11, 17, 9, 0, 0, tzinfo=timezone.utc)).write(
        logs / "claude-code" / scenario.claude_project_dir(SHOP_CWD))
    env = cron_env(base)
    root = base / "memory"
    memdream("init", root, env=env, cwd=base)
    memdream("ingest", logs, "-m", root, env=env, cwd=base)
    memdream("dream", "-m", root, env=env, cwd=base)
    yield root, env


def hook_payload(cwd: str, source: str = "startup") -> str:
    return json.dumps({"session_id": "5c0a3d0e-1f4e-4b7a-9a51-2b3c4d5e6f70",
                       "transcript_path": f"/home/dev/.claude/projects/x/{source}.jsonl", "cwd": cwd,
                       "hook_event_name": "SessionStart", "source": source})


def session_context(done: subprocess.CompletedProcess[str]) -> str:
    """The additionalContext of a SessionStart hook's output, after checking the output's shape."""
    output = json.loads(done.stdout)
    assert list(output) == ["hookSpecificOutput"]
    specific = output["hookSpecificOutput"]
    assert specific["hookEventName"] == "SessionStart"
    assert isinstance(specific["additionalContext"], str)
    return str(specific["additionalContext"])


def test_a_session_of_billing_api_starts_with_its_plan_instructions_and_lessons(learned: Any) -> None:
    root, env = learned
    done = memdream("context", "--session-start", "-m", root, env=env, cwd=root.parent,
                    stdin=hook_payload(scenario.PROJECT_CWD))
    context = session_context(done)
    assert "project billing-api" in context.splitlines()[0]
    assert "Plan: " + scenario.NEWEST_GOAL in context
    assert "Return the stored response when a key repeats" in context  # a next action of the plan
    assert scenario.USER_INSTRUCTION in context and scenario.REJECTION_WORDS in context
    assert scenario.FIX_COMMAND in context and scenario.RECURRING_ERROR in context  # the error -> fix lesson
    assert str(scenario.NEW_PORT) in context
    assert len(context.encode("utf-8")) <= 2000
    assert done.stderr == ""
    # With room for every card, still none of the other project's.
    roomy = session_context(memdream("context", "--session-start", "-m", root, "--budget", "20000", env=env,
                                     cwd=root.parent, stdin=hook_payload(scenario.PROJECT_CWD)))
    assert scenario.USER_PREFERENCE in roomy and scenario.USER_INSTRUCTION in roomy
    assert SHOP_INSTRUCTION not in roomy and "pnpm" not in roomy and SHOP_GOAL not in roomy


def test_a_session_of_the_other_project_sees_its_own_cards_not_billing_apis(learned: Any) -> None:
    root, env = learned
    context = session_context(memdream("context", "--session-start", "-m", root, env=env, cwd=root.parent,
                                       stdin=hook_payload(SHOP_CWD)))
    assert "project shop" in context.splitlines()[0]
    assert SHOP_INSTRUCTION in context
    assert scenario.USER_INSTRUCTION not in context and "billing" not in context.lower()
    # A preference said in billing-api is billing-api's: the user did not say it holds everywhere.
    assert scenario.USER_PREFERENCE not in context


def test_the_project_is_named_from_a_real_checkout_as_ingest_names_it(learned: Any, tmp_path: Path) -> None:
    """A clone in a folder of another name is billing-api by its remote, as ingest tagged the events."""
    root, env = learned
    checkout = tmp_path / "work" / "billing"
    checkout.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, env=env)
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", scenario.REPOSITORY_URL], check=True, env=env)
    (checkout / "src").mkdir()
    context = session_context(memdream("context", "--session-start", "-m", root, env=env, cwd=checkout / "src",
                                       stdin=hook_payload(str(checkout / "src"))))
    assert "project billing-api" in context and scenario.USER_INSTRUCTION in context


def test_the_budget_bounds_the_context(learned: Any) -> None:
    root, env = learned
    for budget in (400, 900):
        context = session_context(memdream("context", "--session-start", "-m", root, "--budget", str(budget),
                                           env=env, cwd=root.parent, stdin=hook_payload(scenario.PROJECT_CWD)))
        assert len(context.encode("utf-8")) <= budget
        assert "Plan: " in context


def test_the_memory_is_found_from_the_sessions_folder(learned: Any, tmp_path: Path) -> None:
    """Without --memory, the hook looks above the session's cwd (where a project keeps its memory)."""
    root, env = learned
    inside = root / "notes"
    inside.mkdir(exist_ok=True)
    done = memdream("context", "--session-start", env=env, cwd=tmp_path, stdin=hook_payload(str(inside)))
    # Found (a missing memory is one line on stderr); the memory's own folder is no project it learned
    # of, so there is nothing to inject.
    assert done.returncode == 0 and done.stderr == "" and done.stdout == ""
    missing = memdream("context", "--session-start", env=env, cwd=tmp_path, stdin=hook_payload(str(tmp_path)))
    assert missing.stdout == "" and missing.stderr.startswith("memdream: context --session-start: ")


def test_session_start_counts_no_use_of_the_cards_it_shows(learned: Any) -> None:
    root, env = learned
    usage = root / ".memdream" / "usage.jsonl"
    before = usage.read_bytes() if usage.exists() else b""
    memdream("context", "--session-start", "-m", root, env=env, cwd=root.parent,
             stdin=hook_payload(scenario.PROJECT_CWD))
    assert (usage.read_bytes() if usage.exists() else b"") == before


def test_an_empty_memory_injects_nothing(tmp_path: Path) -> None:
    env = cron_env(tmp_path)
    memdream("init", tmp_path / "m", env=env, cwd=tmp_path)
    done = memdream("context", "--session-start", "-m", tmp_path / "m", env=env, cwd=tmp_path,
                    stdin=hook_payload(scenario.PROJECT_CWD))
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def test_a_project_the_memory_knows_nothing_of_gets_nothing(learned: Any, tmp_path: Path) -> None:
    """The memory knows billing-api and shop: a session of a third project gets no context at all, not
    a note, and not the others' global preferences either (nothing the memory learned was learned there)."""
    root, env = learned
    done = memdream("context", "--session-start", "-m", root, env=env, cwd=tmp_path,
                    stdin=hook_payload("/home/dev/weather-station"))
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    # the same memory still serves the projects it knows
    assert "project shop" in session_context(memdream("context", "--session-start", "-m", root, env=env,
                                                      cwd=tmp_path, stdin=hook_payload(SHOP_CWD)))


@pytest.mark.parametrize("case", ["no memory", "interrupted dream", "not json", "wrong event", "memory gone"])
def test_no_memory_or_a_broken_one_never_breaks_the_session(case: str, tmp_path: Path) -> None:
    env = cron_env(tmp_path)
    root = tmp_path / "m"
    memdream("init", root, env=env, cwd=tmp_path)
    args: list[str | Path] = ["context", "--session-start", "-m", root]
    stdin = hook_payload(str(tmp_path))
    if case == "no memory":
        args = ["context", "--session-start"]
    elif case == "interrupted dream":
        (root / ".memdream" / "dream").mkdir(parents=True, exist_ok=True)
        (root / ".memdream" / "dream" / "journal.json").write_text("{}", encoding="utf-8")
    elif case == "not json":
        stdin = "{not json"
    elif case == "wrong event":
        stdin = json.dumps({"cwd": str(tmp_path), "hook_event_name": "Stop"})
    else:
        args = ["context", "--session-start", "-m", tmp_path / "gone"]
    done = memdream(*args, env=env, cwd=tmp_path, stdin=stdin, check=False)
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr.startswith("memdream: context --session-start: ") and len(done.stderr.splitlines()) == 1
    assert done.stderr.count("context --session-start") == 1  # issue 21.6: the prefix once, not twice


def test_conflicting_values_of_the_project_come_together_and_other_projects_stay_out(
        memory: Path, write_card: Any, tmp_path: Path) -> None:
    """Two values of one fact key, neither confirmed: shown as one conflict item, as recall shows it;
    the same key's card in another project is not a partner."""
    common = {"subject": "staging db", "attribute": "port", "status": "conflicting", "scope": "billing-api",
              "tags": ["project:billing-api"]}
    write_card(id="f-00000a", value="5433", statement="The staging db listens on port 5433.", **common)
    write_card(id="f-00000b", value="6432", statement="The staging db listens on port 6432.", **common)
    write_card(id="f-00000c", subject="staging db", attribute="port", value="7000", status="conflicting",
               statement="The staging db listens on port 7000.", scope="shop", tags=["project:shop"])
    done = memdream("context", "--session-start", "-m", memory, env=cron_env(tmp_path), cwd=tmp_path,
                    stdin=hook_payload(scenario.PROJECT_CWD))
    context = session_context(done)
    [line] = [line for line in context.splitlines() if "conflict" in line]
    assert "5433" in line and "6432" in line and "7000" not in context
