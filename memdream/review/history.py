"""The history of dreams, read from git: one :class:`DreamRun` per dream commit and per rollback.

Everything comes from commits: the trailers a dream commit carries (``Memdream-Run``,
``Memdream-Consumed``, ``Memdream-Events``) and the run's audit file *at that commit*, so the counts
stay right after a rollback removed the file, and on a clone that has no raw layer or local state.
A rollback commit carries one ``Memdream-Rollback: <run-id>`` per run it undid.

A dream that changed only bookkeeping (recall's usage folded into reference counts, the index showing
them; dreams before issue 21 committed that on its own) is left out of ``log`` and is not what
``rollback`` undoes: it is no dream anyone reviews (:func:`bookkeeping_only`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memdream import gitops, yamlio
from memdream.memory import trailers as trailer
from memdream.memory.evidence_log import AUDIT_OP
from memdream.memory.paths import AUDIT_DIR, CARDS_DIR, INDEX_FILE

DREAM, ROLLBACK = "dream", "rollback"
# The operations a dream writes to its audit file, in the order people read them.
OPS = ("add", "merge", "supersede", "archive", "conflict", "demote", "update")
_SEGMENTS = re.compile(r"^segments? (\d+)\.\.(\d+)$")
# A `memdream forget` writes its tombstone as audit/<clock><FORGET_MARK><digest>.jsonl: no dream run.
FORGET_MARK = "-forget-"


def is_forget_audit(name: str) -> bool:
    """Whether an audit file is a forget's tombstone (memdream.review.forget), not a dream run's."""
    return FORGET_MARK in name


# A dream commit carrying one of these read, resumed or left events, or holds ingest's manifest lines:
# never bookkeeping only, whatever its files say.
_LEDGER_TRAILERS = (trailer.CONSUMED, trailer.EVENTS, trailer.REDREAMED, trailer.DEFERRED, trailer.INGEST)
# The card fields a dream changes without learning anything: how often recall returned the card.
_BOOKKEEPING_FIELDS = frozenset({"reference_count"})


@dataclass(frozen=True)
class DreamRun:
    """One dream commit (``kind`` dream) or one rollback commit (``kind`` rollback)."""

    kind: str
    commit: str
    time: str
    subject: str
    run: str | None = None  # the dream's run id; a rollback's own run id when it has one
    events: int | None = None
    segments: tuple[int, int] | None = None
    counts: dict[str, int] = field(default_factory=dict)
    rolled_back_by: str | None = None  # the sha of the rollback commit that undid this dream
    undoes: tuple[str, ...] = ()  # a rollback: the run ids it undid

    @property
    def short(self) -> str:
        return self.commit[:10]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "run": self.run, "commit": self.commit, "time": self.time, "events": self.events,
            "segments": list(self.segments) if self.segments else None,
            "counts": {op: self.counts.get(op, 0) for op in OPS},
            "rolled_back_by": self.rolled_back_by, "kind": self.kind,
        }
        if self.kind == ROLLBACK:
            data["undoes"] = list(self.undoes)
        return data


def dream_runs(root: Path, limit: int | None = None, rev: str = "HEAD") -> list[DreamRun]:
    """Dreams and rollbacks reachable from ``rev``, newest first (at most ``limit`` of them); dreams
    that changed only bookkeeping are left out."""
    found, counts = _shown_commits(root, limit, rev)
    undone_by: dict[str, str] = {}  # run id -> rollback sha; a rollback is always newer than its run
    runs: list[DreamRun] = []
    for info in found:
        undoes = tuple(info.trailers.get(trailer.ROLLBACK, []))
        for run_id in undoes:
            undone_by.setdefault(run_id, info.sha)
        if undoes:
            runs.append(DreamRun(ROLLBACK, info.sha, info.time, info.subject, info.trailer(trailer.RUN),
                                 undoes=undoes))
        else:
            runs.append(_dream(info, counts[info.sha], undone_by.get(info.trailer(trailer.RUN) or "")))
    return runs


def _shown_commits(root: Path, limit: int | None,
                   rev: str) -> tuple[list[gitops.CommitInfo], dict[str, dict[str, int]]]:
    """The newest ``limit`` dream and rollback commits that are not bookkeeping only, and each dream's
    operation counts. With a limit, more commits are read while bookkeeping ones took places."""
    wanted = limit
    while True:
        found = gitops.commits_with_trailers(root, (trailer.RUN, trailer.ROLLBACK), rev, max_count=wanted)
        dreams = [info for info in found if not info.trailers.get(trailer.ROLLBACK)]
        counts = dict(zip((info.sha for info in dreams), map(_op_counts, _audit_texts(root, dreams))))
        skipped = _bookkeeping_shas(root, dreams, counts)
        shown = [info for info in found if info.sha not in skipped]
        if limit is None or wanted is None or len(shown) >= limit or len(found) < wanted:
            return shown[:limit], counts
        wanted = limit + len(skipped)


def bookkeeping_only(root: Path, info: gitops.CommitInfo, counts: dict[str, int]) -> bool:
    """Whether the dream commit ``info`` (its audit file holding ``counts``) changed nothing but
    bookkeeping: no event read or left, no operation, and its files differ from its parent's only in
    cards' reference counts and the index. An empty commit changed nothing and stays a dream."""
    if any(info.trailer(key) for key in _LEDGER_TRAILERS) or any(counts.values()) or not info.parents:
        return False
    changed = gitops.changes(root, info.parents[0], info.sha)
    return bool(changed) and all(_bookkeeping_change(change) for change in changed)


