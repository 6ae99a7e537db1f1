"""Write memdream/cli/overview.py's table of the commands' first help paragraphs from the full command
line (run it when a command's help changes; tests/cli/test_overview.py says when)."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from memdream.cli import build
from memdream.cli.overview import first_paragraphs

PATH = Path(__file__).resolve().parents[1] / "memdream" / "cli" / "overview.py"


def _literal(text: str, width: int = 90) -> str:
    """``text`` as a Python literal that fits the line length: pieces of ``width`` characters, joined."""
    pieces = [text[start:start + width] for start in range(0, len(text), width)] or [""]
    if len(pieces) == 1:
        return repr(pieces[0])
    return "(" + "\n        ".join(repr(piece) for piece in pieces) + ")"


def main() -> None:
    table = first_paragraphs(typer.main.get_command(build()))
    body = "".join(f"    {name!r}: {_literal(text)},\n" for name, text in table.items())
    text = PATH.read_text(encoding="utf-8")
    text = re.sub(r"(FIRST_PARAGRAPHS: dict\[str, str\] = \{\n).*?(^\}\n)", lambda found: found.group(1) + body
                  + found.group(2), text, count=1, flags=re.DOTALL | re.MULTILINE)
    PATH.write_text(text, encoding="utf-8")
    print(f"{PATH}: {len(table)} commands")


if __name__ == "__main__":
    main()
