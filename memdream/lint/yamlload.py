"""Lint's YAML reading: the data :func:`memdream.yamlio.loads` returns, built in half the time.

PyYAML's constructor is generic (generators, per-node bookkeeping, merge keys, recursive
structures) and costs more than parsing itself. Memory files are plain: mappings, lists and
scalars of the standard tags. So lint composes the node tree with the same loader (same
parser, same resolver, same errors) and turns the common nodes into data in one tight
function. Anything out of the ordinary (a merge key, an explicit or unusual tag, a key that is
not a scalar, nesting past the limit, a possible alias) goes through ``yamlio.loads`` itself,
so every refusal and every value stays exactly what the shared reader gives.
"""

from __future__ import annotations

from typing import Any

import yaml

from memdream import yamlio

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalars the shared loader builds with its own constructor (int "0x1f", float ".inf", bool "yes"...).
_OTHER_SCALARS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                            "tag:yaml.org,2002:null"})


class _Loader(yamlio.Loader):
    """The shared loader, resolving the common scalars without its generic loop: a scalar that is
    quoted, or whose first character starts no implicit rule (int, float, bool, null...), is a
    string, which is what the generic loop concludes too."""

    _first_characters = frozenset(key for key in yamlio.Loader.yaml_implicit_resolvers if key)

    _seen: dict[str, str] = {}  # plain scalar -> tag, for the short ones (keys, enum values)

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is not yaml.ScalarNode:  # no path resolvers: the default tags
            return _SEQ if kind is yaml.SequenceNode else _MAP
        if not implicit[0] or (value and value[0] not in self._first_characters):
            return _STR
        tag = self._seen.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= 32 and len(self._seen) < 4096:
                self._seen[value] = tag
        return tag

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        """No path resolvers are registered (checked below): nothing to track."""

    def ascend_resolver(self) -> None:
        """See :meth:`descend_resolver`."""


# The shortcuts above hold only while the shared loader has no wildcard and no path resolvers.
_COMPOSER: type = _Loader if None not in yamlio.Loader.yaml_implicit_resolvers \
    and not yamlio.Loader.yaml_path_resolvers else yamlio.Loader


class _Unusual(Exception):
    """A node the fast path leaves to ``yamlio.loads``."""


class _Builder:
    """Turns composed nodes into data; scalars other than strings use the shared loader's constructors."""

    def __init__(self) -> None:
        self.constructor = yamlio.Loader("")

    def build(self, node: yaml.Node, depth: int = 1) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node)
        if depth > yamlio.MAX_DEPTH:
            raise _Unusual("too deep: let yamlio point at the place")
        if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            # Strings inline: most items are, and a call per item is what costs here.
            return [item.value if item.tag == _STR and type(item) is yaml.ScalarNode else self.build(item, depth + 1)
                    for item in node.value]
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            return self._mapping(node, depth)
        raise _Unusual(node.tag)

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _STR:
            return node.value
        if node.tag in _OTHER_SCALARS:
            return self.constructor.yaml_constructors[node.tag](self.constructor, node)
        raise _Unusual(node.tag)

    def _mapping(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        data: dict[Any, Any] = {}
        raw_keys: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _Unusual("a key that is not a scalar")
            if key_node.value in raw_keys:
                raise _Unusual("duplicate key: yamlio reports it")
            raw_keys.add(key_node.value)
            key = key_node.value if key_node.tag == _STR else self._scalar(key_node)
            if value_node.tag == _STR and type(value_node) is yaml.ScalarNode:
                data[key] = value_node.value
            else:
                data[key] = self.build(value_node, depth + 1)
        return data


_builder: _Builder | None = None


def loads(text: str) -> Any:
    """Exactly :func:`memdream.yamlio.loads` (same data, same exceptions), faster on plain files."""
    if len(text) > yamlio.MAX_YAML_BYTES or "&" in text or "*" in text:
        return yamlio.loads(text)
    node = yaml.compose(text, Loader=_COMPOSER)  # noqa: S506 - a SafeLoader subclass
    if node is None:
        return None
    global _builder
    if _builder is None:
        _builder = _Builder()
    try:
        return _builder.build(node)
    except _Unusual:
        return yamlio.loads(text)
