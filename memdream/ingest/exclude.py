"""What the user keeps out of memory: ``ingest.exclude`` globs and the ``#memdream:off`` marker.

A glob is matched against an input file's absolute path and, for a transcript, against the folder
its session ran in (the ``cwd`` adapters keep in the first event's ``meta``). ``**`` crosses
folders, ``*`` and ``?`` do not, ``~`` is the home folder; a glob without ``/`` matches any one
folder or file name of the path (``secret-project`` keeps out everything under such a folder).
A path also matches when one of its folders does: ``**/secret-project`` keeps out the files in it.

A session in which the user wrote :data:`KEEP_OUT_MARKER` in a message is not ingested at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEEP_OUT_MARKER = "#memdream:off"
MARKED_OFF = f"the user wrote {KEEP_OUT_MARKER}"  # why a session is kept out, in the ingest report
# Searched in every user message: a regular expression finds it in any case without copying the text.
_MARKER = re.compile(re.escape(KEEP_OUT_MARKER), re.IGNORECASE)
_MARKER_BYTES = re.compile(re.escape(KEEP_OUT_MARKER).encode(), re.IGNORECASE)


@dataclass(frozen=True)
class Exclude:
    """The compiled ``ingest.exclude`` globs."""

    globs: tuple[str, ...] = ()
    _paths: tuple[tuple[str, re.Pattern[str]], ...] = ()  # globs with "/": over the whole path
    _names: tuple[tuple[str, re.Pattern[str]], ...] = ()  # globs without "/": over each part

    @classmethod
    def of(cls, globs: Iterable[str]) -> Exclude:
        given = tuple(glob.strip() for glob in globs if glob.strip())
        paths = tuple((glob, compile_glob(_anchored(glob))) for glob in given if "/" in glob)
        names = tuple((glob, compile_glob(glob)) for glob in given if "/" not in glob)
        return cls(given, paths, names)

    def __bool__(self) -> bool:
        return bool(self.globs)

    def match(self, path: str | os.PathLike[str]) -> str | None:
        """The first glob that keeps ``path`` (a file or a folder) out; None when none does."""
        if not self.globs:
            return None
        text = _absolute(path)
        for glob, pattern in self._paths:
            if any(pattern.fullmatch(candidate) for candidate in _with_parents(text)):
                return glob
        parts = [part for part in text.split("/") if part]
        for glob, pattern in self._names:
            if any(pattern.fullmatch(part) for part in parts):
                return glob
        return None


def compile_glob(glob: str) -> re.Pattern[str]:
    """A glob as a regular expression over ``/``-separated paths."""
    out: list[str] = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if glob.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and "]" in glob[index + 2:]:
            end = glob.index("]", index + 2)
            body = glob[index + 1:end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            index = end
        else:
            out.append(re.escape(char))
        index += 1
    return re.compile("".join(out))


def _anchored(glob: str) -> str:
    """A glob with ``/`` as an absolute one: ``~`` expanded, a relative one found at any depth."""
    glob = os.path.expanduser(glob)
    if glob.startswith("/") or glob.startswith("**"):
        return glob
    return "**/" + glob


def _absolute(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    try:
        text = os.path.abspath(os.path.expanduser(text))
    except (OSError, ValueError):
        pass
    return Path(text).as_posix()


def _with_parents(text: str) -> Iterable[str]:
    """``/a/b/c``, ``/a/b/c/`` (so that ``**/c/**`` keeps out the folder itself), ``/a/b``, ``/a``."""
    yield text
    yield text.rstrip("/") + "/"
    parent = text.rstrip("/")
    while "/" in parent.strip("/"):
        parent = parent.rsplit("/", 1)[0]
        yield parent
        yield parent + "/"


def from_settings(settings: Any) -> Exclude:
    try:
        globs = settings.get("ingest.exclude")
    except KeyError:
        return Exclude()
    return Exclude.of(str(glob) for glob in globs or ())


def says_off(event: dict[str, Any]) -> bool:
    """Whether ``event`` is a message of the user's holding the keep-out marker."""
    if event.get("kind") != "message" or event.get("actor", "user") != "user":
        return False
    text = event.get("text")
    return isinstance(text, str) and _MARKER.search(text) is not None


def bytes_say_off(data: bytes) -> bool:
    """Whether a prepared event's canonical JSON holds the marker (a cheap first test)."""
    return _MARKER_BYTES.search(data) is not None


def session_cwd(event: dict[str, Any]) -> str | None:
    """The folder a transcript's session ran in, as its adapter recorded it on the first event."""
    meta = event.get("meta")
    cwd = meta.get("cwd") if isinstance(meta, dict) else None
    return cwd if isinstance(cwd, str) and cwd else None
