"""Procedures: one card per project saying how it is built, tested, linted, formatted and run.

From the procedure pieces (:mod:`memdream.dream.extractors.procedures`, one per successful command,
and one per test run whose tests ran and failed), per purpose: the commands (program and subcommand:
``cargo test``, ``npm run build``) that succeeded at least twice, in one session or across sessions,
compete, and the one run most recently wins (a project that moved from pytest to cargo test tests with
cargo). Its stable form is what its newest ``WINDOW`` successful runs share: the flags most of them pass
(with the value all of them give, else a placeholder), the arguments most of them pass, and the folder
most of them ran from (a run command adds the local address its newest run said it serves); file lists,
messages and one-off arguments do not recur, so they do not show. A test command given files or
names in two runs or more also shows how to run one. Test runs whose tests failed count only where no
passing test command is settled: they are how the project is tested, but a developer re-running
failing tests narrows them (``-t <name>``, ``-k <expr>``), and those forms must not outvote the
command that passes.

The card is a strategy keyed (project, ``procedures``), its evidence the runs it came from. A new
card passes admission like any new key (:func:`memdream.dream.admission.assess`); a changed value
supersedes the old card and the user's rejection archives it, as :mod:`memdream.dream.verify` does
for every card; a value the user rejected is not made again from the same kind of runs.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from memdream.dream.admission import assess
from memdream.dream.extractors.procedures import NAME, PURPOSES, Invocation, decode
from memdream.dream.model import DreamContext, FactKey, KeyStats, Piece, Refusal
from memdream.dream.values import same_value
from memdream.dream.versions import USER_WORD, Proposal, Version, finish_versions, materialize, rejections
from memdream.memory.card import ARCHIVED, Card

WINDOW = 10  # the newest successful runs of a command that decide its stable form
MIN_RUNS = 2  # a command run once with flags or arguments is an experiment, not how the project works
LABELS = {"check": "all checks"}  # how a purpose reads on the card, where its name would not
_EXTENSION = re.compile(r"[^/.]\.[A-Za-z][A-Za-z0-9]{0,4}$")


@dataclass(frozen=True)
class Seen:
    """One successful run of a command, and its piece of evidence."""

    invocation: Invocation
    piece: Piece


@dataclass(frozen=True)
class Procedure:
    """The command that serves a purpose now, in its stable form."""

    purpose: str
    command: str
    folder: str | None
    one: str | None  # how to run one file or one test: "one file: `pytest -q <file>`"
    runs: list[Seen]
    serves: str | None = None  # the local address the newest run that said one serves


def _order(piece: Piece) -> tuple[str, str]:
    return (piece.ts, piece.ref)


def history(ctx: DreamContext, key: FactKey) -> list[Seen]:
    """The key's runs, kept between dreams (the newest ``WINDOW`` of each command), oldest first."""
    stats = ctx.key_stats.setdefault(key, KeyStats())
    pieces = {(piece.ref, piece.value): piece for piece in [*stats.pending, *ctx.pieces.get(key, [])]
              if piece.source == NAME and piece.stance == "supports"}
    by_command: dict[tuple[str, str, bool], list[Seen]] = {}  # failed runs apart: they never push passing ones out
    for piece in sorted(pieces.values(), key=_order):
        invocation = decode(piece.value or "")
        if invocation is not None:
            command = (invocation.purpose, invocation.head, invocation.failed)
            by_command.setdefault(command, []).append(Seen(invocation, piece))
    kept = sorted((seen for runs in by_command.values() for seen in runs[-WINDOW:]), key=lambda s: _order(s.piece))
    stats.pending = [seen.piece for seen in kept]
    return kept


def procedures(seen: list[Seen]) -> list[Procedure]:
    """Per purpose, the newest command that is how the project works (:func:`_settled`), in its
    stable form: from the passing runs, else (a project whose tests only ever ran failing) from all."""
    best = _best([each for each in seen if not each.invocation.failed])
    for purpose, runs in _best(seen).items():
        best.setdefault(purpose, runs)
    return [stable(purpose, best[purpose]) for purpose in PURPOSES if purpose in best]


