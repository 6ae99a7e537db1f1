"""Benchmark: dream time, active memory and recall quality as the log grows from 10 to 1,000 sessions.

The sessions are bench/transcript_bench.py's (real-format Claude Code sessions and Codex rollouts of three
projects: reads, edits, test runs, a recurring error per project and its fix, instructions, rejections). They
go into one memory the way a user's cron takes them: at each point (10, 30, 100, 300, 1,000 sessions) the
sessions since the last point are ingested and dreamed into the same memory (`memdream ingest` of that batch's
folder, then `memdream dream`: real processes, MEMDREAM_NOW a day after the batch's newest session). Measured
at each point:

- **dream time** of that step (wall seconds of the dream process; ingest's beside it);
- **active memory bytes**: cards/ + plan.yaml + INDEX.md, what recall reads before the raw layer;
- **recall quality**: questions about the sessions so far whose answer is in the log by then: each project's
  test, install and lint commands and what works when its bare test command fails, the user's instructions
  (lint before committing, no push to main): the knowledge questions; and what a given task fixed (20 tasks
  drawn from the sessions so far, answered only by a context line naming the task and the fix): the task
  questions. Score: the share of questions whose
  `recall --format json` context at the default budget (no scope) holds every answer token; baseline: a plain
  BM25 over the memory's raw events at the same budget (bench/knowledge_bench.py's, as bench/real_sessions.py
  uses it), same run.

Writes --json and a chart of the three (--png, default bench/growth.png; needs matplotlib, the bench extra:
`pip install -e '.[bench]'`; without it the chart is skipped with a message and the figures are still written).

Usage: python bench/growth_bench.py [--max-sessions N] [--png FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures  # noqa: E402
from bench.real_sessions import bm25_texts, raw_events  # noqa: E402
from bench.transcript_bench import ENV, PROJECTS, START, claude_session, codex_session  # noqa: E402

POINTS = (10, 30, 100, 300, 1000)
EPISODES = 20  # task questions per point
TASK = re.compile(r"Task (\d+): fix the rounding of ([a-z ]+?) in ([\w./]+)")


@dataclass
class Question:
    text: str
    answer: list[str]  # tokens the context must hold (case-insensitive substrings)
    line: bool = False  # all on one line of the context (a task and what it fixed)


def session_start(number: int) -> datetime:
    return START + timedelta(hours=7 * number)


def write_batches(folder: Path, points: list[int], seed: int = 7) -> dict[int, str]:
    """The sessions of transcript_bench.write_folder (same generator, same order), each batch of sessions
    between two points in its own folder ``folder/<point>``; returns each Claude session's task line."""
    rng = random.Random(seed)
    tasks: dict[int, str] = {}
    for number in range(points[-1]):
        batch = folder / str(next(point for point in points if number < point))
        project = PROJECTS[number % len(PROJECTS)]
        if number % 4 == 3:
            codex_session(project, number, session_start(number), rng).write(batch / "codex")
        else:
            path = claude_session(project, number, session_start(number), rng).write(batch / "claude" / project.name)
            found = TASK.search(path.read_text(encoding="utf-8"))
            if found:
                tasks[number] = found.group(0)
    return tasks


def knowledge_questions() -> list[Question]:
    questions = [Question("can I push to main?", ["pull request"]),
                 Question("what should I always do before committing?", ["linter"])]
    for project in PROJECTS:
        questions += [Question(f"how do I run the tests in {project.name}?", [project.test]),
                      Question(f"{project.bare_test} fails in {project.name}: what should I run instead?",
                               [project.test]),
                      Question(f"how do I install the dependencies of {project.name}?", [project.install]),
                      Question(f"how do I lint {project.name}?", [project.lint])]
    return questions


def task_questions(tasks: dict[int, str], sessions: int, seed: int) -> list[Question]:
    """What ``EPISODES`` tasks among the first ``sessions`` fixed; the answer must name the task."""
    known = sorted(number for number in tasks if number < sessions)
    drawn = random.Random(seed).sample(known, min(EPISODES, len(known)))
    questions = []
    for number in sorted(drawn):
        found = TASK.search(tasks[number])
        assert found is not None
        questions.append(Question(f"task {number}: what did we fix the rounding of, and in which file?",
                                  [f"Task {number}:", f"rounding of {found.group(2)} in {found.group(3)}"], line=True))
    return questions


def answered(question: Question, context: str) -> bool:
    places = context.splitlines() if question.line else [context]
    return any(all(token.casefold() in place.casefold() for token in question.answer) for place in places)


