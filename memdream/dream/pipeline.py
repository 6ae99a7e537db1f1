"""The dream run: lock, recover, select new events, run the stages, write, commit once.

Crash safety: the run writes a journal before touching tracked files and commits last; a run
that finds a journal without its commit puts the tracked files back as HEAD has them, so a
kill -9 at any point leaves the memory at its last commit, and the checkpoint (advanced only
after the commit) makes the next dream pick up the same events.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memdream import gitops, yamlio
from memdream.clock import now_iso, parse_timestamp
from memdream.dream import (
    admit,
    decay,
    extract,
    forget,
    index_file,
    induce,
    merge,
    plan_update,
    propagate,
    select,
    verify,
    versions,
)
from memdream.dream import ledger as ledger_mod
from memdream.dream import state as state_mod
from memdream.dream.keys import induced_keys
from memdream.dream.metrics import Metrics, measure
from memdream.dream.model import DreamContext
from memdream.errors import InvalidMemory
from memdream.memory import journal, manifest_commit
from memdream.memory import trailers as trailer
from memdream.memory.card import INLINE_EVIDENCE, Card
from memdream.memory.cardcache import CachedCard, load_cards, read_cache, remember_cards
from memdream.memory.evidence_log import AUDIT_OP, EVIDENCE_OP, evidence_line
from memdream.memory.journal import TRACKED, pause_for_tests
from memdream.memory.lock import WRITER_WAIT_SECONDS, index_lock, lock_wait_seconds, writer_lock
from memdream.memory.paths import AUDIT_DIR, INDEX_FILE, PLAN_FILE
from memdream.memory.raw import RawLayer
from memdream.memory.refs import ref_of
from memdream.memory.settings import Settings
from memdream.memory.store import Memory
from memdream.memory.tenant_marks import marked
from memdream.progress import NO_PROGRESS, Progress
from memdream.redact import Redactor

if TYPE_CHECKING:  # imported when a run is budgeted or explained: most runs are neither
    from memdream.dream import budget as budget_mod
    from memdream.dream import explain as explain_mod

Stage = Callable[[DreamContext], None]
# Order matters: corrections (verify) come before additions (admit).
STAGES: dict[str, Stage] = {
    "select": select.run,
    "extract": extract.run,
    "merge-keys": merge.run_keys,
    "verify": verify.run,
    "admit": admit.run,
    "merge": merge.run_statements,
    "induce": induce.run,
    "propagate": propagate.run,
    "decay": decay.run,
    "forget": forget.run,
    "plan": plan_update.run,
    "index": index_file.run,
}
# Audit order: corrections first, then additions, then housekeeping.
OP_ORDER = {"supersede": 0, "conflict": 1, "demote": 2, "update": 3, "add": 4, "merge": 5, "archive": 6}


@dataclass
class FileChange:
    path: str  # relative to the memory root
    action: str  # "write" or "delete"
    text: str = ""


@dataclass
class DreamReport:
    run_id: str
    dry_run: bool
    consumed: tuple[int, int] | None = None
    events: int = 0
    episodes: int = 0
    skipped_episodes: int = 0
    missing_segments: list[str] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    not_admitted: dict[str, int] = field(default_factory=dict)
    changes: list[FileChange] = field(default_factory=list)
    before: Metrics = field(default_factory=Metrics)
    after: Metrics = field(default_factory=Metrics)
    commit: str | None = None
    recovered: bool = False
    warnings: list[str] = field(default_factory=list)
    staged_in: str | None = None  # a memory inside a project repository: staged there, not committed
    redreamed: list[str] = field(default_factory=list)  # runs whose quarantined events were dreamed again
    deferred: list[tuple[str, int]] = field(default_factory=list)  # episodes left for the next run (budget)
    span: tuple[int, int] | None = None  # the raw segments this run read from
    ingested: list[str] = field(default_factory=list)  # raw segments whose manifest lines this commit holds
    explained: explain_mod.Explanation | None = None  # what was admitted and why the rest was not (`dream --explain`)

    @property
    def counts(self) -> dict[str, int]:
        return dict(Counter(item["op"] for item in self.operations))

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id, "dry_run": self.dry_run, "commit": self.commit,
            "consumed_segments": list(self.consumed) if self.consumed else None,
            "events": self.events, "episodes": self.episodes, "skipped_episodes": self.skipped_episodes,
            "missing_segments": self.missing_segments, "operations": self.operations, "counts": self.counts,
            "not_admitted": self.not_admitted,
            "changes": [{"path": change.path, "action": change.action} for change in self.changes],
            "before": self.before.to_dict(), "after": self.after.to_dict(), "recovered": self.recovered,
            "warnings": self.warnings, "redreamed": self.redreamed, "staged_in": self.staged_in,
            "deferred_episodes": len(self.deferred), "ingested": self.ingested,
            **({"explain": self.explained.to_dict()} if self.explained is not None else {}),
        }


def _segment_number(name: str) -> int:
    stem = name.split(".")[0]
    return int(stem) if stem.isdigit() else 0


SPEED_SAMPLE = 200  # events: a smaller run's time is mostly start-up, not a speed
_Loaded = TypeVar("_Loaded")
# Allocations between two young-generation collections during a dream (Python's default: 700): a run makes
# hundreds of thousands of short-lived pieces and dicts, few of them in cycles; fewer, larger collections
# took a dream of 100,000 events from ~3.4 to ~3.1 s at the same peak memory (215 MB).
GC_YOUNG_THRESHOLD = 10_000


def _span(ledger: ledger_mod.Ledger, consumed: tuple[int, int] | None) -> tuple[int, int] | None:
    """The segments this run reads: the waiting entries' and the new ones."""
    bounds = [(entry.first, entry.last) for entry in ledger.waiting()] + ([consumed] if consumed else [])
    if not bounds:
        return None
    return min(first for first, _ in bounds), max(last for _, last in bounds)


