"""Redaction rules: secrets and personal data become ``[REDACTED:<kind>]``.

Ingest scrubs every event with these rules before anything touches disk, and
``memdream lint`` runs the same rules over the memory files to catch what slipped
through, so both must agree: this package is the single place the rules live.

- :mod:`~memdream.redact.rules`: the built-in rules (what each secret looks like, and what it is not)
  and the user's own rules from memdream.yaml;
- :mod:`~memdream.redact.values`: whether the value after a secret's name (``password=...``) is one,
  or a reference, a placeholder, a path or code;
- :mod:`~memdream.redact.scanner`: where a rule is worth trying (its anchors in the text's shape), so
  that ingest stays fast;
- :mod:`~memdream.redact.redactor`: the :class:`Redactor`, which finds and replaces, in texts and in
  JSON-like values;
- :mod:`~memdream.redact.placeholders`: the ``[REDACTED:<kind>]`` text itself.
"""

from __future__ import annotations

from memdream.redact.placeholders import placeholder
from memdream.redact.redactor import Finding, Redactor, default_redactor
from memdream.redact.rules import BUILTIN_KINDS
from memdream.redact.scanner import shape_of

__all__ = ["BUILTIN_KINDS", "Finding", "Redactor", "default_redactor", "placeholder", "shape_of"]
