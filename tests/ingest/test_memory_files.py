"""CLAUDE.md, AGENTS.md and a Codex memories folder as the user's word: ingest them, dream, and the
rules are cards with the user's authority; the managed block, code and secrets stay out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from memdream import yamlio
from memdream.ingest.adapters import ParseContext, memory_files
from memdream.memory.paths import MemoryPaths
from memdream.memory.raw import RawLayer
from tests.conftest import before_the_clock
from tests.gitutil import git

SECRET = "ghp_Zq4V8nR2mK7pL1sT9wX3yB6cD0fH5jN8aE2u"

CLAUDE_MD = f"""---
description: project memory for billing-api
---
# billing-api

This file provides guidance to Claude Code (claude.ai/code) when working with code in this repository.

## Commands

- Run the tests with `poetry run pytest -q`, never with a bare `pytest`.
- **Always** run `ruff check .` before committing.
- To apply the migrations:
  ```sh
  poetry run alembic upgrade head
  ```
- [ ] Don't push to main; open a pull request instead.

```python
def example():
    return "Always write code like this"  # code, not a rule
```

## Environment

The staging database listens on port 6432.
The deploy token is {SECRET} and must never be printed.

| command | what |
|---|---|
| make test | runs the tests |

@docs/conventions.md

<!-- memdream:begin (written by memdream context --export; edits here are replaced) -->
## What memdream learned
- Use uv instead of pip.
<!-- memdream:end -->

<!-- a note to myself: Never deploy on Fridays -->
"""

RULES = [
    "Run the tests with `poetry run pytest -q`, never with a bare `pytest`.",
    "Always run `ruff check .` before committing.",
    "To apply the migrations: `poetry run alembic upgrade head`",
    "Don't push to main; open a pull request instead.",
    "The staging database listens on port 6432.",
    f"The deploy token is {SECRET} and must never be printed.",
]


def memdream(*args: str | os.PathLike[str], cwd: Path | None = None) -> Any:
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "memdream", *map(os.fspath, args)], capture_output=True,
                          text=True, cwd=cwd, env={**os.environ, "COLUMNS": "200"})


def project_folder(tmp_path: Path, name: str = "billing-api") -> Path:
    """A checkout of a project: a git repository with an origin, as the file's folder is in real use."""
    folder = tmp_path / "work" / name
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    git(folder, "remote", "add", "origin", f"git@github.com:acme/{name}.git")
    return folder


def parsed(path: Path) -> list[dict[str, Any]]:
    before_the_clock(path)
    ctx = ParseContext(source=str(path), default_session="unused", modified=path.stat().st_mtime)
    with open(path, encoding="utf-8") as stream:
        return list(memory_files.parse(iter(stream), ctx))


def cards(memory: Path, folder: str = "cards") -> list[dict[str, Any]]:
    return [yamlio.load_file(path) for path in sorted((memory / folder).glob("*/*.yaml"))]


