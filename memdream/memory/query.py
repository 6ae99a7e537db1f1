"""Reading cards for people: listing with filters and finding one by id."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream.errors import MemdreamError, UsageError
from memdream.memory.card import CARD_TYPES, STATUSES, Card
from memdream.memory.store import Memory


@dataclass(frozen=True)
class CardFilter:
    card_type: str | None = None
    status: str | None = None
    subject: str | None = None
    include_archive: bool = False

    def __post_init__(self) -> None:
        if self.card_type is not None and self.card_type not in CARD_TYPES:
            raise UsageError(f"--type must be one of {', '.join(CARD_TYPES)}, not {self.card_type!r}")
        if self.status is not None and self.status not in STATUSES:
            raise UsageError(f"--status must be one of {', '.join(STATUSES)}, not {self.status!r}")

    def accepts(self, card: Card) -> bool:
        return (
            (self.card_type is None or card.type == self.card_type)
            and (self.status is None or card.status == self.status)
            and (self.subject is None or self.subject.lower() in card.subject.lower())
        )


@dataclass(frozen=True)
class ListedCard:
    card: Card
    path: str  # relative to the memory root

    def to_dict(self) -> dict[str, Any]:
        return {**self.card.to_dict(), "path": self.path}


def list_cards(root: Path, card_filter: CardFilter) -> list[ListedCard]:
    """Cards that pass the filter, most recently updated first, then by id."""
    from memdream.memory.cardcache import load_cards  # parses only cards changed since the last run

    memory = Memory(root)
    listed = [
        ListedCard(item.card, memory.paths.relative(item.file.path))
        for item in load_cards(memory, include_archive=card_filter.include_archive)
        if card_filter.accepts(item.card)
    ]
    listed.sort(key=lambda item: item.card.id)
    listed.sort(key=lambda item: item.card.updated_at, reverse=True)
    return listed


class CardNotFound(MemdreamError):
    pass


def find_card(root: Path, card_id: str) -> ListedCard:
    memory = Memory(root)
    for card_file in memory.card_files(include_archive=True):
        if card_file.path.stem == card_id:
            return ListedCard(memory.read_card(card_file), memory.paths.relative(card_file.path))
    raise CardNotFound(f"no card with id {card_id!r} in {root} (see `memdream cards --archived`)")
