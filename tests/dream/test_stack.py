"""The project's stack, from the manifests the agent read whole: one fact per project and manifest,
the newest reading winning. Real-format Claude Code and Codex sessions, through `ingest`, `dream` and
`cards` on a memory made by `memdream init`."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors.manifests import read_path, stack_line
from tests.transcripts import ClaudeSession, CodexSession

SHOP = "/home/dev/shop-web"
PACKAGE = {
    "name": "shop-web", "type": "module",
    "scripts": {"dev": "vite", "build": "vite build", "test": "vitest"},
    "dependencies": {"react": "19.1.0", "react-dom": "19.1.0", "zod": "^3.23.8"},
    "devDependencies": {"@types/react": "^19", "typescript": "^5.6.2", "vite": "^5.4.2", "vitest": "^2.1.1"},
}


def _start(day: int) -> datetime:
    return datetime(2026, 11, day, 9, 0, tzinfo=timezone.utc)


def _stack_cards(run: Any, memory: Path, *args: str) -> list[dict[str, Any]]:
    cards = json.loads(run("cards", "-m", memory, "--format", "json", "--type", "fact", *args).stdout)
    return [card for card in cards if "stack" in card.get("tags", [])]


def _dream(run: Any, memory: Path, logs: Path) -> None:
    assert run("ingest", logs, "-m", memory).exit_code == 0
    done = run("dream", "-m", memory)
    assert done.exit_code == 0, done.stderr


def test_a_package_json_read_whole_becomes_the_projects_stack(run: Any, memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("5c1d0001-9f41-4d6e-b8a3-000000000001", SHOP, _start(3))
    session.user("Add a cart badge that shows the number of items.")
    session.tool("Read", {"file_path": f"{SHOP}/package.json"}, json.dumps(PACKAGE, indent=2))
    session.tool("Read", {"file_path": f"{SHOP}/node_modules/zod/package.json"},
                 json.dumps({"name": "zod", "dependencies": {"left-pad": "1.0.0"}}))
    session.tool("Read", {"file_path": "/home/dev/other-app/package.json"},  # another project's
                 json.dumps({"name": "other-app", "dependencies": {"left-pad": "1.0.0"}}))
    session.tool("Read", {"file_path": f"{SHOP}/vendor-ui/packages/left-pad/package.json"},  # a part, deep down
                 json.dumps({"name": "left-pad", "dependencies": {"left-pad": "1.0.0"}}))
    session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _stack_cards(run, memory)
    assert card["scope"] == "shop-web" and card["attribute"] == "stack of package.json"
    assert card["statement"] == (
        "In shop-web, package.json shows: ES modules; dependencies react 19.1.0, react-dom 19.1.0, zod ^3.23.8; "
        "dev dependencies typescript ^5.6.2, vite ^5.4.2, vitest ^2.1.1.")
    assert "left-pad" not in json.dumps(card)  # a dependency's own manifest is not the project's
    assert run("lint", memory).exit_code == 0


def test_an_upgrade_read_later_supersedes_the_stack(run: Any, memory: Path, tmp_path: Path) -> None:
    first = ClaudeSession("5c1d0001-9f41-4d6e-b8a3-000000000002", SHOP, _start(3))
    first.user("Add a cart badge that shows the number of items.")
    first.bash("cat package.json", json.dumps(PACKAGE, indent=2))
    first.write(tmp_path / "logs")
    upgraded = {**PACKAGE, "dependencies": {**PACKAGE["dependencies"], "react": "19.2.0", "react-dom": "19.2.0"}}
    second = CodexSession("0197a3c2-1111-7000-8000-000000000003", SHOP, _start(9))
    second.user("Upgrade react and check that the build still works.")
    second.shell("cat package.json", json.dumps(upgraded, indent=2))
    second.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _stack_cards(run, memory)
    assert "react 19.2.0" in card["value"] and "19.1.0" not in card["value"]
    [old] = [each for each in _stack_cards(run, memory, "--archived") if each["id"] != card["id"]]
    assert "react 19.1.0" in old["value"] and card["id"] in old.get("superseded_by", [])


def test_part_of_a_file_or_a_session_without_a_project_gives_no_stack(run: Any, memory: Path,
                                                                       tmp_path: Path) -> None:
    cut = ClaudeSession("5c1d0001-9f41-4d6e-b8a3-000000000004", SHOP, _start(3))
    cut.user("Which react do we use?")
    text = json.dumps(PACKAGE, indent=2)
    cut.tool("Read", {"file_path": f"{SHOP}/package.json", "limit": 5}, "\n".join(text.splitlines()[:5]))
    cut.bash("grep react package.json", '"react": "19.1.0",')
    cut.write(tmp_path / "logs")
    temporary = ClaudeSession("5c1d0001-9f41-4d6e-b8a3-000000000005", "/tmp/tmpq8w2x7ke", _start(4))
    temporary.user("Port the helpers to Rust.")
    temporary.bash("cat Cargo.toml", '[package]\nname = "helpers"\nedition = "2021"\n')
    temporary.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    assert _stack_cards(run, memory, "--archived") == []


@pytest.mark.parametrize(("call", "expected"), [
    ({"tool": "Read", "args": {"file_path": "/a/package.json"}}, ("/a/package.json", None)),
    ({"tool": "Read", "args": {"file_path": "/a/package.json", "offset": 40}}, None),
    ({"tool": "shell", "args": {"command": ["bash", "-lc", "sed -n '1,200p' Cargo.toml"]}}, ("Cargo.toml", 200)),
    ({"tool": "Bash", "args": {"command": "head -n 50 pyproject.toml"}}, ("pyproject.toml", 50)),
    ({"tool": "Bash", "args": {"command": "cat package.json | jq .scripts"}}, None),
    ({"tool": "Bash", "args": {"command": "cat a/package.json b/package.json"}}, None),
    ({"tool": "Bash", "args": {"command": "sed -n '40,80p' Cargo.toml"}}, None),
])
def test_only_a_reading_from_the_first_line_counts(call: dict[str, Any], expected: Any) -> None:
    assert read_path(call) == expected


@pytest.mark.parametrize(("path", "text", "expected"), [
    ("Cargo.toml", '[workspace]\nmembers = ["core", "cli"]\n', "a Rust workspace of 2 crates (core, cli)"),
    ("Cargo.toml", '[workspace]\nmembers = ["orchestrator"]\n', None),  # its one crate's manifest says more
    ("cli/Cargo.toml", '[package]\nname = "cli"\nversion = { workspace = true }\n', None),  # a member
    ("Cargo.toml", '[package]\nname = "ledger"\nedition = "2021"\n[dependencies]\nserde = "1"\n'
     'core = { path = "../core" }\n', "the Rust crate ledger (edition 2021); dependencies serde 1"),
    ("pyproject.toml", '[project]\nname = "ai-clean"\nrequires-python = ">=3.11"\ndependencies = ["typer>=0.12", '
     '"rich"]\n[tool.pytest.ini_options]\naddopts = "-q"\n',
     "the Python package ai-clean (Python >=3.11); dependencies typer>=0.12, rich; configures pytest"),
    ("docker-compose.yaml", "services:\n  api:\n    build: .\n  broker:\n    image: rabbitmq:3-management\n",
     "services api, broker (rabbitmq:3-management)"),
    ("go.mod", "module github.com/acme/ledger\n\ngo 1.22\n", "the Go module github.com/acme/ledger (Go 1.22)"),
    ("package.json", '{\n  "name": "shop",\n  "dependencies": {\n    "react": "19', None),  # cut at a limit
    ("vendor/x/go.mod", "module x\n", None),
])
def test_what_a_manifest_says(path: str, text: str, expected: str | None) -> None:
    assert stack_line(path, text) == expected


def test_a_package_jsons_scripts_say_how_to_build_test_and_run(run: Any, memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession("5c1d0001-9f41-4d6e-b8a3-000000000007", SHOP, _start(3))
    session.user("Add a cart badge that shows the number of items.")
    package = {**PACKAGE, "packageManager": "pnpm@9.1.0",
               "scripts": {**PACKAGE["scripts"], "postinstall": "patch-package", "lint": "eslint ."}}
    session.tool("Read", {"file_path": f"{SHOP}/web/package.json"}, json.dumps(package, indent=2))
    session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    cards = json.loads(run("cards", "-m", memory, "--format", "json", "--type", "fact").stdout)
    [scripts] = [card for card in cards if "scripts" in card.get("tags", [])]
    assert scripts["attribute"] == "scripts of web/package.json"
    assert scripts["statement"] == ("In shop-web, web/package.json's scripts (in web): `pnpm run build`, "
                                    "`pnpm run dev`, `pnpm test`, `pnpm run lint`.")  # no postinstall
    assert len(_stack_cards(run, memory)) == 1


def test_a_codex_commands_output_read_through_write_stdin_is_that_commands(run: Any, memory: Path,
                                                                              tmp_path: Path) -> None:
    rollout = CodexSession("0199a1b2-0000-7000-8000-00000000c0de", SHOP, _start(4))
    rollout.user("Which test runner does this project use?")
    started = rollout._call("exec_command", {"cmd": "cat package.json", "workdir": SHOP})
    rollout._output(started, "Chunk ID: 1a2b3c\nWall time: 1.0 seconds\nProcess running with session ID 4242\n"
                             "Original token count: 0\nOutput:\n")
    polled = rollout._call("write_stdin", {"session_id": 4242, "chars": "", "yield_time_ms": 1000})
    rollout._output(polled, "Chunk ID: 4d5e6f\nWall time: 0.2 seconds\nProcess exited with code 0\n"
                            "Original token count: 120\nOutput:\n" + json.dumps(PACKAGE, indent=2) + "\n")
    rollout.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _stack_cards(run, memory)
    assert card["attribute"] == "stack of package.json" and "vitest ^2.1.1" in card["statement"]