def _waiting_events(raw: RawLayer, manifest: list[Any], ledger: ledger_mod.Ledger, checkpoint: int,
                    report: DreamReport) -> tuple[list[dict[str, Any]], bool]:
    """The events below the checkpoint that wait to be dreamed again (`rollback --redream`, a
    budgeted run), and whether all of their segments are here to read."""
    waiting = ledger.waiting()
    if not waiting:
        return [], True
    names = [r.segment for r in manifest if _segment_number(r.segment) <= checkpoint
             and any(entry.first <= _segment_number(r.segment) <= entry.last for entry in waiting)]
    present = [name for name in names if raw.segment_path(name).exists()]
    report.missing_segments.extend(name for name in names if name not in present)
    return ledger_mod.waiting_events(waiting, raw.iter_events(present)), len(present) == len(names)


def _read_events(raw: RawLayer, names: list[str], report: DreamReport) -> list[dict[str, Any]]:
    present = [name for name in names if raw.segment_path(name).exists()]
    report.missing_segments.extend(name for name in names if name not in present)
    return [event for _, event in raw.iter_events(present)]


def _load_state(memory: Memory, raw: RawLayer, cards: Callable[[], dict[str, Card]],
                settings: Any, ledger: ledger_mod.Ledger) -> state_mod.DreamState:
    """The saved state, or one rebuilt from git and the raw layer (``cards`` gives untouched copies)."""
    loaded = _frozen(lambda: state_mod.load(memory.paths.state))  # held to the end of the run, as the cards
    if loaded is not None:
        return loaded
    rebuilt = state_mod.DreamState(consumed=state_mod.consumed_from_git(memory.root), rebuilt=True)
    names = [r.segment for r in raw.manifest() if _segment_number(r.segment) <= rebuilt.consumed]
    # Quarantined events (their run was rolled back) and waiting ones are not what dreaming learned.
    events = [event for name, event in raw.iter_events([n for n in names if raw.segment_path(n).exists()])
              if not ledger.held_back(_segment_number(name), event)]
    if events:  # replay selection and extraction only: the statistics admission needs
        replay = DreamContext(now=now_iso(), run_id="replay", settings=settings, cards=cards(),
                              plan=None, events=events, key_stats={}, sessions_seen=set(),  # type: ignore[arg-type]
                              state_dir=memory.paths.state, audit_dir=memory.paths.audit)
        select.run(replay)
        extract.run(replay)
        known = versions.refs_by_key(replay)
        workflows = set(induced_keys(replay))
        for key, pieces in replay.pieces.items():
            if key in workflows:  # induce compares every session, cited or not
                replay.key_stats[key].pending = sorted(pieces, key=lambda p: (p.ts, p.ref))[-induce.HISTORY:]
                continue
            replay.key_stats[key].pending = [p for p in pieces if p.ref not in known.get(key, set())][-50:]
        rebuilt.key_stats, rebuilt.sessions_seen = replay.key_stats, replay.sessions_seen
    return rebuilt


