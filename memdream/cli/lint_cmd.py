"""memdream lint: the CI gate."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdream.cli.options import MemoryOption, TenantOption, memory_root

if TYPE_CHECKING:
    from memdream.lint import LintResult


class LintFormat(str, Enum):
    text = "text"
    json = "json"
    github = "github"


def lint(
    paths: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Argument(metavar="PATH", help="Memory folders, or files inside one (then only their findings are shown). "
                            "Default: the current memory.", show_default=False),
    ] = None,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
    output: Annotated[
        Optional[LintFormat],  # noqa: UP045
        typer.Option("--format", "-f", metavar="text|json|github", case_sensitive=False, show_default=False,
                     help="text (path:line:col: message), json, or github (workflow annotations). "
                          "Default: github when GITHUB_ACTIONS is set, else text."),
    ] = None,
) -> None:
    """Check memory files: schemas, unique ids, links, one active card per fact key, no secrets.

    Exit 0 when clean, 1 when there are findings or an interrupted dream is pending (its files
    are half-written until `memdream dream` recovers), 2 on a usage error.
    """
    from memdream.errors import UsageError
    from memdream.lint import lint_paths
    from memdream.memory.journal import require_settled

    chosen = output or (LintFormat.github if os.environ.get("GITHUB_ACTIONS") == "true" else LintFormat.text)
    if paths and tenant is not None:
        raise UsageError("give PATH or --tenant, not both")
    result = lint_paths(paths or [memory_root(memory, tenant)])
    for root in result.memories:  # findings on half-written files would be bogus: say what to do
        require_settled(root)
    {LintFormat.text: _render_text, LintFormat.json: _render_json, LintFormat.github: _render_github}[chosen](result)
    if not result.ok:
        raise typer.Exit(1)


def _render_text(result: LintResult) -> None:
    from memdream.render import shown_path

    for finding in result.findings:
        sys.stdout.write(f"{shown_path(finding.path)}:{finding.line}:{finding.col}: {finding.message} "
                         f"[{finding.rule}]\n")
    files = len({finding.path for finding in result.findings})
    _render_notices(result)
    if result.findings:
        sys.stderr.write(f"{len(result.findings)} problem(s) in {files} file(s); "
                         f"{result.files_checked} file(s) checked\n")
    else:
        sys.stderr.write(f"ok: {result.files_checked} file(s) checked, no problems\n")


def _render_json(result: LintResult) -> None:
    from memdream.render import print_json, shown_path

    print_json({
        "ok": result.ok,
        "memories": [str(root) for root in result.memories],
        "files_checked": result.files_checked,
        "findings": [finding.to_dict(shown_path(finding.path)) for finding in result.findings],
        "notices": result.notices,
    })


def _render_notices(result: LintResult) -> None:
    """What lint could not check (a clone without raw events), on stderr: never a finding."""
    for notice in result.notices:
        sys.stderr.write(f"notice: {notice}\n")


def _escape(text: str, property_value: bool = False) -> str:
    """GitHub workflow-command escaping."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if property_value else text


def _render_github(result: LintResult) -> None:
    from memdream.render import shown_path

    for finding in result.findings:
        sys.stdout.write(
            f"::{finding.severity} file={_escape(shown_path(finding.path), True)},line={finding.line},"
            f"col={finding.col},title={_escape(f'memdream lint ({finding.rule})', True)}::"
            f"{_escape(finding.message)}\n"
        )
    _render_text_summary(result)


def _render_text_summary(result: LintResult) -> None:
    _render_notices(result)
    sys.stderr.write(f"{len(result.findings)} problem(s); {result.files_checked} file(s) checked\n")
