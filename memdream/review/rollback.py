"""Undo dreams: put the memory's files back as they were before a run, as a new commit.

History is kept (a rollback is a commit of its own, like `git revert`), the undone runs are
named in its trailers, and their raw events are quarantined in the dream ledger so that the
next scheduled dream does not simply make the same cards again (dreaming is deterministic).
``redream`` releases them instead: the next dream reads them again, after a rule or a setting
was fixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream import gitops
from memdream.dream import ledger as ledger_mod
from memdream.errors import GitError, MemdreamError, UsageError
from memdream.memory import journal
from memdream.memory import trailers as trailer
from memdream.memory.journal import TRACKED, pause_for_tests
from memdream.memory.lock import WRITER_WAIT_SECONDS, index_lock, lock_wait_seconds, writer_lock
from memdream.memory.paths import dream_state_path
from memdream.memory.store import Memory
from memdream.review.history import DreamRun, find_run, live_dreams, undone_runs


@dataclass
class RollbackResult:
    target: str  # the commit whose memory files are restored
    undone: list[DreamRun]  # newest first
    dry_run: bool
    redream: bool
    files: list[str] = field(default_factory=list)  # memory files the rollback changes
    commit: str | None = None
    released_only: bool = False  # the runs were rolled back before: only their events were released

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "dry_run": self.dry_run, "commit": self.commit,
            "undone": [{"run": item.run, "commit": item.commit, "time": item.time} for item in self.undone],
            "events": "redream" if self.redream else "quarantined", "released_only": self.released_only,
            "files": self.files,
        }


def _find_run(root: Path, wanted: str) -> DreamRun:
    """A dream run by its id, or by a unique prefix of it."""
    found = find_run(root, wanted)
    if found is None:
        raise MemdreamError(f"no dream run {wanted!r} in this memory's history, or more than one whose id "
                            "starts so (see `memdream log`)")
    return found


def rollback(memory: Memory, run: str | None = None, to: str | None = None, dry_run: bool = False,
             force: bool = False, redream: bool = False) -> RollbackResult:
    """Undo the dream ``run`` (default: the last one not undone yet) or every dream after ``to``.

    Refuses while the memory has uncommitted changes (ingest's manifest waiting for the next
    dream does not count), when later dreams built on the run unless ``force``, and always when it would
    go back past a `memdream forget` (it would restore what was erased).
    """
    if run is not None and to is not None:
        raise UsageError("give --run or --to, not both")
    if not gitops.is_repo(memory.root):
        raise GitError(f"{memory.root} is not a memory repository: rollback needs its own git history")
    if gitops.in_project(memory.root):
        raise GitError(f"{memory.root} is a folder of the repository {gitops.project_top(memory.root)}: memdream "
                       "does not make commits on your branch there; undo a dream with git in that repository")
    with writer_lock(memory.paths.state, wait_seconds=lock_wait_seconds(WRITER_WAIT_SECONDS)):
        if dry_run:  # writes nothing, so it cannot recover: it must not read half-written files
            journal.require_settled(memory.root)
        else:
            # A dream or rollback killed halfway: its files come back as HEAD has them.
            journal.recover(memory.root, memory.paths.state)
        undone_before = undone_runs(memory.root)
        if run is not None:
            chosen = _find_run(memory.root, run)
            if chosen.run in undone_before:
                return _already_undone(memory, chosen, undone_before[str(chosen.run)], dry_run, redream)
            target = _parent(memory, chosen)
        elif to is not None:
            target = gitops.resolve(memory.root, to)
            if not gitops.is_ancestor(memory.root, target):
                raise UsageError(f"--to {to}: {target[:10]} is not in the history of HEAD")
        else:
            live = live_dreams(memory.root)
            if not live:
                raise MemdreamError("no dream to roll back (see `memdream log`)")
            target = _parent(memory, live[0])
        _refuse_crossing_a_forget(memory.root, target)
        undone = live_dreams(memory.root, f"{target}..HEAD")
        if not undone:
            raise MemdreamError(f"no dream after {target[:10]} to roll back (see `memdream log`)")
        if run is not None and len(undone) > 1 and not force:
            later = ", ".join(str(item.run) for item in undone[:-1])
            raise MemdreamError(f"later dream(s) built on run {undone[-1].run}: {later}; "
                                "`--force` undoes them too, or roll back the later ones first")
        journal.require_clean(memory.root, "rolling back")
        result = RollbackResult(target, undone, dry_run, redream,
                                files=[change.path for change in gitops.changes(memory.root, "HEAD", target, TRACKED)])
        if dry_run:
            return result
        # Crash safety as a dream's: the journal first; a rollback killed before its commit is
        # undone by the next writer (the files come back as HEAD has them).
        rollback_id = f"{target[:12]}-{gitops.resolve(memory.root)[:12]}"
        journal.begin(memory.root, rollback_id, named_by=trailer.ROLLBACK_ID)
        gitops.restore_from(memory.root, target, TRACKED, index_lock=index_lock(memory.paths.state))
        pause_for_tests()
        result.commit = gitops.commit(memory.root, _subject(undone), _body(result),
                                      [*_trailers(result), (trailer.ROLLBACK_ID, rollback_id)], paths=TRACKED,
                                      allow_empty=True, index_lock=index_lock(memory.paths.state))
        journal.end(memory.root)
        _update_ledger(memory, result.commit)
        return result


def _refuse_crossing_a_forget(root: Path, target: str) -> None:
    """A rollback restores files as ``target`` had them: past a `memdream forget` commit that would bring
    back what was erased, so it is refused (roll back only the dreams after the forget, or dream again)."""
    crossed = gitops.commits_with_trailers(root, [trailer.FORGET], f"{target}..HEAD")
    if crossed:
        raise MemdreamError(f"rolling back to {target[:10]} would undo `memdream forget` (commit {crossed[0].short}) "
                            "and bring back what it erased; roll back only dreams made after it")


def _parent(memory: Memory, chosen: DreamRun) -> str:
    parents = gitops.commit_info(memory.root, chosen.commit).parents
    if not parents:
        raise MemdreamError(f"run {chosen.run} is the first commit: nothing to go back to")
    return parents[0]


def _already_undone(memory: Memory, chosen: DreamRun, by: str, dry_run: bool, redream: bool) -> RollbackResult:
    """A run rolled back before: with --redream its quarantined events are released, nothing else."""
    if not redream:
        raise MemdreamError(f"run {chosen.run} was rolled back already (commit {by[:10]}); "
                            "`--redream` releases its events for the next dream")
    result = RollbackResult(by, [chosen], dry_run, True, released_only=True)
    if dry_run:
        return result
    journal.require_clean(memory.root, "re-dreaming")
    result.commit = gitops.commit(
        memory.root, f"memdream rollback: dream run {chosen.run}'s events again",
        "The events this run consumed wait for the next dream.",
        [(trailer.REDREAM, str(chosen.run))], paths=TRACKED, allow_empty=True,
        index_lock=index_lock(memory.paths.state))
    _update_ledger(memory, result.commit)
    return result


def _update_ledger(memory: Memory, head: str) -> None:
    # HEAD moved, so the ledger is rebuilt from the trailers, this commit's included.
    ledger_mod.save(memory.paths.state, ledger_mod.load(memory.paths.state, memory.root), head)
    # The admission statistics counted the undone runs' events: rebuilt by the next dream without them.
    dream_state_path(memory.paths.state).unlink(missing_ok=True)


def _subject(undone: list[DreamRun]) -> str:
    later = f" and {len(undone) - 1} later run(s)" if len(undone) > 1 else ""
    return f"memdream rollback: undo dream run {undone[-1].run}{later}"


def _body(result: RollbackResult) -> str:
    fate = ("their events wait for the next dream (--redream)" if result.redream
            else "their events are quarantined: the next dream leaves them alone")
    lines = [f"memory files restored as of {result.target[:10]}; {fate}", ""]
    lines += [f"undone: {item.run} ({item.short}, {item.subject})" for item in result.undone]
    return "\n".join(lines)


def _trailers(result: RollbackResult) -> list[tuple[str, str]]:
    pairs = [(trailer.ROLLBACK, str(item.run)) for item in result.undone]
    fate = trailer.REDREAM if result.redream else trailer.QUARANTINE
    pairs += [(fate, str(item.run)) for item in result.undone]
    pairs.append((trailer.ROLLBACK_TO, result.target))
    return pairs