def _recent_ops(memory: Memory) -> list[dict[str, Any]]:
    """The last audit lines that show a change, oldest first. Read from the end: a first dream's
    audit file holds thousands of lines, and INDEX.md shows thirty."""
    files = sorted(memory.paths.audit.glob("*.jsonl"))[-3:] if memory.paths.audit.is_dir() else []
    newest: list[dict[str, Any]] = []
    for path in reversed(files):
        for line in reversed(path.read_text(encoding="utf-8").splitlines()):
            if len(newest) == index_file.MAX_RECENT:
                return newest[::-1]
            if line.strip():
                start = AUDIT_OP.match(line)
                if start is not None and start.group(1) == EVIDENCE_OP:
                    continue  # told by its start, unparsed: a first dream's audit ends in thousands of these
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict) and entry.get("op") != EVIDENCE_OP:  # not a change to show
                    newest.append(entry)
    return newest[::-1]


def _run_id(now: str, consumed: tuple[int, int] | None, events: list[dict[str, Any]], head: str | None) -> str:
    """``<clock>-<digest>``; the digest covers the commit the run starts from and the events it
    reads, so that two runs never share an id (a fixed clock in tests, a budgeted run resuming)."""
    stamp = parse_timestamp(now).strftime("%Y-%m-%dT%H-%M-%SZ")
    ends = f"{ref_of(events[0])}|{ref_of(events[-1])}" if events else ""
    digest = hashlib.sha256(f"{head}|{consumed}|{len(events)}|{ends}".encode()).hexdigest()[:4]
    return f"{stamp}-{digest}"


def dream(memory: Memory, dry_run: bool = False, extractor: str | None = None,
          commit_in_project: bool = False, budget: budget_mod.DreamBudget | None = None,
          progress: Progress = NO_PROGRESS, explain: bool = False) -> DreamReport:
    """Consolidate the raw events not yet dreamed into the memory; one commit when anything changed.

    ``extractor``: the model extractor's command for this run instead of ``dream.extractor.command``
    ('' turns a configured one off). ``commit_in_project``: in a memory that a project repository
    tracks, commit (only the memory's paths) instead of staging the files for the user to commit.
    ``budget``: dream whole episodes, oldest first, within it; the rest wait for the next run.
    ``progress``: where to show the stages as they run (a bar on a terminal; nothing by default).
    ``explain``: the report says what was admitted and why each other candidate was not (``explained``).
    """
    with writer_lock(memory.paths.state, wait_seconds=lock_wait_seconds(WRITER_WAIT_SECONDS)):
        if dry_run:  # a dry run writes nothing, so it cannot recover: it must not read half-written files
            journal.require_settled(memory.root)
        recovered = False if dry_run else journal.recover(memory.root, memory.paths.state)
        # git compares every tracked file while the run reads its caches; waited for before the run
        # uses a file (_load_frozen). Ingest's raw bookkeeping comes with it: not an edit, but committed.
        check = journal.CleanCheck(memory.root, "dreaming", also=manifest_commit.tracked_raw_paths(memory))
        thresholds = gc.get_threshold()
        gc.set_threshold(GC_YOUNG_THRESHOLD, *thresholds[1:])
        try:
            return _dream_locked(memory, dry_run, recovered, check, extractor, commit_in_project, budget, progress,
                                 explain)
        finally:
            check.close()
            gc.set_threshold(*thresholds)
            gc.unfreeze()  # the cards and events _dream_locked loaded may be collected again


def _run_settings(settings: Settings, extractor: str | None) -> Settings:
    """The memory's settings with this run's extractor command, on a copy (memory.settings is shared)."""
    if extractor is None:
        return settings
    values = copy.deepcopy(settings.values)
    values["dream"]["extractor"]["command"] = extractor or None
    return Settings(values)


