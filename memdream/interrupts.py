"""Ctrl-C on the command line: one line, ``memdream: interrupted``, and exit 130 at any moment.

Starting takes ~0.2 s (typer, building the command); a KeyboardInterrupt there would surface as a
traceback from whatever module was loading, far from any handler. Nothing is under way yet, so the
first handler writes the line and exits at once; memdream/__init__.py installs it, the first of
memdream's modules that the ``memdream`` script and ``python -m memdream`` run. While a command runs,
Ctrl-C raises KeyboardInterrupt as usual, so that locks, temporary files and journals are released
by their ``finally`` blocks before the CLI's error handler prints the same line.

Only the interpreter's own start, before memdream's first line, is out of reach.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from memdream.errors import EXIT_INTERRUPTED

INTERRUPTED_LINE = b"memdream: interrupted\n"
# Tests start memdream and interrupt it the moment this file appears (the handler is in place).
STARTED_MARKER_ENV = "MEMDREAM_TEST_STARTED_MARKER"


def launched_as_command_line() -> bool:
    """Whether this process is memdream's command line: the ``memdream`` script or ``python -m memdream``
    (not an import by a test, a library user or an MCP host, whose Ctrl-C is theirs)."""
    argv = getattr(sys, "orig_argv", sys.argv)
    launched_by_module = any(argv[index:index + 2] == ["-m", "memdream"] for index in range(len(argv)))
    return launched_by_module or os.path.basename(sys.argv[0]) == "memdream"


def exit_at_once(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C while nothing is under way: the line, and exit 130 without unwinding."""
    os.write(2, INTERRUPTED_LINE)
    os._exit(EXIT_INTERRUPTED)


def install_at_start() -> None:
    """The start-up handler, in memdream's command line only."""
    if not launched_as_command_line():
        return
    signal.signal(signal.SIGINT, exit_at_once)
    marker = os.environ.get(STARTED_MARKER_ENV)
    if marker:
        open(marker, "a").close()


@contextmanager
def raising_keyboard_interrupt() -> Iterator[None]:
    """While a command runs: Ctrl-C raises KeyboardInterrupt, so that cleanup runs; then back to exiting
    at once (rendering is done, the process is only closing)."""
    if signal.getsignal(signal.SIGINT) is not exit_at_once:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, exit_at_once)
