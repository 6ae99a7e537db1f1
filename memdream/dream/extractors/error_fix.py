"""Lessons from error → fix: a shell command fails, and in the same session a changed call succeeds.

Three shapes of fix, as they show in transcripts:

- the same program run another way: ``pytest -q`` fails, ``poetry run pytest -q`` succeeds (a
  wrapper), or ``npm test`` fails and ``npm test -- --runInBand`` succeeds (other arguments);
- another tool for the same job: ``python -m pytest`` after ``pytest``;
- a preparatory step: ``alembic upgrade head`` fails, ``docker compose up -d db`` succeeds, then
  ``alembic upgrade head`` succeeds.

- a program that is not installed, and another that is: ``python`` → ``python3``.

The lesson's key is the project and the failing program with its error's telling line (never a
``hint:``), paths, numbers, ids and the arguments that differ between occurrences normalized away, so
that the same failure in another session meets it; its value is the fix in its stable form: the
program, its subcommands and flags, with ``<branch>``, ``<file>``, ``<n>`` where an occurrence had its
own (``git push --set-upstream origin <branch>``), shell syntax (``2>&1``, pipes) left as written, no
``cd <folder> &&`` in front, no heredoc body, no commit message. The statement says the same in these
stable forms, so an identical lesson from another session is the same value: more evidence, never a
new version. One occurrence is evidence, not a card: admission wants the same lesson in two sessions
(a compaction summary retelling an episode is a note, never a tool result, so it never counts). A
retry that succeeds unchanged, or after a code edit, teaches nothing reusable, and neither does an
edit (a patch, a heredoc script): its failure is about those lines, not a way of working.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memdream.dream.extractors._events import (
    GLOBAL_SCOPE,
    piece,
    scope_tags,
    session_project,
)
from memdream.dream.extractors._runs import TEST_RUNNERS, Run, head, looks_only, runs
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey
from memdream.injection import reads_like_instruction
from memdream.toolcalls import error_line, without_cd

NAME = "error-fix"
UNIT = "session"
WINDOW = 8  # commands after a failure in which its fix must show
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
    wanted = head(failed.command).split()
    names = [word.rsplit("/", 1)[-1] for word in fix.words()]
    for start in range(len(names) - len(wanted) + 1):
        if wanted and names[start:start + len(wanted)] == wanted:
            return start
    return None


def _wrapper(fix: Run, failed: Run) -> str:
    """The words before the failed command in the fix: ``poetry run``, or '' for none."""
    start = _head_at(fix, failed)
    return " ".join(fix.words()[:start]) if start else ""


# What may stand in front of a command to run it another way: ``poetry run``, ``npx``, ``sudo``.
_WRAPPER_ENDS = frozenset({"run", "exec", "-m", "sudo", "env", "time", "npx", "bunx", "pnpx", "--", "-c", "x"})
_NOT_FOUND = re.compile(r"(?:command not found:?\s*(?P<after>[\w.+-]+)|(?P<before>[\w.+-]+):\s*command not found)")
_EDITS = frozenset({"apply_patch", "applypatch", "patch"})


def is_edit(run: Run) -> bool:
    """A command that edits files with the lines it carries (a patch, a heredoc script): its outcome
    is about those lines, not a way of working."""
    return run.program in _EDITS or "<<" in run.command or "*** Begin Patch" in run.command


def find_fix(failed: Run, after: list[Run]) -> tuple[str, Run] | None:
    """How ``failed`` was fixed among the next commands: (shape, the fixing run), or None."""
    missing = _missing_program(failed)
    for position, run in enumerate(after):
        if not run.ok:
            continue
        if run.command == failed.command:  # it works now: a step in between made it work, or nothing did
            steps = [step for step in after[:position]
                     if step.ok and not looks_only(step) and not is_edit(step) and step.program != failed.program]
            return ("step", steps[-1]) if steps else None
        if missing and run.program != missing and run.program.startswith(missing) and not looks_only(run):
            return "instead", run  # python: command not found; python3 works (whatever script it runs)
        if looks_only(run) or is_edit(run):
            continue
        start = _head_at(run, failed)
        if start is None:
            continue
        if start == 0:
            return "arguments", run
        if _is_wrapper(run.words()[:start]):
            return "wrapper", run
        # The failed command appears as an argument (``perl -pi … script.sh``): a step, if the command
        # itself works afterwards.
        if any(later.ok and later.command == failed.command for later in after[position + 1:]):
            return "step", run
    return None


def _key_program(failed: Run) -> str:
    """The program a lesson is about; ``<script>`` for the project's own scripts (``./scripts/x.sh``):
    one error of several scripts (line endings, a shebang) is one lesson."""
    word = without_cd(failed.command).split(maxsplit=1)[0] if failed.command.strip() else ""
    return "<script>" if "/" in word or re.search(r"\.(?:sh|py|js|rb|pl|ps1)$", word) else failed.program


def _missing_program(failed: Run) -> str | None:
    """The program a ``command not found`` error names, when it is the one the command ran."""
    found = _NOT_FOUND.search(error_line(failed.output))
    name = (found.group("after") or found.group("before")) if found else None
    return name if name and name == failed.program else None


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


def statement(scope: str, shape: str, failed: Run, fix: Run, error: str, varying: dict[str, str]) -> str:
    tried, fixed = stable_form(failed.command, varying), stable_form(fix.command, varying)
    doing = "running the tests with" if failed.program in TEST_RUNNERS or " test" in failed.command else "running"
    where = f"In {scope}, " if scope != GLOBAL_SCOPE else ""
    said = f"{where}{doing} `{tried}` fails with `{error}`"
    if shape == "wrapper":
        return f"{said}; run it as `{fixed}` instead."
    if shape == "step":
        return f"{said} until `{fixed}` has run; run that first, then `{tried}` works."
    if shape == "instead" and is_edit(fix):  # the script it ran is no part of the lesson
        return f"{where}`{failed.program}` is not installed (`{error}`); use `{fix.program}` instead."
    if shape == "instead":
        return f"{where}`{failed.program}` is not installed (`{error}`); use `{fix.program}`: `{fixed}` works."
    return f"{said}; `{fixed}` works."


def lessons(events: list[dict[str, Any]], scope: str) -> Iterator[Candidate]:
    commands = runs(events)
    for position, failed in enumerate(commands):
        if failed.ok or looks_only(failed) or (is_edit(failed) and _missing_program(failed) is None):
            continue
        found = find_fix(failed, commands[position + 1: position + 1 + WINDOW])
        error = error_line(failed.output)
        if found is None or not error:
            continue
        shape, fix = found
        if reads_like_instruction(fix.command) or reads_like_instruction(failed.command):
            continue  # a command an injected page asked for is no lesson
        varying = varying_words(error, failed, fix)
        error = stable_error(error, varying)
        attribute = f"fix: {_key_program(failed)}: {signature(error)}"[:200]
        value = _fix_value(shape, failed, fix, varying)
        text = statement(scope, shape, failed, fix, error, varying)
        evidence = piece(fix.event, value, kind="observation", layer="lesson", statement=text, scope=scope,
                         tags=(*scope_tags(scope), "error-fix"), source=NAME)
        yield Candidate(FactKey.of(scope, attribute), (scope, attribute), evidence)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    yield from lessons(episode.events, session_project(episode.events) or GLOBAL_SCOPE)
