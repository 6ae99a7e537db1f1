"""Segmentation and salience: tags that tell dream which events matter, set once at ingest.

Tags written on events (raw-events.md allows free labels; ours are namespaced):
  segment:<n>            the n-th segment of its session: a new one starts at a goal change,
                         after an outcome, and where a run of failures begins
  salience:strong        a failed tool result, user feedback, an outcome (external verification)
  salience:medium        a workaround (a tool fails, then succeeds), the first success of a task kind
  salience:weak          repetition: a user message or tool call seen before in the session
  workaround             the success that ended a run of failures of the same tool
  untrusted-instruction  text from a tool or web page that reads like an order to the agent (in any
                         field a card or plan item can be made of); it is data: dream never takes it
                         as evidence or into the plan, recall shows it marked as untrusted

State carries across ingest runs (a session's log may arrive in pieces); changes made while
reading one input file can be undone when that file turns out to be malformed.
"""

from __future__ import annotations

import copy
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from memdream.fastjson import dumps_canonical

STRONG, MEDIUM, WEAK = "salience:strong", "salience:medium", "salience:weak"
UNTRUSTED = "untrusted-instruction"
WORKAROUND = "workaround"
_SEEN_LIMIT = 200  # fingerprints kept per session
IDLE_RUNS = 100  # ingest runs after which an idle session's fingerprints are dropped

# Phrases by which injected content tries to become the agent's rules. Deliberately broad: a
# false positive only keeps an event from becoming evidence or the plan on its own; it is still
# stored and recalled (marked as untrusted). Matched against normalize_for_matching(text).
#
# A hard case, decided: documentation fetched by a tool that says "always run the tests before
# committing" is flagged. Text from a tool is data, never a rule; the user saying the same thing
# is trusted (only tool and system events are checked).
#
# Each branch comes with words that every match of it holds (lowercase ASCII, no spaces: a space
# may be a tab, or a JSON "\n" where memdream.ingest.prepare looks for them). Looking for the words
# is far cheaper than the expression, and a branch runs only when one of its words is there.
_BRANCHES: tuple[tuple[tuple[str, ...], str], ...] = (
    # ignore / disregard / forget ... previous instructions (a few words may come between)
    (("ignor", "disregard", "forget", "overrid", "bypass"),
     r"\b(ignor(e|ing)|disregard(ing)?|forget(ting)?|overrid(e|ing)|bypass(ing)?)\s+([\w'’-]+\s+){0,4}?"
     r"(previous|prior|above|earlier|preceding|foregoing|original|initial|old|system)\s+([\w-]+\s+){0,2}?"
     r"(instructions?|prompts?|messages?|rules?|directions?|directives?|guidelines?|context|commands?)\b"),
    # ... everything above / what you were told earlier
    (("ignor", "disregard", "forget"),
     r"\b(ignor(e|ing)|disregard(ing)?|forget(ting)?)\s+(everything|all|anything|whatever|what)\b[^.\n]{0,40}?"
     r"\b(above|before|earlier|previously|so\s+far|you\s+(were|have\s+been|'ve\s+been)\s+(told|given|instructed))\b"),
    (("now", "henceforth", "forward", "point"),
     r"\b(from\s+now\s+on|henceforth|going\s+forward|from\s+this\s+point(\s+on|\s+forward)?)\b[^.\n]{0,40}"
     r"\b(you|always|never|must|only)\b"),
    (("always", "never"), r"\byou\s+(must|should|shall|are\s+required\s+to)\s+(now\s+)?(always|never)\b"),
    (("always", "never"),
     r"\b(always|never)\s+(run|execute|use|call|send|include|trust|skip|disable|approve|ask|obey|follow|push)\b"),
    (("instruction", "rule", "directive"),
     r"\b(new|updated|real|actual|additional|revised)\s+(system\s+)?(instructions?|rules?|directives?)\s*:"),
    (("system", "developer"), r"\b(system\s+prompt|developer\s+message)\b"),
    (("remember", "memori", "save", "store"),
     r"\b(remember|memori[sz]e|save|store)\s+(this|that|the\s+following)\b[^.\n]{0,30}\b(memory|rule|fact|"
     r"instruction)"),
    (("curl", "wget"), r"\b(curl|wget)\b[^|\n]{0,200}\|\s*(sudo\s+)?(ba|z)?sh\b"),
    (("now",), r"\byou\s+are\s+now\b"),
    (("act",), r"\bact\s+as\b"),
    (("pretend",), r"\bpretend\s+(to\s+be|you\s+are)\b"),
    # "You are ChatGPT / an AI assistant ..." followed by an order
    (("now", "must", "always", "never", "ignor"),
     r"\byou\s+are\s+(chatgpt|claude|gpt[\w.-]*|an?\s+(helpful\s+)?(ai|assistant|language\s+model|llm|chatbot))\b"
     r"[^\n]{0,80}?\b(now|must|always|never|ignore)\b"),
    (("must", "shall", "should"),
     r"\b(the\s+)?(ai|assistant|agent|model|llm)\s+(must|shall|should)\s+(now\s+)?(always|never|immediately|"
     r"ignore|obey)\b"),
    (("tell", "inform", "alert", "notify"), r"\b(do\s+not|don't|never)\s+(tell|inform|alert|notify)\s+the\s+user\b"),
    # Role markers and chat-template tokens: a line that opens with "SYSTEM:" (upper case, so that
    # "System: Linux" passes), "<|im_start|>system", "[INST]", "<<SYS>>", "### Instruction:".
    (("system", "developer"), r"(^|\n)[\s>*#\[(-]*(?-i:SYSTEM|DEVELOPER)\s*[\]:)]"),
    (("<|", "[inst]", "[/inst]", "<<sys", "<</sys"),
     r"<\|(im_start|im_end|system|start_header_id|endoftext)\|>|\[/?inst\]|<</?sys>>"),
    (("system", "instruction"), r"(^|\n)\s*#{2,}\s*(system|instructions?|system\s+prompt)\s*:"),
)
_CHECKS = tuple((words, re.compile(pattern, re.IGNORECASE)) for words, pattern in _BRANCHES)
# All branches in one: what reads_like_instruction answers (the branch by branch way is faster).
_INSTRUCTION = re.compile("|".join(f"(?:{pattern})" for _, pattern in _BRANCHES), re.IGNORECASE)

