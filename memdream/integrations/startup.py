"""The context a new session starts with: the plan and the most useful cards of its project, in a budget.

There is no question yet when a session starts, so nothing is ranked by relevance. What recall keeps
resident whatever the query comes first, chosen as recall chooses it (memdream.recall.engine and
.resident): the plan of the scope, then the user's standing instructions of the scope within
``recall.resident_share`` of the budget. The rest of the budget holds the scope's other cards in the
order of recall's query-independent score (memdream.recall.rank.StaticScores: recency, references,
confidence): the project's own cards first, then global and unscoped ones; other projects' never.

The scope is the project of the session's folder (memdream.memory.project names it as ingest tags
events). A memory whose plan and cards name no project shows everything, as recall does; a memory
that names projects, asked for a project it has no card or plan item of, shows nothing at all: what
it learned is of other projects, and a session of this one is better off without it (the SessionStart
hook then prints nothing).

Two callers: the SessionStart hook (``memdream context --session-start``), which must be fast (the
warm recall index, no YAML, no schemas) and counts no use of the cards it shows (a card shown at every
session start would gain references that say nothing of its use); and ``context --export``, whose
block must be the same bytes for the same memory (idempotent): it ranks at the memory's own clock
(its newest card) and with the reference counts the cards hold, not the usage log that recalls grow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.memory.card import CONFLICTING

if TYPE_CHECKING:
    from memdream.recall.engine import Recaller
    from memdream.recall.index import CardDoc
    from memdream.recall.rank import StaticScores

DEFAULT_BUDGET = 2000
# A budget below this holds no more than a header: refused as a usage error.
MIN_BUDGET = 128
MAX_BUDGET = 65536
# After this many cards in a row did not fit, the rest will not either.
MAX_MISSES = 16
# The share of the budget the user's standing instructions may take first (at least recall's).
INSTRUCTION_SHARE = 0.5
OWN, SHARED = 0, 1  # the tiers of the ranked cards: the project's own, then global and unscoped


@dataclass
class ContextItem:
    source: str  # plan or card
    id: str
    text: str
    type: str | None = None
    status: str | None = None
    resident: bool = False

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "id": self.id}
        if self.type:
            data["type"] = self.type
        if self.status:
            data["status"] = self.status
        if self.resident:
            data["resident"] = True
        data["text"] = self.text
        return data


@dataclass
class StartupContext:
    """The lines a session starts with (``body``: plan, instructions, cards) and what they are."""

    project: str | None
    budget: int
    body: str
    items: list[ContextItem] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.items

    def to_dict(self) -> dict[str, Any]:
        return {"project": self.project, "budget": self.budget, "body_bytes": len(self.body.encode("utf-8")),
                "items": [item.to_dict() for item in self.items]}


def check_budget(budget: int, minimum: int = MIN_BUDGET) -> None:
    from memdream.errors import UsageError

    if not minimum <= budget <= MAX_BUDGET:
        raise UsageError(f"--budget must be between {minimum} and {MAX_BUDGET} bytes, not {budget}")


def build_context(root: Path, budget: int = DEFAULT_BUDGET, *, project: str | None = None,
                  cwd: str | None = None, stable: bool = False,
                  frame: Callable[[str | None], int] | None = None) -> StartupContext:
    """The plan and the most useful cards for ``project`` (else the project of ``cwd``) within ``budget``
    bytes, less ``frame(scope)``: the bytes the caller's header takes once the scope is known.
    ``stable``: rank at the memory's own clock and reference counts (for export)."""
    from memdream.memory.journal import require_settled
    from memdream.recall.engine import Recaller, RecallOptions

    check_budget(budget)
    require_settled(root)  # a killed dream's half-written cards are never shown
    recaller = Recaller(root, RecallOptions(budget=budget, scope=project, cwd=cwd))
    try:
        return _Builder(recaller, budget, stable).build(project, cwd, frame or (lambda scope: 0))
    finally:
        recaller.close()


