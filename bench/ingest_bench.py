"""Benchmark: `memdream ingest FILE` of N realistic memdream-format events, as a real process.

Usage: python bench/ingest_bench.py [--events N] [--small M] [--runs R] [--profile] [--json FILE]

Generates N events (default 200,000: every kind, 100-400 byte texts, ids present, about 2% carrying
a secret to redact) into a temp file, then ingests it R times, each into a fresh memory. Prints
the median events/s (target: >= 50,000 on 2 cores), the peak RSS of the ingest process for M
(default 50,000) and N events (memory should stay flat: segments are streamed), the machine and
its load average. --profile runs one ingest in-process under cProfile and prints the top entries.
The floor, measured in the same run: a bare standard-library round trip of the same file (one process
reads each line, json.loads and json.dumps it, writes it out), R times; issue 24 wants ingest within 1.3x it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures, at_least, at_most  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

TARGET = 50_000
ISSUE_TARGET, ISSUE_RATIO = 100_000, 1.3  # issue 24: events/s, and ingest time over the bare round trip's
ROUND_TRIP = ("import json, sys\n"
              "with open(sys.argv[1], encoding='utf-8') as src, open(sys.argv[2], 'w', encoding='utf-8') as out:\n"
              "    for line in src:\n"
              "        out.write(json.dumps(json.loads(line), ensure_ascii=False) + '\\n')\n")
_WORDS = ("the export job failed again because the bucket moved to another region so we retried with "
          "a longer timeout and checked the logs of the nightly run before opening a ticket for the "
          "platform team who own the deploy pipeline and the cache layer in front of the api").split()
_TOOLS = ["shell", "aws", "pytest", "git", "kubectl", "web_fetch", "psql"]
_SECRETS = ["AKIAIOSFODNN7EXAMPLE", "password=hunter2xyz", "dana.smith@example.com", "+1 415 555 0132",
            "ghp_0123456789abcdefghijABCDEFGHIJ012345", "4111 1111 1111 1111"]


def _text(rng: random.Random) -> str:
    length = rng.randint(100, 400)
    words: list[str] = []
    size = 0
    while size < length:
        word = rng.choice(_WORDS)
        words.append(word)
        size += len(word) + 1
    if rng.random() < 0.02:
        words.insert(rng.randrange(len(words)), rng.choice(_SECRETS))
    return " ".join(words)[:length]


def synthetic_event(index: int, rng: random.Random) -> dict[str, object]:
    """Event ``index`` of a stream of sessions of 200 events each, every kind represented."""
    session = f"s-{index // 200:05d}"
    position = index % 200
    seconds = index * 3
    day, hour, minute, second = 7 + seconds // 86400 % 20, seconds // 3600 % 24, seconds // 60 % 60, seconds % 60
    ts = f"2026-11-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"
    base: dict[str, object] = {"session": session, "ts": ts, "id": f"e{position}"}
    if position == 0:
        return {**base, "kind": "goal", "goal": _text(rng)[:120]}
    roll = rng.random()
    tool = rng.choice(_TOOLS)
    call = f"k{position // 2}"
    if roll < 0.25:
        return {**base, "kind": "tool_call", "tool": tool, "call_id": call,
                "args": {"cmd": _text(rng)[:120], "timeout": rng.randint(1, 600)}}
    if roll < 0.50:
        ok = rng.random() > 0.15
        event: dict[str, object] = {**base, "kind": "tool_result", "tool": tool, "call_id": call, "ok": ok,
                                    "text": _text(rng)}
        if not ok:
            event["error"] = "exit code 1: " + _text(rng)[:80]
        return event
    if roll < 0.70:
        return {**base, "kind": "message", "actor": rng.choice(["user", "agent"]), "text": _text(rng)}
    if roll < 0.85:
        event = {**base, "kind": "note", "text": _text(rng)}
        if rng.random() < 0.3:
            event["fact"] = {"subject": f"svc-{rng.randint(0, 50)}", "attribute": "region",
                             "value": rng.choice(["eu-west-1", "eu-central-1", "us-east-1"])}
        return event
    if roll < 0.92:
        return {**base, "kind": "plan", "next": [_text(rng)[:60], _text(rng)[:60]], "done": [_text(rng)[:60]]}
    if roll < 0.97:
        return {**base, "kind": "feedback", "verdict": rng.choice(["confirm", "reject", "correct"]),
                "target": f"e{max(position - 1, 0)}", "text": _text(rng)[:150]}
    return {**base, "kind": "outcome", "ok": rng.random() > 0.3, "text": _text(rng)[:150], "tags": ["bench"]}


def write_log(path: Path, count: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(count):
            handle.write(json.dumps(synthetic_event(index, rng), ensure_ascii=False) + "\n")
    return path.stat().st_size


def ingest_once(log: Path, workdir: Path, name: str) -> tuple[float, float, int, dict[str, object]]:
    """(wall seconds, CPU seconds, peak RSS in KiB, report) of one ingest process into a fresh memory."""
    root = workdir / name
    init_memory(root)
    env = {**os.environ, "NO_COLOR": "1"}
    # getrusage(RUSAGE_CHILDREN) is the max over all waited-for children: run each measurement in a
    # fresh helper process so the figure is this ingest's own.
    probe = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "elapsed = time.perf_counter() - start\n"
        "sys.stderr.write(done.stderr)\n"
        "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, done.returncode)\n"
        "print(done.stdout)\n"
    )
    command = [sys.executable, "-m", "memdream", "ingest", str(log), "-m", str(root), "--format", "json"]
    done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env)
    first, _, rest = done.stdout.partition("\n")
    elapsed, cpu, rss, code = first.split()
    if code != "0":
        raise SystemExit(f"ingest failed ({code}): {done.stderr[:800]}")
    return float(elapsed), float(cpu), int(rss), json.loads(rest)


def round_trip_once(log: Path, workdir: Path) -> float:
    """Wall seconds of one process that only parses and writes back every line of ``log`` (the floor)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", ROUND_TRIP, str(log), str(workdir / "round-trip.jsonl")], check=True)
    return time.perf_counter() - start


