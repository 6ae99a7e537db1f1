"""Lint's own reading of the raw layer: every manifest line and segment line is parsed, and a
damaged one is a finding with its path and line (never an internal error, never skipped
because a dedup cache in .memdream/ says all is well)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from memdream.jsonio import loads
from memdream.lint.files import MAX_TEXT_BYTES, FileProblem, entry_problem, folder_entries, read_text
from memdream.lint.findings import Finding
from memdream.memory.paths import RAW_DIR
from memdream.memory.raw import MANIFEST, SEGMENTS, event_hash

_SEGMENT_NAME = re.compile(r"[0-9]{6,}\.jsonl")

Keys = dict[tuple[str, str], str]


def read_raw_keys(root: Path) -> tuple[Keys | None, list[Finding]]:
    """(session, id) -> event hash of every event of the raw layer (None when no segment is
    here: a clone may carry cards without raw events), and the findings met on the way."""
    raw, segments = root / RAW_DIR, root / RAW_DIR / SEGMENTS
    _, problems = folder_entries(raw)
    entries, segment_problems = ([], {}) if problems else folder_entries(segments)
    problems.update(segment_problems)
    findings = [Finding(path, 1, 1, "file", problem) for path, problem in problems.items()]
    if not any(path.suffix == ".jsonl" for path in entries):
        return None, findings
    names, manifest_findings = _manifest_segments(raw / MANIFEST)
    findings.extend(manifest_findings)
    keys: Keys = {}
    for name in names:
        findings.extend(_read_segment(segments / name, keys))
    return keys, findings


def _manifest_segments(path: Path) -> tuple[list[str], list[Finding]]:
    if not os.path.lexists(path):
        return [], []
    try:
        text = read_text(path, MAX_TEXT_BYTES)
    except FileProblem as problem:
        return [], [Finding(path, 1, 1, "file", str(problem))]
    names, findings = [], []
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
        names.append(name)
    return names, findings


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
            keys[(session, event_id)] = event_hash(line.rstrip(b"\n"))
    return []
