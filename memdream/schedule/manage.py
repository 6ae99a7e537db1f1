"""`memdream schedule install` and `uninstall`: one memory's crontab entry or systemd user units."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.errors import MemdreamError, UsageError
from memdream.schedule import cron, systemd
from memdream.schedule.job import Interval, Job, unit_name

CRON, SYSTEMD = "cron", "systemd"


@dataclass
class InstallResult:
    memory: Path
    via: str  # cron or systemd
    interval: str
    name: str
    log: Path
    files: dict[str, str]  # where -> what is (or would be) there: "crontab" or a unit file's path
    changed: bool  # False: already installed exactly so, or only printed
    printed: bool  # --print: nothing written
    commands: list[list[str]] = field(default_factory=list)  # systemctl commands still to run
    ran: list[list[str]] = field(default_factory=list)  # systemctl commands run (--now)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": str(self.memory), "via": self.via, "every": self.interval, "name": self.name,
                "log": str(self.log), "files": self.files, "changed": self.changed, "printed": self.printed,
                "commands": [" ".join(command) for command in self.commands],
                "ran": [" ".join(command) for command in self.ran], "notes": self.notes}


@dataclass
class UninstallResult:
    memory: Path
    name: str
    removed: list[str] = field(default_factory=list)  # "crontab entry", unit file paths
    commands: list[list[str]] = field(default_factory=list)
    ran: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": str(self.memory), "name": self.name, "removed": self.removed,
                "commands": [" ".join(command) for command in self.commands],
                "ran": [" ".join(command) for command in self.ran], "notes": self.notes}


def choose(via: str | None, print_only: bool) -> str:
    """--cron, --systemd, or what this machine has: a crontab command first, else systemd."""
    if via is not None:
        return via
    if cron.available():
        return CRON
    if systemd.systemctl_program() is not None:
        return SYSTEMD
    if print_only:
        return CRON
    raise MemdreamError("neither `crontab` nor `systemctl` is here: install cron, or pass --cron or --systemd "
                        "with --print and install the result by hand")


def install(memory: Path, every: str = "1h", via: str | None = None, print_only: bool = False,
            now: bool = False) -> InstallResult:
    """Write (or with ``print_only`` only show) the job of ``memory``; installing again replaces it."""
    job = Job.of(memory, Interval.parse(every))
    chosen = choose(via, print_only)
    if not print_only:  # the job appends to its log there: a fresh clone has no .memdream/ yet
        job.log.parent.mkdir(parents=True, exist_ok=True)
    if chosen == CRON:
        if now:
            raise UsageError("--now starts a systemd timer; cron needs nothing more")
        return _install_cron(job, print_only)
    return _install_systemd(job, print_only, now)


def _result(job: Job, via: str, files: dict[str, str], changed: bool, printed: bool) -> InstallResult:
    return InstallResult(job.memory, via, str(job.interval), job.name, job.log, files, changed, printed)


def _install_cron(job: Job, print_only: bool) -> InstallResult:
    lines = "".join(f"{line}\n" for line in cron.entry(job))
    if print_only:
        return _result(job, CRON, {"crontab": lines}, False, True)
    current = cron.read()
    updated = cron.with_entry(current, job)
    if updated != current:
        cron.write(updated)
    result = _result(job, CRON, {"crontab": lines}, updated != current, False)
    if systemd.units(job.name).installed():
        result.notes.append(f"a systemd timer runs this memory too ({job.name}.timer): remove it with "
                            "`memdream schedule uninstall --systemd`")
    return result


def _install_systemd(job: Job, print_only: bool, now: bool) -> InstallResult:
    found = systemd.units(job.name)
    files = {str(found.service): systemd.service_text(job), str(found.timer): systemd.timer_text(job)}
    if print_only:
        result = _result(job, SYSTEMD, files, False, True)
        result.commands = systemd.enable_commands(job.name)
        return result
    _, changed = systemd.write(job)
    result = _result(job, SYSTEMD, files, changed, False)
    commands = systemd.enable_commands(job.name)
    if now:
        systemd.run_commands(commands)
        result.ran = commands
    elif changed or not found.enabled():
        result.commands = commands
    if _cron_entry(job.name):
        result.notes.append("a crontab entry runs this memory too: remove it with `memdream schedule uninstall "
                            "--cron`")
    return result


def _cron_entry(name: str) -> list[str] | None:
    """This memory's crontab entry, None when there is none or no crontab to ask."""
    if not cron.available():
        return None
    try:
        return cron.find(cron.read(), name)
    except MemdreamError:
        return None


def uninstall(memory: Path, via: str | None = None, now: bool = False) -> UninstallResult:
    """Remove the entry and the unit files of ``memory`` (both kinds unless ``via`` names one); the
    rest of the crontab and other units stay as they are."""
    name = unit_name(memory)
    result = UninstallResult(Path(memory), name)
    if via in (None, CRON):
        _uninstall_cron(name, via, result)
    if via in (None, SYSTEMD):
        _uninstall_systemd(name, now, result)
    if not result.removed:
        result.notes.append(f"nothing of {name} was installed")
    return result


def _uninstall_cron(name: str, via: str | None, result: UninstallResult) -> None:
    if not cron.available():
        if via == CRON:
            raise MemdreamError("no `crontab` command here: there is no crontab entry to remove")
        return
    current = cron.read()
    if cron.find(current, name) is not None:
        cron.write(cron.without(current, name))
        result.removed.append("crontab entry")


def _uninstall_systemd(name: str, now: bool, result: UninstallResult) -> None:
    found = systemd.units(name)
    if not found.installed() and not found.enabled():
        return
    if now:
        systemd.run_commands(systemd.disable_commands(name))
        result.ran.extend(systemd.disable_commands(name))
    result.removed.extend(str(path) for path in systemd.remove(found))
    if now:
        systemd.run_commands(systemd.reload_commands())
        result.ran.extend(systemd.reload_commands())
    else:
        result.commands = [["systemctl", "--user", "stop", f"{name}.timer"], *systemd.reload_commands()]
