"""Benchmark: the review commands over a long dream history (figures, not a timed test).

Memory: --dreams commits made the way dreams make them (a card file, an audit file naming it, the
trailers `Memdream-Run`, `Memdream-Consumed`, `Memdream-Events`), every fifth one superseding an
earlier card, over --cards cards committed first. Each command runs as a real process; medians over
--runs of wall and CPU time (children included: git):

    memdream log / log --limit 20 / diff / diff HEAD~100 (or fewer) / audit <card> / audit --verify / rollback --dry-run

The machine is shared: its load average is printed with the figures.

Usage: python bench/review_bench.py [--dreams N] [--cards C] [--runs R] [--json FILE]
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

from bench.figures import Figures  # noqa: E402
from bench.synth import synthetic_cards  # noqa: E402
from memdream import yamlio  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

ENV = {**{name: value for name, value in os.environ.items() if not name.startswith(("MEMDREAM_", "GIT_"))},
       "NO_COLOR": "1", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost"}
FOLDERS = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, env=ENV, capture_output=True)


def build(root: Path, dreams: int, cards: int) -> str:
    """The memory and its history; returns the id of a card that a later dream superseded."""
    init_memory(root)
    made = synthetic_cards(cards + dreams)
    for card in made[:cards]:
        (root / "cards" / FOLDERS[card.type] / f"{card.id}.yaml").write_text(yamlio.dumps(card.to_dict()))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "cards", "-m", "Memdream-Human-Edit: Bench <bench@localhost>")
    superseded = made[0].id
    for number, card in enumerate(made[cards:], 1):
        run = f"2026-11-{1 + number // 100:02d}T03-{number // 60 % 60:02d}-{number % 60:02d}Z-{number:04x}"
        ops = [{"run": run, "op": "add", "card": card.id, "reason": f"bench dream {number}",
                "evidence": [item.ref for item in card.evidence], "confidence_before": None,
                "confidence_after": card.confidence}]
        if number % 5 == 0:  # supersede an earlier card of the same type
            old = made[number // 5 % cards]
            if old.type == card.type and old.status not in ("superseded", "archived"):
                old_path = root / "cards" / FOLDERS[old.type] / f"{old.id}.yaml"
                if old_path.exists():
                    old.status, old.superseded_by = "superseded", [card.id]
                    card.supersedes = [old.id]
                    old_path.unlink()
                    (root / "archive" / FOLDERS[old.type] / f"{old.id}.yaml").write_text(yamlio.dumps(old.to_dict()))
                    ops.append({"run": run, "op": "supersede", "card": card.id, "cards": [old.id],
                                "reason": "bench", "evidence": [], "confidence_before": old.confidence,
                                "confidence_after": card.confidence})
                    superseded = old.id
        (root / "cards" / FOLDERS[card.type] / f"{card.id}.yaml").write_text(yamlio.dumps(card.to_dict()))
        (root / "audit" / f"{run}.jsonl").write_text("".join(json.dumps(op) + "\n" for op in ops))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "memdream dream: 1 added", "-m",
            f"Memdream-Run: {run}\nMemdream-Consumed: segments {number:06d}..{number:06d}\nMemdream-Events: 10")
    return superseded


def timed(args: list[str], runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(args, capture_output=True, text=True, env=ENV)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(args[3:])} failed: {done.stderr.strip()}")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dreams", type=int, default=500)
    parser.add_argument("--cards", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    options = parser.parse_args()
    figures = Figures(__file__, "review")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "mem"
        started = time.perf_counter()
        card = build(root, options.dreams, options.cards)
        print(f"built {options.dreams} dreams over {options.cards} cards in {time.perf_counter() - started:.0f} s")
        base = [sys.executable, "-m", "memdream"]
        depth = min(100, options.dreams)
        cases = {
            "log": ["log"], "log --limit 20": ["log", "--limit", "20"], "diff (last dream)": ["diff"],
            f"diff HEAD~{depth}": ["diff", f"HEAD~{depth}"], f"audit {card}": ["audit", card],
            "audit --verify": ["audit", "--verify"], "rollback --dry-run": ["rollback", "--dry-run"],
        }
        print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
        for name, args in cases.items():
            wall, cpu = timed([*base, *args, "-m", str(root)], options.runs)
            print(f"  {name:<24} {wall * 1000:7.0f} ms wall  {cpu * 1000:7.0f} CPU-ms")
            figures.add(f"`memdream {name}`, {options.dreams} dreams, {options.cards:,} cards, "
                        f"median of {options.runs}", round(wall * 1000), "ms", note=f"CPU {cpu * 1000:.0f} ms")
        print(f"load {os.getloadavg()[0]:.1f}")
    figures.write(options.json)


if __name__ == "__main__":
    main()
