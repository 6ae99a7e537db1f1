"""What dream keeps between runs in .memdream/dream/state.json: the checkpoint (the last raw
segment consumed) and, per fact key, the statistics admission needs.

The per-attribute statistics (volatility learned across subjects) are a sum over the key statistics:
derived on demand by :func:`attribute_stats`, and written to state.json under ``attributes`` only for
people and tools that read the file. So they can never disagree with the key statistics, and a state
saved before they existed (or rebuilt from the raw layer) has them all the same.

The state is local and may be lost (a fresh clone). The checkpoint is then read back from the
``Memdream-Consumed`` trailer of the last dream commit, and the statistics are rebuilt from the
consumed raw segments that are present.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from memdream import gitops, jsonio, yamlio
from memdream.dream.model import AttributeStats, FactKey, KeyStats, normalize_name
from memdream.memory import trailers as trailer
from memdream.memory.paths import dream_state_path

STATE_VERSION = 2  # 2: pieces carry layer, statement, scope, tags, source (last_run, optional, came later)
_CONSUMED = re.compile(rf"^{trailer.CONSUMED}: segments? \d+\.\.(\d+)$", re.MULTILINE)
# A run id starts with the run's clock: 2026-11-07T09-12-03Z-<digest> (memdream.dream.pipeline._run_id).
_RUN_CLOCK = re.compile(rf"^{trailer.RUN}: ([0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})T([0-9]{{2}})-([0-9]{{2}})-([0-9]{{2}})Z",
                        re.MULTILINE)


@dataclass
class DreamState:
    consumed: int = 0  # the highest raw segment number already dreamed
    key_stats: dict[FactKey, KeyStats] = field(default_factory=dict)
    sessions_seen: set[str] = field(default_factory=set)
    rebuilt: bool = False  # state came from git and raw replay, not from state.json
    last_run: str | None = None  # the clock of the dream that saved this state (decay's jump guard)
    seconds_per_event: float | None = None  # the speed of the last dream big enough to measure (budgets)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "consumed": self.consumed,
            **({"last_run": self.last_run} if self.last_run else {}),
            **({"seconds_per_event": self.seconds_per_event} if self.seconds_per_event else {}),
            "sessions_seen": sorted(self.sessions_seen),
            "attributes": {name: summed.to_dict() for name, summed in sorted(attribute_stats(self.key_stats).items())},
            "keys": [
                {"subject": key.subject, "attribute": key.attribute, **stats.to_dict()}
                for key, stats in sorted(self.key_stats.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DreamState:
        # "attributes" is not read back: attribute_stats derives it from the keys (see the module doc).
        stats = {
            FactKey(item["subject"], item["attribute"]): KeyStats.from_dict(item) for item in data["keys"]
        }
        last_run = data.get("last_run")
        speed = data.get("seconds_per_event")
        return cls(consumed=int(data["consumed"]), key_stats=stats, sessions_seen=set(data["sessions_seen"]),
                   last_run=last_run if isinstance(last_run, str) else None,
                   seconds_per_event=float(speed) if isinstance(speed, (int, float)) and speed > 0 else None)


def attribute_stats(key_stats: dict[FactKey, KeyStats]) -> dict[str, AttributeStats]:
    """Per normalized attribute, the tool re-reads and changes of all its subjects' keys."""
    found: dict[str, AttributeStats] = {}
    for key, stats in key_stats.items():
        re_reads = max(0, stats.observations - 1)  # the first tool reading of a key is no re-read
        if re_reads == 0:
            continue
        summed = found.setdefault(normalize_name(key.attribute), AttributeStats())
        summed.re_reads += re_reads
        summed.changes += stats.changes
        summed.subjects += 1
    return found


Stamp = tuple[int, int, int]  # a file's inode, size and mtime: another means another file
# The last_run of the state file this process last read, by its stamp: decay's clock guard asks for it
# (previous_run) in the dream that has just read the state, and parsing its ~600 KB again cost ~40 ms.
_LAST_RUNS: dict[Path, tuple[Stamp, str | None]] = {}


def _stamp(info: os.stat_result) -> Stamp:
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def load(state_dir: Path) -> DreamState | None:
    path = dream_state_path(state_dir)
    try:
        with open(path, encoding="utf-8") as handle:
            stamp = _stamp(os.fstat(handle.fileno()))
            data = _parse(handle.read())
        if data.get("version") != STATE_VERSION:
            return None
        state = DreamState.from_dict(data)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    _LAST_RUNS[path] = (stamp, state.last_run)
    return state


def _saved_last_run(state_dir: Path) -> str | None:
    """The saved state's ``last_run``: from the read that this process made of the same file, if any."""
    path = dream_state_path(state_dir)
    try:
        stamp = _stamp(os.stat(path))
    except OSError:
        return None
    known = _LAST_RUNS.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    saved = load(state_dir)
    return saved.last_run if saved else None


def _parse(text: str) -> Any:
    """The state file's JSON, by orjson: the standard library took ~5 ms of each dream to parse it. Not
    :func:`jsonio.loads`, whose checks (nesting depth, long integers) are for hostile lines and cost more
    than the parse on this file, which is the dream's own."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # raises the standard library's error, which load() turns into None


def save(state_dir: Path, state: DreamState) -> None:
    # Not synced: the state is local and rebuilt from git and raw/ when it is lost or damaged (load).
    # Canonical JSON (keys sorted, orjson): the standard library's dump took ~8 ms of each dream.
    yamlio.write_atomic(dream_state_path(state_dir), jsonio.dumps_canonical(state.to_dict()).decode("utf-8"),
                        sync=False)


def consumed_from_git(root: Path) -> int:
    """The checkpoint recorded in the most recent dream commit, 0 when there is none."""
    if not gitops.is_repo(root):
        return 0
    message = gitops.last_message_matching(root, f"^{trailer.CONSUMED}: ")
    match = _CONSUMED.search(message or "")
    return int(match.group(1)) if match else 0


def last_run_from_git(root: Path) -> str | None:
    """The clock of the most recent dream that committed (its run id), None when there is none."""
    if not gitops.is_repo(root):
        return None
    match = _RUN_CLOCK.search(gitops.last_message_matching(root, f"^{trailer.RUN}: ") or "")
    return "{}T{}:{}:{}Z".format(*match.groups()) if match else None


def previous_run(state_dir: Path) -> str | None:
    """When the last dream ran, by its own clock: the later of the saved state's ``last_run`` and the
    last dream commit (the state is local and may be lost; a dream that changed nothing has no commit)."""
    times = [stamp for stamp in (_saved_last_run(state_dir), last_run_from_git(state_dir.parent)) if stamp]
    return max(times) if times else None


def consumed_trailer(first: int, last: int) -> str:
    return f"segments {first:06d}..{last:06d}"
