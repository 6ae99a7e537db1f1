"""Benchmark: what an agent waits for on each call to `memdream mcp`.

Usage: python bench/mcp_bench.py [--cards N] [--events N] [--calls N] [--json FILE]

Builds a memory of N cards (default 500) and a raw layer of N events (default 20,000, ingested as
one file), starts `python -m memdream mcp` as a real subprocess through the official MCP client
over stdio, and times: connecting (start-up and handshake), then --calls calls (default 20) each of
`recall` (different queries, budget 2,000), `plan` and `remember` (a new note each: one ingest
each). Prints medians and p90 in ms, and the machine's load (2 shared cores here: noisy). Issue 24's
target: an MCP recall <= 10 ms (median).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp import Client, StdioServerParameters  # noqa: E402

from bench.figures import Figures, at_most  # noqa: E402
from bench.synth import build_card_memory, synthetic_events  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
QUERIES = ("which port does the api listen on", "region of the export bucket", "how to run the tests",
           "database version", "where are the reports stored")


def build(root: Path, cards: int, events: int) -> None:
    build_card_memory(root, cards)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@localhost", "commit", "-qm",
                    "cards"], check=True, capture_output=True)
    log = root.parent / "events.jsonl"
    log.write_text("".join(json.dumps(event) + "\n" for event in synthetic_events(events)), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "memdream", "ingest", str(log), "--memory", str(root)], check=True,
                   capture_output=True, cwd=REPO)


async def measure(root: Path, calls: int) -> dict[str, list[float]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "memdream", "mcp", "--memory", str(root)],
                                   env={"PYTHONPATH": str(REPO), "HOME": os.environ.get("HOME", "/tmp")},
                                   cwd=str(root))
    times: dict[str, list[float]] = {"connect": [], "recall": [], "plan": [], "remember": []}
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        times["connect"].append((time.perf_counter() - start) * 1000)
        for number in range(calls):
            for tool, arguments in (("recall", {"query": QUERIES[number % len(QUERIES)], "budget": 2000}),
                                    ("plan", {}),
                                    ("remember",
                                     {"text": f"The bench service {number} listens on port {8000 + number}."})):
                began = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                times[tool].append((time.perf_counter() - began) * 1000)
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=500)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    figures = Figures(__file__, "MCP")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        build(root, args.cards, args.events)
        times = asyncio.run(measure(root, args.calls))
    print(f"memdream mcp: {args.cards} cards, {args.events} raw events, {args.calls} calls per tool; "
          f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cpu(s), "
          f"load {os.getloadavg()[0]:.1f}")
    for tool, values in times.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
        first = f", first {values[0]:.0f}" if len(values) > 1 else ""
        print(f"  {tool:<9} median {statistics.median(values):7.0f} ms   p90 {p90:7.0f} ms{first}")
        what = "connect (start-up and handshake)" if tool == "connect" else f"`{tool}` call, median of {len(values)}"
        figures.add(f"{what}, {args.cards} cards + {args.events:,} events", round(statistics.median(values), 1), "ms",
                    target=at_most(10, "<= 10 ms", "issue 24") if tool == "recall" else None,
                    note=f"p90 {p90:.0f} ms" + (f"; the first call {values[0]:.0f} ms" if len(values) > 1 else ""))
    figures.write(args.json)


if __name__ == "__main__":
    main()
