"""Rendering recall items as compact Markdown lines, and filling a byte budget with them.

One line per item: ``- [YYYY-MM-DD] text``. Bytes are what the budget is about, so the lines are
short: no session ids, no times, a long raw text cut to the window where it holds the most of the
query's words (the elisions marked with "…"), a tool's result shown as the command it answers and
either the few output lines that say what happened or, when the query's words are elsewhere in the
output, the window around them. An item that does not fit is skipped and smaller later ones may
still fit; a raw item may be shown in a narrower window to fill the room left; an item is cut
(marked "…[cut]") only when nothing else would be shown at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memdream.memory.card import VERIFIED
from memdream.memory.refs import REF_SCHEME
from memdream.memory.tags import UNTRUSTED as UNTRUSTED_TAG
from memdream.recall.index import CardDoc, Successor, result_command
from memdream.recall.text import token_spans

CUT_MARK = "…[cut]"
ELLIPSIS = "…"
BULLET = "- "
# A raw text longer than this (characters) is cut to a window around the query's words
# (recall.raw_trim_above in memdream.yaml; 0 turns cutting off: texts are shown whole up to RAW_TEXT_MAX).
TRIM_ABOVE = 120
# The window of a long raw text (characters): about two sentences of a turn, two or three lines of a
# tool's output. Wide enough that the answer next to the question's words is in it, narrow enough
# that half a dozen events fit in what a default budget leaves the query.
WINDOW = 240
# Whatever trimming leaves, a raw text is not shown longer than this (characters).
RAW_TEXT_MAX = 600
# Around the query's words in a long raw text, this many characters of context (an answer is most
# often the words right after the question's: "the port is 3000").
CONTEXT = 80
# Of the room before the first matched word and after the last, the share shown before: an answer
# more often follows the words that ask for it ("the port is 3000") than precedes them.
BEFORE_SHARE = 0.35
# Between the telling lines of a tool's output (one item is one line).
LINE_JOIN = " ⏎ "
# A raw event ingest tagged untrusted-instruction (UNTRUSTED_TAG) is shown as data, marked so that
# the agent does not take it for an order.
UNTRUSTED_MARK = "(untrusted tool text) "


@dataclass
class Item:
    source: str  # plan, card or raw
    id: str
    text: str
    type: str | None = None
    status: str | None = None
    score: float | None = None
    ts: str | None = None
    evidence: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    resident: bool = False  # a standing instruction shown whatever the query (memdream.recall.resident)
    untrusted: bool = False  # a raw event tagged untrusted-instruction: data, never an instruction
    superseded_by: str | None = None  # a raw event whose value this active card has replaced
    epoch: float = 0.0  # a raw event's time, and the query words it holds: for newest-first (not output)
    words: frozenset[str] = frozenset()
    explain: dict[str, Any] | None = None  # why recall chose it: only with --explain (recall.explain)
    # A raw item's text in a narrower window of at most so many characters (to fill the room left).
    refit: Callable[[int], str] | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "id": self.id}
        for name in ("type", "status", "score", "ts"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        data["text"] = self.text
        if self.source != "plan":
            data["evidence"] = self.evidence
        if self.conflicts:
            data["conflicts"] = self.conflicts
        if self.resident:
            data["resident"] = True
        if self.untrusted:
            data["untrusted"] = True
        if self.superseded_by:
            data["superseded_by"] = self.superseded_by
        if self.explain is not None:
            data["explain"] = self.explain
        return data


def one_line(text: str) -> str:
    return " ".join(text.split())


def plan_text(goal: str, next_items: list[str]) -> str:
    """The resident plan, compact: the goal and the next actions."""
    lines = []
    if goal.strip():
        lines.append(f"Plan: {one_line(goal)}")
    if next_items:
        lines.append("Next: " + "; ".join(one_line(item) for item in next_items))
    return "\n".join(lines)


def plan_within(goal: str, next_items: list[str], room: int) -> str:
    """The plan in at most ``room`` bytes (the newline after it counted): whole when it fits; else the
    goal line (cut when alone it does not fit), then the next actions that fit, in order, "…" for the
    rest; "" when not even a cut goal fits."""
    whole = plan_text(goal, next_items)
    if Budget.cost(whole) <= room:
        return whole
    lines = []
    if goal.strip():
        line = f"Plan: {one_line(goal)}"
        if Budget.cost(line) > room:
            return cut(line, room - 1)
        lines.append(line)
    shown: list[str] = []
    for item in next_items:
        tried = "\n".join([*lines, "Next: " + "; ".join([*shown, one_line(item), ELLIPSIS])])
        if Budget.cost(tried) > room:
            break
        shown.append(one_line(item))
    if shown:
        lines.append("Next: " + "; ".join([*shown, ELLIPSIS]))
    return "\n".join(lines)


def card_text(doc: CardDoc, conflict: list[CardDoc] | None = None) -> str:
    date = f"[{doc.ts[:10]}] " if doc.ts else ""
    if conflict:
        values = " vs ".join(f"{one_line(other.value or other.statement)} ({other.id}, {other.ts[:10]})"
                             for other in conflict)
        return f"{date}⚠ conflict: {doc.subject} {doc.attribute}: {values}"
    status = "" if doc.status == VERIFIED else f"({doc.status}) "
    kind = "" if doc.type == "fact" else f"{doc.type}: "
    # Learned cards name their project in the statement ("In billing-api, …"): no need to say it twice.
    named = doc.scope is not None and doc.statement.startswith(f"In {doc.scope},")
    scope = f" (scope: {one_line(doc.scope)})" if doc.scope and doc.type != "fact" and not named else ""
    return f"{date}{status}{kind}{one_line(doc.statement)}{scope}"


def event_body(event: dict[str, Any], query_tokens: frozenset[str] = frozenset(),
               limit: int | None = None, weights: Mapping[str, float] | None = None) -> str:
    """What an event says, in one string: text, error, the fact it carries, a verdict or outcome;
    for a tool's result, the command it answers and what its output says (:func:`command_result`)."""
    command = result_command(event)
    if command is not None:
        return command_result(event, command, query_tokens, limit, weights)
    text = str(event.get("text") or event.get("goal") or "")
    fact = event.get("fact")
    if not text and isinstance(fact, dict):
        text = f"{fact.get('subject', '')} {fact.get('attribute', '')} = {fact.get('value', '')}"
    if event.get("error"):
        text = f"{text} error: {event['error']}".strip()
    kind = event.get("kind")
    if kind == "tool_result" and event.get("tool"):
        text = f"{event['tool']}{'' if event.get('ok', True) else ' (failed)'}: {text}"
    elif kind == "feedback" and event.get("verdict"):
        text = f"({event['verdict']}) {text}"
    elif kind == "outcome" and "ok" in event:
        text = f"({'ok' if event['ok'] else 'failed'}) {text}"
    return text


