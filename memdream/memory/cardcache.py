"""A cache of parsed cards under .memdream/cache/, keyed by each file's size and mtime.

Parsing YAML costs about half a millisecond per card; a dream or a recall on a memory of
10,000 cards cannot pay five seconds for that on every run. Files whose stat changed are
parsed (and validated) again; the rest come from the cache.

Two files: ``cards.pickle``, every card as of one moment (a header with a random token, then the
entries), and ``cards.overlay``, frames appended since, each tagged with the token of the base it
extends. A run that changed a few cards appends them instead of re-writing ten thousand (a dump
costs more than an incremental dream's real work); the next load that finds the overlay large
folds it into a new base. A frame cut short by a crash, or one of an older base, is ignored: every
entry is only a hint that the file's stat confirms, so a lost frame costs a parse, never a wrong card.

A dream's frame may also say that the cache is the memory as of the commit it just made (a
:class:`Synced` mark: the commit and the mtimes of the card folders). A later dream that has checked
that the tree is clean and finds HEAD still at that commit (and the folders unchanged: no file made or
removed, not even one git ignores) takes every card from the cache without a stat a file: git's own
check has just compared each file with the index, and the files are what that commit holds. Any frame
appended after the mark (another reader's, another base) takes it away: the next dream checks each file.
"""

from __future__ import annotations

import gc
import io
import os
import pickle
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memdream.memory.card import Card
from memdream.memory.paths import ARCHIVE_DIR, CARDS_DIR, LAYERS
from memdream.memory.store import CardFile, Memory, card_locations

CACHE_VERSION = 3  # 2: Card.evidence_count; 3: keys relative to the root, base token and overlay
BASE_FILE = "cards.pickle"
OVERLAY_FILE = "cards.overlay"
# The overlay is folded into a new base once it holds this share of the base's entries (and at
# least MIN_FOLD): loading it stays cheap, and a base is re-written every ~20 incremental dreams.
FOLD_SHARE = 8
MIN_FOLD = 256

Stamp = tuple[int, int]
Entries = dict[str, tuple[Stamp, Card]]  # path relative to the root -> (stamp of the file, card)
Changes = Mapping[str, "tuple[Stamp, Card] | None"]  # None: the file is gone
# The card folders as base/layer, in the order card_locations walks them; and their modification times
# (None: no such folder), which change when a file is made, removed or renamed in them.
FOLDERS = tuple(f"{base}/{layer}" for base in (CARDS_DIR, ARCHIVE_DIR) for layer in LAYERS)
FolderTimes = tuple[int | None, ...]


@dataclass(frozen=True)
class Synced:
    """The cache holds the memory's cards as of ``commit``, the card folders as ``folders`` say."""

    commit: str
    folders: FolderTimes


@dataclass(slots=True)  # ten thousand a run: a frozen dataclass's __init__ costs three times as much
class CachedCard:
    card: Card
    relpath: str  # relative to the memory root, forward slashes
    layer: str
    archived: bool
    size: int  # of the file, in bytes (from the stat the cache needs anyway)
    root: Path

    @property
    def file(self) -> CardFile:
        """Built on demand: ten thousand Paths cost a dream more than it needs them."""
        return CardFile(self.root / self.relpath, self.layer, self.archived)


