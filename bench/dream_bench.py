"""Benchmark: `memdream dream` as a real process.

1. full dream of N raw events (default 100,000) on a fresh memory      target ≤ 60 s
2. scaling: the same for N/2 events; ratio time(N) / time(N/2)         target ≤ 2.3
3. incremental: 1,000 new events on a memory of 10,000 cards           target ≤ 5 s
   (after one dream has warmed the card cache, as under cron)

Usage: python bench/dream_bench.py [--events N] [--cards C] [--runs R]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.synth import build_card_memory, synthetic_events  # noqa: E402
from memdream.memory.create import init_memory  # noqa: E402

ENV = {**os.environ, "NO_COLOR": "1", "MEMDREAM_NOW": "2027-01-01T00:00:00Z"}


def memdream(*args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memdream", *args], capture_output=True, text=True, env=ENV)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args)} failed: {done.stderr.strip()}")
    return elapsed


def write_events(path: Path, events: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def full_dream(tmp: Path, count: int, runs: int) -> tuple[float, int]:
    log = write_events(tmp / f"events-{count}.jsonl", synthetic_events(count))
    times, cards = [], 0
    for run in range(runs):
        root = tmp / f"full-{count}-{run}"
        init_memory(root)
        memdream("ingest", str(log), "-m", str(root))
        times.append(memdream("dream", "-m", str(root)))
        cards = len(list((root / "cards").rglob("*.yaml")))
    return statistics.median(times), cards


def incremental(tmp: Path, cards: int, runs: int) -> tuple[float, float]:
    times, cold = [], 0.0
    for run in range(runs):
        root = tmp / f"inc-{run}"
        build_card_memory(root, cards)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "cards"],
                       check=True)
        cold = memdream("dream", "-m", str(root))  # nothing to do: parses every card, fills the cache
        new = [{**event, "session": f"new-{event['session']}", "id": f"n{i}"}
               for i, event in enumerate(synthetic_events(1000, seed=99 + run))]
        memdream("ingest", str(write_events(tmp / f"new-{run}.jsonl", new)), "-m", str(root))
        times.append(memdream("dream", "-m", str(root)))
    return statistics.median(times), cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        full, made = full_dream(tmp, args.events, args.runs)
        half, _ = full_dream(tmp, args.events // 2, args.runs)
        inc, cold = incremental(tmp, args.cards, args.runs)
    print(f"full dream of {args.events:,} events: median {full:.2f} s ({made:,} card files)")
    print(f"full dream of {args.events // 2:,} events: median {half:.2f} s; ratio {full / half:.2f}")
    print(f"incremental dream of 1,000 events on {args.cards:,} cards: median {inc:.2f} s "
          f"(first dream over the cards, cold cache: {cold:.2f} s)")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, "
          f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
