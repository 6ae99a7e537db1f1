"""How a project is built, tested, linted, formatted and run: one card per project, from the commands
that succeeded more than once (or once, bare, beside those), in their stable form.

Real-format Claude Code and Codex sessions in, through the command line users run (`ingest`, `dream`,
`cards`), on a memory made by `memdream init`.
"""

from __future__ import annotations

import json
import zlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memdream.dream.extractors.procedures import invocations
from memdream.dream.procedures import Procedure, body
from tests.transcripts import ClaudeSession, CodexSession, pytest_passed

SHOP = "/home/dev/shop-web"
LEDGER = "/home/dev/ledger"
REAL_SESSIONS = Path(__file__).resolve().parents[2].parent / "shared" / "bench" / "real-sessions"


def _start(day: int, hour: int = 9) -> datetime:
    return datetime(2026, 11, day, hour, 0, tzinfo=timezone.utc)


def _session_id(name: str, number: int) -> str:
    return f"5c1d{number:04d}-9f41-4d6e-b8a3-{zlib.crc32(name.encode()):012d}"


def _dream(run: Any, memory: Path, logs: Path) -> dict[str, Any]:
    assert run("ingest", logs, "-m", memory).exit_code == 0
    done = run("dream", "-m", memory, "--format", "json")
    assert done.exit_code == 0, done.stderr
    return dict(json.loads(done.stdout))


def _procedures(run: Any, memory: Path, *args: str) -> list[dict[str, Any]]:
    cards = json.loads(run("cards", "-m", memory, "--format", "json", "--type", "strategy", *args).stdout)
    return [card for card in cards if "procedure" in card.get("tags", [])]


def _vitest(passed: int) -> str:
    """What `vitest run` prints when every test passed."""
    return f" Test Files  1 passed (1)\n      Tests  {passed} passed ({passed})\n   Duration  1.32s"


def _shop_sessions(logs: Path) -> None:
    """Three sessions of a web shop: tests (one file, one test by name, all), build, lint, run repeatedly."""
    first = ClaudeSession(_session_id("shop", 1), SHOP, _start(3))
    first.user("Add a cart badge that shows the number of items.")
    first.bash("npm ci", "added 812 packages in 14s")
    first.bash("npm test -- --run src/cart/badge.test.ts", _vitest(4))
    first.bash("npm run build 2>&1 | tail -5", "dist/assets/index-4f2a.js  212.40 kB\n✓ built in 3.81s")
    first.bash("npm run lint", "")
    first.bash('git add src/cart && git commit -m "Add the cart badge"', "[main 4e1f2a9] Add the cart badge")
    first.bash("npx storybook@latest upgrade --yes", "Upgraded to 8.4.2")  # once: an experiment
    first.write(logs)
    second = CodexSession(_session_id("shop", 2), SHOP, _start(5))
    second.user("Coupons must not apply twice.")
    second.shell('npm test -- --run src/checkout/coupon.test.ts -t "applies a coupon once"', _vitest(7))
    second.shell("npm test -- --run", _vitest(93))
    second.shell("npm run lint", "")
    second.shell("npm run build", "✓ built in 3.62s")
    second.shell('git commit -am "Apply a coupon once"', "[main 8c2d1b0] Apply a coupon once")
    second.write(logs)
    third = ClaudeSession(_session_id("shop", 3), SHOP, _start(8))
    third.user("Start the dev server, I want to look at the badge.")
    third.bash("npm run dev -- --port 5174", "VITE v5.4.2  ready in 412 ms\n➜  Local: http://localhost:5174/")
    third.bash("npm test -- --run src/cart/badge.test.ts src/cart/total.test.ts", _vitest(9))
    third.bash("npm run dev -- --host", "VITE v5.4.2  ready in 398 ms")
    third.write(logs)


