"""Record events that memdream itself produces (a person's verdict on a card, a note from the
shell or from an agent over MCP) in the raw layer, through the same ingest as any log.

Nothing here writes a card: an event recorded now is dreamed like every other one, so a
verdict or a note passes the same redaction, dedup, dreaming rules and git review.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from typing import Any

from memdream.clock import now_iso
from memdream.errors import InvalidInput
from memdream.ingest.pipeline import IngestOptions, IngestReport, ingest
from memdream.jsonio import dumps_canonical
from memdream.memory.refs import event_ref
from memdream.memory.store import Memory

# The session a person's own words from the command line are stored under (one per day, so that
# dream's episodes stay small and a day's verdicts read together).
CLI_SESSION_PREFIX = "memdream-cli"


@dataclass
class Recorded:
    """What :func:`record` stored: the refs of the events (new or already there) and the ingest report."""

    refs: list[str]
    report: IngestReport

    @property
    def added(self) -> int:
        return self.report.total("added")


def cli_session(now: str | None = None) -> str:
    """The session of events a person records from the shell today: ``memdream-cli/2026-11-30``."""
    return f"{CLI_SESSION_PREFIX}/{(now or now_iso())[:10]}"


def event_id(prefix: str, *parts: str) -> str:
    """A deterministic id: the same verdict or note recorded twice is stored once."""
    digest = hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:12]
    return f"{prefix}-{digest}"


def record(memory: Memory, events: list[dict[str, Any]]) -> Recorded:
    """Ingest ``events`` (raw-event format, each with ``session`` and ``id``) into the raw layer.

    They go through a temporary JSONL file and the ordinary ingest pipeline: redaction before
    anything touches the raw layer, schema checks, dedup, the writer lock (so a running dream is
    waited for, not raced), the manifest. An event the redactor changes is stored redacted.
    """
    if not events:
        raise InvalidInput("nothing to record")
    for event in events:
        if not event.get("session") or not event.get("id"):
            raise InvalidInput("a recorded event needs a session and an id")
    state = memory.paths.state
    state.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix="record-", suffix=".jsonl", dir=state)
    try:
        with os.fdopen(handle, "wb") as stream:
            for event in events:
                stream.write(dumps_canonical(event) + b"\n")
        report = ingest(memory, [name], IngestOptions(fmt="memdream"))
    finally:
        os.unlink(name)
    return Recorded([event_ref(event["session"], event["id"]) for event in events], report)
