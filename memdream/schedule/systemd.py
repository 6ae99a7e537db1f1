"""A systemd user timer and its service, in ``$XDG_CONFIG_HOME/systemd/user/`` (else ~/.config/...).

The service runs the job's shell line (job.Job.shell_command) with /bin/sh, so the log is the same as
under cron. Writing the files is memdream's; loading them is systemd's: `systemctl --user
daemon-reload` and `enable --now <name>.timer`, which install prints, or runs with --now.
``MEMDREAM_SYSTEMCTL`` names another program to run instead of `systemctl` (the tests use one that
records its arguments).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memdream import yamlio
from memdream.errors import MemdreamError
from memdream.schedule.job import Job

SYSTEMCTL_ENV = "MEMDREAM_SYSTEMCTL"
WANTS = "timers.target.wants"  # where `systemctl --user enable` links an enabled timer
TIMEOUT_SECONDS = 60


def unit_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "systemd" / "user"


@dataclass(frozen=True)
class Units:
    """The two unit files of one memory's job."""

    name: str
    folder: Path

    @property
    def service(self) -> Path:
        return self.folder / f"{self.name}.service"

    @property
    def timer(self) -> Path:
        return self.folder / f"{self.name}.timer"

    @property
    def enabled_link(self) -> Path:
        return self.folder / WANTS / f"{self.name}.timer"

    def installed(self) -> bool:
        return self.service.exists() or self.timer.exists()

    def enabled(self) -> bool:
        return os.path.lexists(self.enabled_link)


def units(name: str) -> Units:
    return Units(name, unit_dir())


def _escaped(text: str) -> str:
    """``text`` as one double-quoted argument of ExecStart=: systemd unquotes C-style, expands
    ``$VAR`` and ``%`` specifiers, so those are escaped for the shell to see them as written."""
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + quoted.replace("%", "%%").replace("$", "$$") + '"'


def service_text(job: Job) -> str:
    shell = shutil.which("sh") or "/bin/sh"
    return "\n".join([
        job.marker(),
        "[Unit]",
        f"Description=memdream: ingest the hook spool and dream if needed ({_specifiers_escaped(str(job.memory))})",
        "",
        "[Service]",
        "Type=oneshot",
        f"ExecStart={os.path.abspath(shell)} -c {_escaped(job.shell_command())}",
        "Nice=10",  # an agent may be working on this machine: dream in the background
        "",
    ])


def timer_text(job: Job) -> str:
    return "\n".join([
        job.marker(),
        "[Unit]",
        f"Description=memdream schedule every {job.interval} for {_specifiers_escaped(str(job.memory))}",
        "",
        "[Timer]",
        f"OnCalendar={job.interval.on_calendar()}",
        "Persistent=true",  # a run missed while the machine slept runs when it wakes
        "",
        "[Install]",
        "WantedBy=timers.target",
        "",
    ])


def _specifiers_escaped(text: str) -> str:
    return text.replace("%", "%%")


def write(job: Job) -> tuple[Units, bool]:
    """Write both unit files; False when they already said exactly this (nothing written)."""
    found = units(job.name)
    wanted = {found.service: service_text(job), found.timer: timer_text(job)}
    if all(_read(path) == text for path, text in wanted.items()):
        return found, False
    found.folder.mkdir(parents=True, exist_ok=True)
    for path, text in wanted.items():
        yamlio.write_atomic(path, text)
    return found, True


def remove(found: Units) -> list[Path]:
    """Delete the unit files and the enable link (what `systemctl disable` would remove); what went."""
    removed = []
    for path in (found.enabled_link, found.timer, found.service):
        if os.path.lexists(path):
            path.unlink()
            removed.append(path)
    return removed


def enable_commands(name: str) -> list[list[str]]:
    return [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", f"{name}.timer"]]


def disable_commands(name: str) -> list[list[str]]:
    return [["systemctl", "--user", "disable", "--now", f"{name}.timer"]]


def reload_commands() -> list[list[str]]:
    return [["systemctl", "--user", "daemon-reload"]]


def systemctl_program() -> str | None:
    return os.environ.get(SYSTEMCTL_ENV) or shutil.which("systemctl")


def run_commands(commands: list[list[str]]) -> None:
    """Run systemctl commands (``systemctl`` replaced by the program found); the first failure stops."""
    program = systemctl_program()
    if program is None:
        raise MemdreamError("no `systemctl` command here: the unit files are written; load them by hand")
    for command in commands:
        try:
            done = subprocess.run([program, *command[1:]], capture_output=True, text=True, timeout=TIMEOUT_SECONDS,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise MemdreamError(f"{' '.join(command)}: {error}") from None
        if done.returncode != 0:
            detail = " ".join(done.stderr.split())[:300] or f"exit {done.returncode}"
            raise MemdreamError(f"{' '.join(command)} failed: {detail}")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None
