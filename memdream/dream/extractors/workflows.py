"""Workflows: the ordered command steps of a session, for the strategies that induce learns.

Per session of this run, one piece of evidence for the key (project, ``workflow: <kind>``):
supporting, with the session's steps, when the session ended well (an ``ok`` outcome, a commit,
or its todo list completed) — or contradicting, with the steps that failed, when it did not.
A step is a successful shell command reduced to its head (``poetry run pytest`` for
``poetry run pytest -q tests/x.py``) with its most common spelling kept for display; commands that
only look (``ls``, ``cat``, ``git status``) are not steps. Which steps recur in enough sessions is
a question about many sessions: the induce stage answers it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memdream.dream.extractors._events import GLOBAL_SCOPE, piece, scope_tags, session_project
from memdream.dream.extractors._runs import LOOKING_SUBCOMMANDS, TEST_RUNNERS, Run, head, looks_only, runs
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey

NAME = "workflow"
UNIT = "session"
STEP_SEPARATOR = "\n"
HEAD_SEPARATOR = "\t"
_DEPLOY = re.compile(r"\b(?:deploy|release|publish|kubectl apply|terraform apply|helm upgrade|fly deploy)\b")
_QUOTED = re.compile(r""""[^"]*"|'[^']*'""")
KINDS = {"commit": "make a change and commit it", "deploy": "deploy", "test": "run the checks"}


def display(command: str) -> str:
    """A command as a step to follow: messages and titles, which differ every time, elided."""
    return _QUOTED.sub('"…"', command)


def _is_step(run: Run) -> bool:
    first = head(run.command)
    return bool(first) and not looks_only(run) and first not in LOOKING_SUBCOMMANDS


def kind_of(commands: list[Run]) -> str | None:
    heads = {head(run.command) for run in commands}
    if "git commit" in heads:
        return "commit"
    if any(_DEPLOY.search(run.command) for run in commands):
        return "deploy"
    if any(TEST_RUNNERS & set(run.words()) or "test" in run.words() for run in commands):
        return "test"
    return None


def ended_well(events: list[dict[str, Any]], commands: list[Run]) -> bool:
    outcomes = [event for event in events if event["kind"] == "outcome" and "ok" in event]
    if outcomes and outcomes[-1]["ok"] is False:
        return False
    plans = [event for event in events if event["kind"] == "plan"]
    finished = bool(plans) and not plans[-1].get("next") and bool(plans[-1].get("done"))
    committed = any(run.ok and head(run.command) == "git commit" for run in commands)
    return bool(outcomes) or committed or finished


def steps(commands: list[Run]) -> list[tuple[str, str]]:
    """(head, display) of each successful step, in the order of its first success."""
    found: dict[str, str] = {}
    for run in commands:
        if run.ok and _is_step(run):
            found.setdefault(head(run.command), display(run.command))
    return list(found.items())


def failed_steps(commands: list[Run]) -> list[tuple[str, str]]:
    """Steps that failed and never succeeded later in the session."""
    last: dict[str, Run] = {}
    for run in commands:
        if _is_step(run):
            last[head(run.command)] = run
    return [(name, display(run.command)) for name, run in last.items() if not run.ok]


def encode(found: list[tuple[str, str]]) -> str:
    return STEP_SEPARATOR.join(f"{name}{HEAD_SEPARATOR}{shown}" for name, shown in found)


def decode(value: str) -> list[tuple[str, str]]:
    pairs = [line.split(HEAD_SEPARATOR, 1) for line in value.split(STEP_SEPARATOR) if HEAD_SEPARATOR in line]
    return [(name, shown) for name, shown in pairs]


def _strategy_steps(ctx: DreamContext) -> dict[str, list[tuple[str, set[str]]]]:
    """Per project, each active strategy's workflow kind and step heads (once per run, not per session)."""
    cached = ctx.memo.get(NAME)
    if cached is None:
        cached = {}
        for card in ctx.active_cards():
            if card.type == "strategy" and card.attribute and card.attribute.startswith("workflow:"):
                heads = {head(step) for step in (card.value or "").split(" → ")}
                cached.setdefault(card.subject, []).append((card.attribute.removeprefix("workflow:").strip(), heads))
        ctx.memo[NAME] = cached
    found: dict[str, list[tuple[str, set[str]]]] = cached
    return found


def _strategies_using(ctx: DreamContext | None, scope: str, failed: list[tuple[str, str]]) -> list[str]:
    """The workflow kinds of this project's active strategies that have one of these steps."""
    if ctx is None:
        return []
    heads = {name for name, _ in failed}
    return sorted(kind for kind, steps in _strategy_steps(ctx).get(scope, []) if heads & steps)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    commands = runs(episode.events)
    scope = session_project(episode.events) or GLOBAL_SCOPE
    good = ended_well(episode.events, commands)
    found = steps(commands) if good else failed_steps(commands)
    if not found:
        return
    kind = kind_of(commands)
    # A failed session counts against the strategies whose steps failed, whatever it set out to do.
    kinds = [kind] if good else sorted({*([kind] if kind else []), *_strategies_using(ctx, scope, found)})
    last = [run for run in commands if run.ok == good][-1] if any(run.ok == good for run in commands) else commands[-1]
    for name in kinds:
        if name is None:
            continue
        attribute = f"workflow: {name}"
        evidence = piece(last.event, encode(found), kind="observation", layer="strategy",
                         statement=KINDS.get(name, name), scope=scope, tags=(*scope_tags(scope), "workflow"),
                         source=NAME, stance="supports" if good else "contradicts")
        yield Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)
