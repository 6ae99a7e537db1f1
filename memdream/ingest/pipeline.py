"""The ingest run: sources -> adapter -> session -> redaction -> ids -> dedup -> salience -> raw segments.

A source that names no session gets one derived from it, and dedup compares content, not only
ids (:mod:`.source_ids`): an id stored with other content is a collision, never a duplicate. What
`memdream forget` erased (:class:`.dedup.Forgotten`) is left out, counted as ``forgotten``.

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
from collections import Counter, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from memdream import gitops, jsonio, yamlio
from memdream.clock import now_iso
from memdream.errors import InvalidInput, MemdreamError, UsageError
from memdream.ingest import exclude as exclude_mod
from memdream.ingest import sources as sources_mod
from memdream.ingest import spool
from memdream.ingest.adapters import NAMES, adapter, detect, memdream_jsonl, memory_files
from memdream.ingest.adapters.context import ParseContext
from memdream.ingest.dedup import REPEATED, ContentIndex, DedupIndex, Forgotten
from memdream.ingest.prepare import BAD, READY, Prepared, redact_event
from memdream.ingest.salience import Hints, SalienceTagger, merge_tags
from memdream.ingest.source_ids import SourceSessions, collision_id, fingerprint
from memdream.ingest.validate import DEFAULT_ACTOR, first_error, fit_caps
from memdream.memory import manifest_commit
from memdream.memory.lock import lock_wait_seconds, writer_lock
from memdream.memory.raw import RawLayer, SegmentRecord, SegmentWriter, canonical_bytes
from memdream.memory.store import Memory
from memdream.memory.tags import FUTURE_TAG, PROJECT_TAG, episode_tag
from memdream.progress import NO_PROGRESS, Advance, Progress

if TYPE_CHECKING:
    from memdream.ingest.workers import ChunkPool

LOCK_WAIT_SECONDS = 30.0  # ingest runs from hooks and cron; a dream in progress is worth waiting for


@dataclass
class IngestOptions:
    fmt: str = "auto"
    session: str | None = None
    strict: bool = False
    skip_bad: bool = False
    progress: Progress = NO_PROGRESS  # a bar on a terminal (memdream.progress); nothing by default


@dataclass
class SourceReport:
    source: str
    format: str
    read: int = 0
    added: int = 0
    duplicates: int = 0
    id_collisions: int = 0  # an event whose id was taken by other content: stored under id~<digest>
    synthetic_timestamps: int = 0  # events stored without a time of their own (meta.ts_synthetic)
    skipped_lines: list[tuple[int, str]] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)
    future_timestamps: int = 0  # events dated more than a day after the ingest clock (tagged future-ts)
    # What the user kept out (ingest.exclude, #memdream:off): the file, or each session, and why.
    excluded: list[str] = field(default_factory=list)
    # Records read and left out on purpose, by type: a new format version shows here.
    skipped_types: Counter[str] = field(default_factory=Counter)
    partial_line: int | None = None  # a cut last line, left for the next ingest
    forgotten: int = 0  # events `memdream forget` erased (or of a session it erased): not stored again


@dataclass
class IngestReport:
    sources: list[SourceReport] = field(default_factory=list)
    segments: list[SegmentRecord] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # spooled transcripts that no longer exist
    failed: list[str] = field(default_factory=list)  # spooled transcripts that could not be read
    empty: list[str] = field(default_factory=list)  # empty files of a folder, skipped
    # Files of a folder that could not be read, each "<file>: <why>"; nothing of them was kept.
    skipped_files: list[str] = field(default_factory=list)
    commit: str | None = None

    def total(self, name: str) -> int:
        return sum(getattr(report, name) for report in self.sources)

    @property
    def redactions(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for report in self.sources:
            total.update(report.redactions)
        return total

    @property
    def skipped_types(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for report in self.sources:
            total.update(report.skipped_types)
        return total

    @property
    def partial(self) -> list[str]:
        """The sources whose last line was cut: "<source>:<line>"."""
        return [f"{report.source}:{report.partial_line}" for report in self.sources if report.partial_line]

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.total("added"), "duplicates": self.total("duplicates"),
            "id_collisions": self.total("id_collisions"), "read": self.total("read"),
            "future_timestamps": self.total("future_timestamps"),
            "synthetic_timestamps": self.total("synthetic_timestamps"),
            "skipped_lines": sum(len(report.skipped_lines) for report in self.sources),
            "redactions": dict(sorted(self.redactions.items())),
            "segments": [record.__dict__ for record in self.segments],
            "recovered_segments": self.recovered, "missing_transcripts": self.missing,
            "failed_transcripts": self.failed, "empty_files": self.empty, "commit": self.commit,
            "skipped_files": self.skipped_files, "partial_lines": self.partial,
            "skipped_record_types": dict(self.skipped_types.most_common()),
            "excluded": sum(len(report.excluded) for report in self.sources),
            "forgotten": self.total("forgotten"),
            "sources": [
                {"source": r.source, "format": r.format, "read": r.read, "added": r.added,
                 "duplicates": r.duplicates, "id_collisions": r.id_collisions,
                 "future_timestamps": r.future_timestamps, "synthetic_timestamps": r.synthetic_timestamps,
                 "skipped_lines": [{"line": line, "reason": reason} for line, reason in r.skipped_lines],
                 "redactions": dict(sorted(r.redactions.items())), "excluded": r.excluded,
                 "skipped_record_types": dict(r.skipped_types.most_common()), "partial_line": r.partial_line,
                 "forgotten": r.forgotten}
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
        self.contents = ContentIndex(self._stored_events, fingerprint)  # what those ids hold
        self._segment_names: list[str] = []
        self._segments_of: dict[str, list[int]] = {}  # session -> the segments (indexes) holding it
        self._segments_read: set[int] = set()  # segments whose events self.contents holds
        self.writer: SegmentWriter | None = None
        self.pool: ChunkPool | None = None
        self._tags_json: dict[tuple[int, tuple[str, ...]], bytes] = {}  # see _new_tags_json
        self.exclude = exclude_mod.from_settings(memory.settings)
        self.forgotten = Forgotten.load(memory.paths.state)  # what `memdream forget` erased stays out

    def _load_state(self) -> dict[str, Any] | None:
        try:
            loaded: dict[str, Any] = json.loads(self.state_path.read_text(encoding="utf-8"))
            return loaded
        except (OSError, ValueError):
            return None

    def start(self) -> list[str]:
        recovered = self.raw.recover(self.now)
        self._segment_names = [record.segment for record in self.raw.manifest()]
        self.seen = DedupIndex(self._stored_keys())
        self.writer = SegmentWriter(self.raw, int(self.memory.settings.get("ingest.segment_max_events")))
        return recovered

    def _stored_keys(self) -> Iterator[tuple[str, str]]:
        """(session, id) of every stored event, noting which segments hold each session (read again
        only when an id of it is seen again: :class:`ContentIndex`)."""
        segments_of = self._segments_of
        for number, name in enumerate(self._segment_names):
            for session, event_id, _ in self.raw._segment_rows(name):
                where = segments_of.get(session)
                if where is None:
                    segments_of[session] = [number]
                elif where[-1] != number:
                    where.append(number)
                yield session, event_id

    def _stored_events(self, session: str) -> Iterator[dict[str, Any]]:
        """The stored events of the segments holding ``session`` that were not read back yet."""
        numbers = [number for number in self._segments_of.get(session, ()) if number not in self._segments_read]
        self._segments_read.update(numbers)
        for _, event in self.raw.iter_events([self._segment_names[number] for number in numbers]):
            yield event

    def _stored_as(self, event: dict[str, Any]) -> bool:
        """Whether ``event`` (a copy, redacted here) is stored already with this very content."""
        if "id" not in event:
            return False
        event = dict(event)
        redact_event(self.redactor, event)
        fit_caps(event)
        if "actor" not in event:
            event["actor"] = DEFAULT_ACTOR[event["kind"]]
        key = (event["session"], event["id"])
        return key in self.seen and self.contents.get(*key) == fingerprint(event)

    def ingest_source(self, source: sources_mod.Source, detect_format: bool = False) -> SourceReport:
        """Add one input; ``detect_format``: read its format from its content whatever --format says.

        What the user keeps out is never stored: a file matching ``ingest.exclude``, a session that
        ran in a folder matching it (known from its first event) and a session in which the user
        wrote the keep-out marker. The marker may come last: the source's events are then dropped
        and it is read again without that session (a rare second pass, so the usual one streams)."""
        if source.path is not None and self.memory.paths.state not in source.path.parents:  # not memdream's own
            glob = self.exclude.match(source.path)
            if glob is not None:
                return SourceReport(source.name, "excluded", excluded=[f"matches ingest.exclude {glob!r}"])
        kept_out: dict[str, str] = {}  # session -> why
        while True:
            report, marked = self._ingest_once(source, detect_format, kept_out)
            if not marked:
                report.excluded = [f"session {session}: {why}" for session, why in kept_out.items()]
                return report
            if source.path is None:
                raise InvalidInput(f"{source.name}: a session in it is marked {exclude_mod.KEEP_OUT_MARKER} and "
                                   "stdin cannot be read twice: pass the log as a file")
            kept_out.update(marked)

    def _ingest_once(self, source: sources_mod.Source, detect_format: bool, kept_out: dict[str, str]
                     ) -> tuple[SourceReport, dict[str, str]]:
        """One pass over ``source`` without the sessions of ``kept_out``; the sessions found marked
        off besides (when there are some, nothing of this pass is kept)."""
        assert self.writer is not None
        sessions = SourceSessions(source.stem, source.path, self._stored_as)
        ctx = ParseContext(source=source.name, default_session=sessions.placeholder, session=self.options.session,
                           strict=self.options.strict, skip_bad=self.options.skip_bad,
                           modified=source.modified())
        marked: dict[str, str] = {}
        with source.open() as stream:
            head = sources_mod.head_text(source, stream)
            fmt, joined = self._format_of(source, head, detect_format)
            report = SourceReport(source.name, fmt, skipped_lines=ctx.skipped, skipped_types=ctx.skipped_types)
            mark = self.writer.mark()
            self.tagger.begin()
            self.seen.begin()
            self.contents.begin()
            occurrences: Counter[tuple[str, str]] = Counter()
            workers = 0
            if fmt == memdream_jsonl.NAME and source.path is not None and not joined:
                from memdream.ingest.workers import worker_count

                workers = worker_count(self.memory.settings.get("ingest.workers"), source.path.stat().st_size)
            try:
                # Workers report whole chunks, not bytes: their file's bar shows it is busy, not how far.
                total = None if workers else _size_of(source)
                with self.options.progress.task(source.name, total=total) as advance:
                    if workers:
                        self._ingest_prepared(source, ctx, workers, report, occurrences, kept_out, marked)
                    else:
                        lines = sources_mod.text_lines(stream, ctx)
                        if joined:
                            lines = sources_mod.joined_records(lines, ctx)
                        events = adapter(fmt).parse(lines, ctx)
                        watched = self._kept_in(sessions.assign(events), kept_out, marked)
                        for event in _advancing(watched, stream, advance):
                            self._store(event, report, occurrences)
            except BaseException:
                self._rollback(mark)
                raise
            if marked:
                self._rollback(mark)
        report.partial_line = ctx.partial
        return report, marked

    def _rollback(self, mark: Any) -> None:
        """Drop what the current source added."""
        assert self.writer is not None
        self.writer.rollback(mark)
        self.tagger.rollback()
        self.seen.rollback()
        self.contents.rollback()

    def _kept_in(self, events: Iterator[dict[str, Any]], kept_out: dict[str, str], marked: dict[str, str]
                 ) -> Iterator[dict[str, Any]]:
        """``events`` without the sessions the user keeps out. One marked off by the user is noted in
        ``marked``, for the caller to start over without it; one that ran in an excluded folder is
        known from its first events (a transcript's goal comes before the line that names its cwd),
        which are held back, in order, until then."""
        held: deque[dict[str, Any]] = deque()
        undecided: dict[str, int] = {}  # session -> its events seen, while its folder is unknown
        decided: set[str] = set()
        for event in events:
            session = event["session"]
            if session in kept_out:
                continue
            if exclude_mod.says_off(event):
                marked[session] = exclude_mod.MARKED_OFF
            if session not in decided and self.exclude:
                self._decide(event, kept_out, undecided, decided)
                held.append(event)
                while held and held[0]["session"] in decided:
                    first = held.popleft()
                    if first["session"] not in kept_out:
                        yield first
                continue
            if held:
                held.append(event)  # behind events still held: order is kept
            else:
                yield event
        yield from (event for event in held if event["session"] not in kept_out)

    def _decide(self, event: dict[str, Any], kept_out: dict[str, str], undecided: dict[str, int],
                decided: set[str]) -> None:
        """Whether the session of ``event`` ran in an excluded folder, once its cwd is known or
        enough of its events passed without one."""
        session = event["session"]
        cwd = exclude_mod.session_cwd(event)
        glob = self.exclude.match(cwd) if cwd is not None else None
        if glob is not None:
            kept_out[session] = f"ran in {cwd}, which matches ingest.exclude {glob!r}"
        seen = undecided.get(session, 0) + 1
        if cwd is not None or seen >= _CWD_LOOKAHEAD:
            decided.add(session)
            undecided.pop(session, None)
        else:
            undecided[session] = seen

    def _ingest_prepared(self, source: sources_mod.Source, ctx: ParseContext, workers: int, report: SourceReport,
                         occurrences: Counter[tuple[str, str]], kept_out: Mapping[str, str],
                         marked: dict[str, str]) -> None:
        """Add a memdream-format file that worker processes parse and redact, in file order.

        :meth:`_add_chunk` is :meth:`_store` for prepared events (see :mod:`.prepare`), written out:
        it is the one part of a parallel ingest that runs in this process alone. Sessions in
        ``kept_out`` are left out; those whose user wrote the keep-out marker are noted in ``marked``.
        """
        assert self.writer is not None and source.path is not None
        if self.pool is None or self.pool.size != workers:
            self.close_pool()
            self.writer.flush()  # forked workers must not inherit unwritten buffers
            from memdream.ingest.workers import ChunkPool

            self.pool = ChunkPool(workers, self.redactor)
        from memdream.ingest.workers import chunk_jobs

        ctx.unterminated = _unterminated_line(source.path)
        jobs = chunk_jobs(source.name, source.path, ctx.default_session, ctx.session, ctx.strict)
        forgotten = self.forgotten if self.forgotten else None
        base = 0  # lines before the current chunk
        for prepared, lines in self.pool.prepare(jobs):
            self._add_chunk(prepared, base, ctx, report, occurrences, kept_out, marked, forgotten)
            base += lines

    def _add_chunk(self, prepared: list[Prepared], base: int, ctx: ParseContext, report: SourceReport,
                   occurrences: Counter[tuple[str, str]], kept_out: Mapping[str, str], marked: dict[str, str],
                   forgotten: Forgotten | None) -> None:
        """The records of one prepared chunk, in order. The new events' lines are written together, once at
        the end of the chunk and before any event that goes through :meth:`_store` (which writes at once),
        so that the order of the file holds."""
        assert self.writer is not None
        pending = _Pending()
        claim, ids_of, own, advance = self.seen.claim, self.seen.ids_of, self.seen.own, self.tagger.advance
        tags_json = self._tags_json
        # Bound once: a method call an event to add a line costs more than the rest of adding it.
        add_line, add_session, add_id, add_stamp = (pending.lines.append, pending.sessions.append,
                                                    pending.ids.append, pending.stamps.append)
        ids: dict[str, int] = {}
        last_session = None
        read = added = duplicates = 0
        for record in prepared:
            if record[0] != READY:
                pending.write_to(self.writer)
                self._store_other(record, base, ctx, report, occurrences, kept_out, marked)
                continue
            # A READY record is a plain tuple laid out as Ready: unpacked, not built into one (1 us an event).
            (_, number, session, event_id, ts, kind, tool, failed, goal, own_tags, untrusted, fingerprint,
             head, tail, redactions) = record
            if session in kept_out:
                continue
            if forgotten is not None and forgotten.holds(session, event_id):
                read += 1
                report.forgotten += 1
                continue
            if kind == "message" and exclude_mod.bytes_say_off(tail) \
                    and exclude_mod.says_off(_event_of(head, own_tags, tail)):
                marked[session] = exclude_mod.MARKED_OFF
            if session is not last_session:  # a session's events mostly come together
                ids, last_session = ids_of(session), session
            if event_id in ids:  # not new: a repeated id, or one stored already
                if claim(session, event_id) == REPEATED:
                    ctx.bad(base + number, memdream_jsonl.repeated_id(session, event_id))
                    continue
                if self._same_as_stored(session, event_id, head, own_tags, tail):
                    read += 1
                    duplicates += 1
                else:  # the id holds other content: the event is stored under another
                    pending.write_to(self.writer)
                    self._store(_event_of(head, own_tags, tail), report, occurrences,
                                (redactions, (untrusted, fingerprint)))
                continue
            ids[event_id] = own  # claimed: new in this input
            read += 1
            episode, salience = advance(session, kind, tool, failed, goal, untrusted, fingerprint)
            if own_tags:
                tags = orjson.dumps(merge_tags(own_tags, [episode_tag(episode), *salience]))
                if FUTURE_TAG in own_tags:
                    report.future_timestamps += 1
            else:
                tags = tags_json.get((episode, salience)) or self._new_tags_json(episode, salience)
            add_line(head + tags + tail)
            add_session(session)
            add_id(event_id)
            add_stamp(ts)
            added += 1
            if redactions:
                report.redactions.update(redactions)
        pending.write_to(self.writer)
        report.read += read
        report.added += added
        report.duplicates += duplicates

    def _new_tags_json(self, episode: int, salience: tuple[str, ...]) -> bytes:
        """The JSON of an event's tags when it came with none: kept, since a big file's events share a
        few hundred (an episode number and one of a few salience tuples)."""
        if len(self._tags_json) >= _TAGS_JSON_MAX:
            self._tags_json.clear()
        data = self._tags_json[(episode, salience)] = orjson.dumps([episode_tag(episode), *salience])
        return data

    def _store_other(self, record: tuple[Any, ...], base: int, ctx: ParseContext, report: SourceReport,
                     occurrences: Counter[tuple[str, str]], kept_out: Mapping[str, str],
                     marked: dict[str, str]) -> None:
        """A prepared bad line, or an event without id (its id depends on the events before it)."""
        if record[0] == BAD:
            ctx.bad(base + record[1], record[2])
            return
        _, _, data, counts, hints = record
        event = jsonio.loads(data)
        if event["session"] in kept_out:
            return
        if exclude_mod.says_off(event):
            marked[event["session"]] = exclude_mod.MARKED_OFF
        self._store(event, report, occurrences, (counts, hints))

    def close_pool(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def _format_of(self, source: sources_mod.Source, head: str, detect_format: bool) -> tuple[str, bool]:
        """The source's format, and whether its records span lines (pretty-printed JSON records, joined
        into one line each before the adapter reads them: :func:`memdream.ingest.sources.joined_records`)."""
        if self.options.fmt != "auto" and not detect_format:
            return self.options.fmt, sources_mod.spans_lines(head) and detect(head) is None
        if source.path is not None and memory_files.is_memory_file(source.path):
            return memory_files.NAME, False  # Markdown has no signature: CLAUDE.md, AGENTS.md are told by name
        found = detect(head)
        if found is not None:
            return found, False
        if sources_mod.spans_lines(head):  # no format reads it as it is: perhaps as records, one a line
            found = detect("".join(sources_mod.joined_records(head.splitlines(keepends=True))))
            if found is not None:
                return found, True
        raise InvalidInput(f"{source.name}: unknown log format (pass --log-format; known: "
                           f"{', '.join(NAMES)})")

    def _store(self, event: dict[str, Any], report: SourceReport, occurrences: Counter[tuple[str, str]],
               prepared: tuple[Mapping[str, int] | None, Hints | None] | None = None) -> None:
        """Add one event unless it is stored already; ``prepared``: its redactions and salience
        hints when a worker already redacted it."""
        report.read += 1
        if "actor" not in event:
            event["actor"] = DEFAULT_ACTOR[event["kind"]]
        if prepared is None and "id" in event and (event["session"], event["id"]) in self.seen \
                and self.contents.get(event["session"], event["id"]) == fingerprint(event):
            # The usual duplicate holds nothing to redact: known without redacting it first.
            report.duplicates += 1
            return
        redactions: Mapping[str, int] | None
        if prepared is None:
            redactions, hints = redact_event(self.redactor, event), None
        else:
            redactions, hints = prepared
        if redactions:
            # A placeholder longer than its secret can push a value over its cap: cut before the
            # content is compared, so that it is compared as it is stored.
            fit_caps(event)
        if "id" not in event:
            event["id"] = _derived_id(event, occurrences)
        if self.forgotten and self.forgotten.holds(event["session"], event["id"]):
            report.forgotten += 1
            return
        content = fingerprint(event)
        if not self._claim(event, content, report):
            report.duplicates += 1
            return
        self.tagger.tag(event, hints)
        # Adapters yield schema-valid events, and tags, actor and id keep them valid; only a
        # redaction can make one invalid.
        if redactions:
            problem = first_error(event)
            if problem is not None:  # a bug, not bad input
                raise MemdreamError(f"{report.source}: produced an invalid event ({problem})")
            report.redactions.update(redactions)
        self.writer.write(canonical_bytes(event), event)  # type: ignore[union-attr]
        self.seen.add(event["session"], event["id"])
        self.contents.add(event["session"], event["id"], content)
        report.added += 1
        if FUTURE_TAG in event["tags"]:
            report.future_timestamps += 1
        meta = event.get("meta")
        if meta and meta.get("ts_synthetic") is True:
            report.synthetic_timestamps += 1

    def _claim(self, event: dict[str, Any], content: str, report: SourceReport) -> bool:
        """Whether ``event`` is new. An id stored with the same content is a duplicate; one stored
        with other content is a collision, and the event takes ``<id>~<digest of its content>``
        (a re-ingest finds it there)."""
        session, own = event["session"], event["id"]
        event_id, attempt = own, 0
        while (session, event_id) in self.seen:
            stored = self.contents.get(session, event_id)
            if stored is None or stored == content:  # None: prepared by workers this run, not kept
                return False
            attempt += 1
            event_id = collision_id(own, content, attempt)
        if attempt:
            event["id"] = event_id
            report.id_collisions += 1
        return True

    def _same_as_stored(self, session: str, event_id: str, head: bytes, own_tags: list[str] | None,
                        tail: bytes) -> bool:
        """Whether a prepared event whose id is stored already holds the stored content."""
        stored = self.contents.get(session, event_id)
        return stored is None or stored == fingerprint(_event_of(head, own_tags, tail))

    def finish(self) -> list[SegmentRecord]:
        assert self.writer is not None
        self.close_pool()
        records = self.writer.publish(self.now)
        yamlio.write_atomic(self.state_path, json.dumps(self.tagger.state(), sort_keys=True))
        return records

    def abort(self) -> None:
        self.close_pool()
        if self.writer is not None:
            self.writer.abort()


class _Pending:
    """Lines of new events waiting to be written together, with what the raw layer's index takes."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.sessions: list[str] = []
        self.ids: list[str] = []
        self.stamps: list[str] = []

    def write_to(self, writer: SegmentWriter) -> None:
        if self.lines:
            writer.write_lines(self.lines, self.sessions, self.ids, self.stamps)
            for column in (self.lines, self.sessions, self.ids, self.stamps):
                column.clear()  # in place: the caller holds their append methods