class _Builder:
    def __init__(self, recaller: Recaller, budget: int, stable: bool) -> None:
        from memdream.recall.render import Budget

        self.recaller = recaller
        self.index = recaller.cards
        self.budget = Budget(budget)
        self.stable = stable
        self.items: list[ContextItem] = []
        self.active = [number for number, flag in enumerate(self.index.active) if flag]
        # Cards are unpickled one by one when looked at: a budget is full after a few dozen of thousands.
        self._docs: dict[int, CardDoc] = {}

    def doc(self, number: int) -> CardDoc:
        found = self._docs.get(number)
        if found is None:
            found = self._docs[number] = self.index.doc(number)
        return found

    def build(self, project: str | None, cwd: str | None, frame: Callable[[str | None], int]) -> StartupContext:
        from memdream.recall.render import Budget

        scope = self._scope(project, cwd)
        limit = self.budget.limit
        if scope is not None and not self._knows(scope):
            return StartupContext(project=scope, budget=limit, body="", items=[])
        self.budget = Budget(max(0, limit - frame(scope)))
        self._add_plan(scope)
        shown = self._add_resident(scope)
        self._add_cards(scope, shown)
        return StartupContext(project=scope, budget=limit, body=self.budget.context, items=self.items)

    # -- the scope ---------------------------------------------------------------------------------
    def _scope(self, project: str | None, cwd: str | None) -> str | None:
        """Recall's scope (the project asked, or the folder's project when the memory knows it); and
        for a folder of a project the scoped memory has never seen, that project (nothing of the
        others' applies to it)."""
        if project is not None or self.recaller.scope is not None:
            return project.strip() if project is not None else self.recaller.scope
        if cwd is None or not self._scoped_memory():
            return None
        from memdream.recall.resident import current_project

        return current_project(cwd)

    def _scoped_memory(self) -> bool:
        from memdream.recall.resident import is_scoped

        return self.recaller.meta.scoped_plan or any(is_scoped(self.doc(number)) for number in self.active)

    def _knows(self, scope: str) -> bool:
        """Whether some plan item or active card names ``scope``; a memory that names no project knows
        every one (all it holds applies everywhere)."""
        from memdream.recall.resident import GLOBAL_SCOPE, known_scopes, scope_key

        known = known_scopes(self.recaller.meta.plan_data, (self.doc(number) for number in self.active))
        return not (known - {GLOBAL_SCOPE}) or scope_key(scope) in known

    # -- plan and standing instructions (resident, as recall shows them) -----------------------------
    def _add_plan(self, scope: str | None) -> None:
        from memdream.recall.render import cut

        plan = self.recaller.meta.plan_text(scope)
        if not plan:
            return
        if not self.budget.fits(plan):
            plan = cut(plan, self.budget.room - 1)
            if not plan:
                return
        self.budget.add(plan)
        self.items.append(ContextItem(source="plan", id="plan", text=plan))

    def _add_resident(self, scope: str | None) -> set[int]:
        """The scope's standing instructions, best first, within recall's resident share of the budget."""
        from memdream.recall.render import BULLET, Budget, card_text
        from memdream.recall.resident import applies, best_first

        # No query waits for the rest of the budget: the instructions may take more of it than in recall.
        share = int(self.budget.limit * max(self.recaller.meta.resident_share, INSTRUCTION_SHARE))
        numbers = {self.doc(number).id: number for number in self.index.resident if self.index.active[number]}
        candidates = best_first(self.doc(number) for number in numbers.values() if applies(self.doc(number), scope))
        shown: set[int] = set()
        spent = 0
        for doc in candidates:
            text = card_text(doc)
            cost = Budget.cost(BULLET + text)
            if spent + cost <= share and self.budget.fits(BULLET + text):
                self.budget.add(BULLET + text)
                spent += cost
                shown.add(numbers[doc.id])
                self.items.append(ContextItem("card", doc.id, text, doc.type, doc.status, resident=True))
        # Those that did not fit their share compete with the other cards, by the same score.
        return shown

    # -- the project's other cards -------------------------------------------------------------------
    def _add_cards(self, scope: str | None, shown: set[int]) -> None:
        from memdream.recall.render import BULLET, card_text

        static, ids = self._static(), self.index.ids
        ranked = sorted((number for number in self.active if number not in shown),
                        key=lambda number: (-static[number], ids[number]))
        keys: set[tuple[str, str]] = set()
        misses = 0
        for number in self._own_first(ranked, scope):
            if misses >= MAX_MISSES or self.budget.room < len(BULLET) + 16:
                break
            doc = self.doc(number)
            if doc.key is not None:
                if doc.key in keys:
                    continue  # one card per fact key, as recall shows them
                keys.add(doc.key)
            partners = [other for other in self._conflict_partners(doc) if self._tier(other, scope) is not None]
            text = card_text(doc, partners if len(partners) > 1 else None)
            if self.budget.fits(BULLET + text):
                self.budget.add(BULLET + text)
                self.items.append(ContextItem("card", doc.id, text, doc.type, doc.status))
                misses = 0
            else:
                misses += 1

    def _own_first(self, ranked: list[int], scope: str | None) -> Iterator[int]:
        """``ranked`` (best first) with the scope's own cards before global and unscoped ones, and no
        other project's; lazily, so that a full budget stops the walk early."""
        shared: list[int] = []
        for number in ranked:
            tier = self._tier(self.doc(number), scope)
            if tier == OWN:
                yield number
            elif tier == SHARED:
                shared.append(number)
        yield from shared

    @staticmethod
    def _tier(doc: CardDoc, scope: str | None) -> int | None:
        """OWN for the scope's own cards, SHARED for global and unscoped ones, None for another project's."""
        from memdream.recall.resident import GLOBAL_SCOPE, scope_key, scopes_of

        if scope is None:
            return OWN
        scopes = scopes_of(doc)
        if scope_key(scope) in scopes:
            return OWN
        return SHARED if not scopes or GLOBAL_SCOPE in scopes else None

    def _conflict_partners(self, doc: CardDoc) -> list[CardDoc]:
        if doc.status != CONFLICTING or doc.key is None:
            return [doc]
        others = (self.index.doc(number) for number in self.index.shared_keys.get(doc.key, []))
        return [doc] + sorted((other for other in others if other.status == CONFLICTING and other.id != doc.id),
                              key=lambda other: other.id)

    def _static(self) -> StaticScores:
        """Recall's query-independent score; for a stable export, at the memory's own clock and with the
        reference counts the cards hold (neither the wall clock nor the usage log moves it)."""
        if not self.stable:
            return self.recaller.static
        from memdream.recall.rank import StaticScores

        newest = max((self.index.epochs[number] for number in self.active), default=0.0)
        meta = self.recaller.meta
        return StaticScores(self.index, meta.weights, newest, meta.half_life_days, {})


