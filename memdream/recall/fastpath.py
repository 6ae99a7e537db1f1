"""`memdream recall` without the CLI framework: the same options, parsed with argparse.

An agent calls recall on every turn, so process start-up is most of its latency. typer 0.2x builds
a pydantic TypeAdapter for every option of a command before running it (~200 ms per process, for
any command); this path skips that and the framework import, and runs the very same
:func:`memdream.recall.command.run`. memdream.entry may route ``recall`` here (as it routes
``enqueue --from-hook``); ``--help`` stays with the typer command, which documents the options.
tests/recall/test_fastpath.py keeps the two parsers in step.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memdream.fastcli import ArgumentParser, guarded


def parser() -> ArgumentParser:
    made = ArgumentParser(prog="memdream recall", add_help=False, allow_abbrev=False)
    made.add_argument("query", nargs="?")
    made.add_argument("--budget", "-b", type=int)
    made.add_argument("--type", "-t", dest="card_type")
    made.add_argument("--status", "-s")
    made.add_argument("--subject")
    made.add_argument("--since")
    made.add_argument("--include-archived", action="store_true")
    made.add_argument("--scope")
    made.add_argument("--queries", type=Path)
    made.add_argument("--memory", "-m", type=Path)
    made.add_argument("--format", "-f", dest="output", default="text", type=str.lower, choices=("text", "json"))
    return made


def main(argv: list[str]) -> int:
    """Run ``memdream recall`` with ``argv`` (the arguments after ``recall``); returns the exit code."""
    args = parser().parse_args(argv)

    def command() -> None:
        from memdream.memory.journal import require_settled
        from memdream.memory.locate import find_memory_root
        from memdream.recall.command import run
        from memdream.recall.engine import RecallOptions

        options = RecallOptions(budget=args.budget, card_type=args.card_type, status=args.status,
                                subject=args.subject, since=args.since, include_archived=args.include_archived,
                                scope=args.scope)
        root = find_memory_root(args.memory)
        require_settled(root)  # one stat: a killed dream's half-written cards are never served
        run(root, args.query, args.queries, options, as_json=args.output == "json")

    return guarded(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
