"""What recall's usage log says about a card, for the stages that forget: when it was last recalled,
and how to say it in an audit line. The log is ``.memdream/usage.jsonl`` (local, not in git), read
once per dream run."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from memdream.clock import parse_timestamp
from memdream.dream.model import DreamContext
from memdream.memory.card import Card
from memdream.memory.paths import MemoryPaths
from memdream.memory.usage import Usage, usage_at

DEFAULT_IMPORTANCE = 0.5  # a card without ``importance`` is neither important nor not


def usage(ctx: DreamContext) -> Usage:
    """The memory's usage log, read once per run (empty without a state folder or a log)."""
    if "usage" not in ctx.memo:
        state: Path | None = ctx.state_dir
        # state_dir is the memory's .memdream/ folder, so its parent is the memory root.
        ctx.memo["usage"] = usage_at(MemoryPaths(state.parent)) if state is not None else Usage()
    found: Usage = ctx.memo["usage"]
    return found


def last_recall(ctx: DreamContext, card_id: str, now: datetime) -> datetime | None:
    """When a recall last returned the card, never after ``now``; None: not in the local usage log."""
    ts = usage(ctx).last_used.get(card_id)
    if ts is None:
        return None
    try:
        return min(parse_timestamp(ts), now)
    except ValueError:
        return None


def unused_reason(ctx: DreamContext, card: Card, now: datetime) -> str:
    """How long nobody recalled the card, for an audit line."""
    last = last_recall(ctx, card.id, now)
    if last is not None:
        return f"not recalled since {last.date().isoformat()}"
    if card.reference_count:
        return "not recalled in this machine's usage log"  # counted on another clone: when is unknown
    return "never recalled"
