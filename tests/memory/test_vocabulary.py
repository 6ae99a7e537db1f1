"""The memory model's words exist once under memdream.memory: episodes (old ``segment:`` tags and the
old ``max_segments`` setting still read), evidence references, and the four packages that use them
as peers."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer, SegmentWriter, canonical_json
from memdream.memory.refs import event_ref, parse_ref, ref_of
from memdream.memory.settings import Settings
from memdream.memory.tags import EPISODE_TAG, episode_of, episode_tag
from tests.gitutil import git
from tests.transcripts import ClaudeSession

PACKAGE = Path(__file__).resolve().parents[2] / "memdream"
PEERS = ("ingest", "dream", "recall", "lint")
START = datetime(2026, 11, 7, 9, 0, tzinfo=timezone.utc)


def memdream(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    memdream("init", str(tmp_path / "mem"), cwd=tmp_path)
    return tmp_path / "mem"


# -- refs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("session", "event_id"), [("s-1", "e1"), ("claude-abc", "toolu_01#2"), ("s", "a#b#c")])
def test_a_reference_reads_back_as_its_session_and_event(session: str, event_id: str) -> None:
    ref = event_ref(session, event_id)
    assert ref == f"log://{session}#{event_id}" == ref_of({"session": session, "id": event_id})
    assert parse_ref(ref) == (session, event_id)  # a session holds no "#", an id may


# -- episodes -------------------------------------------------------------------------------------

def test_episode_tags_are_read_in_the_new_spelling_and_the_old() -> None:
    assert episode_tag(3) == "episode:3" and episode_tag(1000) == "episode:1000"
    assert episode_of(["salience:strong", "episode:4"]) == 4
    assert episode_of(["segment:7", "workaround"]) == 7  # as raw layers ingested before the rename hold it
    assert episode_of(["segment:x", "project:billing"]) == 0


def test_ingest_tags_episodes_of_a_real_transcript(memory: Path, tmp_path: Path) -> None:
    log = ClaudeSession("5b0e7c1a-2f4d-4c3e-9a51-0d6f2b8e4a17", "/home/dev/billing-api", START)
    log.user("fix the nightly export")
    log.bash("make export", "bucket not found", error=True)
    log.bash("make export REGION=eu", "done")
    log.user("now write the release notes")
    path = log.write(tmp_path / "logs")
    memdream("ingest", str(path), "-m", str(memory), cwd=tmp_path)
    events = [json.loads(line) for segment in sorted((memory / "raw" / "segments").glob("*.jsonl"))
              for line in segment.read_text(encoding="utf-8").splitlines()]
    assert events
    for event in events:
        ours = [tag for tag in event["tags"] if tag.startswith(("episode:", "segment:"))]
        assert len(ours) == 1 and ours[0].startswith(EPISODE_TAG), event["tags"]


def _old_raw_layer(memory: Path, episodes: int) -> None:
    """Events as ingest wrote them before the rename: ``segment:<n>`` tags, one goal per episode."""
    writer = SegmentWriter(RawLayer(MemoryPaths(memory)), 1000)
    for number in range(1, episodes + 1):
        for offset, (kind, fields) in enumerate([
            ("goal", {"goal": f"task {number}"}),
            ("tool_result", {"tool": "pytest", "ok": False, "text": f"failure {number}"}),
        ]):
            writer.write(canonical_json({
                "session": "old", "ts": f"2026-11-0{number}T09:00:0{offset}Z", "kind": kind,
                "id": f"e{number}-{offset}", "tags": [f"segment:{number}", "salience:strong"], **fields,
            }))
    writer.publish("2026-11-10T00:00:00Z")


def _set(memory: Path, old: str, new: str) -> None:
    config = memory / "memdream.yaml"
    text = config.read_text(encoding="utf-8")
    assert old in text
    config.write_text(text.replace(old, new, 1), encoding="utf-8")


def _dream(memory: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(memdream("dream", "-m", str(memory), "--format", "json", cwd=memory).stdout)
    return report


def test_dream_reads_the_episodes_of_an_old_raw_layer_and_the_old_budget_setting(memory: Path) -> None:
    _old_raw_layer(memory, episodes=3)
    _set(memory, "max_episodes: 5000", "max_segments: 1")  # a memdream.yaml written before the rename
    git(memory, "add", "-A")
    git(memory, "commit", "-q", "-m", "an older memory")
    report = _dream(memory)
    assert report["episodes"] == 3  # one per segment:<n> tag, not one for the whole session
    assert report["skipped_episodes"] == 2


def test_the_new_budget_setting_wins_over_the_old_one(memory: Path, tmp_path: Path) -> None:
    path = tmp_path / "memdream.yaml"
    path.write_text("version: 1\ndream:\n  selection:\n    max_segments: 2\n    max_episodes: 7\n", encoding="utf-8")
    assert Settings.load(path).get("dream.selection.max_episodes") == 7
    path.write_text("version: 1\ndream:\n  selection:\n    max_segments: 2\n", encoding="utf-8")
    assert Settings.load(path).get("dream.selection.max_episodes") == 2
    assert Settings.defaults().get("dream.selection.max_episodes") == 5000


# -- peers ----------------------------------------------------------------------------------------

def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("package", PEERS)
def test_ingest_dream_recall_and_lint_are_peers_over_memory(package: str) -> None:
    others = [f"memdream.{other}" for other in PEERS if other != package]
    crossing = sorted(
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in (PACKAGE / package).rglob("*.py") for name in _imported(path)
        if any(name == other or name.startswith(other + ".") for other in others)
    )
    assert crossing == []
