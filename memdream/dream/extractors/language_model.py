"""The model extractor: an outside command (a script around a language model) reads each episode.

Off unless ``dream.extractor.command`` is set (or ``memdream dream --extractor CMD``). The command
gets one episode as JSON on stdin and prints candidate cards as JSON on stdout (protocol 1,
docs/extractor.md, ``schemas/extractor-output.schema.json``). What it says is trusted no more than
what the agent noted:

- every candidate must cite events of the episode it was given; one reference to any other event
  is a made-up citation and drops the candidate;
- events tagged untrusted-instruction are never evidence, and a candidate whose words read like an
  injected instruction is dropped;
- each cited event becomes a ``note`` piece (weak), so a card needs corroboration like any note.

A command that fails, hangs, prints garbage or is missing is reported in ``ctx.warnings`` and
skipped; the dream goes on. Successful outputs are cached per episode under the memory's local
state folder (the one place outside the pipeline that writes, and it is never tracked), so a
second dream, or one that redoes a rolled-back run, reads the same answer without calling the
model again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdream import schemas, yamlio
from memdream.dream.extractors._events import GLOBAL_SCOPE, piece, scope_tags, session_project
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey
from memdream.injection import reads_like_instruction
from memdream.jsonio import dumps_canonical
from memdream.memory.refs import event_ref
from memdream.memory.tags import UNTRUSTED

NAME = "model"
UNIT = "episode"
PROTOCOL = 1
SCHEMA = "extractor-output"
MAX_FAILURES = 3  # failed episodes in one run after which the command is not called again this run
_PREFIX = "model extractor"
_STOPPED = f"{_PREFIX} stopped"
_FAILED = f"{_PREFIX} failed"
_TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$")  # as card.schema.json wants tags
_CHECKED_WORDS = ("subject", "attribute", "value", "statement")


@dataclass(frozen=True)
class Command:
    """The configured command of this run."""

    text: str  # as configured: part of the cache key
    argv: list[str]
    timeout: float
    version: str


class Failure(Exception):
    """The command did not give a usable answer for one episode."""


class Missing(Failure):
    """The command cannot be started at all: no episode will fare better."""


def _configured(ctx: DreamContext) -> Command | None:
    text = ctx.settings.get("dream.extractor.command")
    if not text or not str(text).strip():
        return None
    try:
        argv = shlex.split(str(text))
    except ValueError as error:
        _warn(ctx, f"{_STOPPED}: dream.extractor.command {text!r} cannot be split into words: {error}")
        return None
    return Command(str(text), argv, float(ctx.settings.get("dream.extractor.timeout_seconds")),
                   str(ctx.settings.get("dream.extractor.version")))


def _warn(ctx: DreamContext, message: str) -> None:
    if message not in ctx.warnings:  # a missing executable is one warning, not one per episode
        ctx.warnings.append(message)


def _stopped(ctx: DreamContext) -> bool:
    return any(line.startswith(_STOPPED) for line in ctx.warnings)


def request(episode: Episode) -> bytes:
    """The episode as the command reads it: canonical JSON, so that equal episodes hit the cache."""
    return dumps_canonical({
        "protocol": PROTOCOL, "session": episode.session, "episode": episode.number,
        "project": session_project(episode.events), "events": episode.events,
    })


def cache_key(command: Command, stdin: bytes) -> str:
    digest = hashlib.sha256(stdin)
    digest.update(b"\0" + command.text.encode("utf-8") + b"\0" + command.version.encode("utf-8"))
    return digest.hexdigest()


def _cache_dir(ctx: DreamContext) -> Path | None:
    return ctx.state_dir / "cache" / "extractor" if ctx.state_dir is not None else None


def _read_cached(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, unreadable or torn: ask the command again
        return None
    return document if isinstance(document, dict) and isinstance(document.get("candidates"), list) else None


def _store(path: Path, document: dict[str, Any]) -> None:
    try:
        yamlio.write_atomic(path, json.dumps(document, ensure_ascii=False, sort_keys=True) + "\n")
    except OSError:
        pass  # a read-only memory: the command runs again next time


def _run(command: Command, stdin: bytes) -> tuple[int, bytes, bytes]:
    """Exit code, stdout and stderr of the command fed ``stdin``; raises Missing or Failure.

    The command runs in its own process group so that a timeout kills what it started too (an
    LLM client under a wrapper script would otherwise keep our pipes open and hang the dream).
    """
    try:
        process = subprocess.Popen(command.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as error:  # not found, not executable, not a program (a script without #!)
        raise Missing(f"cannot run {command.argv[0]!r} ({error.strerror or error}); "
                      f"check dream.extractor.command or --extractor") from None
    with process:
        try:
            stdout, stderr = process.communicate(stdin, timeout=command.timeout)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise Failure(f"timed out after {command.timeout:g} s (dream.extractor.timeout_seconds)") from None
        except BaseException:  # ^C: leave no model running behind us
            _kill(process)
            raise
    return process.returncode, stdout, stderr


def _kill(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, OSError):  # no process groups (Windows), or it is gone already
        process.kill()


def _last_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return _short(lines[-1]) if lines else ""


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_output(stdout: bytes) -> dict[str, Any]:
    """The command's answer, checked at the top level (candidates are checked one by one later)."""
    if not stdout.strip():
        raise Failure("printed nothing (expected JSON on stdout)")
    try:
        document = json.loads(stdout.decode("utf-8"))
    except ValueError as error:  # UnicodeDecodeError is a ValueError too
        raise Failure(f"printed no valid JSON: {_short(str(error), 120)}") from None
    for problem in schemas.iter_errors(SCHEMA, document):
        if len(problem.absolute_path) < 2:  # the document itself, not one candidate
            where = "/".join(str(part) for part in problem.absolute_path) or "(top)"
            raise Failure(f"output does not match {SCHEMA}.schema.json: {where}: {_short(problem.message, 120)}")
    assert isinstance(document, dict)  # the schema says so
    return document


