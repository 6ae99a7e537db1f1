"""Commands: a project's own slash commands and custom prompts, used again and again, on one card.

A command a team wrote for a project (a Claude Code command file, a Codex custom prompt) and runs in
session after session is how work is done there: a developer writes it into CLAUDE.md. The raw layer
shows an invocation in one of two shapes:

- the prompt file's expansion, opening with its title, ``# /name — What it does`` (a Codex custom
  prompt; the harness puts the template in the user's turn);
- a command event (:data:`memdream.memory.tags.COMMAND_TAG`): the user's message ``/name <args>`` as
  they typed it, which Claude Code's adapter keeps instead of the command file's expansion, with what
  the expansion said the command is for (``meta.command_description``), when it said it.

A template without a name (a spec template that opens at ``## User Input``) names no command to run,
and the harness's own commands (``/clear``, ``/compact``, ``/model``, ``/init``, ``/review``, …:
:data:`BUILT_IN`) are no project's: neither is listed.

What the card says of each command comes from its template only, never from its body or from the
arguments the user gave (their words, once): the command, the arguments it takes (front matter
``argument-hint:``, or the template's ``Invocation:``/``Usage:`` line), its one-line purpose (its
``Purpose:`` line, its ``description:`` front matter, or its title after the dash) and the files it
says it writes (``Generate tasks.md``, ``**Output**: plan.md``). Of a Claude Code command only its
purpose is known (the description its event carries); that the user gives it arguments shows as
``<args>``. A command is listed once it was run
in :data:`MIN_SESSIONS` sessions of the project, or :data:`MIN_USES` times; the most used come first,
at most :data:`MAX_COMMANDS`.

Invocations recur across dreams, so the extractor remembers those it has seen in the dream state
(:class:`memdream.dream.model.KeyStats` ``pending`` of the key (project, :data:`SEEN`), under which no
piece of evidence is ever filed: no other stage reads it; a state rebuilt from the raw layer replays
extraction and so rebuilds it too). Each run, the project's card is proposed anew from all of them:
one piece of evidence per session and command, all with the same value, so that verify folds them
into one version (a new command listed, or a template's new purpose, supersedes the card) and
admission weighs it like every new key.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memdream.dream.extractors._events import piece, scope_tags, session_project, trusted
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey, KeyStats, Piece
from memdream.harness import own_words
from memdream.memory.tags import COMMAND_TAG, SIDECHAIN_TAG

NAME = "command"
UNIT = "session"
ATTRIBUTE = "custom commands"
SEEN = "custom commands: invocations seen"  # the extractor's own memory between runs (module doc)
MIN_SESSIONS = 2
MIN_USES = 3
MAX_COMMANDS = 6
HISTORY = 200  # invocations remembered per project, the newest
PURPOSE_LIMIT = 140
MAX_FILES = 6
# The harnesses' own commands (Claude Code, Codex CLI): how the tool works, not how a project does.
BUILT_IN = frozenset({
    "add-dir", "agents", "approvals", "bashes", "bug", "clear", "compact", "config", "context", "cost",
    "diff", "doctor", "exit", "export", "feedback", "help", "hooks", "ide", "init", "install-github-app",
    "login", "logout", "mcp", "memory", "mention", "migrate-installer", "model", "new", "output-style",
    "permissions", "plugin", "pr-comments", "privacy-settings", "prompts", "quit", "release-notes", "resume",
    "review", "rewind", "security-review", "status", "statusline", "terminal-setup", "todos", "undo",
    "upgrade", "usage", "vim",
})
_NAME = r"/(?P<name>[A-Za-z](?:[\w.:-]*\w)?)"
# "# /butler-exec — Execute a ButlerSpec": the first line of a prompt file's expansion.
_TITLE = re.compile(rf"^#{{1,6}}[ \t]+{_NAME}(?=[ \t:]|$)[ \t]*(?:[—–:-]+[ \t]*(?P<title>[^\n]*))?$")
# "/deploy-preview the checkout branch": a command event's text, the command and the user's arguments.
_INVOKED = re.compile(rf"{_NAME}(?:\s+(?P<args>.*))?", re.DOTALL)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(?P<body>.*?)\n---[ \t]*(?:\n|\Z)", re.DOTALL)
_FIELD = re.compile(r"^(?P<key>[A-Za-z][\w-]*)[ \t]*:[ \t]*(?P<value>.*)$", re.MULTILINE)
_LABEL = re.compile(r"^[ \t>*_-]*(?P<label>purpose|invocation|usage)[ \t]*[*_]*[ \t]*:[*_]*[ \t]*(?P<text>.+)$",
                    re.IGNORECASE | re.MULTILINE)
_CODE = re.compile(r"`([^`\n]+)`")
# What stands for an argument in a usage line (<SPEC_PATH>, [feature], {name}, $FILE, --dry-run, ...): an
# example's values ("/deploy staging") are one run's, not what the command takes.
_PLACEHOLDERS = re.compile(r"<[^<>]+>|\[[^\[\]]+\]|\{[^{}]+\}|\$[A-Z_][A-Z0-9_]*|--?[\w-]+(?:=\S+)?|\.\.\.|…|[|]")
# A line of the template that says what it writes: "Generate tasks.md", "**Output**: research.md, contracts/".
_WRITES = re.compile(r"^[ \t]*(?:[-*]|\d+[.)])?[ \t]*(?:\*\*)?(?:phase \d+:[ \t]*)?(?:generate|write|create|output)s?\b"
                     r"(?P<rest>[^\n]*)$", re.IGNORECASE | re.MULTILINE)
_FILE = re.compile(r"(?<![\w/.$<{\[])(?P<file>(?:[\w-]+/)*[\w-]+\.(?:md|mdx|ya?ml|json|toml|txt)|[a-z][\w-]*/)"
                   r"(?![\w/.\]}>*])")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


@dataclass(frozen=True)
class Use:
    """One invocation of a command, and what its template says of it."""

    name: str  # "/butler-exec"
    args: str | None = None  # "<SPEC_PATH>", as the template writes them
    purpose: str | None = None  # its one line, as the template says it
    writes: tuple[str, ...] = ()  # the files it says it writes
    given: bool = False  # the user gave it arguments (shown as <args> when the template names none)

    def encode(self) -> str:
        return json.dumps({"name": self.name, "args": self.args, "purpose": self.purpose,
                           "writes": list(self.writes), "given": self.given}, ensure_ascii=False)


def decode(value: str | None) -> Use | None:
    """The invocation a remembered piece holds, or None (a value that redaction cut)."""
    try:
        data = json.loads(value or "")
        return Use(str(data["name"]), data["args"], data["purpose"], tuple(data["writes"]), bool(data["given"]))
    except (ValueError, KeyError, TypeError):
        return None


# -- reading a template ------------------------------------------------------------------------------------
def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """The template's front matter fields and the text after it."""
    found = _FRONT_MATTER.match(text)
    if found is None:
        return {}, text
    fields = {match["key"].lower(): match["value"].strip().strip("\"'") for match in _FIELD.finditer(found["body"])}
    return fields, text[found.end():].lstrip("\n")


