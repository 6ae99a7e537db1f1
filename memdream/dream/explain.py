"""Why not: what one dream run admitted, and each candidate it did not, with the reason and the evidence
(`memdream dream --explain`).

The reasons are the deciding stages' own: admit, induce and verify record a
:class:`~memdream.dream.model.Refusal` where they decide, in words and with the numbers they compared
(the admission score's parts among them). This module only shapes them and quotes a few pieces of each
candidate's evidence. The quotes come from the run's own events, looked up in the episodes of the
sessions they cite (no pass over every event); evidence read by an earlier run is named, not quoted
(`memdream show REF` reads it from the raw layer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdream.dream.model import DreamContext, Piece, Refusal
from memdream.memory.refs import event_ref, parse_ref

if TYPE_CHECKING:
    from memdream.redact import Redactor

MAX_EVIDENCE = 3  # pieces quoted per candidate; the rest are counted
QUOTE_CHARS = 100
QUOTE_WINDOW = 1000  # characters of an event's text redacted for its quote (a tool's output may be long)


@dataclass(frozen=True)
class Quote:
    """One piece of a candidate's evidence: its raw event, its kind, its stance, a short quote."""

    ref: str
    kind: str
    stance: str
    text: str | None  # None: an earlier run's event (not in this run's events)

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "kind": self.kind, "stance": self.stance, "quote": self.text}


@dataclass(frozen=True)
class NotAdmitted:
    subject: str
    attribute: str
    layer: str
    statement: str | None
    reason: str  # short, as the report's not_admitted counts it
    why: str  # in words, with the numbers the rule compared
    score: float | None
    parts: dict[str, float]
    evidence: list[Quote]
    more: int  # pieces of evidence not quoted

    @property
    def key(self) -> str:
        return f"{self.subject} · {self.attribute}"

    def to_dict(self) -> dict[str, Any]:
        return {"key": {"subject": self.subject, "attribute": self.attribute}, "layer": self.layer,
                "statement": self.statement, "reason": self.reason, "why": self.why, "score": self.score,
                "parts": self.parts, "evidence": [quote.to_dict() for quote in self.evidence],
                "more_evidence": self.more}


@dataclass(frozen=True)
class Admitted:
    card: str
    layer: str
    subject: str
    attribute: str | None
    statement: str

    def to_dict(self) -> dict[str, Any]:
        return {"card": self.card, "layer": self.layer, "key": {"subject": self.subject, "attribute": self.attribute},
                "statement": self.statement}


@dataclass
class Explanation:
    """The whole picture of one run's candidates: the new cards, then those left out, by reason and score."""

    admitted: list[Admitted] = field(default_factory=list)
    not_admitted: list[NotAdmitted] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"admitted": [item.to_dict() for item in self.admitted],
                "not_admitted": [item.to_dict() for item in self.not_admitted]}


def explain(ctx: DreamContext) -> Explanation:
    """What the stages of ``ctx`` (already run) admitted and refused; quotes redacted as dream redacts."""
    from memdream.redact import Redactor

    redactor = Redactor.from_settings(ctx.settings)
    shown = {id(refusal): _shown(refusal.pieces) for refusal in ctx.refused}
    events = _events(ctx, {piece.ref for pieces in shown.values() for piece in pieces})
    refused = [_not_admitted(refusal, shown[id(refusal)], events, redactor) for refusal in ctx.refused]
    refused.sort(key=lambda item: (item.reason, -(item.score if item.score is not None else float("-inf")),
                                   item.key.casefold()))
    return Explanation(_admitted(ctx), refused)


def _admitted(ctx: DreamContext) -> list[Admitted]:
    found = []
    for operation in ctx.ops:
        card = ctx.cards.get(operation.card)
        if operation.op == "add" and card is not None:
            found.append(Admitted(card.id, card.type, card.subject, card.attribute, card.statement))
    return found


def _shown(pieces: list[Piece]) -> list[Piece]:
    """The candidate's distinct pieces (by event), oldest first; the newest few are quoted."""
    distinct = {piece.ref: piece for piece in sorted(pieces, key=lambda p: (p.ts, p.ref))}
    return list(distinct.values())


def _events(ctx: DreamContext, refs: set[str]) -> dict[str, dict[str, Any]]:
    """This run's events among ``refs``, read from the episodes of the sessions they name only."""
    wanted: dict[str, set[str]] = {}
    for ref in refs:
        session, event_id = parse_ref(ref)
        wanted.setdefault(session, set()).add(event_id)
    found: dict[str, dict[str, Any]] = {}
    for episode in ctx.episodes:
        ids = wanted.get(episode.session)
        if not ids:
            continue
        for event in episode.events:
            if event.get("id") in ids:
                found[event_ref(episode.session, event["id"])] = event
    return found


def _not_admitted(refusal: Refusal, pieces: list[Piece], events: dict[str, dict[str, Any]],
                  redactor: Redactor) -> NotAdmitted:
    quoted = [Quote(piece.ref, piece.kind, piece.stance, _quote(events.get(piece.ref), redactor))
              for piece in pieces[-MAX_EVIDENCE:]]
    statement = redactor.redact(refusal.statement)[0] if refusal.statement else None
    subject, attribute = refusal.names
    return NotAdmitted(subject, attribute, refusal.layer, statement, refusal.reason, refusal.why, refusal.score,
                       dict(refusal.parts), quoted, max(0, len(pieces) - MAX_EVIDENCE))


def _quote(event: dict[str, Any] | None, redactor: Redactor) -> str | None:
    """A short quote of what the event says: its text, else its error, goal, fact, plan or command."""
    if event is None:
        return None
    fact = event.get("fact")
    said = f"{fact.get('subject')} {fact.get('attribute')}: {fact.get('value')}" if isinstance(fact, dict) else None
    steps = "; ".join(map(str, event["next"])) if isinstance(event.get("next"), list) else None
    command = event["args"].get("command") if isinstance(event.get("args"), dict) else None
    ran = f"$ {' '.join(map(str, command)) if isinstance(command, list) else command}" if command else None
    for text in (event.get("text"), event.get("error"), event.get("goal"), said, steps, ran):
        if isinstance(text, str) and text.strip():
            return _cut(" ".join(redactor.redact(text[:QUOTE_WINDOW])[0].split()), QUOTE_CHARS)
    return ""


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"
