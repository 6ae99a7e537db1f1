"""Whether a dream is needed now, from the memory's state alone, and why (`memdream dream --if-needed`).

The rule (docs/scheduling.md):

    dream  <=>  recovery  or  (pending and idle and (waiting or threshold or schedule))

- pending: raw events after the dream checkpoint (counted from the manifest records, no segment read),
  or events an earlier dream left waiting (the dream ledger: a budget's deferred episodes, a
  `rollback --redream`);
- waiting: there are such events: the dream that left them is resumed without waiting for a threshold;
- threshold: pending events >= ``min_pending_events`` (N), or active cards marked conflicting
  >= ``min_conflicts`` (M);
- idle: no agent activity for ``idle_minutes`` (T);
- schedule: the last dream ran ``max_hours_between`` (H) hours ago or more, or never;
- recovery: a killed dream left its journal (readers refuse until a dream recovers it).

Each setting lives under ``dream.triggers``; null turns its trigger off (an idle of null is always
idle). With N, M and H all null, any pending event is enough.

Activity is the newest raw event ingested, but never later than its ingest (a clock ahead or a
future-dated event cannot keep the memory busy), and the newest hook still queued in the spool.
Not the time of the ingest itself: the scheduled job ingests the spool just before it asks
whether to dream, so by ingest time that job could never dream, and an agent whose sessions end
once per interval would never look idle. Old logs ingested now are not an agent writing now.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.clock import format_timestamp, now, parse_timestamp
from memdream.memory.paths import INDEX_FILE, LAYERS, dream_state_path
from memdream.memory.raw import RawLayer, SegmentRecord
from memdream.memory.store import Memory

if TYPE_CHECKING:
    from memdream.dream.pipeline import DreamReport

RULE = "recovery or (pending and idle and (waiting or threshold or schedule))"
SETTINGS = "dream.triggers"


@dataclass(frozen=True)
class TriggerSettings:
    """``dream.triggers``; None turns a trigger off."""

    min_pending_events: int | None
    min_conflicts: int | None
    idle_minutes: float | None
    max_hours_between: float | None

    @classmethod
    def of(cls, memory: Memory) -> TriggerSettings:
        section: dict[str, Any] = memory.settings.get(SETTINGS)
        return cls(section.get("min_pending_events"), section.get("min_conflicts"), section.get("idle_minutes"),
                   section.get("max_hours_between"))

    @property
    def unconditional(self) -> bool:
        """No threshold and no schedule set: any pending event is enough."""
        return self.min_pending_events is None and self.min_conflicts is None and self.max_hours_between is None


@dataclass
class Trigger:
    """One condition: whether it holds, why (a sentence with its values and thresholds), its values."""

    name: str
    holds: bool
    reason: str
    values: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"holds": self.holds, "reason": self.reason, **self.values}


@dataclass
class Decision:
    dream: bool
    fired: list[str]  # the triggers that made the dream needed (empty when none did)
    reason: str  # one line: what fired, or what did not hold
    triggers: dict[str, Trigger]
    now: str

    def to_dict(self) -> dict[str, Any]:
        return {"dream_needed": self.dream, "fired": self.fired, "reason": self.reason, "rule": RULE, "now": self.now,
                "triggers": {name: trigger.to_dict() for name, trigger in self.triggers.items()}}


@dataclass
class IfNeededResult:
    decision: Decision
    report: DreamReport | None = None  # the dream's, when one ran

    def to_dict(self) -> dict[str, Any]:
        decided = self.decision.to_dict()
        del decided["dream_needed"]  # the same as "dreamed" here: a needed dream is run
        data: dict[str, Any] = {"dreamed": self.report is not None, **decided}
        if self.report is not None:
            data["dream"] = self.report.to_dict()
        return data


def dream_if_needed(memory: Memory, **dream_options: Any) -> IfNeededResult:
    """Dream (as `memdream dream` does, with ``dream_options`` passed on) when a trigger holds;
    otherwise touch nothing."""
    decision = evaluate(memory)
    if not decision.dream:
        return IfNeededResult(decision)
    from memdream.dream.pipeline import dream

    return IfNeededResult(decision, dream(memory, **dream_options))


def evaluate(memory: Memory, at: datetime | None = None) -> Decision:
    """Which triggers hold at ``at`` (default: the clock), read cheaply from the memory's files."""
    moment = at or now()
    settings = TriggerSettings.of(memory)
    records = RawLayer(memory.paths).manifest()
    checkpoint = _checkpoint(memory)
    pending = pending_trigger(records, checkpoint, _waiting(memory))
    events = int(pending.values["events"])
    triggers = {
        "recovery": recovery_trigger(memory),
        "pending": pending,
        "threshold": threshold_trigger(memory, settings, events),
        "idle": idle_trigger(memory, settings, records, moment),
        "schedule": schedule_trigger(memory, settings, moment),
    }
    return _decide(triggers, settings, format_timestamp(moment))


