"""Where a rule is worth trying: the *anchors* every rule names, found in the *shape* of a text.

Speed matters (ingest budget: tens of thousands of events per second), and a full regex scan
costs several microseconds per rule. So the rule regexes never scan a whole text: every built-in
rule names anchors, byte strings that any match must contain, searched in a "shape" of the text
(ASCII-lowercased, every digit turned into "9", one byte per character so offsets agree). One
pass finds the anchors, each rule's regex is then only tried with ``match`` at the few offsets
where one of its anchors occurs, and validators (Luhn, digit counts) only ever see those
candidates. A text with no anchor costs one translate and one pass over its shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ahocorasick_rs import BytesAhoCorasick

Validator = Callable[["re.Match[str]"], bool]
# Where the match starts, given the text and the offset at which an anchor was found.
Back = Callable[[str, int], int]


@dataclass(frozen=True)
class Rule:
    """One rule: the kind of secret it finds, its regex, where to try it, which part of a match is
    the secret, and a validator that may still reject a match."""

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
        """The secret's span in a match: its first value group that took part, else the whole match."""
        for group in self.value_groups:
            if match.start(group) != -1:
                return match.span(group)
        return match.span()


# A phone number holds at least this many digits (the phone rule checks it), card and id numbers more:
# in a text with fewer digits no rule anchored on digits can match.
MIN_PHONE_DIGITS = 7

# Lowercase ASCII letters and map digits to "9": one table, one C-level pass.
_SHAPE_TABLE = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", b"abcdefghijklmnopqrstuvwxyz9999999999"
)


def shape_of(data: bytes) -> bytes:
    """The shape of UTF-8 or ASCII bytes (multi-byte characters are left as they are: no anchor
    holds such bytes, so the anchors found are the same)."""
    return data.translate(_SHAPE_TABLE)


def shape_of_text(text: str) -> bytes:
    """The shape of ``text``, one byte per character."""
    # "replace" turns each non-ASCII character into one "?", so byte offsets equal str offsets.
    return text.encode("ascii", "replace").translate(_SHAPE_TABLE)


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


class AnchorTables:
    """The scanners: one always, one for digit anchors only when a text has enough digits."""

    def __init__(self, rules: Sequence[Rule]) -> None:
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
        if shape.count(b"9") >= MIN_PHONE_DIGITS:
            self._digits.offsets(text, shape, tries)
        return tries
