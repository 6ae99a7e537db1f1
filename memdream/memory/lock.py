"""One writer per memory: an advisory lock on .memdream/lock, released when the process dies."""

from __future__ import annotations

import fcntl
import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memdream.errors import Busy, UsageError, from_os_error

if TYPE_CHECKING:
    from memdream.gitops import IndexLock

LOCK_WAIT_ENV = "MEMDREAM_LOCK_WAIT"
# How long a writer run from cron waits for another writer: soon exit 75, and run next time.
WRITER_WAIT_SECONDS = 10.0
# State folders whose writer lock this process holds: while it does, no other memdream writer runs
# on that memory, so git's lock files there can only be a person's git or left by a killed run.
_HELD: set[Path] = set()


def holds_writer_lock(state_dir: Path) -> bool:
    """Whether this process holds the writer lock of the memory whose state folder is ``state_dir``."""
    return Path(os.path.abspath(state_dir)) in _HELD


def lock_wait_seconds(default: float) -> float:
    """How long a writer waits for the lock: ``MEMDREAM_LOCK_WAIT`` seconds when set, else ``default``."""
    raw = os.environ.get(LOCK_WAIT_ENV, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{LOCK_WAIT_ENV}={raw!r}: expected a number of seconds (0 or more)")
    return value


def index_lock(state_dir: Path) -> IndexLock:
    """How this process's git writes in the memory whose state folder is ``state_dir`` treat an
    index.lock another git left: waited for ``MEMDREAM_LOCK_WAIT`` seconds (10 by default), and
    removed once stale while this process holds the memory's writer lock."""
    from memdream.gitops import INDEX_LOCK_WAIT, IndexLock

    return IndexLock(lock_wait_seconds(INDEX_LOCK_WAIT), holds_writer_lock(state_dir))


@contextmanager
def writer_lock(state_dir: Path, wait_seconds: float = 0.0) -> Iterator[None]:
    """Hold the memory's writer lock; wait up to ``wait_seconds``, then raise :class:`Busy`.

    flock is tied to the open file, so a kill -9 frees it: no stale lock files to clean up.
    """
    path = state_dir / "lock"
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        handle = open(path, "a+", encoding="utf-8")
    except OSError as error:  # a read-only memory (or a full disk): say so before anything else
        known = from_os_error(error, memory_write=True)
        if known is None:
            raise
        raise known from None
    held = Path(os.path.abspath(state_dir))
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
        _HELD.add(held)
        yield
    finally:
        _HELD.discard(held)
        handle.close()