def test_a_project_run_several_times_gives_one_card_with_the_stable_commands(run: Any, memory: Path,
                                                                             tmp_path: Path) -> None:
    _shop_sessions(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert card["scope"] == "shop-web" and card["attribute"] == "procedures" and card["status"] == "verified"
    assert card["statement"] == ("In shop-web: build `npm run build`; test `npm test -- --run` (one file: "
                                 "`npm test -- --run <file>`); lint `npm run lint`; run `npm run dev -- <args>`.")
    # Each run it came from is cited, as every card cites its evidence; lint checks every reference.
    assert card.get("evidence_count", len(card["evidence"])) >= 8
    assert run("lint", memory).exit_code == 0


def test_file_lists_messages_and_one_off_arguments_do_not_show(run: Any, memory: Path, tmp_path: Path) -> None:
    _shop_sessions(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    text = card["statement"] + card["value"]
    for one_off in ("badge.test.ts", "coupon.test.ts", "applies a coupon once", "Add the cart badge", "5174",
                    "--host", "tail", "2>&1", "storybook", "git", "npm ci"):
        assert one_off not in text, one_off  # `npm ci` ran once: not yet how the project is set up


def test_a_failed_run_counts_only_when_it_ran_the_tests(run: Any, memory: Path, tmp_path: Path) -> None:
    """Failing tests are still run with the project's test command; a run that never got to the tests
    (a compile error, a build that failed) is no evidence, and a failed run speaks for its test command only."""
    for number, day in enumerate((3, 6), start=1):
        session = ClaudeSession(_session_id("ledger-failing", number), LEDGER, _start(day))
        session.user("Fix the rounding of VAT.")
        session.bash("pytest -q", "F..\n1 failed, 2 passed in 0.31s", exit_code=1)
        # Through a pipe the exit code is tail's: the output still says the tests failed.
        session.bash("make lint", "ruff check .\nAll checks passed!")
        session.bash("npm run build", "npm ERR! Missing script: \"build\"", exit_code=1)
        session.bash("ruff format --check . && cargo test", "error: could not compile `vat` (lib) due to 2 previous "
                                                            "errors", exit_code=101)
        session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert card["statement"] == "In ledger: test `pytest -q`; lint `make lint`."


def test_failing_runs_narrowed_to_one_test_do_not_outvote_the_passing_command(run: Any, memory: Path,
                                                                           tmp_path: Path) -> None:
    for number, day in enumerate((3, 6), start=1):
        session = ClaudeSession(_session_id("ledger-narrowed", number), LEDGER, _start(day))
        session.user("Fix the rounding of VAT.")
        for _ in range(3):  # re-run the failing test alone, more often than the whole suite passes
            session.bash("pytest -q -k test_round", "F\n1 failed, 40 deselected in 0.21s", exit_code=1)
        session.bash("pytest -q", "." * 41 + "\n41 passed in 0.35s")
        session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert card["statement"] == "In ledger: test `pytest -q`."


@pytest.mark.parametrize("output", [
    "running 175 tests\ntest a ... ok\ntest b ... FAILED\n\ntest result: FAILED. 174 passed; 1 failed; 0 ignored",
    "============ 1 failed, 12 passed in 3.10s ============",
    "FAIL src/a.test.ts\n Test Files  1 failed | 3 passed (4)\n      Tests  1 failed | 30 passed (31)",
    "Tests:       1 failed, 9 passed, 10 total",
    "--- FAIL: TestRound (0.00s)\nFAIL\nFAIL\texample.com/vat\t0.012s",
    "Ran 12 tests in 0.031s\n\nFAILED (failures=1)",
    "12 tests, 1 failure",
])
def test_a_test_runner_s_report_of_failing_tests_says_the_tests_ran(output: str) -> None:
    from memdream.dream.extractors._runs import Run
    from memdream.dream.extractors.procedures import succeeded, tests_ran

    failed = Run({}, "make test", False, output)
    assert tests_ran(failed) and not succeeded(failed)


@pytest.mark.parametrize("output", [
    "error: could not compile `vat` (lib test) due to 3 previous errors",
    "failed in sandbox MacosSeatbelt with execution error: command timed out",
    "ERROR: file or directory not found: tests/test_vat.py\n\nno tests ran in 0.01s",
    "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored",
    "npm ERR! Missing script: \"test\"",
])
def test_a_run_that_never_got_to_the_tests_is_no_test_run(output: str) -> None:
    from memdream.dream.extractors._runs import Run
    from memdream.dream.extractors.procedures import tests_ran

    assert not tests_ran(Run({}, "make test", False, output))


def test_a_runner_switch_updates_the_card(run: Any, memory: Path, tmp_path: Path) -> None:
    for number, day in enumerate((2, 4), start=1):
        session = ClaudeSession(_session_id("ledger-python", number), LEDGER, _start(day))
        session.user("Add the monthly report.")
        session.bash("poetry run pytest -q", pytest_passed(30, 1.2))
        session.write(tmp_path / "python")
    _dream(run, memory, tmp_path / "python")
    [python] = _procedures(run, memory)
    assert python["statement"] == "In ledger: test `poetry run pytest -q`."
    for number, day in enumerate((10, 12), start=1):  # the port to Rust
        session = CodexSession(_session_id("ledger-rust", number), LEDGER, _start(day))
        session.user("Port the report to the Rust crate.")
        session.shell("cd crates && cargo test -p ledger-core", "test result: ok. 30 passed; 0 failed; 0 ignored")
        session.shell("cd crates && cargo clippy -p ledger-core -- -D warnings", "Finished `dev` profile")
        session.write(tmp_path / "rust")
    _dream(run, memory, tmp_path / "rust")
    [rust] = _procedures(run, memory)
    assert rust["statement"] == ("In ledger, from crates: test `cargo test -p ledger-core`; "
                                 "lint `cargo clippy -p ledger-core -- -D warnings`.")
    assert rust["supersedes"] == [python["id"]]
    [old] = _procedures(run, memory, "--status", "superseded")
    assert old["id"] == python["id"] and old["superseded_by"] == [rust["id"]]
    # A dream with nothing new changes nothing.
    assert json.loads(run("dream", "-m", memory, "--format", "json").stdout)["operations"] == []


@pytest.mark.parametrize("with_the_runs", [False, True], ids=["dreamed-alone", "dreamed-with-new-runs"])
def test_procedures_the_user_rejected_are_not_made_again_from_more_runs(run: Any, memory: Path, tmp_path: Path,
                                                                         with_the_runs: bool) -> None:
    _shop_sessions(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert run("reject", card["id"], "--note", "we build with the Makefile now", "-m", memory).exit_code == 0
    if not with_the_runs:
        run("dream", "-m", memory)
        assert _procedures(run, memory) == []
    session = ClaudeSession(_session_id("shop", 4), SHOP, _start(20))
    session.user("Run the checks again.")
    session.bash("npm run lint", "")
    session.write(tmp_path / "more")
    report = _dream(run, memory, tmp_path / "more")
    assert _procedures(run, memory) == [] and report["not_admitted"].get("rejected by the user") == 1
    [archived] = _procedures(run, memory, "--status", "archived")
    assert archived["id"] == card["id"] and run("lint", memory).exit_code == 0


def test_a_command_run_once_in_one_session_gives_nothing(run: Any, memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession(_session_id("one-off", 1), SHOP, _start(3))
    session.user("Does the suite pass?")
    session.bash("npm test", _vitest(93))
    session.bash("npm run build", "✓ built in 3.62s")
    session.write(tmp_path / "logs")
    report = _dream(run, memory, tmp_path / "logs")
    assert _procedures(run, memory, "--archived") == []
    assert report["not_admitted"].get("no recurring procedure") == 1


def test_a_bare_command_run_once_joins_a_project_whose_commands_recur(run: Any, memory: Path,
                                                                      tmp_path: Path) -> None:
    session = ClaudeSession(_session_id("bare", 1), SHOP, _start(3))
    session.user("Fix the total on the cart page.")
    session.bash("npm test -- --run src/cart/total.test.ts", _vitest(4))
    session.bash("npm test -- --run", _vitest(93))
    session.bash("npm run build", "✓ built in 3.62s")  # bare: how the project builds
    session.bash("npm run lint -- --fix src/cart", "")  # once, with arguments: an experiment
    session.bash("npm install", "up to date in 2s")  # a bare install says nothing a lockfile does not
    session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert card["statement"] == "In shop-web: build `npm run build`; test `npm test -- --run`."


NEXT_DEV = "   ▲ Next.js 15.5.2\n   - Local:        http://localhost:{port}\n   - Network:      http://192.168.1.22:{port}"


def test_a_dev_server_run_in_the_background_is_one_run_and_the_card_says_where_it_serves(
        run: Any, memory: Path, tmp_path: Path) -> None:
    """A background run's output comes through later reads (BashOutput); the run is counted once, and the
    address the newest run as the card shows it printed is on the card, not one a `--port` run used."""
    for number, day in ((1, 3), (2, 5)):
        session = ClaudeSession(_session_id("dev-server", number), SHOP, _start(day))
        session.user("Start the dev server so I can look at the page.")
        if number == 1:
            shell = session.bash_background("npm run dev -- --port 3001")
            session.bash_output(shell, NEXT_DEV.format(port=3001))
        shell = session.bash_background("npm run dev")
        session.bash_output(shell, "> shop-web@0.1.0 dev\n> next dev")
        session.bash_output(shell, NEXT_DEV.format(port=3000) + "\n ✓ Ready in 1098ms")
        session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    [card] = _procedures(run, memory)
    assert card["statement"] == "In shop-web: run `npm run dev` (serves http://localhost:3000)."
    assert "192.168" not in card["statement"] and "3001" not in card["statement"]


def test_one_background_run_read_three_times_is_no_recurring_procedure(run: Any, memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession(_session_id("one-background", 1), SHOP, _start(3))
    session.user("Start the dev server.")
    shell = session.bash_background("npm run dev")
    for _ in range(3):
        session.bash_output(shell, NEXT_DEV.format(port=3000))
    session.write(tmp_path / "logs")
    report = _dream(run, memory, tmp_path / "logs")
    assert _procedures(run, memory, "--archived") == []
    assert report["not_admitted"].get("no recurring procedure") == 1


def test_a_temporary_folder_is_no_project(run: Any, memory: Path, tmp_path: Path) -> None:
    session = ClaudeSession(_session_id("temporary", 1), "/tmp/tmpq8w2x7ke", _start(3))
    session.user("Port the helpers to Rust.")
    for _ in range(3):
        session.bash("cargo test 2>&1", "test result: ok. 12 passed; 0 failed")
    session.write(tmp_path / "logs")
    _dream(run, memory, tmp_path / "logs")
    assert _procedures(run, memory, "--archived") == []


@pytest.mark.parametrize(("command", "expected"), [
    ("cd codex-rs && cargo fmt --all && cargo clippy -p codex-core -- -D warnings | tail -20",
     [("format", "cargo fmt", "codex-rs", "--all"), ("lint", "cargo clippy", "codex-rs", "-p codex-core -- -D warnings")]),
    ("RUST_LOG=debug cargo run -p cli --bin tool -- exec --json", [("run", "cargo run", None, "-p cli --bin tool -- exec --json")]),
    (".venv/bin/python -m pytest -q tests/dream 2>&1", [("test", ".venv/bin/python -m pytest", None, "-q tests/dream")]),
    ("bash -lc 'uv run ruff check . >/dev/null'", [("lint", "uv run ruff check", None, ".")]),
    ("npx tsc --noEmit", [("type-check", "npx tsc", None, "--noEmit")]),
    ("make test && make", [("test", "make test", None, ""), ("build", "make", None, "")]),
    ("pnpm dev --port 3000", [("run", "pnpm dev", None, "--port 3000")]),
    ("docker compose up -d db", [("run", "docker compose up", None, "-d db")]),
    ("npm run test:unit", [("test", "npm run test:unit", None, "")]),
])
def test_commands_are_read_as_a_shell_reads_them(command: str, expected: list[tuple[str, str, str | None, str]]) -> None:
    found = []
    for invocation in invocations(command):
        words = [word for item in invocation.items for word in (item[2:] if item[0] == "flag" else item[-1:])
                 if word is not None]
        found.append((invocation.purpose, invocation.head, invocation.folder, " ".join(words)))
    assert found == expected


@pytest.mark.parametrize("command", [
    "git commit -m \"$(cat <<'EOF' …", "python - <<'PY' …", "make clean", "npm install lodash", "pnpm add zod",
    "ls -la && cat package.json", "sed -n '1,80p' Cargo.toml", "apply_patch <<'PATCH' …", "./scripts/release.sh",
])
def test_commands_that_look_edit_or_add_a_package_are_no_procedure(command: str) -> None:
    assert list(invocations(command)) == []


def test_a_folder_shows_once_for_all_or_with_each_command_that_runs_from_it() -> None:
    both = [Procedure("format", "cargo fmt --all", "codex-rs", None, []),
            Procedure("lint", "cargo clippy", "codex-rs", None, [])]
    assert body(both) == "from codex-rs: format `cargo fmt --all`; lint `cargo clippy`"
    one = [Procedure("build", "npm run build", None, None, []),
           Procedure("test", "cargo test", "core", "one test: `cargo test <name>`", [])]
    assert body(one) == "build `npm run build`; test `cargo test` (one test: `cargo test <name>`; from core)"


@pytest.mark.skipif(not (REAL_SESSIONS / "codemie-ai__codemie-code").is_dir(), reason="real sessions not here")
def test_real_sessions_give_the_test_commands_stable_form(run: Any, memory: Path) -> None:
    _dream(run, memory, REAL_SESSIONS / "codemie-ai__codemie-code")
    [card] = _procedures(run, memory)
    assert card["scope"] == "codemie-code"
    assert "test `npm test -- --run` (one file: `npm test -- --run <file>`)" in card["statement"]
    assert ".test.ts" not in card["statement"] and "Compaction" not in card["statement"]
