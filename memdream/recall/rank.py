"""Ranking: BM25 over postings, fuzzy entity names, the combined card score, and raw-event ranking.

Cards (design guide §6): score = relevance·w_rel + recency·w_rec + references·w_ref + confidence·w_conf,
relevance normalized to [0, 1] per query; only cards with some lexical or fuzzy relevance are ranked.

Raw events are ranked by relevance alone (they have no confidence or references, and recency would
bury exactly the old events that "when did ..." questions ask about). Measured on LoCoMo
(bench/locomo.py), each of these adds recall of the gold turns within a byte budget:

- the speaker as a field of its own, weighted (questions name the person the answer is about);
- pseudo-relevance feedback (RM3-style): terms of the top few events, weighted, added to the query;
- episode scoring: an event gains a share of the best score in its episode (session + episode tag),
  since the turns around one topic answer together;
- neighbour expansion: the turns right before and after a hit, with a decayed score (a question's
  answer is often the next turn, and does not repeat the question's words).

A query word that no raw event holds stands for its longest beginning that one does (RawRanker.terms).
Of the ranked raw items, near-duplicates are shown once, as the newest (:func:`collapse`); cards are
judged against them by :func:`coverage`.
"""

from __future__ import annotations

import bisect
import heapq
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from memdream.recall.index import CardDoc, CardIndex, SegmentIndex, event_speaker, event_text, idf
from memdream.recall.text import RELATED, RELATED_WEIGHT, related, token_spans, tokenize, words
from memdream.recall.topk import Term, TermPostings, best

SPEAKER_WEIGHT = 3.0
EPISODE_SHARE = 0.3
NEIGHBOUR_SHARE = 0.5
# A neighbour holding fewer words than this (after stopwords: "hi", "ok", "yes") tells nothing alone.
MIN_NEIGHBOUR_WORDS = 2
FEEDBACK_DOCS = 5
FEEDBACK_TERMS = 10
FEEDBACK_WEIGHT = 0.3
FUZZY_CUTOFF = 85.0
FUZZY_SHARE = 0.3
MIN_FUZZY_GRAM = 4
# A query term whose idf is below this share of the query's highest idf is ignored for cards.
COMMON_TERM_RATIO = 0.1
RAW_COMMON_TERM_RATIO = 0.0
# Cards ordered by a heap first; most recalls never look further.
HEAD = 96
# Raw events: the best this many (at least) by BM25 get episode and neighbour scoring.
POOL = 1000
# A query word no raw event holds stands for its longest beginning that some event does, when that is
# at least this long and this share of the word.
MIN_PREFIX = 5
PREFIX_SHARE = 0.6
# The best few events of a first stage without the whole sum (RawRanker.best): for at most this many
# terms with postings (their 2^n subsets are looked at) and this many events scored (beyond, the
# plain sum costs less).
BEST_MAX_TERMS = 5
BEST_MAX_SCORED = 4000
# A token's postings over every segment are kept once a ranker serves more than one query (a single
# recall builds none), up to this many postings in all (about 160 bytes each), the oldest dropped first.
KEPT_POSTINGS = 500_000
# ... and the best events of this many weighted term lists.
KEPT_BESTS = 4096


@dataclass(frozen=True)
class Weights:
    relevance: float = 0.45
    recency: float = 0.20
    references: float = 0.15
    confidence: float = 0.20


# -- cards --------------------------------------------------------------------------------------
def bm25_cards(index: CardIndex, query: Sequence[str]) -> dict[int, float]:
    """BM25 of every card holding a query term, or at RELATED_WEIGHT a tool a general word of the query
    names (:func:`memdream.recall.text.related`); terms far less specific than the query's most
    specific one (idf below ``COMMON_TERM_RATIO`` of it) are left out: their weight is noise."""
    own = [token for token in dict.fromkeys(query) if token in index.idf]
    if not own:
        own_floor = 0.0
    else:
        own_floor = COMMON_TERM_RATIO * max(index.idf[token] for token in own)
    repeats: dict[str, float] = {token: query.count(token) for token in own}
    for token in related(frozenset(query)):
        if token in index.idf:
            repeats.setdefault(token, RELATED_WEIGHT)
    present = list(repeats)
    if not present:
        return {}
    floor = own_floor if own else COMMON_TERM_RATIO * max(index.idf[token] for token in present)
    scores: dict[int, float] = {}
    for token in sorted(present, key=index.idf.__getitem__, reverse=True):
        if index.idf[token] < floor:
            continue
        entry = index.postings.get(token)
        assert entry is not None
        docs, impacts = entry
        times = repeats[token]
        if not scores and times == 1:
            scores = dict(zip(docs, impacts))
            continue
        get = scores.get
        for doc, impact in zip(docs, impacts):
            scores[doc] = get(doc, 0.0) + times * impact
    return scores


