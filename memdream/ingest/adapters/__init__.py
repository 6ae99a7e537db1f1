"""Log format adapters. Each turns one input stream into raw events (dicts of raw-events.md).

An adapter is a module with ``NAME``, ``sniff(head) -> bool`` (does this text look like my
format?) and ``parse(lines, ctx) -> Iterator[dict]`` (:mod:`memdream.ingest.adapters.context`).
Adding a format is adding a module, its NAME in :data:`NAMES` and its module in :data:`_MODULES`.
Adapters never redact and never write: the pipeline does both. :class:`ParseContext` is re-exported
here, as adapters' callers name it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from memdream.ingest.adapters.context import ParseContext as ParseContext

# The formats' names, in the order detect() tries them, without importing an adapter: the command line
# lists them at start-up. tests/ingest/test_adapters.py checks them against the registry.
NAMES = ("memdream", "claude-code", "codex", "openai-chat", "aider", "memory-file")


# Format name -> its module, in NAMES's order: each imported only when a file needs it (a memdream-format
# ingest never pays for the transcript adapters' imports and regexes).
_MODULES = {"memdream": "memdream_jsonl", "claude-code": "claude_code", "codex": "codex",
            "openai-chat": "openai_chat", "aider": "aider", "memory-file": "memory_files"}


def adapter(name: str) -> ModuleType:
    """The adapter of format ``name`` (one of :data:`NAMES`), imported on first use."""
    return importlib.import_module(f"memdream.ingest.adapters.{_MODULES[name]}")


def adapters() -> dict[str, ModuleType]:
    """Registry: format name -> adapter module (all of them imported)."""
    return {name: adapter(name) for name in NAMES}


def detect(head: str) -> str | None:
    """The first adapter whose ``sniff`` accepts ``head`` (the input's first few KB), importing each only
    when the ones before it said no."""
    for name in NAMES:
        if adapter(name).sniff(head):
            return name
    return None
