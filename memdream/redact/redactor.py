"""Redaction rules: secrets and personal data become ``[REDACTED:<kind>]``.

Ingest scrubs every event with these rules before anything touches disk, and
``memdream lint`` runs the same rules over the memory files to catch what slipped
through, so both must agree: this module is the single place the rules live.

Speed matters (ingest budget: tens of thousands of events per second): the rule
regexes never scan a whole text. One pass finds the rules' anchors (literal bytes every
match contains), each rule's regex is then tried only where its anchor occurs, and
validators (Luhn, digit counts) only ever see those candidates.

Placeholders never match a rule, and :meth:`Redactor.redact` repeats until nothing is
found, so redacting twice gives the same text as redacting once.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ahocorasick_rs import BytesAhoCorasick

from memdream.errors import InvalidMemory

if TYPE_CHECKING:
    from memdream.memory.settings import Settings

__all__ = ["Finding", "Redactor", "default_redactor", "placeholder", "BUILTIN_KINDS"]

# Built-in rules are ASCII-only: `\s`, `\w` and case folding must not reach into Unicode
# (the Kelvin sign folds to "k"), or the anchors below would miss what the regexes match.
_A = re.ASCII
_I = re.ASCII | re.IGNORECASE

_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_-]+\]")
# Schema of memdream.yaml allows exactly these names; anything else could break the placeholder.
_KIND_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# Redaction repeats on its own output until nothing is found; the process provably ends
# (every pass turns non-placeholder text into placeholders) but a bound keeps ingest safe.
_MAX_PASSES = 32
_MIN_PHONE_DIGITS = 7


def placeholder(kind: str) -> str:
    """The text that replaces a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Finding:
    """One secret: its kind and its span ``[start, end)`` in the text given to :meth:`Redactor.find`."""

    kind: str
    start: int
    end: int


# ---------------------------------------------------------------------------------------------
# Rules
#
# A full regex scan costs several microseconds per rule, far over the ingest budget. So
# every built-in rule names *anchors*: byte strings that any match must contain, searched
# in a "shape" of the text (ASCII-lowercased, every digit turned into "9", one byte per
# character so offsets agree). The rule's regex is then only tried with ``match`` at the
# few offsets where an anchor occurs. A text with no anchor costs one translate and one
# regex search over the shape.

Validator = Callable[["re.Match[str]"], bool]
# Where the match starts, given the text and the offset at which an anchor was found.
Back = Callable[[str, int], int]

# Lowercase ASCII letters and map digits to "9": one table, one C-level pass.
_SHAPE_TABLE = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", b"abcdefghijklmnopqrstuvwxyz9999999999"
)


def shape_of(data: bytes) -> bytes:
    """The shape of UTF-8 or ASCII bytes (multi-byte characters are left as they are: no anchor
    holds such bytes, so the anchors found are the same)."""
    return data.translate(_SHAPE_TABLE)


def _shape(text: str) -> bytes:
    # "replace" turns each non-ASCII character into one "?", so byte offsets equal str offsets.
    return text.encode("ascii", "replace").translate(_SHAPE_TABLE)


def _at(text: str, offset: int) -> int:
    return offset


def _digit_run_start(text: str, offset: int) -> int:
    while offset > 0 and "0" <= text[offset - 1] <= "9":
        offset -= 1
    return offset


_EMAIL_LOCAL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")


