"""Why recall chose each item (`memdream recall --explain`).

Computed after the context is built and only for the items in it, from the same index and scores
that ranked them (memdream.recall.rank): a recall without --explain does none of this work.

Per item, an ``explain`` object:

- plan: ``{"resident": "plan"}``: always first, whatever the query;
- a resident card (a standing instruction): ``{"resident": "instruction", "scope": ..., "confidence": ...}``;
- a ranked card: the four parts of its score (relevance, recency, references, confidence), each with its
  weight and its share of the score, the query words it matched, its fuzzy subject match and its
  coverage (the share of the query's words it holds, by which recall judged it answers well enough);
- a raw event: its relevance (BM25, with episode and neighbour shares), the query words it holds, its age,
  and that it came as the fallback (the cards did not fill the budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdream.recall.rank import card_words, coverage, fuzzy_matches, relevance_parts
from memdream.recall.render import BULLET, Item
from memdream.recall.text import tokenize

if TYPE_CHECKING:
    from memdream.recall.engine import Recaller

DAY = 86400.0


def query_words(query: str) -> list[tuple[str, frozenset[str]]]:
    """The query's words as typed, each with its stemmed tokens (the index's words)."""
    found: dict[str, frozenset[str]] = {}
    for word in query.split():
        plain = word.strip(".,;:!?\"'()[]{}").lower()
        tokens = frozenset(tokenize(plain)) if plain else frozenset()
        if tokens and plain not in found:
            found[plain] = tokens
    return list(found.items())


def _postings_of(recaller: Recaller, query: str) -> dict[str, frozenset[int]]:
    """The cards that hold each of the query's tokens (once per query, not per item)."""
    postings = recaller.cards.postings
    held = {}
    for token in set(tokenize(query)):
        term = postings.terms.get(token)
        if term is not None:
            held[token] = frozenset(postings.docs[postings.bounds[term]:postings.bounds[term + 1]])
    return held


def _age_days(recaller: Recaller, epoch: float) -> float | None:
    return round(max(0.0, recaller.now.timestamp() - epoch) / DAY, 1) if epoch else None


