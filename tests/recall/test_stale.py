"""Recall keeps values a card has replaced out of the context, and puts newer statements first
(issue 11, item 1; docs/recall.md, "Superseded values" and "Newer first")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream.recall.rank import newest_first
from tests.recall.helpers import check_contract, commit_all, fact, recall_json, write_card, write_events
from tests.transcripts import chat_file

QUESTION = "what is the region of the export bucket?"


def region(value: str) -> dict[str, str]:
    return {"subject": "export-bucket", "attribute": "region", "value": value}


def event(session: str, event_id: str, ts: str, kind: str, text: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": ts, "kind": kind, "text": text, **fields}


def changing_region_log() -> list[dict[str, Any]]:
    """The export bucket moves from eu-west-1 to eu-central-1 on 2026-11-08: tools read it, the agent
    notes it. Quiet sessions after, so that the region is memory, not state read in every session."""
    events = [
        event("s-01", "r1", "2026-11-02T09:00:00Z", "tool_result", "LocationConstraint: eu-west-1", tool="aws",
              ok=True, fact=region("eu-west-1")),
        event("s-01", "n1", "2026-11-02T09:05:00Z", "note", "The export bucket is in eu-west-1.",
              fact=region("eu-west-1")),
        event("s-02", "r2", "2026-11-04T09:00:00Z", "tool_result", "LocationConstraint: eu-west-1", tool="aws",
              ok=True, fact=region("eu-west-1")),
        event("s-04", "r4", "2026-11-08T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1", tool="aws",
              ok=True, fact=region("eu-central-1")),
        event("s-04", "n4", "2026-11-08T09:05:00Z", "note", "The export bucket region is eu-central-1 now.",
              fact=region("eu-central-1")),
        event("s-05", "r5", "2026-11-10T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1", tool="aws",
              ok=True, fact=region("eu-central-1")),
        event("s-06", "r6", "2026-11-12T09:00:00Z", "tool_result", "LocationConstraint: eu-central-1", tool="aws",
              ok=True, fact=region("eu-central-1")),
    ]
    events += [event(f"s-{n:02d}", f"c{n}", f"2026-11-{n:02d}T15:00:00Z", "message", f"review pull request {n}")
               for n in range(7, 14)]
    return events


@pytest.fixture
def dreamt(memory: Path, tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-14T03:00:00Z")
    assert run("ingest", write_events(tmp_path / "log.jsonl", changing_region_log()), "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    return memory


def test_stale_readings_and_notes_are_withheld_after_dream(dreamt: Path, run) -> None:
    data = recall_json(run, dreamt, QUESTION)
    cards = [item for item in data["items"] if item["source"] == "card"]
    assert "eu-central-1" in cards[0]["text"]
    assert "eu-west-1" not in data["context"]
    withheld = {entry["id"]: entry for entry in data["superseded"]}
    assert set(withheld) == {"log://s-01#r1", "log://s-01#n1", "log://s-02#r2"}
    assert {entry["superseded_by"] for entry in withheld.values()} == {cards[0]["id"]}
    assert {entry["since"] for entry in withheld.values()} == {"2026-11-08"}
    plain = run("recall", QUESTION, "-m", dreamt)
    assert plain.exit_code == 0 and "eu-west-1" not in plain.stdout and "eu-central-1" in plain.stdout


def test_with_include_archived_the_old_card_comes_after_the_current_one(dreamt: Path, run) -> None:
    data = recall_json(run, dreamt, QUESTION, "--include-archived")
    texts = [item["text"] for item in data["items"]]
    current = next(number for number, text in enumerate(texts) if "eu-central-1" in text)
    old = next(number for number, text in enumerate(texts) if "eu-west-1" in text)
    assert current < old and data["items"][old]["status"] == "superseded"


@pytest.fixture
def carded(memory: Path, tmp_path: Path, run) -> Path:
    """An active card (eu-central-1, last seen 2026-11-10) and raw events that spell its key oddly."""
    write_card(memory, **fact("f-3a9c21", "export-bucket", "region", "eu-central-1", evidence=[
        {"ref": "log://s-4#r4", "kind": "observation", "ts": "2026-11-08T09:00:00Z"},
        {"ref": "log://s-5#r5", "kind": "observation", "ts": "2026-11-10T09:00:00Z"}]))
    commit_all(memory)
    odd = [
        # older, another value, the key spelled "Export Bucket" / "Region ": superseded
        event("s-1", "old", "2026-11-02T09:00:00Z", "tool_result", "bucket location: eu-west-1", tool="aws",
              ok=True, fact={"subject": "Export Bucket", "attribute": "Region ", "value": "eu-west-1"}),
        # older, the same value in another spelling: not superseded
        event("s-2", "same", "2026-11-09T09:00:00Z", "note", "export_bucket REGION is EU-Central-1.",
              fact={"subject": "export_bucket", "attribute": "REGION", "value": "EU-Central-1."}),
        # newer than anything the card has seen: news, not superseded
        event("s-6", "new", "2026-11-12T09:00:00Z", "note", "bucket location moved to us-east-2",
              fact={"subject": "export bucket", "attribute": "region", "value": "us-east-2"}),
    ]
    assert run("ingest", write_events(tmp_path / "odd.jsonl", odd), "-m", memory).exit_code == 0
    return memory


def test_a_fact_key_in_any_spelling_is_judged_against_its_card(carded: Path, run) -> None:
    data = recall_json(run, carded, "export bucket location region")
    shown = {item["id"]: item for item in data["items"] if item["source"] == "raw"}
    assert "log://s-1#old" not in shown and "eu-west-1" not in data["context"]
    assert data["superseded"] == [{"id": "log://s-1#old", "superseded_by": "f-3a9c21", "since": "2026-11-08"}]
    assert {"log://s-2#same", "log://s-6#new"} <= set(shown)
    assert not any("superseded_by" in item for item in shown.values())


def test_include_archived_shows_a_superseded_event_marked_after_the_card(carded: Path, run) -> None:
    data = recall_json(run, carded, "export bucket location region", "--include-archived")
    ids = [item["id"] for item in data["items"]]
    old = data["items"][ids.index("log://s-1#old")]
    assert ids.index("f-3a9c21") < ids.index("log://s-1#old")
    assert old["superseded_by"] == "f-3a9c21"
    assert old["text"].startswith("[2026-11-02] (superseded 2026-11-08 by f-3a9c21) tool: ")
    assert "superseded" not in data  # shown, so not withheld


def test_a_new_card_changes_what_is_withheld(memory: Path, tmp_path: Path, run) -> None:
    """The mapping lives in the card index: writing a card rebuilds it, no stale cache answers."""
    events = [event("s-1", "a", "2026-11-02T09:00:00Z", "note", "postgres version is 15.4",
                    fact={"subject": "postgres", "attribute": "version", "value": "15.4"})]
    assert run("ingest", write_events(tmp_path / "pg.jsonl", events), "-m", memory).exit_code == 0
    assert "15.4" in recall_json(run, memory, "postgres version")["context"]
    write_card(memory, **fact("f-pg", "Postgres", "Version", "16.1", evidence=[
        {"ref": "log://s-9#b", "kind": "observation", "ts": "2026-11-20T09:00:00Z"}]))
    data = recall_json(run, memory, "postgres version")
    assert "15.4" not in data["context"] and data["superseded"][0]["superseded_by"] == "f-pg"


# -- newer first --------------------------------------------------------------------------------------
def user_chat(folder: Path, session: int, day: str, lines: list[str]) -> Path:
    """One chat session: the user's lines (with times), each answered by the assistant."""
    messages: list[dict[str, Any]] = []
    for minute, line in enumerate(lines):
        messages.append({"role": "user", "content": line, "timestamp": f"{day}T10:{2 * minute:02d}:00Z"})
        messages.append({"role": "assistant", "content": "Good to know, thanks.",
                         "timestamp": f"{day}T10:{2 * minute + 1:02d}:00Z"})
    return chat_file(folder / f"session-{session}.json", messages)