def answer(command: Command, stdin: bytes) -> dict[str, Any]:
    """Run the command on one episode and return its checked output; raises Missing or Failure."""
    code, stdout, stderr = _run(command, stdin)
    if code != 0:
        said = _last_line(stderr)
        raise Failure(f"exited with status {code}" + (f": {said}" if said else ""))
    return parse_output(stdout)


def _output(command: Command, episode: Episode, ctx: DreamContext) -> dict[str, Any] | None:
    """The command's output for ``episode``, from the cache or from a run; None when it failed."""
    stdin = request(episode)
    key = cache_key(command, stdin)
    folder = _cache_dir(ctx)
    cached = _read_cached(folder / f"{key}.json") if folder is not None else None
    if cached is not None:
        return cached
    if _stopped(ctx):  # cached answers are free; the command is not called again
        return None
    try:
        document = answer(command, stdin)
    except Missing as error:
        _warn(ctx, f"{_STOPPED}: {error}")
        return None
    except Failure as error:
        _failed(ctx, episode, str(error), folder, key, stdin)
        return None
    if folder is not None:
        _store(folder / f"{key}.json", document)
        (folder / f"{key}.input.json").unlink(missing_ok=True)
    return document


def _where(episode: Episode) -> str:
    return f"session {episode.session} episode {episode.number}"


def _failed(ctx: DreamContext, episode: Episode, problem: str, folder: Path | None, key: str, stdin: bytes) -> None:
    """Warn, keep the input for replaying by hand, and give up on the command after a few failures."""
    kept = _keep_input(folder / f"{key}.input.json", stdin, ctx.state_dir) if folder is not None else None
    ctx.warnings.append(f"{_FAILED} on {_where(episode)}: {problem}" + (f" (its input: {kept})" if kept else ""))
    if sum(line.startswith(_FAILED) for line in ctx.warnings) >= MAX_FAILURES:
        ctx.warnings.append(f"{_STOPPED} after {MAX_FAILURES} failed episodes: not called again in this run")


def _keep_input(path: Path, stdin: bytes, state_dir: Path | None) -> str | None:
    """Save what the command was given (``cmd < file`` replays it); the path as shown, or None."""
    try:
        yamlio.write_atomic(path, stdin.decode("utf-8") + "\n")
    except OSError:
        return None
    return os.path.relpath(path, state_dir.parent) if state_dir is not None else str(path)


def _schema_problems(document: dict[str, Any]) -> dict[int, str]:
    """Candidate position -> its first schema error."""
    problems: dict[int, str] = {}
    for error in schemas.iter_errors(SCHEMA, document):
        path = list(error.absolute_path)
        if len(path) >= 2 and isinstance(path[1], int):
            where = "/".join(str(part) for part in path[2:]) or "(candidate)"
            problems.setdefault(path[1], f"{where}: {_short(error.message, 80)}")
    return problems


def _refusal(item: dict[str, Any], events: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """Why a schema-valid candidate is not evidence: (reason, an example), or None."""
    foreign = [ref for ref in item["evidence"] if ref not in events]
    if foreign:
        return "cite events outside the episode", foreign[0]
    if not any(UNTRUSTED not in events[ref].get("tags", ()) for ref in item["evidence"]):
        return "cite only untrusted-instruction text", item["evidence"][0]
    for name in _CHECKED_WORDS:
        if reads_like_instruction(item[name]):
            return "read like an injected instruction", _short(item[name], 80)
    return None


def _pieces(item: dict[str, Any], events: dict[str, dict[str, Any]], project: str | None) -> Iterator[Candidate]:
    """One note per cited trusted event: the model's reading is the agent's belief, weak evidence."""
    scope = item.get("scope") or project or GLOBAL_SCOPE
    scoped = tuple(tag for tag in scope_tags(scope) if _TAG.match(tag))
    tags = tuple(sorted({*item.get("tags", ()), *scoped, NAME}))
    names = (item["subject"].strip(), item["attribute"].strip())
    key = FactKey.of(*names)
    for ref in item["evidence"]:
        event = events[ref]
        if UNTRUSTED in event.get("tags", ()):
            continue
        evidence = piece(event, item["value"], kind="note", layer=item["type"], statement=item["statement"],
                         scope=scope, tags=tags, source=NAME)
        yield Candidate(key, names, evidence)


def candidates(document: dict[str, Any], episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    """The output's candidates that pass the checks; the others are counted in one warning per reason."""
    events = {event_ref(event["session"], event["id"]): event for event in episode.events}
    project = session_project(episode.events)
    problems = _schema_problems(document)
    dropped: Counter[str] = Counter()
    example: dict[str, str] = {}
    for position, item in enumerate(document["candidates"]):
        refusal = _refusal(item, events) if position not in problems else ("do not match the schema",
                                                                            problems[position])
        if refusal is None:
            yield from _pieces(item, events, project)
            continue
        dropped[refusal[0]] += 1
        example.setdefault(refusal[0], refusal[1])
    for reason, count in sorted(dropped.items()):
        ctx.warnings.append(f"{_PREFIX} on {_where(episode)}: dropped {count} candidate(s) that {reason} "
                            f"({example[reason]})")


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    command = _configured(ctx)
    if command is None:
        return
    document = _output(command, episode, ctx)
    if document is not None:
        yield from candidates(document, episode, ctx)
