"""The aider adapter: real chat histories from the bench, small ones written as aider writes them,
and the command line on a folder holding only the (hidden) history file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memdream.errors import InvalidInput
from memdream.ingest import sources
from memdream.ingest.adapters import ParseContext, aider, detect

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "real-sessions"
AFI_CORE = REAL / "AFI-Protocol__afi-core" / aider.HISTORY_FILE
MOZGOSLAV = REAL / "AlexShchuka__mozgoslav" / aider.HISTORY_FILE
SESSION = re.compile(r"^aider/[a-z0-9._-]+/\d{8}T\d{6}(?:-\d+)?$")

Event = dict[str, Any]


# -- histories as aider writes them (aider/io.py) ---------------------------------------------------

def header(start: str) -> str:
    return f"\n# aider chat started at {start}\n\n"


def out(*lines: str) -> str:
    """aider's output: each message quoted on its first line, with two spaces ending its last."""
    return "".join(f"> {line}  \n" for line in lines)


def typed(*lines: str) -> str:
    """One input of the user's: a blank line, then each line after ``#### `` and with two spaces."""
    return "\n" + "".join(f"#### {line}  \n" for line in lines)


def answer(text: str) -> str:
    """The model's answer: after a blank line, as it came."""
    return "\n" + text.strip() + "\n\n"


def banner(model: str = "gpt-4o") -> str:
    return out(f"/usr/local/bin/aider --model {model}", "Aider v0.86.1", f"Model: {model} with diff edit format",
               "Git repo: .git with 12 files", "Repo-map: using 1024 tokens, auto refresh")


def tokens() -> str:
    return out("Tokens: 3.2k sent, 66 received. Cost: $0.0086 message, $0.0086 session.")


