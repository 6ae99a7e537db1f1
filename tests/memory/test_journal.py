"""The clean-tree check every writer makes (memory/journal.py), started while the writer reads its
caches: it refuses a person's edit, and gives back the bookkeeping it was asked to look at too."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdream.errors import GitError
from memdream.memory import journal


def test_a_clean_tree_gives_the_changed_bookkeeping(memory: Path) -> None:
    (memory / "raw").mkdir(exist_ok=True)
    (memory / "raw" / "MANIFEST.jsonl").write_text('{"segment": "000001.jsonl"}\n', encoding="utf-8")
    check = journal.CleanCheck(memory, "dreaming", also=["raw/MANIFEST.jsonl"])
    assert check.wait() == ["raw/MANIFEST.jsonl"]
    assert journal.CleanCheck(memory, "dreaming").wait() == []


def test_a_person_s_edit_is_refused_as_require_clean_refuses_it(memory: Path) -> None:
    (memory / "plan.yaml").write_text("goal: mine\n", encoding="utf-8")
    (memory / "cards" / "facts" / "f-stray.yaml").write_text("id: f-stray\n", encoding="utf-8")
    check = journal.CleanCheck(memory, "dreaming", also=["raw/MANIFEST.jsonl"])
    with pytest.raises(GitError, match=r"^uncommitted changes in .+ and 1 more: commit or stash them before "
                                       r"dreaming$"):
        check.wait()
    with pytest.raises(GitError, match="before dreaming$"):
        journal.require_clean(memory, "dreaming")


def test_a_check_nobody_waited_for_leaves_no_process(memory: Path) -> None:
    check = journal.CleanCheck(memory, "dreaming")
    check.close()
    assert check.status is not None and check.status.process.returncode == 0
