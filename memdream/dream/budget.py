"""A dream's budget (`dream --max-events`, `--max-seconds`): whole episodes, oldest first, until
the budget is spent; the rest wait in the ledger for the next run, which resumes there.

Time cannot be measured before the work is done, and the stages run over the whole batch at
once, so --max-seconds is turned into events by the speed the last dream measured (seconds per
event, kept in the dream state): an explainable estimate, not a deadline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memdream.dream.ledger import EpisodeKey
from memdream.memory.tags import episode_of

DEFAULT_SECONDS_PER_EVENT = 0.002  # measured on the benchmark machine; replaced by each run's own figure


@dataclass(frozen=True)
class DreamBudget:
    max_events: int | None = None
    max_seconds: float | None = None

    def events_allowed(self, seconds_per_event: float | None) -> int | None:
        """How many events this run may take, None for no limit."""
        limits = []
        if self.max_events is not None:
            limits.append(self.max_events)
        if self.max_seconds is not None:
            limits.append(int(self.max_seconds / max(seconds_per_event or DEFAULT_SECONDS_PER_EVENT, 1e-6)))
        return min(limits) if limits else None


def episode_key(event: dict[str, Any]) -> EpisodeKey:
    return str(event.get("session", "")), episode_of(event.get("tags") or ())


def within(events: list[dict[str, Any]], allowed: int | None) -> tuple[list[dict[str, Any]], list[EpisodeKey]]:
    """The events of the first episodes that fit in ``allowed`` events (at least one episode, so
    that every run makes progress), and the keys of the episodes left for later."""
    if allowed is None or len(events) <= allowed:
        return events, []
    sizes: dict[EpisodeKey, int] = {}
    for event in events:
        key = episode_key(event)
        sizes[key] = sizes.get(key, 0) + 1
    taken: set[EpisodeKey] = set()
    spent = 0
    for key, size in sizes.items():  # in order of first appearance: the oldest episodes first
        if taken and spent + size > allowed:
            break
        taken.add(key)
        spent += size
    kept = [event for event in events if episode_key(event) in taken]
    return kept, [key for key in sizes if key not in taken]
