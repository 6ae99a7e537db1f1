"""Redaction rules: exact outputs per rule, false positives that must stay, settings, properties."""

from __future__ import annotations

import copy
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memdream.errors import InvalidMemory
from memdream.memory.settings import Settings, default_config_text
from memdream.redact import BUILTIN_KINDS, Finding, Redactor, default_redactor, placeholder

GITHUB_PAT_CLASSIC = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5"
GITHUB_PAT_FINE = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF"
SLACK_BOT = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
OPENAI_PROJECT = "sk-proj-Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Ef3Hj5"
ANTHROPIC = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7-AA"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "-----END RSA PRIVATE KEY-----"
)


def redacted(text: str, redactor: Redactor | None = None) -> tuple[str, dict[str, int]]:
    out, counts = (redactor or default_redactor()).redact(text)
    return out, dict(counts)


# --- one realistic case per rule: exact output and counts --------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "counts"),
    [
        pytest.param(
            "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE && aws s3 ls",
            "export AWS_ACCESS_KEY_ID=[REDACTED:aws-key] && aws s3 ls",
            {"aws-key": 1},
            id="aws-key",
        ),
        pytest.param(
            "temporary creds ASIAY34FZKBOKMUTVV7A expire at noon",
            "temporary creds [REDACTED:aws-key] expire at noon",
            {"aws-key": 1},
            id="aws-session-key",
        ),
        pytest.param(
            f"git clone https://{GITHUB_PAT_CLASSIC}@github.com/acme/api.git",
            "git clone https://[REDACTED:github-token]@github.com/acme/api.git",
            {"github-token": 1},
            id="github-classic",
        ),
        pytest.param(
            f"gh auth login --with-token <<< {GITHUB_PAT_FINE}",
            "gh auth login --with-token <<< [REDACTED:github-token]",
            {"github-token": 1},
            id="github-fine-grained",
        ),
        pytest.param(
            f"SLACK_BOT_TOKEN is {SLACK_BOT}; posting to #ops",
            "SLACK_BOT_TOKEN is [REDACTED:slack-token]; posting to #ops",
            {"slack-token": 1},
            id="slack",
        ),
        pytest.param(
            f"client = OpenAI(api={OPENAI_PROJECT!r})",
            "client = OpenAI(api='[REDACTED:api-key]')",
            {"api-key": 1},
            id="openai",
        ),
        pytest.param(
            f"using {ANTHROPIC} for claude",
            "using [REDACTED:api-key] for claude",
            {"api-key": 1},
            id="anthropic",
        ),
        pytest.param(
            f"cookie session={JWT}; Path=/",
            "cookie session=[REDACTED:jwt]; Path=/",
            {"jwt": 1},
            id="jwt",
        ),
        pytest.param(
            f"key file:\n{PEM}\nthen ssh in",
            "key file:\n[REDACTED:private-key]\nthen ssh in",
            {"private-key": 1},
            id="private-key",
        ),
        pytest.param(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
            "-----END OPENSSH PRIVATE KEY-----",
            "[REDACTED:private-key]",
            {"private-key": 1},
            id="openssh-private-key",
        ),
        pytest.param(
            'curl -H "Authorization: Bearer abc123.DEF-456_x" https://api.example.com/v1',
            'curl -H "Authorization: Bearer [REDACTED:bearer-token]" https://api.example.com/v1',
            {"bearer-token": 1},
            id="bearer",
        ),
        pytest.param(
            '{"headers": {"authorization": "bearer tok_9f8e7d"}}',
            '{"headers": {"authorization": "bearer [REDACTED:bearer-token]"}}',
            {"bearer-token": 1},
            id="bearer-json",
        ),
        pytest.param(
            "password=hunter2 user=bob",
            "password=[REDACTED:secret] user=bob",
            {"secret": 1},
            id="password",
        ),
        pytest.param(
            'db:\n  passwd: "correct horse battery"\n  host: db.internal',
            'db:\n  passwd: "[REDACTED:secret]"\n  host: db.internal',
            {"secret": 1},
            id="passwd-yaml",
        ),
        pytest.param(
            '{"user": "bob", "password": "s3cr3t!", "retries": 3}',
            '{"user": "bob", "password": "[REDACTED:secret]", "retries": 3}',
            {"secret": 1},
            id="password-json",
        ),
        pytest.param(
            "PWD=hunter2 API_KEY='abc-123' apikey: k9 SECRET:topsecret",
            "PWD=[REDACTED:secret] API_KEY='[REDACTED:secret]' apikey: [REDACTED:secret] SECRET:[REDACTED:secret]",
            {"secret": 4},
            id="assignments",
        ),
        pytest.param(
            "POST /oauth?client_secret=zz9&access_token=tt8&state=ok",
            "POST /oauth?client_secret=[REDACTED:secret]&access_token=[REDACTED:secret]&state=ok",
            {"secret": 2},
            id="query-string",
        ),
        pytest.param(
            "retry with token: tk-9f8e7d",
            "retry with token: [REDACTED:secret]",
            {"secret": 1},
            id="token",
        ),
        pytest.param(
            "DATABASE_URL=postgres://app:s3cr3t@db.internal:5432/app",
            "DATABASE_URL=postgres://app:[REDACTED:secret]@db.internal:5432/app",
            {"secret": 1},
            id="url-credentials",
        ),
        pytest.param(
            "Contact jane.doe+ops@example.co.uk, or Bob <bob@corp.example>.",
            "Contact [REDACTED:email], or Bob <[REDACTED:email]>.",
            {"email": 2},
            id="email",
        ),
        pytest.param(
            "call +1 415-555-0132 or (415) 555-0132, London +44 20 7946 0958, fax 415.555.0132",
            "call [REDACTED:phone] or [REDACTED:phone], London [REDACTED:phone], fax [REDACTED:phone]",
            {"phone": 4},
            id="phone",
        ),
        pytest.param(
            "Paris +33 1 23 45 67 89; mobile +14155550132; UK 020 7946 0958; US 415 555 0132",
            "Paris [REDACTED:phone]; mobile [REDACTED:phone]; UK [REDACTED:phone]; US [REDACTED:phone]",
            {"phone": 4},
            id="phone-more-formats",
        ),
        pytest.param(
            "paid with 4111 1111 1111 1111, refund to 5500-0000-0000-0004 and 378282246310005",
            "paid with [REDACTED:card-number], refund to [REDACTED:card-number] and [REDACTED:card-number]",
            {"card-number": 3},
            id="card-number",
        ),
        pytest.param(
            "amex 3782 822463 10005 exp 12/27",
            "amex [REDACTED:card-number] exp 12/27",
            {"card-number": 1},
            id="card-amex-grouped",
        ),
    ],
)
def test_rule(text: str, expected: str, counts: dict[str, int]) -> None:
    assert redacted(text) == (expected, counts)


