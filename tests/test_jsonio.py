"""jsonio reads and writes JSON as the standard library does, at orjson's speed, and refuses what is not JSON."""

from __future__ import annotations

import json
import math
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memdream import jsonio


def _beyond_64_bits(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -(2**63) <= value < 2**64
    if isinstance(value, list):
        return any(_beyond_64_bits(item) for item in value)
    if isinstance(value, dict):
        return any(_beyond_64_bits(item) for item in value.values())
    return False


EDGE_INTS = st.sampled_from([
    0, -1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), 10**19 - 1, 10**19, -(10**19),
    10**20, -(10**20), 10**25 + 7, -(10**25) - 7, 2**200, -(2**200),
])
INTS = st.one_of(st.integers(), st.integers(-(10**40), 10**40), EDGE_INTS)
TEXT = st.text(max_size=30)  # any code point but surrogates: control characters, non-ASCII, astral
SCALARS = st.one_of(st.none(), st.booleans(), INTS, TEXT)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
VALUES_WITH_FLOATS = st.recursive(
    st.one_of(SCALARS, FINITE),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)


def exactly(left: Any, right: Any, ordered: bool = True) -> bool:
    """Equal with the same types all the way down (1 is not 1.0 nor True; -0.0 is not 0.0);
    ``ordered``: dict keys in the same order too."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float):
        return left == right and math.copysign(1.0, left) == math.copysign(1.0, right)
    if isinstance(left, list):
        return len(left) == len(right) and all(exactly(a, b, ordered) for a, b in zip(left, right))
    if isinstance(left, dict):
        same_keys = list(left) == list(right) if ordered else left.keys() == right.keys()
        return same_keys and all(exactly(left[key], right[key], ordered) for key in left)
    return bool(left == right)


def stdlib_canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def representable(value: Any) -> bool:
    """What jsonio promises to read as the standard library does: no NaN or infinity, no lone surrogate."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return not any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, list):
        return all(representable(item) for item in value)
    if isinstance(value, dict):
        return all(representable(key) and representable(item) for key, item in value.items())
    return True


# -- values without floats: exact round trip, canonical form of the standard library --------------


@given(VALUES, st.booleans())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@example([2**64, -(2**64), 10**25, {"n": -(10**30)}], True)
@example({"\u00e9": "\x00\x1f\x7f\u2028\U0001f600", "e": [None, True, False, 0]}, False)
def test_loads_reads_what_the_stdlib_wrote(value: Any, ensure_ascii: bool) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii)
    assert exactly(jsonio.loads(text), value)
    assert exactly(jsonio.loads(text.encode("utf-8")), value)


@given(VALUES)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@example({"b": [2**70], "a": 1, "\u00e9": "x", "E": -(2**64)})
@example(["\x00\t\n\"\\/", "\u2028\U0001f600"])
def test_dumps_canonical_is_the_stdlib_canonical_form(value: Any) -> None:
    written = jsonio.dumps_canonical(value)
    assert written == stdlib_canonical(value)
    assert exactly(jsonio.loads(written), value, ordered=False)


# -- floats -------------------------------------------------------------------------------------

NUMBER_LITERALS = st.from_regex(r"\A-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,4})?\Z")


@given(FINITE)
@example(-0.0)
@example(5e-324)
@example(1.7976931348623157e308)
@example(1e-7)
@example(0.1)
def test_floats_read_as_the_stdlib_reads_them(number: float) -> None:
    for text in (json.dumps(number), repr(number), f"{number:.17e}"):
        assert exactly(jsonio.loads(text), json.loads(text))


@given(NUMBER_LITERALS)
@settings(max_examples=400)
@example("1e308")
@example("1.7976931348623158e308")  # still rounds to the largest float
@example("1.8e308")
@example("12345678901234567890.5")
@example("99999999999999999999e1")
@example("1E-400")
def test_number_literals_read_as_the_stdlib_or_refused_when_not_finite(literal: str) -> None:
    expected = json.loads(literal)
    if isinstance(expected, float) and not math.isfinite(expected):
        with pytest.raises(json.JSONDecodeError):
            jsonio.loads(literal)
    else:
        assert exactly(jsonio.loads(literal), expected)
        assert exactly(jsonio.loads(f"[{literal}]".encode()), [expected])


@given(VALUES_WITH_FLOATS)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@example([0.1, -0.0, 1e16, 1e-7, 5e-324, 2**64, {"x": 1.5}])
def test_dumps_canonical_with_floats_reads_back_the_same_value(value: Any) -> None:
    written = jsonio.dumps_canonical(value)
    assert exactly(jsonio.loads(written), value, ordered=False)
    assert exactly(json.loads(written), value, ordered=False)  # and it is plain JSON to anyone else


# -- what is not JSON: refused with JSONDecodeError ---------------------------------------------

NOT_JSON = [
    "NaN", "Infinity", "-Infinity", "[1, NaN]", '{"a": Infinity}', "1e400", "-1e400", "[1.8e308]",
    '"\\ud800"', '"\\udfff"', '["ok", "\\udc00"]', '"\\ud800\\u0041"', '"\\ude00\\ud83d"', '{"\\ud800": 1}',
]


@pytest.mark.parametrize("text", NOT_JSON)
@pytest.mark.parametrize("long_digits", [False, True], ids=["orjson", "stdlib-path"])
def test_refuses_what_the_stdlib_alone_would_accept(text: str, long_digits: bool) -> None:
    json.loads(text)  # the standard library reads every one of these
    if long_digits:  # a 25-digit integer in the text sends it down the standard library's path
        text = f"[{text}, 1234567890123456789012345]"
    for data in (text, text.encode("utf-8")):
        with pytest.raises(json.JSONDecodeError):
            jsonio.loads(data)


