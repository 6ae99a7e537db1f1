"""Cache files under ``.memdream/cache``: one pickled ``(version, payload)``, written atomically.

A cache is only ever a shortcut. Missing, corrupt, of another version or unwritable (a read-only
memory, a full disk, a ``cache`` that is not a folder), it costs the next run a rebuild, never an
error. Only memdream writes these files, in the memory's own local state folder: lint, which reads
memories from pull requests, never loads them.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any


def read(path: Path, version: int) -> Any:
    """The payload, or None when the file is missing, corrupt or of another ``version``."""
    try:
        with open(path, "rb") as handle:
            found, payload = pickle.load(handle)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError):
        return None
    return payload if found == version else None


def write(path: Path, version: int, payload: Any) -> None:
    """Atomic: concurrent readers see the old file or the new one; an unwritable place is skipped."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as handle:
            pickle.dump((version, payload), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError:  # leaves no half-written temporary file behind either
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # the folder is not a folder: there is no temporary file
            pass
