"""The central plan file: goal, next actions, done items; each item may name its scope (project)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdream.memory.tags import SIDECHAIN_TAG, TITLE_TAG, UNTRUSTED

PLAN_KEY_ORDER = ("goal", "next", "done", "goals", "updated_at")


@dataclass
class PlanItem:
    text: str
    evidence: list[str] = field(default_factory=list)
    scope: str | None = None  # the project the item belongs to; None: the whole memory

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanItem:
        return cls(text=data["text"], evidence=list(data.get("evidence", [])), scope=data.get("scope"))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text}
        if self.evidence:
            data["evidence"] = self.evidence
        if self.scope:
            data["scope"] = self.scope
        return data


@dataclass
class Plan:
    goal: str
    updated_at: str
    next: list[PlanItem] = field(default_factory=list)
    done: list[PlanItem] = field(default_factory=list)
    goals: list[PlanItem] = field(default_factory=list)  # the newest goal of each scope

    @classmethod
    def empty(cls, updated_at: str) -> Plan:
        return cls(goal="", updated_at=updated_at)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            goal=data["goal"], updated_at=data["updated_at"],
            next=[PlanItem.from_dict(item) for item in data["next"]],
            done=[PlanItem.from_dict(item) for item in data["done"]],
            goals=[PlanItem.from_dict(item) for item in data.get("goals", [])],
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "goal": self.goal,
            "next": [item.to_dict() for item in self.next],
            "done": [item.to_dict() for item in self.done],
        }
        if self.goals:
            data["goals"] = [item.to_dict() for item in self.goals]
        data["updated_at"] = self.updated_at
        return data

    def for_scope(self, scope: str | None) -> tuple[str, list[PlanItem]]:
        """The goal and next actions that apply to ``scope`` (None: the newest overall)."""
        if scope is None:
            return self.goal, list(self.next)
        goal = next((item.text for item in self.goals if item.scope == scope), "")
        if not goal and not self.goals:
            goal = self.goal
        return goal, [item for item in self.next if item.scope in (None, scope)]


def writes_plan(event: dict[str, Any]) -> bool:
    """Whether a raw ``event`` may set the goal, the next actions or a done item: the user and the
    agent write the plan, never text a tool returned that reads like an order."""
    kind = event["kind"]
    if UNTRUSTED in event.get("tags", ()):
        return False
    if kind == "note":
        return TITLE_TAG in event.get("tags", ())  # a session's title: its goal when it has no other
    if kind in ("plan", "goal"):
        return event.get("actor", "agent") in ("user", "agent")
    return kind == "outcome" and bool(event.get("ok"))


def is_report(event: dict[str, Any]) -> bool:
    """Whether a raw ``event`` is the agent telling the user what it did: a message of the main
    agent (not a sub-agent's, not text a tool returned). A session's last one is its summary, the
    goal of a session that has neither a request of the user's own nor a title (a command template
    run as it stands)."""
    tags = event.get("tags", ())
    return (event["kind"] == "message" and event.get("actor") == "agent" and SIDECHAIN_TAG not in tags
            and UNTRUSTED not in tags and bool(str(event.get("text") or "").strip()))


def is_request(event: dict[str, Any]) -> bool:
    """Whether a raw ``event`` is a message of the user in the main session (not a sub-agent's
    prompt, not text a tool returned): what may say, better than a session's first words, what it is for."""
    tags = event.get("tags", ())
    return (event["kind"] == "message" and event.get("actor", "user") == "user" and SIDECHAIN_TAG not in tags
            and UNTRUSTED not in tags and bool(str(event.get("text") or "").strip()))
