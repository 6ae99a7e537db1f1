"""`memdream context --export CLAUDE.md|AGENTS.md`: the managed block between markers, written by the real
command line on a memory learned from real-format transcripts; the rest of the file byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import transcripts as scenario
from tests.integrations import test_session_start as session_start
from tests.integrations.test_session_start import SHOP_INSTRUCTION, cron_env, memdream

# The memory learned from billing-api's and shop's transcripts (built once for this module too).
learned = session_start.learned

BEGIN = "<!-- memdream:begin"
END = "<!-- memdream:end -->"
# A CLAUDE.md people wrote by hand: CRLF line ends in one part, no final newline, non-ASCII text.
BEFORE = "# billing-api\r\n\r\nRun `make dev` first. Ünïcode stays.\r\n\r\n"
AFTER = "\n\n## Team notes\n\n- Releases go out on Tuesdays."


@pytest.fixture
def billing_checkout(tmp_path: Path) -> Path:
    """A clone of billing-api (named by its remote, as ingest named the sessions' project)."""
    checkout = tmp_path / "clone"
    checkout.mkdir()
    subprocess.run(["git", "init", "-q", str(checkout)], check=True, env=cron_env(tmp_path))
    subprocess.run(["git", "-C", str(checkout), "remote", "add", "origin", scenario.REPOSITORY_URL], check=True,
                   env=cron_env(tmp_path))
    return checkout


def export(root: Path, env: dict[str, str], target: Path, *extra: str, check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    return memdream("context", "--export", target, "-m", root, *extra, env=env, cwd=target.parent, check=check)


def test_export_rewrites_only_its_block_and_is_idempotent(learned: Any, billing_checkout: Path) -> None:
    root, env = learned
    target = billing_checkout / "CLAUDE.md"
    old_block = f"{BEGIN} (managed by memdream) -->\nstale text someone edited\n{END}"
    target.write_bytes((BEFORE + old_block + AFTER).encode("utf-8"))
    done = export(root, env, target)
    assert done.stdout.startswith(f"{target}: updated (memdream block for billing-api:")
    raw = target.read_bytes()
    assert raw.startswith(BEFORE.encode("utf-8")) and raw.endswith(AFTER.encode("utf-8"))
    block = raw[len(BEFORE.encode("utf-8")):len(raw) - len(AFTER.encode("utf-8"))].decode("utf-8")
    assert block.startswith(BEGIN) and block.endswith(END) and "stale text" not in block
    assert "## Memory (memdream): billing-api" in block and "Plan: " + scenario.NEWEST_GOAL in block
    assert scenario.USER_INSTRUCTION in block and SHOP_INSTRUCTION not in block
    assert len(block.encode("utf-8")) <= 2000
    stamp = target.stat().st_mtime_ns
    again = export(root, env, target)
    assert "unchanged" in again.stdout
    assert target.read_bytes() == raw and target.stat().st_mtime_ns == stamp


def test_export_appends_to_a_file_without_markers_and_creates_a_missing_one(learned: Any,
                                                                           billing_checkout: Path) -> None:
    root, env = learned
    agents = billing_checkout / "AGENTS.md"
    agents.write_text("# Agents\n\nUse the Makefile.", encoding="utf-8")
    export(root, env, agents)
    text = agents.read_text(encoding="utf-8")
    assert text.startswith("# Agents\n\nUse the Makefile.\n\n" + BEGIN) and text.endswith(END + "\n")
    missing = billing_checkout / "docs" / "CLAUDE.md"
    missing.parent.mkdir()
    done = export(root, env, missing, "--scope", "billing-api")
    assert "created" in done.stdout
    created = missing.read_text(encoding="utf-8")
    assert created.startswith(BEGIN) and created.endswith(END + "\n") and scenario.FIX_COMMAND in created


def test_the_same_block_whatever_the_clock_or_the_recalls(learned: Any, billing_checkout: Path) -> None:
    """Idempotent for real: a later export (another day, after recalls counted uses) writes nothing."""
    root, env = learned
    target = billing_checkout / "CLAUDE.md"
    export(root, env, target)
    first = target.read_bytes()
    later = {**env, "MEMDREAM_NOW": "2027-03-01T00:00:00Z"}
    memdream("recall", "invoices bucket region", "-m", root, env=later, cwd=root.parent)
    memdream("recall", "staging database port", "-m", root, env=later, cwd=root.parent)
    done = memdream("context", "--export", target, "-m", root, env=later, cwd=billing_checkout)
    assert "unchanged" in done.stdout and target.read_bytes() == first


def test_another_projects_file_gets_that_projects_cards(learned: Any, tmp_path: Path) -> None:
    root, env = learned
    target = tmp_path / "AGENTS.md"
    export(root, env, target, "--scope", "shop")
    text = target.read_text(encoding="utf-8")
    assert "## Memory (memdream): shop" in text and SHOP_INSTRUCTION in text
    assert scenario.USER_INSTRUCTION not in text and "billing" not in text.lower()


def test_context_takes_scope_as_recall_does_and_still_reads_project(learned: Any, tmp_path: Path) -> None:
    """Issue 21.6: one name for one thing. --project, the old name, still works (scripts and hooks written
    before), with one line of notice, and is no longer shown in --help."""
    root, env = learned
    printed = memdream("context", "-m", root, "--scope", "shop", "-f", "json", env=env, cwd=tmp_path)
    assert printed.stderr == "" and "## Memory (memdream): shop" in printed.stdout
    old = memdream("context", "-m", root, "--project", "shop", "-f", "json", env=env, cwd=tmp_path)
    assert old.stdout == printed.stdout
    assert old.stderr == "memdream: --project is deprecated in context: use --scope instead\n"
    assert memdream("context", "-m", root, "-p", "shop", "-f", "json", env=env, cwd=tmp_path).stdout == printed.stdout
    both = memdream("context", "-m", root, "--scope", "shop", "--project", "shop", env=env, cwd=tmp_path, check=False)
    assert both.returncode == 2 and both.stderr.count("\n") == 1
    assert memdream("context", "-m", root, "--scope", " ", env=env, cwd=tmp_path, check=False).returncode == 2
    shown = memdream("context", "--help", env=env, cwd=tmp_path).stdout
    assert "--scope" in shown and "--project" not in shown


@pytest.mark.parametrize("broken", [
    f"# Notes\n{BEGIN} -->\nhalf an edit\n",
    f"# Notes\n{END}\nand then\n{BEGIN} -->\n",
    f"{BEGIN} -->\na\n{END}\n{BEGIN} -->\nb\n{END}\n",
    f"# Notes\n{END}\n",
])
def test_broken_markers_are_one_line_and_leave_the_file_untouched(learned: Any, tmp_path: Path,
                                                                   broken: str) -> None:
    root, env = learned
    target = tmp_path / "CLAUDE.md"
    target.write_text(broken, encoding="utf-8")
    stamp = target.stat().st_mtime_ns
    done = export(root, env, target, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"memdream: {target}: ") and len(done.stderr.splitlines()) == 1
    assert target.read_text(encoding="utf-8") == broken and target.stat().st_mtime_ns == stamp


def test_the_budget_caps_the_block(learned: Any, billing_checkout: Path) -> None:
    root, env = learned
    target = billing_checkout / "CLAUDE.md"
    export(root, env, target, "--budget", "700")
    block = target.read_text(encoding="utf-8")
    assert len(block.rstrip("\n").encode("utf-8")) <= 700 and "Plan: " in block
    too_small = export(root, env, target, "--budget", "100", check=False)
    assert too_small.returncode == 2 and "--budget" in too_small.stderr


def test_context_prints_the_block_export_writes(learned: Any, billing_checkout: Path) -> None:
    root, env = learned
    target = billing_checkout / "CLAUDE.md"
    export(root, env, target)
    printed = memdream("context", "-m", root, env=env, cwd=billing_checkout).stdout
    assert printed == target.read_text(encoding="utf-8")
