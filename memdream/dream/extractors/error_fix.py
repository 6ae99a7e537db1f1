"""Lessons from error → fix: a shell command fails, and in the same session a changed call succeeds.

The shapes of a fix, as they show in transcripts:

- the same program run another way: ``pytest -q`` fails, ``poetry run pytest -q`` succeeds (a
  wrapper), or ``npm test`` fails and ``npm test -- --runInBand`` succeeds (other arguments);
- another tool for the same job: ``python -m pytest`` after ``pytest``, or a program of the same
  family on the same target (an argument both share): ``rg --files -g '*.yaml'`` finds nothing,
  ``find . -name '*.yaml'`` finds it; ``docker-compose up`` fails, ``docker compose up`` works;
- a preparatory step: ``alembic upgrade head`` fails, ``docker compose up -d db`` succeeds, then
  ``alembic upgrade head`` succeeds;
- a program that is not installed, and another that is: ``python`` → ``python3``, or another
  program's subcommand of the same name: ``task build`` → ``go build ./...``.

A program that is not on the shell's PATH (``pytest: command not found``) is one lesson of the
project, keyed ``missing: <program>``, whether a session fixed it or never got past it: in two
sessions it is worth knowing before the third, and what one session found to do instead is the
lesson of all (below). The lines the shell prints above every output (a login profile's
warning) are the environment's, never the error; a failure that printed nothing else failed silently
("no output (exit 1)"), which is a lesson only when a wrapper, a step or another tool of its family
fixed it, never for a command whose silent exit is an answer (``test``, ``diff``, a search).

An error of a well-known class (:mod:`memdream.dream.extractors._error_classes`: CRLF line endings,
a port that is taken, …) is keyed by its class, ``error: <class>``, whatever program printed it and
however its line reads; the lesson names the diagnosis, and a fix only when it acts on the cause or
on the file that failed (``dos2unix <file>``, not the ``git stash`` that happened to come before the
retry); without one it says the diagnosis alone.

The lesson's key is the project and the failing program with its error's telling line (never a
``hint:``), paths, numbers, ids and the arguments that differ between occurrences normalized away, so
that the same failure in another session meets it; its value is the fix in its stable form: the
program, its subcommands and flags, with ``<branch>``, ``<file>``, ``<n>`` where an occurrence had its
own (``git push --set-upstream origin <branch>``), shell syntax (``2>&1``, pipes) left as written, no
``cd <folder> &&`` in front, no heredoc body, no commit message. The statement says the same in these
stable forms, so an identical lesson from another session is the same value: more evidence, never a
new version. A class's or a missing program's occurrences know more in one session (a fix) than in
another (the diagnosis alone): each says what the best of them, in memory or in this run, says
(:func:`_best_known`), so that they add up to one lesson instead of replacing one another. One
occurrence is evidence, not a card: admission wants the same lesson in two sessions, or the same error
twice in one session before its fix worked (the agent ran into it again with other arguments, or retried
unchanged; the earlier failure is cited too); a compaction summary retelling an episode is a note, never a
tool result, so it never counts. A
retry that succeeds unchanged, or after a code edit, teaches nothing reusable, and neither does an
edit (a patch, a heredoc script): its failure is about those lines, not a way of working.

A hook can refuse too: Claude Code's Stop hook feedback ("Cannot exit with unstaged changes.", a raw note
tagged ``hook``) keeps the agent from stopping until it runs what the hook wants (``git commit``); the
command that ran before the hook let it go is the lesson (:func:`hook_lessons`), admitted as above.

Tools that are not a shell fail too: Claude Code's Edit refuses a file not read in the session
("File has not been read yet. Read it first before writing to it."), the agent reads it, and the
edit works. That is one lesson of the harness, global (:func:`tool_lessons`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from memdream.dream.extractors._error_classes import DIAGNOSES, ErrorClass, class_of, shown
from memdream.dream.extractors._events import (
    GLOBAL_SCOPE,
    piece,
    scope_tags,
    session_project,
)
from memdream.dream.extractors._runs import (
    LOOKING_SUBCOMMANDS,
    TEST_RUNNERS,
    Run,
    ToolUse,
    head,
    looks_only,
    runs,
    tool_uses,
    without_preamble,
)
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey, normalize_value
from memdream.harness import HOOK_FEEDBACK
from memdream.injection import reads_like_instruction
from memdream.memory.tags import HOOK_TAG
from memdream.toolcalls import cut_line, error_line, exit_code, output_lines, without_cd

NAME = "error-fix"
UNIT = "session"
WINDOW = 8  # commands after a failure in which its fix must show
_EDGE_LINES = 3  # lines at either end of a failure's output in which a known error's class may show
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\w.~+-]*/)+[\w.+-]*")
_ID = re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{7,}\b|\b[0-9a-f]{8}-[0-9a-f-]{27}\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")


def stable_error(line: str, varying: dict[str, str]) -> str:
    """An error line with this occurrence's own arguments as placeholders, as the lesson shows it."""
    for word, placeholder in varying.items():
        line = re.sub(rf"(?<![\w/.-]){re.escape(word)}(?![\w/.-])", placeholder, line)
    return _BRANCH_NAME.sub(r"\g<1><branch>", line)


