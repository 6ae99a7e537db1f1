"""Notes and plan updates someone asks memdream to remember: a person from the shell
(`memdream remember`), an agent over MCP (`remember`, `plan_update`).

Each becomes one raw event (``note`` or ``plan``) recorded through the ordinary ingest
(:func:`memdream.ingest.record.record`): redacted, deduplicated, under the writer lock. Nothing
here writes a card: the next dream weighs the note like any other evidence, and git review sees
what it made of it.

Authority follows the author. The user's note is their own word (``actor: user``): dream reads
it as it reads what the user types in a session, so "always run make test before pushing" becomes
a standing instruction and "the staging database listens on port 6432" a fact. The agent's note
is weak evidence (``actor: agent``), and text of it that reads like an order to the memory
("from now on always …", "ignore previous instructions") is stored tagged
``untrusted-instruction`` (the check ingest applies to tool text, :mod:`memdream.injection`), so
that it is never evidence and never a standing instruction.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdream.errors import InvalidInput
from memdream.memory.tags import PROJECT_TAG, UNTRUSTED

if TYPE_CHECKING:
    from memdream.memory.store import Memory

USER = "user"
AGENT = "agent"
MCP_SESSION_PREFIX = "mcp"
MAX_TEXT = 8000  # characters; a note is a sentence or a paragraph, not a pasted log
MAX_ITEMS = 50  # plan items per list in one update


@dataclass(frozen=True)
class Fact:
    """What a note states as a fact key and value (all three given, or no fact)."""

    subject: str
    attribute: str
    value: str

    @classmethod
    def of(cls, subject: str | None, attribute: str | None, value: str | None) -> Fact | None:
        given = [part for part in (subject, attribute, value) if part is not None and part.strip()]
        if not given:
            return None
        if len(given) < 3:
            raise InvalidInput("a fact needs a subject, an attribute and a value (all three, or none)")
        assert subject is not None and attribute is not None and value is not None
        return cls(subject.strip(), attribute.strip(), value.strip())

    def to_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "attribute": self.attribute, "value": self.value}


@dataclass
class Remembered:
    """What a remember or plan update stored: the event's ``log://`` ref, whether it is new (the same
    note recorded again is not), whether it was flagged as an instruction, and what was redacted."""

    ref: str
    kind: str
    actor: str
    added: bool
    flagged: bool = False
    scope: str | None = None
    redactions: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "kind": self.kind, "actor": self.actor, "added": self.added,
                "flagged_as_instruction": self.flagged, "scope": self.scope, "redactions": self.redactions}

    def summary(self) -> str:
        """One line for people and agents: what happened to the note."""
        said = "stored" if self.added else "already stored"
        line = f"{said} {self.ref}; the next dream weighs it"
        if self.flagged:
            line += " (it reads like an instruction: kept as untrusted text, never a standing instruction)"
        if self.redactions:
            kinds = ", ".join(f"{kind} ×{count}" for kind, count in sorted(self.redactions.items()))
            line += f"; redacted: {kinds}"
        return line


def mcp_session(now: str) -> str:
    """The session of one MCP server process: ``mcp-2026-11-30-3f9a1c`` (a day, and random so that two
    agents running at once keep their own episodes)."""
    return f"{MCP_SESSION_PREFIX}-{now[:10]}-{secrets.token_hex(3)}"


def note_event(text: str, *, actor: str, session: str, ts: str, fact: Fact | None = None,
               scope: str | None = None, via: str = "") -> dict[str, Any]:
    """The raw ``note`` event for ``text`` (and ``fact``), in ``session``, by ``actor``."""
    from memdream.ingest.record import event_id

    text, scope = " ".join(text.split()) if text else "", _project(scope)
    if not text and fact is None:
        raise InvalidInput("nothing to remember: give a text (or a subject, attribute and value)")
    if len(text) > MAX_TEXT:
        raise InvalidInput(f"a note holds at most {MAX_TEXT} characters, not {len(text)}")
    parts = (fact.subject, fact.attribute, fact.value) if fact else ("", "", "")
    event: dict[str, Any] = {"session": session, "id": event_id("note", actor, scope or "", text, *parts),
                             "ts": ts, "kind": "note", "actor": actor}
    if text:
        event["text"] = text
    if fact is not None:
        event["fact"] = fact.to_dict()
    return _finish(event, actor, scope, via, [text, *parts])


def plan_event(*, goal: str | None, next_items: list[str] | None, done: list[str] | None, actor: str,
               session: str, ts: str, scope: str | None = None, via: str = "") -> dict[str, Any]:
    """The raw ``plan`` event: a new goal, the next actions (replacing the scope's list), done items."""
    from memdream.ingest.record import event_id

    goal, scope = " ".join(goal.split()) if goal else "", _project(scope)
    lists = {"next": _items(next_items, "next"), "done": _items(done, "done")}
    if not goal and not lists["next"] and not lists["done"]:
        raise InvalidInput("nothing to update: give a goal, next actions or done items")
    event: dict[str, Any] = {"session": session, "ts": ts, "kind": "plan", "actor": actor}
    if goal:
        event["goal"] = goal
    event.update({name: items for name, items in lists.items() if items})
    event["id"] = event_id("plan", actor, scope or "", goal, "\x1e".join(lists["next"]), "\x1e".join(lists["done"]))
    return _finish(event, actor, scope, via, [goal, *lists["next"], *lists["done"]])


def _project(scope: str | None) -> str | None:
    """``scope`` spelled as ingest spells a transcript's project, so that notes and sessions meet."""
    from memdream.memory.project import clean_name

    return clean_name(scope) if scope else None


def _items(items: list[str] | None, name: str) -> list[str]:
    cleaned = [" ".join(item.split()) for item in items or () if item and item.strip()]
    if len(cleaned) > MAX_ITEMS:
        raise InvalidInput(f"at most {MAX_ITEMS} {name} items in one update, not {len(cleaned)}")
    if any(len(item) > MAX_TEXT for item in cleaned):
        raise InvalidInput(f"a plan item holds at most {MAX_TEXT} characters")
    return cleaned


def _finish(event: dict[str, Any], actor: str, scope: str | None, via: str, words: list[str]) -> dict[str, Any]:
    """Tags (scope; untrusted when an agent's words read like an order) and where it came from."""
    tags = [f"{PROJECT_TAG}{scope}"] if scope else []
    if actor != USER and _instructs(words):
        tags.append(UNTRUSTED)
    if tags:
        event["tags"] = tags
    if via:
        event["meta"] = {"via": via}
    return event


def _instructs(words: list[str]) -> bool:
    """Whether any of the agent's words reads like an order (the user's own words are trusted)."""
    from memdream.injection import reads_like_instruction

    return any(word and reads_like_instruction(word) for word in words)


def store(memory: Memory, event: dict[str, Any], look_up: bool = True) -> Remembered:
    """Record ``event`` unless the raw layer holds it already (same session and id: the same note
    given again the same day, or by the same MCP server), and say what happened.

    ``look_up=False``: the caller knows the event is not stored (an MCP server's own session, whose
    events it remembers itself), which spares reading the dedup index of every segment."""
    from memdream.ingest.record import record
    from memdream.memory.raw import RawLayer
    from memdream.memory.refs import event_ref

    flagged = UNTRUSTED in event.get("tags", ())
    scope = next((tag[len(PROJECT_TAG):] for tag in event.get("tags", ()) if tag.startswith(PROJECT_TAG)), None)
    found = Remembered(event_ref(event["session"], event["id"]), event["kind"], event["actor"], added=False,
                       flagged=flagged, scope=scope)
    # Asked first: stored again with a new time, the same note would be an id collision (a second event).
    if look_up and _stored(RawLayer(memory.paths), event["session"], event["id"]):
        return found
    recorded = record(memory, [event])
    found.ref, found.added = recorded.refs[0], recorded.added > 0
    found.redactions = dict(recorded.report.redactions)
    return found


def _stored(raw: Any, session: str, event_id: str) -> bool:
    return any(row[0] == session and row[1] == event_id for row in raw.key_rows())