def _best(seen: list[Seen]) -> dict[str, list[Seen]]:
    """Per purpose, the runs of the newest settled command among ``seen``."""
    by_command: dict[tuple[str, str], list[Seen]] = {}
    for each in seen:
        by_command.setdefault((each.invocation.purpose, each.invocation.head), []).append(each)
    recurring = any(len(runs) >= MIN_RUNS for runs in by_command.values())
    best: dict[str, list[Seen]] = {}
    for (purpose, _), runs in by_command.items():
        if _settled(purpose, runs, recurring) and (purpose not in best
                                                   or _order(runs[-1].piece) > _order(best[purpose][-1].piece)):
            best[purpose] = runs
    return best


def _settled(purpose: str, runs: list[Seen], recurring: bool) -> bool:
    """Whether a command is how the project works: it succeeded ``MIN_RUNS`` times; or, in a project
    where some command did, once as the bare runner (``npm run build``, ``cargo test``: no flag or
    argument to try anything out with). A bare install (``npm install``) says nothing a lockfile
    does not, so it needs the two runs."""
    if len(runs) >= MIN_RUNS:
        return True
    return recurring and purpose != "install" and any(not seen.invocation.items for seen in runs)


def _placeholder(values: set[Any]) -> str:
    """What stands for a flag's value that differs between runs."""
    words = {str(value) for value in values}
    if any(word == "<text>" for word in words):
        return "<text>"
    if any("/" in word or "." in word for word in words):
        return "<file>"
    return "<n>" if all(word.isdigit() for word in words) else "<name>"


def _flags(runs: list[Seen]) -> dict[tuple[int, str], list[tuple[Any, ...]]]:
    """Per flag (side of ``--``, name), the values each run that passes it gives it."""
    found: dict[tuple[int, str], list[tuple[Any, ...]]] = {}
    for each in runs:
        values: dict[tuple[int, str], list[Any]] = {}
        for item in each.invocation.items:
            if item[0] == "flag":
                values.setdefault((item[1], item[2]), []).append(item[3])
        for flag, given in values.items():
            found.setdefault(flag, []).append(tuple(given))
    return found


def stable(purpose: str, runs: list[Seen]) -> Procedure:
    """What most of the newest runs of one command share, as one command line."""
    runs = runs[-WINDOW:]
    most = len(runs) / 2
    flags = {flag: given for flag, given in _flags(runs).items() if len(given) > most}
    args = Counter(arg for each in runs for arg in {(item[1], item[2]) for item in each.invocation.items
                                                    if item[0] == "arg"})
    kept = {arg for arg, count in args.items() if count > most and not _one_file(str(arg[1]))}
    template = max(runs, key=lambda each: (sum(1 for item in each.invocation.items if _key(item) in flags
                                               or _key(item) in kept), _order(each.piece)))
    sides = _sides(template.invocation, flags, kept)
    if purpose == "run" and sum(1 for each in runs if _passes_other(each, flags, kept)) > most:
        sides[1].append("<args>")  # what most runs hand the program differs every time: its input
    separated = bool(sides[1]) or sum(1 for each in runs if ("sep", "--") in each.invocation.items) > most
    head = template.invocation.head
    one = _one(purpose, runs, kept, head, sides, separated)
    # The address of the newest run that ran as the stable form shows (`--port 3001` once serves elsewhere).
    serves = next((each.invocation.serves for each in reversed(runs) if each.invocation.serves
                   and all(_key(item) in flags or _key(item) in kept for item in each.invocation.items
                           if item[0] in ("flag", "arg"))), None)
    return Procedure(purpose, _join(head, sides, separated), _folder(runs), one, runs, serves)


def _sides(template: Invocation, flags: dict[tuple[int, str], list[tuple[Any, ...]]],
           kept: set[tuple[int, str]]) -> tuple[list[str], list[str]]:
    """The words before and after ``--``, in the template run's order: the flags most runs pass, with
    the value every one of them gives it, else a placeholder; the arguments most runs pass."""
    sides: tuple[list[str], list[str]] = ([], [])
    shown: set[tuple[int, str]] = set()
    for item in template.items:
        if item[0] == "flag" and (item[1], item[2]) in flags and (item[1], item[2]) not in shown:
            given = flags[(item[1], item[2])]
            if len(set(given)) == 1:
                sides[item[1]].extend(word for value in given[0] for word in (item[2], value) if word is not None)
            else:
                values = {value for each in given for value in each} - {None}
                sides[item[1]].extend([item[2], _placeholder(values)] if values else [item[2]])
            shown.add((item[1], item[2]))
        elif item[0] == "arg" and (item[1], item[2]) in kept:
            sides[item[1]].append(str(item[2]))
    return sides


