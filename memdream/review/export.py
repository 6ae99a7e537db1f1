"""`memdream export`: everything a memory holds about one subject or one session, as one JSON bundle
(a person's request for their data, a project handed over, a session to be reviewed elsewhere).

What "about" means, exactly:

- **--subject S** (``key``: S normalized like fact keys, :func:`memdream.memory.factkey.normalize_name`):
  ``cards`` and ``archived`` hold the cards whose subject or scope normalizes to ``key``, and every card of
  their version chains (``supersedes`` / ``superseded_by``, followed both ways: a version of a card about S
  is about S even if its subject was spelled otherwise). ``mentions`` holds the other cards (active or
  archived: their ``status`` tells) whose subject, attribute, value, statement, scope or tags name S as a
  whole word: data about S inside a card about something else, listed apart so that nothing is mislabelled.
- **--session ID**: the cards whose evidence (on the card, or held in the audit files) cites an event of
  ID; no chain is followed (an older version that cites nothing of the session is not about it), and
  ``mentions`` is empty.
- **--card ID** (`memdream forget` only): the card and every version of its chain, as for a subject;
  ``mentions`` is empty.
- **Events** (``events``): the raw events the exported cards and archived versions cite as evidence (on the
  card or held in the audit files, either stance), plus for --session every event of ID, plus for
  --subject every event whose ``fact.subject`` normalizes to ``key`` and every event whose text names S as a
  whole word. An event's text is every string it carries (text, goal, speaker, error, tool, args, fact,
  next, done, meta) but its identifiers and fixed vocabulary (session, id, ts, kind, actor, call_id,
  verdict, target, tags). Each event says ``why`` it is there. The segments are streamed once, line by line;
  a line is parsed only when a cheap test on its bytes says it may match.
- **Audit entries** (``audit``): the lines of ``audit/*.jsonl`` that name an exported card or archived
  version (``card``, ``cards``, ``target``) or cite an exported event. Mentions are exported as cards only:
  their evidence and audit lines are about their own subject.
- **Plan items** (``plan``): the goal, next, done and per-project goals of ``plan.yaml`` whose text names
  S or whose scope is S (--subject), whose evidence cites an event of ID (--session), or an event the card
  cites (--card).

A "whole word" match is case-insensitive, with spaces, hyphens and underscores alike between the words of
S and no letter or digit on either side: ``--subject "alice martin"`` finds "Alice Martin", "alice_martin"
and "@alice-martin", not "malice martinez".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdream import yamlio
from memdream.clock import format_timestamp, now
from memdream.errors import MemdreamError, UsageError
from memdream.jsonio import dumps_canonical, loads
from memdream.memory.factkey import normalize_name
from memdream.memory.paths import AUDIT_DIR
from memdream.memory.raw import SEGMENTS, RawLayer
from memdream.memory.refs import REF_SCHEME, parse_ref
from memdream.review.provenance import AuditLine, held_evidence, segment_names

if TYPE_CHECKING:
    from memdream.memory.card import Card
    from memdream.memory.cardcache import CachedCard

EXPORT_VERSION = 1
PRESENT, PARTIAL, ABSENT = "present", "partial", "absent"
SECTIONS = ("cards", "archived", "mentions", "events", "audit", "plan")
# Event fields that identify or classify an event: never searched for a name.
_IDENTIFIERS = frozenset({"session", "id", "ts", "kind", "actor", "call_id", "verdict", "target", "tags", "ok"})
_CARD_TEXT = ("subject", "attribute", "value", "statement", "scope")
_PLAN_FIELDS = ("goal", "next", "done", "goals")
_ID_FIELD = re.compile(rb'"id":("(?:[^"\\]|\\.)*")')  # canonical JSON: no space after the colon
_FEW_IDS = 16
_REF_STRING = re.compile(rb'"log://(?:[^"\\]|\\.)*"')


class NamePattern:
    """S as a whole word (see the module's docstring), and a looser test for a stored JSON line."""

    def __init__(self, name: str) -> None:
        words = [re.escape(word) for word in re.split(r"[\s_-]+", name.strip()) if word]
        if not words:
            raise UsageError("--subject needs a name with at least one letter or digit")
        self.words = re.compile(r"(?<![^\W_])" + r"[\s_-]+".join(words) + r"(?![^\W_])", re.IGNORECASE)
        # In a stored line a newline or tab between the words is escaped ("\n"): the loose test allows it
        # and drops the word boundaries; every line the exact test can accept passes it.
        self.loose = re.compile(r"(?:[\s_-]|\\[nrt])+".join(words), re.IGNORECASE)
        # An ASCII name is looked for in the line's bytes (no decoding of 100,000 lines); IGNORECASE folds
        # ASCII letters only, which is all such a name has.
        self._loose_bytes = re.compile(self.loose.pattern.encode("ascii"), re.IGNORECASE) if name.isascii() else None

    def in_line(self, line: bytes) -> bool:
        """Whether a stored line may name S (a superset of the lines whose event does)."""
        if self._loose_bytes is not None:
            return self._loose_bytes.search(line) is not None
        return self.loose.search(line.decode("utf-8", errors="replace")) is not None

    def in_text(self, text: str) -> bool:
        return self.words.search(text) is not None

    def in_card(self, card: Card) -> bool:
        texts = [getattr(card, name) for name in _CARD_TEXT]
        return any(isinstance(text, str) and self.in_text(text) for text in [*texts, *card.tags])


@dataclass(frozen=True)
class Query:
    """One subject, one session or one card (``memdream forget --card``: the card and its versions)."""

    subject: str | None = None
    session: str | None = None
    card: str | None = None

    def __post_init__(self) -> None:
        if [self.subject, self.session, self.card].count(None) != 2:
            raise UsageError("give exactly one of --subject or --session (see 'memdream export --help')")
        if self.session is not None and not self.session:
            raise UsageError("--session needs a session id")
        if self.card is not None and not self.card:
            raise UsageError("--card needs a card id")

    @property
    def key(self) -> str:
        return normalize_name(self.subject or "")

    @property
    def kind(self) -> str:
        """What the query names: ``subject``, ``session`` or ``card``."""
        return "subject" if self.subject is not None else "session" if self.session is not None else "card"

    def to_dict(self) -> dict[str, Any]:
        if self.subject is not None:
            return {"subject": self.subject, "key": self.key}
        return {"session": self.session} if self.session is not None else {"card": self.card}

    def describe(self) -> str:
        named = self.subject if self.subject is not None else self.session if self.session is not None else self.card
        return f"{self.kind} {named!r}"


@dataclass
class Bundle:
    """The export: each item as the memory stores it; :meth:`to_dict` is the JSON document."""

    query: Query
    exported_at: str
    memory: str
    raw_layer: str  # present, partial (some segments missing) or absent (a clone without raw/segments)
    segments_missing: int
    cards: list[dict[str, Any]]
    archived: list[dict[str, Any]]
    mentions: list[dict[str, Any]]
    events: list[dict[str, Any]]
    audit: list[dict[str, Any]]
    plan: list[dict[str, Any]]

    @property
    def empty(self) -> bool:
        return not any(getattr(self, name) for name in SECTIONS)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in SECTIONS}

    def to_dict(self) -> dict[str, Any]:
        return {"memdream_export": EXPORT_VERSION, "query": self.query.to_dict(), "exported_at": self.exported_at,
                "memory": self.memory, "raw_layer": self.raw_layer,
                **{name: getattr(self, name) for name in SECTIONS}}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n"