# The words of every branch. memdream.ingest.prepare looks for them in raw JSON lines too; the last
# two are for that: the one control character JSON holds unescaped (DEL) and the one short escape of
# a control character that is not whitespace (\b), whose deletion could join the halves of a word.
_WORDS = tuple(dict.fromkeys(word for words, _ in _BRANCHES for word in words))
INSTRUCTION_WORDS = (*_WORDS, "\x7f", "\\b")

# Zero-width and other format or control characters (categories Cf and Cc, not the whitespace
# ones): invisible, so deleting them shows what a reader sees ("Ign\u200bore" is "Ignore").
# tests/ingest/test_injection.py checks this class against unicodedata.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e"
    "\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_ASCII_INVISIBLE = dict.fromkeys([*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F])
_SPACES = re.compile(r"[^\S\n]+")  # runs of whitespace but newlines: lines matter to role markers
# The characters besides ASCII letters that IGNORECASE matches to an ASCII letter and NFKC keeps.
_DOTTED_I = {0x130: "i", 0x131: "i"}


def normalize_for_matching(text: str) -> str:
    """``text`` as the instruction patterns read it: format and control characters deleted, Unicode
    NFKC (fullwidth letters, ligatures, no-break spaces become plain ones), each run of spaces
    and tabs one space."""
    if text.isascii():
        text = text.translate(_ASCII_INVISIBLE)
    else:
        text = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text))
    return _SPACES.sub(" ", text)


def reads_like_instruction(text: str) -> bool:
    """Whether ``text`` (from a tool or a web page) reads like an order to the agent: whether
    :data:`_INSTRUCTION` matches :func:`normalize_for_matching` of it."""
    if text.isascii():
        normalized = None
        lowered = text.translate(_ASCII_INVISIBLE).lower()
    else:
        normalized = normalize_for_matching(text)
        lowered = normalized.translate(_DOTTED_I).lower()
    present = {word for word in _WORDS if word in lowered}
    if not present:
        return False
    candidates = [check for words, check in _CHECKS if not present.isdisjoint(words)]
    if normalized is None:
        normalized = normalize_for_matching(text)
    return any(check.search(normalized) for check in candidates)


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


def instruction_fields(event: dict[str, Any]) -> list[str]:
    """Every string of ``event`` that a card or a plan item can be made from: ``text``, ``error``,
    the ``fact``'s subject, attribute and value, ``goal``, the ``next`` and ``done`` items and the
    string values of ``args`` (at any depth)."""
    fields = [event.get("text"), event.get("error"), event.get("goal")]
    fact = event.get("fact")
    if isinstance(fact, dict):
        fields += [fact.get("subject"), fact.get("attribute"), fact.get("value")]
    for name in ("next", "done"):
        items = event.get(name)
        if isinstance(items, list):
            fields += items
    strings = [field for field in fields if isinstance(field, str) and field]
    args = event.get("args")
    if args:
        _strings_of(args, strings)
    return strings


def _strings_of(value: Any, into: list[str]) -> None:
    if isinstance(value, str):
        into.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings_of(item, into)
    elif isinstance(value, list):
        for item in value:
            _strings_of(item, into)


def hints_for(event: dict[str, Any], may_instruct: bool = True) -> Hints:
    """``may_instruct``: False when a quick test already showed that no text of the event holds
    any of :data:`INSTRUCTION_WORDS`."""
    kind = event["kind"]
    untrusted = False
    if may_instruct and (kind == "tool_result" or event.get("actor") in ("tool", "system")):
        untrusted = reads_like_instruction("\n".join(instruction_fields(event)))
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
