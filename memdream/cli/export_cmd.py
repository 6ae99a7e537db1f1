"""memdream export --subject S | --session ID: everything a memory holds about it, as one JSON bundle."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from memdream.cli.options import MemoryOption, TenantOption, memory_root
from memdream.errors import UsageError


def export(
    subject: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--subject", metavar="S", show_default=False,
                     help="A subject (a person, a tool, a project): cards whose subject or scope is S, their "
                          "versions, cards that name S, the events and plan items that name it."),
    ] = None,
    session: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--session", metavar="ID", show_default=False,
                     help="A session: every event of it, the cards citing it, their evidence and audit lines."),
    ] = None,
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--output", "-o", metavar="FILE", show_default=False,
                     help="Write the bundle to FILE (atomically) instead of standard output."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite FILE if it exists.")] = False,
    memory: MemoryOption = None,
    tenant: TenantOption = None,
) -> None:
    """Export everything the memory holds about one subject or one session as one JSON bundle: cards,
    archived versions, cards that mention the subject, raw events, audit entries and plan items.

    Read only. The raw segments are streamed once. Nothing found: an empty bundle, a note on stderr,
    exit 0. A memory cloned without its raw layer exports no event and says so ("raw_layer": "absent").
    What "about" means is in docs/review.md (memdream export).
    """
    from memdream.review.export import export as export_bundle
    from memdream.review.export import write_bundle

    if (subject is None) == (session is None):
        raise UsageError("give exactly one of --subject or --session (see 'memdream export --help')")
    bundle = export_bundle(memory_root(memory, tenant), subject=subject, session=session)
    if out is None:
        sys.stdout.write(bundle.to_json())
    else:
        write_bundle(bundle, out, force)
        counts = ", ".join(f"{count} {name}" for name, count in bundle.counts().items())
        sys.stderr.write(f"wrote {out}: {counts}\n")
    if bundle.raw_layer != "present":
        sys.stderr.write(f"note: the raw layer is {bundle.raw_layer} here ({bundle.segments_missing} segment(s) "
                         "missing): events it held are not in the bundle\n")
    if bundle.empty:
        sys.stderr.write(f"note: nothing in this memory is about {bundle.query.describe()}\n")
