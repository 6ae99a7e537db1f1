"""aider's model and the slash commands it does not have: aider chat histories written as aider writes
them, through `ingest`, `dream` and `cards` on a memory made by `memdream init`; and the readings of a
banner and of one session's commands on event dicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors.aider import Banner, banner, from_card, observe
from tests.ingest.test_aider import answer, header, out, typed

HISTORY = ".aider.chat.history.md"


# -- histories as aider writes them (aider/io.py: its own lines quoted, each ending with two spaces) ------

def launch(command: str, model: str, weak: str | None = None) -> str:
    models = [f"Main model: {model} with diff edit format", f"Weak model: {weak}"] if weak else [
        f"Model: {model} with whole edit format"]
    return out(command, "Aider v0.85.2", *models, "Git repo: .git with 40 files",
               "Repo-map: using 4096 tokens, auto refresh")


def tokens() -> str:
    return out("Tokens: 3.2k sent, 66 received. Cost: $0.0086 message, $0.0086 session.")


JULY = (header("2026-07-15 11:38:37")
        + out("/opt/homebrew/bin/aider", "Using gpt-4o model with API key from environment.")
        + launch("Aider v0.85.1", "gpt-4o", weak="gpt-4o-mini")
        + typed("/add src/upload.py") + out("Added src/upload.py to the chat")
        + typed("/grep retry src/upload.py") + out("Invalid command: /grep")
        + typed("/view src/upload.py") + out("Invalid command: /view")
        + typed("make the retry count a setting") + answer("Done: `RETRIES` is read from the settings.") + tokens()
        + header("2026-07-16 20:10:38")  # a run that only upgraded aider: no model
        + out("Newer aider version v0.85.2 is available.", "Run pip install? (Y)es/(N)o [Yes]: y",
              "Re-run aider to use new version."))
AUGUST = (header("2026-08-04 13:59:12")
          + launch("/opt/homebrew/bin/aider --model gpt-4.1", "gpt-4.1", weak="gpt-4.1-mini")
          + typed("add a test for the retry setting") + answer("Added `tests/test_upload.py`.") + tokens()
          + typed("/model gpt-4o") + out("Main model: gpt-4o with diff edit format", "Weak model: gpt-4o-mini")
          + typed("/bye") + out("Invalid command: /bye")
          + typed("/exit"))


def _history(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / HISTORY
    path.write_text(text, encoding="utf-8")
    return folder


def _dream(run: Any, memory: Path, folder: Path) -> None:
    assert run("ingest", folder, "-m", memory).exit_code == 0
    done = run("dream", "-m", memory)
    assert done.exit_code == 0, done.stderr


def _cards(run: Any, memory: Path, *args: str) -> list[dict[str, Any]]:
    return [card for card in json.loads(run("cards", "-m", memory, "--format", "json", *args).stdout)
            if "aider" in card.get("tags", [])]


def test_the_newest_sessions_model_is_the_projects_and_supersedes_the_older(run: Any, memory: Path,
                                                                             tmp_path: Path) -> None:
    _dream(run, memory, _history(tmp_path / "upload-svc", JULY + AUGUST))
    [model] = [card for card in _cards(run, memory) if card["attribute"] == "aider model"]
    assert (model["subject"], model["scope"], model["value"]) == ("upload-svc", "upload-svc", "gpt-4.1")
    assert model["statement"] == "In upload-svc, aider runs with `--model gpt-4.1` (diff edit format; weak model " \
                                 "gpt-4.1-mini)."
    # The July model is archived, superseded by August's; a /model switch inside a session is no launch.
    [old] = [card for card in _cards(run, memory, "--archived")
             if card["attribute"] == "aider model" and card["id"] != model["id"]]
    assert old["value"] == "gpt-4o" and model["id"] in old["superseded_by"]
    assert old["statement"] == "In upload-svc, aider runs with gpt-4o (diff edit format; weak model gpt-4o-mini)."
    assert not any("gpt-4o" in json.dumps(card) for card in _cards(run, memory))  # not even the mini
    assert run("lint", memory).exit_code == 0


def test_commands_aider_refused_in_two_sessions_are_one_lesson_with_the_fix(run: Any, memory: Path,
                                                                           tmp_path: Path) -> None:
    _dream(run, memory, _history(tmp_path / "upload-svc", JULY + AUGUST))
    [lesson] = [card for card in _cards(run, memory) if card["type"] == "lesson"]
    assert (lesson["subject"], lesson["attribute"], lesson["scope"]) == ("aider", "invalid commands", "global")
    assert lesson["value"] == "/bye, /grep, /view; /exit for /bye"
    assert lesson["statement"] == ("aider has no /bye, /grep or /view command (`Invalid command: /bye`); use `/exit` "
                                   "instead of `/bye`.")
    assert lesson["evidence_count"] == 4  # July's two refusals, August's refusal and its fix
    assert run("lint", memory).exit_code == 0


def test_one_session_of_refused_commands_is_no_lesson_yet_and_the_next_adds_up(run: Any, memory: Path,
                                                                               tmp_path: Path) -> None:
    folder = _history(tmp_path / "upload-svc", JULY)
    _dream(run, memory, folder)
    assert [card for card in _cards(run, memory) if card["type"] == "lesson"] == []
    explained = run("dream", "-m", memory, "--dry-run", "--explain").stdout
    assert "invalid commands" not in explained  # nothing new: the pending evidence waits quietly
    with open(folder / HISTORY, "a", encoding="utf-8") as history:  # aider appends the next run
        history.write(AUGUST)
    _dream(run, memory, folder)
    [lesson] = [card for card in _cards(run, memory) if card["type"] == "lesson"]
    # The first dream's /grep and /view were kept pending: the list holds them with August's /bye.
    assert lesson["value"] == "/bye, /grep, /view; /exit for /bye"


def test_a_later_session_keeps_what_the_lesson_knew_and_a_new_command_extends_it(run: Any, memory: Path,
                                                                                 tmp_path: Path) -> None:
    folder = _history(tmp_path / "upload-svc", JULY + AUGUST)
    _dream(run, memory, folder)
    [first] = [card for card in _cards(run, memory) if card["type"] == "lesson"]
    with open(folder / HISTORY, "a", encoding="utf-8") as history:
        history.write(header("2026-09-01 10:00:00") + launch("/opt/homebrew/bin/aider --model gpt-4.1", "gpt-4.1",
                                                             weak="gpt-4.1-mini")
                      + typed("/mv src/upload.py src/uploads.py") + out("Invalid command: /mv")
                      + typed("/run git mv src/upload.py src/uploads.py") + out("")
                      + typed("/grep retry src") + out("Invalid command: /grep"))
    _dream(run, memory, folder)
    [lesson] = [card for card in _cards(run, memory) if card["type"] == "lesson"]
    assert lesson["value"] == "/bye, /grep, /mv, /view; /exit for /bye, /run mv … for /mv"
    assert lesson["statement"] == ("aider has no /bye, /grep, /mv or /view command (`Invalid command: /grep`); use "
                                   "`/exit` instead of `/bye` and `/run mv …` instead of `/mv`.")
    [old] = [card for card in _cards(run, memory, "--archived") if card["id"] == first["id"]]
    assert lesson["id"] in old["superseded_by"]
    [model] = [card for card in _cards(run, memory) if card["attribute"] == "aider model"]
    assert model["value"] == "gpt-4.1"  # the same model again: more evidence, no new card
    assert run("lint", memory).exit_code == 0


# -- one banner, one session --------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("/usr/local/bin/aider --model sonnet\nAider v0.86.1\nMain model: anthropic/claude-sonnet-4 with diff edit "
     "format, prompt cache, infinite output\nWeak model: anthropic/claude-3-5-haiku",
     Banner("sonnet", "anthropic/claude-sonnet-4", "diff", "anthropic/claude-3-5-haiku")),
    ("/home/ann/.venv/bin/python -m aider --model=o3 --architect\nMain model: o3 with architect edit format\n"
     "Editor model: gpt-4.1 with editor-diff edit format\nWeak model: gpt-4.1-mini",
     Banner("o3", "o3", "architect", "gpt-4.1-mini", "gpt-4.1")),
    ("C:\\Users\\ann\\bin\\aider.exe --model deepseek/deepseek-chat", Banner("deepseek/deepseek-chat", None)),
    ("/opt/homebrew/bin/aider\nUsing gpt-4o model with API key from environment.", None),  # cut before the model
    ("Newer aider version v0.85.2 is available.\n/usr/bin/python3 -m pip install --upgrade aider-chat", None),
    ("/usr/local/bin/aider-helper --model x", None),  # another program
])
def test_what_a_banner_says_about_the_model(text: str, expected: Banner | None) -> None:
    assert banner(text) == expected


def _events(*items: tuple[str, str, str]) -> list[dict[str, Any]]:
    """(kind, actor, text) in order; a shell call's text is its command."""
    events = []
    for number, (kind, actor, text) in enumerate(items, start=1):
        event: dict[str, Any] = {"session": "aider/x/20260301T090000", "id": f"l{number}", "kind": kind,
                                 "actor": actor, "ts": f"2026-03-01T09:00:00.{number:03d}Z"}
        if kind == "tool_call":
            event.update(tool="shell", args={"command": text})
        else:
            event.update(text=text, **({"tool": "aider"} if kind == "tool_result" else {}))
        events.append(event)
    return events


