"""memdream lint: the CI gate over memory files. Collects every finding; never stops at the first."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from memdream.errors import UsageError
from memdream.lint.documents import Document, MemoryFiles
from memdream.lint.files import MAX_TEXT_BYTES, FileProblem, card_entries, folder_entries, read_text
from memdream.lint.findings import Finding, LintResult
from memdream.lint.rules import RULES, schema_findings
from memdream.memory.paths import AUDIT_DIR, CONFIG_FILE, INDEX_FILE, PLAN_FILE
from memdream.memory.store import CardFile

__all__ = ["Finding", "LintResult", "lint_memory", "lint_paths"]


def _read_card(card_file: CardFile) -> tuple[Document, list[Finding]]:
    """Parse and schema-check one card.

    One process does it all: parsing and checking a card costs about 0.2 ms (yamlload, fastjsonschema),
    less than sending the parsed card back from a worker process would.
    """
    document = Document.read(card_file.path, card_file)
    return document, list(schema_findings(document, "card"))


def load_files(root: Path) -> MemoryFiles:
    files = MemoryFiles(root=root)
    card_files, files.file_problems = card_entries(root)
    for card_file in card_files:
        document, findings = _read_card(card_file)
        files.cards.append(document)
        files.card_schema_findings.extend(findings)
    plan, config = root / PLAN_FILE, root / CONFIG_FILE
    if os.path.lexists(plan):
        files.plan = Document.read(plan)
    files.config = Document.read(config) if os.path.lexists(config) else Document(config, "")
    audit, audit_problem = folder_entries(root / AUDIT_DIR)
    files.file_problems.update(audit_problem)
    index = root / INDEX_FILE
    texts = [*([index] if os.path.lexists(index) else []), *(path for path in audit if path.suffix == ".jsonl")]
    for path in texts:
        try:
            files.text_files.append((path, read_text(path, MAX_TEXT_BYTES)))
        except FileProblem as problem:
            files.file_problems[path] = str(problem)
    return files


def lint_memory(root: Path, notices: list[str] | None = None) -> tuple[list[Finding], int]:
    """All findings for one memory, sorted by file and position, and the number of files read;
    what could not be checked (no raw layer here) is added to ``notices``."""
    files = load_files(root)
    findings: list[Finding] = []
    if files.plan is None:
        findings.append(Finding(root / PLAN_FILE, 1, 1, "layout", "plan.yaml is missing"))
    for rule in RULES.values():
        findings.extend(rule(files))
    checked = len(files.cards) + len(files.text_files) + 1 + (files.plan is not None)
    if notices is not None:
        notices.extend(files.notices)
    return sorted(set(findings)), checked


def _memory_of(path: Path) -> Path:
    """The memory root a PATH argument names: the folder itself or the memory holding a file."""
    resolved = path.resolve()
    if not resolved.exists():
        raise UsageError(f"{path}: no such file or folder")
    for folder in (resolved if resolved.is_dir() else resolved.parent, *resolved.parents):
        if os.path.lexists(folder / CONFIG_FILE):  # a linked memdream.yaml is a finding, not "no memory"
            return folder
    raise UsageError(f"{path}: not inside a memdream memory (no {CONFIG_FILE} found)")


def lint_paths(paths: Sequence[Path]) -> LintResult:
    """Lint each memory named by ``paths``; a file argument limits that memory's findings to the file."""
    result = LintResult()
    wanted: dict[Path, set[Path] | None] = {}
    for path in paths:
        root = _memory_of(path)
        files_only = wanted.get(root, set())
        if path.resolve().is_dir() or files_only is None:
            wanted[root] = None
        else:
            wanted[root] = {*files_only, path.resolve()}
    for root, only in wanted.items():
        findings, checked = lint_memory(root, result.notices)
        result.memories.append(root)
        result.files_checked += checked if only is None else len(only)
        result.findings.extend(f for f in findings if only is None or f.path.resolve() in only)
    return result
