"""`memdream schedule install|status|uninstall` against a real crontab program (a script keeping the
table in a file, through MEMDREAM_CRONTAB) and a temporary systemd user folder (XDG_CONFIG_HOME)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.clock import format_timestamp
from memdream.schedule.job import END, START, Interval, unit_name
from tests.gitutil import git
from tests.transcripts import ClaudeSession, claude_project_dir

# crontab's interface as cronie has it: -l prints the table or says there is none (exit 1), - replaces it.
FAKE_CRONTAB = """#!/bin/sh
table="$(dirname "$0")/table"
case "$1" in
  -l) if [ -f "$table" ]; then cat "$table"; else echo "no crontab for $(id -un)" >&2; exit 1; fi ;;
  -) cat > "$table" ;;
  *) echo "usage: crontab [-l | -]" >&2; exit 1 ;;
esac
"""
RECORDING_SYSTEMCTL = """#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls"
"""
OTHER_LINES = "MAILTO=dana@example.org\n# nightly backup\n15 2 * * * /usr/local/bin/backup --quiet\n"


def executable(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The crontab table file the MEMDREAM_CRONTAB program keeps."""
    folder = tmp_path / "cron"
    folder.mkdir()
    monkeypatch.setenv("MEMDREAM_CRONTAB", str(executable(folder / "crontab", FAKE_CRONTAB)))
    return folder / "table"


@pytest.fixture
def units(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The systemd user unit folder under a temporary XDG_CONFIG_HOME; systemctl records its calls."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    folder = tmp_path / "systemctl"
    folder.mkdir()
    monkeypatch.setenv("MEMDREAM_SYSTEMCTL", str(executable(folder / "systemctl", RECORDING_SYSTEMCTL)))
    return tmp_path / "config" / "systemd" / "user"


@pytest.fixture
def utc_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def ok(result: Any) -> str:
    assert result.exit_code == 0, result.stderr
    return str(result.stdout)


def cron_job_command(line: str) -> str:
    """The command of a crontab line as cron hands it to /bin/sh: after the five time fields, with
    each escaped `\\%` turned back into `%` (an unescaped one would end the command)."""
    command = line.split(" ", 5)[5]
    assert "%" not in command.replace("\\%", "")
    return command.replace("\\%", "%")


def bare_env(now: str) -> dict[str, str]:
    """What cron gives a job: HOME, a short PATH, SHELL; plus the test's clock and git isolation."""
    return {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin", "SHELL": "/bin/sh", "MEMDREAM_NOW": now,
            "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"], "GIT_CONFIG_NOSYSTEM": "1"}


# -- cron ----------------------------------------------------------------------------------------

def test_install_writes_one_entry_and_keeps_every_other_line(run: Any, memory: Path, crontab: Path) -> None:
    crontab.write_text(OTHER_LINES, encoding="utf-8")
    shutil.rmtree(memory / ".memdream", ignore_errors=True)  # a fresh clone: local state is not in git
    out = ok(run("schedule", "install", "--cron", "-m", memory))
    assert out.startswith(f"installed: {unit_name(memory)} every 1h in the user crontab")
    assert (memory / ".memdream").is_dir()  # where the job's log goes
    table = crontab.read_text(encoding="utf-8")
    assert table.startswith(OTHER_LINES)
    marker, job = table[len(OTHER_LINES):].splitlines()
    assert marker.startswith(f"# memdream-schedule {unit_name(memory)}: every 1h for {memory} ")
    assert job.startswith(f"0 * * * * cd {memory} && PATH=")
    command = cron_job_command(job)
    assert f"ingest --spool --memory {memory} && " in command
    assert f"dream --if-needed --memory {memory};" in command
    assert command.endswith(f">> {memory}/.memdream/schedule.log 2>&1")
    program = command.split("export PATH && { ")[1].split(";")[1].split(" ingest ")[0].strip()
    assert os.path.isabs(program.split()[0]) and os.access(program.split()[0], os.X_OK)
    assert table.endswith("\n")


def test_install_twice_is_one_entry_and_a_new_interval_replaces_it_in_place(run: Any, memory: Path,
                                                                            crontab: Path) -> None:
    crontab.write_text(OTHER_LINES, encoding="utf-8")
    ok(run("schedule", "install", "--cron", "-m", memory))
    first = crontab.read_text(encoding="utf-8")
    assert ok(run("schedule", "install", "--cron", "-m", memory)).startswith("already installed, unchanged")
    assert crontab.read_text(encoding="utf-8") == first
    with crontab.open("a", encoding="utf-8") as table:
        table.write("@reboot /usr/bin/true\n")  # someone adds a line below ours
    ok(run("schedule", "install", "--cron", "--every", "30m", "-m", memory))
    lines = crontab.read_text(encoding="utf-8").splitlines()
    assert lines[:3] == OTHER_LINES.splitlines() and lines[-1] == "@reboot /usr/bin/true"
    assert len(lines) == 6 and lines[4].startswith("*/30 * * * * cd ")
    assert sum(unit_name(memory) in line for line in lines) == 1


