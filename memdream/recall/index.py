"""The recall index: inverted postings over cards and over raw segments, cached under .memdream/cache/.

.memdream/cache/recall/cards.pickle      every card as a compact record + postings; valid while the
                                         (name, size, mtime) of every card and archive file is the same
.memdream/cache/recall/raw/<seg>.pickle  one per raw segment, valid while the manifest's sha256 of the
                                         segment is. Segments are immutable: a new segment adds one
                                         file, old ones are never rebuilt.
.memdream/cache/recall/meta.pickle       recall settings and the parsed plan (see engine.load_meta).

Postings are three flat arrays (term bounds, doc numbers, term frequencies) and a token -> term
number dict: they unpickle in milliseconds. Raw events are not copied: each indexed event keeps its
byte offset in the segment file and is read from there when it is rendered.

The warm path (cache valid) imports neither YAML nor the JSON Schemas: a cache miss does. A long-lived
process (the MCP server) keeps what it loaded in an :class:`IndexMemo`, checked by the same stamps.
"""

from __future__ import annotations

import json
import math
import os
import pickle
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from memdream.clock import epoch_seconds
from memdream.memory import cachefile
from memdream.memory.card import ACTIVE_STATUSES, CONFLICTING, SUPERSEDED
from memdream.memory.paths import LAYERS, MemoryPaths
from memdream.memory.tags import episode_of
from memdream.recall.text import tokenize

try:  # CPython's BLAKE2 alone (what hashlib.blake2b is): hashlib would load OpenSSL too, ~4 ms a recall process
    from _blake2 import blake2b
except ImportError:  # another Python
    from hashlib import blake2b

if TYPE_CHECKING:
    from memdream.memory.card import Card, Evidence
    from memdream.memory.store import Memory
    from memdream.recall.file_views import FileHistory

INDEX_VERSION = 16
# Which raw events can answer a question (tool calls, goals and plans are left out).
RAW_KINDS = frozenset({"message", "note", "tool_result", "feedback", "outcome"})
# Tools whose results only acknowledge ("Plan updated", "Todos have been modified"): the plan events
# ingest makes of their calls carry what they said.
BOOKKEEPING_TOOLS = frozenset({"TodoWrite", "update_plan", "TodoRead", "ExitPlanMode"})
BM25_K1 = 1.2
BM25_B = 0.75
# BM25F-lite: a card's fields count this many times towards its term frequencies.
CARD_FIELD_WEIGHTS = {"statement": 1.0, "subject": 2.0, "attribute": 1.5, "value": 1.5, "tags": 1.0,
                      "scope": 0.5}
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")


class Postings:
    """An inverted index in three flat arrays: pickles and loads fast (no object per posting list)."""

    __slots__ = ("terms", "bounds", "docs", "counts")

    def __init__(self, lists: dict[str, tuple[list[int], list[float]]] | None = None, code: str = "f") -> None:
        self.terms: dict[str, int] = {}
        self.bounds: array[int] = array("q", [0])
        self.docs: array[int] = array("i")
        self.counts: array[Any] = array(code)
        for token, (docs, counts) in (lists or {}).items():
            self.terms[token] = len(self.terms)
            self.docs.extend(docs)
            self.counts.extend(counts)
            self.bounds.append(len(self.docs))

    def __getstate__(self) -> tuple[Any, ...]:
        return (self.terms, self.bounds, self.docs, self.counts)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.terms, self.bounds, self.docs, self.counts = state

    def frequency(self, token: str) -> int:
        term = self.terms.get(token)
        return 0 if term is None else self.bounds[term + 1] - self.bounds[term]

    def get(self, token: str) -> tuple[array[int], array[Any]] | None:
        """(doc numbers, counts) of ``token``, or None."""
        term = self.terms.get(token)
        if term is None:
            return None
        start, end = self.bounds[term], self.bounds[term + 1]
        return self.docs[start:end], self.counts[start:end]

    def __len__(self) -> int:
        return len(self.terms)


