"""Tokens for lexical retrieval: lowercase unicode words (and the parts of camelCase identifiers), a
small stopword list, a light stemmer.

The stemmer is a suffix stripper of a dozen rules (plurals, -ing, -ed, -ly, a final -e) plus a
short table of irregular English verbs, so that "painting", "painted" and "paints" meet, and "went"
meets "go". It is deliberately cruder than Porter: both sides of a comparison go through the same
function, so only collisions matter, not linguistic correctness.

Developers abbreviate: "docs", "repo", "db", "env", "config", "deps" are the same words as
"documentation", "repository", "database", "environment", "configuration", "dependencies". A short
table (:data:`ABBREVIATIONS`) gives each abbreviation and its long form one stem, so that a question
in one spelling finds a memory in the other, in the card index and the raw index alike. Only words
that mean the same thing are here; a word and a broader one (``pytest`` and ``test``, ``postgres``
and ``database``) are not the same token.

They are related, though: "how do I run the tests" asks about `mix test` or `pytest -q`, "which db do
we use" about PostgreSQL. :data:`RELATED` names, for a handful of general words of a developer's
vocabulary (test, database, lint, format, build, CI, package, queue, cache, container), the tools that
are what the word means in a project; "port" reaches ``localhost``, since a local address is how a
project shows its port (``http://localhost:3000``). A query word there also looks for them, at a lower weight
(:func:`related`, in the card and the raw ranking alike), and a memory holding one of them answers
that word (:func:`memdream.recall.rank.coverage`). Only the general word reaches out: a question about
pytest is not one about jest.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she
should so some such than that the their theirs them themselves then there these they this those
through to too under until up very was we were what when where which while who whom why will with
would you your yours yourself yourselves s t d ll m re ve don didn doesn isn wasn aren weren won
hey hi oh yeah yes wow also really thanks thank like just got get gonna lot much
""".split())

# Past tenses and participles the suffix rules cannot reach (generic English, not domain words).
IRREGULAR = {
    "went": "go", "gone": "go", "goes": "go", "saw": "see", "seen": "see", "made": "make",
    "bought": "buy", "brought": "bring", "took": "take", "taken": "take", "gave": "give",
    "given": "give", "got": "get", "gotten": "get", "found": "find", "felt": "feel", "kept": "keep",
    "left": "leave", "met": "meet", "ran": "run", "read": "read", "said": "say", "sent": "send",
    "spent": "spend", "taught": "teach", "thought": "think", "told": "tell", "wrote": "write",
    "written": "write", "began": "begin", "begun": "begin", "came": "come", "did": "do", "done": "do",
    "drew": "draw", "drawn": "draw", "ate": "eat", "eaten": "eat", "fell": "fall", "flew": "fly",
    "forgot": "forget", "grew": "grow", "grown": "grow", "heard": "hear", "held": "hold",
    "knew": "know", "known": "know", "learnt": "learn", "lost": "lose", "paid": "pay", "rode": "ride",
    "sang": "sing", "sung": "sing", "sold": "sell", "built": "build", "caught": "catch",
    "chose": "choose", "chosen": "choose", "won": "win", "wore": "wear", "worn": "wear",
    "swam": "swim", "threw": "throw", "understood": "understand", "woke": "wake", "became": "become",
    "children": "child", "kids": "kid", "people": "person", "men": "man", "women": "woman",
    "feet": "foot", "mice": "mouse", "better": "good", "best": "good",
}

# Developer abbreviations and their long forms: the same word, one token (see the module docstring).
ABBREVIATIONS = {
    "doc": "documentation", "docs": "documentation", "document": "documentation", "documents": "documentation",
    "repo": "repository", "repos": "repository", "db": "database", "dbs": "database", "env": "environment",
    "envs": "environment", "config": "configuration", "configs": "configuration", "cfg": "configuration",
    "dir": "directory", "dirs": "directory", "folder": "directory", "folders": "directory",
    "dep": "dependency", "deps": "dependency", "k8s": "kubernetes",
    "spec": "specification", "specs": "specification", "impl": "implementation", "msg": "message",
    "err": "error", "arg": "argument", "args": "argument", "param": "parameter", "params": "parameter",
    "pkg": "package", "pkgs": "package", "lib": "library", "libs": "library", "img": "image",
    "prod": "production", "perf": "performance", "auth": "authentication",
}

# A general word -> what it names in a project (tokens as tokenize() makes them; stemmed below).
_RELATED_WORDS = {
    "test": "pytest jest vitest mocha jasmine rspec minitest unittest phpunit ctest tox nox playwright cypress",
    "database": "postgres postgresql psql mysql mariadb sqlite sqlite3 mongodb mongo dynamodb cassandra "
                "clickhouse supabase prisma alembic",
    "lint": "eslint ruff flake8 pylint clippy golangci rubocop shellcheck stylelint biome mypy",
    "format": "prettier black rustfmt gofmt isort",
    "build": "webpack vite tsc esbuild rollup gradle maven cmake bazel",
    "ci": "pipeline workflow actions jenkins circleci gitlab travis buildkite",
    "package": "npm pnpm yarn pip poetry uv cargo gem composer",
    "queue": "rabbitmq kafka sqs celery sidekiq nats",
    "cache": "redis memcached",
    "container": "docker podman kubernetes compose",
    "port": "localhost",  # a local address is written with its port: http://localhost:3000
}
RELATED_WEIGHT = 0.5  # of a query word's own weight


