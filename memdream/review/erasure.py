"""What one `memdream forget` erases, and the rules that take it out of every text a memory keeps.

The same rules clean the working tree (the forget commit) and, with ``--purge-history``, every version
of every file in the memory's git history, so that the memory's present and its past say the same.
Each rule is pure: text (or parsed data) in, text out, nothing read from disk.

- A **card** that is erased (its id, or in history a version found to be about the subject or citing the
  session) is removed; any other card loses its evidence that cites an erased event, its links to erased
  cards, tags that name the subject, and has the subject's name replaced by :data:`PLACEHOLDER` in its
  text fields (it stays valid against the card schema).
- An **audit line** whose card is erased is dropped; another loses the erased cards and events it names
  (its ``reason``, which described them, becomes the placeholder), and an evidence line left with no
  evidence is dropped.
- A **plan** item that names the subject, or cites an erased event, is dropped; the goal is redacted.
- A **raw event** that is erased is dropped from its segment; in history, every other text file (commit
  messages included) has the subject's name, the session id or the card id replaced.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from memdream.memory.card import INLINE_EVIDENCE
from memdream.memory.factkey import normalize_name
from memdream.memory.refs import parse_ref
from memdream.review.export import NamePattern

PLACEHOLDER = "[forgotten]"
SUBJECT, SESSION, CARD = "subject", "session", "card"
_CARD_TEXT = ("subject", "attribute", "value", "statement", "scope")
_LINKS = ("supersedes", "superseded_by", "derived_from")
_PLAN_LISTS = ("next", "done", "goals")
_IDS = frozenset({"run", "op", "card", "tenant"})  # audit-line fields that are identifiers, never redacted


def _token(text: str) -> re.Pattern[str]:
    """``text`` as a token of its own: no letter, digit, ``_`` or ``-`` on either side (``s-1`` is not
    found in ``s-10``)."""
    return re.compile(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])")


@dataclass
class Erasure:
    """One forget: what it names (``kind`` and the query) and what it erases (cards, events)."""

    kind: str  # SUBJECT, SESSION or CARD
    pattern: NamePattern | None = None  # --subject: S as a whole word
    key: str | None = None  # --subject: S normalized like fact keys
    session: str | None = None  # --session
    card: str | None = None  # --card
    cards: set[str] = field(default_factory=set)  # erased card ids
    refs: set[str] = field(default_factory=set)  # erased events, as their refs (log://<session>#<id>)
    # Events an earlier forget erased ((session, id) -> whether), so that what cites them goes too: the
    # digests ingest keeps (memdream.ingest.dedup.Forgotten.holds); a forget killed halfway is finished so.
    earlier: Callable[[str, str], bool] | None = None

    # -- what is erased ----------------------------------------------------------------------------------

    def erased_ref(self, ref: Any) -> bool:
        if not isinstance(ref, str):
            return False
        if ref in self.refs or (self.session is not None and parse_ref(ref)[0] == self.session):
            return True
        return self.earlier is not None and self.earlier(*parse_ref(ref))

    def erased_key(self, session: Any, event_id: Any) -> bool:
        return session == self.session or f"log://{session}#{event_id}" in self.refs

    def erased_card(self, data: dict[str, Any]) -> bool:
        """Whether a card (as its file holds it) is erased: named, or in history found to be about the
        subject (its subject or scope is S) or to cite the session."""
        if data.get("id") in self.cards:
            return True
        if self.key is not None:
            return any(isinstance(data.get(name), str) and normalize_name(data[name]) == self.key
                       for name in ("subject", "scope"))
        if self.session is not None:
            evidence = data.get("evidence")
            return isinstance(evidence, list) and any(isinstance(item, dict) and self.erased_ref(item.get("ref"))
                                                      for item in evidence)
        return False

    def names_subject(self, text: Any) -> bool:
        return self.pattern is not None and isinstance(text, str) and self.pattern.in_text(text)

    # -- text ----------------------------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """``text`` with every whole-word mention of the subject replaced by the placeholder."""
        return self.pattern.words.sub(PLACEHOLDER, text) if self.pattern is not None else text

    def redact_all(self, value: Any) -> Any:
        """Every string inside ``value`` (mapping values, list items) redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self.redact_all(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_all(item) for item in value]
        return value

    def clean_message(self, message: str) -> str:
        """A commit message without the subject's name, the session id or the card id."""
        message = self.redact(message)
        for named in (self.session, self.card):
            if named:
                message = _token(named).sub(PLACEHOLDER, message)
        return message

    # -- cards ---------------------------------------------------------------------------------------------

    def clean_card(self, data: dict[str, Any], held: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """The card without what is erased; None when the card itself is erased or has no evidence left.
        ``held``: the evidence the audit files hold for it once cleaned (None in history, where its count
        is only brought down by what was taken off the card)."""
        if self.erased_card(data):
            return None
        card = dict(data)
        for name in _CARD_TEXT:
            if isinstance(card.get(name), str):
                card[name] = self.redact(card[name])
        if isinstance(card.get("tags"), list):
            card["tags"] = [tag for tag in card["tags"] if not self.names_subject(tag)]
            if not card["tags"]:
                del card["tags"]
        for name in _LINKS:
            if isinstance(card.get(name), list):
                card[name] = [other for other in card[name] if other not in self.cards]
                if not card[name]:
                    del card[name]
        evidence = data.get("evidence")
        if isinstance(evidence, list):
            card["evidence"] = [item for item in evidence
                                if not (isinstance(item, dict) and self.erased_ref(item.get("ref")))]
            _count_evidence(card, len(evidence), held)
            if not card["evidence"]:
                return None
        return card

    # -- audit lines ---------------------------------------------------------------------------------------

    def clean_audit_line(self, data: dict[str, Any]) -> dict[str, Any] | None:
        """One audit line without what is erased; None to drop it."""
        if data.get("card") in self.cards:
            return None
        line = dict(data)
        described = False  # the line's reason spoke of an erased card
        if isinstance(line.get("cards"), list) and any(other in self.cards for other in line["cards"]):
            line["cards"] = [other for other in line["cards"] if other not in self.cards]
            described = True
        if isinstance(line.get("target"), str) and line["target"] in self.cards:
            del line["target"]
            described = True
        if described and "reason" in line:
            line["reason"] = PLACEHOLDER
        if isinstance(line.get("evidence"), list):
            line["evidence"] = [ref for ref in line["evidence"] if not self.erased_ref(ref)]
        if isinstance(line.get("added"), list):
            line["added"] = [item for item in line["added"]
                             if not (isinstance(item, dict) and self.erased_ref(item.get("ref")))]
            if not line["added"] and line.get("op") == "evidence":
                return None
        return {key: value if key in _IDS else self.redact_all(value) for key, value in line.items()}

    def clean_audit_text(self, text: str) -> str:
        """An audit file without what is erased: lines dropped or rewritten, the others byte for byte."""
        lines = []
        for line in text.splitlines(keepends=True):
            if not self._may_hold(line):
                lines.append(line)
                continue
            try:
                data = json.loads(line)
            except ValueError:
                lines.append(self.redact(line))  # a damaged line (lint names it) keeps nothing of the subject
                continue
            cleaned = self.clean_audit_line(data) if isinstance(data, dict) else data
            if cleaned == data:
                lines.append(line)
            elif cleaned is not None:
                lines.append(json.dumps(cleaned, ensure_ascii=False) + "\n")
        return "".join(lines)

    def _may_hold(self, line: str) -> bool:
        """A cheap test: whether a line may name something erased (a superset of those that do)."""
        if self.pattern is not None and self.pattern.loose.search(line):
            return True
        if self.session is not None and self.session in line:
            return True
        return any(card_id in line for card_id in self.cards) or \
            ("log://" in line and (self.earlier is not None or any(ref in line for ref in self.refs)))

    # -- the plan ------------------------------------------------------------------------------------------

    def clean_plan(self, data: dict[str, Any]) -> dict[str, Any]:
        """The plan without the items about what is erased, its goal redacted."""
        plan = dict(data)
        if isinstance(plan.get("goal"), str):
            plan["goal"] = self.redact(plan["goal"])
        for name in _PLAN_LISTS:
            if isinstance(plan.get(name), list):
                plan[name] = [item for item in plan[name] if not self._plan_item_erased(item)]
        return plan

    def _plan_item_erased(self, item: Any) -> bool:
        if not isinstance(item, dict):
            return False
        if self.names_subject(item.get("text")) or self.names_subject(item.get("scope")):
            return True
        scope = item.get("scope")
        if self.key is not None and isinstance(scope, str) and normalize_name(scope) == self.key:
            return True
        refs = item.get("evidence")
        return isinstance(refs, list) and any(self.erased_ref(ref) for ref in refs)

    # -- INDEX.md, raw segments, any other text (history) ---------------------------------------------------

    def clean_index_text(self, text: str) -> str:
        """An INDEX.md of the past: its lines that name an erased card or the subject dropped."""
        ids = [_token(card_id) for card_id in self.cards]
        kept = [line for line in text.splitlines(keepends=True)
                if not self.names_subject(line) and not any(token.search(line) for token in ids)]
        return "".join(kept)

    def clean_segment(self, data: bytes) -> bytes:
        """A raw segment (tracked with ``ingest.track_raw``) without the erased events."""
        kept = []
        for line in data.splitlines(keepends=True):
            try:
                event = json.loads(line)
            except ValueError:
                kept.append(line)
                continue
            if isinstance(event, dict) and (self.erased_key(event.get("session"), event.get("id"))
                                            or self.names_subject(line.decode("utf-8", "replace"))):
                continue
            kept.append(line)
        return b"".join(kept)

    def clean_state_line(self, line: str) -> str | None:
        """A line of a local log (usage, MCP calls): None when it names something erased."""
        if self.names_subject(line) or any(_token(card_id).search(line) for card_id in self.cards):
            return None
        if self.session is not None and self.session in line:
            return None
        return None if any(ref in line for ref in self.refs) else line


def _count_evidence(card: dict[str, Any], before: int, held: list[dict[str, Any]] | None) -> None:
    """``evidence_count`` after erased evidence was taken off the card (and, ``held``, out of the audit
    files); with nothing left on the card, the newest held pieces come onto it."""
    inline = card["evidence"]
    if held is None:  # history: the count comes down by what the card lost
        if isinstance(card.get("evidence_count"), int):
            card["evidence_count"] = max(len(inline), card["evidence_count"] - (before - len(inline)))
        total = card.get("evidence_count", len(inline))
    else:
        shown = {item.get("ref") for item in inline}
        extra = _unique(item for item in held if item.get("ref") not in shown)
        if not inline and extra:
            card["evidence"] = inline = extra[-INLINE_EVIDENCE:]
        total = len(shown | {item.get("ref") for item in extra})
    if total > len(inline):
        card["evidence_count"] = total
    else:
        card.pop("evidence_count", None)


def _unique(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Held evidence once per ref, the latest piece kept (audit files are read oldest run first)."""
    by_ref: dict[Any, dict[str, Any]] = {}
    for item in items:
        by_ref.pop(item.get("ref"), None)
        by_ref[item.get("ref")] = item
    return list(by_ref.values())
