"""memdream context: the plan and the project's most useful cards, for a new session (SessionStart hook),
for a file agents read (--export CLAUDE.md|AGENTS.md), or on stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.integrations.export import ExportResult
    from memdream.integrations.startup import StartupContext

DEFAULT_BUDGET = 2000  # memdream.integrations.startup.DEFAULT_BUDGET (not imported: start-up time)


def context(
    session_start: Annotated[bool, typer.Option(
        "--session-start",
        help="Be a Claude Code SessionStart hook: read the hook's JSON on stdin, print the hook's JSON with "
             "additionalContext; nothing when the memory knows nothing of the session's project. Never fails "
             "the session: on any error prints nothing, says why on stderr, exits 0.")] = False,
    export: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--export", metavar="FILE", show_default=False,
                     help="Write the block between memdream's markers in FILE (CLAUDE.md, AGENTS.md), leaving the "
                          "rest of it untouched; created when missing."),
    ] = None,
    scope: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--scope", metavar="PROJECT", show_default=False,
                     help="The project whose plan and cards to show (as recall's --scope). Default: the project "
                          "of the exported file's folder (of the current folder without --export; of the "
                          "session's with --session-start)."),
    ] = None,
    project: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--project", "-p", metavar="PROJECT", show_default=False, hidden=True,
                     help="The old name of --scope, still read (hooks and scripts written before)."),
    ] = None,
    budget: Annotated[int, typer.Option("--budget", "-b", metavar="BYTES",
                                        help="Most bytes (UTF-8) of context, markers and title included.")
                      ] = DEFAULT_BUDGET,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """The plan and the project's most useful cards within --budget bytes: the context a session starts with.

    The plan and the user's standing instructions of the project come first (as recall shows them), then
    the project's cards by recency, use and confidence, then global ones; never another project's.
    `--export FILE` is idempotent: the same memory leaves the file as it is. Markers that do not pair up
    are an error (exit 1) and the file is left untouched.
    """
    if session_start:
        _session_start(memory, tenant, budget)
        return
    scope = _scope(scope, project)
    root = memory_root(memory, tenant)
    if export is not None:
        _export(export, root, budget, scope, output)
    else:
        _print(root, budget, scope, output)


def _scope(scope: str | None, project: str | None) -> str | None:
    """--scope, or --project (its old name) with a one-line notice; an empty one is a usage error."""
    from memdream.errors import UsageError

    if project is not None:
        if scope is not None:
            raise UsageError("--project is the old name of --scope: give --scope alone")
        sys.stderr.write("memdream: --project is deprecated in context: use --scope instead\n")
        scope = project
    if scope is not None and not scope.strip():
        raise UsageError("--scope must name a project, not be empty")
    return scope


def _session_start(memory: Path | None, tenant: str | None, budget: int) -> None:
    """The hook: its JSON on stdout, or nothing (the error on stderr) and exit 0 either way."""
    from memdream.cli.base import debug

    if sys.stdin.isatty():  # run by hand: a hook's JSON would never come
        sys.stderr.write("memdream: context --session-start reads a SessionStart hook's JSON on stdin\n")
        return
    try:
        from memdream.integrations.startup import session_start

        result = session_start(sys.stdin.buffer.read(), memory, budget, tenant=tenant)
    except Exception as error:  # noqa: BLE001 - a broken or missing memory must never break the session
        if debug():
            raise
        sys.stderr.write(f"memdream: context --session-start: {' '.join(str(error).split())}\n")
        return
    if result is None:
        return  # nothing learned of this project: no context is better than a note saying so
    import json

    sys.stdout.write(json.dumps(result.hook_output(), ensure_ascii=False) + "\n")


def _export(path: Path, root: Path, budget: int, project: str | None, output: DataFormat) -> None:
    from memdream.integrations.export import export_to

    emit(export_to(path, root, budget, project), output, _render_export)


def _render_export(result: ExportResult) -> None:
    done = "created" if result.created else ("updated" if result.changed else "unchanged")
    count = sum(1 for item in result.context.items if item.source == "card")
    scope = f" for {result.context.project}" if result.context.project else ""
    sys.stdout.write(f"{result.path}: {done} (memdream block{scope}: {count} card(s), "
                     f"{len(result.block.encode('utf-8'))} bytes)\n")


def _print(root: Path, budget: int, project: str | None, output: DataFormat) -> None:
    import os

    from memdream.integrations.export import managed_block

    emit(managed_block(root, budget, project, Path(os.getcwd())), output, _render_block, data=_block_data)


def _render_block(made: tuple[str, StartupContext]) -> None:
    sys.stdout.write(made[0] + "\n")


def _block_data(made: tuple[str, StartupContext]) -> dict[str, Any]:
    block, context = made
    return {**context.to_dict(), "block_bytes": len(block.encode("utf-8")), "block": block}
