"""How recall composes a context: what comes first, how much of the budget it may take, what fills the
rest, and whether showing a card counts as its use.

One composer (memdream.recall.engine.Recaller) builds every context memdream gives an agent; a policy is
what differs between them:

- :data:`RECALL` (``memdream recall``, the MCP server's recall tool): a question is asked. The plan and
  the standing instructions of the scope share ``recall.resident_share`` of the budget; the cards that
  answer the question fill the rest, then raw events; the cards shown count as used.
- :data:`SESSION_START` (``memdream context``: the SessionStart hook, ``--export``): no question yet. The
  plan comes first and may take the whole budget; the instructions may take half of it; then every card of
  the scope by recall's query-independent score, the scope's own first (memdream.recall.standing). Nothing
  is counted, and a project the memory does not know gets nothing at all (docs/claude-code.md).
"""

from __future__ import annotations

from dataclasses import dataclass

# After this many candidates in a row did not fit (or did not answer the question), the rest will not either.
MAX_MISSES = 48
# Below this much room (bytes) the context is full: no line is that short.
MIN_LINE = 24


@dataclass(frozen=True)
class Policy:
    # The question ranks the cards, raw events fill what they leave, and when nothing at all fits the best
    # item is shown cut; else (no question) the scope's cards by their query-independent score, and no
    # raw event.
    by_query: bool = True
    # The plan is resident: with the instructions in the resident share, trimmed next action by next
    # action (never below the engine's PLAN_FLOOR). Else it comes first and may take the whole budget
    # (cut at its end when even that is too little), and the instructions have the share to themselves.
    plan_in_share: bool = True
    # The resident share is at least this, whatever recall.resident_share says.
    min_resident_share: float = 0.0
    max_misses: int = MAX_MISSES
    min_line: int = MIN_LINE
    # The cards shown count as used (.memdream/usage.jsonl): a card shown whatever the query would gain
    # references that say nothing of its use.
    count_use: bool = True
    # The scope is the folder's project whenever the memory names some project (in its plan or any card),
    # and a project the memory knows nothing of gets nothing; with no scope, everything is resident. Else
    # a folder the memory does not know is no scope, and a project's plan items and instructions are
    # shown only when they match the question (memdream.recall.resident.open_plan).
    strict_scope: bool = False
    # Rank at the memory's own clock (its newest active card) and with the reference counts the cards hold,
    # not the wall clock and the usage log: the same memory gives the same context (``context --export``).
    stable: bool = False


RECALL = Policy()
SESSION_START = Policy(by_query=False, plan_in_share=False, min_resident_share=0.5, max_misses=16, min_line=18,
                       count_use=False, strict_scope=True)
