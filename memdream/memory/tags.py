"""The tags of raw events: what ingest writes and dream, recall and lint read, spelled once.

Raw events may carry free labels (raw-events.md); ours are these:
  episode:<n>            the n-th episode of its session (a piece that dream reviews as one): a
                         new one starts at a goal change, after an outcome, and where a run of
                         failures begins. Raw layers ingested before the rename hold
                         ``segment:<n>``: read, never written (raw events are append-only).
  salience:strong        a failed tool result, user feedback, an outcome (external verification)
  salience:medium        a workaround (a tool fails, then succeeds), the first success of a task kind
  salience:weak          repetition: a user message or tool call seen before in the session
  workaround             the success that ended a run of failures of the same tool
  untrusted-instruction  text from a tool or web page that reads like an order to the agent (in any
                         field a card or plan item can be made of); it is data: dream never takes it
                         as evidence or into the plan, recall shows it marked as untrusted
  project:<name>         the project the session worked on (memdream.memory.project)
  future-ts              a timestamp later than the ingest clock allows
  summary                a log's own summary of earlier turns (not what happened: no evidence)
  sidechain              a sub-agent's turn (Claude Code: inline, or from its agent-*.jsonl file)
  title                  the title a log gives its session (Claude Code's ``ai-title``, ``custom-title`` and
                         ``summary`` lines): the best headline a session has, never what the user said
  synthetic              a message the harness made up in the agent's name (an API error, "No response
                         requested."): not the agent's words
  interrupted            the user stopped the agent ("[Request interrupted by user]")
  hook                   what a hook the user installed said back to the agent (Claude Code's "Stop hook
                         feedback: … Cannot exit with unstaged changes"): the harness's words, never the user's
  memory-file            a rule or fact from a file the user wrote for agents (CLAUDE.md, AGENTS.md, a
                         Codex memories folder): a standing instruction even without "always" or "never"
  command                a slash command the user ran, as they typed it (``/deploy the staging branch``;
                         Claude Code): a request to that command, never a standing instruction of theirs
"""

from __future__ import annotations

from collections.abc import Iterable

EPISODE_TAG = "episode:"
OLD_EPISODE_TAG = "segment:"  # what ingest wrote before "episode": still read
SALIENCE_TAG = "salience:"
STRONG, MEDIUM, WEAK = "salience:strong", "salience:medium", "salience:weak"
UNTRUSTED = "untrusted-instruction"
WORKAROUND = "workaround"
PROJECT_TAG = "project:"
FUTURE_TAG = "future-ts"
SUMMARY_TAG = "summary"
SIDECHAIN_TAG = "sidechain"
TITLE_TAG = "title"
SYNTHETIC_TAG = "synthetic"
INTERRUPTED_TAG = "interrupted"
HOOK_TAG = "hook"
MEMORY_FILE_TAG = "memory-file"
COMMAND_TAG = "command"

# What ingest adds from its own state (the session's episodes so far, repetition, a tool's first success,
# the clock, the project it read): local bookkeeping, not what the source said. Dedup compares and
# evidence hashes cover events without them (memdream.memory.raw.source_content).
INGEST_TAGS = frozenset({UNTRUSTED, WORKAROUND, FUTURE_TAG})
INGEST_TAG_PREFIXES = (EPISODE_TAG, OLD_EPISODE_TAG, SALIENCE_TAG, PROJECT_TAG)

# Ingest tags every event: the usual numbers are built once.
_EPISODE_TAGS = [f"{EPISODE_TAG}{number}" for number in range(256)]


def episode_tag(number: int) -> str:
    """``episode:<number>``."""
    return _EPISODE_TAGS[number] if 0 <= number < len(_EPISODE_TAGS) else f"{EPISODE_TAG}{number}"


def is_ingest_tag(tag: str) -> bool:
    """Whether ingest added ``tag`` from its own state (see :data:`INGEST_TAGS`)."""
    return tag in INGEST_TAGS or tag.startswith(INGEST_TAG_PREFIXES)


def episode_of(tags: Iterable[object]) -> int:
    """The episode number the tags name (``episode:<n>``, or ``segment:<n>`` as older raw layers
    hold it); 0 when they name none."""
    for tag in tags:
        if isinstance(tag, str) and tag.startswith((EPISODE_TAG, OLD_EPISODE_TAG)):
            number = tag.partition(":")[2]
            if number.isdigit():
                return int(number)
    return 0