# -- the SessionStart hook ---------------------------------------------------------------------------------
SESSION_START = "SessionStart"
HEADER = "From memdream, what earlier sessions learned{project}:"
# The least room a header takes (its text and a short project name): the budget must leave more.
HEADER_ROOM = len(HEADER.encode("utf-8")) + 32
# A hook payload is a few hundred bytes; more is not a hook's.
MAX_PAYLOAD = 1 << 20


@dataclass
class SessionStartResult:
    """What the SessionStart hook prints: Claude Code's hook output with the context."""

    context: StartupContext
    text: str

    def hook_output(self) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": SESSION_START, "additionalContext": self.text}}


def read_hook_payload(raw: bytes) -> dict[str, Any]:
    """The hook's JSON object (session_id, cwd, source, hook_event_name, ...). Errors say what is wrong
    with stdin; the command line says which command read it."""
    from memdream import jsonio
    from memdream.errors import InvalidInput

    if len(raw) > MAX_PAYLOAD:
        raise InvalidInput("stdin is larger than a hook payload")
    try:
        payload = jsonio.loads(raw.decode("utf-8") or "null")
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput(f"stdin is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise InvalidInput("stdin is not a hook payload (a JSON object)")
    event = payload.get("hook_event_name")
    if event is not None and event != SESSION_START:
        raise InvalidInput(f"the hook is {event!r}; install it on SessionStart")
    return payload


def session_start(raw: bytes, explicit: Path | None, budget: int = DEFAULT_BUDGET) -> SessionStartResult | None:
    """The context for the session the hook ``raw`` describes: the memory at ``explicit``, else the one
    found from the session's folder; the project of that folder; at most ``budget`` bytes of text.
    None when there is nothing to inject: an empty memory, or a project the memory knows nothing of
    (a note saying so would cost the session's context and tell it nothing)."""
    import os

    from memdream.memory.locate import find_memory_root

    check_budget(budget, MIN_BUDGET + HEADER_ROOM)
    payload = read_hook_payload(raw)
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and payload.get("cwd") else None
    start = Path(cwd) if cwd is not None and os.path.isdir(cwd) else None
    root = find_memory_root(explicit, start)
    context = build_context(root, budget, cwd=cwd or os.getcwd(), frame=lambda scope: len(
        f"{_header(scope)}\n".encode()))
    if context.empty:
        return None
    body = context.body.rstrip("\n")
    return SessionStartResult(context=context, text=f"{_header(context.project)}\n{body}")


def _header(project: str | None) -> str:
    return HEADER.format(project=f" (project {project})" if project else "")
