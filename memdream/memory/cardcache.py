"""A cache of parsed cards under .memdream/, keyed by each file's size and mtime.

Parsing YAML costs about half a millisecond per card; a dream or a recall on a memory of
10,000 cards cannot pay five seconds for that on every run. Files whose stat changed are
parsed (and validated) again; the rest come from the cache.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

from memdream.memory.card import Card
from memdream.memory.store import CardFile, Memory

CACHE_VERSION = 2  # 2: Card.evidence_count


@dataclass(frozen=True)
class CachedCard:
    card: Card
    file: CardFile
    size: int  # of the file, in bytes (from the stat the cache needs anyway)


def _stamp(path: Path | str) -> tuple[int, int]:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns)


def load_cards(memory: Memory, include_archive: bool = True) -> list[CachedCard]:
    """Every card, parsed from disk only where the file changed since the cache was written."""
    cache_path = memory.paths.state / "cache" / "cards.pickle"
    cached: dict[str, tuple[tuple[int, int], Card]] = {}
    try:
        with open(cache_path, "rb") as handle:
            version, cached = pickle.load(handle)
        if version != CACHE_VERSION:
            cached = {}
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
        cached = {}
    fresh: dict[str, tuple[tuple[int, int], Card]] = {}
    result: list[CachedCard] = []
    changed = False
    for card_file in memory.card_files(include_archive=True):
        key = str(card_file.path)
        stamp = _stamp(card_file.path)
        hit = cached.get(key)
        if hit is not None and hit[0] == stamp:
            card = hit[1]
        else:
            card, changed = memory.read_card(card_file), True
        fresh[key] = (stamp, card)
        if include_archive or not card_file.archived:
            result.append(CachedCard(card, card_file, stamp[0]))
    if changed or len(fresh) != len(cached):
        _save(cache_path, fresh)
    return result


def remember_cards(memory: Memory, cards: dict[str, Card]) -> None:
    """Cache ``cards`` (relative path -> the card as its file now says) as the whole memory: the
    dream that wrote them leaves the cache warm, so the next run parses nothing it wrote."""
    fresh: dict[str, tuple[tuple[int, int], Card]] = {}
    root = str(memory.root)
    for relpath, card in cards.items():
        path = os.path.join(root, relpath)  # the key load_cards uses, without building Paths
        try:
            fresh[path] = (_stamp(path), card)
        except OSError:
            continue  # gone meanwhile: the next load parses what is there
    _save(memory.paths.state / "cache" / "cards.pickle", fresh)


def _save(path: Path, entries: dict[str, tuple[tuple[int, int], Card]]) -> None:
    """Atomic, and optional: a read-only memory or a full disk just goes without the cache."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            pickle.dump((CACHE_VERSION, entries), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        _discard(tmp)


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass
