"""The argparse fast path answers exactly as the typer command does, and takes the same options."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memdream.recall import fastpath
from tests.recall.helpers import fact, write_card, write_plan


def typer_options() -> set[str]:
    import typer.main

    from memdream.cli import app

    command = typer.main.get_command(app).commands["recall"]  # type: ignore[attr-defined]
    return {opt for param in command.params for opt in param.opts if opt.startswith("-")} - {"--help", "-h"}


def test_same_options_as_the_typer_command() -> None:
    ours = {opt for action in fastpath.parser()._actions for opt in action.option_strings}
    assert ours == typer_options()


@pytest.fixture
def filled(memory: Path, tmp_path: Path) -> Path:
    write_plan(memory, "ship it", ["test", "deploy"])
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    write_card(memory, **fact("f-2", "postgres", "version", "16.1", status="inferred",
                              evidence=[{"ref": "log://s#2", "stance": "supports"}]))
    (tmp_path / "q.txt").write_text("export bucket\n\npostgres\n")
    return memory


@pytest.mark.parametrize("args", [
    ["export bucket region"],
    ["postgres", "--format", "JSON", "--budget", "300"],
    ["bucket", "-f", "json", "-t", "fact", "-s", "inferred"],
    ["bucket", "--subject", "export", "--since", "2026-01-01", "--include-archived"],
    ["--queries", "{tmp}/q.txt", "-b", "500"],
    ["x", "--budget", "10"],
    ["x", "--type", "rumour"],
    [],
    ["--queries", "{tmp}/none.txt"],
    ["x", "--colour"],
    ["x", "--budget", "many"],
])
def test_same_output_and_exit_code(filled: Path, tmp_path: Path, run, args: list[str], monkeypatch) -> None:
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    twin = tmp_path / "twin"  # usage feeds ranking: each path answers from the same starting state
    shutil.copytree(filled, twin, symlinks=True)
    typer_result = run("recall", *args, "-m", filled)
    done = subprocess.run([sys.executable, "-m", "memdream.recall.fastpath", *args, "-m", str(twin)],
                          capture_output=True, text=True)
    assert done.returncode == typer_result.exit_code
    if done.returncode == 0:
        assert done.stdout == typer_result.stdout
        if "--queries" in args:
            assert [json.loads(line)["query"] for line in done.stdout.splitlines()] == ["export bucket", "postgres"]
    else:
        assert done.stderr.startswith("memdream: ") and done.stderr.count("\n") == 1
        if done.returncode != 2 or "--colour" not in args and "many" not in args:
            assert done.stderr == typer_result.stderr
