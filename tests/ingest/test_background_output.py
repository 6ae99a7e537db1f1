"""A shell command run in the background (Claude Code's ``run_in_background``) prints later, through
BashOutput calls: ingest gives those results the command's line, so that what a dev server or a long
build printed reads as that command's output; a read that says the command failed is a failure."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from tests.ingest.test_real_formats import ingest, stored
from tests.transcripts import ClaudeSession

CWD = "/home/dev/shop-web"
START = datetime(2026, 11, 3, 9, 0, tzinfo=timezone.utc)


def test_a_background_command_s_later_output_reads_as_its_result(memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("b9c0aa01-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    session.user("Start the dev server.")
    server = session.bash_background("npm run dev")
    session.bash_output(server, "   - Local:        http://localhost:3000")
    build = session.bash_background("npm run build")
    session.bash_output(build, "Type error: Cannot find name 'Cart'.", status="failed", exit_code=1)
    session.tool("Grep", {"pattern": "Cart"}, "src/cart.ts")
    ingest(memory, session.write(tmp_path / "logs"))

    results = [event for event in stored(memory) if event["kind"] == "tool_result"]
    by_command = [(event["tool"], event.get("args", {}).get("command"), event["ok"]) for event in results]
    assert by_command == [
        ("Bash", "npm run dev", True),  # "Command running in background with ID: bash_1"
        ("Bash", "npm run dev", True),  # what it printed, read through BashOutput
        ("Bash", "npm run build", True),
        ("Bash", "npm run build", False),  # <status>failed</status>
        ("Grep", "Grep Cart", True),
    ]
    assert "http://localhost:3000" in results[1]["text"] and "Cannot find name" in results[3]["error"]
    # The reads stay the calls they were: the record of what the agent did is not rewritten.
    calls = [event["tool"] for event in stored(memory) if event["kind"] == "tool_call"]
    assert calls == ["Bash", "BashOutput", "Bash", "BashOutput", "Grep"]


def test_a_read_of_a_shell_it_did_not_start_stays_as_it_was(memory: Path, tmp_path: Path) -> None:
    """A BashOutput naming a shell this log never started (a resumed session) is left as the tool it is."""
    session = ClaudeSession("b9c0aa02-4c3b-4e8a-9c61-2e8f0d4b7a13", CWD, START)
    session.user("How is the server doing?")
    session.bash_output("bash_7", "<status>failed</status>", status="failed", exit_code=1)
    ingest(memory, session.write(tmp_path / "logs"))
    [result] = [event for event in stored(memory) if event["kind"] == "tool_result"]
    assert (result["tool"], result["args"]["command"], result["ok"]) == ("BashOutput", "BashOutput", True)
