"""Benchmark: `memdream lint` over a memory of N cards (default 10,000), as a real process.

The memory is bench/synth.py's cards as dream writes them: each card shows its newest evidence and
``evidence_count``, and an audit file holds the older entries (so lint reads the full evidence).
Each run is a fresh process on the same files (lint keeps no cache: CI lints a fresh clone).

Prints the median wall time of R runs for N cards and for N/2 cards, their ratio (2.0 is linear),
the target (median for N cards <= 5 s), the CPU time of the lint processes, and the machine with
its load average (it is shared: wall times vary with what else runs).

Usage: python bench/lint_bench.py [--cards N] [--runs R] [--json FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_most  # noqa: E402
from bench.synth import build_card_memory, synthetic_card  # noqa: E402
from memdream.memory.card import INLINE_EVIDENCE  # noqa: E402
from memdream.memory.evidence_log import evidence_line  # noqa: E402

TARGET_SECONDS = 5.0
RUN_ID = "2026-11-14T03-00-00Z-bench"
ENV = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GITHUB_ACTIONS")},
       "NO_COLOR": "1"}


def build_memory(root: Path, cards: int, seed: int = 7) -> None:
    """build_card_memory, plus the audit lines of the evidence the cards no longer show
    (the same generator and seed give the same cards), each citing its event's sha256 as dream's do."""
    build_card_memory(root, cards, seed)
    rng = random.Random(seed)
    lines = []
    for index in range(cards):
        card = synthetic_card(index, rng)
        hidden = [replace(item, hash="sha256:" + hashlib.sha256(item.ref.encode()).hexdigest())
                  for item in card.evidence[:-INLINE_EVIDENCE]]
        if hidden:
            lines.append(json.dumps(evidence_line(RUN_ID, card.id, hidden)) + "\n")
    (root / "audit").mkdir(exist_ok=True)
    (root / "audit" / f"{RUN_ID}.jsonl").write_text("".join(lines), encoding="utf-8")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def lint_times(root: Path, runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each run (CPU time suffers less from a busy shared machine)."""
    walls, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "memdream", "lint", str(root)], capture_output=True,
                              text=True, env=ENV, check=False)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != 0:
            raise SystemExit(f"lint failed ({done.returncode}): {done.stdout[:500]}{done.stderr[:500]}")
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    figures = Figures(__file__, "lint")
    medians, cpu_medians = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for cards in (args.cards // 2, args.cards):
            root = Path(tmp) / f"memory-{cards}"
            build_memory(root, cards)
            times, cpus = lint_times(root, args.runs)
            medians[cards] = statistics.median(times)
            cpu_medians[cards] = statistics.median(cpus)
            print(f"lint of {cards:,} cards: median {medians[cards]:.2f} s over {args.runs} runs "
                  f"(min {min(times):.2f} s, max {max(times):.2f} s; CPU median {statistics.median(cpus):.2f} s)")
    full = medians[args.cards]
    print(f"scaling {args.cards:,}/{args.cards // 2:,} cards: {full / medians[args.cards // 2]:.2f}x (2.00 is linear)")
    print(f"target: median <= {TARGET_SECONDS:.0f} s for {args.cards:,} cards: "
          f"{'met' if full <= TARGET_SECONDS else 'MISSED'} ({full:.2f} s)")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
          f"Python {platform.python_version()}, {platform.machine()}")
    half = args.cards // 2
    figures.add(f"`memdream lint` of {args.cards:,} cards, median of {args.runs} processes", round(full, 2), "s",
                target=at_most(TARGET_SECONDS, f"<= {TARGET_SECONDS:.0f} s"),
                note=f"CPU {cpu_medians[args.cards]:.2f} s")
    figures.add(f"`memdream lint` of {half:,} cards", round(medians[half], 2), "s",
                note=f"CPU {cpu_medians[half]:.2f} s")
    figures.add(f"scaling {args.cards:,} / {half:,} cards", round(full / medians[half], 2), "x",
                note="2.00 is linear")
    figures.write(args.json)


if __name__ == "__main__":
    main()
