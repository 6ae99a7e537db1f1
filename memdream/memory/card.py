"""Cards: the typed form of one YAML card file, and its stable serialization."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdream.memory.refs import parse_ref

# The order fields are written in; git diffs stay small because it never changes.
CARD_KEY_ORDER = (
    "id", "type", "subject", "attribute", "value", "statement", "scope", "status", "confidence",
    "evidence", "evidence_count", "created_at", "updated_at", "last_verified_at", "ttl_policy", "supersedes",
    "superseded_by", "derived_from", "review", "tags", "importance", "reference_count",
)
EVIDENCE_KEY_ORDER = ("ref", "hash", "stance", "kind", "ts")

# A card shows its newest pieces of evidence; the audit files hold all of them (evidence_log.py).
# Two: what backs the value and how recently, at a glance (~170 bytes each); lint reads the rest.
INLINE_EVIDENCE = 2

# The layers of the memory (card.schema.json "type"; a card's folder is its type's plural).
CARD_TYPES = ("fact", "strategy", "lesson")
# Every status a card can have (card.schema.json "status"); the active ones count for recall and
# for the one-active-card-per-fact-key rule, the others are history.
STATUSES = ("verified", "inferred", "conflicting", "superseded", "archived")
# The statuses by name, for the code that sets and tests them.
VERIFIED, INFERRED, CONFLICTING, SUPERSEDED, ARCHIVED = STATUSES
ACTIVE_STATUSES = frozenset({VERIFIED, INFERRED, CONFLICTING})
INACTIVE_STATUSES = frozenset(STATUSES) - ACTIVE_STATUSES  # superseded, archived: the archive's
STRONG_EVIDENCE_KINDS = frozenset({"observation", "feedback", "outcome"})


@dataclass
class Evidence:
    ref: str
    stance: str = "supports"
    hash: str | None = None
    kind: str | None = None
    ts: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(
            ref=data["ref"], stance=data.get("stance", "supports"), hash=data.get("hash"),
            kind=data.get("kind"), ts=data.get("ts"),
        )

    def to_dict(self) -> dict[str, Any]:
        raw = {"ref": self.ref, "hash": self.hash, "stance": self.stance, "kind": self.kind, "ts": self.ts}
        return {key: raw[key] for key in EVIDENCE_KEY_ORDER if raw[key] is not None}

    @property
    def session(self) -> str:
        """The session part of ``log://<session>#<id>``."""
        return parse_ref(self.ref)[0]

    @property
    def is_strong(self) -> bool:
        return self.kind in STRONG_EVIDENCE_KINDS


@dataclass
class Card:
    id: str
    type: str
    subject: str
    statement: str
    status: str
    confidence: float
    evidence: list[Evidence]
    created_at: str
    updated_at: str
    ttl_policy: str
    attribute: str | None = None
    value: str | None = None
    scope: str | None = None
    last_verified_at: str | None = None
    supersedes: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)
    derived_from: list[str] = field(default_factory=list)
    review: str | None = None
    tags: list[str] = field(default_factory=list)
    importance: float | None = None
    reference_count: int | None = None
    # The count of all pieces of evidence when ``evidence`` holds only the newest (as read from a
    # file); None once ``evidence`` is the full list (as dream builds it).
    evidence_count: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Card:
        """Build from a mapping that already passed the card schema."""
        return cls(
            id=data["id"], type=data["type"], subject=data["subject"], statement=data["statement"],
            status=data["status"], confidence=float(data["confidence"]),
            evidence=[Evidence.from_dict(item) for item in data["evidence"]],
            created_at=data["created_at"], updated_at=data["updated_at"], ttl_policy=data["ttl_policy"],
            attribute=data.get("attribute"), value=data.get("value"), scope=data.get("scope"),
            last_verified_at=data.get("last_verified_at"),
            supersedes=list(data.get("supersedes", [])), superseded_by=list(data.get("superseded_by", [])),
            derived_from=list(data.get("derived_from", [])), review=data.get("review"),
            tags=list(data.get("tags", [])), importance=data.get("importance"),
            reference_count=data.get("reference_count"),
            evidence_count=_hidden_count(data.get("evidence_count"), len(data["evidence"])),
        )

    def to_dict(self) -> dict[str, Any]:
        """The mapping written to disk: fixed key order, empty optionals left out."""
        raw: dict[str, Any] = {
            "id": self.id, "type": self.type, "subject": self.subject, "attribute": self.attribute,
            "value": self.value, "statement": self.statement, "scope": self.scope, "status": self.status,
            "confidence": round(self.confidence, 4),
            "evidence": [item.to_dict() for item in self.evidence[-INLINE_EVIDENCE:]],
            "evidence_count": self.total_evidence if self.total_evidence > INLINE_EVIDENCE else None,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "last_verified_at": self.last_verified_at, "ttl_policy": self.ttl_policy,
            "supersedes": self.supersedes, "superseded_by": self.superseded_by,
            "derived_from": self.derived_from, "review": self.review, "tags": self.tags,
            "importance": self.importance, "reference_count": self.reference_count,
        }
        return {key: raw[key] for key in CARD_KEY_ORDER if raw[key] not in (None, [])}

    def snapshot(self) -> tuple[Any, ...]:
        """Every field as it is now, cheaply: to tell later whether a stage changed the card without
        serializing every card of the memory. Holds the card's lists themselves, not copies, so it
        relies on what every stage does: give a card a new list, never change one in place."""
        return tuple(self.__dict__.values())

    @property
    def total_evidence(self) -> int:
        return self.evidence_count if self.evidence_count is not None else len(self.evidence)

    @property
    def evidence_complete(self) -> bool:
        """Whether ``evidence`` is the full list (else the audit files hold the rest)."""
        return self.evidence_count is None

    @property
    def fact_key(self) -> tuple[str, str] | None:
        """``(subject, attribute)``: at most one active card may hold it."""
        if self.attribute is None:
            return None
        return (self.subject, self.attribute)

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES


def _hidden_count(count: object, inline: int) -> int | None:
    """``evidence_count`` when it says there is more than the inline list, else None (complete)."""
    return count if isinstance(count, int) and count > inline else None
