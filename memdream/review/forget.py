"""`memdream forget`: erase one subject, one session or one card from a memory, and leave a tombstone.

What is erased is what `memdream export` would hand over for the same query (:func:`export.select`), so
that a person can see first what will go: the cards about it and their versions (active and archived),
its raw events, the audit lines and plan items about it. Two refinements, because erasing must not break
what stays: an event found only as the evidence of an erased card is kept when a card that stays cites
it too, or when it is another session's (--session erases the session, not its neighbours); and a card
that stays but had all its evidence erased is erased with it. What stays is cleaned: cards that name the
subject have the name replaced by ``[forgotten]`` and lose their links to erased cards and their erased
evidence; audit lines and plan items are dropped or redacted (:mod:`.erasure`); INDEX.md is rendered
again as dream renders it.

The run, as dream's and rollback's: the writer lock, a clean tree, then

1. what ingest must leave out from now on (``.memdream/ingest/forgotten.json``: digests of ids);
2. the raw segments, rewritten roll-forward (:mod:`.forget_local`) and their manifest;
3. ``.memdream/``: caches and dream's statistics removed (rebuilt when next needed), logs and ingest's
   state cleaned;
4. the tracked files under the journal (``Memdream-Forget: <id>`` names the commit that ends it), the
   tombstone ``audit/<id>.jsonl``, one commit;
5. with ``purge_history``, every commit rewritten by the same rules (:mod:`.forget_history`).

The tombstone is one audit line: what kind of thing was erased, how much of each layer, when, and
whether history was to be rewritten; never what was erased, nor the subject's name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream import gitops, yamlio
from memdream.clock import now_iso, parse_timestamp
from memdream.errors import GitError, MemdreamError, UsageError
from memdream.ingest.dedup import Forgotten
from memdream.memory import journal, manifest_commit
from memdream.memory import trailers as trailer
from memdream.memory.evidence_log import EvidenceLog
from memdream.memory.lock import WRITER_WAIT_SECONDS, index_lock, lock_wait_seconds, writer_lock
from memdream.memory.paths import AUDIT_DIR, CONFIG_FILE, INDEX_FILE, PLAN_FILE
from memdream.memory.refs import REF_SCHEME
from memdream.memory.store import Memory
from memdream.memory.tenant_marks import marked
from memdream.review import forget_local
from memdream.review.erasure import CARD, PLACEHOLDER, SESSION, SUBJECT, Erasure
from memdream.review.export import Selection, select
from memdream.review.history import FORGET_MARK

if TYPE_CHECKING:
    from memdream.memory.card import Card
    from memdream.memory.cardcache import CachedCard

FORGET_OP = "forget"
HISTORY_KEPT = ("history kept: earlier commits still hold what was erased (memdream forget --purge-history "
                "rewrites them)")
NOT_REACHED = "copies already pushed, cloned or backed up elsewhere are not reached"


@dataclass
class FileChange:
    """One tracked file the forget writes (``text``) or deletes (``text`` None)."""

    path: str
    text: str | None


@dataclass
class ForgetPlan:
    """What one forget erases and changes, computed before anything is written."""

    erasure: Erasure
    selection: Selection
    loaded: list[CachedCard]  # every card of the memory
    log: EvidenceLog  # the evidence the audit files hold, before the forget
    erased: list[CachedCard]  # cards and archived versions removed
    cascaded: list[str]  # of those, cards that stayed out of the selection but had all their evidence erased
    events: list[tuple[str, int, str, str]]  # (segment, line, session, id) of the erased raw events
    changes: list[FileChange] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # ids of cards that stay, cleaned
    audit_lines: int = 0  # audit lines dropped or rewritten
    plan_items: int = 0

    @property
    def dropped_lines(self) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for segment, line, _, _ in self.events:
            found.setdefault(segment, set()).add(line)
        return found

    @property
    def empty(self) -> bool:
        return not (self.erased or self.events or self.changes)


@dataclass
class ForgetResult:
    """What a forget erased (or, a dry run, would erase): counts per layer and the card ids."""

    forget_id: str
    kind: str
    dry_run: bool
    purge_history: bool
    at: str
    cards: list[str] = field(default_factory=list)  # active cards erased
    archived: list[str] = field(default_factory=list)  # archived versions erased
    redacted: list[str] = field(default_factory=list)  # cards that stay, with what named it taken out
    events: int = 0
    segments: int = 0
    audit_lines: int = 0
    plan_items: int = 0
    local_files: int = 0  # files of .memdream/ removed or cleaned
    commit: str | None = None
    history_rewritten: bool = False
    raw_layer: str = "present"

    @property
    def empty(self) -> bool:
        return not (self.cards or self.archived or self.redacted or self.events or self.audit_lines or self.plan_items)

    def counts(self) -> dict[str, int]:
        return {"cards": len(self.cards), "archived": len(self.archived), "redacted_cards": len(self.redacted),
                "events": self.events, "segments": self.segments, "audit_lines": self.audit_lines,
                "plan_items": self.plan_items, "local_files": self.local_files}

    def to_dict(self) -> dict[str, Any]:
        return {"forget": self.forget_id, "erased": self.kind, "dry_run": self.dry_run, "at": self.at,
                "counts": self.counts(), "cards": self.cards, "archived": self.archived, "redacted": self.redacted,
                "commit": self.commit, "purge_history": self.purge_history,
                "history_rewritten": self.history_rewritten, "raw_layer": self.raw_layer,
                "not_reached": NOT_REACHED}


def forget(memory: Memory, subject: str | None = None, session: str | None = None, card: str | None = None,
           purge_history: bool = False, dry_run: bool = False) -> ForgetResult:
    """Erase ``subject``, ``session`` or ``card`` (exactly one) from the memory; one commit, and with
    ``purge_history`` every earlier commit rewritten. ``dry_run``: say what would go; write nothing."""
    if [subject, session, card].count(None) != 2:
        raise UsageError("give exactly one of --subject, --session or --card (see 'memdream forget --help')")
    root = memory.root
    if not gitops.is_repo(root):
        raise GitError(f"{root} is not a memory repository: forget commits what it erases")
    if gitops.in_project(root):
        raise GitError(f"{root} is a folder of the repository {gitops.project_top(root)}: memdream does not "
                       "make commits on your branch there; erase with git in that repository")
    with writer_lock(memory.paths.state, wait_seconds=lock_wait_seconds(WRITER_WAIT_SECONDS)):
        if dry_run:  # writes nothing, so it cannot recover: it must not read half-written files
            journal.require_settled(root)
        else:
            journal.recover(root, memory.paths.state)
            forget_local.resume(memory)
        journal.require_clean(root, "forgetting")
        now = now_iso()
        plan = plan_forget(memory, subject, session, card, purge_history)
        result = _result(plan, _forget_id(root, plan, now), now, dry_run, purge_history)
        if dry_run or (plan.empty and not purge_history):
            return result
        if not plan.empty:
            _erase(memory, plan, result)
        if purge_history:
            from memdream.review.forget_history import purge

            purge(memory, plan.erasure)
            result.history_rewritten = True
            result.commit = gitops.head_or_none(root) if result.commit else None  # its id changed too
        _update_ledger(memory)
        return result


# --- what is erased ----------------------------------------------------------------------------------------

def plan_forget(memory: Memory, subject: str | None, session: str | None, card: str | None,
                purge_history: bool = False) -> ForgetPlan:
    """Everything the forget erases and every file it changes (nothing is written)."""
    from memdream.memory.cardcache import load_cards

    loaded = load_cards(memory)
    selection = select(memory.root, subject=subject, session=session, card=card, loaded=loaded)
    if card is not None and not selection.about and not purge_history:
        raise MemdreamError(f"no card {card!r} in this memory, active or archived (see `memdream cards`)")
    kind = selection.query.kind
    erasure = Erasure(kind, selection.pattern, selection.query.key if kind == SUBJECT else None, session, card,
                      cards={item.card.id for item in selection.about} | ({card} if card is not None else set()))
    earlier = Forgotten.load(memory.paths.state)
    if earlier:
        erasure.earlier = earlier.holds
    log = EvidenceLog.load(memory.paths.audit)
    events = _erased_events(selection, erasure, loaded, log)
    erasure.refs = {f"{REF_SCHEME}{event_session}#{event_id}" for _, _, event_session, event_id in events}
    cascaded = _without_evidence(loaded, erasure, log)
    erasure.cards.update(cascaded)
    erased = [item for item in loaded if item.card.id in erasure.cards]
    plan = ForgetPlan(erasure, selection, loaded, log, erased, cascaded, events)
    _tracked_changes(memory, plan)
    return plan


def _erased_events(selection: Selection, erasure: Erasure, loaded: list[CachedCard],
                   log: EvidenceLog) -> list[tuple[str, int, str, str]]:
    """The selected events but those found only as evidence of an erased card that another session holds
    (--session) or that a card which stays cites too."""
    survivors = [item.card for item in loaded if item.card.id not in erasure.cards]
    cited = {evidence.ref for card in survivors for evidence in log.of(card)}
    found = []
    for item in selection.events:
        event = item["event"]
        ref = f"{REF_SCHEME}{event.get('session')}#{event.get('id')}"
        if item["why"] == ["evidence"] and (erasure.kind == SESSION or ref in cited):
            continue
        found.append((item["segment"].rsplit("/", 1)[-1], item["line"], str(event.get("session")),
                      str(event.get("id"))))
    return found


def _without_evidence(loaded: list[CachedCard], erasure: Erasure, log: EvidenceLog) -> list[str]:
    """Cards that stay out of the selection but whose every piece of evidence is erased: knowledge with no
    source left goes too."""
    found = []
    for item in loaded:
        if item.card.id in erasure.cards:
            continue
        refs = [evidence.ref for evidence in log.of(item.card)]
        if refs and all(erasure.erased_ref(ref) for ref in refs):
            found.append(item.card.id)
    return found


# --- the tracked files ---------------------------------------------------------------------------------------

def _tracked_changes(memory: Memory, plan: ForgetPlan) -> None:
    """Fill ``plan.changes`` (and its counts): erased card files, the audit files, the cards that stay but
    named what is erased, the plan and the other tracked text files (the index and tombstone come later)."""
    erasure, root = plan.erasure, memory.root
    plan.changes += [FileChange(item.relpath, None) for item in plan.erased]
    plan.changes += _audit_changes(memory.paths.audit, erasure, plan)
    held = _held_after(plan.changes, memory.paths.audit)
    for item in plan.loaded:
        if item.card.id in erasure.cards or not _may_name(item.card, erasure, plan.log):
            continue
        data = yamlio.load_file(root / item.relpath)
        cleaned = erasure.clean_card(data, [evidence.to_dict() for evidence in held.refs(item.card.id)])
        if cleaned is not None and cleaned != data:
            plan.changes.append(FileChange(item.relpath, yamlio.dumps(cleaned)))
            plan.redacted.append(item.card.id)
    plan.changes += _plan_changes(memory.paths.plan, erasure, plan)
    plan.changes += _other_text_changes(root, erasure)


def _may_name(card: Card, erasure: Erasure, log: EvidenceLog) -> bool:
    """A cheap test of whether a card that stays names what is erased (``log``: its evidence before)."""
    if erasure.pattern is not None and erasure.pattern.in_card(card):
        return True
    if any(other in erasure.cards for other in (*card.supersedes, *card.superseded_by, *card.derived_from)):
        return True
    return any(erasure.erased_ref(evidence.ref) for evidence in log.of(card))


def _audit_changes(folder: Path, erasure: Erasure, plan: ForgetPlan) -> list[FileChange]:
    changes = []
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        text = path.read_text(encoding="utf-8")
        cleaned = erasure.clean_audit_text(text)
        if cleaned != text:
            old, new = text.splitlines(), cleaned.splitlines()
            plan.audit_lines += len(old) - len(new) + len(set(new) - set(old))
            changes.append(FileChange(f"{AUDIT_DIR}/{path.name}", cleaned))
    return changes


def _held_after(changes: list[FileChange], folder: Path) -> EvidenceLog:
    """The evidence the audit files hold once cleaned (read from the cleaned texts, not the disk)."""
    from memdream.memory.card import Evidence

    held: dict[str, list[Evidence]] = {}
    for text in _audit_texts(folder, changes).values():
        for line in text.splitlines():
            if '"op": "evidence"' not in line:
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("card"), str) and isinstance(data.get("added"), list):
                held.setdefault(data["card"], []).extend(
                    Evidence.from_dict(item) for item in data["added"]
                    if isinstance(item, dict) and isinstance(item.get("ref"), str))
    return EvidenceLog(held)


def _audit_texts(folder: Path, changes: list[FileChange]) -> dict[str, str]:
    """The audit files by name, oldest run first, as the forget leaves them."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in folder.glob("*.jsonl")} \
        if folder.is_dir() else {}
    texts.update({Path(change.path).name: change.text or "" for change in changes
                  if change.path.startswith(f"{AUDIT_DIR}/")})
    return {name: texts[name] for name in sorted(texts)}


