"""memdream mcp: serve a memory to an agent over the Model Context Protocol (stdio)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memdream.cli.options import MemoryOption, TenantOption, memory_root


def mcp(
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    scope: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--scope", metavar="PROJECT", show_default=False,
                     help="The project the agent's notes belong to and whose plan and instructions recall shows. "
                          "Default: the project of the folder the server runs in."),
    ] = None,
    session: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--session", metavar="NAME", show_default=False,
                     help="The session the agent's notes are stored under. Default: mcp-<date>-<random>, one per "
                          "server."),
    ] = None,
    lock_wait: Annotated[
        float,
        typer.Option("--lock-wait", metavar="SECONDS", min=0,
                     help="How long a write waits for a running dream or ingest before the call fails as busy."),
    ] = 5.0,
) -> None:
    """Serve the memory to an agent over MCP on stdin/stdout: tools recall, plan, remember, plan_update.

    remember and plan_update append a raw event (redacted like any ingest), never a card: the next
    dream weighs it and git shows what it made of it. Needs the optional extra: pip install 'memdream[mcp]'.
    """
    import os

    from memdream.errors import UsageError
    from memdream.mcp.serve import serve
    from memdream.mcp.server import ServerOptions

    if scope is not None and not scope.strip():
        raise UsageError("--scope must name a project, not be empty")
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    serve(ServerOptions(memory_root(memory, tenant), session=session, scope=scope, lock_wait=lock_wait, cwd=cwd))
