"""The MCP server: a memory's recall and plan for an agent to read, and notes and plan updates
for it to leave, over stdio.

Four tools (docs/mcp.md): ``recall`` and ``plan`` read; ``remember`` and ``plan_update`` append one
raw event each (:mod:`memdream.commands.remember`), never a card, so that whatever an agent says still passes
dreaming and git review. The tools are plain methods of :class:`MemoryTools`;
:func:`memdream.mcp.protocol.build` declares them to the SDK.

Concurrency with a running dream or ingest: a write waits for the writer lock at most
``lock_wait`` seconds (5 by default), then the call fails with "memory is busy … nothing was
stored; try again" rather than hang the agent; reads wait as long for a dream that is writing
the cards to finish. Calls of one server are served one write at a time.

Every call is logged, one JSON line in ``.memdream/mcp.jsonl``: time, session, tool, and the card
ids a recall returned or the event a write stored (never the query or the note's words). Recall
also counts the cards it returned in ``.memdream/usage.jsonl`` as every recall does.
"""

from __future__ import annotations

import gc
import json
import os
import re
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memdream.commands.remember import AGENT, Fact, Remembered, mcp_session, note_event, plan_event, store
from memdream.errors import InvalidInput

CALL_LOG = "mcp.jsonl"
DEFAULT_LOCK_WAIT = 5.0  # seconds a write waits for a dream or ingest before it says "busy"
SESSION_META_KEY = "memdream/session"  # a request's _meta key by which a client names its session
_SESSION = re.compile(r"^[^\s#]{1,200}$")


@dataclass(frozen=True)
class ServerOptions:
    root: Path
    session: str | None = None  # None: mcp-<date>-<random>, one per server process
    scope: str | None = None  # the project notes belong to and recall shows; None: the working folder's
    lock_wait: float = DEFAULT_LOCK_WAIT
    cwd: str | None = None


@dataclass
class RecallAnswer:
    context: str
    cards: list[str]
    budget: int

    def to_dict(self) -> dict[str, Any]:
        return {"context": self.context, "cards": self.cards, "budget": self.budget,
                "bytes": len(self.context.encode("utf-8"))}