def _email_local_start(text: str, offset: int) -> int:
    """Start of the local part before the "@" at ``offset`` (at most 65 characters back)."""
    start = offset
    while start > 0 and offset - start <= 64 and text[start - 1] in _EMAIL_LOCAL_CHARS:
        start -= 1
    return start


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: re.Pattern[str]
    # (anchor, back): try the regex at back(text, offset of anchor in the shape).
    # Empty: a user pattern, scanned in full.
    anchors: tuple[tuple[bytes, Back], ...] = ()
    # Named groups holding the secret; the first that took part in the match is the span.
    # Empty: the whole match is the secret.
    value_groups: tuple[str, ...] = ()
    validator: Validator | None = None

    def accept(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The secret's span in a match, or None when the validator rejects it."""
        if self.validator is not None and not self.validator(match):
            return None
        return self.span(match)

    def span(self, match: re.Match[str]) -> tuple[int, int]:
        for group in self.value_groups:
            if match.start(group) != -1:
                return match.span(group)
        return match.span()


def _anchors(*needles: bytes, back: Back = _at) -> tuple[tuple[bytes, Back], ...]:
    return tuple((needle, back) for needle in needles)


# Shape bytes from most to least frequent in typical agent logs. A needle is searched from
# its rarest byte, so the scanner's first-byte test rejects most offsets without more work.
_COMMON_BYTES = b' 9etao"insrhl.d,cu:m_/fpg-=wybvk()x@jqz+'


def _rarest_index(needle: bytes) -> int:
    """Offset of the needle's rarest byte, leaving at least two bytes to scan for."""
    candidates = range(max(1, len(needle) - 1))
    return max(candidates, key=lambda index: (_byte_rarity(needle[index]), -index))


def _byte_rarity(byte: int) -> int:
    rank = _COMMON_BYTES.find(bytes([byte]))
    return len(_COMMON_BYTES) if rank == -1 else rank


@dataclass(frozen=True)
class _Anchor:
    """One needle, where in it scanning starts, and the rules (indices) to try where it occurs."""

    needle: bytes
    skip: int
    back: Back
    rules: tuple[int, ...]


class _Scanner:
    """Finds every anchor occurrence in a shape with one regular-expression pass.

    All needles (from their rarest byte on) form one alternation, so the regex engine's
    first-byte filter skips almost every offset of an ordinary text in C.
    """

    def __init__(self, anchors: Sequence[_Anchor]) -> None:
        by_scan: dict[bytes, list[_Anchor]] = {}
        for anchor in anchors:
            by_scan.setdefault(anchor.needle[anchor.skip:], []).append(anchor)
        # At one offset the alternation reports a single branch: if one scan string were a
        # prefix of another, the shorter needle could hide behind the longer one. So a scan
        # string that starts with a shorter one is not searched: its anchors are checked
        # wherever the shorter one occurs (at the same offset, so their skips still hold).
        scans: list[bytes] = []
        for scan in sorted(by_scan):
            shorter = next((kept for kept in scans if scan.startswith(kept)), None)
            if shorter is None:
                scans.append(scan)
            else:
                by_scan[shorter].extend(by_scan.pop(scan))
        self._by_scan = {scan: tuple(group) for scan, group in by_scan.items()}
        # Plain literals, no capturing groups: groups would disable the first-byte filter.
        # The matched bytes tell which scan string (hence which anchors) occurred.
        self._regex = re.compile(b"|".join(re.escape(scan) for scan in scans)) if scans else None

    def offsets(self, text: str, shape: bytes, tries: dict[int, set[int]]) -> None:
        """Add (rule index -> match start) for every anchor occurrence to ``tries``."""
        if self._regex is None:
            return
        search = self._regex.search
        found = search(shape)
        while found is not None:
            hit, scan = found.start(), found.group()
            for anchor in self._by_scan[scan]:
                offset = hit - anchor.skip
                if offset >= 0 and shape.startswith(anchor.needle, offset):
                    start = anchor.back(text, offset)
                    for rule in anchor.rules:
                        tries.setdefault(rule, set()).add(start)
            # One past the hit, not past the match: occurrences of different needles overlap.
            found = search(shape, _next_offset(shape, hit, scan))


_DIGIT_RUN = re.compile(rb"9*")


def _next_offset(shape: bytes, hit: int, scan: bytes) -> int:
    """Where to resume scanning after ``scan`` occurred at ``hit``.

    A scan string of digits only ("9" * 13) would hit again at every offset of a long digit
    run. Those repeats are useless: every digit rule refuses to start right after a digit.
    So resume where the rest of the run is shorter than the scan string; later offsets, and
    scan strings that reach past the run, are still searched.
    """
    if scan.count(b"9") != len(scan):
        return hit + 1
    run = _DIGIT_RUN.match(shape, hit)
    run_end = run.end() if run is not None else hit + len(scan)
    return max(hit + 1, run_end - len(scan) + 1)


class _WordScanner:
    """Finds anchors that are whole words (they start with a space: " st ") with an Aho-Corasick
    automaton. Cut at their rarest byte they would be scan strings such as "t " that end half
    the words of a text; whole, they would put a space among the alternation's first bytes."""

    def __init__(self, anchors: Sequence[_Anchor]) -> None:
        self._anchors = tuple(anchors)
        self._automaton = BytesAhoCorasick([anchor.needle for anchor in anchors]) if anchors else None

    def offsets(self, text: str, shape: bytes, tries: dict[int, set[int]]) -> None:
        if self._automaton is None:
            return
        for index, start, _ in self._automaton.find_matches_as_indexes(shape, overlapping=True):
            anchor = self._anchors[index]
            at = anchor.back(text, start)
            for rule in anchor.rules:
                tries.setdefault(rule, set()).add(at)


class _AnchorTables:
    """The scanners: one always, one for digit anchors only when a text has enough digits."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        grouped: dict[tuple[bytes, Back], list[int]] = {}
        for index, rule in enumerate(rules):
            for needle, back in rule.anchors:
                grouped.setdefault((needle, back), []).append(index)
        anchors = [
            _Anchor(needle, _rarest_index(needle), back, tuple(indices))
            for (needle, back), indices in grouped.items()
        ]
        self.needles: tuple[bytes, ...] = tuple(sorted({anchor.needle for anchor in anchors}))
        # Most texts hold no anchor at all. An Aho-Corasick automaton answers that in one pass at
        # a few ns a byte, where the regex alternation below costs ~20 ns a byte; the scanners
        # then only run on texts that hold some anchor.
        self._automaton = BytesAhoCorasick(list(self.needles)) if self.needles else None
        spaced = [anchor for anchor in anchors if anchor.needle.startswith(b" ")]
        rest = [anchor for anchor in anchors if not anchor.needle.startswith(b" ")]
        self._spaced = _WordScanner(spaced)
        self._words = _Scanner([anchor for anchor in rest if b"9" not in anchor.needle])
        self._digits = _Scanner([anchor for anchor in rest if b"9" in anchor.needle])

    def any(self, shape: bytes) -> bool:
        """Whether any anchor occurs in ``shape`` (else no rule can match)."""
        return self._automaton is not None and bool(self._automaton.find_matches_as_indexes(shape))

    def offsets(self, text: str, shape: bytes) -> dict[int, set[int]]:
        """Rule index -> offsets at which to try that rule's regex."""
        tries: dict[int, set[int]] = {}
        self._words.offsets(text, shape, tries)
        self._spaced.offsets(text, shape, tries)
        # Digits are frequent in logs (timestamps, ids): phone and card anchors are only worth
        # scanning for when the text holds enough digits to contain a phone number at all.
        if shape.count(b"9") >= _MIN_PHONE_DIGITS:
            self._digits.offsets(text, shape, tries)
        return tries


def _luhn_ok(match: re.Match[str]) -> bool:
    digits = [int(char) for char in match.group() if "0" <= char <= "9"]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def _phone_ok(match: re.Match[str]) -> bool:
    digits = sum(1 for char in match.group() if "0" <= char <= "9")
    return _MIN_PHONE_DIGITS <= digits <= 15


# A rule that knows a secret by its name (`password=`, `api_key:`, `GOOGLE_MAPS_KEY=`) sees code and
# documentation far more often than secrets: `token = get_token(project.id)`, `apiKey: env.API_KEY`,
# `export OPENAI_API_KEY="your-api-key-here"`. What follows the name is a secret only when it is a
# literal value: not a reference to one, a placeholder, a path or code.

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
    return _PLACEHOLDER_RE.fullmatch(value) is not None


def _is_stand_in(value: str) -> bool:
    """A reference to a secret, a placeholder for one, a masked one, or a file that holds one."""
    if _is_placeholder(value) or _REFERENCE.match(value) or _MASK.match(value):
        return True
    if _PATH.match(value):
        return not _any_made(_PATH_PARTS.split(value))
    words = [word.lower() for word in _WORD.findall(value)]
    if words and all(word in _PLACEHOLDER_WORDS or _MASK.match(word) for word in words):
        return True
    return _SNAKE_NAME.match(value) is not None and any(word in _SECRET_WORDS for word in words)


def _is_secret_value(value: str, generated: bool = False) -> bool:
    """Whether the literal ``value`` under a secret's name is a secret: not empty, not a word such as
    ``null``, not a stand-in for one (:func:`_is_stand_in`); ``generated``: the name is a token's or a
    key's, and such values are machine-made (:func:`_looks_generated`)."""
    stripped = value.strip()
    if len(stripped) < 2 or stripped.lower() in _NOT_A_SECRET or _is_stand_in(stripped):
        return False
    return not generated or _looks_generated(stripped)


def _value_of(match: re.Match[str]) -> tuple[str, bool]:
    """The value a rule with groups ``v1``..``v4`` matched, and whether it was bare (unquoted)."""
    start, end = _ASSIGNMENT.span(match)
    return match.string[start:end], match.start("v4") != -1


def _secret_value_ok(match: re.Match[str]) -> bool:
    return _is_secret_value(_value_of(match)[0])


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


def _is_code(value: str, text: str, end: int) -> bool:
    """Whether the bare ``value`` that ends at ``end`` of ``text`` is code, not a literal."""
    if end < len(text) and text[end] in "([<":  # a call, an index, a generic type
        return True
    if _ATTRIBUTE.match(value):
        return not _any_made(_NAME_PARTS.split(value))
    if value.lower() in _CODE_WORDS or _CAMEL_CASE.match(value):
        return True
    return _IDENTIFIER.match(value) is not None and _OPERATOR_AFTER.match(text, end) is not None


# Passwords and secrets are chosen by people; tokens and keys are made by machines (_looks_generated).
_HUMAN_SECRET = re.compile(r"passw|pwd|secret", _I)


def _assignment_ok(match: re.Match[str]) -> bool:
    """`password=hunter2`, `"api_key": "..."`: the value is a literal, and a token's or a key's looks made."""
    value, bare = _value_of(match)
    if bare and _is_code(value, match.string, match.end()):
        return False
    return _is_secret_value(value, generated=_HUMAN_SECRET.search(match.group("k")) is None)


def _env_assignment_ok(match: re.Match[str]) -> bool:
    """`GOOGLE_MAPS_KEY=...`: the name says it is a secret, so any literal value is one."""
    return _secret_env_name(match.group("k")) and _secret_value_ok(match)


def _secret_env_name(name: str) -> bool:
    """False for the few names of that form that say otherwise (`PUBLIC_KEY`, `PRIMARY_KEY`, `MAX_TOKEN`)."""
    parts = name.split("_")
    return len(parts) < 2 or parts[-2] not in _NOT_SECRET_QUALIFIERS


def _value_ok(group: str, generated: bool = False) -> Validator:
    """A validator: the value in ``group`` is a secret by :func:`_is_secret_value`."""
    def ok(match: re.Match[str]) -> bool:
        return _is_secret_value(match.group(group), generated)
    return ok


# `git@github.com:org/repo` is an SSH remote, not a person; `icon@2x.png` is a file name; a no-reply
# address (`Co-Authored-By: Claude <noreply@anthropic.com>`) reaches no one.
_NOT_AN_EMAIL_LOCAL = frozenset({"git", "noreply", "no-reply", "donotreply", "do-not-reply"})
_FILE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp"})
# Text just before an "@" that makes it the userinfo of a URL (`https://token@host`,
# `postgres://bob:pw@db`): the URL credential rule owns that span, not the e-mail rule.
_URL_USERINFO_BEFORE = re.compile(r"://[^\s/@]*:?\Z", _A)


def _email_ok(match: re.Match[str]) -> bool:
    local, _, domain = match.group().rpartition("@")
    if local.lower() in _NOT_AN_EMAIL_LOCAL or domain.rsplit(".", 1)[-1].lower() in _FILE_SUFFIXES:
        return False
    # No address starts or ends its local part with a dot (`Promise.@resolve.bind` is JavaScript) or has
    # no letter nor digit in it (`+@app.post` is a diff line); one right after a "/" is a path or a package.
    if local.startswith(".") or local.endswith(".") or not any(char.isalnum() for char in local):
        return False
    start = match.start()
    if start > 0 and match.string[start - 1] == "/":
        return False
    return _URL_USERINFO_BEFORE.search(match.string, max(0, start - 256), start) is None


def _standalone_bearer_ok(match: re.Match[str]) -> bool:
    # Without an Authorization header in front, "bearer <word>" is often prose: only
    # redact values that look generated (long, with a digit).
    token = match.group("v")
    return len(token) >= 16 and any("0" <= char <= "9" for char in token) and not _is_stand_in(token)


def _glued_ok(match: re.Match[str]) -> bool:
    """A token glued to a name by "-" or "_" (`c-sk-proj-...` as a call id, `curl-xoxb-...` as a tool
    name) is still a token; but kebab- and snake-case words hold `sk-`, `hf_` or `npm_` too, so a glued
    match must look made: a digit in it."""
    start = match.start()
    if start == 0 or match.string[start - 1] not in "-_":
        return True
    return any("0" <= char <= "9" for char in match.group())


# A number labelled as an id (`--trace-process-track-uuid=3190709044408466132`) is an id, whatever Luhn says.
_ID_LABEL_BEFORE = re.compile(r"(?:id|uuid|guid)[\"']?[ \t]*[=:][ \t]*[\"']?\Z", _I)


def _card_ok(match: re.Match[str]) -> bool:
    start = match.start()
    return _luhn_ok(match) and _ID_LABEL_BEFORE.search(match.string, max(0, start - 16), start) is None


# Characters of an HTTP b64token (RFC 6750), the form bearer tokens take.
_B64TOKEN = r"[A-Za-z0-9._~+/-]+=*"
# `Authorization: Bearer x`, `"Authorization": "Bearer x"`, `-H 'authorization: bearer x'`.
_AUTH_HEADER = r"authorization\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?[ \t]*"
# Quoted values: plain, single, and escaped quotes (JSON embedded in a JSON string).
# Capped at 1024 characters: many keys each opening a quote that never closes would
# otherwise each scan to the end of the text (quadratic). Unquoted values need no cap: a
# match is not restarted inside an accepted one (see Redactor._candidates).
_QUOTED_VALUE = (
    r"\"(?P<v1>(?:[^\"\\\n]|\\.){0,1024})\""
    r"|'(?P<v2>(?:[^'\\\n]|\\.){0,1024})'"
    r"|\\\"(?P<v3>(?:[^\"\\\n]|\\[^\"\n]){0,1024})\\\""
)
# Unquoted values stop where a shell, URL query or argument list would end them; a
# leading "=" is a comparison (`token == x`), not an assignment.
_BARE_VALUE = r"(?P<v4>[^\s\"'`,;&<>(){}\[\]=][^\s\"'`,;&<>(){}\[\]]*)"
# `secret` may be followed by `_key` / `_access_key` (AWS_SECRET_ACCESS_KEY); `key` alone is a
# secret only as `api_key` or `private_key`.
_SECRET_KEY = (
    r"(?:passw(?:or)?d|pwd|api[_-]?key|private[_-]?key|secret(?:[_-]?(?:access[_-]?)?key(?:[_-]?base)?)?|token)"
)
# The same keys, written to start at their anchor ("key" of "api_key" is the anchor).
_ANCHORED_SECRET_KEY = (
    r"(?:passw(?:or)?d|pwd|(?:(?<=api)|(?<=api[_-])|(?<=private)|(?<=private[_-]))key"
    r"|secret(?:[_-]?(?:access[_-]?)?key(?:[_-]?base)?)?|token)"
)

_PRIVATE_KEY = _Rule(
    "private-key",
    # A truncated block (no END line) is still a secret.
    re.compile(
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        # The body never crosses another BEGIN/END line, so many headers without an END
        # stay linear; 16 KB is far above a 4096-bit RSA key (~3.3 KB).
        r"(?:(?:(?!-----(?:BEGIN|END)).){0,16384}-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        # Truncated (no END line): the whole base64 lines that follow, newline separated
        # (real or JSON-escaped), so prose after the block is left alone.
        r"|(?:(?:\\n|\r?\n)[A-Za-z0-9+/=]+(?=\\n|[\r\n\"']|\Z))*)",
        _A | re.DOTALL,
    ),
    _anchors(b"-----begin"),
)
_AWS_KEY = _Rule(
    "aws-key",
    re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", _A),
    _anchors(b"akia", b"asia"),
)
_GITHUB_TOKEN = _Rule(
    "github-token",
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", _A),
    _anchors(b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    (),
    _glued_ok,
)
_SLACK_TOKEN = _Rule(
    "slack-token",
    re.compile(r"(?<![A-Za-z0-9])xox[bpars]-[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", _A),
    _anchors(b"xox"),
    (),
    _glued_ok,
)
_API_KEY = _Rule(
    "api-key",
    # `sk-`, `sk-proj-`, `sk-ant-...`: the body class includes `-`, so one pattern covers all.
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}", _A),
    _anchors(b"sk-"),
    (),
    _glued_ok,
)
_JWT = _Rule(
    "jwt",
    # Header and payload are base64url JSON; the signature is empty for unsigned tokens.
    re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", _A),
    _anchors(b"eyj"),
    (),
    _glued_ok,
)
_AUTH_BEARER = _Rule(
    "bearer-token",
    re.compile(_AUTH_HEADER + r"bearer[ \t]+(?P<v>" + _B64TOKEN + ")", _I),
    _anchors(b"authorization"),
    ("v",),
    _value_ok("v"),
)
_STANDALONE_BEARER = _Rule(
    "bearer-token",
    re.compile(r"(?<![A-Za-z0-9_-])bearer[ \t]+(?P<v>" + _B64TOKEN + ")", _I),
    _anchors(b"bearer"),
    ("v",),
    _standalone_bearer_ok,
)
_AUTH_BASIC = _Rule(
    "secret",
    re.compile(_AUTH_HEADER + r"basic[ \t]+(?P<v>" + _B64TOKEN + ")", _I),
    _anchors(b"authorization"),
    ("v",),
    _value_ok("v"),
)
# `password: str = "x"`, `token: Optional[str] = None`: a type annotation between a name and its value.
_ANNOTATION = (
    r"(?::[ \t]*[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\n=]{0,80}\]|<[^>\n=]{0,80}>)?"
    r"(?:[ \t]*\|[ \t]*[A-Za-z_][A-Za-z0-9_.]*(?:\[[^\]\n=]{0,80}\])?){0,4}[ \t]*(?==))?"
)
_ASSIGNMENT = _Rule(
    "secret",
    re.compile(
        r"(?P<k>" + _ANCHORED_SECRET_KEY + r")\\?[\"']?[ \t]*" + _ANNOTATION + r"[:=][ \t]*"
        # `token: Bearer x`: the scheme word is not the secret, what follows is.
        r"(?:(?:bearer|basic|token)[ \t]+)?"
        r"(?:" + _QUOTED_VALUE + "|" + _BARE_VALUE + ")",
        _I,
    ),
    _anchors(b"passw", b"pwd", b"key", b"secret", b"token"),
    ("v1", "v2", "v3", "v4"),
    _assignment_ok,
)
# Environment variables named for a secret: `GOOGLE_MAPS_KEY`, `GH_TOKEN`, `DB_PASSWORD`, `AWS_SECRET`.
_ENV_SECRET_NAME = r"(?:[A-Z][A-Z0-9]*_)+(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)|TOKEN|SECRET|PASSWORD|PASSWD"
# `..._KEY` names that hold no secret: a public key, a database's or a cache's key, a limit.
_NOT_SECRET_QUALIFIERS = frozenset({"PUBLIC", "PUBLISHABLE", "PRIMARY", "FOREIGN", "SORT", "PARTITION", "CACHE",
                                    "MAX", "MIN", "NUM"})
_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _env_name_start(text: str, offset: int) -> int:
    """Start of the upper-case name (`GOOGLE_MAPS_KEY`) around the anchor at ``offset`` (at most 128
    characters back), past digits and underscores that cannot start one."""
    start = offset
    while start > 0 and offset - start < 128 and text[start - 1] in _ENV_NAME_CHARS:
        start -= 1
    while start < offset and not "A" <= text[start] <= "Z":
        start += 1
    return start


_ENV_ASSIGNMENT = _Rule(
    "secret",
    # `NAME=value` as a shell, a .env file or `docker -e` writes it: upper case, no space around "=",
    # not a part of a longer name, an attribute (`env.KEY=`) or an expansion (`${KEY=x}`).
    re.compile(
        r"(?<![A-Za-z0-9_.$-])(?P<k>" + _ENV_SECRET_NAME + r")=(?:" + _QUOTED_VALUE + "|" + _BARE_VALUE + ")",
        _A,
    ),
    _anchors(b"key", b"token", b"secret", b"passw", back=_env_name_start),
    ("v1", "v2", "v3", "v4"),
    _env_assignment_ok,
)
_URL_CREDENTIALS = _Rule(
    "secret",
    # scheme://user:password@host: only the password.
    re.compile(r"://[^\s/:@]*:(?P<v>[^\s/@]+)@", _A),
    _anchors(b"://"),
    ("v",),
    _value_ok("v"),
)
_GOOGLE_API_KEY = _Rule(
    "google-api-key",
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9])", _A),
    _anchors(b"aiza"),
    (),
    _glued_ok,
)
_STRIPE_KEY = _Rule(
    "stripe-key",
    # Secret and restricted keys, live and test; publishable `pk_` keys are public.
    re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[0-9A-Za-z]{10,}", _A),
    _anchors(b"sk_live_", b"rk_live_", b"sk_test_", b"rk_test_"),
    (),
    _glued_ok,
)
_HUGGINGFACE_TOKEN = _Rule(
    "huggingface-token",
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])", _A),
    _anchors(b"hf_"),
    (),
    _glued_ok,
)
_GITLAB_TOKEN = _Rule(
    "gitlab-token",
    re.compile(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}", _A),
    _anchors(b"glpat-"),
    (),
    _glued_ok,
)
_NPM_TOKEN = _Rule(
    "npm-token",
    re.compile(r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])", _A),
    _anchors(b"npm_"),
    (),
    _glued_ok,
)
_AZURE_KEY = _Rule(
    "azure-key",
    # Storage connection strings: `...;AccountName=x;AccountKey=<base64>;...`.
    re.compile(r"AccountKey[ \t]*=[ \t]*(?P<v>[A-Za-z0-9+/]{16,}={0,2})", _I),
    _anchors(b"accountkey"),
    ("v",),
)
_PASSWORD_OPTION = _Rule(
    "secret",
    # `--password X` on a command line (`--password=X` is an assignment). A value that starts
    # with `-` is the next option, not a password.
    re.compile(
        r"(?<![A-Za-z0-9_-])--passw(?:or)?d[ \t]+(?!-)(?:" + _QUOTED_VALUE + "|" + _BARE_VALUE + ")",
        _I,
    ),
    # Anchored on "passw" (which the assignment rule scans for already), two characters back:
    # a scan string that starts with "-" would stop the scanner at every option of a command line.
    _anchors(b"passw", back=lambda text, offset: max(0, offset - 2)),
    ("v1", "v2", "v3", "v4"),
    _secret_value_ok,
)
_MYSQL_PASSWORD = _Rule(
    "secret",
    # `mysql -u root -phunter2 db`: the password glued to `-p`. A bare `-p` prompts, `-P 3306` is
    # a port: neither is a secret. Only on a mysql command line, not after a pipe or `;`.
    re.compile(
        r"(?<![A-Za-z0-9_-])(?i:mysql(?:dump|admin|import|check)?)(?![A-Za-z0-9_-])"
        r"[^\n|;&]{0,512}?[ \t]-p(?:\"(?P<q1>[^\"\n]+)\"|'(?P<q2>[^'\n]+)'|(?P<v>[^\s\"'`;&|<>()]+))",
        _A,
    ),
    _anchors(b"mysql"),
    ("q1", "q2", "v"),
)
_PW_ASSIGNMENT = _Rule(
    "secret",
    re.compile(r"(?<![A-Za-z0-9_])pw[ \t]*=[ \t]*(?:" + _QUOTED_VALUE + "|" + _BARE_VALUE + ")", _I),
    _anchors(b"pw="),
    ("v1", "v2", "v3", "v4"),
    _secret_value_ok,
)
_URL_QUERY_KEY = _Rule(
    "secret",
    # `?key=...` / `&key=...` in a URL (`token=` is an assignment already).
    re.compile(r"[?&;]key=(?P<v>[^\s&#\"'<>;]+)", _I),
    _anchors(b"key=", back=lambda text, offset: max(0, offset - 1)),
    ("v",),
    # An API key is made by a machine; `?key=title` sorts a list.
    _value_ok("v", generated=True),
)


