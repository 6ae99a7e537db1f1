"""What the dream stages share: evidence pieces, episodes, operations and the run's context."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.memory.card import ACTIVE_STATUSES, STRONG_EVIDENCE_KINDS, Card, Evidence
from memdream.memory.evidence_log import EvidenceLog
from memdream.memory.factkey import FactKey as FactKey
from memdream.memory.factkey import normalize_name as normalize_name
from memdream.memory.factkey import normalize_value as normalize_value
from memdream.memory.plan import Plan
from memdream.memory.settings import Settings

# How much one piece of evidence is worth, by kind. Tool observations, user feedback and
# outcomes are external verification ("strong"); what the agent noted or said is not.
WEIGHT = {"observation": 0.6, "feedback": 0.7, "outcome": 0.6, "note": 0.3, "message": 0.2, "plan": 0.2}
STRONG = STRONG_EVIDENCE_KINDS

@dataclass(frozen=True)
class Piece:
    """One piece of evidence about one fact key: an event supporting or contradicting a value."""

    ref: str
    session: str
    ts: str
    kind: str
    stance: str
    value: str | None
    hash: str | None = None
    tool_read: bool = False  # a tool read this attribute: the state is observable
    # A failure that happened again in the same session before its fix worked (error -> fix): the
    # earlier occurrence, cited as evidence; it makes a one-session lesson recurring (admission).
    recurred: bool = False
    # What the card made from this piece looks like, when an extractor says more than a value:
    # its layer (fact, lesson, strategy), its sentence, its scope (project) and tags, and which
    # extractor found it (admission rules differ by source).
    layer: str = "fact"
    statement: str | None = None
    scope: str | None = None
    tags: tuple[str, ...] = ()
    source: str | None = None

    @property
    def strong(self) -> bool:
        return self.kind in STRONG

    @property
    def weight(self) -> float:
        return WEIGHT.get(self.kind, 0.2)

    def evidence(self, stance: str | None = None) -> Evidence:
        return Evidence(ref=self.ref, stance=stance or self.stance, hash=self.hash, kind=self.kind, ts=self.ts)

    def to_dict(self) -> dict[str, Any]:
        data = {key: value for key, value in self.__dict__.items() if value not in (None, False, ())}
        if data.get("layer") == "fact":
            del data["layer"]
        if "tags" in data:
            data["tags"] = list(data["tags"])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Piece:
        return cls(**{**data, "tags": tuple(data.get("tags", ()))})


@dataclass
class Episode:
    """A segment of one session's trace (as tagged by ingest), the unit that selection ranks."""

    session: str
    number: int
    events: list[dict[str, Any]]
    importance: float = 0.0
    selected: bool = True

    @property
    def key(self) -> tuple[str, int]:
        return (self.session, self.number)


