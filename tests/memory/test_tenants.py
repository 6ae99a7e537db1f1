"""Tenants (issue 25, item 3): one memory each under one root, real git repositories, real processes.

Two tenants learn the same subjects with different values from logs that even share their session and
event ids; every command run for one of them shows its own values and never the other's. Choosing a
tenant (option, variable, user settings file) and every way it can go wrong is one line and an exit code;
another tenant's cards, events and runs copied or merged into a memory are findings of lint and audit.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memdream.integrations.claude_settings import is_memdream_command
from memdream.memory.tenant_marks import marked, read_marks
from tests.conftest import FIXED_NOW
from tests.gitutil import git
from tests.review.dream_history import bare_environment, event, write_events

REPO = Path(__file__).resolve().parents[2]
ACME, GLOBEX = "acme", "globex"
# What each tenant learns about the same subjects: (export bucket region, staging database host, goal).
LEARNED = {
    ACME: ("eu-central-1", "db-acme-7.internal", "restore the nightly export of the Lisbon shop"),
    GLOBEX: ("us-west-2", "db-globex-3.internal", "restore the nightly export of the Denver shop"),
}
OTHER = {ACME: GLOBEX, GLOBEX: ACME}


def tenant_log(folder: Path, tenant: str) -> Path:
    """A small memdream-format log: a goal, a note and a tool reading per fact, the user's confirmation, and
    a later reading. Both tenants' logs share their first session and its event ids: references alone
    cannot tell those apart."""
    region, host, goal = LEARNED[tenant]
    ts = "2026-11-07T09:{:02d}:00Z".format
    events = [
        event("s-0007", "g1", ts(0), "goal", goal, goal=goal),
        event("s-0007", "n1", ts(1), "note", f"export bucket is {region}",
              fact={"subject": "export-bucket", "attribute": "region", "value": region}),
        event("s-0007", "r1", ts(2), "tool_result", f"LocationConstraint: {region}", tool="aws", ok=True,
              fact={"subject": "export-bucket", "attribute": "region", "value": region}),
        event("s-0007", "f1", ts(3), "feedback", f"yes, the bucket is in {region}", verdict="confirm", target="r1"),
        event("s-0007", "n2", ts(4), "note", f"staging database host is {host}",
              fact={"subject": "staging-db", "attribute": "host", "value": host}),
        event("s-0007", "r2", ts(5), "tool_result", f"host: {host}", tool="psql", ok=True,
              fact={"subject": "staging-db", "attribute": "host", "value": host}),
        event("s-0007", "o1", ts(6), "outcome", "export restored", ok=True),
        # A second reading, in a session only this tenant had.
        event(f"{tenant}-0008", "r3", "2026-11-08T10:00:00Z", "tool_result", f"LocationConstraint: {region}",
              tool="aws", ok=True, fact={"subject": "export-bucket", "attribute": "region", "value": region}),
    ]
    return write_events(folder / f"{tenant}.jsonl", events)


def memdream(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command line as users run it, in a process of its own, with ``env`` added to the environment."""
    return subprocess.run([sys.executable, "-m", "memdream", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd or REPO, input=stdin, check=False,
                          timeout=120)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def at(root: Path) -> dict[str, str]:
    return {"MEMDREAM_ROOT": str(root)}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The root of two tenants, each initialised, fed its log and dreamed through the command line."""
    with bare_environment(tmp_path_factory):
        root = tmp_path_factory.mktemp("tenants") / "root"
        logs = tmp_path_factory.mktemp("logs")
        for tenant in (ACME, GLOBEX):
            ok(memdream("init", "--tenant", tenant, env=at(root)))
            ok(memdream("ingest", tenant_log(logs, tenant), "--tenant", tenant, env=at(root)))
            ok(memdream("dream", "--tenant", tenant, env=at(root)))
        return root


@pytest.fixture
def root(built: Path, tmp_path: Path) -> Path:
    """A private copy of the two tenants (git histories, raw layers, local state) a test may change."""
    copy = tmp_path / "root"
    shutil.copytree(built, copy, symlinks=True)
    return copy


def assert_only(tenant: str, text: str) -> None:
    """``text`` shows what ``tenant`` learned and nothing the other tenant learned."""
    region, host, _ = LEARNED[tenant]
    assert region in text and host in text
    for value in LEARNED[OTHER[tenant]]:
        assert value not in text


# --- isolation -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tenant", [ACME, GLOBEX])
def test_recall_in_one_tenant_never_returns_the_other_tenants_memory(root: Path, tenant: str) -> None:
    query = "export bucket region staging database host nightly export shop"
    as_json = ok(memdream("recall", query, "--tenant", tenant, "--format", "json", env=at(root)))
    as_text = ok(memdream("recall", query, "--tenant", tenant, env=at(root)))
    assert_only(tenant, as_json)
    assert_only(tenant, as_text)
    assert LEARNED[tenant][2] in as_text  # the plan's goal
    items = json.loads(as_json)["items"]
    assert {item["source"] for item in items} >= {"plan", "card"}
    cards = {item["id"] for item in items if item["source"] == "card"}
    mine = {card["id"] for card in json.loads(ok(memdream("cards", "--memory", root / tenant, "--format", "json")))}
    assert cards and cards <= mine


@pytest.mark.parametrize("tenant", [ACME, GLOBEX])
def test_cards_show_export_and_stats_stay_in_their_tenant(root: Path, tenant: str) -> None:
    cards = json.loads(ok(memdream("cards", "--tenant", tenant, "--format", "json", env=at(root))))
    assert {card["subject"] for card in cards} >= {"export-bucket", "staging-db"}
    assert_only(tenant, json.dumps(cards))
    shown = "".join(ok(memdream("show", card["id"], "--tenant", tenant, env=at(root))) for card in cards)
    assert LEARNED[OTHER[tenant]][0] not in shown and LEARNED[OTHER[tenant]][1] not in shown
    bundle = ok(memdream("export", "--subject", "export-bucket", "--tenant", tenant, env=at(root)))
    assert LEARNED[tenant][0] in bundle
    assert all(value not in bundle for value in LEARNED[OTHER[tenant]])
    stats = json.loads(ok(memdream("stats", "--tenant", tenant, "--format", "json", env=at(root))))
    assert all(value not in json.dumps(stats) for value in LEARNED[OTHER[tenant]])
    mine = json.loads(ok(memdream("cards", "--memory", root / tenant, "--format", "json")))
    assert mine == cards  # the tenant's memory is the folder <root>/<name>


def test_the_variable_and_the_option_choose_the_same_memory(root: Path) -> None:
    query = ["recall", "export bucket region", "--format", "json"]

    def shown(output: str) -> list[tuple[str, str]]:  # scores move: recall counts what it returned
        return [(item["id"], item["text"]) for item in json.loads(output)["items"]]

    by_option = ok(memdream(*query, "--tenant", ACME, env=at(root)))
    by_variable = ok(memdream(*query, env={**at(root), "MEMDREAM_TENANT": ACME}))
    assert shown(by_option) == shown(by_variable)
    assert ok(memdream("cards", "-f", "json", "--tenant", ACME, env=at(root))) == \
        ok(memdream("cards", "-f", "json", env={**at(root), "MEMDREAM_TENANT": ACME}))
    # The option beats the variable, as --memory beats MEMDREAM_MEMORY.
    overridden = ok(memdream(*query, "--tenant", GLOBEX, env={**at(root), "MEMDREAM_TENANT": ACME}))
    assert_only(GLOBEX, ok(memdream("cards", "--tenant", GLOBEX, "--format", "json", env=at(root))))
    assert LEARNED[GLOBEX][0] in overridden and LEARNED[ACME][0] not in overridden


def test_each_tenant_is_its_own_git_repository_that_names_its_tenant(root: Path) -> None:
    for tenant in (ACME, GLOBEX):
        folder = root / tenant
        assert Path(git(folder, "rev-parse", "--show-toplevel").strip()) == folder.resolve()
        assert f"\ntenant: {tenant}\n" in (folder / "memdream.yaml").read_text(encoding="utf-8")
        history = git(folder, "log", "-p", "--format=%B")
        assert LEARNED[tenant][0] in history
        assert all(value not in history for value in LEARNED[OTHER[tenant]])
        audit = "".join(path.read_text(encoding="utf-8") for path in (folder / "audit").glob("*.jsonl"))
        assert audit and all(json.loads(line)["tenant"] == tenant for line in audit.splitlines())
    assert not (root / ".git").exists()  # the root is only a folder: no repository, no index, no list


def test_init_for_a_tenant(tmp_path: Path) -> None:
    root = tmp_path / "not-yet" / "root"
    first = ok(memdream("init", "--tenant", "team-a", env=at(root)))
    assert f"Created memory at {root / 'team-a'}" in first
    again = memdream("init", env={**at(root), "MEMDREAM_TENANT": "team-a"})
    assert again.returncode == 0 and "already a memory; nothing changed" in again.stdout
    both = memdream("init", tmp_path / "elsewhere", "--tenant", "team-a", env=at(root))
    assert (both.returncode, both.stderr) == (2, "memdream: give PATH or --tenant, not both\n")
    assert not (tmp_path / "elsewhere").exists()
    in_repo = memdream("init", "--tenant", "team-b", "--in-repo", env=at(root))
    assert in_repo.returncode == 2 and "own git repository" in in_repo.stderr


def test_the_root_may_come_from_the_user_settings_file(root: Path, tmp_path: Path) -> None:
    config = tmp_path / "xdg" / "memdream" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"# where my tenants live\nroot: {root}\n", encoding="utf-8")
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert_only(ACME, ok(memdream("cards", "--tenant", ACME, "--format", "json", env=xdg)))
    # MEMDREAM_ROOT wins over the file.
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(root / GLOBEX, elsewhere / ACME, symlinks=True)
    wrong = memdream("cards", "--tenant", ACME, env={**xdg, **at(elsewhere)})
    assert wrong.returncode == 1 and "says tenant 'globex', not 'acme'" in wrong.stderr
    home_config = Path(os.environ["HOME"]) / ".config" / "memdream" / "config.yaml"  # no XDG_CONFIG_HOME
    home_config.parent.mkdir(parents=True)
    home_config.write_text(f"root: {root}\n", encoding="utf-8")
    assert_only(GLOBEX, ok(memdream("cards", "--tenant", GLOBEX, "--format", "json")))


def _swap(root: Path) -> None:
    """globex's memory moved into acme's place (acme's put aside)."""
    (root / ACME).rename(root / "acme-old")
    (root / GLOBEX).rename(root / ACME)


def _bad_config(text: str) -> Any:
    def write(root: Path, home: Path) -> None:
        path = home / ".config" / "memdream" / "config.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return write


ERRORS = [
    # (id, arguments, environment ({root} is the root), how to spoil the root or the settings, exit, message)
    ("no-root", ["--tenant", ACME], {}, None, 1, "memdream: no tenant root: set MEMDREAM_ROOT, or 'root: PATH' in"),
    ("parent", ["--tenant", "../globex"], {"MEMDREAM_ROOT": "{root}"}, None, 2,
     "memdream: --tenant: '../globex' is not a tenant name (1 to 64 letters"),
    ("slash", ["--tenant", "acme/../globex"], {"MEMDREAM_ROOT": "{root}"}, None, 2, "is not a tenant name"),
    ("hidden", ["--tenant", ".acme"], {"MEMDREAM_ROOT": "{root}"}, None, 2, "is not a tenant name"),
    ("empty", ["--tenant", ""], {"MEMDREAM_ROOT": "{root}"}, None, 2, "memdream: --tenant: '' is not a tenant name"),
    ("default", ["--tenant", "default"], {"MEMDREAM_ROOT": "{root}"}, None, 2,
     "memdream: --tenant: 'default' names the memory of no tenant: choose another name"),
    ("variable-name", [], {"MEMDREAM_ROOT": "{root}", "MEMDREAM_TENANT": "a b"}, None, 2,
     "memdream: MEMDREAM_TENANT: 'a b' is not a tenant name"),
    ("with-memory", ["--tenant", ACME, "--memory", "{root}/acme"], {"MEMDREAM_ROOT": "{root}"}, None, 2,
     "memdream: --memory and --tenant both name a memory: give one of them"),
    ("both-variables", [], {"MEMDREAM_ROOT": "{root}", "MEMDREAM_TENANT": ACME, "MEMDREAM_MEMORY": "{root}/acme"},
     None, 2, "memdream: MEMDREAM_MEMORY and MEMDREAM_TENANT are both set"),
    ("unknown", ["--tenant", "initech"], {"MEMDREAM_ROOT": "{root}"}, None, 1,
     "memdream: --tenant initech: no memory at {root}/initech (root from MEMDREAM_ROOT; `memdream init --tenant "
     "initech` creates it)"),
    ("moved-in", ["--tenant", ACME], {"MEMDREAM_ROOT": "{root}"}, lambda root, home: _swap(root), 1,
     "memdream: {root}/acme: its memdream.yaml says tenant 'globex', not 'acme': a memory moved or renamed into "
     "the place of tenant acme is not opened"),
    ("config-key", ["--tenant", ACME], {}, _bad_config("rot: /srv/memories\n"), 1,
     "config.yaml: unknown setting 'rot' (known: root)"),
    ("config-relative", ["--tenant", ACME], {}, _bad_config("root: memories\n"), 1,
     "config.yaml: root 'memories' must be an absolute path (or start with ~)"),
    ("config-yaml", ["--tenant", ACME], {}, _bad_config("root: [\n"), 1, "config.yaml: not valid YAML"),
    ("config-list", ["--tenant", ACME], {}, _bad_config("- /srv\n"), 1, "config.yaml: must be a mapping"),
]


@pytest.mark.parametrize(("arguments", "environment", "spoil", "code", "message"),
                         [pytest.param(*case[1:], id=case[0]) for case in ERRORS])
def test_a_wrong_tenant_is_one_line_and_an_exit_code(root: Path, arguments: list[str], environment: dict[str, str],
                                                     spoil: Any, code: int, message: str) -> None:
    if spoil is not None:
        spoil(root, Path(os.environ["HOME"]))
    filled = {name: value.format(root=root) for name, value in environment.items()}
    done = memdream("recall", "export bucket", *[argument.format(root=root) for argument in arguments], env=filled)
    assert done.returncode == code, done.stderr
    assert done.stderr.count("\n") == 1 and message.format(root=root) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("command", [["lint"], ["dream"], ["ingest", "--spool"], ["audit", "--verify"],
                                     ["context"], ["hooks", "install", "claude-code", "--print"]])
def test_every_command_refuses_a_memory_moved_into_a_tenants_place(root: Path, command: list[str]) -> None:
    _swap(root)
    done = memdream(*command, "--tenant", ACME, env=at(root))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"memdream: {root}/acme: its memdream.yaml says tenant 'globex', not 'acme': a memory "
                           "moved or renamed into the place of tenant acme is not opened\n")
    assert git(root / ACME, "status", "--porcelain") == ""


def test_every_command_with_memory_takes_tenant() -> None:
    import typer.main

    from memdream.cli import app

    def commands(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
        for name, command in group.commands.items():
            if hasattr(command, "commands"):
                yield from commands(command, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}", command

    missing = [name for name, command in commands(typer.main.get_command(app))
               if any("--memory" in param.opts for param in command.params)
               and not any("--tenant" in param.opts for param in command.params)]
    assert missing == []


# --- references across tenants: lint and audit --verify --------------------------------------------------------

def test_clean_tenants_pass_lint_and_audit(root: Path) -> None:
    for tenant in (ACME, GLOBEX):
        lint = memdream("lint", "--tenant", tenant, env=at(root))
        assert (lint.returncode, lint.stdout) == (0, ""), lint.stdout + lint.stderr
        verify = memdream("audit", "--verify", "--tenant", tenant, env=at(root))
        assert (verify.returncode, verify.stdout) == (0, ""), verify.stdout + verify.stderr


def _commit_as_person(folder: Path, message: str) -> None:
    """Commit everything as a person who vouches for it: audit --verify then has only the tenants to object to."""
    git(folder, "add", "--all")
    git(folder, "commit", "-q", "-m", message, "-m", "Memdream-Human-Edit: Ada Lovelace <ada@example.org>")


def test_a_card_copied_from_another_tenant_is_rejected_by_lint_and_audit(root: Path) -> None:
    acme, globex = root / ACME, root / GLOBEX
    card = next(path for path in (globex / "cards" / "facts").glob("*.yaml")
                if "staging-db" in path.read_text(encoding="utf-8"))
    (audit,) = (globex / "audit").glob("*.jsonl")
    shutil.copy(card, acme / "cards" / "facts" / card.name)
    shutil.copy(audit, acme / "audit" / audit.name)
    _commit_as_person(acme, "Take globex's staging database card")
    lint = memdream("lint", "--tenant", ACME, env=at(root))
    assert lint.returncode == 1
    run = audit.stem
    card_line = f"cards/facts/{card.name}:1:5: {card.stem} is a card of tenant globex (audit/{run}.jsonl:"
    assert f"{acme}/audit/{run}.jsonl:1:1: run {run} ran in the memory of tenant globex (" in lint.stdout
    assert f"{acme}/{card_line}" in lint.stdout and "not of tenant acme: remove it [tenant]" in lint.stdout
    verify = memdream("audit", "--verify", "--tenant", ACME, env=at(root))
    assert verify.returncode == 1
    assert f"audit/{run}.jsonl:1: run {run} ran in the memory of tenant globex" in verify.stdout
    assert f"cards/facts/{card.name}:1: {card.stem} is a card of tenant globex" in verify.stdout
    problems = json.loads(memdream("audit", "--verify", "--tenant", ACME, "-f", "json", env=at(root)).stdout)
    assert {"path": f"audit/{run}.jsonl", "line": 1} in [
        {key: problem[key] for key in ("path", "line") if key in problem} for problem in problems["problems"]]
    # globex itself is untouched and clean
    assert memdream("lint", "--tenant", GLOBEX, env=at(root)).returncode == 0


def test_a_reference_to_another_tenants_event_or_card_is_rejected(root: Path) -> None:
    """A hand-written plan item that cites an event only globex's runs cite, and a card that names one of
    globex's cards as its origin, both next to globex's audit file."""
    acme, globex = root / ACME, root / GLOBEX
    (audit,) = (globex / "audit").glob("*.jsonl")
    shutil.copy(audit, acme / "audit" / audit.name)
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    foreign_card = next(line["card"] for line in lines if line["op"] == "add")
    own_refs = "".join(path.read_text(encoding="utf-8") for path in (acme / "audit").glob("*.jsonl")
                       if path.name != audit.name)
    foreign_ref = next(ref for line in lines for ref in line.get("evidence", []) if ref not in own_refs)
    plan = acme / "plan.yaml"
    plan.write_text(plan.read_text(encoding="utf-8").replace(
        "next: []", f"next:\n- text: ask the Denver team\n  evidence:\n  - {foreign_ref}"), encoding="utf-8")
    own_card = next((acme / "cards" / "facts").glob("*.yaml"))
    own_card.write_text(own_card.read_text(encoding="utf-8") + f"derived_from:\n- {foreign_card}\n", encoding="utf-8")
    _commit_as_person(acme, "Plan and card by hand")
    lint = memdream("lint", "--tenant", ACME, env=at(root))
    assert lint.returncode == 1
    assert "plan.yaml:" in lint.stdout and f"{foreign_ref} is an event of tenant globex (audit/{audit.name}:" \
        in lint.stdout
    assert f"derived_from: {foreign_card} is a card of tenant globex" in lint.stdout
    verify = memdream("audit", "--verify", "--tenant", ACME, env=at(root))
    assert verify.returncode == 1 and f"{foreign_ref} is an event of tenant globex" in verify.stdout
    assert "plan.yaml:" in verify.stdout


def test_a_memory_renamed_into_another_tenants_place_keeps_its_marks(root: Path) -> None:
    """Editing memdream.yaml lets the folder open as acme's; its runs still say they were globex's."""
    _swap(root)
    config = root / ACME / "memdream.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("tenant: globex", "tenant: acme"), encoding="utf-8")
    _commit_as_person(root / ACME, "Call it acme")
    assert memdream("cards", "--tenant", ACME, env=at(root)).returncode == 0
    lint = memdream("lint", "--tenant", ACME, env=at(root))
    assert lint.returncode == 1 and "ran in the memory of tenant globex" in lint.stdout
    assert memdream("audit", "--verify", "--tenant", ACME, env=at(root)).returncode == 1


def test_marks_are_read_cheaply_and_unmarked_lines_are_nobodys(tmp_path: Path) -> None:
    own = marked({"run": "r1", "op": "add", "card": "f-1", "evidence": ["log://s#1"]}, ACME)
    assert list(own)[:2] == ["run", "op"] and own["tenant"] == ACME
    assert "tenant" not in marked({"run": "r1", "op": "add"}, "default")  # a memory of no tenant marks nothing
    unmarked = {"run": "r0", "op": "add", "card": "f-2", "evidence": ["log://s#2"]}
    foreign = marked({"run": "r2", "op": "add", "card": "f-3", "evidence": ["log://s#3", "log://s#1"]}, GLOBEX)
    texts = [(tmp_path / "audit" / "r1.jsonl", json.dumps(own) + "\n" + json.dumps(unmarked) + "\n")]
    assert read_marks(ACME, texts).clean
    marks = read_marks(ACME, [*texts, (tmp_path / "audit" / "r2.jsonl", json.dumps(foreign) + "\n")])
    assert [(line.run, line.tenant, count) for line, count in marks.files] == [("r2", GLOBEX, 1)]
    assert set(marks.cards) == {"f-3"} and set(marks.refs) == {"log://s#3"}  # log://s#1 is acme's too
    assert not read_marks(GLOBEX, [*texts[:0], (tmp_path / "audit" / "r2.jsonl", json.dumps(foreign))]).files


# --- hooks, the SessionStart context and MCP carry the tenant ----------------------------------------------------

def _hook_commands(settings: Path) -> dict[str, str]:
    data = json.loads(settings.read_text(encoding="utf-8"))
    return {event: hook["command"] for event, groups in data["hooks"].items()
            for group in groups for hook in group["hooks"] if is_memdream_command(hook["command"])}


def test_hooks_installed_for_a_tenant_name_it_and_find_its_memory(root: Path, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    ok(memdream("hooks", "install", "claude-code", "--tenant", ACME, env=at(root), cwd=project))
    commands = _hook_commands(project / ".claude" / "settings.json")
    assert set(commands) == {"SessionStart", "SessionEnd", "PreCompact"}
    for command in commands.values():
        words = shlex.split(command)
        assert words[0] == f"MEMDREAM_ROOT={root}" and words[-2:] == ["--tenant", ACME]
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "x", "cwd": str(project)})
    started = subprocess.run(["sh", "-c", commands["SessionStart"]], input=payload, capture_output=True, text=True,
                             cwd=project, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False, timeout=120)
    assert started.returncode == 0 and started.stderr == "", started.stderr
    assert LEARNED[ACME][2] in started.stdout and LEARNED[GLOBEX][2] not in started.stdout
    queued = subprocess.run(["sh", "-c", commands["SessionEnd"]], capture_output=True, text=True, cwd=project,
                            input=json.dumps({"transcript_path": str(tmp_path / "t.jsonl"), "session_id": "x"}),
                            env={**os.environ, "PYTHONPATH": str(REPO)}, check=False, timeout=120)
    assert queued.returncode == 0, queued.stderr
    assert (root / ACME / ".memdream" / "spool.jsonl").is_file()
    assert not (root / GLOBEX / ".memdream" / "spool.jsonl").exists()
    ok(memdream("hooks", "uninstall", "claude-code", cwd=project))
    assert "hooks" not in json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))