def _dream_locked(memory: Memory, dry_run: bool, recovered: bool, check: journal.CleanCheck,
                  extractor: str | None = None, commit_in_project: bool = False,
                  budget: budget_mod.DreamBudget | None = None, progress: Progress = NO_PROGRESS,
                  explain: bool = False) -> DreamReport:
    started = time.monotonic()
    now = now_iso()
    settings = _run_settings(memory.settings, extractor)
    ledger = ledger_mod.load(memory.paths.state, memory.root)  # its head is HEAD's sha
    # The check finds the tracked files as HEAD has them; in a project's repository only as its index has them.
    clean_at = None if gitops.in_project(memory.root) else ledger.head
    cached, raw_pending = _load_frozen(memory, clean_at, check)
    cards = {item.card.id: item.card for item in cached}
    if len(cards) != len(cached):
        raise InvalidMemory("two card files share one id (run `memdream lint`)")
    # What each card was, to write only the cards a stage changed (a snapshot: serializing ten
    # thousand cards twice a run would cost more than an incremental dream's real work).
    # Held to the end of the run, as the cards: out of the collector's sight.
    before = _frozen(lambda: {item.card.id: (item.card.snapshot(), item.relpath) for item in cached})
    sizes = {item.card.id: item.size for item in cached}
    raw = RawLayer(memory.paths)
    state = _load_state(memory, raw, lambda: {item.card.id: Card.from_dict(item.card.to_dict()) for item in cached},
                        settings, ledger)
    manifest = raw.manifest()
    new = [r.segment for r in manifest if _segment_number(r.segment) > state.consumed]
    consumed = (_segment_number(new[0]), _segment_number(new[-1])) if new else None
    report = DreamReport(run_id="", dry_run=dry_run, consumed=consumed, recovered=recovered)
    # The events are held to the end of the run, as the cards are: out of the collector's sight too.
    waiting, waiting_read = _frozen(lambda: _waiting_events(raw, manifest, ledger, state.consumed, report))
    events = waiting + _frozen(lambda: _read_events(raw, new, report))
    report.span = _span(ledger, consumed)
    if budget is not None:
        from memdream.dream.budget import within

        events, report.deferred = within(events, budget.events_allowed(state.seconds_per_event))
    report.run_id = _run_id(now, consumed, events, ledger.head)  # load made it HEAD's sha (one git process less)
    ctx = DreamContext(now=now, run_id=report.run_id, settings=settings, cards=cards, plan=memory.load_plan(),
                       events=events, key_stats=state.key_stats, sessions_seen=state.sessions_seen,
                       recent_ops=_recent_ops(memory), state_dir=memory.paths.state,
                       audit_dir=memory.paths.audit)
    plan_before = ctx.plan.to_dict()
    fixed = _fixed_files(memory)
    report.before = measure(((card, sizes[card.id]) for card in cards.values()), *fixed)
    with progress.task(f"dreaming {len(events)} event(s)", total=len(STAGES)) as advance:
        for name, stage in STAGES.items():
            progress.describe(f"dreaming {len(events)} event(s): {name}")
            stage(ctx)
            advance(1)
    ctx.ops.sort(key=lambda operation: OP_ORDER.get(operation.op, 9))
    report.events, report.episodes, report.skipped_episodes = len(events), len(ctx.episodes), ctx.skipped_episodes
    report.not_admitted = dict(sorted(ctx.not_admitted.items()))
    report.warnings = list(ctx.warnings)
    report.operations = [operation.to_dict(report.run_id) for operation in ctx.ops]
    if explain:
        from memdream.dream.explain import explain as explained

        report.explained = explained(ctx)
    on_disk: dict[str, Card] = {}
    touched = _touched(memory, ctx, before)
    report.changes = _changes(memory, ctx, before, touched, plan_before, on_disk) if _learned(ctx) else []
    report.after = _measure_after(memory, ctx, report.changes, sizes, fixed, report.before, before, touched)
    if dry_run:
        return report
    if ledger.waiting() and waiting_read:
        report.redreamed = ledger.redreamed(report.run_id)
    elif ledger.waiting():  # a clone without the raw layer: they keep waiting for a memory that has them
        report.warnings.append("events waiting to be dreamed again are in raw segments that are not here")
    if consumed is not None:
        ledger.consumed(report.run_id, *consumed)
    if report.deferred and report.span is not None:
        ledger.defer(report.run_id, *report.span, report.deferred)
    if report.changes or raw_pending or report.redreamed or report.deferred:
        report.commit = _write_and_commit(memory, ctx, report, raw_pending, commit_in_project)
        remember_cards(memory, on_disk, [change.path for change in report.changes if change.action == "delete"],
                       commit=report.commit if clean_at is not None else None)
        _remember_evidence(memory, ctx, report.changes)
    # HEAD is the commit just made, else the one the run started from (the ledger's, from load).
    ledger_mod.save(memory.paths.state, ledger, report.commit or ledger.head)
    if consumed is not None:
        state.consumed = consumed[1]
    state.last_run = now  # every dream, not only those that commit: decay's clock-jump guard reads it
    if len(events) >= SPEED_SAMPLE:  # what --max-seconds turns into events next time
        state.seconds_per_event = (time.monotonic() - started) / len(events)
    state_mod.save(memory.paths.state, state)
    journal.end(memory.root)
    return report


