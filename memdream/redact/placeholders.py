"""What a redacted secret becomes: ``[REDACTED:<kind>]``, and the kind names that may fill it."""

from __future__ import annotations

import re

PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_-]+\]")
# Schema of memdream.yaml allows exactly these names; anything else could break the placeholder.
KIND_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")


def placeholder(kind: str) -> str:
    """The text that replaces a secret of ``kind``: ``[REDACTED:<kind>]``."""
    return f"[REDACTED:{kind}]"
