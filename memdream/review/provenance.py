"""Where one card came from: its evidence resolved to raw events, its versions, the cards built on
it, the audit lines and the commits that touched it (``memdream audit CARD_ID``), and one raw event
with the cards that cite it (``memdream show log://<session>#<id>``).

Raw events are read from the segment files themselves, hashed as stored, never from the dedup
cache of ``.memdream/``: what is checked is what is there.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.errors import GitError, MemdreamError
from memdream.jsonio import dumps_canonical, loads
from memdream.memory.card import Card, Evidence
from memdream.memory.evidence_log import EVIDENCE_OP, union
from memdream.memory.paths import ARCHIVE_DIR, AUDIT_DIR, CARDS_DIR, LAYER_OF_TYPE, MemoryPaths
from memdream.memory.raw import RawLayer, SegmentRecord, StoredHashes, event_hash, line_hash
from memdream.memory.refs import REF_SCHEME, parse_ref

EXCERPT_CHARS = 160
# What a reference's check says, for people and programs alike.
OK, MISMATCH, MISSING, NO_RAW, NO_HASH = "ok", "mismatch", "missing event", "raw layer absent", "no hash cited"
FOUND = "found"  # an audit operation's reference: it cites no hash, the event is only found or not
# Audit-line fields that name cards (dream/model.py Operation.to_dict; feedback targets).
CARD_FIELDS = ("card", "target", "cards")


# --- the raw layer ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredEvent:
    """One event as the raw layer stores it: where, the hash cards cite (:func:`event_hash`) and the hash
    of its stored line (the dedup index's, and what older dreams cited)."""

    ref: str
    segment: str
    line: int
    hash: str
    event: dict[str, Any]
    line_hash: str = ""

    def cited_by(self, digest: str) -> bool:
        return StoredHashes(self.hash, self.line_hash).cited_by(digest)


def raw_layer(root: Path) -> RawLayer:
    return RawLayer(MemoryPaths(root))


def segment_names(raw: RawLayer) -> list[str]:
    """The segments to read: the manifest's, else (a manifest lost) the files that are there."""
    names = [record.segment for record in raw.manifest()]
    if not names and raw.dir.is_dir():
        names = sorted(path.name for path in raw.dir.glob("*.jsonl"))
    return names


def find_events(root: Path, refs: Iterable[str]) -> dict[str, StoredEvent]:
    """The stored events of ``refs`` that the raw layer holds, by ref.

    One pass over the segments; a line is parsed only when it holds one of the wanted ids in
    the form canonical JSON writes it (an audit wants a few dozen events out of 100,000).
    """
    wanted: dict[tuple[str, str], str] = {parse_ref(ref): ref for ref in refs}
    tokens = {b'"id":' + dumps_canonical(event_id) for _, event_id in wanted}
    raw = raw_layer(root)
    found: dict[str, StoredEvent] = {}
    for name in segment_names(raw) if wanted else []:
        for number, line in _segment_lines(raw, name):
            if len(found) == len(wanted):
                return found
            if not any(token in line for token in tokens):
                continue
            event = _parsed(line)
            key = (event.get("session"), event.get("id")) if event is not None else None
            ref = wanted.get(key) if key is not None else None  # type: ignore[arg-type]
            if ref is not None and ref not in found:
                found[ref] = StoredEvent(ref, name, number, event_hash(event), event,  # type: ignore[arg-type]
                                         line_hash(line))
    return found


def _segment_lines(raw: RawLayer, name: str) -> Iterator[tuple[int, bytes]]:
    """(line number, stored line without its newline) of one segment; nothing when it is absent."""
    path = raw.segment_path(name)
    if not path.is_file():
        return
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line.rstrip(b"\n")


def _parsed(line: bytes) -> dict[str, Any] | None:
    try:
        event = loads(line)
    except (ValueError, RecursionError):
        return None  # a damaged line: its event is missing (lint names the line)
    return event if isinstance(event, dict) else None


def excerpt(event: dict[str, Any], limit: int = EXCERPT_CHARS) -> str:
    """What an event says, on one line of at most ``limit`` characters."""
    fact = event.get("fact")
    parts = [event.get(name) for name in ("text", "error", "goal")]
    if isinstance(fact, dict):
        parts.append(f"{fact.get('subject')}.{fact.get('attribute')} = {fact.get('value')}")
    if event.get("tool") and event.get("kind") == "tool_call":
        parts.append(f"{event['tool']} {json.dumps(event.get('args', {}), ensure_ascii=False)}")
    for name in ("next", "done"):
        if isinstance(event.get(name), list):
            parts.append(f"{name}: " + "; ".join(str(item) for item in event[name]))
    text = " ".join(" ".join(str(part).split()) for part in parts if part)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_of(item: Evidence, stored: StoredEvent | None, raw_here: bool) -> str:
    """ok / mismatch / missing event / raw layer absent / no hash cited, for one reference."""
    if not raw_here:
        return NO_RAW
    if stored is None:
        return MISSING
    if item.hash is None:
        return NO_HASH
    return OK if stored.cited_by(item.hash) else MISMATCH


# --- the audit files ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AuditLine:
    """One line of ``audit/<run-id>.jsonl`` (an operation, or evidence held for a card)."""

    run: str  # the file's run id
    line: int
    data: dict[str, Any]

    @property
    def op(self) -> str:
        return str(self.data.get("op", ""))

    def names(self) -> set[str]:
        """The card ids this line is about."""
        found: set[str] = set()
        for name in CARD_FIELDS:
            value = self.data.get(name)
            if isinstance(value, str):
                found.add(value)
            elif isinstance(value, list):
                found.update(item for item in value if isinstance(item, str))
        return found


def audit_lines(root: Path, ids: set[str]) -> list[AuditLine]:
    """Every audit line naming one of ``ids``, in run order (file names start with the run's time)."""
    folder, found = root / AUDIT_DIR, []
    names = sorted(entry.name for entry in os.scandir(folder) if entry.name.endswith(".jsonl")) \
        if folder.is_dir() else []
    tokens = [json.dumps(card_id, ensure_ascii=False).encode("utf-8") for card_id in ids]
    for name in names:
        with open(folder / name, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if not any(token in raw for token in tokens):
                    continue  # most lines of a big run are about other cards
                data = _parsed(raw)
                line = AuditLine(name.removesuffix(".jsonl"), number, data) if data is not None else None
                if line is not None and line.names() & ids:
                    found.append(line)
    return found


def held_evidence(lines: list[AuditLine], card_id: str) -> list[Evidence]:
    """The evidence the audit files hold for one card (``op: evidence`` lines)."""
    held: list[Evidence] = []
    for line in lines:
        if line.op == EVIDENCE_OP and line.data.get("card") == card_id and isinstance(line.data.get("added"), list):
            held.extend(Evidence.from_dict(item) for item in line.data["added"]
                        if isinstance(item, dict) and isinstance(item.get("ref"), str))
    return held


# --- one card's audit trail ---------------------------------------------------------------------------------

@dataclass
class ResolvedEvidence:
    """One evidence reference and the raw event it names."""

    evidence: Evidence
    where: str  # "card" (shown on the card) or "audit" (held in the audit files) or "operation"
    check: str
    stored: StoredEvent | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self.evidence.to_dict(), "where": self.where, "check": self.check}
        if self.stored is not None:
            event = self.stored.event
            data["event"] = {
                "ts": event.get("ts"), "session": event.get("session"), "kind": event.get("kind"),
                "actor": event.get("actor"), "excerpt": excerpt(event),
                "segment": f"raw/segments/{self.stored.segment}", "line": self.stored.line,
                "hash": self.stored.hash,
            }
        return data


@dataclass
class Version:
    """One card of the supersession chain; ``made_by``: the supersede operations that made it."""

    card_id: str
    relation: str  # "older", "this", "newer"
    card: Card | None  # None: the chain names a card that does not exist
    path: str | None
    made_by: list[tuple[AuditLine, list[ResolvedEvidence]]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        card = self.card
        return {
            "id": self.card_id, "relation": self.relation, "path": self.path, "exists": card is not None,
            **({"value": card.value, "statement": card.statement, "status": card.status,
                "created_at": card.created_at, "updated_at": card.updated_at,
                "last_verified_at": card.last_verified_at} if card is not None else {}),
            "superseded_by_operation": [{**line.data, "evidence_resolved": [item.to_dict() for item in resolved]}
                                        for line, resolved in self.made_by],
        }


@dataclass
class Related:
    """A card named by ``derived_from`` (either way), or a dangling id."""

    card_id: str
    card: Card | None
    path: str | None

    def to_dict(self) -> dict[str, Any]:
        card = self.card
        return {"id": self.card_id, "path": self.path, "exists": card is not None,
                **({"type": card.type, "status": card.status, "statement": card.statement} if card else {})}


@dataclass
class CardAudit:
    """Everything ``memdream audit CARD_ID`` shows."""

    card: Card
    path: str
    raw_present: bool
    evidence: list[ResolvedEvidence]
    versions: list[Version]
    derived_from: list[Related]
    derived: list[Related]
    operations: list[AuditLine]
    commits: list[Any]  # gitops.CommitInfo, newest first
    git_note: str | None = None  # why commits could not be listed

    def to_dict(self) -> dict[str, Any]:
        return {
            "card": self.card.to_dict(), "path": self.path, "raw_layer": self.raw_present,
            "evidence": [item.to_dict() for item in self.evidence],
            "versions": [version.to_dict() for version in self.versions],
            "derived_from": [item.to_dict() for item in self.derived_from],
            "derived": [item.to_dict() for item in self.derived],
            "operations": [{"file": f"{AUDIT_DIR}/{line.run}.jsonl", "line": line.line, **line.data}
                           for line in self.operations],
            "commits": [{"sha": c.sha, "time": c.time, "author": c.author, "subject": c.subject,
                         "trailers": c.trailers} for c in self.commits],
            **({"git_note": self.git_note} if self.git_note else {}),
        }


class CardNotFound(MemdreamError):
    pass


@dataclass(frozen=True)
class _Cards:
    """Every card of the memory by id, with its path relative to the root."""

    by_id: dict[str, tuple[Card, str]]

    def card(self, card_id: str) -> Card | None:
        found = self.by_id.get(card_id)
        return found[0] if found else None

    def path(self, card_id: str) -> str | None:
        found = self.by_id.get(card_id)
        return found[1] if found else None


def _all_cards(root: Path) -> _Cards:
    from memdream.memory.cardcache import load_cards
    from memdream.memory.store import Memory

    return _Cards({item.card.id: (item.card, item.relpath) for item in load_cards(Memory(root))})


def audit_card(root: Path, card_id: str) -> CardAudit:
    """The audit trail of one card, active or archived; :class:`CardNotFound` for an unknown id."""
    cards = _all_cards(root)
    card = cards.card(card_id)
    if card is None:
        raise CardNotFound(f"no card with id {card_id!r} in {root} (see `memdream cards --archived`)")
    chain = _chain(cards, card)
    lines = audit_lines(root, {item.card_id for item in chain})
    supersedes = [line for line in lines if line.op == "supersede"]
    evidence = [(item, "card") for item in card.evidence]
    inline = {item.ref for item in card.evidence}
    evidence = [(item, "audit") for item in union(held_evidence(lines, card_id)) if item.ref not in inline] + evidence
    op_refs = [ref for line in supersedes for ref in _refs(line)]
    raw_here = raw_layer(root).present()
    stored = find_events(root, [item.ref for item, _ in evidence] + op_refs) if raw_here else {}
    resolved = sorted((ResolvedEvidence(item, where, check_of(item, stored.get(item.ref), raw_here),
                                        stored.get(item.ref)) for item, where in evidence),
                      key=lambda entry: (entry.evidence.ts or "", entry.evidence.ref))
    for version in chain:
        version.made_by = [(line, [_resolve_ref(ref, stored, raw_here) for ref in _refs(line)])
                           for line in supersedes if line.data.get("card") == version.card_id]
    commits, note = _commits(root, card)
    return CardAudit(
        card=card, path=cards.path(card_id) or "", raw_present=raw_here, evidence=resolved, versions=chain,
        derived_from=[Related(other, cards.card(other), cards.path(other)) for other in card.derived_from],
        derived=[Related(other, found, path) for other, (found, path) in sorted(cards.by_id.items())
                 if card_id in found.derived_from],
        operations=[line for line in lines if card_id in line.names()], commits=commits, git_note=note,
    )


def _refs(line: AuditLine) -> list[str]:
    refs = line.data.get("evidence")
    return [ref for ref in refs if isinstance(ref, str)] if isinstance(refs, list) else []


def _resolve_ref(ref: str, stored: dict[str, StoredEvent], raw_here: bool) -> ResolvedEvidence:
    """An operation's reference: the audit line cites no hash, so the event is only found or not."""
    found = stored.get(ref)
    item = Evidence(ref=ref, ts=found.event.get("ts") if found else None)
    check = FOUND if found is not None else check_of(item, found, raw_here)
    return ResolvedEvidence(item, "operation", check, found)


def _chain(cards: _Cards, card: Card) -> list[Version]:
    """The card's versions, oldest first: what it superseded (transitively), itself, what superseded it."""
    older = _walk(cards, card, "supersedes")
    newer = _walk(cards, card, "superseded_by")
    return ([Version(i, "older", cards.card(i), cards.path(i)) for i in reversed(older)]
            + [Version(card.id, "this", card, cards.path(card.id))]
            + [Version(i, "newer", cards.card(i), cards.path(i)) for i in newer])


def _walk(cards: _Cards, card: Card, link: str) -> list[str]:
    """Ids reached by following ``link`` from ``card``, nearest first; each once (a loop stops)."""
    seen, queue, order = {card.id}, list(getattr(card, link)), []
    while queue:
        card_id = queue.pop(0)
        if card_id in seen:
            continue
        seen.add(card_id)
        order.append(card_id)
        found = cards.card(card_id)
        queue.extend(getattr(found, link) if found is not None else [])
    return order


def card_paths(card: Card) -> list[str]:
    """Where the card's file lives or lived: its active and its archived place."""
    name = f"{LAYER_OF_TYPE[card.type]}/{card.id}.yaml"
    return [f"{CARDS_DIR}/{name}", f"{ARCHIVE_DIR}/{name}"]


def _commits(root: Path, card: Card) -> tuple[list[Any], str | None]:
    from memdream import gitops

    try:
        return gitops.commits(root, paths=card_paths(card)), None
    except GitError as error:
        return [], str(error)


# --- one raw event ------------------------------------------------------------------------------------------

@dataclass
class RawEventView:
    """What ``memdream show log://<session>#<id>`` shows."""

    stored: StoredEvent
    index_hash: str | None  # what the dedup index of .memdream/ says; None: no index here
    segment_check: str  # "ok", "changed" (sha256 differs from the manifest) or "not in the manifest"
    cited_by: list[tuple[str, str, str]]  # (card id, path, "card" | "audit")

    @property
    def index_check(self) -> str:
        if self.index_hash is None:
            return "no dedup index here"
        return OK if self.index_hash == self.stored.line_hash else MISMATCH

    def to_dict(self) -> dict[str, Any]:
        return {
            "ref": self.stored.ref, "segment": f"raw/segments/{self.stored.segment}", "line": self.stored.line,
            "hash": self.stored.hash, "line_hash": self.stored.line_hash, "index_hash": self.index_hash,
            "index_check": self.index_check,
            "segment_check": self.segment_check, "event": self.stored.event,
            "cited_by": [{"id": card_id, "path": path, "where": where} for card_id, path, where in self.cited_by],
        }


def show_event(root: Path, ref: str) -> RawEventView:
    """One raw event by its reference, checked against the manifest and the dedup index."""
    session, event_id = parse_ref(ref)
    if not ref.startswith(REF_SCHEME) or not session or not event_id:
        raise MemdreamError(f"{ref!r} is not an event reference (log://<session>#<id>)")
    raw = raw_layer(root)
    if not raw.present():
        raise MemdreamError(f"the raw layer is not here ({raw.dir} holds no segment: a clone without raw events); "
                            f"cannot show {ref}")
    stored = find_events(root, [ref]).get(ref)
    if stored is None:
        raise MemdreamError(f"no raw event {ref} in {root}")
    records = {record.segment: record for record in raw.manifest()}
    return RawEventView(stored, _index_hash(raw, stored), _segment_check(raw, records.get(stored.segment)),
                        _citing(root, ref))


def _index_hash(raw: RawLayer, stored: StoredEvent) -> str | None:
    path = raw.keys_path(stored.segment)
    if not path.is_file():
        return None
    rows = {(session, event_id): digest for session, event_id, digest in raw._segment_rows(stored.segment)}
    return rows.get((stored.event.get("session"), stored.event.get("id")))  # type: ignore[arg-type]


def _segment_check(raw: RawLayer, record: SegmentRecord | None) -> str:
    if record is None:
        return "not in the manifest"
    digest = hashlib.sha256(raw.segment_path(record.segment).read_bytes()).hexdigest()
    return OK if digest == record.sha256 else "changed"


def _citing(root: Path, ref: str) -> list[tuple[str, str, str]]:
    """Cards whose evidence names ``ref``: on the card itself, or held in the audit files."""
    from memdream.memory.evidence_log import EvidenceLog

    cards = _all_cards(root)
    held = EvidenceLog.load(root / AUDIT_DIR)
    found = []
    for card_id, (card, path) in sorted(cards.by_id.items()):
        if any(item.ref == ref for item in card.evidence):
            found.append((card_id, path, "card"))
        elif any(item.ref == ref for item in held.refs(card_id)):
            found.append((card_id, path, "audit"))
    return found
