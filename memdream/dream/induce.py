"""Induce strategies: the command steps that recur in the sessions of a project that ended well.

For each (project, workflow kind) with new sessions, the newest ``strategy_window`` successful
sessions are compared: a step that appears in at least ``strategy_min_sessions`` of them is part
of the strategy, in the order the sessions run it (median position); detours that appear only
sometimes are left out. Two recurring steps or more make one strategy card per project and kind,
supported by the sessions that ran every step and contradicted by sessions where a step failed.
When the steps start failing (two of the three newest sessions) the card is demoted for review;
when other steps come to recur (the project moved from one tool to another) a new card
supersedes it. Strategies name the lessons they rest on (``derived_from``).

The project's procedures (how it is built, tested, linted, run) recur across sessions too: this
stage runs :mod:`memdream.dream.procedures` for them first.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from memdream.dream import procedures
from memdream.dream.extractors._events import scope_tags
from memdream.dream.extractors._runs import TEST_RUNNERS, head
from memdream.dream.extractors.workflows import KINDS, NAME, decode
from memdream.dream.keys import induced_keys
from memdream.dream.model import DreamContext, FactKey, KeyStats, Operation, Piece, Refusal
from memdream.dream.values import confidence, same_value, status_of
from memdream.dream.versions import SETTLES_AGAINST_USER, card_id, rejections
from memdream.memory.card import ARCHIVED, INFERRED, SUPERSEDED, VERIFIED, Card

HISTORY = 50  # workflow pieces kept per key between runs
_LINTERS = frozenset({"ruff", "flake8", "pylint", "eslint", "mypy", "black", "prettier", "clippy", "golangci-lint"})


@dataclass(frozen=True)
class Induced:
    heads: list[str]
    value: str  # the steps as shown, joined by " → "
    shown: list[str]
    supporters: list[Piece]
    against: list[Piece]


def _history(ctx: DreamContext, key: FactKey) -> list[Piece]:
    stats = ctx.key_stats.setdefault(key, KeyStats())
    pieces = {piece.ref: piece for piece in [*stats.pending, *ctx.pieces.get(key, [])]}
    stats.pending = sorted(pieces.values(), key=lambda p: (p.ts, p.ref))[-HISTORY:]
    return stats.pending


def _label(step: str) -> str:
    words = step.split()
    names = {word.rsplit("/", 1)[-1] for word in words}
    if names & TEST_RUNNERS or "test" in words:
        return " (run the tests)"
    if names & _LINTERS:
        return " (lint)"
    if "install" in words or "sync" in words:
        return " (install dependencies)"
    if words[:2] == ["git", "commit"]:
        return " (commit)"
    return ""


def _recurring(sessions: list[list[tuple[str, str]]], min_sessions: int) -> tuple[list[str], list[str]]:
    """The heads that recur in ``min_sessions`` of ``sessions``, in the order they run, and how each is shown."""
    counts: Counter[str] = Counter()
    positions: dict[str, list[float]] = {}
    spellings: dict[str, Counter[str]] = {}
    for found in sessions:
        for index, (name, shown) in enumerate(found):
            counts[name] += 1
            positions.setdefault(name, []).append(index / max(1, len(found) - 1))
            spellings.setdefault(name, Counter())[shown] += 1
    heads = [name for name, count in counts.items() if count >= min_sessions]
    heads.sort(key=lambda name: (statistics.median(positions[name]), name))
    return heads, [spellings[name].most_common(1)[0][0] for name in heads]


def induce(history: list[Piece], min_sessions: int, window: int) -> Induced | None:
    """The strategy the newest successful sessions agree on. The newest sessions weigh most: when a
    project changed its tools, the longest run of newest sessions that still shares one workflow
    (supported by ``min_sessions`` of them) wins, so the new way replaces the old."""
    good = [piece for piece in history if piece.stance == "supports"][-window:]
    for size in range(len(good), min_sessions - 1, -1):
        newest = good[-size:]
        sessions = [decode(piece.value or "") for piece in newest]
        heads, shown = _recurring(sessions, min_sessions)
        wanted = set(heads)
        supporters = [piece for piece, found in zip(newest, sessions) if wanted <= {name for name, _ in found}]
        if len(heads) < 2 or len(supporters) < min_sessions:
            continue
        against = [piece for piece in history if piece.stance == "contradicts"
                   and wanted & {name for name, _ in decode(piece.value or "")}]
        return Induced(heads, " → ".join(shown), shown, supporters, against)
    return None


def statement(scope: str, kind: str, induced: Induced) -> str:
    steps = "; ".join(f"{number}. `{step}`{_label(step)}" for number, step in enumerate(induced.shown, start=1))
    failed = f", failed in {len(induced.against)}" if induced.against else ""
    where = f"In {scope}, to" if scope != "global" else "To"
    return f"{where} {KINDS.get(kind, kind)}: {steps} (worked in {len(induced.supporters)} sessions{failed})."


def _failing(history: list[Piece], heads: set[str]) -> list[Piece]:
    """The newest sessions' failures of these steps, when they are most of the newest three."""
    newest = history[-3:]
    failed = [piece for piece in newest if piece.stance == "contradicts"
              and heads & {name for name, _ in decode(piece.value or "")}]
    return failed if len(failed) >= 2 else []


