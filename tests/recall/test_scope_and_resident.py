"""Recall of tool results (command plus telling lines), resident standing instructions, and the plan
and instructions of the scope asked for (--scope, or the current folder's project)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdream import yamlio
from memdream.recall import index as index_mod
from memdream.recall.engine import Recaller, RecallOptions
from memdream.recall.render import event_body
from memdream.toolcalls import telling_lines
from tests.recall.helpers import check_contract, commit_all, fact, git, recall_json, write_card, write_events

INSTRUCTION = "Always format code with syntax highlighting."


def lesson(card_id: str, statement: str, scope: str, tags: list[str], **overrides: Any) -> dict[str, Any]:
    """A lesson card as dream writes one for a standing instruction, preference or correction."""
    return {"id": card_id, "type": "lesson", "subject": "user", "attribute": None, "value": None,
            "statement": statement, "scope": scope, "tags": tags,
            "evidence": [{"ref": f"log://u/{card_id}#1", "stance": "supports", "kind": "feedback"}], **overrides}


def write_scoped_plan(root: Path) -> None:
    yamlio.dump_file(root / "plan.yaml", {
        "goal": "ship beta's export",
        "next": [{"text": "add the login form", "scope": "alpha"},
                 {"text": "rerun the export", "scope": "beta"},
                 {"text": "renew the laptop"}],
        "done": [],
        "goals": [{"text": "implement login for alpha", "scope": "alpha"},
                  {"text": "ship beta's export", "scope": "beta"}],
        "updated_at": "2026-11-30T12:00:00Z",
    })


def resident_items(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in data["items"] if item.get("resident")]


def check_resident_contract(data: dict[str, Any], share: float = 0.25) -> None:
    """The output contract, plus: resident cards come right after the plan, before any ranked item,
    within their share of the budget, and are not repeated among the ranked items."""
    check_contract(data)
    sources = [("resident" if item.get("resident") else item["source"]) for item in data["items"]]
    ranked = [index for index, source in enumerate(sources) if source in ("card", "raw")]
    residents = [index for index, source in enumerate(sources) if source == "resident"]
    assert not residents or not ranked or max(residents) < min(ranked)
    start = 1 if sources[:1] == ["plan"] else 0
    assert residents == list(range(start, start + len(residents)))
    for item in resident_items(data):
        assert item["source"] == "card" and item["type"] == "lesson" and "score" not in item
    spent = sum(len(("- " + item["text"]).encode()) + 1 for item in resident_items(data))
    assert spent <= int(data["budget"] * share)
    ids = [item["id"] for item in data["items"]]
    assert len(ids) == len(set(ids))


# -- 1. a tool's result reads as its command and the lines that matter -------------------------------------
PYTEST_OUTPUT = """============================= test session starts ==============================
collected 3 items

tests/test_login.py ..F                                                  [100%]

