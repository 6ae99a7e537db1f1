"""Cores of the commands that belong to no domain package: `memdream init` (init.py) and `memdream
remember` with the MCP tools that take notes (remember.py). The CLI module of a command calls its core;
the other commands' cores live in the package of their domain (ARCHITECTURE.md, "Where a command's
core lives")."""