# "Current branch: feature-x", "the current branch feature-x has": a branch name, which each occurrence has its own of.
_BRANCH_NAME = re.compile(r"(\bbranch:\s+|\bbranch\s+(?=[\w./]*[-/._\d]))(?!<)[\w./-]+(?=[\s.,;]|$)", re.IGNORECASE)


def signature(line: str) -> str:
    """An error line with what varies between occurrences (paths, ids, numbers) normalized away."""
    text = _PATH.sub("<path>", line)
    text = _ID.sub("<id>", text)
    text = _NUMBER.sub("<n>", text)
    return " ".join(text.split())[:160]


def _head_at(fix: Run, failed: Run) -> int | None:
    """Where the failed command's program and subcommands start in the fix's words (``pytest`` in
    ``poetry run pytest -q``, ``npm test`` in ``npm test -- --runInBand``), or None: ``terraform fmt``
    does not run ``terraform plan``."""
    wanted = head_words(failed.command)
    names = [word.rsplit("/", 1)[-1] for word in _words(fix)]
    for start in range(len(names) - len(wanted) + 1):
        if wanted and names[start:start + len(wanted)] == wanted:
            return start
    return None


def _wrapper(fix: Run, failed: Run) -> str:
    """The words before the failed command in the fix: ``poetry run``, or '' for none."""
    start = _head_at(fix, failed)
    return " ".join(_words(fix)[:start]) if start else ""


def _words(run: Run) -> list[str]:
    """The words of a command without the ``cd <folder> &&`` in front: a fix and its failure that both
    start in one folder share no more than that."""
    try:
        return shlex.split(without_cd(run.command))
    except ValueError:
        return without_cd(run.command).split()


# What may stand in front of a command to run it another way: ``poetry run``, ``npx``, ``sudo``.
_WRAPPER_ENDS = frozenset({"run", "exec", "-m", "sudo", "env", "time", "npx", "bunx", "pnpx", "--", "-c", "x"})
# zsh: "command not found: x"; bash: "x: command not found"; dash: "sh: 1: x: not found".
_NOT_FOUND = (re.compile(r"command not found:?\s*([\w.+-]+)"),
              re.compile(r"([\w.+-]+):\s*(?:command not found|not found$)"))
_EDITS = frozenset({"apply_patch", "applypatch", "patch"})


# Programs that do one job, in families: when one fails, another of its family on the same target
# may do the job ("another tool for the same job"). Two-word members are a program and its subcommand
# or flag: ``rg --files`` finds files by name, as ``find`` does; ``rg`` searches their text, as ``grep``.
_TEXT_SEARCH = frozenset({"rg", "grep", "egrep", "ag", "ack", "git grep"})
_FILE_SEARCH = frozenset({"rg --files", "find", "fd", "fdfind", "git ls-files"})
_SEARCH = _TEXT_SEARCH | _FILE_SEARCH
_FAMILIES = (_TEXT_SEARCH, _FILE_SEARCH, frozenset({"python", "py"}), frozenset({"pip", "uv pip"}),
             frozenset({"npm", "pnpm", "yarn", "bun"}), frozenset({"docker compose", "docker-compose"}))
_VERSIONED = re.compile(r"^(python|pip)[\d.]+$")  # python3, python3.12, pip3: of python's, pip's family
# Arguments that name no target: the current folder, a launcher's subcommand.
_NO_TARGET = frozenset({".", "./", "..", "*", "run", "exec", "x"})
_SHELL_OPERATORS = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "<", "2>&1", "2>/dev/null"})
# Programs whose silent non-zero exit is an answer (no, false, different), not a failure.
_PREDICATES = frozenset({"test", "[", "[[", "true", "false", "diff", "cmp", "pgrep", "command", "expr", "which"})


def tool_of(run: Run) -> tuple[str, list[str]]:
    """The tool a command runs, as its family names it (``git grep``, ``docker compose``, ``rg --files``),
    and its arguments up to the first shell operator."""
    try:
        words = shlex.split(without_cd(run.command))
    except ValueError:
        words = without_cd(run.command).split()
    while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
        words = words[1:]  # environment assignments
    if not words:
        return "", []
    end = next((index for index, word in enumerate(words) if word in _SHELL_OPERATORS), len(words))
    words, name = words[:end], words[0].rsplit("/", 1)[-1]
    if name == "rg" and "--files" in words:
        return "rg --files", [word for word in words[1:] if word != "--files"]
    pair = f"{name} {words[1]}" if len(words) > 1 else ""
    if any(pair in family for family in _FAMILIES):
        return pair, words[2:]
    return name, words[1:]


def targets(arguments: list[str]) -> set[str]:
    """What a command works on: its arguments that are no flag (a glob, a pattern, a path), the values
    of ``--glob=*.py`` and of ``-g*.py``; not ``.`` or a number."""
    found = set()
    for word in arguments:
        if word.startswith("--"):
            value = word.partition("=")[2]
        elif word.startswith("-"):
            value = word[2:] if re.search(r"\W", word[2:]) else ""  # -g*.py, -I/usr/include; not -print0
        else:
            value = word
        if value and value not in _NO_TARGET and not value.isdigit():
            found.add(value)
    return found


def _family(tool: str) -> frozenset[str]:
    versioned = _VERSIONED.match(tool)
    name = versioned.group(1) if versioned else tool
    return next((family for family in _FAMILIES if name in family), frozenset())


