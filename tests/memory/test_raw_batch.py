"""SegmentWriter.write_lines (a big ingest's prepared chunks) stages the very bytes that write_fields does
line by line: the segments, their dedup indexes and the manifest's counts, times and hashes, across segment
boundaries, with fields that need escaping and times written in every form."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer, SegmentRecord, SegmentWriter

STAMPS = ["2026-11-07T09:12:03Z", "2026-11-07T08:00:00Z", "2026-11-08T00:00:00Z", "2026-11-07T09:12:03.250Z",
          "2026-11-07T12:30:00+02:00", "2026-11-07T09:30:00", "not a time"]
SESSIONS = ["s-1", "s\t2", "s\\3", "s\n4", "s-é"]


def events(count: int, seed: int, stamps: list[str]) -> list[tuple[bytes, str, str, str]]:
    rng = random.Random(seed)
    found = []
    for number in range(count):
        session, ts = rng.choice(SESSIONS), rng.choice(stamps)
        event_id = rng.choice([f"e{number}", f"e{number}\\x", f"e{number}\r"])
        line = orjson.dumps({"id": event_id, "session": session, "ts": ts, "text": "x" * rng.randint(0, 40)})
        found.append((line, session, event_id, ts))
    return found


def staged(root: Path, batches: list[list[tuple[bytes, str, str, str]]], together: bool,
           max_events: int) -> tuple[list[SegmentRecord], dict[str, bytes]]:
    raw = RawLayer(MemoryPaths(root))
    writer = SegmentWriter(raw, max_events)
    for batch in batches:
        if together:
            writer.write_lines(*(list(column) for column in zip(*batch)))  # type: ignore[arg-type]
        else:
            for line, session, event_id, ts in batch:
                writer.write_fields(line, session, event_id, ts)
    records = writer.publish("2026-12-01T00:00:00Z")
    files = {path.name: path.read_bytes() for folder in (raw.dir, raw.keys_dir) for path in folder.iterdir()}
    return records, files


@pytest.mark.parametrize("stamps", [STAMPS[:3], STAMPS], ids=["alike", "every-form"])
@pytest.mark.parametrize("max_events", [1, 7, 1000])
def test_lines_written_together_are_the_lines_written_one_by_one(tmp_path: Path, stamps: list[str],
                                                                 max_events: int) -> None:
    batches = [events(count, seed, stamps) for seed, count in enumerate([1, 13, 40, 6, 0, 21])]
    batches = [batch for batch in batches if batch]
    together = staged(tmp_path / "together", batches, True, max_events)
    alone = staged(tmp_path / "alone", batches, False, max_events)
    assert together == alone
    assert sum(record.events for record in together[0]) == sum(len(batch) for batch in batches)