=================================== FAILURES ===================================
___________________________________ test_login ___________________________________
>       assert response.status_code == 200
E       AssertionError: assert 401 == 200
FAILED tests/test_login.py::test_login - AssertionError: assert 401 == 200
========================= 1 failed, 2 passed in 0.52s =========================="""


@pytest.fixture
def tool_log(memory: Path, tmp_path: Path, run) -> Path:
    tag = ["project:alpha"]
    events = [
        {"session": "s-7", "id": "c1", "ts": "2026-11-20T10:00:00Z", "kind": "tool_call", "tool": "Bash",
         "call_id": "t1", "args": {"command": "poetry run pytest -q"}, "tags": tag},
        {"session": "s-7", "id": "r1", "ts": "2026-11-20T10:00:09Z", "kind": "tool_result", "tool": "Bash",
         "call_id": "t1", "ok": False, "text": PYTEST_OUTPUT, "args": {"command": "poetry run pytest -q"},
         "tags": tag},
        {"session": "s-7", "id": "c2", "ts": "2026-11-20T10:01:00Z", "kind": "tool_call", "tool": "Bash",
         "call_id": "t2", "args": {"command": "./scripts/rotate_keys.sh staging"}, "tags": tag},
        {"session": "s-7", "id": "r2", "ts": "2026-11-20T10:01:04Z", "kind": "tool_result", "tool": "Bash",
         "call_id": "t2", "ok": True, "text": "loading vault\n4 secrets replaced\nall good",
         "args": {"command": "./scripts/rotate_keys.sh staging"}, "tags": tag},
        {"session": "s-7", "id": "r3", "ts": "2026-11-20T10:02:00Z", "kind": "tool_result", "tool": "aws",
         "ok": False, "text": "bucket policy", "error": "AccessDenied", "tags": tag},
    ]
    result = run("ingest", write_events(tmp_path / "tools.jsonl", events), "-m", memory)
    assert result.exit_code == 0, result.stderr
    return memory


def raw_by_id(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in data["items"] if item["source"] == "raw"}


def test_a_failed_result_shows_its_command_and_error_lines(tool_log: Path, run) -> None:
    data = recall_json(run, tool_log, "why does the login test fail", "--budget", "2000")
    item = raw_by_id(data)["log://s-7#r1"]
    lines = telling_lines(PYTEST_OUTPUT)
    assert item["text"] == "[2026-11-20] tool: $ poetry run pytest -q (failed) → " + " ⏎ ".join(lines)
    assert "AssertionError: assert 401 == 200" in item["text"]
    assert "collected 3 items" not in item["text"] and "test session starts" not in item["text"]


def test_a_query_about_a_command_finds_its_result(tool_log: Path, run) -> None:
    # the command's words are not in the output: only the indexed command can find it
    data = recall_json(run, tool_log, "rotate_keys.sh staging", "--budget", "2000")
    raw = raw_by_id(data)
    assert raw["log://s-7#r2"]["text"] == "[2026-11-20] tool: $ ./scripts/rotate_keys.sh staging → " \
                                          "4 secrets replaced ⏎ all good"
    # the call itself is still not a recall item: its result says all it does
    assert "log://s-7#c2" not in raw and "log://s-7#c1" not in raw


def test_a_result_without_a_command_reads_as_before(tool_log: Path, run) -> None:
    data = recall_json(run, tool_log, "bucket policy", "--budget", "2000")
    assert raw_by_id(data)["log://s-7#r3"]["text"] == "[2026-11-20] tool: aws (failed): bucket policy error: AccessDenied"


def test_the_command_survives_trimming_of_long_results(memory: Path, tmp_path: Path, run) -> None:
    long_line = "warning: deprecated option in section build " * 8
    events = [{"session": "s-8", "id": "r1", "ts": "2026-11-21T10:00:00Z", "kind": "tool_result",
               "tool": "Bash", "ok": True, "text": f"{long_line}\n{long_line}\nbuild finished. artifact ready.",
               "args": {"command": "make release VERSION=2.1"}}]
    assert run("ingest", write_events(tmp_path / "long.jsonl", events), "-m", memory).exit_code == 0
    data = recall_json(run, memory, "make release", "--budget", "2000")
    (item,) = raw_by_id(data).values()
    assert item["text"].startswith("[2026-11-21] tool: $ make release VERSION=2.1 → ")
    assert item["text"].endswith("build finished. artifact ready.")


@pytest.mark.parametrize(("event", "body"), [
    ({"ok": False, "text": "", "error": "ls: cannot access '/nope': No such file or directory"},
     "$ ls /nope (failed) → ls: cannot access '/nope': No such file or directory"),
    ({"ok": True, "text": ""}, "$ ls /nope"),
    ({"text": "a\nb\nc"}, "$ ls /nope → b ⏎ c"),
    ({"ok": False, "text": "Error: boom", "error": "Error: boom"}, "$ ls /nope (failed) → Error: boom"),
])
def test_event_body_of_a_result_with_a_command(event: dict[str, Any], body: str) -> None:
    assert event_body({"kind": "tool_result", "args": {"command": "ls /nope"}, **event}) == body


def test_the_index_holds_the_command_and_its_version_changed() -> None:
    event = {"kind": "tool_result", "args": {"command": "poetry run mypy"}, "text": "Success"}
    assert "mypy" in index_mod.event_text(event)
    assert "mypy" not in index_mod.event_text({**event, "kind": "note"})
    assert index_mod.INDEX_VERSION >= 8  # caches built before commands were indexed are rebuilt


# -- 2. resident instructions ----------------------------------------------------------------------------
@pytest.fixture
def instructed(memory: Path) -> Path:
    write_scoped_plan(memory)
    write_card(memory, **lesson("l-format", INSTRUCTION, "global", ["preference"], confidence=0.9))
    write_card(memory, **fact("f-auth", "auth-service", "port", "8443", statement="The auth service listens on 8443.",
                              evidence=[{"ref": "log://s-1#a1"}]))
    write_card(memory, id="s-login", type="strategy", subject="login", attribute=None, value=None,
               statement="Implement login with the session middleware, not JWTs.", scope="alpha",
               tags=["project:alpha"], evidence=[{"ref": "log://s-3#l1", "stance": "supports"}])
    commit_all(memory)
    return memory


def test_an_instruction_is_shown_for_a_question_that_shares_no_word_with_it(instructed: Path, run) -> None:
    data = recall_json(run, instructed, "show me how to implement login")
    check_resident_contract(data)
    (item,) = resident_items(data)
    assert item["id"] == "l-format" and data["items"][1] == item
    assert item == {"source": "card", "id": "l-format", "type": "lesson", "status": "verified",
                    "ts": "2026-11-07T09:40:00Z",
                    "text": f"[2026-11-07] lesson: {INSTRUCTION} (scope: global)",
                    "evidence": ["log://u/l-format#1"], "resident": True}
    assert "s-login" in [entry["id"] for entry in data["items"] if not entry.get("resident")]
    result = run("recall", "show me how to implement login", "-m", instructed)
    assert result.stdout == data["context"] and INSTRUCTION in result.stdout


def test_a_resident_card_is_not_repeated_among_the_ranked(instructed: Path, run) -> None:
    data = recall_json(run, instructed, "format code syntax highlighting")
    check_resident_contract(data)
    assert [item["id"] for item in data["items"]].count("l-format") == 1
    assert data["context"].count(INSTRUCTION) == 1


def test_only_active_lessons_tagged_as_instructions_are_resident(instructed: Path, run) -> None:
    write_card(instructed, **lesson("l-plain", "Retries hide flaky tests.", "global", ["testing"]))
    write_card(instructed, **lesson("l-old", "Use tabs.", "global", ["preference"], status="superseded"))
    write_card(instructed, archived=True, **lesson("l-gone", "Use spaces.", "global", ["instruction"]))
    write_card(instructed, **fact("f-tagged", "editor", "font", "mono", tags=["preference"],
                                  evidence=[{"ref": "log://s-9#f"}]))
    write_card(instructed, **lesson("l-fix", "Run the linter before committing.", "global", ["correction"],
                                    confidence=0.7))
    data = recall_json(run, instructed, "show me how to implement login")
    check_resident_contract(data)
    assert [item["id"] for item in resident_items(data)] == ["l-format", "l-fix"]


def test_resident_cards_best_first_confidence_then_newest(memory: Path, run) -> None:
    write_card(memory, **lesson("l-a", "Answer in English.", "global", ["preference"], confidence=0.6))
    write_card(memory, **lesson("l-b", "Never push to main.", "global", ["instruction"], confidence=0.95))
    write_card(memory, **lesson("l-c", "Prefer pathlib over os.path.", "global", ["preference"], confidence=0.6,
                                updated_at="2026-11-20T09:00:00Z"))
    data = recall_json(run, memory, "unrelated question")
    check_resident_contract(data)
    assert [item["id"] for item in resident_items(data)] == ["l-b", "l-c", "l-a"]


def many_instructions(memory: Path, count: int = 6) -> None:
    for number in range(count):
        write_card(memory, **lesson(f"l-{number}", f"Standing rule number {number}: keep commits small and signed.",
                                    "global", ["instruction"], confidence=0.9 - number / 100))


@pytest.mark.parametrize("budget", [64, 100, 200, 300, 500, 1000, 4000])
def test_a_budget_too_small_for_every_resident_card(memory: Path, run, budget: int) -> None:
    write_scoped_plan(memory)
    many_instructions(memory)
    write_card(memory, **fact("f-auth", "auth-service", "port", "8443", evidence=[{"ref": "log://s-1#a1"}]))
    data = recall_json(run, memory, "auth service port", "--budget", str(budget))
    check_resident_contract(data)
    shown = [item["id"] for item in resident_items(data)]
    assert shown == [f"l-{number}" for number in range(len(shown))]  # the best ones, in order
    if budget <= 300:
        assert len(shown) < 6
    if budget >= 4000:
        assert len(shown) == 6
    if budget >= 500:
        assert "f-auth" in [item["id"] for item in data["items"]]  # the rest of the budget is the query's


def test_resident_share_setting(memory: Path, run) -> None:
    many_instructions(memory)
    config = memory / "memdream.yaml"
    text = config.read_text()
    assert "resident_share: 0.25" in text
    default = recall_json(run, memory, "anything", "--budget", "500")
    check_resident_contract(default)
    config.write_text(text.replace("resident_share: 0.25", "resident_share: 0"))
    assert not resident_items(recall_json(run, memory, "anything", "--budget", "4000"))
    config.write_text(text.replace("resident_share: 0.25", "resident_share: 1"))
    whole = recall_json(run, memory, "anything", "--budget", "500")
    check_resident_contract(whole, share=1.0)
    assert len(resident_items(whole)) > len(resident_items(default)) > 0
    config.write_text(text.replace("resident_share: 0.25", "resident_share: 1.5"))
    result = run("recall", "anything", "-m", memory)
    assert result.exit_code != 0 and "resident_share" in result.stderr


def test_card_filters_apply_to_resident_cards(instructed: Path, run) -> None:
    assert not resident_items(recall_json(run, instructed, "login", "--type", "fact"))
    assert [item["id"] for item in resident_items(recall_json(run, instructed, "login", "--type", "lesson"))] == [
        "l-format"]


def test_resident_cards_are_not_counted_as_used(instructed: Path, run) -> None:
    recall_json(run, instructed, "show me how to implement login")
    (line,) = (instructed / ".memdream" / "usage.jsonl").read_text().splitlines()
    assert "l-format" not in json.loads(line)["cards"]
    assert git(instructed, "status", "--porcelain") == ""


# -- 3. the plan and instructions of the scope ---------------------------------------------------------------
@pytest.fixture
def scoped(instructed: Path) -> Path:
    write_card(instructed, **lesson("l-alpha", "In alpha, run make check before any commit.", "alpha",
                                    ["instruction", "project:alpha"], confidence=0.8))
    write_card(instructed, **lesson("l-beta", "Beta's exports are never run on Fridays.", "beta",
                                    ["correction", "project:beta"], confidence=0.8))
    commit_all(instructed)
    return instructed


def plan_text(data: dict[str, Any]) -> str:
    assert data["items"][0]["source"] == "plan"
    return str(data["items"][0]["text"])


def test_scope_shows_that_scopes_plan_and_instructions(scoped: Path, run) -> None:
    alpha = recall_json(run, scoped, "what next", "--scope", "alpha")
    check_resident_contract(alpha)
    assert plan_text(alpha) == "Plan: implement login for alpha\nNext: add the login form; renew the laptop"
    assert [item["id"] for item in resident_items(alpha)] == ["l-format", "l-alpha"]
    beta = recall_json(run, scoped, "what next", "--scope", "beta")
    assert plan_text(beta) == "Plan: ship beta's export\nNext: rerun the export; renew the laptop"
    assert [item["id"] for item in resident_items(beta)] == ["l-format", "l-beta"]
    # scopes compare without case; a project the plan does not know gets the unscoped items only
    assert recall_json(run, scoped, "what next", "--scope", "ALPHA")["items"][0] == alpha["items"][0]
    gamma = recall_json(run, scoped, "what next", "--scope", "gamma")
    assert plan_text(gamma) == "Next: renew the laptop"
    assert [item["id"] for item in resident_items(gamma)] == ["l-format"]


def test_without_scope_the_current_folders_project(scoped: Path, run, tmp_path: Path, chdir) -> None:
    (tmp_path / "alpha").mkdir()
    chdir(tmp_path / "alpha")
    here = recall_json(run, scoped, "what next")
    assert plan_text(here) == "Plan: implement login for alpha\nNext: add the login form; renew the laptop"
    assert [item["id"] for item in resident_items(here)] == ["l-format", "l-alpha"]
    assert here["context"] == recall_json(run, scoped, "what next", "--scope", "alpha")["context"]


def test_unscoped_memory_shows_the_whole_plan_anywhere(memory: Path, run, tmp_path: Path, chdir) -> None:
    yamlio.dump_file(memory / "plan.yaml", {"goal": "restore the export", "next": [{"text": "check the region"}],
                                            "done": [], "updated_at": "2026-11-30T12:00:00Z"})
    write_card(memory, **lesson("l-format", INSTRUCTION, "global", ["preference"]))
    (tmp_path / "alpha").mkdir()
    chdir(tmp_path / "alpha")
    data = recall_json(run, memory, "what next")
    assert plan_text(data) == "Plan: restore the export\nNext: check the region"
    assert [item["id"] for item in resident_items(data)] == ["l-format"]


def test_in_a_folder_the_memory_does_not_know_a_question_about_recent_work_gets_the_newest_goal(
        scoped: Path, run, tmp_path: Path, chdir) -> None:
    (tmp_path / "elsewhere").mkdir()
    chdir(tmp_path / "elsewhere")
    # a project's plan is no answer to a question about something else...
    assert recall_json(run, scoped, "what next")["items"][0]["text"] == "Next: renew the laptop"
    # ...but it is the answer to "what was I working on", whatever words they share
    for question in ("What was I working on last?", "Where did we leave off?", "What did I do in the last session?"):
        assert plan_text(recall_json(run, scoped, question)) == (
            "Plan: ship beta's export\nNext: rerun the export; renew the laptop"), question
    # a question that names the project gets that project's plan, as before
    assert plan_text(recall_json(run, scoped, "what was I working on in alpha lately?")).startswith(
        "Plan: implement login for alpha")


def test_scoped_instructions_alone_make_the_folder_the_scope(memory: Path, run, tmp_path: Path, chdir) -> None:
    write_card(memory, **lesson("l-alpha", "In alpha, run make check first.", "alpha", ["instruction"]))
    write_card(memory, **lesson("l-beta", "In beta, never run on Fridays.", "beta", ["instruction"]))
    (tmp_path / "beta").mkdir()
    chdir(tmp_path / "beta")
    assert [item["id"] for item in resident_items(recall_json(run, memory, "x"))] == ["l-beta"]
    # a library caller without a folder or a scope knows no scope: no project's instruction is resident,
    # and one that matches the query is ranked like any card
    assert not resident_items(Recaller(memory, RecallOptions()).recall("x").to_dict())
    matching = Recaller(memory, RecallOptions()).recall("what about Fridays?").to_dict()
    assert [item["id"] for item in matching["items"]] == ["l-beta"] and not resident_items(matching)


def test_the_cached_plan_is_right_for_every_scope(scoped: Path, run) -> None:
    first = [plan_text(recall_json(run, scoped, "q", "--scope", scope)) for scope in ("alpha", "beta", "alpha")]
    assert first[0] == first[2] != first[1]
    assert (scoped / ".memdream" / "cache" / "recall" / "meta.pickle").exists()
    again = [plan_text(recall_json(run, scoped, "q", "--scope", scope)) for scope in ("beta", "alpha")]
    assert again == [first[1], first[0]]
    plan = yamlio.load_file(scoped / "plan.yaml")
    plan["goals"][0]["text"] = "implement login and logout for alpha"
    yamlio.dump_file(scoped / "plan.yaml", plan)
    assert plan_text(recall_json(run, scoped, "q", "--scope", "alpha")).startswith(
        "Plan: implement login and logout for alpha\n")


def test_empty_scope_is_a_usage_error(scoped: Path, run) -> None:
    result = run("recall", "q", "--scope", " ", "-m", scoped)
    assert result.exit_code == 2 and result.stderr == "memdream: --scope must name a project, not be empty\n"


@pytest.mark.parametrize("args", [["what next", "--scope", "beta", "-f", "json"], ["what next"],
                                  ["--queries", "{tmp}/q.txt", "--scope", "alpha"]])
def test_a_real_process_answers_as_the_in_process_command(scoped: Path, tmp_path: Path, run, chdir,
                                                    args: list[str]) -> None:
    (tmp_path / "q.txt").write_text("what next\nlogin\n")
    (tmp_path / "alpha").mkdir()
    chdir(tmp_path / "alpha")
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    twin = tmp_path / "twin"  # usage feeds ranking: each path answers from the same starting state
    shutil.copytree(scoped, twin, symlinks=True)
    typer_result = run("recall", *args, "-m", scoped)
    done = subprocess.run([sys.executable, "-m", "memdream", "recall", *args, "-m", str(twin)],
                          capture_output=True, text=True)
    assert typer_result.exit_code == done.returncode == 0, done.stderr
    assert done.stdout == typer_result.stdout
    assert "implement login for alpha" in done.stdout or "ship beta's export" in done.stdout


def test_json_contract_holds_with_resident_items_through_a_batch(scoped: Path, run, tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text("show me how to implement login\nformat code\nauth port\n")
    result = run("recall", "--queries", queries, "--budget", "300", "--scope", "alpha", "-m", scoped)
    assert result.exit_code == 0, result.stderr
    for line in result.stdout.splitlines():
        data = json.loads(line)
        check_resident_contract(data)
        assert data["bytes"] <= 300


WORDS = ["always", "format", "code", "région", "never", "push", "日本", "ok", "x" * 40, "🙂"]
statements = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=st.lists(st.tuples(statements, st.sampled_from(["global", "alpha", "beta"]),
                                st.floats(0, 1)), max_size=8),
       budget=st.integers(64, 3000), query=statements, scope=st.sampled_from([None, "alpha", "gamma"]))
def test_resident_cards_never_break_the_budget(rules: list[tuple[str, str, float]], budget: int, query: str,
                                               scope: str | None) -> None:
    with tempfile.TemporaryDirectory() as name:
        root = Path(name)  # a bare memory folder: plan and cards are all recall reads
        write_scoped_plan(root)
        for number, (statement, where, confidence) in enumerate(rules):
            write_card(root, **lesson(f"l-{number}", statement, where, ["instruction"], confidence=confidence))
            write_card(root, **fact(f"f-{number}", "code", f"rule{number}", "x", statement=statement,
                                    evidence=[{"ref": f"log://s#{number}"}]))
        data = Recaller(root, RecallOptions(budget=budget, scope=scope)).recall(query).to_dict()
        check_resident_contract(data)
        for item in resident_items(data):
            assert scope is None or item["text"].endswith(("(scope: global)", f"(scope: {scope})"))
