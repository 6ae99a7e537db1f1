"""The stateless half of ingest: redaction of one event, and a whole chunk of memdream lines.

Everything here depends on one event at a time, never on the events before it, so a big
memdream-format input can be prepared in chunks by worker processes (:mod:`.workers`) while
the ingest process keeps the order-dependent half: ids, dedup, salience, writing.

A prepared event crosses the pipe as the few fields that the order-dependent half reads, and
its canonical JSON cut in two around the ``tags`` value (keys are sorted, so ``tags`` has one
place): the ingest process adds the tags without parsing or serializing the event again.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Union

import orjson
from ahocorasick_rs import BytesAhoCorasick

from memdream.errors import MemdreamError
from memdream.ingest.adapters.context import ParseContext
from memdream.ingest.adapters.memdream_jsonl import parse_line
from memdream.ingest.salience import Hints, hints_for
from memdream.ingest.sources import MAX_LINE_BYTES, too_long
from memdream.ingest.validate import DEFAULT_ACTOR, FIELDS, fast_valid, first_error, fit_caps, usual_ts
from memdream.injection import INSTRUCTION_WORDS
from memdream.jsonio import MAX_DEPTH, dumps_canonical, needs_stdlib
from memdream.redact import shape_of

if TYPE_CHECKING:
    from memdream.redact import Redactor

# Every field of an event is redacted, keys of ``args`` and ``meta`` included, except these:
# the schema holds them to a timestamp, an enum or a boolean, so they cannot carry a secret.
NOT_REDACTED = frozenset({"ts", "kind", "actor", "ok", "verdict"})
# Values that name an event or point at one (``log://<session>#<id>``, a call and its result,
# feedback and its target): a redacted one keeps a digest of what it was, so that distinct
# values stay distinct and the same value redacts the same way in every event and every run.
IDENTIFIER_CAPS = {"session": 512, "id": 256, "call_id": 256, "target": 256}
_OTHER_CAPS = {"tool": 256}
_DIGEST_CHARS = 12
_BOM = "\ufeff"


def redact_event(redactor: Redactor, event: dict[str, Any]) -> Counter[str] | None:
    """Redact every string of ``event`` in place, mapping keys included; what was replaced, or
    None when nothing was."""
    # One call for all fields: a field name is never a secret-looking key and never holds a
    # secret, so this is the same as redacting each field on its own, without a Counter per field.
    content = {name: value for name, value in event.items() if name not in NOT_REDACTED}
    if not content:
        return None
    redacted, counts = redactor.redact_obj(content, keys=True)
    if not counts:
        return None
    for name, cap in IDENTIFIER_CAPS.items():
        value = redacted.get(name)
        if isinstance(value, str) and value != event[name]:
            redacted[name] = redacted_identifier(value, event[name], cap)
    for name, cap in _OTHER_CAPS.items():
        value = redacted.get(name)
        if isinstance(value, str) and len(value) > cap:
            redacted[name] = value[:cap]
    event.update(redacted)
    return counts


def redacted_identifier(redacted: str, original: str, cap: int) -> str:
    """``redacted`` (a session, id or reference with placeholders) made unique and stable: a digest
    of ``original`` appended, kept within ``cap``. Placeholders and the digest hold no whitespace and
    no ``#``, so the value stays valid wherever the original was."""
    digest = hashlib.blake2b(original.encode("utf-8", "surrogatepass"), digest_size=_DIGEST_CHARS // 2).hexdigest()
    return f"{redacted[:cap - _DIGEST_CHARS - 1]}-{digest}"


@dataclass(frozen=True)
class ChunkJob:
    """A run of whole lines of a memdream-format file, and what parsing them needs to know."""

    source: str  # the input's name, for messages
    path: str
    offset: int  # at a line start
    length: int  # ends at a line end (or at the end of the file)
    default_session: str
    session: str | None
    strict: bool


# What a chunk's lines become: plain tuples, first item the record's kind. Thousands cross a pipe
# per chunk, by marshal, which takes nothing but plain tuples (and building a NamedTuple costs a
# worker ~1 us an event): a READY record is laid out as :class:`Ready`, and read as one.
READY = 0  # the fields of a :class:`Ready`, in order
EVENT = 1  # (EVENT, line, event as JSON, redactions, hints): an event without id, for the full path
BAD = 2  # (BAD, line, reason)
Prepared = tuple[Any, ...]
Redactions = Union[dict[str, int], None]  # noqa: UP007 - an alias evaluated on Python 3.10


class Ready(NamedTuple):
    """A prepared event with an id: the few fields the order-dependent half of ingest reads, and
    the event's canonical JSON cut around its ``tags`` value (``head`` + tags + ``tail``).
    ``Ready._make(record)`` reads a READY record."""

    record: int  # READY
    line: int  # the line number within its chunk
    session: str
    id: str
    ts: str
    kind: str
    tool: str  # "" when none
    failed: bool  # a tool result with ok: false
    goal: str | None  # the goal a goal event sets
    own_tags: list[str] | None  # the tags the event came with
    untrusted: bool  # reads like an instruction (salience.Hints)
    fingerprint: str | None  # what repetition is judged by (salience.Hints)
    head: bytes
    tail: bytes
    redactions: Redactions

_TAGS_KEY = b',"tags":'
# The keys that sort after "tags" ("verdict" too, never first); all hold strings, so the canonical
# JSON after the first of them holds no nested object (whose keys could look the same).
_KEY_PATTERNS = {key: b',"' + key.encode() + b'":' for key in ("target", "text", "tool", "ts")}


class LineScan:
    """One pass over a raw line's shape for everything the quick tests look for: the redaction
    anchors (:meth:`memdream.redact.Redactor.json_needles`), the words every injected instruction
    holds (:data:`memdream.injection.INSTRUCTION_WORDS`), the escapes that could spell
    either, and runs of digits long enough for an integer that orjson would misread."""

    _SECRET, _INSTRUCTION, _ESCAPE, _DIGITS = range(4)

    def __init__(self, redactor: Redactor) -> None:
        anchors = redactor.json_needles()
        self._always_redact = anchors is None  # user patterns: every event takes the full path
        groups = [
            (self._SECRET, list(anchors or ())),
            (self._INSTRUCTION, [word.encode("ascii") for word in INSTRUCTION_WORDS]),
            (self._ESCAPE, [b"\\u", b"\\/"]),
            (self._DIGITS, [b"9" * 19]),
        ]
        self._group_of = [group for group, needles in groups for _ in needles]
        self._automaton = BytesAhoCorasick([needle for _, needles in groups for needle in needles])

    def scan(self, raw: bytes, shape: bytes) -> tuple[bool, bool, bool]:
        """(may hold an integer orjson misreads, may hold a secret, may hold an instruction) for
        the JSON line ``raw`` whose :func:`memdream.redact.shape_of` is ``shape``."""
        hits = self._automaton.find_matches_as_indexes(shape, overlapping=True)
        if not hits:
            return False, self._always_redact, not raw.isascii()
        group_of = self._group_of
        found = {group_of[index] for index, _, _ in hits}
        long_digits = self._DIGITS in found and needs_stdlib(shape)
        if self._ESCAPE in found:  # escapes could spell any needle
            return long_digits, True, True
        # Instruction words are ASCII; non-ASCII text takes the full test (Unicode case folding).
        return (long_digits, self._always_redact or self._SECRET in found,
                self._INSTRUCTION in found or not raw.isascii())


def prepare_chunk(job: ChunkJob, redactor: Redactor, scan: LineScan) -> tuple[list[Prepared], int]:
    """Every line of the chunk parsed, checked and redacted; and how many lines the chunk has.

    Bad lines are collected, not raised: the ingest process decides, in file order, whether
    a bad line fails the input or is skipped.
    """
    with open(job.path, "rb") as handle:
        handle.seek(job.offset)
        data = handle.read(job.length)
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    ctx = ParseContext(source=job.source, default_session=job.default_session, session=job.session,
                       strict=job.strict, skip_bad=True)
    prepared: list[Prepared] = []
    strings: dict[str, str] = {}
    for number, raw in enumerate(lines, 1):
        raw = raw.strip()
        if not raw:
            continue
        if len(raw) > MAX_LINE_BYTES:
            prepared.append((BAD, number, too_long()))
            continue
        shape = shape_of(raw)
        long_digits, may_hold_secret, may_instruct = scan.scan(raw, shape)
        event = None if long_digits else _quick_event(raw, ctx)
        if event is None:  # anything unusual: exactly what the single-process path does
            event = _parsed(raw, number, job.offset == 0, ctx)
            if event is None:
                if ctx.skipped:
                    prepared.append((BAD, number, ctx.skipped.pop()[1]))
                continue
        redactions = redact_event(redactor, event) if may_hold_secret else None
        if redactions:
            fit_caps(event)
            problem = first_error(event)
            if problem is not None:  # a bug, not bad input
                raise MemdreamError(f"{job.source}: produced an invalid event ({problem})")
        # A placeholder (a user pattern may be named "curl") can make the text read like an
        # instruction: after a redaction the quick answer no longer holds.
        hints = hints_for(event, may_instruct or bool(redactions))
        counts = dict(redactions) if redactions else None
        prepared.append(_ready(number, event, counts, hints, strings))
    return prepared, len(lines)


def _quick_event(raw: bytes, ctx: ParseContext) -> dict[str, Any] | None:
    """The common line (without long integers), checked at orjson's speed; None sends it down
    the exact path."""
    if raw.count(b"{") + raw.count(b"[") > MAX_DEPTH:  # may nest too deeply: the exact path says so
        return None
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(event) is not dict or not event.keys() <= FIELDS:
        return None
    # What memdream_jsonl.normalize does to a record whose fields are all known, written out:
    # calling it here costs 4% of a worker's time.
    if ctx.session is not None:
        event["session"] = ctx.session
    kind = event.get("kind")
    if "actor" not in event and isinstance(kind, str) and kind in DEFAULT_ACTOR:
        event["actor"] = DEFAULT_ACTOR[kind]
    return event if fast_valid(event) and usual_ts(event["ts"]) else None


def _parsed(raw: bytes, number: int, first_in_file: bool, ctx: ParseContext) -> dict[str, Any] | None:
    """The line as the single-process path reads it (decoding, BOM, messages of bad lines)."""
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        ctx.bad(number, "not UTF-8 text")
        return None
    if number == 1 and first_in_file:
        text = text.lstrip(_BOM).strip()
    return parse_line(text, number, ctx) if text else None


def _ready(number: int, event: dict[str, Any], counts: Redactions, hints: Hints,
           strings: dict[str, str]) -> Prepared:
    """The record of one prepared event. ``strings``: one object per distinct session, kind and
    tool of the chunk, so that the pipe carries each once and the ingest process builds it once."""
    if "id" not in event:  # its id depends on the events before it: the full path
        return (EVENT, number, dumps_canonical(event), counts, hints)
    tags = event.pop("tags", None)
    kind = event["kind"]
    line = dumps_canonical(event)
    # The first key after "tags" ("ts" is always there). Quotes inside strings are escaped, so
    # rfind finds a key; the last one, so the top-level key (nested objects all come before).
    first_after = "target" if "target" in event else "text" if "text" in event else "tool" if "tool" in event else "ts"
    cut = line.rfind(_KEY_PATTERNS[first_after])
    goal = (event.get("goal") or event.get("text")) if kind == "goal" else None
    session, tool = event["session"], event.get("tool") or ""
    failed = kind == "tool_result" and event.get("ok") is False
    return (READY, number, strings.setdefault(session, session), event["id"], event["ts"],  # as Ready lays it out
            strings.setdefault(kind, kind), strings.setdefault(tool, tool), failed, goal, tags, hints[0], hints[1],
            line[:cut] + _TAGS_KEY, line[cut:], counts)
