"""Resident instructions: the user's standing instructions, preferences and corrections, shown on every
recall of the scope they apply to (like the plan), whatever the query.

The question that needs them rarely shares their words ("show me how to implement login" needs
"Always format code with syntax highlighting"), so ranking would never surface them: they are chosen
by scope, not by relevance. A card is resident when it is an active lesson tagged ``instruction``,
``preference`` or ``correction``; it applies to a scope when its ``scope`` (or a ``project:<name>``
tag) names that scope, or is ``global``.

When no scope is known in a memory that names projects (recall run from a folder the memory does not
know, without ``--scope``), a project's instructions and plan items are not resident: they are shown
only when they match the query (:func:`open_plan`; instructions are then ranked like any card), and
what applies everywhere (``global``, or no scope at all) stays resident.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memdream.memory.tags import PROJECT_TAG

if TYPE_CHECKING:
    from memdream.recall.index import CardDoc

RESIDENT_TAGS = frozenset({"instruction", "preference", "correction"})
GLOBAL_SCOPE = "global"


def is_resident(card_type: str, tags: Iterable[str]) -> bool:
    """A lesson tagged as a standing instruction (its status is checked by the index: active only)."""
    return card_type == "lesson" and not RESIDENT_TAGS.isdisjoint(tags)


def scope_key(scope: str) -> str:
    """Scopes compare without case or surrounding blanks: "MyApp" asked finds "myapp" written."""
    return scope.strip().casefold()


def scopes_of(doc: CardDoc) -> frozenset[str]:
    """The scopes a card names: its ``scope`` and its ``project:<name>`` tags."""
    named = [tag[len(PROJECT_TAG):] for tag in doc.tags if tag.startswith(PROJECT_TAG)]
    if doc.scope:
        named.append(doc.scope)
    return frozenset(scope_key(name) for name in named if name.strip())


def is_scoped(doc: CardDoc) -> bool:
    """Whether the card applies to some projects only (not everywhere)."""
    return bool(scopes_of(doc) - {GLOBAL_SCOPE})


def applies(doc: CardDoc, scope: str | None, open_scope: bool = False) -> bool:
    """Whether the card is resident in ``scope``; with no scope (None), every card is, or with
    ``open_scope`` (no scope known in a memory that names projects) those that apply everywhere."""
    if scope is None:
        return not (open_scope and is_scoped(doc))
    scopes = scopes_of(doc)
    return GLOBAL_SCOPE in scopes or scope_key(scope) in scopes


# A project's plan item is shown with no scope known when it holds at least this share of the query's
# words (its text and its project's name): as a card must to be shown rather than raw events.
PLAN_MATCH = 0.5


def open_plan(plan_data: dict[str, Any], query_tokens: frozenset[str]) -> tuple[str, list[str]]:
    """The plan with no scope known in a memory that names projects: the items that apply everywhere,
    and a project's items only when they match the query; the newest such goal."""
    from memdream.memory.plan import Plan, PlanItem
    from memdream.recall.text import tokenize

    plan = Plan.from_dict(plan_data)

    def shown(item: PlanItem) -> bool:
        if not item.scope or scope_key(item.scope) == GLOBAL_SCOPE:
            return True
        held = query_tokens.intersection(tokenize(f"{item.text} {item.scope}"))
        return bool(query_tokens) and len(held) >= PLAN_MATCH * len(query_tokens)

    goal = next((item.text for item in plan.goals if shown(item)), "" if plan.goals else plan.goal)
    return goal, [item.text for item in plan.next if shown(item)]


def known_scopes(plan_data: dict[str, Any], docs: Iterable[CardDoc]) -> set[str]:
    """The projects (scope keys) the plan's goals and next actions and the cards ``docs`` name."""
    items = (*plan_data.get("goals", []), *plan_data.get("next", []))
    known = {scope_key(item["scope"]) for item in items if item.get("scope")}
    known.update(scope for doc in docs for scope in scopes_of(doc))
    return known


def best_first(docs: Iterable[CardDoc]) -> list[CardDoc]:
    """Most confident first, then newest (then by id, for a stable order)."""
    return sorted(docs, key=lambda doc: (-doc.confidence, -doc.epoch, doc.id))


def current_project(cwd: str) -> str | None:
    """The project that ``cwd`` belongs to, named as ingest tags events (``project:<name>``)."""
    from memdream.memory.project import project_name  # lazily: it may run git, only scoped memories ask

    return project_name(cwd)