def _ssn_ok(match: re.Match[str]) -> bool:
    area, group, serial = match.group().split("-")
    # Never issued: area 000, 666, 900-999; group 00; serial 0000.
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


_ID_NUMBER = _Rule(
    "id-number",
    # US social security numbers, written 123-45-6789 only (a bare 9-digit run is too often
    # something else).
    re.compile(r"(?<![A-Za-z0-9_./#:+-])[0-9]{3}-[0-9]{2}-[0-9]{4}(?![A-Za-z0-9_]|[.:/-][A-Za-z0-9])", _A),
    _anchors(b"999-99-9999", back=_digit_run_start),
    (),
    _ssn_ok,
)

_STREET_SUFFIX = r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Way|Court|Ct)"
# The house number and the capitalized name words just before a street suffix.
_ADDRESS_HEAD = re.compile(r"(?<![A-Za-z0-9_#.-])[0-9]{1,6}[A-Za-z]?(?:[ \t]+[A-Z][A-Za-z'-]*){1,3}[ \t]*\Z", _A)


def _address_start(text: str, offset: int) -> int:
    """Start of ``42 Elm`` before the street suffix whose leading space is at ``offset``."""
    head = _ADDRESS_HEAD.search(text, max(0, offset - 80), offset)
    return head.start() if head is not None else offset