@dataclass
class Selection:
    """What the memory holds about a query, as the module's docstring defines it: the memory's own
    objects, for export to copy and for `memdream forget` to erase (one definition for both)."""

    query: Query
    pattern: NamePattern | None  # S as a whole word (--subject only)
    about: list[CachedCard]  # cards and archived versions about the query
    mentions: list[CachedCard]  # other cards that name S
    events: list[dict[str, Any]]  # {"segment", "line", "why", "event"}, in segment order
    audit: list[AuditLine]  # in file order
    plan: list[dict[str, Any]]  # {"field", "index"?, "item"}
    segments: list[str]  # the raw segments the manifest lists
    present: list[str]  # of those, the ones here

    @property
    def raw_layer(self) -> str:
        return PRESENT if len(self.present) == len(self.segments) else ABSENT if not self.present else PARTIAL


def select(root: Path, subject: str | None = None, session: str | None = None, card: str | None = None,
           loaded: list[CachedCard] | None = None) -> Selection:
    """Everything the memory at ``root`` holds about ``subject``, ``session`` or ``card`` (exactly one);
    ``loaded``: the memory's cards when the caller has them."""
    from memdream.memory.cardcache import load_cards
    from memdream.memory.store import Memory

    query = Query(subject, session, card)
    pattern = NamePattern(subject) if subject is not None else None
    memory = Memory(root)
    if loaded is None:
        loaded = load_cards(memory)
    audit_files = _audit_files(root)
    mentions: list[CachedCard] = []
    if session is not None:
        about = _cards_citing(loaded, session, _holding_session(audit_files, session))
    elif card is not None:
        about = chain(loaded, {item.card.id for item in loaded if item.card.id == card})
    else:
        assert pattern is not None
        about = chain(loaded, {item.card.id for item in loaded if _is_about(item.card, query.key)})
        chosen = {id(item) for item in about}
        mentions = [item for item in loaded if id(item) not in chosen and pattern.in_card(item.card)]
    ids = {item.card.id for item in about}
    named = _lines_naming(audit_files, ids)
    wanted = {parse_ref(ref) for ref in evidence_refs(about, named)}
    raw = RawLayer(memory.paths)
    names = segment_names(raw)
    here = [name for name in names if raw.segment_path(name).is_file()]
    events = list(_events(raw, here, query, pattern, wanted))
    cited = {f"{REF_SCHEME}{item['event'].get('session')}#{item['event'].get('id')}" for item in events}
    return Selection(query=query, pattern=pattern, about=about, mentions=mentions, events=events,
                     audit=_audit_entries(audit_files, named, cited),
                     plan=_plan_items(memory.paths.plan, query, pattern, wanted), segments=names, present=here)


