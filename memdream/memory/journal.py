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
    from memdream import gitops

    if not gitops.is_repo(root):
        raise GitError(f"{root} is not a git repository (create memories with `memdream init`)")
    watched = [*TRACKED, CONFIG_FILE]
    if gitops.in_project(root):  # staged is what the last dream wrote there: only a person's edits count
        dirty = gitops.unstaged_paths(root, watched)
        if dirty:
            more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
            raise GitError(f"unstaged changes in {dirty[0]}{more}: stage (git add) or undo them before {doing}")
        return
    dirty = gitops.status_paths(root, watched)
    if dirty:
        more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
        raise GitError(f"uncommitted changes in {dirty[0]}{more}: commit or stash them before {doing}")


def pause_for_tests() -> None:
    """Crash tests kill a writer here, between the file swap and the commit."""
    marker = os.environ.get("MEMDREAM_TEST_PAUSE_BEFORE_COMMIT")
    if marker:
        Path(marker).touch()
        time.sleep(60)