@dataclass
class _Cache:
    """What the cache files hold, the overlay folded in."""

    entries: Entries
    token: str | None  # of the base; None: no readable base
    overlay_entries: int = 0
    damaged: bool = False  # the overlay has a frame that could not be read: fold it away
    synced: Synced | None = None  # the last frame's mark, when it is the last frame for this base

    def should_fold(self, adding: int) -> bool:
        if self.token is None or self.damaged:
            return True
        return self.overlay_entries + adding > max(MIN_FOLD, len(self.entries) // FOLD_SHARE)


@dataclass(frozen=True)
class CardCache:
    """The cache files as read at one moment (see :func:`read_cache`)."""

    cache: _Cache


def _cache_dir(memory: Memory) -> Path:
    return memory.paths.state / "cache"


def _stamp(path: Path | str) -> Stamp:
    info = os.stat(path)
    return (info.st_size, info.st_mtime_ns)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Loading ten thousand cards would make the garbage collector walk them again and again;
    none of them can be garbage yet. (A caller that keeps them long should gc.freeze() them
    before the collector runs again: see dream/pipeline.py.)"""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_cards(memory: Memory, include_archive: bool = True, clean_at: str | None = None,
               cache: CardCache | None = None) -> list[CachedCard]:
    """Every card, parsed from disk only where the file changed since the cache was written.

    ``clean_at``: the caller has just found the memory's tracked files as the commit ``clean_at`` (its
    HEAD) has them (git status, in the memory's own repository); when a dream's mark says the cache
    holds that commit, no card file is looked at (see the module's doc). ``cache``: the cache files as
    :func:`read_cache` read them (a dream reads them while git checks the tree)."""
    with _collector_paused():
        return _load(memory, include_archive, clean_at, cache)


def read_cache(memory: Memory) -> CardCache:
    """What the cache files hold, read now, for a :func:`load_cards` to come."""
    with _collector_paused():
        return CardCache(_read(_cache_dir(memory)))


def _load(memory: Memory, include_archive: bool, clean_at: str | None = None,
          read: CardCache | None = None) -> list[CachedCard]:
    folder = _cache_dir(memory)
    cache = read.cache if read is not None else _read(folder)
    # Read before the folders are listed: a file made while they are, changes them after this.
    synced = Synced(clean_at, folder_times(memory.root)) if clean_at is not None else None
    if synced is not None and cache.synced == synced:
        cards = _from_cache(memory, cache.entries, include_archive)
        if cards is not None:
            return cards
    prefix = os.path.join(memory.root, "")
    result: list[CachedCard] = []
    parsed: dict[str, tuple[Stamp, Card] | None] = {}
    seen: set[str] = set()
    for relpath, layer, archived in card_locations(prefix):
        stamp = _stamp(prefix + relpath)
        hit = cache.entries.get(relpath)
        if hit is not None and hit[0] == stamp:
            card = hit[1]
        else:
            card = memory.read_card(CardFile(memory.root / relpath, layer, archived))
            parsed[relpath] = (stamp, card)
        seen.add(relpath)
        if include_archive or not archived:
            result.append(CachedCard(card, relpath, layer, archived, stamp[0], memory.root))
    for relpath in cache.entries.keys() - seen:
        parsed[relpath] = None  # the file is gone: drop its entry
    token = _record(folder, cache, parsed) if parsed else cache.token
    if synced is not None and token is not None:  # the cache is now every file as HEAD has it: say so
        _append(folder / OVERLAY_FILE, token, {}, synced)
    return result


def _from_cache(memory: Memory, entries: Entries, include_archive: bool) -> list[CachedCard] | None:
    """The cards of a cache that a mark vouches for, in the order a load from disk gives them (None
    for an entry no card folder holds: the files decide)."""
    groups: dict[str, list[tuple[str, str, tuple[Stamp, Card]]]] = {folder: [] for folder in FOLDERS}
    for relpath, entry in entries.items():
        folder, _, name = relpath.rpartition("/")
        if folder not in groups:
            return None
        groups[folder].append((name, relpath, entry))
    found: list[CachedCard] = []
    for folder, items in groups.items():
        base, _, layer = folder.partition("/")
        archived = base == ARCHIVE_DIR
        if items and (include_archive or not archived):
            items.sort()  # by file name, as card_locations gives them (names are unique in a folder)
            found += [CachedCard(card, relpath, layer, archived, stamp[0], memory.root)
                      for _, relpath, (stamp, card) in items]
    return found


def folder_times(root: Path) -> FolderTimes:
    """The modification time of each card folder (:data:`FOLDERS`), None where there is none."""
    times: list[int | None] = []
    for name in FOLDERS:
        try:
            times.append(os.stat(os.path.join(root, name)).st_mtime_ns)
        except OSError:
            times.append(None)
    return tuple(times)


def remember_cards(memory: Memory, written: Mapping[str, Card], deleted: Iterable[str] = (),
                   commit: str | None = None) -> None:
    """Cache the cards a run just wrote (relative path -> the card as its file now says) and forget
    the files it deleted: the dream that wrote them leaves the cache warm, so the next run parses
    nothing it wrote. Appends to the overlay; the cards the run did not write keep their entries.

    ``commit``: the commit that the run just made of exactly these files, over a tree it found clean:
    the cache is then marked as that commit's cards (:class:`Synced`)."""
    root = str(memory.root)
    changes: dict[str, tuple[Stamp, Card] | None] = dict.fromkeys(deleted)
    for relpath, card in written.items():
        try:
            changes[relpath] = (_stamp(os.path.join(root, relpath)), card)
        except OSError:
            changes[relpath] = None  # gone meanwhile: the next load parses what is there
    synced = Synced(commit, folder_times(memory.root)) if commit is not None else None
    if not changes and synced is None:
        return
    folder = _cache_dir(memory)
    if len(changes) <= MIN_FOLD:
        token = _base_token(folder / BASE_FILE)
        if token is not None:
            _append(folder / OVERLAY_FILE, token, changes, synced)
            return
    # Many cards (a first dream over a large log), or no base to extend: the run that wrote them
    # folds them in, rather than leaving the next, small run to pay for it.
    token = _record(folder, _read(folder), changes)
    if synced is not None and token is not None:
        _append(folder / OVERLAY_FILE, token, {}, synced)


def _read(folder: Path) -> _Cache:
    """The base with the overlay's frames for it applied in order; empty when there is no base."""
    token: object = None
    try:
        with open(folder / BASE_FILE, "rb") as handle:
            version, token = pickle.load(handle)
            entries = pickle.load(handle) if version == CACHE_VERSION else None
    except Exception:  # a cache that cannot be read is no cache (whatever unpickling raised)
        entries = None
    if not isinstance(entries, dict) or not isinstance(token, str):
        return _Cache({}, None)
    cache = _Cache(entries, token)
    for frame_token, changes, synced in _frames(folder / OVERLAY_FILE, cache):
        cache.overlay_entries += max(1, len(changes))  # a mark's empty frame counts: frames stay few
        cache.synced = synced if frame_token == token else None  # a mark holds until the next frame
        if frame_token != token:
            continue  # written against an older base, which a fold has replaced
        for relpath, entry in changes.items():
            if entry is None:
                entries.pop(relpath, None)
            else:
                entries[relpath] = entry
    if cache.damaged:
        cache.synced = None
    return cache


Frame = tuple[str, dict[str, "tuple[Stamp, Card] | None"], Synced | None]


def _frames(path: Path, cache: _Cache) -> Iterator[Frame]:
    """The overlay's frames up to the first one that cannot be read whole (a crash cut it short):
    the bytes after it need not start a frame, so nothing after it is believed."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    buffer = io.BytesIO(data)
    while buffer.tell() < len(data):
        try:
            frame = pickle.load(buffer)
        except Exception:  # cut short (EOFError mid-frame included) or damaged
            cache.damaged = True
            return
        if not _well_formed(frame):
            cache.damaged = True
            return
        yield frame[0], frame[1], frame[2] if len(frame) == 3 else None


def _well_formed(frame: object) -> bool:
    """(token, changes) or (token, changes, a Synced mark or None): a frame before marks had two parts."""
    if not (isinstance(frame, tuple) and len(frame) in (2, 3) and isinstance(frame[0], str)
            and isinstance(frame[1], dict)):
        return False
    if len(frame) == 3 and not (frame[2] is None or isinstance(frame[2], Synced)):
        return False
    return all(entry is None or (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], tuple)
                                 and isinstance(entry[1], Card)) for entry in frame[1].values())


def _base_token(path: Path) -> str | None:
    """The base's token, from its header alone (the entries are not read)."""
    try:
        with open(path, "rb") as handle:
            version, token = pickle.load(handle)
    except Exception:
        return None
    return token if version == CACHE_VERSION and isinstance(token, str) else None


def _record(folder: Path, cache: _Cache, changes: dict[str, tuple[Stamp, Card] | None]) -> str | None:
    """Bring the cache files up to what a load found: a frame, or a new base when the overlay is large.
    The token of the base the changes went to (None: no base could be written)."""
    if not cache.should_fold(len(changes)):
        assert cache.token is not None
        _append(folder / OVERLAY_FILE, cache.token, changes)
        return cache.token
    entries = cache.entries
    for relpath, entry in changes.items():
        if entry is None:
            entries.pop(relpath, None)
        else:
            entries[relpath] = entry
    return _save(folder / BASE_FILE, entries)


def _append(path: Path, token: str, changes: Changes, synced: Synced | None = None) -> None:
    """One frame, in one write to a file opened for appending: a concurrent writer's frame lands
    before or after it, and a crash leaves at most a cut-off last frame, which readers skip."""
    frame = pickle.dumps((token, dict(changes), synced), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, frame)
        finally:
            os.close(descriptor)
    except OSError:
        pass  # optional, like the base: the next load parses what the frame would have held


def _save(path: Path, entries: Entries) -> str | None:
    """A new base (atomic, and optional: a read-only memory or a full disk just goes without the
    cache); the overlay, written against the old base, goes. Its token, None when it was not written."""
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    token = os.urandom(8).hex()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            pickle.dump((CACHE_VERSION, token), handle, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:
        _discard(tmp)
        return None
    _discard(path.with_name(OVERLAY_FILE))
    return token


def _discard(tmp: Path) -> None:
    try:
        tmp.unlink(missing_ok=True)
    except OSError:
        pass
