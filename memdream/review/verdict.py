"""A person's verdict on a card (`memdream confirm|reject|correct`), recorded as a raw event.

A verdict is a ``feedback`` event with the user's authority, stored through the ordinary ingest
(redaction, dedup, the writer lock) under the shell's session of the day. Nothing here writes a
card: the next dream weighs the verdict like any other evidence, and the precedence of
docs/memory-format.md ("Which evidence wins") makes it stick: a confirmation supports the card's
value, a rejection archives it (and keeps it archived against agent notes and tool readings, see
memdream/dream/verify.py), a correction supersedes it with the value the person gave.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream.clock import now_iso
from memdream.errors import MemdreamError, UsageError
from memdream.memory.card import Card
from memdream.memory.factkey import normalize_value
from memdream.memory.tags import PROJECT_TAG

VERDICTS = ("confirm", "reject", "correct")


@dataclass(frozen=True)
class VerdictRequest:
    """What the person said: the verdict, the card it is about, a corrected value and a note."""

    verdict: str
    card_id: str
    value: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class VerdictResult:
    """What was recorded: the raw event and its ref; ``added`` is False when it was stored already."""

    verdict: str
    card: Card
    event: dict[str, Any]
    ref: str
    added: bool

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "card": self.card.id, "ref": self.ref, "recorded": self.added,
                "event": self.event, "applied_by": "the next `memdream dream`"}


def check(request: VerdictRequest, card: Card) -> None:
    """Refuse a verdict dream could not apply, with one line saying why."""
    if request.verdict not in VERDICTS:
        raise UsageError(f"the verdict must be one of {', '.join(VERDICTS)}, not {request.verdict!r}")
    if request.verdict != "correct" and request.value is not None:
        raise UsageError(f"--value is for `memdream correct`, not `memdream {request.verdict}`")
    if card.attribute is None or card.value is None:
        # Dream finds a verdict's card by its fact key (subject, attribute) and value.
        raise MemdreamError(f"card {card.id} has no attribute and value (written by hand?): dream cannot apply "
                            f"a verdict to it; edit the card instead")
    if request.verdict == "reject" and not card.is_active:
        raise MemdreamError(f"card {card.id} is {card.status} already: nothing to reject")
    if request.verdict == "correct":
        _check_correction(request, card)


def _check_correction(request: VerdictRequest, card: Card) -> None:
    if card.type == "fact" and not (request.value or "").strip():
        raise UsageError(f"card {card.id} is a fact: give its right value with --value")
    if card.type != "fact" and not (request.note or "").strip():
        raise UsageError(f"card {card.id} is a {card.type}: give the corrected statement with --note")
    if normalize_value(corrected_value(request, card)) == normalize_value(card.value or ""):
        raise UsageError(f"{corrected_value(request, card)!r} is the value card {card.id} holds: "
                         f"use `memdream confirm {card.id}`")


def corrected_value(request: VerdictRequest, card: Card) -> str:
    """A fact's new value is --value; a lesson's or strategy's is --value when given, else the note
    (the corrected statement is what the card will say)."""
    if card.type == "fact" or request.value is not None:
        return (request.value or "").strip()
    return (request.note or "").strip()


def build_event(request: VerdictRequest, card: Card, now: str) -> dict[str, Any]:
    """The feedback event of ``request`` (raw-events.md: kind feedback, actor user, verdict, target)."""
    from memdream.ingest.record import cli_session, event_id

    value = corrected_value(request, card) if request.verdict == "correct" else ""
    # The time is part of the id: reject, confirm, reject again the same day are three acts, and
    # the newest must win; recording the very same command twice still stores it once.
    event: dict[str, Any] = {
        "session": cli_session(now), "ts": now, "kind": "feedback", "actor": "user",
        "id": event_id(request.verdict, request.verdict, card.id, value, request.note or "", now),
        "verdict": request.verdict, "target": card.id,
    }
    if request.note:
        event["text"] = request.note.strip()
    if request.verdict == "correct":
        event["fact"] = {"subject": card.subject, "attribute": card.attribute, "value": value}
    if card.scope and card.scope != "global":
        event["tags"] = [f"{PROJECT_TAG}{card.scope}"]  # the verdict belongs to the card's project
    return event


def record_verdict(root: Path, request: VerdictRequest) -> VerdictResult:
    """Record ``request`` as a feedback event in the memory's raw layer; the next dream applies it."""
    from memdream.ingest.record import record
    from memdream.memory.journal import require_settled
    from memdream.memory.query import find_card
    from memdream.memory.store import Memory

    require_settled(root)
    card = find_card(root, request.card_id).card
    check(request, card)
    event = build_event(request, card, now_iso())
    recorded = record(Memory(root), [event])
    return VerdictResult(request.verdict, card, event, recorded.refs[0], recorded.added > 0)