def test_format_specific_kind_wins_over_the_assignment_around_it() -> None:
    assert redacted(f"GITHUB_TOKEN={GITHUB_PAT_CLASSIC}") == ("GITHUB_TOKEN=[REDACTED:github-token]", {"github-token": 1})
    assert redacted(f'"api_key": "{OPENAI_PROJECT}"') == ('"api_key": "[REDACTED:api-key]"', {"api-key": 1})


def test_authorization_basic_is_a_secret() -> None:
    assert redacted("Authorization: Basic dXNlcjpwYXNz") == ("Authorization: Basic [REDACTED:secret]", {"secret": 1})


def test_standalone_bearer_needs_a_generated_looking_token() -> None:
    assert redacted("use bearer tokens in prod") == ("use bearer tokens in prod", {})
    assert redacted("sent Bearer 9f8e7d6c5b4a39281706f5e4") == ("sent Bearer [REDACTED:bearer-token]", {"bearer-token": 1})


def test_truncated_private_key_block_is_still_redacted() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7"
    assert redacted(text) == ("[REDACTED:private-key]", {"private-key": 1})


def test_private_key_in_json_escaped_string() -> None:
    text = '{"key": "-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBkg\\n-----END EC PRIVATE KEY-----\\n"}'
    assert redacted(text) == ('{"key": "[REDACTED:private-key]\\n"}', {"private-key": 1})


def test_assignment_values_that_are_not_secrets_stay() -> None:
    for text in ["password: null", "token = None", 'secret: ""', "if token == expected:", "max_tokens: 512",
                 "token_count: 12", "the key: value pairs", "secrets: 3"]:
        assert redacted(text) == (text, {}), text


def test_a_placeholder_value_is_not_redacted_again() -> None:
    for text in ["password=[REDACTED:secret]", 'token: "[REDACTED:email]"',
                 "Authorization: Bearer [REDACTED:bearer-token]", "[REDACTED:card-number] [REDACTED:phone]"]:
        assert redacted(text) == (text, {}), text


# --- things that look like secrets but are not -----------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("card 4111111111111112 declined", id="luhn-failing-16-digits"),
        pytest.param("card 4111 1111 1111 1112 declined", id="luhn-failing-grouped"),
        pytest.param("2026-11-07 09:12:03,481 INFO started", id="date-time"),
        pytest.param("ts=2026-11-07T09:12:03.120+01:00 next 2026-11-08T00:00:00Z", id="iso-timestamps"),
        pytest.param("Date: Thu, 07 Nov 2026 09:12:03 +0100", id="rfc2822-date"),
        pytest.param("upgraded 1.2.3 -> 10.20.300 (build 2026.11.07)", id="versions"),
        pytest.param("request 123e4567-e89b-12d3-a456-426614174000 failed", id="uuid"),
        pytest.param("request 12345678-1234-1234-1234-123456789012 failed", id="all-digit-uuid"),
        pytest.param("commit 9fceb02d0ae598e95dc970b74767f19372d61af8 on main", id="git-sha"),
        pytest.param("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", id="sha256"),
        pytest.param("listening on 192.168.100.200:8080 and 10.0.0.1", id="ip"),
        pytest.param("error at D1:3 and src/app.py:142:17", id="line-col"),
        pytest.param("epoch 1731000000000 ns 1731000000000000000 id 98765432101234", id="plain-integers"),
        pytest.param("pi is 3.14159265358979 and 0.41111111111111116", id="floats"),
        pytest.param("The agent fixed the flaky test and reran the suite; all 41 passed in 2.31s.", id="prose"),
        pytest.param("git remote add origin git@github.com:acme/api.git", id="ssh-remote"),
        pytest.param("@pytest.fixture and npm i @types/node@20.1.0 and icon@2x.png", id="at-signs"),
        pytest.param("the risk-assessment-for-the-quarterly-review is due", id="sk-inside-word"),
        pytest.param("tasks: asia-pacific rollout, keyboard shortcuts, tokens used 1200", id="anchor-words"),
        pytest.param("offset +0200 and range 100-2000 and ticket 123-4567", id="short-numbers"),
    ],
)
def test_not_redacted(text: str) -> None:
    assert redacted(text) == (text, {})


def test_default_config_file_has_no_findings() -> None:
    assert default_redactor().find(default_config_text()) == []


# --- spans ---------------------------------------------------------------------------------


def test_find_spans_are_exactly_the_secrets() -> None:
    secrets = {
        "aws-key": "AKIAIOSFODNN7EXAMPLE",
        "github-token": GITHUB_PAT_CLASSIC,
        "slack-token": SLACK_BOT,
        "api-key": OPENAI_PROJECT,
        "jwt": JWT,
        "private-key": PEM,
        "email": "jane.doe@example.com",
        "phone": "+44 20 7946 0958",
        "card-number": "4111-1111-1111-1111",
    }
    text = "start " + " and then ".join(secrets.values()) + " end; password: hunter2 and Authorization: Bearer t0k3n"
    findings = default_redactor().find(text)
    found = {(f.kind, text[f.start:f.end]) for f in findings}
    assert found == {*secrets.items(), ("secret", "hunter2"), ("bearer-token", "t0k3n")}
    assert findings == sorted(findings, key=lambda f: f.start)
    assert all(a.end <= b.start for a, b in zip(findings, findings[1:]))


def test_find_reports_kind_and_span() -> None:
    assert default_redactor().find("mail a@b.io now") == [Finding("email", 5, 11)]


def test_longest_candidate_wins_on_overlap() -> None:
    # The quoted password value contains an e-mail address: one secret, not an e-mail inside.
    assert redacted('password="me@example.com 2024"') == ('password="[REDACTED:secret]"', {"secret": 1})


def test_placeholder_format() -> None:
    assert placeholder("email") == "[REDACTED:email]"
    assert set(BUILTIN_KINDS) == {"private-key", "aws-key", "github-token", "slack-token", "api-key",
                                  "google-api-key", "stripe-key", "huggingface-token", "gitlab-token", "npm-token",
                                  "azure-key", "jwt", "bearer-token", "secret", "email", "card-number", "id-number",
                                  "phone", "address"}


