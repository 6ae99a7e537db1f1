"""Benchmark: the user's preferences and instructions, stated early, in the context of a question asked much later.

Issue 23, item 2: "I prefer / I'd rather / I like / please use / I don't like", in the user's own words, become
preference cards scoped like instructions, resident when they bear on the query or the scope. Measure: a
benchmark built from real-format conversations where preferences and instructions are stated early and the
questions they bear on come much later: preferences in context >= 0.6, instructions >= 0.8, both at least BM25's.

What it builds (fixed seed, ``tests/transcripts.py``): four projects, two written as Claude Code sessions and two
as Codex CLI rollouts. In each, the first sessions state the user's preferences and instructions in varied
phrasings, most inside a message that also asks for a task ("Let's start on the settings page. I prefer pnpm
over npm."), amid one-time requests that look alike and must not become cards ("I'd rather you fix the failing
snapshot tests first.", "I like this layout, go ahead and wire it up."), reads, edits, test runs, commits.
Then many sessions of work whose tool output shares the questions' words (npm install logs, git pushes, test
runs). Then the questions, asked as an agent in that project would ask them (``recall --queries`` with
``--scope`` of the project, at the default budget); each bears on one statement without repeating it ("How
should I install the new date-picker dependency?" for "I prefer pnpm over npm.").

Scores, real processes on a fresh memory (``memdream init``, ``ingest``, ``dream``, ``cards``, ``recall``):

- **in context**: the share of questions whose context holds the statement's key words (a substring of
  what the user said: "pnpm over npm"), for preferences and instructions apart;
- **BM25**: the same for a plain BM25 over the project's raw events at the same byte budget (the best-ranked
  events' lines while they fit: bench/knowledge_bench.py's baseline; the project's events only, as scoped as
  recall's ``--scope``);
- **carded**: the share of stated preferences (instructions) that an active standing card (a lesson tagged
  preference, instruction or correction) quotes;
- **wrong cards**: standing cards that quote a one-time request, or quote nothing the user stated as a rule.

Usage: python bench/preference_bench.py [--show] [--keep DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures, at_least, at_most  # noqa: E402
from bench.real_sessions import bm25_texts, raw_events  # noqa: E402
from tests.transcripts import ClaudeSession, CodexSession, pytest_passed  # noqa: E402

NOW = "2026-12-20T00:00:00Z"
START = datetime(2026, 10, 5, 9, 0, tzinfo=timezone.utc)
SEED = 23
BUDGET = 2000  # recall.budget's default: the questions are asked without --budget
NOISE_SESSIONS = 40  # sessions of plain work per project between the statements and the questions
STANDING_TAGS = {"preference", "instruction", "correction"}
TARGETS = {"preference": 0.6, "instruction": 0.8}


@dataclass(frozen=True)
class Stated:
    """A preference or an instruction as the user says it, the words that show it is in a context, and the
    question asked much later that it bears on."""

    kind: str  # preference | instruction
    said: str
    key: str  # lowercase substring of ``said``
    question: str


@dataclass
class Project:
    name: str
    agent: str  # claude | codex
    stated: list[Stated]
    one_time: list[tuple[str, str]]  # (what the user said, its key words): requests for the task at hand
    tasks: list[str]  # requests of plain work
    commands: list[tuple[str, str]]  # (command, output) the work runs
    files: list[str]
    cwd: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


PREF, RULE = "preference", "instruction"

PROJECTS = [
    Project(
        "web-ui", "claude",
        stated=[
            Stated(PREF, "I prefer pnpm over npm.", "pnpm over npm",
                   "How should I install the new date-picker dependency?"),
            Stated(PREF, "Small thing about style: I don't like default exports, named ones are easier to grep.",
                   "default exports", "How should the new DatePicker component be exported from its file?"),
            Stated(PREF, "I really like Tailwind for styling, much more than CSS modules.", "tailwind for styling",
                   "What should I use to style the new settings panel?"),
            Stated(PREF, "We'd rather keep components small, under 150 lines.", "under 150 lines",
                   "The SettingsPage component keeps growing, what should I do about it?"),
            Stated(PREF, "Personally, vitest is my go-to over jest.", "vitest is my go-to",
                   "Set up unit tests for the formatter utils."),
            Stated(RULE, "Never push to main, open a pull request.", "push to main", "Can I push this fix directly?"),
            Stated(RULE, "From now on, write commit messages in the imperative mood.", "imperative mood",
                   "Commit the settings page changes."),
            Stated(RULE, "Don't ever add a new dependency without asking me.", "without asking me",
                   "Add a library for date formatting."),
            Stated(RULE, "Always run the type checker before committing.", "type checker",
                   "I'm about to commit the refactor, anything to run beforehand?"),
        ],
        one_time=[("I'd rather you fix the failing snapshot tests first.", "snapshot tests first"),
                  ("I like this layout, go ahead and wire it up.", "like this layout"),
                  ("Please use the mock server for this run.", "mock server for this run")],
        tasks=["Add a dark mode toggle to the header.", "Fix the flicker when the table re-renders.",
               "Make the settings form validate emails.", "Bump the chart library and check the build.",
               "Add a loading skeleton to the orders table.", "Clean up the unused icons.",
               "Install the charting dependency and wire it into the dashboard.",
               "Export the table helpers from the utils module so the reports page can use them.",
               "Style the login page to match the new mockups.", "Split the OrdersTable component into two files.",
               "Push the branch when the checks pass.", "Commit what we have so far, then fix the lint errors.",
               "The new component file is missing its tests, add some.", "Update the date library to the new major."],
        commands=[("npm install", "added 1287 packages, and audited 1288 packages in 31s\nfound 0 vulnerabilities"),
                  ("npm run build", "vite v5.2.0 building for production...\n✓ 412 modules transformed.\n"
                                    "dist/index.html 0.46 kB\n✓ built in 4.81s"),
                  ("npx vitest --run", "Test Files  14 passed (14)\n     Tests  96 passed (96)"),
                  ("git push origin feature/dark-mode", "To github.com:acme/web-ui.git\n * [new branch] "
                                                        "feature/dark-mode -> feature/dark-mode"),
                  ("npx eslint src", ""),
                  ("git log --oneline -3", "a1b2c3d Add dark mode toggle\n9f8e7d6 Fix table flicker\n"
                                           "5a4b3c2 Export helpers")],
        files=["src/components/Header.tsx", "src/pages/SettingsPage.tsx", "src/components/OrdersTable.tsx",
               "package.json", "src/utils/format.ts"]),
    Project(
        "billing-api", "claude",
        stated=[
            Stated(PREF, "I prefer httpx over requests for HTTP calls.", "httpx over requests",
                   "Which library should the rates client use to call the currency API?"),
            Stated(PREF, "I like dataclasses for plain records, not dicts.", "dataclasses for plain records",
                   "What should the new Refund record type look like?"),
            Stated(PREF, "I'd rather have small, focused commits.", "focused commits",
                   "How should I split up my changes to the invoice module before committing?"),
            Stated(PREF, "I don't like mocking the database in tests, use the real test database.",
                   "mocking the database", "How should the refund tests talk to Postgres?"),
            Stated(PREF, "Please use structlog for logging in every service.", "structlog",
                   "Add some logging to the webhook handler."),
            Stated(RULE, "Always use type hints on public functions.", "type hints",
                   "Write a function that converts cents to a Decimal."),
            Stated(RULE, "Never log card numbers or emails.", "card numbers",
                   "Print the payment webhook payload so we can debug it."),
            Stated(RULE, "Use ruff instead of flake8.", "ruff instead of flake8",
                   "Set up linting in CI for the new package."),
            Stated(RULE, "Going forward, add a regression test for every bug you fix.", "regression test",
                   "Fix the rounding error in partial refunds."),
        ],
        one_time=[("Please use the staging database for this migration.", "staging database for this migration"),
                  ("I don't like that name, rename it to RefundService.", "don't like that name"),
                  ("I prefer the second option you listed.", "second option you listed"),
                  ("Don't commit yet, I want to review the diff.", "review the diff")],
        tasks=["Add an endpoint that lists refunds.", "Fix the VAT rounding on credit notes.",
               "Add pagination to the invoices endpoint.", "Make the webhook retry on 502.",
               "Speed up the monthly statement query.", "Rename the legacy billing flags.",
               "Call the currency API from the rates client and cache the result.",
               "Add a record of each refund to the audit table.", "The refund tests are slow, speed them up.",
               "Log the webhook event ids so we can trace retries.", "Fix the bug where the invoice total is off.",
               "Write a function that parses the bank's CSV statements.", "Commit the invoice module changes.",
               "Set up the CI job for the new package."],
        commands=[("poetry run pytest -q", pytest_passed(142, 6.3)),
                  ("poetry install", "Installing dependencies from lock file\nNo dependencies to install or update"),
                  ("git push origin fix/vat-rounding", "To github.com:acme/billing-api.git\n * [new branch] "
                                                       "fix/vat-rounding -> fix/vat-rounding"),
                  ("poetry run ruff check .", "All checks passed!"),
                  ("poetry run alembic upgrade head", "INFO  [alembic.runtime.migration] Running upgrade "
                                                      "3f2a -> 7c1d, add refunds table"),
                  ("git commit -am 'Fix VAT rounding'", "[fix/vat-rounding 4e5f6a7] Fix VAT rounding\n"
                                                       " 2 files changed, 14 insertions(+), 3 deletions(-)")],
        files=["billing/refunds.py", "billing/invoices.py", "billing/webhooks.py", "tests/test_refunds.py",
               "pyproject.toml"]),
    Project(
        "infra", "codex",
        stated=[
            Stated(PREF, "I prefer terraform modules from our own registry over community ones.", "own registry",
                   "Which VPC module should the new network stack pull in?"),
            Stated(PREF, "We'd rather tag every resource with an owner and a cost centre.", "cost centre",
                   "Add an S3 bucket for the audit logs."),
            Stated(PREF, "I like the plan output saved to a file before any apply.", "saved to a file",
                   "Apply the DNS changes to staging."),
            Stated(PREF, "Across all projects, I prefer short answers without apologies.", "short answers",
                   "Explain why the plan wants to replace the NAT gateway."),
            Stated(RULE, "Never run terraform apply against prod without a reviewed plan.", "reviewed plan",
                   "Roll out the new security group rules to production."),
            Stated(RULE, "Do not use sudo.", "do not use sudo",
                   "The provider install fails with permission denied in /usr/local, how do I get around it?"),
            Stated(RULE, "Make sure you always pin provider versions.", "pin provider versions",
                   "Add the cloudflare provider to the DNS stack."),
            Stated(RULE, "Always run terraform fmt before you commit.", "terraform fmt before",
                   "Commit the new bucket module."),
        ],
        one_time=[("I'd rather you run the plan first.", "run the plan first"),
                  ("Make sure the state lock is released.", "state lock is released"),
                  ("Please use the eu-west-1 profile for this.", "eu-west-1 profile for this")],
        tasks=["Add a read replica for the orders database.", "Rotate the CI deploy key.",
               "Move the staging DNS zone to Route 53.", "Raise the NAT gateway's idle timeout.",
               "Add alarms for the queue depth.", "Split the network stack into two modules.",
               "Apply the staging changes and check the plan output.", "Add a bucket for the load balancer logs.",
               "Upgrade the aws provider and fix what breaks.", "Roll out the new subnet layout to production.",
               "Why does the plan want to replace the security group?",
               "Commit the DNS module after the plan is clean.",
               "Pull the VPC module into the staging stack."],
        commands=[("terraform plan -out tfplan", "Plan: 3 to add, 1 to change, 0 to destroy."),
                  ("terraform init", "Terraform has been successfully initialized!"),
                  ("terraform apply tfplan", "Apply complete! Resources: 3 added, 1 changed, 0 destroyed."),
                  ("terraform validate", "Success! The configuration is valid."),
                  ("git push origin infra/replica", "To github.com:acme/infra.git\n * [new branch] infra/replica"),
                  ("aws sts get-caller-identity", '{"Account": "123456789012", "Arn": "arn:aws:iam::123456789012:'
                                                  'user/deploy"}')],
        files=["network/main.tf", "network/variables.tf", "dns/main.tf", "databases/replica.tf", "versions.tf"]),
    Project(
        "etl-jobs", "codex",
        stated=[
            Stated(PREF, "I prefer polars to pandas for new code.", "polars to pandas",
                   "Which dataframe library should the daily totals job use?"),
            Stated(PREF, "I'd rather schedule jobs with cron than with Airflow.", "cron than with airflow",
                   "How should the nightly export be scheduled?"),
            Stated(PREF, "I like parquet for intermediate outputs.", "parquet for intermediate",
                   "What should the dedupe step write its output as?"),
            Stated(PREF, "I don't like notebooks checked into the repo.", "notebooks checked into",
                   "Where should I keep the exploration notebook for the churn analysis?"),
            Stated(RULE, "Always make jobs idempotent, they get retried.", "idempotent",
                   "Write the backfill job for March."),
            Stated(RULE, "Never drop tables in the warehouse without a backup.", "without a backup",
                   "Clean up the old staging tables in the warehouse."),
            Stated(RULE, "From now on, run the dbt tests before merging.", "dbt tests before merging",
                   "Is the orders model ready to merge?"),
        ],
        one_time=[("I'd rather you didn't touch the config today.", "touch the config today"),
                  ("I like it, ship it.", "like it, ship it"),
                  ("Please use the sample file in tests/data/orders.csv.", "sample file in tests"),
                  ("Make sure to rerun the failed job.", "rerun the failed job")],
        tasks=["Add a job that loads the refunds export.", "Fix the timezone bug in the daily totals.",
               "Deduplicate customers by email.", "Add a freshness check to the orders source.",
               "Make the export job write to the new bucket.", "Add row counts to the job logs.",
               "Schedule the refunds job to run after the nightly export.", "The dedupe step output is too big.",
               "Drop the duplicate rows from the staging tables.", "Merge the orders model changes once they pass.",
               "Write the daily totals to the warehouse as well.", "Load the churn data into a dataframe."],
        commands=[("python -m jobs.daily_totals --date 2026-10-01", "wrote 18211 rows to totals/2026-10-01"),
                  ("dbt run --select orders", "Completed successfully\nDone. PASS=4 WARN=0 ERROR=0 SKIP=0 TOTAL=4"),
                  ("pytest -q", pytest_passed(58, 3.1)),
                  ("git push origin etl/refunds", "To github.com:acme/etl-jobs.git\n * [new branch] etl/refunds"),
                  ("crontab -l", "0 2 * * * /opt/etl/run.sh daily_totals"),
                  ("ls data/", "orders.csv\nrefunds.csv\ncustomers.parquet")],
        files=["jobs/daily_totals.py", "jobs/export.py", "models/orders.sql", "jobs/dedupe.py", "README.md"]),
]
for _project in PROJECTS:
    _project.cwd = f"/home/dev/{_project.name}"


# -- writing the sessions ------------------------------------------------------------------------------------
class Writer:
    """One session of either agent behind the same few calls."""

    def __init__(self, project: Project, number: int, start: datetime) -> None:
        self.project = project
        session_id = f"{project.name[:6]}-{number:03d}-4b1e-9c2d-7e3f0a5b6c8d"
        if project.agent == "claude":
            self.session: Any = ClaudeSession(session_id, project.cwd, start)
        else:
            self.session = CodexSession(f"0199{number:04d}-{project.name[:4]}-7a21-8d3c-1f4e5b6a7c90", project.cwd,
                                        start, repository_url=f"git@github.com:acme/{project.name}.git")

    def user(self, text: str) -> None:
        self.session.user(text)

    def say(self, text: str) -> None:
        self.session.assistant(text)

    def run(self, command: str, output: str) -> None:
        if self.project.agent == "claude":
            self.session.bash(command, output)
        else:
            self.session.shell(command, output)

    def read(self, path: str, body: str) -> None:
        if self.project.agent == "claude":
            self.session.tool("Read", {"file_path": f"{self.project.cwd}/{path}"}, body)
        else:
            self.session.shell(f"sed -n 1,120p {path}", body)

    def edit(self, path: str) -> None:
        if self.project.agent == "claude":
            self.session.tool("Edit", {"file_path": f"{self.project.cwd}/{path}", "old_string": "TODO",
                                       "new_string": "done"}, f"The file {self.project.cwd}/{path} has been updated.")
        else:
            self.session.apply_patch(f"*** Begin Patch\n*** Update File: {path}\n@@\n-TODO\n+done\n*** End Patch",
                                     [path])

    def write(self, folder: Path) -> None:
        if self.project.agent == "claude":
            self.session.write(folder / "claude" / self.project.name)
        else:
            self.session.write(folder / "codex")


BODY_WORDS = ["const", "return", "props", "value", "import", "export", "def", "self", "total", "rows", "async",
              "await", "resource", "module", "variable", "output", "select", "from", "where", "items"]


def body(rng: random.Random, lines: int) -> str:
    return "\n".join(" ".join(rng.choice(BODY_WORDS) for _ in range(rng.randint(3, 10))) for _ in range(lines))


def work(writer: Writer, rng: random.Random, steps: int, task: str = "") -> None:
    """The noise of a session: reads, commands, edits and the agent's report of the task it did."""
    project = writer.project
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.35:
            writer.read(rng.choice(project.files), body(rng, rng.randint(15, 60)))
        elif roll < 0.75:
            writer.run(*rng.choice(project.commands))
        else:
            writer.edit(rng.choice(project.files))
    done = rng.choice(["Done: the change is in and the checks pass.", "Finished; the build is green.",
                       "All set, see the diff above.", "Implemented and verified locally."])
    writer.say(f"{done} The task was: {task[0].lower()}{task[1:]}" if task else done)