_POSTAL_ADDRESS = _Rule(
    "address",
    # Conservative: a house number, one to three capitalized words and a capitalized street
    # suffix (`42 Elm Street`, `1600 Pennsylvania Ave`), then optionally `, City, ST 12345`.
    re.compile(
        r"[0-9]{1,6}[A-Za-z]?(?:[ \t]+[A-Z][A-Za-z'-]*){1,3}[ \t]+" + _STREET_SUFFIX + r"\.?(?![A-Za-z0-9_])"
        r"(?:,[ \t]*[A-Z][A-Za-z]+(?:[ \t]+[A-Z][A-Za-z]+){0,2}(?:,?[ \t]*[A-Z]{2})?"
        r"(?:[ \t]+[0-9]{5}(?:-[0-9]{4})?)?(?![A-Za-z0-9_]))?",
        _A,
    ),
    _anchors(
        # Prose is full of " st", " dr", " ave": an abbreviation is only an anchor with what ends it
        # (so one at the very end of a text is not found: the rule is conservative by design).
        *(b" " + suffix + end for suffix in (b"st", b"ave", b"rd", b"blvd", b"ln", b"dr", b"way", b"ct")
          for end in (b" ", b".", b",", b";", b")", b"\n", b"\\", b'"')),
        b" street", b" avenue", b" road", b" boulevard", b" lane", b" drive", b" court",
        back=_address_start,
    ),
)
_EMAIL = _Rule(
    "email",
    re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@"
        r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*"
        r"\.[A-Za-z]{2,24}(?![A-Za-z0-9-])",
        _A,
    ),
    _anchors(b"@", back=_email_local_start),
    (),
    _email_ok,
)
_CARD_NUMBER = _Rule(
    "card-number",
    # Issuer prefixes start with 2-6; that excludes epoch timestamps and most snowflake ids.
    # Grouped forms: 4-4-4-4(-3) and 4-6-4/5 (Diners, Amex), with one consistent separator.
    re.compile(
        r"(?<![A-Za-z0-9_.])[2-6][0-9]{12,18}(?![A-Za-z0-9_]|\.[0-9])"
        r"|(?<![A-Za-z0-9_.-])[2-6][0-9]{3}(?P<s>[ -])"
        r"(?:[0-9]{4}(?P=s)[0-9]{4}(?P=s)[0-9]{4}(?:(?P=s)[0-9]{3})?|[0-9]{6}(?P=s)[0-9]{4,5})"
        r"(?![A-Za-z0-9_])",
        _A,
    ),
    _anchors(b"9" * 13, b"9999 9999", b"9999-9999"),
    (),
    _card_ok,
)
_PHONE = _Rule(
    "phone",
    re.compile(
        # International: +<country> then separated groups, or +<7-15 digits>. Country codes
        # never start with 0, which keeps `+0200` timezone offsets out.
        r"(?<![A-Za-z0-9_+])\+[1-9][0-9]{0,2}"
        r"(?:(?:(?:[ .-]|[ .-]?\([0-9]{1,4}\)[ .-]?)[0-9]{1,6}){1,7}|[0-9]{4,12})"
        r"(?![A-Za-z0-9_]|[.-][0-9])"
        # National with an area code in parentheses: (415) 555-0132.
        r"|(?<![A-Za-z0-9_(+])\([0-9]{2,4}\)[ .-]?[0-9]{3,4}[ .-]?[0-9]{3,4}(?![A-Za-z0-9_]|[.-][0-9])"
        # 415-555-0132, 415.555.0132, 415 555 0132 (one separator throughout, unlike dates or
        # IPs whose groups are 4-2-2 or at most three digits), and trunk-0 forms: 020 7946 0958.
        r"|(?<![A-Za-z0-9_./+-])"
        r"(?:[0-9]{3}(?P<s>[ .-])[0-9]{3}(?P=s)[0-9]{4}|0[0-9]{2,4} [0-9]{3,4} ?[0-9]{3,4})"
        r"(?![A-Za-z0-9_]|[.:/-][A-Za-z0-9])",
        _A,
    ),
    _anchors(b"+9", b"(99") + _anchors(b"999-999-9999", b"999.999.9999", b"999 999", back=_digit_run_start),
    (),
    _phone_ok,
)