def command_result(event: dict[str, Any], command: str, query_tokens: frozenset[str] = frozenset(),
                   limit: int | None = None, weights: Mapping[str, float] | None = None) -> str:
    """``$ <command> → <what the output says>``, ``(failed)`` after the command when the call failed.

    The output alone ("3 passed", "No such file or directory") does not say what was run, and a
    whole output would spend the budget on what does not matter: the lines that tell what happened
    (the error lines of a failure, else the last lines) stand for it, unless the output holds query
    words those lines do not (``cat README.md`` asked "which port does the app use?"): then the window
    of the output around them (``limit`` characters in all).
    """
    from memdream.toolcalls import telling_lines  # lazily: only results with a command need it

    text, error = str(event.get("text") or ""), str(event.get("error") or "")
    output = f"{text}\n{error}" if error and error not in text else text
    head = f"$ {one_line(command)}{'' if event.get('ok', True) else ' (failed)'}"
    lines = LINE_JOIN.join(dict.fromkeys(one_line(line) for line in telling_lines(output)))
    if query_tokens and limit is not None:
        asked = {token for _, _, token in token_spans(output, query_tokens)}
        told = {token for _, _, token in token_spans(lines, query_tokens)}
        if not asked <= told:
            room = limit - len(head) - len(" → ")
            if room >= MIN_WINDOW:
                return f"{head} → {window(output, query_tokens, room, weights=weights)}"
    return f"{head} → {lines}" if lines else head


# A window narrower than this (characters) says too little to be worth its line.
MIN_WINDOW = 48


