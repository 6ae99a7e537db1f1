"""Progress on long work (ingest of big inputs, dreaming): a rich bar on a terminal, nothing elsewhere.

Under cron, in a hook, in a pipe or with ``--format json`` nothing extra may be printed, so the
reporter there is a no-op that costs a method call per step and never imports rich. On a terminal
the bar goes to stderr (stdout keeps the command's own output) and disappears when the work ends.

Usage, from any pipeline::

    progress = Progress.for_output(enabled)      # enabled: the command renders text to a terminal
    with progress.task("dreaming", total=len(episodes)) as advance:
        for episode in episodes:
            ...
            advance(1)

Tasks may nest (a task per input file inside a run); the display lives while a task is open.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

Advance = Callable[[float], None]


def _nothing(amount: float = 1) -> None:
    """The advance of a progress nobody sees."""


def terminal_output(json_output: bool) -> bool:
    """Whether a command's progress may be shown: text output to a terminal, stderr a terminal too."""
    return not json_output and sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """A progress reporter that shows nothing (the base class is the no-op one)."""

    enabled = False

    @staticmethod
    def for_output(enabled: bool, console: Console | None = None) -> Progress:
        """A rich bar when ``enabled`` (see :func:`terminal_output`), else a reporter that does nothing.

        ``console``: where the bar goes (default: rich's stderr console); tests pass a forced one.
        """
        return RichProgress(console) if enabled else NO_PROGRESS

    @contextmanager
    def task(self, description: str, total: float | None = None) -> Iterator[Advance]:
        """A piece of work of ``total`` units (None: unknown); yields ``advance(units)``."""
        yield _nothing

    def describe(self, text: str) -> None:
        """Change what the innermost open task says it is doing."""


NO_PROGRESS = Progress()


class RichProgress(Progress):
    """Rich's progress display, started with the first open task and stopped with the last.

    A closed task's row is hidden and reused by the next one: adding a row redraws the display at
    once (~10 ms), which a run over hundreds of small files would pay for each."""

    enabled = True

    def __init__(self, console: Console | None = None) -> None:
        self._console = console
        self._display: Any = None
        self._open: list[Any] = []  # task ids, innermost last
        self._free: list[Any] = []  # hidden rows, for the next tasks

    def _start(self) -> Any:
        if self._display is None:
            from rich.console import Console
            from rich.progress import BarColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichBar

            console = self._console or Console(stderr=True)
            self._display = RichBar(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                    TimeElapsedColumn(), console=console, transient=True, refresh_per_second=5)
            self._display.start()
        return self._display

    def _row(self, display: Any, description: str, total: float | None) -> Any:
        # update() leaves the redraw to the display's own clock (reset() and add_task() redraw now);
        # it cannot set an unknown total, so such a task gets a row of its own.
        if self._free and total is not None:
            task_id = self._free.pop()
            display.update(task_id, total=total, completed=0, description=description, visible=True)
            return task_id
        return display.add_task(description, total=total)

    @contextmanager
    def task(self, description: str, total: float | None = None) -> Iterator[Advance]:
        display = self._start()
        task_id = self._row(display, description, total)
        self._open.append(task_id)

        def advance(amount: float = 1) -> None:
            display.advance(task_id, amount)

        try:
            yield advance
        finally:
            self._open.remove(task_id)
            if self._open:
                display.update(task_id, visible=False)
                self._free.append(task_id)
            else:
                display.stop()
                self._display, self._free = None, []

    def describe(self, text: str) -> None:
        if self._display is not None and self._open:
            self._display.update(self._open[-1], description=text)
