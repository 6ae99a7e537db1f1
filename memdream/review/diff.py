"""A semantic diff of a memory between two revisions: what a person reviewing a dream wants to know.

It is computed from the card files and the plan at both revisions (``cards/``, ``archive/``,
``plan.yaml``), so hand edits, pull requests and rollbacks show like dreams do. The audit files of
the dream runs in between only add what files cannot say: why a card was archived, whether two
cards were merged or one superseded the other.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memdream import gitops
from memdream.errors import MemdreamError, UsageError
from memdream.memory.paths import ARCHIVE_DIR, CARDS_DIR, PLAN_FILE
from memdream.review.history import DreamRun, audit_operations, find_run, last_dream, runs_between, undone_by

CONFIDENCE_STEP = 0.01  # a smaller confidence change is noise of the fold, not news
# Fields a person does not review: timestamps move with every touch; the others have their own entry.
_NOT_COMPARED = frozenset({"id", "updated_at", "last_verified_at", "evidence", "evidence_count", "status",
                           "confidence", "value", "supersedes", "superseded_by"})

CardData = dict[str, Any]


@dataclass(frozen=True)
class CardSummary:
    """A card as one diff line names it."""

    id: str
    type: str
    key: str  # subject.attribute, or the subject for a card without attribute
    value: str | None
    statement: str
    status: str
    confidence: float | None
    evidence: int


@dataclass(frozen=True)
class Replacement:
    """``old`` gave way to ``new``: a superseded value, or a card merged into another."""

    old: str
    new: str
    key: str
    old_value: str | None
    new_value: str | None
    reason: str | None


@dataclass(frozen=True)
class Archived:
    card: CardSummary
    reason: str | None


@dataclass(frozen=True)
class Change:
    """What changed in a card present at both revisions (a None field did not change)."""

    id: str
    key: str
    status: tuple[str, str] | None = None
    confidence: tuple[float, float] | None = None
    value: tuple[str | None, str | None] | None = None
    evidence_added: int = 0
    fields: tuple[str, ...] = ()  # other fields that differ (statement, tags, review, ...)
    restored: bool = False  # back from archive/ to cards/: a rollback or a hand edit


@dataclass
class PlanChange:
    goal: tuple[str, str] | None = None
    next_added: list[str] = field(default_factory=list)
    next_removed: list[str] = field(default_factory=list)
    done_added: list[str] = field(default_factory=list)
    done_removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.goal or self.next_added or self.next_removed or self.done_added or self.done_removed)


@dataclass
class MemoryDiff:
    """The result of :func:`semantic_diff`; ``to_dict`` is the JSON of `memdream diff --format json`."""

    old: str | None  # None: the empty memory before the first commit
    new: str
    runs: list[str] = field(default_factory=list)
    added: list[CardSummary] = field(default_factory=list)
    superseded: list[Replacement] = field(default_factory=list)
    merged: list[Replacement] = field(default_factory=list)
    archived: list[Archived] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    removed: list[CardSummary] = field(default_factory=list)
    plan: PlanChange = field(default_factory=PlanChange)
    unreadable: list[str] = field(default_factory=list)  # card files that are not YAML mappings
    rolled_back_by: str | None = None  # the diff of one dream that a later rollback undid

    @property
    def empty(self) -> bool:
        return not (self.added or self.superseded or self.merged or self.archived or self.changed
                    or self.removed or self.plan)

    def to_dict(self) -> dict[str, Any]:
        return {
            "from": self.old, "to": self.new, "runs": self.runs,
            "added": [asdict(item) for item in self.added],
            "superseded": [asdict(item) for item in self.superseded],
            "merged": [asdict(item) for item in self.merged],
            "archived": [{**asdict(item.card), "reason": item.reason} for item in self.archived],
            "changed": [_change_dict(item) for item in self.changed],
            "removed": [asdict(item) for item in self.removed],
            "plan": asdict(self.plan), "unreadable": self.unreadable, "rolled_back_by": self.rolled_back_by,
        }


def _change_dict(change: Change) -> dict[str, Any]:
    data = asdict(change)
    return {key: list(value) if isinstance(value, tuple) else value for key, value in data.items()}


# -- which revisions ------------------------------------------------------------------------------

def semantic_diff(root: Path, old_rev: str | None = None, new_rev: str | None = None,
                  run_id: str | None = None) -> MemoryDiff:
    """The diff between two revisions; by default the last dream's (its parent against it).

    One revision: that revision against HEAD. ``run_id``: that dream run's commit against its parent.
    """
    if run_id is not None and old_rev is not None:
        raise UsageError("give --run or revisions, not both")
    if run_id is not None or old_rev is None:
        return _dream_diff(root, _the_run(root, run_id))
    old = gitops.resolve(root, old_rev)
    new = gitops.resolve(root, new_rev or "HEAD")
    runs = runs_between(root, old, new)
    return compare(root, old, new, runs)


def _the_run(root: Path, run_id: str | None) -> DreamRun:
    if run_id is None:
        run = last_dream(root)
        if run is None:
            raise MemdreamError(f"no dream yet in {root}: nothing to diff (run `memdream dream`, "
                                "or name two revisions: `memdream diff REV_A REV_B`)")
        return run
    run = find_run(root, run_id)
    if run is None:
        raise UsageError(f"no dream run {run_id!r} in the history of {root} (see `memdream log`)")
    return run


def _dream_diff(root: Path, run: DreamRun) -> MemoryDiff:
    parents = gitops.commit_info(root, run.commit).parents
    result = compare(root, parents[0] if parents else None, run.commit, [run])
    result.rolled_back_by = undone_by(root, run.run) if run.run else None
    return result


# -- the comparison -------------------------------------------------------------------------------

@dataclass
class _Sides:
    """The card files that differ, by card id: (path, data) at the old and at the new revision."""

    old: dict[str, tuple[str, CardData]] = field(default_factory=dict)
    new: dict[str, tuple[str, CardData]] = field(default_factory=dict)
    old_plan: CardData | None = None
    new_plan: CardData | None = None
    unreadable: list[str] = field(default_factory=list)


@dataclass
class _Reasons:
    """What the audit files of the runs in between say, by card id."""

    superseded: dict[tuple[str, str], str] = field(default_factory=dict)  # (old, new) -> reason
    merged: dict[tuple[str, str], str] = field(default_factory=dict)  # (dropped, kept) -> reason
    archived: dict[str, str] = field(default_factory=dict)


def compare(root: Path, old: str | None, new: str, runs: list[DreamRun]) -> MemoryDiff:
    """The semantic diff between commit ``old`` (None: nothing) and commit ``new``."""
    paths = (CARDS_DIR, ARCHIVE_DIR, PLAN_FILE)
    files = (gitops.changes(root, old, new, paths) if old is not None
             else gitops.empty_tree_changes(root, new, paths))
    sides = _read_sides(files)
    reasons = _reasons(root, runs)
    result = MemoryDiff(old=old, new=new, runs=[run.run for run in runs if run.run], unreadable=sides.unreadable)
    explained = _replacements(sides, reasons, result)
    _cards(sides, reasons, explained, result)
    result.plan = _plan_change(sides.old_plan, sides.new_plan)
    return result


def _read_sides(files: list[gitops.FileChange]) -> _Sides:
    sides = _Sides()
    for change in files:
        for path, text, into in ((change.old_path, change.old_text, sides.old),
                                 (change.new_path, change.new_text, sides.new)):
            if path is None or text is None:
                continue
            data = _load(text)
            if path == PLAN_FILE:
                if into is sides.old:
                    sides.old_plan = data
                else:
                    sides.new_plan = data
            elif data is None or not isinstance(data.get("id"), str):
                sides.unreadable.append(path)
            else:
                into[data["id"]] = (path, data)
    sides.unreadable = sorted(set(sides.unreadable))
    return sides


def _load(text: str) -> CardData | None:
    from memdream import yamlio

    try:
        data = yamlio.loads(text)
    except Exception:  # noqa: BLE001 - a broken file is reported as unreadable, never a crash
        return None
    return data if isinstance(data, dict) else None


def _reasons(root: Path, runs: list[DreamRun]) -> _Reasons:
    reasons = _Reasons()
    for line in audit_operations(root, runs):
        op, card, reason = line.get("op"), line.get("card"), str(line.get("reason") or "")
        others = [item for item in line.get("cards") or [] if isinstance(item, str)]
        if op == "supersede":
            reasons.superseded.update({(other, str(card)): reason for other in others})
        elif op == "merge":
            reasons.merged.update({(other, str(card)): reason for other in others})
        elif op == "archive" and isinstance(card, str):
            reasons.archived[card] = reason
    return reasons


def _replacements(sides: _Sides, reasons: _Reasons, result: MemoryDiff) -> set[str]:
    """Supersessions and merges, found through ``supersedes`` on the newer card; the ids they explain."""
    explained: set[str] = set()
    for new_id, (new_path, data) in sorted(sides.new.items()):
        before = set(_ids(sides.old[new_id][1].get("supersedes"))) if new_id in sides.old else set()
        replaced = [old_id for old_id in _ids(data.get("supersedes")) if old_id not in before]
        for old_id in replaced:
            old_data = _version(sides, old_id)
            pair = _replacement(old_id, old_data, new_id, data, reasons)
            merged = (old_id, new_id) in reasons.merged or (
                (old_id, new_id) not in reasons.superseded and _looks_merged(old_data, data))
            (result.merged if merged else result.superseded).append(pair)
            explained.add(old_id)
        # A new card that replaced another is told by its pair; one that was there before (the card a
        # merge kept) or that went to the archive in the same run is still compared on its own.
        if replaced and new_id not in sides.old and not _archived(new_path):
            explained.add(new_id)
    return explained


def _replacement(old_id: str, old: CardData | None, new_id: str, new: CardData, reasons: _Reasons) -> Replacement:
    reason = reasons.superseded.get((old_id, new_id)) or reasons.merged.get((old_id, new_id))
    return Replacement(old=old_id, new=new_id, key=_key(new), old_value=_value(old) if old else None,
                       new_value=_value(new), reason=reason)


def _looks_merged(old: CardData | None, new: CardData) -> bool:
    """Without an audit line: a card without a fact key (dream merges only those) or the same value."""
    if old is None:
        return False
    return new.get("attribute") is None or _value(old) == _value(new)


def _version(sides: _Sides, card_id: str) -> CardData | None:
    """The old side's version of a card, else the new side's (a card made and replaced in between)."""
    found = sides.old.get(card_id) or sides.new.get(card_id)
    return found[1] if found else None


def _cards(sides: _Sides, reasons: _Reasons, explained: set[str], result: MemoryDiff) -> None:
    for card_id in sorted(set(sides.old) | set(sides.new)):
        if card_id in explained:
            continue
        old, new = sides.old.get(card_id), sides.new.get(card_id)
        if old is None and new is not None:
            _appeared(new, reasons, result)
        elif new is None and old is not None:
            result.removed.append(_summary(old[1]))
        elif old is not None and new is not None:
            _compared(old, new, reasons, result)


def _appeared(new: tuple[str, CardData], reasons: _Reasons, result: MemoryDiff) -> None:
    path, data = new
    if _archived(path):  # made and archived in between
        result.archived.append(Archived(_summary(data), reasons.archived.get(data["id"])))
    else:
        result.added.append(_summary(data))


def _compared(old: tuple[str, CardData], new: tuple[str, CardData], reasons: _Reasons, result: MemoryDiff) -> None:
    (old_path, old_data), (new_path, new_data) = old, new
    if not _archived(old_path) and _archived(new_path):
        result.archived.append(Archived(_summary(new_data), reasons.archived.get(new_data["id"])))
        return
    change = _change(old_data, new_data, restored=_archived(old_path) and not _archived(new_path))
    if change is not None:
        result.changed.append(change)


def _change(old: CardData, new: CardData, restored: bool) -> Change | None:
    status = (str(old.get("status")), str(new.get("status"))) if old.get("status") != new.get("status") else None
    confidence = _confidence(old.get("confidence"), new.get("confidence"))
    value = (_value(old), _value(new)) if _value(old) != _value(new) else None
    added = _evidence_count(new) - _evidence_count(old)
    fields = tuple(sorted(key for key in set(old) | set(new)
                          if key not in _NOT_COMPARED and old.get(key) != new.get(key)))
    if not (status or confidence or value or added or fields or restored):
        return None
    return Change(id=str(new["id"]), key=_key(new), status=status, confidence=confidence, value=value,
                  evidence_added=added, fields=fields, restored=restored)


def _confidence(old: Any, new: Any) -> tuple[float, float] | None:
    if not isinstance(old, (int, float)) or not isinstance(new, (int, float)):
        return None
    return (float(old), float(new)) if abs(float(new) - float(old)) >= CONFIDENCE_STEP - 1e-9 else None


# -- the plan -------------------------------------------------------------------------------------

def _plan_change(old: CardData | None, new: CardData | None) -> PlanChange:
    """Goal, next and done items compared by their text (items carry no ids)."""
    if old is None and new is None:  # plan.yaml did not change
        return PlanChange()
    old, new = old or {}, new or {}
    change = PlanChange()
    if str(old.get("goal") or "") != str(new.get("goal") or ""):
        change.goal = (str(old.get("goal") or ""), str(new.get("goal") or ""))
    change.next_added, change.next_removed = _items_diff(old.get("next"), new.get("next"))
    change.done_added, change.done_removed = _items_diff(old.get("done"), new.get("done"))
    return change


def _items_diff(old: Any, new: Any) -> tuple[list[str], list[str]]:
    before, after = _texts(old), _texts(new)
    return [text for text in after if text not in before], [text for text in before if text not in after]


def _texts(items: Any) -> list[str]:
    if not isinstance(items, list):
        return []
    return [str(item["text"]) for item in items if isinstance(item, dict) and "text" in item]


# -- card fields ----------------------------------------------------------------------------------

def _summary(data: CardData) -> CardSummary:
    confidence = data.get("confidence")
    return CardSummary(
        id=str(data["id"]), type=str(data.get("type") or ""), key=_key(data), value=_value(data),
        statement=str(data.get("statement") or "").strip(), status=str(data.get("status") or ""),
        confidence=float(confidence) if isinstance(confidence, (int, float)) else None,
        evidence=_evidence_count(data),
    )


def _key(data: CardData) -> str:
    subject, attribute = str(data.get("subject") or ""), data.get("attribute")
    return f"{subject}.{attribute}" if attribute else subject


def _value(data: CardData) -> str | None:
    value = data.get("value")
    return None if value is None else str(value)


def _evidence_count(data: CardData) -> int:
    count = data.get("evidence_count")
    if isinstance(count, int):
        return count
    evidence = data.get("evidence")
    return len(evidence) if isinstance(evidence, list) else 0


def _ids(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _archived(path: str) -> bool:
    return path.startswith(f"{ARCHIVE_DIR}/")
