"""Recall: the plan and the standing instructions of the scope (resident), then the best cards for a
query, then (as a fallback) raw events, within a byte budget.

A :class:`Recaller` loads the index once and answers many queries (``--queries``); :func:`recall`
answers one. Recall never writes a tracked file: it appends to .memdream/usage.jsonl and keeps its
index cache under .memdream/cache/recall/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.clock import format_timestamp, now, parse_timestamp
from memdream.errors import UsageError
from memdream.memory.card import ACTIVE_STATUSES, CARD_TYPES, CONFLICTING, STATUSES
from memdream.memory.card import INACTIVE_STATUSES as INACTIVE
from memdream.memory.factkey import FactKey, normalize_value
from memdream.memory.paths import MemoryPaths
from memdream.memory.refs import ref_of as event_ref
from memdream.memory.usage import UsageLog, counts_at
from memdream.recall import index as index_mod
from memdream.recall.index import CardDoc, CardIndex, Successor, compact_name, file_stamp
from memdream.recall.rank import RawRanker, StaticScores, Weights, matched_terms, newest_first, rank_cards
from memdream.recall.render import BULLET, Budget, Item, card_text, cut, plan_text, raw_text, untrusted
from memdream.recall.text import tokenize

if TYPE_CHECKING:
    from memdream.memory.store import Memory

MIN_BUDGET = 64
# Below this much room the context is full: no line is that short.
MIN_LINE = 24
# After this many candidates in a row did not fit, the rest will not either.
MAX_MISSES = 48
# Raw scores can reach 1 + the episode share; reported scaled into [0, 1].
RAW_SCORE_SCALE = 1.3
# At most this many withheld superseded raw events are listed in the JSON output (the best-ranked).
MAX_WITHHELD = 20


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

    The whole plan is cached rendered; the part of one scope is rendered from the parsed plan when a
    scope is asked for (microseconds), so one cache is right for every scope.
    """

    stamp: tuple[Any, Any]
    budget: int
    weights: Weights
    half_life_days: float
    trim_above: int
    resident_share: float
    plan: str  # the whole plan, rendered: what recall shows without a scope
    plan_data: dict[str, Any]  # plan.yaml as validated (plain data: unpickling it imports nothing)
    scoped_plan: bool  # whether some goal or next action belongs to one project only

    def plan_text(self, scope: str | None) -> str:
        """The resident plan of ``scope`` (None: the whole plan), rendered."""
        if scope is None:
            return self.plan
        from memdream.memory.plan import Plan
        from memdream.recall.resident import scope_key

        plan = Plan.from_dict(self.plan_data)
        # The plan's own spelling of the scope: scopes compare without case.
        spelled = next((item.scope for item in (*plan.goals, *plan.next)
                        if item.scope and scope_key(item.scope) == scope_key(scope)), scope)
        goal, next_items = plan.for_scope(spelled)
        return plan_text(goal, [item.text for item in next_items])


def load_meta(paths: MemoryPaths, memory: Any) -> Meta:
    stamp = (file_stamp(paths.config), file_stamp(paths.plan))
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
                plan=plan_text(plan.goal, [item.text for item in plan.next]), plan_data=plan.to_dict(),
                scoped_plan=any(item.scope for item in (*plan.goals, *plan.next)))
    index_mod.write_pickle(path, meta)
    return meta