_DIGITS = re.compile(r"\d+")


def fuzzy_matches(index: CardIndex, query: str) -> dict[int, tuple[float, frozenset[str]]]:
    """Cards whose subject resembles a run of 1-3 query words glued together ("export bucket" ->
    "exportbucket"), each with the similarity in [0, 1] and the query's tokens that run holds (a card
    whose subject is "export-bucket" holds the words of "exprt bucket").

    Numbers must agree exactly: "postgres3" is not "postgres33", however similar the letters.
    """
    found_words = words(query)
    if not found_words or not index.subjects:
        return {}
    runs: dict[str, set[str]] = {}
    for size in range(1, 4):
        for start in range(len(found_words) - size + 1):
            run = found_words[start:start + size]
            gram = "".join(run)
            if len(gram) >= MIN_FUZZY_GRAM:
                runs.setdefault(gram, set()).update(tokenize(" ".join(run)))
    if not runs:
        return {}
    found: dict[int, tuple[float, frozenset[str]]] = {}
    for gram in sorted(runs):
        for name, similarity in similar_names(index, gram):
            for doc in index.subjects[name]:
                best, held = found.get(doc, (0.0, frozenset()))
                found[doc] = (max(best, similarity / 100.0), held | runs[gram])
    return found


def similar_names(index: CardIndex, gram: str) -> list[tuple[str, float]]:
    """The subject names that resemble ``gram`` (FUZZY_CUTOFF, same numbers), each with its similarity
    in [0, 100], in rapidfuzz's order. Kept per index and gram (up to KEPT_GRAMS): the queries of a batch,
    and of the MCP server, glue the same words again and again."""
    cached = _SIMILAR.get(id(index))
    if cached is None or cached[0] is not index:
        cached = (index, {})
        _SIMILAR.clear()
        _SIMILAR[id(index)] = cached
    kept = cached[1]
    similar = kept.get(gram)
    if similar is None:
        from rapidfuzz import fuzz, process  # lazily: only recalls over cards pay for the import

        digits = _DIGITS.findall(gram)
        names = subject_blocks(index).get(gram[0], [])
        similar = [(name, similarity) for name, similarity, _ in
                   process.extract(gram, names, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF, limit=None)
                   if _DIGITS.findall(name) == digits]
        if len(kept) >= KEPT_GRAMS:
            kept.clear()
        kept[gram] = similar
    return similar


# Fuzzy matches of a query's grams, by index (the last one only) and gram.
KEPT_GRAMS = 10_000
_SIMILAR: dict[int, tuple[CardIndex, dict[str, list[tuple[str, float]]]]] = {}
_BLOCKS: dict[int, tuple[CardIndex, dict[str, list[str]]]] = {}


def subject_blocks(index: CardIndex) -> dict[str, list[str]]:
    """Subject names by first character: a typo in a name's first letter is rare, and comparing
    a query only with names of its first letter is what keeps fuzzy matching cheap."""
    cached = _BLOCKS.get(id(index))
    if cached is not None and cached[0] is index:
        return cached[1]
    blocks: dict[str, list[str]] = {}
    for name in index.subjects:
        if name:
            blocks.setdefault(name[0], []).append(name)
    _BLOCKS.clear()
    _BLOCKS[id(index)] = (index, blocks)
    return blocks


def card_relevance(index: CardIndex, query: str) -> dict[int, float]:
    """Relevance in [0, 1] of every card that matches the query at all."""
    return relevance_parts(index, query)[0]