_TAGS_JSON_MAX = 65_536  # serialized tags kept at most (episode numbers grow with a session's length)
_PROGRESS_EVERY = 512  # events between two updates of a progress bar
_CWD_LOOKAHEAD = 8  # events of a session read before deciding it names no folder


def _size_of(source: sources_mod.Source) -> int | None:
    try:
        return source.path.stat().st_size if source.path is not None else None
    except OSError:
        return None


def _unterminated_line(path: Path) -> int | None:
    """The number of the file's last line when it has no line end (the file is still being written)."""
    with open(path, "rb") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return None
        handle.seek(size - 1)
        if handle.read(1) == b"\n":
            return None
        handle.seek(0)
        return sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b"")) + 1


def _advancing(events: Iterator[dict[str, Any]], stream: Any, advance: Advance) -> Iterator[dict[str, Any]]:
    """``events``, moving the progress bar by the bytes read every few hundred of them."""
    done = 0
    for count, event in enumerate(events, start=1):
        if count % _PROGRESS_EVERY == 0:
            position = stream.tell()
            advance(position - done)
            done = position
        yield event


def _event_of(head: bytes, own_tags: list[str] | None, tail: bytes) -> dict[str, Any]:
    """A prepared event as a dict again (its canonical JSON cut around ``tags``)."""
    event: dict[str, Any] = jsonio.loads(head + orjson.dumps(own_tags or []) + tail)
    if not own_tags:
        del event["tags"]
    return event


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
    if options.fmt != "auto" and options.fmt not in NAMES:
        raise InvalidInput(f"unknown format {options.fmt!r} (known: auto, {', '.join(NAMES)})")
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
                except InvalidInput as error:  # ingest_source has dropped what this file added
                    # One file of a folder never stops the others; --strict makes it stop the run.
                    if not source.in_folder or options.strict:
                        raise
                    report.skipped_files.append(_without_prefix(str(error), source.name))
                except (PermissionError, FileNotFoundError) as error:  # unreadable, or gone since the walk
                    if not source.in_folder or options.strict:
                        raise
                    report.skipped_files.append(f"{source.name}: cannot read ({error.strerror or error})")
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
        if gitops.is_repo(memory.root) and manifest_commit.commit_now(memory, now_iso()) and (
                report.segments or report.recovered or manifest_commit.pending(memory)):
            report.commit = _commit_manifest(memory, report)
    return report


def _without_prefix(message: str, name: str) -> str:
    """``<name>: <why>`` once, whether or not the error already names the file."""
    return message if message.startswith(name) else f"{name}: {message}"


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


def _commit_manifest(memory: Memory, report: IngestReport) -> str:
    """Record the new segments' hashes in git (raw/ itself is not tracked unless configured);
    with ``ingest.commit: each`` or ``daily`` only: by default the next dream commits them."""
    events = sum(record.events for record in report.segments)
    return manifest_commit.commit(memory, f"memdream ingest: {events} event(s) in {len(report.segments)} segment(s)",
                                  [record.segment for record in report.segments])