def kin(failed: Run, run: Run) -> bool:
    """Whether ``run`` runs another tool of ``failed``'s family: ``find`` for ``rg``."""
    tool, other = tool_of(failed)[0], tool_of(run)[0]
    return other != tool and _family(other) == _family(tool) != frozenset()


def same_job(failed: Run, run: Run) -> set[str]:
    """The targets ``run`` shares with ``failed`` when it is another tool of ``failed``'s family
    (``find`` after ``rg``) working on them, and, for a search, finding something; else none."""
    if not kin(failed, run) or tool_of(failed)[0] in _SEARCH and not output_lines(run.output):
        return set()  # another job, or a search that found nothing either
    return targets(tool_of(failed)[1]) & targets(tool_of(run)[1])


def _silent_answer(failed: Run) -> bool:
    """A command whose non-zero exit with no output is an answer: a test, a comparison, a search."""
    tool, arguments = tool_of(failed)
    quiet = {"-q", "--quiet", "--exit-code"} & set(arguments)
    return tool in _PREDICATES or tool in _SEARCH or looks_only(failed) or bool(quiet)


def is_edit(run: Run) -> bool:
    """A command that edits files with the lines it carries (a patch, a heredoc script): its outcome
    is about those lines, not a way of working."""
    return run.program in _EDITS or "<<" in run.command or "*** Begin Patch" in run.command


def find_fix(failed: Run, after: list[Run], about: Callable[[Run], bool] | None = None) -> tuple[str, Run] | None:
    """How ``failed`` was fixed among the next commands: (shape, the fixing run), or None. ``about``:
    whether a step acts on what went wrong (a known error's cause, :func:`_class_lesson`); a step that
    merely came before the retry is then no fix, and the step about it that came before is."""
    missing = _missing_program(failed)
    for position, run in enumerate(after):
        if not run.ok:
            continue
        if run.command == failed.command:  # it works now: a step in between made it work, or nothing did
            steps = [step for step in after[:position]
                     if step.ok and not looks_only(step) and not is_edit(step) and step.program != failed.program]
            steps = [step for step in steps if about is None or about(step)]
            return ("step", steps[-1]) if steps else None
        if missing and run.program != missing and run.program.startswith(missing) and not looks_only(run):
            return "instead", run  # python: command not found; python3 works (whatever script it runs)
        if missing and kin(failed, run):
            return "instead", run  # rg: command not found; grep works (the agent's next search, whatever it is)
        if missing and _does_its_job(failed, run, missing):
            return "job", run  # task: command not found; `go build` does what `task build` was to do
        if not missing and same_job(failed, run):
            return "family", run
        if looks_only(run) or is_edit(run):
            continue
        start = _head_at(run, failed)
        if start is None:
            continue
        if start == 0:
            return "arguments", run
        if _is_wrapper(_words(run)[:start]):
            return "wrapper", run
        # The failed command appears as an argument (``perl -pi … script.sh``): a step, if the command
        # itself works afterwards.
        if (about is None or about(run)) and any(later.ok and later.command == failed.command
                                                 for later in after[position + 1:]):
            return "step", run
    return None


def _does_its_job(failed: Run, run: Run, missing: str) -> bool:
    """Whether ``run`` does the job the missing program's subcommand was to do: another program's
    subcommand of that name (``go build`` for ``task build``, ``npm run build`` for ``yarn build``)."""
    wanted = head_words(failed.command)[1:2]
    if not wanted or run.program == missing or looks_only(run) or is_edit(run):
        return False
    return wanted[0] in head_words(run.command)[1:]


def _key_program(failed: Run) -> str:
    """The program a lesson is about; ``<script>`` for the project's own scripts (``./scripts/x.sh``):
    one error of several scripts (line endings, a shebang) is one lesson."""
    word = without_cd(failed.command).split(maxsplit=1)[0] if failed.command.strip() else ""
    return "<script>" if "/" in word or re.search(r"\.(?:sh|py|js|rb|pl|ps1)$", word) else failed.program


def _missing_program(failed: Run) -> str | None:
    """The program a ``command not found`` error names, when it is the one the command ran."""
    error = error_line(failed.output)
    names = {found.group(1) for pattern in _NOT_FOUND for found in pattern.finditer(error)}
    return failed.program if failed.program in names else None


def _is_wrapper(prefix: list[str]) -> bool:
    return bool(prefix) and (prefix[-1] in _WRAPPER_ENDS or len(prefix) == 1 and prefix[0] in _WRAPPER_ENDS)


_QUOTED_MESSAGE = re.compile(r"""(?P<flag>(?:^|\s)(?:-m|--message|-F)\s+)(?:"[^"]*"|'[^']*'|\$\(.*\))""")
_MESSAGE_FROM_HEREDOC = re.compile(r"""(?P<flag>(?:^|\s)(?:-m|--message)\s+)["']?\$\(cat\s*<<.*$""")
_FILE_LIST = re.compile(r"<file>(?:\s+<file>)+")
_QUOTED = re.compile(r"""("[^"]*"|'[^']*')""")
_HEREDOC = re.compile(r"\s*<<-?\s*['\"]?\w+['\"]?.*$", re.DOTALL)
_STANDALONE_NUMBER = re.compile(r"(?<![\w<>&|.:/=-])\d+(?:\.\d+)*(?![\w<>&|.:/-])")
_PATH_TOKEN = re.compile(r"(?<![\w<>&|=-])(?:\.{0,2}/)?(?:[\w.+@-]+/)+[\w.+@-]*|"  # a/b/c, ./x
                         r"(?<![\w<>&|=./-])[\w+-]+\.[a-z]{1,5}\b(?![\w/])")  # file.py


