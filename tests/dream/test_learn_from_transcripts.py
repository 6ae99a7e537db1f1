"""Dream learns from the logs people actually have: real-format Claude Code and Codex sessions of one
project in, lessons, a strategy, the user's instructions, stated facts and the plan out.

Everything runs as users run it: `python -m memdream` processes on a memory made by `memdream init`,
fed with the transcripts of :func:`tests.transcripts.billing_api_project`.
"""

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

from memdream import yamlio
from tests import transcripts as scenario
from tests.transcripts import ClaudeSession, CodexSession, billing_api_project, conftest_import_error, pytest_passed

NOW = "2026-11-20T00:00:00Z"


def _env(home: Path) -> dict[str, str]:
    """What cron gives memdream: no git identity, no colour, a fixed clock."""
    keep = {name: value for name, value in os.environ.items()
            if not name.startswith(("GIT_", "MEMDREAM_", "EMAIL", "GITHUB_"))}
    return {**keep, "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / "none"), "GIT_CONFIG_NOSYSTEM": "1",
            "NO_COLOR": "1", "MEMDREAM_NOW": NOW}


class Memdream:
    """The real command line, as a subprocess, on one memory."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.env = root, _env(home)

    def __call__(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                              env=self.env, cwd=self.root.parent)
        if check and done.returncode != 0:
            raise AssertionError(f"memdream {args[0]} exited {done.returncode}: {done.stderr}")
        return done

    def json(self, *args: str | Path) -> Any:
        return json.loads(self(*args).stdout)

    def cards(self, *args: str) -> list[dict[str, Any]]:
        return list(self.json("cards", "-m", self.root, "--format", "json", *args))


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Memdream, dict[str, Any]]]:
    """The scenario ingested and dreamed once; the dream's JSON report."""
    base = tmp_path_factory.mktemp("learn")
    logs = base / "logs"
    billing_api_project(logs)
    cli = Memdream(base / "memory", base)
    cli("init", cli.root)
    cli("ingest", logs, "-m", cli.root)
    report = cli.json("dream", "-m", cli.root, "--format", "json")
    yield cli, report


def _active(cli: Memdream, card_type: str) -> list[dict[str, Any]]:
    return cli.cards("--type", card_type)


def _workflows(cli: Memdream) -> list[dict[str, Any]]:
    """The strategies induced from workflows (the project's procedures card is a strategy too)."""
    return [card for card in cli.cards("--type", "strategy") if "workflow" in card.get("tags", [])]


def test_one_lesson_per_recurring_error_names_the_command_the_error_and_the_fix(learned: Any) -> None:
    cli, _ = learned
    lessons = [card for card in _active(cli, "lesson") if "error-fix" in card.get("tags", [])]
    assert len(lessons) == 1
    [lesson] = lessons
    assert scenario.FAILING_COMMAND in lesson["statement"] and scenario.RECURRING_ERROR in lesson["statement"]
    assert scenario.FIX_COMMAND in lesson["statement"] and lesson["scope"] == scenario.PROJECT
    assert lesson["status"] == "verified"
    assert len({ref["ref"].split("#")[0] for ref in lesson["evidence"]}) >= 2  # seen in two sessions


def test_a_one_off_fix_stays_evidence_not_a_card(learned: Any) -> None:
    cli, report = learned
    assert report["not_admitted"].get("one-off") == 1
    text = json.dumps(cli.cards("--archived"))
    assert scenario.ONE_OFF_FIX not in text and scenario.ONE_OFF_COMMAND not in text


def test_one_strategy_with_the_recurring_steps_in_order(learned: Any) -> None:
    cli, _ = learned
    [strategy] = _workflows(cli)
    assert strategy["scope"] == scenario.PROJECT and strategy["status"] == "verified"
    positions = [strategy["statement"].find(f"`{step}") for step in scenario.WORKFLOW]
    assert all(position >= 0 for position in positions) and positions == sorted(positions)
    assert "git status" not in strategy["statement"] and "git diff" not in strategy["statement"]
    lesson = next(card for card in _active(cli, "lesson") if "error-fix" in card.get("tags", []))
    assert lesson["id"] in strategy.get("derived_from", [])


