"""Start `memdream mcp`: the tools of :mod:`memdream.mcp.server`, declared to the MCP SDK by
:mod:`memdream.mcp.protocol`, served on stdin/stdout. The SDK is imported here and only here, when
the server starts: an install without the extra gets one clear line."""

from __future__ import annotations

import os
import threading

from memdream.errors import MemdreamError
from memdream.mcp.server import MemoryTools, ServerOptions


def serve(options: ServerOptions) -> None:
    """Run the server on stdin/stdout until the client closes it."""
    try:
        import mcp.server.mcpserver  # noqa: F401
    except ImportError:
        from memdream.mcp import INSTALL_HINT

        raise MemdreamError(INSTALL_HINT) from None
    from memdream.memory.lock import LOCK_WAIT_ENV

    # record() waits for the writer lock as long as MEMDREAM_LOCK_WAIT says (ingest's 30 s by default):
    # an agent must not hang that long behind a dream, so this process waits lock_wait.
    os.environ[LOCK_WAIT_ENV] = f"{options.lock_wait:g}"
    import gc

    from memdream.mcp.protocol import build

    tools = MemoryTools(options)
    server = build(tools)
    # The SDK's modules and pydantic models, ~90,000 objects, live as long as the process: frozen, out
    # of the collector's sight, a full collection scans only what calls made (a few ms, not ~70 ms), and
    # the server can afford one after each write (MemoryTools.collect_after_writes).
    gc.freeze()
    tools.collect_after_writes = True
    # The first recall would otherwise load (or build) the indexes itself, while the agent waits.
    threading.Thread(target=tools.warm, name="memdream-warm-up", daemon=True).start()
    server.run("stdio")
    # They would make the interpreter's final garbage collection take ~2 s, and clients wait for the
    # server to exit (then kill it): nothing made since needs collecting either.
    gc.freeze()