# --- settings: extra patterns, allow-list, disabled ------------------------------------


def test_extra_patterns_from_settings() -> None:
    settings = Settings.from_mapping({"redaction": {"extra_patterns": [{"name": "employee-id", "pattern": "EMP-[0-9]{6}"}]}})
    redactor = Redactor.from_settings(settings)
    assert redacted("ticket by EMP-004211 (bob@example.com)", redactor) == (
        "ticket by [REDACTED:employee-id] ([REDACTED:email])",
        {"employee-id": 1, "email": 1},
    )


def test_invalid_extra_pattern_raises_invalid_memory() -> None:
    with pytest.raises(InvalidMemory) as raised:
        Redactor(extra_patterns=[{"name": "ok", "pattern": "x"}, {"name": "broken", "pattern": "EMP-([0-9]"}])
    message = str(raised.value)
    assert message.startswith("redaction.extra_patterns[1] (broken): invalid regular expression: ")
    assert message.endswith(str(_regex_error("EMP-([0-9]")))


def _regex_error(pattern: str) -> re.error:
    try:
        re.compile(pattern)
    except re.error as error:
        return error
    raise AssertionError("pattern compiles")


def test_invalid_extra_pattern_via_settings() -> None:
    settings = Settings.from_mapping({"redaction": {"extra_patterns": [{"name": "bad", "pattern": "(?P<"}]}})
    with pytest.raises(InvalidMemory, match=re.escape("redaction.extra_patterns[0] (bad): invalid regular expression: ")):
        Redactor.from_settings(settings)


def test_extra_pattern_matching_placeholders_stays_idempotent() -> None:
    redactor = Redactor(extra_patterns=[{"name": "word", "pattern": "[A-Za-z]+"}])
    once, counts = redactor.redact("hello world")
    assert (once, dict(counts)) == ("[REDACTED:word] [REDACTED:word]", {"word": 2})
    assert redactor.redact(once) == (once, Counter())


def test_allow_list() -> None:
    settings = Settings.from_mapping({"redaction": {"allow": ["support@example.com"]}})
    redactor = Redactor.from_settings(settings)
    text = "write to support@example.com, not jane@example.com"
    assert redacted(text, redactor) == ("write to support@example.com, not [REDACTED:email]", {"email": 1})
    assert [text[f.start:f.end] for f in redactor.find(text)] == ["jane@example.com"]


def test_allow_list_covers_a_secret_inside_the_literal() -> None:
    redactor = Redactor(allow=["Authorization: Bearer public-demo-token"])
    text = "demo: Authorization: Bearer public-demo-token"
    assert redactor.redact(text) == (text, Counter())


def test_disabled_redaction_redacts_nothing() -> None:
    redactor = Redactor.from_settings(Settings.from_mapping({"redaction": {"enabled": False}}))
    assert redactor.enabled is False
    text = f"password=hunter2 {JWT} jane@example.com 4111 1111 1111 1111"
    assert redactor.find(text) == []
    assert redactor.redact(text) == (text, Counter())
    obj = {"password": "x", "list": [text]}
    assert redactor.redact_obj(obj) == (obj, Counter())


def test_default_settings_enable_redaction() -> None:
    redactor = Redactor.from_settings(Settings.defaults())
    assert redactor.enabled is True
    assert redacted("jane@example.com", redactor) == ("[REDACTED:email]", {"email": 1})


def test_default_redactor_is_shared() -> None:
    assert default_redactor() is default_redactor()


# --- redact_obj ----------------------------------------------------------------------------


def test_redact_obj_keeps_keys_and_redacts_string_values() -> None:
    event = {
        "type": "tool_call",
        "args": {"command": "curl -u bob:pw https://x", "env": ["HOME=/home/bob", "MAIL=bob@example.com"]},
        "password": "two words",
        "headers": {"Authorization": "Bearer abc", "X-Id": 7},
        "ok": True,
        "n": 3.5,
        "none": None,
        "jane@example.com": "key kept",
    }
    before = copy.deepcopy(event)
    out, counts = default_redactor().redact_obj(event)
    assert event == before
    assert out == {
        "type": "tool_call",
        "args": {"command": "curl -u bob:[REDACTED:secret] https://x", "env": ["HOME=/home/bob", "MAIL=[REDACTED:email]"]},
        "password": "[REDACTED:secret]",
        "headers": {"Authorization": "Bearer [REDACTED:bearer-token]", "X-Id": 7},
        "ok": True,
        "n": 3.5,
        "none": None,
        "jane@example.com": "key kept",
    }
    assert counts == Counter({"email": 1, "secret": 2, "bearer-token": 1})


def test_redact_obj_returns_new_containers_when_it_redacts() -> None:
    event = {"a": ["x"], "b": {"c": "mail a.b@example.com"}}
    out, _ = default_redactor().redact_obj(event)
    assert out == {"a": ["x"], "b": {"c": "mail [REDACTED:email]"}}
    assert out is not event and out["a"] is not event["a"] and out["b"] is not event["b"]
    assert event["b"]["c"] == "mail a.b@example.com"


def test_redact_obj_hands_back_a_clean_object_as_it_is() -> None:
    event = {"a": ["x"], "b": {"c": "y"}}
    out, counts = default_redactor().redact_obj(event)
    assert out is event and counts == Counter()




def test_redact_obj_secret_keys_with_placeholder_or_null_values() -> None:
    out, counts = default_redactor().redact_obj({"token": "[REDACTED:secret]", "api_key": "null", "tokens": 5})
    assert out == {"token": "[REDACTED:secret]", "api_key": "null", "tokens": 5}
    assert counts == Counter()


# --- properties ----------------------------------------------------------------------------

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_UPPER_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _luhn_complete(prefix: str) -> str:
    total = 0
    for index, char in enumerate(reversed(prefix)):
        digit = int(char)
        if index % 2 == 0:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return prefix + str((10 - total % 10) % 10)


def _grouped(digits: str, sep: str) -> str:
    return sep.join(digits[i:i + 4] for i in range(0, len(digits), 4))