def history(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / aider.HISTORY_FILE
    path.write_text(text, encoding="utf-8")
    return path


def parsed(path: Path, **options: Any) -> tuple[list[Event], ParseContext]:
    ctx = ParseContext(source=str(path), default_session="unused", **options)
    with open(path, encoding="utf-8", newline="") as stream:
        return list(aider.parse(iter(stream), ctx)), ctx


def events_of(path: Path, **options: Any) -> list[Event]:
    return parsed(path, **options)[0]


def real(path: Path) -> list[Event]:
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    return events_of(path)


def kinds(events: list[Event]) -> list[tuple[str, str]]:
    return [(event["kind"], event.get("actor", "")) for event in events]


# -- real histories ---------------------------------------------------------------------------------

@pytest.mark.parametrize("path, runs", [(AFI_CORE, 9), (MOZGOSLAV, 3)], ids=["afi-core", "mozgoslav"])
def test_a_real_history_gives_one_session_per_run_with_stable_names(path: Path, runs: int) -> None:
    events = real(path)
    sessions = list(dict.fromkeys(event["session"] for event in events))
    assert len(sessions) == runs == path.read_text(encoding="utf-8").count("# aider chat started at ")
    assert all(SESSION.match(session) for session in sessions), sessions
    project = "project:" + path.parent.name.lower()
    for session in sessions:
        own = [event for event in events if event["session"] == session]
        ids = [event["id"] for event in own]
        assert len(ids) == len(set(ids)), f"ids repeat in {session}"
        assert [event["ts"] for event in own] == sorted(event["ts"] for event in own)  # file order kept
        assert sum(event["kind"] == "goal" for event in own) <= 1
    for event in events:
        assert event["meta"] == {"ts_synthetic": True}
        assert event["tags"] == [project]
        text = event.get("text") or ""
        assert "thinking-content" not in text
        assert not (event["kind"] == "message" and event["actor"] == "user" and "(Y)es/(N)o" in text)
        assert "Tokens: " not in text  # aider's cost lines are noise


def test_the_afi_core_history_reads_as_it_happened() -> None:
    events = real(AFI_CORE)
    results = "\n".join(event["text"] for event in events if event["kind"] == "tool_result")
    assert "Commit 9760d2f feat: add ValidatorMetadataSchema for validator metadata validation" in results
    assert "Applied edit to schemas/validator_metadata_schema.ts" in results
    banner_note = events[0]
    assert (banner_note["kind"], banner_note["actor"]) == ("note", "system")
    assert "Main model: gpt-4o with diff edit format" in banner_note["text"]
    assert "/opt/homebrew/bin/aider .aider.conf.json" in banner_note["text"]

    # An edit aider could not apply is a failure; the shell command the model proposed is a call.
    failed = [event for event in events if event["kind"] == "tool_result" and event.get("ok") is False]
    assert any(event["error"] == "The LLM did not conform to the edit format." for event in failed)
    calls = {event["args"]["command"]: event for event in events if event["kind"] == "tool_call"}
    assert calls["rm validators/PoIValidator.ts"]["actor"] == "agent"
    assert calls["rm validators/PoIValidator.ts"]["tool"] == "shell"

    # A mistyped command is a system note, answered by aider's complaint; never a request.
    note = next(event for event in events if event.get("text") == "/mv validators/PoIValidator.ts "
                                                                  "validators/SignalScorer.ts")
    assert (note["kind"], note["actor"]) == ("note", "system")
    after = events[events.index(note) + 1]
    assert (after["kind"], after["text"]) == ("tool_result", "Invalid command: /mv")

    goals = [event["goal"] for event in events if event["kind"] == "goal"]
    assert goals[0].startswith("add a comment at the top of schemas/pipeline_config_schema.ts")
    assert not any(goal.startswith(("/", "Add file to the chat?")) for goal in goals)


def test_the_mozgoslav_history_keeps_answers_and_drops_the_model_thinking() -> None:
    events = real(MOZGOSLAV)
    first, second, third = (list(group) for group in _by_session(events))
    # The first run only said "hi" and failed to reach the model: no task, a failed result.
    assert not any(event["kind"] == "goal" for event in first)
    assert any(event.get("ok") is False and "AuthenticationError" in event["error"] for event in first)
    # In the second, "hi" is a greeting: the goal is the first real question.
    assert next(event["goal"] for event in second if event["kind"] == "goal") == \
        "Про что проект мозгослав и на каком этапе сейчас RAG?"
    # An answer cut short while the model was thinking (an unclosed block) leaves nothing behind.
    answers = [event["text"] for event in second if event["kind"] == "message" and event["actor"] == "agent"]
    assert answers[0].startswith("Привет! Готов к работе.")
    assert not any("Here's a thinking process" in text for text in answers)
    assert any("Ты зациклился" in event.get("text", "") for event in second)
    # The long pasted instructions of the third run are one message of the user's.
    typed_texts = [event["text"] for event in third if event["kind"] == "message" and event["actor"] == "user"]
    long_one = next(text for text in typed_texts if "TWO-STRIKE RULE" in text)
    assert "REPORT PROTOCOL" in long_one and "####" not in long_one
    assert "Commit f8bf6e6" in "\n".join(event.get("text", "") for event in third)


def _by_session(events: list[Event]) -> list[list[Event]]:
    groups: dict[str, list[Event]] = {}
    for event in events:
        groups.setdefault(event["session"], []).append(event)
    return list(groups.values())


def test_sniff_knows_a_history_by_its_first_header(tmp_path: Path) -> None:
    text = header("2026-03-02 09:15:00") + banner()
    assert aider.sniff(text) and detect(text) == "aider"
    assert not aider.sniff("# Notes\n\n# aider chat started at 2026-03-02 09:15:00\n")
    assert not aider.sniff('{"session": "s", "ts": "2026-03-02T09:15:00Z", "kind": "message"}\n')
    if MOZGOSLAV.is_file():
        assert detect(MOZGOSLAV.read_text(encoding="utf-8")[:8192]) == "aider"


# -- sessions, ids, times ---------------------------------------------------------------------------

TWO_RUNS = (header("2026-03-02 09:15:00") + banner() + typed("add a retry to the upload client")
            + answer("I need `client/upload.py`.") + tokens()
            + header("2026-03-02 10:00:07") + banner("claude-sonnet-4") + typed("now log each retry")
            + answer("Done.") + tokens())


def test_each_run_is_a_session_named_by_its_project_and_start(tmp_path: Path) -> None:
    events = events_of(history(tmp_path / "billing-api", TWO_RUNS))
    assert list(dict.fromkeys(event["session"] for event in events)) == [
        "aider/billing-api/20260302T091500", "aider/billing-api/20260302T100007"]
    first = [event for event in events if event["session"].endswith("T091500")]
    # Times: the run's start, one millisecond a line; ids: the line within the run.
    assert [(event["id"], event["ts"], event["kind"]) for event in first] == [
        ("l2", "2026-03-02T09:15:00.002Z", "note"),
        ("l8:goal", "2026-03-02T09:15:00.008Z", "goal"),
        ("l8", "2026-03-02T09:15:00.008Z", "message"),
        ("l10", "2026-03-02T09:15:00.010Z", "message"),
    ]
    assert first[1]["goal"] == "add a retry to the upload client"
    assert all(event["tags"] == ["project:billing-api"] for event in events)


def test_a_second_run_in_the_same_second_gets_its_own_session(tmp_path: Path) -> None:
    text = header("2026-03-02 09:15:00") + banner() + header("2026-03-02 09:15:00") + banner()
    sessions = {event["session"] for event in events_of(history(tmp_path / "api", text))}
    assert sessions == {"aider/api/20260302T091500", "aider/api/20260302T091500-2"}


def test_a_grown_history_keeps_the_events_it_had(tmp_path: Path) -> None:
    path = history(tmp_path / "billing-api", TWO_RUNS)
    before = events_of(path)
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(typed("and add a test") + answer("Added `test_upload.py`.")
                     + header("2026-03-03 08:00:00") + banner() + typed("fix the flaky test"))
    after = events_of(path)
    assert after[:len(before)] == before
    added = after[len(before):]
    assert [event["text"] for event in added if event["kind"] == "message"] == [
        "and add a test", "Added `test_upload.py`.", "fix the flaky test"]
    assert added[-1]["session"] == "aider/billing-api/20260303T080000"


def test_the_session_option_holds_every_run_with_ids_that_stay_apart(tmp_path: Path) -> None:
    events = events_of(history(tmp_path / "billing-api", TWO_RUNS), session="mine")
    assert {event["session"] for event in events} == {"mine"}
    ids = [event["id"] for event in events]
    assert len(ids) == len(set(ids))
    assert "20260302T091500.l8" in ids and "20260302T100007.l8" in ids


def test_a_history_in_the_home_folder_and_stdin_name_no_project(tmp_path: Path) -> None:
    events = events_of(history(Path.home(), TWO_RUNS))
    assert events[0]["session"] == "aider/20260302T091500" and "tags" not in events[0]
    ctx = ParseContext(source="<stdin>", default_session="unused")
    piped = list(aider.parse(iter(TWO_RUNS.splitlines(keepends=True)), ctx))
    assert [event["session"] for event in piped] == [event["session"] for event in events]


# -- what the user typed ----------------------------------------------------------------------------

def test_consecutive_typed_lines_are_one_message_and_a_blank_line_parts_two(tmp_path: Path) -> None:
    text = (header("2026-03-02 09:15:00") + banner()
            + typed("for dir in ~/repos/*; do", "  echo $dir", "", "done") + typed("second one")
            + typed("<blank>"))
    messages = [event["text"] for event in events_of(history(tmp_path / "x", text)) if event["kind"] == "message"]
    assert messages == ["for dir in ~/repos/*; do\n  echo $dir\n\ndone", "second one"]


def test_answers_to_prompts_greetings_and_commands_are_no_request(tmp_path: Path) -> None:
    text = (header("2026-03-02 09:15:00") + banner() + typed("hi") + answer("Hello! What shall we do?")
            + tokens() + out("client/upload.py")
            + typed("Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: skip")
            + out("Add file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again [Yes]: s", "client/retry.py")
            + typed("/add client/upload.py") + out("Added client/upload.py to the chat")
            + typed("/ls") + out("Repo files not in the chat:", "README.md")
            + typed("/ask why does the upload time out?") + answer("The timeout is 2 s."))
    events = events_of(history(tmp_path / "x", text))
    typed_messages = [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "user"]
    assert typed_messages == ["hi", "why does the upload time out?"]
    assert [event["goal"] for event in events if event["kind"] == "goal"] == ["why does the upload time out?"]
    # The skipped prompt answer did not split aider's output: one result, holding the answer aider took.
    results = [event["text"] for event in events if event["kind"] == "tool_result"]
    assert results[0] == ("client/upload.py\nAdd file to the chat? (Y)es/(N)o/(A)ll/(S)kip all/(D)on't ask again "
                          "[Yes]: s\nclient/retry.py")
    notes = [event["text"] for event in events if event["kind"] == "note"]
    assert notes[1:] == ["/add client/upload.py"]  # after the banner; a system note, not the user's word
    assert "Added client/upload.py to the chat" in results
    assert not any("Repo files not in the chat" in text for text in results)  # /ls and what it showed: skipped


def test_run_and_its_output_are_a_call_and_a_result_whose_failure_shows(tmp_path: Path) -> None:
    text = (header("2026-03-02 09:15:00") + banner()
            + typed("/run pytest -q tests/test_upload.py")
            + out("F.", "Traceback (most recent call last):", '  File "client/upload.py", line 3, in send',
                  "TimeoutError: upload took longer than 2s", "1 failed, 1 passed in 0.12s")
            + out("Add 0.2k tokens of command output to the chat? (Y)es/(N)o [Yes]: y",
                  "Added 5 lines of output to the chat.")
            + answer("The timeout is too short.") + tokens()
            + typed("!ls client") + out("upload.py", "retry.py")
            + typed("/test"))
    events = events_of(history(tmp_path / "x", text))
    call, result = events[1], events[2]
    assert (call["kind"], call["actor"], call["tool"], call["args"]) == (
        "tool_call", "user", "shell", {"command": "pytest -q tests/test_upload.py"})
    assert (result["kind"], result["call_id"], result["args"]) == ("tool_result", call["id"], call["args"])
    assert result["ok"] is False and result["error"] == "Traceback (most recent call last):"
    assert "TimeoutError: upload took longer than 2s" in result["text"]
    assert "Added 5 lines of output to the chat." in result["text"]
    assert not any(event["kind"] == "goal" for event in events)  # a command is no request

    listing = next(event for event in events if event.get("args") == {"command": "ls client"}
                   and event["kind"] == "tool_result")
    assert listing["text"] == "upload.py\nretry.py" and "ok" not in listing  # aider never says it went well
    last = events[-1]
    assert (last["kind"], last["args"]) == ("tool_call", {"command": "/test"})  # the configured test command


def test_a_shell_command_the_model_proposed_is_a_call_answered_by_what_follows(tmp_path: Path) -> None:
    text = (header("2026-03-02 09:15:00") + banner() + typed("make the scripts executable")
            + answer("```bash\nchmod +x *.sh\n```") + tokens()
            + out("chmod +x *.sh", "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y", "Running chmod +x *.sh",
                  "Add command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]: n"))
    events = events_of(history(tmp_path / "x", text))
    proposed, call, answered = events[-3:]
    assert proposed["text"] == "chmod +x *.sh\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y"
    assert (call["kind"], call["actor"], call["args"]) == ("tool_call", "agent", {"command": "chmod +x *.sh"})
    assert (answered["kind"], answered["call_id"], answered["tool"]) == ("tool_result", call["id"], "shell")


# -- what the model answered ------------------------------------------------------------------------

def test_thinking_blocks_are_dropped_closed_or_cut_short(tmp_path: Path) -> None:
    tag = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"
    text = (header("2026-03-02 09:15:00") + banner() + typed("why is the text always the same?")
            + answer(f"<{tag}>\n\nHere's a thinking process:\n> a quoted line\n#### not the user\n\n</{tag}>\n\n"
                     "The cache key ignores the session id.")
            + tokens() + typed("are you sure?")
            + answer(f"<{tag}>\n\nLet me look again at\n```ts\nconst key = hash(text)\n"))
    events = events_of(history(tmp_path / "x", text))
    assert [event["text"] for event in events if event["kind"] == "message"] == [
        "why is the text always the same?", "The cache key ignores the session id.", "are you sure?"]


def test_the_answer_keeps_its_own_headings_quotes_and_code(tmp_path: Path) -> None:
    reply = ("Here is the plan.\n\n#### Step 1\n> Note: keep the old client.\n\nREADME.md\n```markdown\n"
             "#### Usage\n> run it\n```")
    text = header("2026-03-02 09:15:00") + banner() + typed("write the readme") + answer(reply) + tokens()
    events = events_of(history(tmp_path / "x", text))
    assert kinds(events) == [("note", "system"), ("goal", "user"), ("message", "user"), ("message", "agent")]
    assert events[-1]["text"] == reply


def test_a_message_of_aider_spanning_lines_is_one_result(tmp_path: Path) -> None:
    error = ("# 1 SEARCH/REPLACE block failed to match!\n\n## SearchReplaceNoExactMatch: This SEARCH block failed "
             "to exactly match lines in client/upload.py\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n\n"
             "Just reply with fixed versions of the block above that failed to match.")
    text = (header("2026-03-02 09:15:00") + banner() + typed("rename send to upload") + answer("client/upload.py")
            + tokens() + out("The LLM did not conform to the edit format.") + out(error)
            + out("mkdir -p dist/dags                        ") + "touch dist/dags/index.js  \n"
            + answer("Fixed block."))
    events = events_of(history(tmp_path / "x", text))
    result = next(event for event in events if event["kind"] == "tool_result")
    assert result["ok"] is False and result["error"] == "The LLM did not conform to the edit format."
    assert "Just reply with fixed versions" in result["text"] and "touch dist/dags/index.js" in result["text"]
    assert [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "agent"] == [
        "client/upload.py", "Fixed block."]


# -- malformed input --------------------------------------------------------------------------------

def test_text_before_the_first_run_is_malformed(tmp_path: Path) -> None:
    path = history(tmp_path / "x", "some notes\nmore notes\n" + TWO_RUNS)
    with pytest.raises(InvalidInput, match=r":1: not an aider chat history"):
        events_of(path)
    events, ctx = parsed(path, skip_bad=True)
    assert [line for line, _ in ctx.skipped] == [1]
    assert len({event["session"] for event in events}) == 2  # the runs after it are read


def test_a_run_whose_start_is_no_time_is_skipped(tmp_path: Path) -> None:
    path = history(tmp_path / "x", header("yesterday") + banner() + typed("lost") + TWO_RUNS)
    events, ctx = parsed(path, skip_bad=True)
    assert ctx.skipped == [(2, "not a start time (YYYY-MM-DD HH:MM:SS): 'yesterday'")]
    assert "lost" not in [event.get("text") for event in events]
    assert len({event["session"] for event in events}) == 2


# -- folders and the command line -------------------------------------------------------------------

def test_a_folder_gives_the_hidden_history_but_no_other_hidden_file(tmp_path: Path) -> None:
    root = tmp_path / "work"
    history(root / "api", TWO_RUNS)
    history(root / "web" / "src", TWO_RUNS)
    history(root / ".cache" / "old", TWO_RUNS)  # a hidden folder stays skipped
    (root / "api" / ".aider.input.history").write_text("# 2026-03-02\n+add a retry\n", encoding="utf-8")
    (root / "api" / ".hidden.jsonl").write_text("{}\n", encoding="utf-8")
    found = [Path(source.name).relative_to(root).as_posix() for source in sources.resolve([str(root)])]
    assert found == ["api/.aider.chat.history.md", "web/src/.aider.chat.history.md"]


def memdream(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "memdream", *(os.fspath(arg) for arg in args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def ingest(folder: Path, memory: Path) -> dict[str, Any]:
    done = memdream("ingest", folder, "-m", memory, "--format", "json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def stored(memory: Path) -> list[Event]:
    return [json.loads(line) for segment in sorted((memory / "raw" / "segments").glob("*.jsonl"))
            for line in segment.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_ingesting_a_grown_history_adds_only_the_new_events(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    made = memdream("init", memory)
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "billing-api"
    path = history(folder, TWO_RUNS)

    first = ingest(folder, memory)
    assert [source["format"] for source in first["sources"]] == ["aider"]  # found, though hidden
    assert first["added"] == len(events_of(path)) == 8 and first["duplicates"] == 0  # 2 x (banner, goal, ask, answer)

    with open(path, "a", encoding="utf-8") as stream:
        stream.write(typed("and add a test") + answer("Added `test_upload.py`.") + tokens()
                     + header("2026-03-03 08:00:00") + banner() + typed("fix the flaky test"))
    second = ingest(folder, memory)
    # Two messages in the second run, then banner, goal and request of the third.
    assert (second["added"], second["duplicates"], second["id_collisions"]) == (5, 8, 0)

    events = stored(memory)
    keys = Counter((event["session"], event["id"]) for event in events)
    assert len(events) == len(events_of(path)) == 13 and max(keys.values()) == 1
    assert {event["session"] for event in events} == {
        "aider/billing-api/20260302T091500", "aider/billing-api/20260302T100007", "aider/billing-api/20260303T080000"}
    goals = [event["goal"] for event in events if event["kind"] == "goal"]
    assert goals == ["add a retry to the upload client", "now log each retry", "fix the flaky test"]


def test_the_architects_answer_handed_to_the_editor_is_not_the_users_word(tmp_path: Path) -> None:
    plan = ["# Upload retry plan", "", "Your plan is sound, but the retry loop in client/upload.py already backs off;"
            " keep it and add a jitter of 0-250 ms to each wait, then cap the total at 30 s.", "",
            "1. Add the jitter in `retry_delay`.", "2. Cap the total wait."]
    text = (header("2026-03-02 09:15:00") + banner()
            + typed("/architect") + out("Model: gpt-4o with architect edit format")
            + typed("improve my plan for the upload retries") + answer("\n".join(plan)) + tokens()
            + typed(*plan) + answer("client/upload.py\n```python\nJITTER = 0.25\n```") + tokens()
            + out("Applied edit to client/upload.py")
            + typed("now add a test for the cap"))
    events = events_of(history(tmp_path / "x", text))
    said = [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "user"]
    assert said == ["improve my plan for the upload retries", "now add a test for the cap"]
    answers = [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "agent"]
    assert answers[0] == "\n".join(plan) and len(answers) == 2  # the plan is in the log once, as the model's


def test_a_command_line_whose_message_spans_lines_is_the_banner_not_an_answer(tmp_path: Path) -> None:
    launch = ("> /usr/local/bin/aider --model gpt-4o --yes --message Fix these test failures:\n\n"
              "=========== test session starts ===========\nE   ModuleNotFoundError: No module named 'retry'\n"
              "=========== 1 error in 0.31s ===========\n\n")
    text = (header("2026-03-02 09:15:00") + launch + out("Aider v0.86.2", "Model: gpt-4o with whole edit format")
            + typed("Fix these test failures:", "", "E   ModuleNotFoundError: No module named 'retry'")
            + answer("Add `retry` to requirements.txt.") + tokens())
    events = events_of(history(tmp_path / "x", text))
    answers = [event["text"] for event in events if event["kind"] == "message" and event["actor"] == "agent"]
    assert answers == ["Add `retry` to requirements.txt."]
    assert "ModuleNotFoundError" in events[0]["text"] and events[0]["kind"] == "note"  # the banner, whole
