"""Option values converted without pydantic.

typer 0.2x converts every option value through a pydantic TypeAdapter, built on first use: pydantic's
import and the adapters cost ~100-200 ms per process, for any command with one non-flag option.
memdream's options are all plain (str, int, float, bool, Path, an Enum of choices, lists of these), so
:func:`lighten` gives each such parameter a converter of its own, with click-like messages.
Anything else is left to typer. On a typer without lazy runtime parameters this changes nothing.

What it saves, measured (typer 0.29, Python 3.11, 2 cores at load ~2.5, medians of 20 interleaved runs):
`memdream recall x -m M` 139 ms with it, 260 ms without; `memdream recall --help` 89 ms against 197 ms.
`python -X importtime` of that recall: 113 ms of imports with it, 213 ms without (typer._adapters and
pydantic 74 ms of them); building an adapter per option takes the rest. `memdream --help` is the same
either way (~137 ms: the root converts no option value). For scale, `python -c "import typer"` takes
70 ms. The price is two names private to typer, the ``_runtime_param`` slot and
``typer._coercion.RuntimeParam``: the tests that recall, enqueue, dream and log start without pydantic,
and that bad numbers are usage errors, fail the day typer changes them (tests/cli/test_command_line.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

try:  # typer >= 0.2x: lazy runtime parameters (earlier typers convert through click's types, no pydantic)
    from typer._click.exceptions import BadParameter
    from typer._coercion import RuntimeParam
except ImportError:  # pragma: no cover - an older typer: nothing to lighten
    RuntimeParam = object  # type: ignore[assignment,misc]
from typer.core import TyperArgument

Convert = Callable[[Any], Any]


def _whole_number(value: Any) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number.") from None


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ValueError(f"{value!r} is not a number.") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"{value!r} is not a finite number.")
    return number


def _path(value: Any) -> Path:
    return value if isinstance(value, Path) else Path(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "y", "on")


def _choice(kind: type[Enum], case_sensitive: bool) -> Convert:
    def convert(value: Any) -> Enum:
        if isinstance(value, kind):
            return value
        wanted = str(value) if case_sensitive else str(value).lower()
        for member in kind:
            if (str(member.value) if case_sensitive else str(member.value).lower()) == wanted:
                return member
        raise ValueError(f"{value!r} is not one of {', '.join(repr(str(m.value)) for m in kind)}.")

    return convert


def _bounded(convert: Convert, low: Any, high: Any) -> Convert:
    """``convert``, then typer's ``min=`` / ``max=`` checked as click's IntRange checks them."""
    def checked(value: Any) -> Any:
        number = convert(value)
        if low is not None and number < low:
            raise ValueError(f"{number} is smaller than the minimum of {low}.")
        if high is not None and number > high:
            raise ValueError(f"{number} is greater than the maximum of {high}.")
        return number

    return checked


def converter(annotation: Any, case_sensitive: bool = True) -> Convert | None:
    """How to convert one command-line value for ``annotation``; None when typer should."""
    if annotation is str:
        return _text
    if annotation is int:
        return _whole_number
    if annotation is float:
        return _number
    if annotation is Path:
        return _path
    if annotation is bool:
        return _flag
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return _choice(annotation, case_sensitive)
    return None


@dataclass(frozen=True)
class PlainParam(RuntimeParam):
    """typer's runtime contract for one parameter (None and list handling are typer's), converting
    with ``convert``; a bad value is click's BadParameter, so a usage error (exit 2)."""

    convert: Convert = _text

    def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
        try:
            if isinstance(value, (list, tuple)):
                return [self.convert(item) for item in value]
            return self.convert(value)
        except ValueError as error:
            raise BadParameter(str(error), ctx=ctx, param=param) from None


class PlainArgument(TyperArgument):
    """An argument that help shows by its metavar alone (PATH..., QUERY), without a Python type."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def _rich_display_name(self) -> str:
        name = str(self.metavar or self.name or "").upper()
        return f"{name}..." if self.nargs != 1 else name


def lighten(param: Any) -> Any:
    """Give a typer parameter a pydantic-free converter when its type is a plain one; returns it."""
    if type(param) is TyperArgument:
        param.__class__ = PlainArgument  # the same object, only its help line differs
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not hasattr(param, "_runtime_param"):
        return param  # not a typer parameter, or a typer that converts otherwise
    annotation = descriptor.annotation
    many = get_origin(annotation) is list
    info = descriptor.parameter_info
    convert = converter(get_args(annotation)[0] if many else annotation, info.case_sensitive)
    if convert is not None and (getattr(info, "min", None) is not None or getattr(info, "max", None) is not None):
        convert = _bounded(convert, info.min, info.max)
    if convert is not None:
        param._runtime_param = PlainParam(parameter_info=descriptor.parameter_info, annotation=annotation,
                                          convert=convert)
    return param