def relevance_parts(index: CardIndex, query: str,
                    matches: dict[int, tuple[float, frozenset[str]]] | None = None
                    ) -> tuple[dict[int, float], dict[int, float]]:
    """:func:`card_relevance` and the fuzzy subject matches it used (for recall --explain);
    ``matches``: :func:`fuzzy_matches` of the query, when the caller has it."""
    lexical = bm25_cards(index, tokenize(query))
    if matches is None:
        matches = fuzzy_matches(index, query)
    fuzzy = {doc: similarity for doc, (similarity, _) in matches.items()}
    top = max(lexical.values(), default=0.0)
    scale = (1 - FUZZY_SHARE) / top if top else 0.0
    # Each card's combined score, lexical * scale plus FUZZY_SHARE * similarity, divided by the best
    # one: in one pass over the lexical matches (a batch's hot loop), then the fuzzy-only ones. The
    # best is top * scale (scaling keeps the order) unless a fuzzy match adds more.
    boosted = {doc: (lexical[doc] * scale if doc in lexical else 0.0) + FUZZY_SHARE * similarity
               for doc, similarity in fuzzy.items()}
    best = max(top * scale, max(boosted.values(), default=0.0))
    if best <= 0:
        return {}, fuzzy
    if boosted:
        relevance = {doc: combined / best for doc, value in lexical.items()
                     if (combined := boosted[doc] if doc in boosted else value * scale) > 0}
        relevance.update((doc, combined / best) for doc, combined in boosted.items()
                         if combined > 0 and doc not in lexical)
    else:
        relevance = {doc: combined / best for doc, value in lexical.items() if (combined := value * scale) > 0}
    return relevance, fuzzy


class StaticScores:
    """The query-independent part of a card's score: recency, references and confidence, computed
    for a card the first time it is a candidate."""

    def __init__(self, index: CardIndex, weights: Weights, now: float, half_life_days: float,
                 usage: dict[str, int]) -> None:
        self.index = index
        self.weights = weights
        self.now = now
        self.half_life = half_life_days * 86400.0
        self.usage = usage
        self.scale = math.log1p(max(index.max_references, max(usage.values(), default=0))) or 1.0
        self.values: dict[int, float] = {}

    def __getitem__(self, number: int) -> float:
        value = self.values.get(number)
        if value is None:
            weights = self.weights
            recency, references, confidence, _ = self.parts(number)
            value = self.values[number] = (
                weights.recency * recency + weights.references * references + weights.confidence * confidence)
        return value

    def of(self, docs: Set[int]) -> dict[int, float]:
        """The scores of ``docs`` and of every card scored before: a dict to index in C (a batch of
        queries meets the same cards again and again)."""
        values = self.values
        if not values.keys() >= docs:  # in C, over ``docs``
            for number in docs:
                if number not in values:
                    self[number]
        return values

    def parts(self, number: int) -> tuple[float, float, float, int]:
        """Recency, references and confidence of a card, each in [0, 1], and its reference count."""
        index = self.index
        epoch = index.epochs[number]
        recency = 0.5 ** (max(0.0, self.now - epoch) / self.half_life) if epoch else 0.0
        # Dream folds the usage log into reference_count: the larger of the two, never their sum
        # (the same recalls would count twice), and a clone without the log keeps the card's.
        count = max(index.references[number], self.usage.get(index.ids[number], 0))
        references = min(1.0, math.log1p(count) / self.scale)
        return recency, references, max(0.0, min(1.0, index.confidences[number])), count


def rank_cards(index: CardIndex, query: str, weights: Weights, static: StaticScores,
               accept: Callable[[int], bool] | None,
               relevance: dict[int, float] | None = None) -> Iterator[tuple[float, int]]:
    """(score, doc) of every relevant card that passes ``accept`` (None: the active ones), best first;
    ``relevance``: :func:`card_relevance` of the query, when the caller has it.

    Lazily: the head is taken with a heap; the rest is sorted only if a consumer gets that far.
    """
    if relevance is None:
        relevance = card_relevance(index, query)
    statics = static.of(relevance.keys())
    share = weights.relevance
    if accept is None:
        active = index.active
        scored = [(share * value + statics[doc], -doc) for doc, value in relevance.items() if active[doc]]
    else:
        scored = [(share * value + statics[doc], -doc) for doc, value in relevance.items() if accept(doc)]
    head = heapq.nlargest(HEAD, scored)
    for score, negative in head:
        yield score, -negative
    if len(scored) > len(head):
        scored.sort(reverse=True)
        for score, negative in scored[len(head):]:
            yield score, -negative


