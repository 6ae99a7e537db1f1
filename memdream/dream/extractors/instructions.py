"""The user's standing instructions, preferences and corrections, quoted.

From the user's own words only (:func:`memdream.dream.extractors._events.user_words`): never tool
output, fetched pages, a template's expansion or a sub-agent's prompt. Precision first: a request
for the task at hand is neither an instruction nor a preference, and stays in the raw layer, where
recall still finds it.

- instructions: sentences phrased as a rule, for how to work from now on: "Always run ruff before
  committing.", "Never push to main.", "Use uv instead of pip.", "From now on, …", "Don't … ever";
  a short "Don't X." / "Avoid X." with nothing tying it to the task at hand ("until", "yet", "for
  now", "this", a path) is one too. "Make sure …", "Please use …", "Stop …" and "I want you to …"
  are usually about the task at hand: they count only with a word that makes them standing
  ("always", "every time", "from now on", "by default", …);
- preferences: "I prefer …", "I'd rather …", "I like / love …", "I don't like …", "I hate …", "Please
  use …" (after a short opening: "Across all projects, I prefer …"); not a reaction to what the agent
  proposed or did ("I prefer the second option you listed", "I like this layout"), not one tied to the
  task at hand ("I'd rather you fix the tests first", "Please use the mock server for this run"); "I'd
  rather you …" and "I'd like you to …" only with a word that makes them standing;
- corrections: what the user said when refusing a shell command (the rejection of a tool call, or
  "no, …" right after one) that says what to do instead ("that branch is protected, open a pull
  request"); not a question, not a new task typed while the call was pending, not about one file
  (rejecting ``rm a.md b.md`` is about those files, not a way of working), not about a command that
  only looks.

- constraints the user repeats: an item of a list they headed "Constraints:" (or "Rules:",
  "Guidelines:", "Principles:") in a request binds the task it came with; the same item in another request
  of theirs in the session ("Preserve agent-first design", pasted with each audit prompt) is how they want
  the project worked on, a standing instruction. Items naming a file, a path or "this" stay with their task.

Everything is scoped to the session's project unless the user says it holds everywhere ("in every
project", "globally"); a session without a project gives nothing that would need one.

The key is the instruction's topic (its words without always / never / don't / please …), so
that a later contrary instruction ("Don't run ruff before committing anymore") supersedes the
earlier one, and a repetition supports it. The user's word is strong evidence: one statement
makes a card (inferred), repetition in another session verifies it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from memdream.dream.extractors._events import (
    GLOBAL_SCOPE,
    piece,
    quote,
    scope_tags,
    sentences,
    session_project,
    trusted,
    user_note,
    user_words,
)
from memdream.dream.extractors._runs import INSPECTION
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey
from memdream.memory.tags import MEMORY_FILE_TAG
from memdream.toolcalls import command_line, is_shell, program

NAME = "instructions"
UNIT = "session"
MAX_MESSAGE = 2000  # longer user messages are pasted material (logs, files), not instructions
_LEAD = r"(?:(?:please|pls|also|and|but|so|ok(?:ay)?|oh|hey|btw|one more thing)[,:!.]?\s+)*"
_INSTRUCTION = re.compile(
    _LEAD + r"(?:always|never|don'?t|do not|stop|avoid|make sure(?: to| that| you)?|remember to|be sure to|"
    r"from now on|going forward|in (?:the )?future|please use|use\s+\S.{0,80}\binstead of\b|"
    r"(?:you )?(?:must|should) (?:always|never))\b", re.IGNORECASE)
# A short opening phrase before the preference itself: "Small thing about style: I prefer …",
# "Across all projects, I prefer …", "Personally, I like …".
_OPENING = r"(?P<opening>[a-z][\w' -]{0,38}[,:]\s+)?"
_DEGREE = r"(?:really |generally |usually |much |strongly |definitely |always |also |still |personally |tend to )*"
_PREFERENCE = re.compile(
    _OPENING + _LEAD + r"(?:(?:i|we)(?:'d| would)? " + _DEGREE + r"(?:prefer|rather|like you to|want you to|"
    r"don'?t want you to|do not want you to)|(?:i|we) " + _DEGREE + r"(?:like|love|dislike|hate|"
    r"(?:don'?t|do not|never) (?:like|love|want)|can'?t stand)|please use)\b",
    re.IGNORECASE)
# A preference addressed to the agent's work at hand ("I'd rather you ...", "I like you to ..."): standing
# only with a word that makes it so.
_WANTS = re.compile(r"\b(?:(?:like|love|want) you to|rather you)\b", re.IGNORECASE)
# "I like / I prefer" about what the agent just proposed or did: a choice for the task at hand.
_REACTION = re.compile(
    r"\byou (?:listed|suggested|proposed|mentioned|showed|described|wrote|gave|made|did|picked|chose)\b|"
    r"\b(?:first|second|third|last|other|former|latter|previous|original|new|old|current) (?:one|option|approach|"
    r"version|variant|way|proposal|suggestion|layout|design|name)s?\b|"
    r"\byour (?:\w+ )?(?:idea|suggestion|approach|option|version|proposal|plan|change|fix)s?\b|"
    r"\b(?:like|love|hate) (?:how|what|where)\b", re.IGNORECASE)
_CORRECTION = re.compile(r"^(?:no|nope|wrong|not that|that'?s (?:wrong|not right)|stop)\b[,.!:;]*\s+(?P<rest>\S.*)$",
                         re.IGNORECASE)
_QUESTION = re.compile(r"\?\s*$|^(?:can|could|would|should|is|are|do(?! not\b)|does|did|why|how|what|where|when|"
                       r"which|who|will|shall|may)\b", re.IGNORECASE)
# Words that set the polarity or politeness of an instruction, not its topic.
_POLARITY = re.compile(
    r"\b(?:please|pls|always|never|don'?t|do not|make sure(?: to| that| you)?|remember to|be sure to|stop|avoid|"
    r"from now on|going forward|in (?:the )?future|anymore|any more|again|you (?:must|should)|must|should|"
    r"(?:i|we)(?:'d| would)? (?:really |generally |usually |much |strongly |definitely |also |still |personally |"
    r"tend to )*(?:prefer|rather|like you to|want you to|like|love|dislike|hate|can'?t stand)|"
    r"(?:i|we) (?:don'?t|do not|never) (?:want you to|like|love|want)|personally)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[,;:(]|\s[-–—]\s|\s(?:because|since|as|so|but|unless|otherwise)\s", re.IGNORECASE)
_WORDS = re.compile(r"[a-z0-9][a-z0-9._/-]*")


def topic(sentence: str) -> str:
    """What an instruction is about: its words without polarity and politeness ('run ruff before committing')."""
    instead = re.search(r"\binstead of\s+(.+)$", sentence, re.IGNORECASE)
    # The main clause: "Never force-push, the branch is shared" is about force-pushing; the reason
    # after the comma may change while the instruction stays (or turns around) the same.
    if instead:
        return _words(f"instead of {_CLAUSE.split(instead.group(1), maxsplit=1)[0]}")
    preference = _PREFERENCE.match(sentence)
    if preference and preference.group("opening"):  # "Across all projects, I prefer …": the rest is the topic
        sentence = sentence[preference.end("opening"):]
    return _words(_POLARITY.sub(" ", _CLAUSE.split(sentence, maxsplit=1)[0])) or _words(_POLARITY.sub(" ", sentence))


def _words(text: str) -> str:
    words = [word.strip("._/-") for word in _WORDS.findall(text.lower())]
    return " ".join(word for word in words if word)[:80].strip()


# Every instruction or preference has one of these words (a cheap test before the expressions).
_CUE_WORDS = ("always", "never", "don", "do not", "stop", "avoid", "make sure", "remember", "be sure", "from now on",
              "going forward", "future", "use", "prefer", "rather", "want you", "must", "should", "acceptable",
              "allowed", "permitted", "an option", "like", "love", "hate", "stand")


# Words that make a sentence a rule for every future session, not a request for this one.
_STANDING = re.compile(
    r"\b(?:always|never|ever|every ?time|each time|whenever|from now on|going forward|in (?:the )?future|"
    r"any ?more|by default|in general|as a rule|at all|everywhere|globally|"
    r"in (?:any|all|every|each) (?:projects?|repos?|repositor(?:y|ies)|sessions?))\b", re.IGNORECASE)
# An instruction's opening that is a rule by itself.
_RULE_OPENING = re.compile(
    _LEAD + r"(?:always|never|from now on|going forward|in (?:the )?future|"
    r"(?:you )?(?:must|should) (?:always|never))\b", re.IGNORECASE)
_INSTEAD = re.compile(_LEAD + r"(?:please\s+)?use\s+\S.{0,80}\binstead of\b", re.IGNORECASE)
_PROHIBITION = re.compile(_LEAD + r"(?:don'?t|do not|avoid)\b", re.IGNORECASE)
# What ties a sentence to the task at hand: a deadline, a "this", a file.
_A_FILE = r"[\w-]+/[\w./-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|rs|go|java|md|json|ya?ml|toml|sh|txt|c|h|cpp)\b"
_THIS_TASK = re.compile(
    r"\b(?:until|yet|for now|right now|this time|today|first|this|that|these|those|here|it|them)\b|" + _A_FILE,
    re.IGNORECASE)
_NOT_ALLOWED = re.compile(
    _LEAD + r"[\w .'/-]{1,40}?\s(?:is|are)\s+(?:not|never)\s+(?:acceptable|allowed|ok|okay|permitted|an option)\b",
    re.IGNORECASE)
# "Don't stop.", "Don't worry about it": talk about the moment, not a way of working.
_CHATTER = re.compile(_LEAD + r"(?:don'?t|do not)\s+(?:stop|worry|bother|wait|panic|apologi[sz]e|be sorry|mind)\b",
                      re.IGNORECASE)
MAX_RULE_WORDS = 12  # a "Don't X" longer than this is an explanation of the task at hand
_EVERYWHERE = re.compile(
    r"\b(?:everywhere|globally|in (?:any|all|every|each) (?:projects?|repos?|repositor(?:y|ies))|"
    r"across (?:all )?(?:projects|repos|repositories))\b", re.IGNORECASE)


def classify(sentence: str) -> str | None:
    """``instruction``, ``preference`` or None for a sentence the user wrote: only a sentence
    phrased as a rule counts (see the module's docstring); a one-time request gives None."""
    if len(sentence) < 10 or len(sentence) > 300:
        return None
    lowered = sentence.lower()
    if not any(word in lowered for word in _CUE_WORDS) or _QUESTION.search(sentence):
        return None
    standing = _STANDING.search(sentence) is not None
    if _PREFERENCE.match(sentence) and not _INSTEAD.match(sentence):  # "Please use uv instead of pip": a rule
        if _REACTION.search(sentence):
            return None  # "I prefer the second option you listed": a choice for the task at hand
        return "preference" if standing or not (_WANTS.search(sentence) or _THIS_TASK.search(sentence)) else None
    if _RULE_OPENING.match(sentence) or _INSTEAD.match(sentence) or re.search(r"\bfrom now on\b", lowered):
        return "instruction"
    if _NOT_ALLOWED.match(sentence) and not _THIS_TASK.search(sentence):
        return "instruction"  # "TODOs are not acceptable": a rule about the work, said as a fact
    if _PROHIBITION.match(sentence):
        short = len(sentence.split()) <= MAX_RULE_WORDS and not _THIS_TASK.search(sentence)
        if _CHATTER.match(sentence):
            return "instruction" if standing else None
        return "instruction" if standing or short or _rule_with_its_reason(sentence) else None
    if _INSTRUCTION.match(sentence) and standing:  # make sure, remember to, please use, stop: with "always" & co
        return "instruction"
    return None


# After a short "Don't X,": the way it should be instead, or why; not a plan for the task at hand.
_REASON = re.compile(r"^(?:i|we) (?:want|need|prefer|'d rather)\b|^(?:instead|rather|because|since|as|so that|"
                     r"use|it|they|each|every|all)\b", re.IGNORECASE)
_WHEN = re.compile(r"\b(?:until|yet|for now|right now|this time|today|first|then|after|before|later|again)\b",
                   re.IGNORECASE)


def _rule_with_its_reason(sentence: str) -> bool:
    """ "Don't hard code the roles, I want them to follow the project's domain": a short prohibition
    that names no task at hand, then says how it should be instead or why, with no moment in it."""
    rule, separator, rest = sentence.partition(",")
    rest = rest.strip()
    return bool(separator and rest and len(rule.split()) <= MAX_RULE_WORDS and not _THIS_TASK.search(rule)
                and _REASON.match(rest) and not _WHEN.search(rest))


def scope_for(sentence: str, project: str | None) -> str | None:
    """Where a rule holds: the project, or everywhere when the user says so; None when the session
    has no project and the user did not say (nothing to scope it to)."""
    if _EVERYWHERE.search(sentence):
        return GLOBAL_SCOPE
    return project


def _card(event: dict[str, Any], kind: str, subject: str, about: str, words: str, scope: str,
          text: str) -> Candidate:
    attribute = f"{kind}: {about}"[:200]
    evidence = piece(event, words, kind="feedback", layer="lesson", statement=text, scope=scope,
                     tags=(*scope_tags(scope), kind), source=NAME)
    return Candidate(FactKey.of(subject, attribute), (subject, attribute), evidence)


def _stated(event: dict[str, Any], text: str, project: str | None, said: set[str],
            rejecting: str | None = None) -> Iterator[Candidate]:
    """Instructions and preferences in ``text``; ``said``: sentences the session already gave
    (a rejection's words come back as a message: one statement, one piece of evidence)."""
    for sentence in sentences(text):
        kind = classify(sentence)
        about = topic(sentence) if kind else ""
        if kind is None or not about or sentence.lower() in said:
            continue
        said.add(sentence.lower())
        # Without a project, only the user's own word to memory (`memdream remember`, a CLAUDE.md in
        # their home folder) is everyone's; a session's rule has nothing to be scoped to.
        everyone = user_note(event) or MEMORY_FILE_TAG in event.get("tags", ())
        scope = scope_for(sentence, project) or (GLOBAL_SCOPE if everyone else None)
        if scope is None:
            continue
        words = quote(sentence)
        where = f"In {scope}, the user's" if scope != GLOBAL_SCOPE else "The user's"
        context = f" (when rejecting `{rejecting}`)" if rejecting and is_general(rejecting) else ""
        yield _card(event, kind, scope, about, words, scope, f'{where} standing {kind}{context}: "{words}"')


def _stopped_call(events: list[dict[str, Any]], position: int, calls: dict[str, dict[str, Any]]
                  ) -> dict[str, Any] | None:
    """The tool call a rejection is about: its target, or for an interruption (no target) the
    last call before it."""
    event = events[position]
    if event.get("target"):
        found: dict[str, Any] | None = calls.get(str(event["target"]))
        return found  # None: a verdict on a fact or card, for verify to weigh
    earlier = [event for event in events[max(0, position - 6):position] if event["kind"] == "tool_call"]
    return earlier[-1] if earlier else None


def _rejected(events: list[dict[str, Any]], position: int, calls: dict[str, dict[str, Any]],
              project: str | None, said: set[str]) -> Iterator[Candidate]:
    event = events[position]
    words = str(event.get("text") or "").strip()
    if not words or words == "interrupted by user" or words.startswith("turn aborted"):
        return
    call = _stopped_call(events, position, calls)
    if call is None:
        return
    command = command_line(call.get("tool"), call.get("args"))
    if any(classify(sentence) for sentence in sentences(words)):  # a standing instruction, given as a "no"
        yield from _stated(event, words, project, said, rejecting=command)
        return
    if project is None or not is_shell(call.get("tool")) or not command or not corrects(words, command):
        return
    where = f"In {project}, the"
    about = f"rejected {program(command)} {topic(words)}".strip()
    yield _card(event, "correction", project, about, quote(words), project,
                f'{where} user rejected `{command}` and said: "{quote(words)}"')


MAX_CORRECTION_WORDS = 30  # longer words typed at a refused call are a new task, not a correction
# Words that say what to do instead (an alternative, a prohibition, a condition).
_INSTEAD_CUES = re.compile(
    r"\b(?:instead|rather|use|run|try|open|ask|create|make|add|pass|set|don'?t|do not|no|not|never|always|"
    r"should|must|need(?:s)? to|has to|have to|only|first)\b", re.IGNORECASE)
_PATH_ARGUMENT = re.compile(r"(?:^|\s)(?!-)[^\s'\"]*(?:/[^\s'\"]*|\.[A-Za-z0-9]{1,5})(?=\s|$)")


def is_general(command: str) -> bool:
    """Whether a command is a way of working rather than an act on some files: no argument is a
    path or a file name (``git push origin main`` is; ``rm notes/a.md b.md`` is not)."""
    return _PATH_ARGUMENT.search(command.partition(" ")[2]) is None


def corrects(words: str, command: str) -> bool:
    """Whether what the user said at a refused (or just run) shell command corrects it: a short
    statement, not a question, that says what to do instead, about a command that is a way of
    working and does more than look (refusing a ``grep`` or ``sed -n`` is about the task at hand)."""
    one_line = " ".join(words.split())
    if len(one_line.split()) > MAX_CORRECTION_WORDS or _QUESTION.search(one_line) or "?" in one_line:
        return False
    if not _INSTEAD_CUES.search(one_line) or not is_general(command):
        return False
    head = program(command)
    return head not in INSPECTION and not (head == "sed" and " -n" in command)


def _after_action(events: list[dict[str, Any]], position: int) -> str | None:
    """The shell command the agent ran just before the user's message at ``position``, if it did."""
    for event in reversed(events[max(0, position - 6):position]):
        if event["kind"] == "tool_call":
            return command_line(event.get("tool"), event.get("args")) if is_shell(event.get("tool")) else None
        if event["kind"] == "message":
            return None
    return None


def _with_agent(events: list[dict[str, Any]]) -> bool:
    """A standing instruction is addressed to an agent: a talk between people has none. A note the
    user gave memory (`memdream remember`) is addressed to every agent that reads it."""
    return any(event.get("actor") == "agent" or event["kind"] in ("tool_call", "tool_result") or user_note(event)
               or MEMORY_FILE_TAG in event.get("tags", ()) for event in events)


def _from_file(event: dict[str, Any], text: str, project: str | None, said: set[str]) -> Iterator[Candidate]:
    """A rule of a file the user wrote for agents (CLAUDE.md, AGENTS.md: tagged ``memory-file``). Its
    place makes it a standing instruction even without "always" or "never" ("Run the tests with
    `make test`."), unless it states a fact (the statements extractor reads those) or asks something."""
    from memdream.dream.extractors.statements import parse as stated_fact

    if any(classify(sentence) for sentence in sentences(text)):
        yield from _stated(event, text, project, said)
        return
    rule = quote(text)
    about = topic(rule)
    facts = [stated_fact(sentence, True) for sentence in sentences(text)]
    if not about or rule.lower() in said or _QUESTION.search(rule) or any(facts):
        return
    said.add(rule.lower())
    scope = project or GLOBAL_SCOPE
    where = f"In {scope}, the user's" if scope != GLOBAL_SCOPE else "The user's"
    written = (event.get("meta") or {}).get("memory_file") or "instruction file"
    yield _card(event, "instruction", scope, about, rule, scope, f'{where} standing instruction ({written}): "{rule}"')


# A line that heads the user's list of constraints, and the items under it.
_CONSTRAINTS_HEAD = re.compile(r"^\W*(?:hard |key |ground |general )?(?:constraints|rules|guidelines|principles)"
                               r"\W*$", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)])\s+(?P<item>\S.*?)\s*$")