def _remember_evidence(memory: Memory, ctx: DreamContext, changes: list[FileChange]) -> None:
    """The evidence lines of the audit file this run wrote go into the evidence log's cache, when the
    run read the log: the next dream then parses no audit file of this one."""
    log = ctx.memo.get("evidence_log")
    name = f"{ctx.run_id}.jsonl"
    if log is not None and any(change.path == f"{AUDIT_DIR}/{name}" for change in changes):
        log.remember(memory.paths.audit, memory.paths.state / "cache", name)


def _learned(ctx: DreamContext) -> bool:
    """Whether the run has anything of its own to write: events read or an operation (decay, capacity).
    Without either, what changed is bookkeeping (recall's usage folded into reference counts, the index
    that shows them); it waits for the next dream that reads events, so that usage alone never makes a
    commit, which `rollback` would then undo in place of the last real dream."""
    return bool(ctx.events) or bool(ctx.ops)


def _load_frozen(memory: Memory, clean_at: str | None, check: journal.CleanCheck) -> tuple[list[CachedCard], list[str]]:
    """Every card, kept out of the garbage collector's sight until the run ends (dream() unfreezes):
    the run holds them all to the end, and each full collection would walk ten thousand cards and
    their evidence again (a third of an incremental dream's time). ``clean_at``: see load_cards.

    The card cache is read while git checks the tree (``check``: unpickling ten thousand cards takes
    longer than git's look at every file), and no card file is read before the check said clean.
    Also the changed raw bookkeeping the check found."""

    def load() -> tuple[list[CachedCard], list[str]]:
        cache = read_cache(memory)
        raw_pending = check.wait()
        return load_cards(memory, clean_at=clean_at, cache=cache), raw_pending

    return _frozen(load)


def _frozen(load: Callable[[], _Loaded]) -> _Loaded:
    """What ``load`` returns, moved out of the garbage collector's sight (``gc.freeze``) until the run
    ends: a full collection walks every live object, and a dream holds its cards and events to the end
    (without this, collections were a third of a dream of 100,000 events, and grew faster than it)."""
    enabled = gc.isenabled()
    gc.disable()  # until they are frozen: a collection right after loading would walk them all
    try:
        loaded = load()
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    return loaded


def _fixed_files(memory: Memory) -> tuple[int, int]:
    files = [memory.paths.plan, memory.paths.index]
    present = [path for path in files if path.exists()]
    return sum(path.stat().st_size for path in present), len(present)


Snapshot = tuple[Any, ...]  # Card.snapshot()
Before = dict[str, tuple[Snapshot, str]]  # card id -> (the card as read, its file relative to the root)


