"""`memdream hooks install|uninstall claude-code`: memdream's entries merged into a realistic settings.json
(other hooks, permissions, env, a status line), idempotent, removable; and the installed commands keep
the hook contract when run the way Claude Code runs them (`sh -c COMMAND`, the hook's JSON on stdin)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdream.integrations.claude_settings import is_memdream_command
from tests import transcripts as scenario
from tests.integrations.test_session_start import cron_env, hook_payload, memdream

# What a project's .claude/settings.json looks like after a while: permissions, env, a formatter hook,
# another tool's SessionStart hook, a status line.
REALISTIC = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(poetry run pytest:*)", "Bash(poetry run ruff check:*)", "Read(~/.zshrc)"],
        "deny": ["Bash(curl:*)", "Read(./.env)", "Read(./secrets/**)"],
        "defaultMode": "acceptEdits",
    },
    "env": {"BILLING_ENV": "dev"},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|MultiEdit|Write",
                         "hooks": [{"type": "command", "command": "poetry run ruff format --quiet \"$CLAUDE_FILE_PATHS\""}]}],
        "SessionStart": [{"matcher": "startup",
                          "hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/hooks/greet.sh"}]}],
    },
    "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"},
    "includeCoAuthoredBy": False,
}


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A git checkout of billing-api with a settings.json already in use, and the user's memory elsewhere,
    named by MEMDREAM_MEMORY (as a user who set it in their shell profile)."""
    env = cron_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    checkout = tmp_path / "billing-api"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, env=env)
    memdream("init", tmp_path / "agent-memory", env=env, cwd=tmp_path)
    env["MEMDREAM_MEMORY"] = str(tmp_path / "agent-memory")
    settings = checkout / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(REALISTIC, indent=4) + "\n", encoding="utf-8")
    (checkout / "billing").mkdir()
    return checkout, tmp_path / "agent-memory", env


def ours(settings: dict[str, Any]) -> dict[str, list[str]]:
    """memdream's commands by event."""
    return {event: [hook["command"] for group in groups for hook in group["hooks"]
                    if is_memdream_command(hook["command"])]
            for event, groups in settings.get("hooks", {}).items()
            if any(is_memdream_command(hook["command"]) for group in groups for hook in group["hooks"])}


