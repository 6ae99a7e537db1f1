"""Resident instructions: the user's standing instructions, preferences and corrections, shown on every
recall of the scope they apply to (like the plan), whatever the query.

The question that needs them rarely shares their words ("show me how to implement login" needs
"Always format code with syntax highlighting"), so ranking would never surface them: every one of the
scope is a candidate whatever the query, and when the resident share holds only some, those that bear
on the query come first (:func:`bearing_first`: shared words, related tools, the kind of request). A
card is resident when it is an active lesson tagged ``instruction``, ``preference`` or ``correction``;
it applies to a scope when its ``scope`` (or a ``project:<name>`` tag) names that scope, or is
``global``.

When no scope is known in a memory that names projects (recall run from a folder the memory does not
know, without ``--scope``), a project's instructions and plan items are not resident: they are shown
only when they match the query (:func:`open_plan`; instructions are then ranked like any card), and
what applies everywhere (``global``, or no scope at all) stays resident.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
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


# A question about the work itself ("what was I working on last", "what did I do in the last session",
# "where did we leave off"): the plan answers it, whatever words it shares with the plan.
_RECENT_WORK = re.compile(
    r"\b(?:what|which)\b.{0,40}?"
    r"\b(?:work(?:ing|ed)?\s+(?:on|towards?)|doing|did\s+(?:i|we|you)\s+do|task|goal)\b.{0,40}?"
    r"\b(?:last|latest|lately|recent(?:ly)?|current(?:ly)?|now|previous(?:ly)?|today|yesterday)\b"
    r"|\b(?:last|latest|current|previous|most\s+recent)\s+(?:session|task|goal)\b"
    r"|\b(?:left|leave)\s+off\b|\bwhere\s+(?:were|are)\s+we\b",
    re.IGNORECASE)


def asks_about_recent_work(query: str) -> bool:
    """Whether the query asks what the user was working on (see _RECENT_WORK)."""
    return _RECENT_WORK.search(query) is not None


def open_plan(plan_data: dict[str, Any], query: str) -> tuple[str, list[str]]:
    """The plan with no scope known in a memory that names projects: the items that apply everywhere,
    and a project's items only when they match the query; the newest such goal. A question about the
    recent work (:func:`asks_about_recent_work`) that matches no project's goal gets the goal of the
    project it names, else the newest goal of all, with that project's next actions."""
    from memdream.memory.plan import Plan, PlanItem
    from memdream.recall.text import tokenize

    plan = Plan.from_dict(plan_data)
    query_tokens = frozenset(tokenize(query))

    def shown(item: PlanItem) -> bool:
        if not item.scope or scope_key(item.scope) == GLOBAL_SCOPE:
            return True
        held = query_tokens.intersection(tokenize(f"{item.text} {item.scope}"))
        return bool(query_tokens) and len(held) >= PLAN_MATCH * len(query_tokens)

    goal = next((item.text for item in plan.goals if shown(item)), "" if plan.goals else plan.goal)
    scope = None  # a project whose next actions are shown with its goal
    if not goal and asks_about_recent_work(query) and plan.goal:
        named = [item for item in plan.goals
                 if item.scope and query_tokens.issuperset(tokenize(item.scope) or ["\0"])]
        chosen = named[0] if named else next((item for item in plan.goals if item.text == plan.goal), None)
        goal, scope = (chosen.text, chosen.scope) if chosen is not None else (plan.goal, None)
    return goal, [item.text for item in plan.next if shown(item) or (scope and item.scope == scope)]


def known_scopes(plan_data: dict[str, Any], docs: Iterable[CardDoc]) -> set[str]:
    """The projects (scope keys) the plan's goals and next actions and the cards ``docs`` name."""
    items = (*plan_data.get("goals", []), *plan_data.get("next", []))
    known = {scope_key(item["scope"]) for item in items if item.get("scope")}
    known.update(scope for doc in docs for scope in scopes_of(doc))
    return known


def best_first(docs: Iterable[CardDoc]) -> list[CardDoc]:
    """Most confident first, then newest (then by id, for a stable order)."""
    return sorted(docs, key=lambda doc: (-doc.confidence, -doc.epoch, doc.id))


# Words of a standing card that say how strongly or politely it is meant, not what it is about; and words
# of its frame ("In billing-api, the user's standing preference: ...").
_WEAK = ("always never ever don't do not please use prefer preference rather like love hate want make sure "
         "remember from now on going forward future must should instead every time new user's standing "
         "instruction correction rejected said")
