"""Refuse user regular expressions that can backtrack catastrophically.

memdream.yaml's ``redaction.extra_patterns`` come from whoever wrote the file, which in CI may
be a pull request. Python's ``re`` backtracks, so ``(a+)+`` against ``aaaa…b`` takes
exponential time. A structural check instead of a time limit: a quantified group (``*``,
``+``, ``{m,}``, ``{m,n}`` with n > 1) must not contain another quantifier (``?`` included: it
is how ``(x|x?)+`` overlaps). It rejects a few harmless patterns such as ``(ab?c)+``; those can
always be rewritten, and it never needs a thread or a signal.
"""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import re._constants as _sre_constants
    import re._parser as _sre_parse
else:  # Python 3.10 names them as top-level modules
    import sre_constants as _sre_constants
    import sre_parse as _sre_parse

_REPEATS = {_sre_constants.MAX_REPEAT, _sre_constants.MIN_REPEAT}
# Possessive quantifiers and atomic groups never backtrack into what they matched.
_NO_BACKTRACK = {getattr(_sre_constants, name) for name in ("POSSESSIVE_REPEAT", "ATOMIC_GROUP")
                 if hasattr(_sre_constants, name)}
_ALL_REPEATS = _REPEATS | {getattr(_sre_constants, "POSSESSIVE_REPEAT", _sre_constants.MAX_REPEAT)}

PROBLEM = ("can backtrack catastrophically (a quantified group contains another quantifier, as in "
           "(a+)+ or (x|x?)+): rewrite it without nested quantifiers")


def catastrophic(pattern: str) -> bool:
    """Whether ``pattern`` repeats a group that itself holds a quantifier (False if it does not
    compile: the redactor reports that)."""
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:  # re.error, RecursionError on absurd nesting
        return False
    return _has_nested_repeat(list(parsed), inside_repeat=False)  # type: ignore[call-overload]


def _has_nested_repeat(items: list[tuple[Any, Any]], inside_repeat: bool) -> bool:
    for op, arg in items:
        if op in _NO_BACKTRACK:
            continue
        if op in _ALL_REPEATS:
            low, high, body = arg
            if inside_repeat:
                return True
            repeats_many = high is _sre_constants.MAXREPEAT or high > 1
            if _has_nested_repeat(list(body), inside_repeat=repeats_many):
                return True
            continue
        if any(_has_nested_repeat(list(sub), inside_repeat) for sub in _subpatterns(op, arg)):
            return True
    return False


def _subpatterns(op: Any, arg: Any) -> list[Any]:
    """The nested sub-patterns of one parsed item (groups, alternatives, look-arounds)."""
    if op is _sre_constants.SUBPATTERN:
        return [arg[-1]]
    if op is _sre_constants.BRANCH:
        return list(arg[1])
    if op in (_sre_constants.ASSERT, _sre_constants.ASSERT_NOT):
        return [arg[1]]
    if op is _sre_constants.GROUPREF_EXISTS:
        return [branch for branch in arg[1:] if branch is not None]
    return []