_cards = st.builds(
    lambda first, body, sep: _grouped(_luhn_complete(first + body), sep),
    st.sampled_from("3456"),
    st.text(alphabet="0123456789", min_size=14, max_size=14),
    st.sampled_from(["", " ", "-"]),
)
_phones = st.one_of(
    st.builds(lambda a, b, c: f"+1 {a}-{b}-{c}", *(st.text("0123456789", min_size=n, max_size=n) for n in (3, 3, 4))),
    st.builds(lambda a, b, c: f"({a}) {b}-{c}", *(st.text("0123456789", min_size=n, max_size=n) for n in (3, 3, 4))),
    st.builds(lambda a, b: f"+44 20 {a} {b}", *(st.text("0123456789", min_size=4, max_size=4) for _ in range(2))),
)
_emails = st.builds(
    lambda user, host, tld: f"{user}@{host}.{tld}",
    # An address has a letter or digit in its local part and no dot at either end; `git@` and `noreply@`
    # reach no person.
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._+", min_size=1, max_size=20).filter(
        lambda user: user not in ("git", "noreply") and any(char.isalnum() for char in user)
        and not user.startswith(".") and not user.endswith(".")),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=15),
    st.sampled_from(["com", "org", "io", "co", "dev", "example"]),
)
_SECRETS = st.one_of(
    st.builds(lambda p, s: p + s, st.sampled_from(["AKIA", "ASIA"]), st.text(_UPPER_ALNUM, min_size=16, max_size=16)),
    st.builds(lambda p, s: p + s, st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]),
              st.text(_ALNUM, min_size=36, max_size=36)),
    st.builds(lambda s: "github_pat_" + s, st.text(_ALNUM + "_", min_size=22, max_size=60)),
    st.builds(lambda p, a, b: f"{p}{a}-{b}", st.sampled_from(["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-"]),
              st.text("0123456789", min_size=10, max_size=13), st.text(_ALNUM, min_size=10, max_size=24)),
    st.builds(lambda p, s: p + s, st.sampled_from(["sk-", "sk-proj-", "sk-ant-api03-"]),
              st.text(_ALNUM, min_size=20, max_size=60)),
    st.builds(lambda a, b, c: f"eyJ{a}.{b}.{c}", *(st.text(_ALNUM + "_-", min_size=8, max_size=40) for _ in range(3))),
    st.builds(lambda lines: "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----",
              st.lists(st.text(_ALNUM + "+/", min_size=8, max_size=64), min_size=1, max_size=4)),
    # Values end in "9Z": prose (lowercase, no digits) can then never contain them by chance.
    st.builds(lambda t: f"Authorization: Bearer {t}9Z", st.text(_ALNUM + "._-", max_size=40)),
    # A value that starts with "$" is a reference (`$TOKEN`), not a secret: values start otherwise.
    st.builds(lambda k, sep, v: f"{k}{sep}{v}9Z", st.sampled_from(["password", "passwd", "pwd", "api_key", "apikey",
                                                                   "secret", "client_secret", "access_token", "token"]),
              st.sampled_from(["=", ": ", ":"]), st.text(_ALNUM + "!#$%", max_size=30).filter(
                  lambda value: not value.startswith("$"))),
    st.builds(lambda k, v: f"{k}={v}9Z", st.sampled_from(["GOOGLE_MAPS_KEY", "GH_TOKEN", "SLACK_SIGNING_SECRET",
                                                          "DB_PASSWORD", "MY_SERVICE_API_KEY"]),
              st.text(_ALNUM, max_size=30)),
    _emails,
    _phones,
    _cards,
    st.builds(lambda s: "AIza" + s, st.text(_ALNUM + "_-", min_size=35, max_size=35)),
    st.builds(lambda p, s: p + s, st.sampled_from(["sk_live_", "rk_live_", "sk_test_"]),
              st.text(_ALNUM, min_size=10, max_size=40)),
    st.builds(lambda s: "hf_" + s, st.text(_ALNUM, min_size=30, max_size=40)),
    st.builds(lambda s: "glpat-" + s, st.text(_ALNUM + "_-", min_size=20, max_size=30)),
    st.builds(lambda s: "npm_" + s, st.text(_ALNUM, min_size=36, max_size=36)),
)
_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.;!?'\"()\n-", max_size=30)  # no ':' or '=': prose never forms an assignment


@st.composite
def _prose_with_secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    secrets = draw(st.lists(_SECRETS, min_size=1, max_size=5))
    parts = [draw(_WORDS)]
    for secret in secrets:
        parts += [" ", secret, " ", draw(_WORDS)]
    return "".join(parts), secrets


def _secret_part(secret: str) -> str:
    """The piece of a generated secret that must not survive (assignments keep their key)."""
    for marker in ("Authorization: Bearer ", "=", ": ", ":"):
        if marker in secret and not secret.startswith(("-----", "+", "(")):
            return secret.split(marker, 1)[1]
    return secret


@given(st.text())
@settings(max_examples=300)
def test_redaction_is_idempotent_on_arbitrary_text(text: str) -> None:
    redactor = default_redactor()
    once, _ = redactor.redact(text)
    assert redactor.redact(once) == (once, Counter())
    assert redactor.find(once) == []


# Pieces of rules glued at random: the texts most likely to make a rule fire on a
# placeholder, or to expose a new match once an overlapping one is replaced.
_FRAGMENTS = st.lists(
    st.sampled_from([
        "password", "token", "api_key", "secret", "=", ":", " ", "\"", "'", "\\", "\n", "[", "]", "[REDACTED:email]",
        "[REDACTED:", "@", "a", "Z", "9", "0", "4111", "1111", "-", ".", "+1", "+44", "(415)", "555", "0132", "sk-",
        "AKIA", "ghp_", "xoxb-", "eyJ", "abcdefghij", "ABCDEFGHIJ", "0123456789", "Authorization", "Bearer", "Basic",
        "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "example.com", "://", "git",
        # What tells code and placeholders from secrets (issue 21.8): a result must not turn into a secret.
        "apiKey", "GOOGLE_MAPS_KEY", "PUBLIC_KEY", "(", ")", "<", ">", "{", "}", "$", "||", " | ", "str", "your",
        "xxx", "...", "/", "c-", "os.environ", "noreply", "id=",
    ]),
    max_size=40,
).map("".join)


@given(_FRAGMENTS)
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
def test_redaction_is_idempotent_on_rule_fragments(text: str) -> None:
    redactor = default_redactor()
    once, _ = redactor.redact(text)
    assert redactor.find(once) == []
    assert redactor.redact(once) == (once, Counter())


