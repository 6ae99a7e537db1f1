"""When the raw manifest reaches git: with the next dream (the default), once a day, or every ingest.

A cron job that ingests every 30 minutes would otherwise write 48 commits a day named
`memdream ingest: …` between which the dreams are hard to find: `git log` of a memory should
read as a history of dreams. The manifest waiting for its commit is ingest's bookkeeping, not a
person's change: commands that refuse uncommitted changes do not count it.
"""

from __future__ import annotations

import json

from memdream import gitops
from memdream.memory import trailers as trailer
from memdream.memory.lock import index_lock
from memdream.memory.raw import MANIFEST
from memdream.memory.store import Memory

WITH_DREAM, DAILY, EACH = "with-dream", "daily", "each"
MANIFEST_PATH = f"raw/{MANIFEST}"


def tracked_raw_paths(memory: Memory) -> list[str]:
    """What of raw/ git tracks: the manifest, or all of raw/ with ``ingest.track_raw``."""
    return ["raw"] if track_raw(memory) else [MANIFEST_PATH]


def track_raw(memory: Memory) -> bool:
    return bool(memory.settings.get("ingest.track_raw"))


def pending(memory: Memory) -> list[str]:
    """The raw bookkeeping files ingest left that no commit holds yet (one `git status`)."""
    if not gitops.is_repo(memory.root):
        return []
    return gitops.status_paths(memory.root, tracked_raw_paths(memory))


def commit_now(memory: Memory, now: str) -> bool:
    """Whether this ingest commits its manifest itself (``ingest.commit``)."""
    if gitops.in_project(memory.root):
        return False  # the user's branch: the next dream stages the manifest with its files
    mode = memory.settings.get("ingest.commit")
    if mode == EACH:
        return True
    if mode == DAILY:  # the day of the newest committed segment, by the ingest clock (MEMDREAM_NOW)
        committed = _records(gitops.read_text(memory.root, "HEAD", MANIFEST_PATH) or "")
        last = max((str(record.get("created_at", "")) for record in committed), default="")
        return last[:10] != now[:10]
    return False


def uncommitted_segments(memory: Memory) -> list[str]:
    """The segments the working manifest lists and the committed one does not (oldest first)."""
    current = _segments(_read(memory))
    committed = set(_segments(gitops.read_text(memory.root, "HEAD", MANIFEST_PATH) or ""))
    return [name for name in current if name not in committed]


def _read(memory: Memory) -> str:
    try:
        return (memory.paths.raw / MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _records(text: str) -> list[dict[str, object]]:
    found = []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # lint reports a damaged manifest; here it only names segments
        if isinstance(record, dict) and "segment" in record:
            found.append(record)
    return found


def _segments(text: str) -> list[str]:
    return [str(record["segment"]) for record in _records(text)]


def trailer_value(segments: list[str]) -> str:
    return ", ".join(segments) or "recovered"


def commit(memory: Memory, subject: str, segments: list[str]) -> str:
    """Commit the raw bookkeeping alone (``ingest.commit`` each or daily)."""
    return gitops.commit(memory.root, subject, trailers={trailer.INGEST: trailer_value(segments)},
                         paths=tracked_raw_paths(memory), force=track_raw(memory),
                         index_lock=index_lock(memory.paths.state))


def stage(memory: Memory) -> None:
    """Stage the raw bookkeeping so that the next commit (a dream's) carries it."""
    gitops.stage(memory.root, tracked_raw_paths(memory), force=track_raw(memory),
                 index_lock=index_lock(memory.paths.state))
