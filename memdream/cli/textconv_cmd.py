"""memdream textconv: the git diff driver for cards and the plan (see .gitattributes)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def textconv(path: Annotated[Path, typer.Argument(help="File git asks to convert.", metavar="PATH")]) -> None:
    """Print a card or plan in canonical form, so that git diffs ignore pure formatting changes."""
    from memdream import yamlio
    from memdream.memory.card import CARD_KEY_ORDER, EVIDENCE_KEY_ORDER
    from memdream.memory.plan import PLAN_KEY_ORDER

    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        data = yamlio.loads(text)
    except Exception:  # not YAML: show it as it is rather than break `git diff`
        sys.stdout.write(text)
        return
    if not isinstance(data, dict):
        sys.stdout.write(text)
        return
    order = CARD_KEY_ORDER if "statement" in data else PLAN_KEY_ORDER
    canonical = yamlio.ordered(data, order)
    if isinstance(canonical.get("evidence"), list):
        canonical["evidence"] = [
            yamlio.ordered(item, EVIDENCE_KEY_ORDER) if isinstance(item, dict) else item
            for item in canonical["evidence"]
        ]
    sys.stdout.write(yamlio.dumps(canonical))
