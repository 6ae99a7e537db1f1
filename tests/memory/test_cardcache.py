"""The card cache on real files: a base plus an append-only overlay, every entry checked against
its file's stat. A card is read from the cache, not parsed, when a file rewritten with garbage of
the same size and mtime still loads as the card it was (the trick the tests below use to tell a
cache hit from a parse)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from memdream.errors import InvalidMemory
from memdream.memory import cardcache
from memdream.memory.store import Memory


def values(memory: Path) -> dict[str, str | None]:
    return {item.card.id: item.card.value for item in cardcache.load_cards(Memory(memory))}


def garble_keeping_stat(path: Path) -> None:
    """Same size, same mtime, content no YAML parser accepts: only a cache hit still reads the card."""
    info = path.stat()
    path.write_bytes(b"\t" * info.st_size)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def cache_files(memory: Path) -> tuple[Path, Path]:
    folder = memory / ".memdream" / "cache"
    return folder / cardcache.BASE_FILE, folder / cardcache.OVERLAY_FILE


def rewrite(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def test_garbage_with_a_fresh_stat_is_parsed_and_refused(memory: Path, write_card: Callable[..., Path]) -> None:
    card = write_card()
    assert values(memory) == {"f-000001": "eu-central-1"}
    card.write_text("\t" * 10, encoding="utf-8")  # a new size: the cache cannot vouch for it
    with pytest.raises(InvalidMemory):
        values(memory)


def test_a_changed_card_goes_to_the_overlay_and_the_base_stays(memory: Path,
                                                             write_card: Callable[..., Path]) -> None:
    first = write_card()
    write_card(id="f-000002", subject="postgres", attribute="version", value="16.1")
    values(memory)
    base, overlay = cache_files(memory)
    written = base.stat()
    assert not overlay.exists()

    rewrite(first, "eu-central-1", "eu-west-1")
    assert values(memory)["f-000001"] == "eu-west-1"
    assert overlay.exists() and (base.stat().st_ino, base.stat().st_mtime_ns) == (written.st_ino,
                                                                                  written.st_mtime_ns)
    garble_keeping_stat(first)
    assert values(memory) == {"f-000001": "eu-west-1", "f-000002": "16.1"}


def test_a_deleted_card_leaves_the_cache(memory: Path, write_card: Callable[..., Path]) -> None:
    write_card()
    gone = write_card(id="f-000002", subject="postgres", attribute="version", value="16.1")
    values(memory)
    gone.unlink()
    assert values(memory) == {"f-000001": "eu-central-1"}
    cache = cardcache._read(cache_files(memory)[0].parent)
    assert set(cache.entries) == {"cards/facts/f-000001.yaml"}


def test_a_frame_cut_short_by_a_crash_is_skipped_and_folded_away(memory: Path,
                                                                write_card: Callable[..., Path]) -> None:
    first = write_card()
    second = write_card(id="f-000002", subject="postgres", attribute="version", value="16.1")
    values(memory)
    rewrite(first, "eu-central-1", "eu-west-1")
    values(memory)
    base, overlay = cache_files(memory)
    frame = overlay.read_bytes()
    with open(overlay, "ab") as handle:  # a second frame, killed halfway through its write
        handle.write(frame[: len(frame) // 2])

    rewrite(second, "16.1", "16.2")
    assert values(memory) == {"f-000001": "eu-west-1", "f-000002": "16.2"}
    assert not overlay.exists()  # folded into a new base
    garble_keeping_stat(first)
    garble_keeping_stat(second)
    assert values(memory) == {"f-000001": "eu-west-1", "f-000002": "16.2"}


def test_a_damaged_base_is_rebuilt(memory: Path, write_card: Callable[..., Path]) -> None:
    card = write_card()
    values(memory)
    base, _ = cache_files(memory)
    base.write_bytes(b"not a pickle at all")
    assert values(memory) == {"f-000001": "eu-central-1"}
    garble_keeping_stat(card)
    assert values(memory) == {"f-000001": "eu-central-1"}


def test_a_frame_written_for_an_older_base_is_not_applied(memory: Path, write_card: Callable[..., Path]) -> None:
    card = write_card()
    values(memory)
    rewrite(card, "eu-central-1", "eu-central-2")
    values(memory)  # a frame: this stat -> eu-central-2
    base, overlay = cache_files(memory)
    stale = overlay.read_bytes()
    stamp = card.stat()
    rewrite(card, "eu-central-2", "eu-central-3")  # same size; given the same mtime below
    os.utime(card, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    base.unlink()
    overlay.unlink()
    assert values(memory) == {"f-000001": "eu-central-3"}  # parsed: a new base, a new token
    overlay.write_bytes(stale)  # the old frame claims this very stat for eu-central-2
    assert values(memory) == {"f-000001": "eu-central-3"}


def test_many_changes_fold_into_a_new_base(memory: Path, write_card: Callable[..., Path]) -> None:
    count = cardcache.MIN_FOLD + 20
    paths = [write_card(id=f"f-{n:06x}", subject=f"svc-{n}", attribute="port", value=str(n)) for n in range(count)]
    values(memory)
    base, overlay = cache_files(memory)
    for path in paths:
        rewrite(path, "attribute: port", "attribute: listen-port")
    loaded = {item.card.id: item.card.attribute for item in cardcache.load_cards(Memory(memory))}
    assert set(loaded.values()) == {"listen-port"} and len(loaded) == count
    assert base.exists() and not overlay.exists()
    rewrite(paths[0], "attribute: listen-port", "attribute: port")
    values(memory)
    assert overlay.exists()


def test_a_copied_memory_keeps_its_cache(memory: Path, write_card: Callable[..., Path], tmp_path: Path) -> None:
    write_card()
    values(memory)
    copy = tmp_path / "copy"
    shutil.copytree(memory, copy)  # copy2: sizes and mtimes kept; the cache's keys are relative
    garble_keeping_stat(copy / "cards" / "facts" / "f-000001.yaml")
    assert values(copy) == {"f-000001": "eu-central-1"}


def test_remembered_cards_are_read_from_the_cache(memory: Path, write_card: Callable[..., Path]) -> None:
    kept = write_card()
    moved = write_card(id="f-000002", subject="postgres", attribute="version", value="16.1")
    values(memory)
    target = memory / "archive" / "facts" / "f-000002.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    moved.rename(target)  # as a dream moves a card to the archive
    card = next(item.card for item in cardcache.load_cards(Memory(memory)) if item.card.id == "f-000001")
    rewrite(kept, "eu-central-1", "eu-west-1")
    card.value = "eu-west-1"
    cardcache.remember_cards(Memory(memory), {"cards/facts/f-000001.yaml": card}, ["cards/facts/f-000002.yaml"])
    garble_keeping_stat(kept)
    assert values(memory) == {"f-000001": "eu-west-1", "f-000002": "16.1"}


def marked(memory: Path, write_card: Callable[..., Path]) -> Path:
    """A memory whose cache a dream marked as the cards of commit "c1"; its first card's file."""
    first = write_card()
    write_card(id="f-000002", subject="postgres", attribute="version", value="16.1")
    write_card(id="s-000003", type="strategy", subject="deploys", attribute=None, value=None, scope="project:x")
    write_card(id="f-000004", archived=True, subject="old", attribute="owner", value="me", status="superseded")
    values(memory)
    cardcache.remember_cards(Memory(memory), {}, commit="c1")
    return first