def others(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without memdream's hooks (what must never change)."""
    hooks = {event: [{**group, "hooks": [hook for hook in group["hooks"] if not is_memdream_command(hook["command"])]}
                     for group in groups] for event, groups in settings.get("hooks", {}).items()}
    hooks = {event: [group for group in groups if group["hooks"]] for event, groups in hooks.items()}
    return {**settings, "hooks": {event: groups for event, groups in hooks.items() if groups}}


def test_install_merges_and_keeps_every_other_setting_in_its_order(project: Any) -> None:
    checkout, memory, env = project
    settings_file = checkout / ".claude" / "settings.json"
    done = memdream("hooks", "install", "claude-code", "--project", env=env, cwd=checkout / "billing")
    assert done.stdout.startswith(f"{settings_file}: installed")
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    assert list(settings) == list(REALISTIC)
    assert others(settings) == REALISTIC
    installed = ours(settings)
    assert set(installed) == {"SessionStart", "SessionEnd", "PreCompact"}
    assert all(len(commands) == 1 for commands in installed.values())
    assert " enqueue --from-hook" in installed["SessionEnd"][0] and " enqueue --from-hook" in installed["PreCompact"][0]
    assert " context --session-start" in installed["SessionStart"][0]
    # Claude Code does not pass the installer's MEMDREAM_MEMORY to hooks: the commands name the memory.
    assert all(f"--memory {memory.resolve()}" in commands[0] for commands in installed.values())
    # The other tool's SessionStart hook comes first, as it was.
    assert settings["hooks"]["SessionStart"][0] == REALISTIC["hooks"]["SessionStart"][0]  # type: ignore[index]
    timeouts = [hook["timeout"] for groups in settings["hooks"].values() for group in groups
                for hook in group["hooks"] if is_memdream_command(hook["command"])]
    assert all(isinstance(timeout, int) and 0 < timeout <= 10 for timeout in timeouts)


OLD_MEMDREAM_HOOKS = {
    "permissions": {"allow": ["Read"]},
    "hooks": {
        "SessionEnd": [{"hooks": [{"type": "command", "command": "memdream enqueue --from-hook", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "memdream enqueue --from-hook"},
                            {"type": "command", "command": "notify-send done"}]}],
    },
}
OTHERS_OF_OLD = {"permissions": {"allow": ["Read"]},
                 "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}


@pytest.mark.parametrize(("before", "kept"), [
    pytest.param({"permissions": {"allow": ["Read"]}}, {"permissions": {"allow": ["Read"]}, "hooks": {}},
                 id="no hooks key"),
    pytest.param(REALISTIC, REALISTIC, id="other hooks"),
    pytest.param(OLD_MEMDREAM_HOOKS, OTHERS_OF_OLD, id="memdream's old hooks"),
])
def test_install_into_an_existing_settings_file_writes_memdreams_hooks(
        project: Any, before: dict[str, Any], kept: dict[str, Any]) -> None:
    """Issue 21.1: a settings file without a hooks key was reported as already installed and left alone."""
    checkout, memory, env = project
    settings_file = checkout / ".claude" / "settings.json"
    settings_file.write_text(json.dumps(before, indent=2) + "\n", encoding="utf-8")
    done = memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    assert done.stdout.startswith(f"{settings_file}: installed")
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    assert others(settings) == kept
    installed = ours(settings)
    assert sorted(installed) == ["PreCompact", "SessionEnd", "SessionStart"]
    assert all(len(commands) == 1 and f"--memory {memory.resolve()}" in commands[0]
               for commands in installed.values())
    assert "already installed" in memdream("hooks", "install", "claude-code", env=env, cwd=checkout).stdout


def test_installing_twice_is_installing_once(project: Any) -> None:
    checkout, _, env = project
    settings_file = checkout / ".claude" / "settings.json"
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    first, stamp = settings_file.read_bytes(), settings_file.stat().st_mtime_ns
    done = memdream("hooks", "install", "claude-code", "--project", env=env, cwd=checkout / "billing")
    assert "already installed" in done.stdout
    assert settings_file.read_bytes() == first and settings_file.stat().st_mtime_ns == stamp


def test_a_hand_written_memdream_hook_is_replaced_not_duplicated(project: Any) -> None:
    checkout, memory, env = project
    settings_file = checkout / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text(encoding="utf-8"))
    data["hooks"]["SessionEnd"] = [{"hooks": [{"type": "command",
                                               "command": "memdream enqueue --from-hook --memory ~/agent-memory"}]}]
    settings_file.write_text(json.dumps(data, indent=2), encoding="utf-8")
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    installed = ours(json.loads(settings_file.read_text(encoding="utf-8")))
    assert len(installed["SessionEnd"]) == 1 and "~/agent-memory" not in installed["SessionEnd"][0]


def test_uninstall_removes_only_memdreams_entries(project: Any) -> None:
    checkout, _, env = project
    settings_file = checkout / ".claude" / "settings.json"
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    done = memdream("hooks", "uninstall", "claude-code", "--project", env=env, cwd=checkout / "billing")
    assert "removed memdream's hooks" in done.stdout
    settings = json.loads(settings_file.read_text(encoding="utf-8"))
    assert settings == REALISTIC and list(settings) == list(REALISTIC)
    assert list(settings["hooks"]) == list(REALISTIC["hooks"])  # type: ignore[arg-type]
    again = memdream("hooks", "uninstall", "claude-code", env=env, cwd=checkout)
    assert "no memdream hooks" in again.stdout


def test_uninstall_drops_a_hooks_key_that_held_only_memdreams(project: Any) -> None:
    checkout, _, env = project
    settings_file = checkout / ".claude" / "settings.json"
    settings_file.write_text(json.dumps({"permissions": {"allow": ["Read"]}}), encoding="utf-8")
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    memdream("hooks", "uninstall", "claude-code", env=env, cwd=checkout)
    assert json.loads(settings_file.read_text(encoding="utf-8")) == {"permissions": {"allow": ["Read"]}}


@pytest.mark.parametrize("content", ['{"permissions": {"allow": ["Read"]},}', "[1, 2]",
                                     '{"hooks": {"SessionEnd": {"command": "x"}}}'])
def test_an_invalid_settings_file_is_one_line_and_left_untouched(project: Any, content: str) -> None:
    checkout, _, env = project
    settings_file = checkout / ".claude" / "settings.json"
    settings_file.write_text(content, encoding="utf-8")
    stamp = settings_file.stat().st_mtime_ns
    for verb in ("install", "uninstall"):
        done = memdream("hooks", verb, "claude-code", env=env, cwd=checkout, check=False)
        assert done.returncode == 1 and done.stdout == ""
        assert done.stderr.startswith(f"memdream: {settings_file}: ") and len(done.stderr.splitlines()) == 1
    assert settings_file.read_text(encoding="utf-8") == content and settings_file.stat().st_mtime_ns == stamp


def test_print_shows_the_snippet_and_writes_nothing(project: Any) -> None:
    checkout, _, env = project
    settings_file = checkout / ".claude" / "settings.json"
    before = settings_file.read_bytes()
    done = memdream("hooks", "install", "claude-code", "--print", env=env, cwd=checkout)
    head, _, body = done.stdout.partition("\n")
    assert head == f"# merge into {settings_file}"
    assert set(json.loads(body)["hooks"]) == {"SessionStart", "SessionEnd", "PreCompact"}
    assert settings_file.read_bytes() == before


def test_user_settings_name_the_memory_and_are_created(project: Any, tmp_path: Path) -> None:
    checkout, memory, env = project
    done = memdream("hooks", "install", "claude-code", "--user", "--memory", memory, env=env, cwd=tmp_path)
    user_settings = Path(env["HOME"]) / ".claude" / "settings.json"
    assert done.stdout.startswith(f"{user_settings}: installed")
    installed = ours(json.loads(user_settings.read_text(encoding="utf-8")))
    assert all(f"--memory {memory.resolve()}" in commands[0] for commands in installed.values())
    memdream("hooks", "uninstall", "claude-code", "--user", env=env, cwd=tmp_path)
    assert json.loads(user_settings.read_text(encoding="utf-8")) == {}


def test_a_memory_the_project_finds_by_itself_is_not_named(tmp_path: Path) -> None:
    """A workspace memory above its projects: the hooks, run in the project, find it."""
    env = cron_env(tmp_path)
    workspace = tmp_path / "work"
    memdream("init", workspace, env=env, cwd=tmp_path)
    checkout = workspace / "shop"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, env=env)
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    installed = ours(json.loads((checkout / ".claude" / "settings.json").read_text(encoding="utf-8")))
    assert installed and all("--memory" not in commands[0] for commands in installed.values())
    start = _run_hook(installed["SessionStart"][0], hook_payload(str(checkout)), checkout, env)
    # found (no error), and empty: nothing is injected until the memory has learned something
    assert start.returncode == 0 and start.stdout == "" and start.stderr == ""


