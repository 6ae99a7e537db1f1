"""raw/MANIFEST.jsonl's times of a segment (issue 21.9): ``first_ts`` and ``last_ts`` are its earliest and
latest event, even when a log's events are out of order in the file (a real session: a compaction summary
dated at the record it names, a title dated earlier). Real ingest processes, and an orphan segment adopted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer, earliest, latest


def manifest(memory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (memory / "raw" / "MANIFEST.jsonl").read_text(encoding="utf-8").splitlines()]


def event(event_id: str, ts: str) -> str:
    return json.dumps({"session": "s-1", "id": event_id, "ts": ts, "kind": "message", "text": f"turn {event_id}"})


OUT_OF_ORDER = [  # the earliest in the middle, the latest second, one time with an offset, one naive
    event("a", "2026-11-07T09:12:03.250Z"),
    event("b", "2026-11-07T11:00:00.000Z"),
    event("c", "2026-11-07T08:59:59.999Z"),
    event("d", "2026-11-07T12:30:00+02:00"),  # 10:30 UTC
    event("e", "2026-11-07T09:30:00"),  # naive: UTC
]


def test_first_and_last_are_the_earliest_and_latest_event(memory: Path, tmp_path: Path) -> None:
    log = tmp_path / "session.jsonl"
    log.write_text("\n".join(OUT_OF_ORDER) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "memdream", "ingest", str(log), "-m", str(memory)], check=True,
                   capture_output=True, timeout=120)
    (record,) = manifest(memory)
    assert (record["first_ts"], record["last_ts"]) == ("2026-11-07T08:59:59.999Z", "2026-11-07T11:00:00.000Z")
    lint = subprocess.run([sys.executable, "-m", "memdream", "lint", str(memory)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_an_adopted_orphan_segment_gets_the_same_times(memory: Path) -> None:
    layer = RawLayer(MemoryPaths(memory))
    layer.dir.mkdir(parents=True, exist_ok=True)
    (layer.dir / "000001.jsonl").write_text("\n".join(OUT_OF_ORDER) + "\n", encoding="utf-8")
    record = layer.describe("000001.jsonl", "2026-11-30T12:00:00Z")
    assert (record.first_ts, record.last_ts) == ("2026-11-07T08:59:59.999Z", "2026-11-07T11:00:00.000Z")


def test_times_compare_as_moments_whatever_their_form() -> None:
    assert earliest("2026-11-07T12:30:00+02:00", "2026-11-07T11:00:00Z") == "2026-11-07T12:30:00+02:00"
    assert latest("2026-11-07T12:30:00+02:00", "2026-11-07T11:00:00Z") == "2026-11-07T11:00:00Z"
    assert latest("2026-11-07T09:00:00Z", "2026-11-07T09:00:00.500Z") == "2026-11-07T09:00:00.500Z"
    assert earliest("2026-11-07T09:00:01Z", "2026-11-07T09:00:00Z") == "2026-11-07T09:00:00Z"
