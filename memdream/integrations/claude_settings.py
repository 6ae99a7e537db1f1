"""memdream's entries in a Claude Code settings.json: installed and removed without touching the rest.

Claude Code reads hooks from ``~/.claude/settings.json`` (the user's) and ``<project>/.claude/settings.json``
(a project's, often committed), in this shape::

    {"hooks": {"SessionEnd": [{"matcher": "...", "hooks": [{"type": "command", "command": "...", "timeout": 5}]}]}}

memdream adds one group per event: SessionEnd and PreCompact queue the transcript (``memdream enqueue
--from-hook``, which returns at once), SessionStart prints the memory the session should start with
(``memdream context --session-start``). Everything else in the file (other hooks, permissions, any key,
their order) is kept; installing twice is installing once; uninstall removes only memdream's entries,
recognised by their command (memdream's executable running ``enqueue`` or ``context``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.errors import InvalidInput, UsageError

AGENT = "claude-code"
USER_SCOPE, PROJECT_SCOPE = "user", "project"
SETTINGS_FOLDER = ".claude"
SETTINGS_FILE = "settings.json"
# Claude Code's timeouts are seconds. Enqueue appends one line (tens of ms); SessionStart reads a warm
# index (a few hundred ms): the margins cover a cold start on a loaded machine, and a hook that hangs
# must not hold the session.
ENQUEUE_TIMEOUT = 10
CONTEXT_TIMEOUT = 10
# The event -> memdream's subcommand for it (the ones uninstall recognises as memdream's).
EVENT_COMMANDS: dict[str, tuple[str, ...]] = {
    "SessionStart": ("context", "--session-start"),
    "SessionEnd": ("enqueue", "--from-hook"),
    "PreCompact": ("enqueue", "--from-hook"),
}
OUR_SUBCOMMANDS = frozenset(command[0] for command in EVENT_COMMANDS.values())
TIMEOUTS = {"context": CONTEXT_TIMEOUT, "enqueue": ENQUEUE_TIMEOUT}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")  # a shell variable set for one command


@dataclass(frozen=True)
class HookEntry:
    """One memdream hook: the event it runs on and its command."""

    event: str
    command: str
    timeout: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": "command", "command": self.command, "timeout": self.timeout}


@dataclass
class SettingsChange:
    """What ``hooks install`` / ``hooks uninstall`` did (or, with --print, would write)."""

    path: Path
    action: str  # install or uninstall
    changed: bool
    entries: list[HookEntry] = field(default_factory=list)
    snippet: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"agent": AGENT, "action": self.action, "path": str(self.path), "changed": self.changed,
                "events": [entry.event for entry in self.entries], "snippet": self.snippet}


# -- where -------------------------------------------------------------------------------------------
def settings_path(scope: str, cwd: Path, home: Path | None = None) -> Path:
    """``~/.claude/settings.json`` (user) or ``<project>/.claude/settings.json``, the project being the
    git work tree ``cwd`` is in, else ``cwd`` itself."""
    if scope == USER_SCOPE:
        return (home or Path.home()) / SETTINGS_FOLDER / SETTINGS_FILE
    return project_folder(cwd) / SETTINGS_FOLDER / SETTINGS_FILE


def project_folder(cwd: Path) -> Path:
    from memdream import gitops

    top = gitops.query(str(cwd), "rev-parse", "--show-toplevel")
    return Path(top) if top else cwd


# -- which command -----------------------------------------------------------------------------------
def memdream_executable() -> list[str]:
    """How a hook should run memdream: ``memdream`` when that is on PATH, else the script next to this
    Python (a virtualenv not activated in the agent's shell), else this Python with ``-m memdream``."""
    if shutil.which("memdream"):
        return ["memdream"]
    beside = Path(sys.executable).with_name("memdream")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-m", "memdream"]


@dataclass(frozen=True)
class HookTarget:
    """How the hooks' commands name their memory: the arguments after the subcommand (``--memory PATH``,
    ``--tenant NAME`` or none) and the variables set before the program (the tenant root, when only the
    installer's environment gave it)."""

    arguments: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()


def path_target(memory: Path | None) -> HookTarget:
    """``--memory`` with ``memory`` (absolute), or nothing when the hook finds the memory by itself."""
    return HookTarget(("--memory", str(memory)) if memory is not None else ())


def hook_entries(target: HookTarget, executable: list[str] | None = None) -> list[HookEntry]:
    """memdream's hooks, each naming the memory as ``target`` says."""
    program = executable or memdream_executable()
    prefix = "".join(f"{name}={shlex.quote(value)} " for name, value in target.environment)
    return [HookEntry(event, prefix + shlex.join([*program, *subcommand, *target.arguments]),
                      TIMEOUTS[subcommand[0]])
            for event, subcommand in EVENT_COMMANDS.items()]


def is_memdream_command(command: object) -> bool:
    """Whether a hook command is one of memdream's: its executable is ``memdream`` (bare or as an
    absolute path) or ``python -m memdream``, running ``enqueue`` or ``context``."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    while words and _ASSIGNMENT.match(words[0]):  # MEMDREAM_ROOT=... memdream ... (a tenant's hooks)
        words = words[1:]
    if not words:
        return False
    first = words[0]
    if os.path.basename(first) == "memdream" and (first == "memdream" or os.path.isabs(first)):
        rest = words[1:]
    elif len(words) >= 3 and words[1:3] == ["-m", "memdream"]:
        rest = words[3:]
    else:
        return False
    return bool(rest) and rest[0] in OUR_SUBCOMMANDS


# -- reading and writing -----------------------------------------------------------------------------
def read_settings(path: Path) -> dict[str, Any]:
    """The settings as a dict in file order; an empty one when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput(f"{path}: cannot be read: {error}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as error:
        raise InvalidInput(f"{path}: not valid JSON ({error}); fix it by hand, nothing was changed") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: settings must be a JSON object; nothing was changed")
    hooks = data.get("hooks")
    if hooks is not None and not _hooks_shape_ok(hooks):
        raise InvalidInput(f"{path}: \"hooks\" is not in Claude Code's shape "
                           "({event: [{matcher?, hooks: [...]}]}); nothing was changed")
    return data


def _hooks_shape_ok(hooks: object) -> bool:
    if not isinstance(hooks, dict):
        return False
    for groups in hooks.values():
        if not isinstance(groups, list):
            return False
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks", []), list):
                return False
    return True


def render(settings: dict[str, Any]) -> str:
    """Settings as Claude Code writes them: two-space indent, unicode kept, a final newline."""
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Temp file in the same folder, then ``os.replace``: a reader sees the old file or the new one.
    The file's permissions are kept (settings may be private)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    if mode is None:  # a new file gets the usual permissions (mkstemp's are 0600)
        from memdream.yamlio import umask_mode

        mode = umask_mode()
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:  # bytes: no newline translation, the rest kept exactly
            stream.write(text.encode("utf-8"))
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# -- merging -----------------------------------------------------------------------------------------
def _ours(hook: object) -> bool:
    return isinstance(hook, dict) and is_memdream_command(hook.get("command"))


def without_memdream(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` without memdream's hooks: a group left with no hook goes, an event left with no group
    goes, and ``hooks`` goes if memdream's were all it held. Everything else keeps its place."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return dict(settings)  # a copy all the same: callers change the result and compare it with settings
    kept_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept_groups = []
        for group in groups:
            inner = group.get("hooks", [])
            remaining = [hook for hook in inner if not _ours(hook)]
            if len(remaining) == len(inner):
                kept_groups.append(group)
            elif remaining:
                kept_groups.append({**group, "hooks": remaining})
        if kept_groups or not groups:
            kept_hooks[event] = kept_groups
    result = dict(settings)
    if kept_hooks or not hooks:
        result["hooks"] = kept_hooks
    else:
        del result["hooks"]
    return result


def with_memdream(settings: dict[str, Any], entries: list[HookEntry]) -> dict[str, Any]:
    """``settings`` with exactly memdream's ``entries``: an event that already holds its entry as the
    only memdream hook is left as it is (installing twice is installing once); otherwise memdream's old
    hooks of the event are dropped and one group with the entry is appended. ``settings`` itself is
    never changed: ``install`` tells whether to write by comparing the two."""
    found = settings.get("hooks")
    current: dict[str, Any] = found if isinstance(found, dict) else {}
    if all(_installed(current.get(entry.event, []), entry) for entry in entries) and not _stray(current, entries):
        return settings
    result = without_memdream(settings)
    hooks = dict(result.get("hooks", {}))
    for entry in entries:
        hooks[entry.event] = [*hooks.get(entry.event, []), {"hooks": [entry.to_dict()]}]
    result["hooks"] = hooks
    return result


def _installed(groups: list[Any], entry: HookEntry) -> bool:
    ours = [hook for group in groups for hook in group.get("hooks", []) if _ours(hook)]
    return ours == [entry.to_dict()]


def _stray(hooks: dict[str, Any], entries: list[HookEntry]) -> bool:
    """memdream hooks under an event memdream no longer installs on."""
    events = {entry.event for entry in entries}
    return any(_ours(hook) for event, groups in hooks.items() if event not in events
               for group in groups for hook in group.get("hooks", []))


def snippet(entries: list[HookEntry]) -> dict[str, Any]:
    """The settings fragment memdream's hooks make, for --print and the docs."""
    return {"hooks": {entry.event: [{"hooks": [entry.to_dict()]}] for entry in entries}}


# -- the two operations ------------------------------------------------------------------------------
def install(path: Path, entries: list[HookEntry], write: bool = True) -> SettingsChange:
    """Merge memdream's ``entries`` into the settings file at ``path`` (created if missing); unchanged
    settings are not rewritten (not even their mtime)."""
    settings = read_settings(path)
    merged = with_memdream(settings, entries)
    changed = merged != settings or not path.exists()
    if changed and write:
        write_atomically(path, render(merged))
    return SettingsChange(path=path, action="install", changed=changed, entries=entries, snippet=snippet(entries))


def uninstall(path: Path) -> SettingsChange:
    """Remove memdream's hooks from the settings file at ``path``; nothing else changes."""
    if not path.exists():
        return SettingsChange(path=path, action="uninstall", changed=False)
    settings = read_settings(path)
    removed = [HookEntry(event, hook["command"], int(hook.get("timeout") or 0))
               for event, groups in (settings.get("hooks") or {}).items()
               for group in groups for hook in group.get("hooks", []) if _ours(hook)]
    cleaned = without_memdream(settings)
    changed = cleaned != settings
    if changed:
        write_atomically(path, render(cleaned))
    return SettingsChange(path=path, action="uninstall", changed=changed, entries=removed)


# -- which memory the hooks name -----------------------------------------------------------------------
def memory_to_name(memory: Path, scope: str, project: Path) -> Path | None:
    """The memory to name with ``--memory`` in the commands, or None when the hook finds it by itself:
    a project's hooks run in the project, where the ancestor search finds a memory at or above it
    (Claude Code does not pass the installer's MEMDREAM_MEMORY); a user's hooks run in every project,
    so they always name it."""
    from memdream.memory.paths import CONFIG_FILE

    if scope == USER_SCOPE:
        return memory
    here = project.resolve()
    found = next((folder for folder in (here, *here.parents) if (folder / CONFIG_FILE).is_file()), None)
    return None if found == memory.resolve() else memory


def hook_target(memory: Path, scope: str, cwd: Path, tenant: str | None) -> HookTarget:
    """How the hooks name the memory at ``memory``: a tenant's by its tenant, another by its path where a
    hook run from the agent's folder would not find it."""
    if tenant is not None:
        return tenant_target(tenant)
    return path_target(memory_to_name(memory, scope, project_folder(cwd)))


def tenant_target(tenant: str) -> HookTarget:
    """The hooks of a tenant's memory name the tenant, so that each run checks the folder is still that
    tenant's; the root goes along when only this process's MEMDREAM_ROOT gave it (Claude Code runs hooks
    in its own environment), and stays out when the user settings file gives it (the hooks read it too)."""
    from memdream.memory.tenants import ROOT_ENV, tenant_root

    root = tenant_root()
    environment = ((ROOT_ENV, str(root.path)),) if root.from_environment else ()
    return HookTarget(("--tenant", tenant), environment)


def check_agent(agent: str) -> None:
    if agent != AGENT:
        raise UsageError(f"unknown agent {agent!r}: hooks are for claude-code (Codex: see docs/claude-code.md)")
