"""The one place a command's result becomes output: JSON for programs or text for people (--format)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memdream.cli.options import DataFormat

Result = TypeVar("Result")


def _to_dict(result: Any) -> Any:
    """A result object's JSON, or a list of them as a list."""
    return [item.to_dict() for item in result] if isinstance(result, list) else result.to_dict()


def emit(result: Result, output: DataFormat, render: Callable[[Result], None],
         data: Callable[[Result], Any] = _to_dict) -> None:
    """Print ``result`` as --format asks: ``data(result)`` as one JSON document (by default the
    result's ``to_dict()``, or each item's for a list), or ``render(result)`` for people."""
    if output is DataFormat.json:
        from memdream.render import print_json

        print_json(data(result))
    else:
        render(result)
