"""Select: group the new events into episodes and rank them by importance.

importance = w_failure·failure + w_novelty·novelty + w_references·later references + w_recency·recency
(weights in memdream.yaml, dream.selection.weights). The best ``max_episodes`` episodes are
reviewed; the others are consumed without review and counted in the report.
"""

from __future__ import annotations

import math
from typing import Any

from memdream.clock import parse_timestamp
from memdream.dream.model import DreamContext, Episode, FactKey
from memdream.memory.tags import episode_of


def group(events: list[dict[str, Any]]) -> list[Episode]:
    """Episodes in order of first appearance; events inside each keep their stored order."""
    episodes: dict[tuple[str, int], Episode] = {}
    for event in events:
        key = (event["session"], episode_of(event.get("tags") or ()))
        if key not in episodes:
            episodes[key] = Episode(session=key[0], number=key[1], events=[])
        episodes[key].events.append(event)
    return list(episodes.values())


def _failure(episode: Episode) -> float:
    signals = 0.0
    for event in episode.events:
        kind = event["kind"]
        if kind == "tool_result" and event.get("ok") is False:
            signals += 1
        elif kind == "outcome" and event.get("ok") is False:
            signals += 2
        elif kind == "feedback" and event.get("verdict") in ("reject", "correct"):
            signals += 1.5
    return min(1.0, signals / 3)


def _keys(episode: Episode) -> set[FactKey]:
    return {
        FactKey.of(event["fact"]["subject"], event["fact"]["attribute"])
        for event in episode.events if isinstance(event.get("fact"), dict)
    }


def rank(ctx: DreamContext, episodes: list[Episode]) -> None:
    """Set each episode's importance; mark the best ``max_episodes`` as selected."""
    weights = ctx.settings.get("dream.selection.weights")
    half_life = float(ctx.settings.get("dream.selection.recency_half_life_days"))
    now = parse_timestamp(ctx.now)
    known = set(ctx.key_stats) | set(ctx.cards_by_key())
    keys = [_keys(episode) for episode in episodes]
    mentions: dict[FactKey, int] = {}
    for episode_keys in keys:
        for key in episode_keys:
            mentions[key] = mentions.get(key, 0) + 1
    seen_so_far: dict[FactKey, int] = {}
    for episode, episode_keys in zip(episodes, keys):
        novelty = len(episode_keys - known) / len(episode_keys) if episode_keys else 0.0
        for key in episode_keys:
            seen_so_far[key] = seen_so_far.get(key, 0) + 1
        later = sum(mentions[key] - seen_so_far[key] for key in episode_keys)
        age_days = max(0.0, (now - parse_timestamp(episode.events[-1]["ts"])).total_seconds() / 86400)
        recency = math.exp(-math.log(2) * age_days / half_life)
        episode.importance = round(
            weights["failure"] * _failure(episode) + weights["novelty"] * novelty
            + weights["references"] * min(1.0, later / 3) + weights["recency"] * recency, 4)
    budget = int(ctx.settings.get("dream.selection.max_episodes"))
    ordered = sorted(episodes, key=lambda item: (-item.importance, item.session, item.number))
    for position, episode in enumerate(ordered):
        episode.selected = position < budget


def run(ctx: DreamContext) -> None:
    ctx.episodes = group(ctx.events)
    rank(ctx, ctx.episodes)
    ctx.skipped_episodes = sum(1 for episode in ctx.episodes if not episode.selected)
