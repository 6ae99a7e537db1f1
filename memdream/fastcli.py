"""What the argparse fast paths share (memdream.recall.fastpath, memdream.ingest.fastpath): the
parser and the error handling of the typer CLI (memdream.cli), without importing typer."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

DEBUG_ENV = "MEMDREAM_DEBUG"


def debug() -> bool:
    """MEMDREAM_DEBUG=1: errors raise with their traceback instead of one line."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def fail(message: str, code: int) -> NoReturn:
    sys.stderr.write(f"memdream: {' '.join(message.split())}\n")
    sys.stderr.flush()
    raise SystemExit(code)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with memdream's one-line usage errors (exit 2), reading option values as click
    does: ``--session -night`` gives the option the value "-night" (argparse alone would take it
    for an option)."""

    def error(self, message: str) -> NoReturn:
        fail(message, 2)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        return super().parse_args(self._attached(list(sys.argv[1:] if args is None else args)), namespace)

    def _attached(self, args: list[str]) -> list[str]:
        takes_value = {opt for action in self._actions if action.nargs is None and action.option_strings
                       for opt in action.option_strings}
        out: list[str] = []
        index = 0
        while index < len(args):
            token = args[index]
            if token == "--":
                out.extend(args[index:])
                break
            if token in takes_value and index + 1 < len(args):
                value = args[index + 1]
                out.append(f"{token}={value}" if token.startswith("--") else f"{token}{value}")
                index += 2
                continue
            out.append(token)
            index += 1
        return out


def guarded(command: Callable[[], None]) -> int:
    """Run ``command`` as the typer CLI runs commands: memdream's errors and bugs become one line
    on stderr and an exit code (a traceback with MEMDREAM_DEBUG=1)."""
    from memdream.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, known_error

    try:
        command()
    except KeyboardInterrupt:
        fail("interrupted", EXIT_INTERRUPTED)
    except Exception as error:  # memdream's errors, disk full, read-only: one line; a bug: one line too
        if debug():
            raise
        known = known_error(error)
        if known is None:
            fail(f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for a traceback)",
                 EXIT_FINDINGS)
        fail(str(known), known.exit_code)
    sys.stdout.flush()
    return 0