class Successor(NamedTuple):
    """The active card that replaced a value, and since when (YYYY-MM-DD) it holds."""

    card: str
    since: str


class CurrentValue(NamedTuple):
    """The value the one active card of a fact key holds, for judging raw events that carry the key."""

    card: str
    value: str  # normalized (memdream.memory.factkey.normalize_value)
    since: str  # YYYY-MM-DD of the card's first supporting evidence
    newest: float  # epoch of the card's newest supporting evidence: older differing events are stale


class CardDoc(NamedTuple):
    """What recall needs of one card: to rank it, filter it and render it."""

    id: str
    type: str
    subject: str
    attribute: str | None
    value: str | None
    statement: str
    scope: str | None
    status: str
    confidence: float
    ts: str  # last_verified_at, else updated_at
    epoch: float  # ts in seconds, for recency
    evidence: tuple[str, ...]
    key: tuple[str, str] | None  # the normalized fact key
    references: int
    archived: bool
    tags: tuple[str, ...] = ()


@dataclass
class CardIndex:
    """Every card (active and archived). The index is rebuilt whenever any card file changes, so
    idf and lengths are fixed per build: postings hold finished BM25 term weights ("impacts")."""

    stamp: str
    # Each card's CardDoc fields, pickled one by one into a blob: a recall unpickles only the few
    # cards it looks at, not 10,000 (the columns below are what ranking reads for every candidate).
    blob: bytes = b""
    bounds: array[int] = field(default_factory=lambda: array("q", [0]))
    ids: list[str] = field(default_factory=list)
    epochs: array[float] = field(default_factory=lambda: array("d"))
    confidences: array[float] = field(default_factory=lambda: array("d"))
    references: array[int] = field(default_factory=lambda: array("i"))
    active: bytearray = field(default_factory=bytearray)  # 1: in cards/ and not superseded/archived
    postings: Postings = field(default_factory=Postings)  # token -> (docs, BM25 impact)
    idf: dict[str, float] = field(default_factory=dict)
    subjects: dict[str, list[int]] = field(default_factory=dict)  # compact subject -> doc numbers
    shared_keys: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # keys of >1 active card
    max_references: int = 0
    resident: list[int] = field(default_factory=list)  # active standing instructions (recall.resident)
    # The active cards by the scopes they name (recall.resident.scopes_of; "" for those that name none):
    # the session-start hook's cards of one scope, told apart without unpickling a card or scoring another
    # project's.
    scoped: dict[str, list[int]] = field(default_factory=dict)
    # Supersession (docs/recall.md, "Superseded values"): raw events that a superseded card cites and no
    # active card does, by reference; and the value of each fact key held by exactly one active card.
    # Plain tuples of Successor / CurrentValue fields: thousands of them unpickle at a third of the cost.
    stale_refs: dict[str, tuple[str, str]] = field(default_factory=dict)
    current: dict[tuple[str, str], tuple[str, str, str, float]] = field(default_factory=dict)

    @property
    def active_scopes(self) -> frozenset[str]:
        """The scopes the active cards name: a session-start hook asks which projects the memory knows, and
        unpickling every card's record to find out cost a third of its work."""
        return frozenset(name for name in self.scoped if name)

    def successor(self, ref: str) -> Successor | None:
        found = self.stale_refs.get(ref)
        return None if found is None else Successor(*found)

    def current_value(self, key: tuple[str, str]) -> CurrentValue | None:
        found = self.current.get(key)
        return None if found is None else CurrentValue(*found)

    def __len__(self) -> int:
        return len(self.ids)

    def doc(self, number: int) -> CardDoc:
        return CardDoc(*pickle.loads(self.blob[self.bounds[number]:self.bounds[number + 1]]))

    def conflict_partners(self, doc: CardDoc) -> list[CardDoc]:
        """``doc`` and every other active card of its fact key marked conflicting (by id): the values
        shown together as one conflict; ``doc`` alone when it is not conflicting."""
        if doc.status != CONFLICTING or doc.key is None:
            return [doc]
        others = (self.doc(number) for number in self.shared_keys.get(doc.key, []))
        return [doc] + sorted((other for other in others if other.status == CONFLICTING and other.id != doc.id),
                              key=lambda other: other.id)


