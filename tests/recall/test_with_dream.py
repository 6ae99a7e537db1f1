"""Recall over what dream made of a generated agent log (tests/dream/generator.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.dream.generator import build, write
from tests.recall.helpers import check_contract, git


def test_recall_after_ingest_and_dream(memory: Path, tmp_path: Path, run, monkeypatch) -> None:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    assert run("ingest", write(tmp_path / "agent.jsonl", build()), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    result = run("recall", "which region is the exportbucket in", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    check_contract(data)
    cards = [item for item in data["items"] if item["source"] == "card"]
    assert cards[0]["text"].count("eu-central-1") >= 1 and cards[0]["status"] == "verified"
    assert all("eu-west-1" not in item["text"] for item in cards if item["source"] == "card")
    deploy = json.loads(run("recall", "how do I deploy", "-m", memory, "--format", "json").stdout)
    assert any("make deploy ENV=prod" in item["text"] for item in deploy["items"])
    assert git(memory, "status", "--porcelain") == ""
