"""Map a JSON path inside a YAML document back to the line and column of its node.

Composing a node tree is slow, so it is only done for files that have a finding.
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from memdream.yamlio import Loader

Position = tuple[int, int]  # 1-based line, 1-based column


def _mark(node: yaml.Node) -> Position:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class NodeLocator:
    """Positions of the nodes of one YAML text, looked up by JSON path."""

    def __init__(self, text: str) -> None:
        try:
            self.root: yaml.Node | None = yaml.compose(text, Loader=Loader)  # noqa: S506
        except yaml.YAMLError:
            self.root = None

    def _walk(self, path: Sequence[str | int]) -> tuple[yaml.Node | None, yaml.Node | None]:
        """The node at ``path`` and, when its parent is a mapping, the key node naming it."""
        node, key_node = self.root, None
        for part in path:
            key_node = None
            if isinstance(node, yaml.MappingNode):
                match = next(((k, v) for k, v in node.value if k.value == str(part)), None)
                if match is None:
                    return node, None
                key_node, node = match
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
            else:
                return node, None
        return node, key_node

    def value(self, path: Sequence[str | int]) -> Position:
        """Where the value at ``path`` starts (the closest existing ancestor if it is missing)."""
        node, _ = self._walk(path)
        return _mark(node) if node is not None else (1, 1)

    def key(self, path: Sequence[str | int]) -> Position:
        """Where the key naming ``path`` starts; the value's position for sequence items."""
        node, key_node = self._walk(path)
        if key_node is not None:
            return _mark(key_node)
        return _mark(node) if node is not None else (1, 1)


def offset_position(text: str, offset: int) -> Position:
    """Line and column of a character offset (for text findings such as secrets)."""
    line = text.count("\n", 0, offset) + 1
    line_start = text.rfind("\n", 0, offset) + 1
    return (line, offset - line_start + 1)