def stable_form(command: str, varying: dict[str, str] | None = None) -> str:
    """A command as a colleague would write it down: no ``cd <folder> &&``, no heredoc body or commit
    message, paths as ``<file>``, standalone numbers as ``<n>``, the words in ``varying`` as their
    placeholders; shell syntax (``2>&1``, ``|``, ``&&``) as written."""
    text = without_cd(command.split("\n", 1)[0].replace(" …", ""))
    text = _MESSAGE_FROM_HEREDOC.sub(lambda found: f'{found.group("flag")}"…"', text)
    text = _HEREDOC.sub(" <<…", text)
    text = _QUOTED_MESSAGE.sub(lambda found: f'{found.group("flag")}"…"', text)
    for word, placeholder in (varying or {}).items():
        text = re.sub(rf"(?<![\w/.-]){re.escape(word)}(?![\w/.-])", placeholder, text)
    first, _, rest = text.strip().partition(" ")  # the program, even ./scripts/x.sh, stays as written
    # Quoted arguments (a sed script, a perl one-liner, a test's name) are kept as written.
    parts = _QUOTED.split(rest)
    for index in range(0, len(parts), 2):
        unquoted = _PATH_TOKEN.sub("<file>", parts[index])
        unquoted = _FILE_LIST.sub("<file>…", unquoted)
        parts[index] = _STANDALONE_NUMBER.sub("<n>", unquoted)
    return " ".join(f"{first} {''.join(parts)}".split())


def varying_words(error: str, failed: Run, fix: Run) -> dict[str, str]:
    """The arguments of this occurrence that its error names too (a branch, a package, a file): they
    differ from one occurrence to the next, so the lesson says ``<branch>``, ``<file>`` or ``<name>``."""
    heads = set(head_words(failed.command)) | set(head_words(fix.command))
    found: dict[str, str] = {}
    for word in {*fix.words(), *failed.words()}:
        bare = word.strip("'\"")
        if len(bare) < 3 or bare.startswith("-") or bare in heads or bare in _COMMON_ARGUMENTS:
            continue
        where = re.search(rf"(?<![\w/.-]){re.escape(bare)}(?![\w/.-])", error)
        if where is None:
            continue
        before = error[max(0, where.start() - 20):where.start()].lower()
        found[bare] = "<branch>" if "branch" in before else "<file>" if ("/" in bare or "." in bare) else "<name>"
    return found


def varying_quotes(failed: Run, fix: Run) -> dict[str, str]:
    """The quoted arguments (a prompt, a query, a message) that one of the two commands has and the
    other has not: what this occurrence asked for, ``<text>`` in the lesson. A quoted argument both
    share (a sed script, a glob) is how the command is run, and stays."""
    failed_quotes = set(_QUOTED.findall(without_cd(failed.command)))
    fix_quotes = set(_QUOTED.findall(without_cd(fix.command)))
    return {quoted: "<text>" for quoted in failed_quotes ^ fix_quotes if len(quoted) > 2}


# Arguments that name the same thing in every occurrence: not worth a placeholder.
_COMMON_ARGUMENTS = frozenset({"origin", "upstream", "main", "master", "HEAD", "all", "true", "false"})


def head_words(command: str) -> list[str]:
    return head(without_cd(command)).split()


def _fix_value(shape: str, failed: Run, fix: Run, varying: dict[str, str]) -> str:
    """What the lesson says to do, compared across occurrences: the wrapper, or the fix's program and
    subcommands (``git checkout``), so that the same fix with its own arguments (another branch, the
    same branch made with ``-b``) is more evidence, and only another kind of fix is a new version."""
    if shape == "wrapper":
        return f"{_wrapper(fix, failed)} {failed.program}"
    return " ".join(head_words(stable_form(fix.command, varying))) or stable_form(fix.command, varying)


def statement(scope: str, shape: str, failed: Run, fix: Run, error: str, varying: dict[str, str],
              silent: bool = False) -> str:
    tried, fixed = stable_form(failed.command, varying), stable_form(fix.command, varying)
    doing = "running the tests with" if failed.program in TEST_RUNNERS or " test" in failed.command else "running"
    where = f"In {scope}, " if scope != GLOBAL_SCOPE else ""
    if not silent:
        said = f"{where}{doing} `{tried}` fails with `{error}`"
    elif tool_of(failed)[0] in _SEARCH:
        said = f"{where}`{tried}` finds nothing{_exit_note(failed)}"
    else:
        said = f"{where}{doing} `{tried}` fails with no output{_exit_note(failed)}"
    if shape == "wrapper":
        return f"{said}; run it as `{fixed}` instead."
    if shape == "step":
        return f"{said} until `{fixed}` has run; run that first, then `{tried}` works."
    missing = f"{where}`{failed.program}` is not installed ({_symptom(error, failed)})"
    if shape == "instead" and (is_edit(fix) or kin(failed, fix) and not fix.program.startswith(failed.program)):
        # The script it ran, or the search (``grep`` for ``rg``), is no part of the lesson.
        named = tool_of(fix)[0] if " " in tool_of(fix)[0] else fix.program  # docker compose
        return f"{missing}; use `{named}` instead."
    if shape == "instead":
        return f"{missing}; use `{fix.program}`: `{fixed}` works."
    if shape == "job":
        return f"{missing}; instead of `{tried}`, `{fixed}` works."
    return f"{said}; `{fixed}` works."