def export(root: Path, subject: str | None = None, session: str | None = None) -> Bundle:
    """Everything the memory at ``root`` holds about ``subject`` or ``session`` (exactly one)."""
    from memdream.memory.journal import require_settled

    Query(subject, session)  # the query is checked before the memory is looked at
    require_settled(root)
    found = select(root, subject=subject, session=session)
    return Bundle(
        query=found.query, exported_at=format_timestamp(now()), memory=str(root.resolve()),
        raw_layer=found.raw_layer, segments_missing=len(found.segments) - len(found.present),
        cards=[_stored_card(root, item) for item in found.about if not item.archived],
        archived=[_stored_card(root, item) for item in found.about if item.archived],
        mentions=[_stored_card(root, item) for item in found.mentions],
        events=found.events,
        audit=[_audit_item(line) for line in found.audit],
        plan=found.plan,
    )


def write_bundle(bundle: Bundle, path: Path, force: bool = False) -> None:
    """Write the bundle to ``path`` atomically; an existing file only with ``force``."""
    if path.is_dir():
        raise MemdreamError(f"{path} is a folder, not a file")
    if path.exists() and not force:
        raise MemdreamError(f"{path} exists: give --force to overwrite it")
    yamlio.write_atomic(path, bundle.to_json())


# --- cards ------------------------------------------------------------------------------------------------

def chain(loaded: list[CachedCard], ids: set[str]) -> list[CachedCard]:
    """The cards ``ids`` and every version of their chains (``supersedes`` / ``superseded_by``, both ways)."""
    by_id = {item.card.id: item for item in loaded}
    found = set(ids) & set(by_id)
    queue = list(found)
    while queue:
        card = by_id[queue.pop()].card
        for other in (*card.supersedes, *card.superseded_by):
            if other in by_id and other not in found:
                found.add(other)
                queue.append(other)
    return [item for item in loaded if item.card.id in found]