@dataclass
class Operation:
    """One line of the audit file."""

    op: str  # add, update, merge, supersede, archive, demote, conflict
    card: str
    reason: str
    evidence: list[str] = field(default_factory=list)
    confidence_before: float | None = None
    confidence_after: float | None = None
    cards: list[str] = field(default_factory=list)

    def to_dict(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = {"run": run_id, "op": self.op, "card": self.card}
        if self.cards:
            data["cards"] = self.cards
        data.update(reason=self.reason, evidence=self.evidence,
                    confidence_before=self.confidence_before, confidence_after=self.confidence_after)
        return data


@dataclass
class KeyStats:
    """What dream remembers about a fact key between runs, card or not (for admission)."""

    observations: int = 0
    changes: int = 0
    last_value: str | None = None
    sessions: list[str] = field(default_factory=list)  # sessions that mention the key
    tool_sessions: list[str] = field(default_factory=list)  # sessions in which a tool read it
    pending: list[Piece] = field(default_factory=list)  # evidence of a key that is not (yet) a card

    def to_dict(self) -> dict[str, Any]:
        return {
            "observations": self.observations, "changes": self.changes, "last_value": self.last_value,
            "sessions": self.sessions, "tool_sessions": self.tool_sessions,
            "pending": [piece.to_dict() for piece in self.pending],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeyStats:
        return cls(
            observations=data["observations"], changes=data["changes"], last_value=data.get("last_value"),
            sessions=list(data["sessions"]), tool_sessions=list(data["tool_sessions"]),
            pending=[Piece.from_dict(item) for item in data.get("pending", [])],
        )


@dataclass
class AttributeStats:
    """The tool readings of one attribute summed over all its subjects: a key read once cannot show
    that it changes, its attribute can (the cpu-load of ten services re-read and changed each time)."""

    re_reads: int = 0  # tool readings of a key that had a tool reading before
    changes: int = 0  # re-reads whose value differed from that key's previous reading
    subjects: int = 0  # subjects re-read at least once

    def to_dict(self) -> dict[str, Any]:
        return {"re_reads": self.re_reads, "changes": self.changes, "subjects": self.subjects}


@dataclass
class Refusal:
    """A candidate key that did not become a card this run, and why, in the words of the stage that
    decided (`memdream dream --explain` shows them). It holds the candidate's pieces by reference:
    recording one costs no copy of its evidence and no pass over the events."""

    key: FactKey
    names: tuple[str, str]  # subject and attribute as shown
    reason: str  # the short reason, as ``DreamContext.not_admitted`` counts it
    why: str  # the same in words a user reads, with the numbers the rule compared
    pieces: list[Piece]
    layer: str = "fact"
    statement: str | None = None  # what the card would have said
    score: float | None = None  # the admission score, when the score decided
    parts: dict[str, float] = field(default_factory=dict)  # its parts: value, observable, size, ...


@dataclass
class DreamContext:
    """Everything one dream run reads and changes, in memory. Stages mutate it; nothing else."""

    now: str
    run_id: str
    settings: Settings
    cards: dict[str, Card]  # every card, active and archived, by id
    plan: Plan
    events: list[dict[str, Any]]  # the new (unconsumed) events, in stored order
    key_stats: dict[FactKey, KeyStats]
    sessions_seen: set[str]
    episodes: list[Episode] = field(default_factory=list)
    pieces: dict[FactKey, list[Piece]] = field(default_factory=dict)  # new evidence per key
    key_names: dict[FactKey, tuple[str, str]] = field(default_factory=dict)  # display subject/attribute
    plan_events: list[dict[str, Any]] = field(default_factory=list)
    # Per session of this run: its last report (the agent's last message) and how many tool calls it made.
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # the first few user messages
    commands: dict[str, dict[str, Any]] = field(default_factory=dict)  # the newest slash command the user ran
    tool_calls: dict[str, int] = field(default_factory=dict)
    proposals: dict[FactKey, Any] = field(default_factory=dict)  # new keys awaiting admission (versions.Proposal)
    not_admitted: dict[str, int] = field(default_factory=dict)  # reason -> keys kept out of memory
    refused: list[Refusal] = field(default_factory=list)  # those keys, each with its reason and evidence
    recent_ops: list[dict[str, Any]] = field(default_factory=list)  # earlier runs' audit lines, for INDEX.md
    ops: list[Operation] = field(default_factory=list)
    index_text: str = ""
    memo: dict[str, Any] = field(default_factory=dict)  # views of the run's cards that stages derive once
    skipped_episodes: int = 0
    # One line each about what went wrong but did not stop the run (an extractor that failed).
    warnings: list[str] = field(default_factory=list)
    # The memory's local, untracked state folder (.memdream/): where extractors may cache; None: no cache.
    state_dir: Path | None = None
    # The memory's audit folder, where the evidence that cards do not show is held; None: nowhere.
    audit_dir: Path | None = None

    def evidence_log(self) -> EvidenceLog:
        """The evidence the audit files hold, read once per run (only when a stage needs it)."""
        log: EvidenceLog | None = self.memo.get("evidence_log")
        if log is None:
            cache = self.state_dir / "cache" if self.state_dir is not None else None
            log = EvidenceLog.load(self.audit_dir, cache) if self.audit_dir is not None else EvidenceLog({})
            self.memo["evidence_log"] = log
        return log

    def full_evidence(self, card: Card) -> list[Evidence]:
        """The card's whole evidence list, read from the audit files once, and kept on the card:
        a stage that changes a card's evidence must start from all of it."""
        if card.evidence_complete:
            return card.evidence
        full = self.evidence_log().of(card)
        if len(full) < card.total_evidence:
            self.warnings.append(f"card {card.id}: the audit files hold {len(full)} of its {card.total_evidence} "
                                 f"pieces of evidence (run `memdream lint`)")
        card.evidence, card.evidence_count = full, None
        return full

    def active_cards(self) -> list[Card]:
        return [card for card in self.cards.values() if card.is_active]

    def cards_by_key(self) -> dict[FactKey, list[Card]]:
        """The active fact cards by key, built afresh (stages change statuses between calls). Only the
        cards added since the last call are keyed (a card's names never change in a dream, no stage
        removes a card, and a dict keeps the order cards were added in): keying ten thousand cards on
        each of the six calls a run makes would cost more than an incremental dream's real work; what
        is left per call is one status test a card."""
        keyed: list[tuple[Card, FactKey]] = self.memo.setdefault("keyed_cards", [])
        counted: int = self.memo.get("keyed_count", 0)
        if counted > len(self.cards):  # a card was taken out after all: key them all again
            keyed.clear()
            counted = 0
        if counted != len(self.cards):
            added = itertools.islice(self.cards.values(), counted, None)
            keyed += [(card, FactKey.of(card.subject, card.attribute)) for card in added if card.attribute is not None]
            self.memo["keyed_count"] = len(self.cards)
        found: dict[FactKey, list[Card]] = {}
        for card, key in keyed:
            if card.status in ACTIVE_STATUSES:
                found.setdefault(key, []).append(card)
        return found

    def record(self, operation: Operation) -> None:
        self.ops.append(operation)

    def refuse(self, refusal: Refusal) -> None:
        """Keep a candidate out of memory: counted by its reason, kept with its evidence."""
        self.not_admitted[refusal.reason] = self.not_admitted.get(refusal.reason, 0) + 1
        self.refused.append(refusal)