def _symptom(error: str, failed: Run) -> str:
    """How a missing program shows: the shell's line, and its exit code when the harness wrote one (127 is
    what a CI log or a question says: "why does the test step fail with exit code 127?")."""
    code = exit_code(failed.output)
    return f"`{error}`, exit {code}" if code is not None else f"`{error}`"


def _exit_note(failed: Run) -> str:
    code = exit_code(failed.output)
    return f" (exit {code})" if code is not None else ""


def lessons(events: list[dict[str, Any]], scope: str) -> Iterator[Candidate]:
    commands = without_preamble(runs(events))
    told: set[str] = set()  # the programs found missing, once a session
    first_failures: dict[FactKey, Run | None] = {}  # each lesson's first failure; None once it recurred
    classed: dict[FactKey, Candidate] = {}  # one lesson a session of each known error class: a fix if any
    for position, failed in enumerate(commands):
        missing = _missing_program(failed)
        if failed.ok or (is_edit(failed) and missing is None):
            continue
        after = commands[position + 1: position + 1 + WINDOW]
        known = None if missing or looks_only(failed) else class_of(_error_lines(failed))
        if known is not None:
            candidate = _class_lesson(scope, failed, after, *known)
            if candidate is not None and (candidate.key not in classed or _fixed(classed[candidate.key]) <
                                          _fixed(candidate)):
                classed[candidate.key] = candidate
            continue
        found = find_fix(failed, after, _about_missing(missing) if missing else None)
        if found is not None:
            shape, fix = found
            # Another tool after the files changed (the searched one written, the script fixed) is no fix.
            lesson = None if shape == "family" and _edited_between(events, after, failed, fix) else \
                _lesson(scope, failed, shape, fix)
        elif missing and missing not in told and not _got_past(failed, missing, commands[position + 1:]):
            told.add(missing)
            lesson = _missing_lesson(scope, failed, missing)
        else:
            lesson = None
        if lesson is not None:
            earlier = first_failures.setdefault(lesson.key, failed)
            if earlier is not None and earlier is not failed:
                first_failures[lesson.key] = None
                yield _recurrence(lesson, earlier)
            yield lesson
    yield from classed.values()


def _recurrence(lesson: Candidate, earlier: Run) -> Candidate:
    """The lesson's earlier failure in its session as evidence of its own: the agent hit the same error
    twice before the fix (another argument, or the same call again), so the lesson recurs (admission)."""
    cited = piece(earlier.event, lesson.piece.value or "", kind="observation", layer="lesson",
                  statement=lesson.piece.statement or "", scope=lesson.piece.scope, tags=lesson.piece.tags,
                  source=NAME)
    return replace(lesson, piece=replace(cited, recurred=True))


def _error_lines(failed: Run) -> list[str]:
    """The lines that may show a known error's class: the error line first, then the first and last few
    (git says ``fatal:`` under the ssh error that is its cause); not a long output's middle, where a test
    may print such a line as it checks how the code handles it."""
    lines = output_lines(failed.output)
    return [error_line(failed.output), *lines[:_EDGE_LINES], *lines[-_EDGE_LINES:]]


def _fixed(candidate: Candidate) -> bool:
    """Whether a lesson names a fix, not only what the error means."""
    return (candidate.piece.value or "") not in _DIAGNOSES


def _about_missing(missing: str) -> Callable[[Run], bool]:
    """Whether a step acts on a program not on PATH: installs it, puts it on PATH, or names it."""

    def about(step: Run) -> bool:
        return bool(_ON_PATH.search(step.command)) or missing in {word.rsplit("/", 1)[-1] for word in _words(step)}

    return about


_ON_PATH = re.compile(r"\binstall\b|\bPATH\b|\bactivate\b|\bvenv\b|\.venv\b")
NOT_ON_PATH = "not on PATH"
_DIAGNOSES = DIAGNOSES | {NOT_ON_PATH}


def _lesson(scope: str, failed: Run, shape: str, fix: Run) -> Candidate | None:
    """The lesson of ``failed`` fixed by ``fix``, or None when it teaches nothing reusable."""
    error = error_line(failed.output)
    silent = not error
    if looks_only(failed) and not (shape in ("instead", "job") or shape == "family" and silent):
        return None  # a look that failed (a missing file) is no way of working, unless another tool saw it
    if silent and not (shape == "family" or shape in ("wrapper", "step") and not _silent_answer(failed)):
        return None  # a silent exit that is an answer (a test, a search), or nothing to tell this failure by
    if reads_like_instruction(fix.command) or reads_like_instruction(failed.command):
        return None  # a command an injected page asked for is no lesson
    if silent:  # nothing to tell this failure from another of the program but what it worked on
        varying: dict[str, str] = {}
        error = f"no output{_exit_note(failed)}"
        worked_on = same_job(failed, fix) if shape == "family" else targets(tool_of(failed)[1])
        attribute = f"fix: {_key_program(failed)}: {signature(error)}: {signature(' '.join(sorted(worked_on)))}"
    else:
        varying = varying_words(error, failed, fix)
        error = stable_error(error, varying)
        varying.update(varying_quotes(failed, fix))
        missing = _missing_program(failed)  # with or without a fix, one lesson (:func:`_missing_lesson`)
        attribute = f"missing: {missing}" if missing else f"fix: {_key_program(failed)}: {signature(error)}"
    value = _fix_value(shape, failed, fix, varying)
    text = statement(scope, shape, failed, fix, error, varying, silent)
    evidence = piece(fix.event, value, kind="observation", layer="lesson", statement=text, scope=scope,
                     tags=(*scope_tags(scope), "error-fix"), source=NAME)
    return Candidate(FactKey.of(scope, attribute[:200]), (scope, attribute[:200]), evidence)


