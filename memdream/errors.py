"""The one exception hierarchy of memdream, and the exit code each maps to.

The CLI turns any :class:`MemdreamError` into one line on stderr and its ``exit_code``;
nothing else in the package decides exit codes.
"""

from __future__ import annotations

import errno

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: cron may simply try again later
EXIT_INTERRUPTED = 130


class MemdreamError(Exception):
    """A failure the user can act on; its message is shown as one line."""

    exit_code = EXIT_FINDINGS


class UsageError(MemdreamError):
    """The command line asks for something impossible (bad option value, missing path)."""

    exit_code = EXIT_USAGE


class MemoryNotFound(MemdreamError):
    """No memory folder could be located from --memory, MEMDREAM_MEMORY or the working directory."""


class InvalidMemory(MemdreamError):
    """A memory file cannot be read or fails its schema in a way that stops the command."""


class InvalidInput(MemdreamError):
    """An input (log file, query file, setting) is malformed."""


class GitError(MemdreamError):
    """A git operation failed, or the working tree is not in the state the command needs."""


class InterruptedDream(MemdreamError):
    """A killed dream left its journal: tracked files may be half-written until the next dream."""


class ReadOnlyMemory(MemdreamError):
    """A writer cannot write the memory (read-only file system or no permission)."""


class DiskFull(MemdreamError):
    """The disk (or the user's quota) is full."""


class Busy(MemdreamError):
    """Another memdream process holds the memory's lock."""

    exit_code = EXIT_BUSY


_NO_PERMISSION = {errno.EACCES, errno.EPERM}
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def from_os_error(error: OSError, memory_write: bool = False) -> MemdreamError | None:
    """The one-line error for an OSError the user can act on (disk full, read-only), else None.

    ``memory_write``: the failed call was writing the memory itself (its lock), so a permission
    error means the memory is read-only for this user (rather than, say, an unreadable input).
    """
    where = f" {error.filename}" if error.filename else ""
    if error.errno in _FULL:
        return DiskFull(f"no space left on device while writing{where}")
    if error.errno == errno.EROFS:
        return ReadOnlyMemory(f"the memory is read-only: cannot write{where} (read-only file system)")
    if error.errno in _NO_PERMISSION and memory_write:
        return ReadOnlyMemory(f"the memory is read-only for this user: cannot write{where}")
    if error.errno in _NO_PERMISSION:
        return MemdreamError(f"permission denied{where and ':' + where}")
    return None


def known_error(error: BaseException) -> MemdreamError | None:
    """``error`` as a one-line memdream error: itself, a mapped OSError, or None for a bug."""
    if isinstance(error, MemdreamError):
        return error
    return from_os_error(error) if isinstance(error, OSError) else None
