"""The command line: parses arguments, calls one core function, renders its result.

Every failure is one line on stderr and an exit code from memdream.errors; a traceback
only with MEMDREAM_DEBUG=1.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from memdream import __version__
from memdream.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, known_error
from memdream.fastcli import DEBUG_ENV
from memdream.fastcli import debug as _debug
from memdream.fastcli import fail as _fail


def _is_control_flow(error: BaseException) -> bool:
    """Exit/abort/usage signals of typer (and the click it builds on) pass through untouched."""
    if isinstance(error, (typer.Exit, typer.Abort)):
        return True
    return type(error).__module__.split(".")[0] in ("typer", "click")


class MemdreamGroup(TyperGroup):
    """Maps memdream's exceptions to one line and an exit code, in one place."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _fail("interrupted", EXIT_INTERRUPTED)
        except Exception as error:  # memdream's errors, disk full, read-only; a bug is one line too
            if _debug() or _is_control_flow(error):
                raise
            known = known_error(error)
            if known is None:
                _fail(f"internal error: {type(error).__name__}: {error} (set {DEBUG_ENV}=1 for a traceback)",
                      EXIT_FINDINGS)
            _fail(str(known), known.exit_code)
        return None


app = typer.Typer(
    cls=MemdreamGroup,
    name="memdream",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich help costs ~150 ms of start-up
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"memdream {__version__}")
        raise typer.Exit()


@app.callback()
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


def _register() -> None:
    from memdream.cli import cards_cmd, dream_cmd, ingest_cmd, init_cmd, lint_cmd, recall_cmd, textconv_cmd

    app.command("init")(init_cmd.init)
    app.command("ingest")(ingest_cmd.ingest)
    app.command("enqueue")(ingest_cmd.enqueue)
    app.command("dream")(dream_cmd.dream)
    app.command("lint")(lint_cmd.lint)
    app.command("cards")(cards_cmd.cards)
    app.command("show")(cards_cmd.show)
    app.command("recall")(recall_cmd.recall)
    app.command("textconv", hidden=True)(textconv_cmd.textconv)


_register()


def main() -> None:
    """Run the CLI (the installed script goes through memdream.entry, which adds hook fast paths)."""
    app(prog_name="memdream")
