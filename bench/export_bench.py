"""Benchmark: `memdream export` as a real process (figures, not a timed test).

Memory: 10,000 cards (bench/synth.py::build_card_memory) plus 100,000 raw events (synthetic_events,
ingested), as bench/recall_bench.py builds it. Figures, medians over --runs, warm card cache:

1. `export --subject postgres-3`: a narrow subject (a few cards, ~100 events)
2. `export --subject postgres`: a broad one (every "postgres-N" names it as a whole word: ~10,000 events)
3. `export --session bench-000100`: one session of 50 events

The machine is shared: its load average is printed with the figures.

Usage: python bench/export_bench.py [--cards C] [--events N] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.recall_bench import CPU, build, machine, memdream  # noqa: E402

QUERIES = (("--subject", "postgres-3"), ("--subject", "postgres"), ("--session", "bench-000100"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mem"
        ingest = build(root, Path(tmp), args.cards, args.events)
        print(f"built {args.cards:,} cards + {args.events:,} events (ingest {ingest:.1f} s)")
        cold, _ = memdream("export", "--subject", "postgres-3", "-m", str(root))
        print(f"first export (cold card cache): {cold:.2f} s")
        for option, value in QUERIES:
            CPU.clear()
            times, output = [], ""
            for _ in range(args.runs):
                elapsed, output = memdream("export", option, value, "-m", str(root))
                times.append(elapsed)
            bundle = json.loads(output)
            counts = {name: len(bundle[name]) for name in ("cards", "archived", "mentions", "events", "audit", "plan")}
            cpu = next(iter(CPU.values()))
            print(f"export {option} {value}: {statistics.median(times):.2f} s median of {args.runs} "
                  f"({min(times):.2f}-{max(times):.2f} s, {statistics.median(cpu):.2f} CPU-s), "
                  f"{len(output) / 1e6:.1f} MB, {counts}")
    print(machine())


if __name__ == "__main__":
    main()