class Explainer:
    """Explains the items of one query's result; the query's relevance maps are computed once."""

    def __init__(self, recaller: Recaller, query: str) -> None:
        self.recaller = recaller
        self.query = query
        memo = recaller.explain_memo
        if memo.get("query") != query:  # cards were not ranked for this query (a --type with no match…)
            matches = fuzzy_matches(recaller.cards, query)
            relevance, fuzzy = relevance_parts(recaller.cards, query, matches)
            memo.update(query=query, relevance=relevance, fuzzy=fuzzy, matches=matches)
        self.relevance: dict[int, float] = memo["relevance"]
        self.fuzzy: dict[int, float] = memo["fuzzy"]
        self.matches: dict[int, tuple[float, frozenset[str]]] = memo["matches"]
        self.similarity: dict[int, float] = memo.get("similarity", {})  # recall.embed: cosine of cards close in meaning
        self.tokens = frozenset(tokenize(query))
        if "numbers" not in memo:  # one map per Recaller: --queries explains many queries
            memo["numbers"] = {card_id: number for number, card_id in enumerate(recaller.cards.ids)}
        self.numbers: dict[str, int] = memo["numbers"]
        self.words = query_words(query)
        self.postings = _postings_of(recaller, query)

    def _matched(self, tokens: set[str] | frozenset[str]) -> list[str]:
        """The query's words (as typed) whose tokens are among ``tokens``."""
        return [word for word, stems in self.words if stems & tokens]

    def explain(self, item: Item) -> dict[str, Any]:
        if item.source == "plan":
            return {"resident": "plan", "why": "the plan of the scope, first, within the resident share"}
        if item.source == "raw":
            return self._raw(item)
        number = self.numbers.get(item.id)
        if number is None:  # not in the index (cannot happen for an item the index produced)
            return {}
        if item.resident:
            return self._resident(number)
        return self._card(item, number)

    def _resident(self, number: int) -> dict[str, Any]:
        doc = self.recaller.cards.doc(number)
        return {"resident": "instruction", "scope": doc.scope or "global", "confidence": doc.confidence,
                "why": f"a standing instruction of scope {doc.scope or 'global'}: shown whatever the query"}

    def _card(self, item: Item, number: int) -> dict[str, Any]:
        recaller = self.recaller
        weights = recaller.meta.weights
        recency, references, confidence, count = recaller.static.parts(number)  # as ranking scored them
        relevance = self.relevance.get(number, 0.0)
        parts = {"relevance": (relevance, weights.relevance), "recency": (recency, weights.recency),
                 "references": (references, weights.references), "confidence": (confidence, weights.confidence)}
        explained: dict[str, Any] = {
            name: {"value": round(value, 4), "weight": weight, "points": round(value * weight, 4)}
            for name, (value, weight) in parts.items()}
        explained["relevance"]["matched"] = self._matched({token for token, docs in self.postings.items()
                                                           if number in docs})
        if number in self.fuzzy:
            explained["relevance"]["subject_similarity"] = round(self.fuzzy[number], 4)
        if number in self.similarity:
            explained["relevance"]["meaning_similarity"] = round(self.similarity[number], 4)
        fuzzy = self.matches[number][1] if number in self.matches else frozenset()
        held = card_words(recaller.cards.doc(number), fuzzy)
        explained["relevance"]["coverage"] = round(coverage(held, self.tokens), 4)
        explained["recency"]["age_days"] = _age_days(recaller, recaller.cards.epochs[number])
        explained["references"]["count"] = count
        explained["score"] = item.score
        return explained

    def _raw(self, item: Item) -> dict[str, Any]:
        return {"relevance": {"value": item.score, "matched": self._matched(item.words)},
                "recency": {"age_days": _age_days(self.recaller, item.epoch)},
                "fallback": "the cards that answer the query well enough did not fill the budget: raw events "
                            "ranked by relevance alone",
                "score": item.score}


def explain_items(recaller: Recaller, query: str, items: list[Item]) -> None:
    """Set ``explain`` on each item of one result."""
    explainer = Explainer(recaller, query)
    for item in items:
        item.explain = explainer.explain(item)


def summary(explain: dict[str, Any]) -> str:
    """One short line for people: what the item scored on."""
    if "resident" in explain:
        return str(explain.get("why", "resident"))
    if "fallback" in explain:
        relevance = explain["relevance"]
        matched = ", ".join(relevance["matched"]) or "none (found by feedback or as a neighbour)"
        age = explain["recency"]["age_days"]
        return f"raw fallback: relevance {relevance['value']} (matched: {matched}); {age} days old"
    parts = []
    relevance = explain["relevance"]
    matched = ", ".join(relevance["matched"]) or "none"
    similar = f", subject {relevance['subject_similarity']:.2f} alike" if "subject_similarity" in relevance else ""
    if "meaning_similarity" in relevance:
        similar += f", meaning {relevance['meaning_similarity']:.2f} alike"
    covered = f", {relevance['coverage']:.0%} of the query" if "coverage" in relevance else ""
    parts.append(f"relevance {relevance['value']:.2f} (matched: {matched}{similar}{covered})")
    parts.append(f"recency {explain['recency']['value']:.2f} ({explain['recency']['age_days']} days)")
    parts.append(f"references {explain['references']['count']}")
    parts.append(f"confidence {explain['confidence']['value']:.2f}")
    return f"score {explain['score']} = " + "; ".join(parts)


def explained_text(items: list[Item]) -> str:
    """The context as recall prints it, with a ``why:`` line under each item (for people: these lines
    are not part of the budgeted context an agent gets)."""
    lines = []
    for item in items:
        lines.append(item.text if item.source == "plan" else BULLET + item.text)
        if item.explain is not None:
            lines.append(f"  why: {summary(item.explain)}")
    return "".join(line + "\n" for line in lines)
