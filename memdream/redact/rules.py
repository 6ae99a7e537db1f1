"""The built-in rules: what a secret, a token, a key, an e-mail address, a card or phone number,
an id number and a postal address look like, the exceptions each rule makes (code, placeholders,
file names, ids...), and the user's own rules from ``redaction.extra_patterns``.

Every rule names its anchors (see :mod:`memdream.redact.scanner`): the regex is only tried where
one occurs, so every match must contain one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from memdream.errors import InvalidMemory
from memdream.redact.placeholders import KIND_NAME_RE
from memdream.redact.scanner import MIN_PHONE_DIGITS, Back, Rule, Validator
from memdream.redact.values import is_code, is_secret_value, is_stand_in

# Built-in rules are ASCII-only: `\s`, `\w` and case folding must not reach into Unicode
# (the Kelvin sign folds to "k"), or the anchors below would miss what the regexes match.
_A = re.ASCII
_I = re.ASCII | re.IGNORECASE


# Where a match starts, given the text and the offset of its anchor (scanner.Back).
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


def _anchors(*needles: bytes, back: Back = _at) -> tuple[tuple[bytes, Back], ...]:
    """A rule's anchors: each needle, and where a match starts from it."""
    return tuple((needle, back) for needle in needles)


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
    return MIN_PHONE_DIGITS <= digits <= 15


def _value_of(match: re.Match[str]) -> tuple[str, bool]:
    """The value a rule with groups ``v1``..``v4`` matched, and whether it was bare (unquoted)."""
    start, end = _ASSIGNMENT.span(match)
    return match.string[start:end], match.start("v4") != -1


def _secret_value_ok(match: re.Match[str]) -> bool:
    return is_secret_value(_value_of(match)[0])


# Passwords and secrets are chosen by people; tokens and keys are made by machines (values._looks_generated).
_HUMAN_SECRET = re.compile(r"passw|pwd|secret", _I)


def _assignment_ok(match: re.Match[str]) -> bool:
    """`password=hunter2`, `"api_key": "..."`: the value is a literal, and a token's or a key's looks made."""
    value, bare = _value_of(match)
    if bare and is_code(value, match.string, match.end()):
        return False
    return is_secret_value(value, generated=_HUMAN_SECRET.search(match.group("k")) is None)


def _env_assignment_ok(match: re.Match[str]) -> bool:
    """`GOOGLE_MAPS_KEY=...`: the name says it is a secret, so any literal value is one."""
    return _secret_env_name(match.group("k")) and _secret_value_ok(match)


def _secret_env_name(name: str) -> bool:
    """False for the few names of that form that say otherwise (`PUBLIC_KEY`, `PRIMARY_KEY`, `MAX_TOKEN`)."""
    parts = name.split("_")
    return len(parts) < 2 or parts[-2] not in _NOT_SECRET_QUALIFIERS


def _value_ok(group: str, generated: bool = False) -> Validator:
    """A validator: the value in ``group`` is a secret by :func:`is_secret_value`."""
    def ok(match: re.Match[str]) -> bool:
        return is_secret_value(match.group(group), generated)
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
    return len(token) >= 16 and any("0" <= char <= "9" for char in token) and not is_stand_in(token)


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
# A password's hash is as good as the password to whoever can crack it: `Password_PBKDF2="@ByteArray(..)"`
# (qBittorrent's config), `password_hash: $2b$12$...`.
_PASSWORD_KEY = r"passw(?:or)?d(?:[_-]?(?:hash(?:ed)?|pbkdf2|bcrypt|scrypt|argon2|sha\d*|digest))?"
_SECRET_KEY = (
    r"(?:" + _PASSWORD_KEY + r"|pwd|api[_-]?key|private[_-]?key|secret(?:[_-]?(?:access[_-]?)?key(?:[_-]?base)?)?"
    r"|token)"
)
# The same keys, written to start at their anchor ("key" of "api_key" is the anchor).
_ANCHORED_SECRET_KEY = (
    r"(?:" + _PASSWORD_KEY + r"|pwd|(?:(?<=api)|(?<=api[_-])|(?<=private)|(?<=private[_-]))key"
    r"|secret(?:[_-]?(?:access[_-]?)?key(?:[_-]?base)?)?|token)"
)

