"""Benchmark: what opting out and the progress bar cost `memdream ingest` of a transcript folder.

Writes the transcript folder of ``bench/transcript_bench.py`` (Claude Code sessions and Codex rollouts
of three projects), then ingests it as a real process into a fresh memory, --runs times per setup:

- ``plain``: no ``ingest.exclude``, output to a pipe (the cron case: no progress bar);
- ``globs``: ``ingest.exclude`` set but matching nothing (every session's first events are held back
  until its folder is known);
- ``exclude``: a glob keeping out one project of three (its sessions are dropped as they are read);
- ``marked``: every 10th session ends with ``#memdream:off`` (those files are read twice);
- ``terminal``: ``plain`` under a pseudo-terminal (``script``), so the progress bar is drawn.

Reports the median seconds of each and its ratio to ``plain``.

Usage: python bench/opt_out_bench.py [--sessions N] [--runs R] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures  # noqa: E402
from bench.transcript_bench import ENV, write_folder  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

MARKER = "#memdream:off"


def mark_every(folder: Path, step: int) -> int:
    """Append the marker to the last message the user typed in every ``step``-th Claude session."""
    marked = 0
    for number, path in enumerate(sorted(folder.rglob("*.jsonl"))):
        if number % step or "claude" not in path.parts:
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for index in range(len(lines) - 1, -1, -1):
            line = json.loads(lines[index])
            content = line.get("message", {}).get("content")
            if line.get("type") == "user" and isinstance(content, str):
                line["message"]["content"] = f"{content} {MARKER}"
                lines[index] = json.dumps(line)
                marked += 1
                break
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return marked


def fresh_memory(root: Path, globs: list[str]) -> Path:
    shutil.rmtree(root, ignore_errors=True)
    init_memory(root)
    if globs:
        config = root / "memdream.yaml"
        text = config.read_text(encoding="utf-8")
        config.write_text(text.replace("\n  exclude: []\n", f"\n  exclude: {json.dumps(globs)}\n"), encoding="utf-8")
    return root


def ingest_seconds(folder: Path, memory: Path, terminal: bool) -> float:
    command = [sys.executable, "-m", "memdream", "ingest", str(folder), "-m", str(memory)]
    if terminal:  # a pseudo-terminal for stdout and stderr: the progress bar is drawn
        command = ["script", "-qec", shlex.join(command), "/dev/null"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**ENV, "TERM": "xterm"},
                          stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"ingest failed: {done.stderr.strip() or done.stdout[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    options = parser.parse_args()
    figures = Figures(__file__, "opt-out")
    with tempfile.TemporaryDirectory() as temp:
        tmp = Path(temp)
        folder, marked_folder = tmp / "transcripts", tmp / "marked"
        files = write_folder(folder, options.sessions)
        shutil.copytree(folder, marked_folder)
        marked = mark_every(marked_folder, 10)
        setups = {
            "plain": (folder, [], False),
            "globs": (folder, ["**/no-such-folder/**", "scratch-*"], False),
            "exclude": (folder, ["/home/dev/web-ui/**"], False),
            "marked": (marked_folder, [], False),
            "terminal": (folder, [], True),
        }
        times: dict[str, list[float]] = {name: [] for name in setups}
        for _ in range(options.runs):  # interleaved, so that load on the shared machine hits all alike
            for name, (source, globs, terminal) in setups.items():
                times[name].append(ingest_seconds(source, fresh_memory(tmp / "memory", globs), terminal))
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"transcripts: {files} session files ({sum(p.stat().st_size for p in folder.rglob('*.jsonl')):,} "
              f"bytes); {marked} marked off in the `marked` setup")
        for name, median in medians.items():
            print(f"{name:9} {median:6.2f} s median  x{median / medians['plain']:.2f}")
            if name != "plain":
                figures.add(f"ingest of {files} sessions, `{name}` / `plain`, median of {options.runs}",
                            round(median / medians["plain"], 2), "x", floor=("plain", round(medians["plain"], 2), "s"),
                            note=f"{median:.2f} s")
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}, "
              f"Python {platform.python_version()}, runs {options.runs}")
    figures.write(options.json)


if __name__ == "__main__":
    main()
