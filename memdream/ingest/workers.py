"""Worker processes that prepare chunks of a big memdream-format file while ingest writes.

Parsing, checking and redacting an event (:mod:`.prepare`) depend on that event alone and
are most of ingest's work; ids, dedup, salience and writing depend on order and stay in the
ingest process. A file is cut into chunks of whole lines; each worker reads its chunks from
the file itself (only small job descriptions and the prepared results cross the pipes, so
the ingest process never blocks on sending) and results come back in file order.

Workers are forked, so they start with everything imported and cost a few milliseconds. A
worker closes every inherited pipe end but its own: when the ingest process dies, even by
kill -9, each worker reads end-of-file on its pipe and exits. Workers ignore Ctrl-C; the
ingest process handles it and closes the pool.
"""

from __future__ import annotations

import gc
import marshal
import os
import pickle
import signal
from collections import deque
from collections.abc import Iterable, Iterator
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from memdream.errors import MemdreamError
from memdream.ingest.prepare import ChunkJob, LineScan, Prepared, prepare_chunk
from memdream.redact import Redactor

CHUNK_BYTES = 1 << 20  # ~3,000 typical events: big enough to amortize a round trip, small enough to stream
PARALLEL_MIN_BYTES = 2 << 20  # below this (one chunk), "auto" prepares inline: workers would not overlap
MAX_AUTO_WORKERS = 4  # the ingest process writes alone; more workers would wait for it
IN_FLIGHT_PER_WORKER = 2  # chunks queued per worker: keeps it busy, bounds memory
_JOIN_SECONDS = 5.0
_DONE, _FAILED = b"D", b"F"  # first byte of a worker's answer
_DIED = "an ingest worker process died; nothing of this run was kept"



def available_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count(setting: Any, size: int) -> int:
    """Workers for a memdream-format file of ``size`` bytes; 0: prepare it inline.

    ``setting`` is ``ingest.workers``: "auto" (parallel for big files when there are cores to
    spare), 0 (never) or a number of workers (always, whatever the size).
    """
    if "fork" not in get_all_start_methods():
        return 0
    if setting == "auto":
        cores = available_cores()
        return min(cores, MAX_AUTO_WORKERS) if cores > 1 and size >= PARALLEL_MIN_BYTES else 0
    return max(int(setting), 0)


def chunk_jobs(source: str, path: Path, default_session: str, session: str | None,
               strict: bool) -> Iterator[ChunkJob]:
    """The file cut into chunks of about CHUNK_BYTES that start and end at line boundaries.

    The file is read up to the size it has now; lines appended while ingest runs wait for the
    next run (the raw layer's dedup makes that safe).
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        offset, step = 0, CHUNK_BYTES // 4  # a small first chunk: the ingest process starts sooner
        while offset < size:
            end = offset + step
            step = CHUNK_BYTES
            if end < size:
                handle.seek(end)
                handle.readline()  # to the end of the line the cut fell in
                end = min(handle.tell(), size)
            else:
                end = size
            yield ChunkJob(source, str(path), offset, end - offset, default_session, session, strict)
            offset = end


class ChunkPool:
    """A fixed set of forked workers preparing :class:`ChunkJob` s, results in job order."""

    def __init__(self, count: int, redactor: Redactor) -> None:
        context = get_context("fork")
        pipes = [context.Pipe(duplex=True) for _ in range(count)]
        ends = [end for pipe in pipes for end in pipe]
        self._processes: list[BaseProcess] = []
        scan = LineScan(redactor)  # built once: forked workers start with it (and the redactor)
        gc.freeze()  # the workers never collect what ingest holds: its pages stay shared
        try:
            for _, child_end in pipes:
                others = [end for end in ends if end is not child_end]
                process = context.Process(target=_serve, args=(child_end, others, redactor, scan), daemon=True,
                                          name="memdream-ingest-worker")
                process.start()
                self._processes.append(process)
        except BaseException:
            for end in ends:
                end.close()
            self._stop()
            raise
        finally:
            gc.unfreeze()
        for _, child_end in pipes:
            child_end.close()
        self._conns: list[Connection] = [parent_end for parent_end, _ in pipes]

    @property
    def size(self) -> int:
        return len(self._processes)

    def prepare(self, jobs: Iterable[ChunkJob]) -> Iterator[tuple[list[Prepared], int]]:
        """(prepared lines, line count) of every job, in the order of ``jobs``."""
        queue = iter(jobs)
        order: deque[int] = deque()  # the worker holding each outstanding job, oldest first
        turn = 0

        def submit() -> None:
            nonlocal turn
            job = next(queue, None)
            if job is not None:
                try:
                    self._conns[turn].send(job)
                except (OSError, ValueError):  # the worker is gone (its pipe is closed)
                    raise MemdreamError(_DIED) from None
                order.append(turn)
                turn = (turn + 1) % len(self._conns)

        for _ in range(IN_FLIGHT_PER_WORKER * len(self._conns)):
            submit()
        while order:
            worker = order.popleft()
            try:
                message = self._conns[worker].recv_bytes()
            except (EOFError, OSError):
                raise MemdreamError(_DIED) from None
            if message[:1] == _FAILED:
                raise pickle.loads(message[1:])
            submit()
            yield marshal.loads(memoryview(message)[1:])

    def close(self) -> None:
        """Stop the workers; jobs still queued are dropped (closing the pipes tells them)."""
        for conn in self._conns:
            conn.close()
        self._stop()

    def _stop(self) -> None:
        for process in self._processes:
            process.join(_JOIN_SECONDS)
            if process.is_alive():
                process.terminate()
                process.join()


def _serve(conn: Connection, others: list[Connection], redactor: Redactor, scan: LineScan) -> None:
    """A worker's loop: jobs in, prepared chunks out, until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for other in others:  # only the ingest process may hold the other ends, or EOF never comes
        other.close()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            # marshal: the same interpreter on both ends, and ~3x faster than pickle for these tuples
            message = _DONE + marshal.dumps(prepare_chunk(job, redactor, scan))
        except Exception as error:  # noqa: BLE001 - reported by the ingest process, in file order
            try:
                message = _FAILED + pickle.dumps(error)
            except Exception:  # noqa: BLE001 - an error that does not pickle: send its text
                message = _FAILED + pickle.dumps(MemdreamError(f"ingest worker: {error}"))
        try:
            conn.send_bytes(message)
        except (OSError, ValueError):
            return  # the ingest process is gone
