"""``memdream audit --verify``: the provenance of the whole memory, every problem collected.

With the raw layer: every evidence reference of every card (shown on the card or held in the audit
files) names a stored event and cites that event's hash; each segment still has the sha256 the
manifest pinned. Always: no card without evidence, the version chain reads the same both ways,
``derived_from`` names existing cards, and git says who made each card: the last commit that
changed a card file is a dream run's (trailer ``Memdream-Run``) or a rollback's
(``Memdream-Rollback``), or a person marked it as theirs (``Memdream-Human-Edit: Name <email>``);
an active card is named by an operation of a dream run whose audit file was committed by that run;
nothing is another tenant's (memdream/memory/tenant_marks.py: the tenant marks of the audit lines).
A `memdream forget` commit (trailer ``Memdream-Forget``) is an erasure, not an edit: the checks look
through it to the commit before, and only its tombstone (``audit/<forget-id>.jsonl``) is its own.
A clone without raw events (CI) gets every check but the first, and is told so.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream.errors import GitError
from memdream.memory import trailers as trailer
from memdream.memory.card import ACTIVE_STATUSES, Evidence
from memdream.memory.evidence_log import EVIDENCE_OP, union
from memdream.memory.paths import ARCHIVE_DIR, AUDIT_DIR, CARDS_DIR, RAW_DIR
from memdream.memory.raw import MANIFEST, SEGMENTS, StoredHashes, stored_hashes
from memdream.memory.refs import parse_ref
from memdream.review.provenance import AuditLine, _parsed, raw_layer, segment_names

if TYPE_CHECKING:
    from memdream.gitops import CommitInfo
    from memdream.lint.documents import MemoryFiles

_PERSON = re.compile(r"^[^<>]*\S[^<>]*<[^<>@\s]+@[^<>\s]+>$")  # Name <email>
HAND_HINT = f"a person marks a reviewed edit with a trailer '{trailer.HUMAN_EDIT}: Name <email>'"


@dataclass(frozen=True, order=True)
class Problem:
    """One finding: the file it is about (relative to the memory root), what is wrong, and the line
    when one line of the file is wrong."""

    path: str
    message: str
    line: int = 0  # 0: the file as a whole

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.line:
            found["line"] = self.line
        return found


@dataclass
class VerifyResult:
    problems: list[Problem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    cards: int = 0
    refs: int = 0
    raw_checked: bool = False
    git_checked: bool = False
    human_edits: list[tuple[str, str]] = field(default_factory=list)  # (path, person) accepted by trailer

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok, "cards": self.cards, "refs": self.refs, "raw_checked": self.raw_checked,
            "git_checked": self.git_checked, "notices": self.notices,
            "human_edits": [{"path": path, "by": person} for path, person in self.human_edits],
            "problems": [problem.to_dict() for problem in sorted(self.problems)],
        }


@dataclass(frozen=True)
class _CardEntry:
    path: str  # relative to the root
    data: dict[str, Any]
    held: list[Evidence]

    @property
    def card_id(self) -> str:
        return str(self.data["id"])

    def evidence(self) -> list[Evidence]:
        inline = [Evidence.from_dict(item) for item in self.data.get("evidence") or []
                  if isinstance(item, dict) and isinstance(item.get("ref"), str)]
        return union(self.held, inline)

    def links(self, name: str) -> list[str]:
        value = self.data.get(name)
        return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []

    @property
    def active(self) -> bool:
        return self.path.startswith(CARDS_DIR + "/") and self.data.get("status") in ACTIVE_STATUSES


def verify_memory(root: Path) -> VerifyResult:
    """Every provenance problem of the memory at ``root`` (none: it verifies)."""
    from memdream.lint import load_files

    result = VerifyResult()
    files = load_files(root)
    cards, unreadable = _read_cards(root, files)
    result.problems.extend(unreadable)
    result.problems.extend(_tenant_problems(root, files))
    result.cards = len(cards)
    result.refs = sum(len(entry.evidence()) for entry in cards)
    result.problems.extend(_structure(cards))
    if raw_layer(root).present():
        result.raw_checked = True
        result.problems.extend(_raw_problems(root, cards, result.notices))
    elif result.refs:
        result.notices.append(f"evidence was not checked against raw events: the raw layer is not here "
                              f"({RAW_DIR}/{SEGMENTS} holds no segment; {result.refs} refs)")
    _git_checks(root, cards, result)
    return result


def _read_cards(root: Path, files: MemoryFiles) -> tuple[list[_CardEntry], list[Problem]]:
    """Every card file (read as lint reads a stranger's files), with the evidence the audit files hold."""
    log, _ = files.audit_evidence
    cards, problems = [], []
    for document in files.cards:
        path = _relative(root, document.path)
        if not isinstance(document.data, dict) or not isinstance(document.data.get("id"), str):
            problems.append(Problem(path, "not a readable card: run `memdream lint`"))
            continue
        cards.append(_CardEntry(path, document.data, log.refs(document.data["id"])))
    problems.extend(Problem(_relative(root, path), f"not read: {why}") for path, why in files.file_problems.items())
    return cards, problems


def _tenant_problems(root: Path, files: MemoryFiles) -> Iterator[Problem]:
    """Another tenant's provenance, cards and references, as lint's tenant rule finds them."""
    from memdream.lint.rules import check_tenant

    for finding in check_tenant(files):
        yield Problem(_relative(root, finding.path), finding.message, finding.line)


def _relative(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


# --- what the cards say of each other -----------------------------------------------------------------------

def _structure(cards: list[_CardEntry]) -> Iterator[Problem]:
    """No card without evidence; links name cards that exist; the version chain reads both ways."""
    by_id = {entry.card_id: entry for entry in cards}
    for entry in cards:
        if not entry.evidence():
            yield Problem(entry.path, f"{entry.card_id} cites no evidence")
        for name, back in (("supersedes", "superseded_by"), ("superseded_by", "supersedes"), ("derived_from", "")):
            for other in entry.links(name):
                target = by_id.get(other)
                if target is None:
                    yield Problem(entry.path, f"{name}: no card has id {other!r} (broken chain)"
                                  if back else f"{name}: no card has id {other!r}")
                elif back and entry.card_id not in target.links(back):
                    yield Problem(entry.path, f"{name}: {other} does not name {entry.card_id} in its {back} "
                                  "(broken chain)")


# --- the raw layer ------------------------------------------------------------------------------------------

def _raw_problems(root: Path, cards: list[_CardEntry], notices: list[str]) -> Iterator[Problem]:
    """Each reference names a stored event with the hash it cites; each segment is as the manifest pinned it.

    A clone that ingested has some segments and not the ones it was cloned without: a reference not
    found in the segments here may be in those, so it is counted in a notice, not reported."""
    stored, problems, never_here = _stored_hashes(root)
    yield from problems
    unchecked = 0
    for entry in cards:
        inline = {item.get("ref") for item in entry.data.get("evidence") or [] if isinstance(item, dict)}
        for item in entry.evidence():
            where = "" if item.ref in inline else " (held in the audit files)"
            found = stored.get(parse_ref(item.ref))
            if found is None and never_here:
                unchecked += 1
            elif found is None:
                yield Problem(entry.path, f"{item.ref}{where} names no event in the raw layer")
            elif item.hash is None:
                yield Problem(entry.path, f"{item.ref}{where} cites no hash of its event")
            elif not found.cited_by(item.hash):
                yield Problem(entry.path, f"hash of {item.ref}{where} does not match the stored event "
                              "(the event or the card changed)")
    if never_here:
        notices.append(f"{len(never_here)} segment(s) of {RAW_DIR}/{MANIFEST} were never here (cloned without "
                       f"the raw layer): {unchecked} ref(s) not in the segments here were not checked")


def _stored_hashes(root: Path) -> tuple[dict[tuple[str, str], StoredHashes], list[Problem], list[str]]:
    """(session, id) -> the hashes of every stored event, read from the segments themselves; what is
    damaged; and the segments the manifest lists that this copy never had.

    A segment written or read here has its dedup index in .memdream/: gone, it is a problem; without one
    it never was here (a clone that ingested since it was cloned)."""
    raw = raw_layer(root)
    records = {record.segment: record for record in raw.manifest()}
    stored: dict[tuple[str, str], StoredHashes] = {}
    problems, never_here = [], []
    for name in segment_names(raw):
        shown = f"{RAW_DIR}/{SEGMENTS}/{name}"
        path = raw.segment_path(name)
        if raw.never_here(name):
            never_here.append(name)
            continue
        if not path.is_file():
            problems.append(Problem(shown, f"listed in {RAW_DIR}/{MANIFEST} but missing"))
            continue
        data = path.read_bytes()
        record = records.get(name)
        if record is not None and hashlib.sha256(data).hexdigest() != record.sha256:
            problems.append(Problem(shown, f"changed since ingest: its sha256 is not the one {RAW_DIR}/{MANIFEST} "
                                    "pinned (restore it from a backup)"))
        for number, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            event = _parsed(line)
            if event is None or not isinstance(event.get("session"), str) or not isinstance(event.get("id"), str):
                problems.append(Problem(shown, f"line {number} is not a raw event (damaged segment)"))
                continue
            stored.setdefault((event["session"], event["id"]), stored_hashes(line, event))
    return stored, problems, never_here


# --- git: who made each card --------------------------------------------------------------------------------

@dataclass
class _History:
    """The last commit that changed each file under cards/, archive/ and audit/, and what is uncommitted."""

    last: dict[str, CommitInfo]
    added: dict[str, CommitInfo]  # the commit that last added each file
    uncommitted: set[str]


def _git_checks(root: Path, cards: list[_CardEntry], result: VerifyResult) -> None:
    history = _history(root)
    if history is None:
        result.notices.append("commits were not checked: the memory is not a git repository with commits")
        return
    result.git_checked = True
    from memdream import gitops

    # In a project's repository dream only stages: a person commits its files without trailers. There a
    # commit that carries a run's audit file vouches for the cards that run's operations name.
    staged_by_dream = gitops.in_project(root)
    if staged_by_dream:
        result.notices.append("a memory inside a project repository: dream runs committed by a person are "
                              "accepted where the commit carries the run's audit file")
    runs = _committed_runs(root, history, result, staged_by_dream)
    named = _named_by_runs(root, runs)
    carriers = {history.added[f"{AUDIT_DIR}/{run}.jsonl"].sha for run in runs
                if f"{AUDIT_DIR}/{run}.jsonl" in history.added} if staged_by_dream else set()
    for entry in cards:
        result.problems.extend(_card_commit_problems(entry, history, named, result, carriers))


def _history(root: Path) -> _History | None:
    from memdream import gitops

    try:
        if gitops.head_or_none(root) is None:
            return None
        paths = [CARDS_DIR, ARCHIVE_DIR, AUDIT_DIR]
        last: dict[str, CommitInfo] = {}
        added: dict[str, CommitInfo] = {}
        for commit, touched in gitops.path_history(root, paths):
            forget_id = commit.trailer(trailer.FORGET)
            if forget_id is not None:  # an erasure: only its tombstone is its own
                touched = [(status, path) for status, path in touched if path == f"{AUDIT_DIR}/{forget_id}.jsonl"]
            for status, path in touched:
                if status in ("A", "M"):
                    last.setdefault(path, commit)
                if status == "A":
                    added.setdefault(path, commit)
        return _History(last, added, set(gitops.status_paths(root, paths)))
    except GitError:
        return None


def _maker(commit: CommitInfo) -> tuple[str, str | None]:
    """Who made a commit: ("dream", run) or ("rollback", run) or ("forget", its id) or ("human", person) or
    ("hand", None), and ("bad-human", value) for a Human-Edit trailer that names no one."""
    person = commit.trailer(trailer.HUMAN_EDIT)
    if person is not None:
        return ("human", person) if _PERSON.match(person) else ("bad-human", person)
    if commit.trailer(trailer.RUN):
        return "dream", commit.trailer(trailer.RUN)
    if commit.trailer(trailer.ROLLBACK):
        return "rollback", commit.trailer(trailer.ROLLBACK)
    if commit.trailer(trailer.FORGET):
        return "forget", commit.trailer(trailer.FORGET)
    return "hand", None


def _by_hand(path: str, commit: CommitInfo, what: str) -> Problem:
    return Problem(path, f"not made by dream: review by hand ({what} by commit {commit.short} "
                         f"\"{commit.subject[:60]}\" of {commit.author}, which carries no {trailer.RUN} trailer; "
                         f"{HAND_HINT})")


def _committed_runs(root: Path, history: _History, result: VerifyResult,
                    staged_by_dream: bool = False) -> dict[str, str | None]:
    """The runs whose audit file that very run's commit added (or a person marked as theirs), each with
    the revision whose text counts: None for the file as it is, the run's commit when it was changed since."""
    good: dict[str, str | None] = {}
    folder = root / AUDIT_DIR
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        shown, run = f"{AUDIT_DIR}/{path.name}", path.stem
        commit, added = history.last.get(shown), history.added.get(shown)
        if shown in history.uncommitted or commit is None:
            result.problems.append(Problem(shown, f"uncommitted audit file: not made by dream: review by hand "
                                           f"({HAND_HINT}, in the commit)"))
            continue
        revision = None
        if added is not None and added.sha != commit.sha and _maker(commit)[0] != "human":
            # A run writes its audit file once: a later change, even under a run's trailer, is someone's
            # edit. What the run itself committed still names the cards it made.
            result.problems.append(Problem(shown, f"changed after its dream run by commit {commit.short} "
                                           f"\"{commit.subject[:60]}\" of {commit.author} (audit files are written "
                                           f"once): review by hand; {HAND_HINT}"))
            commit, revision = added, added.sha
        problem = None if staged_by_dream and _maker(commit)[0] == "hand" else _run_problem(shown, run, commit, result)
        if problem is None:
            good[run] = revision
        elif revision is None:
            result.problems.append(problem)
    return good


def _run_problem(shown: str, run: str, commit: CommitInfo, result: VerifyResult) -> Problem | None:
    """Why the commit that wrote ``audit/<run>.jsonl`` is not that run's (None: it is, or a person's)."""
    maker, value = _maker(commit)
    if maker in ("dream", "forget") and value == run:
        return None
    if maker == "human":
        result.human_edits.append((shown, value or ""))
        return None
    if maker == "bad-human":
        return Problem(shown, f"{trailer.HUMAN_EDIT} trailer of commit {commit.short} names no person: write "
                              f"'Name <email>', not {value!r}")
    if maker == "dream":
        return Problem(shown, f"changed by commit {commit.short} of run {value}, not by its own run {run} (its "
                              f"commit would carry '{trailer.RUN}: {run}'): review by hand")
    return _by_hand(shown, commit, "changed")


def _named_by_runs(root: Path, runs: dict[str, str | None]) -> set[str]:
    """The card ids an operation (not an evidence line) of one of ``runs`` names."""
    from memdream import gitops

    named: set[str] = set()
    for run, revision in runs.items():
        relpath = f"{AUDIT_DIR}/{run}.jsonl"
        text = (root / relpath).read_bytes() if revision is None else \
            (gitops.read_text(root, revision, relpath) or "").encode("utf-8")
        for number, raw in enumerate(text.splitlines(), 1):
            data = _parsed(raw)
            if data is not None and data.get("op") != EVIDENCE_OP:
                named |= AuditLine(run, number, data).names()
    return named


def _card_commit_problems(entry: _CardEntry, history: _History, named: set[str],
                          result: VerifyResult, carriers: set[str] | frozenset[str] = frozenset()) -> Iterator[Problem]:
    if entry.path in history.uncommitted:
        yield Problem(entry.path, f"uncommitted change: not made by dream: review by hand ({HAND_HINT}, "
                                  "in the commit)")
        return
    commit = history.last.get(entry.path)
    if commit is None:
        return  # tracked nowhere (an ignored folder): git has nothing to say
    maker, value = _maker(commit)
    if maker == "human":
        result.human_edits.append((entry.path, value or ""))
    elif maker == "bad-human":
        yield Problem(entry.path, f"{trailer.HUMAN_EDIT} trailer of commit {commit.short} names no person: "
                                  f"write 'Name <email>', not {value!r}")
    elif maker == "hand" and not (commit.sha in carriers and entry.card_id in named):
        yield _by_hand(entry.path, commit, "added or changed")
    elif maker == "dream" and _replayed(history, commit, value):
        yield Problem(entry.path, f"changed by commit {commit.short}, which claims run {value} while "
                                  f"{AUDIT_DIR}/{value}.jsonl was committed by another: review by hand")
    elif entry.active and entry.card_id not in named:
        yield Problem(entry.path, f"{entry.card_id}: no operation of a committed dream run names it "
                                  f"(audit/<run-id>.jsonl, committed with '{trailer.RUN}: <run-id>'): "
                                  "review by hand")


def _replayed(history: _History, commit: CommitInfo, run: str | None) -> bool:
    """Whether ``commit`` claims a run whose audit file another commit added (a copied trailer)."""
    added = history.added.get(f"{AUDIT_DIR}/{run}.jsonl")
    return added is not None and added.sha != commit.sha