# Tools that write a file (Claude Code's Edit, MultiEdit, Write; other agents' editors): one family, one
# subject for what their harness requires of them (:func:`tool_lessons`); with a patch tool, the tools
# that change files.
WRITE_TOOLS = frozenset({"edit", "multiedit", "write", "notebookedit", "str_replace_editor",
                         "str_replace_based_edit_tool", "edit_file", "write_file", "create_file"})
WRITE_TOOLS_SUBJECT = "edit tools"
_EDIT_TOOLS = WRITE_TOOLS | {"apply_patch"}


def _edited_between(events: list[dict[str, Any]], after: list[Run], failed: Run, fix: Run) -> bool:
    """Whether a file was edited after ``failed`` and before ``fix`` (one of the commands ``after`` it):
    by a shell edit, or by an edit tool."""
    if any(is_edit(run) for run in after[:next(at for at, run in enumerate(after) if run is fix)]):
        return True
    start = next(at for at, event in enumerate(events) if event is failed.event)
    end = next(at for at, event in enumerate(events) if event is fix.event)
    return any(event["kind"] == "tool_call" and str(event.get("tool") or "").lower() in _EDIT_TOOLS
               for event in events[start + 1:end])


def _got_past(failed: Run, missing: str, later: list[Run]) -> bool:
    """Whether the session got past a missing program after all: a later command that worked ran it
    (``.venv/bin/pytest``, after ``source .venv/bin/activate &&``), a program of its name (``python3``,
    a typo fixed: ``apply_patch`` for ``applypatch``) or another tool of its family (``grep`` for ``rg``)."""
    bare = re.sub(r"[-_.]", "", missing)
    for run in later:
        if not run.ok:
            continue
        names = {word.rsplit("/", 1)[-1] for word in run.words()}
        if missing in names or run.program.startswith(missing) or re.sub(r"[-_.]", "", run.program) == bare:
            return True
        if kin(failed, run) or tool_of(failed)[0] in _SEARCH and tool_of(run)[0] in _SEARCH:
            return True  # another search, for whatever job: the agent went on without it
    return False


def _missing_lesson(scope: str, failed: Run, missing: str) -> Candidate | None:
    """``missing`` is not on the shell's PATH, and the session never got past it: the lesson of its
    key (``missing: <program>``) says only that, unless another session found what does its job."""
    if reads_like_instruction(failed.command):
        return None
    where = f"In {scope}, " if scope != GLOBAL_SCOPE else ""
    text = f"{where}`{missing}` is not on PATH ({_symptom(error_line(failed.output), failed)})."
    attribute = f"missing: {missing}"
    evidence = piece(failed.event, NOT_ON_PATH, kind="observation", layer="lesson", statement=text, scope=scope,
                     tags=(*scope_tags(scope), "error-fix"), source=NAME)
    return Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)


# -- known error classes ------------------------------------------------------------------------------

def _class_lesson(scope: str, failed: Run, after: list[Run], error_class: ErrorClass, line: str) -> Candidate | None:
    """A failure of a known error class (:mod:`memdream.dream.extractors._error_classes`): keyed by the
    class, so that it adds up across sessions whatever the program and its line; it says the diagnosis,
    and the fix only when the fix acts on the cause or on the file that failed (a step that merely came
    before the retry is no fix: then the lesson is the diagnosis alone)."""
    if reads_like_instruction(failed.command):
        return None

    def about(step: Run) -> bool:
        return bool(error_class.fix_words.search(without_cd(step.command))) or _touches(step, failed, line)

    found = find_fix(failed, after, about)
    if found is not None and reads_like_instruction(found[1].command):
        return None  # a command an injected page asked for is no lesson
    if found is not None and found[0] == "family":
        found = None  # a search's kin finding the file says nothing of this error's cause
    if found is None and not error_class.certain:
        return None
    # The line as it was (a port's number, a module's name): the class, not the line, is the key.
    error, tried = shown(line), stable_form(failed.command)
    doing = "running the tests with" if failed.program in TEST_RUNNERS or " test" in failed.command else "running"
    said = f"{_where(scope)}{doing} `{tried}` fails with `{error}` ({error_class.diagnosis})"
    if found is None:
        value, text, event = error_class.diagnosis, f"{said}.", failed.event
    else:
        shape, fix = found
        fixed = stable_form(fix.command)
        value, event = _fix_value(shape, failed, fix, {}), fix.event
        text = (f"{said}; run it as `{fixed}` instead." if shape == "wrapper" else
                f"{said}; `{fixed}` fixes it." if shape == "step" else f"{said}; `{fixed}` works.")
    attribute = f"error: {error_class.name}"
    evidence = piece(event, value, kind="observation", layer="lesson", statement=text, scope=scope,
                     tags=(*scope_tags(scope), "error-fix"), source=NAME)
    return Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)


