"""Redaction: secrets and personal data become ``[REDACTED:<kind>]`` (see :mod:`memdream.redact.redactor`)."""

from __future__ import annotations

from memdream.redact.redactor import BUILTIN_KINDS, Finding, Redactor, default_redactor, placeholder, shape_of

__all__ = ["BUILTIN_KINDS", "Finding", "Redactor", "default_redactor", "placeholder", "shape_of"]
