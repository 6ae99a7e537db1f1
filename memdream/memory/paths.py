"""Where things live inside a memory folder (memory-layout.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG_FILE = "memdream.yaml"
PLAN_FILE = "plan.yaml"
INDEX_FILE = "INDEX.md"
CARDS_DIR = "cards"
ARCHIVE_DIR = "archive"
AUDIT_DIR = "audit"
RAW_DIR = "raw"
STATE_DIR = ".memdream"

# A card's type and the folder its layer lives in.
LAYER_OF_TYPE = {"fact": "facts", "strategy": "strategies", "lesson": "lessons"}
TYPE_OF_LAYER = {layer: card_type for card_type, layer in LAYER_OF_TYPE.items()}
LAYERS = tuple(LAYER_OF_TYPE.values())


def dream_state_path(state_dir: Path) -> Path:
    """Dream's local state (checkpoint, key statistics) in the memory's ``.memdream/`` folder."""
    return state_dir / "dream" / "state.json"


@dataclass(frozen=True)
class MemoryPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / CONFIG_FILE

    @property
    def plan(self) -> Path:
        return self.root / PLAN_FILE

    @property
    def index(self) -> Path:
        return self.root / INDEX_FILE

    @property
    def cards(self) -> Path:
        return self.root / CARDS_DIR

    @property
    def archive(self) -> Path:
        return self.root / ARCHIVE_DIR

    @property
    def audit(self) -> Path:
        return self.root / AUDIT_DIR

    @property
    def raw(self) -> Path:
        return self.root / RAW_DIR

    @property
    def state(self) -> Path:
        return self.root / STATE_DIR

    def card_file(self, card_type: str, card_id: str, archived: bool = False) -> Path:
        base = self.archive if archived else self.cards
        return base / LAYER_OF_TYPE[card_type] / f"{card_id}.yaml"

    def card_relpath(self, card_type: str, card_id: str, archived: bool = False) -> str:
        """Where a card lives, relative to the root: string work only (dream computes it per card)."""
        return f"{ARCHIVE_DIR if archived else CARDS_DIR}/{LAYER_OF_TYPE[card_type]}/{card_id}.yaml"

    def relative(self, path: Path) -> str:
        """A path as shown to people: relative to the memory root, forward slashes."""
        try:
            return path.relative_to(self.root).as_posix()  # the common case, without touching the disk
        except ValueError:
            pass
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)
