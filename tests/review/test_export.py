"""`memdream export --subject S | --session ID`: one JSON bundle of everything a memory holds about it.

A real memory through the real command line: a memdream-format log with two subjects (the export
bucket's region, read by tools in two sessions; Alice Martin, a person, named by the user in a third
session, where a tool reading also makes her the owner of the billing schema), a dream, a person's
correction of the region and a second dream (so archive/ and audit/ have entries)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memdream.review.export import NamePattern
from tests.gitutil import git
from tests.review.dream_history import bare_environment, card_id, dream, memdream, write_events

KEYS = ["memdream_export", "query", "exported_at", "memory", "raw_layer", "cards", "archived", "mentions",
        "events", "audit", "plan"]


def _region(value: str) -> dict[str, str]:
    return {"subject": "export-bucket", "attribute": "region", "value": value}


def _event(session: str, event_id: str, ts: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": f"2026-11-{ts}Z", "kind": kind, **fields}


LOG = [
    _event("s-1", "g1", "02T09:00:00", "goal", goal="restore the nightly export"),
    _event("s-1", "r1", "02T09:01:00", "tool_result", tool="aws", ok=True, text="LocationConstraint: eu-west-1",
           fact=_region("eu-west-1")),
    _event("s-1", "n1", "02T09:02:00", "note", text="The export bucket is in eu-west-1.", fact=_region("eu-west-1")),
    _event("s-2", "r2", "03T09:01:00", "tool_result", tool="aws", ok=True, text="LocationConstraint: eu-west-1",
           fact=_region("eu-west-1")),
    _event("s-3", "m1", "04T10:00:00", "message", actor="user",
           text="Alice Martin leads the billing team; ask her before changing the schema."),
    _event("s-3", "n2", "04T10:01:00", "note", text="Alice Martin is the billing lead.",
           fact={"subject": "Alice Martin", "attribute": "role", "value": "billing lead"}),
    _event("s-3", "r3", "04T10:02:00", "tool_result", tool="ldap", ok=True, text="title: billing lead",
           fact={"subject": "alice_martin", "attribute": "role", "value": "billing lead"}),
    _event("s-3", "r4", "04T10:03:00", "tool_result", tool="git", ok=True,
           text="CODEOWNERS: billing/schema.sql @alice-martin",
           fact={"subject": "billing schema", "attribute": "owner", "value": "Alice Martin"}),
    _event("s-3", "p1", "04T10:05:00", "plan", next=["Ask Alice Martin to review the schema change"], done=[]),
    _event("s-3", "m2", "04T10:06:00", "message", actor="user", text="Malice Martinez is not on the team."),
]


class Built:
    def __init__(self, root: Path, first: str, second: str) -> None:
        self.root, self.first, self.second = root, first, second
        self.alice = card_id(root, "Alice Martin")
        self.schema = card_id(root, "billing schema")
        self.region = card_id(root, "export-bucket")  # the corrected, active one
        (old,) = [path.stem for path in (root / "archive").rglob("*.yaml")]
        self.old_region = old
        self.correction = next(event for event in _segment_events(root) if event.get("verdict") == "correct")

    def audit(self, run: str) -> list[dict[str, Any]]:
        text = (self.root / "audit" / f"{run}.jsonl").read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines()]

    def lines(self, run: str, cards: set[str]) -> list[tuple[str, int]]:
        """(file, line) of the audit lines of ``run`` whose card or cards name one of ``cards``."""
        return [(f"audit/{run}.jsonl", number) for number, data in enumerate(self.audit(run), 1)
                if {data.get("card"), *(data.get("cards") or [])} & cards]


def _segment_events(root: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted((root / "raw" / "segments").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Built once for the module, in the environment the autouse fixture gives each test."""
    with bare_environment(tmp_path_factory):
        base = tmp_path_factory.mktemp("export")
        root = base / "mem"
        assert memdream("init", root).returncode == 0
        done = memdream("ingest", write_events(base / "log.jsonl", LOG), "-m", root)
        assert done.returncode == 0, done.stderr
        first = dream(root)
        corrected = memdream("correct", card_id(root, "export-bucket"), "--value", "eu-central-1", "--note",
                             "moved to Frankfurt", "-m", root)
        assert corrected.returncode == 0, corrected.stderr
        second = dream(root)
        return Built(root, first, second)


def export(root: Path, *args: str | Path) -> dict[str, Any]:
    done = memdream("export", *args, "-m", root)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert list(data) == KEYS and data["memdream_export"] == 1
    return data


def ids(cards: list[dict[str, Any]]) -> list[str]:
    return [card["id"] for card in cards]


def refs(bundle: dict[str, Any]) -> set[str]:
    return {f"{item['event']['session']}#{item['event']['id']}" for item in bundle["events"]}


