"""YAML reading and writing with stable output, so that git diffs show only real changes.

Reading: the C loader when libyaml is present; timestamps stay strings (cards compare and
store them as text). Writing: keys in a fixed order given by the caller, block style, no
aliases, unicode kept, multi-line strings as literal blocks. Writes are atomic.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that keeps ISO timestamps as strings."""


# Copy the resolver table without the timestamp rule: a card's timestamps must round-trip as text.
Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


class Dumper(_BaseDumper):  # type: ignore[misc]
    """Safe dumper: never emits anchors/aliases, literal blocks for multi-line text."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    if "\n" in text:
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", text)


Dumper.add_representer(str, _represent_str)


def loads(text: str) -> Any:
    return yaml.load(text, Loader=Loader)  # noqa: S506 - Loader is a SafeLoader subclass


def load_bytes(data: bytes) -> Any:
    return yaml.load(data.decode("utf-8"), Loader=Loader)  # noqa: S506


def load_file(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=Loader)  # noqa: S506


def ordered(data: Mapping[str, Any], key_order: Iterable[str]) -> dict[str, Any]:
    """Return ``data`` with keys in ``key_order`` first, then any others sorted."""
    order = list(key_order)
    known = [key for key in order if key in data]
    rest = sorted(key for key in data if key not in set(order))
    return {key: data[key] for key in known + rest}


def dumps(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
        indent=2,
    )


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def dump_file(path: Path, data: Any) -> None:
    write_atomic(path, dumps(data))