# -- raw events ------------------------------------------------------------------------------------
class RawRanker:
    """BM25 over every segment at once (global idf), plus the expansions in the module docstring.

    An event is numbered globally: its segment's base plus its number in the segment. Term weights
    were normalized by length when the segment was indexed (against that segment's average length,
    which for segments of thousands of events is the global one within noise); idf is global.
    """

    def __init__(self, segments: list[SegmentIndex], read: Callable[[list[int]], dict[int, dict[str, Any]]],
                 event_tokens: Callable[[dict[str, Any]], list[str]]) -> None:
        self.segments = segments
        self.read = read
        self.event_tokens = event_tokens
        self.bases: list[int] = []
        total = 0
        for segment in segments:
            self.bases.append(total)
            total += len(segment)
        self.documents = total
        self._frequencies: dict[str, int] = {}
        self._postings: dict[str, TermPostings] = {}
        self._kept = 0  # postings held in self._postings
        self._asked: set[str] = set()  # tokens asked for once: the next ask keeps their postings
        self._queries = 0  # queries asked of best(): from the second, this ranker serves a batch or a server
        # best() of each weighted term list: questions in other words often come down to the same terms
        self._bests: dict[tuple[tuple[tuple[str, float], ...], int], list[tuple[int, float]]] = {}

    def locate(self, event: int) -> tuple[int, int]:
        """(segment number, event number in it) of a global event number."""
        number = bisect.bisect_right(self.bases, event) - 1
        return number, event - self.bases[number]

    def frequency(self, token: str) -> int:
        """How many events hold ``token`` (as a word or as their speaker). Kept per token: feedback asks
        it of every word of the top events, and a batch of queries or the MCP server asks again and again
        (the segments of a ranker never change: a new segment makes a new ranker)."""
        found = self._frequencies.get(token)
        if found is None:
            found = self._frequencies[token] = sum(segment.postings.frequency(token) + segment.speakers.frequency(token)
                                                   for segment in self.segments)
        return found

    def weights(self, tokens: Iterable[str]) -> dict[str, float]:
        """The idf of each of ``tokens`` that some event holds."""
        return {token: idf(self.documents, frequency) for token in tokens if (frequency := self.frequency(token))}

    def terms(self, query: str) -> list[str]:
        """The query's tokens, each that no event holds replaced by its longest beginning that some event
        does ("dockerised" asks about "docker"; British and American spellings, a suffix the stemmer
        does not know), when that beginning is at least PREFIX_SHARE of the word and MIN_PREFIX long."""
        found = []
        for token in tokenize(query):
            if len(token) > MIN_PREFIX and not self.frequency(token):
                shortest = max(MIN_PREFIX, math.ceil(PREFIX_SHARE * len(token)))
                token = next((token[:size] for size in range(len(token) - 1, shortest - 1, -1)
                              if self.frequency(token[:size])), token)
            found.append(token)
        return found

    def _summed(self, query: dict[str, float]) -> list[tuple[str, float]]:
        """The terms :meth:`bm25` sums, in its order (most specific first), each with its weight."""
        weights = {token: idf(self.documents, frequency) for token in query
                   if (frequency := self.frequency(token))}
        if not weights:
            return []
        floor = RAW_COMMON_TERM_RATIO * max(weights.values())
        ordered = sorted(weights, key=weights.__getitem__, reverse=True)
        return [(token, query[token] * weights[token]) for token in ordered if weights[token] >= floor]

    def bm25(self, query: dict[str, float]) -> dict[int, float]:
        scores: dict[int, float] = {}
        for token, weight in self._summed(query):
            for base, segment in zip(self.bases, self.segments):
                entry = segment.postings.get(token)
                if entry is not None:
                    docs, parts = entry
                    if not scores:
                        scores = dict(zip(map(base.__add__, docs), map(weight.__mul__, parts)))
                    else:
                        get = scores.get
                        for doc, part in zip(docs, parts):
                            doc += base
                            scores[doc] = get(doc, 0.0) + weight * part
                spoken = segment.speakers.get(token)
                if spoken is not None:
                    bonus = SPEAKER_WEIGHT * weight
                    get = scores.get
                    for doc in spoken[0]:
                        doc += base
                        scores[doc] = get(doc, 0.0) + bonus
        return scores

    def feedback(self, query: dict[str, float], scores: dict[int, float]) -> dict[str, float]:
        """RM3-style feedback: the heaviest terms of the top events that the query does not hold, weighted
        (the query plus these is the expanded query; BM25 being a sum over terms, the caller adds their
        scores to the query's rather than scoring the query's terms twice)."""
        top = largest(scores, FEEDBACK_DOCS)
        if not top:
            return {}
        best = top[0][1]
        events = self.read([event for event, _ in top])
        mass: dict[str, float] = defaultdict(float)
        for event, score in top:
            tokens = self.event_tokens(events[event])
            for token, count in Counter(tokens).items():
                mass[token] += (score / best) * count / len(tokens) * idf(self.documents, self.frequency(token))
        heaviest = heapq.nlargest(FEEDBACK_TERMS + len(query), mass.items(), key=itemgetter(1))
        extra = [token for token, _ in heaviest if token not in query]
        extra = extra[:FEEDBACK_TERMS]
        total = sum(mass[token] for token in extra) or 1.0
        return {token: FEEDBACK_WEIGHT * mass[token] / total * len(extra) / 3 for token in extra}

    def query_terms(self, query: str) -> dict[str, float]:
        """The query's terms, each with its count (a tool a general word names at RELATED_WEIGHT)."""
        terms: dict[str, float] = {}
        for token in self.terms(query):
            terms[token] = terms.get(token, 0.0) + 1.0
        for token in related(frozenset(terms)):
            terms.setdefault(token, RELATED_WEIGHT)
        return terms

    def first_stage(self, query: str) -> tuple[dict[str, float], dict[int, float]]:
        """The query's terms (each with its count) and their BM25 score of every event holding one: what
        :meth:`rank` starts from, and enough to tell which events a plain BM25 ranks best."""
        terms = self.query_terms(query)
        if not terms or not self.documents:
            return terms, {}
        return terms, self.bm25(terms)

    def best(self, query: dict[str, float], count: int) -> list[tuple[int, float]] | None:
        """``largest(self.bm25(query), count)``, exactly, without summing every event's score
        (memdream.recall.topk); None when that would not pay: a token asked for the first time (its
        postings are not kept yet), too many terms, or too many events that could be among the best."""
        self._queries += 1
        summed = self._summed(query) if self.documents else []
        if len(summed) > BEST_MAX_TERMS:
            return None
        key = (tuple(summed), count)
        found = self._bests.get(key)
        if found is None:
            kept = [self.term_postings(token) for token, _ in summed]  # each token asked, kept or not
            terms = [Term(postings, weight, SPEAKER_WEIGHT * weight)
                     for postings, (_, weight) in zip(kept, summed) if postings is not None]
            if len(terms) < len(summed):
                return None
            found = best(terms, count, self.segment_of, BEST_MAX_SCORED)
            if found is None:
                return None
            if len(self._bests) >= KEPT_BESTS:
                del self._bests[next(iter(self._bests))]
            self._bests[key] = found
        return list(found)

    def term_postings(self, token: str) -> TermPostings | None:
        """The postings of ``token`` over every segment, by global event number; None the first time a
        token is asked for in a ranker's first query (a single recall would pay more to build them than
        to sum without them; a ranker asked again serves a batch or a server)."""
        found = self._postings.get(token)
        if found is None:
            if token not in self._asked and self._queries < 2:
                self._asked.add(token)
                return None
            found = self._postings[token] = self._merged(token)
            self._kept += found.size
            while self._kept > KEPT_POSTINGS and len(self._postings) > 1:
                self._kept -= self._postings.pop(next(iter(self._postings))).size
        return found

    def _merged(self, token: str) -> TermPostings:
        parts: dict[int, float] = {}
        spoken: set[int] = set()
        for base, segment in zip(self.bases, self.segments):
            entry = segment.postings.get(token)
            if entry is not None:
                parts.update(zip(map(base.__add__, entry[0]), entry[1]))
            said = segment.speakers.get(token)
            if said is not None:
                spoken.update(map(base.__add__, said[0]))
        return TermPostings(parts, frozenset(spoken), SPEAKER_WEIGHT)

    def segment_of(self, event: int) -> int:
        return bisect.bisect_right(self.bases, event) - 1

    def rank(self, query: str, accept: Callable[[int, int], bool], limit: int,
             first: tuple[dict[str, float], dict[int, float]] | None = None) -> list[tuple[float, int]]:
        """(score in [0, 1.3], global event number) of the ``limit`` best events that pass
        ``accept(segment number, event number)``, best first; ``first``: :meth:`first_stage` of the
        query, when the caller has it (its scores are added to, not copied)."""
        terms, scores = first if first is not None else self.first_stage(query)
        if not scores:
            return []
        extra = self.feedback(terms, scores)
        if extra:
            get = scores.get
            for event, value in self.bm25(extra).items():
                scores[event] = get(event, 0.0) + value
        pool = largest(scores, max(POOL, 4 * limit))
        best = pool[0][1]
        located = {event: self.locate(event) for event, _ in pool}
        episode_best: dict[tuple[int, int], float] = {}
        for event, value in pool:
            number, doc = located[event]
            episode = (number, self.segments[number].groups[doc])
            episode_best[episode] = max(episode_best.get(episode, 0.0), value / best)
        final: dict[int, float] = {}
        for event, value in pool:
            number, doc = located[event]
            final[event] = value / best + EPISODE_SHARE * episode_best[(number, self.segments[number].groups[doc])]
        for event, value in pool:
            number, doc = located[event]
            segment = self.segments[number]
            share = NEIGHBOUR_SHARE * value / best
            for neighbour in (segment.previous[doc], segment.following[doc]):
                if neighbour < 0 or segment.lengths[neighbour] < MIN_NEIGHBOUR_WORDS:
                    continue
                if share > final.get(self.bases[number] + neighbour, 0.0):
                    final[self.bases[number] + neighbour] = share
                    located[self.bases[number] + neighbour] = (number, neighbour)  # no bisect for it below
        return heapq.nlargest(limit, ((value, event) for event, value in final.items()
                                      if accept(*located[event])), key=lambda pair: (pair[0], -pair[1]))


