"""`memdream forget --subject S | --session ID | --card ID`: erasure from every layer, a tombstone, one commit.

A real memory through the real command line, built once: three dream runs over memdream-format logs that
hold one person, Zelda Quark (named by the user, a note and an LDAP reading of her role, a CODEOWNERS line
that makes her the billing schema's owner, a plan item, later her team, then a message naming her while
the export bucket's region is read again), beside the export bucket's region (read in two sessions,
corrected once: archive/ and audit/ have entries) and a recall of her, so that .memdream/ holds her too.
Each test works on a private copy.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from memdream.review.erasure import PLACEHOLDER, SUBJECT, Erasure
from memdream.review.export import NamePattern
from tests.gitutil import git
from tests.killing import kill_before_commit
from tests.review.dream_history import History, bare_environment, card_id, copy_of, dream, memdream, write_events

NAME = "zelda"  # every spelling of her name holds it: "Zelda Quark", "zelda_quark", "@zelda-quark"


def _event(session: str, event_id: str, ts: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"session": session, "id": event_id, "ts": f"2026-11-{ts}Z", "kind": kind, **fields}


def _region(value: str) -> dict[str, str]:
    return {"subject": "export-bucket", "attribute": "region", "value": value}


FIRST = [
    _event("s-1", "g1", "02T09:00:00", "goal", goal="restore the nightly export"),
    _event("s-1", "r1", "02T09:01:00", "tool_result", tool="aws", ok=True, text="LocationConstraint: eu-west-1",
           fact=_region("eu-west-1")),
    _event("s-2", "r2", "03T09:01:00", "tool_result", tool="aws", ok=True, text="LocationConstraint: eu-west-1",
           fact=_region("eu-west-1")),
    _event("s-3", "m1", "04T10:00:00", "message", actor="user",
           text="Zelda Quark leads the billing team; ask her before changing the schema."),
    _event("s-3", "n2", "04T10:01:00", "note", text="Zelda Quark is the billing lead.",
           fact={"subject": "Zelda Quark", "attribute": "role", "value": "billing lead"}),
    _event("s-3", "r3", "04T10:02:00", "tool_result", tool="ldap", ok=True, text="title: billing lead",
           fact={"subject": "zelda_quark", "attribute": "role", "value": "billing lead"}),
    _event("s-3", "r4", "04T10:03:00", "tool_result", tool="git", ok=True,
           text="CODEOWNERS: billing/schema.sql @zelda-quark",
           fact={"subject": "billing schema", "attribute": "owner", "value": "Zelda Quark"}),
    _event("s-3", "p1", "04T10:05:00", "plan", next=["Ask Zelda Quark to review the schema change"], done=[]),
]
SECOND = [
    _event("s-4", "n5", "06T10:01:00", "note", text="Zelda Quark moved to the payments team.",
           fact={"subject": "Zelda Quark", "attribute": "team", "value": "payments"}),
    _event("s-4", "r5", "06T10:02:00", "tool_result", tool="ldap", ok=True, text="department: payments",
           fact={"subject": "Zelda Quark", "attribute": "team", "value": "payments"}),
]
THIRD = [
    _event("s-5", "r6", "08T09:01:00", "tool_result", tool="aws", ok=True, text="LocationConstraint: eu-west-1",
           fact=_region("eu-west-1")),
    _event("s-5", "m6", "08T09:05:00", "message", actor="user", text="Zelda Quark approved the deploy."),
]


class Built(History):
    """The memory and the cards of interest."""

    @property
    def zelda(self) -> list[str]:
        return sorted(path.stem for path in (self.root / "cards").rglob("*.yaml")
                      if "subject: Zelda Quark\n" in path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    with bare_environment(tmp_path_factory):
        base = tmp_path_factory.mktemp("forget")
        root = base / "mem"
        assert memdream("init", root).returncode == 0
        for number, log in enumerate((FIRST, SECOND, THIRD), 1):
            done = memdream("ingest", write_events(base / f"log-{number}.jsonl", log), "-m", root)
            assert done.returncode == 0, done.stderr
            first = dream(root)
            if number == 1:
                corrected = memdream("correct", card_id(root, "export-bucket"), "--value", "eu-central-1", "-m", root)
                assert corrected.returncode == 0, corrected.stderr
        recalled = memdream("recall", "Zelda Quark billing", "-m", root)
        assert recalled.returncode == 0 and "Zelda Quark" in recalled.stdout, recalled.stderr
        return Built(root, first, "")


@pytest.fixture
def mem(built: Built, tmp_path: Path) -> Path:
    return copy_of(built, tmp_path / "mem").root


def forget(root: Path, *args: str) -> dict[str, Any]:
    done = memdream("forget", *args, "-m", root, "-f", "json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def files_holding(root: Path, needle: str, skip_git: bool = True) -> list[str]:
    """Files under ``root`` whose bytes hold ``needle`` in any case."""
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not (skip_git and ".git" in path.relative_to(root).parts):
            if needle.encode() in path.read_bytes().lower():
                found.append(path.relative_to(root).as_posix())
    return found


def snapshot(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and path.relative_to(root).as_posix() not in (".memdream/lock", ".git/index")}


def segments(root: Path) -> str:
    return "".join(path.read_text(encoding="utf-8") for path in sorted((root / "raw" / "segments").glob("*.jsonl")))


def checks_pass(root: Path) -> None:
    for command in ("lint", "audit --verify"):
        done = memdream(*command.split(), "-m", root)
        assert done.returncode == 0, f"{command}: {done.stdout}{done.stderr}"


def test_the_memory_holds_her_in_every_layer(built: Built) -> None:
    assert len(built.zelda) == 2
    for place in ("cards/", "audit/", "plan.yaml", "INDEX.md", "raw/segments/", ".memdream/"):
        assert any(path.startswith(place) for path in files_holding(built.root, NAME)), place
    assert NAME in git(built.root, "log", "-p", "--all").lower()
    assert len([line for line in git(built.root, "log", "--format=%s").splitlines() if "dream:" in line]) == 3


def test_purge_history_leaves_no_trace(mem: Path) -> None:
    done = memdream("forget", "--subject", "Zelda Quark", "--purge-history", "-m", mem)
    assert done.returncode == 0, done.stderr
    assert "history rewritten" in done.stdout and "not reached" in done.stdout
    assert files_holding(mem, NAME) == []  # working tree, .memdream/ and the raw segments
    assert NAME not in git(mem, "log", "-p", "--all").lower()
    objects = subprocess.run(["git", "-C", str(mem), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    assert NAME.encode() not in objects.lower()
    assert files_holding(mem / ".git", NAME, skip_git=False) == []  # no reflog, backup ref or filter state
    checks_pass(mem)
    runs = json.loads(memdream("log", "-m", mem, "-f", "json").stdout)
    assert len([run for run in runs if run["kind"] == "dream"]) == 3  # every dream commit kept, re-made
    assert "export-bucket" in (mem / "INDEX.md").read_text(encoding="utf-8")


def test_without_purge_history_the_history_keeps_it(mem: Path, built: Built) -> None:
    before = git(mem, "rev-parse", "HEAD").strip()
    done = memdream("forget", "--subject", "zelda_quark", "-m", mem)
    assert done.returncode == 0, done.stderr
    assert "history kept" in done.stdout and "--purge-history" in done.stdout
    assert files_holding(mem, NAME) == []
    assert NAME in git(mem, "log", "-p", "--all").lower()
    assert git(mem, "rev-parse", "HEAD~1").strip() == before  # one commit on top, history untouched
    message = git(mem, "log", "-1", "--format=%B")
    assert message.startswith("memdream forget: one subject erased") and NAME not in message.lower()
    assert git(mem, "status", "--porcelain") == ""
    for card in built.zelda:
        assert not list(mem.rglob(f"{card}.yaml"))
    assert "export-bucket" in segments(mem) and "Zelda" not in segments(mem)
    plan = (mem / "plan.yaml").read_text(encoding="utf-8")
    assert "restore the nightly export" in plan and "review the schema" not in plan
    checks_pass(mem)


def test_a_rollback_never_goes_back_past_a_forget(mem: Path) -> None:
    """Without --purge-history the old commits still hold her: a rollback to before the forget would
    restore her cards. It is refused, one line, and the memory stays as the forget left it."""
    assert memdream("forget", "--subject", "Zelda Quark", "-m", mem).returncode == 0
    head = git(mem, "rev-parse", "HEAD").strip()
    for args in (["rollback"], ["rollback", "--to", "HEAD~2"], ["rollback", "--dry-run"]):
        done = memdream(*args, "-m", mem)
        assert done.returncode == 1, done.stdout
        assert "would undo `memdream forget`" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert git(mem, "rev-parse", "HEAD").strip() == head and files_holding(mem, NAME) == []


def test_stats_counts_no_dream_for_a_forget(mem: Path) -> None:
    before = json.loads(memdream("stats", "-m", mem, "-f", "json").stdout)
    assert memdream("forget", "--subject", "Zelda Quark", "-m", mem).returncode == 0
    after = json.loads(memdream("stats", "-m", mem, "-f", "json").stdout)
    assert after["dreams"]["count"] == before["dreams"]["count"] == 3
    assert [run["run"] for run in after["dreams"]["runs"]] == [run["run"] for run in before["dreams"]["runs"]]


def test_history_can_be_purged_later(mem: Path) -> None:
    """A forget without --purge-history, then the same forget with it: the cards are gone from the working
    tree, so history is searched for them."""
    forget(mem, "--subject", "Zelda Quark")
    assert NAME in git(mem, "log", "-p", "--all").lower()
    result = forget(mem, "--subject", "Zelda Quark", "--purge-history")
    assert result["history_rewritten"] is True and result["commit"] is None and result["counts"]["cards"] == 0
    assert NAME not in git(mem, "log", "-p", "--all").lower()
    objects = subprocess.run(["git", "-C", str(mem), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    assert NAME.encode() not in objects.lower()
    checks_pass(mem)


def test_the_tombstone_says_what_kind_how_much_and_when(mem: Path) -> None:
    result = forget(mem, "--subject", "Zelda Quark")
    tombstone = mem / "audit" / f"{result['forget']}.jsonl"
    (line,) = tombstone.read_text(encoding="utf-8").splitlines()
    entry = json.loads(line)
    assert list(entry) == ["run", "op", "card", "erased", "reason", "counts", "at", "purge_history"]
    assert entry["op"] == "forget" and entry["erased"] == "subject" and entry["card"] == PLACEHOLDER
    assert entry["counts"] == result["counts"] and entry["at"] == result["at"]
    assert entry["counts"]["cards"] == 3 and entry["counts"]["events"] == 8 and entry["counts"]["plan_items"] == 1
    assert NAME not in line.lower() and "billing" not in line and "s-3" not in line
    trailers = git(mem, "log", "-1", "--format=%(trailers:only)")
    assert trailers.strip() == f"Memdream-Forget: {result['forget']}"
    assert git(mem, "log", "-1", "--format=%an <%ae>").strip() == "memdream <memdream@localhost>"  # no identity


def test_a_session(mem: Path, built: Built, tmp_path: Path) -> None:
    result = forget(mem, "--session", "s-3")
    assert result["erased"] == "session" and result["counts"]["events"] == 5
    gone = set(result["cards"])
    role = [card for card in built.zelda if "role" in (built.root / "cards" / "facts" / f"{card}.yaml").read_text()]
    assert set(role) <= gone and card_id(built.root, "billing schema") in gone
    assert '"session":"s-3"' not in segments(mem) and '"session":"s-4"' in segments(mem)
    assert "s-3" not in (mem / "plan.yaml").read_text(encoding="utf-8")
    checks_pass(mem)
    # The same log ingested again brings none of it back, nor does the next dream.
    again = memdream("ingest", write_events(tmp_path / "again.jsonl", FIRST), "-m", mem, "-f", "json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["added"] == 0 and report["forgotten"] == 5
    assert '"session":"s-3"' not in segments(mem)
    assert dream(mem) and not (set(result["cards"]) & {path.stem for path in mem.rglob("*.yaml")})
    forgotten = (mem / ".memdream" / "ingest" / "forgotten.json").read_text(encoding="utf-8")
    assert "s-3" not in forgotten and len(json.loads(forgotten)["sessions"]) == 1
    checks_pass(mem)


def test_a_subject_does_not_come_back_from_its_logs(mem: Path, tmp_path: Path) -> None:
    forget(mem, "--subject", "Zelda Quark")
    again = memdream("ingest", write_events(tmp_path / "all.jsonl", FIRST + SECOND + THIRD), "-m", mem, "-f", "json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["added"] == 0 and report["forgotten"] == 8
    assert files_holding(mem, NAME) == []
    text = memdream("ingest", tmp_path / "all.jsonl", "-m", mem)
    assert text.returncode == 0 and "0 new, 4 already stored, 8 forgotten (memdream forget)" in text.stdout


def test_a_card_and_its_versions(mem: Path) -> None:
    region = card_id(mem, "export-bucket")
    (old,) = [path.stem for path in (mem / "archive").rglob("f-*.yaml")]
    result = forget(mem, "--card", region)
    assert result["cards"] == [region] and result["archived"] == [old] and result["erased"] == "card"
    assert not list(mem.rglob(f"{region}.yaml")) and not list(mem.rglob(f"{old}.yaml"))
    assert len(list((mem / "cards").rglob("f-*.yaml"))) == 3  # Zelda's two cards and the schema's owner
    assert "eu-west-1" not in segments(mem) and "Zelda" in segments(mem)
    assert region not in (mem / "INDEX.md").read_text(encoding="utf-8")
    checks_pass(mem)


def test_a_dry_run_writes_nothing(mem: Path, built: Built) -> None:
    before = snapshot(mem)
    result = forget(mem, "--subject", "Zelda Quark", "--dry-run")
    assert result["dry_run"] is True and result["commit"] is None
    assert set(built.zelda) <= set(result["cards"]) and result["counts"]["events"] == 8
    assert snapshot(mem) == before
    text = memdream("forget", "--session", "s-3", "--dry-run", "-m", mem)
    assert text.returncode == 0 and "would erase one session" in text.stdout and "nothing changed" in text.stdout
    assert snapshot(mem) == before


def test_a_dirty_tree_is_refused(mem: Path) -> None:
    card = next((mem / "cards" / "facts").glob("f-*.yaml"))
    card.write_text(card.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    before = snapshot(mem)
    done = memdream("forget", "--subject", "Zelda Quark", "-m", mem)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("memdream: uncommitted changes in cards/facts/") and done.stderr.count("\n") == 1
    assert snapshot(mem) == before


@pytest.mark.parametrize(("args", "code", "said"), [
    (["--card", "f-000000"], 1, "memdream: no card 'f-000000' in this memory, active or archived "
                                "(see `memdream cards`)\n"),
    ([], 2, "memdream: give exactly one of --subject, --session or --card (see 'memdream forget --help')\n"),
    (["--subject", "Zelda", "--card", "f-1"], 2,
     "memdream: give exactly one of --subject, --session or --card (see 'memdream forget --help')\n"),
    (["--subject", " - "], 2, "memdream: --subject needs a name with at least one letter or digit\n"),
])
def test_bad_input_is_one_line_and_changes_nothing(mem: Path, args: list[str], code: int, said: str) -> None:
    before = snapshot(mem)
    done = memdream("forget", *args, "-m", mem)
    assert (done.returncode, done.stdout, done.stderr) == (code, "", said)
    assert snapshot(mem) == before


def test_nothing_found_changes_nothing(mem: Path) -> None:
    before = git(mem, "rev-parse", "HEAD")
    done = memdream("forget", "--subject", "Nobody Here", "-m", mem)
    assert done.returncode == 0 and "nothing changed" in done.stderr
    assert git(mem, "rev-parse", "HEAD") == before


def test_a_killed_forget_is_finished_by_running_it_again(mem: Path, tmp_path: Path) -> None:
    kill_before_commit(["forget", "--subject", "Zelda Quark", "-m", str(mem)], tmp_path / "paused")
    refused = memdream("cards", "-m", mem)
    assert refused.returncode == 1 and "interrupted" in refused.stderr
    result = forget(mem, "--subject", "Zelda Quark")  # the next writer puts the files back; this one erases
    assert result["commit"] and result["counts"]["cards"] == 3
    assert files_holding(mem, NAME) == []
    checks_pass(mem)


def test_a_card_that_names_the_subject_is_redacted() -> None:
    erasure = Erasure(SUBJECT, NamePattern("Zelda Quark"), "zelda-quark", cards={"f-gone"},
                      refs={"log://s-3#r4"})
    card = {"id": "f-keep", "subject": "release", "statement": "Ask zelda-quark before a release.",
            "tags": ["zelda quark", "release"], "supersedes": ["f-gone"],
            "evidence": [{"ref": "log://s-3#r4"}, {"ref": "log://s-9#r1"}], "evidence_count": 3}
    cleaned = erasure.clean_card(card, held=[{"ref": "log://s-8#r2"}])
    assert cleaned == {"id": "f-keep", "subject": "release", "statement": f"Ask {PLACEHOLDER} before a release.",
                       "tags": ["release"], "evidence": [{"ref": "log://s-9#r1"}], "evidence_count": 2}
    assert erasure.clean_card({"id": "f-x", "subject": "Zelda  Quark", "evidence": [{"ref": "log://a#b"}]}) is None
    audit = erasure.clean_audit_line({"run": "r", "op": "supersede", "card": "f-keep", "cards": ["f-gone"],
                                      "reason": "zelda's old value", "evidence": ["log://s-3#r4", "log://x#y"]})
    assert audit == {"run": "r", "op": "supersede", "card": "f-keep", "cards": [], "reason": PLACEHOLDER,
                     "evidence": ["log://x#y"]}