def _passes_other(run: Seen, flags: dict[tuple[int, str], list[tuple[Any, ...]]], kept: set[tuple[int, str]]) -> bool:
    """Whether ``run`` hands the program (after ``--``) something the stable form does not show."""
    return any(item[0] in ("flag", "arg") and item[1] == 1 and _key(item) not in flags and _key(item) not in kept
               for item in run.invocation.items)


def _one_file(word: str) -> bool:
    """A file (``tests/test_api.py``) or a glob (``*.ts``) names this run's target, never how the project
    runs, however often it was retried; a folder (``.``, ``./...``, ``tests``) may well be how."""
    return "*" in word or "?" in word or bool(_EXTENSION.search(word))


def _key(item: tuple[Any, ...]) -> tuple[int, str] | None:
    return (item[1], item[2]) if item[0] in ("flag", "arg") else None


def _join(head: str, sides: tuple[list[str], list[str]], separated: bool) -> str:
    return " ".join([head, *sides[0], *(["--", *sides[1]] if separated else [])])


def _one(purpose: str, runs: list[Seen], kept: set[tuple[int, str]], head: str, sides: tuple[list[str], list[str]],
         separated: bool) -> str | None:
    """How to run one file or one test, when two runs or more were given varying ones."""
    if purpose != "test":
        return None
    varying = [next((arg for arg in ((item[1], item[2]) for item in each.invocation.items if item[0] == "arg")
                     if arg not in kept), None) for each in runs]
    given = [arg for arg in varying if arg is not None]
    if len(given) < 2:
        return None
    files = [arg for arg in given if "/" in str(arg[1]) or "." in str(arg[1])]
    placeholder, what = ("<file>", "one file") if len(files) * 2 >= len(given) else ("<name>", "one test")
    side = Counter(arg[0] for arg in given).most_common(1)[0][0]
    extended = (sides[0] + [placeholder], sides[1]) if side == 0 else (sides[0], sides[1] + [placeholder])
    return f"{what}: `{_join(head, extended, separated or side == 1)}`"


def _folder(runs: list[Seen]) -> str | None:
    """The folder under the project that most runs ran from (``cd codex-rs && …``), if no other was named."""
    folders = Counter(each.invocation.folder for each in runs)
    named = [folder for folder in folders if folder not in (None, "/")]
    if len(named) == 1 and folders[named[0]] > len(runs) / 2:
        return named[0]
    return None


def body(found: list[Procedure]) -> str:
    """The card's value: ``build `…`; test `…` (one file: `…`)``, with the folder they run from."""
    folders = {procedure.folder for procedure in found}
    common = next(iter(folders)) if len(folders) == 1 else None
    parts = []
    for procedure in found:
        text = f"{LABELS.get(procedure.purpose, procedure.purpose)} `{procedure.command}`"
        notes = [procedure.one] if procedure.one else []
        if procedure.serves:
            notes.append(f"serves {procedure.serves}")
        if procedure.folder and not common:
            notes.append(f"from {procedure.folder}")
        parts.append(text + (f" ({'; '.join(notes)})" if notes else ""))
    joined = "; ".join(parts)
    return f"from {common}: {joined}" if common else joined


def statement(project: str, value: str) -> str:
    return f"In {project}, {value}." if value.startswith("from ") else f"In {project}: {value}."


def _as_version(ctx: DreamContext, card: Card) -> Version:
    """A card with all its evidence, as verify folds it."""
    pieces = [Piece(ref=item.ref, session=item.session, ts=item.ts or card.created_at, kind=item.kind or "note",
                    stance=item.stance, value=card.value, hash=item.hash) for item in ctx.full_evidence(card)]
    return Version(card.value or "", supports=[piece for piece in pieces if piece.stance == "supports"],
                   against=[piece for piece in pieces if piece.stance == "contradicts"], card=card)


def _refuse(ctx: DreamContext, key: FactKey, reason: str, why: str, pieces: list[Piece], shown: str | None,
            score: float | None = None, parts: dict[str, float] | None = None) -> None:
    names = ctx.key_names.get(key, (key.subject, key.attribute))
    ctx.refuse(Refusal(key, names, reason, why, pieces, layer="strategy", statement=shown, score=score,
                       parts=parts or {}))


