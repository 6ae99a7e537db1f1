"""Outdated file views: a raw event that shows a file's content, when the file changed after it.

An agent reads a file (``Read Justfile``, ``cat package.json``, ``sed -n '1,80p' app.py``), later
rewrites or edits it, and reads or writes it again. The first view still matches every question about
the old content ("how do I run the tests" finds ``check: uv run pytest``), while the file now says
something else. Recall withholds such a view, as it withholds a value a card replaced
(docs/recall.md, "Outdated file views"), when both hold:

- the file changed after the view (a ``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit``; a patch that
  updates, adds, moves or deletes it; ``sed -i``, ``rm``, ``mv`` or ``git mv``/``git rm`` of it), and
- its content after that change is in the log (a later ``Read``, ``cat`` or ``Write`` of it), or the
  change deleted it and nothing brought it back: the current state is known, so the old view only misleads.

A change with no later view keeps the old view: an edit changes a few lines, and the rest of the old view
is still the best the log knows. Only successful tool results count (a failed edit changed nothing); a
patch is read from its call, whose result does not name its files.

"The same file" is its path: an absolute one as written (normalized), a relative one joined to the
session's working folder (the ``cwd`` its events carry, and a leading ``cd DIR &&``), or, when that is not
known, the session and the relative path (two sessions in unknown folders never share a file).
"""

from __future__ import annotations

import bisect
import posixpath
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from memdream.clock import epoch_seconds
from memdream.memory.refs import event_ref

SHOW, PARTIAL, CHANGE, DELETE = "show", "partial", "change", "delete"
# Tools whose result shows a whole file, or that write one (and so show what it now holds).
_READ_TOOLS = frozenset({"read", "read_file", "readfile", "view", "open_file"})
_WRITE_TOOLS = frozenset({"write", "create_file", "write_file"})
_EDIT_TOOLS = frozenset({"edit", "multiedit", "notebookedit", "str_replace_editor", "edit_file", "replace"})
_PATCH_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE)
_CD = re.compile(r"^\s*cd\s+(\"[^\"]*\"|'[^']*'|[^\s;&|]+)\s*&&\s*")
_COMPOUND = re.compile(r"&&|\|\||[;|<>`]|\$\(")
_PRINT_RANGE = re.compile(r"^(?:\d+|\$)?(?:,(?:\d+|\$))?p$")


class Effect(NamedTuple):
    """What one event does to one file: ``role`` is SHOW, PARTIAL, CHANGE or DELETE."""

    role: str
    path: str


def effects(event: dict[str, Any], cwd: str | None) -> list[Effect]:
    """The files ``event`` shows or changes (see the module's docstring); [] for most events."""
    kind = event.get("kind")
    if kind == "tool_call" and str(event.get("tool") or "").lower() in ("apply_patch", "applypatch"):
        return list(_patch_effects(event, cwd))
    if kind == "tool_call":
        return [effect for text in _string_args(event) if "*** Begin Patch" in text
                for effect in _patch_text_effects(text, event, cwd)]
    if kind != "tool_result" or event.get("ok") is False:
        return []
    args = event.get("args")
    command = args.get("command") if isinstance(args, dict) else None
    if not isinstance(command, str) or not command.strip():
        return []
    tool, _, rest = command.strip().partition(" ")
    name = tool.lower()
    if name in _READ_TOOLS and rest:
        return [Effect(SHOW, key(rest, cwd, event))]
    if name in _WRITE_TOOLS and rest:
        path = key(rest, cwd, event)
        return [Effect(CHANGE, path), Effect(SHOW, path)]
    if name in _EDIT_TOOLS and rest:
        return [Effect(CHANGE, key(rest, cwd, event))]
    return _shell_effects(command, cwd, event)


def key(path: str, cwd: str | None, event: dict[str, Any]) -> str:
    """The file ``path`` names, as one string (see the module's docstring)."""
    path = path.strip().strip("'\"")
    if path.startswith(("/", "~")):
        return posixpath.normpath(path)
    if cwd:
        return posixpath.normpath(posixpath.join(cwd, path))
    return f"{event.get('session', '')}:{posixpath.normpath(path)}"


def _string_args(event: dict[str, Any]) -> Iterator[str]:
    args = event.get("args")
    values = args.values() if isinstance(args, dict) else [args]
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (part for part in value if isinstance(part, str))


def _patch_effects(event: dict[str, Any], cwd: str | None) -> Iterator[Effect]:
    for text in _string_args(event):
        yield from _patch_text_effects(text, event, cwd)


def _patch_text_effects(text: str, event: dict[str, Any], cwd: str | None) -> Iterator[Effect]:
    for found in _PATCH_FILE.finditer(text):
        action, path, moved_to = found.groups()
        if moved_to:
            yield Effect(CHANGE, key(moved_to, cwd, event))
        elif action == "Delete":
            yield Effect(DELETE, key(path, cwd, event))
        else:
            yield Effect(CHANGE, key(path, cwd, event))


