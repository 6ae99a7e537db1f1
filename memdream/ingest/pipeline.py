"""The ingest run: sources -> adapter -> redaction -> ids -> dedup -> salience -> raw segments.

Redaction happens before anything is written. Each input file is a unit: a malformed line
rolls back everything that file added (unless lines may be skipped), and the error then stops
the run, so nothing of the run is published. Segments are published only at the end of the
run, under the memory's writer lock. A spooled transcript (``--spool``) that cannot be read
(unreadable, empty, not a log, a malformed line) is reported in ``failed_transcripts`` and
skipped instead, so that one bad transcript cannot block the spool forever.

A memdream-format file of some size is parsed and redacted by worker processes in chunks
(:mod:`.workers`, :mod:`.prepare`); this process then does only what depends on order (ids,
dedup, salience, writing), and stores byte for byte what it would have stored alone.

Environment: ``MEMDREAM_LOCK_WAIT`` (seconds, a float >= 0; default ``LOCK_WAIT_SECONDS``, 30; read by
:func:`memdream.memory.lock.lock_wait_seconds`) is how long ingest waits for another writer to release
the memory before it exits with 75 ("memory is busy").
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memdream import fastjson, gitops
from memdream.clock import now_iso
from memdream.errors import InvalidInput, MemdreamError, UsageError
from memdream.ingest import sources as sources_mod
from memdream.ingest import spool
from memdream.ingest.adapters import ParseContext, adapters, detect, memdream_jsonl
from memdream.ingest.dedup import REPEATED, STORED, DedupIndex
from memdream.ingest.prepare import BAD, READY, redact_event
from memdream.ingest.project import PROJECT_TAG
from memdream.ingest.salience import Hints, SalienceTagger, merge_tags
from memdream.ingest.validate import DEFAULT_ACTOR, FUTURE_TAG, first_error, fit_caps
from memdream.memory.lock import lock_wait_seconds, writer_lock
from memdream.memory.raw import RawLayer, SegmentRecord, SegmentWriter, canonical_bytes
from memdream.memory.store import Memory
from memdream.yamlio import write_atomic

if TYPE_CHECKING:
    from memdream.ingest.workers import ChunkPool

LOCK_WAIT_SECONDS = 30.0  # ingest runs from hooks and cron; a dream in progress is worth waiting for


@dataclass
class IngestOptions:
    fmt: str = "auto"
    session: str | None = None
    strict: bool = False
    skip_bad: bool = False


@dataclass
class SourceReport:
    source: str
    format: str
    read: int = 0
    added: int = 0
    duplicates: int = 0
    changed: int = 0  # same (session, id) already stored with other content: kept the stored one
    skipped_lines: list[tuple[int, str]] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)
    future_timestamps: int = 0  # events dated more than a day after the ingest clock (tagged future-ts)


@dataclass
class IngestReport:
    sources: list[SourceReport] = field(default_factory=list)
    segments: list[SegmentRecord] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # spooled transcripts that no longer exist
    failed: list[str] = field(default_factory=list)  # spooled transcripts that could not be read
    empty: list[str] = field(default_factory=list)  # empty files of a folder, skipped
    commit: str | None = None

    def total(self, name: str) -> int:
        return sum(getattr(report, name) for report in self.sources)

    @property
    def redactions(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for report in self.sources:
            total.update(report.redactions)
        return total

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.total("added"), "duplicates": self.total("duplicates"),
            "changed": self.total("changed"), "read": self.total("read"),
            "future_timestamps": self.total("future_timestamps"),
            "skipped_lines": sum(len(report.skipped_lines) for report in self.sources),
            "redactions": dict(sorted(self.redactions.items())),
            "segments": [record.__dict__ for record in self.segments],
            "recovered_segments": self.recovered, "missing_transcripts": self.missing,
            "failed_transcripts": self.failed, "empty_files": self.empty, "commit": self.commit,
            "sources": [
                {"source": r.source, "format": r.format, "read": r.read, "added": r.added,
                 "duplicates": r.duplicates, "changed": r.changed, "future_timestamps": r.future_timestamps,
                 "skipped_lines": [{"line": line, "reason": reason} for line, reason in r.skipped_lines],
                 "redactions": dict(sorted(r.redactions.items()))}
                for r in self.sources
            ],
        }


class _Run:
    """State of one ingest run over many sources."""

    def __init__(self, memory: Memory, options: IngestOptions) -> None:
        from memdream.redact import Redactor

        self.memory, self.options = memory, options
        self.raw = RawLayer(memory.paths)
        self.now = now_iso()
        self.redactor = Redactor.from_settings(memory.settings)
        self.state_path = memory.paths.state / "ingest" / "salience.json"
        self.tagger = SalienceTagger(self._load_state())
        self.seen = DedupIndex()  # (session, id) of every stored event
        self.writer: SegmentWriter | None = None
        self.pool: ChunkPool | None = None

    def _load_state(self) -> dict[str, Any] | None:
        try:
            loaded: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
            return loaded
        except (OSError, ValueError):
            return None

    def start(self) -> list[str]:
        recovered = self.raw.recover(self.now)
        self.seen = DedupIndex((session, event_id) for session, event_id, _ in self.raw.key_rows())
        self.writer = SegmentWriter(self.raw, int(self.memory.settings.get("ingest.segment_max_events")))
        return recovered

    def ingest_source(self, source: sources_mod.Source, detect_format: bool = False) -> SourceReport:
        """Add one input; ``detect_format``: read its format from its content whatever --format says."""
        assert self.writer is not None
        ctx = ParseContext(source=source.name, default_session=source.stem, session=self.options.session,
                           strict=self.options.strict, skip_bad=self.options.skip_bad)
        with source.open() as stream:
            head = sources_mod.head_text(source, stream)
            fmt = self._format_of(source, head, detect_format)
            report = SourceReport(source.name, fmt, skipped_lines=ctx.skipped)
            mark = self.writer.mark()
            self.tagger.begin()
            self.seen.begin()
            occurrences: Counter[tuple[str, str]] = Counter()
            workers = 0
            if fmt == memdream_jsonl.NAME and source.path is not None:
                from memdream.ingest.workers import worker_count

                workers = worker_count(self.memory.settings.get("ingest.workers"), source.path.stat().st_size)
            try:
                if workers:
                    self._ingest_prepared(source, ctx, workers, report, occurrences)
                else:
                    for event in adapters()[fmt].parse(sources_mod.text_lines(stream, ctx), ctx):
                        self._store(event, report, occurrences)
            except BaseException:
                self.writer.rollback(mark)
                self.tagger.rollback()
                self.seen.rollback()
                raise
        return report

    def _ingest_prepared(self, source: sources_mod.Source, ctx: ParseContext, workers: int, report: SourceReport,
                         occurrences: Counter[tuple[str, str]]) -> None:
        """Add a memdream-format file that worker processes parse and redact, in file order.

        The loop below is :meth:`_store` for prepared events (see :mod:`.prepare`), written out:
        it is the one part of a parallel ingest that runs in this process alone.
        """
        assert self.writer is not None and source.path is not None
        if self.pool is None or self.pool.size != workers:
            self.close_pool()
            self.writer.flush()  # forked workers must not inherit unwritten buffers
            from memdream.ingest.workers import ChunkPool

            self.pool = ChunkPool(workers, self.redactor)
        from memdream.ingest.workers import chunk_jobs

        jobs = chunk_jobs(source.name, source.path, ctx.default_session, ctx.session, ctx.strict)
        claim, tags_for, write = self.seen.claim, self.tagger.tags_for, self.writer.write_fields
        dumps = orjson.dumps
        base = 0  # lines before the current chunk
        for prepared, lines in self.pool.prepare(jobs):
            read = added = duplicates = 0
            for record in prepared:
                if record[0] != READY:
                    self._store_other(record, base, ctx, report, occurrences)
                    continue
                (_, number, session, event_id, ts, kind, tool, failed, goal, own_tags, untrusted, fingerprint,
                 head, tail, counts) = record
                found = claim(session, event_id)
                if found == REPEATED:
                    ctx.bad(base + number, memdream_jsonl.repeated_id(session, event_id))
                    continue
                read += 1
                if found == STORED:
                    duplicates += 1
                    continue
                tags = tags_for(session, kind, tool, failed, goal, untrusted, fingerprint)
                write(head + dumps(merge_tags(own_tags, tags)) + tail, session, event_id, ts)
                added += 1
                if own_tags and FUTURE_TAG in own_tags:
                    report.future_timestamps += 1
                if counts:
                    report.redactions.update(counts)
            report.read += read
            report.added += added
            report.duplicates += duplicates
            base += lines

    def _store_other(self, record: tuple[Any, ...], base: int, ctx: ParseContext, report: SourceReport,
                     occurrences: Counter[tuple[str, str]]) -> None:
        """A prepared bad line, or an event without id (its id depends on the events before it)."""
        if record[0] == BAD:
            ctx.bad(base + record[1], record[2])
            return
        _, _, data, counts, hints = record
        self._store(fastjson.loads(data), report, occurrences, (counts, hints))

    def close_pool(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def _format_of(self, source: sources_mod.Source, head: str, detect_format: bool) -> str:
        if self.options.fmt != "auto" and not detect_format:
            return self.options.fmt
        found = detect(head)
        if found is None:
            raise InvalidInput(f"{source.name}: unknown log format (pass --format; known: "
                               f"{', '.join(adapters())})")
        return found

    def _store(self, event: dict[str, Any], report: SourceReport, occurrences: Counter[tuple[str, str]],
               prepared: tuple[Mapping[str, int] | None, Hints | None] | None = None) -> None:
        """Add one event unless it is stored already; ``prepared``: its redactions and salience
        hints when a worker already redacted it."""
        report.read += 1
        seen = self.seen
        if "id" in event and (event["session"], event["id"]) in seen:
            # Known by its own id: no need to redact it first (stored ids are redacted ones, and a
            # value that redaction changes is never stored as it is).
            report.duplicates += 1
            return
        redactions: Mapping[str, int] | None
        if prepared is None:
            redactions, hints = redact_event(self.redactor, event), None
            if redactions and "id" in event and (event["session"], event["id"]) in seen:
                report.duplicates += 1  # stored before under its redacted id
                return
        else:
            redactions, hints = prepared
        if "actor" not in event:
            event["actor"] = DEFAULT_ACTOR[event["kind"]]
        if "id" not in event:
            event["id"] = _derived_id(event, occurrences)
            if (event["session"], event["id"]) in seen:
                report.duplicates += 1
                return
        self.tagger.tag(event, hints)
        # Adapters yield schema-valid events, and tags, actor and id keep them valid; only a
        # redaction (a placeholder longer than its secret) can push a value over its cap.
        if redactions:
            fit_caps(event)
            problem = first_error(event)
            if problem is not None:  # a bug, not bad input
                raise MemdreamError(f"{report.source}: produced an invalid event ({problem})")
            report.redactions.update(redactions)
        self.writer.write(canonical_bytes(event), event)  # type: ignore[union-attr]
        seen.add(event["session"], event["id"])
        report.added += 1
        if FUTURE_TAG in event["tags"]:
            report.future_timestamps += 1

    def finish(self) -> list[SegmentRecord]:
        assert self.writer is not None
        self.close_pool()
        records = self.writer.publish(self.now)
        write_atomic(self.state_path, json.dumps(self.tagger.state(), sort_keys=True))
        return records

    def abort(self) -> None:
        self.close_pool()
        if self.writer is not None:
            self.writer.abort()


def _derived_id(event: dict[str, Any], occurrences: Counter[tuple[str, str]]) -> str:
    """A stable id from the event's content; repeats of identical events in one input get -2, -3 ...

    The ``project:`` tag is not part of what an event is (adapters add it from where the session
    ran, which older versions did not): events ingested before it keep their ids."""
    tags = event.get("tags")
    if tags and any(tag.startswith(PROJECT_TAG) or tag == FUTURE_TAG for tag in tags):
        # Nor is ``future-ts``, which depends on when it was ingested.
        kept = [tag for tag in tags if not tag.startswith(PROJECT_TAG) and tag != FUTURE_TAG]
        event = {key: value for key, value in event.items() if key != "tags"}
        if kept:
            event["tags"] = kept
    digest = hashlib.blake2b(canonical_bytes(event), digest_size=6).hexdigest()
    base = f"e{digest}"
    occurrences[(event["session"], base)] += 1
    count = occurrences[(event["session"], base)]
    return base if count == 1 else f"{base}-{count}"


def ingest(memory: Memory, inputs: list[str], options: IngestOptions | None = None,
           use_spool: bool = False) -> IngestReport:
    """Ingest every input (and, with ``use_spool``, every spooled transcript) into the raw layer."""
    options = options or IngestOptions()
    if options.fmt != "auto" and options.fmt not in adapters():
        raise InvalidInput(f"unknown format {options.fmt!r} (known: auto, {', '.join(adapters())})")
    if not inputs and not use_spool:
        raise UsageError("nothing to ingest: name files, folders or '-', or pass --spool")
    wait = lock_wait_seconds(LOCK_WAIT_SECONDS)
    sources = sources_mod.resolve(inputs)
    report = IngestReport()
    with writer_lock(memory.paths.state, wait_seconds=wait), _no_cycle_collection():
        claimed: list[Path] = []
        spooled: list[sources_mod.Source] = []
        if use_spool:
            claimed = spool.claim(memory.paths.state)
            present, report.missing = spool.transcripts(claimed)
            spooled = [sources_mod.Source(path, Path(path)) for path in present]
        run = _Run(memory, options)
        try:
            report.recovered = run.start()
            for source in sources:
                try:
                    report.sources.append(run.ingest_source(source))
                except sources_mod.EmptyInput:
                    if not source.in_folder:
                        raise
                    report.empty.append(source.name)
            for source in spooled:  # hook transcripts: --format is about the named inputs
                try:
                    report.sources.append(run.ingest_source(source, detect_format=True))
                except InvalidInput as error:  # ingest_source has dropped what this file added
                    report.failed.append(str(error))
                except OSError as error:  # e.g. another user's transcript: unreadable, not malformed
                    report.failed.append(f"{source.name}: cannot read ({error.strerror or error})")
            report.segments = run.finish()
        except BaseException:
            run.abort()
            raise
        spool.release(claimed)
        if gitops.is_repo(memory.root) and (report.segments or report.recovered or _manifest_uncommitted(memory)):
            report.commit = _commit_manifest(memory, report)
    return report


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause the cyclic garbage collector for the run: events are acyclic and freed by reference
    counting, so its passes would only walk the dedup index over and over (~15% of the time
    of the ingest process). Forked workers start with it paused too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _tracked_raw_paths(memory: Memory) -> list[str]:
    return ["raw"] if bool(memory.settings.get("ingest.track_raw")) else ["raw/MANIFEST.jsonl"]


def _manifest_uncommitted(memory: Memory) -> bool:
    """Whether an earlier run left the manifest changed but not committed (a crash between the
    two, or a failed run after adopting orphan segments): this run commits it."""
    return bool(gitops.status_paths(memory.root, _tracked_raw_paths(memory)))


def _commit_manifest(memory: Memory, report: IngestReport) -> str:
    """Record the new segments' hashes in git (raw/ itself is not tracked unless configured)."""
    track_raw = bool(memory.settings.get("ingest.track_raw"))
    paths = _tracked_raw_paths(memory)
    events = sum(record.events for record in report.segments)
    names = ", ".join(record.segment for record in report.segments) or "recovered"
    return gitops.commit(
        memory.root,
        f"memdream ingest: {events} event(s) in {len(report.segments)} segment(s)",
        trailers={"Memdream-Ingest": names},
        paths=paths,
        force=track_raw,  # raw/ is in .gitignore; tracking it is an explicit choice
    )