def _is_about(card: Card, key: str) -> bool:
    return normalize_name(card.subject) == key or (card.scope is not None and normalize_name(card.scope) == key)


def _cards_citing(loaded: list[CachedCard], session: str, holding: set[str]) -> list[CachedCard]:
    """Cards with evidence of ``session``, on the card or (``holding``) in the audit files."""
    return [item for item in loaded
            if item.card.id in holding or any(parse_ref(evidence.ref)[0] == session for evidence in item.card.evidence)]


def _stored_card(root: Path, item: CachedCard) -> dict[str, Any]:
    """The card as its YAML file holds it."""
    data: dict[str, Any] = yamlio.load_file(root / item.relpath)
    return data


def evidence_refs(cards: list[CachedCard], named: list[AuditLine]) -> set[str]:
    """Every evidence reference of ``cards``: on the card, and held in the audit lines ``named``."""
    refs = {evidence.ref for item in cards for evidence in item.card.evidence}
    for item in cards:
        if not item.card.evidence_complete:
            refs.update(evidence.ref for evidence in held_evidence(named, item.card.id))
    return refs


# --- the audit files --------------------------------------------------------------------------------------

def _audit_files(root: Path) -> list[Path]:
    folder = root / AUDIT_DIR
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def _audit_lines(files: list[Path], keep: Any) -> Iterator[AuditLine]:
    """The parsed lines of the audit files whose bytes pass ``keep`` (a cheap test before parsing)."""
    for path in files:
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                if raw.strip() and keep(raw):
                    data = _parsed(raw)
                    if data is not None:
                        yield AuditLine(path.name.removesuffix(".jsonl"), number, data)


def _holding_session(files: list[Path], session: str) -> set[str]:
    """Cards whose evidence held in the audit files cites an event of ``session``."""
    token = json.dumps(f"{REF_SCHEME}{session}#", ensure_ascii=False)[:-1].encode("utf-8")
    holding: set[str] = set()
    for line in _audit_lines(files, lambda raw: token in raw):
        card = line.data.get("card")
        if line.op == "evidence" and isinstance(card, str) and \
                any(parse_ref(item.ref)[0] == session for item in held_evidence([line], card)):
            holding.add(card)
    return holding


def _lines_naming(files: list[Path], ids: set[str]) -> list[AuditLine]:
    if not ids:
        return []
    tokens = [json.dumps(card_id, ensure_ascii=False).encode("utf-8") for card_id in ids]
    return [line for line in _audit_lines(files, lambda raw: any(token in raw for token in tokens))
            if line.names() & ids]


def _audit_entries(files: list[Path], named: list[AuditLine], cited: set[str]) -> list[AuditLine]:
    """The lines naming an exported card (``named``) and those citing an exported event, in file order."""
    found = {(line.run, line.line): line for line in named}
    if cited:
        for line in _audit_lines(files, lambda raw: _cites(raw, cited)):
            found.setdefault((line.run, line.line), line)
    return [found[place] for place in sorted(found)]


def _cites(raw: bytes, refs: set[str]) -> bool:
    if b"log://" not in raw:
        return False
    for match in _REF_STRING.finditer(raw):
        try:
            if loads(match.group()) in refs:
                return True
        except ValueError:
            continue
    return False


def _audit_item(line: AuditLine) -> dict[str, Any]:
    return {"file": f"{AUDIT_DIR}/{line.run}.jsonl", "line": line.line, "entry": line.data}


# --- the raw layer ----------------------------------------------------------------------------------------

def _events(raw: RawLayer, names: list[str], query: Query, pattern: NamePattern | None,
            wanted: set[tuple[str, str]]) -> Iterator[dict[str, Any]]:
    """The matching events of the segments ``names``, one line at a time, with why each matched."""
    may_be_wanted = _id_test({dumps_canonical(event_id) for _, event_id in wanted})
    session_token = b'"session":' + dumps_canonical(query.session) if query.session is not None else None
    for name in names:
        for number, line in _segment_lines(raw, name):
            maybe_wanted = may_be_wanted(line)
            maybe_session = session_token is not None and session_token in line
            maybe_named = pattern is not None and pattern.in_line(line)
            if not (maybe_wanted or maybe_session or maybe_named):
                continue
            event = _event(raw, name, number, line)
            why = _why(event, query, pattern, wanted)
            if why:
                yield {"segment": f"raw/{SEGMENTS}/{name}", "line": number, "why": why, "event": event}