def memdream(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memdream", *args], capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return elapsed, done.stdout


def active_bytes(root: Path) -> tuple[int, int]:
    """(bytes of cards/ + plan.yaml + INDEX.md, card files)."""
    cards = [path for path in (root / "cards").rglob("*.yaml") if path.is_file()]
    size = sum(path.stat().st_size for path in cards)
    size += sum((root / name).stat().st_size for name in ("plan.yaml", "INDEX.md") if (root / name).exists())
    return size, len(cards)


def folder_text(folders: list[Path]) -> str:
    return "\n".join(path.read_text(encoding="utf-8") for folder in folders for path in sorted(folder.rglob("*.jsonl")))


def measure_point(root: Path, batch: Path, seen: list[Path], tasks: dict[int, str], sessions: int,
                  work: Path) -> dict[str, Any]:
    env = {**ENV, "MEMDREAM_NOW": (session_start(sessions - 1) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")}
    ingest_s, out = memdream(["ingest", str(batch), "-m", str(root), "--format", "json"], env, work)
    dream_s, _ = memdream(["dream", "-m", str(root)], env, work)
    log = folder_text(seen)
    asked = [q for q in knowledge_questions() if all(t.casefold() in log.casefold() for t in q.answer)]
    asked += task_questions(tasks, sessions, seed=sessions)
    query_file = work / f"questions-{sessions}.txt"
    query_file.write_text("".join(q.text + "\n" for q in asked), encoding="utf-8")
    _, out_recall = memdream(["recall", "--queries", str(query_file), "--format", "json", "-m", str(root)], env, work)
    results = [json.loads(line) for line in out_recall.splitlines() if line.strip()]
    budget = int(results[0]["budget"])
    contexts = [str(result["context"]) for result in results]
    events = raw_events(root)
    bm25 = bm25_texts(events, [q.text for q in asked], budget)
    size, cards = active_bytes(root)
    hits = [answered(q, text) for q, text in zip(asked, contexts)]
    bm25_hits = [answered(q, text) for q, text in zip(asked, bm25)]
    kinds = {"knowledge": [i for i, q in enumerate(asked) if not q.line],
             "task": [i for i, q in enumerate(asked) if q.line]}
    return {"sessions": sessions, "events": len(events), "new_events": json.loads(out)["added"],
            "ingest_s": round(ingest_s, 2), "dream_s": round(dream_s, 2), "active_bytes": size, "cards": cards,
            "raw_bytes": sum(path.stat().st_size for path in (root / "raw" / "segments").glob("*.jsonl")),
            "log_bytes": sum(path.stat().st_size for folder in seen for path in folder.rglob("*.jsonl")),
            "budget": budget, "questions": len(asked), "recall": round(sum(hits) / len(asked), 3),
            "bm25": round(sum(bm25_hits) / len(asked), 3),
            **{f"{kind}_questions": len(found) for kind, found in kinds.items()},
            **{f"{kind}_recall": round(sum(hits[i] for i in found) / max(1, len(found)), 3)
               for kind, found in kinds.items()},
            **{f"{kind}_bm25": round(sum(bm25_hits[i] for i in found) / max(1, len(found)), 3)
               for kind, found in kinds.items()},
            "missed": [q.text for q, hit in zip(asked, hits) if not hit]}


def chart(points: list[dict[str, Any]], path: Path) -> str:
    """The three panels over a log-scale x axis; returns what was done (matplotlib is the bench extra)."""
    try:
        import matplotlib
    except ImportError:
        return f"chart skipped: matplotlib is not installed (pip install -e '.[bench]'); {path} not written"
    matplotlib.use("Agg")
    from matplotlib import pyplot

    sessions = [point["sessions"] for point in points]
    figure, (dream, memory, quality) = pyplot.subplots(3, 1, sharex=True, figsize=(10, 8.5))
    dream.plot(sessions, [p["dream_s"] for p in points], "o-", label="dream of the step")
    dream.plot(sessions, [p["ingest_s"] for p in points], "s--", color="grey", label="ingest of the step")
    previous = [0] + sessions[:-1]
    for point, before in zip(points, previous):
        dream.annotate(f"+{point['sessions'] - before:,}", (point["sessions"], point["dream_s"]),
                       textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
    dream.set_ylim(0, 1.2 * max(max(p["dream_s"], p["ingest_s"]) for p in points))
    dream.set_ylabel("seconds")
    dream.set_title("dream time of each step (+ the new sessions since the last point)")
    memory.plot(sessions, [p["active_bytes"] / 1000 for p in points], "o-", label="active memory (cards, plan, INDEX)")
    memory.plot(sessions, [p["raw_bytes"] / 1000 for p in points], "s--", color="grey", label="raw layer")
    memory.set_yscale("log")
    memory.set_ylabel("KB")
    memory.set_title("what recall reads first, against the raw log")
    for kind, color in (("knowledge", "C0"), ("task", "C1")):
        asked = points[-1][f"{kind}_questions"]
        quality.plot(sessions, [100 * p[f"{kind}_recall"] for p in points], "o-", color=color,
                     label=f"memdream recall, {kind} questions ({asked})")
        quality.plot(sessions, [100 * p[f"{kind}_bm25"] for p in points], "s--", color=color, alpha=0.5,
                     label=f"plain BM25 over the raw events, {kind} questions")
    quality.set_ylim(0, 105)
    quality.set_ylabel("% of questions answered")
    quality.set_title(f"recall quality at the default budget ({points[0]['budget']:,} B)")
    quality.set_xscale("log")
    quality.set_xticks(sessions, [f"{s:,}" for s in sessions])
    quality.minorticks_off()
    quality.set_xlabel("sessions in the log (Claude Code and Codex, 3 projects)")
    for axis in (dream, memory, quality):
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.suptitle("memdream as the log grows (bench/growth_bench.py)")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return f"chart: {path}"


def machine() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, load {load}"


def add_figures(figures: Figures, points: list[dict[str, Any]]) -> None:
    for point in points:
        at = f"{point['sessions']:,} sessions"
        figures.add(f"{at}: dream of the step ({point['new_events']:,} new events)", point["dream_s"], "s",
                    note=f"ingest {point['ingest_s']:.2f} s")
        figures.add(f"{at}: active memory (cards, plan, INDEX)", point["active_bytes"], "bytes",
                    floor=("raw layer", point["raw_bytes"], "bytes"), note=f"{point['cards']} cards")
        figures.add(f"{at}: recall quality ({point['questions']} questions)", point["recall"], "share",
                    floor=("plain BM25 over the raw events, same budget", point["bm25"], "share"),
                    note=f"knowledge questions {point['knowledge_recall']:.0%} (BM25 {point['knowledge_bm25']:.0%}), "
                         f"task questions {point['task_recall']:.0%} (BM25 {point['task_bm25']:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-sessions", type=int, default=POINTS[-1],
                        help=f"Stop at this many sessions (default {POINTS[-1]}; the points are {POINTS} up to it).")
    parser.add_argument("--png", type=Path, default=ROOT / "bench" / "growth.png",
                        help="The chart (default %(default)s).")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    points = [point for point in POINTS if point < args.max_sessions] + [args.max_sessions]
    figures = Figures(__file__, "growth")
    measured: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memdream-growth-") as name:
        work = Path(name)
        tasks = write_batches(work / "batches", points)
        root = work / "memory"
        memdream(["init", str(root)], ENV, work)
        print(f"{'sessions':>8} {'events':>7} {'ingest s':>8} {'dream s':>7} {'active B':>9} {'cards':>5} "
              f"{'raw B':>10} {'questions':>9} {'recall':>6} {'bm25':>5} {'knowledge':>9} {'bm25':>5} {'tasks':>5} "
          f"{'bm25':>5}", flush=True)
        for number, point in enumerate(points):
            batch = work / "batches" / str(point)
            seen = [work / "batches" / str(p) for p in points[:number + 1]]
            got = measure_point(root, batch, seen, tasks, point, work)
            measured.append(got)
            print(f"{point:>8,} {got['events']:>7,} {got['ingest_s']:>8.2f} {got['dream_s']:>7.2f} "
                  f"{got['active_bytes']:>9,} {got['cards']:>5} {got['raw_bytes']:>10,} {got['questions']:>9} "
                  f"{got['recall']:>6.0%} {got['bm25']:>5.0%} {got['knowledge_recall']:>9.0%} "
                  f"{got['knowledge_bm25']:>5.0%} {got['task_recall']:>5.0%} {got['task_bm25']:>5.0%}", flush=True)
    print(chart(measured, args.png))
    print(f"machine: {machine()}")
    add_figures(figures, measured)
    figures.write(args.json, points=measured, png=str(args.png))


if __name__ == "__main__":
    main()
