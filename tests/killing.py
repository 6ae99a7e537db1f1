"""kill -9 a memdream writer at its most fragile point: between writing its files and committing them.

The writers (dream, rollback, forget) pause there when ``MEMDREAM_TEST_PAUSE_BEFORE_COMMIT`` names a
marker file (memdream.memory.journal.pause_for_tests): the test waits for the marker, then kills.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

PAUSE_VARIABLE = "MEMDREAM_TEST_PAUSE_BEFORE_COMMIT"


def kill_before_commit(args: list[str], marker: Path, timeout: float = 60.0) -> None:
    """Run ``memdream ARGS`` and kill -9 it once it has written its files and not yet committed them."""
    proc = subprocess.Popen([sys.executable, "-m", "memdream", *args], env={**os.environ, PAUSE_VARIABLE: str(marker)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    try:
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, f"memdream {args[0]} never reached its commit"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