@pytest.mark.parametrize("text", ['[1234567890123456789012345, "\\ud800"]',
                                  '{"n": -99999999999999999999, "text": "\\udc00"}'])
def test_refuses_a_lone_surrogate_after_a_long_integer(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads(text)


def test_a_valid_surrogate_pair_is_one_character() -> None:
    assert jsonio.loads('"\\ud83d\\ude00"') == "\U0001f600"
    assert jsonio.loads(b'["\\ud83d\\ude00", 12345678901234567890123]') == ["\U0001f600", 12345678901234567890123]


@pytest.mark.parametrize("data", [
    b"\xff", b'"\xc3"', b'"\xc0\xaf"', b'"\xf4\x90\x80\x80"', b'["ok", "\xe2\x82"]', b'{"a": "\xe9t\xe9"}',
    b'[12345678901234567890123, "\xff"]',
], ids=["ff", "cut-2-byte", "overlong", "beyond-10ffff", "cut-3-byte", "latin-1", "stdlib-path"])
def test_refuses_bytes_that_are_not_utf8(data: bytes) -> None:
    with pytest.raises(ValueError):  # the standard library: UnicodeDecodeError
        json.loads(data)
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads(data)


@pytest.mark.parametrize("data", [b'"\xed\xa0\x80"', b'["\xed\xb0\x80", 12345678901234567890123]'])
def test_refuses_a_utf8_encoded_surrogate(data: bytes) -> None:
    # json.loads decodes bytes with "surrogatepass" and returns the lone surrogate; jsonio holds
    # to the docstring: a lone surrogate cannot be stored as UTF-8.
    assert not representable(json.loads(data))
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads(data)


def test_refuses_a_str_holding_a_lone_surrogate_character() -> None:
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads('["\ud800"]')


@pytest.mark.parametrize("text", ["\ufeff{}", "\ufeff[1]", "\ufeff[12345678901234567890123]"])
def test_a_byte_order_mark_is_refused(text: str) -> None:
    # The standard library refuses a BOM in a str; jsonio also refuses one in bytes (which
    # json.loads would decode as utf-8-sig): JSON texts carry no BOM, ingest strips its own.
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    for data in (text, text.encode("utf-8")):
        with pytest.raises(json.JSONDecodeError):
            jsonio.loads(data)


# -- big integers, duplicate keys, error messages -------------------------------------------------


@pytest.mark.parametrize("digits", [
    "1234567890123456789012345", "-1234567890123456789012345", "18446744073709551616", "99999999999999999999",
])
def test_long_integers_stay_integers_with_all_their_digits(digits: str) -> None:
    for data in (digits, digits.encode(), f'{{"n": {digits}, "s": "x"}}'):
        value = jsonio.loads(data)
        number = value["n"] if isinstance(value, dict) else value
        assert type(number) is int and str(number) == digits


@pytest.mark.parametrize("digits", ["-9223372036854775809", "-9999999999999999999"])
def test_negative_nineteen_digit_integers_stay_exact(digits: str) -> None:
    value = jsonio.loads(digits)
    assert type(value) is int and str(value) == digits


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": 2, "a": 3}',
    '{"a": {"x": 1}, "a": {"y": 2}}',
    '{"a": 1, "a": 2, "n": 12345678901234567890123}',
    '[{"k": "first", "k": "last"}]',
])
def test_duplicate_keys_last_wins_like_the_stdlib(text: str) -> None:
    assert exactly(jsonio.loads(text), json.loads(text))


# The messages of what jsonio refuses and the standard library would read.
OUR_REFUSAL = re.compile(r"is not valid JSON|^number out of range|lone surrogate")
JSONISH = st.text(alphabet='[]{}",:0123456789.eE+- \t\ntrufalsnNIiy\\/ubd\x01\u00e9', max_size=14)


@st.composite
def damaged_json(draw: st.DrawFn) -> str:
    """Valid JSON cut short, or with one character put in or taken out; or JSON-looking noise."""
    if draw(st.booleans()):
        return draw(JSONISH)
    text = json.dumps(draw(VALUES_WITH_FLOATS), ensure_ascii=draw(st.booleans()))
    at = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["cut", "insert", "delete"]))
    if how == "cut":
        return text[:at]
    if how == "insert":
        return text[:at] + draw(st.sampled_from(list('[]{}",:0-.e\\ x\x01'))) + text[at:]
    return text[:at] + text[at + 1:]


@given(damaged_json())
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@example("[1,2")
@example('{"a" 1}')
@example('"\u00e9\u00e9\x01"')
@example('[12345678901234567890123, ]')
def test_errors_carry_the_stdlib_message_and_position(text: str) -> None:
    try:
        expected = json.loads(text)
    except json.JSONDecodeError as error:
        for data in (text, text.encode("utf-8")):
            with pytest.raises(json.JSONDecodeError) as raised:
                jsonio.loads(data)
            if OUR_REFUSAL.search(raised.value.msg):
                continue  # a text with two problems ("1E310:"): ours is found first
            assert (raised.value.msg, raised.value.pos, raised.value.lineno, raised.value.colno) == (
                error.msg, error.pos, error.lineno, error.colno)
        return
    if representable(expected):
        assert exactly(jsonio.loads(text), expected)
    elif not _beyond_64_bits(expected):  # else test_refuses_a_lone_surrogate_after_a_long_integer
        with pytest.raises(json.JSONDecodeError):
            jsonio.loads(text)