def test_every_interval_becomes_cron_fields_and_a_bad_one_is_a_usage_error(run: Any, memory: Path,
                                                                           crontab: Path) -> None:
    for every, fields in (("30m", "*/30 * * * *"), ("15m", "*/15 * * * *"), ("1h", "0 * * * *"),
                          ("6h", "0 */6 * * *"), ("1d", "0 3 * * *"), ("60m", "0 * * * *")):
        ok(run("schedule", "install", "--cron", "--every", every, "-m", memory))
        assert crontab.read_text(encoding="utf-8").splitlines()[1].startswith(fields + " cd ")
    for bad in ("7m", "5h", "2d", "hourly", "0m"):
        result = run("schedule", "install", "--cron", "--every", bad, "-m", memory)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "--every" in result.stderr


def test_uninstall_removes_only_its_own_entry(run: Any, memory: Path, tmp_path: Path, crontab: Path) -> None:
    from memdream.commands.init import init_memory

    other = tmp_path / "other" / "mem"  # a second memory of the same folder name
    init_memory(other)
    crontab.write_text(OTHER_LINES, encoding="utf-8")
    ok(run("schedule", "install", "--cron", "-m", other))
    ok(run("schedule", "install", "--cron", "-m", memory))
    assert unit_name(other) != unit_name(memory)
    out = ok(run("schedule", "uninstall", "-m", memory))
    assert "removed: crontab entry" in out
    table = crontab.read_text(encoding="utf-8")
    assert unit_name(memory) not in table and str(memory) not in table
    assert table.startswith(OTHER_LINES) and len(table.splitlines()) == 5 and unit_name(other) in table
    assert "nothing of" in ok(run("schedule", "uninstall", "-m", memory))  # again: nothing to do
    ok(run("schedule", "uninstall", "-m", other))
    assert crontab.read_text(encoding="utf-8") == OTHER_LINES


def test_print_shows_the_entry_and_writes_nothing(run: Any, memory: Path, crontab: Path) -> None:
    out = ok(run("schedule", "install", "--cron", "--print", "-m", memory))
    assert not crontab.exists()
    assert "# memdream-schedule " in out and "0 * * * * cd " in out