@dataclass
class SegmentIndex:
    """The raw events of one segment that recall can return, in file order."""

    segment: str
    sha256: str
    offsets: array[int] = field(default_factory=lambda: array("q"))  # byte offset of each event's line
    epochs: array[float] = field(default_factory=lambda: array("d"))
    lengths: array[int] = field(default_factory=lambda: array("i"))
    groups: array[int] = field(default_factory=lambda: array("i"))  # episode (session + episode tag) number
    previous: array[int] = field(default_factory=lambda: array("i"))  # same session's neighbour, or -1
    following: array[int] = field(default_factory=lambda: array("i"))
    postings: Postings = field(default_factory=Postings)  # token -> (docs, length-normalized BM25 tf part)
    speakers: Postings = field(default_factory=Postings)  # speaker token -> doc numbers
    total_length: int = 0
    # Files (memdream.recall.file_views): doc -> (path, whole file shown) for the events that show one;
    # every change of a file in this segment (path, epoch, event reference, deleted).
    file_views: dict[int, tuple[str, bool]] = field(default_factory=dict)
    file_changes: list[tuple[str, float, str, bool]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offsets)


# -- stamps -------------------------------------------------------------------------------------
def card_files_stamp(paths: MemoryPaths) -> str:
    """A digest of the name, size and mtime of every file in the card and archive folders: any
    edit, add or delete changes it. (One stat per card: ~3 µs each, the price of noticing edits made
    in place, which change no directory's mtime; the entries are hashed as one string a folder, which
    costs a quarter of pickling a list of tuples.)"""
    digest = blake2b(digest_size=16)
    for base in (paths.cards, paths.archive):
        for layer in LAYERS:
            digest.update(f"\n{base.name}/{layer}\n".encode())
            entries: list[str] = []
            try:
                with os.scandir(base / layer) as scan:
                    for entry in scan:
                        info = entry.stat()
                        entries.append(f"{entry.name}\0{info.st_size}\0{info.st_mtime_ns}")
            except (FileNotFoundError, NotADirectoryError):
                continue
            entries.sort()  # the order of a folder's listing is the file system's
            digest.update("\n".join(entries).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_size, info.st_mtime_ns)


# -- pickle files --------------------------------------------------------------------------------
def cache_dir(paths: MemoryPaths) -> Path:
    return paths.state / "cache" / "recall"


def read_pickle(path: Path) -> Any:
    """The cached object, or None when missing, corrupt or of another index version."""
    return cachefile.read(path, INDEX_VERSION)


def write_pickle(path: Path, payload: Any) -> None:
    """Atomic: concurrent recalls see the old cache or the new one. A read-only memory just skips it."""
    cachefile.write(path, INDEX_VERSION, payload)


# -- building -------------------------------------------------------------------------------------
def compact_name(text: str) -> str:
    """A name as fuzzy matching and --subject compare it: lowercase letters and digits only."""
    return "".join(char for char in text.lower() if char.isalnum())


def card_evidence(memory: Memory) -> Callable[[Card], list[Evidence]]:
    """A card's full evidence: its inline entries and what the audit files hold (a card keeps only
    its newest few inline; memdream.memory.evidence_log)."""
    from memdream.memory.evidence_log import EvidenceLog

    logs: list[EvidenceLog] = []

    def of(card: Card) -> list[Evidence]:
        if card.evidence_complete:
            return card.evidence
        if not logs:  # read (through its own cache) only when some card needs it
            logs.append(EvidenceLog.load(memory.paths.audit, memory.paths.state / "cache"))
        return logs[0].of(card)

    return of


