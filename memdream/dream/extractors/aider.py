"""aider: the model a project runs it with, and the slash commands it does not have.

Every aider run opens with a banner (:mod:`memdream.ingest.adapters.aider` keeps it as a ``note`` of
actor ``system``): the command line that started it (``/opt/homebrew/bin/aider --model gpt-4.1``)
and the model it chose (``Main model: gpt-4.1 with diff edit format``, ``Model: …`` when the weak
model is the same one, ``Weak model: gpt-4.1-mini``, ``Editor model: …`` in architect mode).

- **The model**: one fact per project, key (project, ``aider model``), its value the main model's
  name. aider prints what it runs with, so a banner is an observation, and the newest session's
  supersedes an older one's model. Only a banner that names the model counts (a model line, or a
  ``--model`` flag on the command line): a run that stopped before it (an upgrade prompt) says nothing.
  A ``/model`` switch inside a session is not the banner: a one-off, not what the project runs with.
- **Commands aider does not have**: the user types ``/grep x`` and aider answers ``Invalid command:
  /grep``. One lesson about aider itself, key (aider, ``invalid commands``), scope global: the
  commands exist or not whatever the project. When the next thing the user typed is a command aider
  took with the same arguments (``/bye``, then ``/exit``) or a shell command running the same
  program on them (``/mv a b``, then ``/run git mv a b``), that is the fix, and the lesson says it.
  Its value lists every such command memory knows, sorted, with the fixes, so that sessions saying
  the same thing are the same value (more evidence) and a new command is a new, longer list that
  supersedes the old; a command that aider took later than it refused it drops out. Like a lesson
  from error → fix, it needs ``dream.learn.lesson_min_sessions`` sessions
  (:mod:`memdream.dream.admission`): one slip of the fingers is no rule.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memdream.dream.extractors._events import GLOBAL_SCOPE, piece, scope_tags, session_project, trusted
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey

NAME = "aider"
UNIT = "session"
TOOL = "aider"
MODEL_ATTRIBUTE = "aider model"
COMMANDS_ATTRIBUTE = "invalid commands"
COMMANDS_KEY = FactKey.of(TOOL, COMMANDS_ATTRIBUTE)

_PROGRAMS = frozenset({"aider", "aider.exe"})
_MODULE = re.compile(r"^-m aider(?:\s|$)")  # python -m aider
_MODEL_LINE = re.compile(r"^(?:Main model|Model): (?P<name>\S+) with (?P<format>[\w-]+) edit format\b")
_EDITOR_LINE = re.compile(r"^Editor model: (?P<name>\S+) with (?P<format>[\w-]+) edit format\b")
_WEAK_LINE = re.compile(r"^Weak model: (?P<name>\S+)\s*$")
_TYPED = re.compile(r"^/(?P<name>[a-z][\w-]*)(?:\s+(?P<args>.*))?$", re.DOTALL | re.IGNORECASE)
_INVALID = re.compile(r"^Invalid command: (?P<name>/\S+)\s*$")
_AMBIGUOUS = re.compile(r"^Ambiguous command: ")
_COMMAND_NAME = re.compile(r"/[^\s,;]+")
_STATEMENT = re.compile(r"^aider has no (?P<names>.*?) command\b(?P<rest>.*)$", re.DOTALL)  # Commands.statement
_STATED_FIX = re.compile(r"`([^`]+)` instead of `(/[^`\s]+)`")


# -- the model ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Banner:
    """What an aider run's banner says about the model: the flag as typed, and what aider chose."""

    flag: str | None  # the --model value on the command line
    model: str | None  # the main model aider names
    edit_format: str | None = None
    weak: str | None = None
    editor: str | None = None

    @property
    def value(self) -> str | None:
        return self.model or self.flag

    def details(self) -> str:
        parts = []
        if self.flag and self.model and self.model != self.flag:
            parts.append(self.model)
        if self.edit_format:
            parts.append(f"{self.edit_format} edit format")
        if self.editor:
            parts.append(f"editor model {self.editor}")
        if self.weak and self.weak != self.model:
            parts.append(f"weak model {self.weak}")
        return "; ".join(parts)


def banner(text: str) -> Banner | None:
    """The model a banner names, or None when it names none (no model line, no --model flag)."""
    flag = model = edit_format = weak = editor = None
    for line in (line.strip() for line in text.splitlines()):
        words = _launch_arguments(line)
        if words is not None:
            flag = _model_flag(words) or flag
        elif found := _MODEL_LINE.match(line):
            model, edit_format = found.group("name"), found.group("format")
        elif found := _EDITOR_LINE.match(line):
            editor = found.group("name")
        elif found := _WEAK_LINE.match(line):
            weak = found.group("name")
    if model is None and flag is None:
        return None
    return Banner(flag, model, edit_format, weak, editor)


