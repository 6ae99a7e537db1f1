"""`memdream` and `memdream --help` come from a cached table of the commands' first help paragraphs
(memdream/cli/overview.py): the text is the full build's byte for byte, and the table is what the
commands say now (when a command's help changes: `python scripts/command_overview.py`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer.main

from memdream.cli import COMMANDS, build
from memdream.cli.overview import FIRST_PARAGRAPHS, first_paragraphs


def test_the_cached_table_is_what_the_commands_say_now() -> None:
    assert FIRST_PARAGRAPHS == first_paragraphs(typer.main.get_command(build())), (
        "a command's help changed: run `python scripts/command_overview.py`")
    assert set(FIRST_PARAGRAPHS) == set(COMMANDS)


@pytest.mark.parametrize("columns", ["60", "80", "132"])
def test_the_overview_is_the_full_builds_help_byte_for_byte(columns: str) -> None:
    env = {**os.environ, "COLUMNS": columns, "NO_COLOR": "1"}
    fast = subprocess.run([sys.executable, "-m", "memdream", "--help"], capture_output=True, text=True, env=env,
                          check=True)
    full = subprocess.run([sys.executable, "-c", "from memdream.cli import build\n"
                           "build()(args=['--help'], prog_name='memdream')"],
                          capture_output=True, text=True, env=env, check=False)
    assert fast.stdout == full.stdout and "Commands:" in fast.stdout and "recall" in fast.stdout


def test_the_overview_imports_no_command_module() -> None:
    code = ("import sys\nfrom memdream.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(name for name in sys.modules if name.startswith('memdream.cli.') and name.endswith('_cmd')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