def _supports(evidence: list[Evidence]) -> list[Evidence]:
    return [item for item in evidence if item.stance == "supports"]


def supersession(cards: list[tuple[Card, bool]], evidence: dict[str, list[Evidence]]
                 ) -> tuple[dict[str, tuple[str, str]], dict[tuple[str, str], tuple[str, str, str, float]]]:
    """(stale raw references, current value per fact key) of ``cards`` ((card, archived) pairs).

    A reference is stale when a superseded card (status superseded, or ``superseded_by`` set) cites it
    as support and no active card does; its successor is the card ``superseded_by`` names, followed to
    an active one, else the one active card of the same fact key. One pass over the cards, one over
    their evidence: linear.
    """
    from memdream.memory.factkey import FactKey, normalize_value

    by_id = {card.id: card for card, _ in cards}
    active = {card.id for card, archived in cards if not archived and card.status in ACTIVE_STATUSES}
    supports = {card.id: _supports(evidence[card.id]) for card, _ in cards}
    keys: dict[tuple[str, str], list[Card]] = defaultdict(list)
    for card, _ in cards:
        if card.id in active and card.attribute:
            key = FactKey.of(card.subject, card.attribute)
            keys[(key.subject, key.attribute)].append(card)

    def since(card: Card) -> str:
        dates = [item.ts for item in supports[card.id] if item.ts]
        return (min(dates) if dates else card.created_at)[:10]

    current: dict[tuple[str, str], tuple[str, str, str, float]] = {}
    for pair, holders in keys.items():
        card = holders[0]
        if len(holders) == 1 and card.status != CONFLICTING and card.value is not None:
            newest = max((epoch_seconds(item.ts) for item in supports[card.id]), default=0.0)
            current[pair] = (card.id, normalize_value(card.value), since(card), newest)  # CurrentValue's fields

    def successor(card: Card) -> Card | None:
        seen = {card.id}
        while card.superseded_by:
            following = by_id.get(card.superseded_by[-1])
            if following is None or following.id in seen:
                break
            if following.id in active:
                return following
            seen.add(following.id)
            card = following
        if card.attribute:
            key = FactKey.of(card.subject, card.attribute)
            holders = keys.get((key.subject, key.attribute), [])
            return holders[0] if len(holders) == 1 else None
        return None

    held = {item.ref for card_id in active for item in supports[card_id]}
    stale: dict[str, tuple[str, str]] = {}
    for card, _ in cards:
        if card.id in active or not (card.status == SUPERSEDED or card.superseded_by):
            continue
        found = successor(card)
        if found is None:
            continue
        for item in supports[card.id]:
            if item.ref not in held:
                stale.setdefault(item.ref, (found.id, since(found)))
    return stale, current