def _plan_changes(path: Path, erasure: Erasure, plan: ForgetPlan) -> list[FileChange]:
    data = yamlio.load_mapping(path)
    if data is None:
        return []
    cleaned = erasure.clean_plan(data)
    if cleaned == data:
        return []
    plan.plan_items = sum(len(data.get(name) or []) - len(cleaned.get(name) or [])
                          for name in ("next", "done", "goals"))
    plan.plan_items += int(cleaned.get("goal") != data.get("goal"))
    return [FileChange(PLAN_FILE, yamlio.dumps(cleaned))]


def _other_text_changes(root: Path, erasure: Erasure) -> list[FileChange]:
    """Other tracked files that name the subject (memdream.yaml, .gitignore, ...), redacted."""
    if erasure.pattern is None:
        return []
    changes = []
    for path in gitops.tracked_paths(root):
        if path.startswith(("cards/", "archive/", f"{AUDIT_DIR}/", "raw/")) or path in (PLAN_FILE, INDEX_FILE):
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if erasure.names_subject(text):
            changes.append(FileChange(path, erasure.redact(text)))
    return changes


def _index_text(memory: Memory, plan: ForgetPlan, changes: list[FileChange]) -> str:
    """INDEX.md rendered as dream renders it, from the cards that stay and the cleaned audit files."""
    from memdream.dream import index_file
    from memdream.dream.model import DreamContext
    from memdream.memory.card import Card

    cleaned = {Path(change.path).stem: change.text for change in changes
               if change.path.startswith(("cards/", "archive/"))}
    cards: dict[str, Card] = {}
    for item in plan.loaded:
        if item.card.id not in plan.erasure.cards:
            text = cleaned.get(item.card.id)
            cards[item.card.id] = Card.from_dict(yamlio.loads(text)) if text else item.card
    ctx = DreamContext(now=now_iso(), run_id=FORGET_OP, settings=memory.settings, cards=cards,
                       plan=memory.load_plan(), events=[], key_stats={}, sessions_seen=set(),
                       recent_ops=_recent_ops(memory.paths.audit, changes))
    return index_file.render(ctx)


