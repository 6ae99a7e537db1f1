"""Extract candidates: evidence pieces per fact key, and plan events.

- a ``note`` or ``message`` with a ``fact`` is what the agent believed (weak);
- a successful ``tool_result`` with a ``fact`` is an observation (strong); a failed one observes nothing;
- ``feedback`` with a ``fact`` is the user's correction (strong); ``confirm``/``reject`` of an event
  or a card supports or contradicts that event's value;
- an ``outcome`` with a ``fact`` is strong;
- text tagged untrusted-instruction never becomes evidence, nor a ``fact`` whose words read like an
  instruction (:func:`memdream.injection.reads_like_instruction`) unless the user stated it:
  a raw layer ingested before the check was widened may hold one untagged;
- an event tagged untrusted-instruction never reaches the plan, nor a ``plan`` or ``goal`` event
  that neither the user nor the agent wrote (only they write the plan).

Then the extractors (:mod:`memdream.dream.extractors`) read each selected episode, or session,
for what real transcripts carry without a ``fact`` field: lessons from error → fix, the user's
instructions and corrections, facts stated in prose, workflows. Every candidate's words pass the
redaction rules again (a card must never say what ingest would not have stored).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from memdream.dream.model import DreamContext, Episode, FactKey, KeyStats, Piece, normalize_value
from memdream.injection import reads_like_instruction
from memdream.memory.plan import is_report, is_request, writes_plan
from memdream.memory.raw import event_hash
from memdream.memory.refs import event_ref
from memdream.memory.tags import COMMAND_TAG, UNTRUSTED

if TYPE_CHECKING:
    from memdream.redact import Redactor

FIRST_REQUESTS = 4  # user messages per session kept for the plan to read what a session is for
_KIND_OF_EVENT = {"note": "note", "message": "message", "tool_result": "observation",
                  "feedback": "feedback", "outcome": "outcome", "goal": "note", "plan": "note"}


def _piece(event: dict[str, Any], key_value: str, stance: str, kind: str) -> Piece:
    return Piece(
        ref=event_ref(event["session"], event["id"]), session=event["session"], ts=event["ts"], kind=kind,
        stance=stance, value=key_value, hash=event_hash(event),
        tool_read=kind == "observation",
    )


class _Targets:
    """What a feedback event's ``target`` names: an event of this batch, a cited event, or a card."""

    def __init__(self, ctx: DreamContext) -> None:
        self.ctx = ctx
        self.batch: dict[tuple[str, str], tuple[FactKey, str]] = {}
        self._cited: dict[str, tuple[FactKey, str]] | None = None

    def remember(self, event: dict[str, Any], key: FactKey, value: str) -> None:
        self.batch[(event["session"], event["id"])] = (key, value)

    def lookup(self, session: str, target: str) -> tuple[FactKey, str] | None:
        found = self.batch.get((session, target))
        if found is not None:
            return found
        card = self.ctx.cards.get(target)
        if card is not None and card.attribute is not None and card.value is not None:
            return FactKey.of(card.subject, card.attribute), card.value
        if self._cited is None:  # built once, only when feedback names an older event
            self._cited = self._cited_events()
        return self._cited.get(event_ref(session, target))

    def _cited_events(self) -> dict[str, tuple[FactKey, str]]:
        """The events this batch's feedback names that a card cites in support, shown on the card or
        held by the audit files (only those: keying every event ten thousand cards cite costs O(memory))."""
        named = {event_ref(event["session"], event["target"]) for event in self.ctx.events
                 if event.get("kind") == "feedback" and event.get("target")}
        held = self.ctx.evidence_log()
        cited = {}
        for card in self.ctx.cards.values():
            if card.attribute is None or card.value is None:
                continue
            for evidence in [*held.refs(card.id), *card.evidence]:
                if evidence.stance == "supports" and evidence.ref in named:
                    cited[evidence.ref] = FactKey.of(card.subject, card.attribute), card.value
        return cited


def _corrected_layer(ctx: DreamContext, event: dict[str, Any], key: FactKey, piece: Piece) -> Piece:
    """A person's correction of a lesson or strategy (`memdream correct ID --note ...`) keeps the
    card's layer, scope and tags and says what the note says: without this the corrected value
    would become a fact card with a generated sentence."""
    if event["kind"] != "feedback" or event.get("verdict") != "correct" or not event.get("target"):
        return piece
    card = ctx.cards.get(str(event["target"]))
    if card is None or card.type == "fact" or card.attribute is None or FactKey.of(card.subject, card.attribute) != key:
        return piece
    text = event.get("text") if isinstance(event.get("text"), str) and event["text"].strip() else piece.value
    return dataclasses.replace(piece, layer=card.type, statement=text, scope=card.scope, tags=tuple(card.tags))


