"""The machine-readable figures of a bench script (its ``--json FILE``), which bench/results.py turns into
bench/RESULTS.md. A script keeps printing its text for people; this is the same run's figures for a program.

One file per script run::

    {"script": "ingest_bench.py", "area": "ingest", "argv": [...], "date": "2026-12-03T10:00:00Z",
     "wall_s": 41.2, "machine": {"cores": 2, "python": "3.11.7", "arch": "x86_64",
     "load_before": [0.9, 1.1, 1.3], "load_after": [1.8, 1.3, 1.4]},
     "figures": [{"name": "...", "area": "ingest", "value": 51500.0, "unit": "events/s",
                  "target": {"op": ">=", "limit": 100000.0, "text": ">= 100,000 events/s", "source": "issue 24"},
                  "floor": {"name": "bare json round trip", "value": 130000.0, "unit": "events/s"},
                  "met": false, "note": "..."}],
     ...anything else the script reports}

``target`` and ``floor`` are optional (null); ``met`` is null when there is no target or no value.
A target may be relative to the floor of the same run (``1.5x python -c "import typer"``): its ``limit``
is then already multiplied out, and its ``text`` says how.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

OPS = {"<=": lambda value, limit: value <= limit, ">=": lambda value, limit: value >= limit,
       "==": lambda value, limit: value == limit}


@dataclass
class Target:
    op: str
    limit: float
    text: str
    source: str = ""  # where the target comes from ("issue 24"), when not the script's own

    def met(self, value: float) -> bool:
        return bool(OPS[self.op](value, self.limit))

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "limit": self.limit, "text": self.text, "source": self.source}


def at_most(limit: float, text: str, source: str = "") -> Target:
    return Target("<=", limit, text, source)


def at_least(limit: float, text: str, source: str = "") -> Target:
    return Target(">=", limit, text, source)


def exactly(limit: float, text: str, source: str = "") -> Target:
    return Target("==", limit, text, source)


def machine(load_before: tuple[float, float, float] | None = None) -> dict[str, Any]:
    return {"cores": os.cpu_count(), "python": platform.python_version(), "arch": platform.machine(),
            "load_before": [round(value, 2) for value in load_before] if load_before else None,
            "load_after": [round(value, 2) for value in os.getloadavg()]}


class Figures:
    """Collects one script run's figures; :meth:`write` puts them into the ``--json`` file."""

    def __init__(self, script: str, area: str) -> None:
        self.script, self.area = Path(script).name, area
        self.figures: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self.started = time.perf_counter()
        self.date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.load_before = os.getloadavg()

    def add(self, name: str, value: float | None, unit: str, *, target: Target | None = None,
            floor: tuple[str, float, str] | None = None, note: str = "", area: str = "") -> dict[str, Any]:
        """One figure; ``floor`` is (what, value, unit) measured in the same run; ``area`` when it is not the
        script's (RESULTS.md has one table per area)."""
        figure = {"name": name, "area": area or self.area, "value": value, "unit": unit,
                  "target": target.to_json() if target else None,
                  "floor": {"name": floor[0], "value": floor[1], "unit": floor[2]} if floor else None,
                  "met": target.met(value) if target is not None and value is not None else None, "note": note}
        self.figures.append(figure)
        return figure

    def write(self, path: Path | None, **extra: Any) -> None:
        if path is None:
            return
        data = {"script": self.script, "area": self.area, "argv": sys.argv[1:], "date": self.date,
                "wall_s": round(time.perf_counter() - self.started, 1), "machine": machine(self.load_before),
                "figures": self.figures, **self.extra, **extra}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
