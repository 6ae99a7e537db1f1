"""memdream init."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import DataFormat, FormatOption
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.commands.init import InitResult


def init(
    path: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Argument(help="Folder to create the memory in (created if missing). Default: the tenant's folder "
                            "with --tenant or $MEMDREAM_TENANT, else the current folder.",
                       metavar="PATH", show_default=False),
    ] = None,
    in_repo: Annotated[
        bool,
        typer.Option("--in-repo", help="Make the memory a folder of the enclosing project repository (no "
                                       "repository of its own): memdream stages its files there and commits "
                                       "only with --commit. The raw layer stays ignored."),
    ] = False,
    commit: Annotated[
        bool, typer.Option("--commit", help="With --in-repo: commit the new memory's files (only them).")
    ] = False,
    tenant: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--tenant", metavar="NAME", show_default=False,
                     help="Create tenant NAME's memory: <root>/NAME, its own git repository, with 'tenant: NAME' in "
                          "its memdream.yaml (root: $MEMDREAM_ROOT, else root: in ~/.config/memdream/config.yaml). "
                          "Default: $MEMDREAM_TENANT when no PATH is given."),
    ] = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Create a memory: folders, default memdream.yaml, empty plan, git repository and a first commit.

    On a folder that already is a memory, say so and change nothing.
    """
    from memdream.commands.init import init_memory, init_tenant
    from memdream.errors import UsageError
    from memdream.memory.locate import TENANT_ENV, requested_tenant

    if path is not None and tenant is not None:
        raise UsageError("give PATH or --tenant, not both")
    if in_repo and tenant is not None:
        raise UsageError("a tenant's memory is its own git repository: leave out --in-repo")
    chosen = requested_tenant(tenant) if path is None and not in_repo else None
    if chosen is not None:
        emit(init_tenant(chosen, "--tenant" if tenant is not None else TENANT_ENV), output, _render)
        return
    emit(init_memory(path or Path("."), in_repo=in_repo, commit=commit), output, _render)


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
