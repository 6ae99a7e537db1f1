"""Command groups (`memdream hooks install`, `memdream schedule status`): a typer sub-app whose
commands convert their options like every other command (see memdream.cli.base.MemdreamCommand)."""

from __future__ import annotations

from typing import Any

import typer

from memdream.cli.base import MemdreamCommand


def command_group(name: str, help_text: str) -> typer.Typer:
    """A sub-app for the group ``name``; its commands are declared with ``@group.command("verb")``
    and get memdream's option handling without saying so."""
    group = typer.Typer(name=name, help=help_text, no_args_is_help=True, add_completion=False,
                        rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]})
    plain = group.command

    def command(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", MemdreamCommand)
        return plain(*args, **kwargs)

    group.command = command  # type: ignore[method-assign]
    return group
