from __future__ import annotations

import json
import shutil
from pathlib import Path

from memdream import yamlio

GOLDEN = Path(__file__).resolve().parent.parent / "cases" / "lint" / "valid" / "small"


def test_fresh_memory_lints_clean(memory: Path, run, chdir) -> None:
    chdir(memory)
    result = run("lint")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no problems" in result.stderr


HAND_WRITTEN = """\
id: f-3a9c21
type: fact
subject: export-bucket
statement: The export bucket lives in eu-central-1.
status: verified
confidence: 1.7
evidence:
- ref: log://s-0007#r1
  stance: supports
created_at: '2026-11-07T09:40:00Z'
updated_at: '2026-11-07T09:40:00Z'
ttl_policy: keep
"""


def test_confidence_out_of_range_points_at_line_6(memory: Path, write_card, run, chdir) -> None:
    write_card(id="f-3a9c21", text=HAND_WRITTEN)
    chdir(memory)
    result = run("lint")
    assert result.exit_code == 1
    assert result.stdout == (
        "cards/facts/f-3a9c21.yaml:6:13: confidence: 1.7 is greater than the maximum of 1 [schema]\n"
    )


def test_json_format(memory: Path, write_card, run) -> None:
    write_card(id="f-3a9c21", text=HAND_WRITTEN)
    result = run("lint", memory, "--format", "json")
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["ok"] is False
    assert report["findings"] == [{
        "path": str(memory / "cards/facts/f-3a9c21.yaml"), "line": 6, "col": 13, "rule": "schema",
        "message": "confidence: 1.7 is greater than the maximum of 1", "severity": "error",
    }]


def test_github_annotations_are_chosen_on_github_actions(memory: Path, write_card, run, chdir,
                                                         monkeypatch) -> None:
    write_card(id="f-3a9c21", text=HAND_WRITTEN)
    chdir(memory)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    result = run("lint")
    assert result.stdout == ("::error file=cards/facts/f-3a9c21.yaml,line=6,col=13,title=memdream lint "
                             "(schema)::confidence: 1.7 is greater than the maximum of 1\n")
    assert run("lint", "--format", "text").stdout.startswith("cards/facts/f-3a9c21.yaml:6:13:")


def test_paths_outside_cwd_are_shown_from_cwd(tmp_path: Path, run, chdir) -> None:
    copy = tmp_path / "repo" / "memory"
    shutil.copytree(GOLDEN, copy)
    (copy / "cards/facts/f-0a1b2c.yaml").write_text(
        (copy / "cards/facts/f-0a1b2c.yaml").read_text().replace("status: verified", "status: sure"))
    chdir(tmp_path / "repo")
    result = run("lint", "memory")
    assert result.stdout.startswith("memory/cards/facts/f-0a1b2c.yaml:7:9: status: 'sure' is not one of")


def test_file_arguments_limit_findings_to_those_files(memory: Path, write_card, run, chdir) -> None:
    write_card(id="f-000001", confidence=1.5)
    write_card(id="f-000002", attribute="owner", confidence=2.0)
    chdir(memory)
    result = run("lint", "cards/facts/f-000002.yaml")
    assert result.exit_code == 1
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["cards/facts/f-000002.yaml"]


def test_several_memories_in_one_call(tmp_path: Path, run) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    shutil.copytree(GOLDEN, first)
    shutil.copytree(GOLDEN, second)
    (second / "plan.yaml").write_text("goal: 3\n")
    result = run("lint", first, second, "--format", "json")
    report = json.loads(result.stdout)
    assert len(report["memories"]) == 2
    assert {Path(f["path"]).parts[-2] for f in report["findings"]} == {"b"}


def test_usage_errors_exit_2(tmp_path: Path, run) -> None:
    missing = run("lint", tmp_path / "nope")
    assert missing.exit_code == 2 and "no such file or folder" in missing.stderr
    not_memory = run("lint", tmp_path)
    assert not_memory.exit_code == 2 and "not inside a memdream memory" in not_memory.stderr
    assert run("lint", "--format", "xml").exit_code == 2


def test_lint_reads_archive_and_checks_version_chain(memory: Path, write_card, run) -> None:
    write_card(id="f-000002", supersedes=["f-000001"])
    write_card(archived=True, id="f-000001", status="superseded", superseded_by=["f-000002"])
    assert run("lint", memory).exit_code == 0
    (memory / "archive/facts/f-000001.yaml").unlink()
    result = run("lint", memory, "--format", "json")
    messages = [f["message"] for f in json.loads(result.stdout)["findings"]]
    assert messages == ["supersedes: no card has id 'f-000001'"]


def test_card_with_a_secret_is_reported_without_echoing_it(memory: Path, write_card, run) -> None:
    write_card(statement="Deploy key is ghp_abcdefghijklmnopqrstuvwxyz0123456789 for now.")
    result = run("lint", memory)
    assert result.exit_code == 1
    assert "possible github-token" in result.stdout
    assert "ghp_" not in result.stdout


def test_lint_does_not_change_any_file(memory: Path, write_card, run) -> None:
    path = write_card(confidence=3)
    before = path.read_bytes()
    run("lint", memory)
    assert path.read_bytes() == before
    assert yamlio.loads(before.decode())["confidence"] == 3


def test_evidence_must_name_raw_events_when_the_raw_layer_is_here(memory: Path, write_card, run,
                                                                  tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text('{"session": "s-1", "ts": "2026-11-07T09:13:41Z", "kind": "tool_result", "id": "r1", '
                   '"tool": "aws", "ok": true, "text": "eu-central-1"}\n')
    write_card(id="f-000001")  # cites log://s-1#r1, not ingested yet: no raw layer, nothing to check
    assert run("lint", memory).exit_code == 0
    assert run("ingest", log, "-m", memory).exit_code == 0
    assert run("lint", memory).exit_code == 0
    stored = (memory / "raw" / "segments" / "000001.jsonl").read_text().strip()
    import hashlib
    digest = "sha256:" + hashlib.sha256(stored.encode()).hexdigest()
    write_card(id="f-000002", attribute="owner", evidence=[
        {"ref": "log://s-1#r1", "hash": digest, "stance": "supports"},
        {"ref": "log://s-1#r9", "stance": "supports"},
        {"ref": "log://s-1#r1", "hash": "sha256:" + "0" * 64, "stance": "contradicts"}])
    result = run("lint", memory, "--format", "json")
    found = [(f["line"], f["rule"], f["message"]) for f in json.loads(result.stdout)["findings"]]
    assert found == [
        (13, "provenance", "log://s-1#r9 names no event in the raw layer"),
        (16, "provenance", "hash of log://s-1#r1 does not match the raw event (the event or the card changed)"),
    ]


def test_one_fact_key_however_it_is_spelled(memory: Path, write_card, run) -> None:
    """Lint reads the fact key as dream and recall do: "Export Bucket" and "export-bucket" are one key."""
    write_card(id="f-000001", subject="export-bucket", attribute="region")
    write_card(id="f-000002", subject="Export Bucket", attribute="Region", value="us-east-1",
               statement="The export bucket is in us-east-1.")
    result = run("lint", memory, "--format", "json")
    findings = [item for item in json.loads(result.stdout)["findings"] if item["rule"] == "fact-key"]
    assert result.exit_code == 1 and len(findings) == 1
    assert "f-000001" in findings[0]["message"] and findings[0]["path"].endswith("f-000002.yaml")
