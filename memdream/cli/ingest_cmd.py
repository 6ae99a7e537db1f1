"""memdream ingest / memdream enqueue."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import FORMAT_HELP, DataFormat, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit
from memdream.ingest.adapters import NAMES

if TYPE_CHECKING:
    from memdream.ingest.pipeline import IngestReport

LOG_FORMATS = ("auto", *NAMES)


def output_format(given: str, log_format: str | None) -> tuple[DataFormat, str | None]:
    """``--format`` as the output format, and the log format it names when it is an old
    ``--format claude-code`` (before --log-format): still read, with a one-line notice on stderr."""
    from memdream.errors import UsageError

    value = given.strip().lower()
    if value in DataFormat.__members__:
        return DataFormat(value), log_format
    if value not in LOG_FORMATS:
        raise UsageError(f"--format {given!r}: give text or json (the log's format is --log-format)")
    if log_format is not None:
        raise UsageError(f"--format {given!r} names a log format and --log-format is given too: "
                         "use --log-format alone")
    sys.stderr.write(f"memdream: --format {value} is deprecated for the log's format: use --log-format {value}\n")
    return DataFormat.text, value


def ingest(
    paths: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Argument(help="Log files, folders (read recursively) or '-' for stdin.", metavar="PATH",
                       show_default=False),
    ] = None,
    log_format: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--log-format", metavar="|".join(LOG_FORMATS), show_default=False,
                     help="The logs' format. Default: auto, which reads it from the content (CLAUDE.md, "
                          "AGENTS.md and Codex memories files: from their name)."),
    ] = None,
    session: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--session", metavar="NAME", help="Session name for every event (default: from the log).",
                     show_default=False),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="A file of a folder that cannot be read stops the run "
                                                          "(default: skipped and reported); unknown fields are "
                                                          "errors, not kept under meta.")] = False,
    skip_bad: Annotated[bool, typer.Option("--skip-bad", help="Skip and count malformed lines instead of "
                                                              "rejecting the whole file.")] = False,
    use_spool: Annotated[bool, typer.Option("--spool", help="Also ingest every transcript queued by "
                                                            "`memdream enqueue --from-hook`.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: Annotated[
        str,
        typer.Option("--format", "-f", metavar="text|json", show_default=False,
                     help=f"{FORMAT_HELP} (A log format here, as before --log-format, still works, "
                          "with a notice.)"),
    ] = "text",
) -> None:
    """Read agent logs into the raw layer: redacted before writing, deduplicated, segmented.

    A malformed line names its file and line, and nothing from that file is kept; in a folder,
    that file is skipped and reported and the others are read (--strict: the run stops). A cut
    last line (a log still being written) is left for the next ingest. Ingesting the same input
    twice adds nothing.
    """
    chosen, log_format = output_format(output, log_format)
    from memdream.ingest.pipeline import IngestOptions, ingest
    from memdream.memory.store import Memory
    from memdream.progress import Progress, terminal_output

    # An unknown --log-format is the pipeline's to refuse: it knows the adapters.
    progress = Progress.for_output(terminal_output(chosen is DataFormat.json))
    options = IngestOptions(fmt=log_format or "auto", session=session, strict=strict, skip_bad=skip_bad,
                            progress=progress)
    with progress.task("ingest"):  # one display for the run; the pipeline shows a bar per input file in it
        report = ingest(Memory(memory_root(memory, tenant)), paths or [], options, use_spool=use_spool)
    emit(report, chosen, _render)


def _render(report: IngestReport) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    for item in report.sources:
        if item.format == "excluded":
            console.print(f"{item.source}: excluded ({'; '.join(item.excluded)})")
            continue
        skipped = f", {len(item.skipped_lines)} bad line(s) skipped" if item.skipped_lines else ""
        skipped += f", {item.forgotten} forgotten (memdream forget)" if item.forgotten else ""
        console.print(f"{item.source} [{item.format}]: {item.added} new, {item.duplicates} already stored{skipped}")
        for line, reason in item.skipped_lines[:5]:
            console.print(f"  skipped {item.source}:{line}: {reason}")
    for note in _notes(report):
        console.print(note)
    total = report.total("added")
    segments = ", ".join(record.segment for record in report.segments)
    console.print(f"{total} event(s) added" + (f" in segment(s) {segments}" if segments else " (nothing new)"))


def _notes(report: IngestReport) -> list[str]:
    """What the report says beyond the per-source counts, one line each."""
    notes: list[str] = []
    if report.redactions:
        notes.append("redacted: " + ", ".join(f"{count} {kind}" for kind, count in sorted(report.redactions.items())))
    for key, text in (
        ("future_timestamps", "event(s) dated more than a day ahead of the clock: kept, tagged future-ts"),
        ("id_collisions", "event(s) whose id was taken by other content: stored under <id>~<digest>"),
        ("synthetic_timestamps", "message(s) had no time of their own: dated by the file's modification time "
                                 "or their session's start, in order"),
    ):
        if report.total(key):
            notes.append(f"{report.total(key)} {text}")
    notes.extend(f"excluded: {item.source}: {why}" for item in report.sources if item.format != "excluded"
                 for why in item.excluded)
    if report.skipped_types:
        notes.append("skipped record types: " + ", ".join(f"{name} {count:,}"
                                                           for name, count in report.skipped_types.most_common()))
    notes.extend(f"last line still being written, left for the next ingest: {where}" for where in report.partial)
    notes.extend(f"empty file skipped: {path}" for path in report.empty)
    notes.extend(f"file skipped: {problem}" for problem in report.skipped_files)
    notes.extend(f"spooled transcript no longer exists: {path}" for path in report.missing)
    notes.extend(f"spooled transcript skipped: {problem}" for problem in report.failed)
    return notes


def enqueue(
    from_hook: Annotated[bool, typer.Option(
        "--from-hook", help="Read a Claude Code hook payload (session_id, transcript_path, ...) on stdin.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
) -> None:
    """Queue an agent's transcript for the next `memdream ingest --spool` (returns at once).

    Meant for Claude Code hooks (SessionEnd, PreCompact); see the README. A bad payload is one
    line on stderr and exit 1, never a traceback in the agent.
    """
    from memdream.errors import UsageError
    from memdream.ingest.spool import enqueue_payload

    if not from_hook:
        raise UsageError("enqueue reads a hook payload: pass --from-hook")
    enqueue_payload(sys.stdin.buffer.read(), memory, tenant)
