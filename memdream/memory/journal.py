"""The dream journal: written before a dream touches tracked files, removed once it has committed.

A journal without its commit means a dream was killed halfway: tracked files may be half
swapped in until the next dream puts them back. The dream pipeline and every reader use the
same path and the same check. Kept free of heavy imports: recall checks it on every call.
"""

from __future__ import annotations

import os
from pathlib import Path

from memdream.errors import InterruptedDream
from memdream.memory.paths import STATE_DIR

PENDING_MESSAGE = "an interrupted dream is pending; run `memdream dream` to recover"


def journal_path(root: Path) -> Path:
    """Where the dream journal of the memory at ``root`` lives."""
    return Path(root) / STATE_DIR / "dream" / "journal.json"


def dream_pending(root: Path) -> bool:
    """Whether a killed dream left its journal (one ``stat``: recall's start-up pays for it)."""
    return os.path.exists(journal_path(root))


def require_settled(root: Path) -> None:
    """Readers refuse a memory with an interrupted dream instead of reading half-written files."""
    if dream_pending(root):
        raise InterruptedDream(PENDING_MESSAGE)