def stating(writer: Writer, rng: random.Random, statements: list[str]) -> None:
    """A session of work in which the user says ``statements``: each inside a task message, alone, or
    after a task, in varied places."""
    project = writer.project
    for text in statements:
        task = rng.choice(project.tasks)
        shape = rng.random()
        if shape < 0.4:
            writer.user(f"{task} {text}")
        elif shape < 0.7:
            writer.user(f"{text} {task}")
        else:
            writer.user(task)
            work(writer, rng, 2)
            writer.user(text)
            writer.say("Understood.")
        work(writer, rng, rng.randint(3, 6), task)


def write_folder(folder: Path, seed: int = SEED) -> int:
    """Every project's sessions: statements (and one-time requests) early, then plain work."""
    rng = random.Random(seed)
    written = 0
    for place, project in enumerate(PROJECTS):
        said = [stated.said for stated in project.stated] + [words for words, _ in project.one_time]
        rng.shuffle(said)
        early = [said[part::3] for part in range(3)]  # three sessions in the first week
        clock = START + timedelta(hours=3 * place)
        for number, statements in enumerate(early):
            writer = Writer(project, number, clock + timedelta(days=2 * number))
            stating(writer, rng, statements)
            writer.write(folder)
            written += 1
        for number in range(3, 3 + NOISE_SESSIONS):  # weeks of plain work
            writer = Writer(project, number, clock + timedelta(days=7 + 4 * number))
            for _ in range(rng.randint(2, 3)):
                task = rng.choice(project.tasks)
                writer.user(task)
                work(writer, rng, rng.randint(4, 8), task)
            writer.write(folder)
            written += 1
    return written


