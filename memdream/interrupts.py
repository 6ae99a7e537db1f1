"""Ctrl-C on the command line: one line, ``memdream: interrupted``, and exit 130 at any moment.

Starting takes ~0.2 s (typer, building the command); a KeyboardInterrupt there would surface as a
traceback from whatever module was loading, far from any handler. Nothing is under way yet, so the
first handler writes the line and exits at once; memdream/__init__.py installs it, the first of
memdream's modules that the ``memdream`` script and ``python -m memdream`` run.

While a command runs, Ctrl-C raises KeyboardInterrupt as usual, so that locks, temporary files and
journals are released by their ``finally`` blocks before the CLI's error handler prints the same line;
except inside Python's import machinery (commands import their heavy modules when they need them),
where a KeyboardInterrupt is swallowed ("Exception ignored in ...", with a traceback) or turned into
another error: there the process exits at once too (an import holds none of memdream's files; dream
and ingest are safe against a kill at any point). Once the command is done, Ctrl-C is ignored: what
is left is the interpreter's shutdown, and the command's own exit code is the right one.

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
_IMPORT_MACHINERY = "<frozen importlib._bootstrap"  # and _bootstrap_external


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


def raise_unless_importing(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C while a command runs: KeyboardInterrupt, so that cleanup runs; inside an import, exit at once."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_IMPORT_MACHINERY):
            exit_at_once(signum, frame)
        frame = frame.f_back
    raise KeyboardInterrupt


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
    """While a command runs: Ctrl-C raises KeyboardInterrupt (see :func:`raise_unless_importing`); then it
    is ignored (the command is done: rendering and shutdown are left)."""
    if signal.getsignal(signal.SIGINT) is not exit_at_once:  # not the command line: Ctrl-C is the host's
        yield
        return
    signal.signal(signal.SIGINT, raise_unless_importing)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupted(error: BaseException) -> bool:
    """Whether ``error`` is a KeyboardInterrupt turned into another error on its way up (a class body's
    ``__set_name__``, a generator closing): its cause or context chain holds one."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False
