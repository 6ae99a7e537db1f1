"""The README's walk-through works as written: its shell block is run line by line in a fresh HOME,
with a Claude Code session ending where the block says "work with Claude Code as usual".

Only two things stand in for the machine: a `crontab` program that keeps the user's crontab in a file
(this sandbox has no cron daemon), and the transcript a real session would have written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.transcripts import billing_api_project

README = Path(__file__).resolve().parent.parent / "README.md"
FAKE_CRONTAB = """#!/bin/sh
if [ "$1" = "-l" ]; then cat "$HOME/.crontab" 2>/dev/null || { echo "no crontab for $USER" >&2; exit 1; }
elif [ "$1" = "-" ]; then cat > "$HOME/.crontab"; fi
"""


def walkthrough() -> list[str]:
    """The command lines of the README's walk-through block, comments and blank lines dropped."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Walk-through"):]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None, "the walk-through has a sh block"
    return [line for line in block.group(1).splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_walkthrough_works_as_written(tmp_path: Path) -> None:
    home, tools = tmp_path / "home", tmp_path / "bin"
    project = home / "src" / "billing-api"
    project.mkdir(parents=True)
    tools.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (tools / "crontab").write_text(FAKE_CRONTAB)
    (tools / "crontab").chmod(0o755)
    (tools / "memdream").write_text(f"#!/bin/sh\nexec {sys.executable} -m memdream \"$@\"\n")
    (tools / "memdream").chmod(0o755)
    transcript = billing_api_project(tmp_path / "agent-logs", small=True)[0]
    ended = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(project),
                        "hook_event_name": "SessionEnd", "reason": "exit"})
    lines = walkthrough()
    at = next(index for index, line in enumerate(lines) if "ingest --spool" in line)
    # Step 4: the session ends, and Claude Code runs the SessionEnd hook that step 2 installed.
    read_hook = ("import json; settings = json.load(open('.claude/settings.json')); "
                 "print(settings['hooks']['SessionEnd'][0]['hooks'][0]['command'])")
    script = "\n".join(["set -euo pipefail", *lines[:at], f'hook=$({sys.executable} -c "{read_hook}")',
                        f"echo '{ended}' | eval \"$hook\"", *lines[at:]])
    environment = {"PATH": f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home), "USER": "dev",
                   "NO_COLOR": "1", "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=home, env=environment,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "memdream-schedule" in (home / ".crontab").read_text()  # step 3
    log = subprocess.run(["git", "-C", str(home / "agent-memory"), "log", "--format=%s"], capture_output=True,
                         text=True, check=True).stdout
    assert log.splitlines()[0].startswith("memdream dream: ")  # step 4: the queued session was dreamed
    started = json.loads(done.stdout[done.stdout.rindex('{"hookSpecificOutput"'):])
    context = started["hookSpecificOutput"]["additionalContext"]
    assert started["hookSpecificOutput"]["hookEventName"] == "SessionStart" and "billing-api" in context
