"""The argparse fast path of `memdream ingest` answers exactly as the typer command does, with the same options."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream.ingest import fastpath

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
EVENTS = LOGS / "memdream" / "events.jsonl"
CLAUDE = LOGS / "claude-code" / "session.jsonl"
UNKNOWN_FIELD = LOGS / "bad" / "unknown-field.jsonl"
INVALID_JSON = LOGS / "bad" / "invalid-json.jsonl"


def typer_command() -> Any:
    import typer.main

    from memdream.cli import app

    return typer.main.get_command(app).commands["ingest"]  # type: ignore[attr-defined]


def typer_options() -> dict[str, bool]:
    """Every option of the typer command, and whether it is a flag (takes no value)."""
    return {opt: bool(getattr(param, "is_flag", False)) for param in typer_command().params for opt in param.opts
            if opt.startswith("-") and opt not in ("--help", "-h")}


def test_same_options_as_the_typer_command() -> None:
    ours = {opt: action.nargs == 0 for action in fastpath.parser()._actions for opt in action.option_strings}
    assert ours == typer_options()


def test_same_defaults_as_the_typer_command() -> None:
    defaults = vars(fastpath.parser().parse_args([]))
    theirs = {param.name: param.default for param in typer_command().params}
    assert defaults.pop("paths") == [] and theirs.pop("paths") is None  # both mean "no paths"
    assert theirs.pop("output").value == defaults.pop("output")  # an enum member there, its value here
    assert defaults == theirs


def run_both(run: Any, memory: Path, tmp_path: Path, args: list[str], stdin: str | None = None) -> tuple[Any, Any]:
    """The typer command on ``memory``, the fast path in a process of its own on an identical copy."""
    twin = tmp_path / "twin"  # ingest writes: each path starts from the same memory
    shutil.copytree(memory, twin, symlinks=True)
    typer_result = run("ingest", "-m", memory, *args, input=stdin)
    done = subprocess.run([sys.executable, "-m", "memdream.ingest.fastpath", "-m", str(twin), *args],
                          capture_output=True, text=True, input=stdin)
    return typer_result, done


def without_commit(output: str) -> dict[str, Any]:
    report = json.loads(output)
    report.pop("commit")
    return dict(report)


# (arguments, whether exit 2 comes from the argument parser: its wording is the parser's own)
CASES = [
    pytest.param([str(EVENTS)], False, id="text"),
    pytest.param([str(EVENTS), "-o", "json"], False, id="json"),
    pytest.param(["--output", "JSON", str(EVENTS)], False, id="JSON"),
    pytest.param(["--session", "s-forced", str(EVENTS), str(CLAUDE)], False, id="session"),
    pytest.param(["--format", "claude-code", str(CLAUDE)], False, id="format"),
    pytest.param([str(UNKNOWN_FIELD)], False, id="unknown-field-kept"),
    pytest.param(["--strict", str(UNKNOWN_FIELD)], False, id="strict"),
    pytest.param(["--skip-bad", str(INVALID_JSON), "-o", "json"], False, id="skip-bad"),
    pytest.param([str(INVALID_JSON)], False, id="bad-line"),
    pytest.param(["{tmp}/missing.jsonl"], False, id="missing-file"),
    pytest.param(["{tmp}/logs"], False, id="folder"),
    pytest.param(["--format", "xml", str(EVENTS)], False, id="unknown-format"),
    pytest.param(["--spool"], False, id="empty-spool"),
    pytest.param([], False, id="no-paths"),
    pytest.param(["--colour", str(EVENTS)], True, id="unknown-option"),
    pytest.param([str(EVENTS), "-o", "yaml"], True, id="unknown-output"),
    pytest.param([str(EVENTS), "--format"], True, id="missing-value"),
    pytest.param(["--skip", str(EVENTS)], True, id="no-abbreviations"),
]


@pytest.mark.parametrize(("args", "parser_error"), CASES)
def test_same_output_and_exit_code(memory: Path, tmp_path: Path, run: Any, args: list[str],
                                   parser_error: bool) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(EVENTS, folder / "a.jsonl")
    shutil.copy(CLAUDE, folder / "b.jsonl")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    typer_result, done = run_both(run, memory, tmp_path, args)
    assert done.returncode == typer_result.exit_code
    if done.returncode == 0:
        if "json" in [arg.lower() for arg in args]:
            assert without_commit(done.stdout) == without_commit(typer_result.stdout)
        else:
            assert done.stdout == typer_result.stdout
        assert done.stderr == typer_result.stderr == ""
        return
    assert done.stdout == ""
    assert done.stderr.startswith("memdream: ") and done.stderr.count("\n") == 1
    if parser_error:
        assert done.returncode == 2
    else:
        assert done.stderr == typer_result.stderr


def test_stdin_is_read_the_same_way(memory: Path, tmp_path: Path, run: Any) -> None:
    typer_result, done = run_both(run, memory, tmp_path, ["-", "--session", "piped"],
                                  stdin=EVENTS.read_text(encoding="utf-8"))
    assert done.returncode == typer_result.exit_code == 0
    assert done.stdout == typer_result.stdout
    assert "<stdin>" in done.stdout and "18 event(s) added" in done.stdout


def test_the_twins_store_the_same_events(memory: Path, tmp_path: Path, run: Any) -> None:
    typer_result, done = run_both(run, memory, tmp_path, [str(EVENTS), str(CLAUDE)])
    assert done.returncode == typer_result.exit_code == 0
    stored = [sorted(path.name for path in (root / "raw" / "segments").iterdir()) for root in (memory, tmp_path / "twin")]
    assert stored[0] and stored[0] == stored[1]
    for name in stored[0]:
        assert (memory / "raw" / "segments" / name).read_bytes() == \
            (tmp_path / "twin" / "raw" / "segments" / name).read_bytes()


def test_memdream_routes_ingest_to_the_fast_path_but_not_its_help(memory: Path) -> None:
    routed = subprocess.run([sys.executable, "-m", "memdream", "ingest", "--colour", "-m", str(memory)],
                            capture_output=True, text=True)
    # argparse's wording: the fast path answered (typer would print its usage block)
    assert routed.returncode == 2 and routed.stderr == "memdream: unrecognized arguments: --colour\n"
    helped = subprocess.run([sys.executable, "-m", "memdream", "ingest", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0
    assert all(option in helped.stdout for option in typer_options())


def test_an_option_value_that_starts_with_a_dash(memory: Path, tmp_path: Path, run: Any) -> None:
    typer_result, done = run_both(run, memory, tmp_path, ["--session", "-night", str(EVENTS)])
    assert typer_result.exit_code == 0
    assert (done.returncode, done.stdout) == (0, typer_result.stdout)


def test_a_lone_surrogate_after_a_long_integer_is_a_bad_line_both_ways(memory: Path, tmp_path: Path,
                                                                     run: Any) -> None:
    log = tmp_path / "surrogate.jsonl"
    log.write_text('{"session":"s","ts":"2026-11-07T09:12:03Z","kind":"note","id":"n1",'
                   '"meta":{"n":12345678901234567890123},"text":"\\ud800"}\n', encoding="utf-8")
    typer_result, done = run_both(run, memory, tmp_path, [str(log)])
    assert done.returncode == typer_result.exit_code == 1
    assert done.stderr == typer_result.stderr == f"memdream: {log}:1: not valid JSON: a \\u escape names a lone " \
                                                 "surrogate (column 1)\n"
