"""Benchmark: recall of LoCoMo evidence turns within a byte budget, through the real pipeline.

For each conversation of the development set (default /work/shared/bench/locomo-dev): a fresh memory,
`ingest` of its events.jsonl, `dream`, all with MEMDREAM_NOW from its NOW file; then every question
through `memdream recall --queries FILE --budget B --format json` (one process per budget). A
question's score is the fraction of its gold evidence turns (log://<conv>/S<n>#D<n>:<k>) whose
reference is among the evidence of the returned items; scores are averaged over questions.

Targets (README): overall 0.65 / 0.72 / 0.78 at 2,000 / 4,000 / 8,000 B. The reference is BM25 over single
turns rendered `[date] speaker: text`, measured once (the constants below), not in each run.

With --embed-model MODEL (a model2vec folder or Hugging Face name; needs `pip install 'memdream[embed]'`),
recall also ranks cards by meaning (recall.embed, docs/recall.md): the model and the cards' vectors are
prepared after the dream, as `memdream dream` does.

Usage: python bench/locomo.py [--data DIR] [--budgets 2000,4000,8000] [--keep DIR] [--no-trim] [--json FILE]
                              [--embed-model MODEL [--min-similarity X]]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_least  # noqa: E402

DEFAULT_DATA = Path("/work/shared/bench/locomo-dev")
CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")
REFERENCE = {2000: 0.559, 4000: 0.633, 8000: 0.696}
TARGETS = {2000: 0.65, 4000: 0.72, 8000: 0.78}


def memdream(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "memdream", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def gold_refs(conversation: str, evidence: list[str]) -> set[str]:
    """D3:11 -> log://conv-26/S3#D3:11 (the session number is the dialogue number)."""
    return {f"log://{conversation}/S{ref.split(':')[0].removeprefix('D')}#{ref}" for ref in evidence}


def run_conversation(folder: Path, work: Path, budgets: list[int], settings: dict[str, object],
                     embed: tuple[str, float | None] | None = None) -> dict[int, list[tuple[str, float]]]:
    """(category, score) per question, per budget."""
    from memdream import yamlio
    from memdream.commands.init import init_memory

    name = folder.name
    env = {**os.environ, "NO_COLOR": "1", "MEMDREAM_NOW": (folder / "NOW").read_text().strip()}
    root = work / name
    init_memory(root)
    memdream("ingest", str(folder / "events.jsonl"), "-m", str(root), env=env)
    memdream("dream", "-m", str(root), env=env)
    if settings:  # an ablation: recall settings changed after the memory was built
        config = yamlio.load_file(root / "memdream.yaml")
        config["recall"].update(settings)
        yamlio.dump_file(root / "memdream.yaml", config)
    if embed is not None:
        from bench.embedding import use_model

        use_model(root, *embed)
    cases = [json.loads(line) for line in (folder / "cases.jsonl").read_text().splitlines() if line.strip()]
    questions = work / f"{name}.queries"
    questions.write_text("".join(" ".join(case["question"].split()) + "\n" for case in cases), encoding="utf-8")
    scores: dict[int, list[tuple[str, float]]] = {}
    for budget in budgets:
        out = memdream("recall", "--queries", str(questions), "--budget", str(budget), "-m", str(root), env=env)
        results = [json.loads(line) for line in out.splitlines()]
        assert len(results) == len(cases), (len(results), len(cases))
        scores[budget] = []
        for case, result in zip(cases, results):
            assert result["bytes"] <= budget
            returned = {ref for item in result["items"] for ref in item.get("evidence", [])}
            gold = gold_refs(name, case["evidence"])
            scores[budget].append((case["category"], len(gold & returned) / len(gold)))
    return scores


def machine() -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {load}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--budgets", default="2000,4000,8000")
    parser.add_argument("--keep", type=Path, help="Build the memories here and keep them.")
    parser.add_argument("--no-trim", action="store_true",
                        help="Ablation: show raw turns whole (recall.raw_trim_above: 0).")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    parser.add_argument("--embed-model", metavar="MODEL",
                        help="Rank cards by meaning too (recall.embed) with this model2vec folder or hub name.")
    parser.add_argument("--min-similarity", type=float, metavar="X",
                        help="recall.embed.min_similarity with --embed-model.")
    args = parser.parse_args()
    embed = (args.embed_model, args.min_similarity) if args.embed_model else None
    figures = Figures(__file__, "LoCoMo")
    settings = {"raw_trim_above": 0} if args.no_trim else {}
    budgets = [int(value) for value in args.budgets.split(",")]
    folders = sorted(path for path in args.data.iterdir() if (path / "cases.jsonl").exists())
    start = time.perf_counter()
    totals: dict[int, list[tuple[str, float]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as name:
        work = args.keep or Path(name)
        work.mkdir(parents=True, exist_ok=True)
        for folder in folders:
            for budget, scores in run_conversation(folder, work, budgets, settings, embed).items():
                totals[budget].extend(scores)
    questions = len(totals[budgets[0]])
    print(f"LoCoMo evidence recall within a byte budget: {len(folders)} conversations, {questions} questions"
          + (" (ablation: raw turns untrimmed)" if args.no_trim else "")
          + (f" (cards ranked by meaning too: {args.embed_model})" if embed else ""))
    header = f"{'budget':>7} {'overall':>8} " + " ".join(f"{category:>11}" for category in CATEGORIES)
    print(header + f" {'reference':>9}")
    for budget in budgets:
        by_category: dict[str, list[float]] = defaultdict(list)
        for category, score in totals[budget]:
            by_category[category].append(score)
        overall = sum(score for _, score in totals[budget]) / len(totals[budget])
        cells = " ".join(f"{sum(v) / len(v):11.3f}" if (v := by_category.get(c)) else f"{'-':>11}"
                         for c in CATEGORIES)
        reference = f"{REFERENCE[budget]:9.3f}" if budget in REFERENCE else f"{'-':>9}"
        print(f"{budget:7d} {overall:8.3f} {cells} {reference}")
        figures.add(f"evidence recall at {budget:,} B, {len(totals[budget])} questions", round(overall, 3), "score",
                    target=at_least(TARGETS[budget], f">= {TARGETS[budget]}") if budget in TARGETS else None,
                    floor=("BM25 over single turns (reference, not this run)", REFERENCE[budget], "score")
                    if budget in REFERENCE else None,
                    note=", ".join(f"{c} {sum(v) / len(v):.3f}" for c in CATEGORIES if (v := by_category.get(c))))
    counts = defaultdict(int)
    for category, _ in totals[budgets[0]]:
        counts[category] += 1
    print("questions per category: " + ", ".join(f"{c} {counts[c]}" for c in CATEGORIES))
    print(f"machine: {machine()}; wall {time.perf_counter() - start:.1f} s")
    figures.write(args.json, conversations=len(folders), no_trim=args.no_trim, embed_model=args.embed_model)


if __name__ == "__main__":
    main()
