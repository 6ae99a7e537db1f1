"""The recall index cache: reused while nothing changed, rebuilt for changed cards, extended for new segments."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memdream.memory.usage import counts_at
from memdream.recall import index as index_mod
from memdream.recall.engine import Recaller
from tests.recall.helpers import fact, message, write_card, write_events


def builds() -> tuple[int, int]:
    return (index_mod.BUILDS.cards, index_mod.BUILDS.segments)


def ingest(run, memory: Path, path: Path, events: list[dict]) -> None:
    result = run("ingest", write_events(path, events), "-m", memory)
    assert result.exit_code == 0, result.stderr


def test_second_recall_reuses_the_cache(memory: Path, run, tmp_path: Path) -> None:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    ingest(run, memory, tmp_path / "a.jsonl", [message("s", "1", "2026-10-01T00:00:00Z", "hello export world")])
    before = builds()
    assert run("recall", "export world", "-m", memory, "--budget", "4000").exit_code == 0
    assert builds() == (before[0] + 1, before[1] + 1)
    cache = memory / ".memdream" / "cache" / "recall"
    stamps = {path.name: path.stat().st_mtime_ns for path in cache.rglob("*.pickle") if path.name != "usage.pickle"}
    assert {"cards.pickle", "meta.pickle", "000001.jsonl.pickle"} <= set(stamps)
    assert run("recall", "export world", "-m", memory, "--budget", "4000").exit_code == 0
    assert builds() == (before[0] + 1, before[1] + 1)
    assert {name: (cache / name if name != "000001.jsonl.pickle" else cache / "raw" / name).stat().st_mtime_ns
            for name in stamps} == stamps


def test_a_changed_card_rebuilds_the_card_index(memory: Path, run) -> None:
    path = write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    assert "eu-central-1" in run("recall", "export bucket", "-m", memory).stdout
    before = builds()
    text = path.read_text().replace("eu-central-1", "us-east-2")
    path.write_text(text)  # in place, same size: the mtime must tell
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))
    out = run("recall", "export bucket", "-m", memory).stdout
    assert "us-east-2" in out and "eu-central-1" not in out
    assert builds() == (before[0] + 1, before[1])


def test_added_and_removed_cards_rebuild_the_card_index(memory: Path, run) -> None:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    run("recall", "bucket", "-m", memory)
    second = write_card(memory, **fact("f-2", "import-bucket", "region", "eu-west-1",
                                       evidence=[{"ref": "log://s#2"}]))
    assert "eu-west-1" in run("recall", "bucket", "-m", memory).stdout
    second.unlink()
    assert "eu-west-1" not in run("recall", "bucket", "-m", memory).stdout


def test_a_new_segment_is_indexed_alone(memory: Path, run, tmp_path: Path) -> None:
    ingest(run, memory, tmp_path / "a.jsonl", [message("s-1", "1", "2026-10-01T00:00:00Z", "the kettle is broken")])
    assert "kettle" in run("recall", "kettle", "-m", memory).stdout
    first = memory / ".memdream" / "cache" / "recall" / "raw" / "000001.jsonl.pickle"
    stamp = first.stat().st_mtime_ns
    before = builds()
    ingest(run, memory, tmp_path / "b.jsonl", [message("s-2", "1", "2026-10-02T00:00:00Z", "the kettle is fixed")])
    out = run("recall", "kettle", "-m", memory, "--format", "json").stdout
    ids = {item["id"] for item in json.loads(out)["items"]}
    assert ids == {"log://s-1#1", "log://s-2#1"}
    assert builds() == (before[0], before[1] + 1)
    assert first.stat().st_mtime_ns == stamp


def test_settings_and_plan_changes_are_seen(memory: Path, run) -> None:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    assert json.loads(run("recall", "bucket", "-m", memory, "-f", "json").stdout)["budget"] == 2000
    config = memory / "memdream.yaml"
    config.write_text(config.read_text().replace("budget: 2000", "budget: 999"))
    assert json.loads(run("recall", "bucket", "-m", memory, "-f", "json").stdout)["budget"] == 999


def test_a_corrupt_cache_is_rebuilt(memory: Path, run) -> None:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    run("recall", "bucket", "-m", memory)
    for path in (memory / ".memdream" / "cache" / "recall").glob("*.pickle"):
        path.write_bytes(b"not a pickle")
    assert "eu-central-1" in run("recall", "bucket", "-m", memory).stdout


def test_recall_works_on_a_read_only_state_folder(memory: Path, run) -> None:
    write_card(memory, **fact("f-1", "export-bucket", "region", "eu-central-1"))
    state = memory / ".memdream"
    state.mkdir(exist_ok=True)
    state.chmod(0o500)
    try:
        if os.access(state, os.W_OK):
            return  # running as root: permissions are not enforced
        assert "eu-central-1" in run("recall", "bucket", "-m", memory).stdout
    finally:
        state.chmod(0o700)


def test_usage_counts_are_incremental(memory: Path) -> None:
    log = memory / ".memdream" / "usage.jsonl"
    log.parent.mkdir(exist_ok=True)
    log.write_text('{"ts":"t","query":"q","cards":["a","b"]}\n')
    assert counts_at(Recaller(memory).paths) == {"a": 1, "b": 1}
    with open(log, "a") as handle:
        handle.write('{"ts":"t","query":"q","cards":["a"]}\nnot json\n{"ts":"t","query":"q","cards":["c"]')
    assert counts_at(Recaller(memory).paths) == {"a": 2, "b": 1}  # the unfinished line counts next time
    log.write_text('{"ts":"t","query":"q","cards":["z"]}\n')  # rotated: counted again from the start
    assert counts_at(Recaller(memory).paths) == {"z": 1}