def test_only_a_retry_on_the_same_arguments_is_a_fix() -> None:
    seen = observe(_events(
        ("note", "system", "/find Validator\n/replace Validator -> Scorer"),
        ("tool_result", "tool", "Invalid command: /find"),
        ("note", "system", "/edit *"),  # another job: no fix of /find
        ("note", "system", "/grep retry src"), ("tool_result", "tool", "Invalid command: /grep"),
        ("message", "user", "where is the retry count read?"),  # the user went on: no fix of /grep
        ("tool_call", "user", "grep retry src"),
        ("note", "system", "/cp a.py b.py"), ("tool_result", "tool", "Invalid command: /cp"),
        ("tool_call", "user", "cp a.py b.py"),
        ("note", "system", "/a"), ("tool_result", "tool", "Ambiguous command: /add, /architect, /ask"),
    ))
    assert seen.current() == ["/cp", "/find", "/grep"]
    assert seen.fixes == {"/cp": "/run cp …"}
    assert seen.error is not None and seen.error[1] == "Invalid command: /cp"


def test_a_command_aider_took_after_refusing_it_drops_out() -> None:
    known = from_card("/bye, /grep; /exit for /bye")
    known.merge(observe(_events(("note", "system", "/grep retry src"), ("tool_result", "tool", "src/upload.py:12"),
                                ("note", "system", "/view x.py"), ("tool_result", "tool", "Invalid command: /view"))))
    assert known.value() == "/bye, /view; /exit for /bye"
    assert known.statement() == ("aider has no /bye or /view command (`Invalid command: /view`); use `/exit` instead "
                                 "of `/bye`.")


def test_an_earlier_lesson_is_read_back_from_its_statement_too() -> None:
    # A longer list near enough to the old value counts as the same value: the card keeps the old value,
    # and only its statement (the newest evidence's) names the new command.
    known = from_card("/bye, /find, /grep, /mv, /view",
                      "aider has no /bye, /find, /grep, /mv, /view or /x command (`Invalid command: /x`); use `/exit` "
                      "instead of `/bye` and `/run mv …` instead of `/mv`.")
    assert known.current() == ["/bye", "/find", "/grep", "/mv", "/view", "/x"]
    assert known.fixes == {"/bye": "/exit", "/mv": "/run mv …"}