def build_card_index(memory: Memory, stamp: str) -> CardIndex:
    from memdream.memory.cardcache import load_cards
    from memdream.memory.factkey import normalize_name
    from memdream.recall.resident import is_resident, scopes_of

    index = CardIndex(stamp=stamp)
    lists: dict[str, tuple[list[int], list[float]]] = {}
    lengths: list[float] = []
    subjects: dict[str, list[int]] = defaultdict(list)
    keys: dict[tuple[str, str], list[int]] = defaultdict(list)
    blob = bytearray()
    loaded: list[tuple[Card, bool]] = []
    evidence_of = card_evidence(memory)
    full: dict[str, list[Evidence]] = {}
    for number, cached in enumerate(load_cards(memory, include_archive=True)):
        card = cached.card
        loaded.append((card, cached.file.archived))
        full[card.id] = evidence_of(card)
        ts = card.last_verified_at or card.updated_at
        key = (normalize_name(card.subject), normalize_name(card.attribute)) if card.attribute else None
        doc = CardDoc(
            id=card.id, type=card.type, subject=card.subject, attribute=card.attribute, value=card.value,
            statement=card.statement, scope=card.scope, status=card.status, confidence=card.confidence,
            ts=ts, epoch=epoch_seconds(ts), evidence=tuple(item.ref for item in card.evidence), key=key,
            references=int(card.reference_count or 0), archived=cached.file.archived, tags=tuple(card.tags),
        )
        blob += pickle.dumps(tuple(doc), protocol=pickle.HIGHEST_PROTOCOL)
        index.bounds.append(len(blob))
        index.ids.append(card.id)
        index.epochs.append(doc.epoch)
        index.confidences.append(doc.confidence)
        index.references.append(doc.references)
        index.max_references = max(index.max_references, doc.references)
        active = not cached.file.archived and card.status in ACTIVE_STATUSES
        index.active.append(active)
        if active:
            for name in scopes_of(doc) or ("",):
                index.scoped.setdefault(name, []).append(number)
        if active and is_resident(card.type, card.tags):
            index.resident.append(number)
        if key is not None and active:
            keys[key].append(number)
        counts: dict[str, float] = defaultdict(float)
        fields = {"statement": card.statement, "subject": card.subject, "attribute": card.attribute or "",
                  "value": card.value or "", "tags": " ".join(card.tags), "scope": card.scope or ""}
        for name, text in fields.items():
            for token in tokenize(text):
                counts[token] += CARD_FIELD_WEIGHTS[name]
        for token, count in counts.items():
            entry = lists.setdefault(token, ([], []))
            entry[0].append(number)
            entry[1].append(count)
        lengths.append(sum(counts.values()))
        subjects[compact_name(card.subject)].append(number)
    index.blob = bytes(blob)
    index.shared_keys = {key: numbers for key, numbers in keys.items() if len(numbers) > 1}
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    for token, (numbers, weights) in lists.items():
        weight = index.idf[token] = idf(len(lengths), len(numbers))
        for position, (number, count) in enumerate(zip(numbers, weights)):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[number] / average)
            weights[position] = weight * count * (BM25_K1 + 1) / (count + norm)
    index.postings = Postings(lists, "f")
    index.subjects = dict(subjects)
    index.stale_refs, index.current = supersession(loaded, full)
    return index


def result_command(event: dict[str, Any]) -> str | None:
    """The one-line command a tool result answers (``args.command``, copied there by ingest), or None."""
    if event.get("kind") != "tool_result":
        return None
    args = event.get("args")
    command = args.get("command") if isinstance(args, dict) else None
    return command if isinstance(command, str) and command.strip() else None


def event_text(event: dict[str, Any]) -> str:
    """The searchable words of an event: its text, error, tool, the command a tool result answers
    (a question about ``pytest`` finds its results) and the fact it carries."""
    parts = [str(event.get(name) or "") for name in ("text", "error", "tool", "goal")]
    parts.append(result_command(event) or "")
    fact = event.get("fact")
    if isinstance(fact, dict):
        parts.extend(str(fact.get(name) or "") for name in ("subject", "attribute", "value"))
    return " ".join(part for part in parts if part)


def event_speaker(event: dict[str, Any]) -> str:
    return str(event.get("speaker") or event.get("actor") or "")


def _date_tokens(ts: str) -> list[str]:
    """The year and the month name of an event: "what happened in May 2023" meets events of then."""
    try:
        return [ts[:4], _MONTHS[int(ts[5:7]) - 1]]
    except (ValueError, IndexError):
        return []


def _episode(event: dict[str, Any]) -> str:
    return f"{event.get('session', '')}\0{episode_of(event.get('tags') or ())}"


