"""A project's own commands (slash commands, custom prompts) run again and again: one card per project that
lists them with the purpose and arguments their templates give, never the template's body.

The rules on events shaped as the adapters write them, through the extractor; the pipeline on real-format
Codex rollouts and Claude Code transcripts, through the command line users run (`ingest`, `dream`, `cards`),
on a memory made by `memdream init`, in one dream and across dreams.
"""

from __future__ import annotations

import json
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from memdream.dream.extractors import commands
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode
from tests.ingest.test_claude_commands import typed
from tests.transcripts import ClaudeSession, CodexSession

SHOP = "/home/dev/shop-web"
RELEASE_STEPS = "Run `make dist`, then push the tag; stop at the first failing check."
RELEASE = f"""# /ship-release — Cut a release

Purpose: tag, build and publish one release from main; never deploy from a branch.

Invocation: `codex /ship-release <VERSION>`
- Arguments: `<VERSION>` is the semver tag to cut.

Steps:
1) {RELEASE_STEPS}
2) Report the tag and the artifacts' checksums.
"""
TRIAGE = """# /triage-issue — Label and route one GitHub issue

Steps:
1) Read the issue and its linked pull requests.
2) Apply exactly one area label.
"""


# -- the rules, on events --------------------------------------------------------------------------------
class Session:
    """Events of one session as ingest stores them: ids, times, the project tag."""

    def __init__(self, name: str, project: str = "shop-web", day: int = 2) -> None:
        self.name, self.project, self.day = name, project, day
        self.events: list[dict[str, Any]] = []

    def add(self, **fields: Any) -> dict[str, Any]:
        second = 7 * (len(self.events) + 1)
        event = {"session": self.name, "id": f"e{len(self.events) + 1}",
                 "ts": f"2026-11-{self.day:02d}T10:{second // 60:02d}:{second % 60:02d}Z",
                 "tags": [f"project:{self.project}", *fields.pop("tags", [])], **fields}
        self.events.append(event)
        return event

    def user(self, text: str, **fields: Any) -> dict[str, Any]:
        return self.add(kind="message", actor="user", text=text, **fields)

    def agent(self, text: str) -> dict[str, Any]:
        return self.add(kind="message", actor="agent", text=text)


def _candidates(*sessions: Session) -> list[Candidate]:
    """What the extractor proposes from these sessions, dreamed together."""
    episodes = [Episode(session.name, 1, session.events) for session in sessions]
    ctx = DreamContext(now="2026-11-30T00:00:00Z", run_id="r", settings=cast(Any, None), cards={},
                       plan=cast(Any, None), events=[event for session in sessions for event in session.events],
                       key_stats={}, sessions_seen=set(), episodes=episodes)
    return [candidate for episode in episodes for candidate in commands.extract(episode, ctx)]


def _statement(found: list[Candidate]) -> str | None:
    statements = {candidate.piece.statement for candidate in found}
    values = {candidate.piece.value for candidate in found}
    assert len(statements) <= 1 and len(values) <= 1, "one card: every piece carries the same value"
    return next(iter(statements), None)


def test_a_prompt_run_once_is_no_card_twice_in_two_sessions_is() -> None:
    first, second = Session("s1"), Session("s2", day=4)
    first.user(RELEASE)
    assert _candidates(first) == []
    second.user(RELEASE)
    found = _candidates(first, second)
    assert _statement(found) == ("In shop-web, the project's own command: `/ship-release <VERSION>` — tag, build "
                                 "and publish one release from main; never deploy from a branch (used in 2 sessions).")
    assert {candidate.piece.session for candidate in found} == {"s1", "s2"}  # one piece per session and command
    assert {candidate.key.attribute for candidate in found} == {"custom-commands"}
    assert all(candidate.piece.layer == "strategy" and "command" in candidate.piece.tags for candidate in found)