def _launch_arguments(line: str) -> list[str] | None:
    """The arguments of the command line that started aider (``/usr/local/bin/aider --model x``,
    ``python -m aider …``), or None for any other line."""
    program, _, rest = line.partition(" ")  # a Windows path keeps its backslashes
    if program.replace("\\", "/").rsplit("/", 1)[-1].lower() not in _PROGRAMS:
        module = _MODULE.match(rest)
        if module is None:
            return None
        rest = rest[module.end():]
    try:
        return shlex.split(rest)
    except ValueError:
        return rest.split()


def _model_flag(words: list[str]) -> str | None:
    for position, word in enumerate(words):
        if word == "--model" and position + 1 < len(words):
            return words[position + 1]
        if word.startswith("--model="):
            return word.split("=", 1)[1] or None
    return None


def _is_banner_note(event: dict[str, Any]) -> bool:
    return (event["kind"] == "note" and event.get("actor") == "system" and isinstance(event.get("text"), str)
            and _TYPED.match(event["text"].strip()) is None and trusted(event))


def _model(events: list[dict[str, Any]], project: str) -> Iterator[Candidate]:
    """The session's newest banner that names the model, as the project's aider model."""
    found = [(event, seen) for event in events if _is_banner_note(event) and (seen := banner(event["text"]))]
    if not found:
        return
    event, seen = found[-1]
    value = seen.value
    assert value is not None
    shown = f"`--model {seen.flag}`" if seen.flag else value
    details = seen.details()
    text = f"In {project}, aider runs with {shown}" + (f" ({details})." if details else ".")
    evidence = piece(event, value, kind="observation", layer="fact", statement=text, scope=project,
                     tags=(*scope_tags(project), TOOL), source=NAME)
    yield Candidate(FactKey.of(project, MODEL_ATTRIBUTE), (project, MODEL_ATTRIBUTE), evidence)


# -- commands aider does not have -----------------------------------------------------------------------

@dataclass
class Commands:
    """What memory knows of the commands aider refused: each with when it last refused and took it,
    the fix that followed, and the newest refusal's line."""

    refused: dict[str, str] = field(default_factory=dict)  # "/grep" -> ts of the newest refusal
    taken: dict[str, str] = field(default_factory=dict)  # "/grep" -> ts of the newest use aider took
    fixes: dict[str, str] = field(default_factory=dict)  # "/bye" -> "/exit"
    error: tuple[str, str] | None = None  # (ts, "Invalid command: /bye"), the newest refusal
    evidence: list[dict[str, Any]] = field(default_factory=list)  # the events that show it

    def refuse(self, name: str, event: dict[str, Any], line: str) -> None:
        self.refused[name] = max(self.refused.get(name, ""), event["ts"])
        if self.error is None or event["ts"] >= self.error[0]:
            self.error = (event["ts"], line)
        self.evidence.append(event)

    def take(self, name: str, ts: str) -> None:
        self.taken[name] = max(self.taken.get(name, ""), ts)

    def merge(self, other: Commands) -> None:
        for name, ts in other.refused.items():
            self.refused[name] = max(self.refused.get(name, ""), ts)
        for name, ts in other.taken.items():
            self.take(name, ts)
        self.fixes.update(other.fixes)
        if other.error is not None and (self.error is None or other.error[0] >= self.error[0]):
            self.error = other.error

    def current(self) -> list[str]:
        """The commands aider refused and has not taken since, sorted."""
        return sorted(name for name, ts in self.refused.items() if self.taken.get(name, "") <= ts)

    def value(self) -> str:
        names = self.current()
        fixes = [f"{self.fixes[name]} for {name}" for name in names if name in self.fixes]
        return ", ".join(names) + (f"; {', '.join(fixes)}" if fixes else "")

    def statement(self) -> str:
        names = self.current()
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        said = f"aider has no {listed} command" + (f" (`{self.error[1]}`)" if self.error else "")
        fixes = [f"`{self.fixes[name]}` instead of `{name}`" for name in names if name in self.fixes]
        return said + (f"; use {' and '.join(fixes)}." if fixes else ".")


def from_card(value: str | None, statement: str | None = None) -> Commands:
    """What an earlier dream knew, older than any event: a lesson's value (:meth:`Commands.value`)
    and its statement read back. Both: a longer list can be near enough to the old one to count as
    the same value, and then only the statement, the newest evidence's, has the new command."""
    known = Commands()
    names, _, fixes = (value or "").partition("; ")
    for name in _COMMAND_NAME.findall(names):
        known.refused[name] = ""
    for part in fixes.split(", ") if fixes else ():
        fix, _, name = part.rpartition(" for ")
        if fix and name in known.refused:
            known.fixes[name] = fix
    said = _STATEMENT.match(statement or "")
    if said is not None:
        for name in _COMMAND_NAME.findall(said.group("names")):
            known.refused[name] = ""
        for fix, name in _STATED_FIX.findall(said.group("rest")):
            known.fixes[name] = fix
    return known


