"""Extractors: what dream learns from the events of an episode, as candidate cards.

An extractor is a module with ``NAME``, ``UNIT`` (``"episode"``: one segment at a time, or
``"session"``: all selected events of one session of this run, for patterns that span segments)
and ``extract(episode, ctx) -> Iterable[Candidate]`` (:mod:`memdream.dream.extractors.candidate`).
A candidate is a piece of evidence for one key, carrying the card it would make (layer, statement,
scope, tags). Candidates never become
cards here: they pass the same verify, merge and admit gates as every fact. Adding an extractor
is adding a module and one line in :func:`registry`.
"""

from __future__ import annotations

from types import ModuleType


def registry() -> dict[str, ModuleType]:
    """Extractor name -> module, in the order they run (imported on first use)."""
    from memdream.dream.extractors import (
        aider,
        commands,
        error_fix,
        instructions,
        language_model,
        manifests,
        procedures,
        statements,
        workflows,
    )

    ordered = (error_fix, instructions, statements, manifests, aider, workflows, procedures, commands, language_model)
    return {module.NAME: module for module in ordered}
