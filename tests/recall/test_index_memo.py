"""The index memo of a long-lived process (the MCP server): recalls read no cache file twice, see every
change the cache files would, and give what recall without a memo gives."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from memdream.memory import cachefile
from memdream.recall import index as index_mod
from memdream.recall.engine import RecallOptions, recall
from memdream.recall.index import IndexMemo
from tests.recall.helpers import fact, message, write_card, write_events

QUERIES = ("export bucket region", "which port does the kettle service use", "kettle", "nothing like this")


def ingest(run: Any, memory: Path, path: Path, events: list[dict[str, Any]]) -> None:
    result = run("ingest", write_events(path, events), "-m", memory)
    assert result.exit_code == 0, result.stderr


def builds() -> tuple[int, int]:
    return (index_mod.BUILDS.cards, index_mod.BUILDS.segments)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the cache files recall reads from now on."""
    names: list[str] = []
    real = cachefile.read

    def counted(path: Path, version: int) -> Any:
        names.append(path.name)
        return real(path, version)

    monkeypatch.setattr(cachefile, "read", counted)
    return names


@pytest.fixture
def learned(memory: Path, run: Any, tmp_path: Path) -> Path:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    ingest(run, memory, tmp_path / "a.jsonl", [
        message("s-1", "1", "2026-10-01T00:00:00Z", "the kettle service listens on port 8080"),
        message("s-1", "2", "2026-10-01T00:01:00Z", "the export bucket moved to eu-central-1")])
    return memory


def answer(memory: Path, query: str, memo: IndexMemo | None) -> dict[str, Any]:
    return recall(memory, query, RecallOptions(budget=2000), memo).to_dict()


def test_a_second_recall_reads_no_cache_file(learned: Path, reads: list[str]) -> None:
    memo = IndexMemo()
    answer(learned, "kettle", memo)
    assert {"cards.pickle", "meta.pickle", "000001.jsonl.pickle"} <= set(reads)
    reads.clear()
    for query in QUERIES:
        answer(learned, query, memo)
    assert [name for name in reads if name != "usage.pickle"] == []


def test_recall_with_a_memo_gives_what_recall_without_one_does(learned: Path, tmp_path: Path) -> None:
    # Each recall appends to the usage log, which ranking reads: two copies of the memory, asked the same.
    twin = tmp_path / "twin"
    shutil.copytree(learned, twin, symlinks=True)
    memo = IndexMemo()
    for query in QUERIES * 2:
        assert answer(learned, query, memo) == answer(twin, query, None)


def test_recall_leaves_the_indexes_it_shares_as_loaded(learned: Path) -> None:
    memo = IndexMemo()
    for query in QUERIES:
        answer(learned, query, memo)
    cache = learned / ".memdream" / "cache" / "recall"
    assert memo.cards is not None
    on_disk = cachefile.read(cache / "cards.pickle", index_mod.INDEX_VERSION)
    assert pickle.dumps(memo.cards) == pickle.dumps(on_disk)
    (segment,) = memo.segments.values()
    on_disk = cachefile.read(cache / "raw" / "000001.jsonl.pickle", index_mod.INDEX_VERSION)
    assert pickle.dumps(segment) == pickle.dumps(on_disk)


def test_a_new_segment_is_read_alone(learned: Path, run: Any, tmp_path: Path, reads: list[str]) -> None:
    memo = IndexMemo()
    answer(learned, "kettle", memo)
    reads.clear()
    before = builds()
    ingest(run, learned, tmp_path / "b.jsonl", [message("s-2", "1", "2026-10-02T00:00:00Z", "the kettle is fixed")])
    found = answer(learned, "kettle", memo)
    assert {item["id"] for item in found["items"]} >= {"log://s-1#1", "log://s-2#1"}
    assert builds() == (before[0], before[1] + 1)
    assert [name for name in reads if name.endswith(".jsonl.pickle")] == ["000002.jsonl.pickle"]
    assert set(memo.segments) == {(name, sha) for name, sha in index_mod.manifest(index_mod.MemoryPaths(learned))}


def test_a_card_edited_in_place_is_seen(learned: Path) -> None:
    memo = IndexMemo()
    assert "eu-central-1" in answer(learned, "export bucket region", memo)["context"]
    path = learned / "cards" / "facts" / "f-1.yaml"
    path.write_text(path.read_text().replace("eu-central-1", "us-east-2"))  # same size: the mtime must tell
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    before = builds()
    cards = [item["text"] for item in answer(learned, "export bucket region", memo)["items"]
             if item["source"] == "card"]
    assert len(cards) == 1 and "us-east-2" in cards[0] and "eu-central-1" not in cards[0]
    assert builds() == (before[0] + 1, before[1])


def test_settings_changes_are_seen(learned: Path) -> None:
    memo = IndexMemo()
    assert recall(learned, "bucket", memo=memo).budget == 2000
    config = learned / "memdream.yaml"
    config.write_text(config.read_text().replace("budget: 2000", "budget: 999"))
    assert recall(learned, "bucket", memo=memo).budget == 999
