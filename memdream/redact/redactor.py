"""The Redactor: finds secrets with the rules and replaces them with placeholders, in a text or in a
JSON-like value (an event, a fact: a key that names a secret makes its string value one).

Placeholders never match a rule, and :meth:`Redactor.redact` repeats until nothing is
found, so redacting twice gives the same text as redacting once.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from memdream.redact.placeholders import PLACEHOLDER_RE, placeholder
from memdream.redact.rules import AUTH_KEY_NAME, AUTH_VALUE, BUILTIN_RULES, compile_extra, names_secret
from memdream.redact.scanner import AnchorTables, Rule, shape_of_text
from memdream.redact.values import is_secret_value

if TYPE_CHECKING:
    from memdream.memory.settings import Settings

# Redaction repeats on its own output until nothing is found; the process provably ends
# (every pass turns non-placeholder text into placeholders) but a bound keeps ingest safe.
_MAX_PASSES = 32


@dataclass(frozen=True)
class Finding:
    """One secret: its kind and its span ``[start, end)`` in the text given to :meth:`Redactor.find`."""

    kind: str
    start: int
    end: int


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
        extras = tuple(compile_extra(index, spec) for index, spec in enumerate(extra_patterns))
        # User patterns come first: on an exact tie their name is the more specific one.
        self._extras: tuple[Rule, ...] = extras
        self._rules: tuple[Rule, ...] = extras + BUILTIN_RULES
        self._tables = AnchorTables(self._rules)
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
        shape = shape_of_text(text)
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
    def _add(found: list[tuple[int, int, int, str]], rule: Rule, priority: int, match: re.Match[str]) -> bool:
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
                        names_secret(key) or AUTH_KEY_NAME.fullmatch(key)):
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
        if names_secret(key) and is_secret_value(value) and not self._is_allowed(value):
            counts["secret"] += 1
            return placeholder("secret")
        if AUTH_KEY_NAME.fullmatch(key):
            return self._redact_authorization(value, counts)
        return self._redact_value(value, counts)

    def _redact_authorization(self, value: str, counts: Counter[str]) -> str:
        """``{"Authorization": "Bearer x"}``: keep the scheme, replace the credentials."""
        match = AUTH_VALUE.fullmatch(value)
        credentials = match.group("v") if match else value
        if not is_secret_value(credentials) or self._is_allowed(value):
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
    return fact_value if names_secret(name) and is_secret_value(fact_value) else None


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
    holes = [match.span() for match in PLACEHOLDER_RE.finditer(text)]
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
