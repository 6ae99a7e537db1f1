"""Lint rules: each reads the loaded memory and yields findings. Adding a rule is one function
and one line in ``RULES``. Rules never raise on bad content: they report it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memdream import schemas
from memdream.errors import MemdreamError
from memdream.lint.documents import Document, MemoryFiles
from memdream.lint.evidence import audit_only, count_problem, dream_made_ids, well_formed_ref
from memdream.lint.findings import Finding
from memdream.lint.messages import describe
from memdream.lint.positions import offset_position
from memdream.lint.raw_check import Keys, read_raw_keys
from memdream.memory.card import ACTIVE_STATUSES, CARD_TYPES, CONFLICTING, INACTIVE_STATUSES
from memdream.memory.paths import AUDIT_DIR
from memdream.memory.refs import parse_ref
from memdream.regex_safety import PROBLEM, catastrophic

if TYPE_CHECKING:
    from memdream.memory.evidence_log import EvidenceLog
    from memdream.memory.tenant_marks import ForeignLine, TenantMarks
    from memdream.redact import Redactor

Rule = Callable[[MemoryFiles], Iterator[Finding]]


def _at(document: Document, path: list[str | int], rule: str, message: str, key: bool = False) -> Finding:
    line, col = document.locator.key(path) if key else document.locator.value(path)
    return Finding(document.path, line, col, rule, message)


def schema_findings(document: Document, schema_name: str) -> Iterator[Finding]:
    if document.parse_error is not None:
        (line, col), message = document.parse_error
        yield Finding(document.path, line, col, document.error_rule, message)
        return
    if schemas.is_valid(schema_name, document.data):  # most documents: no need to collect errors
        return
    for error in schemas.iter_errors(schema_name, document.data):
        (line, col), message = describe(error, document.locator)
        yield Finding(document.path, line, col, "schema", message)


def check_schemas(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 1: every card, the plan and the settings validate against their schema."""
    yield from files.card_schema_findings
    if files.plan is not None:
        yield from schema_findings(files.plan, "plan")
    if files.config is not None and (files.config.data is not None or files.config.parse_error is not None):
        yield from schema_findings(files.config, "config")


def _card_id(document: Document) -> str | None:
    value = document.get("id")
    return value if isinstance(value, str) else None


def _known_id(document: Document) -> str:
    """The id other cards may name: the card's own, or its file name when the card is unreadable
    (so that one broken file is one finding, not a cascade of dangling links)."""
    return _card_id(document) or document.path.stem


def check_placement(files: MemoryFiles) -> Iterator[Finding]:
    """A card's file is named after its id, its folder matches its type, the archive holds only old cards."""
    for document in files.cards:
        card_id, card_file = _card_id(document), document.card_file
        if card_id is None or card_file is None:
            continue
        if document.path.stem != card_id:
            yield _at(document, ["id"], "file-name", f"id {card_id!r} does not match the file name "
                      f"(expected {card_id}.yaml)")
        card_type = document.get("type")
        if isinstance(card_type, str) and card_type in CARD_TYPES \
                and card_type != card_file.folder_type:
            yield _at(document, ["type"], "folder", f"type {card_type!r} does not belong in folder "
                      f"{card_file.layer}/ (a {card_file.folder_type} folder)")
        status = document.get("status")
        if card_file.archived and status in ACTIVE_STATUSES:
            yield _at(document, ["status"], "archive-status",
                      f"archived card has active status {status!r} (use superseded or archived)")
        if not card_file.archived and status in INACTIVE_STATUSES:
            yield _at(document, ["status"], "archive-status",
                      f"card with status {status!r} belongs in archive/, not cards/")


