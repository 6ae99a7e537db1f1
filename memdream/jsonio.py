"""JSON on the hot paths: orjson, held to the standard library's meaning of the text.

Ingest reads and writes every event once (target: 50,000 events/s on two cores); the standard
library spends ~6 us parsing and ~6 us writing a typical event where orjson spends ~1 us and
~0.5 us. Where the two libraries disagree, this module decides:

- integers outside [-2**63, 2**64): orjson reads them as floats, losing digits; a text with a
  run of 20 digits, or of 19 after a minus sign, is parsed by the standard library, and such
  values are written by it;
- ``NaN``, ``Infinity`` and numbers too large for a float are not JSON: both readers here
  refuse them (the standard library alone would accept them);
- a ``\\ud800`` escape without its pair cannot be stored as UTF-8: refused too;
- limits, so that hostile input is a bad line and not a crash: arrays and objects nested more than
  :data:`MAX_DEPTH` deep (the parsers would recurse until Python's stack limit) and integers of more
  than :data:`MAX_INT_DIGITS` digits (Python refuses to convert them) are refused with
  :class:`LimitError`, before any parser runs.

Errors are :class:`json.JSONDecodeError` with the standard library's message and position,
so callers report bad lines the same way whichever parser ran.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# Digits of a line turned into "9", so that substring tests find runs of digits.
_NINES = bytes.maketrans(b"012345678", b"999999999")
LONG_DIGITS = b"9" * 20  # 2**64 and more
LONG_NEGATIVE = b"-" + b"9" * 19  # below -2**63 (and some above: those merely take the slow path)


_RUN_19 = b"9" * 19


def needs_stdlib(nines: bytes) -> bool:
    """Whether a text whose digits are all "9" (:data:`_NINES`, or the redaction shape) may hold
    an integer that orjson would read as a float."""
    # find(), not `in`: for bytes, `in` first tries its operand as an integer and raises and
    # clears a TypeError every time (a tenth of the per-line cost in ingest's workers).
    if nines.find(_RUN_19) < 0:
        return False
    return nines.find(LONG_DIGITS) >= 0 or nines.find(LONG_NEGATIVE) >= 0
_SORTED = orjson.OPT_SORT_KEYS

MAX_DEPTH = 64  # levels of arrays and objects; events nest a few, tool arguments a few more
MAX_INT_DIGITS = 4300  # Python's own default limit for int <-> str (sys.get_int_max_str_digits)


class LimitError(json.JSONDecodeError):
    """JSON beyond memdream's limits (nesting depth, integer length): refused like malformed JSON."""


# A JSON string (its escapes included): brackets inside strings do not nest.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(byte for byte in range(256) if byte not in b"[]{}")


def too_deep(raw: bytes) -> bool:
    """Whether the JSON text ``raw`` nests arrays and objects more than :data:`MAX_DEPTH` deep.

    A text with fewer brackets than that cannot (two counts, at C speed: the common case);
    otherwise the brackets outside strings are peeled off one level at a time.
    """
    if raw.count(b"{") + raw.count(b"[") <= MAX_DEPTH:
        return False
    brackets = _STRING.sub(b"", raw).translate(_SQUARE, _NOT_BRACKET)
    depth = 0
    while brackets and depth <= MAX_DEPTH:
        inner = brackets.replace(b"[]", b"")  # the innermost level (replace does not rescan its result)
        if len(inner) == len(brackets):  # unbalanced: what stays open is nested on top
            return depth + len(brackets) - len(brackets.rstrip(b"[")) > MAX_DEPTH
        brackets, depth = inner, depth + 1
    return depth > MAX_DEPTH


def _check_limits(raw: bytes) -> None:
    if too_deep(raw):
        raise LimitError(f"nested more than {MAX_DEPTH} levels deep", "", 0)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise LimitError(f"integer with {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})", "", 0)
    return int(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


_STRICT = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite, parse_int=_bounded_int)


def loads(data: bytes | str) -> Any:
    """Parse one JSON text; raises :class:`json.JSONDecodeError` when it is not JSON, and
    :class:`LimitError` (one) when it is beyond memdream's limits."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    _check_limits(raw)
    if needs_stdlib(raw.translate(_NINES)):
        return _stdlib_loads(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson's messages differ; the standard library explains the problem (or shows it was
        # one of the cases above that orjson refuses on its own).
        return _stdlib_loads(raw)


def _stdlib_loads(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise json.JSONDecodeError("not UTF-8 text", raw.decode("utf-8", "replace"), error.start) from None
    try:
        value = _STRICT.decode(text)
    except ValueError as error:
        if isinstance(error, json.JSONDecodeError):
            raise
        raise json.JSONDecodeError(str(error), text, 0) from None
    except RecursionError:  # not expected after the depth check: a bad line all the same
        raise LimitError("nested too deeply", "", 0) from None
    try:  # lone surrogates anywhere in the value (this path is rare: the standard library's speed is fine)
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise json.JSONDecodeError("a \\u escape names a lone surrogate", text, 0) from None
    return value


def dumps_canonical(value: Any) -> bytes:
    """The canonical form: keys sorted at every level, no whitespace, UTF-8, numbers as short as
    they round-trip. Integers beyond 64 bits are written by the standard library (same form)."""
    try:
        return orjson.dumps(value, option=_SORTED)
    except orjson.JSONEncodeError:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode("utf-8")
