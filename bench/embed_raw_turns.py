"""Experiment: the model alone, outside memdream, on raw turns (docs/recall.md, "Semantic ranking").

memdream's recall.embed ranks raw events by meaning too (a bonus on its word ranking; bench/locomo.py
--embed-model measures that). This measures what the model and a plain BM25 do by themselves on the
turns: for each of the 760 questions of ../shared/bench/locomo-dev/, the share of its evidence turns within
the best 5 / 10 / 20 turns of one conversation, ranked by

- a plain BM25 over the turns (memdream's tokenizer, k1 = 1.2, b = 0.75),
- the model's cosine alone,
- both fused by reciprocal rank (1/(60 + BM25 rank) + w/(60 + cosine rank)) for a few weights w.

It needs a model2vec model folder (`pip install 'memdream[embed]'`; this machine cannot download one, so one
was distilled from all-MiniLM-L6-v2 with model2vec.distill) and is not part of `make bench`.

Usage: python bench/embed_raw_turns.py --model FOLDER
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memdream.recall.text import tokenize  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo-dev"
DEPTHS = (5, 10, 20)
WEIGHTS = (0.2, 0.35, 0.5, 1.0)


def bm25(documents: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    average = sum(map(len, documents)) / len(documents)
    frequency = Counter(token for document in documents for token in set(document))
    scores = [0.0] * len(documents)
    for token in set(query):
        if token not in frequency:
            continue
        weight = math.log(1 + (len(documents) - frequency[token] + 0.5) / (frequency[token] + 0.5))
        for number, document in enumerate(documents):
            count = document.count(token)
            if count:
                scores[number] += weight * count * (k1 + 1) / (count + k1 * (1 - b + b * len(document) / average))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model2vec model folder")
    args = parser.parse_args()
    import numpy as np
    from model2vec import StaticModel

    model = StaticModel.from_pretrained(args.model)
    found: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for folder in sorted(path for path in DATA.iterdir() if (path / "cases.jsonl").exists()):
        events = [json.loads(line) for line in (folder / "events.jsonl").open(encoding="utf-8")]
        events = [event for event in events if event.get("text")]
        ids = [event["id"] for event in events]
        texts = [f"{event.get('speaker', '')}: {event['text']}" for event in events]
        tokens = [tokenize(text) for text in texts]
        vectors = model.encode(texts)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
        for line in (folder / "cases.jsonl").open(encoding="utf-8"):
            case = json.loads(line)
            gold = set(case["evidence"])
            if not gold:
                continue
            words = np.array(bm25(tokens, tokenize(case["question"])))
            query = model.encode([case["question"]])[0]
            cosine = vectors @ (query / max(float(np.linalg.norm(query)), 1e-9))
            by_words, by_meaning = np.argsort(-words, kind="stable"), np.argsort(-cosine, kind="stable")
            word_rank, meaning_rank = np.empty(len(words)), np.empty(len(words))
            word_rank[by_words], meaning_rank[by_meaning] = np.arange(len(words)), np.arange(len(words))
            orders = {"bm25": by_words, "meaning": by_meaning}
            for weight in WEIGHTS:
                fused = 1 / (60 + word_rank) + weight / (60 + meaning_rank)
                fused[words == 0] = weight / (60 + meaning_rank[words == 0])  # no query word: meaning only
                orders[f"fused w={weight}"] = np.argsort(-fused, kind="stable")
            for name, order in orders.items():
                for depth in DEPTHS:
                    found[name][depth].append(len(gold & {ids[place] for place in order[:depth]}) / len(gold))
    print(f"evidence recall within the best {' / '.join(map(str, DEPTHS))} turns, {args.model}")
    for name, depths in found.items():
        print(f"{name:16} " + " / ".join(f"{sum(values) / len(values):.3f}" for values in depths.values()))


if __name__ == "__main__":
    main()
