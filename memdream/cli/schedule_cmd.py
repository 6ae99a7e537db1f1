"""memdream schedule (install, status, uninstall)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memdream.cli.groups import command_group
from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption, memory_root
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.schedule.manage import InstallResult, UninstallResult
    from memdream.schedule.status import ScheduleStatus

schedule = command_group(
    "schedule", "Run `memdream ingest --spool && memdream dream --if-needed` from cron or a systemd user timer.")

CronFlag = Annotated[bool, typer.Option("--cron", help="A user crontab entry (through `crontab`).")]
SystemdFlag = Annotated[bool, typer.Option(
    "--systemd", help="A systemd user timer and service in $XDG_CONFIG_HOME/systemd/user/.")]
NowFlag = Annotated[bool, typer.Option(
    "--now", help="systemd: also run `systemctl --user` (daemon-reload and enable --now, or disable --now) "
                  "instead of printing the commands.")]


def _via(cron: bool, systemd: bool) -> str | None:
    from memdream.errors import UsageError

    if cron and systemd:
        raise UsageError("--cron and --systemd exclude each other: install one, then the other if you want both")
    return "cron" if cron else "systemd" if systemd else None


@schedule.command("install")
def install(
    every: Annotated[str, typer.Option("--every", metavar="30m|1h|1d",
                                       help="How often: minutes dividing an hour, hours dividing a day, or 1d "
                                            "(03:00 local time).")] = "1h",
    cron: CronFlag = False,
    systemd: SystemdFlag = False,
    print_only: Annotated[bool, typer.Option("--print", help="Show what would be written; write nothing.")] = False,
    now: NowFlag = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Install the job: ingest the hook spool, then dream if needed.

    Runs every interval and logs to <memory>/.memdream/schedule.log. Default: cron when a `crontab`
    command is here, else systemd. Installing again replaces this memory's entry (other crontab lines
    and units stay untouched). MEMDREAM_CRONTAB names another crontab program.
    """
    from memdream.schedule.manage import install as install_job

    emit(install_job(memory_root(memory, tenant), every, _via(cron, systemd), print_only, now), output,
         _render_install)


@schedule.command("status")
def status(memory: MemoryOption = None, tenant: TenantOption = None,
           output: FormatOption = DataFormat.text) -> None:
    """Show the job: last runs and error, next run, last dream."""
    from memdream.schedule.status import status as read_status

    emit(read_status(memory_root(memory, tenant)), output, _render_status)


@schedule.command("uninstall")
def uninstall(
    cron: CronFlag = False,
    systemd: SystemdFlag = False,
    now: NowFlag = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Remove this memory's crontab entry and units, nothing else.

    Both kinds unless --cron or --systemd says which.
    """
    from memdream.schedule.manage import uninstall as uninstall_job

    emit(uninstall_job(_uninstall_root(memory, tenant), _via(cron, systemd), now), output, _render_uninstall)


def _uninstall_root(memory: Path | None, tenant: str | None) -> Path:
    """The memory's folder; a --memory folder that is no memory any more (deleted) still names its entry."""
    from memdream.errors import MemoryNotFound

    try:
        return memory_root(memory, tenant)
    except MemoryNotFound:
        if memory is None:
            raise
        return Path(memory).absolute()


# -- rendering -------------------------------------------------------------------------------------

def _command_lines(commands: list[list[str]]) -> list[str]:
    return [" ".join(command) for command in commands]


def _render_install(result: InstallResult) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    if result.printed:
        for where, text in result.files.items():
            console.print(f"# {where}" if result.via == "systemd" else "# add to `crontab -e`:")
            console.print(text.rstrip("\n"))
        for line in _command_lines(result.commands):
            console.print(f"# then: {line}")
        return
    state = "installed" if result.changed else "already installed, unchanged"
    where = "the user crontab" if result.via == "cron" else ", ".join(result.files)
    console.print(f"{state}: {result.name} every {result.interval} in {where}")
    console.print(f"log: {result.log}")
    for line in _command_lines(result.ran):
        console.print(f"ran: {line}")
    if result.commands:
        console.print("to start it: " + " && ".join(_command_lines(result.commands)))
    for note in result.notes:
        console.print(f"note: {note}")


def _render_uninstall(result: UninstallResult) -> None:
    from memdream.render import stdout_console

    console = stdout_console()
    for item in result.removed:
        console.print(f"removed: {item}")
    for line in _command_lines(result.ran):
        console.print(f"ran: {line}")
    if result.commands:
        console.print("to stop the loaded timer: " + " && ".join(_command_lines(result.commands)))
    for note in result.notes:
        console.print(note)


def _render_status(found: ScheduleStatus) -> None:
    from memdream.render import stdout_console
    from memdream.schedule.status import seconds_between

    console = stdout_console()
    console.print(f"memory: {found.memory} ({found.name})")
    if not found.installed:
        console.print("installed: nothing (`memdream schedule install`)")
    for item in found.installed:
        enabled = "" if item.enabled else " (not enabled: systemctl --user enable --now " + f"{found.name}.timer)"
        console.print(f"{item.via}: every {item.interval or '?'} in {item.where}{enabled}")
    for note in found.notes:
        console.print(note)
    console.print(f"next run: {found.next_run or 'none scheduled'}")
    console.print(f"log: {found.log}" + ("" if found.runs else " (no run yet)"))
    for run in found.runs:
        took = seconds_between(run.started, run.ended)
        ended = f"exit {run.exit}" if run.exit is not None else "no end line (running, or killed)"
        busy = " (memory busy: retried next run)" if run.exit == 75 else ""
        console.print(f"  {run.started}  {ended}{busy}" + (f"  {took:g} s" if took is not None else "")
                      + (f"  {run.decision}" if run.decision else ""))
    error = found.last_error
    console.print(f"last error: {error.started} exit {error.exit}: {error.message or '(no output)'}" if error
                  else "last error: none in the log")
    dream = found.last_dream
    console.print(f"last dream: {dream['time']} {dream['commit']} {dream['subject']}" if dream
                  else "last dream: none committed yet")

