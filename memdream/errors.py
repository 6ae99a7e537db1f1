"""The one exception hierarchy of memdream, and the exit code each maps to.

The CLI turns any :class:`MemdreamError` into one line on stderr and its ``exit_code``;
nothing else in the package decides exit codes.
"""

from __future__ import annotations

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


class Busy(MemdreamError):
    """Another memdream process holds the memory's lock."""

    exit_code = EXIT_BUSY
