"""Progress on long ingests: a rich bar on a terminal, nothing extra under cron, in a pipe or with JSON."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from memdream.ingest.pipeline import IngestOptions, ingest
from memdream.memory.store import Memory
from memdream.progress import NO_PROGRESS, Progress, RichProgress

EVENTS = 3000  # several progress steps (one every 512 events)


def big_log(tmp_path: Path) -> Path:
    path = tmp_path / "agent-log.jsonl"
    lines = (json.dumps({"session": f"s-{n // 300}", "ts": f"2026-11-20T09:{n // 60 % 60:02d}:{n % 60:02d}Z",
                         "kind": "tool_result", "tool": "bash", "ok": True, "text": f"step {n} done"})
             for n in range(EVENTS))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def memdream(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memdream", *map(os.fspath, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)


def test_without_a_terminal_nothing_but_the_report_is_printed(memory: Path, tmp_path: Path) -> None:
    log = big_log(tmp_path)
    done = memdream("ingest", log, "-m", memory)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == [f"{log} [memdream]: {EVENTS} new, 0 already stored",
                                        f"{EVENTS} event(s) added in segment(s) 000001.jsonl"]
    as_json = memdream("ingest", log, "-m", memory, "-f", "json")
    assert as_json.stderr == "" and json.loads(as_json.stdout)["duplicates"] == EVENTS


def test_the_no_op_reporter_costs_no_rich_import() -> None:
    code = ("import sys\nfrom memdream.progress import Progress\np = Progress.for_output(False)\n"
            "with p.task('x', total=3) as advance:\n    advance(1)\np.describe('y')\n"
            "assert 'rich' not in sys.modules, 'rich imported'\nprint(type(p).__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "Progress"), done.stderr


def forced_terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=100, color_system=None), out


def test_on_a_terminal_ingest_shows_a_bar_per_source_file(memory: Path, tmp_path: Path) -> None:
    console, out = forced_terminal()
    progress = Progress.for_output(True, console=console)
    assert isinstance(progress, RichProgress)
    report = ingest(Memory(memory), [str(big_log(tmp_path))], IngestOptions(progress=progress))
    assert report.total("added") == EVENTS
    shown = out.getvalue()
    assert str(tmp_path / "agent-log.jsonl") in shown  # the bar names the file it reads
    assert "━" in shown  # rich's bar
    assert progress._display is None  # stopped with its last task: the terminal is handed back


def test_nested_tasks_share_one_display_and_describe_changes_the_innermost() -> None:
    console, out = forced_terminal()
    progress = Progress.for_output(True, console=console)
    with progress.task("dreaming", total=2) as outer:
        with progress.task("episode 1", total=None) as inner:
            progress.describe("episode 1 of session s-7")
            inner(5)
            progress._display.refresh()
        outer(2)
        progress._display.refresh()
    shown = out.getvalue()
    assert "episode 1 of session s-7" in shown and "dreaming" in shown and "100%" in shown
    assert progress._display is None


def test_the_disabled_reporter_is_shared_and_does_nothing() -> None:
    assert Progress.for_output(False) is NO_PROGRESS
    with NO_PROGRESS.task("anything", total=10) as advance:
        advance(3)
    assert not NO_PROGRESS.enabled


def test_the_command_shows_the_bar_on_a_real_terminal(memory: Path, tmp_path: Path) -> None:
    import pty
    import select

    log = big_log(tmp_path)
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "memdream", "ingest", str(log), "-m", str(memory)],
                               stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal,
                               env={**os.environ, "COLUMNS": "120", "TERM": "xterm"})
    os.close(terminal)
    shown = b""
    while True:
        ready, _, _ = select.select([controller], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal closed: the command has exited
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert process.wait(timeout=60) == 0
    text = shown.decode("utf-8", "replace")
    assert f"{EVENTS} event(s) added" in text
    assert "━" in text  # the bar, drawn on stderr while the file was read, then cleared


def test_on_a_terminal_dream_shows_its_stages(memory: Path, tmp_path: Path) -> None:
    from memdream.dream.pipeline import dream

    ingest(Memory(memory), [str(big_log(tmp_path))])
    console, out = forced_terminal()
    progress = Progress.for_output(True, console=console)
    report = dream(Memory(memory), progress=progress)
    assert report.events == EVENTS
    shown = out.getvalue()
    assert f"dreaming {EVENTS} event(s)" in shown and "━" in shown
    assert progress._display is None


def test_dream_in_a_pipe_prints_no_progress(memory: Path, tmp_path: Path) -> None:
    ingest(Memory(memory), [str(big_log(tmp_path))])
    done = subprocess.run([sys.executable, "-m", "memdream", "dream", "-m", str(memory)], capture_output=True,
                          text=True)
    assert done.returncode == 0 and done.stderr == ""
    assert "━" not in done.stdout and "dreaming 3000 event(s):" not in done.stdout
