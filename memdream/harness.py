"""Harness text: what an agent's tools write in the user's turn, told apart from what the user typed.

Agents put text into the user's turn that the user never typed: the expansion of a slash command or
a prompt file (a Markdown document that opens with a heading: ``# /deploy — Ship a release``, a spec
template's ``## User Input`` and its ``You **MUST** consider the user input``), an editor's context
preamble (``# Context from my IDE setup:``, ``# Files mentioned by the user:``), notices wrapped in a
tag (``<task-notification>…</task-notification>``, ``<environment_context>``, ``<system-reminder>``),
hook feedback and the harness's caveats. Only the user's own words may make a goal, an instruction,
a preference or a correction, so both ingest (which picks a session's goal) and dream (which reads
instructions) ask :func:`own_words` first.

The test is the text's structure, not any one tool's wording: a user typing to an agent does not open
with a Markdown heading nor wrap the whole message in a tag. A template that leaves a section for the
user (a heading that names the user's input or request) yields that section's words, when there are
any: an editor's preamble followed by ``## My request for Codex:`` and the request, a spec template
whose ``## User Input`` block holds the arguments the user gave.
"""

from __future__ import annotations

import re

GOAL_LIMIT = 300  # characters of a goal: a headline, not the whole request
_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n")
_LIST_ITEM = re.compile(r"(?:[-*•]|\d{1,2}[.)])\s")  # a paragraph that starts a list: "1. Add", "- Check"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A first paragraph that only sets the scene ("We are in a runpod instance.", "Context: …"), and the words
# by which a paragraph asks for something.
_SETTING = re.compile(r"(?:we are|we're|i am|i'm|this is|here is|here's|context|background|fyi)\b", re.IGNORECASE)
_ASKS = re.compile(r"\?|\b(?:i want|i need|i'd like|i would like|please|can you|could you|would you|let's|let us|"
                   r"help me|make sure|you should|you need to)\b", re.IGNORECASE)
# A role prompt: "You are the Analyzer Agent (…)", "Act as a senior code reviewer". Not "You are auditing
# the repository …": a task told as what the agent is doing.
_PERSONA = re.compile(
    r"(?:^|(?<=[.!?;:—–-] ))(?:you are|you're|act as|pretend to be)\s+(?:now\s+)?(?:an?|the)\s+"
    r"(?:[\w-]+\s+){0,5}?(?:agent|assistant|engineer|developer|architect|expert|reviewer|analyst|"
    r"investigator|specialist|consultant|programmer|auditor)\b", re.IGNORECASE)
_KEY_BLOCK = "-----BEGIN"
_DIGIT_GROUP = re.compile(r"[0-9()+.-]+|[|:,;=]")  # a group of a number, or a lone separator

