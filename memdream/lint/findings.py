"""What lint reports: findings with their position, collected rather than raised."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MAX_MESSAGE = 300  # characters of a finding's message, "…" included


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place. ``path`` is absolute; renderers choose how to show it."""

    path: Path
    line: int
    col: int
    rule: str
    message: str
    severity: str = "error"

    def __post_init__(self) -> None:
        # Messages quote values, and a value may be megabytes long: one finding stays one short line.
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", self.message[:MAX_MESSAGE - 1] + "…")

    def to_dict(self, shown_path: str) -> dict[str, Any]:
        data = asdict(self)
        data["path"] = shown_path
        return data


@dataclass
class LintResult:
    memories: list[Path] = field(default_factory=list)
    files_checked: int = 0
    findings: list[Finding] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # what was not checked, and why

    @property
    def ok(self) -> bool:
        return not any(finding.severity == "error" for finding in self.findings)