def _one_line(text: str | None) -> str | None:
    """A purpose in one sentence, short enough to read at a glance; None for nothing to say."""
    if not text:
        return None
    line = " ".join(text.replace("`", "").split())
    line = _SENTENCE_END.split(line, maxsplit=1)[0].rstrip(" .")
    if len(line) > PURPOSE_LIMIT:
        line = line[:PURPOSE_LIMIT - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"
    return line or None


def _labelled(body: str, label: str) -> str | None:
    """The text of the template's ``Label:`` line near its top (where a prompt file says what it is)."""
    head = "\n".join(body.splitlines()[:20])
    return next((match["text"].strip() for match in _LABEL.finditer(head) if match["label"].lower() == label), None)


def _arguments(fields: dict[str, str], body: str, name: str) -> str | None:
    """The arguments the template says the command takes, as it writes them."""
    hint = fields.get("argument-hint")
    if hint:
        return hint
    for label in ("invocation", "usage"):
        line = _labelled(body, label) or ""
        for code in _CODE.findall(line):
            words = code.split()
            if name in words:
                rest = " ".join(words[words.index(name) + 1:])
                return rest if rest and not _PLACEHOLDERS.sub("", rest).strip() else None
    return None


def _writes(body: str) -> tuple[str, ...]:
    """The files the template says the command writes (``Generate tasks.md``), in its order."""
    found: list[str] = []
    for line in _WRITES.finditer(body):
        rest = line["rest"].split(" from ")[0].split(" using ")[0]  # "Generate X from Y": Y is read
        for match in _FILE.finditer(rest):
            if match["file"] not in found:
                found.append(match["file"])
    return tuple(found[:MAX_FILES])


def _from_template(name: str, text: str, title: str | None = None) -> Use:
    fields, body = _front_matter(text.strip())
    purpose = _labelled(body, "purpose") or fields.get("description") or title
    return Use(name, _arguments(fields, body, name), _one_line(purpose), _writes(body))


def _titled(text: str) -> Use | None:
    """A prompt file's expansion that opens with its command's title, after any front matter."""
    _, body = _front_matter(text.strip())
    first, _, rest = body.partition("\n")
    found = _TITLE.match(first.strip())
    if found is None or found["name"].lower() in BUILT_IN or sum(1 for line in rest.splitlines() if line.strip()) < 2:
        return None  # a heading alone is no prompt file
    return _from_template("/" + found["name"], text, (found["title"] or "").strip() or None)


def _invoked(event: dict[str, Any]) -> Use | None:
    """A command event: the command the user ran, with the purpose its expansion gave (never their arguments)."""
    found = _INVOKED.fullmatch(str(event.get("text") or "").strip())
    if found is None or found["name"].lower() in BUILT_IN:
        return None
    meta = event.get("meta")
    description = meta.get("command_description") if isinstance(meta, dict) else None
    purpose = _one_line(description) if isinstance(description, str) else None
    return Use("/" + found["name"], purpose=purpose, given=bool((found["args"] or "").strip()))


# -- the invocations of a session --------------------------------------------------------------------------
def _user_text(event: dict[str, Any]) -> str | None:
    """The text of a user-turn message of the main conversation (the user's command, or a template the
    harness put there)."""
    if event["kind"] != "message" or event.get("actor", "user") != "user" or not trusted(event):
        return None
    if SIDECHAIN_TAG in event.get("tags", ()):
        return None
    text = event.get("text")
    return text if isinstance(text, str) and text.strip() else None


def _is_template(text: str) -> bool:
    """Harness text in the user's turn (a command file's expansion), not the user's own words."""
    return own_words(text) != text or _FRONT_MATTER.match(text.strip()) is not None


def uses(events: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Use]]:
    """Each command invocation in a session's events: the event that shows it, and what was run."""
    for event in events:
        text = _user_text(event)
        if text is None:
            continue
        if COMMAND_TAG in event.get("tags", ()):
            use = _invoked(event)
        elif _is_template(text):
            use = _titled(text)
        else:
            use = None
        if use is not None:
            yield event, use