def _touched(memory: Memory, ctx: DreamContext, before: Before) -> list[str]:
    """The cards whose file or figures may differ from what was read, in id order: new ones, those a
    stage changed, those not in the folder their type and status name, and any a stage dropped. The
    rest are as read: what to write and the figures after the run look at these alone (redacting and
    validating every card, or measuring it again, would cost a dream O(memory))."""
    relpath = memory.paths.card_relpath
    touched = [card_id for card_id, card in ctx.cards.items()
               if (old := before.get(card_id)) is None or old[0] != card.snapshot()
               or old[1] != relpath(card.type, card_id, archived=not card.is_active)]
    touched += before.keys() - ctx.cards.keys()
    return sorted(touched)


def _changes(memory: Memory, ctx: DreamContext, before: Before, touched: list[str], plan_before: dict[str, Any],
             on_disk: dict[str, Card]) -> list[FileChange]:
    """The files to write; fills ``on_disk`` (relative path -> the card as its written file will say)."""
    # Dream never commits what lint would reject: what it writes passes the redaction rules of
    # memdream.yaml as they are now (a rule added after ingest still keeps its matches out of git).
    redactor = Redactor.from_settings(memory.settings)
    changes: list[FileChange] = []
    written: list[Card] = []
    for card_id in touched:
        card = ctx.cards.get(card_id)
        if card is None:
            continue  # dropped by a stage: its file stays
        target = memory.paths.card_relpath(card.type, card_id, archived=not card.is_active)
        old = before.get(card_id)
        data = _valid(f"card {card_id}", "card", _redacted_fields(redactor, card.to_dict(), _CARD_TEXT_FIELDS))
        text = yamlio.dumps(data)
        if old is not None and old[1] == target and _same_text(memory.root / target, text):
            continue  # changed in memory only (its evidence read in full), not in what the file says
        on_disk[target] = Card.from_dict(data)
        written.append(card)
        changes.append(FileChange(target, "write", text))
        if old is not None and old[1] != target:
            changes.append(FileChange(old[1], "delete"))
    plan_data = _valid(PLAN_FILE, "plan", _redacted_plan(redactor, ctx.plan.to_dict()))
    if plan_data != plan_before:
        changes.append(FileChange(PLAN_FILE, "write", yamlio.dumps(plan_data)))
    if changes or ctx.ops:
        index_path = memory.paths.index
        current = index_path.read_text(encoding="utf-8") if index_path.exists() else ""
        index_text = _redacted_index(redactor, ctx.index_text, current)
        if current != index_text:
            changes.append(FileChange(INDEX_FILE, "write", index_text))
    held = _held_evidence(ctx, before, written)
    if ctx.ops or held:
        lines = [_redacted_fields(redactor, op.to_dict(ctx.run_id), _AUDIT_TEXT_FIELDS) for op in ctx.ops]
        lines += held
        tenant = memory.settings.get("tenant")  # each line says whose memory wrote it (lint checks it)
        audit = "".join(json.dumps(marked(line, tenant), ensure_ascii=False) + "\n" for line in lines)
        changes.append(FileChange(f"{AUDIT_DIR}/{ctx.run_id}.jsonl", "write", audit))
    return changes


def _redacted_index(redactor: Redactor, text: str, current: str) -> str:
    """INDEX.md with its new lines redacted (Markdown: a placeholder changes no meaning). A line
    the committed index already has passed redaction when it was written: re-scanning a
    10,000-line index every run would cost a dream what the memory weighs."""
    known = set(current.splitlines())
    lines = text.split("\n")
    fresh = [index for index, line in enumerate(lines) if line not in known]
    if fresh:
        redacted = redactor.redact("\n".join(lines[index] for index in fresh))[0].split("\n")
        if len(redacted) == len(fresh):  # a placeholder never spans lines; if it did, redact it all
            for index, line in zip(fresh, redacted):
                lines[index] = line
        else:
            return redactor.redact(text)[0]
    return "\n".join(lines)


