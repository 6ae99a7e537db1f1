"""Reading a memory that a stranger may have written (a pull request): regular files only,
never through a symbolic link, never more than a bounded number of bytes.

A link could point out of the memory (``/etc/passwd``, ``/proc/self/environ``) and a device or
a FIFO could never end (``/dev/zero``), so lint reports them instead of reading them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from memdream.memory.paths import ARCHIVE_DIR, CARDS_DIR, LAYERS
from memdream.memory.store import CardFile

MIB = 1 << 20
MAX_TEXT_BYTES = 64 * MIB  # INDEX.md, an audit file, the raw manifest

SYMLINK_PROBLEM = "symbolic links are not allowed in a memory"
SPECIAL_PROBLEM = "not a regular file (a memory holds only regular files and folders)"


class FileProblem(Exception):
    """A path lint refuses to read; the message is the finding."""


def entry_problem(path: Path, folder: bool = False) -> str | None:
    """Why lint must not read ``path`` (a link, a device, a FIFO...), or None when it may."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return SYMLINK_PROBLEM
    if folder and stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        return SPECIAL_PROBLEM
    return None


def read_bytes(path: Path, limit: int) -> bytes:
    """The content of a regular file that is not a link, or :class:`FileProblem`.

    Opened with ``O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`` (a link is not followed, a FIFO does not
    block, a terminal is not taken over) and checked on the open descriptor (a device or a FIFO is
    refused before anything is read; git cannot carry either, so only a local memory has them).
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_NOCTTY", 0))
    except OSError as error:
        # A link (ELOOP) or a socket (ENXIO) cannot be opened: say what it is, as lstat sees it.
        problem = entry_problem(path) if os.path.lexists(path) else None
        raise FileProblem(problem or f"cannot be read: {error.strerror}") from None
    try:
        # Checked on the open descriptor, not before opening: no window to swap the file, one stat less.
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileProblem(SPECIAL_PROBLEM)
        data = _read_up_to(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise FileProblem(f"file is larger than {limit // MIB} MiB (the limit for a memory file)")
    return data


def _read_up_to(fd: int, size: int) -> bytes:
    """At most ``size`` bytes from ``fd`` (plain os.read: no buffered file object per card)."""
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_text(path: Path, limit: int) -> str:
    """:func:`read_bytes` as UTF-8 text."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileProblem(f"not UTF-8 text: {error.reason}") from None


def folder_entries(folder: Path) -> tuple[list[Path], dict[Path, str]]:
    """The entries of a memory folder, and the problem of the folder itself (a link) if any.

    A missing folder has no entries; a linked folder is reported and not entered.
    """
    if not os.path.lexists(folder):
        return [], {}
    problem = entry_problem(folder, folder=True)
    if problem is not None:
        return [], {folder: problem}
    return sorted(folder.iterdir()), {}


def card_entries(root: Path) -> tuple[list[CardFile], dict[Path, str]]:
    """Every card file of a memory (as ``Memory.card_files`` orders them), and the folders under
    cards/ or archive/ that lint refuses to enter (links), with why.

    A card entry may itself be a link or a FIFO: it is listed, and :func:`read_text` refuses it,
    so that the refused card still counts as a card (one finding, not a cascade of dangling links).
    """
    found: list[CardFile] = []
    problems: dict[Path, str] = {}
    for base, archived in ((root / CARDS_DIR, False), (root / ARCHIVE_DIR, True)):
        _, base_problem = folder_entries(base)
        problems.update(base_problem)
        if base_problem:
            continue
        for layer in LAYERS:
            folder = base / layer
            if not os.path.lexists(folder):
                continue
            problem = entry_problem(folder, folder=True)
            if problem is not None:
                problems[folder] = problem
                continue
            found.extend(CardFile(folder / name, layer, archived) for name in _card_names(folder))
    return found, problems


def _card_names(folder: Path) -> list[str]:
    """Names of the card entries of one layer folder, sorted (as sorted paths are): one scandir,
    no stat per entry (the directory entry says whether it is a folder)."""
    with os.scandir(folder) as entries:
        return sorted(entry.name for entry in entries
                      if entry.name.endswith((".yaml", ".yml")) and not entry.name.startswith(".")
                      and not entry.is_dir(follow_symlinks=False))
