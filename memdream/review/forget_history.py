"""`memdream forget --purge-history`: every commit of the memory rewritten by the forget's own rules.

Each version of each file in history is cleaned as the forget cleaned the working tree
(:mod:`.erasure`), chosen by its path: card files that are erased leave every commit; other cards, audit
files, the plan, INDEX.md and raw segments (when ``ingest.track_raw`` tracks them) lose what is erased;
any other text file and every commit message has the subject's name (or the session id, or the card id)
replaced. The raw manifest keeps its old lines: hashes of segments, nothing of their content.

Before the rewrite, history is searched for the card files to erase that the working tree no longer
has (a version about the subject that a later dream renamed, a card a forget without --purge-history
already erased): by the same test, then along their version chains. The rules leave files that hold
nothing erased byte for byte, so the forget's own commit, already clean, comes out the same.
"""

from __future__ import annotations

from typing import Any

import yaml

from memdream import gitops, yamlio
from memdream.memory.paths import ARCHIVE_DIR, AUDIT_DIR, CARDS_DIR, INDEX_FILE, PLAN_FILE
from memdream.memory.store import Memory
from memdream.review.erasure import Erasure

_CARD_DIRS = (f"{CARDS_DIR}/", f"{ARCHIVE_DIR}/")
_SEGMENTS = "raw/segments/"


def purge(memory: Memory, erasure: Erasure) -> None:
    """Rewrite the memory's whole history without what ``erasure`` erases; no old object is kept."""
    erasure.cards |= historical_cards(memory, erasure)
    gitops.rewrite_history(memory.root, lambda path, data: clean_blob(erasure, path, data),
                           lambda message: _clean_message(erasure, message))


def historical_cards(memory: Memory, erasure: Erasure) -> set[str]:
    """Ids of the card versions anywhere in history that the erasure erases, and their chains."""
    blobs = gitops.tracked_blobs(memory.root, [CARDS_DIR, ARCHIVE_DIR])
    cards = [data for data in map(_card_data, gitops.blob_texts(memory.root, [sha for _, sha in blobs]))
             if data is not None]
    found = {str(data["id"]) for data in cards if erasure.erased_card(data)}
    grown = True
    while grown:  # along the version chains, as the selection follows them
        linked = {str(other) for data in cards if data["id"] in found
                  for name in ("supersedes", "superseded_by") for other in data.get(name) or []}
        grown = not linked <= found
        found |= linked
    return found


def clean_blob(erasure: Erasure, path: str, data: bytes) -> bytes | None:
    """One version of the file ``path`` without what is erased; None: the file leaves that commit."""
    if path.startswith(_SEGMENTS):
        return erasure.clean_segment(data)
    if path == "raw/MANIFEST.jsonl":
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # memdream writes no binary file; one a person added is left as it is
    if path.startswith(_CARD_DIRS) and path.endswith(".yaml"):
        return _clean_card_text(erasure, text, data)
    if path.startswith(f"{AUDIT_DIR}/"):
        cleaned = erasure.clean_audit_text(text)
    elif path == PLAN_FILE:
        cleaned = _clean_plan_text(erasure, text)
    elif path == INDEX_FILE:
        cleaned = erasure.clean_index_text(text)
    else:
        cleaned = erasure.redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


def _clean_card_text(erasure: Erasure, text: str, data: bytes) -> bytes | None:
    card = _parsed(text)
    if not isinstance(card, dict):
        return erasure.redact(text).encode("utf-8")
    cleaned = erasure.clean_card(card)
    if cleaned is None:
        return None
    return data if cleaned == card else yamlio.dumps(cleaned).encode("utf-8")


def _clean_plan_text(erasure: Erasure, text: str) -> str:
    plan = _parsed(text)
    if not isinstance(plan, dict):
        return erasure.redact(text)
    cleaned = erasure.clean_plan(plan)
    return text if cleaned == plan else yamlio.dumps(cleaned)


def _clean_message(erasure: Erasure, message: bytes) -> bytes:
    text = message.decode("utf-8", "surrogateescape")
    cleaned = erasure.clean_message(text)
    return message if cleaned == text else cleaned.encode("utf-8", "surrogateescape")


def _card_data(text: str | None) -> dict[str, Any] | None:
    data = _parsed(text) if text is not None else None
    return data if isinstance(data, dict) and isinstance(data.get("id"), str) else None


def _parsed(text: str) -> Any:
    try:
        return yamlio.loads(text)
    except (yaml.YAMLError, ValueError):
        return None