def test_how_the_project_is_set_up_tested_and_linted_is_one_card(learned: Any) -> None:
    cli, _ = learned
    [card] = [card for card in _active(cli, "strategy") if "procedure" in card.get("tags", [])]
    assert card["scope"] == scenario.PROJECT and card["status"] == "verified"
    assert card["statement"] == (f"In {scenario.PROJECT}: install `poetry install`; test `{scenario.FIX_COMMAND}`; "
                                 "lint `poetry run ruff check .`.")


def test_the_users_instructions_preferences_and_rejections_quote_their_words(learned: Any) -> None:
    cli, _ = learned
    statements = [card["statement"] for card in _active(cli, "lesson")]
    assert any(f'"{scenario.USER_INSTRUCTION}"' in text for text in statements)
    assert any(f'"{scenario.USER_PREFERENCE}"' in text for text in statements)
    assert any(scenario.REJECTION_WORDS in text and scenario.REJECTED_COMMAND in text for text in statements)
    assert any("Never force-push, the branch is shared." in text for text in statements)


def test_stated_facts_keep_the_current_value_and_supersede_the_old(learned: Any) -> None:
    cli, _ = learned
    facts = {(card["subject"].lower(), card["attribute"]): card for card in _active(cli, "fact")}
    port = facts[("staging database", "port")]
    assert port["value"] == str(scenario.NEW_PORT) and port.get("supersedes")
    [old] = cli.cards("--status", "superseded")
    assert old["value"] == str(scenario.OLD_PORT) and old["superseded_by"] == [port["id"]]
    assert facts[("invoices bucket", "location")]["value"] == scenario.BUCKET_REGION
    everything = json.dumps(cli.cards("--archived"))
    assert "5432" not in everything and "Redis" not in json.dumps(_active(cli, "fact"))


def test_the_plan_is_the_newest_sessions_goal_and_open_todos(learned: Any) -> None:
    cli, _ = learned
    plan = yamlio.load_file(cli.root / "plan.yaml")
    assert plan["goal"] == scenario.NEWEST_GOAL
    open_items = [text for text, status in scenario.NEWEST_TODOS if status != "completed"]
    assert [item["text"] for item in plan["next"]] == open_items
    assert all(item["scope"] == scenario.PROJECT for item in plan["next"])
    assert {item["scope"] for item in plan["goals"]} == {scenario.PROJECT}


def test_nothing_from_injected_text_no_volatile_number_no_secret(learned: Any) -> None:
    cli, _ = learned
    cards = json.dumps(cli.cards("--archived")) + (cli.root / "plan.yaml").read_text()
    assert "evil.example" not in cards and "curl" not in cards
    assert "passed in" not in cards and " passed" not in cards  # test counts and durations are not memory
    files = [path for path in cli.root.rglob("*") if path.is_file() and ".git" not in path.parts]
    history = subprocess.run(["git", "-C", str(cli.root), "log", "-p", "--all"], capture_output=True, text=True,
                             check=True).stdout
    for secret in scenario.SECRETS:
        assert secret not in history
        assert not [path for path in files if secret.encode() in path.read_bytes()]


