"""memdream over the Model Context Protocol: `memdream mcp` serves a memory to an agent over stdio.

The ``mcp`` package is an optional extra (``pip install 'memdream[mcp]'``); nothing else in
memdream imports it. See :mod:`memdream.mcp.server` and docs/mcp.md.
"""

from __future__ import annotations

INSTALL_HINT = "`memdream mcp` needs the MCP SDK: pip install 'memdream[mcp]'"
