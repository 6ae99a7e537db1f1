"""The project's stack, as its manifests show it: what a developer writes first into CLAUDE.md.

When the agent reads a manifest whole (``package.json``, ``Cargo.toml``, ``pyproject.toml``,
``go.mod``, a compose file) with a file-reading tool or ``cat``, the tool's output is an observation
of what the project is made of: its language, its module system, its dependencies with the versions
it pins, the services it runs. One fact per project and manifest file (key (project, ``stack of
package.json``)), its value a short line; the newest reading wins, so an upgrade supersedes the old
card with its chain.

A package.json also says how to build, test, lint and run the project: its scripts with a name that
says so become a second fact (``scripts of package.json``: ``npm run build``, ``npm test``, in the
runner its ``packageManager`` names).

Only a reading of the whole file counts: a ``grep``, a ``head -5`` or a file cut at the tool's
output limit shows part of it, and a partial list of dependencies would be a wrong memory. Nor does
a manifest of something else: one under ``node_modules``, ``vendor``, ``target`` or a virtualenv
describes a dependency, not the project; one more than a folder below the project's top describes a
part of it (or another checkout inside it); a workspace member's, or a workspace of one crate, says
less than the crate's own.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from typing import Any

import tomllib

from memdream.dream.extractors._events import calls_by_id, piece, scope_tags, session_project, trusted
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey

NAME = "manifests"
UNIT = "session"
MAX_DEPENDENCIES = 12  # per list: the line stays short enough to be resident in a recall
MAX_DEPTH = 1  # folders below the project's top: package.json, todo-app/package.json
# Claude Code's Read shows each line as "   12→text"; Codex's exec output starts after "Output:".
_NUMBERED = re.compile(r"^\s*\d+→", re.MULTILINE)
_EXEC_HEADER = re.compile(r"\A(?:.*\n)*?Output:\n", re.MULTILINE)
_REMINDER = re.compile(r"\n*<system-reminder>.*", re.DOTALL)
_FOREIGN = re.compile(r"(?:^|/)(?:node_modules|vendor|target|\.venv|venv|site-packages|dist|build)/")
_READERS = frozenset({"cat", "bat", "type"})
# Tools that read a file and name it in their arguments (Claude Code's Read, aider's /read, MCP file readers).
_READ_TOOLS = frozenset({"read", "read_file", "view", "readfile", "open_file"})


def _package_json(text: str) -> str | None:
    data = json.loads(text)
    if not isinstance(data, dict):
        return None
    parts = []
    if data.get("type") == "module":
        parts.append("ES modules")
    for field, label in (("dependencies", "dependencies"), ("devDependencies", "dev dependencies")):
        listed = _listed({name: version for name, version in (data.get(field) or {}).items()
                          if not name.startswith("@types/")})
        if listed:
            parts.append(f"{label} {listed}")
    return "; ".join(parts) or None


# The scripts whose names say what they are for, in the order a developer reads them.
SCRIPT_PURPOSES = ("build", "dev", "start", "test", "test:unit", "test:integration", "test:e2e", "e2e", "lint",
                   "format", "fmt", "typecheck", "type-check", "check", "ci")
_BUILT_IN_SCRIPTS = frozenset({"test", "start"})  # `npm test`, not `npm run test`


def package_scripts(text: str) -> str | None:
    """How a package.json says to build, test, lint, run: its scripts with a name that says so, as
    the commands to type (``npm run build``, ``npm test``; the runner its ``packageManager`` names)."""
    data = json.loads(text)
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return None
    manager = str(data.get("packageManager") or "npm").split("@", 1)[0] or "npm"
    found = [(f"{manager} {name}" if name in _BUILT_IN_SCRIPTS else f"{manager} run {name}")
             for name in SCRIPT_PURPOSES if isinstance(scripts.get(name), str)]
    return ", ".join(f"`{command}`" for command in found) or None


def _cargo_toml(text: str) -> str | None:
    data = tomllib.loads(text)
    package, workspace = data.get("package") or {}, data.get("workspace") or {}
    if any(isinstance(value, dict) and value.get("workspace") for value in package.values()):
        return None  # a workspace member: the workspace's manifest says what the project is
    parts = []
    members = workspace.get("members") or []
    if len(members) == 1:
        return None  # a workspace of one crate: that crate's own manifest says what the project is
    if members:
        shown = ", ".join(members[:6]) + (", …" if len(members) > 6 else "")
        parts.append(f"a Rust workspace of {_count(len(members), 'crate')} ({shown})")
    elif package.get("name"):
        edition = package.get("edition")
        parts.append(f"the Rust crate {package['name']}" + (f" (edition {edition})" if isinstance(edition, str)
                                                            else ""))
    listed = _listed({name: spec if isinstance(spec, str) else (spec or {}).get("version", "")
                      for name, spec in (data.get("dependencies") or {}).items()
                      if not (isinstance(spec, dict) and "path" in spec)})
    if listed:
        parts.append(f"dependencies {listed}")
    return "; ".join(parts) or None


def _pyproject_toml(text: str) -> str | None:
    data = tomllib.loads(text)
    project = data.get("project") or data.get("tool", {}).get("poetry") or {}
    parts = []
    if project.get("name"):
        python = project.get("requires-python") or (project.get("dependencies") or {}).get("python")
        parts.append(f"the Python package {project['name']}" + (f" (Python {python})" if isinstance(python, str)
                                                                else ""))
    dependencies = project.get("dependencies") or []
    if isinstance(dependencies, dict):  # poetry: name -> version
        dependencies = [name for name in dependencies if name != "python"]
    listed = ", ".join(re.split(r"[\s;\[]", str(spec), maxsplit=1)[0] for spec in dependencies[:MAX_DEPENDENCIES])
    if listed:
        parts.append(f"dependencies {listed}" + (", …" if len(dependencies) > MAX_DEPENDENCIES else ""))
    tools = [name for name in ("pytest", "ruff", "mypy", "black", "hatch", "poetry") if name in data.get("tool", {})]
    if tools:
        parts.append(f"configures {', '.join(tools)}")
    return "; ".join(parts) or None


def _go_mod(text: str) -> str | None:
    module = re.search(r"^module\s+(\S+)", text, re.MULTILINE)
    version = re.search(r"^go\s+(\S+)", text, re.MULTILINE)
    if not module:
        return None
    return f"the Go module {module.group(1)}" + (f" (Go {version.group(1)})" if version else "")


def _compose(text: str) -> str | None:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    services = (data or {}).get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        return None
    shown = []
    for name, service in list(services.items())[:MAX_DEPENDENCIES]:
        image = (service or {}).get("image") if isinstance(service, dict) else None
        shown.append(f"{name} ({str(image).split('@')[0]})" if image else str(name))
    more = ", …" if len(services) > MAX_DEPENDENCIES else ""
    return f"services {', '.join(shown)}{more}"


def _listed(versions: dict[str, Any]) -> str:
    shown = [f"{name} {version}".strip() if isinstance(version, str) else name
             for name, version in list(versions.items())[:MAX_DEPENDENCIES]]
    return ", ".join(shown) + (", …" if len(versions) > MAX_DEPENDENCIES else "")


# Manifest file name -> what its text says about the project (None: nothing worth a line).
READERS: dict[str, Callable[[str], str | None]] = {
    "package.json": _package_json, "Cargo.toml": _cargo_toml, "pyproject.toml": _pyproject_toml,
    "go.mod": _go_mod, "docker-compose.yml": _compose, "docker-compose.yaml": _compose,
    "compose.yml": _compose, "compose.yaml": _compose,
}


def read_path(call: dict[str, Any]) -> tuple[str, int | None] | None:
    """The one file a call shows from its first line, and the most lines it can show (None: all of it):
    a reading tool's path (without an offset), ``cat FILE``, ``sed -n '1,Np' FILE`` or ``head -n N
    FILE``; None for anything that shows another part of a file, or several files."""
    args: dict[str, Any] = call["args"] if isinstance(call.get("args"), dict) else {}
    tool = str(call.get("tool") or "").lower()
    if tool in _READ_TOOLS:
        if args.get("offset") or args.get("view_range"):
            return None
        path = args.get("file_path") or args.get("path") or args.get("filename")
        limit = args.get("limit")
        return (path, limit if isinstance(limit, int) else None) if isinstance(path, str) else None
    command = args.get("command") if args.get("command") is not None else args.get("cmd")
    if isinstance(command, list):  # Codex: ["bash", "-lc", "cat Cargo.toml"]
        command = command[2] if len(command) == 3 and command[1] in ("-lc", "-c") else None
    return _reading(command) if isinstance(command, str) else None


def _result_reading(result: dict[str, Any], calls: dict[str, dict[str, Any]]) -> tuple[str, int | None] | None:
    """What a tool result shows: by its call, else by the command ingest copied onto it (the output of
    Codex's ``write_stdin`` is that of the ``exec_command`` it continues: ``cat package.json``)."""
    call = calls.get(str(result.get("call_id") or ""))
    reading = read_path(call) if call is not None else None
    args = result.get("args")
    if reading is None and isinstance(args, dict) and isinstance(args.get("command"), str) and args["command"]:
        return _reading(args["command"])
    return reading


def _reading(command: str) -> tuple[str, int | None] | None:
    if any(mark in command for mark in "|;&><`$"):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 2 and words[0] in _READERS:
        return words[1], None
    head = re.fullmatch(r"(?:-n\s*)?-?(\d+)", " ".join(words[1:-1])) if words[:1] == ["head"] else None
    if head and len(words) in (3, 4):
        return words[-1], int(head.group(1))
    if len(words) == 4 and words[:2] == ["sed", "-n"] and (lines := re.fullmatch(r"1,(\d+)p", words[2])):
        return words[3], int(lines.group(1))
    return None


def shown_text(result: dict[str, Any]) -> str:
    """The file as the tool showed it: without line numbers, exec headers and harness reminders."""
    text = str(result.get("text") or "")
    text = _REMINDER.sub("", text)
    if text.startswith("Chunk ID:") or text.startswith("Exit code:"):
        text = _EXEC_HEADER.sub("", text, count=1)
    return _NUMBERED.sub("", text) if _NUMBERED.match(text) else text


def stack_line(path: str, text: str) -> str | None:
    """What a manifest says, or None when the path is no project manifest or the text is not all of it
    (a cut file does not parse)."""
    name = path.rsplit("/", 1)[-1]
    reader = READERS.get(name)
    if reader is None or _FOREIGN.search(path):
        return None
    try:
        return reader(text)
    except (ValueError, TypeError, AttributeError):  # a cut file (TOML and JSON errors are ValueErrors)
        return None


def _where(path: str, project: str) -> str | None:
    """The manifest as a developer names it: as written when relative (to the folder the agent worked
    in), else relative to the project folder; None for an absolute path outside it (another project's)."""
    if not path.startswith(("/", "~")):
        return path.removeprefix("./")
    marker = f"/{project}/".lower()
    at = path.lower().rfind(marker)
    return path[at + len(marker):] if at >= 0 else None


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    events = episode.events
    project = session_project(events)
    if project is None:
        return
    calls = calls_by_id(events)
    for event in events:
        if event["kind"] != "tool_result" or event.get("ok") is False or not trusted(event):
            continue
        reading = _result_reading(event, calls)
        if reading is None:
            continue
        path, limit = reading
        shown = shown_text(event)
        line = stack_line(path, shown) if limit is None or len(shown.splitlines()) < limit else None
        if not line:
            continue
        where = _where(path, project)
        if where is None or where.count("/") > MAX_DEPTH:
            continue  # another project's, or deeper down a part of this one (or another checkout in it)
        yield _fact(event, project, f"stack of {where}", line, f"In {project}, {where} shows: {line}.", "stack")
        scripts = package_scripts(shown) if where.rsplit("/", 1)[-1] == "package.json" else None
        if scripts:
            folder = f" (in {where.rsplit('/', 1)[0]})" if "/" in where else ""
            yield _fact(event, project, f"scripts of {where}", scripts,
                        f"In {project}, {where}'s scripts{folder}: {scripts}.", "scripts")


def _fact(event: dict[str, Any], project: str, attribute: str, value: str, text: str, tag: str) -> Candidate:
    evidence = piece(event, value, kind="observation", layer="fact", statement=text, scope=project,
                     tags=(*scope_tags(project), tag), source=NAME)
    return Candidate(FactKey.of(project, attribute), (project, attribute), evidence)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")