# Order breaks ties between equal spans: a recognisable token format names the secret
# better than the context it appears in (`GITHUB_TOKEN=ghp_...` is a github-token).
_BUILTIN_RULES: tuple[_Rule, ...] = (
    _PRIVATE_KEY,
    _AWS_KEY,
    _GITHUB_TOKEN,
    _SLACK_TOKEN,
    _API_KEY,
    _GOOGLE_API_KEY,
    _STRIPE_KEY,
    _HUGGINGFACE_TOKEN,
    _GITLAB_TOKEN,
    _NPM_TOKEN,
    _AZURE_KEY,
    _JWT,
    _AUTH_BEARER,
    _STANDALONE_BEARER,
    _AUTH_BASIC,
    _ASSIGNMENT,
    _ENV_ASSIGNMENT,
    _PASSWORD_OPTION,
    _MYSQL_PASSWORD,
    _PW_ASSIGNMENT,
    _URL_QUERY_KEY,
    _URL_CREDENTIALS,
    _EMAIL,
    _CARD_NUMBER,
    _ID_NUMBER,
    _PHONE,
    _POSTAL_ADDRESS,
)

BUILTIN_KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in _BUILTIN_RULES))
"""Every kind the built-in rules produce, in priority order."""

# Dict keys whose string value is a secret as a whole (`{"password": "two words"}`), the
# structured counterpart of the assignment rule. Prefixes such as `db_` or `GITHUB_` are allowed.
_SECRET_KEY_NAME = re.compile(r"(?:[A-Za-z0-9]+[_-])*" + _SECRET_KEY, _I)
_ENV_SECRET_KEY_NAME = re.compile(_ENV_SECRET_NAME, _A)
_AUTH_KEY_NAME = re.compile(r"(?:proxy-)?authorization", _I)
_AUTH_VALUE = re.compile(r"(?P<scheme>[ \t]*(?P<name>[A-Za-z]+)[ \t]+)(?P<v>\S.*)", _A | re.DOTALL)