def test_a_newer_statement_comes_before_an_older_one(memory: Path, tmp_path: Path, run) -> None:
    sessions = [
        ("2026-03-02", ["I live in Boston these days.", "My sister visited on Sunday."]),
        ("2026-03-09", ["The weather is awful today.", "We had pizza for dinner."]),
        ("2026-03-16", ["I live in Denver now, the move went fine.", "The train was late again."]),
    ]
    for number, (day, lines) in enumerate(sessions):
        path = user_chat(tmp_path / "chats", number, day, lines)
        assert run("ingest", path, "--log-format", "openai-chat", "-m", memory).exit_code == 0
    data = recall_json(run, memory, "where does the user live?")
    raw = [item for item in data["items"] if item["source"] == "raw"]
    texts = [item["text"] for item in raw]
    denver = next(number for number, text in enumerate(texts) if "Denver" in text)
    boston = next(number for number, text in enumerate(texts) if "Boston" in text)
    assert denver < boston
    assert texts[denver].startswith("[2026-03-16] ") and texts[boston].startswith("[2026-03-02] ")
    assert not list((memory / "cards").rglob("*.yaml"))


def test_newest_first_reorders_only_inside_a_group() -> None:
    # five shown raw items in rank order; their times and the query words each holds
    epochs = [1.0, 5.0, 2.0, 9.0, 3.0]
    words = [{"live"}, {"job"}, {"live"}, set(), {"live"}]
    order = newest_first(5, epochs.__getitem__, lambda place: frozenset(words[place]))
    # the "live" group keeps its places (0, 2, 4), newest first; the others stay put
    assert order == [4, 1, 2, 3, 0]


# -- the command line users run, as a process -----------------------------------------------------
@pytest.mark.parametrize("extra", [[], ["--include-archived"], ["--budget", "200"]])
def test_a_real_process_gives_the_same_output(carded: Path, tmp_path: Path, run, extra: list[str]) -> None:
    twin = tmp_path / "twin"  # usage feeds ranking: each path answers from the same starting state
    shutil.copytree(carded, twin, symlinks=True)
    args = ["export bucket location region", "--format", "json", *extra]
    typer_result = run("recall", *args, "-m", carded)
    done = subprocess.run([sys.executable, "-m", "memdream", "recall", *args, "-m", str(twin)],
                          capture_output=True, text=True)
    assert done.returncode == typer_result.exit_code == 0
    assert done.stdout == typer_result.stdout
    check_contract(json.loads(done.stdout))
