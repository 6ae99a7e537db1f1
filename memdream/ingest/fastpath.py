"""`memdream ingest` without the CLI framework: the same options, parsed with argparse.

Ingest runs from hooks and cron, and its start-up was most of the time of a small run: typer
0.2x builds a pydantic TypeAdapter for every option before running a command (~200 ms). This
path skips that and the framework import, and runs the very same
:func:`memdream.ingest.command.run`. memdream.entry routes ``ingest`` here; ``--help`` stays with
the typer command, which documents the options. tests/ingest/test_fastpath.py keeps the two
parsers in step.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memdream.fastcli import ArgumentParser, guarded


def parser() -> ArgumentParser:
    made = ArgumentParser(prog="memdream ingest", add_help=False, allow_abbrev=False)
    made.add_argument("paths", nargs="*")
    made.add_argument("--format", dest="log_format", default="auto")
    made.add_argument("--session")
    made.add_argument("--strict", action="store_true")
    made.add_argument("--skip-bad", action="store_true")
    made.add_argument("--spool", dest="use_spool", action="store_true")
    made.add_argument("--memory", "-m")
    made.add_argument("--output", "-o", default="text", type=str.lower, choices=("text", "json"))
    return made


def main(argv: list[str]) -> int:
    """Run ``memdream ingest`` with ``argv`` (the arguments after ``ingest``); returns the exit code."""
    args = parser().parse_args(argv)

    def command() -> None:
        from memdream.ingest.command import run
        from memdream.ingest.pipeline import IngestOptions
        from memdream.memory.locate import find_memory_root

        options = IngestOptions(fmt=args.log_format, session=args.session, strict=args.strict,
                                skip_bad=args.skip_bad)
        root = find_memory_root(Path(args.memory) if args.memory else None)
        run(root, args.paths, options, use_spool=args.use_spool, as_json=args.output == "json")

    return guarded(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