# -- how well an item answers -----------------------------------------------------------------------
def coverage(held: Iterable[str], query_tokens: frozenset[str]) -> float:
    """The share of the query's words (distinct tokens) among ``held``: 0 for a query of stopwords.

    A card with any lexical match gets a relevance (BM25 normalized to the best card of the query), so
    relevance alone cannot say that no card answers: a card holding one word of five ranks first when
    it is the only one. Coverage can, and it compares cards with raw events on one scale. A general
    word is held by a tool it names (``test`` by ``pytest``: :data:`memdream.recall.text.RELATED`).
    """
    if not query_tokens:
        return 0.0
    held = held if isinstance(held, (set, frozenset)) else set(held)
    found = sum(1 for token in query_tokens if token in held or not held.isdisjoint(RELATED.get(token, ())))
    return found / len(query_tokens)


def card_words(doc: CardDoc, fuzzy: frozenset[str] = frozenset()) -> frozenset[str]:
    """The tokens a card holds (the fields the index holds), and the query's ``fuzzy`` ones its subject
    resembles (:func:`fuzzy_matches`). Tokenized once per card and process: a batch of queries meets
    the same cards again and again."""
    held = _WORDS.get(doc.id)
    if held is None or (held[0] is not doc and held[0] != doc):
        fields = (doc.statement, doc.subject, doc.attribute or "", doc.value or "", " ".join(doc.tags),
                  doc.scope or "")
        held = _WORDS[doc.id] = (doc, frozenset(tokenize(" ".join(fields))))
    return held[1] | fuzzy if fuzzy else held[1]


