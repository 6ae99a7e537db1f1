"""The git trailers memdream writes on its commits: one name each, read by the dream checkpoint, the
ledger, the review commands and verify. A commit's trailers are what a clone without local state
still knows about the runs (docs/review.md, docs/provenance.md)."""

from __future__ import annotations

VERSION = "Memdream-Version"  # memdream init
RUN = "Memdream-Run"  # a dream commit: its run id
CONSUMED = "Memdream-Consumed"  # the raw segments it read: "segments 000001..000003"
EVENTS = "Memdream-Events"  # how many events it read
INGEST = "Memdream-Ingest"  # the segments whose manifest lines the commit holds
DEFERRED = "Memdream-Deferred"  # an episode a budgeted dream left for the next: "1..3 <session>#<n>"
REDREAMED = "Memdream-Redreamed"  # a dream read the waiting events of that run
ROLLBACK = "Memdream-Rollback"  # a rollback commit: one per run it undid
ROLLBACK_TO = "Memdream-Rollback-To"  # the commit whose memory files it restored
ROLLBACK_ID = "Memdream-Rollback-Id"  # the rollback's own id, for crash recovery
QUARANTINE = "Memdream-Quarantine"  # that run's events are quarantined
REDREAM = "Memdream-Redream"  # that run's events wait for the next dream
FORGET = "Memdream-Forget"  # a `memdream forget` commit: its own id (its tombstone is audit/<id>.jsonl)
HUMAN_EDIT = "Memdream-Human-Edit"  # a person vouches for a hand edit: "Name <email>"
