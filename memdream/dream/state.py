"""What dream keeps between runs in .memdream/dream/state.json: the checkpoint (the last raw
segment consumed) and, per fact key, the statistics admission needs.

The state is local and may be lost (a fresh clone). The checkpoint is then read back from the
``Memdream-Consumed`` trailer of the last dream commit, and the statistics are rebuilt from the
consumed raw segments that are present.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream import gitops
from memdream.dream.model import FactKey, KeyStats
from memdream.yamlio import write_atomic

STATE_VERSION = 2  # 2: pieces carry layer, statement, scope, tags, source
CONSUMED_TRAILER = "Memdream-Consumed"
_CONSUMED = re.compile(rf"^{CONSUMED_TRAILER}: segments? \d+\.\.(\d+)$", re.MULTILINE)


@dataclass
class DreamState:
    consumed: int = 0  # the highest raw segment number already dreamed
    key_stats: dict[FactKey, KeyStats] = field(default_factory=dict)
    sessions_seen: set[str] = field(default_factory=set)
    rebuilt: bool = False  # state came from git and raw replay, not from state.json

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "consumed": self.consumed,
            "sessions_seen": sorted(self.sessions_seen),
            "keys": [
                {"subject": key.subject, "attribute": key.attribute, **stats.to_dict()}
                for key, stats in sorted(self.key_stats.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DreamState:
        stats = {
            FactKey(item["subject"], item["attribute"]): KeyStats.from_dict(item) for item in data["keys"]
        }
        return cls(consumed=int(data["consumed"]), key_stats=stats, sessions_seen=set(data["sessions_seen"]))


def state_path(state_dir: Path) -> Path:
    return state_dir / "dream" / "state.json"


def load(state_dir: Path) -> DreamState | None:
    try:
        data = json.loads(state_path(state_dir).read_text(encoding="utf-8"))
        if data.get("version") != STATE_VERSION:
            return None
        return DreamState.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save(state_dir: Path, state: DreamState) -> None:
    write_atomic(state_path(state_dir), json.dumps(state.to_dict(), ensure_ascii=False, sort_keys=True))


def consumed_from_git(root: Path) -> int:
    """The checkpoint recorded in the most recent dream commit, 0 when there is none."""
    if not gitops.is_repo(root):
        return 0
    message = gitops.last_message_matching(root, f"^{CONSUMED_TRAILER}: ")
    match = _CONSUMED.search(message or "")
    return int(match.group(1)) if match else 0


def consumed_trailer(first: int, last: int) -> str:
    return f"segments {first:06d}..{last:06d}"
