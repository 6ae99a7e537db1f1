"""Which session a source's events belong to when the source names none, and when two events
with one id are the same event.

**Derived sessions.** A chat-completion file (and a Claude Code or Codex transcript whose records
carry no session id) gets the session ``<stem>-<digest>``: the file's stem, for people, and six hex
digits of its resolved absolute path and its first event, so that ``a/chat.json`` and
``b/chat.json`` are two sessions. The first event (session and time left out) stays the same while
the file grows, so a transcript ingested at PreCompact and again at SessionEnd keeps its session.
The path is the resolved one (a symlink and its target are one source); a file moved or renamed is
a new source: its events are stored again under a new session (``--session NAME`` pins one).
Stdin has no path: its session is ``stdin-<digest of the first event>``.

**Older ingests.** Before this, the session was the stem alone. A source whose first event is
stored under the stem with the same content was ingested that way: it keeps the stem, so its
refs keep resolving and a re-ingest adds only what is new.

**Content.** Dedup compares an event's content, not only its ``(session, id)``:
:func:`fingerprint` leaves out what ingest adds (episode, salience, project and future-ts tags)
and a synthetic time (a file's modification time moves as the file grows).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from memdream.jsonio import dumps_canonical
from memdream.memory.raw import source_content

Event = dict[str, Any]

_DIGEST_BYTES = 3  # six hex digits: a label that tells two same-named files apart, not a secret
_COLLISION_BYTES = 4
_NOT_SESSION = re.compile(r"[\s#]+")


def fingerprint(event: Event) -> str:
    """The event's content as a digest: what is the same when the source said the same thing.

    Ingest's own tags, a ``meta.ts_synthetic`` time and the id (an event stored under ``<id>~<digest>``
    is compared with what claims ``<id>``) are not part of it."""
    # compared under one id or its ~digest: the id is left out
    content = {key: value for key, value in source_content(event).items() if key != "id"}
    return hashlib.blake2b(dumps_canonical(content), digest_size=12).hexdigest()


def collision_id(event_id: str, content: str, attempt: int = 1) -> str:
    """The id of an event whose own id holds other content: stable (the same content gets the same
    id in every run) and distinct (a digest of that content)."""
    suffix = f"~{content[:2 * _COLLISION_BYTES]}" + (f"-{attempt}" if attempt > 1 else "")
    return event_id[:256 - len(suffix)] + suffix


def safe_stem(stem: str) -> str:
    """The stem as a valid session name: no whitespace, no ``#``."""
    return _NOT_SESSION.sub("-", stem).strip("-") or "source"


def path_key(path: Path | None) -> str:
    """What names a source for its session: its resolved absolute path; nothing for stdin."""
    if path is None:
        return ""
    try:
        return str(path.resolve())
    except OSError:
        return str(path.absolute())


class SourceSessions:
    """Gives the events of one source whose adapter fell back on the default session their session.

    The adapter is given :attr:`placeholder` as its default session; :meth:`assign` replaces it, once
    the first event is known, with the stem (an older ingest stored this source so) or the derived
    session.
    """

    def __init__(self, stem: str, path: Path | None, stored_as_stem: Callable[[Event], bool]) -> None:
        self.stem = stem
        self.path = path
        self.placeholder = f"{safe_stem(stem)}-pending-{secrets.token_hex(8)}"
        self._stored_as_stem = stored_as_stem
        self.session: str | None = None

    def assign(self, events: Iterator[Event]) -> Iterator[Event]:
        placeholder = self.placeholder
        for event in events:
            if event.get("session") == placeholder:
                if self.session is None:
                    self.session = self._session_for(event)
                event["session"] = self.session
            yield event

    def _session_for(self, first: Event) -> str:
        legacy = {**first, "session": self.stem}
        if self._stored_as_stem(legacy):
            return self.stem
        content = {key: value for key, value in first.items() if key != "session"}
        seed = path_key(self.path).encode("utf-8", "surrogatepass") + b"\0" + fingerprint(content).encode()
        digest = hashlib.blake2b(seed, digest_size=_DIGEST_BYTES).hexdigest()
        return f"{safe_stem(self.stem)}-{digest}"