def test_hooks_leave_the_root_to_the_user_settings_file_when_it_gives_it(root: Path, tmp_path: Path) -> None:
    config = Path(os.environ["HOME"]) / ".config" / "memdream" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"root: {root}\n", encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir()
    ok(memdream("hooks", "install", "claude-code", cwd=project, env={"MEMDREAM_TENANT": GLOBEX}))
    for command in _hook_commands(project / ".claude" / "settings.json").values():
        assert "MEMDREAM_ROOT" not in command and shlex.split(command)[-2:] == ["--tenant", GLOBEX]


def test_mcp_serves_the_tenants_memory_only(root: Path) -> None:
    pytest.importorskip("mcp")
    import asyncio

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memdream", "mcp", "--tenant", GLOBEX],
        env={"MEMDREAM_NOW": FIXED_NOW, "HOME": os.environ["HOME"], "PYTHONPATH": str(REPO), "MEMDREAM_ROOT": str(root),
             "GIT_CONFIG_GLOBAL": os.environ["GIT_CONFIG_GLOBAL"], "GIT_CONFIG_NOSYSTEM": "1"},
        cwd=str(REPO))

    async def conversation() -> Any:
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("recall", {"query": "export bucket region staging database host"})

    result = asyncio.run(conversation())
    text = "".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    assert_only(GLOBEX, text)