@given(_prose_with_secrets())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_generated_secrets_are_redacted_and_redaction_is_idempotent(case: tuple[str, list[str]]) -> None:
    text, secrets = case
    redactor = default_redactor()
    once, counts = redactor.redact(text)
    assert sum(counts.values()) >= len(secrets)
    for secret in secrets:
        assert _secret_part(secret) not in once
    assert redactor.find(once) == []
    assert redactor.redact(once) == (once, Counter())


@given(_prose_with_secrets())
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_find_spans_cover_each_generated_secret(case: tuple[str, list[str]]) -> None:
    text, secrets = case
    spans = [text[f.start:f.end] for f in default_redactor().find(text)]
    for secret in secrets:
        assert any(_secret_part(secret) == span for span in spans), (secret, spans)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | _SECRETS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12) | _SECRETS, children, max_size=4),
    max_leaves=12,
)


@given(_json)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_redact_obj_does_not_mutate_and_is_idempotent(obj: object) -> None:
    before = copy.deepcopy(obj)
    redactor = default_redactor()
    once, _ = redactor.redact_obj(obj)
    assert obj == before
    assert redactor.redact_obj(once) == (once, Counter())


@pytest.mark.parametrize("text, expected", [
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]"),
    ('export SECRET_KEY="django-insecure-x1"', 'export SECRET_KEY="[REDACTED:secret]"'),
    ("PRIVATE_KEY=abc123def456", "PRIVATE_KEY=[REDACTED:secret]"),
    ("token_count: 512", "token_count: 512"),
    ("secret_santa: bob", "secret_santa: bob"),
])
def test_secret_names_with_a_key_suffix(text: str, expected: str) -> None:
    assert Redactor().redact(text)[0] == expected


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.text(max_size=40) | _SECRETS, lambda children: st.lists(children, max_size=4)
                    | st.dictionaries(st.text(max_size=12) | st.sampled_from(["password", "Authorization", "note"])
                                      | _SECRETS,
                                      children, max_size=4), max_leaves=12))
def test_the_clean_shortcut_never_skips_a_secret(obj: object) -> None:
    """redact_obj's one-pass check over joined strings agrees with redacting field by field."""
    redactor = default_redactor()
    counts: Counter[str] = Counter()
    assert redactor.redact_obj(obj) == (redactor._redact_value(obj, counts), counts)
    with_keys: Counter[str] = Counter()
    assert redactor.redact_obj(obj, keys=True) == (redactor._redact_value(obj, with_keys, True), with_keys)


# --- token formats, command lines, URL queries and personal data added for issue 10 ---------


@pytest.mark.parametrize(("text", "expected", "counts"), [
    pytest.param("maps key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q rest",
                 "maps key [REDACTED:google-api-key] rest", {"google-api-key": 1}, id="google-api-key"),
    pytest.param("STRIPE=sk_live_51HqLyjWDarjtT1zdp7dcXyZ and rk_live_51HqLyjWDarjtT1zdp7dc",
                 "STRIPE=[REDACTED:stripe-key] and [REDACTED:stripe-key]", {"stripe-key": 2}, id="stripe-live"),
    pytest.param("test with sk_test_4eC39HqLyjWDarjtT1zdp7dc", "test with [REDACTED:stripe-key]",
                 {"stripe-key": 1}, id="stripe-test"),
    pytest.param("huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
                 "huggingface-cli login --token [REDACTED:huggingface-token]", {"huggingface-token": 1},
                 id="huggingface-token"),
    pytest.param("git clone https://oauth2:glpat-Ab3De5Gh7Jk9Mn1Pq3St@gitlab.com/x/y.git",
                 "git clone https://oauth2:[REDACTED:gitlab-token]@gitlab.com/x/y.git", {"gitlab-token": 1},
                 id="gitlab-token"),
    pytest.param("//registry.npmjs.org/:_authToken=npm_Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Ef3Hj5",
                 "//registry.npmjs.org/:_authToken=[REDACTED:npm-token]", {"npm-token": 1}, id="npm-token"),
    pytest.param("DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;"
                 "EndpointSuffix=core.windows.net",
                 "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:azure-key];"
                 "EndpointSuffix=core.windows.net", {"azure-key": 1}, id="azure-account-key"),
    pytest.param('{"AccessKeyId": "x", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}',
                 '{"AccessKeyId": "x", "SecretAccessKey": "[REDACTED:secret]"}', {"secret": 1},
                 id="aws-cli-json-secret"),
    pytest.param("SECRET_KEY_BASE=9f8e7d6c5b4a3928170f6e5d4c3b2a19 rails s",
                 "SECRET_KEY_BASE=[REDACTED:secret] rails s", {"secret": 1}, id="secret-key-base"),
    pytest.param("deploy --password hunter2 --user bob", "deploy --password [REDACTED:secret] --user bob",
                 {"secret": 1}, id="password-option"),
    pytest.param("deploy --password='two words'", "deploy --password='[REDACTED:secret]'", {"secret": 1},
                 id="password-option-assigned"),
    pytest.param("mysql -u root -phunter2 shop", "mysql -u root -p[REDACTED:secret] shop", {"secret": 1},
                 id="mysql-glued-password"),
    pytest.param("mysqldump -u x -p'p a ss' db > d.sql", "mysqldump -u x -p'[REDACTED:secret]' db > d.sql",
                 {"secret": 1}, id="mysqldump-quoted-password"),
    pytest.param("mongosh -u admin -p secret123 --authenticationDatabase admin",
                 "mongosh -u admin -p [REDACTED:secret] --authenticationDatabase admin", {"secret": 1},
                 id="mongosh-password"),
    pytest.param("mongodump -p 's3 cret' --out /tmp/d", "mongodump -p '[REDACTED:secret]' --out /tmp/d",
                 {"secret": 1}, id="mongodump-quoted-password"),
    pytest.param("redis-cli -h cache -a hunter22 ping", "redis-cli -h cache -a [REDACTED:secret] ping",
                 {"secret": 1}, id="redis-cli-password"),
    pytest.param("sshpass -phunter22 ssh deploy@host", "sshpass -p[REDACTED:secret] ssh deploy@host",
                 {"secret": 1}, id="sshpass-password"),
    pytest.param("curl -u admin:hunter22 https://x.example.com/api",
                 "curl -u admin:[REDACTED:secret] https://x.example.com/api", {"secret": 1}, id="curl-user-password"),
    pytest.param('WebUI\\Password_PBKDF2="@ByteArray(8jAwQ2e4R6t8==:c2FsdHlIYXNoMTIzNDU2Nzg5MA==)"',
                 'WebUI\\Password_PBKDF2="[REDACTED:secret]"', {"secret": 1}, id="password-hash-assignment"),
    pytest.param("smbclient //srv/x -U bob pw=hunter2", "smbclient //srv/x -U bob pw=[REDACTED:secret]",
                 {"secret": 1}, id="pw-assignment"),
    pytest.param("GET https://maps.example.com/api?key=abc123def&q=Paris",
                 "GET https://maps.example.com/api?key=[REDACTED:secret]&q=Paris", {"secret": 1}, id="url-key"),
    pytest.param("GET https://x.example.com/feed?a=1&token=abc123def&page=2",
                 "GET https://x.example.com/feed?a=1&token=[REDACTED:secret]&page=2", {"secret": 1}, id="url-token"),
    pytest.param("her SSN is 219-09-9999.", "her SSN is [REDACTED:id-number].", {"id-number": 1}, id="ssn"),
    pytest.param("ship to 742 Evergreen Street, Springfield, IL 62704 by Friday",
                 "ship to [REDACTED:address] by Friday", {"address": 1}, id="address-city-zip"),
    pytest.param("office at 1600 Pennsylvania Ave.", "office at [REDACTED:address]", {"address": 1},
                 id="address-abbreviated"),
])
def test_new_rule(text: str, expected: str, counts: dict[str, int]) -> None:
    assert redacted(text) == (expected, counts)


