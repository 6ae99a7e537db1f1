"""What `memdream forget` erases outside git: the raw segments (untracked, pinned by the tracked manifest)
and the local state in ``.memdream/`` (caches, usage and call logs, ingest's and dream's state).

The raw layer is rewritten roll-forward: every segment that loses events is written in full, with the
new manifest, under ``.memdream/forget/<forget-id>/``; a ``ready.json`` written last is the point of no
return; then each staged segment replaces its original, the manifest is swapped in, and the folder goes.
A forget killed before ``ready.json`` left nothing visible (its folder is removed); killed after, the
next forget finishes the swap (:func:`resume`) before it does anything else. Only erased events are ever
dropped, so finishing is always right.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from memdream import yamlio
from memdream.ingest.dedup import Forgotten
from memdream.memory.paths import dream_state_path
from memdream.memory.raw import RawLayer, SegmentRecord, earliest, latest
from memdream.memory.store import Memory
from memdream.memory.usage import USAGE_FILE
from memdream.review.erasure import Erasure

FORGET_DIR = "forget"  # under .memdream/: a raw rewrite, staged
READY = "ready.json"
_LOGS = (USAGE_FILE, "mcp.jsonl")  # local logs of card ids and event refs (never query words)
_SALIENCE = Path("ingest") / "salience.json"


# --- the raw layer ------------------------------------------------------------------------------------------

def stage_raw(memory: Memory, forget_id: str, dropped: dict[str, set[int]]) -> Path | None:
    """Write each segment of ``dropped`` (segment -> line numbers to drop) without those lines, and the
    manifest that pins them, under ``.memdream/forget/<forget_id>/``; None when no segment changes."""
    if not dropped:
        return None
    raw = RawLayer(memory.paths)
    records = raw.manifest()
    folder = memory.paths.state / FORGET_DIR / forget_id
    folder.mkdir(parents=True, exist_ok=True)
    rewritten = {name: _write_without(raw, name, lines, folder / name, _record(records, name))
                 for name, lines in sorted(dropped.items())}
    text = raw.manifest_text([rewritten.get(record.segment, record) for record in records])
    yamlio.write_atomic(folder / "MANIFEST.jsonl", text)
    yamlio.write_atomic(folder / READY, json.dumps({"segments": sorted(rewritten)}))  # no return from here
    return folder


def apply_raw(memory: Memory, folder: Path) -> None:
    """Swap the staged segments and manifest of ``folder`` in (again, after a crash: what is swapped
    already is not staged any more), rebuild their dedup indexes and remove the folder."""
    raw = RawLayer(memory.paths)
    names = json.loads((folder / READY).read_text(encoding="utf-8"))["segments"]
    for name in names:
        if (folder / name).exists():
            os.replace(folder / name, raw.segment_path(name))
    if (folder / "MANIFEST.jsonl").exists():
        os.replace(folder / "MANIFEST.jsonl", raw.manifest_path)
    for name in names:
        raw.reindex(name)
    shutil.rmtree(folder)


def resume(memory: Memory) -> bool:
    """Finish a raw rewrite a killed forget left ready; drop one it left unfinished. True if one was found."""
    base = memory.paths.state / FORGET_DIR
    found = False
    for folder in sorted(base.iterdir()) if base.is_dir() else []:
        found = True
        if (folder / READY).exists():
            apply_raw(memory, folder)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return found


def _record(records: list[SegmentRecord], name: str) -> SegmentRecord | None:
    return next((record for record in records if record.segment == name), None)


def _write_without(raw: RawLayer, name: str, dropped: set[int], target: Path,
                   record: SegmentRecord | None) -> SegmentRecord:
    """Copy segment ``name`` to ``target`` without the lines ``dropped`` (numbered from 1); its record."""
    digest, count, first, last = hashlib.sha256(), 0, "", ""
    with open(raw.segment_path(name), "rb") as source, open(target, "wb") as out:
        for number, line in enumerate(source, 1):
            if number in dropped or not line.strip():
                continue
            out.write(line)
            digest.update(line)
            ts = raw._event_of(name, number, line).get("ts")
            if isinstance(ts, str):
                first, last, count = earliest(first or ts, ts), latest(last or ts, ts), count + 1
            else:
                count += 1
        out.flush()
        os.fsync(out.fileno())
    created = record.created_at if record is not None else ""
    if not count:  # every event erased: the segment keeps its number, its times are its ingest's
        first = last = created
    return SegmentRecord(name, digest.hexdigest(), count, first, last, created)


# --- .memdream/ ----------------------------------------------------------------------------------------------

def remember_forgotten(memory: Memory, erasure: Erasure, events: list[tuple[str, str]]) -> None:
    """What ingest must leave out from now on: the session (--session), else each erased event."""
    forgotten = Forgotten.load(memory.paths.state)
    if erasure.session is not None:
        forgotten.forget_session(erasure.session)
    for session, event_id in events:
        if session != erasure.session:
            forgotten.forget_event(session, event_id)
    forgotten.save(memory.paths.state)


def scrub_state(memory: Memory, erasure: Erasure) -> int:
    """Take what is erased out of ``.memdream/``; how many files changed or went. Caches and dream's
    statistics are removed (rebuilt from what is left when next needed); the logs lose their lines that
    name an erased card, event or session; ingest's salience state loses the session and the name."""
    state = memory.paths.state
    changed = 0
    cache = state / "cache"
    if cache.is_dir():
        shutil.rmtree(cache)
        changed += 1
    if dream_state_path(state).exists():
        dream_state_path(state).unlink()
        changed += 1
    for name in _LOGS:
        changed += _scrub_log(state / name, erasure)
    changed += _scrub_salience(state / _SALIENCE, erasure)
    return changed


def _scrub_log(path: Path, erasure: Erasure) -> int:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return 0
    kept = [line for line in text.splitlines(keepends=True) if erasure.clean_state_line(line) is not None]
    if len(kept) == len(text.splitlines()):
        return 0
    yamlio.write_atomic(path, "".join(kept))
    return 1


def _scrub_salience(path: Path, erasure: Erasure) -> int:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return 0
    cleaned = erasure.redact_all(data)
    if erasure.session is not None and isinstance(cleaned.get("sessions"), dict):
        cleaned["sessions"].pop(erasure.session, None)
    if cleaned == data:
        return 0
    yamlio.write_atomic(path, json.dumps(cleaned, sort_keys=True))
    return 1
