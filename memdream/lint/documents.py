"""The files of a memory as lint sees them: text, parsed data, and a lazy node locator."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from memdream import yamlio
from memdream.lint import yamlload
from memdream.lint.files import FileProblem, read_text
from memdream.lint.findings import Finding
from memdream.lint.positions import NodeLocator, Position
from memdream.memory.paths import AUDIT_DIR
from memdream.memory.store import CardFile

if TYPE_CHECKING:
    from memdream.memory.evidence_log import EvidenceLog


@dataclass
class Document:
    """One YAML file: its text, its data when it parsed, and the parse error when it did not."""

    path: Path
    text: str
    data: Any = None
    parse_error: tuple[Position, str] | None = None
    card_file: CardFile | None = None

    error_rule: str = "yaml"  # the rule of ``parse_error``: "file" when the file was not read at all

    @classmethod
    def read(cls, path: Path, card_file: CardFile | None = None) -> Document:
        """Read and parse one YAML file; a link, a special file or an oversized file is not read."""
        try:
            text = read_text(path, yamlio.MAX_YAML_BYTES)
        except FileProblem as error:
            message = str(error)
            rule = "yaml" if message.startswith("not UTF-8") else "file"
            return cls(path, "", parse_error=((1, 1), message), card_file=card_file, error_rule=rule)
        document = cls(path, text, card_file=card_file)
        try:
            document.data = yamlload.loads(text)
        except yamlio.UnsafeYAML as error:
            mark = error.problem_mark
            position = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            document.parse_error = (position, str(error.problem))
        except yaml.MarkedYAMLError as error:
            mark = error.problem_mark or error.context_mark
            position = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            problem = " ".join(str(error.problem or error.context or "syntax error").split())
            document.parse_error = (position, f"not valid YAML: {problem}")
        except yaml.YAMLError as error:
            document.parse_error = ((1, 1), f"not valid YAML: {' '.join(str(error).split())}")
        return document

    @cached_property
    def locator(self) -> NodeLocator:
        return NodeLocator(self.text)

    def get(self, key: str) -> Any:
        return self.data.get(key) if isinstance(self.data, dict) else None


@dataclass
class MemoryFiles:
    """Everything lint reads from one memory, loaded once and shared by all rules."""

    root: Path
    cards: list[Document] = field(default_factory=list)
    card_schema_findings: list[Finding] = field(default_factory=list)  # found while reading the cards
    plan: Document | None = None
    config: Document | None = None
    # other tracked text (INDEX.md, audit/*.jsonl), read when lint may read them
    text_files: list[tuple[Path, str]] = field(default_factory=list)
    # paths lint refused to read (links, devices, FIFOs, oversized files), with why
    file_problems: dict[Path, str] = field(default_factory=dict)
    # what lint could not check, said plainly (not findings: exit 0 when nothing else is wrong)
    notices: list[str] = field(default_factory=list)

    @cached_property
    def audit_evidence(self) -> tuple[EvidenceLog, list[Finding]]:
        """The evidence the audit files hold beyond the cards' inline lists, and the malformed lines."""
        from memdream.lint.evidence import read_evidence_log

        audit = self.root / AUDIT_DIR
        return read_evidence_log([(path, text) for path, text in self.text_files
                                  if path.parent == audit and path.suffix == ".jsonl"])
