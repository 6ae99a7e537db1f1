"""Benchmark: `memdream lint` over a memory of N cards (default 10,000), as a real process.

Usage: python bench/lint_bench.py [--cards N] [--runs R]
Prints the median wall time of R runs and the machine it ran on.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import build_card_memory  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        build_card_memory(root, args.cards)
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "memdream", "lint", str(root)], capture_output=True,
                                  text=True, env={**os.environ, "NO_COLOR": "1"})
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"lint failed ({done.returncode}): {done.stdout[:500]}{done.stderr[:500]}")
    print(f"lint of {args.cards:,} cards: median {statistics.median(times):.2f} s over {args.runs} runs "
          f"(min {min(times):.2f} s, max {max(times):.2f} s)")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}")


if __name__ == "__main__":
    main()