def _bookkeeping_change(change: gitops.FileChange) -> bool:
    if change.path == INDEX_FILE:
        return True
    if not change.path.startswith(f"{CARDS_DIR}/") or change.old_text is None or change.new_text is None:
        return False  # a card added or removed is a change of what the memory says
    try:
        old, new = yamlio.loads(change.old_text), yamlio.loads(change.new_text)
    except (yaml.YAMLError, UnicodeError):  # an unreadable card is no bookkeeping
        return False
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    return _without_bookkeeping(old) == _without_bookkeeping(new)


def _without_bookkeeping(card: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in card.items() if key not in _BOOKKEEPING_FIELDS}


def _bookkeeping_shas(root: Path, dreams: list[gitops.CommitInfo],
                      counts: dict[str, dict[str, int]] | None = None) -> set[str]:
    """The commits of ``dreams`` that changed only bookkeeping; ``counts`` (sha -> operation counts)
    is read from the audit files of the few that could be when not given."""
    candidates = [info for info in dreams if not any(info.trailer(key) for key in _LEDGER_TRAILERS)]
    if counts is None:
        counts = dict(zip((info.sha for info in candidates), map(_op_counts, _audit_texts(root, candidates))))
    return {info.sha for info in candidates if bookkeeping_only(root, info, counts.get(info.sha, {}))}


def last_dream(root: Path) -> DreamRun | None:
    """The newest dream commit reachable from HEAD (rollbacks are not dreams)."""
    newest = gitops.commits_with_trailers(root, (trailer.RUN,), max_count=1)  # stops at the first
    dreams = newest if not newest or not newest[0].trailers.get(trailer.ROLLBACK) else _dream_commits(root)
    return _dream(dreams[0]) if dreams else None


def undone_runs(root: Path) -> dict[str, str]:
    """Every dream run a rollback undid, with the rollback commit that did it."""
    found: dict[str, str] = {}
    for info in gitops.commits_with_trailers(root, (trailer.ROLLBACK,)):  # newest first: keep the first
        for run_id in info.trailers.get(trailer.ROLLBACK, []):
            found.setdefault(run_id, info.sha)
    return found


def undone_by(root: Path, run_id: str) -> str | None:
    """The rollback commit that undid the dream run ``run_id``, None when none did."""
    return undone_runs(root).get(run_id)