def test_three_runs_in_one_session_count() -> None:
    session = Session("s1")
    for _ in range(2):
        session.user(TRIAGE)
        session.agent("Labelled it area/checkout.")
    assert _candidates(session) == []
    session.user(TRIAGE)
    assert _statement(_candidates(session)) == ("In shop-web, the project's own command: `/triage-issue` — Label and "
                                                "route one GitHub issue (used 3 times in one session).")


def test_the_user_s_arguments_stay_off_the_card() -> None:
    sessions = [Session(f"s{number}", day=number) for number in (1, 2)]
    for session in sessions:  # a Claude Code command, as its adapter keeps it
        session.user("/deploy-preview the checkout branch for Dana's demo", tags=["command"],
                     meta={"command_description": "Deploy the current branch to a preview environment"})
        session.agent("Preview is up.")
    statement = _statement(_candidates(*sessions))
    assert statement == ("In shop-web, the project's own command: `/deploy-preview <args>` — Deploy the current "
                         "branch to a preview environment (used in 2 sessions).")
    for words in ("Dana", "checkout branch"):
        assert words not in statement


def test_a_command_and_a_prompt_of_the_same_name_are_one_command() -> None:
    codex, claude = Session("s1"), Session("s2", day=6)
    codex.user(RELEASE)
    claude.user("/ship-release", tags=["command"])  # its expansion said nothing of its purpose
    assert _statement(_candidates(codex, claude)) == (
        "In shop-web, the project's own command: `/ship-release <VERSION>` — tag, build and publish one release "
        "from main; never deploy from a branch (used in 2 sessions).")


def test_arguments_and_written_files_come_from_the_template() -> None:
    template = ("---\ndescription: Create the task list of a feature from its plan\nargument-hint: [feature]\n---\n\n"
                "# /plan-tasks — Tasks from the plan\n\n## User Input\n\n$ARGUMENTS\n\n"
                "1. Run `scripts/check-prerequisites.sh --json` and read plan.md from the feature folder.\n"
                "2. **Generate tasks.md** from the plan, one task per line.\n"
                "3. **Output**: tasks.md, checklists/\n")
    sessions = [Session(f"s{number}", day=number) for number in (1, 2)]
    for session in sessions:
        session.user(template)
    assert _statement(_candidates(*sessions)) == (
        "In shop-web, the project's own command: `/plan-tasks [feature]` — Create the task list of a feature from "
        "its plan; writes tasks.md, checklists/ (used in 2 sessions).")


def test_an_example_s_values_are_no_arguments() -> None:
    sessions = [Session(f"s{number}", day=number) for number in (1, 2)]
    for session in sessions:
        session.user("# /smoke-test — Smoke-test a deployed environment\n\nUsage: `/smoke-test staging`\n\n"
                     "1) Hit the health endpoint.\n2) Log in as the test user.\n")
    assert _statement(_candidates(*sessions)) == ("In shop-web, the project's own command: `/smoke-test` — Smoke-test "
                                                  "a deployed environment (used in 2 sessions).")


def test_built_in_commands_nameless_templates_sub_agents_and_the_user_s_words_are_not_listed() -> None:
    sessions = [Session(f"s{number}", day=number) for number in (1, 2, 3)]
    for session in sessions:
        for name in ("init", "review 42", "security-review"):  # Claude Code's own prompts
            session.user(f"/{name}", tags=["command"])
        session.user("## User Input\n\n```text\n\n```\n\nYou **MUST** consider the user input before proceeding.\n\n"
                     "## Outline\n\n1. Run `scripts/setup-plan.sh --json`.\n2. Generate research.md.\n")
        session.user(RELEASE, tags=["sidechain"])  # a sub-agent's prompt: the main agent wrote it
        session.user("Run /ship-release 2.4.0 once the checks pass.")  # the user's words, not an invocation
        session.user("/ship-release 2.4.0")  # typed in a chat: no command ran
        session.user("# /ship-release\n")  # a heading alone is no prompt file
    assert _candidates(*sessions) == []