def ingest_json(memory: Path, *paths: Path | str) -> dict[str, Any]:
    done = memdream("ingest", *paths, "-m", memory, "-f", "json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def dream_json(memory: Path) -> dict[str, Any]:
    done = memdream("dream", "-m", memory, "-f", "json")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_each_bullet_and_sentence_line_is_a_rule_and_the_rest_is_left_out(tmp_path: Path) -> None:
    path = project_folder(tmp_path) / "CLAUDE.md"
    path.write_text(CLAUDE_MD, encoding="utf-8")
    events = parsed(path)
    assert [event["text"] for event in events] == RULES
    assert {event["session"] for event in events} == {events[0]["session"]}
    assert events[0]["session"] == "memory-file/billing-api/CLAUDE.md"
    for event in events:
        assert event["kind"] == "message" and event["actor"] == "user"
        assert event["tags"] == ["memory-file", "project:billing-api"]
        assert event["meta"] == {"ts_synthetic": True, "memory_file": "CLAUDE.md"}


def test_an_edited_rule_gets_a_new_id_and_the_others_keep_theirs(tmp_path: Path) -> None:
    path = project_folder(tmp_path) / "AGENTS.md"
    path.write_text("# Rules\n\n- Use pnpm for installs.\n- Keep functions short.\n", encoding="utf-8")
    before = {event["text"]: event["id"] for event in parsed(path)}
    path.write_text("# Rules\n\n- Use   pnpm\n  for installs.\n\n- Keep functions under 30 lines.\n", encoding="utf-8")
    after = {event["text"]: event["id"] for event in parsed(path)}
    assert after["Use pnpm for installs."] == before["Use pnpm for installs."]  # re-wrapped, same rule
    assert after["Keep functions under 30 lines."] not in before.values()


def test_the_users_own_folders_hold_global_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claude_home = tmp_path / "home" / ".claude"
    claude_home.mkdir(parents=True)
    (claude_home / "CLAUDE.md").write_text("- I prefer short answers without preamble.\n", encoding="utf-8")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "AGENTS.md").write_text("- Ask before adding a production dependency.\n", encoding="utf-8")
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    for path in (claude_home / "CLAUDE.md", codex_home / "AGENTS.md"):
        (event,) = parsed(path)
        assert event["tags"] == ["memory-file"], path
        assert event["session"] in ("memory-file/global/claude/CLAUDE.md", "memory-file/global/codex-home/AGENTS.md")


CODEX_MEMORY = """---
rollout_summary_files:
  - 2026-11-20T10-00-00-fix-rounding.md (success, cwd=/home/dev/billing-api, updated_at=2026-11-20T10:30:00Z)
description: invoice rounding and tests
keywords: pytest, poetry, rounding
---

- Run the tests through Poetry: `poetry run pytest -q`; a bare `pytest` cannot import the `billing` package.
- Related skill: skills/billing-tests/SKILL.md

---
rollout_summary_files:
  - 2026-11-22T09-00-00-docs.md (success, cwd=/home/dev/handbook, updated_at=2026-11-22T09:10:00Z)
description: the handbook site
keywords: mkdocs
---

- Build the handbook with `mkdocs build --strict` before opening a pull request.
"""

CODEX_SUMMARY = """## User Profile

Dana is a backend engineer in Berlin who likes terse answers.

## General Tips

- Keep answers short: lead with the command, then one line of why.

## What's in Memory

- billing tests: poetry, pytest
  - desc: how to run the billing-api tests
"""


def test_a_codex_memories_folder_gives_each_block_the_project_it_was_learned_in(tmp_path: Path) -> None:
    folder = tmp_path / ".codex" / "memories"
    (folder / "rollout_summaries").mkdir(parents=True)
    (folder / "MEMORY.md").write_text(CODEX_MEMORY, encoding="utf-8")
    (folder / "memory_summary.md").write_text(CODEX_SUMMARY, encoding="utf-8")
    (folder / "raw_memories.md").write_text("- a draft of the model's\n", encoding="utf-8")
    (folder / "rollout_summaries" / "2026-11-20T10-00-00-fix-rounding.md").write_text("- a recap\n", encoding="utf-8")
    memory_events = parsed(folder / "MEMORY.md")
    assert [(event["text"][:28], event["tags"]) for event in memory_events] == [
        ("Run the tests through Poetry", ["memory-file", "project:billing-api"]),
        ("Build the handbook with `mkd", ["memory-file", "project:handbook"]),
    ]
    (tip,) = parsed(folder / "memory_summary.md")
    assert tip["text"].startswith("Keep answers short") and tip["tags"] == ["memory-file"]