def build_segment_index(path: Path, segment: str, sha256: str) -> SegmentIndex:
    index = SegmentIndex(segment=segment, sha256=sha256)
    lists: dict[str, tuple[list[int], list[float]]] = {}
    speaker_lists: dict[str, tuple[list[int], list[float]]] = {}
    group_numbers: dict[str, int] = {}
    last_of_session: dict[str, int] = {}
    from memdream.recall.file_views import FileRecorder  # here: a recall that indexes nothing never needs it

    files = FileRecorder()
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            event = _event(raw, segment, number)
            if event.get("kind") not in RAW_KINDS or event.get("tool") in BOOKKEEPING_TOOLS:
                files.see(event, None)
                continue
            doc = len(index.offsets)
            files.see(event, doc)
            tokens = tokenize(event_text(event)) + _date_tokens(str(event.get("ts", "")))
            frequencies: dict[str, int] = defaultdict(int)
            for token in tokens:
                frequencies[token] += 1
            for token, count in frequencies.items():
                entry = lists.setdefault(token, ([], []))
                entry[0].append(doc)
                entry[1].append(count)
            for token in set(tokenize(event_speaker(event))):
                entry = speaker_lists.setdefault(token, ([], []))
                entry[0].append(doc)
                entry[1].append(1)
            index.groups.append(group_numbers.setdefault(_episode(event), len(group_numbers)))
            session = str(event.get("session", ""))
            before = last_of_session.get(session, -1)
            index.previous.append(before)
            index.following.append(-1)
            if before >= 0:
                index.following[before] = doc
            last_of_session[session] = doc
            index.offsets.append(start)
            index.epochs.append(epoch_seconds(event.get("ts")))
            index.lengths.append(len(tokens))
    index.file_views, index.file_changes = files.views, files.changes
    index.total_length = sum(index.lengths)
    average = (index.total_length / len(index.lengths)) if index.lengths else 1.0
    for numbers, parts in lists.values():
        for position, (number, frequency) in enumerate(zip(numbers, parts)):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * index.lengths[number] / average)
            parts[position] = frequency * (BM25_K1 + 1) / (frequency + norm)
    index.postings = Postings(lists, "f")
    index.speakers = Postings(speaker_lists, "i")
    return index


def file_history(segments: Iterable[SegmentIndex]) -> FileHistory:
    """Every file's changes and whole views across ``segments`` (memdream.recall.file_views)."""
    from memdream.recall.file_views import Change, FileHistory

    history = FileHistory()
    for segment in segments:
        for path, epoch, ref, deleted in segment.file_changes:
            history.add_change(path, Change(epoch, ref, deleted))
        for doc, (path, whole) in segment.file_views.items():
            if whole:
                history.add_shown(path, segment.epochs[doc])
    return history.seal()


# -- loading ---------------------------------------------------------------------------------------
@dataclass
class BuildCounter:
    """How many index parts this process built rather than read: the tests' view of the cache."""

    cards: int = 0
    segments: int = 0


BUILDS = BuildCounter()


@dataclass
class IndexMemo:
    """The indexes a long-lived process (the MCP server) keeps between recalls, so that a recall reads
    no cache file it has read before. Each is checked by the stamp its cache file is checked by (the card
    files' stats, a segment's sha256 in the manifest, the stat of memdream.yaml and plan.yaml), on every
    recall: a dream, an ingest or an edit in between is seen by the next one.

    Shared between recalls: recall only reads what it holds (it is what the cache files would give).
    """

    cards: CardIndex | None = None
    segments: dict[tuple[str, str], SegmentIndex] = field(default_factory=dict)  # by (segment, sha256)
    # raw/MANIFEST.jsonl as last parsed, by the stat of the file: one segment more per note an agent leaves.
    manifest: tuple[tuple[int, int] | None, list[tuple[str, str]]] | None = None
    meta: Any = None  # memdream.recall.engine.Meta, which checks its own stamp