def places(bundle: dict[str, Any]) -> list[tuple[str, int]]:
    return [(item["file"], item["line"]) for item in bundle["audit"]]


def test_a_person_as_subject(built: Built) -> None:
    bundle = export(built.root, "--subject", "Alice Martin")
    assert bundle["query"] == {"subject": "Alice Martin", "key": "alice-martin"}
    assert bundle["raw_layer"] == "present" and bundle["memory"] == str(built.root.resolve())
    assert ids(bundle["cards"]) == [built.alice] and bundle["archived"] == []
    # The billing schema's owner is data about her, in a card about something else: a mention.
    assert ids(bundle["mentions"]) == [built.schema]
    assert bundle["cards"][0]["subject"] == "Alice Martin" and bundle["cards"][0]["value"] == "billing lead"
    # Her facts (either spelling of the subject), the user's message, the CODEOWNERS line, the plan;
    # not "Malice Martinez", nothing of the export bucket.
    assert refs(bundle) == {"s-3#m1", "s-3#n2", "s-3#r3", "s-3#r4", "s-3#p1"}
    why = {item["event"]["id"]: item["why"] for item in bundle["events"]}
    assert why == {"m1": ["text"], "n2": ["evidence", "fact", "text"], "r3": ["evidence", "fact", "text"],
                   "r4": ["text"], "p1": ["text"]}
    stored = (built.root / "raw" / "segments" / "000001.jsonl").read_text(encoding="utf-8").splitlines()
    for item in bundle["events"]:
        assert item["segment"] == "raw/segments/000001.jsonl"
        assert json.loads(stored[item["line"] - 1]) == item["event"]
    # Her card's add, and the mention's add (it cites the CODEOWNERS event).
    assert places(bundle) == built.lines(built.first, {built.alice, built.schema})
    assert len(bundle["audit"]) == 2 and bundle["audit"][0]["entry"]["card"] == built.alice
    assert bundle["plan"] == [{"field": "next", "index": 0,
                               "item": {"text": "Ask Alice Martin to review the schema change",
                                        "evidence": ["log://s-3#p1"]}}]
    text = json.dumps(bundle)
    assert "eu-west-1" not in text and "export-bucket" not in text and "Malice" not in text
    # The subject is normalized like fact keys.
    same = export(built.root, "--subject", "alice_martin")
    assert {key: same[key] for key in KEYS[4:]} == {key: bundle[key] for key in KEYS[4:]}


def test_a_corrected_subject_has_its_archived_version(built: Built) -> None:
    bundle = export(built.root, "--subject", "export bucket")
    assert ids(bundle["cards"]) == [built.region] and ids(bundle["archived"]) == [built.old_region]
    assert bundle["cards"][0]["value"] == "eu-central-1" and bundle["archived"][0]["value"] == "eu-west-1"
    assert bundle["archived"][0]["status"] == "superseded" and bundle["mentions"] == []
    correction = f"{built.correction['session']}#{built.correction['id']}"
    # r1 is evidence held in the audit files only (the card shows its newest two).
    assert "log://s-1#r1" not in [item["ref"] for item in bundle["archived"][0]["evidence"]]
    assert refs(bundle) == {"s-1#r1", "s-1#n1", "s-2#r2", correction}
    # In file order: both runs are of one second (MEMDREAM_NOW), their names differ by a random suffix.
    assert places(bundle) == sorted(built.lines(built.first, {built.old_region})
                                    + built.lines(built.second, {built.region, built.old_region}))
    assert len(bundle["audit"]) == 5 and bundle["plan"] == []
    text = json.dumps(bundle)
    assert "Alice" not in text and "s-3" not in text


def test_a_session(built: Built) -> None:
    bundle = export(built.root, "--session", "s-3")
    assert bundle["query"] == {"session": "s-3"}
    assert sorted(ids(bundle["cards"])) == sorted([built.alice, built.schema])
    assert bundle["archived"] == [] and bundle["mentions"] == []
    assert refs(bundle) == {f"s-3#{event['id']}" for event in LOG if event["session"] == "s-3"}
    assert places(bundle) == built.lines(built.first, {built.alice, built.schema})
    assert [item["item"]["text"] for item in bundle["plan"]] == ["Ask Alice Martin to review the schema change"]
    assert "eu-west-1" not in json.dumps(bundle)


