"""The command line (the only one): parses arguments, calls one core function, renders its result.

Every failure goes through :class:`memdream.cli.base.MemdreamGroup`: one line on stderr and an exit
code from memdream.errors (0 ok, 1 findings or user error, 2 usage, 75 busy, 130 interrupted); a
traceback only with MEMDREAM_DEBUG=1. Start-up matters (recall runs on every agent turn, enqueue inside
a hook): command modules import their heavy modules inside the command, and the command class converts
option values without pydantic (see memdream.cli.params). Command modules never import this module nor
one another: what they share is in memdream.cli.base, groups, options and output.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from memdream import __version__
from memdream.cli.base import MemdreamCommand, MemdreamGroup


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

    Environment: MEMDREAM_MEMORY (memory folder), MEMDREAM_TENANT and MEMDREAM_ROOT (a tenant's memory,
    <root>/<tenant>), MEMDREAM_NOW (ISO 8601 clock override),
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
    "stats": ("stats_cmd", "stats", False),
    "export": ("export_cmd", "export", False),
    "forget": ("forget_cmd", "forget", False),
    "remember": ("remember_cmd", "remember", False),
    "context": ("context_cmd", "context", False),
    "hooks": ("hooks_cmd", "hooks", False),
    "schedule": ("schedule_cmd", "schedule", False),
    "mcp": ("mcp_cmd", "mcp", False),
    "textconv": ("textconv_cmd", "textconv", True),
}


def build(only: str | None = None, overview: bool = False) -> typer.Typer:
    """The typer app with every command, or with ``only`` that one: typer turns each command's
    signature into click objects before running any (~3-4 ms a command), and a hook or an agent's
    turn runs one. The commands, their options and the error handling are the same objects.
    ``overview``: every command as a name and its help's first paragraph only (memdream.cli.overview),
    for `memdream` and `memdream --help`, which run none of them."""
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
    if overview:
        from memdream.cli.overview import FIRST_PARAGRAPHS, _nothing

        for name, paragraph in FIRST_PARAGRAPHS.items():  # in the full build's order: groups come last
            made.command(name, help=paragraph, hidden=COMMANDS[name][2])(_nothing)
        return made
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
    app = build(named) if named in COMMANDS else build(overview=named is None)
    app(args=args, prog_name="memdream")
