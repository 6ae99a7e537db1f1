"""Reviewing a memory: its dream history, semantic diffs, provenance, verdicts, rollback."""
