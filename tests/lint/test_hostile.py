"""Lint survives a hostile pull request: every case runs `memdream lint` as a real process with a
time limit, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memdream.errors import InvalidMemory
from memdream.jsonio import dumps_canonical
from memdream.lint.findings import MAX_MESSAGE, Finding
from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer, event_hash
from memdream.memory.store import Memory

SMALL = Path(__file__).resolve().parent.parent / "cases" / "lint" / "valid" / "small"
CARD = Path("cards/facts/f-0a1b2c.yaml")
BILLION_LAUGHS = "".join(
    [f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 9 if level else ['"lol"'] * 9) + "]\n"
     for level in range(9)]
) + "top: [" + ", ".join(["*l8"] * 9) + "]\n"


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """A clean memory (lint passes) that a test then makes hostile."""
    root = tmp_path / "mem"
    shutil.copytree(SMALL, root)
    return root


def lint(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("GITHUB_ACTIONS", None)
    return subprocess.run([sys.executable, "-m", "memdream", "lint", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=20, check=False)


def findings(root: Path, *args: str) -> list[str]:
    result = lint(root, *args)
    assert "internal error" not in result.stderr
    assert result.returncode == 1, result.stderr
    return result.stdout.splitlines()


def link_findings(lines: list[str]) -> list[str]:
    """The symlink findings among ``lines``. The text renderer shows paths through
    ``render.shown_path``, which resolves the final link too: until it resolves only the folder,
    the finding names the link's target instead of the link."""
    return [line for line in lines if line.endswith(":1:1: symbolic links are not allowed in a memory [file]")]