def _same_text(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _held_evidence(ctx: DreamContext, before: Before, written: list[Card]) -> list[dict[str, Any]]:
    """Audit lines for the evidence that the written cards do not show (see memory/evidence_log.py)."""
    log = ctx.memo.get("evidence_log")  # loaded when a card that had held evidence was expanded
    lines = []
    for card in written:
        if not card.evidence_complete or len(card.evidence) <= INLINE_EVIDENCE:
            continue  # evidence untouched since it was read, or all of it on the card
        # Without the log loaded this run, no card whose evidence the audit holds was touched:
        # a card that grows past the inline list is logged whole (a repeat would be harmless).
        held = {item.ref for item in log.refs(card.id)} if log is not None and card.id in before else set()
        added = [item for item in card.evidence if item.ref not in held]
        if added:
            lines.append(evidence_line(ctx.run_id, card.id, added))
    return lines


# The free-text fields of what dream writes; ids, refs, dates and enums are left alone (a
# placeholder there would break a reference or the schema, and ingest redacted their sources).
_CARD_TEXT_FIELDS = ("subject", "attribute", "value", "statement", "scope", "review", "tags")
_PLAN_ITEM_TEXT_FIELDS = ("text", "scope")
_AUDIT_TEXT_FIELDS = ("reason",)


def _redacted_fields(redactor: Redactor, data: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``data`` with the string fields ``names`` redacted (together: a fact's ``value`` whose
    ``attribute`` is ``password`` is a secret), before any serialization. A tag that held a
    secret is dropped: a placeholder is no valid tag."""
    fields = {name: data[name] for name in names if name in data}
    redacted, counts = redactor.redact_obj(fields)
    if not counts:
        return data
    if "tags" in redacted:
        redacted["tags"] = [tag for tag in redacted["tags"] if "[REDACTED:" not in tag]
        if not redacted["tags"]:
            del redacted["tags"]
            data = {key: value for key, value in data.items() if key != "tags"}
    return {**data, **redacted}


def _valid(what: str, schema: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` when it passes its schema; else the run stops before writing anything: dream never
    commits what lint would reject (this is a bug guard, not a user error)."""
    from memdream import schemas

    errors = schemas.iter_errors(schema, data)
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "(top)"
        raise InvalidMemory(f"dream made an invalid {what} ({where}: {errors[0].message}); nothing was written")
    return data


def _redacted_plan(redactor: Redactor, data: dict[str, Any]) -> dict[str, Any]:
    redacted = _redacted_fields(redactor, data, ("goal",))
    for name in ("next", "done", "goals"):
        if name in redacted:
            redacted[name] = [_redacted_fields(redactor, item, _PLAN_ITEM_TEXT_FIELDS) for item in redacted[name]]
    return redacted


def _measure_after(memory: Memory, ctx: DreamContext, changes: list[FileChange], sizes: dict[str, int],
                   fixed: tuple[int, int], measured: Metrics, before: Before, touched: list[str]) -> Metrics:
    """The figures after the run: those before (``measured``), with the touched cards as they were
    counted out and as they are counted in (each card adds its own share to every figure)."""
    written = {change.path: len(change.text.encode("utf-8")) for change in changes if change.action == "write"}
    fixed_bytes = 0
    for name, path in ((PLAN_FILE, memory.paths.plan), (INDEX_FILE, memory.paths.index)):
        fixed_bytes += written.get(name, path.stat().st_size if path.exists() else 0)
    now = []
    for card_id in touched:
        card = ctx.cards.get(card_id)
        if card is not None:
            shown = memory.paths.card_relpath(card.type, card_id, archived=not card.is_active)
            now.append((card, written.get(shown, sizes.get(card_id, 0))))
    was = [(_as_read(before[card_id][0]), sizes[card_id]) for card_id in touched if card_id in before]
    return _recounted(measured, measure(now, fixed_bytes, 0), measure(was, fixed[0], 0))


_CARD_FIELDS = tuple(item.name for item in fields(Card))


def _as_read(snapshot: Snapshot) -> Card:
    """The card a snapshot was taken of, as it was then (a snapshot holds its fields in their order)."""
    if len(snapshot) != len(_CARD_FIELDS):
        raise InvalidMemory("a card holds more than its fields (a bug: Card.snapshot)")
    return Card(**dict(zip(_CARD_FIELDS, snapshot)))


def _recounted(base: Metrics, counted_in: Metrics, counted_out: Metrics) -> Metrics:
    """``base`` plus the figures of ``counted_in``, minus those of ``counted_out``, field by field."""
    values: dict[str, Any] = {}
    for item in fields(Metrics):
        was, plus, minus = (getattr(figures, item.name) for figures in (base, counted_in, counted_out))
        values[item.name] = ({key: was[key] + plus[key] - minus[key] for key in was} if isinstance(was, dict)
                             else was + plus - minus)
    return Metrics(**values)


def _summary(report: DreamReport) -> str:
    counts = report.counts
    words = {"add": "added", "update": "updated", "supersede": "superseded", "merge": "merged",
             "archive": "archived", "demote": "demoted", "conflict": "in conflict"}
    parts = [f"{counts[op]} {words[op]}" for op in OP_ORDER if counts.get(op)]
    if not parts and not report.changes:
        return f"memdream dream: {report.events} event(s), no card changed"
    return "memdream dream: " + (", ".join(parts) if parts else "plan and index")


def _body(report: DreamReport) -> str:
    before, after = report.before, report.after
    lines = [
        f"events: {report.events} in {report.episodes} episode(s), {report.skipped_episodes} below budget",
        f"active cards: {before.active_cards} -> {after.active_cards}",
        f"bytes: {before.bytes} -> {after.bytes}",
        f"conflicts: {before.conflicts} -> {after.conflicts}",
        f"archive: {before.superseded + before.archived} -> {after.superseded + after.archived}",
    ]
    if report.not_admitted:
        lines.append("not admitted: " + ", ".join(f"{n} {why}" for why, n in report.not_admitted.items()))
    return "\n".join(lines)


def _write_and_commit(memory: Memory, ctx: DreamContext, report: DreamReport, raw_pending: list[str],
                      commit_in_project: bool = False) -> str | None:
    """Write the changed files under the journal and commit them once, with ingest's waiting raw
    bookkeeping (``raw_pending``); in a project's repository only stage them unless asked."""
    journal.begin(memory.root, report.run_id, started=ctx.now)
    for change in report.changes:
        path = memory.root / change.path
        if change.action == "write":
            # Not synced file by file: the journal, written (and synced) first, is what makes a crash safe
            # (the next run puts every tracked file back as HEAD has it), and git does not sync the commit
            # that follows either (core.fsync leaves loose objects, refs and the index to the OS). A sync
            # cost 3-6 ms a file on a busy disk: 200-400 ms for an incremental dream's 70 files.
            yamlio.write_atomic(path, change.text, sync=False)
        else:
            path.unlink(missing_ok=True)
    pause_for_tests()
    trailers: dict[str, str] = {trailer.RUN: report.run_id}
    if report.consumed is not None:
        trailers[trailer.CONSUMED] = state_mod.consumed_trailer(*report.consumed)
    if report.consumed is not None or report.redreamed:
        trailers[trailer.EVENTS] = str(report.events)
    paths, files = list(TRACKED), [change.path for change in report.changes]
    if raw_pending:  # ingest's bookkeeping rides with the dream (ingest.commit)
        report.ingested = manifest_commit.uncommitted_segments(memory)
        trailers[trailer.INGEST] = manifest_commit.trailer_value(report.ingested)
        raw_paths = manifest_commit.tracked_raw_paths(memory)
        paths += raw_paths
        if manifest_commit.track_raw(memory):
            manifest_commit.stage(memory)
            # Staged, not merely changed: with ingest.track_raw the new segments are files .gitignore names.
            files += gitops.staged_paths(memory.root, raw_paths)
        else:  # the manifest, which `git status` found changed: named like the dream's files, staged with them
            files += raw_pending
    if gitops.in_project(memory.root) and not commit_in_project:  # the user's branch: stage, never commit
        gitops.stage(memory.root, paths, force=manifest_commit.track_raw(memory),
                     index_lock=index_lock(memory.paths.state))
        report.staged_in = gitops.project_top(memory.root)
        return None
    message_trailers = [(key, value) for key, value in trailers.items()]
    message_trailers += [(trailer.REDREAMED, run) for run in report.redreamed]
    if report.deferred and report.span is not None:
        span = report.span
        message_trailers += [(trailer.DEFERRED, ledger_mod.deferred_trailer(*span, episode))
                             for episode in report.deferred]
    # Nothing written but events resumed or deferred: an empty commit still carries the ledger's trailers.
    return gitops.commit(memory.root, _summary(report), _body(report), message_trailers, paths=paths,
                         files=files, allow_empty=not files, index_lock=index_lock(memory.paths.state))