def _recent_ops(folder: Path, changes: list[FileChange]) -> list[dict[str, Any]]:
    """The last operations of the (cleaned) audit files, oldest first, as dream shows them in INDEX.md."""
    from memdream.dream.index_file import MAX_RECENT

    texts = _audit_texts(folder, changes)
    found: list[dict[str, Any]] = []
    for name in list(texts)[-3:]:
        for line in texts[name].splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("op") != "evidence" and "card" in entry and "reason" in entry:
                found.append(entry)
    return found[-MAX_RECENT:]


# --- writing -------------------------------------------------------------------------------------------------

def _erase(memory: Memory, plan: ForgetPlan, result: ForgetResult) -> None:
    """Steps 1 to 4 of the module's docstring (the local state before the commit: what is cleaned there
    is rebuilt from the memory, whether or not the commit follows)."""
    forget_local.remember_forgotten(memory, plan.erasure, [(session, event_id)
                                                           for _, _, session, event_id in plan.events])
    staged = forget_local.stage_raw(memory, result.forget_id, plan.dropped_lines)
    if staged is not None:
        forget_local.apply_raw(memory, staged)
    result.local_files = forget_local.scrub_state(memory, plan.erasure)  # caches: rebuilt, whatever follows
    result.commit = _commit(memory, plan, result)


