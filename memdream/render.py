"""Output helpers shared by commands: rich consoles that respect NO_COLOR and pipes, and JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console


class PlainConsole:
    """What rich's Console does with plain text written to a pipe or a file (cron, CI, an agent's
    hook): the text and a newline. Rich costs ~50 ms of import for nothing there."""

    def __init__(self) -> None:
        try:
            self.width = int(os.environ.get("COLUMNS", "80"))
        except ValueError:
            self.width = 80

    def print(self, text: object = "", style: str | None = None) -> None:
        sys.stdout.write(f"{text}\n")


def stdout_console() -> Console | PlainConsole:
    if not sys.stdout.isatty():
        return PlainConsole()
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True, markup=False)


def print_json(data: Any) -> None:
    """JSON for programs: one document, UTF-8, stable key order as given."""
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def shown_path(path: Path, base: Path | None = None) -> str:
    """A path as an editor or CI annotation wants it: relative to the working directory when inside it."""
    # The link itself, not where it points: a finding about a symbolic link must name the link.
    given = Path(path)
    resolved = given.parent.resolve() / given.name
    try:
        return resolved.relative_to((base or Path.cwd()).resolve()).as_posix()
    except ValueError:
        return os.fspath(resolved)
