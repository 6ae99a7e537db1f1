"""The hook spool: agents' hooks append a line and return at once; `ingest --spool` does the work.

`memdream enqueue --from-hook` runs inside a Claude Code hook (SessionEnd, PreCompact) and must
return at once, so this module imports nothing heavy and never reads the transcript.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

# No `typing` or `datetime` here: together they are ~7 ms of the hook's budget.

SPOOL_FILE = "spool.jsonl"
PROCESSING_SUFFIX = ".processing"


def spool_path(state_dir: Path) -> Path:
    return state_dir / SPOOL_FILE


def enqueue_payload(raw: bytes, explicit: Path | None, tenant: str | None = None) -> None:
    """Queue the hook payload ``raw`` (stdin's bytes) in the memory at ``explicit``, of ``tenant``, or found.

    A payload that is not a hook's is InvalidInput (one line, exit 1, from the CLI's one handler).
    """
    from memdream.errors import InvalidInput
    from memdream.memory.locate import find_memory_root

    try:
        payload = json.loads(raw or b"null")
    except (ValueError, RecursionError) as error:  # RecursionError: a hostile payload nested too deeply
        raise InvalidInput(f"enqueue: stdin is not JSON: {error}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("transcript_path"), str):
        raise InvalidInput("enqueue: stdin is not a hook payload (a JSON object with transcript_path)")
    enqueue(find_memory_root(explicit, tenant=tenant) / ".memdream", payload)


def enqueue(state_dir: Path, payload: dict[str, object]) -> None:
    """Append one hook payload; O_APPEND keeps concurrent hooks' lines whole."""
    state_dir.mkdir(parents=True, exist_ok=True)
    received = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = json.dumps({"received_at": received, "payload": payload}, ensure_ascii=False) + "\n"
    fd = os.open(spool_path(state_dir), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def claim(state_dir: Path) -> list[Path]:
    """Move the spool aside (atomically) and return every claimed file, older leftovers first."""
    spool = spool_path(state_dir)
    if spool.exists():
        os.replace(spool, state_dir / f"{SPOOL_FILE}.{os.getpid()}{PROCESSING_SUFFIX}")
    return sorted(state_dir.glob(f"{SPOOL_FILE}.*{PROCESSING_SUFFIX}"), key=lambda path: path.stat().st_mtime)


def transcripts(claimed: list[Path]) -> tuple[list[str], list[str]]:
    """Distinct transcript paths in spool order, and those that no longer exist."""
    from memdream import jsonio  # not at the top: the hook's path must stay light

    seen: dict[str, None] = {}
    for path in claimed:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:  # jsonio: a hostile payload nested too deeply is refused, not a RecursionError
                transcript = jsonio.loads(line)["payload"]["transcript_path"]
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash: the hook will fire again at the next session end
            seen[os.path.expanduser(transcript)] = None
    present = [path for path in seen if Path(path).is_file()]
    missing = [path for path in seen if not Path(path).is_file()]
    return present, missing


def release(claimed: list[Path]) -> None:
    for path in claimed:
        path.unlink(missing_ok=True)
