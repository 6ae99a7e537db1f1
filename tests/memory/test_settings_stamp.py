"""The settings validity stamp only ever spares a check that would pass: edits, stale or garbage stamps
and an unwritable cache never let an invalid memdream.yaml through."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memdream import schemas
from memdream.errors import InvalidMemory
from memdream.memory.settings import Settings

EVENTS = Path(__file__).resolve().parent.parent / "fixtures" / "logs" / "memdream" / "events.jsonl"  # 18 events
ONE_LINE = re.compile(r"memdream: memdream\.yaml: \S.* \(run `memdream lint` for all errors\)\n")

# (valid text -> invalid text, what the one-line error names)
INVALID_EDITS = [
    pytest.param("segment_max_events: 50000", "segment_max_events: lots", "ingest/segment_max_events", id="type"),
    pytest.param("tenant: default", "tenant: default\ncolour: blue", "'colour'", id="unknown-key"),
    pytest.param("extra_patterns: []", "extra_patterns: [{name: Bad Name, pattern: x}]", "extra_patterns/0/name",
                 id="pattern-name"),
    pytest.param("version: 1", "version: 2", "version", id="version"),
]


def config(memory: Path) -> Path:
    return memory / "memdream.yaml"


def cache(memory: Path) -> Path:
    return memory / ".memdream" / "cache"


def stamp(memory: Path) -> Path:
    return cache(memory) / "settings.valid"


def many_events(path: Path, count: int) -> Path:
    path.write_text("".join(
        json.dumps({"session": "s-many", "ts": "2026-11-07T09:12:03Z", "kind": "note", "id": f"n{number}",
                    "text": f"note {number}"}) + "\n" for number in range(count)), encoding="utf-8")
    return path


def edit(memory: Path, old: str, new: str) -> None:
    text = config(memory).read_text(encoding="utf-8")
    assert old in text
    config(memory).write_text(text.replace(old, new, 1), encoding="utf-8")


def load(memory: Path) -> Settings:
    return Settings.load(config(memory), cache(memory))


def ingest_fast_path(memory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A process of its own, as hooks and cron run it: nothing cached in memory from earlier loads."""
    return subprocess.run([sys.executable, "-m", "memdream", "ingest", "-m", str(memory), *args],
                          capture_output=True, text=True)


def assert_refused(memory: Path, run: Any, names: str) -> None:
    """ingest (both paths) stops with the one-line settings error; lint reports it as a finding."""
    with pytest.raises(InvalidMemory, match=re.escape(names)):
        load(memory)
    typer_result = run("ingest", EVENTS, "-m", memory)
    assert typer_result.exit_code == 1
    assert ONE_LINE.fullmatch(typer_result.stderr) and names in typer_result.stderr
    done = ingest_fast_path(memory, str(EVENTS))
    assert (done.returncode, done.stderr) == (1, typer_result.stderr)
    linted = run("lint", "-m", memory)
    assert linted.exit_code == 1
    assert "memdream.yaml:" in linted.stdout and "[schema]" in linted.stdout


@pytest.fixture
def stamped(memory: Path, run: Any) -> Path:
    """A memory whose valid settings were checked and stamped by a first ingest."""
    stamp(memory).unlink(missing_ok=True)
    result = run("ingest", EVENTS, "-m", memory)
    assert result.exit_code == 0, result.stderr
    assert re.fullmatch(r"[0-9a-f]{64}", stamp(memory).read_text(encoding="utf-8"))
    return memory


def test_init_stamps_its_own_settings(memory: Path) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", stamp(memory).read_text(encoding="utf-8"))


def test_a_load_writes_the_stamp_even_without_a_cache_folder(memory: Path) -> None:
    shutil.rmtree(cache(memory))
    assert load(memory).get("ingest.segment_max_events") == 50000
    first = stamp(memory).read_text(encoding="utf-8")
    assert load(memory).get("ingest.segment_max_events") == 50000  # the stamped path reads the same values
    assert stamp(memory).read_text(encoding="utf-8") == first


@pytest.mark.parametrize(("old", "new", "names"), INVALID_EDITS)
def test_an_invalid_edit_after_the_stamp_is_reported(stamped: Path, run: Any, old: str, new: str, names: str) -> None:
    before = stamp(stamped).read_text(encoding="utf-8")
    edit(stamped, old, new)
    assert_refused(stamped, run, names)
    assert stamp(stamped).read_text(encoding="utf-8") == before  # an invalid text is never stamped
    edit(stamped, new, old)  # back to the stamped text: accepted again
    assert run("ingest", EVENTS, "-m", stamped).exit_code == 0


@pytest.mark.parametrize("broken", ["ingest: [", "- a list\n- of things\n", "tenant: \"unclosed\n"],
                         ids=["yaml", "not-a-mapping", "unclosed-quote"])
def test_unreadable_settings_are_reported_whatever_the_stamp(stamped: Path, run: Any, broken: str) -> None:
    config(stamped).write_text(broken, encoding="utf-8")
    stamp(stamped).write_text(hashlib.sha256(broken.encode()).hexdigest(), encoding="utf-8")
    with pytest.raises(InvalidMemory, match=r"^memdream\.yaml: "):
        load(stamped)
    result = ingest_fast_path(stamped, str(EVENTS))
    assert result.returncode == 1 and result.stderr.startswith("memdream: memdream.yaml: ")
    assert result.stderr.count("\n") == 1


