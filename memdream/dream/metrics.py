"""Before/after figures of a dream run: active cards, files, bytes, conflicts, archive, confidence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from memdream.memory.card import CONFLICTING, SUPERSEDED, Card

BINS = ("0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0")


@dataclass
class Metrics:
    active_cards: int = 0
    files: int = 0
    bytes: int = 0
    conflicts: int = 0
    superseded: int = 0
    archived: int = 0
    confidence: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BINS, 0))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure(cards: Iterable[tuple[Card, int]], fixed_bytes: int, fixed_files: int) -> Metrics:
    """``cards`` with the size of their file; ``fixed_*`` count the plan and the index."""
    metrics = Metrics(files=fixed_files, bytes=fixed_bytes)
    for card, size in cards:
        metrics.files += 1
        if card.is_active:
            metrics.active_cards += 1
            metrics.bytes += size
            metrics.conflicts += card.status == CONFLICTING
            metrics.confidence[BINS[min(4, int(card.confidence * 5))]] += 1
        elif card.status == SUPERSEDED:
            metrics.superseded += 1
        else:
            metrics.archived += 1
    return metrics
