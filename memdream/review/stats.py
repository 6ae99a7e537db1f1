"""`memdream stats`: what a memory holds and how its dreams have been going, in figures.

Read only, and cheap on a large memory: cards come from the card cache (parsed only where a file
changed), the raw layer is counted from ``raw/MANIFEST.jsonl`` and a ``stat`` per segment (never event
by event), usage from the usage log's cached counts, dreams from the audit files on disk (a rollback
removes its run's file, so what is there are the runs that stand; no git needed, a clone works).

- **Active memory** is what recall and agents read: the active cards (verified, inferred, conflicting),
  ``plan.yaml`` and ``INDEX.md``; its bytes are dream's own measure (:func:`memdream.dream.metrics.measure`).
  **Tokens** are estimated as bytes / 4, rounded up: the usual rule of thumb for English and YAML with
  a BPE tokenizer (code and non-Latin text take more tokens per byte; this is an estimate, not a count).
- **Redundancy**: pairs of active cards of one type and subject whose statements are the same value in
  dream's sense (:func:`memdream.dream.values.same_value` at the merge threshold
  ``dream.merge.similarity_threshold``: near-identical wording, exactly the same numbers), plus pairs of
  any subjects with the very same statement. No pass compares every card with every other: cards are
  first grouped by a blocking key (type, normalized subject, the numbers of the statement: same_value
  never matches two statements with different numbers) and only cards of one group are compared, with
  rapidfuzz's C loop; identical statements across subjects are found by a dictionary. Two cards of one
  fact key are no redundancy: they are a conflict. Near-duplicates in two differently named subjects
  are not looked for.
- **Staleness**: active cards with ``ttl_policy: decay-<N>d`` last verified (``last_verified_at``, else
  ``updated_at``) more than N days before now (``MEMDREAM_NOW`` honoured); a time in the future counts as
  now. Decay demotes and archives such cards at the next dream (conflicting ones wait for a person).
- **Usage**: the share of active cards that a recall returned within the last ``days`` days, from
  ``.memdream/usage.jsonl``; a copy of the memory without that log (a fresh clone) has no figure, not 0 %.
- **Dreams**: per run (the newest ``runs`` audit files), its operations by kind and its corrections:
  supersedes (a value replaced by a better-backed one, a person's `memdream correct` included) plus
  archives of values the user rejected (`memdream reject`).
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.clock import format_timestamp, now, parse_timestamp
from memdream.errors import UsageError
from memdream.memory.card import ACTIVE_STATUSES, CARD_TYPES, INACTIVE_STATUSES, STATUSES, Card
from memdream.memory.evidence_log import AUDIT_OP, EVIDENCE_OP
from memdream.memory.factkey import normalize_name, normalize_value
from memdream.memory.paths import MemoryPaths
from memdream.review.history import OPS, is_forget_audit, parse_audit_line

if TYPE_CHECKING:
    from memdream.memory.cardcache import CachedCard
    from memdream.memory.store import Memory

DEFAULT_DAYS = 30
DEFAULT_RUNS = 10
BYTES_PER_TOKEN = 4
EXAMPLES = 10  # redundant pairs and stale cards listed by id; the counts cover all of them
# The operations of an audit file, in the order people read them (memdream log's).
_REJECTED = "rejected by user feedback"  # an archive's reason when a person rejected the value
_DIGITS = re.compile(r"\d+")
_TTL = re.compile(r"^decay-(\d+)d$")


@dataclass
class Tally:
    """Cards of one side of the memory (active or archived), by type and by status."""

    total: int = 0
    by_type: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CARD_TYPES, 0))
    by_status: dict[str, int] = field(default_factory=dict)

    def count(self, card: Card) -> None:
        self.total += 1
        self.by_type[card.type] = self.by_type.get(card.type, 0) + 1
        self.by_status[card.status] = self.by_status.get(card.status, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "by_type": self.by_type, "by_status": self.by_status}


@dataclass
class DreamFigures:
    """One dream run, from its audit file."""

    run: str
    ops: dict[str, int]
    rejected: int  # archives of values a person rejected

    @property
    def corrections(self) -> int:
        return self.ops.get("supersede", 0) + self.rejected

    @property
    def time(self) -> str:
        """The run's clock, from its id (``2026-11-17T03-00-00Z-26ed``): ``2026-11-17 03:00``."""
        run = self.run
        return f"{run[:10]} {run[11:13]}:{run[14:16]}" if len(run) >= 16 and run[10:11] == "T" else run

    def to_dict(self) -> dict[str, Any]:
        return {"run": self.run, "time": self.time, **{op: self.ops.get(op, 0) for op in OPS},
                "rejected": self.rejected, "corrections": self.corrections}