def test_a_valid_edit_is_accepted_and_takes_effect(stamped: Path, run: Any, tmp_path: Path) -> None:
    before = stamp(stamped).read_text(encoding="utf-8")
    edit(stamped, "segment_max_events: 50000", "segment_max_events: 100")
    done = ingest_fast_path(stamped, str(many_events(tmp_path / "many.jsonl", 250)), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == 250 and len(report["segments"]) == 3  # 100 + 100 + 50 events
    after = stamp(stamped).read_text(encoding="utf-8")
    assert after != before and re.fullmatch(r"[0-9a-f]{64}", after)
    assert load(stamped).get("ingest.segment_max_events") == 100


def _sha(*parts: bytes) -> str:
    return hashlib.sha256(b"".join(parts)).hexdigest()


def stale_stamps(valid_stamp: str, invalid_text: bytes) -> Iterator[tuple[str, bytes]]:
    schema = (schemas.schema_dir() / "config.schema.json").read_bytes()
    yield "stale", valid_stamp.encode()
    yield "garbage", b"not a stamp at all"
    yield "empty", b""
    yield "newline", valid_stamp.encode() + b"\n"
    yield "text-only", _sha(invalid_text).encode()
    yield "other-schema", _sha(invalid_text, b"\0", b"{}").encode()
    yield "upper-case", _sha(invalid_text, b"\0", schema).upper().encode()
    yield "prefix", _sha(invalid_text, b"\0", schema)[:32].encode()


@pytest.mark.parametrize("kind", ["stale", "garbage", "empty", "newline", "text-only", "other-schema",
                                  "upper-case", "prefix"])
def test_a_stale_or_garbage_stamp_never_hides_an_error(stamped: Path, run: Any, kind: str) -> None:
    valid_stamp = stamp(stamped).read_text(encoding="utf-8")
    edit(stamped, "segment_max_events: 50000", "segment_max_events: lots")
    stamps = dict(stale_stamps(valid_stamp, config(stamped).read_bytes()))
    stamp(stamped).write_bytes(stamps[kind])
    assert_refused(stamped, run, "ingest/segment_max_events")


def test_a_stamp_spares_the_check_only_for_its_own_text_and_schema(stamped: Path) -> None:
    """What the stamp is: only a successful check writes one, for the text and schema it checked.
    A forged one for an invalid text shows the check is skipped, and only for that text."""
    edit(stamped, "segment_max_events: 50000", "segment_max_events: lots")
    text = config(stamped).read_bytes()
    schema = (schemas.schema_dir() / "config.schema.json").read_bytes()
    stamp(stamped).write_text(_sha(text, b"\0", schema), encoding="utf-8")
    assert load(stamped).get("ingest.segment_max_events") == "lots"
    config(stamped).write_bytes(text + b"\n")  # one more byte: checked again
    with pytest.raises(InvalidMemory):
        load(stamped)


def test_a_stamp_that_is_not_utf8_is_ignored(stamped: Path, run: Any) -> None:
    stamp(stamped).write_bytes(b"\xff\xfe not text")
    assert load(stamped).get("ingest.segment_max_events") == 50000


def _cache_is_a_file(memory: Path) -> None:
    cache(memory).write_text("not a folder", encoding="utf-8")


def _stamp_is_a_folder(memory: Path) -> None:
    stamp(memory).mkdir(parents=True)


def _read_only_cache(memory: Path) -> None:
    cache(memory).mkdir(parents=True)
    cache(memory).chmod(0o555)  # root writes anyway: the two cases above fail the write for everyone


@pytest.mark.parametrize("break_cache", [_cache_is_a_file, _stamp_is_a_folder, _read_only_cache],
                         ids=["cache-is-a-file", "stamp-is-a-folder", "read-only"])
def test_an_unwritable_cache_does_not_break_loading(memory: Path, run: Any, tmp_path: Path,
                                                   break_cache: Any) -> None:
    shutil.rmtree(cache(memory))  # init stamped its settings: start without a cache
    edit(memory, "segment_max_events: 50000", "segment_max_events: 100")
    break_cache(memory)
    try:
        for _ in range(2):  # the second load finds no usable stamp either
            assert load(memory).get("ingest.segment_max_events") == 100
        if break_cache is not _read_only_cache or os.geteuid() != 0:
            assert not stamp(memory).is_file()
        done = ingest_fast_path(memory, str(many_events(tmp_path / "many.jsonl", 250)), "--format", "json")
        assert done.returncode == 0, done.stderr
        assert len(json.loads(done.stdout)["segments"]) == 3  # 100 + 100 + 50 events
        edit(memory, "segment_max_events: 100", "segment_max_events: lots")
        assert_refused(memory, run, "ingest/segment_max_events")
    finally:
        if cache(memory).is_dir():
            cache(memory).chmod(0o755)