def _shell_effects(command: str, cwd: str | None, event: dict[str, Any]) -> list[Effect]:
    """``cat F``, ``sed -n 'A,Bp' F``, ``sed -i … F``, ``rm F…``, ``mv A B``, ``git mv|rm …``: one
    simple command (after ``cd DIR &&``), no pipe, redirection or second command."""
    moved = _CD.match(command)
    if moved:
        folder = moved.group(1).strip("'\"")
        cwd = key(folder, cwd, event) if (cwd or folder.startswith(("/", "~"))) else None
        command = command[moved.end():]
    if _COMPOUND.search(command):
        return []
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    if words[:1] == ["git"] and len(words) > 1 and words[1] in ("mv", "rm"):
        words = words[1:]
    if not words:
        return []
    program, arguments = words[0].rsplit("/", 1)[-1], words[1:]
    operands = [word for word in arguments if not word.startswith("-")]
    if any(any(mark in word for mark in "*?[") for word in operands):
        return []  # a glob: which files it named is not in the log
    if program == "cat" and len(operands) == 1 and len(arguments) == 1:
        return [Effect(SHOW, key(operands[0], cwd, event))]
    if program == "sed":
        return _sed_effects(arguments, cwd, event)
    if program == "rm" and operands:
        return [Effect(DELETE, key(word, cwd, event)) for word in operands]
    if program == "mv" and len(operands) == 2:
        return [Effect(DELETE, key(operands[0], cwd, event)), Effect(CHANGE, key(operands[1], cwd, event))]
    return []


def _sed_effects(arguments: Sequence[str], cwd: str | None, event: dict[str, Any]) -> list[Effect]:
    if any(word == "-i" or word.startswith(("-i", "--in-place")) for word in arguments):
        files = [word for word in arguments[1:] if not word.startswith("-")]
        script_given = any(word in ("-e", "--expression") for word in arguments)
        files = files if script_given else files[1:]
        return [Effect(CHANGE, key(word, cwd, event)) for word in files]
    operands = [word for word in arguments if not word.startswith("-")]
    if arguments[:1] == ["-n"] and len(operands) == 2 and _PRINT_RANGE.match(operands[0]):
        return [Effect(PARTIAL, key(operands[1], cwd, event))]
    return []


class Change(NamedTuple):
    """A change of a file: when (epoch seconds), the event (its reference) and whether it deleted it."""

    epoch: float
    ref: str
    deleted: bool


@dataclass
class FileHistory:
    """Every file's changes and the times its whole content was shown, across the raw layer: built once
    a recall process first needs it, from what each segment's index recorded."""

    changes: dict[str, list[Change]] = field(default_factory=dict)
    shown: dict[str, list[float]] = field(default_factory=dict)

    def add_change(self, path: str, change: Change) -> None:
        self.changes.setdefault(path, []).append(change)

    def add_shown(self, path: str, epoch: float) -> None:
        self.shown.setdefault(path, []).append(epoch)

    def seal(self) -> FileHistory:
        """Sort what was added (segments come in manifest order, not always in time)."""
        for changes in self.changes.values():
            changes.sort()
        for epochs in self.shown.values():
            epochs.sort()
        return self

    def outdated_by(self, path: str, epoch: float) -> Change | None:
        """The change that made a view of ``path`` at ``epoch`` outdated, or None while it is not
        (see the module's docstring)."""
        changes = self.changes.get(path)
        if not changes:
            return None
        after = bisect.bisect_right(changes, (epoch, "\U0010ffff", True))
        if after == len(changes):
            return None
        first = changes[after]
        shown = self.shown.get(path, [])
        if shown and shown[-1] >= first.epoch:
            return first
        return first if changes[-1].deleted else None


class FileRecorder:
    """What one segment's events show and change, as its index records them (``views``: doc -> (path,
    whole file shown); ``changes``: (path, epoch, event reference, deleted)), with each session's working
    folder as its events give it, for their relative paths."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}
        self.views: dict[int, tuple[str, bool]] = {}
        self.changes: list[tuple[str, float, str, bool]] = []

    def see(self, event: dict[str, Any], doc: int | None) -> None:
        """Record ``event`` (``doc``: its number in the index, None when recall never shows it)."""
        session = str(event.get("session", ""))
        meta = event.get("meta")
        if session not in self.folders and isinstance(meta, dict) and isinstance(meta.get("cwd"), str) \
                and meta["cwd"]:
            self.folders[session] = meta["cwd"]
        if event.get("kind") not in ("tool_call", "tool_result"):
            return
        for effect in effects(event, self.folders.get(session)):
            if effect.role in (SHOW, PARTIAL) and doc is not None:
                self.views[doc] = (effect.path, effect.role == SHOW)
            elif effect.role in (CHANGE, DELETE):
                ref = event_ref(session, str(event.get("id", "")))
                self.changes.append((effect.path, epoch_seconds(event.get("ts")), ref, effect.role == DELETE))
