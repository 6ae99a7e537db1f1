"""Recall: the plan and the standing instructions of the scope (resident, in a bounded share of the
budget), then the cards that answer a query, then (as a fallback, for the rest of the budget) raw events
cut to the part that matches, within a byte budget (docs/recall.md).

A :class:`Recaller` loads the index once and answers many queries (``--queries``); :func:`recall`
answers one. It is the one composer of every context memdream gives an agent: ``memdream recall`` and the
MCP server's recall tool with the :data:`~memdream.recall.policy.RECALL` policy, ``memdream context`` (the
SessionStart hook, ``--export``) with :data:`~memdream.recall.policy.SESSION_START`, which has no question
(memdream.integrations.startup frames it). Recall never writes a tracked file: it appends to
.memdream/usage.jsonl and keeps its index cache under .memdream/cache/recall/.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.clock import format_timestamp, now, parse_timestamp
from memdream.errors import UsageError
from memdream.memory.card import ACTIVE_STATUSES, CARD_TYPES, STATUSES
from memdream.memory.card import INACTIVE_STATUSES as INACTIVE
from memdream.memory.factkey import FactKey, normalize_value
from memdream.memory.paths import MemoryPaths
from memdream.memory.refs import ref_of as event_ref
from memdream.memory.usage import UsageLog, counts_at
from memdream.recall import index as index_mod
from memdream.recall.index import CardDoc, CardIndex, IndexMemo, Successor, compact_name, file_stamp
from memdream.recall.policy import MAX_MISSES, RECALL, Policy
from memdream.recall.rank import (
    RawRanker,
    StaticScores,
    Weights,
    card_words,
    collapse,
    coverage,
    fuzzy_matches,
    largest,
    matched_terms,
    newest_first,
    rank_cards,
    relevance_parts,
)
from memdream.recall.render import (
    BULLET,
    MIN_WINDOW,
    WINDOW,
    Budget,
    Item,
    card_text,
    cut,
    plan_text,
    plan_within,
    raw_text,
    untrusted,
)
from memdream.recall.text import related, tokenize

if TYPE_CHECKING:
    from memdream.memory.store import Memory
    from memdream.recall.embed import Semantic
    from memdream.recall.file_views import FileHistory

MIN_BUDGET = 64
# Raw scores can reach 1 + the episode share; reported scaled into [0, 1].
RAW_SCORE_SCALE = 1.3
# A raw event scored below this share of the scale (found by feedback words alone, far down: "hi", "ok")
# is not shown, even with room left: bytes that answer nothing cost the agent's context all the same.
RAW_FLOOR = 0.025
# At most this many withheld superseded raw events are listed in the JSON output (the best-ranked).
MAX_WITHHELD = 20
# A card is shown when it holds at least this share of the query's words, or as many as the best raw
# event does: a card that holds one word of four would take the room of the events that answer.
CARD_COVERAGE = 0.5
# Raw events considered per query: one per this many bytes of budget, and this many less 8 more (enough
# for the ten or so a default budget shows, after those cited by cards and near-duplicates are
# skipped, without rendering a hundred that will not be shown).
RAW_CANDIDATES = 32
# The raw events whose words the cards are measured against (the best-ranked few).
RAW_PEERS = 10
# Raw events kept decoded by a Recaller (a batch meets the same events again and again).
KEPT_EVENTS = 10_000
# With at least this much room left (bytes), a raw event that does not fit whole is shown in the
# narrower window that fits (bullet and date included), rather than leaving the room unused.
SQUEEZE_ROOM = 96
# The plan is never cut below this many bytes, whatever the resident share: its first words say
# what the work is.
PLAN_FLOOR = 48


@dataclass(frozen=True)
class RecallOptions:
    budget: int | None = None  # bytes; None: recall.budget from memdream.yaml
    card_type: str | None = None
    status: str | None = None
    subject: str | None = None
    since: str | None = None  # ISO 8601
    include_archived: bool = False
    scope: str | None = None  # the project whose plan and instructions are resident; None: see cwd
    cwd: str | None = None  # without scope: the folder whose project is the scope, if the memory is scoped
    explain: bool = False  # say why each item was chosen (memdream.recall.explain); costs nothing when off

    def check(self) -> None:
        if self.scope is not None and not self.scope.strip():
            raise UsageError("--scope must name a project, not be empty")
        if self.budget is not None and self.budget < MIN_BUDGET:
            raise UsageError(f"--budget must be at least {MIN_BUDGET} bytes, not {self.budget}")
        if self.card_type is not None and self.card_type not in CARD_TYPES:
            raise UsageError(f"--type must be one of {', '.join(CARD_TYPES)}, not {self.card_type!r}")
        if self.status is not None and self.status not in STATUSES:
            raise UsageError(f"--status must be one of {', '.join(STATUSES)}, not {self.status!r}")
        if self.since is not None:
            try:
                parse_timestamp(self.since)
            except ValueError:
                raise UsageError(f"--since {self.since!r} is not an ISO 8601 date or time") from None

    @property
    def filtered(self) -> bool:
        """Whether any option narrows which cards qualify."""
        return (self.card_type, self.status, self.subject, self.since, self.include_archived) != (
            None, None, None, None, False)

    @property
    def cards_only(self) -> bool:
        """Type and status are card properties: with either filter, raw events never qualify."""
        return self.card_type is not None or self.status is not None


@dataclass
class RecallResult:
    query: str
    budget: int
    context: str
    items: list[Item] = field(default_factory=list)
    # Raw events left out because a card holds a newer value (docs/recall.md, "Superseded values").
    withheld: list[dict[str, str]] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return len(self.context.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        data = {"query": self.query, "budget": self.budget, "bytes": self.bytes, "context": self.context,
                "items": [item.to_dict() for item in self.items]}
        if self.withheld:
            data["superseded"] = self.withheld[:MAX_WITHHELD]
        return data


@dataclass(frozen=True)
class Meta:
    """Settings and plan as recall uses them, cached by the stat of memdream.yaml and plan.yaml:
    validating them needs the JSON Schemas, whose import alone costs more than a warm recall.

    The whole plan is cached as its goal and next actions; the part of one scope is taken from the
    parsed plan when a scope is asked for (microseconds), so one cache is right for every scope.
    """

    stamp: tuple[Any, Any]
    budget: int
    weights: Weights
    half_life_days: float
    trim_above: int
    resident_share: float
    plan: tuple[str, tuple[str, ...]]  # the whole plan's goal and next actions: what recall shows without a scope
    plan_data: dict[str, Any]  # plan.yaml as validated (plain data: unpickling it imports nothing)
    scoped_plan: bool  # whether some goal or next action belongs to one project only
    # recall.embed's (model, min_similarity) when enabled (memdream.recall.embed); a default, so that a
    # cache written before the setting existed reads as off.
    embed: tuple[str, float] | None = None

    def plan_parts(self, scope: str | None) -> tuple[str, list[str]]:
        """The goal and next actions of the resident plan of ``scope`` (None: the whole plan)."""
        if scope is None:
            return self.plan[0], list(self.plan[1])
        from memdream.memory.plan import Plan
        from memdream.recall.resident import scope_key

        plan = Plan.from_dict(self.plan_data)
        # The plan's own spelling of the scope: scopes compare without case.
        spelled = next((item.scope for item in (*plan.goals, *plan.next)
                        if item.scope and scope_key(item.scope) == scope_key(scope)), scope)
        goal, next_items = plan.for_scope(spelled)
        return goal, [item.text for item in next_items]

    def plan_text(self, scope: str | None) -> str:
        """The resident plan of ``scope`` (None: the whole plan), rendered."""
        return plan_text(*self.plan_parts(scope))


def load_meta(paths: MemoryPaths, memory: Any, memo: IndexMemo | None = None) -> Meta:
    stamp = (file_stamp(paths.config), file_stamp(paths.plan))
    if memo is not None and isinstance(memo.meta, Meta) and memo.meta.stamp == stamp:
        return memo.meta
    meta = _load_meta(paths, memory, stamp)
    if memo is not None:
        memo.meta = meta
    return meta


def _load_meta(paths: MemoryPaths, memory: Any, stamp: tuple[Any, Any]) -> Meta:
    path = index_mod.cache_dir(paths) / "meta.pickle"
    cached = index_mod.read_pickle(path)
    if isinstance(cached, Meta) and cached.stamp == stamp:
        return cached
    loaded = memory()
    settings = loaded.settings
    plan = loaded.load_plan()
    weights = Weights(**{name: float(value) for name, value in settings.get("recall.weights").items()})
    meta = Meta(stamp=stamp, budget=int(settings.get("recall.budget")), weights=weights,
                half_life_days=float(settings.get("recall.recency_half_life_days")),
                trim_above=int(settings.get("recall.raw_trim_above")),
                resident_share=float(settings.get("recall.resident_share")),
                plan=(plan.goal, tuple(item.text for item in plan.next)), plan_data=plan.to_dict(),
                scoped_plan=any(item.scope for item in (*plan.goals, *plan.next)),
                embed=_embed_setting(settings.get("recall.embed")))
    index_mod.write_pickle(path, meta)
    return meta


def _embed_setting(section: dict[str, Any]) -> tuple[str, float] | None:
    return (str(section["model"]), float(section["min_similarity"])) if section.get("enabled") else None


class Recaller:
    """The loaded index of one memory, ready to compose contexts with fixed options and ``policy``
    (memdream.recall.policy: what comes first, in how much of the budget, what fills the rest).

    ``memory`` is a :class:`Memory` or its root folder; with a folder and a warm cache, neither
    YAML nor the schemas are imported. ``memo``: the indexes a long-lived process keeps between
    Recallers (:class:`~memdream.recall.index.IndexMemo`), checked as the cache files are.
    """

    def __init__(self, memory: Memory | Path, options: RecallOptions | None = None, policy: Policy = RECALL,
                 memo: IndexMemo | None = None) -> None:
        self._memory: Memory | None = None
        if isinstance(memory, (str, Path)):
            self.paths = MemoryPaths(Path(memory))
        else:
            self._memory, self.paths = memory, memory.paths
        self.policy = policy
        self.options = options or RecallOptions()
        self.options.check()
        self.memo = memo
        self.meta = load_meta(self.paths, self.memory, memo)
        self.budget = self.options.budget if self.options.budget is not None else self.meta.budget
        if self.budget < MIN_BUDGET:
            raise UsageError(f"recall.budget must be at least {MIN_BUDGET} bytes, not {self.budget}")
        self.since = parse_timestamp(self.options.since).timestamp() if self.options.since else None
        self.subject = compact_name(self.options.subject) if self.options.subject else None
        self.now = now()
        self.cards: CardIndex = index_mod.load_card_index(self.paths, self.memory, memo)
        self._docs: dict[int, CardDoc] = {}
        self.static = self._static_scores()
        self._accept = self._accepts if self.options.filtered else None  # None: the index's active mask
        self._raw: RawRanker | None = None
        self._events: dict[int, dict[str, Any]] = {}  # raw events read, by global number (_read_events)
        self._files: FileHistory | None = None  # built when a raw event that shows a file is first judged
        self._candidates: list[Item] | None = None  # the raw items of the query being answered
        self._raw_best: float | None = None  # the best share of its words one of them holds
        self._bound: float | None = None  # the share of its words some raw event holds (_raw_bound)
        self._first: tuple[dict[str, float], dict[int, float]] | None = None  # its BM25 first stage
        self.withheld: list[dict[str, str]] = []
        self.usage = UsageLog(self.paths)
        self.explain_memo: dict[str, Any] = {}  # what ranking computed that --explain reuses (recall.explain)
        instructions = [self.cards.doc(number) for number in self.cards.resident]
        # A project the memory knows nothing of gets nothing (Policy.strict_scope).
        self.unknown_scope = False
        if policy.strict_scope:
            self.scope, self.unknown_scope = self._strict_scope()
            self.open_scope = False
        else:
            names_projects = self._names_projects(instructions)
            self.scope = self._scope(names_projects)
            # No scope known in a memory that names projects: a project's plan items and instructions are
            # shown only when they match the query (memdream.recall.resident).
            self.open_scope = self.scope is None and names_projects
        self.plan = self.meta.plan_parts(self.scope)
        self.resident = self._resident(instructions)
        self._rules: dict[str, frozenset[str]] = {}  # the words of each resident card, as the queries need them

    def _static_scores(self) -> StaticScores:
        """Recall's query-independent scores; with a stable policy at the memory's own clock (its newest
        active card) and with the reference counts the cards hold: neither the wall clock nor the usage
        log moves them."""
        meta, cards = self.meta, self.cards
        if self.policy.stable:
            newest = max((cards.epochs[number] for number, flag in enumerate(cards.active) if flag), default=0.0)
            return StaticScores(cards, meta.weights, newest, meta.half_life_days, {})
        return StaticScores(cards, meta.weights, self.now.timestamp(), meta.half_life_days,
                            counts_at(self.paths) if len(cards) else {})

    @cached_property
    def semantic(self) -> Semantic | None:
        """The meaning side of card and raw ranking (recall.embed: memdream.recall.embed), loaded at the
        first query that ranks either; None when off (nothing of it imported) or unavailable (a warning)."""
        if self.meta.embed is None:
            return None
        from memdream.recall.embed import EmbedSettings, open_semantic

        return open_semantic(self.paths, self.cards, EmbedSettings(*self.meta.embed))

    def doc(self, number: int) -> CardDoc:
        """Card ``number``, unpickled once: a context with no question looks at a card more than once."""
        found = self._docs.get(number)
        if found is None:
            found = self._docs[number] = self.cards.doc(number)
        return found

    def _names_projects(self, instructions: list[CardDoc]) -> bool:
        """Whether the plan or a standing instruction belongs to some projects only."""
        if self.meta.scoped_plan:
            return True
        if not instructions:
            return False
        from memdream.recall.resident import is_scoped

        return any(is_scoped(doc) for doc in instructions)

    def _scope(self, names_projects: bool) -> str | None:
        """The scope asked for; else the current folder's project, when the memory names projects and
        knows that one (an unscoped memory shows everything, and spares the lookup); else None."""
        if self.options.scope is not None:
            return self.options.scope.strip()
        if self.options.cwd is None or not names_projects:
            return None
        from memdream.recall.resident import current_project, known_scopes, scope_key

        found = current_project(self.options.cwd)
        if found is None:
            return None
        # A folder the memory knows nothing of (cron's, a scratch folder) is no scope.
        instructions = (self.cards.doc(number) for number in self.cards.resident)
        return found if scope_key(found) in known_scopes(self.meta.plan_data, instructions) else None

    def _strict_scope(self) -> tuple[str | None, bool]:
        """The scope of a strict policy, and whether the memory knows nothing of it: the scope asked for;
        else the folder's project whenever the memory names some project (in its plan or any card), known
        or not. A memory that names no project knows every one (all it holds applies everywhere)."""
        from memdream.recall.resident import GLOBAL_SCOPE, current_project, known_scopes, scope_key

        named = self.cards.active_scopes - {GLOBAL_SCOPE}  # the projects some active card applies to
        scope = self.options.scope.strip() if self.options.scope is not None else None
        if scope is None and self.options.cwd is not None and (self.meta.scoped_plan or named):
            scope = current_project(self.options.cwd)
        if scope is None:
            return None, False
        known = known_scopes(self.meta.plan_data, ()) | self.cards.active_scopes
        return scope, bool(known - {GLOBAL_SCOPE}) and scope_key(scope) not in known

    def _resident(self, instructions: list[CardDoc]) -> list[CardDoc]:
        """The standing instructions of the scope that pass the filters, best first (with no scope known,
        those that apply everywhere: a project's are ranked with the other cards)."""
        if not instructions:
            return []  # most memories: spare the import
        from memdream.recall.resident import applies, best_first

        return best_first(doc for number, doc in zip(self.cards.resident, instructions)
                          if applies(doc, self.scope, self.open_scope)
                          and (self._accept is None or self._accept(number)))

    def _rule_words(self, doc: CardDoc) -> frozenset[str]:
        """What a standing card is about (memdream.recall.resident.rule_words), once per card."""
        found = self._rules.get(doc.id)
        if found is None:
            from memdream.recall.resident import rule_words

            found = self._rules[doc.id] = rule_words(doc)
        return found

    def memory(self) -> Memory:
        if self._memory is None:
            from memdream.memory.store import Memory

            self._memory = Memory(self.paths.root)
        return self._memory

    # -- cards -------------------------------------------------------------------------------------
    def _accepts(self, number: int) -> bool:
        doc = self.doc(number)
        card_type, subject, status, epoch, archived = doc.type, doc.subject, doc.status, doc.epoch, doc.archived
        options = self.options
        if (archived or status in INACTIVE) and not (options.include_archived or options.status in INACTIVE):
            return False
        if options.card_type is not None and card_type != options.card_type:
            return False
        if options.status is not None and status != options.status:
            return False
        if self.subject is not None and self.subject not in compact_name(subject):
            return False
        return self.since is None or epoch >= self.since

    def _card_items(self, query: str, resident: set[str]) -> Iterator[Item]:
        """Cards that answer the query well enough (:meth:`_answers`), as items, best first: one per fact
        key, one per single raw source; none of the ``resident`` ones (already shown)."""
        keys: set[tuple[str, str]] = set()
        single_sources: set[str] = set()
        tokens = frozenset(tokenize(query))
        matches = fuzzy_matches(self.cards, query)
        relevance, fuzzy = relevance_parts(self.cards, query, matches)
        close: dict[int, float] = {}  # cards close in meaning (recall.embed), with their cosine
        if self.semantic is not None:
            relevance, close = self.semantic.fused(query, relevance, self._accept)
        if self.options.explain:  # kept for the explanation: ranking and explaining compute it once
            self.explain_memo.update(query=query, relevance=relevance, fuzzy=fuzzy, matches=matches,
                                     similarity=close)
        passed = 0  # cards in a row that did not answer: after MAX_MISSES of them, the rest will not either
        for score, number in rank_cards(self.cards, query, self.meta.weights, self.static, self._accept, relevance):
            doc = self.doc(number)
            if doc.id in resident:
                continue
            held = card_words(doc, matches[number][1] if number in matches else frozenset())
            if number not in close and not self._answers(query, coverage(held, tokens)):
                passed += 1
                if passed >= MAX_MISSES:
                    return
                continue
            passed = 0
            partners: list[CardDoc] = []
            if doc.key is not None and not doc.archived and doc.status in ACTIVE_STATUSES:
                if doc.key in keys:
                    continue
                keys.add(doc.key)
                partners = self.cards.conflict_partners(doc)
            if len(doc.evidence) == 1:
                if doc.evidence[0] in single_sources:
                    continue  # another card already stands on this one event
                single_sources.add(doc.evidence[0])
            shown = partners if len(partners) > 1 else [doc]
            yield Item(source="card", id=doc.id, type=doc.type, status=doc.status, score=round(score, 4),
                       ts=doc.ts, text=card_text(doc, shown if len(shown) > 1 else None),
                       evidence=list(dict.fromkeys(ref for card in shown for ref in card.evidence)),
                       conflicts=[card.id for card in shown[1:]])

    def _answers(self, query: str, share: float) -> bool:
        """Whether a card holding ``share`` of the query's words is shown: at least CARD_COVERAGE of them,
        or as many as the best raw events hold (cards are the consolidated layer: at par they win).
        Without a raw fallback (--type, --status) every relevant card is."""
        if share >= CARD_COVERAGE or self.options.cards_only or share >= self._raw_bound(query):
            return True
        return share >= self._raw_coverage(query)

    def _raw_bound(self, query: str) -> float:
        """The share of the query's words that some raw event holds: no event can hold more of them, and
        a card holding as many wins without ranking the raw layer. Once a query: every card judged asks."""
        if self._bound is None:
            tokens = frozenset(self.raw.terms(query))
            wanted = tokens | frozenset(related(tokens))
            self._bound = coverage((token for token in wanted if self.raw.frequency(token)), tokens)
        return self._bound

    # -- raw events --------------------------------------------------------------------------------
    @property
    def raw(self) -> RawRanker:
        if self._raw is None:
            self._raw = RawRanker(index_mod.load_segment_indexes(self.paths, self.memo), self._read_events,
                                  lambda event: tokenize(index_mod.event_text(event)))
        return self._raw

    def _read_events(self, events: list[int]) -> dict[int, dict[str, Any]]:
        """The events of these global numbers, each read from its segment once per Recaller (up to
        KEPT_EVENTS): the queries of a batch, and the steps of one recall, read the same ones again."""
        ranker = self._raw
        assert ranker is not None
        kept = self._events
        missing = [event for event in events if event not in kept]
        if missing:
            if len(kept) + len(missing) > KEPT_EVENTS:
                kept.clear()
                missing = events
            kept.update(self._read_from_segments(ranker, missing))
        return {event: kept[event] for event in events}

    def _read_from_segments(self, ranker: RawRanker, events: list[int]) -> dict[int, dict[str, Any]]:
        by_segment: dict[int, list[tuple[int, int]]] = {}
        for event in events:
            number, doc = ranker.locate(event)
            by_segment.setdefault(number, []).append((event, doc))
        found: dict[int, dict[str, Any]] = {}
        for number, pairs in by_segment.items():
            segment = ranker.segments[number]
            lines = index_mod.read_events(self.paths, segment.segment, [segment.offsets[doc] for _, doc in pairs])
            for event, doc in pairs:
                found[event] = lines[segment.offsets[doc]]
        return found

    def _raw_items(self, query: str, limit: int) -> list[Item]:
        """The ``limit`` best raw events as items, in rank order; those whose value a card has replaced
        are withheld (listed in ``self.withheld``) unless --include-archived."""
        ranker = self.raw
        since = self.since

        def accept(number: int, doc: int) -> bool:
            return since is None or ranker.segments[number].epochs[doc] >= since

        ranked = ranker.rank(query, accept, limit, self._first_stage(query))
        self._first = None  # rank added to its scores
        events = self._read_events([event for _, event in ranked])
        query_tokens = frozenset(ranker.terms(query))
        query_tokens |= frozenset(related(query_tokens))  # the tools a general word names are shown and held too
        weights = ranker.weights(query_tokens)
        found: list[Item] = []
        for score, number in ranked:
            if score < RAW_FLOOR * RAW_SCORE_SCALE:
                break  # best first: the rest are lower still
            event = events[number]
            if self.subject is not None and self.subject not in compact_name(index_mod.event_text(event)):
                continue
            epoch = self._epoch(number)
            successor = self._superseded(event, epoch) or self._outdated_view(number, epoch)
            if successor is not None and not self.options.include_archived:
                self.withheld.append({"id": event_ref(event), "superseded_by": successor.card,
                                      "since": successor.since})
                continue  # the card holds the newer value: an old one would only mislead
            ref = event_ref(event)

            def refit(width: int, event: dict[str, Any] = event, successor: Successor | None = successor) -> str:
                return raw_text(event, query_tokens, self.meta.trim_above, successor, width, weights=weights)

            found.append(Item(source="raw", id=ref, type=str(event.get("kind", "")),
                              score=round(min(1.0, score / RAW_SCORE_SCALE), 4), ts=str(event.get("ts", "")),
                              text=refit(WINDOW), evidence=[ref], untrusted=untrusted(event),
                              superseded_by=successor.card if successor else None, epoch=epoch,
                              words=matched_terms(event, query_tokens), refit=refit))
        return found

    def _raw_candidates(self, query: str, budget: int) -> list[Item]:
        """The raw items for ``query`` in ``budget`` bytes (computed once per query), near-duplicates
        collapsed to their newest (rank.collapse)."""
        if self._candidates is None:
            found = self._raw_items(query, limit=budget // RAW_CANDIDATES + RAW_CANDIDATES - 8)
            shown = [frozenset(tokenize(item.text.split(": ", 1)[-1])) for item in found]
            self._candidates = [found[place] for place in collapse(len(found), shown.__getitem__,
                                                                   lambda place: found[place].epoch,
                                                                   lambda place: found[place].words)]
        return self._candidates

    def _first_stage(self, query: str) -> tuple[dict[str, float], dict[int, float]]:
        """The raw ranking's first stage: the query's terms and their BM25 score of the events that hold
        one; with recall.embed, the events closest in meaning get a bonus (memdream.recall.embed)."""
        if self._first is None:
            terms, scores = self.raw.first_stage(query)
            semantic = self.semantic
            if semantic is not None:
                scores = semantic.raw_fused(self.paths, self.raw, query, scores)
            self._first = (terms, scores)
        return self._first

    def _raw_coverage(self, query: str) -> float:
        """The largest share of the query's words that one of the raw events a plain BM25 ranks best
        holds (RAW_PEERS of them): the first stage of the raw ranking, which the fallback goes on from
        if it is needed, and all that is needed when the cards win."""
        if self._raw_best is None:
            tokens = frozenset(self.raw.terms(query))
            wanted = tokens | frozenset(related(tokens))
            best = [event for event, _ in self._first_best(query, 4 * RAW_PEERS)
                    if self.since is None or self._epoch(event) >= self.since][:RAW_PEERS]
            events = self._read_events(best)
            self._raw_best = max((coverage(matched_terms(events[event], wanted), tokens) for event in best),
                                 default=0.0)
        return self._raw_best

    def _first_best(self, query: str, count: int) -> list[tuple[int, float]]:
        """The ``count`` best events of the first stage, best first. Unless the first stage is already
        summed (or ranked by meaning too), without summing it: most queries of a batch need no more."""
        if self._first is None and self.meta.embed is None:
            found = self.raw.best(self.raw.query_terms(query), count)
            if found is not None:
                return found
        return largest(self._first_stage(query)[1], count)

    def _epoch(self, number: int) -> float:
        segment, doc = self.raw.locate(number)
        return self.raw.segments[segment].epochs[doc]

    def _superseded(self, event: dict[str, Any], epoch: float) -> Successor | None:
        """The card that replaced the value ``event`` carries, or None (docs/recall.md, "Superseded
        values"): a superseded card's evidence that no active card cites; or an event whose own fact
        names a key whose one active card holds a different value, seen after this event."""
        successor = self.cards.successor(event_ref(event)) if self.cards.stale_refs else None
        if successor is not None:
            return successor
        fact = event.get("fact")
        if not (self.cards.current and isinstance(fact, dict)):
            return None
        subject, attribute, value = fact.get("subject"), fact.get("attribute"), fact.get("value")
        if not (isinstance(subject, str) and isinstance(attribute, str) and isinstance(value, (str, int, float))):
            return None
        key = FactKey.of(subject, attribute)
        current = self.cards.current_value((key.subject, key.attribute))
        if current is None or epoch > current.newest or normalize_value(str(value)) == current.value:
            return None  # news the card has not seen yet, or the same value
        return Successor(current.card, current.since)

    def _outdated_view(self, number: int, epoch: float) -> Successor | None:
        """For an event that shows a file's content: the change after which its content is no longer the
        file's, when the log also holds what the file holds now (memdream.recall.file_views), else None."""
        segment, doc = self.raw.locate(number)
        view = self.raw.segments[segment].file_views.get(doc)
        if view is None:
            return None
        if self._files is None:
            self._files = index_mod.file_history(self.raw.segments)
        change = self._files.outdated_by(view[0], epoch)
        return Successor(change.ref, _date(change.epoch)) if change is not None else None

    # -- resident: the plan and the standing instructions ----------------------------------------------
    def _plan_parts(self, query: str) -> tuple[str, list[str]]:
        if not self.open_scope:
            return self.plan
        from memdream.recall.resident import open_plan

        return open_plan(self.meta.plan_data, query)

    def _add_plan(self, budget: Budget, items: list[Item], query: str, share: int) -> int:
        """The plan of the scope, first: within the resident share (never cut below PLAN_FLOOR bytes), the
        goal, then the next actions that fit; or, when the policy keeps it out of the share, whole while it
        fits the budget, else cut at its end. The bytes it took of the share."""
        goal, next_items = self._plan_parts(query)
        if not (goal.strip() or next_items):
            return 0
        if self.policy.plan_in_share:
            text = plan_within(goal, next_items, min(budget.room, max(share, PLAN_FLOOR)))
        else:
            text = plan_text(goal, next_items)
            if not budget.fits(text):
                text = cut(text, budget.room - 1)
        if not text:
            return 0
        budget.add(text)
        items.append(Item(source="plan", id="plan", text=text))
        return Budget.cost(text) if self.policy.plan_in_share else 0

    def _add_resident(self, budget: Budget, items: list[Item], cited: set[str], share: int, query: str) -> None:
        """The scope's standing instructions, those that bear on ``query`` first, then best first, while
        they fit in what the plan left of the resident share (the rest of the budget is the query's): one
        that does not fit is skipped, a smaller one may still."""
        spent = 0
        resident = self.resident
        if len(resident) > 1 and query.strip():
            from memdream.recall.resident import bearing_first

            resident = bearing_first(resident, frozenset(tokenize(query)), self._rule_words)
        for doc in resident:
            if min(share - spent, budget.room) < self.policy.min_line:
                break
            item = Item(source="card", id=doc.id, type=doc.type, status=doc.status, ts=doc.ts,
                        text=card_text(doc), evidence=list(doc.evidence), resident=True)
            cost = Budget.cost(BULLET + item.text)
            if spent + cost <= share and budget.add_item(item):
                spent += cost
                items.append(item)
                cited.update(item.evidence)

    # -- the whole recall --------------------------------------------------------------------------
    def recall(self, query: str, limit: int | None = None) -> RecallResult:
        """The context for ``query`` ("" for a policy without one) in ``limit`` bytes (default: the
        Recaller's budget; a caller that frames the context, with a header, leaves the frame's room out)."""
        budget = Budget(self.budget if limit is None else limit)
        self.withheld = []
        self._candidates, self._raw_best, self._first, self._bound = None, None, None, None
        items: list[Item] = []
        if self.unknown_scope:  # what the memory learned was learned elsewhere: nothing of it applies
            return RecallResult(query=query, budget=budget.limit, context="", items=items)
        # Resident items (the plan, then the instructions) take at most their share of the budget:
        # the rest is the query's, for the cards that answer it or the raw events that do.
        share = int(budget.limit * max(self.meta.resident_share, self.policy.min_resident_share))
        spent = self._add_plan(budget, items, query, share)
        cited: set[str] = set()
        self._add_resident(budget, items, cited, share - spent, query)
        if self.policy.by_query:
            self._add_answers(budget, items, cited, query)
        else:
            from memdream.recall.standing import standing_items

            self._fill(budget, standing_items(self, {item.id for item in items if item.resident}), items, cited)
        # Resident cards are shown whatever the query: counting them would add references on every
        # recall, which say nothing of their use.
        if self.policy.count_use:
            self.usage.append(format_timestamp(self.now), query,
                              [item.id for item in items if item.source == "card" and not item.resident])
        if self.options.explain:
            from memdream.recall.explain import explain_items

            explain_items(self, query, items)
        return RecallResult(query=query, budget=budget.limit, context=budget.context, items=items,
                            withheld=self.withheld)

    def _add_answers(self, budget: Budget, items: list[Item], cited: set[str], query: str) -> None:
        """The cards that answer ``query``, then raw events in the room they leave; when not one of them
        fits, the best of them cut to the room left."""
        shown_before = len(items)
        resident = {item.id for item in items if item.resident}
        overflow = self._fill(budget, self._card_items(query, resident), items, cited)
        min_line = self.policy.min_line
        if overflow is None and not self.options.cards_only and budget.room >= min_line:
            first = len(items)
            overflow = self._fill(budget, iter(self._raw_candidates(query, budget.limit)), items, cited)
            self._newest_first(budget, items, first)
        if len(items) == shown_before and overflow is not None and budget.room >= min_line:
            if budget.add_cut(overflow):  # the last resort: part of the best item rather than nothing
                items.append(overflow)

    @staticmethod
    def _newest_first(budget: Budget, items: list[Item], first: int) -> None:
        """Reorder the raw items shown (``items[first:]``, the last blocks of ``budget``) so that of
        those holding the same query words the newest comes first (rank.newest_first): the same
        items in the same bytes, so the budget is unchanged."""
        shown = items[first:]
        if len(shown) < 2:
            return
        order = newest_first(len(shown), lambda place: shown[place].epoch, lambda place: shown[place].words)
        blocks = budget.blocks[len(budget.blocks) - len(shown):]
        items[first:] = [shown[place] for place in order]
        budget.blocks[len(budget.blocks) - len(shown):] = [blocks[place] for place in order]

    def _fill(self, budget: Budget, candidates: Iterator[Item], items: list[Item], cited: set[str]) -> Item | None:
        """Add candidates in rank order while they fit; the first that did not fit, or None if all did.

        Raw items already cited by a shown card are skipped (no two items from one source). A raw item
        that does not fit whole while at least SQUEEZE_ROOM bytes are left is shown in the narrower
        window that fits: the room is the query's, and the best event left is what should use it.
        """
        first_miss: Item | None = None
        misses = 0
        min_line, max_misses = self.policy.min_line, self.policy.max_misses
        for item in candidates:
            if budget.room < min_line or misses >= max_misses:
                first_miss = first_miss or item
                break
            if item.source == "raw" and item.id in cited:
                continue
            if budget.add_item(item) or (budget.room >= SQUEEZE_ROOM and _squeeze(budget, item)):
                items.append(item)
                cited.update(item.evidence)
                misses = 0
            else:
                first_miss = first_miss or item
                misses += 1
        return first_miss

    def close(self) -> None:
        self.usage.close()


def _date(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d") if epoch else ""


def _squeeze(budget: Budget, item: Item) -> bool:
    """Show the raw ``item`` in the narrower window that fits the room left, when that window still
    holds some of the query's words (or the item holds none anyway)."""
    if item.refit is None or ": " not in item.text:
        return False
    frame = Budget.cost(BULLET + item.text.split(": ", 1)[0] + ": ")  # bullet, date, marks, speaker
    width = budget.room - frame
    for _ in range(3):  # characters of several bytes: narrow until the line fits
        if width < MIN_WINDOW:
            return False
        text = item.refit(width)
        excess = Budget.cost(BULLET + text) - budget.room
        if excess <= 0:
            break
        width -= excess
    else:
        return False
    if item.words and not item.words.intersection(tokenize(text)):
        return False
    item.text = text
    budget.add(BULLET + text)
    return True


def recall(memory: Memory | Path, query: str, options: RecallOptions | None = None,
           memo: IndexMemo | None = None) -> RecallResult:
    """Answer one query (see :class:`Recaller` to answer many; ``memo``: see :class:`Recaller`)."""
    recaller = Recaller(memory, options, memo=memo)
    try:
        return recaller.recall(query)
    finally:
        recaller.close()
