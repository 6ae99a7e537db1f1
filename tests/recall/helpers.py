"""Building memories for recall tests: cards, a plan, raw events, git commits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdream import yamlio
from tests.conftest import card_data
from tests.gitutil import git


def commit_all(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", "test setup", "--allow-empty")


def write_card(root: Path, archived: bool = False, **overrides: Any) -> Path:
    data = card_data(**overrides)
    layer = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}[data["type"]]
    path = root / ("archive" if archived else "cards") / layer / f"{data['id']}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yamlio.dumps(data), encoding="utf-8")
    return path


def fact(card_id: str, subject: str, attribute: str, value: str, statement: str | None = None,
         **overrides: Any) -> dict[str, Any]:
    if "evidence" in overrides:
        overrides["evidence"] = [{"stance": "supports", **item} for item in overrides["evidence"]]
    return {"id": card_id, "subject": subject, "attribute": attribute, "value": value,
            "statement": statement or f"The {subject} {attribute} is {value}.", **overrides}


def write_plan(root: Path, goal: str, next_items: list[str]) -> None:
    yamlio.dump_file(root / "plan.yaml", {"goal": goal, "next": [{"text": text} for text in next_items],
                                          "done": [], "updated_at": "2026-11-30T12:00:00Z"})


def write_events(path: Path, events: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    return path


def message(session: str, event_id: str, ts: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": ts, "kind": "message", "text": text, **fields}


def recall_json(run: Any, memory: Path, *args: str) -> dict[str, Any]:
    result = run("recall", *args, "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    check_contract(data)
    return data


def check_contract(data: dict[str, Any]) -> None:
    """recall-output.md: bytes, budget, every item inside the context, plan first, raw evidence."""
    context = data["context"]
    assert data["bytes"] == len(context.encode("utf-8")) <= data["budget"]
    position = 0
    for number, item in enumerate(data["items"]):
        assert item["source"] in ("plan", "card", "raw")
        found = context.find(item["text"], position)
        assert found >= 0, f"item {item['id']} not in context (in order)"
        position = found + len(item["text"])
        if item["source"] == "plan":
            assert number == 0
        else:
            assert item["evidence"], item
        if item["source"] == "raw":
            assert item["evidence"] == [item["id"]]