class CallLog:
    """``.memdream/mcp.jsonl``: one line per tool call, appended in one write (O_APPEND), so that
    several servers on one memory never interleave within a line."""

    def __init__(self, state: Path) -> None:
        self.path = state / CALL_LOG

    def append(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError:
            pass  # a read-only memory still answers recalls


class MemoryTools:
    """The tools over one memory, for one server process (one session unless a call names its own)."""

    def __init__(self, options: ServerOptions) -> None:
        from memdream.clock import now_iso
        from memdream.memory.paths import MemoryPaths
        from memdream.recall.index import IndexMemo

        self.options = options
        self.root = options.root
        self.paths = MemoryPaths(options.root)
        self.session = options.session or mcp_session(now_iso())
        self.scope = options.scope or _project_of(options.cwd)
        self.calls = CallLog(self.paths.state)
        self._writing = threading.Lock()  # the SDK runs tools in threads; the raw layer takes one writer
        # What this server stored under its own session (random, so no other process writes it): the
        # same note again is answered from here, without reading the raw layer's dedup index.
        self._stored: dict[str, Remembered] = {}
        # The recall indexes, kept between calls and checked by their stamps on each (a dream or an ingest
        # in between is seen): unpickling them again took about half of a warm recall.
        self._indexes = IndexMemo()
        # The SDK runs tools in threads: recalls (and the warm-up) use the indexes one at a time, so that
        # two never load the same one, and a first recall waits for the warm-up instead of doing it again.
        self._loading = threading.Lock()
        # Collect garbage after each write: see _store. Set by serve(), which froze the long-lived objects.
        self.collect_after_writes = False

    # -- reading ---------------------------------------------------------------------------------
    def recall(self, query: str, budget: int | None = None, session: str | None = None) -> RecallAnswer:
        from memdream.recall.engine import RecallOptions, recall

        if not query.strip():
            raise InvalidInput("recall needs a query")
        options = RecallOptions(budget=budget, scope=self.options.scope, cwd=self.options.cwd)
        options.check()
        self._settled()
        with self._loading:
            result = recall(self.root, query, options, self._indexes)
        cards = [item.id for item in result.items if item.source == "card"]
        self._log("recall", session, cards=cards)
        return RecallAnswer(result.context, cards, result.budget)

    def warm(self) -> None:
        """Load the recall indexes (building them when the memory was never recalled: seconds for a large
        raw layer) before the first recall asks for them; serve() runs it in the background as the agent
        connects. A shortcut only: nothing is loaded while a dream writes the cards, and whatever fails
        here fails again, and is reported, in the recall that needs it."""
        from memdream.memory.journal import dream_pending
        from memdream.recall.engine import load_meta
        from memdream.recall.index import load_card_index, load_segment_indexes

        def memory() -> Any:  # read only when an index must be built
            from memdream.memory.store import Memory

            return Memory(self.root)

        with self._loading:
            if dream_pending(self.root):
                return
            try:
                load_meta(self.paths, memory, self._indexes)
                load_card_index(self.paths, memory, self._indexes)
                load_segment_indexes(self.paths, self._indexes)
            except Exception:  # noqa: BLE001 - a thread's traceback would reach the agent's log
                return

    def plan(self, session: str | None = None) -> dict[str, Any]:
        from memdream.memory.store import Memory

        self._settled()
        plan = Memory(self.root).load_plan().to_dict()
        self._log("plan", session)
        return plan

    # -- writing ---------------------------------------------------------------------------------
    def remember(self, text: str = "", subject: str | None = None, attribute: str | None = None,
                 value: str | None = None, session: str | None = None) -> Remembered:
        from memdream.clock import now_iso

        event = note_event(text, actor=AGENT, session=self._session(session), ts=now_iso(),
                           fact=Fact.of(subject, attribute, value), scope=self.scope, via="mcp")
        return self._store("remember", session, event)

    def plan_update(self, goal: str | None = None, next_items: list[str] | None = None,
                    done: list[str] | None = None, session: str | None = None) -> Remembered:
        from memdream.clock import now_iso

        event = plan_event(goal=goal, next_items=next_items, done=done, actor=AGENT,
                           session=self._session(session), ts=now_iso(), scope=self.scope, via="mcp")
        return self._store("plan_update", session, event)

    def _store(self, tool: str, session: str | None, event: dict[str, Any]) -> Remembered:
        from memdream.errors import Busy
        from memdream.memory.store import Memory

        own = event["session"] == self.session and self.options.session is None
        key = event["id"]
        try:
            with self._writing:
                if own and key in self._stored:
                    stored = replace(self._stored[key], added=False, redactions={})
                else:
                    stored = store(Memory(self.root), event, look_up=not own)
                    if own:
                        self._stored[key] = stored
        except Busy:
            self._log(tool, session, error="busy")
            raise Busy(f"memory is busy (a dream or an ingest is writing it; waited {self.options.lock_wait:g} s): "
                       "nothing was stored; try again in a minute") from None
        self._log(tool, session, ref=stored.ref, added=stored.added, flagged=stored.flagged)
        if self.collect_after_writes:
            # A write (an ingest) leaves a few thousand objects in reference cycles: collected now, while
            # the agent waits for a write anyway, not by the collector in the middle of a later recall.
            gc.collect()
        return stored

    # -- shared ----------------------------------------------------------------------------------
    def _session(self, asked: str | None) -> str:
        if asked is None:
            return self.session
        if not _SESSION.match(asked):
            raise InvalidInput(f"{SESSION_META_KEY} must be 1-200 characters without whitespace or '#'")
        return asked

    def _settled(self) -> None:
        """Wait (at most the lock wait) while a dream writes the cards, then refuse if it was killed."""
        from memdream.memory.journal import dream_pending, require_settled

        deadline = time.monotonic() + self.options.lock_wait
        while dream_pending(self.root) and time.monotonic() < deadline:
            time.sleep(0.1)
        require_settled(self.root)

    def _log(self, tool: str, session: str | None, **fields: Any) -> None:
        from memdream.clock import now_iso

        self.calls.append({"ts": now_iso(), "session": session or self.session, "tool": tool, **fields})


def _project_of(cwd: str | None) -> str | None:
    """The project of the folder the agent started the server in, named as ingest tags transcripts."""
    from memdream.memory.project import project_name

    return project_name(cwd) if cwd else None