class Recaller:
    """The loaded index of one memory, ready to answer queries with fixed options.

    ``memory`` is a :class:`Memory` or its root folder; with a folder and a warm cache, neither
    YAML nor the schemas are imported.
    """

    def __init__(self, memory: Memory | Path, options: RecallOptions | None = None) -> None:
        self._memory: Memory | None = None
        if isinstance(memory, (str, Path)):
            self.paths = MemoryPaths(Path(memory))
        else:
            self._memory, self.paths = memory, memory.paths
        self.options = options or RecallOptions()
        self.options.check()
        self.meta = load_meta(self.paths, self.memory)
        self.budget = self.options.budget if self.options.budget is not None else self.meta.budget
        if self.budget < MIN_BUDGET:
            raise UsageError(f"recall.budget must be at least {MIN_BUDGET} bytes, not {self.budget}")
        self.since = parse_timestamp(self.options.since).timestamp() if self.options.since else None
        self.subject = compact_name(self.options.subject) if self.options.subject else None
        self.now = now()
        self.cards: CardIndex = index_mod.load_card_index(self.paths, self.memory)
        self.static = StaticScores(self.cards, self.meta.weights, self.now.timestamp(), self.meta.half_life_days,
                                   counts_at(self.paths) if len(self.cards) else {})
        self._accept = self._accepts if self.options.filtered else None  # None: the index's active mask
        self._raw: RawRanker | None = None
        self.withheld: list[dict[str, str]] = []
        self.usage = UsageLog(self.paths)
        self.explain_memo: dict[str, Any] = {}  # what ranking computed that --explain reuses (recall.explain)
        instructions = [self.cards.doc(number) for number in self.cards.resident]
        self.scope = self._scope(instructions)
        self.plan = self.meta.plan_text(self.scope)
        self.resident = self._resident(instructions)

    def _scope(self, instructions: list[CardDoc]) -> str | None:
        """The scope asked for; else the current folder's project, when the plan or an instruction is
        scoped (an unscoped memory shows everything, and spares the lookup); else None."""
        if self.options.scope is not None:
            return self.options.scope.strip()
        if self.options.cwd is None or not (self.meta.scoped_plan or instructions):
            return None
        from memdream.recall.resident import current_project, is_scoped, scope_key, scopes_of

        if not (self.meta.scoped_plan or any(is_scoped(doc) for doc in instructions)):
            return None
        found = current_project(self.options.cwd)
        if found is None:
            return None
        # A folder the memory knows nothing of (cron's, a scratch folder) is no scope: show everything.
        plan = self.meta.plan_data
        known = {scope_key(item["scope"]) for item in (*plan.get("goals", []), *plan.get("next", []))
                 if item.get("scope")}
        known.update(scope for doc in instructions for scope in scopes_of(doc))
        return found if scope_key(found) in known else None

    def _resident(self, instructions: list[CardDoc]) -> list[CardDoc]:
        """The standing instructions of the scope that pass the filters, best first."""
        if not instructions:
            return []  # most memories: spare the import
        from memdream.recall.resident import applies, best_first

        return best_first(doc for number, doc in zip(self.cards.resident, instructions)
                          if applies(doc, self.scope) and (self._accept is None or self._accept(number)))

    def memory(self) -> Memory:
        if self._memory is None:
            from memdream.memory.store import Memory

            self._memory = Memory(self.paths.root)
        return self._memory

    # -- cards -------------------------------------------------------------------------------------
    def _accepts(self, number: int) -> bool:
        doc = self.cards.doc(number)
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

    def _conflict_partners(self, doc: CardDoc) -> list[CardDoc]:
        """``doc`` and every other active card of its fact key that is marked conflicting."""
        assert doc.key is not None
        others = (self.cards.doc(number) for number in self.cards.shared_keys.get(doc.key, []))
        return [doc] + sorted((other for other in others if other.status == CONFLICTING and other.id != doc.id),
                              key=lambda other: other.id)

    def _card_items(self, query: str, resident: set[str]) -> Iterator[Item]:
        """Relevant cards as items, best first: one per fact key, one per single raw source; none of
        the ``resident`` ones (already shown)."""
        keys: set[tuple[str, str]] = set()
        single_sources: set[str] = set()
        relevance = None
        if self.options.explain:  # kept for the explanation: ranking and explaining compute it once
            from memdream.recall.rank import relevance_parts

            relevance, fuzzy = relevance_parts(self.cards, query)
            self.explain_memo.update(query=query, relevance=relevance, fuzzy=fuzzy)
        for score, number in rank_cards(self.cards, query, self.meta.weights, self.static, self._accept, relevance):
            doc = self.cards.doc(number)
            if doc.id in resident:
                continue
            partners: list[CardDoc] = []
            if doc.key is not None and not doc.archived and doc.status in ACTIVE_STATUSES:
                if doc.key in keys:
                    continue
                keys.add(doc.key)
                if doc.status == CONFLICTING:
                    partners = self._conflict_partners(doc)
            if len(doc.evidence) == 1:
                if doc.evidence[0] in single_sources:
                    continue  # another card already stands on this one event
                single_sources.add(doc.evidence[0])
            shown = partners if len(partners) > 1 else [doc]
            yield Item(source="card", id=doc.id, type=doc.type, status=doc.status, score=round(score, 4),
                       ts=doc.ts, text=card_text(doc, shown if len(shown) > 1 else None),
                       evidence=list(dict.fromkeys(ref for card in shown for ref in card.evidence)),
                       conflicts=[card.id for card in shown[1:]])

    # -- raw events --------------------------------------------------------------------------------
    @property
    def raw(self) -> RawRanker:
        if self._raw is None:
            self._raw = RawRanker(index_mod.load_segment_indexes(self.paths), self._read_events,
                                  lambda event: tokenize(index_mod.event_text(event)))
        return self._raw

    def _read_events(self, events: list[int]) -> dict[int, dict[str, Any]]:
        ranker = self._raw
        assert ranker is not None
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

    def _raw_items(self, query: str, limit: int) -> Iterator[Item]:
        ranker = self.raw
        since = self.since

        def accept(number: int, doc: int) -> bool:
            return since is None or ranker.segments[number].epochs[doc] >= since

        ranked = ranker.rank(query, accept, limit)
        events = self._read_events([event for _, event in ranked])
        query_tokens = frozenset(tokenize(query))
        for score, number in ranked:
            event = events[number]
            if self.subject is not None and self.subject not in compact_name(index_mod.event_text(event)):
                continue
            epoch = self._epoch(number)
            successor = self._superseded(event, epoch)
            if successor is not None and not self.options.include_archived:
                self.withheld.append({"id": event_ref(event), "superseded_by": successor.card,
                                      "since": successor.since})
                continue  # the card holds the newer value: an old one would only mislead
            ref = event_ref(event)
            yield Item(source="raw", id=ref, type=str(event.get("kind", "")),
                       score=round(min(1.0, score / RAW_SCORE_SCALE), 4), ts=str(event.get("ts", "")),
                       text=raw_text(event, query_tokens, self.meta.trim_above, successor), evidence=[ref],
                       untrusted=untrusted(event), superseded_by=successor.card if successor else None,
                       epoch=epoch, words=matched_terms(event, query_tokens))

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

    # -- resident instructions ---------------------------------------------------------------------
    def _add_resident(self, budget: Budget, items: list[Item], cited: set[str]) -> None:
        """The scope's standing instructions, best first, while they fit in their share of the budget
        (the rest of it is the query's): one that does not fit is skipped, a smaller one may still."""
        share = int(self.budget * self.meta.resident_share)
        spent = 0
        for doc in self.resident:
            if min(share - spent, budget.room) < MIN_LINE:
                break
            item = Item(source="card", id=doc.id, type=doc.type, status=doc.status, ts=doc.ts,
                        text=card_text(doc), evidence=list(doc.evidence), resident=True)
            cost = Budget.cost(BULLET + item.text)
            if spent + cost <= share and budget.add_item(item):
                spent += cost
                items.append(item)
                cited.update(item.evidence)

    # -- the whole recall --------------------------------------------------------------------------
    def recall(self, query: str) -> RecallResult:
        budget = Budget(self.budget)
        self.withheld = []
        items: list[Item] = []
        if self.plan:  # resident: always first, cut only if it alone exceeds the budget
            plan = Item(source="plan", id="plan", text=self.plan)
            if not budget.fits(plan.text):
                plan.text = cut(plan.text, budget.room - 1)
            budget.add(plan.text)
            items.append(plan)
        cited: set[str] = set()
        self._add_resident(budget, items, cited)
        shown_before = len(items)
        resident = {item.id for item in items if item.resident}
        overflow = self._fill(budget, self._card_items(query, resident), items, cited)
        if overflow is None and not self.options.cards_only and budget.room >= MIN_LINE:
            first = len(items)
            overflow = self._fill(budget, self._raw_items(query, limit=budget.room // 16 + 32), items, cited)
            self._newest_first(budget, items, first)
        if len(items) == shown_before and overflow is not None and budget.room >= MIN_LINE:
            if budget.add_cut(overflow):  # the last resort: part of the best item rather than nothing
                items.append(overflow)
        # Resident cards are shown whatever the query: counting them would add references on every
        # recall, which say nothing of their use.
        self.usage.append(format_timestamp(self.now), query,
                          [item.id for item in items if item.source == "card" and not item.resident])
        if self.options.explain:
            from memdream.recall.explain import explain_items

            explain_items(self, query, items)
        return RecallResult(query=query, budget=self.budget, context=budget.context, items=items,
                            withheld=self.withheld)

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

    @staticmethod
    def _fill(budget: Budget, candidates: Iterator[Item], items: list[Item], cited: set[str]) -> Item | None:
        """Add candidates in rank order while they fit; the first that did not fit, or None if all did.

        Raw items already cited by a shown card, or saying the same words as a shown raw item, are
        skipped (no two items from one source).
        """
        first_miss: Item | None = None
        misses = 0
        seen: set[bytes] = set()
        for item in candidates:
            if budget.room < MIN_LINE or misses >= MAX_MISSES:
                first_miss = first_miss or item
                break
            if item.source == "raw":
                if item.id in cited:
                    continue
                fingerprint = hashlib.blake2b(" ".join(tokenize(item.text.split(": ", 1)[-1])).encode(),
                                              digest_size=8).digest()
                if fingerprint in seen:
                    continue
                seen.add(fingerprint)
            if budget.add_item(item):
                items.append(item)
                cited.update(item.evidence)
                misses = 0
            else:
                first_miss = first_miss or item
                misses += 1
        return first_miss

    def close(self) -> None:
        self.usage.close()


def recall(memory: Memory | Path, query: str, options: RecallOptions | None = None) -> RecallResult:
    """Answer one query (see :class:`Recaller` to answer many)."""
    recaller = Recaller(memory, options)
    try:
        return recaller.recall(query)
    finally:
        recaller.close()
