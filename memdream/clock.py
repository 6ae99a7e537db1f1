"""The clock. ``MEMDREAM_NOW`` replaces it everywhere, for tests and for replays of old logs."""

from __future__ import annotations

import os
from datetime import datetime, timezone

from memdream.errors import UsageError

NOW_ENV = "MEMDREAM_NOW"


def parse_timestamp(text: str) -> datetime:
    """Parse ISO 8601; a naive time is read as UTC. Raises ValueError on garbage."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    moment = datetime.fromisoformat(cleaned)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment


def epoch_seconds(text: str | None) -> float:
    """``text`` as seconds since the epoch, for ordering and arithmetic; 0.0 for nothing or garbage (an
    event's time was checked at ingest: what still does not parse sorts first)."""
    if not text:
        return 0.0
    try:
        return parse_timestamp(text).timestamp()
    except ValueError:
        return 0.0


def format_timestamp(moment: datetime) -> str:
    """The one way memdream writes a time: UTC, seconds precision, ``Z`` suffix."""
    return moment.astimezone(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> datetime:
    """The current time, or ``MEMDREAM_NOW`` when set."""
    override = os.environ.get(NOW_ENV)
    if override:
        try:
            return parse_timestamp(override)
        except ValueError:
            raise UsageError(f"{NOW_ENV}={override!r} is not an ISO 8601 timestamp") from None
    return datetime.now(timezone.utc)


def now_iso() -> str:
    return format_timestamp(now())