def _run_hook(command: str, payload: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """As Claude Code runs a command hook: through the shell, in the project, the JSON on stdin."""
    return subprocess.run(["sh", "-c", command], input=payload, capture_output=True, text=True, cwd=cwd,
                          env={**{name: value for name, value in env.items() if name != "MEMDREAM_MEMORY"},
                               "CLAUDE_PROJECT_DIR": str(cwd)}, timeout=60)


def test_the_installed_commands_keep_the_hook_contract(project: Any) -> None:
    checkout, memory, env = project
    memdream("hooks", "install", "claude-code", env=env, cwd=checkout)
    installed = ours(json.loads((checkout / ".claude" / "settings.json").read_text(encoding="utf-8")))
    start = _run_hook(installed["SessionStart"][0], hook_payload(str(checkout)), checkout, env)
    assert start.returncode == 0, start.stderr
    assert start.stdout == "" and start.stderr == ""  # an empty memory injects nothing
    transcript = scenario.ClaudeSession("0f0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a99", str(checkout),
                                        scenario.STARTS[0]).write(checkout / "transcripts")
    end_payload = json.dumps({"session_id": "0f0e7c2a-9f41-4d6e-b8a3-2c7d1e9f0a99", "transcript_path": str(transcript),
                              "cwd": str(checkout), "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    end = _run_hook(installed["SessionEnd"][0], end_payload, checkout, env)
    assert end.returncode == 0, end.stderr
    spooled = (memory / ".memdream" / "spool.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(spooled[-1])["payload"]["transcript_path"] == str(transcript)


def test_only_claude_code_is_known(project: Any) -> None:
    checkout, _, env = project
    done = memdream("hooks", "install", "cursor", env=env, cwd=checkout, check=False)
    assert done.returncode == 2 and "claude-code" in done.stderr


@pytest.mark.parametrize(("command", "mine"), [
    ("memdream enqueue --from-hook", True),
    ("/home/dev/.local/bin/memdream context --session-start --memory '/home/dev/agent memory'", True),
    ("/usr/bin/python3 -m memdream enqueue --from-hook", True),
    ("memdream recall 'what next'", False),
    ("./memdream enqueue --from-hook", False),
    ("echo memdream enqueue", False),
    ("memdream-lint enqueue", False),
])
def test_memdreams_commands_are_recognised_by_their_executable_and_subcommand(command: str, mine: bool) -> None:
    assert is_memdream_command(command) is mine
