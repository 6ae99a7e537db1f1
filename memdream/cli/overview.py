"""What `memdream` and `memdream --help` show, without building every command: each command's first
paragraph of help, cached in :data:`FIRST_PARAGRAPHS`.

The overview lists every command with a one-line help. Built for real, that means importing two
dozen command modules and turning each signature into click objects (~40 ms, more than typer's own
import), only to print a table. The table here is what those commands say of themselves (the first
paragraph of each help text, which is all click shortens a command's line from), so the overview is
the same text byte for byte: ``tests/cli/test_overview.py`` compares it with the full build at several
widths and fails when a command's help changed; ``python scripts/command_overview.py`` writes the table
again.
"""

from __future__ import annotations

from typing import Any

# Command name -> the first paragraph of its help, as the full build has it (scripts/command_overview.py).
FIRST_PARAGRAPHS: dict[str, str] = {
    'init': ('Create a memory: folders, default memdream.yaml, empty plan, git repository and a first co'
        'mmit.'),
    'ingest': 'Read agent logs into the raw layer: redacted before writing, deduplicated, segmented.',
    'enqueue': "Queue an agent's transcript for the next `memdream ingest --spool` (returns at once).",
    'dream': 'Consolidate new raw events into cards: verify and correct, merge, admit, plan; one commit.',
    'lint': 'Check memory files: schemas, unique ids, links, one active card per fact key, no secrets.',
    'cards': 'List cards, newest first, filtered by type, status and subject.',
    'show': ('Show one card (active or archived) with its file path, or one raw event (log://<session>#<'
        'id>)\nwith its segment, line, hash checks and the cards that cite it.'),
    'recall': ('Print the context an agent should get for QUERY: the plan, then the best memories, within '
        '--budget bytes.'),
    'log': ('The history of dreams, newest first: run id, time, commit, events consumed and what each d'
        'id.'),
    'diff': 'What changed in the memory, card by card: by default what the last dream did.',
    'audit': ('Trace a card to the raw events behind it: evidence (hash checked), versions, derived cards'
        ',\naudit operations, commits.'),
    'rollback': ('Undo a dream with a new commit (history is kept): cards, archive, plan, index and audit fi'
        'les\ncome back as they were before the run.'),
    'confirm': 'Record that the card is right: the next dream counts your word as strong support.',
    'reject': ('Record that the card is wrong: the next dream archives it, and agent notes or tool reading'
        's of the\nsame value do not bring it back (only your newer word or an outcome does).'),
    'correct': ("Record the card's right value (--value for a fact, --note for a lesson or strategy): the n"
        'ext dream\nsupersedes the card with it, on your authority.'),
    'review': ('List what a person should look at: conflicts, demoted cards, low-confidence cards that rec'
        'all\nreturned, and the new cards of the last --runs dreams, each with `memdream confirm|rej'
        'ect|correct ID`.'),
    'stats': ('Figures of the memory: active and archived cards by type and status, files, bytes and a to'
        'ken\nestimate of the active memory, conflicts, confidence, near-duplicate pairs, cards past'
        ' their TTL,\nthe share of cards recalled lately, and what each of the last dreams added and'
        ' corrected (drawn).'),
    'export': ('Export everything the memory holds about one subject or one session as one JSON bundle: ca'
        'rds,\narchived versions, cards that mention the subject, raw events, audit entries and plan'
        ' items.'),
    'forget': ('Erase one subject, session or card from the memory: cards (active and archived), raw event'
        's,\naudit lines, plan items and local caches; other cards that name it are redacted.'),
    'remember': 'Record a note in your own words for the next dream: a standing instruction or a fact.',
    'context': ("The plan and the project's most useful cards within --budget bytes: the context a session "
        'starts with.'),
    'mcp': ('Serve the memory to an agent over MCP on stdin/stdout: tools recall, plan, remember, plan_'
        'update.'),
    'textconv': 'Print a card or plan in canonical form, so that git diffs ignore pure formatting changes.',
    'hooks': ('Connect an agent to the memory: Claude Code hooks that queue transcripts and start session'
        "s with the plan and the project's cards."),
    'schedule': ('Run `memdream ingest --spool && memdream dream --if-needed` from cron or a systemd user ti'
        'mer.'),
}


def first_paragraphs(group: Any) -> dict[str, str]:
    """The table for ``group`` (the click group of the full build), in its order."""
    return {name: (group.commands[name].help or "").split("\n\n", 1)[0] for name in group.list_commands(None)}


def _nothing() -> None:
    """Never runs: the overview app is only asked for its help."""
