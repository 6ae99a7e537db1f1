"""Which stage owns a fact key: the induce stage compares the keys of workflows and procedures across
sessions (a strategy is about many sessions at once); verify folds every other key's evidence."""

from __future__ import annotations

from memdream.dream.extractors.procedures import NAME as PROCEDURE
from memdream.dream.extractors.workflows import NAME as WORKFLOW
from memdream.dream.model import DreamContext, FactKey

INDUCED_SOURCES = frozenset({WORKFLOW, PROCEDURE})


def induced_keys(ctx: DreamContext) -> list[FactKey]:
    """The keys the induce stage decides: those with a workflow or procedure piece."""
    return sorted(key for key, pieces in ctx.pieces.items() if any(piece.source in INDUCED_SOURCES for piece in pieces))
