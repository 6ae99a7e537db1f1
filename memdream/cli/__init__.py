"""The command line (the only one): parses arguments, calls one core function, renders its result.

Every failure goes through :class:`MemdreamGroup`: one line on stderr and an exit code from
memdream.errors (0 ok, 1 findings or user error, 2 usage, 75 busy, 130 interrupted); a traceback
only with MEMDREAM_DEBUG=1. Start-up matters (recall runs on every agent turn, enqueue inside a
hook): command modules import their heavy modules inside the command, and :class:`MemdreamCommand`
converts option values without pydantic (see memdream.cli.params).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperCommand, TyperGroup

from memdream import __version__
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memdream {__version__}")
        raise typer.Exit()


def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."),
    ] = False,
) -> None:
    """Long-term memory for AI agents: a git folder of verified cards, built offline from agent logs.

    Environment: MEMDREAM_MEMORY (memory folder), MEMDREAM_NOW (ISO 8601 clock override),
    MEMDREAM_LOCK_WAIT (seconds a writer waits for another, then exits 75), MEMDREAM_DEBUG=1
    (tracebacks), NO_COLOR (plain output).
    """


# Command name -> (module under memdream.cli, function, hidden): one module per command group.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "init": ("init_cmd", "init", False),
    "ingest": ("ingest_cmd", "ingest", False),
    "enqueue": ("ingest_cmd", "enqueue", False),
    "dream": ("dream_cmd", "dream", False),
    "lint": ("lint_cmd", "lint", False),
    "cards": ("cards_cmd", "cards", False),
    "show": ("cards_cmd", "show", False),
    "recall": ("recall_cmd", "recall", False),
    "log": ("history_cmd", "log", False),
    "diff": ("history_cmd", "diff", False),
    "audit": ("audit_cmd", "audit", False),
    "rollback": ("rollback_cmd", "rollback", False),
    "confirm": ("verdict_cmd", "confirm", False),
    "reject": ("verdict_cmd", "reject", False),
    "correct": ("verdict_cmd", "correct", False),
    "review": ("review_cmd", "review", False),
    "remember": ("remember_cmd", "remember", False),
    "context": ("context_cmd", "context", False),
    "hooks": ("hooks_cmd", "hooks", False),
    "schedule": ("schedule_cmd", "schedule", False),
    "mcp": ("mcp_cmd", "mcp", False),
    "textconv": ("textconv_cmd", "textconv", True),
}


def build(only: str | None = None) -> typer.Typer:
    """The typer app with every command, or with ``only`` that one: typer turns each command's
    signature into click objects before running any (~3-4 ms a command), and a hook or an agent's
    turn runs one. The commands, their options and the error handling are the same objects."""
    from importlib import import_module

    made = typer.Typer(
        cls=MemdreamGroup,
        name="memdream",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help: rich help costs ~150 ms of start-up
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    made.callback()(_root)
    for name, (module, function, hidden) in COMMANDS.items():
        if only in (None, name):
            command = getattr(import_module(f"memdream.cli.{module}"), function)
            if isinstance(command, typer.Typer):  # a command group (`hooks install`, `schedule status`)
                made.add_typer(command, name=name, hidden=hidden)
            else:
                made.command(name, cls=MemdreamCommand, hidden=hidden)(command)
    return made


def __getattr__(name: str) -> Any:
    """``memdream.cli.app``, the whole command line (tests, documentation tools), built on first use:
    a process runs one command and builds only that one (see :func:`main`)."""
    if name == "app":
        made = build()
        globals()["app"] = made
        return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    """Run the command line: the installed `memdream` script and `python -m memdream`."""
    args = sys.argv[1:] if argv is None else argv
    named = next((arg for arg in args if not arg.startswith("-")), None)  # the root takes no values
    (build(named) if named in COMMANDS else build())(args=args, prog_name="memdream")