def test_a_session_whose_card_was_superseded(built: Built) -> None:
    bundle = export(built.root, "--session", "s-1")
    assert bundle["cards"] == [] and ids(bundle["archived"]) == [built.old_region]
    correction = f"{built.correction['session']}#{built.correction['id']}"
    # Every event of s-1, and what the archived version cites elsewhere (s-2's reading, the correction).
    assert refs(bundle) == {"s-1#g1", "s-1#r1", "s-1#n1", "s-2#r2", correction}
    why = {item["event"]["id"]: item["why"] for item in bundle["events"]}
    assert why["g1"] == ["session"] and why["r1"] == ["evidence", "session"] and why["r2"] == ["evidence"]
    # The old card's lines, and the new card's add and supersede: they cite the correction.
    # In file order: both runs are of one second (MEMDREAM_NOW), their names differ by a random suffix.
    assert places(bundle) == sorted(built.lines(built.first, {built.old_region})
                                    + built.lines(built.second, {built.region, built.old_region}))


def test_nothing_found_is_an_empty_bundle(built: Built) -> None:
    done = memdream("export", "--subject", "Bob", "-m", built.root)
    assert done.returncode == 0
    bundle = json.loads(done.stdout)
    assert all(bundle[key] == [] for key in KEYS[5:])
    assert done.stderr == "note: nothing in this memory is about subject 'Bob'\n"


@pytest.mark.parametrize("args", [[], ["--subject", "Alice Martin", "--session", "s-3"]])
def test_exactly_one_of_subject_or_session(built: Built, args: list[str]) -> None:
    done = memdream("export", *args, "-m", built.root)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "memdream: give exactly one of --subject or --session (see 'memdream export --help')\n"


def test_output_file_and_force(built: Built, tmp_path: Path) -> None:
    out = tmp_path / "alice.json"
    done = memdream("export", "--subject", "Alice Martin", "-o", out, "-m", built.root)
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == f"wrote {out}: 1 cards, 0 archived, 1 mentions, 5 events, 2 audit, 1 plan\n"
    assert ids(json.loads(out.read_text(encoding="utf-8"))["cards"]) == [built.alice]
    again = memdream("export", "--session", "s-1", "-o", out, "-m", built.root)
    assert again.returncode == 1 and again.stderr == f"memdream: {out} exists: give --force to overwrite it\n"
    assert ids(json.loads(out.read_text(encoding="utf-8"))["cards"]) == [built.alice]  # untouched
    forced = memdream("export", "--session", "s-1", "-o", out, "--force", "-m", built.root)
    assert forced.returncode == 0, forced.stderr
    assert json.loads(out.read_text(encoding="utf-8"))["query"] == {"session": "s-1"}
    assert [path.name for path in tmp_path.iterdir()] == ["alice.json"]  # no temporary file left


def test_a_clone_without_the_raw_layer(built: Built, tmp_path: Path) -> None:
    # raw/* is git-ignored (but raw/MANIFEST.jsonl): a clone has the manifest and no segment.
    assert (built.root / ".gitignore").read_text(encoding="utf-8").startswith("# Raw events stay local")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(built.root), str(clone))
    assert (clone / "raw" / "MANIFEST.jsonl").is_file() and not (clone / "raw" / "segments").exists()
    full = export(built.root, "--subject", "Alice Martin")
    done = memdream("export", "--subject", "Alice Martin", "-m", clone)
    assert done.returncode == 0, done.stderr
    bundle = json.loads(done.stdout)
    assert bundle["raw_layer"] == "absent" and bundle["events"] == []
    assert "raw layer is absent" in done.stderr
    for key in ("cards", "archived", "mentions", "plan"):
        assert bundle[key] == full[key]
    # The audit lines that name her card stay; those found only through an event (the mention's add) go.
    assert places(bundle) == built.lines(built.first, {built.alice})
    # The same when the segments are removed from a copy.
    copy = Path(shutil.copytree(built.root, tmp_path / "copy", symlinks=True))
    shutil.rmtree(copy / "raw" / "segments")
    removed = export(copy, "--session", "s-3")
    assert removed["raw_layer"] == "absent" and removed["events"] == [] and len(removed["cards"]) == 2


def test_piped_output_is_json(built: Built) -> None:
    """The real process, its standard output a pipe into another that parses it."""
    reader = subprocess.run(
        ["sh", "-c", '"$0" -m memdream export --session s-3 -m "$1" | "$0" -c "import json,sys; '
         'print(len(json.load(sys.stdin)[\'events\']))"', sys.executable, str(built.root)],
        capture_output=True, text=True, check=False)
    assert reader.returncode == 0 and reader.stderr == ""
    assert reader.stdout == "6\n"


@pytest.mark.parametrize(("text", "found"), [
    ("Alice Martin", True), ("alice_martin", True), ("@alice-martin on call", True), ("ALICE  MARTIN.", True),
    ("Malice Martinez", False), ("alice martins", False), ("alice", False), ("Alice\nMartin", True),
])
def test_whole_words(text: str, found: bool) -> None:
    assert NamePattern("alice martin").in_text(text) is found
    if found:  # whatever the exact test accepts, the test on a stored line lets through
        assert NamePattern("alice martin").loose.search(json.dumps(text)[1:-1])
