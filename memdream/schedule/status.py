"""`memdream schedule status`: what is installed, the last runs and the last error from the job's
log, when it runs next, and the last dream from git."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memdream.clock import format_timestamp, now, parse_timestamp
from memdream.errors import MemdreamError
from memdream.memory import trailers as trailer
from memdream.schedule import cron, systemd
from memdream.schedule.job import END, START, Interval, log_path, marker_interval, unit_name

LOG_TAIL_BYTES = 256 * 1024  # the log only grows: the last runs are at its end
SHOWN_RUNS = 5
EXIT_BUSY = 75  # another memdream held the memory: the next run simply tries again
DECISIONS = ("no dream", "dream needed")  # how `dream --if-needed` opens its text output


@dataclass
class Run:
    """One run of the job, framed by its start and end lines in the log."""

    started: str
    ended: str | None = None  # None: still running, or killed before its end line
    exit: int | None = None
    decision: str | None = None  # what `dream --if-needed` decided
    message: str | None = None  # a failed run's last error line
    lines: list[str] = field(default_factory=list, repr=False)

    @property
    def failed(self) -> bool:
        return self.exit not in (None, 0, EXIT_BUSY)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("lines")
        return data


@dataclass
class Installed:
    via: str
    interval: str | None
    where: str  # "crontab" or the timer's path
    enabled: bool  # cron: always; systemd: the timer is linked into timers.target.wants
    entry: list[str] = field(default_factory=list)  # the crontab lines, or the timer's path and service's

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ScheduleStatus:
    memory: Path
    name: str
    log: Path
    installed: list[Installed]
    notes: list[str]  # what could not be looked at (no crontab command...)
    next_run: str | None
    runs: list[Run]  # newest first
    last_error: Run | None
    last_dream: dict[str, str] | None  # commit, time, subject of the last dream commit

    def to_dict(self) -> dict[str, Any]:
        return {"memory": str(self.memory), "name": self.name, "log": str(self.log),
                "installed": [item.to_dict() for item in self.installed], "notes": self.notes,
                "next_run": self.next_run, "runs": [run.to_dict() for run in self.runs],
                "last_error": self.last_error.to_dict() if self.last_error else None, "last_dream": self.last_dream}


def status(memory: Path) -> ScheduleStatus:
    name = unit_name(memory)
    installed: list[Installed] = []
    notes: list[str] = []
    found_cron = _cron(name, notes)
    if found_cron:
        installed.append(found_cron)
    found_timer = _systemd(name)
    if found_timer:
        installed.append(found_timer)
    runs = read_runs(log_path(memory))
    failed = [run for run in runs if run.failed]
    return ScheduleStatus(Path(memory), name, log_path(memory), installed, notes, _next_run(installed),
                          runs[:SHOWN_RUNS], failed[0] if failed else None, _last_dream(memory))


def _cron(name: str, notes: list[str]) -> Installed | None:
    if not cron.available():
        notes.append("cron: no `crontab` command here")
        return None
    try:
        lines = cron.find(cron.read(), name)
    except MemdreamError as error:
        notes.append(f"cron: {error}")
        return None
    if lines is None:
        return None
    interval = marker_interval(lines[0])
    return Installed("cron", str(interval) if interval else None, "crontab", True, lines)


def _systemd(name: str) -> Installed | None:
    units = systemd.units(name)
    if not units.installed():
        return None
    interval = None
    try:
        interval = marker_interval(units.timer.read_text(encoding="utf-8").splitlines()[0])
    except (OSError, IndexError, UnicodeDecodeError):
        pass
    return Installed("systemd", str(interval) if interval else None, str(units.timer), units.enabled(),
                     [str(units.timer), str(units.service)])


def _next_run(installed: list[Installed]) -> str | None:
    moment = now()
    starts = [Interval.parse(item.interval).next_run(moment) for item in installed
              if item.interval and item.enabled]
    return format_timestamp(min(starts)) if starts else None


def read_runs(log: Path) -> list[Run]:
    """The runs in the end of the log, newest first."""
    try:
        with open(log, "rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    runs: list[Run] = []
    for line in text.splitlines():
        if line.startswith(START):
            runs.append(Run(started=line[len(START):].strip()))
        elif runs and line.startswith(END):
            _close(runs[-1], line[len(END):].split())
        elif runs and runs[-1].ended is None:
            _note(runs[-1], line)
    for run in runs:
        if run.failed:
            run.message = _error_line(run.lines)
    return runs[::-1]


def _close(run: Run, words: list[str]) -> None:
    """``<time> exit <code>``"""
    run.ended = words[0] if words else None
    if len(words) >= 3 and words[1] == "exit" and words[2].lstrip("-").isdigit():
        run.exit = int(words[2])


def _note(run: Run, line: str) -> None:
    if run.decision is None and line.startswith(DECISIONS):
        run.decision = line.strip()
    if line.strip():
        run.lines.append(line)


def _error_line(lines: list[str]) -> str | None:
    """memdream's own error line (`memdream: ...`), else the last line the run printed."""
    errors = [line for line in lines if line.startswith("memdream: ")]
    chosen = errors[-1] if errors else (lines[-1] if lines else None)
    return chosen.strip()[:300] if chosen else None


def _last_dream(memory: Path) -> dict[str, str] | None:
    from memdream import gitops

    try:
        found = gitops.commits_with_trailers(memory, [trailer.RUN], max_count=1)
    except MemdreamError:
        return None
    if not found:
        return None
    info = found[0]
    return {"commit": info.short, "time": info.time, "subject": info.subject}


def seconds_between(first: str | None, last: str | None) -> float | None:
    """How long a run took, from its start and end lines."""
    try:
        return (parse_timestamp(last or "") - parse_timestamp(first or "")).total_seconds()
    except ValueError:
        return None
