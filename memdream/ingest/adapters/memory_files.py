"""Instruction and memory files agents already read: CLAUDE.md, AGENTS.md, a Codex memories folder.

Each rule or fact in them (a bullet, or a paragraph under a heading) becomes one ``message``
event of the user's, tagged ``memory-file`` and with the project of the file's folder
(``project:<name>``), so that dream admits it as the user's word: a standing instruction, or a
fact when it states one. What is not the user's word is left out: code blocks, tables, HTML
comments, YAML front matter, ``@path`` imports, lead-ins ending in ``:`` and the block that
``memdream context --export`` writes between ``<!-- memdream:begin`` and ``<!-- memdream:end -->``
(memdream's own output).

Files, told by their name (Markdown has no signature to sniff):

- ``CLAUDE.md``, ``CLAUDE.local.md``, ``AGENTS.md``, ``AGENTS.override.md``: the project of their
  folder; in ``~/.claude``, ``~/.codex`` or ``$CODEX_HOME`` they hold the user's rules for every
  project (global scope).
- a Codex memories folder (``~/.codex/memories``): ``MEMORY.md``, whose blocks start with a header
  naming the folders (``cwd=...``) they were learned in (each block gets that project), and the
  "General Tips" of ``memory_summary.md`` (global). Its other parts (the user profile, the index,
  ``raw_memories.md``, ``rollout_summaries/``, ``skills/``) are drafts, retellings or personal data.

**Ids and times.** An event's id is a digest of the rule's text, its session is the file's
(``memory-file/<project>/<path from the repository's top>``) and its time the file's modification time,
marked synthetic: ingesting the file again adds nothing, however often it was touched, and an
edited rule is a new event, newer than the one it replaces.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdream import clock
from memdream.ingest.adapters._common import checked, project_tag
from memdream.ingest.adapters.context import ParseContext
from memdream.ingest.source_ids import safe_stem
from memdream.memory.project import project_name
from memdream.memory.tags import MEMORY_FILE_TAG

NAME = "memory-file"
INSTRUCTION_FILES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "AGENTS.override.md"})
CODEX_MEMORY_FILES = frozenset({"MEMORY.md", "memory_summary.md"})
CODEX_MEMORY_FOLDER = "memories"
GLOBAL_FOLDERS = (".claude", ".codex")  # the user's own folders: rules there hold for every project
# The markers of memdream.integrations.export, read as leniently as it reads them.
MANAGED_BEGIN = re.compile(r"<!--\s*memdream:begin\b")
MANAGED_END = re.compile(r"<!--\s*memdream:end\s*-->")
SUMMARY_SECTIONS = ("general tips",)  # the part of memory_summary.md that holds rules
MIN_WORDS = 2
MAX_RULE = 2000  # characters: longer paragraphs are pasted material, not a rule

_BULLET = re.compile(r"^(?P<indent>\s*)(?:[-*+]|\d{1,3}[.)])\s+(?P<text>.*)$")
_HEADING = re.compile(r"^\s{0,3}(?P<marks>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})")
_RULE_LINE = re.compile(r"^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
_HEADER_KEY = re.compile(r"^[A-Za-z_][\w-]*:")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_IMPORT = re.compile(r"^@[\w~./-]+$")
_CWD = re.compile(r"\bcwd=(?P<cwd>[^,)\s]+)")
# Bullets that point elsewhere, and the introduction tools write at the top of these files.
_NOT_RULES = re.compile(r"^(?:related skills?|see also|rollout[_ ]summary|this (?:file|document) (?:provides|gives|"
                        r"contains|describes)|guidance for)\b", re.IGNORECASE)
_SENTENCE_END = (".", "!", "?")


def is_memory_file(path: Path) -> bool:
    """Whether ``path`` is a file this adapter reads, by its name (and folder, for Codex memories)."""
    name = path.name
    return name in INSTRUCTION_FILES or (name in CODEX_MEMORY_FILES and path.parent.name == CODEX_MEMORY_FOLDER)


def sniff(head: str) -> bool:
    """Never from content: a Markdown file is told by its name (see :func:`is_memory_file`)."""
    return False


@dataclass
class Rule:
    text: str
    line: int
    project: str | None


def parse(lines: Iterator[str], ctx: ParseContext) -> Iterator[dict[str, Any]]:
    path = None if ctx.source == "<stdin>" else Path(ctx.source)
    text = "".join(lines)
    when = _file_time(ctx)
    kind = _kind_of(path)
    is_global = path is not None and kind == "instructions" and _is_global(path)
    scope = None if kind != "instructions" or path is None or is_global else _folder_project(path)
    place = _place(path, kind, is_global)
    for rule in _rules(text, kind, scope):
        event = _event(rule, place, path, when, ctx)
        if checked(event, rule.line, ctx):
            yield event


def _kind_of(path: Path | None) -> str:
    if path is not None and path.name in CODEX_MEMORY_FILES and path.parent.name == CODEX_MEMORY_FOLDER:
        return "codex-summary" if path.name == "memory_summary.md" else "codex-memory"
    return "instructions"


def _is_global(path: Path) -> bool:
    folder = path.resolve().parent
    codex_home = os.environ.get("CODEX_HOME") or None  # set but empty: not set
    return folder.name in GLOBAL_FOLDERS or (codex_home is not None and folder == Path(codex_home).resolve())


def _folder_project(path: Path) -> str | None:
    return project_name(str(path.resolve().parent))


def _file_time(ctx: ParseContext) -> str:
    moment = datetime.fromtimestamp(ctx.modified, timezone.utc) if ctx.modified is not None else clock.now()
    return clock.format_timestamp(moment)


def rule_id(text: str) -> str:
    """The id of a rule: its words, whatever the spacing (a re-wrapped paragraph is the same rule)."""
    words = " ".join(text.split()).encode("utf-8", "surrogatepass")
    return "rule-" + hashlib.blake2b(words, digest_size=6).hexdigest()


def _place(path: Path | None, kind: str, is_global: bool) -> str:
    """Where the file is within its project, for its session: its path from the repository's top
    (``services/api/AGENTS.md``), so that every checkout of a repository (a clone, a worktree) is one
    source and a copy of a rule is never taken for a second, independent statement of it."""
    if path is None:
        return "stdin"
    if kind != "instructions":
        return f"codex-memories/{path.name}"
    if is_global:
        return f"{path.resolve().parent.name.lstrip('.')}/{path.name}"  # claude/CLAUDE.md, codex/AGENTS.md
    from memdream import gitops

    prefix = gitops.query(str(path.resolve().parent), "rev-parse", "--show-prefix") or ""
    return prefix + path.name


def _session(place: str, project: str | None) -> str:
    return f"memory-file/{project or 'global'}/{safe_stem(place)}"


def _event(rule: Rule, place: str, path: Path | None, when: str, ctx: ParseContext) -> dict[str, Any]:
    return {
        "session": ctx.session_for(_session(place, rule.project)),
        "ts": when,
        "kind": "message",
        "actor": "user",
        "id": rule_id(rule.text),
        "text": rule.text,
        "tags": [MEMORY_FILE_TAG, *project_tag(rule.project)],
        # The name, not the path: moving a checkout must not make its rules new.
        "meta": {"ts_synthetic": True, "memory_file": path.name if path is not None else "stdin"},
    }


@dataclass
class _Reader:
    """The state of one pass over a Markdown file."""

    kind: str
    project: str | None
    rules: list[Rule] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # the lines of the rule being read
    start: int = 0
    section: str = ""
    in_bullet: bool = False

    def flush(self) -> None:
        if self.pending:
            text = clean(" ".join(self.pending))
            if self._wanted(text):
                self.rules.append(Rule(text, self.start, self.project))
        self.pending = []

    def begin(self, text: str, line: int, bullet: bool = False) -> None:
        self.flush()
        self.pending, self.start, self.in_bullet = [text], line, bullet

    def go_on(self, text: str, line: int) -> None:
        """A line that continues a bullet, or a paragraph; in a paragraph, a line after one that
        ends a sentence is a rule of its own (files put one rule a line as often as they wrap)."""
        if self.pending and (self.in_bullet or not self.pending[-1].endswith(_SENTENCE_END)):
            self.pending.append(text)
        else:
            self.begin(text, line)

    def _wanted(self, text: str) -> bool:
        if self.kind == "codex-summary" and self.section not in SUMMARY_SECTIONS:
            return False
        if text.endswith(":") or len(text.split()) < MIN_WORDS or len(text) > MAX_RULE:
            return False
        return not _NOT_RULES.match(text)


def _rules(text: str, kind: str, project: str | None) -> list[Rule]:
    reader = _Reader(kind, project)
    lines = text.lstrip("\ufeff").splitlines()
    index = 0 if kind == "codex-memory" else _after_front_matter(lines)  # there, every block has a header
    while index < len(lines):
        index = _read_line(lines, index, reader)
    reader.flush()
    return reader.rules


def _after_front_matter(lines: list[str]) -> int:
    """Where the text starts after YAML front matter (``---`` ... ``---`` on the first lines)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for number in range(1, len(lines)):
        if lines[number].strip() in ("---", "..."):
            return number + 1
    return 0


