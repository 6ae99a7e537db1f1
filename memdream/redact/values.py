"""Whether the value after a secret's name is a secret.

A rule that knows a secret by its name (`password=`, `api_key:`, `GOOGLE_MAPS_KEY=`) sees code and
documentation far more often than secrets: `token = get_token(project.id)`, `apiKey: env.API_KEY`,
`export OPENAI_API_KEY="your-api-key-here"`. What follows the name is a secret only when it is a
literal value: not a reference to one, a placeholder, a path or code.
"""

from __future__ import annotations

import re

from memdream.redact.placeholders import PLACEHOLDER_RE

# ASCII-only, as the rules are (rules.py): `\w` and case folding must not reach into Unicode.
_A = re.ASCII

# Values after `password=` that are clearly not secrets (and would make lint noisy).
_NOT_A_SECRET = frozenset({"null", "none", "true", "false", "nil", "undefined"})
# Words placeholders are made of (`your-api-key-here`, `REDACTED_TOKEN`, `test-key`, `ghp_xxx`): a value
# of these words only says what belongs there. Token prefixes count too: `sk-ant-` alone is no key.
_PLACEHOLDER_WORDS = frozenset({
    "your", "my", "our", "the", "a", "an", "here", "goes", "insert", "enter", "put", "paste", "replace", "fill",
    "value", "example", "sample", "dummy", "fake", "mock", "demo", "test", "placeholder", "redacted", "hidden",
    "masked", "changeme", "change", "me", "todo", "some", "real", "actual", "signed", "foo", "bar", "baz",
    "secret", "secrets", "key", "keys", "api", "apikey", "token", "tokens", "access", "auth", "bearer",
    "password", "credential", "credentials", "private", "client", "jwt",
    "sk", "pk", "rk", "ant", "proj", "ghp", "gho", "ghu", "ghs", "ghr", "github", "pat", "xoxb", "xoxp", "xoxa",
    "xoxr", "xoxs", "glpat", "hf", "npm", "akia", "aiza", "live",
})
# Words of a name in any case style: `REDACTED_API_KEY`, `yourApiKey`, `your-api-key`.
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+", _A)
# `$TOKEN`, `${TOKEN}`, `$(pass show db)`, `${{ secrets.TOKEN }}`, `%TOKEN%`, `<token>`, `{token}`, `{}`.
_REFERENCE = re.compile(r"\$[A-Za-z_{(]|%[A-Za-z_][A-Za-z0-9_]*%\Z|<[^<>\n]*>\Z|\{[^\n]*\}\Z", _A)
# `xxx`, `...`, `…`, `***`, `xxxx-xxxx`: a value masked or left out.
_MASK = re.compile(r"(?:[xX]+|[.*#_\u2026\u2022-]+)(?:[-_ ]?(?:[xX]+|[.*#\u2026\u2022]+))*\Z")
# `/run/secrets/db`, `~/.ssh/id_ed25519`, `./token.txt`, `C:\keys\app.pem`: where a secret is kept.
_PATH = re.compile(r"(?:~|\.{1,2})?/[A-Za-z0-9._~/-]*\Z|[A-Za-z]:\\[A-Za-z0-9._\\ -]*\Z", _A)
_PATH_PARTS = re.compile(r"[/\\]")
# A variable named after a secret (`db_password`, `OPENAI_API_KEY`): snake case, no digit.
_SNAKE_NAME = re.compile(r"[A-Za-z]+(?:_[A-Za-z]+)+\Z", _A)
_SECRET_WORDS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "key", "apikey", "credential",
                           "credentials"})


def _looks_generated(value: str) -> bool:
    """Whether ``value`` looks machine-made, as tokens and API keys are: a digit in it (but not a small
    number, `MAX_TOKEN=4096`), or 16 characters or more mixing upper and lower case. A person's password
    need not; `ollama` or `proxy-handled` does not."""
    if any("0" <= char <= "9" for char in value):
        return len(value) > 5 or not value.isdigit()
    return len(value) >= 16 and value.lower() != value and value.upper() != value


def _any_made(parts: list[str]) -> bool:
    """Whether a part of a path or a dotted name is a token rather than a name (`/v1/keys/<key>`)."""
    return any(len(part) >= 12 and _looks_generated(part) for part in parts)


def _is_placeholder(value: str) -> bool:
    return PLACEHOLDER_RE.fullmatch(value) is not None


def is_stand_in(value: str) -> bool:
    """A reference to a secret, a placeholder for one, a masked one, or a file that holds one."""
    if _is_placeholder(value) or _REFERENCE.match(value) or _MASK.match(value):
        return True
    if _PATH.match(value):
        return not _any_made(_PATH_PARTS.split(value))
    words = [word.lower() for word in _WORD.findall(value)]
    if words and all(word in _PLACEHOLDER_WORDS or _MASK.match(word) for word in words):
        return True
    return _SNAKE_NAME.match(value) is not None and any(word in _SECRET_WORDS for word in words)


def is_secret_value(value: str, generated: bool = False) -> bool:
    """Whether the literal ``value`` under a secret's name is a secret: not empty, not a word such as
    ``null``, not a stand-in for one (:func:`is_stand_in`); ``generated``: the name is a token's or a
    key's, and such values are machine-made (:func:`_looks_generated`)."""
    stripped = value.strip()
    if len(stripped) < 2 or stripped.lower() in _NOT_A_SECRET or is_stand_in(stripped):
        return False
    return not generated or _looks_generated(stripped)


# Code after a secret's name: `token = get_token(...)`, `key = os.environ[...]`, `api_key: Option<String>`,
# `token: args.hub_token`, `env.KEY = apiKeyValue`, `token: str | None`, `const apiKey = await prompt(...)`.
_ATTRIBUTE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][A-Za-z0-9_$]*)+\Z", _A)
_CAMEL_CASE = re.compile(r"[a-z]+(?:[A-Z][a-z]*)+\Z", _A)
# An identifier without a digit: `hunter2 || exit` is still a password before a shell operator.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*\Z", _A)
_CODE_WORDS = frozenset({"str", "string", "bytes", "int", "bool", "boolean", "number", "any", "unknown", "object",
                         "await", "new", "typeof", "yield", "lambda", "function", "async", "this", "self"})
# An operator after an identifier: the value is an expression (`token = cached or fetch()`).
_OPERATOR_AFTER = re.compile(r"[ \t]+(?:\|\||&&|\?\?|[?|+]|or|and|if)[ \t]", _A)
_NAME_PARTS = re.compile(r"\.|::|->|\?\.")


def is_code(value: str, text: str, end: int) -> bool:
    """Whether the bare ``value`` that ends at ``end`` of ``text`` is code, not a literal."""
    if end < len(text) and text[end] in "([<":  # a call, an index, a generic type
        return True
    if _ATTRIBUTE.match(value):
        return not _any_made(_NAME_PARTS.split(value))
    if value.lower() in _CODE_WORDS or _CAMEL_CASE.match(value):
        return True
    return _IDENTIFIER.match(value) is not None and _OPERATOR_AFTER.match(text, end) is not None