def _commit(memory: Memory, plan: ForgetPlan, result: ForgetResult) -> str:
    """The tracked files under the journal, and one commit that ends it."""
    root = memory.root
    line = marked(_tombstone(result), str(memory.settings.get("tenant")))  # whose memory, as dream's lines
    tombstone = FileChange(f"{AUDIT_DIR}/{result.forget_id}.jsonl", json.dumps(line) + "\n")
    changes = [*plan.changes, tombstone]
    changes.append(FileChange(INDEX_FILE, _index_text(memory, plan, changes)))
    journal.begin(root, result.forget_id, named_by=trailer.FORGET)
    for change in changes:
        if change.text is None:
            (root / change.path).unlink(missing_ok=True)
        else:
            yamlio.write_atomic(root / change.path, change.text)
    journal.pause_for_tests()
    trailers = [(trailer.FORGET, result.forget_id)]
    paths, files = [*journal.TRACKED, CONFIG_FILE, *_other_paths(changes)], [change.path for change in changes]
    if manifest_commit.pending(memory):  # the rewritten manifest, and ingest's bookkeeping waiting for a dream
        waiting = manifest_commit.uncommitted_segments(memory)
        if waiting:
            trailers.append((trailer.INGEST, manifest_commit.trailer_value(waiting)))
        manifest_commit.stage(memory)
        raw_paths = manifest_commit.tracked_raw_paths(memory)
        files += gitops.staged_paths(root, raw_paths)
        paths += raw_paths
    commit = gitops.commit(root, _subject(result), _body(result), trailers, paths=paths, files=files,
                           index_lock=index_lock(memory.paths.state))
    journal.end(root)
    return commit


