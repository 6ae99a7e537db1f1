"""memdream init."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from memdream.cli.options import DataFormat, FormatOption


def init(
    path: Annotated[
        Path, typer.Argument(help="Folder to create the memory in (created if missing).", metavar="PATH")
    ] = Path("."),
    output: FormatOption = DataFormat.text,
) -> None:
    """Create a memory: folders, default memdream.yaml, empty plan, git repository and a first commit.

    On a folder that already is a memory, say so and change nothing.
    """
    from memdream.memory.create import init_memory
    from memdream.render import print_json, stdout_console

    result = init_memory(path)
    if output is DataFormat.json:
        print_json({"root": str(result.root), "created": result.created, "commit": result.commit})
        return
    console = stdout_console()
    if result.created:
        console.print(f"Created memory at {result.root} (commit {str(result.commit)[:10]}).")
        console.print("Next: `memdream ingest <logs>`, then `memdream dream`.")
    else:
        console.print(f"{result.root} is already a memory; nothing changed.")
