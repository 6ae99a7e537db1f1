"""The memory folder as an object: settings, plan, cards and archive, read and written atomically."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from memdream import schemas, yamlio
from memdream.errors import InvalidMemory
from memdream.memory.card import Card
from memdream.memory.paths import ARCHIVE_DIR, CARDS_DIR, LAYERS, TYPE_OF_LAYER, MemoryPaths
from memdream.memory.plan import Plan
from memdream.memory.settings import Settings


@dataclass(frozen=True)
class CardFile:
    """Where one card file sits: its layer folder and whether it is in the archive."""

    path: Path
    layer: str
    archived: bool

    @property
    def relpath(self) -> str:
        """Relative to the memory root, by string work (a dream computes it for every card)."""
        return f"{ARCHIVE_DIR if self.archived else CARDS_DIR}/{self.layer}/{self.path.name}"

    @property
    def folder_type(self) -> str:
        return TYPE_OF_LAYER[self.layer]


def card_locations(root: Path | str, include_archive: bool = True) -> Iterator[tuple[str, str, bool]]:
    """(path relative to ``root``, layer, archived) of every card file, in the order of
    :meth:`Memory.card_files`: strings only, since the card cache walks ten thousand of them."""
    bases = [(CARDS_DIR, False), (ARCHIVE_DIR, True)] if include_archive else [(CARDS_DIR, False)]
    for base, archived in bases:
        for layer in LAYERS:
            try:  # scandir: the entry's type comes with the listing, no stat per file
                entries = sorted(os.scandir(os.path.join(root, base, layer)), key=lambda entry: entry.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                name = entry.name
                if name.endswith((".yaml", ".yml")) and not name.startswith(".") and entry.is_file():
                    yield f"{base}/{layer}/{name}", layer, archived


@dataclass
class Memory:
    root: Path
    paths: MemoryPaths = field(init=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.paths = MemoryPaths(self.root)

    @cached_property
    def settings(self) -> Settings:
        return Settings.load(self.paths.config, cache_dir=self.paths.state / "cache")

    def card_files(self, include_archive: bool = True) -> Iterator[CardFile]:
        """Every card file, in a stable order (layer, then file name)."""
        for relpath, layer, archived in card_locations(self.root, include_archive):
            yield CardFile(self.root / relpath, layer, archived)

    def read_card(self, card_file: CardFile) -> Card:
        """Load and validate one card; an invalid card stops the command with one line."""
        shown = self.paths.relative(card_file.path)
        try:
            data = yamlio.load_file(card_file.path)
        except Exception as error:  # yaml.YAMLError, UnicodeDecodeError
            raise InvalidMemory(f"{shown}: not valid YAML: {' '.join(str(error).split())}") from None
        errors = schemas.iter_errors("card", data)
        if errors:
            raise InvalidMemory(f"{shown}: {errors[0].message} (run `memdream lint`)")
        return Card.from_dict(data)

    def load_cards(self, include_archive: bool = True) -> list[Card]:
        return [self.read_card(card_file) for card_file in self.card_files(include_archive)]

    def save_card(self, card: Card, archived: bool = False) -> Path:
        path = self.paths.card_file(card.type, card.id, archived=archived)
        yamlio.dump_file(path, card.to_dict())
        return path

    def load_plan(self) -> Plan:
        path = self.paths.plan
        try:
            data = yamlio.load_file(path)
        except FileNotFoundError:
            raise InvalidMemory("plan.yaml is missing (run `memdream init` to create a memory)") from None
        except Exception as error:
            raise InvalidMemory(f"plan.yaml: not valid YAML: {' '.join(str(error).split())}") from None
        errors = schemas.iter_errors("plan", data)
        if errors:
            raise InvalidMemory(f"plan.yaml: {errors[0].message} (run `memdream lint`)")
        return Plan.from_dict(data)

    def save_plan(self, plan: Plan) -> None:
        yamlio.dump_file(self.paths.plan, plan.to_dict())
