"""The managed block in the files agents already read (CLAUDE.md, AGENTS.md): the plan and the
project's most useful cards between two markers, the rest of the file left byte for byte as it was.

    <!-- memdream:begin (managed by memdream: `memdream context` rewrites what is inside) -->
    ## Memory (memdream): billing-api
    ...
    <!-- memdream:end -->

Claude Code reads CLAUDE.md, Codex and other agents AGENTS.md, at the start of every session, and
teammates read both in review: the block reaches them without any hook. Writing it is idempotent:
the same memory gives the same bytes (memdream.integrations.startup, ``stable``), and an unchanged
file is not written at all (its mtime stays). Markers that do not pair up (a begin without its end,
an end first, two blocks) are a person's edit half done: nothing is written, one line says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream.errors import InvalidInput
from memdream.integrations.startup import MIN_BUDGET, StartupContext, build_context, check_budget

BEGIN_MARKER = "<!-- memdream:begin (managed by memdream: `memdream context` rewrites what is inside) -->"
END_MARKER = "<!-- memdream:end -->"
_BEGIN = re.compile(r"<!--\s*memdream:begin\b[^\n]*?-->")
_END = re.compile(r"<!--\s*memdream:end\s*-->")
EMPTY_NOTE = "Nothing learned yet."
# The least room the block's frame takes (markers, a title with a short project name).
BLOCK_ROOM = len(BEGIN_MARKER) + len(END_MARKER) + 48


@dataclass
class ExportResult:
    path: Path
    changed: bool
    created: bool
    block: str
    context: StartupContext

    def to_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "changed": self.changed, "created": self.created,
                "block_bytes": len(self.block.encode("utf-8")), **self.context.to_dict()}


def block_text(context: StartupContext) -> str:
    """The managed block, markers included, without a final newline."""
    body = context.body.rstrip("\n") or EMPTY_NOTE
    return f"{BEGIN_MARKER}\n{_title(context.project)}\n\n{body}\n{END_MARKER}"


def _title(project: str | None) -> str:
    return "## Memory (memdream)" + (f": {project}" if project else "")


def _frame(scope: str | None) -> int:
    """The bytes of the block around its body (the body's last newline is the budget's own)."""
    return len(f"{BEGIN_MARKER}\n{_title(scope)}\n\n{END_MARKER}".encode()) + len(EMPTY_NOTE)


def splice(existing: str, block: str, where: Path) -> str:
    """``existing`` with its managed block replaced by ``block`` (appended after a blank line when it
    has none). Everything outside the markers is kept as it is."""
    begins, ends = list(_BEGIN.finditer(existing)), list(_END.finditer(existing))
    if not begins and not ends:
        if not existing:
            return block + "\n"
        return existing + ("\n" if existing.endswith("\n") else "\n\n") + block + "\n"
    if len(begins) == 1 and len(ends) == 1 and begins[0].end() <= ends[0].start():
        return existing[:begins[0].start()] + block + existing[ends[0].end():]
    raise InvalidInput(f"{where}: {_marker_problem(len(begins), len(ends), begins, ends)}; "
                       "fix the markers by hand (or remove both), nothing was changed")


def _marker_problem(begins: int, ends: int, found_begins: list[re.Match[str]],
                    found_ends: list[re.Match[str]]) -> str:
    if begins > 1 or ends > 1:
        return f"{begins} memdream:begin and {ends} memdream:end markers (one block at most)"
    if not ends:
        return "a memdream:begin marker without its memdream:end"
    if not begins:
        return "a memdream:end marker without its memdream:begin"
    return "the memdream:end marker comes before memdream:begin"


def export(path: Path, context: StartupContext) -> ExportResult:
    """Write ``context``'s block into the file at ``path`` (created when missing); an unchanged file is
    not rewritten."""
    from memdream.integrations.claude_settings import write_atomically

    block = block_text(context)
    try:
        raw: bytes | None = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except IsADirectoryError:
        raise InvalidInput(f"--export {path}: is a folder, not a file") from None
    try:
        existing = "" if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"--export {path}: not UTF-8 text; nothing was changed") from None
    updated = splice(existing, block, path)
    changed = raw is None or updated != existing
    if changed:
        write_atomically(path, updated)
    return ExportResult(path=path, changed=changed, created=raw is None, block=block, context=context)


def managed_block(root: Path, budget: int, project: str | None, folder: Path) -> tuple[str, StartupContext]:
    """The block for ``project`` (else the project of ``folder``), at most ``budget`` bytes in all."""
    check_budget(budget, MIN_BUDGET + BLOCK_ROOM)
    context = build_context(root, budget, project=project, cwd=str(folder), stable=True, frame=_frame)
    return block_text(context), context


def export_to(path: Path, root: Path, budget: int, project: str | None) -> ExportResult:
    """``context --export FILE``: the block of the project the file belongs to (or ``project``)."""
    folder = path.resolve().parent
    if not folder.is_dir():
        raise InvalidInput(f"--export {path}: the folder {folder} does not exist")
    _, context = managed_block(root, budget, project, folder)
    return export(path, context)
