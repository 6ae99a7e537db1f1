"""Benchmark: wall time of `memdream enqueue --from-hook`, the command a Claude Code hook runs.

Usage: python bench/enqueue_bench.py [--runs N] [--json FILE]

Runs the installed script (`memdream` next to this interpreter) and `python -m memdream`, N times
each (default 20), with a SessionEnd payload on stdin, into a fresh memory. Prints the median
and the spread of each, against the 150 ms target for a hook, plus the machine and its load.
For reference it also times a bare `python -c pass`: the interpreter's own start-up, and the floor of
issue 24, `python -c "import typer"` (a hook process should take at most 1.5x it).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_most  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

BUDGET_MS = 150.0
TYPER_RATIO = 1.5  # issue 24: a hook process within 1.5x `python -c "import typer"`


CPU_MS: dict[str, list[float]] = {}  # CPU time (user + system) of each process: steadier than wall on a busy machine


def timed(command: list[str], stdin: bytes, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True)
        times.append((time.perf_counter() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        CPU_MS.setdefault(command[0], []).append(
            (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        if done.returncode != 0 or done.stdout:
            raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[:500]}")
    return times


def hook_payload(folder: Path) -> bytes:
    """The SessionEnd payload a Claude Code hook sends, for a one-line transcript written into ``folder``."""
    transcript = folder / "session.jsonl"
    transcript.write_text("{}\n", encoding="utf-8")
    return json.dumps({"session_id": "bench", "transcript_path": str(transcript), "cwd": str(folder),
                       "hook_event_name": "SessionEnd", "reason": "exit"}).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    figures = Figures(__file__, "start-up")
    script = Path(sys.executable).with_name("memdream")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        init_memory(root)
        payload = hook_payload(Path(tmp))
        load_before = os.getloadavg()
        commands = {
            f"{script.name} (installed script)": [str(script)],
            "python -m memdream": [sys.executable, "-m", "memdream"],
        }
        results = {}
        cpu = {}
        for label, prefix in commands.items():
            if not Path(prefix[0]).exists():
                print(f"{label}: not installed, skipped")
                continue
            timed([*prefix, "enqueue", "--from-hook", "-m", str(root)], payload, 2)  # warm the page cache
            CPU_MS.clear()
            results[label] = timed([*prefix, "enqueue", "--from-hook", "-m", str(root)], payload, args.runs)
            cpu[label] = statistics.median(CPU_MS[prefix[0]])
        bare = timed([sys.executable, "-c", "pass"], b"", args.runs)
        typer = timed([sys.executable, "-c", "import typer"], b"", args.runs)
        spooled = len((root / ".memdream" / "spool.jsonl").read_text(encoding="utf-8").splitlines())
        load_after = os.getloadavg()
    for label, times in results.items():
        median = statistics.median(times)
        print(f"enqueue --from-hook via {label}: median {median:.1f} ms over {len(times)} runs "
              f"(min {min(times):.1f}, max {max(times):.1f}), CPU {cpu[label]:.1f} ms - target {BUDGET_MS:.0f} ms: "
              f"{'met' if median <= BUDGET_MS else 'NOT met'}")
    print(f"bare interpreter start-up (python -c pass): median {statistics.median(bare):.1f} ms")
    typer_ms = statistics.median(typer)
    print(f"floor: python -c \"import typer\": median {typer_ms:.1f} ms "
          f"(issue 24: a hook process <= {TYPER_RATIO}x it)")
    print(f"spool lines written: {spooled}")
    for label, times in results.items():
        median = statistics.median(times)
        figures.add(f"`enqueue --from-hook` via {label}, median of {len(times)}", round(median, 1), "ms",
                    target=at_most(round(TYPER_RATIO * typer_ms, 1), f"<= {TYPER_RATIO}x import typer", "issue 24"),
                    floor=('python -c "import typer"', round(typer_ms, 1), "ms"),
                    note=f"CPU {cpu[label]:.0f} ms; {median / typer_ms:.2f}x import typer; the script's own target "
                         f"<= {BUDGET_MS:.0f} ms: {'met' if median <= BUDGET_MS else 'missed'}")
    figures.add("bare interpreter start-up (`python -c pass`)", round(statistics.median(bare), 1), "ms")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, "
          f"load average {load_before[0]:.2f} before / {load_after[0]:.2f} after")
    figures.write(args.json)


if __name__ == "__main__":
    main()
