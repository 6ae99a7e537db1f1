"""Benchmark: the SessionStart hook (`memdream context --session-start`) as Claude Code runs it: a real
process, the hook's JSON on stdin (figures, not a timed test).

Memory: --cards synthetic cards (bench/synth.py) spread over 10 projects (`scope` and a `project:<name>`
tag, as dream scopes what it learns from transcripts), a tenth of the lessons standing instructions, and
a plan with one goal and next actions per project. Figures, medians over --runs:

1. one hook process, warm recall index (the usual case)            target <= 500 ms wall
2. the first hook after the cards changed (the index is rebuilt)
3. for comparison: `python -c pass`, `memdream --version`, and `memdream recall` of a question
4. the floor of issue 24: `python -c "import typer"` (the hook should take at most 1.5x it)

The machine is shared: its load average is printed with the figures.

Usage: python bench/session_start_bench.py [--cards C] [--runs R] [--budget BYTES] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_most  # noqa: E402
from bench.synth import synthetic_cards  # noqa: E402
from memdream import yamlio  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

PROJECTS = [f"project-{number}" for number in range(10)]
ENV = {**{name: value for name, value in os.environ.items() if not name.startswith(("MEMDREAM_", "GIT_"))},
       "NO_COLOR": "1", "MEMDREAM_NOW": "2027-01-01T00:00:00Z"}
FOLDERS = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}


def build(root: Path, count: int) -> None:
    """A memory of ``count`` cards over 10 projects, and a scoped plan, committed."""
    init_memory(root)
    for index, card in enumerate(synthetic_cards(count)):
        project = PROJECTS[index % len(PROJECTS)]
        card.scope = project
        card.tags = [*card.tags, f"project:{project}"]
        if card.type == "lesson" and index % 10 == 4:
            card.tags.append("instruction")
            card.statement = f"In {project}, the user's standing instruction: \"Always run check {index} first.\""
        (root / "cards" / FOLDERS[card.type] / f"{card.id}.yaml").write_text(yamlio.dumps(card.to_dict()))
    plan = yamlio.loads((root / "plan.yaml").read_text(encoding="utf-8"))
    plan["goals"] = [{"text": f"Ship the next release of {project}.", "scope": project} for project in PROJECTS]
    plan["goal"] = plan["goals"][-1]["text"]
    plan["next"] = [{"text": f"Step {step} of {project}", "scope": project} for project in PROJECTS for step in (1, 2)]
    (root / "plan.yaml").write_text(yamlio.dumps(plan), encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "cards"],
                   check=True)


def timed(args: list[str], stdin: str | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s, stdout) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])} failed: {done.stderr.strip()}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout


def hook_arguments(root: Path, budget: int) -> list[str]:
    """The hook's memdream arguments (bench/profiles.py runs them under a profiler)."""
    return ["context", "--session-start", "-m", str(root), "--budget", str(budget)]


def hook(root: Path, budget: int) -> list[str]:
    return [sys.executable, "-m", "memdream", *hook_arguments(root, budget)]


def payload(project: str) -> str:
    return json.dumps({"session_id": "bench", "transcript_path": "/nowhere.jsonl", "cwd": f"/home/dev/{project}",
                       "hook_event_name": "SessionStart", "source": "startup"})


def machine() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load average {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    options = parser.parse_args()
    figures = Figures(__file__, "start-up")
    tmp = Path(tempfile.mkdtemp(prefix="memdream-session-start-"))
    try:
        root = tmp / "memory"
        build(root, options.cards)
        print(f"machine: {machine()}")
        print(f"memory: {options.cards} cards over {len(PROJECTS)} projects")
        args = hook(root, options.budget)
        cold, cold_cpu, _ = timed(args, payload("project-3"))
        print(f"first hook (builds the recall index): {cold * 1000:.0f} ms wall, {cold_cpu * 1000:.0f} CPU-ms")
        # Interleaved, one of each per round: on a shared machine the load changes within a series, and
        # the ratios are fair only if every command sees the same moments.
        commands = {
            "hook": (args, payload("project-3")),
            "pass": ([sys.executable, "-c", "pass"], None),
            "version": ([sys.executable, "-m", "memdream", "--version"], None),
            "recall": ([sys.executable, "-m", "memdream", "recall", "deploy timeout", "-m", str(root)], None),
            "typer": ([sys.executable, "-c", "import typer"], None),
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        out = ""
        for _ in range(options.runs):
            for name, (command, stdin) in commands.items():
                spent, used, printed = timed(command, stdin)
                walls[name].append(spent)
                cpus[name].append(used)
                out = printed if name == "hook" else out
        wall: dict[str, float] = {name: statistics.median(values) * 1000 for name, values in walls.items()}
        cpu: dict[str, float] = {name: statistics.median(values) * 1000 for name, values in cpus.items()}
        context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        cards = context.count("\n- ")
        print(f"SessionStart hook, warm, median of {options.runs}: {wall['hook']:.0f} ms wall, {cpu['hook']:.0f} "
              f"CPU-ms (target <= 500 ms); context {len(context.encode())} bytes, {cards} cards")
        print("interleaved, wall ms (CPU-ms): " + "; ".join(
            f"{name} {wall[name]:.0f} ({cpu[name]:.0f})" for name in ("pass", "version", "recall")))
        print(f"ratios, wall (CPU): hook / memdream --version {wall['hook'] / wall['version']:.2f} "
              f"({cpu['hook'] / cpu['version']:.2f}); hook / recall {wall['hook'] / wall['recall']:.2f} "
              f"({cpu['hook'] / cpu['recall']:.2f})")
        print(f"floor: python -c \"import typer\" {wall['typer']:.0f} ms ({cpu['typer']:.0f} CPU-ms); hook / typer "
              f"{wall['hook'] / wall['typer']:.2f} (issue 24: <= 1.5)")
        print(f"machine after: {machine()}")
        floor = ('python -c "import typer"', round(wall["typer"], 1), "ms")
        figures.add(f"SessionStart hook (`context --session-start`), {options.cards:,} cards, warm, median of "
                    f"{options.runs}", round(wall["hook"], 1), "ms", floor=floor,
                    target=at_most(round(1.5 * wall["typer"], 1), "<= 1.5x import typer", "issue 24"),
                    note=f"{wall['hook'] / wall['typer']:.2f}x import typer; CPU {cpu['hook']:.0f} ms; "
                         f"`memdream --version` {wall['version']:.0f} ms "
                         f"(hook / version {wall['hook'] / wall['version']:.2f}); "
                         f"the script's own target <= 500 ms: {'met' if wall['hook'] <= 500 else 'missed'}")
        figures.add("first hook (builds the recall index)", round(cold * 1000), "ms")
        figures.add("`memdream --version`, interleaved with the hook", round(wall["version"], 1), "ms", floor=floor)
        figures.add("bare interpreter start-up (`python -c pass`)", round(wall["pass"], 1), "ms")
        figures.write(options.json)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