def _names_secret(key: str) -> bool:
    """Whether a mapping key (or a fact's attribute) names a secret: `password`, `db_token`, `GOOGLE_MAPS_KEY`."""
    if _SECRET_KEY_NAME.fullmatch(key):
        return True
    return _ENV_SECRET_KEY_NAME.fullmatch(key) is not None and _secret_env_name(key)


# ---------------------------------------------------------------------------------------------
# Redactor


def _compile_extra(index: int, spec: Mapping[str, str]) -> _Rule:
    name = spec.get("name", "")
    where = f"redaction.extra_patterns[{index}] ({name})"
    if not isinstance(name, str) or _KIND_NAME_RE.fullmatch(name) is None:
        raise InvalidMemory(f"{where}: invalid name: must match ^[a-z][a-z0-9_-]{{0,31}}$")
    pattern = spec.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise InvalidMemory(f"{where}: pattern must be a non-empty string")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise InvalidMemory(f"{where}: invalid regular expression: {error}") from None
    from memdream.regex_safety import PROBLEM, catastrophic

    if catastrophic(pattern):  # ingest runs it on every event: it must not backtrack forever
        raise InvalidMemory(f"{where}: {PROBLEM}")
    return _Rule(name, regex)


class Redactor:
    """Finds and replaces secrets and personal data with ``[REDACTED:<kind>]`` placeholders.

    ``extra_patterns`` are the user's own rules (``{"name": ..., "pattern": ...}`` from
    ``redaction.extra_patterns``); ``allow`` lists literal strings that are never redacted.
    A disabled redactor (``enabled=False``) finds nothing.
    """

    def __init__(
        self,
        extra_patterns: Sequence[Mapping[str, str]] = (),
        allow: Sequence[str] = (),
        *,
        enabled: bool = True,
    ) -> None:
        extras = tuple(_compile_extra(index, spec) for index, spec in enumerate(extra_patterns))
        # User patterns come first: on an exact tie their name is the more specific one.
        self._extras: tuple[_Rule, ...] = extras
        self._rules: tuple[_Rule, ...] = extras + _BUILTIN_RULES
        self._tables = _AnchorTables(self._rules)
        self._allow: tuple[str, ...] = tuple(literal for literal in allow if literal)
        self.enabled = enabled

    @classmethod
    def from_settings(cls, settings: Settings) -> Redactor:
        """The redactor configured by the ``redaction`` section of memdream.yaml."""
        enabled = _setting(settings, "redaction.enabled", True)
        extras = _setting(settings, "redaction.extra_patterns", []) or []
        allow = _setting(settings, "redaction.allow", []) or []
        return cls(extras, allow, enabled=enabled is not False)

    def find(self, text: str) -> list[Finding]:
        """Secrets in ``text``: sorted, non-overlapping, allow-listed strings excluded.

        Where candidates overlap the longest wins, then the earliest, then the rule listed
        first. Spans lie in ``text`` itself, so ``text[f.start:f.end]`` is the secret.
        """
        if not self.enabled or not text:
            return []
        candidates = self._candidates(text)
        if not candidates:
            return []
        if "[REDACTED:" in text:
            candidates = _outside_placeholders(text, candidates)
        if self._allow:
            candidates = self._not_allowed(text, candidates)
        return _resolve(candidates)

    def json_needles(self) -> tuple[bytes, ...] | None:
        """A quick test for a whole JSON line: when none of these occurs in :func:`shape_of` the
        line, and the line holds no ``\\u`` or ``\\/`` escape, :meth:`redact_obj` of the value it
        parses to finds nothing. None: no such test (user patterns have no anchors).

        Why it holds: every built-in match contains one of its rule's anchors, and so does every
        secret-looking key name; JSON text holds each string's characters as they are, except
        for escapes, and an anchor holds no character that an escape other than those two can
        stand for (quotes, backslashes, control characters). So an anchor in a parsed string is
        an anchor in the line.
        """
        if not self.enabled:
            return ()
        return None if self._extras else self._tables.needles

    def redact(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` with every finding replaced by its placeholder, and the count per kind.

        Idempotent: replacing can expose a match that an overlapping longer one hid, so the
        pass repeats until :meth:`find` comes back empty on the result.
        """
        counts: Counter[str] = Counter()
        return self._redact_into(text, counts), counts

    def redact_obj(self, obj: Any, *, keys: bool = False) -> tuple[Any, Counter[str]]:
        """A redacted copy of a JSON-like value (dicts, lists, strings); ``obj`` is not changed
        (and is returned as it is when nothing in it needs redacting).

        Dict keys are kept, unless ``keys``: then a key is redacted like any string (two keys
        that redact to the same text get ``-2``, ``-3``... so no value is lost). A string under
        a secret-looking key (``password``, ``api_key``, ``db_token``...) is redacted as a whole,
        because the key that marks it as a secret is not part of the string the text rules
        see; so is the ``value`` of a fact whose ``attribute`` is such a name.
        """
        counts: Counter[str] = Counter()
        if not self.enabled or self._clean(obj, keys):
            return obj, counts  # the common case: nothing to redact, so nothing to copy
        return self._redact_value(obj, counts, keys), counts

    # -- internals -----------------------------------------------------------------------

    def _candidates(self, text: str) -> list[tuple[int, int, int, str]]:
        """(start, end, priority, kind) of every rule match, overlapping or not."""
        found: list[tuple[int, int, int, str]] = []
        for priority, rule in enumerate(self._extras):
            for each in rule.regex.finditer(text):
                self._add(found, rule, priority, each)
        shape = _shape(text)
        if not self._tables.any(shape):
            return found
        tries = self._tables.offsets(text, shape)
        for index in sorted(tries):
            rule = self._rules[index]
            covered = 0
            for start in sorted(tries[index]):
                # Like finditer, do not restart inside an accepted match of the same rule:
                # `password=password=...` would otherwise rescan the same value per anchor.
                if start < covered:
                    continue
                match = rule.regex.match(text, start)
                if match is not None and self._add(found, rule, index, match):
                    covered = match.end()
        return found

    @staticmethod
    def _add(found: list[tuple[int, int, int, str]], rule: _Rule, priority: int, match: re.Match[str]) -> bool:
        span = rule.accept(match)
        if span is None or span[1] <= span[0]:
            return False
        found.append((span[0], span[1], priority, rule.kind))
        return True

    def _not_allowed(self, text: str, candidates: list[tuple[int, int, int, str]]) -> list[tuple[int, int, int, str]]:
        allowed = [span for literal in self._allow for span in _occurrences(text, literal)]
        if not allowed:
            return candidates
        return [c for c in candidates if not any(a_start <= c[0] and c[1] <= a_end for a_start, a_end in allowed)]

    def _clean(self, obj: Any, keys: bool = False) -> bool:
        """True when no rule can fire anywhere in ``obj``: one :meth:`find` over all its strings.

        The strings are joined with blank lines, which every rule treats as a boundary (no
        pattern crosses a newline where a field would end), so a secret in any string is a
        finding here too; a secret-looking dict key sends the object down the full path.
        """
        parts: list[str] = []
        if not self._collect(obj, parts, keys):
            return False
        return not self.find("\n\n".join(parts))

    def _collect(self, value: Any, parts: list[str], keys: bool) -> bool:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            if _secret_fact_value(value) is not None:
                return False
            for key, item in value.items():
                if isinstance(key, str) and isinstance(item, str) and (
                        _names_secret(key) or _AUTH_KEY_NAME.fullmatch(key)):
                    return False
                if keys and isinstance(key, str):
                    parts.append(key)
                if not self._collect(item, parts, keys):
                    return False
        elif isinstance(value, (list, tuple)):
            return all(self._collect(item, parts, keys) for item in value)
        return True

    def _redact_value(self, value: Any, counts: Counter[str], keys: bool = False) -> Any:
        if isinstance(value, str):
            return self._redact_into(value, counts)
        if isinstance(value, dict):
            return self._redact_dict(value, counts, keys)
        if isinstance(value, list):
            return [self._redact_value(item, counts, keys) for item in value]
        if isinstance(value, tuple):
            return tuple(self._redact_value(item, counts, keys) for item in value)
        return value

    def _redact_dict(self, value: dict[Any, Any], counts: Counter[str], keys: bool) -> dict[Any, Any]:
        redacted: dict[Any, Any] = {}
        for key, item in value.items():
            item = self._redact_entry(key, item, counts, keys)
            if keys and isinstance(key, str):
                key = _unused_key(self._redact_into(key, counts), redacted)
            redacted[key] = item
        fact_value = _secret_fact_value(redacted)
        if fact_value is not None and not self._is_allowed(fact_value):
            counts["secret"] += 1
            redacted["value"] = placeholder("secret")
        return redacted

    def _redact_into(self, text: str, counts: Counter[str]) -> str:
        """:meth:`redact` adding to ``counts``: one Counter for a whole object, not one per string."""
        findings = self.find(text)
        passes = 0
        while findings and passes < _MAX_PASSES:
            text = _apply(text, findings)
            for finding in findings:
                counts[finding.kind] += 1
            findings = self.find(text)
            passes += 1
        return text

    def _redact_entry(self, key: Any, value: Any, counts: Counter[str], keys: bool = False) -> Any:
        if not (self.enabled and isinstance(key, str) and isinstance(value, str)):
            return self._redact_value(value, counts, keys)
        if _names_secret(key) and _is_secret_value(value) and not self._is_allowed(value):
            counts["secret"] += 1
            return placeholder("secret")
        if _AUTH_KEY_NAME.fullmatch(key):
            return self._redact_authorization(value, counts)
        return self._redact_value(value, counts)

    def _redact_authorization(self, value: str, counts: Counter[str]) -> str:
        """``{"Authorization": "Bearer x"}``: keep the scheme, replace the credentials."""
        match = _AUTH_VALUE.fullmatch(value)
        credentials = match.group("v") if match else value
        if not _is_secret_value(credentials) or self._is_allowed(value):
            return self._redact_into(value, counts)
        kind = "bearer-token" if match and match.group("name").lower() == "bearer" else "secret"
        counts[kind] += 1
        return (match.group("scheme") if match else "") + placeholder(kind)

    def _is_allowed(self, value: str) -> bool:
        return any(literal in value for literal in self._allow)


def _secret_fact_value(value: dict[Any, Any]) -> str | None:
    """The ``value`` of a fact (``{"attribute": "password", "value": ...}``) that names a secret."""
    attribute, fact_value = value.get("attribute"), value.get("value")
    if not (isinstance(attribute, str) and isinstance(fact_value, str)):
        return None
    name = attribute.strip()
    return fact_value if _names_secret(name) and _is_secret_value(fact_value) else None


def _unused_key(key: str, taken: Mapping[Any, Any]) -> str:
    """``key``, or ``key-2``, ``key-3``... when a key redacted to the same text is taken already."""
    if key not in taken:
        return key
    number = 2
    while f"{key}-{number}" in taken:
        number += 1
    return f"{key}-{number}"


def _setting(settings: Settings, dotted: str, default: Any) -> Any:
    try:
        return settings.get(dotted)
    except (KeyError, TypeError):
        return default


def _occurrences(text: str, literal: str) -> list[tuple[int, int]]:
    spans = []
    start = text.find(literal)
    while start != -1:
        spans.append((start, start + len(literal)))
        start = text.find(literal, start + 1)
    return spans


def _outside_placeholders(
    text: str, candidates: list[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Drop candidates that are, lie inside, or cut through an existing placeholder.

    A candidate that strictly contains whole placeholders plus other text is kept: it is a
    secret around earlier redactions (e.g. a PEM block), and replacing it still shrinks the
    unredacted text, so repeated passes end.
    """
    holes = [match.span() for match in _PLACEHOLDER_RE.finditer(text)]
    hole_starts = [start for start, _ in holes]
    kept = []
    for candidate in candidates:
        start, end = candidate[0], candidate[1]
        # Placeholders are disjoint and sorted: those touching [start, end) are a contiguous run.
        first = bisect.bisect_right(hole_starts, start) - 1
        if first < 0 or holes[first][1] <= start:
            first += 1
        last = bisect.bisect_left(hole_starts, end)
        touching = holes[first:last]
        if not touching:
            kept.append(candidate)
        elif touching[0][0] >= start and touching[-1][1] <= end and touching != [(start, end)]:
            kept.append(candidate)
    return kept


def _resolve(candidates: list[tuple[int, int, int, str]]) -> list[Finding]:
    """Greedy non-overlapping choice: longest first, then earliest, then rule priority."""
    starts: list[int] = []  # chosen spans, kept sorted and disjoint
    chosen: list[tuple[int, int, int, str]] = []
    for candidate in sorted(candidates, key=lambda c: (c[0] - c[1], c[0], c[2])):
        start, end = candidate[0], candidate[1]
        at = bisect.bisect_right(starts, start)
        if at > 0 and chosen[at - 1][1] > start:
            continue  # overlaps the chosen span that starts at or before it
        if at < len(chosen) and chosen[at][0] < end:
            continue  # overlaps the chosen span that starts after it
        starts.insert(at, start)
        chosen.insert(at, candidate)
    return [Finding(kind, start, end) for start, end, _, kind in chosen]


def _apply(text: str, findings: list[Finding]) -> str:
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position:finding.start])
        parts.append(placeholder(finding.kind))
        position = finding.end
    parts.append(text[position:])
    return "".join(parts)


@cache
def default_redactor() -> Redactor:
    """The shared redactor with only the built-in rules (no extras, no allow-list)."""
    return Redactor()
