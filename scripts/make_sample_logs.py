"""Write the billing-api sample logs that `make demo` ingests, with the builder in tests/transcripts.py.

    python scripts/make_sample_logs.py [DEST]      # DEST defaults to sample-memory/logs/billing-api

The output is deterministic: running it twice gives identical files, so the files are kept in git and a
test checks that they still match what the builder writes.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a plain script from a fresh clone: tests/ is not installed

from tests.transcripts import billing_api_project  # noqa: E402

DEFAULT_DEST = ROOT / "sample-memory" / "logs" / "billing-api"
# The only folders the builder writes; clearing them drops files of an older scenario and nothing else.
WRITTEN = ("claude-code", "codex")


def make(dest: Path) -> list[Path]:
    for name in WRITTEN:
        shutil.rmtree(dest / name, ignore_errors=True)
    return billing_api_project(dest, small=True)


def main(argv: list[str]) -> int:
    dest = Path(argv[0]) if argv else DEFAULT_DEST
    for path in make(dest):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
