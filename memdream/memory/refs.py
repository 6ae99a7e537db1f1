"""Evidence references: ``log://<session>#<event-id>``, how cards and plan items cite a raw event.

A session holds no ``#`` (raw-event.schema.json) while an event id may, so a reference splits
at its first ``#``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REF_SCHEME = "log://"


def event_ref(session: str, event_id: str) -> str:
    """The reference of the event ``event_id`` of ``session``."""
    return f"{REF_SCHEME}{session}#{event_id}"


def ref_of(event: Mapping[str, Any]) -> str:
    """The reference of a raw event (empty parts where the event lacks a field)."""
    return f"{REF_SCHEME}{event.get('session', '')}#{event.get('id', '')}"


def parse_ref(ref: str) -> tuple[str, str]:
    """``(session, event id)`` of a reference; the id is empty when there is no ``#``."""
    session, _, event_id = ref.removeprefix(REF_SCHEME).partition("#")
    return session, event_id