# The whole text wrapped in one tag: <task-notification>…</task-notification>.
_WRAPPED = re.compile(r"<([A-Za-z][\w:-]*)(?:\s[^>]*)?>.*</\1>", re.DOTALL)
# An opening tag alone on the first line: the harness's structured notices (<system-reminder>, …).
_TAG_LINE = re.compile(r"<[A-Za-z][\w:-]*(?:\s[^>]*)?>")
_HEADING = re.compile(r"#{1,6}[ \t]+\S")
# A heading that leaves room for the user: "## User Input", "## My request for Codex:", "# Task".
_USERS_SECTION = re.compile(
    r"^#{1,6}[ \t]+(?:the[ \t]+)?(?:user(?:'s)?[ \t]+(?:input|request|prompt|message|arguments)|"
    r"my[ \t]+(?:request|task|question|prompt)\b[^\n]*|request|arguments|task|prompt)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE)
_NEXT_HEADING = re.compile(r"^#{1,6}[ \t]+\S", re.MULTILINE)
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(?P<body>.*?)^[ \t]*\1", re.MULTILINE | re.DOTALL)
_PLACEHOLDER = re.compile(r"\$[A-Z_]{3,}\b|\{\{[^}]*\}\}")
# Fixed openings of text the harness writes in the user's name (Claude Code's hook feedback and
# local-command caveat, a skill's preamble, an interruption marker, a compaction's retelling).
_HARNESS_OPENINGS = (
    "caveat: the messages below were generated",
    "stop hook feedback:",
    "base directory for this skill:",
    "[request interrupted by user",
    "this session is being continued from a previous conversation",
)


# What a hook said back to the agent, written in the user's turn: "Stop hook feedback:\n[.../stop.sh]: Cannot
# exit with unstaged changes." (Stop, SubagentStop, …); group 1 is the hook.
HOOK_FEEDBACK = re.compile(r"\s*(\w+) hook feedback:", re.IGNORECASE)


def command_request(command: str, description: str | None) -> str:
    """What a slash command asks, as a goal says it: the command as typed (``/deploy the staging
    branch``), or a bare command with the purpose its expansion states (``/deploy — Ship a release``)."""
    return f"{command} — {description}" if description and " " not in command.strip() else command


def own_words(text: str | None) -> str | None:
    """The words the user typed in a user-turn ``text``; None when it is all harness text.

    Text that is the user's throughout comes back unchanged; a template comes back as the section it
    left for the user (stripped of code fences and unfilled placeholders), or None when that section
    is empty or the template has none.
    """
    if not text:
        return None
    stripped = text.strip()
    if not stripped:
        return None
    lowered = stripped[:80].lower()
    if lowered.startswith(_HARNESS_OPENINGS):
        return None
    if stripped.startswith("<") and (_WRAPPED.fullmatch(stripped) or _TAG_LINE.fullmatch(stripped.split("\n", 1)[0])):
        return None
    if not _HEADING.match(stripped):
        return text
    return _users_section(stripped)


# A prompt file's title that names the command it expands: "# /butler-exec — Execute a ButlerSpec".
_COMMAND_TITLE = re.compile(r"#{1,6}[ \t]+(?P<title>/[\w.:-]+\b[^\n]*)")
_COMMAND = re.compile(r"/[A-Za-z][\w.:-]*")  # a slash command the user ran: "/deploy", "/speckit.plan"
MIN_REQUEST_WORDS = 3  # "hi", "test", "yes please", "show tools": no task a session is for


def request(text: str | None) -> str | None:
    """What the user asked for in a user-turn ``text``, as a session's goal would say it: their own
    words, or the command a prompt file expands (its title: ``/deploy — Ship a release``); None for
    harness text and for a few words that name no task (a greeting, a "yes", a "test")."""
    words = own_words(text)
    if words is None:
        title = _COMMAND_TITLE.match((text or "").strip())
        words = title.group("title").strip() if title else None
    if words is None or len(words.split()) < MIN_REQUEST_WORDS and not _COMMAND.match(words):
        return None
    return words


def is_own_words(text: str | None) -> bool:
    """Whether ``text`` holds anything the user typed (see :func:`own_words`)."""
    return own_words(text) is not None


def _users_section(template: str) -> str | None:
    """The words under a template's heading for the user's input, up to the next heading."""
    found = _USERS_SECTION.search(template)
    if found is None:
        return None
    rest = template[found.end():]
    following = _NEXT_HEADING.search(rest)
    section = rest[:following.start()] if following else rest
    fenced = _FENCED.search(section)  # a template quotes the user's input in a code block: that block
    words = _PLACEHOLDER.sub("", fenced.group("body") if fenced else section).strip()
    return words or None


def _from_the_ask(paragraphs: list[str]) -> list[str]:
    """``paragraphs`` from the first that asks for something, when the first only sets the scene ("We are
    in a runpod instance. …", the ask in a later paragraph); else all of them."""
    if paragraphs and _SETTING.match(paragraphs[0]) and not _ASKS.search(paragraphs[0]):
        return next((paragraphs[at:] for at in range(1, len(paragraphs)) if _ASKS.search(paragraphs[at])),
                    paragraphs)
    return paragraphs


def _without_role(line: str) -> str:
    """``line`` without its role prompt: one pasted after the request is cut off; one put first ("You are a
    senior engineer. Fix …") gives way to the sentences after it, when there are any."""
    persona = _PERSONA.search(line)
    if persona is None:
        return line
    if persona.start():
        return line[:persona.start()].rstrip(" -–—:")
    rest = _SENTENCE_END.split(line[persona.end():], maxsplit=1)
    return rest[1] if len(rest) > 1 and rest[1].strip() else line


def headline(text: str, limit: int = GOAL_LIMIT) -> str:
    """The first paragraph of ``text`` on one line (with the list after it when it ends in a colon: it
    heads that list; without a role prompt pasted after the request; the first paragraph that asks for
    something when the first only sets the scene), cut at a word boundary to ``limit`` characters.

    The pipeline redacts it like any field, but finds only whole secrets: so a pasted key block
    (whose lines the collapse would join) is left out, and so are digit groups at the cut (the
    start of a phone or card number). A first "word" longer than ``limit`` gives no headline.
    """
    block = text.find(_KEY_BLOCK)
    if block >= 0:
        text = text[:block]
    paragraphs = _from_the_ask([" ".join(part.split()) for part in _PARAGRAPH.split(text) if part.strip()])
    line = paragraphs[0] if paragraphs else ""
    if line.endswith(":") and len(paragraphs) > 1 and _LIST_ITEM.match(paragraphs[1]):
        line = f"{line} {paragraphs[1]}"  # "Implement the grace period:" says what only with its list
    line = _without_role(line)
    if len(line) <= limit:
        return line
    words = line[:limit].split(" ")[:-1]  # the last one is cut, or leaves no room for the "…"
    while words and _DIGIT_GROUP.fullmatch(words[-1]):
        words.pop()
    return " ".join(words) + "…" if words else ""
