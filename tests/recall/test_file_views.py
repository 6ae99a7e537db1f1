"""Recall withholds a raw event that shows a file's old content once the log holds what the file holds
now (memdream.recall.file_views; docs/recall.md, "Outdated file views")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memdream.recall.file_views import CHANGE, DELETE, PARTIAL, SHOW, Change, Effect, FileHistory, effects
from tests.recall.helpers import check_contract, recall_json, write_events

QUESTION = "how do I run the pytest checks with coverage"


def result(event_id: str, ts: str, command: str, text: str, session: str = "s-1", ok: bool = True) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": ts, "kind": "tool_result", "tool": command.split()[0],
            "args": {"command": command}, "ok": ok, "text": text}


def opening(session: str, ts: str, cwd: str) -> dict[str, Any]:
    return {"session": session, "id": f"{session}-m", "ts": ts, "kind": "message", "actor": "user",
            "text": "tidy the build", "meta": {"cwd": cwd}}


OLD_JUSTFILE = "check:\n    uv run pytest --cov=src --cov-fail-under=100\ntest:\n    uv run pytest\n"
NEW_JUSTFILE = "check:\n    cargo llvm-cov --fail-under-lines 100\ntest:\n    cargo test\n"


# -- what an event does to a file ------------------------------------------------------------------
@pytest.mark.parametrize(("command", "expected"), [
    ("Read /repo/Justfile", [Effect(SHOW, "/repo/Justfile")]),
    ("Write /repo/Justfile", [Effect(CHANGE, "/repo/Justfile"), Effect(SHOW, "/repo/Justfile")]),
    ("MultiEdit /repo/CLAUDE.md", [Effect(CHANGE, "/repo/CLAUDE.md")]),
    ("cat package.json", [Effect(SHOW, "/work/app/package.json")]),
    ("cd web && cat package.json", [Effect(SHOW, "/work/app/web/package.json")]),
    ("sed -n '1,200p' src/app.py", [Effect(PARTIAL, "/work/app/src/app.py")]),
    ("sed -i 's/a/b/' src/app.py", [Effect(CHANGE, "/work/app/src/app.py")]),
    ("rm -f old.txt ../notes.md", [Effect(DELETE, "/work/app/old.txt"), Effect(DELETE, "/work/notes.md")]),
    ("git mv a.py b.py", [Effect(DELETE, "/work/app/a.py"), Effect(CHANGE, "/work/app/b.py")]),
    # Not one simple command, a glob, or a file not named: nothing is known of which file it showed.
    ("cat a.txt | head", []),
    ("cat a.txt && cat b.txt", []),
    ("rm *.pyc", []),
    ("cat -n a.txt", []),
    ("pytest -q", []),
])
def test_effects_of_tool_results(command: str, expected: list[Effect]) -> None:
    assert effects(result("r", "2026-01-01T00:00:00Z", command, ""), "/work/app") == expected


def test_a_failed_result_changed_nothing_and_a_relative_path_without_a_folder_stays_in_its_session() -> None:
    assert effects(result("r", "2026-01-01T00:00:00Z", "Edit /repo/a.py", "", ok=False), None) == []
    assert effects(result("r", "2026-01-01T00:00:00Z", "cat a.txt", "", session="s-9"), None) == [
        Effect(SHOW, "s-9:a.txt")]


def test_a_patch_is_read_from_its_call() -> None:
    call = {"session": "s-1", "id": "c", "ts": "2026-01-01T00:00:00Z", "kind": "tool_call", "tool": "apply_patch",
            "args": {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Delete File: old.py\n"
                              "*** Update File: b.py\n*** Move to: c.py\n*** End Patch\n"}}
    assert effects(call, "/w") == [Effect(CHANGE, "/w/src/a.py"), Effect(DELETE, "/w/old.py"),
                                   Effect(CHANGE, "/w/b.py"), Effect(CHANGE, "/w/c.py")]
    shell = {**call, "tool": "shell", "args": {"command": ["bash", "-lc", "apply_patch <<'P'\n*** Begin Patch\n"
                                                         "*** Add File: new.md\n+hi\n*** End Patch\nP"]}}
    assert effects(shell, "/w") == [Effect(CHANGE, "/w/new.md")]


# -- when a view is outdated -----------------------------------------------------------------------
def history(changes: list[tuple[float, bool]], shown: list[float]) -> FileHistory:
    made = FileHistory()
    for epoch, deleted in changes:
        made.add_change("/f", Change(epoch, f"log://s#{epoch}", deleted))
    for epoch in shown:
        made.add_shown("/f", epoch)
    return made.seal()


def test_a_view_is_outdated_only_when_the_file_changed_after_it_and_its_new_state_is_known() -> None:
    assert history([(20.0, False)], [10.0, 30.0]).outdated_by("/f", 10.0) == Change(20.0, "log://s#20.0", False)
    assert history([(20.0, False)], [10.0]).outdated_by("/f", 10.0) is None  # an edit, never read again
    assert history([(20.0, True)], [10.0]).outdated_by("/f", 10.0) is not None  # deleted: gone
    assert history([(20.0, False)], [10.0, 30.0]).outdated_by("/f", 30.0) is None  # the newest view
    assert history([(20.0, False)], [10.0, 30.0]).outdated_by("/other", 10.0) is None
    assert history([(10.0, False)], [10.0]).outdated_by("/f", 10.0) is None  # a write is not older than itself


# -- recall ------------------------------------------------------------------------------------------
def rewritten_log(then_read: bool) -> list[dict[str, Any]]:
    events = [
        opening("s-1", "2026-01-10T09:00:00Z", "/work/lib"),
        result("r1", "2026-01-10T09:01:00Z", "Read /work/lib/Justfile", OLD_JUSTFILE),
        result("w1", "2026-01-10T09:30:00Z", "Write /work/lib/Justfile",
               "The file /work/lib/Justfile has been updated.") if then_read else
        result("e1", "2026-01-10T09:30:00Z", "Edit /work/lib/Justfile", "The file /work/lib/Justfile has been updated."),
    ]
    if then_read:
        events += [opening("s-2", "2026-01-12T09:00:00Z", "/work/lib"),
                   result("r2", "2026-01-12T09:01:00Z", "cat Justfile", NEW_JUSTFILE, session="s-2")]
    return events


@pytest.mark.parametrize("then_read", [True, False])
def test_an_old_view_is_withheld_once_the_new_content_is_in_the_log(memory: Path, tmp_path: Path, run,
                                                                    then_read: bool) -> None:
    assert run("ingest", write_events(tmp_path / "log.jsonl", rewritten_log(then_read)), "-m", memory).exit_code == 0
    data = recall_json(run, memory, QUESTION, "--budget", "4000")
    check_contract(data)
    if not then_read:  # only an edit since: the old view is still the best the log knows
        assert "uv run pytest" in data["context"] and "superseded" not in data
        return
    assert "uv run pytest" not in data["context"]
    assert data["superseded"] == [{"id": "log://s-1#r1", "superseded_by": "log://s-1#w1", "since": "2026-01-10"}]
    shown = recall_json(run, memory, QUESTION, "--budget", "4000", "--include-archived")
    old = next(item for item in shown["items"] if item["id"] == "log://s-1#r1")
    assert old["text"].startswith("[2026-01-10] (file changed 2026-01-10)")
