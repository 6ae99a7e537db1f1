"""Recall that answers (issue 20, deliverable 6): the raw fallback gets the room the cards do not answer
with, resident items take a bounded share, resident items apply to their scope, nothing is injected into
a project the memory does not know, newer raw events win over older ones, long events are cut around
the match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdream import yamlio
from memdream.integrations.startup import session_start
from memdream.recall.engine import SQUEEZE_ROOM, Recaller, RecallOptions
from memdream.recall.render import ELLIPSIS, WINDOW, window
from memdream.recall.text import _WORD, _word_spans, token_spans, tokenize
from tests.recall.helpers import check_contract, commit_all, fact, message, recall_json, write_card, write_events

FILLER = ("The team talked about lunch, the weather, a conference next spring, a new chair for the office and "
          "the coffee machine that keeps breaking. ")


def ingest(run: Any, memory: Path, tmp_path: Path, events: list[dict[str, Any]], name: str = "log") -> None:
    result = run("ingest", write_events(tmp_path / f"{name}.jsonl", events), "-m", memory)
    assert result.exit_code == 0, result.stderr


def raw_items(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [item for item in data["items"] if item["source"] == "raw"]


def card_ids(data: dict[str, Any]) -> list[str]:
    return [item["id"] for item in data["items"] if item["source"] == "card"]


def lesson(card_id: str, statement: str, scope: str, tags: list[str], **overrides: Any) -> dict[str, Any]:
    return {"id": card_id, "type": "lesson", "subject": "user", "attribute": None, "value": None,
            "statement": statement, "scope": scope, "tags": tags,
            "evidence": [{"ref": f"log://u/{card_id}#1", "stance": "supports", "kind": "feedback"}], **overrides}


# -- 1. the raw fallback gets the room that cards do not answer with ----------------------------------------
def export_log() -> list[dict[str, Any]]:
    events = [message("s-1", "e1", "2026-11-20T09:00:00Z",
                      "The nightly export job fails with AccessDenied because the role lost s3:PutObject."),
              {"session": "s-1", "id": "e2", "ts": "2026-11-20T09:01:00Z", "kind": "tool_result", "tool": "aws",
               "ok": False, "text": "nightly export job: upload failed", "error": "AccessDenied"}]
    # Other days' notes about the job: relevant to the question, more than the budget holds.
    words = ["slowly", "twice", "at dawn", "after the backup", "on the replica", "under load", "with retries",
             "in staging", "before the deploy", "without alerts", "on the old runner", "after a restart",
             "during the freeze", "with a new token", "on the spare host", "in the dry run", "behind the proxy",
             "on Sunday"]
    people = ["Ann", "Bob", "Cleo", "Dev", "Eve", "Finn", "Gus", "Hana", "Ida", "Jon", "Kai", "Lea", "Mo",
              "Nia", "Oli", "Pia", "Quinn", "Rui"]
    places = ["Berlin", "Lisbon", "Oslo", "Quito", "Lima", "Accra", "Hanoi", "Perth", "Cork", "Riga", "Bern",
              "Cusco", "Fez", "Graz", "Kobe", "Lyon", "Nice", "Turin"]
    events += [message(f"s-{day}", f"n{day}", f"2026-11-{day:02d}T10:00:00Z",
                       f"{people[day - 1]} in {places[day - 1]} saw the nightly export job fail {words[day - 1]} "
                       f"with AccessDenied, ticket {day * 7}.")
               for day in range(1, 19)]
    return events


def test_cards_that_hold_a_word_of_the_question_do_not_take_the_room_of_events_that_answer(
        memory: Path, tmp_path: Path, run: Any) -> None:
    for number in range(8):  # each shares one word ("export") with the question, none answers it
        write_card(memory, **fact(f"f-x{number}", f"export-format-{number}", "owner", f"team {number}",
                                  statement=f"The export format {number} is owned by team {number}.",
                                  evidence=[{"ref": f"log://c#{number}"}]))
    commit_all(memory)
    ingest(run, memory, tmp_path, export_log())
    data = recall_json(run, memory, "why does the nightly export job fail with AccessDenied?")
    assert card_ids(data) == []  # one word of five: the raw events hold more of it
    assert "lost s3:PutObject" in data["context"]
    # The budget is used while relevant events are left: what remains is less than a squeezed line.
    assert data["budget"] - data["bytes"] < SQUEEZE_ROOM
    assert len(raw_items(data)) >= 8


def test_a_card_that_answers_is_still_shown_first(memory: Path, tmp_path: Path, run: Any) -> None:
    write_card(memory, **fact("f-job", "nightly export job", "failure", "AccessDenied",
                              statement="The nightly export job fails with AccessDenied since the role changed.",
                              evidence=[{"ref": "log://c#1"}]))
    write_card(memory, **fact("f-fmt", "export format", "owner", "team 1",
                              statement="The export format is owned by team 1.", evidence=[{"ref": "log://c#2"}]))
    commit_all(memory)
    ingest(run, memory, tmp_path, export_log())
    data = recall_json(run, memory, "why does the nightly export job fail with AccessDenied?")
    assert card_ids(data) == ["f-job"] and data["items"][0]["id"] == "f-job"
    assert raw_items(data)  # and the rest of the budget still goes to the events


def test_without_raw_events_any_relevant_card_is_shown(memory: Path, run: Any) -> None:
    write_card(memory, **fact("f-fmt", "export format", "owner", "team 1",
                              statement="The export format is owned by team 1.", evidence=[{"ref": "log://c#2"}]))
    data = recall_json(run, memory, "why does the nightly export job fail with AccessDenied?")
    assert card_ids(data) == ["f-fmt"]  # nothing answers better


# -- 2. resident items take a bounded share ------------------------------------------------------------------
def long_plan(root: Path) -> None:
    yamlio.dump_file(root / "plan.yaml", {
        "goal": "Restore the nightly export to the new bucket " + "and keep every consumer of it working " * 6,
        "next": [{"text": f"step {number}: check consumer {number} of the nightly export"} for number in range(10)],
        "done": [], "updated_at": "2026-11-30T12:00:00Z"})


def resident_bytes(data: dict[str, Any]) -> int:
    return sum(len((item["text"] if item["source"] == "plan" else "- " + item["text"]).encode()) + 1
               for item in data["items"] if item["source"] == "plan" or item.get("resident"))


def test_the_plan_and_the_instructions_take_at_most_their_share(memory: Path, tmp_path: Path, run: Any) -> None:
    long_plan(memory)
    for number in range(6):
        write_card(memory, **lesson(f"l-{number}", f"Standing rule {number}: keep commits small and signed.",
                                    "global", ["instruction"], confidence=0.9 - number / 100))
    commit_all(memory)
    ingest(run, memory, tmp_path, export_log())
    for budget in (800, 2000, 4000):
        data = recall_json(run, memory, "why does the nightly export job fail?", "--budget", str(budget))
        assert resident_bytes(data) <= int(budget * 0.25), budget
        plan = data["items"][0]
        assert plan["source"] == "plan" and plan["text"].startswith("Plan: Restore the nightly export")
        assert raw_items(data) and "lost s3:PutObject" in data["context"]
    small = recall_json(run, memory, "why does the nightly export job fail?", "--budget", "2000")
    # the goal first, then the next actions that fit, the rest elided
    assert small["items"][0]["text"].endswith(f"; {ELLIPSIS}") or "Next:" not in small["items"][0]["text"]


# -- 3. resident items apply to their scope --------------------------------------------------------------------
def scoped_memory(memory: Path) -> Path:
    yamlio.dump_file(memory / "plan.yaml", {
        "goal": "ship beta's export",
        "next": [{"text": "add the login form", "scope": "alpha"}, {"text": "rerun the export", "scope": "beta"},
                 {"text": "renew the laptop"}],
        "done": [],
        "goals": [{"text": "implement login for alpha", "scope": "alpha"},
                  {"text": "ship beta's export", "scope": "beta"}],
        "updated_at": "2026-11-30T12:00:00Z"})
    write_card(memory, **lesson("l-global", "Always answer in English.", "global", ["preference"]))
    write_card(memory, **lesson("l-alpha", "In alpha, run make check before any commit.", "alpha",
                                ["instruction", "project:alpha"]))
    write_card(memory, **lesson("l-beta", "Beta's exports never run on Fridays.", "beta",
                                ["correction", "project:beta"]))
    commit_all(memory)
    return memory


def plan_of(data: dict[str, Any]) -> str:
    return str(data["items"][0]["text"]) if data["items"] and data["items"][0]["source"] == "plan" else ""


def resident_ids(data: dict[str, Any]) -> list[str]:
    return [item["id"] for item in data["items"] if item.get("resident")]


def test_with_no_scope_known_only_what_matches_the_query(memory: Path, tmp_path: Path, run: Any, chdir: Any) -> None:
    scoped_memory(memory)
    (tmp_path / "gamma").mkdir()
    chdir(tmp_path / "gamma")  # a folder the memory knows nothing of
    unrelated = recall_json(run, memory, "what is the weather like?")
    assert plan_of(unrelated) == "Next: renew the laptop"  # what applies everywhere
    assert resident_ids(unrelated) == ["l-global"]
    assert "alpha" not in unrelated["context"] and "beta" not in unrelated["context"].lower()
    login = recall_json(run, memory, "how far is the login form for alpha?")
    assert plan_of(login) == "Plan: implement login for alpha\nNext: add the login form; renew the laptop"
    assert "l-alpha" in card_ids(login) and "l-alpha" not in resident_ids(login)  # ranked, as it matches
    assert "beta" not in login["context"].lower()
    fridays = recall_json(run, memory, "can beta's exports run on Fridays?")
    assert "l-beta" in card_ids(fridays) and "rerun the export" in plan_of(fridays)


def test_a_scope_shows_its_plan_and_instructions_whatever_the_query(memory: Path, run: Any, tmp_path: Path,
                                                                     chdir: Any) -> None:
    scoped_memory(memory)
    alpha = recall_json(run, memory, "what is the weather like?", "--scope", "alpha")
    assert plan_of(alpha) == "Plan: implement login for alpha\nNext: add the login form; renew the laptop"
    assert set(resident_ids(alpha)) == {"l-global", "l-alpha"}
    (tmp_path / "beta").mkdir()
    chdir(tmp_path / "beta")  # the folder's project is beta's
    beta = recall_json(run, memory, "what is the weather like?")
    assert plan_of(beta) == "Plan: ship beta's export\nNext: rerun the export; renew the laptop"
    assert set(resident_ids(beta)) == {"l-global", "l-beta"}


def test_a_memory_that_names_no_project_shows_its_plan_anywhere(memory: Path, run: Any, tmp_path: Path,
                                                                 chdir: Any) -> None:
    yamlio.dump_file(memory / "plan.yaml", {"goal": "restore the export", "next": [{"text": "check the region"}],
                                            "done": [], "updated_at": "2026-11-30T12:00:00Z"})
    (tmp_path / "gamma").mkdir()
    chdir(tmp_path / "gamma")
    assert plan_of(recall_json(run, memory, "what is the weather like?")) == (
        "Plan: restore the export\nNext: check the region")


# -- 4. nothing is injected into a project the memory knows nothing of -----------------------------------------
def hook(cwd: str) -> bytes:
    return json.dumps({"session_id": "s", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"}).encode()


def test_no_injection_for_an_unknown_project(memory: Path) -> None:
    scoped_memory(memory)
    write_card(memory, **fact("f-alpha", "alpha api", "port", "8443", scope="alpha", tags=["project:alpha"],
                              evidence=[{"ref": "log://a#1"}]))
    commit_all(memory)
    assert session_start(hook("/home/dev/gamma"), memory) is None
    known = session_start(hook("/home/dev/alpha"), memory)
    assert known is not None and "(project alpha)" in known.text and "8443" in known.text
    assert "Fridays" not in known.text  # beta's instruction


def test_no_injection_from_an_empty_memory(memory: Path) -> None:
    assert session_start(hook("/home/dev/alpha"), memory) is None


# -- 5. newer raw events win -------------------------------------------------------------------------------------
def test_the_newest_of_two_contradicting_events_comes_first(memory: Path, tmp_path: Path, run: Any) -> None:
    ingest(run, memory, tmp_path, [
        message("chat/S1", "D1:1", "2026-01-10T10:00:00Z", "I live in Boston, close to the harbour.", speaker="Ann"),
        message("chat/S2", "D2:1", "2026-06-10T10:00:00Z", "I live in Denver now, since the spring.", speaker="Ann"),
    ])
    data = recall_json(run, memory, "where does Ann live?")
    texts = [item["text"] for item in raw_items(data)]
    assert len(texts) == 2 and "Denver" in texts[0] and "Boston" in texts[1]


BANNER = ("Aider v0.85.{patch} Main model: {model} with diff edit format Weak model: {model}-mini Git repo: .git "
          "with {files} files Repo-map: using 4096 tokens, auto refresh")


def test_of_near_identical_events_only_the_newest_is_shown(memory: Path, tmp_path: Path, run: Any) -> None:
    ingest(run, memory, tmp_path, [
        {"session": "a-1", "id": "b1", "ts": "2025-07-15T10:00:00Z", "kind": "note", "actor": "system",
         "text": BANNER.format(patch=1, model="gpt-4o", files=33)},
        {"session": "a-2", "id": "b2", "ts": "2025-07-23T10:00:00Z", "kind": "note", "actor": "system",
         "text": BANNER.format(patch=2, model="gpt-4o", files=33)},
        {"session": "a-3", "id": "b3", "ts": "2025-08-04T10:00:00Z", "kind": "note", "actor": "system",
         "text": BANNER.format(patch=2, model="gpt-4.1", files=35)},
    ])
    data = recall_json(run, memory, "which main model does aider use?")
    assert [item["id"] for item in raw_items(data)] == ["log://a-3#b3"]
    assert "gpt-4.1" in data["context"] and "gpt-4o" not in data["context"]


# -- 6. a long event is cut around the match ---------------------------------------------------------------------
def test_a_long_event_is_cut_around_the_match(memory: Path, tmp_path: Path, run: Any) -> None:
    text = FILLER * 12 + "After the migration the auth service listens on port 8443 behind the proxy. " + FILLER * 12
    ingest(run, memory, tmp_path, [message("s-9", "m1", "2026-11-20T10:00:00Z", text)])
    data = recall_json(run, memory, "which port does the auth service listen on?")
    (item,) = raw_items(data)
    body = item["text"].split(": ", 1)[1]
    assert "port 8443" in body and body.startswith(ELLIPSIS) and body.endswith(ELLIPSIS)
    assert len(body) <= WINDOW and "coffee machine" not in body.split("8443")[1][:40]


def test_a_tool_output_that_holds_the_answer_is_shown_around_it(memory: Path, tmp_path: Path, run: Any) -> None:
    readme = "\n".join([f"line {number}: nothing to see here" for number in range(80)]
                       + ["The dev server listens on port 3000 (npm run dev)."]
                       + [f"tail {number}: more of the same" for number in range(40)])
    ingest(run, memory, tmp_path, [{"session": "s-3", "id": "r1", "ts": "2026-11-20T10:00:00Z",
                                    "kind": "tool_result", "tool": "Bash", "ok": True, "text": readme,
                                    "args": {"command": "cat README.md"}}])
    data = recall_json(run, memory, "which port does the dev server listen on?")
    (item,) = raw_items(data)
    assert item["text"].startswith("[2026-11-20] tool: $ cat README.md → ")  # the command is kept
    assert "port 3000" in item["text"] and "tail 39" not in item["text"]


# -- words: camelCase parts, unknown spellings ----------------------------------------------------------------------
def test_a_question_finds_the_parts_of_an_identifier(memory: Path, tmp_path: Path, run: Any) -> None:
    ingest(run, memory, tmp_path, [
        message("s-1", "m1", "2026-11-20T10:00:00Z", "Created src/components/ModalSignalReview.tsx for the UI."),
        message("s-1", "m2", "2026-11-20T10:01:00Z", "Lunch is at noon today."),
    ])
    data = recall_json(run, memory, "is there a modal to review a signal?")
    assert [item["id"] for item in raw_items(data)][:1] == ["log://s-1#m1"]
    assert tokenize("useSimpleTodos") == ["usesimpletodo", "use", "simpl", "todo"]


def test_a_word_no_event_holds_stands_for_its_beginning(memory: Path, tmp_path: Path, run: Any) -> None:
    ingest(run, memory, tmp_path, [
        message("s-1", "m1", "2026-11-20T10:00:00Z", "Inside Docker the agents reach Ollama at host.docker.internal."),
        message("s-1", "m2", "2026-11-20T10:01:00Z", "The agents reach the web through a proxy."),
    ])
    data = recall_json(run, memory, "how do the Dockerised agents reach the model?")
    assert raw_items(data)[0]["id"] == "log://s-1#m1"


# -- the window and the spans it is cut around ------------------------------------------------------------------------
def test_window_prefers_the_rarer_words_and_shows_what_follows() -> None:
    text = "ocodex " * 40 + "ocodex talks to ollama on the host at port 11434 by default. " + "ocodex " * 40
    cut = window(text, frozenset(tokenize("ocodex ollama")), 120, weights={"ocodex": 0.1, "ollama": 3.0})
    assert "ollama" in cut and "11434" in cut and len(cut) <= 120


WORDS = ["ModalSignalReview", "useTodos", "HTTPServer", "flies", "went", "going", "the", "Région", "İstanbul",
         "eu-west-1", "snake_case_name", "日本", "x" * 30, "port", "PORTS", "v16"]


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(WORDS), max_size=30).map(" ".join),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join))
def test_token_spans_find_what_tokenize_finds(text: str, query: str) -> None:
    tokens = frozenset(tokenize(query))
    every = [span for match in _WORD.finditer(text) for span in _word_spans(match.group(), match.start())]
    assert token_spans(text, tokens) == sorted(span for span in every if span[2] in tokens)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.sampled_from(WORDS + ["answer", "question", "lunch"]), max_size=400),
       query=st.lists(st.sampled_from(WORDS + ["answer"]), min_size=1, max_size=3).map(" ".join),
       limit=st.integers(20, 400))
def test_a_window_is_never_longer_than_its_limit(words: list[str], query: str, limit: int) -> None:
    text = " ".join(words)
    cut = window(text, frozenset(tokenize(query)), limit)
    assert len(cut) <= max(limit, 0) or cut == " ".join(text.split())


def test_the_contract_holds_for_every_budget(memory: Path, tmp_path: Path, run: Any) -> None:
    scoped_memory(memory)
    long_plan(memory)
    ingest(run, memory, tmp_path, export_log())
    recaller = Recaller(memory, RecallOptions(scope="alpha"))
    for budget in (64, 100, 200, 500, 1000, 2000, 5000):
        recaller.budget = budget
        check_contract(recaller.recall("why does the nightly export job fail?").to_dict())
    recaller.close()


# -- the developer's vocabulary: a general word finds the tool it means ---------------------------------------
def test_a_general_word_finds_the_tool_it_names_in_cards_and_raw_events(run: Any, memory: Path,
                                                                          tmp_path: Path) -> None:
    write_card(memory, **fact("f-tests1", "billing-api", "suite", "pytest -q",
                              "In billing-api, the suite is `pytest -q`."))
    write_card(memory, **fact("f-chair1", "office", "chair", "blue", "The office chair is blue."))
    commit_all(memory)
    ingest(run, memory, tmp_path, [
        message("s-1", "e1", "2026-11-20T09:00:00Z", "The billing service keeps its ledger in PostgreSQL 15 on port 6432."),
        message("s-1", "e2", "2026-11-20T09:05:00Z", FILLER)])
    tests = recall_json(run, memory, "Where are tests launched?")
    assert card_ids(tests) == ["f-tests1"]  # `pytest` answers "tests"; the chair does not
    database = recall_json(run, memory, "Which DB do we use?")
    assert [item["id"] for item in raw_items(database)][:1] == ["log://s-1#e1"]
    # The reach is one way: a question about one tool is not about another that the general word names.
    assert card_ids(recall_json(run, memory, "Is jest configured?")) == []


# -- near-duplicates: one line says it, unless they answer the question differently -----------------------
def test_near_identical_lines_that_hold_different_words_of_the_query_are_both_shown(run: Any, memory: Path,
                                                                                   tmp_path: Path) -> None:
    tasks = [message(f"s-{number}", f"t{number}", f"2026-11-{number:02d}T09:00:00Z",
                     f"Task {number}: we fixed the rounding of invoice totals in billing/rounding.py and "
                     f"ran the whole suite again, all green.") for number in range(10, 20)]
    ingest(run, memory, tmp_path, tasks)
    data = recall_json(run, memory, "task 13: what did we fix the rounding of?")
    assert "Task 13:" in data["context"]  # not folded into the newest task's line, which says "Task 19"
    # Lines that hold the same words of the query are still one: the newest says it.
    banner = [message(f"b-{number}", f"b{number}", f"2026-10-{number:02d}T09:00:00Z",
                      f"Main model: gpt-4.{number} with diff edit format, weak model gpt-4.{number}-mini")
              for number in range(1, 4)]
    ingest(run, memory, tmp_path, banner, name="banner")
    shown = [item["text"] for item in raw_items(recall_json(run, memory, "which main model with diff edit format?"))]
    assert sum("Main model" in text for text in shown) == 1 and "gpt-4.3" in " ".join(shown)


REAL_SESSIONS = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "real-sessions"


@pytest.mark.skipif(not (REAL_SESSIONS / "AlexShchuka__mozgoslav").is_dir(), reason="real sessions not here")
def test_raw_events_found_by_feedback_alone_far_down_are_not_shown(run: Any, memory: Path) -> None:
    """A real aider history: asked how far the RAG work is, the fallback had filled its leftover room with
    "hi", found by feedback words alone at 2 % of the best score. Room left is not a reason to show it."""
    from memdream.recall.engine import RAW_FLOOR

    assert run("ingest", REAL_SESSIONS / "AlexShchuka__mozgoslav", "-m", memory).exit_code == 0
    data = recall_json(run, memory, "How far along is the RAG implementation?")
    raw = raw_items(data)
    assert raw and "RAG" in raw[0]["text"]
    assert all(item["score"] >= RAW_FLOOR for item in raw)
    assert not any(item["text"].endswith("user: hi") for item in raw)
