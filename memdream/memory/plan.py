"""The central plan file: goal, next actions, done items."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PLAN_KEY_ORDER = ("goal", "next", "done", "updated_at")


@dataclass
class PlanItem:
    text: str
    evidence: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanItem:
        return cls(text=data["text"], evidence=list(data.get("evidence", [])))

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "evidence": self.evidence} if self.evidence else {"text": self.text}


@dataclass
class Plan:
    goal: str
    updated_at: str
    next: list[PlanItem] = field(default_factory=list)
    done: list[PlanItem] = field(default_factory=list)

    @classmethod
    def empty(cls, updated_at: str) -> Plan:
        return cls(goal="", updated_at=updated_at)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            goal=data["goal"], updated_at=data["updated_at"],
            next=[PlanItem.from_dict(item) for item in data["next"]],
            done=[PlanItem.from_dict(item) for item in data["done"]],
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "goal": self.goal,
            "next": [item.to_dict() for item in self.next],
            "done": [item.to_dict() for item in self.done],
            "updated_at": self.updated_at,
        }