def window(text: str, query_tokens: frozenset[str], limit: int, margin: int | None = None,
           weights: Mapping[str, float] | None = None) -> str:
    """``text`` on one line, at most ``limit`` characters: the stretch that holds the most of the query's
    words (by ``weights``, their idf: the project's name, in every event, weighs little; then the most
    occurrences) with ``margin`` characters around it (more after than before). Cut between words,
    elisions marked "…"; the head when no word matches; the whole text when that leaves out next to
    nothing."""
    flat = one_line(text)
    if margin is None:
        margin = CONTEXT
    inner = max(1, limit - 2 * len(ELLIPSIS + " "))
    hits = token_spans(flat, query_tokens) if query_tokens else []
    if not hits:  # found as a neighbour or by feedback: how it starts
        return flat if len(flat) <= limit else _between(flat, 0, min(inner, 2 * margin))
    first, last = _densest(hits, max(inner - margin, inner // 2), weights or {})
    before = int(margin * BEFORE_SHARE)
    start = max(0, hits[first][0] - before)
    end = min(len(flat), hits[last][1] + margin - before, start + inner)
    if len(flat) <= limit and end - start >= len(flat) - 2 * len(ELLIPSIS + " "):
        return flat
    return _between(flat, start, end)


def _densest(hits: list[tuple[int, int, str]], span: int, weights: Mapping[str, float]) -> tuple[int, int]:
    """The first and last of ``hits`` (sorted) of the stretch at most ``span`` characters long whose
    distinct tokens weigh the most (a token without a weight weighs 1), then that holds the most hits:
    one pass, two pointers."""
    best = (0.0, 0, 0, 0)  # weight of the distinct tokens, hits, first, last
    held: Counter[str] = Counter()
    weight = 0.0
    last = 0  # one past the last hit in the stretch
    for first, (start, _, token) in enumerate(hits):
        if last <= first:
            weight += 0.0 if held[token] else weights.get(token, 1.0)
            held[token] += 1
            last = first + 1
        while last < len(hits) and hits[last][1] - start <= span:
            added = hits[last][2]
            weight += 0.0 if held[added] else weights.get(added, 1.0)
            held[added] += 1
            last += 1
        if (weight, last - first) > best[:2]:
            best = (weight, last - first, first, last - 1)
        held[token] -= 1
        if not held[token]:
            del held[token]
            weight -= weights.get(token, 1.0)
    return best[2], best[3]


# A window's edge moves back to the space before a word cut in two, if the word's part is this short.
WORD_CUT = 20


def _between(flat: str, start: int, end: int) -> str:
    """``flat[start:end]`` cut between words, with "…" where something was left out."""
    if start > 0:
        space = flat.find(" ", start, end)
        if space >= 0 and space - start <= WORD_CUT:  # not half a word, unless the word is very long
            start = space + 1
    if end < len(flat):
        space = flat.rfind(" ", start, end + 1)
        if space > start and end - space <= WORD_CUT:
            end = space
    body = flat[start:end].strip()
    return f"{ELLIPSIS + ' ' if start > 0 else ''}{body}{' ' + ELLIPSIS if end < len(flat) else ''}"


def _capped(text: str) -> str:
    if len(text) <= RAW_TEXT_MAX:
        return text
    return text[:RAW_TEXT_MAX].rsplit(" ", 1)[0] + " " + ELLIPSIS


def untrusted(event: dict[str, Any]) -> bool:
    """Whether ingest found that ``event`` (from a tool or the system) reads like an order."""
    tags = event.get("tags")
    return isinstance(tags, list) and UNTRUSTED_TAG in tags


def raw_text(event: dict[str, Any], query_tokens: frozenset[str], trim_above: int = TRIM_ABOVE,
             successor: Successor | None = None, limit: int = WINDOW,
             weights: Mapping[str, float] | None = None) -> str:
    """``[YYYY-MM-DD] speaker: text`` (the speaker falls back to the actor); ``[YYYY-MM-DD] (untrusted
    tool text) speaker: text`` for an event tagged untrusted-instruction; ``[YYYY-MM-DD] (superseded
    YYYY-MM-DD by <card>) speaker: text`` for an event whose value a card has replaced. A text longer
    than ``trim_above`` characters is cut to a window of ``limit`` characters around the query's words
    (:func:`window`); ``trim_above`` 0 shows it whole (up to RAW_TEXT_MAX)."""
    speaker = one_line(str(event.get("speaker") or event.get("actor") or event.get("kind") or ""))
    if trim_above <= 0:
        body = _capped(one_line(event_body(event)))
    elif result_command(event) is not None:
        # The command is always kept: cutting by the query's words applies to the output only.
        body = _capped(event_body(event, query_tokens, limit, weights))
    else:
        text = event_body(event)
        body = one_line(text) if len(text) <= trim_above else window(text, query_tokens, limit, weights=weights)
    mark = UNTRUSTED_MARK if untrusted(event) else ""
    if successor is not None:
        # A card replaced the value, or (a log reference) the file this event shows changed since.
        changed = successor.card.startswith(REF_SCHEME)
        mark = (f"(file changed {successor.since}) {mark}" if changed
                else f"(superseded {successor.since} by {successor.card}) {mark}")
    return f"[{str(event.get('ts', ''))[:10]}] {mark}{speaker}: {body}"


def cut(text: str, room: int) -> str:
    """``text`` cut to ``room`` UTF-8 bytes, ending with the cut mark."""
    keep = room - len(CUT_MARK.encode())
    if keep <= 0:
        return ""
    return text.encode()[:keep].decode("utf-8", errors="ignore").rstrip() + CUT_MARK


class Budget:
    """The context under construction: blocks of text, one per item, never more than ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.blocks: list[str] = []
        self.used = 0

    @property
    def room(self) -> int:
        return self.limit - self.used

    @staticmethod
    def cost(block: str) -> int:
        return len(block.encode()) + 1  # the newline after it

    def fits(self, block: str) -> bool:
        return self.cost(block) <= self.room

    def add(self, block: str) -> None:
        self.blocks.append(block)
        self.used += self.cost(block)

    def add_item(self, item: Item) -> bool:
        """Add a list line for ``item`` if it fits."""
        line = BULLET + item.text
        if not self.fits(line):
            return False
        self.add(line)
        return True

    def add_cut(self, item: Item) -> bool:
        """The last resort: ``item`` cut to the room left."""
        text = cut(item.text, self.room - 1 - len(BULLET))
        if not text:
            return False
        item.text = text
        self.add(BULLET + text)
        return True

    @property
    def context(self) -> str:
        return "".join(block + "\n" for block in self.blocks)
