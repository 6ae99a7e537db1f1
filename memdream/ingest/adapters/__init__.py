"""Log format adapters. Each turns one input stream into raw events (dicts of raw-events.md).

An adapter is a module with ``NAME``, ``sniff(head) -> bool`` (does this text look like my
format?) and ``parse(lines, ctx) -> Iterator[dict]`` (:mod:`memdream.ingest.adapters.context`).
Adding a format is adding a module, one name in :func:`_load` and its NAME in :data:`NAMES`.
Adapters never redact and never write: the pipeline does both. :class:`ParseContext` is re-exported
here, as adapters' callers name it.
"""

from __future__ import annotations

from types import ModuleType

from memdream.ingest.adapters.context import ParseContext as ParseContext

# The formats' names, in the order detect() tries them, without importing an adapter: the command line
# lists them at start-up. tests/ingest/test_adapters.py checks them against the registry.
NAMES = ("memdream", "claude-code", "codex", "openai-chat", "aider", "memory-file")


def _load() -> dict[str, ModuleType]:
    from memdream.ingest.adapters import aider, claude_code, codex, memdream_jsonl, memory_files, openai_chat

    return {module.NAME: module for module in (memdream_jsonl, claude_code, codex, openai_chat, aider, memory_files)}


def adapters() -> dict[str, ModuleType]:
    """Registry: format name -> adapter module (imported on first use)."""
    return _load()


def detect(head: str) -> str | None:
    """The first adapter whose ``sniff`` accepts ``head`` (the input's first few KB)."""
    for name, module in adapters().items():
        if module.sniff(head):
            return name
    return None