def test_a_mark_for_the_clean_head_reads_no_card_file(memory: Path, write_card: Callable[..., Path]) -> None:
    first = marked(memory, write_card)
    first.write_text("\t" * 10, encoding="utf-8")  # a new stat: only a load that looks at it sees it
    fast = cardcache.load_cards(Memory(memory), clean_at="c1")
    assert [item.card.value for item in fast if item.card.id == "f-000001"] == ["eu-central-1"]
    with pytest.raises(InvalidMemory):  # another HEAD: every file is checked
        cardcache.load_cards(Memory(memory), clean_at="c2")


def test_a_mark_gives_the_cards_in_the_order_of_a_load_from_disk(memory: Path,
                                                                 write_card: Callable[..., Path]) -> None:
    marked(memory, write_card)
    slow = cardcache.load_cards(Memory(memory))
    fast = cardcache.load_cards(Memory(memory), clean_at="c1")
    shown = [(item.relpath, item.layer, item.archived, item.size, item.card) for item in fast]
    assert shown == [(item.relpath, item.layer, item.archived, item.size, item.card) for item in slow]
    assert [item.relpath for item in cardcache.load_cards(Memory(memory), False, clean_at="c1")] == [
        item.relpath for item in slow if not item.archived]


def test_a_frame_after_the_mark_takes_it_away(memory: Path, write_card: Callable[..., Path]) -> None:
    first = marked(memory, write_card)
    rewrite(first, "eu-central-1", "eu-west-1")
    assert values(memory)["f-000001"] == "eu-west-1"  # a reader's frame, after the mark
    rewrite(first, "eu-west-1", "eu-central-1")  # as HEAD has it again, file stat aside
    garble_keeping_stat(first)
    with pytest.raises(InvalidMemory):
        cardcache.load_cards(Memory(memory), clean_at="c1")


def test_a_file_made_in_a_card_folder_takes_the_mark_away(memory: Path, write_card: Callable[..., Path]) -> None:
    marked(memory, write_card)
    folder = memory / "cards" / "facts"
    before = folder.stat().st_mtime_ns
    write_card(id="f-000005", subject="ignored-by-git", attribute="owner", value="x")
    os.utime(folder, ns=(before + 1_000_000, before + 1_000_000))  # whatever the clock's granularity
    ids = {item.card.id for item in cardcache.load_cards(Memory(memory), clean_at="c1")}
    assert "f-000005" in ids


def test_a_load_that_checked_every_file_marks_the_cache(memory: Path, write_card: Callable[..., Path]) -> None:
    first = write_card()
    assert [item.card.value for item in cardcache.load_cards(Memory(memory), clean_at="c1")] == ["eu-central-1"]
    first.write_text("\t" * 10, encoding="utf-8")
    assert [item.card.value for item in cardcache.load_cards(Memory(memory), clean_at="c1")] == ["eu-central-1"]
