"""The scheduled job of one memory: how often, which command, its name and its log.

Cron and systemd run the same POSIX shell line, so the log reads the same under both:

    cd <memory> && PATH=... ; { start line; memdream ingest --spool && memdream dream --if-needed;
                               end line with the exit code; } >> <memory>/.memdream/schedule.log 2>&1

The start and end lines (:data:`START`, :data:`END`) frame each run, so that `schedule status` can
find the last runs and the last error in the log without knowing what memdream printed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from memdream.errors import UsageError
from memdream.memory.paths import STATE_DIR

LOG_FILE = "schedule.log"
START = "[memdream schedule] start"
END = "[memdream schedule] end"
MARKER = "# memdream-schedule"  # opens the comment that names a memory's entry or unit
DAILY_HOUR = 3  # `1d` runs at 03:00 local time: the agent is most likely idle
_INTERVAL = re.compile(r"^\s*(\d+)\s*([mhd])\s*$")
_MINUTE_STEPS = (1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)  # divide an hour: cron's */N repeats evenly
_HOUR_STEPS = (1, 2, 3, 4, 6, 8, 12)  # divide a day
_DATE = "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
_STANDARD_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


@dataclass(frozen=True)
class Interval:
    """How often the job runs: every N minutes (N divides 60), N hours (N divides 24) or once a day."""

    minutes: int

    @classmethod
    def parse(cls, text: str) -> Interval:
        match = _INTERVAL.match(text.lower())
        if not match:
            raise UsageError(f"--every {text!r}: give minutes, hours or a day, such as 30m, 1h or 1d")
        count, unit = int(match.group(1)), match.group(2)
        minutes = count * {"m": 1, "h": 60, "d": 1440}[unit]
        if minutes in (*_MINUTE_STEPS, *(hours * 60 for hours in _HOUR_STEPS), 1440):
            return cls(minutes)
        raise UsageError(f"--every {text!r}: cron and systemd repeat evenly only every "
                         f"{', '.join(f'{m}m' for m in _MINUTE_STEPS)}, "
                         f"{', '.join(f'{h}h' for h in _HOUR_STEPS)} or 1d")

    def __str__(self) -> str:
        if self.minutes == 1440:
            return "1d"
        return f"{self.minutes // 60}h" if self.minutes % 60 == 0 else f"{self.minutes}m"

    def cron_fields(self) -> str:
        """The five time fields of a crontab line."""
        if self.minutes < 60:
            return "* * * * *" if self.minutes == 1 else f"*/{self.minutes} * * * *"
        if self.minutes < 1440:
            hours = self.minutes // 60
            return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"
        return f"0 {DAILY_HOUR} * * *"

    def on_calendar(self) -> str:
        """The same times as a systemd OnCalendar= expression."""
        if self.minutes < 60:
            return "*-*-* *:*:00" if self.minutes == 1 else f"*-*-* *:00/{self.minutes}:00"
        if self.minutes < 1440:
            return f"*-*-* 00/{self.minutes // 60}:00:00"
        return f"*-*-* {DAILY_HOUR:02d}:00:00"

    def matches(self, local: datetime) -> bool:
        """Whether the job starts at this local minute (as cron and the timer read the fields)."""
        if self.minutes < 60:
            return local.minute % self.minutes == 0
        if self.minutes < 1440:
            return local.minute == 0 and local.hour % (self.minutes // 60) == 0
        return local.minute == 0 and local.hour == DAILY_HOUR

    def next_run(self, after: datetime) -> datetime:
        """The first start strictly after ``after`` (aware), as an aware UTC time. Walks local minutes,
        so a daylight-saving change is read as the system clock reads it."""
        moment = after.astimezone(timezone.utc).replace(second=0, microsecond=0) + timedelta(minutes=1)
        for _ in range(2 * 1440 + 120):
            if self.matches(datetime.fromtimestamp(moment.timestamp())):  # naive local time, as cron sees it
                return moment
            moment += timedelta(minutes=1)
        raise AssertionError(f"no start within two days for every {self}")  # unreachable: 1d is the longest


@dataclass(frozen=True)
class Job:
    """The job of one memory: what runs, how often, and the names it is known by."""

    memory: Path  # absolute
    interval: Interval
    program: tuple[str, ...]  # how to start memdream: the script, or the interpreter with -m memdream

    @classmethod
    def of(cls, memory: Path, interval: Interval) -> Job:
        root = Path(os.path.abspath(memory))
        if any(char in str(root) for char in "\n\r"):
            raise UsageError(f"{root!r}: a memory path with a line break cannot go into a crontab or unit file")
        return cls(root, interval, memdream_program())

    @property
    def name(self) -> str:
        return unit_name(self.memory)

    @property
    def log(self) -> Path:
        return log_path(self.memory)

    def search_path(self) -> str:
        """PATH for the job: cron and systemd give a bare one, and memdream needs git."""
        folders = [os.path.dirname(self.program[0])]
        git = shutil.which("git")
        if git:
            folders.append(os.path.dirname(os.path.abspath(git)))
        folders.extend(_STANDARD_PATH)
        return ":".join(dict.fromkeys(folder for folder in folders if folder))

    def shell_command(self) -> str:
        """The POSIX shell line both schedulers run (before their own escaping)."""
        root = shlex.quote(str(self.memory))
        memdream = " ".join(shlex.quote(part) for part in self.program)
        # --memory as well as cd: a MEMDREAM_MEMORY in the scheduler's environment must not redirect it.
        steps = (f"{memdream} ingest --spool --memory {root} && "
                 f"{memdream} dream --if-needed --memory {root}")
        return (f"cd {root} && PATH={shlex.quote(self.search_path())} && export PATH && "
                f"{{ echo \"{START} {_DATE}\"; {steps}; code=$?; echo \"{END} {_DATE} exit $code\"; }} "
                f">> {shlex.quote(str(self.log))} 2>&1")

    def marker(self) -> str:
        """The comment that names this memory's entry: its unit name, interval and folder."""
        return (f"{MARKER} {self.name}: every {self.interval} for {self.memory} (written by `memdream schedule "
                f"install`; `memdream schedule uninstall --memory {shlex.quote(str(self.memory))}` removes it)")


def unit_name(memory: Path) -> str:
    """``memdream-<folder>-<digest of the path>``: readable, and two memories named alike stay apart."""
    root = os.path.abspath(memory)
    slug = re.sub(r"[^a-z0-9]+", "-", os.path.basename(root).lower()).strip("-")[:40] or "memory"
    return f"memdream-{slug}-{hashlib.sha256(root.encode('utf-8')).hexdigest()[:8]}"


def log_path(memory: Path) -> Path:
    return Path(os.path.abspath(memory)) / STATE_DIR / LOG_FILE


def marker_interval(line: str) -> Interval | None:
    """The interval a marker comment names, None when it names none that parses."""
    match = re.search(r": every (\S+) for ", line)
    if not match:
        return None
    try:
        return Interval.parse(match.group(1))
    except UsageError:
        return None


def memdream_program() -> tuple[str, ...]:
    """The memdream that is running now, as an absolute command: its script when there is one (the
    one beside this interpreter first: `shutil.which` may find another installation), else
    ``python -m memdream`` with this interpreter."""
    started = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(started) == "memdream" and os.access(started, os.X_OK):
        return (started,)
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "memdream")
    if os.access(beside, os.X_OK):
        return (beside,)
    found = shutil.which("memdream")
    if found:
        return (os.path.abspath(found),)
    return (os.path.abspath(sys.executable), "-m", "memdream")
