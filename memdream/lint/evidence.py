"""The full evidence of cards as lint sees it: inline entries plus what the audit files hold.

A card lists only its newest evidence and ``evidence_count``; the audit files (``op:
"evidence"`` lines) hold the rest. Provenance checks must see every reference, so lint reads
those lines itself, from the audit texts it already read safely (no link followed, size
bounded) and never from the ``.memdream/cache`` pickle that dream keeps: the memory under
review may be a stranger's, and a cache it ships must not decide what lint sees.

Lines are recognized exactly as :mod:`memdream.memory.evidence_log` recognizes them, so lint
checks the evidence that dream folds; a recognized line that is malformed is a finding (dream
silently skips it, so the references on it are lost).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from memdream.lint.findings import Finding
from memdream.memory.card import Evidence
from memdream.memory.evidence_log import EVIDENCE_OP, EvidenceLog

_MARK = '"op": "evidence"'  # what evidence_log filters lines on (json.dumps' default separators)


def read_evidence_log(texts: list[tuple[Path, str]]) -> tuple[EvidenceLog, list[Finding]]:
    """The evidence lines of the audit texts (``audit/*.jsonl``), and a finding per malformed one."""
    held: dict[str, list[Evidence]] = {}
    findings: list[Finding] = []
    for path, text in sorted(texts):  # audit file names sort in run order, as evidence_log reads them
        if path.parent.name != "audit" or _MARK not in text:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if _MARK not in line:
                continue
            entry = _evidence_line(line)
            if entry is None:
                findings.append(Finding(path, number, 1, "audit",
                                        "malformed evidence line: its references are lost to dream and lint"))
                continue
            card_id, added, complete = entry
            held.setdefault(card_id, []).extend(added)
            if not complete:
                findings.append(Finding(path, number, 1, "audit",
                                        "evidence line with a malformed entry (each needs a ref and a stance "
                                        "of supports or contradicts): that entry is lost"))
            findings.extend(Finding(path, number, 1, "audit", problem) for problem in _form_problems(card_id, added))
    return EvidenceLog(held), findings


_REF = re.compile(r"log://[^#\s]+#[^\s]+")  # card.schema.json $defs/evidence/ref
_HASH = re.compile(r"sha256:[0-9a-f]{64}")
# The card an `add` or `supersede` line made, as json.dumps writes it (Operation.to_dict's key order).
# Only those: a card written by hand that a dream later archived or demoted keeps its own evidence.
_CARD_MADE = re.compile(r'"op": "(?:add|supersede)", "card": "([^"\\]+)"')


def well_formed_ref(ref: str) -> bool:
    return _REF.fullmatch(ref) is not None


def _form_problems(card_id: str, added: list[Evidence]) -> Iterator[str]:
    """What the schema would say of held entries, were they on the card: refs are log://<session>#<id>
    and dream cites each event's sha256 (checkable without the raw layer)."""
    for item in added:
        if not well_formed_ref(item.ref):
            yield f"evidence held for {card_id}: {item.ref[:80]!r} is not a reference log://<session>#<id>"
        elif not isinstance(item.hash, str) or _HASH.fullmatch(item.hash) is None:
            yield f"evidence held for {card_id}: {item.ref} cites no sha256:<64 hex digits> hash"


def dream_made_ids(texts: list[tuple[Path, str]], root: Path) -> set[str]:
    """Ids of the cards dream made, as the audit files say (one scan of each text, no parsing)."""
    audit = root / "audit"
    return {card_id for path, text in texts if path.parent == audit and path.suffix == ".jsonl"
            for card_id in _CARD_MADE.findall(text)}


def _evidence_line(line: str) -> tuple[str, list[Evidence], bool] | None:
    """(card id, well-formed entries, whether every entry was well-formed), or None."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("op") != EVIDENCE_OP:
        return None
    card_id, added = record.get("card"), record.get("added")
    if not isinstance(card_id, str) or not isinstance(added, list):
        return None
    entries = [Evidence.from_dict(item) for item in added if _well_formed(item)]
    return card_id, entries, len(entries) == len(added)


def _well_formed(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("ref"), str)
            and item.get("stance", "supports") in ("supports", "contradicts"))


def held_evidence(log: EvidenceLog, card_id: str) -> list[Evidence]:
    """What the audit files hold for one card (its inline entries are read from the card itself)."""
    return log.refs(card_id)


def inline_refs(data: dict[str, Any]) -> set[str]:
    evidence = data.get("evidence")
    return {item["ref"] for item in evidence if isinstance(item, dict) and isinstance(item.get("ref"), str)} \
        if isinstance(evidence, list) else set()


def audit_only(log: EvidenceLog, data: dict[str, Any]) -> Iterator[Evidence]:
    """The card's references that only the audit files hold, each once."""
    card_id = data.get("id")
    if not isinstance(card_id, str):
        return
    seen = inline_refs(data)
    for item in held_evidence(log, card_id):
        if item.ref not in seen:
            seen.add(item.ref)
            yield item


def count_problem(log: EvidenceLog, data: dict[str, Any]) -> str | None:
    """Why a card's ``evidence_count`` disagrees with the evidence there is, or None."""
    count, evidence = data.get("evidence_count"), data.get("evidence")
    if not isinstance(count, int) or isinstance(count, bool) or not isinstance(evidence, list):
        return None  # no count (the inline list is all) or a schema finding
    if count < len(evidence):
        return f"evidence_count is {count} but the card lists {len(evidence)} pieces of evidence"
    total = len(inline_refs(data)) + sum(1 for _ in audit_only(log, data))
    if count > total:
        return (f"evidence_count is {count} but the card and the audit files hold {total} pieces of "
                "evidence: the full list was lost (restore the audit files from git)")
    return None
