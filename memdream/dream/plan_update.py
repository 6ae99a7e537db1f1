"""Plan: plan.yaml reflects the latest goal, next actions and done items, each with evidence.

The newest ``goal`` event sets the goal (a session's task, as ingest reads it from the user's first
request; a goal that asks for nothing, harness text that an older ingest took for a request, is
passed over: :func:`memdream.harness.request`); a session without one is known by its title (a note
tagged ``title``: Claude Code's ``ai-title`` or ``summary``) when it has one, else by its summary: the
first paragraph of the agent's last message, when the session did some work (a few tool calls) and that
message does not end on a question (a template run as it stands, ``/speckit.tasks`` with no words of
the user's, is known by what it did: "Task plan saved to specs/…/tasks.md"). A first request of a few
plain words ("we were working on the task", "fix it") says less than the user's next one when that
one spells the task out: the goal is then that next request. A slash command the user runs later in
a session (``/publish-session``, after a first request for something else) starts the task the session
ends on: a session's newest command counts as a goal of its own time. The newest ``plan`` event
(a todo list) sets the next actions and adds its done items; a successful ``outcome`` adds its first
sentence to done, unless that sentence ends in a colon (it heads a list, an answer, not work done) or a
question mark, is shorter than three words ("Hi.", "Done."), or is a sub-agent's report to its agent.
Done items drop out of next.

Items carry their scope, the project of the session they came from, so that a memory serving
several projects keeps each project's newest goal (``goals``) and next actions: a newer todo list
replaces the next actions of its own project only.

Only the user and the agent write the plan: an event tagged untrusted-instruction (text from a tool
that reads like an order) never sets the goal, the next actions or a done item, nor does a ``plan``
or ``goal`` event from a tool or the system.
"""

from __future__ import annotations

import re
from typing import Any

from memdream.dream.extractors._events import project_of
from memdream.dream.model import DreamContext, normalize_value
from memdream.harness import command_request, headline, request
from memdream.memory.plan import PlanItem, writes_plan
from memdream.memory.refs import event_ref
from memdream.memory.tags import SIDECHAIN_TAG

MAX_DONE = 30
MAX_DONE_TEXT = 160
MIN_DONE_WORDS = 3  # "Hi.", "Done.": a first sentence this short says nothing of what was done
BARE_REQUEST_WORDS = 6  # a first request this short, without a path or code, names no task by itself
SPELLED_OUT_WORDS = 8  # a later request this long spells the task out
_CODE = re.compile(r"[/`_]|\w[.:#@]\w|\d")  # a path, code, a file name, a number
MIN_REPORTED_WORK = 3  # tool calls: a session that made fewer did nothing its last message could summarize
_MARKUP = re.compile(r"\*\*|__|^#+\s*", re.MULTILINE)
_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s|\n")


def _ref(event: dict[str, Any]) -> list[str]:
    return [event_ref(event["session"], event["id"])]


def _short(text: str) -> str:
    first = _FIRST_SENTENCE.split(text.strip(), maxsplit=1)[0].strip()
    return first if len(first) <= MAX_DONE_TEXT else first[: MAX_DONE_TEXT - 1].rsplit(" ", 1)[0] + "…"


def _add_done(done: list[PlanItem], text: str, evidence: list[str], scope: str | None) -> None:
    if text.strip() and all(normalize_value(item.text) != normalize_value(text) or item.scope != scope
                            for item in done):
        done.append(PlanItem(text.strip(), evidence, scope))


def _goal_text(event: dict[str, Any]) -> str:
    return str(event.get("goal") or event.get("text") or "").strip()


def _goals(ctx: DreamContext, events: list[dict[str, Any]]) -> None:
    goals = [_spelled_out(ctx, event) for event in events
             if (event["kind"] == "goal" or event["kind"] == "plan" and event.get("goal"))
             and request(_goal_text(event))]
    with_goal = {event["session"] for event in goals}
    titled = [event for event in events if event["kind"] == "note" and event["session"] not in with_goal
              and _goal_text(event)]
    titled = _last_of_each_session(titled)
    known = with_goal | {event["session"] for event in titled}
    goals = sorted([*goals, *titled, *_summaries(ctx, known), *_commands(ctx)],
                   key=lambda event: (event["ts"], event["id"]))
    if not goals:
        return
    ctx.plan.goal = _goal_text(goals[-1])
    scoped = {item.scope: item for item in ctx.plan.goals}
    for event in goals:
        scope = project_of(event)
        if scope is not None:
            scoped[scope] = PlanItem(_goal_text(event), _ref(event), scope)
    ctx.plan.goals = sorted(scoped.values(), key=lambda item: item.scope or "")


