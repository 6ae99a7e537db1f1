"""Golden cases: tests/cases/lint/valid/* lint clean; each invalid/* prints exactly its expected.txt."""

from __future__ import annotations

from pathlib import Path

import pytest

CASES = Path(__file__).resolve().parent.parent / "cases" / "lint"
VALID = sorted(path for path in (CASES / "valid").iterdir() if path.is_dir())
INVALID = sorted(path for path in (CASES / "invalid").iterdir() if path.is_dir())


@pytest.mark.parametrize("case", VALID, ids=[path.name for path in VALID])
def test_valid_case_is_clean(case: Path, run, chdir) -> None:
    chdir(case)
    result = run("lint")
    assert result.stdout == ""
    assert result.exit_code == 0


@pytest.mark.parametrize("case", INVALID, ids=[path.name for path in INVALID])
def test_invalid_case_reports_exact_messages_and_positions(case: Path, run, chdir) -> None:
    chdir(case)
    result = run("lint")
    expected = (case / "expected.txt").read_text(encoding="utf-8")
    assert result.stdout == expected
    assert result.exit_code == 1


def test_every_invalid_case_has_expectations() -> None:
    assert INVALID and all((case / "expected.txt").is_file() for case in INVALID)
