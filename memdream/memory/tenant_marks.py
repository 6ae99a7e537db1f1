"""Whose provenance a memory holds: the tenant mark on every audit line a dream writes.

Card ids, evidence references and raw events carry no tenant, so a memory's files alone cannot say that
a card or an event is another tenant's. The audit files can: every line a dream writes ends with the
tenant of the memory it ran in (``"tenant": NAME``, memdream.yaml's ``tenant``). A line marked with
another tenant is that tenant's provenance (an audit file copied in, or another tenant's history merged
into this repository), and what only such lines name is that tenant's: a card they made or held evidence
for, an event they cite. ``lint`` and ``audit --verify`` report them. Marks are written once with their
run and never rewritten, so editing memdream.yaml to claim another tenant's name (a folder renamed into
its place) shows too: the memory's own lines then carry the old name.

A memory of no tenant (``tenant: default``, the memory of one user) marks nothing: its files stay as they
were, and it can become a tenant later by naming one in memdream.yaml. Unmarked lines (those, and lines
written before marks existed) are no tenant's: never reported, and counted as this memory's when deciding
whether a card or an event is only another tenant's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdream.memory.tenants import DEFAULT_TENANT, NAME_PATTERN

TENANT_KEY = "tenant"
_MARK = f'"{TENANT_KEY}": "'  # as json.dumps writes the key (a quote inside a string is escaped: \")
# Audit-line fields that name cards (dream's operations; feedback targets), as review/provenance reads them.
CARD_FIELDS = ("card", "target", "cards")


def marked(line: dict[str, Any], tenant: str) -> dict[str, Any]:
    """``line`` with the tenant mark last (readers match ``{"run": ..., "op": ...`` at its start); a line
    of a memory of no tenant as it is."""
    return line if tenant == DEFAULT_TENANT else {**line, TENANT_KEY: tenant}


def shown(tenant: str) -> str:
    """A tenant's name in a message: as it is when it is a tenant name, quoted when a hand-written mark
    holds anything else (a line break must not forge a line of lint's output)."""
    return tenant if NAME_PATTERN.fullmatch(tenant) else repr(tenant)


@dataclass(frozen=True)
class ForeignLine:
    """An audit line marked with another tenant."""

    path: Path
    line: int
    run: str
    tenant: str


@dataclass
class TenantMarks:
    """What a memory's audit files say is another tenant's, for a memory of tenant ``tenant``."""

    tenant: str
    files: list[tuple[ForeignLine, int]] = field(default_factory=list)  # each file's first such line, count
    cards: dict[str, ForeignLine] = field(default_factory=dict)  # card id -> the first line naming it
    refs: dict[str, ForeignLine] = field(default_factory=dict)  # evidence ref -> the first line citing it

    @property
    def clean(self) -> bool:
        return not self.files


def read_marks(tenant: str, texts: Iterable[tuple[Path, str]]) -> TenantMarks:
    """The marks of the audit ``texts`` (path, text) of a memory of ``tenant``.

    A memory that holds only its own marks costs two substring counts per file; lines are parsed only
    when another tenant's mark is there."""
    texts = sorted(texts)
    marks = TenantMarks(tenant)
    own_mark = f'"{TENANT_KEY}": {json.dumps(tenant)}'
    if all(text.count(_MARK) == text.count(own_mark) for _, text in texts):
        return marks
    own_cards: set[str] = set()
    own_refs: set[str] = set()
    for path, text in texts:
        foreign = 0
        for number, data in _lines(text):
            mark = data.get(TENANT_KEY)
            if not isinstance(mark, str) or mark == tenant:
                own_cards.update(_card_names(data))
                own_refs.update(_refs(data))
                continue
            line = ForeignLine(path, number, str(data.get("run", path.stem)), mark)
            foreign += 1
            if foreign == 1:
                marks.files.append((line, 0))
            for name in _card_names(data):
                marks.cards.setdefault(name, line)
            for ref in _refs(data):
                marks.refs.setdefault(ref, line)
        if foreign:
            marks.files[-1] = (marks.files[-1][0], foreign)
    marks.cards = {name: line for name, line in marks.cards.items() if name not in own_cards}
    marks.refs = {ref: line for ref, line in marks.refs.items() if ref not in own_refs}
    return marks


def _lines(text: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of the lines that parse as JSON objects (lint reports the others)."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            yield number, data


def _card_names(data: dict[str, Any]) -> Iterator[str]:
    for name in CARD_FIELDS:
        value = data.get(name)
        if isinstance(value, str):
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, str))


def _refs(data: dict[str, Any]) -> Iterator[str]:
    """The evidence an audit line cites: an operation's ``evidence`` refs, an evidence line's ``added``."""
    evidence = data.get("evidence")
    if isinstance(evidence, list):
        yield from (item for item in evidence if isinstance(item, str))
    added = data.get("added")
    if isinstance(added, list):
        yield from (item["ref"] for item in added if isinstance(item, dict) and isinstance(item.get("ref"), str))
