"""The one command line, as users run it: `python -m memdream ...` processes (and the installed script).

Usage errors are one line and exit 2, help shows no Python types, ingest reads the log format from
--log-format and prints text or json per --format (an old `--format claude-code` still works, with a
notice), and hot commands start without pydantic.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.transcripts import ClaudeSession, CodexSession, chat_file

LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"
EVENTS = LOGS / "memdream" / "events.jsonl"
CLAUDE = LOGS / "claude-code" / "session.jsonl"
INVALID_JSON = LOGS / "bad" / "invalid-json.jsonl"
COMMANDS = ["init", "ingest", "enqueue", "dream", "lint", "cards", "show", "recall", "textconv"]
PYTHON_TYPE = re.compile(r"<(str|int|float|bool|path|Path|file|dir|list\[[^\]]*\]|[a-z]+ range)>|list\[|Optional")
START = datetime(2026, 11, 7, 9, 0, tzinfo=timezone.utc)


def memdream(*args: str | os.PathLike[str], stdin: str | bytes | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    data = stdin.decode() if isinstance(stdin, bytes) else stdin
    return subprocess.run([sys.executable, "-m", "memdream", *map(os.fspath, args)], capture_output=True, text=True,
                          input=data, env=dict(os.environ), cwd=cwd, timeout=120)


def one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert done.stdout == "" and done.stderr.startswith("memdream: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "Usage:" not in done.stderr
    return done.stderr


def test_the_fast_paths_are_gone() -> None:
    for name in ("memdream.entry", "memdream.fastcli", "memdream.ingest.fastpath", "memdream.recall.fastpath"):
        assert importlib.util.find_spec(name) is None, name


# -- usage errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    ["recall", "x", "--colour"],
    ["recall", "x", "--budget", "many"],
    ["recall", "x", "--format", "yaml"],
    ["recall", "x", "--type", "rumour"],
    ["recall"],
    ["recall", "x", "--queries", "{tmp}/none.txt"],
    ["ingest", str(EVENTS), "--colour"],
    ["ingest", str(EVENTS), "--format", "yaml"],
    ["ingest", str(EVENTS), "--skip"],  # no abbreviations
    ["ingest", str(EVENTS), "--session"],  # a missing value
    ["ingest"],  # nothing to ingest
    ["enqueue", "--from-hook", "--colour"],  # the hook's command too: 2, not 1
    ["enqueue"],
    ["cards", "--format", "xml"],
    ["show"],
    ["lint", "--format", "xml"],
    ["no-such-command"],
])
def test_a_usage_error_is_one_line_and_exit_2(memory: Path, tmp_path: Path, args: list[str]) -> None:
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    message = one_line_error(memdream(args[0], "-m", memory, *args[1:], stdin=""), 2)
    if "--colour" in args or "many" in args:  # the parser's own errors say where to look
        assert f"(see 'memdream {args[0]} --help')" in message


def test_bare_memdream_prints_the_overview(tmp_path: Path) -> None:
    done = memdream(cwd=tmp_path)
    assert done.returncode == 0 and "Commands:" in done.stdout + done.stderr
    assert all(name in done.stdout + done.stderr for name in COMMANDS if name != "textconv")


@pytest.mark.parametrize("name", COMMANDS)
def test_help_of_every_command_shows_no_python_types(name: str) -> None:
    done = memdream(name, "--help")
    assert done.returncode == 0 and done.stdout.startswith(f"Usage: memdream {name} ")
    assert not PYTHON_TYPE.search(done.stdout), PYTHON_TYPE.search(done.stdout)
    assert done.stderr == ""


def test_help_names_values_by_what_they_are() -> None:
    assert "[PATH]..." in memdream("ingest", "--help").stdout
    recall = memdream("recall", "--help").stdout
    assert "[QUERY]" in recall and "--budget BYTES" in recall and "--format text|json" in recall
    assert "--log-format auto|memdream|claude-code|codex|openai-chat" in memdream("ingest", "--help").stdout


def test_the_installed_script_is_the_same_command_line(memory: Path) -> None:
    script = Path(sys.executable).with_name("memdream")
    if not script.exists():
        pytest.skip("memdream is not installed next to this interpreter")
    done = subprocess.run([str(script), "recall", "x", "--colour", "-m", str(memory)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--colour" in done.stderr


# -- ingest: --log-format and --format -----------------------------------------------------------------
def claude_transcript(folder: Path) -> Path:
    session = ClaudeSession("0b9e1c52-3f1d-4a8e-9d6b-2a7c1e5f8a11", "/home/dev/billing-api", START)
    session.user("Which region does the export bucket live in?")
    session.bash("aws s3api get-bucket-location --bucket billing-export", '{"LocationConstraint": "eu-central-1"}')
    session.assistant("The export bucket lives in eu-central-1.")
    return session.write(folder)


def codex_transcript(folder: Path) -> Path:
    session = CodexSession("7f3a2b1c-9d8e-4f6a-b5c4-3e2d1a0b9c8d", "/home/dev/billing-api", START)
    session.user("Run the tests")
    session.shell("pytest -q", "12 passed in 0.41s")
    session.assistant("All 12 tests pass.")
    return session.write(folder)


def chat_transcript(folder: Path) -> Path:
    return chat_file(folder / "chat.json", [
        {"role": "user", "content": "Where do the nightly exports go?"},
        {"role": "assistant", "content": "To the billing-export bucket in eu-central-1."},
    ])


@pytest.mark.parametrize(("log_format", "write"), [
    ("claude-code", claude_transcript), ("codex", codex_transcript), ("openai-chat", chat_transcript),
])
def test_log_format_names_the_input_and_format_json_the_report(memory: Path, tmp_path: Path, log_format: str,
                                                               write) -> None:
    log = write(tmp_path / "logs")
    done = memdream("ingest", "--log-format", log_format, log, "--format", "json", "-m", memory)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    report = json.loads(done.stdout)
    assert report["added"] > 0 and [source["format"] for source in report["sources"]] == [log_format]


def test_a_wrong_log_format_names_the_file_and_line(memory: Path) -> None:
    message = one_line_error(memdream("ingest", "--log-format", "codex", EVENTS, "-m", memory), 1)
    assert message.startswith(f"memdream: {EVENTS}:1: ")
    unknown = one_line_error(memdream("ingest", "--log-format", "yaml", EVENTS, "-m", memory), 1)
    assert unknown.startswith("memdream: unknown format 'yaml'")


def test_the_old_format_option_still_reads_the_log_format_with_one_notice(memory: Path, tmp_path: Path) -> None:
    log = claude_transcript(tmp_path / "logs")
    done = memdream("ingest", "--format", "claude-code", log, "-m", memory)
    assert done.returncode == 0
    assert done.stderr == "memdream: --format claude-code is deprecated for the log's format: " \
                          "use --log-format claude-code\n"
    assert f"{log} [claude-code]: " in done.stdout and "event(s) added in segment(s)" in done.stdout


def test_old_and_new_log_format_together_is_a_usage_error(memory: Path, tmp_path: Path) -> None:
    log = claude_transcript(tmp_path / "logs")
    one_line_error(memdream("ingest", "--format", "claude-code", "--log-format", "codex", log, "-m", memory), 2)


def test_ingest_text_report_and_json_report_agree(memory: Path, tmp_path: Path) -> None:
    text = memdream("ingest", EVENTS, CLAUDE, "-m", memory)
    assert text.returncode == 0 and text.stderr == ""
    assert f"{EVENTS} [memdream]: 18 new, 0 already stored" in text.stdout
    again = memdream("ingest", EVENTS, CLAUDE, "-f", "JSON", "-m", memory)  # case-insensitive, short name
    report = json.loads(again.stdout)
    assert report["added"] == 0 and {source["duplicates"] for source in report["sources"]} != {0}


def test_stdin_with_a_session_name_that_starts_with_a_dash(memory: Path) -> None:
    done = memdream("ingest", "-", "--session", "-night", "-m", memory, stdin=EVENTS.read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stderr
    assert "<stdin>" in done.stdout and "18 event(s) added" in done.stdout
    raw = "".join(path.read_text(encoding="utf-8") for path in (memory / "raw" / "segments").glob("*.jsonl"))
    assert {json.loads(line)["session"] for line in raw.splitlines()} == {"-night"}


def test_skip_bad_counts_lines_in_the_json_report(memory: Path) -> None:
    done = memdream("ingest", "--skip-bad", INVALID_JSON, "--format", "json", "-m", memory)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sources"][0]["skipped_lines"]
    one_line_error(memdream("ingest", INVALID_JSON, "-m", memory), 1)  # without it: the whole file refused


def test_a_lone_surrogate_is_a_bad_line_not_a_crash(memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "surrogate.jsonl"
    log.write_text('{"session":"s","ts":"2026-11-07T09:12:03Z","kind":"note","id":"n1",'
                   '"meta":{"n":12345678901234567890123},"text":"\\ud800"}\n', encoding="utf-8")
    message = one_line_error(memdream("ingest", log, "-m", memory), 1)
    assert message == f"memdream: {log}:1: not valid JSON: a \\u escape names a lone surrogate (column 1)\n"


def test_an_empty_spool_ingests_nothing(memory: Path) -> None:
    done = memdream("ingest", "--spool", "--format", "json", "-m", memory)
    assert done.returncode == 0 and json.loads(done.stdout)["added"] == 0


# -- recall ------------------------------------------------------------------------------------------------
def test_recall_answers_text_json_and_a_file_of_queries(memory: Path, tmp_path: Path) -> None:
    assert memdream("ingest", EVENTS, "-m", memory).returncode == 0
    text = memdream("recall", "export bucket region", "-m", memory)
    assert text.returncode == 0 and text.stderr == "" and text.stdout.startswith("- ")
    as_json = memdream("recall", "export bucket region", "--format", "JSON", "--budget", "300", "-m", memory)
    data = json.loads(as_json.stdout)
    assert data["query"] == "export bucket region" and data["bytes"] <= 300
    queries = tmp_path / "q.txt"
    queries.write_text("export bucket\n\npostgres\n", encoding="utf-8")
    batch = memdream("recall", "--queries", queries, "-m", memory)
    assert [json.loads(line)["query"] for line in batch.stdout.splitlines()] == ["export bucket", "postgres"]


def test_recall_and_enqueue_start_without_pydantic(memory: Path, tmp_path: Path) -> None:
    """typer would build a pydantic adapter per option (~100 ms of import): memdream converts its own."""
    probe = ("import sys\nfrom memdream.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit as done:\n"
             "    sys.stderr.write(f'exit {done.code} pydantic {\"pydantic\" in sys.modules}\\n')\n")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("{}\n", encoding="utf-8")
    for args, stdin in ((["recall", "export bucket", "-m", str(memory), "-f", "json", "-b", "500"], ""),
                        (["enqueue", "--from-hook", "-m", str(memory)], json.dumps({"transcript_path": str(transcript)})),
                        (["--help"], ""),
                        (["dream", "--dry-run", "--max-seconds", "5", "-m", str(memory)], ""),  # a float option
                        (["log", "--limit", "3", "-m", str(memory)], "")):
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, input=stdin)
        assert done.stderr.endswith("exit 0 pydantic False\n"), (args, done.stderr)


def test_a_reader_that_stops_early_is_no_error(memory: Path, tmp_path: Path) -> None:
    """`memdream recall … | head -1`: the closed pipe ends the command quietly, exit 0, no traceback."""
    many = tmp_path / "many.jsonl"
    many.write_text("".join(json.dumps({"session": f"s{n}", "ts": "2026-11-20T10:00:00Z", "kind": "message",
                                        "text": f"deploy line {n} " + "x" * 300}) + "\n" for n in range(400)))
    subprocess.run([sys.executable, "-m", "memdream", "ingest", str(many), "-m", str(memory)], check=True,
                   capture_output=True)
    reader = subprocess.Popen([sys.executable, "-m", "memdream", "recall", "deploy", "-m", str(memory),
                               "--budget", "200000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.read(1)
    reader.stdout.close()
    assert reader.wait(timeout=60) == 0
    assert reader.stderr.read() == b""


# -- Ctrl-C ----------------------------------------------------------------------------------------------
def interrupted_run(launch: list[str], memory: Path, marker: Path, delay: float) -> subprocess.CompletedProcess[str]:
    """Start memdream, send SIGINT ``delay`` seconds after its first line ran (the marker file appears)."""
    import signal
    import time

    marker.unlink(missing_ok=True)
    child = subprocess.Popen([*launch, "recall", "which region is the export bucket in", "-m", str(memory)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "MEMDREAM_TEST_STARTED_MARKER": str(marker)})
    deadline = time.monotonic() + 60
    while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    stdout, stderr = child.communicate(timeout=60)
    return subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)


@pytest.mark.parametrize("launch", ["module", "script"])
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(memory: Path, tmp_path: Path, launch: str) -> None:
    """Issue 21.4: Ctrl-C while typer loaded (the first 0.2 s) printed a traceback. The delays cover the
    imports, building the command, the command itself; a run that ended first simply succeeded."""
    script = Path(sys.executable).with_name("memdream")
    if launch == "script" and not script.exists():
        pytest.skip("memdream is not installed next to this interpreter")
    command = [sys.executable, "-m", "memdream"] if launch == "module" else [str(script)]
    interrupted = 0
    for delay in (0, 0, 0.002, 0.01, 0.03, 0.06, 0.1, 0.2, 0.4):
        done = interrupted_run(command, memory, tmp_path / "started", delay)
        assert "Traceback" not in done.stderr, (delay, done.stderr)
        if done.returncode != 0:
            # Exit 130, or (rarely, on a loaded machine, after the line) death by the signal itself, which a
            # shell reports as the same 130 (128 + SIGINT): what the user sees is the one line either way.
            assert done.returncode in (130, -signal.SIGINT), (delay, done.returncode, done.stderr)
            assert done.stderr == "memdream: interrupted\n", (delay, done.stderr)
            interrupted += 1
    assert interrupted >= 3  # the first ones at least land before recall has answered


@pytest.mark.parametrize("args", [["log", "--limit", "0"], ["review", "--runs", "-1"],
                                  ["dream", "--max-seconds", "nan"], ["dream", "--max-seconds", "soon"]])
def test_option_bounds_and_numbers_are_usage_errors(memory: Path, args: list[str]) -> None:
    """typer's min= and float options, checked by memdream's own converters (no pydantic): one line, exit 2."""
    done = subprocess.run([sys.executable, "-m", "memdream", *args, "-m", str(memory)], capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
