"""`make sample`: sample-memory/ becomes the memory that `memdream dream` makes from sample-memory/logs.

A new memory (`memdream init`) with the sample's settings ingests a copy of the logs and dreams once, on a
fixed clock, with fixed git identities and dates and the copies' modification times fixed, so that the same
code makes the same bytes wherever the repository was cloned. Its files are
copied into sample-memory/ beside the logs: plan.yaml, INDEX.md, cards/, archive/, audit/ and the raw
layer's MANIFEST.jsonl, without the raw segments (a memory as a clone without its raw layer holds it:
`memdream lint sample-memory` checks it as such). Nothing in it is written by hand.

    python scripts/make_sample_memory.py [--out FOLDER]    # default: sample-memory/ of this repository
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample-memory"
# The night after the newest sample session, as if cron ran the dream then (scripts/demo.sh uses it too).
NOW = "2026-11-17T03:00:00Z"
GIT_DATE = "2026-11-17T03:00:00+00:00"
# A log without times of its own (a chat file) is dated by its file's modification time, which a clone
# sets to when it was made: the copies ingested here all get this one, the evening before the dream.
LOGS_MTIME = datetime(2026, 11, 16, 18, 0, tzinfo=timezone.utc).timestamp()
CHAT = Path("openai-chat/support-chat.json")  # the one sample log without a session id
# What the sample memory holds: everything a dream writes, and the raw layer's manifest.
MADE = ("plan.yaml", "INDEX.md", "cards", "archive", "audit", "raw/MANIFEST.jsonl")


def _environment() -> dict[str, str]:
    """A bare, fixed environment: the clock, git's identities and dates, no colour, no user config."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
        "NO_COLOR": "1", "MEMDREAM_NOW": NOW, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "memdream", "GIT_AUTHOR_EMAIL": "memdream@localhost", "GIT_AUTHOR_DATE": GIT_DATE,
        "GIT_COMMITTER_NAME": "memdream", "GIT_COMMITTER_EMAIL": "memdream@localhost",
        "GIT_COMMITTER_DATE": GIT_DATE,
    }


def _memdream(*args: str, env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "memdream", *args], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args)} failed: {done.stderr.strip()}")


def dream_sample(memory: Path) -> None:
    """A new memory at ``memory`` with the sample's settings, the sample logs ingested and dreamed."""
    env = _environment()
    _memdream("init", str(memory), env=env)
    shutil.copy(SAMPLE / "memdream.yaml", memory / "memdream.yaml")
    subprocess.run(["git", "-C", str(memory), "commit", "-qam", "Settings of the sample memory"], env=env,
                   check=True, capture_output=True)
    logs = memory.parent / "logs"
    shutil.copytree(SAMPLE / "logs", logs, ignore=shutil.ignore_patterns(CHAT.parent.name))
    chat = memory.parent / CHAT.name
    shutil.copy(SAMPLE / "logs" / CHAT, chat)
    for path in [*logs.rglob("*"), chat]:
        os.utime(path, (LOGS_MTIME, LOGS_MTIME))
    _memdream("ingest", str(logs), "--memory", str(memory), env=env)
    # A chat file names no session: ingest would derive one from where the copy lies; pinned instead.
    _memdream("ingest", str(chat), "--session", CHAT.stem, "--memory", str(memory), env=env)
    _memdream("dream", "--memory", str(memory), env=env)


def copy_made(memory: Path, out: Path) -> None:
    """Replace what a dream made in ``out`` with ``memory``'s; the logs and settings stay."""
    for name in MADE:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        source = memory / name
        if source.is_dir():
            shutil.copytree(source, target)
        elif source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=SAMPLE, help="Where to put the memory's files.")
    out = parser.parse_args().out
    with tempfile.TemporaryDirectory(prefix="memdream-sample-") as scratch:
        memory = Path(scratch) / "memory"
        dream_sample(memory)
        out.mkdir(parents=True, exist_ok=True)
        copy_made(memory, out)
    print(f"sample memory written to {out}")


if __name__ == "__main__":
    main()
