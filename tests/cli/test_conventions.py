"""Conventions every command follows: help, version, memory discovery, one-line errors, exit codes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memdream import __version__
from memdream.cli import app


def _visible_commands() -> dict[str, object]:
    import typer.main

    group = typer.main.get_command(app)
    return {name: cmd for name, cmd in group.commands.items() if not cmd.hidden}  # type: ignore[attr-defined]


def test_version(run) -> None:
    result = run("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"memdream {__version__}"


def test_top_level_help_lists_every_command(run) -> None:
    result = run("--help")
    assert result.exit_code == 0
    for name in _visible_commands():
        assert name in result.stdout


@pytest.mark.parametrize("name", sorted(_visible_commands()))
def test_every_command_has_complete_help(name: str, run) -> None:
    command = _visible_commands()[name]
    assert command.help and len(command.help.strip()) > 20, name  # type: ignore[attr-defined]
    for param in command.params:  # type: ignore[attr-defined]
        if param.name in ("help",):
            continue
        assert getattr(param, "help", None), f"{name}: parameter {param.name} has no help"
    result = run(name, "--help")
    assert result.exit_code == 0 and "Usage" in result.stdout


def test_memory_is_found_from_an_ancestor_folder(memory: Path, run, chdir) -> None:
    nested = memory / "cards" / "facts"
    chdir(nested)
    result = run("cards", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_memory_from_environment_variable(memory: Path, run, tmp_path: Path, chdir, monkeypatch) -> None:
    chdir(tmp_path)
    monkeypatch.setenv("MEMDREAM_MEMORY", str(memory))
    assert run("cards").exit_code == 0


def test_no_memory_is_one_clear_line(tmp_path: Path, run, chdir) -> None:
    chdir(tmp_path)
    result = run("cards")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("memdream: no memory found:")
    assert "Traceback" not in result.stderr


def test_explicit_memory_that_is_not_a_memory(tmp_path: Path, run) -> None:
    result = run("cards", "--memory", tmp_path)
    assert result.exit_code == 1
    assert "is not a memdream memory" in result.stderr


def test_bad_clock_override_is_a_usage_error(memory: Path, run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "yesterday-ish")
    result = run("init", memory.parent / "other")
    assert result.exit_code == 2
    assert result.stderr.strip() == "memdream: MEMDREAM_NOW='yesterday-ish' is not an ISO 8601 timestamp"


def test_unknown_option_is_a_usage_error(run) -> None:
    assert run("cards", "--colour").exit_code == 2


def _bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": str(tmp_path / "none")}
    env.update(extra)
    return env


def test_real_process_in_a_bare_environment(tmp_path: Path) -> None:
    """As cron runs it: no terminal, no git identity, no colour settings at all."""
    env = _bare_env(tmp_path)
    made = subprocess.run([sys.executable, "-m", "memdream", "init", str(tmp_path / "m")], env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stderr
    linted = subprocess.run([sys.executable, "-m", "memdream", "lint"], env=env, cwd=tmp_path / "m",
                            capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert linted.returncode == 0, linted.stderr + linted.stdout
    assert "\x1b[" not in linted.stdout + linted.stderr


def test_internal_errors_are_one_line_unless_debug(tmp_path: Path) -> None:
    (tmp_path / "memdream.yaml").write_text("version: 1\n")
    (tmp_path / "cards" / "facts").mkdir(parents=True)
    (tmp_path / "cards" / "facts" / "f-1.yaml").write_text("id: f-1\n")  # invalid card: a clean error
    plain = subprocess.run([sys.executable, "-m", "memdream", "cards"], env=_bare_env(tmp_path), cwd=tmp_path,
                           capture_output=True, text=True)
    assert plain.returncode == 1
    assert plain.stderr.startswith("memdream: cards/facts/f-1.yaml: ") and plain.stderr.count("\n") == 1
    debug = subprocess.run([sys.executable, "-m", "memdream", "cards"], cwd=tmp_path, capture_output=True,
                           text=True, env=_bare_env(tmp_path, MEMDREAM_DEBUG="1"))
    assert debug.returncode == 1 and "Traceback" in debug.stderr
