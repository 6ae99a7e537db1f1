"""A strategy the user rejected stays rejected although later sessions keep repeating its steps:
sessions that follow a habit are not the user's word (only a newer word of theirs or an outcome is)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from memdream.commands.init import init_memory
from tests.transcripts import billing_api_project


def memdream(root: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "memdream", *map(str, args), "-m", str(root)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done


def strategies(root: Path, *args: str) -> list[dict[str, Any]]:
    """The strategies induced from workflows (the project's procedures card is a strategy too)."""
    found = json.loads(memdream(root, "cards", "--type", "strategy", "--format", "json", *args).stdout)
    return [card for card in found if "workflow" in card.get("tags", [])]


def test_a_rejected_strategy_is_not_induced_again_from_later_sessions(tmp_path: Path) -> None:
    logs = billing_api_project(tmp_path / "logs", small=True)
    root = tmp_path / "mem"
    init_memory(root)
    memdream(root, "ingest", *logs[:4])
    memdream(root, "dream")
    [learned] = strategies(root)
    memdream(root, "reject", learned["id"], "--note", "we moved to make targets, not poetry directly")
    memdream(root, "dream")
    assert strategies(root) == []
    refused = 0
    for log in logs[4:]:  # three more sessions that run the same steps
        memdream(root, "ingest", log)
        report = json.loads(memdream(root, "dream", "--format", "json").stdout)
        refused += report["not_admitted"].get("rejected by the user", 0)
    assert all(card.get("value") != learned["value"] for card in strategies(root))
    assert refused >= 1  # the steps did recur: they were refused, not merely absent