def _id_test(ids: set[bytes]) -> Callable[[bytes], bool]:
    """A cheap test of whether a stored line may be one of the events with these ids (canonical JSON)."""
    if not ids:
        return lambda line: False
    if len(ids) <= _FEW_IDS:  # a few substrings are found faster than every id field is extracted
        tokens = [b'"id":' + event_id for event_id in ids]
        return lambda line: any(token in line for token in tokens)
    return lambda line: any(found in ids for found in _ID_FIELD.findall(line))


def _why(event: dict[str, Any], query: Query, pattern: NamePattern | None,
         wanted: set[tuple[str, str]]) -> list[str]:
    why = []
    if (event.get("session"), event.get("id")) in wanted:
        why.append("evidence")
    if query.session is not None and event.get("session") == query.session:
        why.append("session")
    if pattern is not None:
        fact = event.get("fact")
        subject = fact.get("subject") if isinstance(fact, dict) else None
        if isinstance(subject, str) and normalize_name(subject) == query.key:
            why.append("fact")
        if any(pattern.in_text(text) for key, value in event.items() if key not in _IDENTIFIERS
               for text in _strings(value)):
            why.append("text")
    return why


def _strings(value: Any) -> Iterator[str]:
    """Every string inside ``value`` (the values of mappings, not their keys)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _segment_lines(raw: RawLayer, name: str) -> Iterator[tuple[int, bytes]]:
    """(line number, stored line without its newline) of one segment: streamed, never read whole."""
    with open(raw.segment_path(name), "rb") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, line.rstrip(b"\n")


def _event(raw: RawLayer, name: str, number: int, line: bytes) -> dict[str, Any]:
    try:
        event = loads(line)
    except ValueError as error:
        raise raw.damaged(name, number, error) from None
    if not isinstance(event, dict):
        raise raw.damaged(name, number, TypeError("not a JSON object"))
    return event


def _parsed(raw: bytes) -> dict[str, Any] | None:
    try:
        data = loads(raw)
    except (ValueError, RecursionError):
        return None  # a damaged audit line: lint names it
    return data if isinstance(data, dict) else None


# --- the plan ---------------------------------------------------------------------------------------------

def _plan_items(path: Path, query: Query, pattern: NamePattern | None,
                wanted: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """The plan's goal and items about the query, each as stored, with the field it is in."""
    data = yamlio.load_mapping(path)
    if data is None:
        return []
    found = []
    for field_name in _PLAN_FIELDS:
        value = data.get(field_name)
        for index, item in _plan_entries(value):
            if _plan_item_matches(item, query, pattern, wanted):
                found.append({"field": field_name, **({"index": index} if index is not None else {}), "item": item})
    return found


def _plan_entries(value: Any) -> Iterable[tuple[int | None, Any]]:
    if isinstance(value, str):
        return [(None, value)] if value else []
    if isinstance(value, list):
        return list(enumerate(value))
    return []


def _plan_item_matches(item: Any, query: Query, pattern: NamePattern | None, wanted: set[tuple[str, str]]) -> bool:
    if isinstance(item, str):  # the goal
        return pattern is not None and pattern.in_text(item)
    if not isinstance(item, dict):
        return False
    if pattern is None:  # a session's items cite its events; a card's, the events it cites
        refs = item.get("evidence")
        cited = [parse_ref(ref) for ref in refs if isinstance(ref, str)] if isinstance(refs, list) else []
        return any(session == query.session if query.session is not None else (session, event_id) in wanted
                   for session, event_id in cited)
    text, scope = item.get("text"), item.get("scope")
    return (isinstance(text, str) and pattern.in_text(text)) or \
        (isinstance(scope, str) and (normalize_name(scope) == query.key or pattern.in_text(scope)))