def _read_line(lines: list[str], index: int, reader: _Reader) -> int:
    """Read the line at ``index`` (and what it opens: a fence, a comment, a header); the next index."""
    line = lines[index]
    stripped = line.strip()
    number = index + 1
    if MANAGED_BEGIN.match(stripped):
        reader.flush()
        return _after_managed_block(lines, index)
    if stripped.startswith("<!--"):
        reader.flush()
        return _skip_until(lines, index, "-->", same_line=True)
    fence = _FENCE.match(line)
    if fence:
        return _read_fence(lines, index, fence.group("fence"), reader)
    if reader.kind == "codex-memory" and stripped == "---" and _opens_header(lines, index):
        return _read_header(lines, index, reader)
    if not stripped or _RULE_LINE.match(line) or stripped.startswith("|") or _IMPORT.match(stripped):
        reader.flush()
        return number
    heading = _HEADING.match(line)
    if heading:
        reader.flush()
        reader.section = clean(heading.group("text")).lower()
        return number
    bullet = _BULLET.match(line)
    if bullet:
        reader.begin(bullet.group("text"), number, bullet=True)
    else:
        reader.go_on(stripped.lstrip("> "), number)
    return number


def _after_managed_block(lines: list[str], index: int) -> int:
    """The index after memdream's block; a begin marker without its end (an edit half done, which
    ``context --export`` refuses too) hides nothing of the user's: only its own line is skipped."""
    for number in range(index, len(lines)):
        if MANAGED_END.search(lines[number]):
            return number + 1
    return index + 1