def test_the_most_used_come_first_and_at_most_six() -> None:
    sessions = [Session(f"s{number}", day=number) for number in range(1, 6)]
    for index in range(9):  # /tool-0 to /tool-4 in five sessions, /tool-5 in four, ... /tool-8 in one
        for session in sessions[:min(5, 9 - index)]:
            session.user(f"# /tool-{index} — Tool {index}\n\nPurpose: does thing {index}.\n\n1) Do it.\n")
    statement = _statement(_candidates(*sessions)) or ""
    listed = [part.split("`")[1] for part in statement.split(": ", 1)[1].split("; ")]
    assert listed == ["/tool-0", "/tool-1", "/tool-2", "/tool-3", "/tool-4", "/tool-5"]
    assert statement.endswith("`/tool-5` — does thing 5 (used in 4 sessions).")


def test_the_newest_template_s_words_are_shown() -> None:
    old, new = Session("s1"), Session("s2", day=5)
    old.user(RELEASE)
    new.user(RELEASE.replace("tag, build and publish one release", "tag and publish one signed release"))
    statement = _statement(_candidates(old, new)) or ""
    assert "tag and publish one signed release from main" in statement and "tag, build" not in statement


# -- the pipeline, on real-format rollouts ---------------------------------------------------------------
def _start(day: int) -> datetime:
    return datetime(2026, 11, day, 9, 0, tzinfo=timezone.utc)


def _session(logs: Path, number: int, prompts: list[str]) -> None:
    session = CodexSession(f"7e2a{number:04d}-1b2c-4d5e-8f90-{zlib.crc32(b'shop'):012d}", SHOP, _start(number))
    for prompt in prompts:
        session.user(prompt)
        session.shell("make dist", "dist/shop-web-2.4.0.tar.gz")
        session.assistant("Done.")
    session.write(logs)


def _dream(run: Any, memory: Path, logs: Path) -> None:
    assert run("ingest", logs, "-m", memory).exit_code == 0
    done = run("dream", "-m", memory)
    assert done.exit_code == 0, done.stderr


def _cards(run: Any, memory: Path, *args: str) -> list[dict[str, Any]]:
    cards = json.loads(run("cards", "-m", memory, "--format", "json", *args).stdout)
    return [card for card in cards if "command" in card.get("tags", [])]


def test_prompts_run_in_two_sessions_make_one_card(run: Any, memory: Path, tmp_path: Path) -> None:
    _session(tmp_path / "logs", 1, [RELEASE])
    _session(tmp_path / "logs", 2, [RELEASE, TRIAGE])
    _dream(run, memory, tmp_path / "logs")
    [card] = _cards(run, memory)
    assert (card["type"], card["scope"], card["attribute"], card["status"]) == (
        "strategy", "shop-web", "custom commands", "verified")
    assert card["statement"] == ("In shop-web, the project's own command: `/ship-release <VERSION>` — tag, build and "
                                 "publish one release from main; never deploy from a branch (used in 2 sessions).")
    assert RELEASE_STEPS not in json.dumps(card) and "triage" not in json.dumps(card)
    assert run("lint", memory).exit_code == 0


def test_invocations_of_earlier_dreams_count_and_a_new_command_supersedes_the_card(run: Any, memory: Path,
                                                                                    tmp_path: Path) -> None:
    _session(tmp_path / "day1", 1, [RELEASE, TRIAGE])
    _dream(run, memory, tmp_path / "day1")
    assert _cards(run, memory) == []  # each ran once: no card yet
    _session(tmp_path / "day2", 2, [RELEASE])
    _dream(run, memory, tmp_path / "day2")
    [first] = _cards(run, memory)
    assert first["statement"].endswith("(used in 2 sessions).") and "/triage-issue" not in first["statement"]
    assert {item["ref"].split("#")[0] for item in first["evidence"]} == {
        f"log://7e2a{number:04d}-1b2c-4d5e-8f90-{zlib.crc32(b'shop'):012d}" for number in (1, 2)}
    _session(tmp_path / "day3", 3, [TRIAGE])
    _dream(run, memory, tmp_path / "day3")
    [second] = _cards(run, memory)
    assert second["id"] != first["id"] and first["id"] in second.get("supersedes", [])
    assert second["statement"] == (
        "In shop-web, the project's own commands: `/ship-release <VERSION>` — tag, build and publish one release "
        "from main; never deploy from a branch (used in 2 sessions); `/triage-issue` — Label and route one GitHub "
        "issue (used in 2 sessions).")
    assert run("lint", memory).exit_code == 0


