"""What `memdream ingest` does once its arguments are parsed: shared by the typer command
(memdream.cli.ingest_cmd) and the argparse fast path (memdream.ingest.fastpath)."""

from __future__ import annotations

from pathlib import Path

from memdream.ingest.pipeline import IngestOptions, IngestReport, ingest
from memdream.memory.store import Memory
from memdream.render import print_json, stdout_console


def run(root: Path, paths: list[str], options: IngestOptions, use_spool: bool, as_json: bool) -> None:
    report = ingest(Memory(root), paths, options, use_spool=use_spool)
    if as_json:
        print_json(report.to_dict())
    else:
        render(report)


def render(report: IngestReport) -> None:
    console = stdout_console()
    for item in report.sources:
        skipped = f", {len(item.skipped_lines)} bad line(s) skipped" if item.skipped_lines else ""
        console.print(f"{item.source} [{item.format}]: {item.added} new, {item.duplicates} already stored{skipped}")
        for line, reason in item.skipped_lines[:5]:
            console.print(f"  skipped {item.source}:{line}: {reason}")
    redactions = report.redactions
    if redactions:
        console.print("redacted: " + ", ".join(f"{count} {kind}" for kind, count in sorted(redactions.items())))
    future = report.total("future_timestamps")
    if future:
        console.print(f"{future} event(s) dated more than a day ahead of the clock: kept, tagged future-ts")
    collisions = report.total("id_collisions")
    if collisions:
        console.print(f"{collisions} event(s) whose id was taken by other content: stored under <id>~<digest>")
    synthetic = report.total("synthetic_timestamps")
    if synthetic:
        console.print(f"{synthetic} message(s) had no time; used the file's modification time")
    for path in report.empty:
        console.print(f"empty file skipped: {path}")
    for path in report.missing:
        console.print(f"spooled transcript no longer exists: {path}")
    for problem in report.failed:
        console.print(f"spooled transcript skipped: {problem}")
    total = report.total("added")
    segments = ", ".join(record.segment for record in report.segments)
    console.print(f"{total} event(s) added" + (f" in segment(s) {segments}" if segments else " (nothing new)"))
