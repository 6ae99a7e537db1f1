"""memdream ingest / memdream enqueue."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memdream.cli.options import DataFormat, MemoryOption, memory_root

LOG_FORMATS = "auto, memdream, claude-code, codex, openai-chat"


def ingest(
    paths: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(help="Log files, folders (read recursively) or '-' for stdin.", show_default=False),
    ] = None,
    log_format: Annotated[
        str, typer.Option("--format", help=f"Input format: {LOG_FORMATS}. auto reads the content.")
    ] = "auto",
    session: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--session", help="Session name for every event (default: from the log).",
                     show_default=False),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Unknown fields are errors, not kept under meta.")] = False,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Skip and count malformed lines instead of "
                                                              "rejecting the whole file.")] = False,
    use_spool: Annotated[bool, typer.Option("--spool", help="Also ingest every transcript queued by "
                                                            "`memdream enqueue --from-hook`.")] = False,
    memory: MemoryOption = None,
    output: Annotated[DataFormat, typer.Option("--output", "-o", case_sensitive=False,
                                               help="Report format: text or json.")] = DataFormat.text,
) -> None:
    """Read agent logs into the raw layer: redacted before writing, deduplicated, segmented.

    A malformed line names its file and line, and nothing from that file is kept. Ingesting
    the same input twice adds nothing.
    """
    from memdream.ingest.command import run
    from memdream.ingest.pipeline import IngestOptions

    options = IngestOptions(fmt=log_format, session=session, strict=strict, skip_bad=skip_bad)
    run(memory_root(memory), paths or [], options, use_spool=use_spool, as_json=output is DataFormat.json)


def enqueue(
    from_hook: Annotated[bool, typer.Option(
        "--from-hook", help="Read a Claude Code hook payload (session_id, transcript_path, ...) on stdin.")] = False,
    memory: MemoryOption = None,
) -> None:
    """Queue an agent's transcript for the next `memdream ingest --spool` (returns at once).

    Meant for Claude Code hooks (SessionEnd, PreCompact); see the README.
    """
    from memdream.errors import UsageError
    from memdream.ingest.spool import enqueue_main

    if not from_hook:
        raise UsageError("enqueue reads a hook payload: pass --from-hook")
    code = enqueue_main(["--from-hook", *(["--memory", str(memory)] if memory else [])])
    if code:
        raise typer.Exit(code)
