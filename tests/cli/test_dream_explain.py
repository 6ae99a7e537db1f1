"""`memdream dream --dry-run --explain`: what a run admitted, and each candidate it did not, with the reason
the deciding rule gave and the candidate's evidence; in text and in JSON, through the real command line.

One session's events make one card (a tool's reading of a bucket's region) and two candidates that are
not admitted: a port the agent noted four times in that one session (no reuse signal: the admission score
and its parts) and a tool's single reading of an uptime in seconds (volatile).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdream import gitops

SESSION = "s-1"


def _event(number: int, kind: str, text: str, subject: str, attribute: str, value: str) -> dict[str, Any]:
    event = {"session": SESSION, "ts": f"2026-11-02T10:00:{number:02d}Z", "kind": kind, "id": f"e{number}",
             "text": text, "fact": {"subject": subject, "attribute": attribute, "value": value}}
    return {**event, "tool": "shell", "ok": True} if kind == "tool_result" else event


EVENTS = [
    _event(1, "tool_result", "eu-central-1", "export-bucket", "region", "eu-central-1"),
    *(_event(n, "note", f"the mail server listens on 2525 (note {n})", "mail-server", "port", "2525")
      for n in range(2, 6)),
    _event(6, "tool_result", "uptime: 1380s", "service", "uptime", "1380s"),
]


def _ingested(run: Any, memory: Path, tmp_path: Path, events: list[dict[str, Any]], name: str = "events") -> None:
    log = tmp_path / f"{name}.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in events), encoding="utf-8")
    result = run("ingest", log, "-m", memory)
    assert result.exit_code == 0, result.stderr


def _files(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes()
            for path in sorted(root.rglob("*")) if path.is_file() and ".git" not in path.relative_to(root).parts}


def test_the_text_lists_the_admitted_card_then_each_candidate_left_out_with_its_reason(
        memory: Path, tmp_path: Path, run: Any) -> None:
    _ingested(run, memory, tmp_path, EVENTS)
    result = run("dream", "--dry-run", "--explain", "-m", memory)
    assert result.exit_code == 0, result.stderr
    why_not = result.stdout[result.stdout.index("why not:"):]
    blocks = why_not.split("\n\n")
    assert blocks[0].splitlines()[0] == "why not: 2 candidate(s) not admitted, 1 new card(s) admitted"
    assert blocks[0].splitlines()[1].endswith("(fact) export-bucket · region")
    port, uptime = blocks[1].splitlines(), blocks[2].splitlines()  # by reason: "no reuse signal" < "volatile"
    assert port[:2] == ["not admitted: mail-server · port (fact)", "  would say: The port of mail-server is 2525."]
    assert port[2].startswith("  why: no reuse signal: admission score -0.0001 is below 0.05: value 0 "
                              "(seen in 1 session(s), no strong evidence, 0 piece(s) of user feedback)")
    assert "observable 0.00" in port[2] and "size 1.00" in port[2] and "retrieval cost 0.0001" in port[2]
    assert port[3:] == [
        "  evidence: 4 piece(s), the newest 3 shown",
        '    log://s-1#e3 note "the mail server listens on 2525 (note 3)"',
        '    log://s-1#e4 note "the mail server listens on 2525 (note 4)"',
        '    log://s-1#e5 note "the mail server listens on 2525 (note 5)"',
        "    … and 1 more",
    ]
    assert uptime == [
        "not admitted: service · uptime (fact)",
        "  would say: The uptime of service is 1380s.",
        "  why: volatile: '1380s' is a tool's reading of a number with a unit, running state until the user "
        "confirms it",
        "  evidence: 1 piece(s)",
        '    log://s-1#e6 observation "uptime: 1380s"',
    ]


def test_the_json_report_holds_the_same_as_data(memory: Path, tmp_path: Path, run: Any) -> None:
    _ingested(run, memory, tmp_path, EVENTS)
    result = run("dream", "--dry-run", "--explain", "-m", memory, "--format", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    explained = report["explain"]
    [admitted] = explained["admitted"]
    assert admitted["layer"] == "fact" and admitted["key"] == {"subject": "export-bucket", "attribute": "region"}
    assert admitted["card"] in {op["card"] for op in report["operations"] if op["op"] == "add"}
    port, uptime = explained["not_admitted"]
    assert report["not_admitted"] == {"no reuse signal": 1, "volatile": 1}  # the counts agree with the list
    assert port["key"] == {"subject": "mail-server", "attribute": "port"} and port["layer"] == "fact"
    assert port["statement"] == "The port of mail-server is 2525." and port["reason"] == "no reuse signal"
    assert port["score"] == -0.0001
    assert port["parts"] == {"value": 0.0, "observable": 0.0, "size": 1.0, "retrieval_cost": 0.0001,
                             "threshold": 0.05}
    assert [item["ref"] for item in port["evidence"]] == ["log://s-1#e3", "log://s-1#e4", "log://s-1#e5"]
    assert port["evidence"][0] == {"ref": "log://s-1#e3", "kind": "note", "stance": "supports",
                                   "quote": "the mail server listens on 2525 (note 3)"}
    assert port["more_evidence"] == 1
    assert uptime["reason"] == "volatile" and uptime["score"] is None and uptime["parts"] == {}
    assert uptime["evidence"] == [{"ref": "log://s-1#e6", "kind": "observation", "stance": "supports",
                                   "quote": "uptime: 1380s"}]
    without = json.loads(run("dream", "--dry-run", "-m", memory, "--format", "json").stdout)
    assert "explain" not in without and without["not_admitted"] == report["not_admitted"]


def test_a_dry_run_with_explain_writes_nothing(memory: Path, tmp_path: Path, run: Any) -> None:
    _ingested(run, memory, tmp_path, EVENTS)
    before = gitops.head_or_none(memory), gitops.status_paths(memory, ["."]), _files(memory)
    for output in ("text", "json"):
        assert run("dream", "--dry-run", "--explain", "-m", memory, "-f", output).exit_code == 0
    # The same commit, the same changes waiting (ingest's manifest line), the same bytes in every file.
    assert (gitops.head_or_none(memory), gitops.status_paths(memory, ["."]), _files(memory)) == before


def test_explain_on_a_real_run_explains_what_it_committed(memory: Path, tmp_path: Path, run: Any) -> None:
    """Allowed without --dry-run (see the option's help): the same explanation, and the run commits."""
    _ingested(run, memory, tmp_path, EVENTS)
    planned = json.loads(run("dream", "--dry-run", "--explain", "-m", memory, "-f", "json").stdout)["explain"]
    result = run("dream", "--explain", "-m", memory, "-f", "json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["commit"] and report["explain"] == planned
    assert "allowed on a real run too" in " ".join(run("dream", "--help").stdout.split())


def test_a_value_the_user_rejected_is_explained_when_the_agent_claims_it_again(
        memory: Path, tmp_path: Path, run: Any) -> None:
    _ingested(run, memory, tmp_path, [_event(1, "tool_result", "PGPORT=5433", "staging db", "port", "5433")])
    assert run("dream", "-m", memory).exit_code == 0
    [card] = [path.stem for path in (memory / "cards" / "facts").glob("*.yaml")]
    assert run("reject", card, "--note", "staging moved off 5433", "-m", memory).exit_code == 0
    assert run("dream", "-m", memory).exit_code == 0
    again = {**_event(7, "note", "staging db is on 5433", "staging db", "port", "5433"), "session": "s-2"}
    _ingested(run, memory, tmp_path, [again], "again")
    report = json.loads(run("dream", "--dry-run", "--explain", "-m", memory, "-f", "json").stdout)
    [refused] = report["explain"]["not_admitted"]
    assert refused["reason"] == "rejected by the user" and report["not_admitted"] == {"rejected by the user": 1}
    assert refused["why"].startswith("rejected by the user: the user rejected '5433' (")
    assert refused["statement"] == "The port of staging db is 5433."
    assert refused["evidence"] == [{"ref": "log://s-2#e7", "kind": "note", "stance": "supports",
                                    "quote": "staging db is on 5433"}]