def _where(scope: str) -> str:
    return f"In {scope}, " if scope != GLOBAL_SCOPE else ""


def _touches(step: Run, failed: Run, line: str) -> bool:
    """Whether ``step`` works on a file the failure ran or named (the script, the file in its error)."""
    named = {found.rsplit("/", 1)[-1] for text in (without_cd(failed.command), line)
             for found in _PATH_TOKEN.findall(text)}
    named = {name for name in named if len(name) > 2 and "." in name}
    return bool(named & {word.rsplit("/", 1)[-1] for word in _words(step)})


# -- a tool that is not a shell -------------------------------------------------------------------------

def tool_lessons(events: list[dict[str, Any]]) -> Iterator[Candidate]:
    """A tool that writes files fails on a file with an error that names the step it wants (Claude
    Code's Edit: "File has not been read yet. Read it first before writing to it."), another tool of
    that name works on the file (Read), and then a tool of the family writes it: a lesson, once a
    session. It is about the harness, not the project: its tools require the same in every project,
    so its scope is global and its subject the tool family, as aider's invalid commands are aider's
    (:mod:`memdream.dream.extractors.aider`), and sessions of every project add up to it."""
    uses = tool_uses(events)
    told: set[FactKey] = set()
    for position, failed in enumerate(uses):
        if failed.ok or failed.tool.lower() not in WRITE_TOOLS or not failed.target:
            continue
        error = error_line(failed.output)
        step = _named_step(failed, error, uses[position + 1: position + 1 + WINDOW])
        if step is None or reads_like_instruction(error):
            continue
        attribute = f"fix: {signature(error)}"
        key = FactKey.of(WRITE_TOOLS_SUBJECT, attribute)
        if key in told:
            continue
        told.add(key)
        text = f"`{failed.tool}` fails with `{error}`; `{step.tool}` the file first."
        evidence = piece(step.event, step.tool, kind="observation", layer="lesson", statement=text,
                         scope=GLOBAL_SCOPE, tags=("error-fix",), source=NAME)
        yield Candidate(key, (WRITE_TOOLS_SUBJECT, attribute), evidence)


def _named_step(failed: ToolUse, error: str, after: list[ToolUse]) -> ToolUse | None:
    """The call of another tool that the error names (``Read``), made on the failed call's file, when
    the family's next call on the file after it works: the family's calls before it may fail again (a
    retry as it was), one after it may not (then the step did not fix it), and one that works before it
    shows the step was not needed."""
    named = set(re.findall(r"[a-z]+", error.lower()))
    step = None
    for use in after:
        if use.target != failed.target:
            continue
        if use.tool.lower() in WRITE_TOOLS:
            if step is not None or use.ok:
                return step if use.ok else None
        elif use.ok and use.tool.lower() in named:
            step = use
    return None


# -- what a hook refused ------------------------------------------------------------------------------------

_HOOK_SCRIPT = re.compile(r"^\[[^\]\n]*\]:\s*")  # "[…/hooks/stop.sh]: " before what the hook printed
# A hook's first sentence that refuses: "Cannot exit with unstaged changes." (not "Before exiting,
# carefully analyze whether…", a reflection it asks for, which no command satisfies).
_REFUSES = re.compile(r"\b(?:cannot|can't|can not|not allowed|blocked|refused|denied|forbidden)\b", re.IGNORECASE)


def hook_refusal(text: str) -> tuple[str, str] | None:
    """(the hook, its refusal) of a hook's feedback to the agent (a raw note tagged ``hook``): the first
    sentence of prose it printed, when that sentence refuses; None for a hook that asks for something else."""
    found = HOOK_FEEDBACK.match(text)
    if found is None:
        return None
    for line in text.splitlines()[1:]:
        line = _HOOK_SCRIPT.sub("", line).strip()
        if line and not line.startswith("#"):
            sentence = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
            return (found.group(1), cut_line(sentence, 160)) if _REFUSES.search(sentence) else None
    return None


def hook_lessons(events: list[dict[str, Any]], scope: str) -> Iterator[Candidate]:
    """A hook refuses to let the agent stop ("Stop hook feedback: … Cannot exit with unstaged changes."),
    the agent runs a command, and the hook does not refuse that way again: the command is what the hook
    wants before stopping. Keyed by the hook and the command's program and subcommands (``git commit``), so
    that the hook's other wordings of one demand ("unstaged changes", "untracked files") add up."""
    notes = [(position, refusal) for position, event in enumerate(events)
             if event["kind"] == "note" and HOOK_TAG in event.get("tags", ())
             and (refusal := hook_refusal(str(event.get("text") or "")))]
    if not notes:
        return  # most sessions: no hook refused anything, and their commands need not be read again
    where = {id(event): position for position, event in enumerate(events)}
    commands = [run for run in without_preamble(runs(events)) if id(run.event) in where]
    for number, (position, (hook, line)) in enumerate(notes):
        end = notes[number + 1][0] if number + 1 < len(notes) else len(events)
        if number + 1 < len(notes) and notes[number + 1][1] == (hook, line):
            continue  # it refused the same way again: what ran in between did not satisfy it
        done = [run for run in commands if position < where[id(run.event)] < end and run.ok and not looks_only(run)
                and head(without_cd(run.command)) not in LOOKING_SUBCOMMANDS]
        if not done or reads_like_instruction(done[-1].command):
            continue
        fix = done[-1]
        fixed = stable_form(fix.command)
        value = head_words(re.split(r"&&|;|\|\|", fix.command)[-1].strip()) or [fix.program]
        attribute = f"hook: {hook}: {' '.join(value)}"
        said = f"{_where(scope)}the {hook} hook refuses to let the agent stop (`{line}`) until `{fixed}` has run."
        text = said[0].upper() + said[1:]
        evidence = piece(fix.event, " ".join(value), kind="observation", layer="lesson", statement=text,
                         scope=scope, tags=(*scope_tags(scope), "error-fix"), source=NAME)
        yield Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)


