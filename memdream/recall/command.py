"""What `memdream recall` does once its arguments are parsed: shared by the typer command
(memdream.cli.recall_cmd) and the argparse fast path (memdream.recall.fastpath)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TextIO

from memdream.errors import InvalidInput, UsageError
from memdream.recall.engine import Recaller, RecallOptions


def read_queries(path: Path) -> list[str]:
    """One query per line, blank lines skipped; '-' reads standard input."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"--queries {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput(f"--queries {path}: cannot be read: {error}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def with_cwd(options: RecallOptions) -> RecallOptions:
    """``options`` with the folder recall runs in (unchanged if that folder is gone)."""
    import os
    from dataclasses import replace

    try:
        return replace(options, cwd=os.getcwd())
    except OSError:
        return options


def run(root: Path, query: str | None, queries: Path | None, options: RecallOptions, as_json: bool,
        out: TextIO | None = None) -> None:
    """Answer QUERY (text or JSON) or every line of ``queries`` (JSONL), writing to ``out``.

    Without ``options.scope`` (and ``options.cwd``), the scope is the project of the folder recall
    runs in, where the memory has scoped plan items or instructions.
    """
    out = out or sys.stdout
    if (query is None) == (queries is None):
        raise UsageError("give one QUERY or --queries FILE")
    options.check()
    if options.scope is None and options.cwd is None:
        options = with_cwd(options)
    lines = read_queries(queries) if queries is not None else []
    recaller = Recaller(root, options)
    try:
        if queries is not None:
            for line in lines:
                out.write(json.dumps(recaller.recall(line).to_dict(), ensure_ascii=False) + "\n")
            return
        assert query is not None
        result = recaller.recall(query)
    finally:
        recaller.close()
    if as_json:
        out.write(json.dumps(result.to_dict(), ensure_ascii=False, indent=2) + "\n")
    else:
        out.write(result.context)
