"""Benchmark: what ingest redacts in real agent sessions, for a person to read.

Data: ../shared/bench/real-sessions/ (one folder of real Claude Code, Codex CLI or aider logs per project).
Every log is parsed by its ingest adapter, in this process, and every event goes through ingest's own
redaction (:func:`memdream.ingest.prepare.redact_event`: every field but the timestamp and enums, keys of
``args`` and ``meta`` included). Nothing is written. Per project: the redactions by kind; with ``--show``,
each redacted span with the text around it, the span between ``>>>`` and ``<<<``, so that a person can tell
a secret from code or prose that was taken for one.

Those logs held no real credential when they were published (files that did were left out), so a span
shown here is a false alarm or a value of no use; a known secret shape must still never survive
(tests/test_redact.py holds those cases).

Usage: python bench/redactions.py [--project NAME] [--show] [--context N] [--json FILE]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures  # noqa: E402
from bench.real_sessions import folders  # noqa: E402
from memdream.ingest import sources as sources_mod  # noqa: E402
from memdream.ingest.adapters import ParseContext, adapters, detect, memory_files  # noqa: E402
from memdream.ingest.prepare import NOT_REDACTED, redact_event  # noqa: E402
from memdream.redact import Redactor, default_redactor  # noqa: E402

CONTEXT = 60  # characters shown on each side of a redacted span


@dataclass
class Redaction:
    """One redacted span: where it was (file, event, field) and the text around it."""

    source: str
    event: str
    field: str
    kind: str
    before: str
    span: str
    after: str

    def show(self) -> str:
        marked = f"{_one_line(self.before)}>>>{_one_line(self.span)}<<<{_one_line(self.after)}"
        return f"  [{self.kind}] {self.source} {self.event} {self.field}\n    {marked}"


@dataclass
class ProjectRedactions:
    name: str
    events: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    redactions: list[Redaction] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _one_line(text: str) -> str:
    return text.replace("\\n", "\n").replace("\r", "").replace("\n", " | ")


def events_of(source: sources_mod.Source) -> Iterator[dict[str, Any]]:
    """The events ingest's adapter reads from ``source`` (malformed lines skipped, as a folder ingest does)."""
    ctx = ParseContext(source=source.name, default_session=source.stem, skip_bad=True, modified=source.modified())
    with source.open() as stream:
        head = sources_mod.head_text(source, stream)
        if source.path is not None and memory_files.is_memory_file(source.path):
            fmt: str | None = memory_files.NAME
        else:
            fmt = detect(head)
        if fmt is None:
            raise ValueError(f"{source.name}: unknown log format")
        yield from adapters()[fmt].parse(sources_mod.text_lines(stream, ctx), ctx)


def spans_in(redactor: Redactor, original: Any, redacted: Any, path: str) -> Iterator[tuple[str, str, int, int]]:
    """(field path, original string, start, end) of every span redaction changed, with the same walk
    as :meth:`Redactor.redact_obj` (dict order is kept; a key may be redacted too)."""
    if isinstance(original, str):
        if original != redacted:
            findings = redactor.find(original)
            if findings:
                for finding in findings:
                    yield path, original, finding.start, finding.end
            else:  # a value redacted as a whole because of its key (`"password": "..."`)
                yield path, original, 0, len(original)
    elif isinstance(original, dict) and isinstance(redacted, dict):
        for (key, value), (new_key, new_value) in zip(original.items(), redacted.items()):
            if isinstance(key, str) and key != new_key:
                for finding in redactor.find(key):
                    yield f"{path}{{key}}", key, finding.start, finding.end
            yield from spans_in(redactor, value, new_value, f"{path}.{key}" if path else str(key))
    elif isinstance(original, list) and isinstance(redacted, list):
        for index, (value, new_value) in enumerate(zip(original, redacted)):
            yield from spans_in(redactor, value, new_value, f"{path}[{index}]")


def project_redactions(folder: Path, context: int) -> ProjectRedactions:
    redactor = default_redactor()
    result = ProjectRedactions(folder.name)
    for source in sources_mod.resolve([str(folder)]):
        name = str(Path(source.name).relative_to(folder))
        try:
            events = list(events_of(source))
        except Exception as error:  # noqa: BLE001 - reported, as a folder ingest reports it
            result.unreadable.append(f"{name}: {error}")
            continue
        for event in events:
            result.events += 1
            original = {key: value for key, value in event.items() if key not in NOT_REDACTED}
            redacted = copy.deepcopy(event)
            counts = redact_event(redactor, redacted)
            if not counts:
                continue
            result.counts.update(counts)
            label = str(event.get("id", "?"))
            changed = {key: redacted[key] for key in original}
            for path, text, start, end in spans_in(redactor, original, changed, ""):
                kind = next((f.kind for f in redactor.find(text) if f.start == start), "secret")
                result.redactions.append(Redaction(name, label, path, kind, text[max(0, start - context):start],
                                                   text[start:end], text[end:end + context]))
    return result


def print_table(results: list[ProjectRedactions]) -> None:
    kinds = sorted({kind for result in results for kind in result.counts})
    print(f"{'project':<34} {'events':>6} {'redacted':>8}  by kind")
    for result in results:
        by_kind = ", ".join(f"{kind} {result.counts[kind]}" for kind in kinds if result.counts[kind])
        print(f"{result.name:<34} {result.events:>6} {result.total:>8}  {by_kind}")
        for problem in result.unreadable:
            print(f"  unreadable: {problem}")
    total: Counter[str] = sum((result.counts for result in results), Counter())
    events = sum(result.events for result in results)
    by_kind = ", ".join(f"{kind} {total[kind]}" for kind in kinds)
    print(f"{'total':<34} {events:>6} {sum(total.values()):>8}  {by_kind}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", action="append", metavar="NAME", help="Only this folder (repeatable).")
    parser.add_argument("--show", action="store_true", help="Print every redacted span with its context.")
    parser.add_argument("--context", type=int, default=CONTEXT, metavar="N",
                        help=f"Characters shown on each side of a span (default {CONTEXT}).")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="Write counts and spans to FILE (under `projects`), "
                             "with the figures for bench/results.py.")
    args = parser.parse_args()
    figures = Figures(__file__, "redaction")
    start = time.perf_counter()
    results = [project_redactions(folder, args.context) for folder in folders(args.project)]
    if args.show:
        for result in results:
            print(f"{result.name}: {result.total} redaction(s)")
            for redaction in result.redactions:
                print(redaction.show())
        print()
    print_table(results)
    print(f"wall {time.perf_counter() - start:.1f} s")
    if args.json:
        projects = {result.name: {"events": result.events, "counts": dict(sorted(result.counts.items())),
                                  "redactions": [vars(r) for r in result.redactions]} for result in results}
        total: Counter[str] = sum((result.counts for result in results), Counter())
        events = sum(result.events for result in results)
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(total.items())) or "none"
        figures.add(f"redactions in the real sessions ({len(results)} projects, {events:,} events)",
                    sum(total.values()), "spans",
                    note=f"by kind: {kinds}; read each with --show: real secrets only is the target")
        figures.write(args.json, projects=projects)


if __name__ == "__main__":
    main()