def _skip_until(lines: list[str], index: int, end: str, same_line: bool = False) -> int:
    """The index after the line that holds ``end`` (from ``index`` on; the first line only when
    ``same_line``); past the end when there is none."""
    first = lines[index]
    if same_line and end in first[first.find("<!--") + 4:]:
        return index + 1
    for number in range(index + 1, len(lines)):
        if end in lines[number]:
            return number + 1
    return len(lines)


def _read_fence(lines: list[str], index: int, fence: str, reader: _Reader) -> int:
    """Skip a code block: code is not a rule. A one-line block right after a lead-in ending in
    ``:`` ("Run the tests with:") completes it, as inline code."""
    body: list[str] = []
    number = index + 1
    while number < len(lines) and not lines[number].strip().startswith(fence):
        body.append(lines[number].strip())
        number += 1
    code = [line for line in body if line]
    if reader.pending and reader.pending[-1].rstrip().endswith(":") and len(code) == 1 and "`" not in code[0]:
        reader.pending.append(f"`{code[0]}`")
    reader.flush()
    return number + 1


def _opens_header(lines: list[str], index: int) -> bool:
    following = next((line.strip() for line in lines[index + 1:] if line.strip()), "")
    return bool(_HEADER_KEY.match(following))


def _read_header(lines: list[str], index: int, reader: _Reader) -> int:
    """A Codex MEMORY.md block header: the folder its notes were learned in names their project."""
    reader.flush()
    number = index + 1
    folders: list[str] = []
    while number < len(lines) and lines[number].strip() != "---":
        folders.extend(match.group("cwd") for match in _CWD.finditer(lines[number]))
        number += 1
    reader.project = project_name(folders[0]) if folders else None
    reader.section = ""
    return number + 1


def clean(text: str) -> str:
    """A rule's words as a person reads them: no checkbox, no bold markers, one line."""
    text = _CHECKBOX.sub("", " ".join(text.split()))
    return _EMPHASIS.sub(r"\2", text).strip()
