"""YAML reading and writing with stable output, so that git diffs show only real changes.

Reading: the C loader when libyaml is present; timestamps stay strings (cards compare and
store them as text). Memory files may be hostile (a pull request), so reading refuses aliases,
anchors, duplicate keys, deep nesting and files over 1 MiB before building anything.
Writing: keys in a fixed order given by the caller, block style, no
aliases, unicode kept, multi-line strings as literal blocks. Writes are atomic.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


MIB = 1 << 20
MAX_YAML_BYTES = MIB  # per memory file: a card is a few hundred bytes, a plan a few kilobytes
MAX_DEPTH = 32  # nested mappings and lists; a card needs 3
ALIAS_PROBLEM = "YAML aliases and anchors are not allowed"
_TOO_DEEP = f"YAML nested deeper than {MAX_DEPTH} levels is not allowed"


class Loader(_BaseLoader):  # type: ignore[misc]
    """Safe loader that keeps ISO timestamps as strings and refuses duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [key_node.value for key_node, _ in node.value if isinstance(key_node, yaml.ScalarNode)]
        if len(set(keys)) != len(keys):
            _raise_duplicate(node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


def _raise_duplicate(node: yaml.MappingNode) -> None:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            if key_node.value in seen:
                raise UnsafeYAML(f"duplicate key {key_node.value!r}", _position(key_node.start_mark))
            seen.add(key_node.value)


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
    """The data of one YAML document, refusing what a canonical memory file never holds.

    Memory files may come from a stranger's pull request, so before the document is built:
    aliases and anchors are refused (nested aliases expand to billions of nodes: "billion
    laughs"), as are texts over :data:`MAX_YAML_BYTES`, nesting deeper than :data:`MAX_DEPTH`
    and duplicate keys. Each raises :class:`UnsafeYAML` (a ``yaml.MarkedYAMLError``).
    """
    if len(text) > MAX_YAML_BYTES:
        raise UnsafeYAML(f"file is larger than {MAX_YAML_BYTES // MIB} MiB (the limit for a memory file)", (0, 0))
    if "&" in text or "*" in text:  # without these characters there is no anchor and no alias
        _check_events(text)
    data = yaml.load(text, Loader=Loader)  # noqa: S506 - Loader is a SafeLoader subclass
    if _too_deep(data):
        _check_events(text)  # to point at the place
        raise UnsafeYAML(_TOO_DEEP, (0, 0))
    return data


def load_bytes(data: bytes) -> Any:
    if len(data) > MAX_YAML_BYTES:
        raise UnsafeYAML(f"file is larger than {MAX_YAML_BYTES // MIB} MiB (the limit for a memory file)", (0, 0))
    return loads(data.decode("utf-8"))


def load_file(path: Path) -> Any:
    """:func:`loads` of a file, read no further than the size limit (a file may be /dev/zero)."""
    with open(path, "rb") as handle:
        return load_bytes(handle.read(MAX_YAML_BYTES + 1))


def load_mapping(path: Path) -> dict[str, Any] | None:
    """:func:`load_file` of a file that should hold a mapping (plan.yaml); None when it is missing or
    holds something else (lint reports that; a reader takes nothing from it)."""
    try:
        data = load_file(path)
    except FileNotFoundError:
        return None
    return data if isinstance(data, dict) else None


class UnsafeYAML(yaml.MarkedYAMLError):
    """A YAML text memdream refuses to build: aliases, anchors, too big, too deep, duplicate keys."""

    def __init__(self, problem: str, position: tuple[int, int]) -> None:
        line, column = position
        super().__init__(problem=problem, problem_mark=yaml.Mark("<memory file>", 0, line, column, None, 0))


def _check_events(text: str) -> None:
    """Raise :class:`UnsafeYAML` at the first anchor, alias or too deep collection (events only:
    nothing is built, so this is safe on any input)."""
    depth = 0
    for event in yaml.parse(text, Loader=Loader):  # noqa: S506
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise UnsafeYAML(ALIAS_PROBLEM, _position(event.start_mark))
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise UnsafeYAML(_TOO_DEEP, _position(event.start_mark))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _position(mark: Any) -> tuple[int, int]:
    return (mark.line, mark.column) if mark is not None else (0, 0)


def _too_deep(data: Any) -> bool:
    """Whether collections nest deeper than :data:`MAX_DEPTH` (a tree: aliases were refused)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


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


@functools.cache
def umask_mode() -> int:
    """The mode ``open()`` gives a new file under this process's umask (0644 under 022). Read once: the
    umask is read by setting it, and a thread creating a file meanwhile would get the wrong one."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: Path, text: str, sync: bool = True) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half.

    The file gets the umask's mode, as git gives the files it checks out: mkstemp's 0600 would make
    cards, plan and index private in a repository that people review and share. ``sync=False`` leaves
    out the fsync, for a file a crash cannot make worse than lost: one a journal puts back (dream's
    cards, see memdream/dream/pipeline.py) or local state rebuilt when it is damaged."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), umask_mode())
            if sync:
                os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def dump_file(path: Path, data: Any) -> None:
    write_atomic(path, dumps(data))
