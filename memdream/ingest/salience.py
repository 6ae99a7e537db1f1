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

from memdream.fastjson import dumps_canonical

STRONG, MEDIUM, WEAK = "salience:strong", "salience:medium", "salience:weak"
UNTRUSTED = "untrusted-instruction"
WORKAROUND = "workaround"
_SEEN_LIMIT = 200  # fingerprints kept per session
IDLE_RUNS = 100  # ingest runs after which an idle session's fingerprints are dropped

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
INSTRUCTION_WORDS = (
    "ignore", "disregard", "forget", "override", "from now on", "henceforth", "going forward", "always",
    "never", "instruction", "system prompt", "developer message", "remember", "memori", "save", "store",
    "curl", "you are now", "act as",
)


def reads_like_instruction(text: str) -> bool:
    if text.isascii():
        lowered = text.lower()
        if not any(word in lowered for word in INSTRUCTION_WORDS):
            return False
    return bool(_INSTRUCTION.search(text))


def _fingerprint(text: str) -> str:
    return hashlib.blake2b(" ".join(text.lower().split()).encode(), digest_size=8).hexdigest()


# What tagging needs from an event alone, never from the events before it: whether it reads
# like an injected instruction, and the fingerprint that repetition is judged by (a user's
# message or a tool call; None for other events). Workers compute these beside the parsing.
Hints = tuple[bool, str | None]


_SEGMENT_TAGS = [f"segment:{number}" for number in range(256)]


def _segment_tag(number: int) -> str:
    return _SEGMENT_TAGS[number] if number < len(_SEGMENT_TAGS) else f"segment:{number}"


def merge_tags(existing: list[str] | None, tags: list[str]) -> list[str]:
    """An event's own tags followed by ours (an own tag equal to one of ours gives way to it)."""
    if not existing:
        return tags
    return [tag for tag in existing if tag not in tags] + tags


def hints_for(event: dict[str, Any], may_instruct: bool = True) -> Hints:
    """``may_instruct``: False when a quick test already showed that no text of the event holds
    any of :data:`INSTRUCTION_WORDS`."""
    kind = event["kind"]
    untrusted = False
    if may_instruct and (kind == "tool_result" or event.get("actor") in ("tool", "system")):
        untrusted = reads_like_instruction(str(event.get("text", "")) + "\n" + str(event.get("error", "")))
    fingerprint = None
    if kind == "tool_call":
        args = event.get("args")
        fingerprint = _fingerprint(f"{event.get('tool') or ''} {dumps_canonical(args).decode() if args else '{}'}")
    elif kind == "message" and event.get("actor") == "user":
        fingerprint = _fingerprint(str(event.get("text", "")))
    return untrusted, fingerprint


@dataclass
class SessionState:
    segment: int = 0
    goal: str | None = None
    after_outcome: bool = False
    in_failure_run: bool = False
    events: int = 0
    failing_tools: list[str] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)  # fingerprints of user messages and tool calls
    run: int = 0  # the ingest run that last tagged an event of the session

    def to_dict(self) -> dict[str, Any]:
        # Copies of the lists: a saved state must not change as tagging goes on.
        return {key: list(value) if isinstance(value, list) else value for key, value in self.__dict__.items()}


def _copied_lists(values: dict[str, Any]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, list) else value for key, value in values.items()}


class SalienceTagger:
    """Adds segment, salience and trust tags to events, one session at a time, in arrival order."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        state = state or {}
        # The state comes fresh from JSON: its lists need copying, not a deep copy of everything.
        self.sessions: dict[str, SessionState] = {
            name: SessionState(**_copied_lists(values)) for name, values in state.get("sessions", {}).items()
        }
        self.succeeded_kinds: set[str] = set(state.get("succeeded_kinds", []))
        self.run = int(state.get("runs", 0)) + 1  # this run's number
        self._undo: dict[str, SessionState | None] = {}
        self._undo_kinds: set[str] = set()

    def state(self) -> dict[str, Any]:
        """What the next run starts from. Sessions idle for IDLE_RUNS runs keep their segment
        count and goal but not their fingerprints: the state would otherwise grow with every
        session ever seen, and repetition is a local signal."""
        sessions = {}
        for name, session in sorted(self.sessions.items()):
            saved = session.to_dict()
            if self.run - session.run >= IDLE_RUNS:
                saved["seen"] = []
            sessions[name] = saved
        return {"sessions": sessions, "succeeded_kinds": sorted(self.succeeded_kinds), "runs": self.run}

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
    def tag(self, event: dict[str, Any], hints: Hints | None = None) -> list[str]:
        """The tags for ``event`` (also added to its ``tags``), updating the session's state.

        ``hints``: :func:`hints_for` of this event, when it was computed elsewhere (a worker).
        """
        untrusted, fingerprint = hints if hints is not None else hints_for(event)
        kind = event["kind"]
        tags = self.tags_for(
            event["session"], kind, event.get("tool") or "", kind == "tool_result" and event.get("ok") is False,
            (event.get("goal") or event.get("text")) if kind == "goal" else None, untrusted, fingerprint,
        )
        event["tags"] = merge_tags(event.get("tags"), tags)
        return tags

    def tags_for(self, name: str, kind: str, tool: str, failed: bool, goal: str | None, untrusted: bool,
                 fingerprint: str | None) -> list[str]:
        """The tags of the next event of session ``name``, from the few fields tagging reads
        (``goal``: the goal a goal event sets), updating the session's state."""
        session = self.sessions.get(name)
        if session is None or name not in self._undo:
            session = self._session(name)
            session.run = self.run
        starts = session.after_outcome or (failed and not session.in_failure_run) or session.events == 0
        if kind == "goal":
            starts = goal != session.goal or starts
            session.goal = goal
        if starts:
            session.segment += 1
        tags = [_segment_tag(session.segment)]
        if failed:
            if tool and tool not in session.failing_tools:
                session.failing_tools.append(tool)
            tags.append(STRONG)
        elif kind == "feedback" or kind == "outcome":
            tags.append(STRONG)
        elif kind == "tool_result":
            tags.extend(self._success(session, tool))
        elif fingerprint is not None:
            if fingerprint in session.seen:
                tags.append(WEAK)
            else:
                session.seen.append(fingerprint)
                if len(session.seen) > _SEEN_LIMIT:
                    del session.seen[:-_SEEN_LIMIT]  # bounded: repetition is a local signal
        if untrusted:
            tags.append(UNTRUSTED)
        session.events += 1
        # A run of failures lasts until something succeeds or the task turns: the calls, notes
        # and messages between retries belong to it (not only back-to-back failed results).
        if failed:
            session.in_failure_run = True
        elif kind == "tool_result" or kind == "outcome" or kind == "goal":
            session.in_failure_run = False
        session.after_outcome = kind == "outcome"
        return tags

    def _success(self, session: SessionState, tool: str) -> list[str]:
        tags = []
        if tool and tool in session.failing_tools:
            session.failing_tools.remove(tool)
            tags = [MEDIUM, WORKAROUND]
        if tool and tool not in self.succeeded_kinds:
            self.succeeded_kinds.add(tool)
            tags = tags or [MEDIUM]
        return tags