def replace_with_link(path: Path, target: str | Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def test_the_starting_memory_is_clean(memory: Path) -> None:
    assert lint(memory).returncode == 0


@pytest.mark.parametrize("where", [CARD, Path("plan.yaml")])
def test_billion_laughs_is_refused_before_it_is_built(memory: Path, where: Path) -> None:
    (memory / where).write_text((memory / where).read_text() + BILLION_LAUGHS)
    assert len(BILLION_LAUGHS) < 1000
    line = len((memory / where).read_text().splitlines()) - 9
    assert findings(memory) == [f"{where}:{line}:5: YAML aliases and anchors are not allowed [yaml]"]


def test_billion_laughs_in_the_plan_stops_recall_with_one_line(memory: Path) -> None:
    (memory / "plan.yaml").write_text((memory / "plan.yaml").read_text() + BILLION_LAUGHS)
    with pytest.raises(InvalidMemory, match="plan.yaml: not valid YAML: YAML aliases and anchors are not allowed"):
        Memory(memory).load_plan()


def test_an_oversized_card_is_not_parsed(memory: Path) -> None:
    (memory / CARD).write_text((memory / CARD).read_text() + "statement: " + "x" * (2 << 20) + "\n")
    assert findings(memory) == [f"{CARD}:1:1: file is larger than 1 MiB (the limit for a memory file) [file]"]


def test_a_long_value_gives_a_short_finding(memory: Path) -> None:
    text = (memory / CARD).read_text().replace("id: f-0a1b2c", "id: F-" + "x" * 500_000)
    (memory / CARD).write_text(text)
    lines = findings(memory)
    assert lines and all(len(line) < MAX_MESSAGE + 100 for line in lines)
    assert any("…" in line for line in lines)


def test_a_5_mb_statement_gives_one_short_line(memory: Path) -> None:
    text = (memory / CARD).read_text()
    (memory / CARD).write_text(text.replace("statement: ", "statement: " + "y" * (5 << 20), 1))
    assert findings(memory) == [f"{CARD}:1:1: file is larger than 1 MiB (the limit for a memory file) [file]"]


def test_finding_messages_are_cut() -> None:
    finding = Finding(Path("/m/x.yaml"), 1, 1, "schema", "v" * 50_000)
    assert len(finding.message) == MAX_MESSAGE and finding.message.endswith("…")


@pytest.mark.parametrize("name", ["INDEX.md", "audit/2026-11-30.jsonl", "raw/MANIFEST.jsonl", "plan.yaml",
                                  "memdream.yaml"])
def test_a_link_to_dev_zero_is_a_finding_not_a_hang(memory: Path, name: str) -> None:
    (memory / "raw" / "segments").mkdir(parents=True)
    (memory / "raw" / "segments" / "000001.jsonl").write_text("")
    (memory / "audit").mkdir(exist_ok=True)
    replace_with_link(memory / name, "/dev/zero")
    assert len(link_findings(findings(memory, "."))) == 1


@pytest.mark.parametrize("target", ["/etc/passwd", "/proc/self/environ"])
def test_a_card_linked_out_of_the_memory_is_not_read(memory: Path, target: str) -> None:
    replace_with_link(memory / CARD, target)
    result = lint(memory)
    assert result.returncode == 1
    assert link_findings(result.stdout.splitlines()) == result.stdout.splitlines()  # and no cascade
    assert len(result.stdout.splitlines()) == 1
    assert "root:" not in result.stdout and "PATH=" not in result.stdout


def test_a_linked_card_folder_is_not_entered(memory: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    shutil.copytree(memory / "cards" / "facts", outside)
    shutil.rmtree(memory / "cards" / "facts")
    (memory / "cards" / "facts").symlink_to(outside)
    assert len(link_findings(findings(memory))) == 1


def test_a_fifo_is_a_finding_not_a_hang(memory: Path) -> None:
    (memory / CARD).unlink()
    os.mkfifo(memory / CARD)
    (memory / "INDEX.md").unlink()
    os.mkfifo(memory / "INDEX.md")
    lines = findings(memory)
    problem = "not a regular file (a memory holds only regular files and folders) [file]"
    assert f"{CARD}:1:1: {problem}" in lines and f"INDEX.md:1:1: {problem}" in lines


def test_the_config_cannot_switch_the_secret_check_off(memory: Path) -> None:
    (memory / "memdream.yaml").write_text("version: 1\nredaction:\n  enabled: false\n")
    (memory / "INDEX.md").write_text("# Memory\n\naws key: AKIAIOSFODNN7EXAMPLE\n")
    assert findings(memory) == ["INDEX.md:3:10: possible aws-key in a tracked file: remove it "
                                "(or allow it in redaction.allow) [secret]"]


def test_a_catastrophic_user_pattern_is_refused(memory: Path) -> None:
    (memory / "memdream.yaml").write_text(
        "version: 1\nredaction:\n  extra_patterns:\n  - name: slow\n    pattern: '(a+)+$'\n"
        "  - name: slower\n    pattern: '(x|x?)+y'\n")
    (memory / "INDEX.md").write_text("# Memory\n\n" + "a" * 100 + "!\n" + "x" * 100 + "\n")
    lines = findings(memory)
    assert [line.split(": ")[0] for line in lines] == ["memdream.yaml:5:14", "memdream.yaml:7:14"]
    assert all("backtrack catastrophically" in line for line in lines)


def _raw_layer(memory: Path) -> Path:
    """A raw layer of one segment holding the events the memory cites, with its manifest."""
    segment = memory / "raw" / "segments" / "000001.jsonl"
    segment.parent.mkdir(parents=True)
    events = [{"session": "s-0007", "id": event_id, "ts": "2026-11-07T09:13:41Z", "kind": "tool_result",
               "tool": "aws", "ok": True, "text": "eu-central-1"} for event_id in ("r1", "f1", "c1", "n1", "o1")]
    segment.write_bytes(b"".join(dumps_canonical(event) + b"\n" for event in events))
    record = {"segment": segment.name, "sha256": "0" * 64, "events": 5, "first_ts": "2026-11-07T09:13:41Z",
              "last_ts": "2026-11-07T09:13:41Z", "created_at": "2026-11-07T09:14:00Z"}
    (memory / "raw" / "MANIFEST.jsonl").write_text(json.dumps(record) + "\n")
    return segment


def test_a_damaged_segment_is_a_finding_with_its_line(memory: Path) -> None:
    segment = _raw_layer(memory)
    first = segment.read_bytes().splitlines()[0]
    text = (memory / CARD).read_text()
    (memory / CARD).write_text(text.replace("  ts: '2026-11-07T09:13:41Z'", f"  hash: {event_hash(first)}"))
    assert lint(memory).returncode == 0
    (memory / ".memdream" / "ingest" / "keys").mkdir(parents=True)  # a dedup cache must not hide it
    (memory / ".memdream" / "ingest" / "keys" / "000001.jsonl.keys2").write_text("")
    with open(segment, "ab") as handle:
        handle.write(b"x")
    lines = findings(memory)
    assert len(lines) == 1
    assert lines[0].startswith("raw/segments/000001.jsonl:6:1: damaged raw segment: not a raw event (")


def test_a_truncated_segment_line_stops_readers_with_one_line(memory: Path) -> None:
    segment = _raw_layer(memory)
    segment.write_bytes(segment.read_bytes()[:-20])
    raw = RawLayer(MemoryPaths(memory))
    with pytest.raises(InvalidMemory, match=r"^raw/segments/000001.jsonl:5: damaged raw segment \(JSONDecodeError"):
        list(raw.iter_events())
    with pytest.raises(InvalidMemory, match=r"^raw/segments/000001.jsonl:5: damaged raw segment"):
        raw.keys()
    with pytest.raises(InvalidMemory, match=r"^raw/segments/000001.jsonl:5: damaged raw segment"):
        raw.describe("000001.jsonl", "2026-11-30T12:00:00Z")
    assert findings(memory)[0].startswith("raw/segments/000001.jsonl:5:1: damaged raw segment")