@pytest.mark.parametrize("text", [
    pytest.param("mkdir -p build/x && git add -p src/", id="mkdir-git-add-p"),
    pytest.param("ssh -p 22 deploy@10.0.0.5 and scp -P 2222 f host:", id="ssh-port"),
    pytest.param("docker run -p 8080:80 -v /data:/data nginx:1.27", id="docker-port"),
    pytest.param("mysql -u root -p shop", id="mysql-prompting"),
    pytest.param("mysql -h db -P 3306 -u app -p", id="mysql-port"),
    pytest.param("pytest -k key -x and pytest -k 'token and not slow'", id="pytest-k"),
    pytest.param("order #12345 and issue #10, PR 482 merged on 2026-11-30", id="order-issue-date"),
    pytest.param("upgraded to 3.12.7, node v20.11.1, build 2026.11.30-2", id="versions"),
    pytest.param("3 Main concepts and 2 steps down the road; 10 Ways to go", id="prose-numbers"),
    pytest.param("serials 000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000", id="invalid-ssn"),
    pytest.param("ticket 123-45-6789-01 and v123-45-6789", id="ssn-in-longer-ids"),
    pytest.param("curl https://x.example.com/?monkey=1&keyboard=2 --password-file p.txt", id="query-words"),
    pytest.param("sk_live_short pk_live_51HqLyjWDarjtT1zdp7dc hf_short npm_short", id="short-tokens"),
    pytest.param("deploy --password --verbose", id="password-option-without-value"),
    pytest.param("mongosh -u admin -p --authenticationDatabase admin", id="mongosh-prompting"),
    pytest.param("redis-cli -a $REDIS_PASSWORD ping; curl -u $USER:$TOKEN https://x.example.com", id="variables"),
    pytest.param("curl -u admin https://x.example.com", id="curl-prompting"),
    pytest.param('password_reset_url = "https://x.example.com/reset" and password_min_length = 8',
                 id="password-settings"),
])
def test_ordinary_commands_survive(text: str) -> None:
    assert redacted(text) == (text, {})


def test_redact_obj_with_keys_redacts_mapping_keys_and_keeps_them_apart() -> None:
    obj = {"args": {"bob@example.org": 1, "al@example.org": 2, "plain": "x"}, "n": [{"x@example.org": "v"}]}
    assert default_redactor().redact_obj(obj) == (obj, Counter())
    out, counts = default_redactor().redact_obj(obj, keys=True)
    assert out == {"args": {"[REDACTED:email]": 1, "[REDACTED:email]-2": 2, "plain": "x"},
                   "n": [{"[REDACTED:email]": "v"}]}
    assert counts == Counter({"email": 3})


def test_a_fact_whose_attribute_names_a_secret_has_its_value_redacted() -> None:
    fact = {"subject": "prod db", "attribute": "password", "value": "correct horse"}
    out, counts = default_redactor().redact_obj({"fact": fact})
    assert out == {"fact": {**fact, "value": "[REDACTED:secret]"}} and counts == Counter({"secret": 1})
    harmless = {"subject": "prod db", "attribute": "password_policy", "value": "12 chars"}
    assert default_redactor().redact_obj({"fact": harmless}) == ({"fact": harmless}, Counter())


# --- secrets inside ids and tool names (issue 21.8) ------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(f"c-{OPENAI_PROJECT}", "c-[REDACTED:api-key]", id="call-id-openai"),
    pytest.param(f"curl-{SLACK_BOT}", "curl-[REDACTED:slack-token]", id="tool-name-slack"),
    pytest.param(f"call_{GITHUB_PAT_CLASSIC}", "call_[REDACTED:github-token]", id="call-id-github"),
    pytest.param("id-AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "id-[REDACTED:google-api-key]", id="id-google"),
    pytest.param("tool_sk_live_51HqLyjWDarjtT1zdp7dcXyZ", "tool_[REDACTED:stripe-key]", id="tool-stripe"),
    pytest.param("c-glpat-Ab3De5Gh7Jk9Mn1Pq3St", "c-[REDACTED:gitlab-token]", id="call-id-gitlab"),
    pytest.param("call_hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "call_[REDACTED:huggingface-token]", id="call-id-hf"),
    pytest.param("x_npm_Ab3De5Gh7Jk9Mn1Pq3St5Vw7Yz9Bc1Ef3Hj5", "x_[REDACTED:npm-token]", id="npm"),
    pytest.param(f"session-{JWT}", "session-[REDACTED:jwt]", id="session-jwt"),
    pytest.param("run-AKIAIOSFODNN7EXAMPLE", "run-[REDACTED:aws-key]", id="aws"),
])
def test_a_token_glued_to_a_prefix_is_found(text: str, expected: str) -> None:
    assert redacted(text)[0] == expected