# Card id -> (the doc it was tokenized from, its tokens); a card that changed is tokenized again.
_WORDS: dict[str, tuple[CardDoc, frozenset[str]]] = {}


# Raw items whose shown words overlap this much (Jaccard) say the same thing: only one is shown.
NEAR_DUPLICATE = 0.6


def near_duplicate(first: frozenset[str], second: frozenset[str]) -> bool:
    if not first or not second:
        return first == second
    small, large = sorted((len(first), len(second)))
    if small < NEAR_DUPLICATE * large:  # Jaccard is at most small / large: no need to intersect
        return False
    shared = len(first & second)
    return shared >= NEAR_DUPLICATE * (len(first) + len(second) - shared)


def collapse(count: int, words: Callable[[int], frozenset[str]], epoch: Callable[[int], float],
             answers: Callable[[int], frozenset[str]] | None = None) -> list[int]:
    """Of ``count`` raw items (numbered in rank order), those to show: of each set of near-duplicates
    (:data:`NEAR_DUPLICATE`, compared with the set's best-ranked member) only the newest, in the place
    of the best-ranked.

    The same tool output read twice, a prompt pasted again, a banner printed at every start: one line
    says it. When they differ in a value ("Main model: gpt-4o" in July, "Main model: gpt-4.1" in
    August), the older one is the stale one. But two lines that hold different words of the query
    (``answers``: "Task 17: fixed the rounding of tax" and "Task 18: fixed the rounding of fees", asked
    about task 17) answer it differently: they are no duplicates. At most ``count`` times the number
    of sets compared: ``count`` is the few dozen candidates of one budget, never the whole log.
    """
    firsts: list[frozenset[str]] = []
    chosen: list[int] = []
    for place in range(count):
        held = words(place)
        for number, first in enumerate(firsts):
            if near_duplicate(held, first) and (answers is None or answers(place) == answers(chosen[number])):
                if epoch(place) > epoch(chosen[number]):
                    chosen[number] = place
                break
        else:
            firsts.append(held)
            chosen.append(place)
    return chosen