def _decide(triggers: dict[str, Trigger], settings: TriggerSettings, moment: str) -> Decision:
    if triggers["recovery"].holds:
        return Decision(True, ["recovery"], f"dream needed: recovery ({triggers['recovery'].reason})", triggers,
                        moment)
    pending, idle = triggers["pending"], triggers["idle"]
    fired = [name for name in ("threshold", "schedule") if triggers[name].holds]
    if pending.values["waiting"]:
        fired.insert(0, "waiting")
    elif settings.unconditional and pending.holds:
        fired = ["pending"]
    if not pending.holds:
        return Decision(False, [], f"no dream: {pending.reason}", triggers, moment)
    if not fired:
        why = "; ".join(triggers[name].reason for name in ("threshold", "schedule"))
        return Decision(False, [], f"no dream: neither threshold nor schedule holds ({why})", triggers, moment)
    if not idle.holds:
        verb = "holds" if len(fired) == 1 else "hold"
        return Decision(False, [], f"no dream yet: {' and '.join(fired)} {verb}, but not idle: {idle.reason}",
                        triggers, moment)
    what = "; ".join(triggers["pending" if name == "waiting" else name].reason for name in fired)
    return Decision(True, fired, f"dream needed: {', '.join(fired)} ({what}); {idle.reason}", triggers, moment)


# -- the triggers --------------------------------------------------------------------------------

def recovery_trigger(memory: Memory) -> Trigger:
    from memdream.memory.journal import dream_pending

    if dream_pending(memory.root):
        return Trigger("recovery", True, "an interrupted dream left its journal: a dream recovers it")
    return Trigger("recovery", False, "no interrupted dream")


def pending_trigger(records: list[SegmentRecord], checkpoint: int, waiting: int = 0) -> Trigger:
    """New events after the checkpoint, and ``waiting``: parts (an episode, or segments) an earlier
    dream left for the next one, below the checkpoint (counted as parts: their events are not read)."""
    new = [record for record in records if _number(record.segment) > checkpoint]
    events = sum(record.events for record in new)
    values = {"events": events, "segments": len(new), "checkpoint": checkpoint, "waiting": waiting}
    left = f"; {waiting} part(s) left waiting by an earlier dream" if waiting else ""
    if not events and not waiting:
        return Trigger("pending", False, f"nothing pending (no raw event after segment {checkpoint:06d})", values)
    return Trigger("pending", True, f"{events} event(s) pending in {len(new)} segment(s) after segment "
                                    f"{checkpoint:06d}{left}", values)


def threshold_trigger(memory: Memory, settings: TriggerSettings, events: int) -> Trigger:
    minimum = settings.min_pending_events
    by_events = minimum is not None and events >= minimum
    parts = [f"{events} pending event(s) {'>=' if by_events else '<'} {minimum}" if minimum is not None
             else "min_pending_events off"]
    values: dict[str, Any] = {"events": events, "min_pending_events": minimum, "conflicts": None,
                              "min_conflicts": settings.min_conflicts, "conflicts_from": None}
    by_conflicts = False
    if settings.min_conflicts is None:
        parts.append("min_conflicts off")
    elif by_events or not events:  # counting them could not change the outcome: spare the card read
        parts.append("conflicting cards not counted")
    else:
        conflicts, values["conflicts_from"] = count_conflicts(memory)
        values["conflicts"] = conflicts
        by_conflicts = conflicts >= settings.min_conflicts
        parts.append(f"{conflicts} conflicting card(s) {'>=' if by_conflicts else '<'} {settings.min_conflicts}")
    return Trigger("threshold", by_events or by_conflicts, ", ".join(parts), values)


def idle_trigger(memory: Memory, settings: TriggerSettings, records: list[SegmentRecord], moment: datetime) -> Trigger:
    activity, source = last_activity(memory, records, moment)
    minimum = settings.idle_minutes
    minutes = None if activity is None else round((moment - activity).total_seconds() / 60, 1)
    values = {"minutes": minutes, "idle_minutes": minimum,
              "last_activity": format_timestamp(activity) if activity else None, "source": source}
    if minimum is None:
        return Trigger("idle", True, "idle_minutes off: idleness not required", values)
    if activity is None or minutes is None:
        return Trigger("idle", True, "no agent activity recorded", values)
    holds = minutes >= minimum
    return Trigger("idle", holds, f"last agent activity {_minutes(minutes)} ago {'>=' if holds else '<'} "
                                  f"{_minutes(minimum)}: {source}", values)


def schedule_trigger(memory: Memory, settings: TriggerSettings, moment: datetime) -> Trigger:
    last = last_dream(memory)
    hours = None if last is None else round((moment - parse_timestamp(last)).total_seconds() / 3600, 2)
    maximum = settings.max_hours_between
    values = {"hours": hours, "max_hours_between": maximum, "last_dream": last}
    if maximum is None:
        return Trigger("schedule", False, "max_hours_between off", values)
    if hours is None:
        return Trigger("schedule", True, "no dream yet", values)
    holds = hours >= maximum
    return Trigger("schedule", holds, f"last dream {_hours(hours)} ago {'>=' if holds else '<'} {_hours(maximum)}",
                   values)


# -- reading the memory's state ------------------------------------------------------------------