@dataclass
class Stats:
    """Every figure of `memdream stats`; :meth:`to_dict` is its JSON, with stable keys."""

    now: str
    active: Tally
    archived: Tally
    size: dict[str, dict[str, int]]
    conflicts: int
    confidence: dict[str, int]
    redundancy: dict[str, Any]
    staleness: dict[str, Any]
    usage: dict[str, Any]
    dream_count: int
    dreams: list[DreamFigures]  # the newest runs, oldest first

    @property
    def corrections_per_dream(self) -> float | None:
        if not self.dreams:
            return None
        return round(sum(run.corrections for run in self.dreams) / len(self.dreams), 2)

    def to_dict(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "cards": {"active": self.active.to_dict(), "archived": self.archived.to_dict()},
            "size": self.size,
            "conflicts": self.conflicts,
            "confidence": self.confidence,
            "redundancy": self.redundancy,
            "staleness": self.staleness,
            "usage": self.usage,
            "dreams": {"count": self.dream_count, "last": self.dreams[-1].run if self.dreams else None,
                       "shown": len(self.dreams), "corrections_per_dream": self.corrections_per_dream,
                       "runs": [run.to_dict() for run in self.dreams]},
        }


def memory_stats(root: Path, days: int = DEFAULT_DAYS, runs: int = DEFAULT_RUNS) -> Stats:
    """The figures of the memory at ``root`` as of now (``MEMDREAM_NOW``)."""
    from memdream.dream.metrics import measure
    from memdream.memory.cardcache import load_cards
    from memdream.memory.journal import require_settled
    from memdream.memory.store import Memory

    if days < 1:
        raise UsageError(f"--days must be 1 or more, not {days}")
    if runs < 0:
        raise UsageError(f"--runs must be 0 or more, not {runs}")
    require_settled(root)
    memory = Memory(root)
    moment = now()
    loaded = load_cards(memory)
    active = [item.card for item in loaded if item.card.is_active]
    fixed = [path.stat().st_size for path in (memory.paths.plan, memory.paths.index) if path.exists()]
    metrics = measure(((item.card, item.size) for item in loaded), sum(fixed), len(fixed))
    audit_files = _runs_in_order(memory.paths.audit)
    return Stats(
        now=format_timestamp(moment),
        active=_tally(active, ACTIVE_STATUSES),
        archived=_tally([item.card for item in loaded if not item.card.is_active], INACTIVE_STATUSES),
        size=_sizes(memory.paths, loaded, metrics.bytes, len(fixed), audit_files),
        conflicts=metrics.conflicts,
        confidence=metrics.confidence,
        redundancy=redundancy(active, _threshold(memory)),
        staleness=staleness(active, moment),
        usage=usage(memory.paths, active, moment, days),
        dream_count=len(audit_files),
        dreams=[_dream(path) for path in audit_files[max(0, len(audit_files) - runs):]] if runs else [],
    )


def _tally(cards: list[Card], statuses: frozenset[str]) -> Tally:
    tally = Tally(by_status={status: 0 for status in STATUSES if status in statuses})
    for card in cards:
        tally.count(card)
    return tally


def _threshold(memory: Memory) -> float:
    return float(memory.settings.get("dream.merge.similarity_threshold"))