# -- measuring -------------------------------------------------------------------------------------------
def memdream(*args: str) -> str:
    env = {**os.environ, "NO_COLOR": "1", "MEMDREAM_NOW": NOW}
    done = subprocess.run([sys.executable, "-m", "memdream", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"memdream {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return done.stdout


def holds(text: str, key: str) -> bool:
    return key in " ".join(text.lower().split())


def standing_cards(root: Path) -> list[str]:
    """The texts of the active standing cards (lessons tagged preference, instruction or correction)."""
    cards = json.loads(memdream("cards", "-m", str(root), "--format", "json"))
    return [json.dumps(card, ensure_ascii=False) for card in cards
            if card.get("type") == "lesson" and STANDING_TAGS.intersection(card.get("tags") or ())]


def statement_of(card: str) -> str:
    return str(json.loads(card).get("statement", ""))


def project_events(events: list[dict[str, Any]], project: str) -> list[dict[str, Any]]:
    return [event for event in events if f"project:{project}" in (event.get("tags") or ())]


def measure(root: Path, work_dir: Path, show: bool) -> dict[str, Any]:
    cards = standing_cards(root)
    texts = [" ".join(card.lower().replace("\\\"", "\"").split()) for card in cards]
    events = raw_events(root)
    hits: dict[str, dict[str, list[bool]]] = {kind: {"memdream": [], "bm25": [], "carded": []} for kind in TARGETS}
    misses: list[str] = []
    for project in PROJECTS:
        questions = [stated.question for stated in project.stated]
        path = work_dir / f"{project.name}.queries"
        path.write_text("".join(question + "\n" for question in questions), encoding="utf-8")
        out = memdream("recall", "--queries", str(path), "--scope", project.name, "--format", "json",
                       "-m", str(root))
        contexts = [json.loads(line)["context"] for line in out.splitlines() if line.strip()]
        baseline = bm25_texts(project_events(events, project.name), questions, BUDGET)
        for stated, context, plain in zip(project.stated, contexts, baseline):
            found = holds(context, stated.key)
            hits[stated.kind]["memdream"].append(found)
            hits[stated.kind]["bm25"].append(holds(plain, stated.key))
            hits[stated.kind]["carded"].append(any(stated.key in text for text in texts))
            if not found:
                misses.append(f"{project.name}: {stated.kind} {stated.said!r} not in the context of "
                              f"{stated.question!r}")
    keys = [stated.key for project in PROJECTS for stated in project.stated]
    one_time = [key for project in PROJECTS for _, key in project.one_time]
    wrong = [statement_of(card) for card, text in zip(cards, texts)
             if any(key in text for key in one_time) or not any(key in text for key in keys)]
    if show:
        print("standing cards:")
        for card in cards:
            print(f"  {statement_of(card)}")
        print("misses:")
        for miss in misses:
            print(f"  {miss}")
    return {"hits": hits, "wrong": wrong, "cards": len(cards), "misses": misses}


def share(values: list[bool]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--show", action="store_true", help="Print the standing cards and the questions missed.")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="Build the memory and the logs here and keep them.")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    options = parser.parse_args()
    figures = Figures(__file__, "recall quality")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as temp:
        tmp = Path(temp)
        folder, root = tmp / "logs", tmp / "memory"
        sessions = write_folder(folder)
        memdream("init", str(root))
        memdream("ingest", str(folder), "-m", str(root))
        memdream("dream", "-m", str(root))
        result = measure(root, tmp, options.show)
        if options.keep:
            shutil.rmtree(options.keep, ignore_errors=True)
            shutil.copytree(root, options.keep / "memory")
            shutil.copytree(folder, options.keep / "logs")
    hits, wrong = result["hits"], result["wrong"]
    print(f"{sessions} real-format sessions in {len(PROJECTS)} projects; {result['cards']} standing cards; "
          f"questions at the default budget ({BUDGET} B), --scope of the project")
    print(f"{'':12} {'stated':>6} {'carded':>7} {'in context':>11} {'BM25':>6}")
    for kind, target in TARGETS.items():
        found = hits[kind]
        total = len(found["memdream"])
        print(f"{kind + 's':12} {total:6d} {share(found['carded']):7.0%} {share(found['memdream']):11.0%} "
              f"{share(found['bm25']):6.0%}   (target >= {target:.0%} and >= BM25)")
        bm25 = share(found["bm25"])
        figures.add(f"{kind}s stated early in the context of a later question ({total} questions)",
                    share(found["memdream"]), "share",
                    target=at_least(max(target, bm25), f">= {target} and >= BM25 ({bm25})", "issue 23"),
                    floor=("BM25 over the project's raw events, same budget", bm25, "share"))
        figures.add(f"{kind}s stated that became a standing card", share(found["carded"]), "share")
    print(f"wrong standing cards (a one-time request, or nothing stated as a rule): {len(wrong)}")
    for statement in wrong:
        print(f"  wrong: {statement}")
    figures.add("standing cards from a one-time request or from nothing stated", len(wrong), "cards",
                target=at_most(0, "0", "issue 23"))
    print(f"wall {time.perf_counter() - started:.1f} s")
    figures.write(options.json, misses=result["misses"], wrong=wrong)


if __name__ == "__main__":
    main()
