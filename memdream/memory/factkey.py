"""The fact key: ``(subject, attribute)``, the single source of truth of a fact. One definition,
used by dream (which card a piece of evidence is about), recall (one item per key) and lint (at most
one active card per key): "Export Bucket" and "export_bucket" are one key everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SEPARATORS = re.compile(r"[\s_]+")


@lru_cache(maxsize=1 << 16)  # dream keys every card several times a run: the names repeat
def normalize_name(text: str) -> str:
    """Subjects and attributes compare case-insensitively with spaces/underscores as hyphens."""
    return _SEPARATORS.sub("-", text.strip().lower()).strip("-")


def normalize_value(text: str) -> str:
    """Values that differ only in case, spacing or trailing punctuation are the same value."""
    return " ".join(text.strip().lower().split()).rstrip(" ./")


@dataclass(frozen=True, order=True)
class FactKey:
    subject: str
    attribute: str

    @classmethod
    def of(cls, subject: str, attribute: str) -> FactKey:
        return _key(subject, attribute)

    def __str__(self) -> str:
        return f"({self.subject}, {self.attribute})"


@lru_cache(maxsize=1 << 16)  # a log names the same subjects and attributes thousands of times
def _key(subject: str, attribute: str) -> FactKey:
    """The key of these names: one frozen object per pair, made once (making one costs more than
    looking it up)."""
    return FactKey(normalize_name(subject), normalize_name(attribute))