# Kinds of request and the words that name them: a request of a kind bears on a standing rule of that kind
# even when they share no word ("Add a library for date formatting" and "Don't add a dependency without
# asking me"). The tools a general word names in a project (memdream.recall.text.RELATED) belong to its kind.
_KINDS = {
    "dependencies": "install dependency package library upgrade bump",
    "version control": "commit push branch merge rebase pull request git main master",
    "testing": "test regression fixture mock coverage bug",
    "writing code": "write implement function class method code refactor helper component type hint",
    "style": "format lint style naming indent",
    "logging": "log logging print debug trace",
    "documentation": "documentation docstring comment readme changelog",
    "deploying": "deploy release production rollout apply",
    "answering": "explain answer reply summary summarize describe",
    "data": "dataframe csv parquet sql",
}
# How much a word held only through its kind, or through a related tool, counts against one held itself.
KIND_WEIGHT, RELATED_WEIGHT = 0.25, 0.5


def _kinds() -> dict[str, frozenset[str]]:
    from memdream.recall.text import RELATED, tokenize

    kinds = {}
    for kind, names in _KINDS.items():
        words = set(tokenize(names))
        words.update(tool for word in list(words) for tool in RELATED.get(word, ()))
        kinds[kind] = frozenset(words)
    return kinds


_KIND_WORDS: dict[str, frozenset[str]] = {}


def kinds_of(tokens: Iterable[str]) -> frozenset[str]:
    """The kinds of request (see _KINDS) that ``tokens`` name."""
    if not _KIND_WORDS:
        _KIND_WORDS.update(_kinds())
    held = frozenset(tokens)
    return frozenset(kind for kind, words in _KIND_WORDS.items() if not words.isdisjoint(held))


def rule_words(doc: CardDoc) -> frozenset[str]:
    """The words of a standing card that say what it is about: the user's quoted words when the statement
    quotes them, without the words of polarity and politeness (see _WEAK) and the project's name."""
    from memdream.recall.text import tokenize

    quoted = doc.statement.partition('"')[2].rpartition('"')[0] or doc.statement
    weak = set(tokenize(_WEAK)) | {token for scope in scopes_of(doc) for token in tokenize(scope)}
    return frozenset(tokenize(quoted)) - weak


def bearing(query_tokens: frozenset[str], words: frozenset[str], weight: dict[str, float]) -> float:
    """How much a standing card (its ``words``) bears on a query: the words they share, a tool the one
    names and the other's general word means (half), and a kind of request they both name (a quarter);
    each word weighs ``weight`` (rarer among the scope's standing cards: more)."""
    from memdream.recall.text import related

    if not query_tokens or not words:
        return 0.0
    shared = query_tokens & words
    near = (frozenset(related(query_tokens)) & words) | (frozenset(related(words)) & query_tokens)
    score = sum(weight.get(token, 1.0) for token in shared)
    score += RELATED_WEIGHT * sum(weight.get(token, 1.0) for token in near - shared)
    if not kinds_of(query_tokens).isdisjoint(kinds_of(words)):
        score += KIND_WEIGHT
    return score


def bearing_first(docs: list[CardDoc], query_tokens: frozenset[str],
                  words: Callable[[CardDoc], frozenset[str]] = rule_words) -> list[CardDoc]:
    """``docs`` (best first) with those that bear on the query first, most first: the question that needs
    a standing rule is rarely the one that names it, so every one of them stays a candidate, but when the
    resident share holds only some, these are the ones it holds."""
    if not query_tokens or len(docs) < 2:
        return docs
    held = [words(doc) for doc in docs]
    frequency: dict[str, int] = {}
    for found in held:
        for token in found:
            frequency[token] = frequency.get(token, 0) + 1
    weight = {token: 1.0 / count for token, count in frequency.items()}
    scores = [bearing(query_tokens, found, weight) for found in held]
    order = sorted(range(len(docs)), key=lambda place: (-scores[place], place))
    return [docs[place] for place in order]


def current_project(cwd: str) -> str | None:
    """The project that ``cwd`` belongs to, named as ingest tags events (``project:<name>``)."""
    from memdream.memory.project import project_name  # lazily: it may run git, only scoped memories ask

    return project_name(cwd)