def test_a_codex_memories_folder_is_read_as_memory_files_and_its_drafts_are_not(memory: Path, tmp_path: Path) -> None:
    folder = tmp_path / "codex-home" / "memories"
    (folder / "rollout_summaries").mkdir(parents=True)
    (folder / "MEMORY.md").write_text(CODEX_MEMORY, encoding="utf-8")
    (folder / "memory_summary.md").write_text(CODEX_SUMMARY, encoding="utf-8")
    (folder / "raw_memories.md").write_text("- a draft of the model's\n", encoding="utf-8")
    (folder / "rollout_summaries" / "fix-rounding.md").write_text("- a recap\n", encoding="utf-8")
    report = ingest_json(memory, folder)
    assert {(Path(item["source"]).name, item["format"], item["added"]) for item in report["sources"]} == {
        ("MEMORY.md", "memory-file", 2), ("memory_summary.md", "memory-file", 1)}


def test_claude_md_becomes_cards_with_the_users_authority_and_a_second_ingest_adds_nothing(
        memory: Path, tmp_path: Path) -> None:
    path = project_folder(tmp_path) / "CLAUDE.md"
    path.write_text(CLAUDE_MD, encoding="utf-8")

    first = ingest_json(memory, path)
    assert (first["sources"][0]["format"], first["added"]) == ("memory-file", len(RULES))
    assert first["redactions"] == {"github-token": 1}
    assert SECRET not in "".join(p.read_text(encoding="utf-8") for p in (memory / "raw" / "segments").glob("*"))

    dreamed = dream_json(memory)
    assert dreamed["commit"]
    made = {card["value"]: card for card in cards(memory)}
    assert "Use uv instead of pip." not in made  # the managed block is memdream's own output
    assert not any("Always write code" in value or "Fridays" in value for value in made)
    assert made["6432"]["type"] == "fact" and made["6432"]["scope"] == "billing-api"
    for rule in RULES[:4]:
        card = made[rule]
        assert (card["type"], card["scope"]) == ("lesson", "billing-api"), rule
        assert card["evidence"][0]["kind"] == "feedback"  # the user's word: strong evidence
        assert card["evidence"][0]["ref"].startswith("log://memory-file/billing-api/CLAUDE.md#rule-")
    assert made[RULES[0]]["statement"] == (
        'In billing-api, the user\'s standing instruction (CLAUDE.md): "Run the tests with `poetry run pytest -q`, '
        'never with a bare `pytest`."')
    assert not any(SECRET in json.dumps(card) for card in made.values())

    os.utime(path, (path.stat().st_atime + 3600, path.stat().st_mtime + 3600))  # touched, not changed
    again = ingest_json(memory, path)
    assert (again["added"], again["duplicates"]) == (0, len(RULES))
    assert dream_json(memory)["commit"] is None
    assert len(cards(memory)) == len(made)


def test_an_edited_rule_supersedes_the_card_of_the_old_one(memory: Path, tmp_path: Path) -> None:
    path = project_folder(tmp_path) / "AGENTS.md"
    path.write_text("## Workflow\n\n- Always run `ruff check .` before committing.\n- Use pnpm for installs.\n",
                    encoding="utf-8")
    ingest_json(memory, path)
    dream_json(memory)
    path.write_text("## Workflow\n\n- Never run `ruff check .` before committing, CI does it.\n"
                    "- Use pnpm for installs.\n", encoding="utf-8")
    os.utime(path, (path.stat().st_atime + 60, path.stat().st_mtime + 60))
    assert ingest_json(memory, path)["added"] == 1
    dream_json(memory)
    values = {card["value"]: card["status"] for card in cards(memory)}
    archived = {card["value"]: card["status"] for card in cards(memory, "archive")}
    assert values["Never run `ruff check .` before committing, CI does it."] != "superseded"
    assert archived == {"Always run `ruff check .` before committing.": "superseded"}


