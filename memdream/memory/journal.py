"""Crash safety for every writer of tracked memory files (dream, rollback): the journal, recovery,
and the clean-tree check.

A writer takes the writer lock, checks that no person's edit is uncommitted (:func:`require_clean`),
writes a journal (:func:`begin`) before it touches a tracked file, commits, and removes the journal
(:func:`end`). A journal without its commit means a writer was killed halfway (kill -9, a full
disk): tracked files may be half swapped in. The next writer puts them back as HEAD has them
(:func:`recover`); readers refuse such a memory instead of reading half-written files
(:func:`require_settled`). The checkpoint of dream's local state is advanced only after a commit, so
a recovered dream picks up the same events again.

Kept free of heavy imports: recall checks :func:`require_settled` on every call, so git is imported
only by the functions that run it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from memdream.errors import GitError, InterruptedDream
from memdream.memory import trailers as trailer
from memdream.memory.paths import (
    ARCHIVE_DIR,
    AUDIT_DIR,
    CARDS_DIR,
    CONFIG_FILE,
    INDEX_FILE,
    PLAN_FILE,
    STATE_DIR,
    dream_state_path,
)

PENDING_MESSAGE = "an interrupted dream is pending; run `memdream dream` to recover"
# The files a writer changes and commits, and puts back when it was killed before its commit.
TRACKED = [CARDS_DIR, ARCHIVE_DIR, PLAN_FILE, INDEX_FILE, AUDIT_DIR]


def journal_path(root: Path) -> Path:
    """Where the journal of the memory at ``root`` lives."""
    return Path(root) / STATE_DIR / "dream" / "journal.json"


def dream_pending(root: Path) -> bool:
    """Whether a killed writer left its journal (one ``stat``: recall's start-up pays for it)."""
    return os.path.exists(journal_path(root))


def require_settled(root: Path) -> None:
    """Readers refuse a memory with an interrupted writer instead of reading half-written files."""
    if dream_pending(root):
        raise InterruptedDream(PENDING_MESSAGE)


def begin(root: Path, run_id: str, named_by: str = trailer.RUN, **fields: str) -> Path:
    """Write the journal before touching a tracked file: the commit that will finish the work carries
    the trailer ``named_by: run_id``, which is how :func:`recover` tells finished from killed."""
    from memdream.yamlio import write_atomic

    journal = journal_path(root)
    write_atomic(journal, json.dumps({"run": run_id, "trailer": named_by, **fields}))
    return journal


def end(root: Path) -> None:
    """The work is committed (or there was nothing to commit): no recovery needed."""
    journal_path(root).unlink(missing_ok=True)


def recover(root: Path, state_dir: Path) -> bool:
    """Finish or undo a writer that was killed; True when something had to be done. Its commit made,
    only the journal is left over; not made, the tracked files come back as HEAD has them. Either way
    dream's local state may not match HEAD any more: it is rebuilt from git and raw/ next time."""
    from memdream import gitops
    from memdream.memory.lock import index_lock

    journal = journal_path(root)
    if not journal.exists():
        return False
    data = json.loads(journal.read_text(encoding="utf-8"))
    # A dream's commit names its run; a rollback's names its own id (memdream.review.rollback).
    run_id, named_by = str(data.get("run", "")), str(data.get("trailer", trailer.RUN))
    message = gitops.last_message_matching(root, f"^{named_by}: {run_id}$") if run_id else None
    if message is None:
        gitops.restore_paths(root, TRACKED, index_lock=index_lock(state_dir))
    dream_state_path(state_dir).unlink(missing_ok=True)
    journal.unlink()
    return True


def require_clean(root: Path, doing: str) -> None:
    """Refuse uncommitted changes to memory files before ``doing`` (ingest's raw manifest waiting for
    the next dream is bookkeeping, not a change: it is not looked at)."""
    CleanCheck(root, doing).wait()


class CleanCheck:
    """:func:`require_clean`, started: in the memory's own repository git compares every tracked file
    while the writer reads its caches (a dream's card cache takes longer than git's check), and
    :meth:`wait` refuses as require_clean would. ``also``: paths whose changes are bookkeeping, not a
    person's edit (ingest's raw manifest): checked by the same git status, given back by :meth:`wait`.
    Who starts one waits for it, or closes it."""

    def __init__(self, root: Path, doing: str, also: Sequence[str] = ()) -> None:
        from memdream import gitops

        if not gitops.is_repo(root):
            raise GitError(f"{root} is not a git repository (create memories with `memdream init`)")
        self.doing, self.also = doing, list(also)
        self.status: gitops.Status | None = None
        self.project_dirty: list[str] = []
        self.project_also: list[str] = []
        watched = [*TRACKED, CONFIG_FILE]
        if gitops.in_project(root):  # staged is what the last dream wrote there: only a person's edits count
            self.project_dirty = gitops.unstaged_paths(root, watched)
            self.project_also = gitops.status_paths(root, self.also) if self.also else []
        else:
            self.status = gitops.start_status(root, [*watched, *self.also])

    def wait(self) -> list[str]:
        """The changed paths under ``also``; a person's uncommitted change is one line of GitError."""
        if self.status is None:
            if self.project_dirty:
                raise GitError(f"unstaged changes in {_some(self.project_dirty)}: stage (git add) or undo them "
                               f"before {self.doing}")
            return self.project_also
        changed = self.status.paths()
        also = [path for path in changed if any(_under(path, name) for name in self.also)]
        dirty = [path for path in changed if path not in also]
        if dirty:
            raise GitError(f"uncommitted changes in {_some(dirty)}: commit or stash them before {self.doing}")
        return also

    def close(self) -> None:
        if self.status is not None:
            self.status.close()


def _some(paths: list[str]) -> str:
    return paths[0] + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")


def _under(path: str, name: str) -> bool:
    return path == name or path.startswith(name.rstrip("/") + "/")


def pause_for_tests() -> None:
    """Crash tests kill a writer here, between the file swap and the commit."""
    marker = os.environ.get("MEMDREAM_TEST_PAUSE_BEFORE_COMMIT")
    if marker:
        Path(marker).touch()
        time.sleep(60)