def _user_rejected(ctx: DreamContext, key: FactKey, card: Card) -> bool:
    """The user's rejection of the card came with this run (verify leaves keys with new runs to us)."""
    said = [piece for piece in ctx.pieces.get(key, []) if piece.kind == USER_WORD and piece.stance == "contradicts"
            and same_value(piece.value or "", card.value or "", 100)]
    if not said:
        return False
    version = _as_version(ctx, card)
    version.against.extend(said)
    version.rejected, version.cause = True, said[-1]
    proposal = Proposal(key, ctx.key_names.get(key, (card.subject, card.attribute or key.attribute)), [version], [])
    materialize(ctx, proposal)
    finish_versions(ctx, proposal)
    return True


def _update(ctx: DreamContext, key: FactKey, card: Card, supporters: list[Piece]) -> None:
    """The same procedures, seen again: the card gains the new runs (and the user's confirmations)."""
    known = {item.ref for item in ctx.full_evidence(card)}
    confirmed = [piece for piece in ctx.pieces.get(key, []) if piece.kind == USER_WORD and piece.stance == "supports"]
    fresh = [piece for piece in [*supporters, *confirmed] if piece.ref not in known]
    if not fresh:
        return
    version = _as_version(ctx, card)
    version.supports.extend(fresh)
    materialize(ctx, Proposal(key, ctx.key_names.get(key, (card.subject, key.attribute)), [version], [version]))
    card.updated_at = ctx.now


def _apply(ctx: DreamContext, key: FactKey, found: list[Procedure], current: Card | None,
           archived: list[Card]) -> None:
    names = ctx.key_names.get(key, (key.subject, key.attribute))
    value = body(found)
    text = statement(names[0], value)
    pieces = {seen.piece.ref: dataclasses.replace(seen.piece, value=value, statement=text)
              for procedure in found for seen in procedure.runs}
    supporters = sorted(pieces.values(), key=_order)
    if current is not None and same_value(current.value or "", value, 100):
        _update(ctx, key, current, supporters)
        return
    if any(same_value(rejected, value, 100) for rejected, _ in rejections(ctx, archived)):
        _refuse(ctx, key, "rejected by the user", "rejected by the user: these procedures are what the user "
                "rejected (`memdream reject`); runs of the same commands do not outrank their word", supporters, text)
        return
    new = Version(value, supports=supporters)
    if current is None:
        proposal = Proposal(key, names, [new], [new])
        admission = assess(ctx, proposal, len(ctx.active_cards()))
        if not admission.admitted:
            _refuse(ctx, key, admission.reason, admission.why or admission.reason, supporters, text,
                    admission.score if admission.parts else None, admission.parts)
            return
    else:
        old = _as_version(ctx, current)
        old.superseded_by, old.cause = new, supporters[-1]
        proposal = Proposal(key, names, [old, new], [new])
    materialize(ctx, proposal)
    finish_versions(ctx, proposal)


def _cards_of(ctx: DreamContext, keys: set[FactKey]) -> tuple[dict[FactKey, Card], dict[FactKey, list[Card]]]:
    """The active procedures card of each key, and its archived ones."""
    active: dict[FactKey, Card] = {}
    archived: dict[FactKey, list[Card]] = {}
    for card in ctx.cards.values():
        if card.type != "strategy" or card.attribute is None:
            continue
        key = FactKey.of(card.subject, card.attribute)
        if key in keys and card.is_active:
            active[key] = card
        elif key in keys and card.status == ARCHIVED:
            archived.setdefault(key, []).append(card)
    return active, archived


def procedure_keys(ctx: DreamContext) -> list[FactKey]:
    return sorted(key for key, pieces in ctx.pieces.items() if any(piece.source == NAME for piece in pieces))


def run(ctx: DreamContext) -> None:
    keys = procedure_keys(ctx)
    if not keys:
        return
    active, archived = _cards_of(ctx, set(keys))
    for key in keys:
        found = procedures(history(ctx, key))
        current = active.get(key)
        if current is not None and _user_rejected(ctx, key, current):
            archived.setdefault(key, []).append(current)
            current = None
        if found:
            _apply(ctx, key, found, current, archived.get(key, []))
        elif current is None:
            runs = [piece for piece in ctx.pieces.get(key, []) if piece.source == NAME]
            _refuse(ctx, key, "no recurring procedure", f"no recurring procedure: no build, test, lint, format or run "
                    f"command of this project succeeded {MIN_RUNS} times yet", runs, None)