def _other_paths(changes: list[FileChange]) -> list[str]:
    tracked_dirs = ("cards/", "archive/", f"{AUDIT_DIR}/")
    return [change.path for change in changes
            if not change.path.startswith(tracked_dirs) and change.path not in (PLAN_FILE, INDEX_FILE, CONFIG_FILE)]


def _update_ledger(memory: Memory) -> None:
    """HEAD moved (and with --purge-history every commit id changed): the ledger is saved anew."""
    from memdream.dream import ledger as ledger_mod

    state = memory.paths.state
    ledger_mod.save(state, ledger_mod.load(state, memory.root), gitops.head_or_none(memory.root))


# --- the record ----------------------------------------------------------------------------------------------

def _result(plan: ForgetPlan, forget_id: str, now: str, dry_run: bool, purge_history: bool) -> ForgetResult:
    return ForgetResult(
        forget_id=forget_id, kind=plan.erasure.kind, dry_run=dry_run, purge_history=purge_history, at=now,
        cards=sorted(item.card.id for item in plan.erased if not item.archived),
        archived=sorted(item.card.id for item in plan.erased if item.archived),
        redacted=sorted(plan.redacted), events=len(plan.events), segments=len(plan.dropped_lines),
        audit_lines=plan.audit_lines, plan_items=plan.plan_items, raw_layer=plan.selection.raw_layer)


def _forget_id(root: Path, plan: ForgetPlan, now: str) -> str:
    """``<clock>-forget-<digest>``, sorting among dream runs by time; the digest covers the commit it
    starts from and what it erases (their ids, hashed: the id holds nothing erased)."""
    stamp = parse_timestamp(now).strftime("%Y-%m-%dT%H-%M-%SZ")
    what = "|".join([str(gitops.head_or_none(root)), *sorted(plan.erasure.cards), *sorted(plan.erasure.refs)])
    return f"{stamp}{FORGET_MARK}{hashlib.sha256(what.encode('utf-8')).hexdigest()[:4]}"


def _tombstone(result: ForgetResult) -> dict[str, Any]:
    """The one audit line a forget leaves: the kind of thing, counts per layer, when; never what."""
    counts = result.counts()
    return {"run": result.forget_id, "op": FORGET_OP, "card": PLACEHOLDER, "erased": result.kind,
            "reason": f"a {result.kind} erased: {_summary(counts)}", "counts": counts, "at": result.at,
            "purge_history": result.purge_history}


def _summary(counts: dict[str, int]) -> str:
    names = {"cards": "card(s)", "archived": "archived version(s)", "redacted_cards": "card(s) redacted",
             "events": "raw event(s)", "audit_lines": "audit line(s)", "plan_items": "plan item(s)"}
    return ", ".join(f"{counts[key]} {name}" for key, name in names.items())


def _subject(result: ForgetResult) -> str:
    return f"memdream forget: one {result.kind} erased"


def _body(result: ForgetResult) -> str:
    history = ("history rewritten next (--purge-history)" if result.purge_history else HISTORY_KEPT)
    return f"{_summary(result.counts())}\n\n{history}"


__all__ = ["CARD", "SESSION", "SUBJECT", "ForgetResult", "forget", "plan_forget"]