def largest(scores: dict[int, float], count: int) -> list[tuple[int, float]]:
    """``heapq.nlargest(count, scores.items(), key=itemgetter(1))``, faster: the threshold from the
    values alone (compared in C), then only the items at or above it sorted."""
    if len(scores) <= count:
        return sorted(scores.items(), key=itemgetter(1), reverse=True)
    threshold = heapq.nlargest(count, scores.values())[-1]
    found = [(event, value) for event, value in scores.items() if value >= threshold]
    found.sort(key=itemgetter(1), reverse=True)
    return found[:count]


# -- newer first -----------------------------------------------------------------------------------
def matched_terms(event: dict[str, Any], query_tokens: frozenset[str]) -> frozenset[str]:
    """The query's words that ``event`` holds (in its text, fact, command or speaker)."""
    return frozenset(token for _, _, token in token_spans(f"{event_text(event)} {event_speaker(event)}", query_tokens))


def newest_first(count: int, epoch: Callable[[int], float], terms: Callable[[int], frozenset[str]]) -> list[int]:
    """The order in which to show ``count`` raw items (numbered in rank order): each answer group newest
    first, everything else in place.

    Raw events that hold exactly the same words of the query answer it alike ("I live in Boston",
    later "I live in Denver now"): they form one group. The group keeps the places its members had,
    and the newest member takes the best of them. Recall applies this to the items that fit in the
    budget, so the newer statement comes first and the set of items shown does not change. Events
    that hold no word of the query (found by feedback or as a neighbour) are no group.
    """
    groups: dict[frozenset[str], list[int]] = defaultdict(list)  # words -> places
    for place in range(count):
        words = terms(place)
        if words:
            groups[words].append(place)
    order = list(range(count))
    for places in groups.values():
        if len(places) > 1:
            for place, member in zip(places, sorted(places, key=lambda member: -epoch(member))):
                order[place] = member
    return order
