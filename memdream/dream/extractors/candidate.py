"""What an extractor gives: a candidate card's evidence for one fact key; and what an extractor is."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from memdream.dream.model import DreamContext, Episode, FactKey, Piece


@dataclass(frozen=True)
class Candidate:
    """Evidence for the card of ``key`` (shown as ``names``: subject and attribute as written)."""

    key: FactKey
    names: tuple[str, str]
    piece: Piece


class Extractor(Protocol):
    NAME: str
    UNIT: str

    def extract(self, episode: Episode, ctx: DreamContext) -> Iterable[Candidate]: ...