def check_unique_ids(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 2a: ids are unique across cards and archive."""
    first_seen: dict[str, Path] = {}
    for document in files.cards:
        card_id = _card_id(document)
        if card_id is None:
            continue
        if card_id in first_seen:
            other = first_seen[card_id].relative_to(files.root).as_posix()
            yield _at(document, ["id"], "unique-id", f"duplicate id {card_id!r} (also in {other})")
        else:
            first_seen[card_id] = document.path


def check_links(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 2b: supersedes / superseded_by / derived_from name existing cards."""
    known = {_known_id(document) for document in files.cards}
    for document in files.cards:
        for link in ("supersedes", "superseded_by", "derived_from"):
            targets = document.get(link)
            if not isinstance(targets, list):
                continue
            for index, target in enumerate(targets):
                if isinstance(target, str) and target not in known:
                    yield _at(document, [link, index], "dangling-link", f"{link}: no card has id {target!r}")
                elif target == _card_id(document):
                    yield _at(document, [link, index], "dangling-link", f"{link}: a card cannot name itself")
    yield from _check_chain(files)


def _check_chain(files: MemoryFiles) -> Iterator[Finding]:
    """The version chain reads the same both ways: A.superseded_by names B iff B.supersedes names A."""
    by_id: dict[str, Document] = {}
    for document in files.cards:
        by_id.setdefault(_known_id(document), document)  # duplicates are unique-id's finding
    for document in files.cards:
        card_id = _card_id(document)
        targets = document.get("superseded_by")
        if card_id is None or not isinstance(targets, list):
            continue
        for index, target in enumerate(targets):
            successor = by_id.get(target) if isinstance(target, str) else None
            back = successor.get("supersedes") if successor is not None else None
            linked = isinstance(back, list) and card_id in back
            if successor is not None and isinstance(successor.data, dict) and not linked:
                yield _at(document, ["superseded_by", index], "version-chain",
                          f"superseded_by: {target} does not list {card_id} in its supersedes")


def check_fact_keys(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 3: at most one active card per fact key (subject, attribute).

    The one exception is an explicit divergence: several cards on one key, all marked
    ``conflicting``, which recall shows together until evidence settles it.
    """
    from memdream.memory.factkey import FactKey

    holders: dict[FactKey, list[Document]] = {}
    for document in files.cards:
        if document.card_file is not None and document.card_file.archived:
            continue  # an archived card with an active status is reported by check_placement
        subject, attribute, status = document.get("subject"), document.get("attribute"), document.get("status")
        if isinstance(subject, str) and isinstance(attribute, str) and status in ACTIVE_STATUSES:
            # The key as dream and recall read it: "Export Bucket" and "export-bucket" are one key.
            holders.setdefault(FactKey.of(subject, attribute), []).append(document)
    for documents in holders.values():
        if len(documents) < 2 or all(document.get("status") == CONFLICTING for document in documents):
            continue
        first = documents[0]
        subject, attribute = first.get("subject"), first.get("attribute")
        for document in documents[1:]:
            yield _at(document, ["attribute"], "fact-key",
                      f"fact key ({subject}, {attribute}) already has an active card: {_card_id(first)} "
                      f"({first.path.relative_to(files.root).as_posix()}); only cards marked conflicting "
                      "may share a key")


def check_files(files: MemoryFiles) -> Iterator[Finding]:
    """Lint reads only regular files inside the memory: links, devices and FIFOs are findings."""
    for path, problem in files.file_problems.items():
        yield Finding(path, 1, 1, "file", problem)


def check_secrets(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 4: no secret or personal data pattern in any tracked file (same rules as ingest).

    The files checked cannot switch this off: ``redaction.enabled`` is ignored here, user
    ``extra_patterns`` only add rules, and ``allow`` exempts the literal strings it lists.
    """
    redactor, problems = _redactor_for(files)
    yield from problems
    documents = [*files.cards, *(doc for doc in (files.plan, files.config) if doc is not None)]
    texts: list[tuple[Path, str]] = [(doc.path, doc.text) for doc in documents]
    for path, text in [*texts, *files.text_files]:
        for found in redactor.find(text):
            line, col = offset_position(text, found.start)
            yield Finding(path, line, col, "secret",
                          f"possible {found.kind} in a tracked file: remove it (or allow it in redaction.allow)")


def _redactor_for(files: MemoryFiles) -> tuple[Redactor, list[Finding]]:
    """The built-in rules, always on, plus the memory's own usable patterns and allow list.

    A user pattern that does not compile or can backtrack catastrophically is a finding on
    memdream.yaml and is left out; the others still apply.
    """
    from memdream.memory.settings import Settings
    from memdream.redact import Redactor

    config = files.config
    if config is None or not isinstance(config.data, dict) or not schemas.is_valid("config", config.data):
        return Redactor(), []
    settings = Settings.from_mapping(config.data)
    extras = settings.values.get("redaction", {}).get("extra_patterns") or []
    allow = settings.values.get("redaction", {}).get("allow") or []
    usable, problems = [], []
    for index, spec in enumerate(extras):
        where: list[str | int] = ["redaction", "extra_patterns", index, "pattern"]
        pattern = spec.get("pattern") if isinstance(spec, dict) else None
        if isinstance(pattern, str) and catastrophic(pattern):
            name = spec.get("name", "")
            problems.append(_at(config, where, "config",
                                f"redaction.extra_patterns[{index}] ({name}): pattern {PROBLEM}"))
            continue
        try:
            Redactor([spec])
        except MemdreamError as error:
            problems.append(_at(config, where, "config", str(error)))
            continue
        usable.append(spec)
    return Redactor(usable, allow, enabled=True), problems


def check_provenance(files: MemoryFiles) -> Iterator[Finding]:
    """Invariant 5: every evidence ref names a raw event that exists, with the hash it cites
    (only where the raw layer is present: a clone may carry cards without raw events).

    The raw layer is read here, not through the dedup cache of .memdream/: a damaged segment
    or manifest line is a finding with its path and line.
    """
    stored, problems, never_here = read_raw_keys(files.root)
    yield from problems
    if stored is None:
        refs = _ref_count(files)
        if refs:  # a clone (CI) without raw events: say so rather than a silent "ok"
            files.notices.append(f"evidence was not checked against raw events: the raw layer is not here "
                                 f"({refs} refs)")
        return
    # Past a damaged line events are unknown: report the damage, not every ref it hides. A ref not
    # found in a clone that ingested may be in a segment it was cloned without: counted, not reported.
    damaged = any(problem.rule == "raw" for problem in problems)
    unknown = damaged or bool(never_here)
    for document in [*files.cards, *([files.plan] if files.plan is not None else [])]:
        for path, ref, digest in _evidence_refs(document):
            session, event_id = parse_ref(ref)
            found = stored.get((session, event_id))
            if found is None and not unknown:
                yield _at(document, path, "provenance", f"{ref} names no event in the raw layer")
            elif found is not None and digest is not None and not found.cited_by(digest):
                yield _at(document, [*path[:-1], "hash"], "provenance",
                          f"hash of {ref} does not match the raw event (the event or the card changed)")
    yield from _check_held_provenance(files, stored, unknown)
    if never_here:
        files.notices.append(f"{len(never_here)} segment(s) of the raw manifest were never here (cloned without "
                             f"the raw layer): {_not_found(files, stored)} ref(s) not in the segments here were "
                             "not checked")


def _not_found(files: MemoryFiles, stored: Keys) -> int:
    """How many evidence references (on cards and the plan, or held in the audit files) name no event of
    the segments here."""
    log, _ = files.audit_evidence
    shown = sum(1 for document in [*files.cards, *([files.plan] if files.plan else [])]
                for _, ref, _ in _evidence_refs(document) if parse_ref(ref) not in stored)
    held = sum(1 for document in files.cards if isinstance(document.data, dict)
               for item in audit_only(log, document.data)
               if well_formed_ref(item.ref) and parse_ref(item.ref) not in stored)
    return shown + held


def _check_held_provenance(files: MemoryFiles, stored: Keys, damaged: bool) -> Iterator[Finding]:
    """Invariant 5 for the references only the audit files hold: reported at the card, on its
    ``evidence_count`` (or ``evidence``) key, naming the reference."""
    log, _ = files.audit_evidence
    if not log.held:
        return
    for document in files.cards:
        if not isinstance(document.data, dict):
            continue
        where: list[str | int] = ["evidence_count" if "evidence_count" in document.data else "evidence"]
        for item in audit_only(log, document.data):
            if not well_formed_ref(item.ref):
                continue  # reported at its audit line by read_evidence_log
            session, event_id = parse_ref(item.ref)
            found = stored.get((session, event_id))
            if found is None and not damaged:
                yield _at(document, where, "provenance",
                          f"{item.ref} (held in the audit files) names no event in the raw layer", key=True)
            elif found is not None and item.hash is not None and not found.cited_by(item.hash):
                yield _at(document, where, "provenance", f"hash of {item.ref} (held in the audit files) does "
                          "not match the raw event (the event or the audit line changed)", key=True)


def _ref_count(files: MemoryFiles) -> int:
    """The evidence references of the memory: on cards and the plan, and held in the audit files."""
    log, _ = files.audit_evidence
    shown = sum(1 for document in [*files.cards, *([files.plan] if files.plan else [])]
                for _ in _evidence_refs(document))
    held = sum(1 for document in files.cards if isinstance(document.data, dict)
               for _ in audit_only(log, document.data))
    return shown + held


def check_evidence_hashes(files: MemoryFiles) -> Iterator[Finding]:
    """A card that dream made (an audit file names it) cites the hash of every event it rests on:
    without the raw layer (a CI clone) a missing hash is what can still be seen of a hand edit."""
    made = dream_made_ids(files.text_files, files.root)
    for document in files.cards:
        card_id, evidence = _card_id(document), document.get("evidence")
        if card_id not in made or not isinstance(evidence, list):
            continue
        for index, item in enumerate(evidence):
            if isinstance(item, dict) and isinstance(item.get("ref"), str) and "hash" not in item:
                yield _at(document, ["evidence", index, "ref"], "evidence-hash",
                          f"{item['ref']} cites no hash (dream cites the sha256 of every event: was it edited "
                          "by hand?)")


def check_evidence_count(files: MemoryFiles) -> Iterator[Finding]:
    """A card's ``evidence_count`` is what the card and the audit files hold together (and at least
    its inline list): fewer held means audit lines were lost; malformed evidence lines are findings."""
    log, problems = files.audit_evidence
    yield from problems
    for document in files.cards:
        if isinstance(document.data, dict) and document.card_file is not None:
            problem = count_problem(log, document.data)
            if problem is not None:
                yield _at(document, ["evidence_count"], "evidence-count", problem, key=True)


def check_tenant(files: MemoryFiles) -> Iterator[Finding]:
    """A memory holds only its own tenant's memories: an audit line marked with another tenant, a card
    only such lines name, and a reference to such a card or to an event only they cite (on a card, held
    for it in the audit files, or on the plan) are findings (memdream/memory/tenant_marks.py)."""
    from memdream.memory.tenant_marks import read_marks, shown

    own = _own_tenant(files)
    if own is None:
        return
    audit = files.root / AUDIT_DIR
    marks = read_marks(own, [(path, text) for path, text in files.text_files if path.parent == audit])
    if marks.clean:
        return
    for first, count in marks.files:
        yield Finding(first.path, first.line, 1, "tenant",
                      f"run {first.run} ran in the memory of tenant {shown(first.tenant)} ({count} line(s) marked "
                      f"so), not in this one of tenant {shown(own)}: another tenant's audit file was copied or "
                      "merged in")
    log, _ = files.audit_evidence
    for document in files.cards:
        card_id = _card_id(document)
        if card_id is not None and card_id in marks.cards:
            foreign = marks.cards[card_id]
            yield _at(document, ["id"], "tenant", f"{card_id} is a card of tenant {shown(foreign.tenant)} "
                      f"({_where(files, foreign)}), not of tenant {shown(own)}: remove it")
            continue
        yield from _foreign_links(files, document, marks)
        yield from _foreign_refs(files, document, marks, log)
    if files.plan is not None:
        yield from _foreign_refs(files, files.plan, marks, None)


def _own_tenant(files: MemoryFiles) -> str | None:
    """memdream.yaml's tenant (``default`` when it names none); None when it cannot say (a schema finding)."""
    from memdream.memory.tenants import DEFAULT_TENANT

    data = files.config.data if files.config is not None else None
    if data is None and files.config is not None and files.config.parse_error is None:
        return DEFAULT_TENANT  # an empty memdream.yaml: every setting at its default
    tenant = data.get("tenant", DEFAULT_TENANT) if isinstance(data, dict) else None
    return tenant if isinstance(tenant, str) else None


def _where(files: MemoryFiles, line: ForeignLine) -> str:
    return f"{line.path.relative_to(files.root).as_posix()}:{line.line}, run {line.run}"


def _foreign_links(files: MemoryFiles, document: Document, marks: TenantMarks) -> Iterator[Finding]:
    from memdream.memory.tenant_marks import shown

    for link in ("supersedes", "superseded_by", "derived_from"):
        targets = document.get(link)
        for index, target in enumerate(targets if isinstance(targets, list) else []):
            if isinstance(target, str) and target in marks.cards:
                foreign = marks.cards[target]
                yield _at(document, [link, index], "tenant", f"{link}: {target} is a card of tenant "
                          f"{shown(foreign.tenant)} ({_where(files, foreign)}), not of tenant {shown(marks.tenant)}")


def _foreign_refs(files: MemoryFiles, document: Document, marks: TenantMarks,
                  log: EvidenceLog | None) -> Iterator[Finding]:
    """References to events only another tenant's runs cite: shown on the card or plan, or held for it."""
    from memdream.memory.tenant_marks import shown

    for path, ref, _ in _evidence_refs(document):
        if ref in marks.refs:
            yield _at(document, path, "tenant", f"{ref} is an event of tenant {shown(marks.refs[ref].tenant)} "
                      f"({_where(files, marks.refs[ref])}), not of tenant {shown(marks.tenant)}")
    if log is None or not isinstance(document.data, dict):
        return
    where: list[str | int] = ["evidence_count" if "evidence_count" in document.data else "evidence"]
    for item in audit_only(log, document.data):
        if item.ref in marks.refs:
            foreign = marks.refs[item.ref]
            yield _at(document, where, "tenant", f"{item.ref} (held in the audit files) is an event of tenant "
                      f"{shown(foreign.tenant)} ({_where(files, foreign)}), not of tenant {shown(marks.tenant)}",
                      key=True)


def _evidence_refs(document: Document) -> Iterator[tuple[list[str | int], str, str | None]]:
    """(JSON path, ref, cited hash) of every well-formed evidence reference in a card or the plan."""
    data = document.data
    if not isinstance(data, dict):
        return
    if isinstance(data.get("evidence"), list):
        for index, item in enumerate(data["evidence"]):
            if isinstance(item, dict) and isinstance(item.get("ref"), str) and "#" in item["ref"]:
                digest = item.get("hash") if isinstance(item.get("hash"), str) else None
                yield ["evidence", index, "ref"], item["ref"], digest
    for section in ("next", "done"):
        items = data.get(section)
        for index, item in enumerate(items if isinstance(items, list) else []):
            refs = item.get("evidence") if isinstance(item, dict) else None
            for position, ref in enumerate(refs if isinstance(refs, list) else []):
                if isinstance(ref, str) and "#" in ref:
                    yield [section, index, "evidence", position], ref, None


RULES: dict[str, Rule] = {
    "file": check_files,
    "schema": check_schemas,
    "placement": check_placement,
    "unique-id": check_unique_ids,
    "links": check_links,
    "fact-key": check_fact_keys,
    "secret": check_secrets,
    "provenance": check_provenance,
    "evidence-count": check_evidence_count,
    "evidence-hash": check_evidence_hashes,
    "tenant": check_tenant,
}
