"""Extractors: what dream learns from the events of an episode, as candidate cards.

An extractor is a module with ``NAME``, ``UNIT`` (``"episode"``: one segment at a time, or
``"session"``: all selected events of one session of this run, for patterns that span segments)
and ``extract(episode, ctx) -> Iterable[Candidate]``. A candidate is a piece of evidence for one
key, carrying the card it would make (layer, statement, scope, tags). Candidates never become
cards here: they pass the same verify, merge and admit gates as every fact. Adding an extractor
is adding a module and one line in :func:`registry`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
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


def registry() -> dict[str, ModuleType]:
    """Extractor name -> module, in the order they run (imported on first use)."""
    from memdream.dream.extractors import errors, instructions, manifests, model, procedures, statements, workflows

    ordered = (errors, instructions, statements, manifests, workflows, procedures, model)
    return {module.NAME: module for module in ordered}