# -- which commands a project uses, from every invocation seen ---------------------------------------------
@dataclass(frozen=True)
class Command:
    """A command of a project: its newest template's words, and the invocations that ran it."""

    use: Use
    seen: list[Piece]  # the remembered invocations, oldest first

    @property
    def sessions(self) -> int:
        return len({record.session for record in self.seen})

    @property
    def usage(self) -> str:
        """The command as one types it: ``/butler-exec <SPEC_PATH>``."""
        args = self.use.args or ("<args>" if sum(decoded.given for decoded in self._decoded()) * 2 > len(self.seen)
                                 else None)
        return f"{self.use.name} {args}" if args else self.use.name

    def _decoded(self) -> list[Use]:
        return [use for use in map(decode, (record.value for record in self.seen)) if use is not None]

    def described(self) -> str:
        """What the card says of the command (without how often it ran): its usage, purpose and files."""
        text = f"`{self.usage}`"
        if self.use.purpose:
            text += f" — {self.use.purpose}"
        if self.use.writes:
            text += f"; writes {', '.join(self.use.writes)}"
        return text

    def how_often(self) -> str:
        if self.sessions >= MIN_SESSIONS:
            return f"used in {self.sessions} sessions"
        return f"used {len(self.seen)} times in one session"


def commands(seen: list[Piece]) -> list[Command]:
    """The commands run in :data:`MIN_SESSIONS` sessions or :data:`MIN_USES` times whose template says what
    they are for (a purpose or the files they write), most used first."""
    by_name: dict[str, list[Piece]] = {}
    newest: dict[str, Use] = {}
    for record in sorted(seen, key=lambda record: (record.ts, record.ref)):
        use = decode(record.value)
        if use is not None:
            name = use.name.lower()
            by_name.setdefault(name, []).append(record)
            if name not in newest or use.purpose or use.args or use.writes:
                newest[name] = use  # a template that changed: its newest words; a run that showed none, no change
    found = [Command(newest[name], records) for name, records in by_name.items()]
    # A command whose template says nothing of what it is for is a name a reader cannot act on.
    kept = [command for command in found if (command.sessions >= MIN_SESSIONS or len(command.seen) >= MIN_USES)
            and (command.use.purpose or command.use.writes)]
    kept.sort(key=lambda command: (-command.sessions, -len(command.seen), command.use.name.lower()))
    return kept[:MAX_COMMANDS]