# _THIS_TASK without "first", "it" and "them": a constraint's item ("Preserve agent-first design", "Keep it
# simple") names no moment; only a deictic word or a file ties it to its task.
_TIED_TO_TASK = re.compile(r"\b(?:this|that|these|those|here|today|for now|until|yet)\b|" + _A_FILE, re.IGNORECASE)
MIN_CONSTRAINT_REQUESTS = 2  # requests that state one constraint: once binds its task, twice is a rule


def constraints(text: str) -> list[str]:
    """The items of the lists ``text`` heads "Constraints:" & co. (see the module's docstring)."""
    found: list[str] = []
    within = False
    for line in text.splitlines():
        if _CONSTRAINTS_HEAD.match(line.strip()):
            within = True
            continue
        item = _LIST_ITEM.match(line) if within else None
        if item is None:
            within = within and not line.strip()  # a blank line may part the head from its items
            continue
        words = " ".join(item.group("item").split()).rstrip(".;")
        if 3 <= len(words) <= 200 and not _TIED_TO_TASK.search(words) and not _QUESTION.search(words):
            found.append(words)
    return found


def _repeated_constraints(stated: dict[str, list[tuple[dict[str, Any], str]]], project: str | None,
                          said: set[str]) -> Iterator[Candidate]:
    """A constraint the user wrote in MIN_CONSTRAINT_REQUESTS requests or more: one card, with each
    request as evidence."""
    if project is None:
        return
    for occurrences in stated.values():
        requests = {id(event) for event, _ in occurrences}
        words = occurrences[0][1]
        about = topic(words)
        if len(requests) < MIN_CONSTRAINT_REQUESTS or not about or words.lower() in said:
            continue
        said.add(words.lower())
        text = f'In {project}, the user\'s standing instruction (a constraint of {len(requests)} requests): "{words}"'
        for event, _ in occurrences:
            yield _card(event, "instruction", project, about, quote(words), project, text)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    events = episode.events
    if not _with_agent(events):
        return
    project = session_project(events)
    by_id = {str(event["id"]): event for event in events if event["kind"] == "tool_call"}
    rejected: set[str] = set()  # words already quoted from a rejection: its echo as a message adds nothing
    said: set[str] = set()
    stated: dict[str, list[tuple[dict[str, Any], str]]] = {}  # constraint (lowercased) -> (request, its words)
    for position, event in enumerate(events):
        if event["kind"] == "feedback" and event.get("verdict") == "reject" and trusted(event):
            found = list(_rejected(events, position, by_id, project, said))
            if found:
                rejected.add(" ".join(str(event.get("text")).split()))
            yield from found
            continue
        text = user_words(event)
        if text is None or len(text) > MAX_MESSAGE:
            continue
        if MEMORY_FILE_TAG in event.get("tags", ()):
            yield from _from_file(event, text, project, said)
            continue
        yield from _stated(event, text, project, said)
        for words in constraints(text):
            stated.setdefault(words.lower(), []).append((event, words))
        if " ".join(text.split()) in rejected:
            continue
        correction = _CORRECTION.match(" ".join(text.split()))
        doing = _after_action(events, position)
        if correction and doing and project and classify(correction.group("rest")) is None \
                and corrects(text, doing):
            words = quote(text)
            yield _card(event, "correction", project, f"after {program(doing) or doing} {topic(words)}", words,
                        project, f'In {project}, after `{doing}` the user corrected: "{words}"')
    yield from _repeated_constraints(stated, project, said)