def load_card_index(paths: MemoryPaths, memory: Any, memo: IndexMemo | None = None) -> CardIndex:
    """The card index, rebuilt (through the card cache) only when a card file changed.

    ``memory`` is a callable giving the :class:`Memory` (its import costs YAML): only a miss calls it.
    With ``memo``, the index it holds is used while its stamp holds, and the one loaded is kept there.
    """
    stamp = card_files_stamp(paths)
    if memo is not None and memo.cards is not None and memo.cards.stamp == stamp:
        return memo.cards
    path = cache_dir(paths) / "cards.pickle"
    cached = read_pickle(path)
    if isinstance(cached, CardIndex) and cached.stamp == stamp:
        index = cached
    else:
        index = build_card_index(memory(), stamp)
        BUILDS.cards += 1
        write_pickle(path, index)
    if memo is not None:
        memo.cards = index
    return index


def manifest(paths: MemoryPaths, memo: IndexMemo | None = None) -> list[tuple[str, str]]:
    """(segment, sha256) of every segment in raw/MANIFEST.jsonl (see memdream.memory.raw); with ``memo``,
    parsed again only when the file's size or mtime changed."""
    if memo is None:
        return _read_manifest(paths)
    stamp = file_stamp(paths.raw / "MANIFEST.jsonl")
    if memo.manifest is None or memo.manifest[0] != stamp:
        memo.manifest = (stamp, _read_manifest(paths))
    return memo.manifest[1]


def _read_manifest(paths: MemoryPaths) -> list[tuple[str, str]]:
    try:
        text = (paths.raw / "MANIFEST.jsonl").read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                record = json.loads(line)
                records.append((str(record["segment"]), str(record["sha256"])))
            except (ValueError, KeyError, TypeError):
                continue  # lint reports a broken manifest; recall reads what it can
    return records


def segment_path(paths: MemoryPaths, segment: str) -> Path:
    return paths.raw / "segments" / segment


def load_segment_indexes(paths: MemoryPaths, memo: IndexMemo | None = None) -> list[SegmentIndex]:
    """One index per segment of the manifest that is present; a new segment is indexed once. With
    ``memo``, a segment whose sha256 is the one it was loaded with is not read again (and the memo
    keeps only the segments the manifest still lists)."""
    kept = memo.segments if memo is not None else {}
    found: list[SegmentIndex] = []
    for segment, sha256 in manifest(paths, memo):
        source = segment_path(paths, segment)
        if not os.path.exists(source):
            continue  # cloned without the raw layer
        cached = kept.get((segment, sha256))
        if cached is None:
            cached = _segment_index(paths, source, segment, sha256)
        found.append(cached)
    if memo is not None:
        memo.segments = {(index.segment, index.sha256): index for index in found}
    return found


def _segment_index(paths: MemoryPaths, source: Path, segment: str, sha256: str) -> SegmentIndex:
    """The index of one segment from its cache file, built (and cached) when missing or stale."""
    path = cache_dir(paths) / "raw" / f"{segment}.pickle"
    cached = read_pickle(path)
    if not (isinstance(cached, SegmentIndex) and cached.sha256 == sha256):
        cached = build_segment_index(source, segment, sha256)
        BUILDS.segments += 1
        write_pickle(path, cached)
    return cached


def read_events(paths: MemoryPaths, segment: str, offsets: Iterable[int]) -> dict[int, dict[str, Any]]:
    """The events at these byte offsets of one segment file."""
    events = {}
    with open(segment_path(paths, segment), "rb") as handle:
        for offset in sorted(set(offsets)):
            handle.seek(offset)
            events[offset] = _event(handle.readline(), segment, offset)
    return events


def _event(raw: bytes, segment: str, where: int) -> dict[str, Any]:
    """One stored event; a damaged line is one clear error naming the segment (``where``: its line,
    or the byte offset the index recorded)."""
    try:
        event = json.loads(raw)
    except ValueError as error:
        from memdream.memory.raw import RawLayer

        raise RawLayer.damaged(segment, where, error) from None
    if not isinstance(event, dict):
        from memdream.memory.raw import RawLayer

        raise RawLayer.damaged(segment, where, ValueError("not a JSON object"))
    return event


def idf(documents: int, frequency: int) -> float:
    """BM25's idf, never negative."""
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))