def _spelled_out(ctx: DreamContext, goal: dict[str, Any]) -> dict[str, Any]:
    """``goal``, or the user's next request of its session when the goal's words are bare and that
    request spells the task out (see the module's docstring)."""
    text = _goal_text(goal)
    if goal["kind"] != "goal" or len(text.split()) > BARE_REQUEST_WORDS or _CODE.search(text):
        return goal
    for message in ctx.requests.get(goal["session"], []):
        asked = request(str(message.get("text") or "")) or ""
        if message["ts"] >= goal["ts"] and asked.strip() != text and len(asked.split()) >= SPELLED_OUT_WORDS:
            return {**message, "kind": "goal", "goal": headline(asked)}
    return goal


def _commands(ctx: DreamContext) -> list[dict[str, Any]]:
    """Each session's newest slash command, as a goal-like event: a command the user runs later in a
    session (``/publish-session``, ``/review``) starts the task the session ends on."""
    found = []
    for command in ctx.commands.values():
        text = command_request(str(command.get("text") or "").strip(),
                               (command.get("meta") or {}).get("command_description"))
        if request(text):
            found.append({**command, "kind": "goal", "goal": headline(text)})
    return found


def _summaries(ctx: DreamContext, known: set[str]) -> list[dict[str, Any]]:
    """For each session of this run with neither a goal nor a title: its summary, as a goal-like
    event (see the module's docstring), or nothing."""
    found = []
    for session, report in ctx.reports.items():
        if session in known or ctx.tool_calls.get(session, 0) < MIN_REPORTED_WORK:
            continue
        text = headline(_MARKUP.sub("", str(report["text"])))
        if text and not text.rstrip("…").rstrip().endswith("?") and request(text):
            found.append({**report, "goal": text})
    return found


def _reports_work(outcome: dict[str, Any]) -> bool:
    """Whether an outcome reports the work of the user's session: the main agent's (a sub-agent's last
    answer is its report to the agent that started it, "Edited only paper.md")."""
    return SIDECHAIN_TAG not in outcome.get("tags", ())


def _last_of_each_session(titles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's newest title (a title changes as the session goes on)."""
    newest: dict[str, dict[str, Any]] = {}
    for event in titles:
        newest[event["session"]] = event
    return list(newest.values())


def _next(ctx: DreamContext, plans: list[dict[str, Any]]) -> None:
    newest: dict[str | None, dict[str, Any]] = {}
    for event in plans:
        if "next" in event or "done" in event:
            newest[project_of(event)] = event
    for scope, event in newest.items():
        items = [PlanItem(text.strip(), _ref(event), scope) for text in event.get("next", []) if text.strip()]
        ctx.plan.next = [item for item in ctx.plan.next if item.scope != scope] + items


def run(ctx: DreamContext) -> None:
    allowed = (event for event in ctx.plan_events if writes_plan(event))
    events = sorted(allowed, key=lambda event: (event["ts"], event["id"]))
    if not events and not ctx.reports:
        return
    plan = ctx.plan
    before = plan.to_dict()
    _goals(ctx, events)
    done = list(plan.done)
    plans = [event for event in events if event["kind"] == "plan"]
    for event in plans:
        for text in event.get("done", []):
            _add_done(done, text, _ref(event), project_of(event))
    for event in events:
        if event["kind"] == "outcome" and event.get("ok") and event.get("text") and _reports_work(event):
            first = _short(event["text"])
            # "Available tools in this session:" heads a list, "Hi." or "Which task?" is no work done
            if not first.endswith((":", "?")) and len(first.split()) >= MIN_DONE_WORDS:
                _add_done(done, first, _ref(event), project_of(event))
    _next(ctx, plans)
    finished = {(normalize_value(item.text), item.scope) for item in done}
    plan.next = [item for item in plan.next if (normalize_value(item.text), item.scope) not in finished]
    plan.done = done[-MAX_DONE:]
    if plan.to_dict() != before:
        plan.updated_at = ctx.now