@dataclass(frozen=True)
class _Typed:
    """A command the user typed, and what aider answered."""

    event: dict[str, Any]
    name: str  # "/grep"
    args: str
    refused: str | None  # aider's "Invalid command: /grep" line
    refused_name: str  # the command it names: "/grep"
    ambiguous: bool


def _typed(events: list[dict[str, Any]], position: int) -> _Typed | None:
    event = events[position]
    if event["kind"] != "note" or event.get("actor") != "system" or not isinstance(event.get("text"), str):
        return None
    found = _TYPED.match(event["text"].strip())
    if found is None:
        return None
    answer = events[position + 1] if position + 1 < len(events) else None
    first = ""
    if answer is not None and answer["kind"] == "tool_result" and isinstance(answer.get("text"), str):
        first = answer["text"].strip().split("\n", 1)[0].strip()
    refused = _INVALID.match(first)
    args = " ".join((found.group("args") or "").split())
    return _Typed(answer if refused and answer is not None else event, f"/{found.group('name').lower()}", args,
                  refused.group(0) if refused else None, refused.group("name").lower() if refused else "",
                  _AMBIGUOUS.match(first) is not None)


def _shell_fix(event: dict[str, Any], waiting: list[_Typed]) -> str | None:
    """``/run mv …`` when a shell command the user ran does the job of the refused ``/mv a b``: it
    runs that program on the same arguments."""
    if event["kind"] != "tool_call" or event.get("actor") != "user" or event.get("tool") != "shell":
        return None
    command = (event.get("args") or {}).get("command")
    if not isinstance(command, str) or not waiting:
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    program = waiting[0].name[1:]
    if program not in (word.rsplit("/", 1)[-1] for word in words):
        return None
    if not all(arg in words for arg in waiting[0].args.split()):
        return None
    return f"/run {program} …" if len(words) > 1 else f"/run {program}"


def observe(events: list[dict[str, Any]]) -> Commands:
    """The commands aider refused in one session, and what the user typed next that did the job."""
    seen = Commands()
    waiting: list[_Typed] = []  # refused commands in a row, with the same arguments: a retry may fix them
    for position, event in enumerate(events):
        if not trusted(event):
            continue
        typed = _typed(events, position)
        if typed is not None:
            if typed.refused is not None:
                seen.refuse(typed.refused_name, typed.event, typed.refused)
                same = bool(waiting) and waiting[0].args == typed.args
                waiting = [*waiting, typed] if same else [typed]
            elif typed.ambiguous:
                waiting = []
            else:
                seen.take(typed.name, event["ts"])
                if waiting and waiting[0].args == typed.args:
                    for each in waiting:
                        seen.fixes[each.name] = typed.name
                    seen.evidence.append(event)
                waiting = []
            continue
        fix = _shell_fix(event, waiting)
        if fix is not None:
            for each in waiting:
                seen.fixes[each.name] = fix
            seen.evidence.append(event)
            waiting = []
        elif event["kind"] in ("message", "tool_call") and event.get("actor", "user") == "user":
            waiting = []  # the user went on to something else
    return seen


def known(ctx: DreamContext) -> Commands:
    """What memory knew before this run (the lesson's active card, or its pending evidence), and
    what every session of this run shows: one list for every session's evidence, whatever the
    order in which the sessions are read."""
    cached: Commands | None = ctx.memo.get(NAME)
    if cached is not None:
        return cached
    found = Commands()
    for card in ctx.cards_by_key().get(COMMANDS_KEY, []):
        found.merge(from_card(card.value, card.statement))
    stats = ctx.key_stats.get(COMMANDS_KEY)
    for pending in stats.pending if stats is not None else []:
        found.merge(from_card(pending.value, pending.statement))
    sessions: dict[str, list[dict[str, Any]]] = {}
    for episode in ctx.episodes:
        if episode.selected:
            sessions.setdefault(episode.session, []).extend(episode.events)
    for events in sessions.values():
        found.merge(observe(events))
    ctx.memo[NAME] = found
    return found


def _commands(events: list[dict[str, Any]], ctx: DreamContext) -> Iterator[Candidate]:
    seen = observe(events)
    if not seen.refused:
        return
    everything = Commands()
    everything.merge(known(ctx))
    everything.merge(seen)  # the session itself, should the run's episodes not hold it
    if not everything.current():
        return
    value, text = everything.value(), everything.statement()
    for event in seen.evidence:
        evidence = piece(event, value, kind="observation", layer="lesson", statement=text, scope=GLOBAL_SCOPE,
                         tags=(TOOL,), source=NAME)
        yield Candidate(COMMANDS_KEY, (TOOL, COMMANDS_ATTRIBUTE), evidence)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    events = episode.events
    project = session_project(events)
    if project is not None:
        yield from _model(events, project)
    yield from _commands(events, ctx)
