"""Episodes and salience: tags that tell dream which events matter, set once at ingest.

Tags written on events: see :mod:`memdream.memory.tags` (episode, salience, workaround,
untrusted-instruction); what reads like an instruction: :mod:`memdream.injection`.

State carries across ingest runs (a session's log may arrive in pieces); changes made while
reading one input file can be undone when that file turns out to be malformed.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

from memdream.injection import reads_like_instruction
from memdream.jsonio import dumps_canonical
from memdream.memory.tags import MEDIUM, STRONG, UNTRUSTED, WEAK, WORKAROUND, episode_tag

_SEEN_LIMIT = 200  # fingerprints kept per session
IDLE_RUNS = 100  # ingest runs after which an idle session's fingerprints are dropped


def _fingerprint(text: str) -> str:
    """A digest of ``text`` lowercased, its whitespace runs made single spaces and its ends trimmed."""
    low = text.lower()
    # A printable string holds no whitespace but the ASCII space (tabs, newlines and Unicode spaces are
    # not printable): without doubled or outer spaces it is already what split and join would make, and
    # skipping them saves a third of the digest's cost (a worker takes one for a third of the events).
    if not low.isprintable() or "  " in low or low[:1] == " " or low[-1:] == " ":
        low = " ".join(low.split())
    return hashlib.blake2b(low.encode(), digest_size=8).hexdigest()


# What tagging needs from an event alone, never from the events before it: whether it reads
# like an injected instruction, and the fingerprint that repetition is judged by (a user's
# message or a tool call; None for other events). Workers compute these beside the parsing.
Hints = tuple[bool, str | None]


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
    any of :data:`memdream.injection.INSTRUCTION_WORDS`."""
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
    episode: int = 0  # the number of the session's current episode
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
    """A saved session state, lists copied; a state saved before episodes had their name counts
    them under ``segment``."""
    copied = {key: list(value) if isinstance(value, list) else value for key, value in values.items()}
    if "segment" in copied:
        copied.setdefault("episode", copied.pop("segment"))
    return copied


class SalienceTagger:
    """Adds episode, salience and trust tags to events, one session at a time, in arrival order."""

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
        # Each session's ``seen`` as a set, built on first use: a repeated message or call is looked up
        # once an event, and the list of up to _SEEN_LIMIT fingerprints (kept for its order) is slow to scan.
        self._seen_sets: dict[str, set[str]] = {}

    def state(self) -> dict[str, Any]:
        """What the next run starts from. Sessions idle for IDLE_RUNS runs keep their episode
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
        self._seen_sets = {}  # the sessions' lists go back to what they were
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
        episode, salience = self.advance(name, kind, tool, failed, goal, untrusted, fingerprint)
        return [episode_tag(episode), *salience]

    def advance(self, name: str, kind: str, tool: str, failed: bool, goal: str | None, untrusted: bool,
                fingerprint: str | None) -> tuple[int, tuple[str, ...]]:
        """:meth:`tags_for` as the episode number and the other tags (one of a few shared tuples): what a
        big ingest keys its cache of serialized tags by, instead of building a list an event."""
        session = self.sessions.get(name)
        if session is None or name not in self._undo:
            session = self._session(name)
            session.run = self.run
        starts = session.after_outcome or (failed and not session.in_failure_run) or session.events == 0
        if kind == "goal":
            starts = goal != session.goal or starts
            session.goal = goal
        if starts:
            session.episode += 1
        salience: tuple[str, ...] = ()
        if failed:
            if tool and tool not in session.failing_tools:
                session.failing_tools.append(tool)
            salience = _STRONG
        elif kind == "feedback" or kind == "outcome":
            salience = _STRONG
        elif kind == "tool_result":
            salience = self._success(session, tool)
        elif fingerprint is not None:
            seen = self._seen_sets.get(name)
            if seen is None:
                seen = self._seen_sets[name] = set(session.seen)
            if fingerprint in seen:
                salience = _WEAK
            else:
                session.seen.append(fingerprint)
                seen.add(fingerprint)
                if len(session.seen) > _SEEN_LIMIT:  # bounded: repetition is a local signal
                    seen.difference_update(session.seen[:-_SEEN_LIMIT])
                    del session.seen[:-_SEEN_LIMIT]
        if untrusted:
            salience = _UNTRUSTED[salience]
        session.events += 1
        # A run of failures lasts until something succeeds or the task turns: the calls, notes
        # and messages between retries belong to it (not only back-to-back failed results).
        if failed:
            session.in_failure_run = True
        elif kind == "tool_result" or kind == "outcome" or kind == "goal":
            session.in_failure_run = False
        session.after_outcome = kind == "outcome"
        return session.episode, salience

    def _success(self, session: SessionState, tool: str) -> tuple[str, ...]:
        tags: tuple[str, ...] = ()
        if tool and tool in session.failing_tools:
            session.failing_tools.remove(tool)
            tags = _WORKAROUND
        if tool and tool not in self.succeeded_kinds:
            self.succeeded_kinds.add(tool)
            tags = tags or _MEDIUM
        return tags


# The salience tags an event can take besides its episode, each tuple built once.
_STRONG, _WEAK, _MEDIUM, _WORKAROUND = (STRONG,), (WEAK,), (MEDIUM,), (MEDIUM, WORKAROUND)
_UNTRUSTED: dict[tuple[str, ...], tuple[str, ...]] = {
    tags: (*tags, UNTRUSTED) for tags in ((), _STRONG, _WEAK, _MEDIUM, _WORKAROUND)}
