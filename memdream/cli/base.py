"""What every command module builds on, without importing the command line's entry point: the
command and group classes (memdream's option conversion, see memdream.cli.params), the one error
handler (:class:`MemdreamGroup`) and :func:`debug`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from memdream.cli.params import lighten
from memdream.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_USAGE, known_error

DEBUG_ENV = "MEMDREAM_DEBUG"


def debug() -> bool:
    """MEMDREAM_DEBUG=1: errors raise with their traceback instead of one line."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def fail(message: str, code: int) -> NoReturn:
    sys.stdout.flush()
    sys.stderr.write(f"memdream: {' '.join(message.split())}\n")
    sys.stderr.flush()
    raise SystemExit(code)


def _is_control_flow(error: BaseException) -> bool:
    """Exit/abort/usage signals of typer (and the click it builds on) pass through untouched."""
    if isinstance(error, (typer.Exit, typer.Abort)):
        return True
    return type(error).__module__.split(".")[0] in ("typer", "click")


def _usage_line(error: Any) -> str:
    """A click usage error as one line that names the command and where its help is."""
    context = getattr(error, "ctx", None)
    where = f" (see '{context.command_path} --help')" if context is not None else ""
    return f"{error.format_message()}{where}"


class MemdreamCommand(TyperCommand):
    """A typer command whose simple option values (str, int, Path, choices, lists of them) are
    converted without building a pydantic TypeAdapter each: that is ~100 ms of import per process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            lighten(param)

    def get_help_option(self, ctx: Any) -> Any:
        return lighten(super().get_help_option(ctx))


class MemdreamGroup(TyperGroup):
    """The one error handler: memdream's exceptions and click's usage errors become one line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:  # --version
            lighten(param)

    def get_help_option(self, ctx: Any) -> Any:
        return lighten(super().get_help_option(ctx))

    def invoke(self, ctx: Any) -> Any:
        from memdream.interrupts import interrupted, raising_keyboard_interrupt

        try:
            with raising_keyboard_interrupt():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:  # `memdream log | head`: the reader has what it wanted
            _quiet_stdout()
            raise SystemExit(0) from None
        except Exception as error:  # memdream's errors, disk full, read-only; a bug is one line too
            if debug() or _is_control_flow(error):
                raise
            if interrupted(error):
                fail("interrupted", EXIT_INTERRUPTED)
            known = known_error(error)
            if known is None:
                fail(f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for a traceback)",
                     EXIT_FINDINGS)
            fail(str(known), known.exit_code)
        return None

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except NoArgsIsHelpError as error:  # bare `memdream`: the overview, as --help gives it
            error.show()
            code = 0
        except UsageError as error:
            fail(_usage_line(error), EXIT_USAGE)
        except ClickException as error:
            fail(error.format_message(), error.exit_code)
        except typer.Abort:
            fail("interrupted", EXIT_INTERRUPTED)
        if not standalone_mode:
            return code
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()
        raise SystemExit(code if isinstance(code, int) else 0)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: Python's flush at exit would raise on the closed pipe again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