# A strategy's evidence is the sessions of its window, not its whole history: it is induced
# anew from them each time (the card shows the newest few; the audit files hold these).
WINDOW_EVIDENCE = 25


def _evidence(induced: Induced) -> list[Piece]:
    return sorted([*induced.supporters, *induced.against], key=lambda p: (p.ts, p.ref))[-WINDOW_EVIDENCE:]


def _derived_from(ctx: DreamContext, scope: str, shown: list[str]) -> list[str]:
    found = []
    for card in ctx.active_cards():
        if card.type == "lesson" and card.scope == scope and "error-fix" in card.tags and card.value:
            if any(card.value in step for step in shown):
                found.append(card.id)
    return sorted(found)


def _fill(ctx: DreamContext, card: Card, key: FactKey, induced: Induced, demoted: bool) -> None:
    pieces = _evidence(induced)
    supports = [piece for piece in pieces if piece.stance == "supports"]
    against = [piece for piece in pieces if piece.stance == "contradicts"]
    kind = key.attribute.removeprefix("workflow:").strip("-: ")
    card.statement = statement(card.scope or "global", kind, induced)
    card.value = induced.value
    card.evidence, card.evidence_count = [piece.evidence() for piece in pieces], None
    card.confidence = confidence(supports, against)
    if demoted:
        card.confidence = round(card.confidence * 0.5, 2)
    min_evidence = int(ctx.settings.get("dream.verify.verified_min_evidence"))
    threshold = float(ctx.settings.get("dream.verify.verified_threshold"))
    card.status = INFERRED if demoted else status_of(supports, against, min_evidence, threshold)
    card.derived_from = _derived_from(ctx, card.scope or "global", induced.shown)
    newest = max((piece.ts for piece in supports), default=None)
    if newest and (card.last_verified_at is None or newest > card.last_verified_at):
        card.last_verified_at = newest


def _new_card(ctx: DreamContext, key: FactKey, induced: Induced) -> Card:
    subject, attribute = ctx.key_names.get(key, (key.subject, key.attribute))
    first = min(induced.supporters, key=lambda p: (p.ts, p.ref)).ref
    card = Card(id=card_id("s", key, induced.value, first, ctx.cards), type="strategy", subject=subject,
                attribute=attribute, value=induced.value, statement=".", scope=subject, status=INFERRED,
                confidence=0.0, evidence=[], created_at=ctx.now, updated_at=ctx.now,
                ttl_policy=str(ctx.settings.get("dream.decay.default_ttl")), tags=[*scope_tags(subject), "workflow"])
    ctx.cards[card.id] = card
    return card


def _rejected(ctx: DreamContext, induced: Induced, archived: list[Card]) -> bool:
    """Whether the user rejected these very steps (`memdream reject`) and no newer word of theirs or
    outcome took it back: sessions that keep repeating a workflow do not outrank the user's verdict."""
    for value, when in rejections(ctx, archived):
        if same_value(value, induced.value, 100):
            return not any(piece.kind in SETTLES_AGAINST_USER and piece.ts > when for piece in induced.supporters)
    return False


def _archived_by_key(ctx: DreamContext, keys: set[FactKey]) -> dict[FactKey, list[Card]]:
    found: dict[FactKey, list[Card]] = {}
    for card in ctx.cards.values():
        if card.type == "strategy" and card.status == ARCHIVED and card.attribute is not None:
            key = FactKey.of(card.subject, card.attribute)
            if key in keys:
                found.setdefault(key, []).append(card)
    return found