def profile(log: Path, workdir: Path) -> None:
    import cProfile
    import pstats

    from memdream.ingest.pipeline import ingest
    from memdream.memory.store import Memory

    root = workdir / "profiled"
    init_memory(root)
    profiler = cProfile.Profile()
    profiler.enable()
    ingest(Memory(root), [str(log)])
    profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(40)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--small", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    figures = Figures(__file__, "ingest")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        big, small = workdir / "big.jsonl", workdir / "small.jsonl"
        size = write_log(big, args.events)
        write_log(small, args.small)
        if args.profile:
            profile(big, workdir)
            return
        load_before = os.getloadavg()
        timings, cpu_times, rss_big = [], [], []
        for number in range(args.runs):
            elapsed, cpu, rss, report = ingest_once(big, workdir, f"big-{number}")
            if report["added"] != args.events:
                raise SystemExit(f"expected {args.events} events added, got {report['added']}")
            timings.append(elapsed)
            cpu_times.append(cpu)
            rss_big.append(rss)
        rss_small = [ingest_once(small, workdir, f"small-{number}")[2] for number in range(args.runs)]
        trips = [round_trip_once(big, workdir) for _ in range(args.runs)]
        load_after = os.getloadavg()
    median = statistics.median(timings)
    rate = args.events / median
    print(f"ingest of {args.events:,} events ({size / 1e6:.1f} MB, {report['redactions']} redacted): "
          f"median {median:.2f} s over {args.runs} runs (min {min(timings):.2f}, max {max(timings):.2f}) "
          f"= {rate:,.0f} events/s (target >= {TARGET:,}: {'met' if rate >= TARGET else 'NOT met'})")
    cpu = statistics.median(cpu_times)
    print(f"CPU time of the ingest process (user + sys, incl. its git children): median {cpu:.2f} s "
          f"= {args.events / cpu:,.0f} events per CPU-second (less sensitive to other load on the machine)")
    print(f"peak RSS of the ingest process: {statistics.median(rss_small) / 1024:.0f} MiB for {args.small:,} events, "
          f"{statistics.median(rss_big) / 1024:.0f} MiB for {args.events:,} events")
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}, "
          f"load average {load_before[0]:.2f} before / {load_after[0]:.2f} after")
    trip = statistics.median(trips)
    print(f"floor: bare json round trip of the same file (stdlib loads + dumps, one process): median {trip:.2f} s "
          f"= {args.events / trip:,.0f} events/s; ingest takes {median / trip:.2f}x it (issue 24: <= {ISSUE_RATIO}x)")
    floor = ("bare json round trip, one process", round(args.events / trip), "events/s")
    figures.add(f"`memdream ingest` of {args.events:,} memdream-format events, whole process, median of {args.runs}",
                round(rate), "events/s", target=at_least(ISSUE_TARGET, f">= {ISSUE_TARGET:,} events/s", "issue 24"),
                floor=floor, note=f"{args.events / cpu:,.0f} events per CPU-second; {median:.2f} s; "
                                  f"the script's own target >= {TARGET:,}: {'met' if rate >= TARGET else 'missed'}")
    figures.add("ingest time / bare round trip time", round(median / trip, 2), "x",
                target=at_most(ISSUE_RATIO, f"<= {ISSUE_RATIO}x the round trip", "issue 24"),
                floor=("bare json round trip", round(trip, 2), "s"))
    figures.add(f"peak RSS of the ingest process, {args.small:,} events", round(statistics.median(rss_small) / 1024),
                "MiB")
    figures.add(f"peak RSS of the ingest process, {args.events:,} events", round(statistics.median(rss_big) / 1024),
                "MiB", note="should stay flat: events stream")
    figures.write(args.json, redactions=report["redactions"], log_bytes=size)


if __name__ == "__main__":
    main()
