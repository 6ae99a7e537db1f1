"""memdream hooks install / uninstall: memdream's entries in Claude Code's settings.json."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from memdream.cli.groups import command_group
from memdream.cli.options import DataFormat, FormatOption, MemoryOption, TenantOption
from memdream.cli.output import emit

if TYPE_CHECKING:
    from memdream.integrations.claude_settings import SettingsChange

hooks = command_group(
    "hooks", "Connect an agent to the memory: Claude Code hooks that queue transcripts and start sessions "
             "with the plan and the project's cards.")

AgentArgument = Annotated[str, typer.Argument(metavar="AGENT", help="The agent: claude-code.")]
ProjectFlag = Annotated[bool, typer.Option(
    "--project", help="The project's .claude/settings.json (the git work tree of the current folder, else the "
                      "folder). The default.")]
UserFlag = Annotated[bool, typer.Option("--user", help="Your ~/.claude/settings.json (every project).")]


def _scope(project: bool, user: bool) -> str:
    from memdream.errors import UsageError
    from memdream.integrations.claude_settings import PROJECT_SCOPE, USER_SCOPE

    if project and user:
        raise UsageError("choose one of --project and --user")
    return USER_SCOPE if user else PROJECT_SCOPE


@hooks.command("install")
def install(
    agent: AgentArgument,
    project: ProjectFlag = False,
    user: UserFlag = False,
    print_only: Annotated[bool, typer.Option(
        "--print", help="Print the settings snippet and the file it belongs in; write nothing.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: FormatOption = DataFormat.text,
) -> None:
    """Add memdream's hooks to Claude Code's settings: SessionEnd and PreCompact queue the transcript
    (`memdream enqueue --from-hook`), SessionStart gives the session the plan and the project's cards
    (`memdream context --session-start`).

    Merges with what the settings hold (other hooks, permissions, every key and its order are kept);
    installing twice is installing once. Commands name the memory (--memory) when a hook run in the
    project would not find it by itself, and a tenant's memory by its tenant (--tenant). An invalid
    settings.json is left untouched (exit 1).
    """
    from memdream.integrations import claude_settings as settings
    from memdream.memory.locate import find_memory_root, requested_tenant

    settings.check_agent(agent)
    scope = _scope(project, user)
    cwd = Path.cwd()
    path = settings.settings_path(scope, cwd)
    root = find_memory_root(memory, tenant=tenant)
    target = settings.hook_target(root, scope, cwd, requested_tenant(tenant) if memory is None else None)
    change = settings.install(path, settings.hook_entries(target), write=not print_only)
    emit(change, output, _render_snippet if print_only else _render)


@hooks.command("uninstall")
def uninstall(
    agent: AgentArgument,
    project: ProjectFlag = False,
    user: UserFlag = False,
    output: FormatOption = DataFormat.text,
) -> None:
    """Remove memdream's hooks from Claude Code's settings; every other hook and setting stays."""
    from memdream.integrations import claude_settings as settings

    settings.check_agent(agent)
    path = settings.settings_path(_scope(project, user), Path.cwd())
    emit(settings.uninstall(path), output, _render)


def _render_snippet(change: SettingsChange) -> None:
    import json

    sys.stdout.write(f"# merge into {change.path}\n{json.dumps(change.snippet, indent=2, ensure_ascii=False)}\n")


def _render(change: SettingsChange) -> None:
    events = ", ".join(entry.event for entry in change.entries)
    if change.action == "install":
        line = f"installed memdream's hooks ({events})" if change.changed else "memdream's hooks already installed"
    else:
        line = f"removed memdream's hooks ({events})" if change.changed else "no memdream hooks to remove"
    sys.stdout.write(f"{change.path}: {line}\n")
