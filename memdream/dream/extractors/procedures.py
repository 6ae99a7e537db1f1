"""Procedures: how a project is built, tested, linted, formatted, type-checked, run and set up.

Per session, one piece of evidence for the key (project, ``procedures``) per shell command that
succeeded and runs a known tool for one of those purposes (:data:`RUNNERS`, :data:`SCRIPT_PURPOSES`:
the table is about ecosystems, never about one project). A command line is read as a shell would:
``cd X &&`` names the folder the rest runs from, chains split into their commands, pipes into
``head``/``tail``/``grep`` and redirections such as ``2>&1`` only shape output and are dropped, and so
is a heredoc's body (ingest keeps a command's first line only). A run whose output reports failures
(``3 failed``, ``test result: FAILED``) is no success, whatever its exit code after a pipe. A test
run is the exception: when the runner's own report shows that tests ran (``running 175 tests``,
``=== 2 failed, 40 passed in 3.1s``, ``Tests: 1 failed, 9 passed``), the command is how the project
is tested whatever the tests said (a developer fixing failing tests runs it most), so its test
command counts; a run that never got to the tests (a compile error, a wrong flag, a sandbox that
refused it) does not.

Each piece holds one invocation: its purpose, the program with its subcommand (``cargo test``,
``npm run build``, ``poetry run pytest``), the folder, and its flags and arguments as written; for a
run, the local address its output said it serves (``Local: http://localhost:3000``). Which
of them recur, and so make the project's stable command, is a question about many sessions: the
induce stage answers it (:mod:`memdream.dream.procedures`).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from memdream.dream.extractors._events import piece, scope_tags, session_project
from memdream.dream.extractors._runs import Run, runs
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey

NAME = "procedure"
UNIT = "session"
ATTRIBUTE = "procedures"
SCRIPT = "<script>"  # in a runner's words: the next word names a script, target or recipe
ALONE = ""  # a runner that needs no argument after it (`make` builds, `make clean` does not)
PURPOSES = ("install", "build", "test", "lint", "format", "type-check", "check", "run")
# Which program and subcommand serve which purpose, across ecosystems. A runner may ask for a flag
# (``tsc --noEmit`` type-checks, ``tsc`` builds); longer matches win.
RUNNERS: tuple[tuple[str, str, str | None], ...] = (
    # JavaScript and TypeScript
    ("npm test", "test", None), ("npm t", "test", None), ("npm start", "run", None), ("npm ci", "install", None),
    ("npm install", "install", None), ("npm i", "install", None), ("npm run <script>", "", None),
    ("npm run-script <script>", "", None), ("pnpm test", "test", None), ("pnpm install", "install", None),
    ("pnpm i", "install", None), ("pnpm run <script>", "", None), ("pnpm <script>", "", None),
    ("yarn test", "test", None), ("yarn install", "install", None), ("yarn", "install", ALONE),
    ("yarn run <script>", "", None), ("yarn <script>", "", None), ("bun test", "test", None),
    ("bun install", "install", None), ("bun run <script>", "", None), ("deno test", "test", None),
    ("deno lint", "lint", None), ("deno fmt", "format", None), ("deno task <script>", "", None),
    ("jest", "test", None), ("vitest", "test", None), ("mocha", "test", None), ("playwright test", "test", None),
    ("eslint", "lint", None), ("prettier", "format", None), ("biome lint", "lint", None),
    ("biome check", "lint", None), ("biome format", "format", None), ("tsc", "type-check", "--noEmit"),
    ("tsc", "build", None), ("vue-tsc", "type-check", None), ("next build", "build", None),
    ("next dev", "run", None), ("next start", "run", None), ("next lint", "lint", None),
    ("vite build", "build", None), ("vite", "run", None), ("webpack", "build", None),
    # Python
    ("pytest", "test", None), ("py.test", "test", None), ("unittest", "test", None), ("tox", "test", None),
    ("nox", "test", None), ("coverage run", "test", None), ("ruff check", "lint", None),
    ("ruff format", "format", None), ("ruff", "lint", None), ("flake8", "lint", None), ("pylint", "lint", None),
    ("black", "format", None), ("isort", "format", None), ("mypy", "type-check", None),
    ("pyright", "type-check", None), ("pip install", "install", None), ("uv sync", "install", None),
    ("poetry install", "install", None), ("pipenv install", "install", None), ("pdm install", "install", None),
    ("build", "build", None), ("poetry build", "build", None), ("uv build", "build", None),
    ("python manage.py test", "test", None), ("python manage.py runserver", "run", None),
    ("uvicorn", "run", None), ("flask run", "run", None),
    # Rust, Go, C and C++
    ("cargo build", "build", None), ("cargo test", "test", None), ("cargo nextest run", "test", None),
    ("cargo llvm-cov", "test", None), ("cargo tarpaulin", "test", None), ("cargo clippy", "lint", None),
    ("cargo fmt", "format", None), ("cargo check", "type-check", None), ("cargo run", "run", None),
    ("go build", "build", None), ("go test", "test", None), ("go vet", "lint", None), ("go fmt", "format", None),
    ("gofmt", "format", None), ("go run", "run", None), ("go mod download", "install", None),
    ("golangci-lint run", "lint", None), ("cmake --build", "build", None), ("ctest", "test", None),
    ("clang-format", "format", None),
    # JVM, .NET, Ruby, PHP, Elixir, Swift
    ("gradle build", "build", None), ("gradle test", "test", None), ("gradlew build", "build", None),
    ("gradlew test", "test", None), ("mvn package", "build", None), ("mvn compile", "build", None),
    ("mvn install", "build", None), ("mvn test", "test", None), ("mvn verify", "check", None),
    ("mvnw package", "build", None), ("mvnw test", "test", None), ("dotnet build", "build", None),
    ("dotnet test", "test", None), ("dotnet run", "run", None), ("dotnet format", "format", None),
    ("dotnet restore", "install", None), ("rspec", "test", None), ("rubocop", "lint", None),
    ("bundle install", "install", None), ("rake test", "test", None), ("rails test", "test", None),
    ("rails server", "run", None), ("phpunit", "test", None), ("composer install", "install", None),
    ("mix test", "test", None), ("mix format", "format", None), ("mix compile", "build", None),
    ("swift build", "build", None), ("swift test", "test", None),
    # Task runners, containers, checks
    ("make <script>", "", None), ("make", "build", ALONE), ("just <script>", "", None), ("task <script>", "", None),
    ("docker build", "build", None), ("docker buildx build", "build", None), ("docker compose build", "build", None),
    ("docker compose up", "run", None), ("docker-compose build", "build", None), ("docker-compose up", "run", None),
    ("pre-commit run", "lint", None), ("shellcheck", "lint", None), ("terraform fmt", "format", None),
    ("terraform validate", "lint", None),
)
# What a script, make target or just recipe is for, by its name (or the part before ``:``, ``-``, ``_``).
SCRIPT_PURPOSES = {
    **dict.fromkeys(("test", "tests", "unit", "spec", "e2e", "integration", "coverage", "cov"), "test"),
    **dict.fromkeys(("build", "compile", "dist", "bundle", "package"), "build"),
    **dict.fromkeys(("lint", "clippy", "eslint", "vet"), "lint"),
    **dict.fromkeys(("format", "fmt", "prettier"), "format"),
    **dict.fromkeys(("typecheck", "type-check", "types", "tsc", "mypy", "check-types"), "type-check"),
    **dict.fromkeys(("dev", "start", "serve", "server", "watch", "preview"), "run"),
    **dict.fromkeys(("install", "setup", "bootstrap", "deps"), "install"),
    **dict.fromkeys(("ci", "check", "checks", "verify", "validate", "precommit", "pre-commit"), "check"),
}
# Words before the program that say how it runs, kept in its name (``poetry run pytest``).
WRAPPERS = (("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run"), ("rye", "run"),
            ("bundle", "exec"), ("pnpm", "exec"), ("pnpm", "dlx"), ("yarn", "dlx"), ("npm", "exec"),
            ("python", "-m"), ("npx",), ("bunx",), ("uvx",))
# Flags that never take a value, so that the word after them is an argument (``-d db``, ``-q tests``).
SWITCHES = frozenset({"-q", "-v", "-vv", "-x", "-s", "-d", "--quiet", "--verbose", "--release", "--all",
                      "--all-features", "--workspace", "--fix", "--noEmit", "--run", "--no-run", "--locked",
                      "--frozen", "--offline", "--check", "--diff", "--detach", "--build", "--watch", "--lib",
                      "--bins", "--tests", "--ci", "--coverage"})
_BY_LENGTH = sorted(((runner.split(), purpose, needs) for runner, purpose, needs in RUNNERS), key=lambda r: -len(r[0]))
_ALIASES = {"python3": "python", "py": "python", "pip3": "pip", "./gradlew": "gradlew", "./mvnw": "mvnw"}
_SHELLS = frozenset({"bash", "sh", "zsh"})
_PREFIXES = frozenset({"time", "env", "command", "nice"})
_OPERATORS = frozenset({"&&", "||", ";", "&", "|", "(", ")", "|&"})
_REDIRECTS = frozenset({">", ">>", "<", ">&", "&>", "&>>", ">|", "<&", "<<<"})
_FILE = re.compile(r"[/*?]|\.[A-Za-z0-9]{1,5}$|^\.{1,2}$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# What a run prints when its checks failed, though its exit code (after a pipe, `|| true`) says 0.
_FAILED = re.compile(r"\b[1-9]\d* (?:failed|failing|errors?)\b|\bFAILED\b|^FAIL\b|^npm ERR!|"
                     r"^error(?:\[E\d+\])?:|^Traceback \(most recent call last\)", re.MULTILINE)


@dataclass(frozen=True)
class Invocation:
    """One command for a purpose: ``head`` as written (``poetry run pytest``), the folder a ``cd`` named,
    and the words after the head as items: ``["flag", side, name, value]``, ``["arg", side, word]`` or
    ``["sep", "--"]`` (side 1: after ``--``)."""

    purpose: str
    head: str
    folder: str | None
    items: tuple[tuple[Any, ...], ...]
    serves: str | None = None  # a run's local address, as its output gave it
    failed: bool = False  # a test run whose tests ran and some failed

    def encode(self) -> str:
        data: dict[str, Any] = {"purpose": self.purpose, "head": self.head, "folder": self.folder,
                                "items": [list(item) for item in self.items]}
        if self.serves:  # left out when there is none: a piece of before is the same value
            data["serves"] = self.serves
        if self.failed:
            data["failed"] = True
        return json.dumps(data, ensure_ascii=False)


def decode(value: str) -> Invocation | None:
    """The invocation a piece holds, or None (a value that redaction cut, an older piece's)."""
    try:
        data = json.loads(value)
        serves = data.get("serves")
        return Invocation(str(data["purpose"]), str(data["head"]), data["folder"],
                          tuple(tuple(item) for item in data["items"]), serves if isinstance(serves, str) else None,
                          data.get("failed") is True)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


# The address a dev server says it listens on: a local one, as dev servers print it (Next.js and Vite
# print "Local: http://localhost:3000/"; others "listening on http://127.0.0.1:8000"). An address on the
# network, or one a log line only mentions in passing, says nothing of how to reach the project's.
_LOCAL_ADDRESS = re.compile(r"\bhttps?://(?:localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1?\]):\d{2,5}\b")
_SERVING_LINE = re.compile(r"\b(?:local|listening|running|serving|started|ready|available)\b", re.IGNORECASE)


def served_address(output: str) -> str | None:
    """The local address a run's output says it serves, or None."""
    for line in output.splitlines():
        found = _LOCAL_ADDRESS.search(line)
        if found is not None and _SERVING_LINE.search(line):
            return found.group(0)
    return None


def _words(command: str) -> list[str]:
    """Shell words and operators; a command cut by ingest (``…``) is closed where it was cut."""
    text = command.rstrip().removesuffix("…").rstrip().removesuffix("\\")
    for closing in ("", '"', "'"):
        lexer = shlex.shlex(text + closing, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        try:
            return list(lexer)
        except ValueError:
            continue
    return text.split()


def simple_commands(command: str) -> Iterator[tuple[str | None, list[str]]]:
    """(folder, words) of each command of a command line, as ``cd`` left the folder; what a pipe feeds,
    redirections and heredocs are dropped."""
    folder: str | None = None
    current: list[str] = []
    piped = target = False
    for word in [*_words(command), ";"]:
        if target:  # the file or descriptor a redirection names
            target = False
        elif word in _OPERATORS:
            if current and not piped:
                folder = yield from _emit(folder, current)
            current, piped = [], word in ("|", "|&")
        elif word in _REDIRECTS or word == "<<":
            if current and current[-1].isdigit():
                current.pop()  # the 2 of 2>&1
            target = True
        elif not piped:
            current.append(word)


def _emit(folder: str | None, words: list[str]) -> Generator[tuple[str | None, list[str]], None, str | None]:
    """Yield one command (or the commands a ``bash -c`` runs); returns the folder after it."""
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _PREFIXES):
        words = words[1:]
    if not words:
        return folder
    if words[0] in ("cd", "pushd"):
        return _folder(words[1]) if len(words) > 1 else None
    if words[0].rsplit("/", 1)[-1] in _SHELLS and len(words) == 3 and words[1] in ("-c", "-lc"):
        yield from simple_commands(words[2])
        return folder
    yield folder, words
    return folder


def _folder(path: str) -> str:
    """A folder under the project as written (``codex-rs``); ``/`` marks one elsewhere."""
    if path.startswith(("/", "~", "$")) or ".." in path.split("/") or path in ("-", "."):
        return "/"
    return path.removeprefix("./").rstrip("/") or "/"


def _name(word: str) -> str:
    return _ALIASES.get(word, word.rsplit("/", 1)[-1])


def _unwrap(words: list[str]) -> int:
    """How many words of ``words`` are wrappers (``poetry run``, ``python -m``, ``npx -y``)."""
    at = 0
    while at < len(words):
        names = [_name(words[at]), *words[at + 1:at + 2]]
        wrapper = next((w for w in WRAPPERS if tuple(names[:len(w)]) == w), None)
        if wrapper is None:
            return at
        at += len(wrapper)
        while at < len(words) - 1 and words[at].startswith("-"):
            at += 1  # the wrapper's own flags: `npx -y tsc`
    return at


def script_purpose(name: str) -> str | None:
    name = name.lower()
    if name in SCRIPT_PURPOSES:
        return SCRIPT_PURPOSES[name]
    first = re.split(r"[:_.-]", name, maxsplit=1)[0]
    return SCRIPT_PURPOSES.get(first)


def classify(words: list[str]) -> tuple[str, int] | None:
    """(purpose, how many words name the program and its subcommand), or None for no known tool."""
    start = _unwrap(words)
    if start >= len(words):
        return None
    names = [_name(words[start]), *words[start + 1:]]
    for pattern, purpose, needs in _BY_LENGTH:
        if len(pattern) > len(names) or any(want not in (SCRIPT, have) for want, have in zip(pattern, names)):
            continue
        rest = names[len(pattern):]
        if needs == ALONE and any(not word.startswith("-") for word in rest):
            continue  # `make clean` is no build: `make` alone is
        if needs not in (None, ALONE) and needs not in rest:
            continue
        found = script_purpose(names[len(pattern) - 1]) if pattern[-1] == SCRIPT else purpose
        if found:
            return found, start + len(pattern)
    return None


def _is_file(word: str) -> bool:
    return bool(_FILE.search(word))


def _shown(word: str) -> str:
    """A word as evidence keeps it, unless it is prose (a message, a test title): ``<text>``."""
    return "<text>" if any(char.isspace() for char in word) else word


def items_of(words: list[str], purpose: str) -> tuple[tuple[Any, ...], ...]:
    """Flags, arguments and ``--`` of the words after a head, on their side of ``--``. What a run command
    passes on to the program is kept as written: which of it is the program's interface (``--prompt``,
    passed every time) and which its input this time (``<args>``) is for the induce stage to tell, across
    runs (:func:`memdream.dream.procedures.stable`)."""
    found: list[tuple[Any, ...]] = []
    side, at = 0, 0
    while at < len(words):
        word = words[at]
        at += 1
        if word == "--" and side == 0:
            found.append(("sep", "--"))
            side = 1
        elif word.startswith("-") and len(word) > 1 and not word[1:].replace(".", "").isdigit():
            name, equals, value = word.partition("=")
            following = words[at] if at < len(words) else ""
            if not equals and name not in SWITCHES and _value_like(following):
                value, at = following, at + 1
            found.append(("flag", side, name, _shown(value) if equals or value else None))
        else:
            found.append(("arg", side, _shown(word)))
    return tuple(found)


def _value_like(word: str) -> bool:
    """Whether the word after a flag is its value: not another flag, not a file (an argument)."""
    return bool(word) and word != "--" and not word.startswith("-") and not _is_file(word)


def _adds_packages(items: tuple[tuple[Any, ...], ...]) -> bool:
    """``npm install lodash``, ``pip install requests``: adding a dependency, not setting the project up."""
    return any(item[0] == "arg" and not _is_file(item[2]) for item in items)


def invocations(command: str) -> Iterator[Invocation]:
    """The commands of a command line that serve a known purpose."""
    for folder, words in simple_commands(command):
        found = classify(words)
        if found is None:
            continue
        purpose, length = found
        items = items_of(words[length:], purpose)
        if purpose == "install" and _adds_packages(items):
            continue
        yield Invocation(purpose, " ".join(words[:length]), folder, items)


# A test runner's own report that tests ran, passed or not (cargo, pytest, unittest, jest, vitest, go,
# mocha, mix, rspec, dotnet, phpunit, ctest): counts of tests, never an error message alone.
_TESTS_RAN = re.compile(
    r"^running [1-9]\d* tests?$|^test result: (?:ok|FAILED)\. (?:[1-9]\d* passed; \d+|\d+ passed; [1-9]\d*) failed|"
    r"^=+ .*\b\d+ (?:passed|failed)\b.* in [\d.]+s(?: \([\d:.]+\))? =+$|^collected [1-9]\d* items?\b|"
    r"^\d+ (?:passed|failed)(?:, \d+ [a-z]+)* in [\d.]+s$|"
    r"^Ran [1-9]\d* tests? in [\d.]+s$|^Tests?:?\s+(?:\d+ failed[,|]?\s*)?\d+ (?:passed|failed)\b|"
    r"^\s*Test Files\s+\d+ (?:failed|passed)\b|^--- FAIL: \S+|^(?:ok|FAIL)\s+\S+\s+[\d.]+s$|"
    r"^\s*[1-9]\d* passing \(|^[1-9]\d* (?:tests?|examples?), \d+ failures?\b|"
    r"^(?:Failed|Passed)!\s+- Failed:\s+\d+, Passed:\s+\d+|^Tests: \d+, Assertions: \d+|"
    r"\btests? passed, \d+ tests? failed out of \d+$", re.MULTILINE)


def succeeded(run: Run) -> bool:
    return run.ok and not _FAILED.search(run.output)


def tests_ran(run: Run) -> bool:
    """Whether the run's output is a test runner's report of tests it ran (some may have failed)."""
    return bool(_TESTS_RAN.search(run.output))


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    project = session_project(episode.events)  # None for a temporary folder too
    if project is None:
        return  # a procedure is a project's: none from a session that names no project
    key = FactKey.of(project, ATTRIBUTE)
    for run in runs(episode.events):
        ok = succeeded(run)
        if not ok and not tests_ran(run):
            continue
        # One occurrence per program and subcommand a command line runs: `cargo test --no-run && cargo test`.
        # A run whose tests failed speaks for its test command alone (which of a chain's commands failed
        # is not known).
        found = {invocation.head: invocation if ok else dataclasses.replace(invocation, failed=True)
                 for invocation in invocations(run.command) if ok or invocation.purpose == "test"}
        address = served_address(run.output) if any(i.purpose == "run" for i in found.values()) else None
        for invocation in found.values():
            if address and invocation.purpose == "run":
                invocation = dataclasses.replace(invocation, serves=address)
            statement = f"In {project}: {invocation.purpose} `{invocation.head}`."
            evidence = piece(run.event, invocation.encode(), kind="observation", layer="strategy",
                             statement=statement, scope=project, tags=(*scope_tags(project), NAME), source=NAME)
            yield Candidate(key, (project, ATTRIBUTE), evidence)
