"""The context a new session starts with: the plan and the most useful cards of its project, in a budget.

Recall composes it (memdream.recall.engine.Recaller, with the SESSION_START policy of
memdream.recall.policy): there is no question yet, so nothing is ranked by relevance. The plan of the scope
comes first, then the user's standing instructions of the scope (up to half the budget), then the scope's
other cards by recall's query-independent score: the project's own cards first, then global and unscoped
ones; other projects' never. This module frames it: the budget's bounds, the header the SessionStart hook
puts above it (export's block has its own, memdream.integrations.export), the hook's payload and output.

The scope is the project of the session's folder (memdream.memory.project names it as ingest tags
events). A memory whose plan and cards name no project shows everything, as recall does; a memory
that names projects, asked for a project it has no card or plan item of, shows nothing at all: what
it learned is of other projects, and a session of this one is better off without it (the SessionStart
hook then prints nothing).

Two callers: the SessionStart hook (``memdream context --session-start``), which must be fast (the
warm recall index, no YAML, no schemas) and counts no use of the cards it shows (a card shown at every
session start would gain references that say nothing of its use); and ``context --export``, whose
block must be the same bytes for the same memory (idempotent): it ranks at the memory's own clock
(its newest card) and with the reference counts the cards hold, not the usage log that recalls grow
(the policy's ``stable``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdream.recall.render import Item

DEFAULT_BUDGET = 2000
# A budget below this holds no more than a header: refused as a usage error.
MIN_BUDGET = 128
MAX_BUDGET = 65536


@dataclass
class StartupContext:
    """The lines a session starts with (``body``: plan, instructions, cards) and what they are."""

    project: str | None
    budget: int
    body: str
    items: list[Item] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.items

    def to_dict(self) -> dict[str, Any]:
        return {"project": self.project, "budget": self.budget, "body_bytes": len(self.body.encode("utf-8")),
                "items": [_item_dict(item) for item in self.items]}


def _item_dict(item: Item) -> dict[str, Any]:
    """What ``context --format json`` says of an item: what it is and its text (no score: nothing was
    asked; no evidence: the block is for reading)."""
    data: dict[str, Any] = {"source": item.source, "id": item.id}
    if item.type:
        data["type"] = item.type
    if item.status:
        data["status"] = item.status
    if item.resident:
        data["resident"] = True
    data["text"] = item.text
    return data


def check_budget(budget: int, minimum: int = MIN_BUDGET) -> None:
    from memdream.errors import UsageError

    if not minimum <= budget <= MAX_BUDGET:
        raise UsageError(f"--budget must be between {minimum} and {MAX_BUDGET} bytes, not {budget}")


def build_context(root: Path, budget: int = DEFAULT_BUDGET, *, project: str | None = None,
                  cwd: str | None = None, stable: bool = False,
                  frame: Callable[[str | None], int] | None = None) -> StartupContext:
    """The plan and the most useful cards for ``project`` (else the project of ``cwd``) within ``budget``
    bytes, less ``frame(scope)``: the bytes the caller's header takes once the scope is known.
    ``stable``: rank at the memory's own clock and reference counts (for export)."""
    from dataclasses import replace

    from memdream.memory.journal import require_settled
    from memdream.recall.engine import Recaller, RecallOptions
    from memdream.recall.policy import SESSION_START

    check_budget(budget)
    require_settled(root)  # a killed dream's half-written cards are never shown
    policy = replace(SESSION_START, stable=True) if stable else SESSION_START
    recaller = Recaller(root, RecallOptions(budget=budget, scope=project, cwd=cwd), policy)
    try:
        result = recaller.recall("", max(0, budget - (frame(recaller.scope) if frame else 0)))
    finally:
        recaller.close()
    return StartupContext(project=recaller.scope, budget=budget, body=result.context, items=result.items)


# -- the SessionStart hook ---------------------------------------------------------------------------------
SESSION_START = "SessionStart"
HEADER = "From memdream, what earlier sessions learned{project}:"
# The least room a header takes (its text and a short project name): the budget must leave more.
HEADER_ROOM = len(HEADER.encode("utf-8")) + 32
# A hook payload is a few hundred bytes; more is not a hook's.
MAX_PAYLOAD = 1 << 20


@dataclass
class SessionStartResult:
    """What the SessionStart hook prints: Claude Code's hook output with the context."""

    context: StartupContext
    text: str

    def hook_output(self) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": SESSION_START, "additionalContext": self.text}}


def read_hook_payload(raw: bytes) -> dict[str, Any]:
    """The hook's JSON object (session_id, cwd, source, hook_event_name, ...). Errors say what is wrong
    with stdin; the command line says which command read it."""
    from memdream import jsonio
    from memdream.errors import InvalidInput

    if len(raw) > MAX_PAYLOAD:
        raise InvalidInput("stdin is larger than a hook payload")
    try:
        payload = jsonio.loads(raw.decode("utf-8") or "null")
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidInput(f"stdin is not JSON: {error}") from None
    if not isinstance(payload, dict):
        raise InvalidInput("stdin is not a hook payload (a JSON object)")
    event = payload.get("hook_event_name")
    if event is not None and event != SESSION_START:
        raise InvalidInput(f"the hook is {event!r}; install it on SessionStart")
    return payload


def session_start(raw: bytes, explicit: Path | None, budget: int = DEFAULT_BUDGET,
                  tenant: str | None = None) -> SessionStartResult | None:
    """The context for the session the hook ``raw`` describes: the memory at ``explicit`` or of ``tenant``,
    else the one found from the session's folder; the project of that folder; at most ``budget`` bytes of text.
    None when there is nothing to inject: an empty memory, or a project the memory knows nothing of
    (a note saying so would cost the session's context and tell it nothing)."""
    import os

    from memdream.memory.locate import find_memory_root

    check_budget(budget, MIN_BUDGET + HEADER_ROOM)
    payload = read_hook_payload(raw)
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and payload.get("cwd") else None
    start = Path(cwd) if cwd is not None and os.path.isdir(cwd) else None
    root = find_memory_root(explicit, start, tenant)
    context = build_context(root, budget, cwd=cwd or os.getcwd(), frame=lambda scope: len(
        f"{_header(scope)}\n".encode()))
    if context.empty:
        return None
    body = context.body.rstrip("\n")
    return SessionStartResult(context=context, text=f"{_header(context.project)}\n{body}")


def _header(project: str | None) -> str:
    return HEADER.format(project=f" (project {project})" if project else "")