def related(tokens: list[str] | frozenset[str]) -> dict[str, str]:
    """The tokens the query's general words reach out to (see the module docstring), each with the
    query token it stands for; none the query holds itself."""
    found: dict[str, str] = {}
    for token in tokens:
        for other in RELATED.get(token, ()):
            if other not in tokens:
                found.setdefault(other, token)
    return found


_VOWELS = frozenset("aeiouy")
_UNDOUBLE = frozenset("bdgmnprt")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light stem of one lowercase word (see the module docstring); an abbreviation's is its long
    form's."""
    return _strip(IRREGULAR.get(word) or ABBREVIATIONS.get(word) or word)


def _strip(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ingly", "edly", "ing", "ied", "ed", "ly"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= 3 and _VOWELS & set(base):
                word = base + ("y" if suffix == "ied" else "")
                if len(word) > 3 and word[-1] == word[-2] and word[-1] in _UNDOUBLE:
                    word = word[:-1]
            break
    if len(word) > 3 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """Lowercase unicode words (letters and digits; punctuation and underscores split)."""
    return _WORD.findall(text.lower())


# An identifier in camelCase or PascalCase holds words a question names ("the modal", "the signal
# review" for ModalSignalReview): its parts are tokens too, besides the whole.
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_]+")


def _parts(word: str) -> list[re.Match[str]]:
    """The parts of a camelCase word, or [] for a plain one."""
    if word.islower() or not _CAMEL.search(word):
        return []
    found = list(_PART.finditer(word))
    return found if len(found) > 1 else []


def tokenize(text: str) -> list[str]:
    """Stemmed words without stopwords, and the parts of camelCase ones: what the index and the query
    are made of."""
    found = []
    for word in _WORD.findall(text):
        low = word.lower()
        if low not in STOPWORDS:
            found.append(stem(low))
        if low != word:
            found.extend(stem(part) for match in _parts(word)
                         if (part := match.group().lower()) not in STOPWORDS)
    return found


def _word_spans(word: str, offset: int) -> list[tuple[int, int, str]]:
    """(start, end, token) of ``word`` (found at ``offset``) and of its camelCase parts."""
    found = []
    low = word.lower()
    if low not in STOPWORDS:
        found.append((offset, offset + len(word), stem(low)))
    if low != word:
        found.extend((offset + match.start(), offset + match.end(), stem(part)) for match in _parts(word)
                     if (part := match.group().lower()) not in STOPWORDS)
    return found


def token_spans(text: str, tokens: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, token) of each word (or camelCase part) of ``text`` whose token is one of ``tokens``,
    in order.

    Only the words that hold the beginning of a token are stemmed (found with ``str.find``, at C
    speed): a tool's output of 100 kB holds tens of thousands of words, of which a query asks about a
    few. Each word is looked at once per beginning: linear in the text.
    """
    if not tokens:
        return []
    low = text.lower()
    if len(low) != len(text):  # a few letters lowercase to two characters: positions would shift
        return sorted(span for match in _WORD.finditer(text) for span in _word_spans(match.group(), match.start())
                      if span[2] in tokens)
    found: dict[tuple[int, int], tuple[int, int, str]] = {}
    for head in _heads(tokens):
        start = low.find(head)
        while start >= 0:
            begin = start
            while begin and low[begin - 1].isalnum():
                begin -= 1
            match = _WORD.match(text, begin)
            if match is None:  # a mark that is alphanumeric to str but not a word character
                start = low.find(head, start + 1)
                continue
            for span in _word_spans(match.group(), begin):
                if span[2] in tokens:
                    found[span[:2]] = span
            start = low.find(head, max(match.end(), start + 1))
    return [found[place] for place in sorted(found)]


@lru_cache(maxsize=256)
def _heads(tokens: frozenset[str]) -> tuple[str, ...]:
    """How the words that may stem to one of ``tokens`` start: as the token does (suffix rules keep a
    word's first letters, but for "flies" -> "fly"), or as an irregular form of one ("went")."""
    heads = {token[:2] if token.endswith("y") else token[:3] for token in tokens}
    heads.update(word for word, base in IRREGULAR.items() if _strip(base) in tokens)
    return tuple(sorted(heads))


RELATED: dict[str, frozenset[str]] = {stem(general): frozenset(stem(word) for word in names.split())
                                      for general, names in _RELATED_WORDS.items()}
