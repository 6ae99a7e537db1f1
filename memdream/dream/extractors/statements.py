"""Facts stated in prose: "X is Y", "X is in/on/at Y", "X listens on port N", "X moved to Y",
"we renamed X to Y", "remember that …".

The user's statements are strong evidence (they know their world); the agent's are weak and only
in the shapes that name a place, a port or a name. Questions, negations, conditions and
uncertainty ("is X on port N?", "X is not …", "if X is …", "I think X is …") are not facts. An
update ("moved", "renamed", "now") is simply newer evidence: verify supersedes the older value and
keeps the chain.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from memdream.dream.extractors._events import (
    piece,
    scope_tags,
    sentences,
    session_project,
    trusted,
    user_note,
    user_words,
)
from memdream.dream.extractors.candidate import Candidate
from memdream.dream.model import DreamContext, Episode, FactKey

NAME = "statements"
UNIT = "session"
MAX_MESSAGE = 2000

_LEAD = re.compile(r"^(?:(?:remember|note|fyi|btw|just so you know|keep in mind)(?: that)?[,:]?\s+|"
                   r"(?:also|and|ok(?:ay)?|so)[,]?\s+)+", re.IGNORECASE)
_NEGATED = re.compile(r"\b(?:not|no longer|never|isn'?t|aren'?t|wasn'?t|won'?t|doesn'?t|don'?t|cannot|can'?t)\b|n't\b",
                      re.IGNORECASE)
_UNSURE = re.compile(r"\b(?:maybe|might|probably|perhaps|possibly|i think|i guess|i believe|i suppose|not sure|"
                     r"don'?t know|unsure|could be|seems?|apparently|supposedly|likely|if|unless|whether|when)\b",
                     re.IGNORECASE)
_QUESTION = re.compile(r"\?|^(?:is|are|was|were|do|does|did|can|could|would|should|will|where|what|which|why|how|"
                       r"who)\b", re.IGNORECASE)
_PRONOUNS = frozenset("it this that there he she they i we you which what who these those here everything "
                      "something nothing one".split())
_SUBJECT = r"(?P<s>[\w][\w .'/-]{1,60}?)"
_VALUE = r"(?P<v>[^\s].{0,100}?)"
_END = r"\s*(?:now|today|these days)?[.!]?$"


@dataclass(frozen=True)
class Shape:
    pattern: re.Pattern[str]
    attribute: str
    template: str  # with {subject}, {value} and {prep}
    agent_too: bool  # the agent's statements of this shape count (weakly) as well


SHAPES = (
    Shape(re.compile(r"^(?:we |i |they )?(?:have |'ve )?(?:moved|migrated|switched) " + _SUBJECT
                     + r" to port (?P<v>\d{2,5})" + _END, re.I), "port", "{subject} listens on port {value}.", True),
    Shape(re.compile(r"^" + _SUBJECT + r" (?:now )?(?:listens|runs|is running|is listening|is served|is exposed|"
                     r"is available|lives|is) on port (?P<v>\d{2,5})" + _END, re.I), "port",
          "{subject} listens on port {value}.", True),
    Shape(re.compile(r"^(?:we |i |they )?(?:have |'ve )?renamed " + _SUBJECT + r"(?: to |, (?:it is|it's) )"
                     + _VALUE + _END, re.I), "name", "{subject} is now called {value}.", True),
    Shape(re.compile(r"^" + _SUBJECT + r" (?:was|has been|got|is) (?:now )?(?:renamed to|called) " + _VALUE + _END,
                     re.I), "name", "{subject} is now called {value}.", True),
    Shape(re.compile(r"^(?:we |i |they )?(?:have |'ve )?(?:moved|migrated) " + _SUBJECT + r" to " + _VALUE + _END,
                     re.I), "location", "{subject} is in {value}.", True),
    Shape(re.compile(r"^" + _SUBJECT + r" (?:has |was |got )?(?:moved|migrated) to " + _VALUE + _END, re.I),
          "location", "{subject} is in {value}.", True),
    Shape(re.compile(r"^" + _SUBJECT + r" (?:is|are|lives|sits|runs) (?:now )?(?P<p>in|on|at) " + _VALUE + _END,
                     re.I), "location", "{subject} is {prep} {value}.", True),
    Shape(re.compile(r"^" + _SUBJECT + r" (?:is|are) (?:now )?" + _VALUE + _END, re.I), "is",
          "{subject} is {value}.", False),
)


@dataclass(frozen=True)
class Statement:
    subject: str  # as written, with its article ("The staging database")
    attribute: str
    value: str
    sentence: str

    @property
    def key_subject(self) -> str:
        return re.sub(r"^(?:the|our|my|your)\s+", "", self.subject, flags=re.IGNORECASE)


def _clean_value(value: str) -> str:
    value = re.split(r",\s*(?:which|so|because|and|but)\b|;|\s+because\s+|\s+so that\s+|\s+right now\b", value)[0]
    return value.strip(" .!'\"`")


_ARTICLE = re.compile(r"^(?:the|our)\s", re.IGNORECASE)
# Things whose plain value a person states as a fact about their setup ("The default branch is main").
_TECHNICAL = frozenset("""branch host hostname region zone port version database db bucket url endpoint path folder
directory repo repository server service cluster namespace account username env environment language framework
runtime manager registry image tag domain queue topic table schema index provider backend frontend shell editor
python node java go ruby rust compiler linter formatter ci pipeline workflow remote origin""".split())
_IDENTIFIER = re.compile(r"[\d\-_./:@`]|^[A-Z]")
# Words a value starts with when it judges rather than names ("is always great", "is so hard").
_NOT_A_NAME = frozenset("""that to a an the because so always never really very pretty super quite too great good bad
awesome amazing nice fine ok okay important hard easy fun done ready wrong right broken slow fast""".split())
_NAMED = re.compile(r"[\d\-_./:@`]|\s[A-Z]")  # a subject's first capital only starts the sentence


def _plain_value(subject: str, value: str) -> bool:
    """A generic "X is Y" counts only for a named, technical thing and a plain value: "The default
    branch is main", "billing-core is Postgres 16" — not "Family is everything", "Your idea is great"."""
    if len(value.split()) > 3 or value.lower().split()[0] in _NOT_A_NAME:
        return False
    named = bool(_NAMED.search(subject)) and not _ARTICLE.match(subject + " ")
    technical = subject.lower().split()[-1] in _TECHNICAL
    return (named or technical) and (technical or bool(_IDENTIFIER.search(value)))