def test_the_cron_job_runs_ingests_the_spool_dreams_and_status_reads_its_log(run: Any, memory: Path, tmp_path: Path,
                                                                            crontab: Path, utc_zone: None,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    start = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    session = ClaudeSession("4c7d2b1a-9e8f-4a3b-8c6d-5e4f3a2b1c0d", "/home/dana/src/billing-api", start)
    session.user("The staging database listens on port 6432 now. Always run the tests with poetry.")
    session.bash("poetry run pytest -q", "42 passed in 3.10s")
    transcript = session.write(tmp_path / "claude" / claude_project_dir("/home/dana/src/billing-api"))
    hook = {"session_id": session.session_id, "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
    assert run("enqueue", "--from-hook", "-m", memory, input=json.dumps(hook)).exit_code == 0
    ok(run("schedule", "install", "--cron", "--every", "30m", "-m", memory))
    job = crontab.read_text(encoding="utf-8").splitlines()[1]
    before = git(memory, "rev-list", "--count", "HEAD")
    done = subprocess.run(["/bin/sh", "-c", cron_job_command(job)], env=bare_env("2026-11-30T12:00:00Z"),
                          cwd="/", capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""  # all of it went to the log
    log = (memory / ".memdream" / "schedule.log").read_text(encoding="utf-8")
    assert log.startswith(START) and f"{END} " in log and log.rstrip().endswith("exit 0")
    assert "event(s) added" in log and "dream needed: schedule (no dream yet)" in log
    assert int(git(memory, "rev-list", "--count", "HEAD")) == int(before) + 1  # the dream's commit

    monkeypatch.setenv("MEMDREAM_NOW", "2026-11-30T12:07:00Z")
    status = json.loads(ok(run("schedule", "status", "-m", memory, "--format", "json")))
    assert status["installed"][0]["via"] == "cron" and status["installed"][0]["interval"] == "30m"
    assert status["next_run"] == "2026-11-30T12:30:00Z"
    (last,) = status["runs"]
    assert last["exit"] == 0 and last["decision"].startswith("dream needed: schedule")
    assert status["last_error"] is None
    assert status["last_dream"]["subject"].startswith("memdream dream")
    assert status["last_dream"]["commit"] == git(memory, "rev-parse", "--short=10", "HEAD").strip()
    text = ok(run("schedule", "status", "-m", memory))
    assert "cron: every 30m in crontab" in text and "next run: 2026-11-30T12:30:00Z" in text
    assert "last error: none in the log" in text


def test_status_reports_the_last_error_of_a_failed_run(run: Any, memory: Path, crontab: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    ok(run("schedule", "install", "--cron", "-m", memory))
    job = crontab.read_text(encoding="utf-8").splitlines()[1]
    (memory / "memdream.yaml").write_text("dream: [unclosed\n", encoding="utf-8")  # the job's memory is broken
    done = subprocess.run(["/bin/sh", "-c", cron_job_command(job)], env=bare_env("2026-11-30T12:00:00Z"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0
    status = json.loads(ok(run("schedule", "status", "-m", memory, "--format", "json")))
    error = status["last_error"]
    assert error["exit"] == 1 and error["message"].startswith("memdream: memdream.yaml: cannot be read")
    assert status["runs"][0] == error
    assert "last error: " in ok(run("schedule", "status", "-m", memory)) and "exit 1: memdream:" in ok(
        run("schedule", "status", "-m", memory))


def test_status_reads_busy_killed_and_failed_runs_from_the_log_newest_first(run: Any, memory: Path) -> None:
    (memory / ".memdream" / "schedule.log").write_text("\n".join([
        f"{START} 2026-11-30T10:00:00Z", "memdream: a dream is running (lock held); try again later",
        f"{END} 2026-11-30T10:00:10Z exit 75",
        f"{START} 2026-11-30T10:30:00Z", "0 event(s) added (nothing new)", "memdream: no space left on device",
        f"{END} 2026-11-30T10:30:02Z exit 1",
        f"{START} 2026-11-30T11:00:00Z", "0 event(s) added (nothing new)",
        "no dream: nothing pending (no raw event after segment 000003)", f"{END} 2026-11-30T11:00:03Z exit 0",
        f"{START} 2026-11-30T11:30:00Z", "12 event(s) added in segment(s) 000004.jsonl",  # killed: no end line
    ]) + "\n", encoding="utf-8")
    status = json.loads(ok(run("schedule", "status", "-m", memory, "--format", "json")))
    assert [(r["started"], r["exit"]) for r in status["runs"]] == [
        ("2026-11-30T11:30:00Z", None), ("2026-11-30T11:00:00Z", 0), ("2026-11-30T10:30:00Z", 1),
        ("2026-11-30T10:00:00Z", 75)]
    assert status["runs"][1]["decision"] == "no dream: nothing pending (no raw event after segment 000003)"
    assert status["last_error"]["started"] == "2026-11-30T10:30:00Z"  # busy (75) is no error: cron retries
    assert status["last_error"]["message"] == "memdream: no space left on device"
    assert status["installed"] == [] and status["next_run"] is None
    text = ok(run("schedule", "status", "-m", memory))
    assert "no end line (running, or killed)" in text and "(memory busy: retried next run)" in text


# -- systemd -------------------------------------------------------------------------------------

def test_systemd_install_writes_a_timer_and_a_service_idempotently(run: Any, memory: Path, units: Path) -> None:
    units.mkdir(parents=True)
    (units / "someone-else.service").write_text("[Service]\nExecStart=/bin/true\n", encoding="utf-8")
    out = ok(run("schedule", "install", "--systemd", "--every", "30m", "-m", memory))
    name = unit_name(memory)
    assert f"to start it: systemctl --user daemon-reload && systemctl --user enable --now {name}.timer" in out
    timer = (units / f"{name}.timer").read_text(encoding="utf-8")
    service = (units / f"{name}.service").read_text(encoding="utf-8")
    assert "OnCalendar=*-*-* *:00/30:00\n" in timer and "Persistent=true" in timer and "WantedBy=timers.target" in timer
    assert "Type=oneshot" in service
    exec_start = next(line for line in service.splitlines() if line.startswith("ExecStart="))
    assert exec_start.startswith("ExecStart=/") and f' -c "cd {memory} && PATH=' in exec_start
    assert "$$(date -u +%%Y-%%m-%%dT%%H:%%M:%%SZ)" in exec_start and "exit $$code" in exec_start
    stamps = {path.name: path.stat().st_mtime_ns for path in units.iterdir()}
    again = ok(run("schedule", "install", "--systemd", "--every", "30m", "-m", memory))
    assert again.startswith("already installed, unchanged")
    assert {path.name: path.stat().st_mtime_ns for path in units.iterdir()} == stamps
    assert sorted(path.name for path in units.iterdir()) == sorted([f"{name}.service", f"{name}.timer",
                                                                    "someone-else.service"])


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_units_pass_systemd_analyze_verify(run: Any, memory: Path, units: Path) -> None:
    ok(run("schedule", "install", "--systemd", "-m", memory))
    name = unit_name(memory)
    done = subprocess.run(["systemd-analyze", "verify", str(units / f"{name}.service"), str(units / f"{name}.timer")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    broken = units / "broken.service"  # and it does reject a bad one: the check means something
    broken.write_text('[Service]\nType=oneshot\nExecStart=/bin/sh -c "unbalanced\n', encoding="utf-8")
    assert subprocess.run(["systemd-analyze", "verify", str(broken)], capture_output=True, timeout=60).returncode != 0


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York"])
def test_next_run_agrees_with_systemd_calendar(zone: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    try:
        for every in ("1m", "20m", "1h", "8h", "1d"):
            interval = Interval.parse(every)
            # across the spring daylight-saving change in Europe and the US, before the autumn one in the US
            # (from inside the hour that repeats in autumn, cron runs it again and systemd skips it:
            # docs/scheduling.md), and at the end of a month
            for base in ("2026-03-29T00:30:00Z", "2026-03-08T06:30:00Z", "2026-11-01T04:30:00Z",
                         "2026-11-30T23:59:30Z"):
                moment = datetime.fromisoformat(base.replace("Z", "+00:00"))
                done = subprocess.run(["systemd-analyze", "calendar", f"--base-time=@{int(moment.timestamp())}",
                                       interval.on_calendar()], capture_output=True, text=True, timeout=60,
                                      env={**os.environ, "TZ": zone})
                utc_line = next((line for line in done.stdout.splitlines() if "(in UTC):" in line),
                                next(line for line in done.stdout.splitlines() if "Next elapse:" in line))
                expected = " ".join(utc_line.split()[-3:-1])
                assert format_timestamp(interval.next_run(moment)) == expected.replace(" ", "T") + "Z", (every, base)
    finally:
        monkeypatch.undo()
        time.tzset()


def test_systemd_now_runs_systemctl_and_uninstall_removes_only_its_units(run: Any, memory: Path, units: Path,
                                                                        tmp_path: Path) -> None:
    calls = tmp_path / "systemctl" / "calls"
    name = unit_name(memory)
    out = ok(run("schedule", "install", "--systemd", "--now", "-m", memory))
    assert calls.read_text(encoding="utf-8").splitlines() == ["--user daemon-reload",
                                                              f"--user enable --now {name}.timer"]
    assert f"ran: systemctl --user enable --now {name}.timer" in out
    wants = units / "timers.target.wants"
    wants.mkdir()
    (wants / f"{name}.timer").symlink_to(units / f"{name}.timer")  # what `enable` leaves behind
    (wants / "other.timer").symlink_to(units / "other.timer")
    status = json.loads(ok(run("schedule", "status", "-m", memory, "--format", "json")))
    assert status["installed"][0]["via"] == "systemd" and status["installed"][0]["enabled"] is True
    calls.unlink()
    out = ok(run("schedule", "uninstall", "--systemd", "--now", "-m", memory))
    assert calls.read_text(encoding="utf-8").splitlines() == [f"--user disable --now {name}.timer",
                                                              "--user daemon-reload"]
    assert sorted(path.name for path in units.iterdir()) == ["timers.target.wants"]
    assert [path.name for path in wants.iterdir()] == ["other.timer"]
    assert f"removed: {units / (name + '.timer')}" in out


def test_uninstall_of_a_deleted_memory_still_finds_its_entry(run: Any, memory: Path, crontab: Path,
                                                            units: Path) -> None:
    ok(run("schedule", "install", "--cron", "-m", memory))
    ok(run("schedule", "install", "--systemd", "-m", memory))
    shutil.rmtree(memory)
    out = ok(run("schedule", "uninstall", "-m", memory))
    assert "removed: crontab entry" in out and out.count("removed: ") == 3
    assert crontab.read_text(encoding="utf-8") == "" and list(units.iterdir()) == []


def test_cron_and_systemd_exclude_each_other(run: Any, memory: Path) -> None:
    result = run("schedule", "install", "--cron", "--systemd", "-m", memory)
    assert result.exit_code == 2 and "exclude each other" in result.stderr


def test_schedule_help_lists_its_commands() -> None:
    done = subprocess.run([sys.executable, "-m", "memdream", "schedule", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0
    for command in ("install", "status", "uninstall"):
        assert command in done.stdout
    assert "--if-needed" in subprocess.run([sys.executable, "-m", "memdream", "dream", "--help"], capture_output=True,
                                           text=True, timeout=60).stdout
