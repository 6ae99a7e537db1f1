"""Rendering recall items as compact Markdown lines, and filling a byte budget with them.

One line per item: ``- [YYYY-MM-DD] text``. Bytes are what the budget is about, so the lines are
short: no session ids, no times, raw turns trimmed to the sentences that match the query (the
elisions marked with "…"), a tool's result shown as the command it answers and the few output lines
that say what happened. An item that does not fit is skipped and smaller later ones may still fit;
an item is cut (marked "…[cut]") only when nothing else would be shown at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memdream.memory.card import VERIFIED
from memdream.memory.tags import UNTRUSTED as UNTRUSTED_TAG
from memdream.recall.index import CardDoc, Successor, result_command
from memdream.recall.text import tokenize

CUT_MARK = "…[cut]"
ELLIPSIS = "…"
BULLET = "- "
# A raw text longer than this (characters) keeps only its sentences that match the query
# (recall.raw_trim_above in memdream.yaml; 0 turns trimming off).
TRIM_ABOVE = 120
# Whatever trimming leaves, a raw text is not shown longer than this (characters).
RAW_TEXT_MAX = 600
_SENTENCES = re.compile(r"(?<=[.!?])\s+(?=\S)|\s*\n\s*|\s+(?=\[image:)")
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


def event_body(event: dict[str, Any]) -> str:
    """What an event says, in one string: text, error, the fact it carries, a verdict or outcome;
    for a tool's result, the command it answers and what its output says (:func:`command_result`)."""
    command = result_command(event)
    if command is not None:
        return command_result(event, command)
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


def command_result(event: dict[str, Any], command: str) -> str:
    """``$ <command> → <telling lines>``, ``(failed)`` after the command when the call failed.

    The output alone ("3 passed", "No such file or directory") does not say what was run, and a
    whole output would spend the budget on what does not matter: the lines that tell what happened
    (the error lines of a failure, else the last lines) stand for it.
    """
    from memdream.toolcalls import telling_lines  # lazily: only results with a command need it

    text, error = str(event.get("text") or ""), str(event.get("error") or "")
    output = f"{text}\n{error}" if error and error not in text else text
    head = f"$ {one_line(command)}{'' if event.get('ok', True) else ' (failed)'}"
    lines = LINE_JOIN.join(dict.fromkeys(one_line(line) for line in telling_lines(output)))
    return f"{head} → {lines}" if lines else head


def trim(text: str, query_tokens: frozenset[str], above: int = TRIM_ABOVE) -> str:
    """A long text keeps the sentences that share a word with the query; elisions become "…"."""
    if len(text) <= above or above <= 0:
        return _capped(one_line(text))
    sentences = [part for part in _SENTENCES.split(text) if part.strip()]
    if len(sentences) > 1:
        keep = [bool(query_tokens.intersection(tokenize(sentence))) for sentence in sentences]
        if not any(keep):
            keep[0] = True
        parts: list[str] = []
        skipped = False
        for sentence, kept in zip(sentences, keep):
            if kept:
                if skipped:
                    parts.append(ELLIPSIS)
                parts.append(one_line(sentence))
            skipped = not kept
        if skipped:
            parts.append(ELLIPSIS)
        text = " ".join(parts)
    return _capped(one_line(text))


def _capped(text: str) -> str:
    if len(text) <= RAW_TEXT_MAX:
        return text
    return text[:RAW_TEXT_MAX].rsplit(" ", 1)[0] + " " + ELLIPSIS


def untrusted(event: dict[str, Any]) -> bool:
    """Whether ingest found that ``event`` (from a tool or the system) reads like an order."""
    tags = event.get("tags")
    return isinstance(tags, list) and UNTRUSTED_TAG in tags


def raw_text(event: dict[str, Any], query_tokens: frozenset[str], trim_above: int = TRIM_ABOVE,
             successor: Successor | None = None) -> str:
    """``[YYYY-MM-DD] speaker: text`` (the speaker falls back to the actor); ``[YYYY-MM-DD] (untrusted
    tool text) speaker: text`` for an event tagged untrusted-instruction; ``[YYYY-MM-DD] (superseded
    YYYY-MM-DD by <card>) speaker: text`` for an event whose value a card has replaced."""
    speaker = one_line(str(event.get("speaker") or event.get("actor") or event.get("kind") or ""))
    if result_command(event) is not None:
        # Already the lines that matter: trimming by the query's words could drop the command.
        body = _capped(event_body(event))
    else:
        body = trim(event_body(event), query_tokens, trim_above)
    mark = UNTRUSTED_MARK if untrusted(event) else ""
    if successor is not None:
        mark = f"(superseded {successor.since} by {successor.card}) {mark}"
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
