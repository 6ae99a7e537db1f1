"""Ingest: agent logs in, redacted normalized raw events out (raw-events.md)."""