@pytest.mark.parametrize("text", [
    pytest.param("task-sk-learn-the-whole-pipeline-now", id="kebab-sk"),
    pytest.param("run_sk_test_everything_quickly", id="snake-stripe"),
    pytest.param("the-xoxb-bot-docs-page", id="kebab-slack"),
    pytest.param("my_hf_datasetloaderforthebigcorpus_v", id="snake-hf"),
])
def test_words_that_hold_a_token_prefix_are_not_tokens(text: str) -> None:
    assert redacted(text) == (text, {})


def test_ids_and_tool_names_of_an_event_are_scanned() -> None:
    from memdream.ingest.prepare import redact_event

    event = {"session": "s", "ts": "2026-11-07T09:12:03Z", "kind": "tool_call", "id": "e1",
             "call_id": f"c-{OPENAI_PROJECT}", "tool": f"curl-{SLACK_BOT}", "args": {"url": "x"}}
    counts = redact_event(default_redactor(), event)
    assert counts == Counter({"api-key": 1, "slack-token": 1})
    assert event["tool"] == "curl-[REDACTED:slack-token]"
    # A redacted id keeps a digest of what it was, so two calls stay two.
    assert event["call_id"].startswith("c-[REDACTED:api-key]-") and OPENAI_PROJECT not in event["call_id"]


_GLUED_TOKENS = st.one_of(
    st.builds(lambda s: "sk-proj-" + s, st.text(_ALNUM, min_size=20, max_size=40)),
    st.builds(lambda s: "ghp_" + s, st.text(_ALNUM, min_size=36, max_size=36)),
    st.builds(lambda a, b: f"xoxb-{a}-{b}", st.text("0123456789", min_size=10, max_size=13),
              st.text(_ALNUM, min_size=10, max_size=24)),
    st.builds(lambda s: "AKIA" + s, st.text(_UPPER_ALNUM, min_size=16, max_size=16)),
).filter(lambda token: any(char.isdigit() for char in token))


@given(st.sampled_from(["c-", "curl-", "call_", "toolu_", "id-"]), _GLUED_TOKENS)
@settings(max_examples=200)
def test_a_generated_token_glued_to_a_prefix_never_survives(prefix: str, token: str) -> None:
    out, counts = redacted(prefix + token)
    assert token not in out and out.startswith(prefix + "[REDACTED:") and sum(counts.values()) == 1


# --- names of secrets, and code that is not one (issue 21.8) ----------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("GOOGLE_MAPS_KEY=AbCdEfGh", "GOOGLE_MAPS_KEY=[REDACTED:secret]", id="maps-key"),
    pytest.param("export SLACK_SIGNING_SECRET=plainword", "export SLACK_SIGNING_SECRET=[REDACTED:secret]",
                 id="secret"),
    pytest.param("DB_PASSWORD='two words' ./run", "DB_PASSWORD='[REDACTED:secret]' ./run", id="password-quoted"),
    pytest.param("docker run -e WEBHOOK_TOKEN=ollama app", "docker run -e WEBHOOK_TOKEN=[REDACTED:secret] app",
                 id="token-word"),
    pytest.param("MY_SERVICE_API_KEY=proxyhandled", "MY_SERVICE_API_KEY=[REDACTED:secret]", id="api-key-word"),
    pytest.param("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                 "AWS_SECRET_ACCESS_KEY=[REDACTED:secret]", id="aws-secret"),
])
def test_an_environment_variable_named_for_a_secret_is_redacted_whatever_its_value(text: str, expected: str) -> None:
    assert redacted(text) == (expected, {"secret": 1})


def test_an_environment_mapping_named_for_a_secret_is_redacted() -> None:
    out, counts = default_redactor().redact_obj({"env": {"GOOGLE_MAPS_KEY": "maps", "PATH": "/usr/bin"}})
    assert out == {"env": {"GOOGLE_MAPS_KEY": "[REDACTED:secret]", "PATH": "/usr/bin"}}
    assert counts == Counter({"secret": 1})


@pytest.mark.parametrize("text", [
    pytest.param("PUBLIC_KEY=AbCdEf PRIMARY_KEY=id MAX_TOKEN=4096", id="not-secret-names"),
    pytest.param("SSH_KEY=~/.ssh/id_ed25519 TOKEN_FILE=/run/secrets/token", id="paths"),
    pytest.param("OPENAI_API_KEY=$OPENAI_KEY GH_TOKEN=${GH_TOKEN} DB_PASSWORD=$(pass show db)", id="references"),
    pytest.param("API_KEY=<your-key> SECRET=xxxx DB_PASSWORD=*** GOOGLE_KEY=...", id="placeholders"),
    pytest.param("env.OPENAI_API_KEY=apiKey", id="attribute"),
])
def test_environment_assignments_that_hold_no_secret_stay(text: str) -> None:
    assert redacted(text) == (text, {})