def live_dreams(root: Path, rev: str = "HEAD") -> list[DreamRun]:
    """The dreams reachable from ``rev`` that no rollback undid and that changed more than bookkeeping,
    newest first (without counts)."""
    undone = undone_runs(root)
    live = [info for info in _dream_commits(root, rev) if info.trailer(trailer.RUN) not in undone]
    skipped = _bookkeeping_shas(root, live)
    return [_dream(info) for info in live if info.sha not in skipped]


def find_run(root: Path, run_id: str) -> DreamRun | None:
    """The dream commit of run ``run_id``, or of the one run whose id starts with it."""
    dreams = _dream_commits(root)
    exact = [info for info in dreams if info.trailer(trailer.RUN) == run_id]
    matches = exact or [info for info in dreams if (info.trailer(trailer.RUN) or "").startswith(run_id)]
    return _dream(matches[0]) if len(matches) == 1 else None


def runs_between(root: Path, old_rev: str, new_rev: str) -> list[DreamRun]:
    """The dreams reachable from ``new_rev`` and not from ``old_rev``, oldest first (without counts)."""
    return [_dream(info) for info in reversed(_dream_commits(root, f"{old_rev}..{new_rev}"))]


def audit_operations(root: Path, runs: list[DreamRun]) -> list[dict[str, Any]]:
    """The operations of ``runs``' audit files as their commits hold them, in order (evidence lines left out:
    they are the bulk of a first dream's file, and no operation)."""
    texts = gitops.read_texts(root, [(run.commit, f"{AUDIT_DIR}/{run.run}.jsonl") for run in runs if run.run])
    operations: list[dict[str, Any]] = []
    for text in texts:
        for line in (text or "").splitlines():
            match = AUDIT_OP.match(line)
            if match is not None and match.group(1) == "evidence":
                continue
            parsed = parse_audit_line(line)
            if parsed is not None and parsed.get("op") != "evidence":
                operations.append(parsed)
    return operations


def _dream_commits(root: Path, rev: str = "HEAD") -> list[gitops.CommitInfo]:
    """Dream commits only: a rollback commit is not a dream, whatever else it carries."""
    found = gitops.commits_with_trailers(root, (trailer.RUN,), rev)
    return [info for info in found if not info.trailers.get(trailer.ROLLBACK)]


def _audit_texts(root: Path, dreams: list[gitops.CommitInfo]) -> list[str | None]:
    """Each dream's audit file at its own commit (one git process for all of them)."""
    wanted = [(info.sha, f"{AUDIT_DIR}/{info.trailer(trailer.RUN)}.jsonl") for info in dreams]
    return gitops.read_texts(root, wanted)


def _dream(info: gitops.CommitInfo, counts: dict[str, int] | None = None,
           rolled_back_by: str | None = None) -> DreamRun:
    events = info.trailer(trailer.EVENTS)
    return DreamRun(
        DREAM, info.sha, info.time, info.subject, info.trailer(trailer.RUN),
        events=int(events) if events and events.isdigit() else None,
        segments=_segments(info.trailer(trailer.CONSUMED)), counts=counts or {}, rolled_back_by=rolled_back_by,
    )


def _segments(value: str | None) -> tuple[int, int] | None:
    match = _SEGMENTS.match(value or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _op_counts(text: str | None) -> dict[str, int]:
    """How many operations of each kind an audit file holds (evidence lines are not operations)."""
    counts: Counter[str] = Counter()
    for line in (text or "").splitlines():
        match = AUDIT_OP.match(line)
        op = match.group(1) if match else (parse_audit_line(line) or {}).get("op")
        if op in OPS:
            counts[op] += 1
    return dict(counts)


def parse_audit_line(line: str) -> dict[str, Any] | None:
    """One audit line; None for a blank or broken one (a hand-edited file must not stop a review or stats)."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