def _place(subject: str, value: str) -> bool:
    """A place as setups have them: a region, a path, a host, a named service ("eu-central-1",
    "/etc/app.conf", "GitHub") — not "on tenuous grounds" or "at the top of my list"."""
    return len(value.split()) <= 3 and (bool(_IDENTIFIER.search(value)) or subject.lower().split()[-1] in _TECHNICAL)


def _subject_ok(subject: str) -> bool:
    if re.search(r"\b(?:my|your|his|her|their)\b", subject, re.IGNORECASE):
        return False  # about a person: not this tool's kind of fact, and often personal data
    words = re.sub(r"^(?:the|our)\s+", "", subject.lower()).split()
    return 0 < len(words) <= 5 and words[0] not in _PRONOUNS and words[-1] not in _PRONOUNS


# Every shape has one of these words; most sentences have none, and a substring test is far cheaper
# than the shapes' regular expressions.
_SHAPE_WORDS = (" is ", " are ", " port ", "moved", "migrated", "switched", "renamed", "called", " lives ", " sits ",
                " runs ")


# A value that is the start of an explanation, not a thing: "in the program because:".
_CLAUSE_VALUE = re.compile(r"\b(?:because|since|so that|which|when|while|unless|whereas)\b|[:;,]$", re.IGNORECASE)


def parse(sentence: str, by_user: bool) -> Statement | None:
    """The fact a sentence states, or None when it states none (or only hedges, asks or denies)."""
    lowered = f" {sentence.lower()} "
    if not any(word in lowered for word in _SHAPE_WORDS):
        return None
    text = _LEAD.sub("", sentence.strip())
    if len(text) > 200 or _QUESTION.search(text) or _NEGATED.search(text) or _UNSURE.search(text):
        return None
    for shape in SHAPES:
        if not (shape.agent_too or by_user):
            continue
        match = shape.pattern.match(text)
        if match is None:
            continue
        subject, value = match.group("s").strip(" ,"), _clean_value(match.group("v"))
        if not _subject_ok(subject) or not value or len(value.split()) > 8 or _CLAUSE_VALUE.search(value):
            return None
        if shape.attribute == "is" and not _plain_value(subject, value):
            return None
        if shape.attribute == "location" and not _place(subject, value):
            return None
        prep = match.groupdict().get("p") or "in"
        shown = subject[0].upper() + subject[1:] if _ARTICLE.match(subject) else subject
        written = shape.template.format(subject=shown, value=value, prep=prep.lower())
        return Statement(subject=subject, attribute=shape.attribute, value=value, sentence=written)
    return None


def _said(event: dict[str, Any]) -> tuple[str, bool] | None:
    """(text, by the user) of a message that may state facts."""
    words = user_words(event)
    if words is not None:
        return words, True
    if event["kind"] == "message" and event.get("actor") == "agent" and trusted(event):
        text = event.get("text")
        return (text, False) if isinstance(text, str) else None
    return None


def _noted_fact(event: dict[str, Any], project: str | None) -> Candidate | None:
    """The fact of a note the user gave memory (`memdream remember --subject S --attribute A --value V`):
    their word, strong like a fact they state in a session. The same event also gives a weak "note"
    piece (memdream.dream.extract); verify keeps one piece per event and stance, this one, which
    comes later."""
    fact = event.get("fact")
    if not (user_note(event) and trusted(event) and isinstance(fact, dict)):
        return None
    subject, attribute, value = (str(fact.get(name) or "").strip() for name in ("subject", "attribute", "value"))
    if not (subject and attribute and value):
        return None
    evidence = piece(event, value, kind="feedback", layer="fact", statement=f"The {attribute} of {subject} is {value}.",
                     scope=project, tags=scope_tags(project), source=NAME)
    return Candidate(FactKey.of(subject, attribute), (subject, attribute), evidence)


def extract(episode: Episode, ctx: DreamContext) -> Iterator[Candidate]:
    project = session_project(episode.events)
    for event in episode.events:
        noted = _noted_fact(event, project)
        if noted is not None:
            yield noted
        said = _said(event)
        if said is None or len(said[0]) > MAX_MESSAGE:
            continue
        text, by_user = said
        for sentence in sentences(text):
            found = parse(sentence, by_user)
            if found is None:
                continue
            names = (found.key_subject, found.attribute)
            evidence = piece(event, found.value, kind="feedback" if by_user else "message", layer="fact",
                             statement=found.sentence, scope=project, tags=scope_tags(project), source=NAME)
            yield Candidate(FactKey.of(*names), names, evidence)