# -- the pipeline, on Claude Code transcripts --------------------------------------------------------------
PREVIEW = ("# /deploy-preview — Deploy the current branch to a preview environment\n\n"
           "Build the image, push it and print the preview URL.\nNever touch production.\n")


def _claude(logs: Path, number: int, runs: list[str]) -> ClaudeSession:
    """A Claude Code session in the shop that starts with a /clear and runs /deploy-preview with each of ``runs``
    as the user's arguments (each expanded as Claude Code does), and the built-in /init once."""
    session = ClaudeSession(f"9c1a{number:04d}-4c3b-4e8a-9c61-2e8f0d4b7a13", SHOP, _start(number))
    typed(session, "/clear")
    typed(session, "/init", expansion="Please analyze this codebase and create a CLAUDE.md file.\n\n1. Commands.\n")
    session.tool("Write", {"file_path": f"{SHOP}/CLAUDE.md", "content": "# shop-web\n"}, "File created")
    for args in runs:
        typed(session, "/deploy-preview", args, PREVIEW)
        session.bash("make preview", "https://preview-7.shop.example/")
        session.assistant("Preview is up.")
    session.write(logs)
    return session


def test_claude_code_commands_make_the_card_without_the_user_s_words(run: Any, memory: Path, tmp_path: Path) -> None:
    _claude(tmp_path / "day1", 1, ["the checkout branch for Dana's demo", "the cart fix"])
    _dream(run, memory, tmp_path / "day1")
    assert _cards(run, memory) == []  # twice in one session
    _claude(tmp_path / "day2", 2, ["the search branch"])
    _dream(run, memory, tmp_path / "day2")
    [card] = _cards(run, memory)
    assert card["statement"] == ("In shop-web, the project's own command: `/deploy-preview <args>` — Deploy the "
                                 "current branch to a preview environment (used in 2 sessions).")
    for words in ("Dana", "checkout", "search branch", "Build the image", "production", "/init", "/clear"):
        assert words not in json.dumps(card)
    assert run("lint", memory).exit_code == 0


def test_a_command_s_arguments_are_no_standing_instruction(run: Any, tmp_path: Path) -> None:
    """The same words are a rule when the user says them, and a request to the command when they run it
    ("/review-branch the cart fix. Always run …": what the command is to check, not a rule of the user's)."""
    review = "# /review-branch — Review the current branch\n\nRead the diff and list the problems.\n"
    for number, said in ((1, None), (2, "Review the cart fix. Always run the tests before pushing.")):
        session = ClaudeSession(f"9c2a{number:04d}-4c3b-4e8a-9c61-2e8f0d4b7a13", SHOP, _start(number))
        if said is None:
            typed(session, "/review-branch", "the cart fix. Always run the tests before pushing.", review)
        else:
            session.user(said)
        session.bash("git diff --stat", " src/cart.ts | 4 ++--")
        session.assistant("The branch looks fine.")
        logs = tmp_path / f"logs{number}"
        session.write(logs)
        mind = tmp_path / f"memory{number}"
        assert run("init", mind).exit_code == 0
        _dream(run, mind, logs)
        rules = [card["statement"] for card in json.loads(run("cards", "-m", mind, "--format", "json").stdout)
                 if "run the tests before pushing" in card["statement"].lower()]
        assert len(rules) == (0 if said is None else 1), rules


def test_a_command_whose_template_says_nothing_of_its_purpose_is_no_card() -> None:
    sessions = [Session(f"s{number}", day=number) for number in (1, 2, 3)]
    for session in sessions:  # a Claude Code command whose expansion states no description
        session.user("/orchestrator split the work", tags=["command"])
        session.agent("Done.")
    assert _candidates(*sessions) == []
