"""Resident instructions: the user's standing instructions, preferences and corrections, shown on every
recall of the scope they apply to (like the plan), whatever the query.

The question that needs them rarely shares their words ("show me how to implement login" needs
"Always format code with syntax highlighting"), so ranking would never surface them: they are chosen
by scope, not by relevance. A card is resident when it is an active lesson tagged ``instruction``,
``preference`` or ``correction``; it applies to a scope when its ``scope`` (or a ``project:<name>``
tag) names that scope, or is ``global``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

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


def applies(doc: CardDoc, scope: str | None) -> bool:
    """Whether the card is resident in ``scope`` (None: no scope known, every card is)."""
    if scope is None:
        return True
    scopes = scopes_of(doc)
    return GLOBAL_SCOPE in scopes or scope_key(scope) in scopes


def best_first(docs: Iterable[CardDoc]) -> list[CardDoc]:
    """Most confident first, then newest (then by id, for a stable order)."""
    return sorted(docs, key=lambda doc: (-doc.confidence, -doc.epoch, doc.id))


def current_project(cwd: str) -> str | None:
    """The project that ``cwd`` belongs to, named as ingest tags events (``project:<name>``)."""
    from memdream.memory.project import project_name  # lazily: it may run git, only scoped memories ask

    return project_name(cwd)
