"""One writer per memory: an advisory lock on .memdream/lock, released when the process dies."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memdream.errors import Busy


@contextmanager
def writer_lock(state_dir: Path, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold the memory's writer lock; wait up to ``wait_seconds``, then raise :class:`Busy`.

    flock is tied to the open file, so a kill -9 frees it: no stale lock files to clean up.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "lock"
    handle = open(path, "a+", encoding="utf-8")
    try:
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = path.read_text(encoding="utf-8").strip() or "another process"
                    raise Busy(f"memory is busy: {holder} holds {path} (try again later)") from None
                time.sleep(0.1)
        handle.seek(0)
        handle.truncate()
        handle.write(f"memdream pid {os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()