def _sizes(paths: MemoryPaths, loaded: list[CachedCard], active_bytes: int, fixed_files: int,
           audit_files: list[Path]) -> dict[str, dict[str, int]]:
    """Files and bytes of the active memory (with its token estimate), the archive, the audit files and
    the raw layer (events from the manifest, bytes from a stat of each segment that is here)."""
    from memdream.memory.raw import RawLayer

    active_files = fixed_files + sum(1 for item in loaded if item.card.is_active)
    archive = [item.size for item in loaded if not item.card.is_active]
    raw = RawLayer(paths)
    manifest = raw.manifest()
    present = [size for size in (_size(raw.segment_path(record.segment)) for record in manifest) if size is not None]
    return {
        "active": {"files": active_files, "bytes": active_bytes,
                   "tokens": math.ceil(active_bytes / BYTES_PER_TOKEN)},
        "archive": {"files": len(archive), "bytes": sum(archive)},
        "audit": {"files": len(audit_files), "bytes": sum(_size(path) or 0 for path in audit_files)},
        "raw": {"segments": len(manifest), "segments_here": len(present),
                "events": sum(record.events for record in manifest), "bytes": sum(present)},
    }


def _size(path: Path) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


# -- redundancy -------------------------------------------------------------------------------------

def redundancy(cards: list[Card], threshold: float) -> dict[str, Any]:
    """Near-duplicate pairs of active cards (see the module's docstring for how they are found)."""
    pairs: dict[tuple[str, str], float] = {}
    for block in _blocks(cards, lambda card: (card.type, normalize_name(card.subject),
                                              tuple(_DIGITS.findall(normalize_value(card.statement))))):
        pairs.update(_near_pairs(block, threshold))
    for block in _blocks(cards, lambda card: (card.type, normalize_value(card.statement))):
        for index, first in enumerate(block):
            for second in block[index + 1:]:
                if _distinct_keys(first, second):
                    pairs.setdefault(_pair(first, second), 100.0)
    ordered = sorted(pairs.items(), key=lambda item: (-item[1], item[0]))
    return {"pairs": len(pairs), "cards": len({card for pair in pairs for card in pair}),
            "threshold": threshold,
            "examples": [{"cards": list(pair), "similarity": round(score, 1)} for pair, score in ordered[:EXAMPLES]]}


def _blocks(cards: list[Card], key: Any) -> list[list[Card]]:
    """The groups of two or more cards that share ``key(card)``, each sorted by id."""
    groups: dict[Any, list[Card]] = {}
    for card in cards:
        groups.setdefault(key(card), []).append(card)
    return [sorted(group, key=lambda card: card.id) for group in groups.values() if len(group) > 1]


def _near_pairs(block: list[Card], threshold: float) -> dict[tuple[str, str], float]:
    """The pairs of one block whose statements are one value. Statements are taken shortest first, and
    each is compared only with the next ones no longer than ratio allows (fuzz.ratio is 2·matches /
    (len a + len b), so b ≤ a·(200 − t)/t); rapidfuzz compares them in C, and same_value (dream's own
    rule) confirms each hit."""
    from bisect import bisect_right

    from rapidfuzz import fuzz, process

    from memdream.dream.values import same_value

    ordered = sorted(((normalize_value(card.statement), card) for card in block), key=lambda item: len(item[0]))
    texts = [text for text, _ in ordered]
    lengths = [len(text) for text in texts]
    stretch = (200 - threshold) / threshold if threshold > 0 else float("inf")
    found: dict[tuple[str, str], float] = {}
    for index, text in enumerate(texts[:-1]):
        end = bisect_right(lengths, len(text) * stretch, lo=index + 1)
        later = texts[index + 1:end]
        for _, score, offset in process.extract(text, later, scorer=fuzz.ratio, score_cutoff=threshold, limit=None):
            first, second = ordered[index][1], ordered[index + 1 + offset][1]
            if _distinct_keys(first, second) and same_value(first.statement, second.statement, threshold):
                found[_pair(first, second)] = float(score)
    return found


def _distinct_keys(first: Card, second: Card) -> bool:
    """Two cards of one fact key are a conflict (or lint's finding), not redundancy."""
    if first.attribute is None or second.attribute is None:
        return True
    return (normalize_name(first.subject), normalize_name(first.attribute)) != \
        (normalize_name(second.subject), normalize_name(second.attribute))


def _pair(first: Card, second: Card) -> tuple[str, str]:
    return (first.id, second.id) if first.id < second.id else (second.id, first.id)


# -- staleness and usage ----------------------------------------------------------------------------