def _saved_state(memory: Memory) -> dict[str, Any] | None:
    """state.json's top level, when it is of the version dream writes (read as dream's load() does,
    without building its per-key statistics: only the checkpoint and the last run are wanted)."""
    from memdream.dream import state as state_mod

    try:
        data = json.loads(dream_state_path(memory.paths.state).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("version") == state_mod.STATE_VERSION else None


def _waiting(memory: Memory) -> int:
    """Entries of the dream ledger waiting for the next dream (episodes a budgeted dream deferred,
    runs released by `rollback --redream`)."""
    from memdream.dream import ledger

    return len(ledger.load(memory.paths.state, memory.root).waiting())


def _checkpoint(memory: Memory) -> int:
    """The last raw segment dreamed: the local state's, else the last dream commit's trailer."""
    saved = _saved_state(memory)
    if saved is not None and isinstance(saved.get("consumed"), int):
        return int(saved["consumed"])
    from memdream.dream.state import consumed_from_git

    return consumed_from_git(memory.root)


def last_dream(memory: Memory) -> str | None:
    """When the last dream ran by its clock: the later of the local state's (which counts dreams
    that changed nothing) and the last dream commit's (the state may be lost)."""
    from memdream.dream.state import last_run_from_git

    saved = _saved_state(memory)
    stamps = [stamp for stamp in ((saved or {}).get("last_run"), last_run_from_git(memory.root))
              if isinstance(stamp, str)]
    return max(stamps, key=parse_timestamp) if stamps else None


def count_conflicts(memory: Memory) -> tuple[int, str]:
    """Active cards marked conflicting, and where they were counted: INDEX.md when no card file or
    card folder changed after dream wrote it (one line per active card, its status shown), else the
    card cache (which unpickles every card: ~0.5 CPU-s for 10,000)."""
    from_index = _index_conflicts(memory)
    if from_index is not None:
        return from_index, INDEX_FILE
    from memdream.memory.card import CONFLICTING
    from memdream.memory.cardcache import load_cards

    return sum(1 for item in load_cards(memory, include_archive=False) if item.card.status == CONFLICTING), "cards"


# An INDEX.md line of a conflicting card, as memdream.dream.index_file._line writes it.
_INDEX_CONFLICT = re.compile(r"^- \[[^\]]+\]\([^)]+\) \(conflicting\) ", re.MULTILINE)


def _index_conflicts(memory: Memory) -> int | None:
    """The count INDEX.md gives, None when it may be stale (a card or folder changed after it)."""
    try:
        written = os.stat(memory.paths.index).st_mtime_ns
        for layer in LAYERS:
            folder = memory.paths.cards / layer
            if not folder.is_dir():
                continue
            if os.stat(folder).st_mtime_ns > written:  # a card added, moved or deleted since
                return None
            with os.scandir(folder) as entries:
                if any(entry.stat().st_mtime_ns > written for entry in entries):
                    return None
        text = memory.paths.index.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return len(_INDEX_CONFLICT.findall(text))


def last_activity(memory: Memory, records: list[SegmentRecord], moment: datetime) -> tuple[datetime | None, str | None]:
    """The newest sign of an agent at work, and where it was seen."""
    found: list[tuple[datetime, str]] = []
    for record in records:
        stamp = _segment_activity(record)
        if stamp is not None:
            found.append((stamp, f"newest event of raw segment {record.segment}"))
    queued = _spool_activity(memory.paths.state)
    if queued is not None:
        found.append((queued, "a hook queued in the spool, not yet ingested"))
    if not found:
        return None, None
    stamp, source = max(found, key=lambda item: item[0])
    return min(stamp, moment), source  # a clock ahead of ours is activity now, not in the future


def _segment_activity(record: SegmentRecord) -> datetime | None:
    stamps = []
    for text in (record.last_ts, record.created_at):
        try:
            stamps.append(parse_timestamp(text))
        except (TypeError, ValueError):
            continue
    return min(stamps) if stamps else None  # an event is never newer than its ingest


def _spool_activity(state_dir: Path) -> datetime | None:
    from memdream.ingest.spool import SPOOL_FILE

    newest: datetime | None = None
    for path in state_dir.glob(f"{SPOOL_FILE}*"):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            stamp: datetime | None
            try:
                stamp = parse_timestamp(json.loads(line)["received_at"])
            except (ValueError, KeyError, TypeError):
                stamp = _mtime(path)  # a line cut by a crash: the file's time still says when
            if stamp is not None and (newest is None or stamp > newest):
                newest = stamp
    return newest


def _mtime(path: Path) -> datetime | None:
    try:
        return datetime.fromtimestamp(os.stat(path).st_mtime).astimezone()
    except OSError:
        return None


def _number(segment: str) -> int:
    stem = segment.split(".")[0]
    return int(stem) if stem.isdigit() else 0


def _minutes(value: float) -> str:
    return f"{value:g} min" if value < 120 else f"{value / 60:.1f} h"


def _hours(value: float) -> str:
    if value < 1:
        return _minutes(round(value * 60, 1))
    return f"{value:g} h" if value < 72 else f"{timedelta(hours=value).days} d"
