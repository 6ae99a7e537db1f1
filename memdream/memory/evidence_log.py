"""The full evidence of cards, held by the audit files.

A card lists only its newest few pieces of evidence (``card.INLINE_EVIDENCE``) and the count of
all of them (``evidence_count``), so that an active card stays a few hundred bytes however often
its fact is re-read. The rest is not lost: every dream run that gives a card evidence beyond
what the card shows appends one line per card to its audit file::

    {"run": "<run-id>", "op": "evidence", "card": "<card id>", "added": [<evidence>, ...]}

A card's full evidence is the union of those lines and its inline list. Audit files are
tracked by git and never rewritten (a rollback removes a run's file together with the cards it
wrote), so the union is exact for every commit. Reading every audit file on every dream would
cost what the memory's history costs, so the union is cached under ``.memdream/cache`` and only
audit files that are new since the cache was written are read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memdream.memory import cachefile
from memdream.memory.card import Card, Evidence

EVIDENCE_OP = "evidence"
CACHE_FILE = "evidence-log.pickle"
CACHE_VERSION = 1
_MARK = b'"op": "evidence"'  # json.dumps' default separators: a cheap filter before parsing a line
# An audit line's start as dream writes it (json.dumps writes "run" then "op" first): most lines give their
# op without being parsed (an evidence line of a first dream can hold thousands of references).
AUDIT_OP = re.compile(r'\{"run": "[^"\\]*", "op": "([a-z]+)"')

Stamp = tuple[int, int]


class EvidenceLog:
    """What the audit files hold, per card id."""

    def __init__(self, held: dict[str, list[Evidence]], seen: dict[str, Stamp] | None = None) -> None:
        self.held = held
        self.seen = seen  # the audit files (name -> stamp) ``held`` was read from, when loaded

    @classmethod
    def load(cls, audit_dir: Path, cache_dir: Path | None = None) -> EvidenceLog:
        """The evidence lines of every audit file; ``cache_dir``: where to keep the parsed union."""
        files = _audit_files(audit_dir)
        cached = _read_cache(cache_dir / CACHE_FILE) if cache_dir is not None else None
        seen: dict[str, Stamp] = {}
        held: dict[str, list[Evidence]] = {}
        if cached is not None and all(files.get(name) == stamp for name, stamp in cached[0].items()):
            seen, held = dict(cached[0]), cached[1]
        fresh = [name for name in sorted(files) if name not in seen]
        for name in fresh:
            for card_id, added in _evidence_lines(audit_dir / name):
                held.setdefault(card_id, []).extend(added)
            seen[name] = files[name]
        if fresh and cache_dir is not None:
            _write_cache(cache_dir / CACHE_FILE, (seen, held))
        return cls(held, seen)

    def remember(self, audit_dir: Path, cache_dir: Path, name: str) -> None:
        """Fold in the audit file ``name`` that the caller has just written, and keep the cache so: the
        dream that writes evidence lines leaves the cache warm, as it leaves the card cache, and the
        next load reads no file (a first dream's audit file holds thousands of lines). Only for a
        loaded log whose files are as it read them (else the next load sorts it out)."""
        files = _audit_files(audit_dir)
        if self.seen is None or name in self.seen or name not in files:
            return
        if any(files.get(other) != stamp for other, stamp in self.seen.items()):
            return
        for card_id, added in _evidence_lines(audit_dir / name):
            self.held.setdefault(card_id, []).extend(added)
        self.seen[name] = files[name]
        _write_cache(cache_dir / CACHE_FILE, (self.seen, self.held))

    def refs(self, card_id: str) -> list[Evidence]:
        """What the audit files hold for ``card_id`` (maybe nothing: a small card holds all inline)."""
        return self.held.get(card_id, [])

    def of(self, card: Card) -> list[Evidence]:
        """The card's full evidence, in time order: audit-held entries and inline ones, each once."""
        return union(self.refs(card.id), card.evidence)


def union(*lists: Iterable[Evidence]) -> list[Evidence]:
    """Evidence entries, one per ref (the first list's wins), in time order."""
    items: dict[str, Evidence] = {}
    for entries in lists:
        for item in entries:
            items.setdefault(item.ref, item)
    return sorted(items.values(), key=lambda e: (e.ts or "", e.ref))


def evidence_line(run_id: str, card_id: str, added: list[Evidence]) -> dict[str, Any]:
    return {"run": run_id, "op": EVIDENCE_OP, "card": card_id, "added": [item.to_dict() for item in added]}


def _audit_files(audit_dir: Path) -> dict[str, Stamp]:
    try:
        entries = list(os.scandir(audit_dir))
    except OSError:
        return {}
    stamps: dict[str, Stamp] = {}
    for entry in entries:
        if entry.name.endswith(".jsonl") and entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            stamps[entry.name] = (info.st_size, info.st_mtime_ns)
    return stamps


def _evidence_lines(path: Path) -> Iterator[tuple[str, list[Evidence]]]:
    """(card id, evidence) of each well-formed evidence line; lint reports the malformed ones."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    if _MARK not in data:
        return
    for raw in data.splitlines():
        if _MARK not in raw:
            continue
        try:
            line = json.loads(raw)
            card_id, added = line["card"], line["added"]
            if line["op"] != EVIDENCE_OP or not isinstance(card_id, str) or not isinstance(added, list):
                continue
            yield card_id, [Evidence.from_dict(item) for item in added if _well_formed(item)]
        except (ValueError, KeyError, TypeError):
            continue


def _well_formed(item: object) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("ref"), str)
            and item.get("stance", "supports") in ("supports", "contradicts"))


def _read_cache(path: Path) -> tuple[dict[str, Stamp], dict[str, list[Evidence]]] | None:
    payload = cachefile.read(path, CACHE_VERSION)
    if not isinstance(payload, tuple) or len(payload) != 2:
        return None
    return payload


def _write_cache(path: Path, payload: tuple[dict[str, Stamp], dict[str, list[Evidence]]]) -> None:
    """A read-only or full disk only costs the next run a re-read."""
    cachefile.write(path, CACHE_VERSION, payload)
