"""When two values of a fact key are the same value, and how sure a card is of its value."""

from __future__ import annotations

import re
from collections.abc import Iterable

from memdream.dream.model import WEIGHT, Piece, normalize_value
from memdream.memory.card import INFERRED, VERIFIED

_DIGITS = re.compile(r"\d+")


def same_value(first: str, second: str, threshold: float) -> bool:
    """Equal after normalization, or near-identical wording with exactly the same numbers
    (so that 'us-east-1' and 'us-east-2', or versions 15 and 16, never count as one value)."""
    left, right = normalize_value(first), normalize_value(second)
    if left == right:
        return True
    if _DIGITS.findall(left) != _DIGITS.findall(right):
        return False
    from rapidfuzz import fuzz

    return bool(fuzz.ratio(left, right) >= threshold)


def _combined(pieces: Iterable[Piece]) -> float:
    """Independent pieces combine like independent chances: 1 − Π(1 − weight)."""
    remaining = 1.0
    seen: set[str] = set()
    for piece in pieces:
        if piece.ref not in seen:
            seen.add(piece.ref)
            remaining *= 1.0 - WEIGHT.get(piece.kind, 0.3)
    return 1.0 - remaining


def confidence(supports: list[Piece], against: list[Piece]) -> float:
    """Support from every distinct piece, halved at most by what contradicts it."""
    return round(_combined(supports) * (1.0 - 0.5 * _combined(against)), 2)


def status_of(supports: list[Piece], against: list[Piece], min_evidence: int, threshold: float) -> str:
    """``verified`` needs ``min_evidence`` independent supporting pieces, one of them strong, and
    enough confidence; anything less is ``inferred``."""
    independent = {piece.ref for piece in supports}
    strong = any(piece.strong for piece in supports)
    if len(independent) >= min_evidence and strong and confidence(supports, against) >= threshold:
        return VERIFIED
    return INFERRED