# -- one lesson of a class, or of a missing program, across sessions ---------------------------------------

_MEMO = f"{NAME}: best known"


def _gathers(key: FactKey) -> bool:
    """Keys whose occurrences differ in what they know: a fix in one session, the diagnosis alone in
    another (a known error's class, a program not on PATH)."""
    return key.attribute.startswith(("error:", "missing:"))


def _session_lessons(events: list[dict[str, Any]]) -> list[Candidate]:
    scope = session_project(events) or GLOBAL_SCOPE
    return [*lessons(events, scope), *tool_lessons(events), *hook_lessons(events, scope)]


def _run_lessons(ctx: DreamContext) -> dict[str, list[Candidate]]:
    """Every selected session of this run with its lessons, each session's events in stored order."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for episode in ctx.episodes:
        if episode.selected:
            sessions.setdefault(episode.session, []).extend(episode.events)
    return {session: _session_lessons(events) for session, events in sessions.items()}


@dataclass
class _Told:
    """One value a gathering key's lesson has had: the sessions that showed it, the newest of them, and
    the newest statement that says it."""

    value: str
    sessions: set[str] = field(default_factory=set)
    newest: str = ""
    statement: str | None = None

    def add(self, statement: str | None, session: str, ts: str) -> None:
        self.sessions.add(session)
        if statement and (ts >= self.newest or self.statement is None):
            self.statement = statement
        self.newest = max(self.newest, ts)

    def rank(self) -> tuple[bool, int, str]:
        return self.value not in _DIAGNOSES, len(self.sessions), self.newest


def _best_known(ctx: DreamContext) -> tuple[dict[str, list[Candidate]], dict[FactKey, tuple[str, str | None]]]:
    """This run's lessons by session, and for each key that gathers occurrences the value and statement
    its lesson says, from all that memory knows of it: its card, its pending evidence and every session
    of this run. A fix wins over the diagnosis alone; among fixes, the one more sessions showed, then
    the newest; its newest statement goes with it. Every session's evidence then says the same: the
    same value, more evidence, whichever session is read first."""
    cached = ctx.memo.get(_MEMO)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    run = _run_lessons(ctx)
    seen: dict[FactKey, dict[str, _Told]] = {}

    def add(key: FactKey, value: str | None, statement: str | None, session: str, ts: str) -> None:
        if value:
            seen.setdefault(key, {}).setdefault(normalize_value(value), _Told(value)).add(statement, session, ts)

    for key, cards in ctx.cards_by_key().items():
        for card in cards if _gathers(key) else []:
            for item in card.evidence if NAME in card.tags else []:
                add(key, card.value, card.statement, item.session, item.ts or card.updated_at)
    for key, stats in ctx.key_stats.items():
        for pending in stats.pending if _gathers(key) else []:
            if pending.source == NAME:
                add(key, pending.value, pending.statement, pending.session, pending.ts)
    for candidate in (candidate for found in run.values() for candidate in found if _gathers(candidate.key)):
        add(candidate.key, candidate.piece.value, candidate.piece.statement, candidate.piece.session,
            candidate.piece.ts)
    best = {}
    for key, values in seen.items():
        told = max(values.values(), key=_Told.rank)
        best[key] = (told.value, told.statement)
    ctx.memo[_MEMO] = (run, best)
    return run, best


def _settled(found: list[Candidate], best: dict[FactKey, tuple[str, str | None]]) -> Iterator[Candidate]:
    for candidate in found:
        if candidate.key not in best:
            yield candidate
            continue
        value, said = best[candidate.key]
        yield replace(candidate, piece=replace(candidate.piece, value=value,
                                               statement=said or candidate.piece.statement))


def extract(episode: Episode, ctx: DreamContext | None) -> Iterator[Candidate]:
    """The session's lessons; those of a known error's class or of a missing program say what the best
    of their occurrences says (:func:`_best_known`)."""
    if ctx is None:  # one session alone: what it knows of each key is all there is
        alone = _session_lessons(episode.events)
        yield from _settled(alone, _best_of(alone))
        return
    run, best = _best_known(ctx)
    found = run.get(episode.session)
    yield from _settled(_session_lessons(episode.events) if found is None else found, best)


def _best_of(found: list[Candidate]) -> dict[FactKey, tuple[str, str | None]]:
    """The value and statement each gathering key's lesson says, from one session's lessons."""
    best: dict[FactKey, tuple[str, str | None]] = {}
    for candidate in found:
        if _gathers(candidate.key) and (candidate.key not in best or _fixed(candidate) and
                                        best[candidate.key][0] in _DIAGNOSES):
            best[candidate.key] = (candidate.piece.value or "", candidate.piece.statement)
    return best
