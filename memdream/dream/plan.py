"""Plan: plan.yaml reflects the latest goal, next actions and done items, each with evidence.

The newest ``goal`` event sets the goal; the newest ``plan`` event sets the next actions and adds
its done items; a successful ``outcome`` adds its summary to done. Done items drop out of next.
"""

from __future__ import annotations

from typing import Any

from memdream.dream.model import DreamContext, normalize_value
from memdream.memory.plan import PlanItem
from memdream.memory.raw import event_ref

MAX_DONE = 30


def _ref(event: dict[str, Any]) -> list[str]:
    return [event_ref(event["session"], event["id"])]


def _add_done(done: list[PlanItem], text: str, evidence: list[str]) -> None:
    if text.strip() and all(normalize_value(item.text) != normalize_value(text) for item in done):
        done.append(PlanItem(text.strip(), evidence))


def run(ctx: DreamContext) -> None:
    if not ctx.plan_events:
        return
    plan = ctx.plan
    before = plan.to_dict()
    events = sorted(ctx.plan_events, key=lambda event: (event["ts"], event["id"]))
    goals = [event for event in events if event["kind"] == "goal" or (event["kind"] == "plan" and event.get("goal"))]
    if goals:
        latest = goals[-1]
        plan.goal = str(latest.get("goal") or latest.get("text") or plan.goal).strip()
    done = list(plan.done)
    plans = [event for event in events if event["kind"] == "plan"]
    for event in plans:
        for text in event.get("done", []):
            _add_done(done, text, _ref(event))
    for event in events:
        if event["kind"] == "outcome" and event.get("ok") and event.get("text"):
            _add_done(done, event["text"], _ref(event))
    if plans and "next" in plans[-1]:
        plan.next = [PlanItem(text.strip(), _ref(plans[-1])) for text in plans[-1]["next"] if text.strip()]
    finished = {normalize_value(item.text) for item in done}
    plan.next = [item for item in plan.next if normalize_value(item.text) not in finished]
    plan.done = done[-MAX_DONE:]
    if plan.to_dict() != before:
        plan.updated_at = ctx.now