# Lines of code and documentation from the real sessions (../shared/bench/real-sessions), each of which
# an earlier rule took for a secret or an address; bench/redactions.py lists what is still redacted there.
REAL_LINES = [
    "def _headers(token: str | None) -> dict:",
    "def _stream_download(url: str, dest: pathlib.Path, token: str | None, *, local_only: bool = False) -> pathlib.Path:",
    "    token = _get_token()",
    "        token=token,",
    "exist_ok=True, token=args.hub_token",
    'trigger_token: "yukichar"',
    "    api_key: Option<String>,",
    "    pub OPENAI_API_KEY: Option<&str> = None;",
    'codex-rs/core/tests/client.rs:96:        "OPENAI_API_KEY": openai_api_key,',
    "            let api_key = std::env::var(\"OPENAI_API_KEY\").ok();",
    "    secret = random.randint(low, high)",
    '    jwt_secret: "<YOUR_SECRET>"',
    'env = { "API_KEY" = "value" }',
    'export OPENAI_API_KEY="your-api-key-here"',
    '    export OPENAI_API_KEY="${{ secrets.OPENAI_KEY }}"',
    "  - GOOGLE_API_KEY=your_api_key",
    "    - SerpAPI: `SERPAPI_KEY=…`",
    "  - `export SERPAPI_KEY=...`",
    "+   GH_TOKEN=ghp_xxx",
    '            "https://www.googleapis.com/customsearch/v1?key={}&cx={}&q={}&num={}",',
    'curl -s "https://www.googleapis.com/customsearch/v1?key=$GOOGLE_API_KEY&cx=$GOOGLE_CSE_ID&q={QUERY}&num=5"',
    '+URL="https://www.googleapis.com/customsearch/v1?key=${GOOGLE_API_KEY}&cx=${GOOGLE_CSE_ID}&q=${ENC}&num=${NUM}"',
    '+if [[ -z "${GOOGLE_API_KEY:-}" || -z "${GOOGLE_CSE_ID:-}" ]]; then',
    '+  docker run --rm -v "$PWD:/work" -w /work ocodex:local <args>',
    "  - `docker run --rm -v ocx_ws:/work -v \"$PWD\":/seed alpine sh -c 'cp -a /seed/. /work'`",
    "  - Toggle mount off with `OCODEX_DOCKER_MOUNT_PWD=0`",
    "   CELERY_RESULT_BACKEND=db+postgresql://moonmind:***@localhost:5432/moonmind",
    ' \'{"approver": {"id": "user-123", "role": "SRE"}, "token": "signed-token"}\'',
    "      const apiKey = await clack.password({",
    "        OPENAI_API_KEY: env.OPENAI_API_KEY || 'proxy-handled'",
    "      env.OPENAI_API_KEY = env.ANTHROPIC_API_KEY;",
    "    authConfig.OPENAI_API_KEY = env.OPENAI_API_KEY || existingAuth.OPENAI_API_KEY || 'not-required';",
    '      "apiKey": "..."',
    "src/utils/config.ts:244:      env.apiKey = process.env.CODEMIE_API_KEY;",
    "src/utils/config.ts:1115:    env.CODEMIE_API_KEY = apiKeyValue;",
    "src/agents/core/BaseAgentAdapter.ts:774:      jwtToken: env.CODEMIE_JWT_TOKEN || undefined,",
    "src/agents/core/BaseAgentAdapter.ts:801:      env.CODEMIE_API_KEY = 'proxy-handled';",
    "src/utils/__tests__/security.test.ts:40:      const apiKey = 'sk-ant-' + 'a'.repeat(95);",
    "src/utils/__tests__/security.test.ts:166:        { apiKey: 'REDACTED_API_KEY', name: 'test' },",
    "src/utils/__tests__/security.test.ts:311:        'authorization': 'Bearer REDACTED_TOKEN'",
    "              apiKey: 'ollama',",
    "        litellmApiKey: isLiteLLM ? env.CODEMIE_API_KEY : undefined,",
    "  litellmApiKey: string | undefined;",
    "            apiKey: params.litellmApiKey || 'not-required',",
    " createEnv({ CODEMIE_PROVIDER: 'litellm', CODEMIE_API_KEY: 'test-key' });",
    " createEnv({ CODEMIE_PROVIDER: 'litellm', CODEMIE_API_KEY: 'sk-secret' });",
    "2708543965,9738442225125306109,4 --trace-process-track-uuid=3190709044408466132 --seatbelt-client=186",
    "Co-Authored-By: Claude Opus 4.5 <noreply@anthropic.com>",
    "PrototypeThen = @Promise.prototype.@then, PromiseResolve = @Promise.@resolve.bind(@Promise), ObjectPrototype",
    "pinyinkeytar@ffprobe-installer/darwin-arm64react-native-stylex@microsoft.azure/autorest-core@datadog/mobile",
    '+@app.post("/synthesize")',
]


@pytest.mark.parametrize("text", REAL_LINES)
def test_code_from_real_sessions_is_left_as_it_is(text: str) -> None:
    assert redacted(text) == (text, {})


@pytest.mark.parametrize("text", [
    pytest.param("token = get_token(project.id)", id="call"),
    pytest.param('const csrfToken = document.querySelector("meta[name=csrf-token]")', id="call-on-attribute"),
    pytest.param('api_key = os.environ["OPENAI_API_KEY"]', id="index"),
    pytest.param("token: project.id", id="attribute"),
    pytest.param("secret = self.settings.secret_key", id="attribute-chain"),
    pytest.param("password = db_password", id="named-for-a-secret"),
    pytest.param("token = cached or fetch", id="expression"),
    pytest.param("Authorization: Bearer <token> and token: $TOKEN", id="references"),
    pytest.param('password: "${DB_PASSWORD}" api_key: "{api_key}" secret: "%APP_SECRET%"', id="templates"),
    pytest.param("api_key: xxx and token: 'your-token-here' and password=changeme", id="placeholders"),
    pytest.param('password_file: /run/secrets/db and "token": "./token.txt" and PWD=/tmp/x', id="paths"),
    pytest.param("GET /items?key=title&order=asc", id="url-sort-key"),
    pytest.param('apiKey: "proxy-handled", token: "abc", api_key = "sortable"', id="token-words-not-made"),
])
def test_code_references_and_placeholders_are_not_secrets(text: str) -> None:
    assert redacted(text) == (text, {})


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param('password: str = "hunter2"', 'password: str = "[REDACTED:secret]"', id="annotated"),
    pytest.param("token: Optional[str] = 'tk-9f8e7d6c'", "token: Optional[str] = '[REDACTED:secret]'",
                 id="annotated-optional"),
    pytest.param("db:\n  password: letmein\n", "db:\n  password: [REDACTED:secret]\n", id="yaml-word"),
    pytest.param('"secret": "correct horse battery"', '"secret": "[REDACTED:secret]"', id="json-phrase"),
    pytest.param("Server=db;Uid=app;Password=Sommer2024!;", "Server=db;Uid=app;Password=[REDACTED:secret];",
                 id="connection-string"),
    pytest.param("mount -o username=bob,password=hunter,uid=1000",
                 "mount -o username=bob,password=[REDACTED:secret],uid=1000", id="mount-options"),
    pytest.param("api_key = 'AbCdEfGhIjKlMnOpQr'", "api_key = '[REDACTED:secret]'", id="made-without-digits"),
    pytest.param("amqp://guest:guest@localhost:5672//", "amqp://guest:[REDACTED:secret]@localhost:5672//",
                 id="url-password"),
])
def test_secrets_next_to_code_are_still_found(text: str, expected: str) -> None:
    assert redacted(text) == (expected, {"secret": 1})


def test_a_mapping_value_under_a_secret_name_is_a_secret_unless_a_stand_in() -> None:
    # Structured data holds literals, never code: any value is one but a placeholder or a reference.
    obj = {"apiKey": "ollama", "token": "signed-token", "password": "hunter", "db_token": "$DB_TOKEN",
           "secret": "/run/secrets/app"}
    out, counts = default_redactor().redact_obj(obj)
    assert out == {**obj, "apiKey": "[REDACTED:secret]", "password": "[REDACTED:secret]"}
    assert counts == Counter({"secret": 2})
