"""What a person should look at (`memdream review`): the cards the last dreams added, cards in
conflict, cards demoted for review, and low-confidence cards that recall handed to an agent; each
with the verdict commands that settle it.

Read only: the audit files of the last runs (run ids start with the run's time, so their names
sort as the runs did), the active cards and the usage log that recall appends to.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.errors import UsageError
from memdream.memory.card import CONFLICTING, Card
from memdream.memory.evidence_log import EVIDENCE_OP

DEFAULT_RUNS = 3
LOW_CONFIDENCE = 0.5
# The order items are listed in: what needs a person most first.
ORDER = {"conflict": 0, "demoted": 1, "low-confidence": 2, "new": 3}


@dataclass
class ReviewItem:
    """One card to look at, why (one reason per finding), and what to run to settle it."""

    card: Card
    reasons: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    run: str | None = None  # the newest run that added or demoted it

    @property
    def urgency(self) -> int:
        return min(ORDER[kind] for kind in self.kinds)

    @property
    def commands(self) -> list[str]:
        card = self.card
        fix = "--value '<the right value>'" if card.type == "fact" else "--note '<the right statement>'"
        return [f"memdream confirm {card.id}", f"memdream reject {card.id}", f"memdream correct {card.id} {fix}"]

    def to_dict(self) -> dict[str, Any]:
        card = self.card
        return {"card": card.id, "type": card.type, "status": card.status, "confidence": card.confidence,
                "subject": card.subject, "attribute": card.attribute, "value": card.value,
                "statement": card.statement, "kinds": self.kinds, "reasons": self.reasons, "run": self.run,
                "commands": self.commands}


@dataclass
class ReviewQueue:
    runs: list[str]  # the runs looked at, newest first
    items: list[ReviewItem]

    def to_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "items": [item.to_dict() for item in self.items]}


def last_runs(audit: Path, count: int) -> list[Path]:
    """The audit files of the newest ``count`` runs, newest first."""
    if count <= 0 or not audit.is_dir():
        return []
    return sorted(audit.glob("*.jsonl"), key=lambda path: path.name, reverse=True)[:count]


def _operations(path: Path) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # lint reports a damaged audit line; review shows what it can read
        if isinstance(entry, dict) and entry.get("op") != EVIDENCE_OP and isinstance(entry.get("card"), str):
            found.append(entry)
    return found


class _Collector:
    def __init__(self, active: dict[str, Card]) -> None:
        self.active = active
        self.items: dict[str, ReviewItem] = {}

    def add(self, card_id: str, kind: str, reason: str, run: str | None = None) -> None:
        card = self.active.get(card_id)
        if card is None:
            return  # archived or superseded since: nothing left to review
        item = self.items.setdefault(card_id, ReviewItem(card))
        if kind in item.kinds:
            return  # the newest run's reason is enough (runs are read newest first)
        item.kinds.append(kind)
        item.reasons.append(reason)
        item.run = item.run or run


def review_queue(root: Path, runs: int = DEFAULT_RUNS) -> ReviewQueue:
    """The cards a person should look at, most pressing first (conflicts, demoted, low confidence
    but recalled, then new cards of the newest runs first)."""
    from memdream.memory.cardcache import load_cards
    from memdream.memory.journal import require_settled
    from memdream.memory.store import Memory
    from memdream.memory.usage import usage_at

    if runs < 0:
        raise UsageError(f"--runs must be 0 or more, not {runs}")
    require_settled(root)
    memory = Memory(root)
    active = {item.card.id: item.card for item in load_cards(memory, include_archive=False) if item.card.is_active}
    collect = _Collector(active)
    files = last_runs(memory.paths.audit, runs)
    for path in files:
        for entry in _operations(path):
            _from_operation(collect, entry, path.stem)
    for card in active.values():
        if card.status == CONFLICTING:
            collect.add(card.id, "conflict", "conflicting: its fact key holds another value too; confirm the right "
                                             "one or correct it")
    recalled = usage_at(memory.paths).counts
    for card in active.values():
        if card.confidence < LOW_CONFIDENCE and recalled.get(card.id, 0) > 0:
            collect.add(card.id, "low-confidence", f"recall returned it {recalled[card.id]} time(s) at confidence "
                                                   f"{card.confidence:.2f}")
    for item in collect.items.values():  # the most pressing reason first
        pairs = sorted(zip(item.kinds, item.reasons), key=lambda pair: ORDER[pair[0]])
        item.kinds, item.reasons = [kind for kind, _ in pairs], [reason for _, reason in pairs]
    items = sorted(collect.items.values(), key=lambda item: item.card.id)
    items.sort(key=lambda item: item.run or "", reverse=True)  # newest run first; stable below
    items.sort(key=lambda item: item.urgency)
    return ReviewQueue([path.stem for path in files], items)


def _from_operation(collect: _Collector, entry: dict[str, Any], run: str) -> None:
    op = entry.get("op")
    if op == "add":
        collect.add(entry["card"], "new", f"new in run {run}: {entry.get('reason', '')}".rstrip(": "), run)
    elif op == "demote":
        collect.add(entry["card"], "demoted", f"demoted in run {run}: {entry.get('reason', '')}".rstrip(": "), run)