def ttl_days(policy: str) -> int | None:
    """N of ``decay-<N>d`` (as dream's decay reads it); None for ``keep``."""
    match = _TTL.match(policy)
    return int(match.group(1)) if match else None


def staleness(cards: list[Card], moment: datetime) -> dict[str, Any]:
    """Active cards whose TTL has passed since they were last verified, the longest overdue first."""
    decaying = 0
    overdue: list[tuple[int, str, int]] = []  # (days past the TTL, card id, TTL)
    for card in cards:
        days = ttl_days(card.ttl_policy)
        if days is None:
            continue
        decaying += 1
        age = _age_days(card.last_verified_at or card.updated_at, moment)
        if age is not None and age > days:
            overdue.append((age - days, card.id, days))
    overdue.sort(key=lambda item: (-item[0], item[1]))
    return {"stale": len(overdue), "with_ttl": decaying, "share": _share(len(overdue), len(cards)),
            "examples": [{"card": card_id, "ttl_days": ttl, "days_past": past} for past, card_id, ttl in
                         overdue[:EXAMPLES]]}


def _age_days(stamp: str, moment: datetime) -> int | None:
    try:
        then = parse_timestamp(stamp)
    except ValueError:
        return None
    return max(0, (moment - then).days)


def usage(paths: MemoryPaths, cards: list[Card], moment: datetime, days: int) -> dict[str, Any]:
    """The active cards a recall returned within ``days`` days; ``logged`` False without a usage log."""
    from memdream.memory.usage import usage_at, usage_path

    if not usage_path(paths).is_file():
        return {"logged": False, "days": days, "recalled": None, "share": None, "active": len(cards)}
    cutoff = moment - timedelta(days=days)
    last_used = usage_at(paths).last_used
    recalled = sum(1 for card in cards if _after(last_used.get(card.id), cutoff))
    return {"logged": True, "days": days, "recalled": recalled, "share": _share(recalled, len(cards)),
            "active": len(cards)}


def _after(stamp: str | None, cutoff: datetime) -> bool:
    if stamp is None:
        return False
    try:
        return parse_timestamp(stamp) >= cutoff
    except ValueError:
        return False


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


# -- dreams -----------------------------------------------------------------------------------------

def _runs_in_order(audit: Path) -> list[Path]:
    """The audit files, oldest run first: by the time their run id starts with; runs of one second (a
    replay under a fixed MEMDREAM_NOW) by the commit that added their file (a clone checks every file
    out at once, so file times say nothing there), else by when their file was written, then by name."""
    if not audit.is_dir():
        return []
    files = [path for path in audit.glob("*.jsonl") if not is_forget_audit(path.name)]  # a tombstone is no run
    seconds = Counter(path.name[:20] for path in files)
    added = _added_order(audit) if any(count > 1 for count in seconds.values()) else {}
    return sorted(files, key=lambda path: (path.name[:20], added.get(path.name, len(added)), _mtime(path), path.name))


def _added_order(audit: Path) -> dict[str, int]:
    """Audit file name -> the place of the commit that added it, oldest first; {} without git history."""
    from memdream import gitops

    root = audit.parent
    if not gitops.is_repo(root) or gitops.head_or_none(root) is None:
        return {}
    order: dict[str, int] = {}
    history = gitops.path_history(root, [audit.name])
    for place, (_, touched) in enumerate(reversed(history)):
        for status, path in touched:
            if status == "A":
                order[Path(path).name] = place
    return order


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _dream(path: Path) -> DreamFigures:
    """One run's operations, counted from its audit file: evidence lines (the bulk of a first dream's
    file) are told by their first bytes and never parsed; an archive line is parsed for its reason."""
    ops: Counter[str] = Counter()
    rejected = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            match = AUDIT_OP.match(line)
            op = match.group(1) if match else None
            if op == EVIDENCE_OP:
                continue
            entry = parse_audit_line(line) if op in (None, "archive") else None
            if op is None:
                op = entry.get("op") if entry else None
            if op in OPS:
                ops[op] += 1
                rejected += op == "archive" and _REJECTED in str((entry or {}).get("reason", ""))
    return DreamFigures(path.stem, dict(ops), rejected)


