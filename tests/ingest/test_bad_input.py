"""Hostile and broken input is a bad line, never a crash: deep nesting, huge integers, endless lines,
impossible timestamps. Real files, real subprocesses, stdin from a generator process."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream import jsonio
from memdream.ingest import sources
from memdream.ingest.validate import calendar_valid

NOW = "2026-11-30T12:00:00Z"
GOOD = {"session": "s1", "ts": "2026-11-07T09:12:03Z", "kind": "note", "text": "a good line"}


def event(**fields: Any) -> dict[str, Any]:
    return {**GOOD, **fields}


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def nested_text(depth: int) -> str:
    """``nested(depth)`` as JSON, written without recursing."""
    return '{"a":' * depth + '"leaf"' + "}" * depth


def deep_line(depth: int = 450) -> str:
    return json.dumps(event(id="deep", meta={})).replace('"meta": {}', '"meta": ' + nested_text(depth))


def big_int_line(digits: int = 5000) -> str:
    return json.dumps(event(id="big", meta={"n": 0})).replace('"n": 0', '"n": ' + "7" * digits)


BAD_LINES = {
    "deep": (deep_line(), "JSON nested more than 64 levels deep"),
    "deep-list": (json.dumps(event(id="deep-list", args={"x": [[[[[[[[[[1]]]]]]]]]] * 1}, meta={"y": "[" * 5000})),
                  None),  # brackets inside a string do not nest: a good line
    "big-int": (big_int_line(), "JSON integer with 5000 digits (at most 4300)"),
    "month-13": (json.dumps(event(id="m13", ts="2026-13-45T25:61:61Z")),
                 "ts: not a valid date and time: '2026-13-45T25:61:61Z'"),
    "feb-30": (json.dumps(event(id="f30", ts="2026-02-30T10:00:00Z")), "ts: not a valid date and time"),
}


def memdream(memory: Path, *args: str, stdin: Any = None, data: bytes | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "memdream", *args, "-m", str(memory)], stdin=stdin, input=data,
                          capture_output=True, env=dict(os.environ), timeout=timeout)


def ingest_json(memory: Path, *args: str, data: bytes | None = None) -> dict[str, Any]:
    done = memdream(memory, "ingest", "--format", "json", *args, data=data)
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def stored(memory: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for segment in sorted((memory / "raw" / "segments").glob("*.jsonl"))
            for line in segment.read_text(encoding="utf-8").splitlines()]


# -- the parser itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "[" * 100_000, "{\"a\":" * 100_000, "[" * 65 + "]" * 65, nested_text(65), deep_line(450), nested_text(5000),
])
def test_fastjson_refuses_deep_nesting_without_recursing(text: str) -> None:
    with pytest.raises(jsonio.LimitError, match="nested more than 64 levels deep"):
        jsonio.loads(text)


def test_fastjson_reads_nesting_up_to_the_limit_and_brackets_inside_strings() -> None:
    assert jsonio.loads(json.dumps(nested(63))) == nested(63)
    assert jsonio.loads("[" * 64 + "]" * 64) is not None
    assert jsonio.loads(json.dumps(["[" * 1000, "{" * 1000, '\\"[[['])) == ["[" * 1000, "{" * 1000, '\\"[[[']


@pytest.mark.parametrize("digits", [4301, 5000, 100_000])
def test_fastjson_refuses_integers_python_cannot_convert(digits: int) -> None:
    with pytest.raises(jsonio.LimitError, match="integer with"):
        jsonio.loads('{"n": ' + "9" * digits + "}")
    assert jsonio.loads("[" + "9" * 4300 + "]") == [int("9" * 4300)]


@pytest.mark.parametrize(("ts", "valid"), [
    ("2026-11-07T09:12:03Z", True), ("2024-02-29T23:59:59.123+05:30", True), ("2026-11-07T09:12:03", True),
    ("2026-13-45T25:61:61Z", False), ("2026-02-29T00:00:00Z", False), ("2026-04-31T00:00:00Z", False),
    ("2026-11-07T24:00:00Z", False), ("2026-11-07T09:60:00Z", False), ("2026-11-07T09:12:60Z", False),
    ("0000-01-01T00:00:00Z", False), ("2026-11-07T09:12:03+24:00", False), ("2026-00-10T00:00:00Z", False),
])
def test_calendar_check(ts: str, valid: bool) -> None:
    assert calendar_valid(ts) is valid


# -- ingest: bad lines, in every path ------------------------------------------------------------


@pytest.mark.parametrize("name", [name for name, (_, reason) in BAD_LINES.items() if reason])
def test_each_bad_line_is_a_normal_error_naming_file_and_line(memory: Path, tmp_path: Path, name: str) -> None:
    line, reason = BAD_LINES[name]
    log = write_lines(tmp_path / f"{name}.jsonl", [json.dumps(GOOD), line])
    done = memdream(memory, "ingest", str(log))
    assert done.returncode == 1
    message = done.stderr.decode()
    assert message.startswith(f"memdream: {log}:2: {reason}"), message
    assert "internal error" not in message
    assert stored(memory) == []  # nothing of the run is written


@pytest.mark.parametrize("workers", ["0", "2"])
def test_skip_bad_skips_and_counts_them_inline_and_in_workers(memory: Path, tmp_path: Path, workers: str) -> None:
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  workers: auto\n", f"  workers: {workers}\n"),
                      encoding="utf-8")
    lines = [line for line, _ in BAD_LINES.values()]
    # Padding makes the worker path cut the file into several chunks.
    padding = [json.dumps(event(id=f"pad-{n}", text="x" * 200)) for n in range(3000)]
    log = write_lines(tmp_path / "mixed.jsonl", [json.dumps(GOOD), *lines, *padding])
    report = ingest_json(memory, "--skip-bad", str(log))
    skipped = report["sources"][0]["skipped_lines"]
    expected = [(number, reason) for number, (_, reason) in enumerate(BAD_LINES.values(), start=2) if reason]
    found = [(item["line"], item["reason"]) for item in skipped]
    assert [line for line, _ in found] == [line for line, _ in expected], found
    assert all(text.startswith(reason) for (_, text), (_, reason) in zip(found, expected)), found
    assert report["skipped_lines"] == len(expected)
    assert report["added"] == 2 + len(padding)  # the good line, the bracket-in-string line, the padding


def test_a_bad_spooled_transcript_is_reported_and_never_blocks_the_spool(memory: Path, tmp_path: Path) -> None:
    deep = write_lines(tmp_path / "deep.jsonl", [deep_line(2000)])
    big = write_lines(tmp_path / "big.jsonl", [big_int_line()])
    good = write_lines(tmp_path / "good.jsonl", [json.dumps(GOOD)])
    for transcript in (deep, big, good):
        hook = {"session_id": "x", "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
        done = subprocess.run([sys.executable, "-m", "memdream", "enqueue", "--from-hook", "-m", str(memory)],
                              input=json.dumps(hook).encode(), capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
    # A hostile hook payload nested deeply sits in the spool too: it is skipped.
    with open(memory / ".memdream" / "spool.jsonl", "a", encoding="utf-8") as spool_file:
        spool_file.write(f'{{"received_at": "{NOW}", "payload": {nested_text(3000)}}}\n')
    report = ingest_json(memory, "--spool")
    assert [failure.split(":")[0] for failure in report["failed_transcripts"]] == [str(deep), str(big)]
    assert report["added"] == 1
    assert not list((memory / ".memdream").glob("spool.jsonl*"))  # the spool is consumed
    assert ingest_json(memory, "--spool")["failed_transcripts"] == []


def test_deep_json_in_other_formats(memory: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(f'[{{"role": "user", "content": "hi"}}, {{"role": "user", "content": {nested_text(500)}}}]',
                    encoding="utf-8")
    done = memdream(memory, "ingest", "--log-format", "openai-chat", str(chat))
    assert done.returncode == 1 and "nested more than 64 levels deep" in done.stderr.decode(), done.stderr
    # Tool arguments sent as a JSON string nested too deeply stay a string.
    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "run", "arguments": nested_text(500)}}]}
    chat.write_text(json.dumps([{"role": "user", "content": "hi"}, call]), encoding="utf-8")
    report = ingest_json(memory, "--log-format", "openai-chat", str(chat))
    assert report["added"] >= 2
    assert any(isinstance(item.get("args", {}).get("raw"), str) for item in stored(memory))


# -- line length and streaming -------------------------------------------------------------------


def _generated(shell: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", shell], stdout=subprocess.PIPE)


def _peak_children_kib() -> int:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def test_stdin_of_zeros_fails_fast_in_bounded_memory(memory: Path) -> None:
    generator = _generated("head -c 100M /dev/zero")
    try:
        done = memdream(memory, "ingest", "-", stdin=generator.stdout, timeout=60)
    finally:
        assert generator.stdout is not None
        generator.stdout.close()
        generator.wait(timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("memdream: <stdin>: binary data"), done.stderr
    assert _peak_children_kib() < 512 * 1024


def test_an_endless_line_on_stdin_fails_with_the_line_length_error_in_bounded_memory(memory: Path) -> None:
    start = '{"session":"s1","ts":"2026-11-07T09:12:03Z","kind":"note","text":"'
    generator = _generated(f"printf '%s' '{start}'; head -c 200M /dev/zero | tr '\\0' a")
    try:
        done = memdream(memory, "ingest", "-", stdin=generator.stdout, timeout=120)
    finally:
        assert generator.stdout is not None
        generator.stdout.close()
        generator.wait(timeout=120)
    assert done.returncode == 1
    assert done.stderr.decode().strip() == f"memdream: <stdin>:1: line longer than {sources.MAX_LINE_BYTES} bytes"
    assert _peak_children_kib() < 1024 * 1024  # one line's worth, not the whole input


def test_a_line_too_long_is_skipped_with_skip_bad_in_files_and_stdin(memory: Path, tmp_path: Path) -> None:
    long_text = "a" * (sources.MAX_LINE_BYTES + 10)
    lines = [json.dumps(GOOD), json.dumps(event(id="long", text=long_text)), json.dumps(event(id="after"))]
    log = write_lines(tmp_path / "long.jsonl", lines)
    done = memdream(memory, "ingest", str(log))
    assert done.returncode == 1
    assert done.stderr.decode().strip() == f"memdream: {log}:2: line longer than {sources.MAX_LINE_BYTES} bytes"
    report = ingest_json(memory, "--skip-bad", "-", data=log.read_bytes())
    assert report["added"] == 2
    assert [(item["line"], item["reason"]) for item in report["sources"][0]["skipped_lines"]] == [
        (2, f"line longer than {sources.MAX_LINE_BYTES} bytes")]


def test_stdin_is_streamed_and_detected_like_a_file(memory: Path, tmp_path: Path) -> None:
    lines = [json.dumps(event(id=f"e{n}", text="y" * 100)) for n in range(2000)]  # beyond the head
    log = write_lines(tmp_path / "events.jsonl", lines)
    generator = _generated(f"cat {log}")
    try:
        done = memdream(memory, "ingest", "--format", "json", "-", stdin=generator.stdout)
    finally:
        assert generator.stdout is not None
        generator.stdout.close()
        generator.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == 2000
    assert [item["id"] for item in stored(memory)] == [f"e{n}" for n in range(2000)]


# -- timestamps in the future --------------------------------------------------------------------


@pytest.mark.parametrize("workers", ["0", "2"])
def test_future_timestamps_are_kept_and_tagged(memory: Path, tmp_path: Path, workers: str) -> None:
    config = memory / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  workers: auto\n", f"  workers: {workers}\n"),
                      encoding="utf-8")
    assert os.environ["MEMDREAM_NOW"] == NOW
    lines = [json.dumps(event(id="soon", ts="2026-12-01T11:00:00Z")),  # within the day of tolerance
             json.dumps(event(id="far", ts="2031-01-01T00:00:00Z")),
             json.dumps(event(id="offset", ts="2026-12-01T23:00:00-05:00")),  # 2026-12-02T04:00Z
             json.dumps(event(id="own-tags", ts="2099-01-01T00:00:00Z", tags=["mine"]))]
    log = write_lines(tmp_path / "future.jsonl", lines + [json.dumps(event(id=f"p{n}")) for n in range(2000)])
    assert ingest_json(memory, str(log))["added"] == 2004
    tags = {item["id"]: item.get("tags", []) for item in stored(memory)}
    assert "future-ts" not in tags["soon"] and "future-ts" not in tags["p1"]
    assert "future-ts" in tags["far"] and "future-ts" in tags["offset"]
    assert tags["own-tags"][:2] == ["mine", "future-ts"]


def test_future_timestamps_are_counted_and_do_not_change_ids(tmp_path: Path) -> None:
    from memdream.commands.init import init_memory

    root = tmp_path / "memory"
    init_memory(root)
    log = tmp_path / "future.jsonl"
    log.write_text(json.dumps({"session": "s", "ts": "2031-01-01T00:00:00Z", "kind": "note", "text": "later"}) + "\n"
                   + json.dumps({"session": "s", "ts": "2026-01-01T00:00:00Z", "kind": "note", "text": "now"}) + "\n",
                   encoding="utf-8")
    env = {**os.environ, "MEMDREAM_NOW": "2026-06-01T00:00:00Z"}
    done = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(log), "-m", str(root), "--format", "json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["future_timestamps"] == 1
    stored = [json.loads(line) for path in (root / "raw" / "segments").glob("*.jsonl")
              for line in path.read_text(encoding="utf-8").splitlines()]
    later = next(event for event in stored if event["text"] == "later")
    assert "future-ts" in later["tags"]
    # Once its date has passed, the same event is the same event: no second copy.
    env["MEMDREAM_NOW"] = "2032-01-01T00:00:00Z"
    again = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(log), "-m", str(root), "--format", "json"],
                           capture_output=True, text=True, env=env)
    assert json.loads(again.stdout)["added"] == 0


def test_an_empty_transcript_in_a_folder_is_skipped_and_reported(tmp_path: Path) -> None:
    from memdream.commands.init import init_memory

    root = tmp_path / "memory"
    init_memory(root)
    folder = tmp_path / "projects"
    folder.mkdir()
    (folder / "a-empty.jsonl").write_text("", encoding="utf-8")
    (folder / "b.jsonl").write_text(json.dumps({"session": "s", "ts": "2026-01-01T00:00:00Z", "kind": "note",
                                                "text": "kept"}) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(folder), "-m", str(root), "--format", "json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["added"] == 1 and report["empty_files"] == [str(folder / "a-empty.jsonl")]
    named = subprocess.run([sys.executable, "-m", "memdream", "ingest", str(folder / "a-empty.jsonl"), "-m", str(root)],
                           capture_output=True, text=True)
    assert named.returncode == 1 and named.stderr.strip().endswith("empty input, nothing to ingest")
