"""The user's crontab: read with `crontab -l`, written whole with `crontab -`, like `crontab -e` does.

A memory's entry is two lines: the marker comment that names it (job.MARKER and the unit name) and
the job line right below. Installing replaces that pair in place or appends it; every other line
of the crontab is written back as it was.

``MEMDREAM_CRONTAB`` names another program to run instead of `crontab` (same arguments: `-l`, `-`):
the tests point it at a script that keeps the table in a file, and a user can point it at a wrapper
(e.g. one that runs `crontab -u someone`).
"""

from __future__ import annotations

import os
import shutil
import subprocess

from memdream.errors import MemdreamError
from memdream.schedule.job import MARKER, Job

CRONTAB_ENV = "MEMDREAM_CRONTAB"
TIMEOUT_SECONDS = 30


def crontab_program() -> str | None:
    """The crontab command to use, None when there is none."""
    chosen = os.environ.get(CRONTAB_ENV)
    if chosen:
        return chosen
    return shutil.which("crontab")


def available() -> bool:
    return crontab_program() is not None


def _run(arguments: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    program = crontab_program()
    if program is None:
        raise MemdreamError("no `crontab` command here: install cron, or use --systemd (or --print)")
    try:
        return subprocess.run([program, *arguments], input=stdin, capture_output=True, text=True,
                              timeout=TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise MemdreamError(f"{program} {' '.join(arguments)}: {error}") from None


def read() -> str:
    """The user's crontab, '' when there is none yet."""
    done = _run(["-l"])
    if done.returncode == 0:
        return done.stdout
    if "no crontab" in done.stderr.lower():  # cronie, vixie cron and busybox all say it this way
        return ""
    raise MemdreamError(f"crontab -l failed: {_one_line(done.stderr) or f'exit {done.returncode}'}")


def write(text: str) -> None:
    done = _run(["-"], stdin=text)
    if done.returncode != 0:
        raise MemdreamError(f"crontab - refused the new table: {_one_line(done.stderr) or f'exit {done.returncode}'}")


def entry(job: Job) -> list[str]:
    """The two lines of ``job``'s entry. A `%` in a crontab command is a newline unless escaped."""
    command = job.shell_command().replace("%", "\\%")
    return [job.marker(), f"{job.interval.cron_fields()} {command}"]


def _is_marker(line: str, name: str) -> bool:
    return line.startswith(f"{MARKER} {name}:")


def find(text: str, name: str) -> list[str] | None:
    """The entry (marker and job line) of the unit ``name`` in a crontab, None when absent."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if _is_marker(line, name):
            return lines[number:number + 2]
    return None


def without(text: str, name: str) -> str:
    """The crontab with every entry of ``name`` removed (its marker and the job line below it)."""
    lines, kept, skip = text.splitlines(), [], False
    for line in lines:
        if skip:
            skip = False
            if not line.startswith("#"):  # the job line; a comment below the marker is someone else's
                continue
        if _is_marker(line, name):
            skip = True
            continue
        kept.append(line)
    return _joined(kept)


def with_entry(text: str, job: Job) -> str:
    """The crontab with ``job``'s entry in place of its old one (same position), else appended."""
    lines = text.splitlines()
    new = entry(job)
    for number, line in enumerate(lines):
        if _is_marker(line, job.name):
            rest = without(_joined(lines[number:]), job.name).splitlines()
            return _joined([*lines[:number], *new, *rest])
    return _joined([*lines, *new])


def _joined(lines: list[str]) -> str:
    """crontab needs the last line to end with a newline."""
    return "".join(f"{line}\n" for line in lines)


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