def test_lint_is_clean_and_a_second_dream_changes_nothing(learned: Any) -> None:
    cli, _ = learned
    assert cli("lint", cli.root).returncode == 0
    head = subprocess.run(["git", "-C", str(cli.root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    again = cli("dream", "-m", cli.root).stdout
    assert "nothing to change; no commit" in again
    assert subprocess.run(["git", "-C", str(cli.root), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == head


def test_recall_answers_how_to_run_the_tests_and_a_pasted_error(learned: Any) -> None:
    cli, _ = learned
    for query in (f"how do I run the tests in {scenario.PROJECT}", scenario.RECURRING_ERROR):
        result = cli.json("recall", query, "-m", cli.root, "--budget", "1500", "--format", "json")
        assert result["bytes"] <= 1500 and scenario.FIX_COMMAND in result["context"]


def test_recall_keeps_the_standing_instructions_of_the_scope_resident(learned: Any) -> None:
    cli, _ = learned
    result = cli.json("recall", "show me how to implement login", "-m", cli.root, "--scope", scenario.PROJECT,
                      "--budget", "2000", "--format", "json")
    resident = [item for item in result["items"] if item.get("resident")]
    assert resident and all(item["source"] == "card" for item in resident)
    assert scenario.NEWEST_GOAL in result["context"]


def _dreamed(tmp_path: Path) -> Memdream:
    """A new memory that ingested ``tmp_path/logs`` and dreamed once."""
    cli = Memdream(tmp_path / "memory", tmp_path)
    cli("init", cli.root)
    cli("ingest", tmp_path / "logs", "-m", cli.root)
    cli("dream", "-m", cli.root)
    return cli


def _start(day: int) -> datetime:
    return datetime(2026, 11, day, 9, 0, tzinfo=timezone.utc)


def test_a_compaction_summary_retelling_an_episode_is_not_a_second_occurrence(tmp_path: Path) -> None:
    first = ClaudeSession("1b0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a61", scenario.PROJECT_CWD, _start(2))
    first.user("Run the tests please.")
    first.bash(scenario.FAILING_COMMAND, conftest_import_error(scenario.PROJECT_CWD), exit_code=4)
    first.bash(scenario.FIX_COMMAND, pytest_passed(12, 1.5))
    first.compact(f"Summary: `{scenario.FAILING_COMMAND}` failed with {scenario.RECURRING_ERROR}; "
                  f"`{scenario.FIX_COMMAND}` worked.")
    first.bash(scenario.FIX_COMMAND, pytest_passed(12, 1.4))
    first.write(tmp_path / "logs")
    cli = Memdream(tmp_path / "memory", tmp_path)
    cli("init", cli.root)
    cli("ingest", tmp_path / "logs", "-m", cli.root)
    report = cli.json("dream", "-m", cli.root, "--format", "json")
    assert report["not_admitted"].get("one-off") == 1 and cli.cards("--type", "lesson") == []
    # The same error and fix in a Codex session: now it recurs, in a later dream.
    second = CodexSession("0199aa00-0000-7f10-9c5d-4e8b1a2f6d37", scenario.PROJECT_CWD, _start(4),
                          repository_url=scenario.REPOSITORY_URL)
    second.user("Check that the suite still passes.")
    second.shell(scenario.FAILING_COMMAND, conftest_import_error(scenario.PROJECT_CWD), exit_code=4)
    second.shell(scenario.FIX_COMMAND, pytest_passed(12, 1.5))
    second.write(tmp_path / "logs2")
    cli("ingest", tmp_path / "logs2", "-m", cli.root)
    cli("dream", "-m", cli.root)
    [lesson] = cli.cards("--type", "lesson")
    assert lesson["status"] == "verified" and scenario.FIX_COMMAND in lesson["statement"]


def test_a_later_contrary_instruction_supersedes_the_earlier_one(tmp_path: Path) -> None:
    for number, (day, words) in enumerate([(2, "Always run ruff before committing."),
                                           (5, "Don't run ruff before committing anymore, CI does it.")]):
        session = ClaudeSession(f"2b0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a6{number}", scenario.PROJECT_CWD, _start(day))
        session.user(f"Fix the typo in the README. {words}")
        session.bash("git status", " M README.md")
        session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    [current] = cli.cards("--type", "lesson")
    assert "Don't run ruff before committing anymore" in current["statement"] and current.get("supersedes")
    [old] = cli.cards("--status", "superseded")
    assert "Always run ruff" in old["statement"]


def test_a_strategy_whose_steps_start_failing_is_demoted_then_superseded(tmp_path: Path) -> None:
    cli = Memdream(tmp_path / "memory", tmp_path)
    cli("init", cli.root)

    def sessions(first_day: int, test_command: str, ok: bool, count: int, folder: str) -> None:
        for number in range(count):
            session = ClaudeSession(f"3b0e7c2a-9f41-4d6e-b8a3-{folder}{number:05d}", scenario.PROJECT_CWD,
                                    _start(first_day + number))
            session.user(f"Change number {first_day + number}.")
            session.bash(test_command, pytest_passed(20, 2.0) if ok else "command not found: poetry",
                         exit_code=0 if ok else 127)
            if ok:
                session.bash("poetry run ruff check ." if "poetry" in test_command else "uv run ruff check .",
                             "All checks passed!")
                session.bash(f'git commit -m "change {first_day + number}"', "[main 1a2b3c4] change")
            session.write(tmp_path / folder)
        cli("ingest", tmp_path / folder, "-m", cli.root)
        cli("dream", "-m", cli.root)

    sessions(1, "poetry run pytest -q", True, 3, "a")
    [strategy] = _workflows(cli)
    assert strategy["status"] == "verified" and "poetry run pytest -q" in strategy["statement"]
    sessions(10, "poetry run pytest -q", False, 2, "b")  # poetry is gone from the machine
    [demoted] = _workflows(cli)
    assert demoted["status"] == "inferred" and "review" in demoted
    sessions(15, "uv run pytest -q", True, 3, "c")  # the project moved to uv
    [current] = _workflows(cli)
    assert "uv run pytest -q" in current["statement"] and current.get("supersedes") == [strategy["id"]]


def test_a_single_tool_reading_with_a_time_unit_is_not_admitted(tmp_path: Path) -> None:
    events = [
        {"session": "s1", "ts": "2026-11-02T10:00:00Z", "kind": "note", "id": "n1", "text": "uptime is 1380s",
         "fact": {"subject": "service", "attribute": "uptime", "value": "1380s"}},
        {"session": "s1", "ts": "2026-11-02T10:00:05Z", "kind": "tool_result", "id": "r1", "tool": "curl", "ok": True,
         "text": "uptime: 1380s", "fact": {"subject": "service", "attribute": "uptime", "value": "1380s"}},
        {"session": "s1", "ts": "2026-11-02T10:00:09Z", "kind": "tool_result", "id": "r2", "tool": "aws", "ok": True,
         "text": "eu-central-1", "fact": {"subject": "export-bucket", "attribute": "region", "value": "eu-central-1"}},
    ]
    log = tmp_path / "events.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    cli = Memdream(tmp_path / "memory", tmp_path)
    cli("init", cli.root)
    cli("ingest", log, "-m", cli.root)
    report = cli.json("dream", "-m", cli.root, "--format", "json")
    assert report["not_admitted"].get("volatile") == 1
    assert [card["value"] for card in cli.cards()] == ["eu-central-1"]


NO_UPSTREAM = ("fatal: The current branch {branch} has no upstream branch.\nTo push the current branch and set the "
               "remote as upstream, use\n\n    git push --set-upstream origin {branch}\n\nTo have this happen "
               "automatically for branches without a tracking upstream, see 'push.autoSetupRemote' in "
               "'git help config'.\n")


def test_the_same_failure_with_its_own_branch_in_each_session_is_one_lesson_with_placeholders(tmp_path: Path) -> None:
    for number, branch in enumerate(("fix-rounding", "feat/export-csv", "chore-deps-2026")):
        session = ClaudeSession(f"4b0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a6{number}", scenario.PROJECT_CWD,
                                _start(2 + number))
        session.user("Commit the change and push it to a new branch.")
        session.bash(f'git add src/billing/totals.py tests/test_totals.py && git commit -m "Round {number}"',
                     f"[{branch} 1a2b3c{number}] Round {number}\n 2 files changed")
        session.bash("git push", NO_UPSTREAM.format(branch=branch), exit_code=128)
        session.bash(f"git push --set-upstream origin {branch} 2>&1 | tail -5",
                     f"branch '{branch}' set up to track 'origin/{branch}'.")
        session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    [lesson] = [card for card in cli.cards("--type", "lesson") if "error-fix" in card.get("tags", [])]
    assert lesson["statement"] == (
        f"In {scenario.PROJECT}, running `git push` fails with `fatal: The current branch <branch> has no upstream "
        "branch.`; `git push --set-upstream origin <branch> 2>&1 | tail -5` works.")
    assert lesson["evidence_count"] == 3 and not lesson.get("supersedes")  # each session adds evidence
    assert cli.cards("--status", "superseded") == []


def test_a_missing_program_whose_replacement_ran_a_script(tmp_path: Path) -> None:
    for number in range(2):
        session = ClaudeSession(f"5b0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0b6{number}", scenario.PROJECT_CWD,
                                _start(2 + number))
        session.user("Strip the carriage returns from the scripts.")
        session.bash("python - <<'PY'\nimport pathlib\nPY", "bash: line 1: python: command not found", exit_code=127)
        session.bash("python3 - <<'PY'\nimport pathlib\nPY", "")
        session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    [lesson] = [card for card in cli.cards("--type", "lesson") if "error-fix" in card.get("tags", [])]
    assert lesson["statement"] == (f"In {scenario.PROJECT}, `python` is not installed (`bash: line 1: python: command "
                                   "not found`, exit 127); use `python3` instead.")


def test_hints_edits_and_a_missing_program(tmp_path: Path) -> None:
    for number in range(2):
        session = ClaudeSession(f"5b0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a6{number}", scenario.PROJECT_CWD,
                                _start(2 + number))
        session.user("Check the coverage file and clean up.")
        session.bash("git add .coverage", "The following paths are ignored by one of your .gitignore files:\n"
                     ".coverage\nhint: Use -f if you really want to add them.\nhint: Turn this message off by "
                     'running\nhint: "git config advice.addIgnoredFile false"', exit_code=1)
        session.bash("git add -f .coverage", "")
        session.bash("python - <<'PY'\nprint(1)\nPY", "bash: line 1: python: command not found", exit_code=127)
        session.bash("python3 scripts/report.py", "report written")
        session.bash("apply_patch <<'PATCH'\n*** Begin Patch\n*** End Patch\nPATCH",
                     "error: Failed to find expected lines", exit_code=1)
        session.bash("apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a.py\n*** End Patch\nPATCH", "Done!")
        session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    lessons = sorted(card["statement"] for card in cli.cards("--type", "lesson") if "error-fix" in card.get("tags", []))
    assert lessons == [
        f"In {scenario.PROJECT}, `python` is not installed (`bash: line 1: python: command not found`, exit 127); use "
        "`python3`: `python3 <file>` works.",
        f"In {scenario.PROJECT}, running `git add .coverage` fails with `The following paths are ignored by one of "
        "your .gitignore files:`; `git add -f .coverage` works.",
    ]  # no hint: line, and no lesson from a patch that did not apply


def test_an_error_hit_twice_before_its_fix_in_one_session_is_a_lesson(tmp_path: Path) -> None:
    """The agent ran the tool twice, with other prompts, into the same error, then found the flag that
    works: that recurs as much as once in each of two sessions. The lesson says `<text>` for the prompts
    (they are what each run asked, not how to run it) and the error line, not the label above it."""
    session = ClaudeSession("3c1d7e2a-9f41-4d6e-b8a3-2c7d1e9f0a61", scenario.PROJECT_CWD, _start(3))
    session.user("Run the agent once so that we can look at its session file.")
    refusal = ("Options:\n  1. The agent requires a compatible model (e.g., gpt-4.1, gpt-4o)\n"
               "  2. Update profile: agentctl setup")
    session.bash('agentctl --task "Say hello and stop"', refusal, exit_code=1)
    session.bash('agentctl --task "Count to three, then stop."', refusal, exit_code=1)
    session.bash('agentctl --profile local --task "Count to three"', "1 2 3\nShutting down...")
    session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    [lesson] = cli.cards("--type", "lesson")
    assert lesson["statement"] == (f"In {scenario.PROJECT}, running `agentctl --task <text>` fails with `The agent "
                                   "requires a compatible model (e.g., gpt-4.1, gpt-4o)`; `agentctl --profile local "
                                   "--task <text>` works.")
    assert len(lesson["evidence"]) == 2  # the first failure and the fix: the audit shows both


def test_an_error_hit_once_before_its_fix_stays_one_off(tmp_path: Path) -> None:
    session = ClaudeSession("3c1d7e2a-9f41-4d6e-b8a3-2c7d1e9f0a62", scenario.PROJECT_CWD, _start(3))
    session.user("Run the agent once so that we can look at its session file.")
    session.bash('agentctl --task "Say hello and stop"', "Options:\n  1. The agent requires a compatible model",
                 exit_code=1)
    session.bash('agentctl --profile local --task "Say hello"', "hello")
    session.write(tmp_path / "logs")
    cli = Memdream(tmp_path / "memory", tmp_path)
    cli("init", cli.root)
    cli("ingest", tmp_path / "logs", "-m", cli.root)
    report = cli.json("dream", "-m", cli.root, "--format", "json")
    assert report["not_admitted"].get("one-off") == 1 and cli.cards("--type", "lesson") == []


STOP_HOOK = ("Stop hook feedback:\n[${{CLAUDE_PLUGIN_ROOT}}/scripts/hooks/stop.sh]: # Running Quality Checks...\n\n"
             "# Uncommitted Changes Detected\n\nCannot exit with {what}.\n\nBefore stopping, please:\n\n"
             "1. Stage your changes: `git add <files>`\n2. Commit with a descriptive message\n\n---\n\n"
             "If you've hit a problem you cannot solve without user input, say so.")
REFLECTION_HOOK = ("Stop hook feedback:\n[${CLAUDE_PLUGIN_ROOT}/scripts/hooks/stop.sh]: # Task Completion Check\n\n"
                   "Before exiting, carefully analyze whether you have fully completed the task.")


def test_what_a_stop_hook_refuses_until_a_command_runs_is_a_lesson(tmp_path: Path) -> None:
    """Two sessions: the Stop hook refuses to stop (in its own words each time), the agent commits, the hook
    lets it go. One lesson: the hook and the command it wants, quoted as the hook said it, nothing of the
    hook's boilerplate; a hook that asks for a reflection (no command satisfies it) teaches nothing."""
    for number, (what, commit) in enumerate([("unstaged changes", "git add src/app.py && git commit -m 'Add app'"),
                                             ("unstaged changes, untracked files", "git add -A && git commit -m x")]):
        session = ClaudeSession(f"4d1d7e2a-9f41-4d6e-b8a3-2c7d1e9f0a6{number}", scenario.PROJECT_CWD,
                                _start(3 + number))
        session.user("Add a multiply function with a test.")
        session.assistant("Done.")
        session.meta(STOP_HOOK.format(what=what))
        session.bash("git status", " M src/app.py")
        session.bash(commit, "[main 6322cf4] Add app\n 1 file changed")
        session.assistant("Committed.")
        session.meta(REFLECTION_HOOK)
        session.assistant("All done: the function and its test are committed.")
        session.write(tmp_path / "logs")
    cli = _dreamed(tmp_path)
    [lesson] = cli.cards("--type", "lesson")
    assert lesson["statement"] == (f"In {scenario.PROJECT}, the Stop hook refuses to let the agent stop (`Cannot exit "
                                   "with unstaged changes, untracked files.`) until `git add -A && git commit -m x` "
                                   "has run.")
    assert lesson["value"] == "git commit" and len(lesson["evidence"]) == 2
    assert "CLAUDE_PLUGIN_ROOT" not in json.dumps(cli.cards()) and "carefully analyze" not in json.dumps(cli.cards())
