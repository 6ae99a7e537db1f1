"""Lint's own reading of the raw layer: every manifest line and segment line is parsed, and a
damaged one is a finding with its path and line (never an internal error, never skipped
because a dedup cache in .memdream/ says all is well)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from memdream.jsonio import loads
from memdream.lint.files import MAX_TEXT_BYTES, FileProblem, entry_problem, folder_entries, read_text
from memdream.lint.findings import Finding
from memdream.memory.paths import RAW_DIR, MemoryPaths
from memdream.memory.raw import MANIFEST, SEGMENTS, RawLayer, StoredHashes, stored_hashes

_SEGMENT_NAME = re.compile(r"[0-9]{6,}\.jsonl")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}")

Keys = dict[tuple[str, str], StoredHashes]


def read_raw_keys(root: Path) -> tuple[Keys | None, list[Finding], list[str]]:
    """(session, id) -> the hashes of every event of the raw layer (None when no segment is
    here: a clone may carry cards without raw events), the findings met on the way, and the
    segments of the manifest this copy never had (a clone that ingested: RawLayer.never_here).

    The manifest is checked either way: a clone carries it (it is tracked) without the segments."""
    raw, segments = root / RAW_DIR, root / RAW_DIR / SEGMENTS
    _, problems = folder_entries(raw)
    entries, segment_problems = ([], {}) if problems else folder_entries(segments)
    problems.update(segment_problems)
    findings = [Finding(path, 1, 1, "file", problem) for path, problem in problems.items()]
    names, manifest_findings = ([], []) if raw in problems else _manifest_segments(raw / MANIFEST)
    findings.extend(manifest_findings)
    if not any(path.suffix == ".jsonl" for path in entries):
        return None, findings, []
    keys: Keys = {}
    for name in names:
        findings.extend(_read_segment(segments / name, keys))
    layer = RawLayer(MemoryPaths(root))
    return keys, findings, [name for name in names if layer.never_here(name)]


def _manifest_segments(path: Path) -> tuple[list[str], list[Finding]]:
    if not os.path.lexists(path):
        return [], []
    try:
        text = read_text(path, MAX_TEXT_BYTES)
    except FileProblem as problem:
        return [], [Finding(path, 1, 1, "file", str(problem))]
    names: list[str] = []
    findings: list[Finding] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            name = record["segment"] if isinstance(record, dict) else None
        except (ValueError, KeyError, RecursionError):
            name = None
        if not isinstance(name, str) or _SEGMENT_NAME.fullmatch(name) is None:
            findings.append(Finding(path, number, 1, "raw", "not a manifest record (damaged raw manifest)"))
            continue
        inconsistency = _record_problem(record, names, name)
        if inconsistency is not None:
            findings.append(Finding(path, number, 1, "manifest", inconsistency))
        names.append(name)
    return names, findings


def _record_problem(record: dict[str, Any], before: list[str], name: str) -> str | None:
    """Why one manifest record is inconsistent: segments are numbered 1, 2, 3 … once each, and each
    record pins the segment's sha256, its event count and times (what a clone can still check)."""
    if name in before:
        return f"segment {name} is listed twice"
    expected = int(before[-1].split(".")[0]) + 1 if before else 1
    if int(name.split(".")[0]) != expected:
        return f"segment {name} breaks the numbering: expected {expected:06d}.jsonl"
    if not isinstance(record.get("sha256"), str) or _SHA256.fullmatch(record["sha256"]) is None:
        return f"segment {name}: sha256 is not 64 hexadecimal digits"
    events = record.get("events")  # 0: `memdream forget` erased every event of the segment (its number stays)
    if not isinstance(events, int) or isinstance(events, bool) or events < 0:
        return f"segment {name}: events is not a count"
    for field in ("first_ts", "last_ts", "created_at"):
        if not isinstance(record.get(field), str) or _TIMESTAMP.match(record[field]) is None:
            return f"segment {name}: {field} is not an ISO 8601 time"
    return None


def _read_segment(path: Path, keys: Keys) -> list[Finding]:
    """Add the events of one segment to ``keys``; a finding at the first damaged line."""
    if not os.path.lexists(path):
        return []  # listed but absent: a clone without the raw layer
    problem = entry_problem(path)
    if problem is not None:
        return [Finding(path, 1, 1, "file", problem)]
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                event = loads(line)
                session, event_id = event["session"], event["id"]
                if not isinstance(session, str) or not isinstance(event_id, str):
                    raise TypeError("session and id must be strings")
            except (ValueError, TypeError, KeyError, RecursionError) as error:
                reason = f"{type(error).__name__}: {' '.join(str(error).split())}"
                return [Finding(path, number, 1, "raw", f"damaged raw segment: not a raw event ({reason}); "
                                "restore the file from git")]
            keys[(session, event_id)] = stored_hashes(line.rstrip(b"\n"), event)
    return []