def value_of(listed: list[Command]) -> str:
    """The card's value: each command as described, in name order (how often they ran is no change)."""
    return "; ".join(command.described() for command in sorted(listed, key=lambda command: command.use.name.lower()))


def statement(project: str, listed: list[Command]) -> str:
    noun = "commands" if len(listed) > 1 else "command"
    items = "; ".join(f"{command.described()} ({command.how_often()})" for command in listed)
    return f"In {project}, the project's own {noun}: {items}."


def remember(ctx: DreamContext, project: str, records: list[Piece]) -> list[Piece]:
    """Every invocation of the project's commands seen so far (this run's added), the newest kept."""
    stats = ctx.key_stats.setdefault(FactKey.of(project, SEEN), KeyStats())
    merged = {record.ref: record for record in [*stats.pending, *records] if record.source == NAME}
    stats.pending = sorted(merged.values(), key=lambda record: (record.ts, record.ref))[-HISTORY:]
    return stats.pending


# -- one run: the card each project's invocations make -----------------------------------------------------
@dataclass
class _Proposal:
    """A project's card this run: its pieces by the session they are emitted with."""

    by_session: dict[str, list[Piece]]
    earlier: list[Piece]  # the invocations of sessions dreamed before: emitted with the first session


def _sessions(ctx: DreamContext) -> dict[str, list[dict[str, Any]]]:
    """The selected events of each session of this run, in stored order (as the extract stage groups them)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for episode in ctx.episodes:
        if episode.selected:
            found.setdefault(episode.session, []).extend(episode.events)
    return found


def _proposals(ctx: DreamContext) -> dict[str, _Proposal]:
    """Per project, this run's card: computed once, from every session of the run, so that all its pieces
    carry one value."""
    cached: dict[str, _Proposal] | None = ctx.memo.get(NAME)
    if cached is not None:
        return cached
    new: dict[str, list[Piece]] = {}
    sessions_of: dict[str, set[str]] = {}
    for session, events in _sessions(ctx).items():
        project = session_project(events)
        if project is None:
            continue  # a command is a project's
        sessions_of.setdefault(project, set()).add(session)
        for event, use in uses(events):
            record = piece(event, use.encode(), kind="observation", layer="strategy", statement="", scope=project,
                           tags=(), source=NAME)
            new.setdefault(project, []).append(dataclasses.replace(record, statement=None))  # no card's words
    cached = {}
    for project, records in sorted(new.items()):
        listed = commands(remember(ctx, project, records))
        if listed:
            cached[project] = _card(project, listed, sessions_of[project])
    ctx.memo[NAME] = cached
    return cached


def _card(project: str, listed: list[Command], now: set[str]) -> _Proposal:
    value, said, tags = value_of(listed), statement(project, listed), (*scope_tags(project), NAME)
    first: dict[tuple[str, str], Piece] = {}
    for command in listed:
        for record in command.seen:  # one piece per session and command: its first invocation there
            first.setdefault((command.use.name, record.session), record)
    proposal = _Proposal({}, [])
    for record in sorted(first.values(), key=lambda record: (record.ts, record.ref)):
        evidence = dataclasses.replace(record, value=value, statement=said, tags=tags)
        if record.session in now:
            proposal.by_session.setdefault(record.session, []).append(evidence)
        else:
            proposal.earlier.append(evidence)
    return proposal


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    project = session_project(episode.events)
    proposal = _proposals(ctx).get(project) if project is not None else None
    if project is None or proposal is None:
        return
    key = FactKey.of(project, ATTRIBUTE)
    earlier, proposal.earlier = proposal.earlier, []  # once a run, with the project's first session
    for evidence in [*earlier, *proposal.by_session.pop(episode.session, [])]:
        yield Candidate(key, (project, ATTRIBUTE), evidence)
