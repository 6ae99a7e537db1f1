"""Process entry point. Hot commands are served before the CLI framework is imported:
`memdream enqueue --from-hook` runs inside an agent's hook and must return within 100 ms, and
`memdream recall` runs on every agent turn (typer spends ~200 ms per call validating options;
recall's own argparse parser, kept identical by a parity test, skips that). `memdream ingest`
runs from hooks and cron and gets the same treatment.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["enqueue"] and "--from-hook" in args and not {"-h", "--help"} & set(args):
        from memdream.ingest.spool import enqueue_main

        raise SystemExit(enqueue_main(args[1:]))
    if args[:1] == ["recall"] and not {"-h", "--help"} & set(args):
        from memdream.recall.fastpath import main as recall_main

        raise SystemExit(recall_main(args[1:]))
    if args[:1] == ["ingest"] and not {"-h", "--help"} & set(args):
        from memdream.ingest.fastpath import main as ingest_main

        raise SystemExit(ingest_main(args[1:]))
    from memdream.cli import app

    app(args=args, prog_name="memdream")