def _apply(ctx: DreamContext, key: FactKey, induced: Induced, history: list[Piece], cards: list[Card],
           archived: list[Card]) -> None:
    existing = [card for card in cards if card.type == "strategy"]
    current = existing[0] if existing else None
    if (current is None or not same_value(current.value or "", induced.value, 100)) and _rejected(
            ctx, induced, archived):
        _refuse(ctx, key, "rejected by the user", "these steps are what the user rejected (`memdream reject`), and "
                "no newer word of theirs or outcome took it back", induced.supporters, induced)
        return
    refs = [piece.ref for piece in induced.supporters[-5:]]
    if current is not None and same_value(current.value or "", induced.value, 100):
        before, old = current.confidence, current.to_dict()
        failing = _failing(history, set(induced.heads))
        _fill(ctx, current, key, induced, demoted=bool(failing))
        if current.to_dict() == old:
            return
        current.updated_at = ctx.now
        if failing:
            current.review = f"its steps failed in {len(failing)} of the newest sessions: re-check before relying on it"
            ctx.record(Operation("demote", current.id, current.review, [p.ref for p in failing], before,
                                 current.confidence))
        else:
            ctx.record(Operation("update", current.id, "new sessions", refs, before, current.confidence))
        return
    card = _new_card(ctx, key, induced)
    _fill(ctx, card, key, induced, demoted=False)
    reason = f"steps that recur in {len(induced.supporters)} sessions: {induced.value}"
    ctx.record(Operation("add", card.id, reason, refs, None, card.confidence))
    if current is not None:
        current.status, current.superseded_by = SUPERSEDED, sorted({*current.superseded_by, card.id})
        current.updated_at = ctx.now
        card.supersedes = sorted({*card.supersedes, current.id})
        ctx.record(Operation("supersede", card.id, f"the workflow changed: {current.value!r} -> {card.value!r}",
                             refs, current.confidence, card.confidence, cards=[current.id]))


def _demote_failing(ctx: DreamContext, history: list[Piece], cards: list[Card]) -> None:
    """A strategy whose steps now fail, with nothing recurring to replace it yet, is flagged."""
    for card in cards:
        if card.type != "strategy" or card.status != VERIFIED:
            continue
        failing = _failing(history, {head(step) for step in (card.value or "").split(" → ")})
        if not failing:
            continue
        before = card.confidence
        card.status, card.confidence, card.updated_at = INFERRED, round(card.confidence * 0.5, 2), ctx.now
        card.review = f"its steps failed in {len(failing)} of the newest sessions: re-check before relying on it"
        ctx.record(Operation("demote", card.id, card.review, [p.ref for p in failing], before, card.confidence))


def _refuse(ctx: DreamContext, key: FactKey, reason: str, why: str, pieces: list[Piece],
            induced: Induced | None = None) -> None:
    """No strategy card for this key: counted and kept with its reason (`memdream dream --explain`)."""
    names = ctx.key_names.get(key, (key.subject, key.attribute))
    kind = key.attribute.removeprefix("workflow:").strip("-: ")
    shown = statement(names[0], kind, induced) if induced is not None else None
    ctx.refuse(Refusal(key, names, reason, f"{reason}: {why}", pieces, layer="strategy", statement=shown))


def run(ctx: DreamContext) -> None:
    min_sessions = int(ctx.settings.get("dream.learn.strategy_min_sessions"))
    window = int(ctx.settings.get("dream.learn.strategy_window"))
    procedures.run(ctx)
    keys = [key for key in induced_keys(ctx) if any(piece.source == NAME for piece in ctx.pieces[key])]
    by_key = ctx.cards_by_key() if keys else {}  # once: each key's cards are its own to change
    archived = _archived_by_key(ctx, set(keys)) if keys else {}
    for key in keys:
        history = _history(ctx, key)
        induced = induce(history, min_sessions, window)
        cards = by_key.get(key, [])
        if induced is None or not induced.supporters:
            _demote_failing(ctx, history, cards)
            if not cards:
                good = sum(1 for piece in history if piece.stance == "supports")
                _refuse(ctx, key, "no recurring workflow", f"{good} session(s) that ended well; a strategy needs two "
                        f"steps or more shared by {min_sessions} of the newest {window} "
                        f"(dream.learn.strategy_min_sessions)", history)
            continue
        _apply(ctx, key, induced, history, cards, archived.get(key, []))
