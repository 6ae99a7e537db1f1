"""The hook spool: agents' hooks append a line and return at once; `ingest --spool` does the work.

`memdream enqueue --from-hook` runs inside a Claude Code hook (SessionEnd, PreCompact) and must
return within 100 ms, so it imports nothing heavy and never reads the transcript.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# No `typing` or `datetime` here: together they are ~7 ms of the hook's 100 ms budget.

SPOOL_FILE = "spool.jsonl"
PROCESSING_SUFFIX = ".processing"


def spool_path(state_dir: Path) -> Path:
    return state_dir / SPOOL_FILE


def _parse_args(args: list[str]) -> Path | None:
    memory: Path | None = None
    iterator = iter(args)
    for arg in iterator:
        if arg in ("--memory", "-m"):
            memory = Path(next(iterator, ""))
        elif arg.startswith("--memory="):
            memory = Path(arg.split("=", 1)[1])
        elif arg != "--from-hook":
            raise ValueError(f"unknown argument {arg!r}")
    return memory


def enqueue_main(args: list[str]) -> int:
    """Entry for the fast path; returns the exit code. Errors are one line on stderr."""
    try:
        explicit = _parse_args(args)
        payload = json.loads(sys.stdin.buffer.read() or b"null")
        if not isinstance(payload, dict) or not isinstance(payload.get("transcript_path"), str):
            raise ValueError("stdin is not a hook payload (a JSON object with transcript_path)")
        from memdream.memory.locate import find_memory_root

        root = find_memory_root(explicit)
        enqueue(root / ".memdream", payload)
    except Exception as error:  # noqa: BLE001 - a hook must never crash the agent with a traceback
        sys.stderr.write(f"memdream: enqueue: {' '.join(str(error).split())}\n")
        return 1
    return 0


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
    from memdream import fastjson  # not at the top: the hook's path must stay light

    seen: dict[str, None] = {}
    for path in claimed:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:  # fastjson: a hostile payload nested too deeply is refused, not a RecursionError
                transcript = fastjson.loads(line)["payload"]["transcript_path"]
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a crash: the hook will fire again at the next session end
            seen[os.path.expanduser(transcript)] = None
    present = [path for path in seen if Path(path).is_file()]
    missing = [path for path in seen if not Path(path).is_file()]
    return present, missing


def release(claimed: list[Path]) -> None:
    for path in claimed:
        path.unlink(missing_ok=True)