def _add(ctx: DreamContext, key: FactKey, names: tuple[str, str], piece: Piece) -> None:
    ctx.pieces.setdefault(key, []).append(piece)
    ctx.key_names.setdefault(key, names)


def _instructs(event: dict[str, Any], fact: dict[str, Any]) -> bool:
    """Whether a fact not stated by the user reads like an order (the user's own rules are trusted)."""
    if event.get("actor") == "user":
        return False
    return any(isinstance(fact.get(name), str) and reads_like_instruction(fact[name])
               for name in ("subject", "attribute", "value"))


def _facts(ctx: DreamContext, event: dict[str, Any], targets: _Targets) -> None:
    kind = event["kind"]
    if UNTRUSTED in event.get("tags", ()):
        return
    fact = event.get("fact")
    if isinstance(fact, dict) and _instructs(event, fact):
        fact = None
    if isinstance(fact, dict) and not (kind == "tool_result" and event.get("ok") is False):
        key = FactKey.of(fact["subject"], fact["attribute"])
        piece = _corrected_layer(ctx, event, key, _piece(event, fact["value"], "supports",
                                                         _KIND_OF_EVENT.get(kind, "note")))
        _add(ctx, key, (fact["subject"].strip(), fact["attribute"].strip()), piece)
        targets.remember(event, key, fact["value"])
    if kind == "feedback" and event.get("target") and event.get("verdict") in ("confirm", "reject", "correct"):
        found = targets.lookup(event["session"], event["target"])
        if found is None:
            return
        key, value = found
        corrected = isinstance(fact, dict) and normalize_value(fact["value"]) != normalize_value(value)
        if event["verdict"] == "confirm" and not corrected:
            _add(ctx, key, (key.subject, key.attribute), _piece(event, value, "supports", "feedback"))
        elif event["verdict"] in ("reject", "correct") or corrected:
            _add(ctx, key, (key.subject, key.attribute), _piece(event, value, "contradicts", "feedback"))


def _update_stats(ctx: DreamContext) -> None:
    """Fold the new evidence into each key's running statistics (for admission). Volatility
    counts tool readings only: notes that disagree are a conflict, not a changing state."""
    for key, pieces in ctx.pieces.items():
        stats = ctx.key_stats.setdefault(key, KeyStats())
        for piece in sorted(pieces, key=lambda item: (item.ts, item.ref)):
            if piece.stance != "supports" or piece.value is None:
                continue
            if piece.session not in stats.sessions:
                stats.sessions.append(piece.session)
            if not piece.tool_read:
                continue
            stats.observations += 1
            if stats.last_value is not None and normalize_value(stats.last_value) != normalize_value(piece.value):
                stats.changes += 1
            stats.last_value = piece.value
            if piece.session not in stats.tool_sessions:
                stats.tool_sessions.append(piece.session)


def _units(ctx: DreamContext, unit: str) -> list[Episode]:
    """The selected episodes, or per session all of its selected events in stored order."""
    selected = [episode for episode in ctx.episodes if episode.selected]
    if unit != "session":
        return selected
    sessions: dict[str, Episode] = {}
    for episode in selected:
        whole = sessions.setdefault(episode.session, Episode(episode.session, episode.number, []))
        whole.events.extend(episode.events)
    return list(sessions.values())


def _redacted(piece: Piece, redactor: Redactor) -> Piece:
    statement, _ = redactor.redact(piece.statement or "")
    value, _ = redactor.redact(piece.value or "")
    if statement == (piece.statement or "") and value == (piece.value or ""):
        return piece
    return dataclasses.replace(piece, statement=statement or None, value=value)


def run_extractors(ctx: DreamContext) -> None:
    from memdream.dream.extractors import registry
    from memdream.redact import Redactor

    redactor = Redactor.from_settings(ctx.settings)
    for module in registry().values():
        for unit in _units(ctx, module.UNIT):
            for candidate in module.extract(unit, ctx):
                _add(ctx, candidate.key, candidate.names, _redacted(candidate.piece, redactor))


def run(ctx: DreamContext) -> None:
    targets = _Targets(ctx)
    for event in ctx.events:
        ctx.sessions_seen.add(event["session"])
    for episode in ctx.episodes:
        if not episode.selected:
            continue
        for event in episode.events:
            _facts(ctx, event, targets)
            if writes_plan(event):
                ctx.plan_events.append(event)
            elif is_report(event):
                ctx.reports[event["session"]] = event
            elif is_request(event):
                if COMMAND_TAG in event.get("tags", ()):
                    ctx.commands[event["session"]] = event
                asked = ctx.requests.setdefault(event["session"], [])
                if len(asked) < FIRST_REQUESTS:
                    asked.append(event)
            elif event["kind"] == "tool_call":
                ctx.tool_calls[event["session"]] = ctx.tool_calls.get(event["session"], 0) + 1
    run_extractors(ctx)
    _update_stats(ctx)
