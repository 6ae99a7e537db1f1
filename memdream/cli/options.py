"""Options shared by commands, declared once (with metavars: help shows no Python types)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

# --memory and --tenant name the memory a command opens: declared here once, resolved together by
# memory_root (memdream.memory.locate), so that every command finds its memory the same way.
MemoryOption = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional on Python 3.10
    typer.Option(
        "--memory", "-m", metavar="PATH",
        help="Memory folder. Default: the memory of $MEMDREAM_TENANT (see --tenant), else $MEMDREAM_MEMORY, "
             "else the nearest folder above the working directory that holds memdream.yaml.",
        show_default=False,
    ),
]
TenantOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--tenant", metavar="NAME",
        help="Use tenant NAME's memory: <root>/NAME, the root from $MEMDREAM_ROOT or from root: in "
             "~/.config/memdream/config.yaml. Default: $MEMDREAM_TENANT. Not with --memory.",
        show_default=False,
    ),
]


class DataFormat(str, Enum):
    text = "text"
    json = "json"


FORMAT_HELP = "Output format: text for people, json for programs."

FormatOption = Annotated[
    DataFormat,
    typer.Option("--format", "-f", metavar="text|json", help=FORMAT_HELP, case_sensitive=False),
]


# The card filters of `cards` and `recall`.
CardTypeOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--type", "-t", metavar="TYPE", show_default=False,
                 help="Only cards of this type: fact, strategy or lesson."),
]
CardStatusOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--status", "-s", metavar="STATUS", show_default=False,
                 help="Only cards with this status: verified, inferred, conflicting, superseded or archived."),
]
SubjectOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--subject", metavar="TEXT", show_default=False,
                 help="Only cards about this subject (case-insensitive substring)."),
]


def memory_root(explicit: Path | None, tenant: str | None) -> Path:
    """The one memory a command opens, from --memory, --tenant, the environment or the working folder."""
    from memdream.memory.locate import find_memory_root

    return find_memory_root(explicit, tenant=tenant)