def test_a_folder_walk_finds_instruction_files_beside_transcripts(memory: Path, tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from tests.transcripts import PROJECT_CWD, ClaudeSession, claude_project_dir

    root = project_folder(tmp_path)
    (root / "AGENTS.md").write_text("- Use pnpm for installs.\n", encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "README.md").write_text("- not an instruction file\n", encoding="utf-8")
    (root / "node_modules" / "left-pad").mkdir(parents=True)  # a dependency's rules are not the user's
    (root / "node_modules" / "left-pad" / "AGENTS.md").write_text("- Use tabs.\n", encoding="utf-8")
    session = ClaudeSession("5b0e2a4c-1d3f-4a6b-8c9d-0e1f2a3b4c5d", PROJECT_CWD, datetime(2026, 11, 20, tzinfo=timezone.utc))
    session.user("Add a health check endpoint.")
    session.assistant("Done.")
    session.write(root / "logs" / claude_project_dir(PROJECT_CWD))
    report = ingest_json(memory, root)
    assert sorted((Path(item["source"]).name, item["format"]) for item in report["sources"]) == [
        ("5b0e2a4c-1d3f-4a6b-8c9d-0e1f2a3b4c5d.jsonl", "claude-code"), ("AGENTS.md", "memory-file")]


def test_the_log_format_can_be_named(memory: Path, tmp_path: Path) -> None:
    path = tmp_path / "team-rules.md"
    path.write_text("- Review every migration with a second person.\n", encoding="utf-8")
    assert memdream("ingest", path, "-m", memory).returncode == 1  # not told by its name, not sniffed
    report = ingest_json(memory, "--log-format", "memory-file", path)
    assert report["sources"][0]["format"] == "memory-file" and report["added"] == 1
    stored = [event for _, event in RawLayer(MemoryPaths(memory)).iter_events()]
    assert [event["text"] for event in stored] == ["Review every migration with a second person."]


def test_the_block_context_export_writes_is_never_read_back_as_the_users_word(memory: Path, tmp_path: Path) -> None:
    path = project_folder(tmp_path) / "CLAUDE.md"
    path.write_text("# billing-api\n\n- Always run `ruff check .` before committing.\n", encoding="utf-8")
    ingest_json(memory, path)
    dream_json(memory)
    exported = memdream("context", "--export", path, "-m", memory)
    assert exported.returncode == 0, exported.stderr
    text = path.read_text(encoding="utf-8")
    assert "<!-- memdream:begin" in text and text.count("ruff check") >= 2  # the card, shown in the block
    path.write_text(text + "\n- Use pnpm for installs.\n", encoding="utf-8")  # the user goes on writing below it
    again = ingest_json(memory, path)
    assert (again["added"], again["duplicates"]) == (1, 1)  # only the new rule: the block adds nothing
    events = [event for _, event in RawLayer(MemoryPaths(memory)).iter_events()]
    assert [event["text"] for event in events] == ["Always run `ruff check .` before committing.",
                                                   "Use pnpm for installs."]


def test_a_begin_marker_without_its_end_hides_nothing(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text("<!-- memdream:begin (managed by memdream) -->\n- Keep commits small and focused.\n",
                    encoding="utf-8")
    assert [event["text"] for event in parsed(path)] == ["Keep commits small and focused."]


def test_every_checkout_of_a_repository_is_one_source(memory: Path, tmp_path: Path) -> None:
    main = project_folder(tmp_path)
    (main / "services" / "api").mkdir(parents=True)
    (main / "services" / "api" / "AGENTS.md").write_text("- Keep handlers thin.\n", encoding="utf-8")
    git(main, "add", ".")
    git(main, "commit", "-q", "-m", "rules")
    worktree = tmp_path / "work" / "billing-api-worktrees" / "fix-rounding"
    git(main, "worktree", "add", "-q", str(worktree))
    (event,) = parsed(main / "services" / "api" / "AGENTS.md")
    assert event["session"] == "memory-file/billing-api/services/api/AGENTS.md"
    assert ingest_json(memory, main / "services" / "api" / "AGENTS.md")["added"] == 1
    # The same rule in another checkout is the same statement, not a second one that would verify it.
    again = ingest_json(memory, worktree / "services" / "api" / "AGENTS.md")
    assert (again["added"], again["duplicates"]) == (0, 1)
