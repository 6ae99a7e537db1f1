"""Segmentation and salience: tags that tell dream which events matter, set once at ingest.

Tags written on events (raw-events.md allows free labels; ours are namespaced):
  segment:<n>            the n-th segment of its session: a new one starts at a goal change,
                         after an outcome, and where a run of failures begins
  salience:strong        a failed tool result, user feedback, an outcome (external verification)
  salience:medium        a workaround (a tool fails, then succeeds), the first success of a task kind
  salience:weak          repetition: a user message or tool call seen before in the session
  workaround             the success that ended a run of failures of the same tool
  untrusted-instruction  text from a tool or web page that reads like an order to the agent; later
                         stages never turn it into a strategy or lesson on its own

State carries across ingest runs (a session's log may arrive in pieces); changes made while
reading one input file can be undone when that file turns out to be malformed.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

STRONG, MEDIUM, WEAK = "salience:strong", "salience:medium", "salience:weak"
UNTRUSTED = "untrusted-instruction"
WORKAROUND = "workaround"

# Phrases by which injected content tries to become the agent's rules. Deliberately broad: a
# false positive only keeps an event from becoming a strategy on its own; it is still stored.
_INSTRUCTION = re.compile(
    r"(ignore|disregard|forget|override)\s+(all\s+|any\s+|the\s+|your\s+)*(previous|prior|above|earlier|"
    r"preceding|system)\s+(instructions?|prompts?|messages?|rules?|directions?)"
    r"|\b(from now on|henceforth|going forward)\b[^.\n]{0,40}\b(you|always|never|must)\b"
    r"|\byou\s+(must|should|are required to)\s+(now\s+)?(always|never)\b"
    r"|\b(always|never)\s+(run|execute|use|call|send|include|trust|skip|disable|approve)\b"
    r"|\b(new|updated|real)\s+(system\s+)?instructions?\s*:"
    r"|\b(system prompt|developer message)\b"
    r"|\b(remember|memori[sz]e|save|store)\s+(this|that|the following)\b[^.\n]{0,30}\b(memory|rule|fact|"
    r"instruction)"
    r"|\bcurl\b[^|\n]{0,200}\|\s*(ba|z)?sh\b"
    r"|\byou are now\b|\bact as\b",
    re.IGNORECASE,
)


# Every branch of _INSTRUCTION contains one of these words (lowercase ASCII). Searching a lowered
# ASCII text for them is ~20x cheaper than the regex, and most tool output contains none of them.
# Non-ASCII text always takes the regex: IGNORECASE matches e.g. U+017F (long s) as "s".
_INSTRUCTION_WORDS = (
    "ignore", "disregard", "forget", "override", "from now on", "henceforth", "going forward", "always",
    "never", "instruction", "system prompt", "developer message", "remember", "memori", "save", "store",
    "curl", "you are now", "act as",
)


def reads_like_instruction(text: str) -> bool:
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in _INSTRUCTION_WORDS):
            return False
    return bool(_INSTRUCTION.search(text))


def _fingerprint(text: str) -> str:
    return hashlib.blake2b(" ".join(text.lower().split()).encode(), digest_size=8).hexdigest()


@dataclass
class SessionState:
    segment: int = 0
    goal: str | None = None
    after_outcome: bool = False
    in_failure_run: bool = False
    events: int = 0
    failing_tools: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # fingerprints of user messages and tool calls

    def to_dict(self) -> dict[str, Any]:
        # Copies of the lists: a saved state must not change as tagging goes on.
        return {key: list(value) if isinstance(value, list) else value for key, value in self.__dict__.items()}


class SalienceTagger:
    """Adds segment, salience and trust tags to events, one session at a time, in arrival order."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        self.sessions: dict[str, SessionState] = {
            name: SessionState(**copy.deepcopy(values)) for name, values in state.get("sessions", {}).items()
        }
        self.succeeded_kinds: set[str] = set(state.get("succeeded_kinds", []))
        self._undo: dict[str, SessionState | None] = {}
        self._undo_kinds: set[str] = set()

    def state(self) -> dict[str, Any]:
        return {
            "sessions": {name: session.to_dict() for name, session in sorted(self.sessions.items())},
            "succeeded_kinds": sorted(self.succeeded_kinds),
        }

    # -- transactions per input file -------------------------------------------------------------
    def begin(self) -> None:
        self._undo, self._undo_kinds = {}, set(self.succeeded_kinds)

    def rollback(self) -> None:
        for name, saved in self._undo.items():
            if saved is None:
                self.sessions.pop(name, None)
            else:
                self.sessions[name] = saved
        self.succeeded_kinds = self._undo_kinds
        self._undo = {}

    def _session(self, name: str) -> SessionState:
        if name not in self._undo:
            existing = self.sessions.get(name)
            self._undo[name] = copy.deepcopy(existing)
        session = self.sessions.get(name)
        if session is None:
            session = self.sessions[name] = SessionState()
        return session

    # -- tagging ----------------------------------------------------------------------------------
    def tag(self, event: dict[str, Any]) -> list[str]:
        """The tags for ``event`` (also added to its ``tags``), updating the session's state."""
        session = self._session(event["session"])
        kind = event["kind"]
        failed = kind == "tool_result" and event.get("ok") is False
        tags: list[str] = []
        if self._starts_segment(session, event, failed):
            session.segment += 1
        tags.append(f"segment:{session.segment}")
        tags.extend(self._salience(session, event, kind, failed))
        if event.get("actor") in ("tool", "system") or kind == "tool_result":
            if reads_like_instruction(str(event.get("text", "")) + "\n" + str(event.get("error", ""))):
                tags.append(UNTRUSTED)
        session.events += 1
        # A run of failures lasts until something succeeds or the task turns: the calls, notes
        # and messages between retries belong to it (not only back-to-back failed results).
        if failed:
            session.in_failure_run = True
        elif kind in ("tool_result", "outcome", "goal"):
            session.in_failure_run = False
        session.after_outcome = kind == "outcome"
        existing = [tag for tag in event.get("tags", []) if tag not in tags]
        event["tags"] = existing + tags
        return tags

    @staticmethod
    def _starts_segment(session: SessionState, event: dict[str, Any], failed: bool) -> bool:
        new_goal = False
        if event["kind"] == "goal":
            goal = event.get("goal") or event.get("text")
            new_goal, session.goal = goal != session.goal, goal
        if session.events == 0:
            return True
        return new_goal or session.after_outcome or (failed and not session.in_failure_run)

    def _salience(self, session: SessionState, event: dict[str, Any], kind: str, failed: bool) -> list[str]:
        tool = event.get("tool") or ""
        if failed:
            if tool and tool not in session.failing_tools:
                session.failing_tools.append(tool)
            return [STRONG]
        if kind in ("feedback", "outcome"):
            return [STRONG]
        if kind == "tool_result" and event.get("ok") is not False:
            return self._success(session, tool)
        if kind in ("message", "tool_call") and (kind == "tool_call" or event.get("actor") == "user"):
            basis = event.get("text", "") if kind == "message" else f"{tool} {sorted(event.get('args', {}).items())}"
            fingerprint = _fingerprint(str(basis))
            if fingerprint in session.seen:
                return [WEAK]
            session.seen.append(fingerprint)
            del session.seen[:-200]  # bounded: repetition is a local signal
        return []

    def _success(self, session: SessionState, tool: str) -> list[str]:
        tags = []
        if tool and tool in session.failing_tools:
            session.failing_tools.remove(tool)
            tags = [MEDIUM, WORKAROUND]
        if tool and tool not in self.succeeded_kinds:
            self.succeeded_kinds.add(tool)
            tags = tags or [MEDIUM]
        return tags