_PRIVATE_KEY = Rule(
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
_AWS_KEY = Rule(
    "aws-key",
    re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])", _A),
    _anchors(b"akia", b"asia"),
)
_GITHUB_TOKEN = Rule(
    "github-token",
    re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", _A),
    _anchors(b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    (),
    _glued_ok,
)
_SLACK_TOKEN = Rule(
    "slack-token",
    re.compile(r"(?<![A-Za-z0-9])xox[bpars]-[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9]", _A),
    _anchors(b"xox"),
    (),
    _glued_ok,
)
_API_KEY = Rule(
    "api-key",
    # `sk-`, `sk-proj-`, `sk-ant-...`: the body class includes `-`, so one pattern covers all.
    re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}", _A),
    _anchors(b"sk-"),
    (),
    _glued_ok,
)
_JWT = Rule(
    "jwt",
    # Header and payload are base64url JSON; the signature is empty for unsigned tokens.
    re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", _A),
    _anchors(b"eyj"),
    (),
    _glued_ok,
)
_AUTH_BEARER = Rule(
    "bearer-token",
    re.compile(_AUTH_HEADER + r"bearer[ \t]+(?P<v>" + _B64TOKEN + ")", _I),
    _anchors(b"authorization"),
    ("v",),
    _value_ok("v"),
)
_STANDALONE_BEARER = Rule(
    "bearer-token",
    re.compile(r"(?<![A-Za-z0-9_-])bearer[ \t]+(?P<v>" + _B64TOKEN + ")", _I),
    _anchors(b"bearer"),
    ("v",),
    _standalone_bearer_ok,
)
_AUTH_BASIC = Rule(
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
_ASSIGNMENT = Rule(
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


_ENV_ASSIGNMENT = Rule(
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
_URL_CREDENTIALS = Rule(
    "secret",
    # scheme://user:password@host: only the password.
    re.compile(r"://[^\s/:@]*:(?P<v>[^\s/@]+)@", _A),
    _anchors(b"://"),
    ("v",),
    _value_ok("v"),
)
_GOOGLE_API_KEY = Rule(
    "google-api-key",
    re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9])", _A),
    _anchors(b"aiza"),
    (),
    _glued_ok,
)
_STRIPE_KEY = Rule(
    "stripe-key",
    # Secret and restricted keys, live and test; publishable `pk_` keys are public.
    re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_[0-9A-Za-z]{10,}", _A),
    _anchors(b"sk_live_", b"rk_live_", b"sk_test_", b"rk_test_"),
    (),
    _glued_ok,
)
_HUGGINGFACE_TOKEN = Rule(
    "huggingface-token",
    re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9_])", _A),
    _anchors(b"hf_"),
    (),
    _glued_ok,
)
_GITLAB_TOKEN = Rule(
    "gitlab-token",
    re.compile(r"(?<![A-Za-z0-9])glpat-[A-Za-z0-9_-]{20,}", _A),
    _anchors(b"glpat-"),
    (),
    _glued_ok,
)
_NPM_TOKEN = Rule(
    "npm-token",
    re.compile(r"(?<![A-Za-z0-9])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])", _A),
    _anchors(b"npm_"),
    (),
    _glued_ok,
)
_AZURE_KEY = Rule(
    "azure-key",
    # Storage connection strings: `...;AccountName=x;AccountKey=<base64>;...`.
    re.compile(r"AccountKey[ \t]*=[ \t]*(?P<v>[A-Za-z0-9+/]{16,}={0,2})", _I),
    _anchors(b"accountkey"),
    ("v",),
)
_PASSWORD_OPTION = Rule(
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
# A password a database or remote client takes as an option's value, each as its manual says:
# `mongosh -u admin -p hunter2` (the MongoDB shell and tools; a bare `-p`, or one before another
# option, prompts), `redis-cli -a hunter2`, `sshpass -p hunter2`, `curl -u user:hunter2` (the part
# after the colon; `-u user` alone prompts), `mysql -u root -phunter2 db` (glued to `-p`: a bare `-p`
# prompts, `-P 3306` is a port, and a word after `-p ` is the database). Only on that client's command
# line, not after a pipe or `;`.
_CLIENT_VALUE = r"(?:\"(?P<q1>[^\"\n]+)\"|'(?P<q2>[^'\n]+)'|(?P<v>[^\s\"'`;&|<>()]+))"


def _literal_secret(match: re.Match[str]) -> bool:
    value = next(match.group(name) for name in ("q1", "q2", "v") if match.start(name) != -1)
    return not value.startswith("$") and is_secret_value(value)


def _client_password(tool: str, option: str, anchor: bytes, validator: Validator | None = _literal_secret) -> Rule:
    """The value of ``option`` on a command line of ``tool``, when ``validator`` takes it."""
    return Rule(
        "secret",
        re.compile(r"(?<![A-Za-z0-9_-])(?i:" + tool + r")(?![A-Za-z0-9_-])[^\n|;&]{0,512}?[ \t]" + option
                   + _CLIENT_VALUE, _A),
        _anchors(anchor),
        ("q1", "q2", "v"),
        validator,
    )


_MYSQL_PASSWORD = _client_password(r"mysql(?:dump|admin|import|check)?", r"-p", b"mysql", validator=None)
_CLIENT_PASSWORDS = (
    _client_password(r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", r"-p[ \t]+(?!-)", b"mongo"),
    _client_password(r"redis-cli", r"-a[ \t]+(?!-)", b"redis-cli"),
    _client_password(r"sshpass", r"-p[ \t]*(?!-)", b"sshpass"),
    _client_password(r"curl", r"(?:-u|--user)[ \t]+[^\s:\"'`;&|<>()]+:", b"curl"),
)
_PW_ASSIGNMENT = Rule(
    "secret",
    re.compile(r"(?<![A-Za-z0-9_])pw[ \t]*=[ \t]*(?:" + _QUOTED_VALUE + "|" + _BARE_VALUE + ")", _I),
    _anchors(b"pw="),
    ("v1", "v2", "v3", "v4"),
    _secret_value_ok,
)
_URL_QUERY_KEY = Rule(
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


_ID_NUMBER = Rule(
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


_POSTAL_ADDRESS = Rule(
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
_EMAIL = Rule(
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
_CARD_NUMBER = Rule(
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
_PHONE = Rule(
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
BUILTIN_RULES: tuple[Rule, ...] = (
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
    *_CLIENT_PASSWORDS,
    _PW_ASSIGNMENT,
    _URL_QUERY_KEY,
    _URL_CREDENTIALS,
    _EMAIL,
    _CARD_NUMBER,
    _ID_NUMBER,
    _PHONE,
    _POSTAL_ADDRESS,
)

BUILTIN_KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in BUILTIN_RULES))
"""Every kind the built-in rules produce, in priority order."""

# Dict keys whose string value is a secret as a whole (`{"password": "two words"}`), the
# structured counterpart of the assignment rule. Prefixes such as `db_` or `GITHUB_` are allowed.
_SECRET_KEY_NAME = re.compile(r"(?:[A-Za-z0-9]+[_-])*" + _SECRET_KEY, _I)
_ENV_SECRET_KEY_NAME = re.compile(_ENV_SECRET_NAME, _A)
AUTH_KEY_NAME = re.compile(r"(?:proxy-)?authorization", _I)
AUTH_VALUE = re.compile(r"(?P<scheme>[ \t]*(?P<name>[A-Za-z]+)[ \t]+)(?P<v>\S.*)", _A | re.DOTALL)


def names_secret(key: str) -> bool:
    """Whether a mapping key (or a fact's attribute) names a secret: `password`, `db_token`, `GOOGLE_MAPS_KEY`."""
    if _SECRET_KEY_NAME.fullmatch(key):
        return True
    return _ENV_SECRET_KEY_NAME.fullmatch(key) is not None and _secret_env_name(key)


def compile_extra(index: int, spec: Mapping[str, str]) -> Rule:
    """The user's rule number ``index`` of ``redaction.extra_patterns``, checked (raises InvalidMemory): a
    kind name a placeholder can hold, and a regex that compiles and cannot backtrack forever."""
    name = spec.get("name", "")
    where = f"redaction.extra_patterns[{index}] ({name})"
    if not isinstance(name, str) or KIND_NAME_RE.fullmatch(name) is None:
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
    return Rule(name, regex)
