"""The cards a context with no question shows (memdream.recall.policy.SESSION_START): every active card of
the scope in the order of recall's query-independent score (memdream.recall.rank.StaticScores: recency,
references, confidence), the scope's own cards first, then global and unscoped ones, another project's
never; one card per fact key, conflicting values shown together, as recall shows them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memdream.recall.render import Item, card_text
from memdream.recall.resident import GLOBAL_SCOPE, scope_key, scopes_of

if TYPE_CHECKING:
    from memdream.recall.engine import Recaller
    from memdream.recall.index import CardDoc

OWN, SHARED = 0, 1  # the tiers of the cards: the scope's own, then global and unscoped


def standing_items(recaller: Recaller, shown: set[str]) -> Iterator[Item]:
    """The scope's cards as items, best first, but none of ``shown`` (ids): lazily, so that a full budget
    stops the walk early (cards are unpickled one by one when looked at)."""
    cards, scope = recaller.cards, recaller.scope
    keys: set[tuple[str, str]] = set()
    for number in _own_first(recaller, shown):
        doc = recaller.doc(number)
        if doc.key is not None:
            if doc.key in keys:
                continue  # one card per fact key
            keys.add(doc.key)
        partners = [other for other in cards.conflict_partners(doc) if tier(other, scope) is not None]
        yield Item(source="card", id=doc.id, type=doc.type, status=doc.status, ts=doc.ts,
                   text=card_text(doc, partners if len(partners) > 1 else None), evidence=list(doc.evidence))


def _own_first(recaller: Recaller, shown: set[str]) -> list[int]:
    """The active cards, none of ``shown``, by the query-independent score: the scope's own before global
    and unscoped ones, and no other project's (told by the index's scopes: no card is unpickled or scored
    for it)."""
    cards, static, scope = recaller.cards, recaller.static, recaller.scope
    if scope is None:
        tiers = [[number for number, flag in enumerate(cards.active) if flag]]
    else:
        own = set(cards.scoped.get(scope_key(scope), ()))
        shared = {*cards.scoped.get(GLOBAL_SCOPE, ()), *cards.scoped.get("", ())} - own
        tiers = [list(own), list(shared)]
    ranked: list[int] = []
    for numbers in tiers:
        ranked += sorted((number for number in numbers if cards.ids[number] not in shown),
                         key=lambda number: (-static[number], cards.ids[number]))
    return ranked


def tier(doc: CardDoc, scope: str | None) -> int | None:
    """OWN for the scope's own cards (every card when there is no scope), SHARED for global and unscoped
    ones, None for another project's."""
    if scope is None:
        return OWN
    scopes = scopes_of(doc)
    if scope_key(scope) in scopes:
        return OWN
    return SHARED if not scopes or GLOBAL_SCOPE in scopes else None
