"""memdream init."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memdream.cli.options import DataFormat, FormatOption
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.commands.init import InitResult


def init(
    path: Annotated[
        Path, typer.Argument(help="Folder to create the memory in (created if missing).", metavar="PATH")
    ] = Path("."),
    in_repo: Annotated[
        bool,
        typer.Option("--in-repo", help="Make the memory a folder of the enclosing project repository (no "
                                       "repository of its own): memdream stages its files there and commits "
                                       "only with --commit. The raw layer stays ignored."),
    ] = False,
    commit: Annotated[
        bool, typer.Option("--commit", help="With --in-repo: commit the new memory's files (only them).")
    ] = False,
    output: FormatOption = DataFormat.text,
) -> None:
    """Create a memory: folders, default memdream.yaml, empty plan, git repository and a first commit.

    On a folder that already is a memory, say so and change nothing.
    """
    from memdream.commands.init import init_memory

    emit(init_memory(path, in_repo=in_repo, commit=commit), output, _render)


def _render(result: InitResult) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    if not result.created:
        console.print(f"{result.root} is already a memory; nothing changed.")
        return
    if result.in_project:
        done = f"committed {str(result.commit)[:10]}" if result.commit else "staged, not committed"
        console.print(f"Created memory at {result.root} inside the repository {result.in_project} ({done}).")
        console.print("memdream stages what it writes there; `git commit` it, or pass --commit to dream.")
    else:
        console.print(f"Created memory at {result.root} (commit {str(result.commit)[:10]}).")
    if result.inside:
        console.print(f"Note: it is inside the git repository {result.inside}, which will see it as an embedded "
                      "repository; `memdream init --in-repo` makes the memory a folder that repository tracks.")
    console.print("Next: `memdream ingest <logs>`, then `memdream dream`.")
