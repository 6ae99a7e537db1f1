"""Profiles of the operations whose speed target bench/RESULTS.md lists as missed (issue 24: "every target met
or its miss explained with a profile"): where each one's time goes, written to bench/PROFILES.md.

Each operation runs on the data its bench script builds, with that script's builders:

- one `memdream recall` process and `recall --queries` of 1,000 queries (bench/recall_bench.py: 10,000 cards
  + 100,000 events), the incremental dream of 1,000 events on 10,000 cards (bench/dream_bench.py), the ingest
  of 200,000 memdream-format events (bench/ingest_bench.py), the SessionStart hook on 2,000 cards
  (bench/session_start_bench.py) and `enqueue --from-hook` (bench/enqueue_bench.py): real processes, run a
  few times unprofiled, once under `python -X importtime` and once under `python -m cProfile -o FILE -m memdream`;
- the MCP server's recall (bench/mcp_bench.py: 500 cards + 20,000 events): the server's own code path
  (memdream.mcp.server.MemoryTools.recall) called in this process, after one warm-up call, between `plan` and
  `remember` calls as the bench makes them; timed, then the same calls again under cProfile.

bench/profile_report.py turns the measurements into areas, the "why it misses" text and the document. The
targets and the bench's figures come from the bench scripts' --json files of the same `make bench` run
(--bench-out, default bench/out/); without them the text leaves the target out.

Usage: python bench/profiles.py [--runs R] [--heavy-runs R] [--output PROFILES.md] [--bench-out DIR]
       [--prof-dir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import dream_bench, enqueue_bench, ingest_bench, mcp_bench, recall_bench, session_start_bench  # noqa: E402
from bench.figures import Figures  # noqa: E402
from bench.profile_report import (  # noqa: E402
    Profiled,
    StatsTable,
    area_seconds,
    budget_ms,
    document,
    floor_ratio,
    function_areas,
    import_groups,
    parse_importtime,
    summary,
    top_functions,
)
from bench.results import shown, target_text  # noqa: E402
from memdream.commands.init import init_memory  # noqa: E402

if TYPE_CHECKING:
    from memdream.mcp.server import MemoryTools

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FLOOR_RUNS = 5  # `python -c pass` and `python -c "import typer"`, interleaved with each operation's runs
TOP = 12


@dataclass
class ProcessSpec:
    """A memdream process to profile. ``arguments(label)`` gives its arguments for one run, preparing
    whatever the run consumes (a fresh memory to ingest into, a copy of a memory to dream)."""

    key: str
    title: str
    display: str
    arguments: Callable[[str], list[str]]
    env: dict[str, str]
    figures: list[dict[str, str]]
    runs: int
    stdin: bytes | None = None
    warm: bool = True  # one run first, not counted: the page cache, the bytecode, a cold index
    per: tuple[int, str] | None = None
    note: str = ""
    import_runs: int = 0  # runs under -X importtime, the least disturbed one kept; 0: as many as ``runs``


@dataclass
class Session:
    """What every operation's profile needs: the scratch folder, where the .prof files and the bench's
    --json files are, the modules the interpreter imports by itself."""

    tmp: Path
    prof_dir: Path
    bench_out: Path
    startup: set[str] = field(default_factory=set)


# -- processes -------------------------------------------------------------------------------------------
def run(command: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, str]:
    """Wall seconds and stderr of one process, which must succeed."""
    start = time.perf_counter()
    done = subprocess.run(command, input=stdin, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:6])} failed ({done.returncode}): {done.stderr.decode()[-800:]}")
    return elapsed, done.stderr.decode("utf-8", errors="replace")


def interleaved(spec: ProcessSpec, memdream: list[str]) -> tuple[float, float, float]:
    """The fastest ms of `python -c pass`, `python -c "import typer"` and the command (the runs least
    disturbed by the machine's other work), one of each a round (the load of a shared machine changes
    within a series: the three see the same moments)."""
    starts: list[float] = []
    floors: list[float] = []
    walls: list[float] = []
    for number in range(max(spec.runs, FLOOR_RUNS)):
        starts.append(run([sys.executable, "-c", "pass"], spec.env)[0])
        floors.append(run([sys.executable, "-c", "import typer"], spec.env)[0])
        if number < spec.runs:
            walls.append(run([*memdream, *spec.arguments(f"wall-{number}")], spec.env, spec.stdin)[0])
    return min(starts) * 1000, min(floors) * 1000, min(walls) * 1000


def startup_modules(env: dict[str, str]) -> set[str]:
    """The modules `python -c pass` imports: the interpreter's start, not the command's imports."""
    _, stderr = run([sys.executable, "-X", "importtime", "-c", "pass"], env)
    return {line.name for line in parse_importtime(stderr)}


def load_stats(path: Path) -> StatsTable:
    table: StatsTable = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    return table


def analysed(stats: StatsTable) -> dict[str, Any]:
    """The profile's total, areas and top functions (the fields of a Profiled that come from cProfile)."""
    shares = function_areas(stats, str(REPO))
    areas = area_seconds(stats, shares)
    return {"profile_ms": sum(areas.values()) * 1000, "areas_ms": {area: s * 1000 for area, s in areas.items()},
            "top_self": top_functions(stats, shares, "self", TOP, str(REPO)),
            "top_cumulative": top_functions(stats, shares, "cumulative", TOP, str(REPO))}


def bench_figure(bench_out: Path, figures: list[dict[str, str]], per: tuple[int, str] | None) -> dict[str, Any] | None:
    """The first figure of ``figures`` (script, name prefix) with a target in the bench's --json files, as
    the explanation quotes it: its value and target as RESULTS.md shows them, the time the target allows."""
    for wanted in figures:
        path = bench_out / f"{wanted['script']}.json"
        if not path.exists():
            continue
        for figure in json.loads(path.read_text(encoding="utf-8")).get("figures", []):
            if str(figure["name"]).startswith(wanted["prefix"]) and figure.get("target"):
                unit = str(figure.get("unit", ""))
                value = figure.get("value")
                return {"value": shown(value, unit), "target": target_text(figure["target"], unit),
                        "budget_ms": budget_ms(figure, per), "floor_ratio": floor_ratio(figure),
                        "value_ms": value if unit == "ms" else value * 1000 if unit == "s" else None}
    return None


def least_imports(session: Session, spec: ProcessSpec) -> dict[str, float]:
    """Milliseconds of imports per package, from the -X importtime run whose imports took least (one such
    run is as exposed to the machine's load as any, and the wall time is a fastest run too)."""
    found: list[dict[str, float]] = []
    for number in range(spec.import_runs or spec.runs):
        command = [sys.executable, "-X", "importtime", "-m", "memdream", *spec.arguments(f"imports-{number}")]
        found.append(import_groups(parse_importtime(run(command, spec.env, spec.stdin)[1]), session.startup))
    return min(found, key=lambda groups: sum(groups.values()))


def profile_process(session: Session, spec: ProcessSpec) -> Profiled:
    """Unprofiled runs, one under -X importtime, one under cProfile; the floors measured alongside."""
    memdream = [sys.executable, "-m", "memdream"]
    print(f"{spec.title}: {spec.runs} runs, -X importtime, cProfile ...", flush=True)
    if spec.warm:
        run([*memdream, *spec.arguments("warm")], spec.env, spec.stdin)
    start_ms, floor_ms, wall_ms = interleaved(spec, memdream)
    imports = least_imports(session, spec)
    prof = session.prof_dir / f"{spec.key}.prof"
    profiled_wall, _ = run([sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "memdream",
                            *spec.arguments("profile")], spec.env, spec.stdin)
    profiled = Profiled(key=spec.key, title=spec.title, command=spec.display, wall_ms=wall_ms,
                        runs=spec.runs, statistic="fastest", start_ms=start_ms, floor_ms=floor_ms,
                        imports_ms=imports,
                        profiled_wall_ms=profiled_wall * 1000, per=spec.per, figures=spec.figures,
                        bench=bench_figure(session.bench_out, spec.figures, spec.per), note=spec.note,
                        **analysed(load_stats(prof)))
    print(f"  {summary(profiled)}", flush=True)
    return profiled


def figure_ref(script: str, prefix: str) -> dict[str, str]:
    return {"script": script, "prefix": prefix}


# -- the operations ----------------------------------------------------------------------------------------
def recall_specs(session: Session, runs: int) -> list[ProcessSpec]:
    """One recall process and the --queries batch, on bench/recall_bench.py's memory (built here: ~30 s)."""
    tmp = session.tmp / "recall"
    tmp.mkdir()
    root = tmp / "mem"
    print("recall: building 10,000 cards + 100,000 events ...", flush=True)
    recall_bench.build(root, tmp, 10_000, 100_000)
    asked = recall_bench.queries(1000)
    queries = tmp / "queries.txt"
    queries.write_text("\n".join(asked) + "\n", encoding="utf-8")
    recall_bench.memdream("recall", "please look again", "-m", str(root))  # indexes the raw layer, as the bench
    return [
        ProcessSpec("recall-one", "One recall process", "memdream recall QUERY -m MEMORY  (10,000 cards, "
                    "100,000 events, warm index)", lambda _: ["recall", asked[1], "-m", str(root)],
                    recall_bench.ENV, [figure_ref("recall_bench", "one `memdream recall` process")], runs),
        ProcessSpec("recall-batch", "Batch recall of 1,000 queries", "memdream recall --queries FILE -m MEMORY  "
                    "(1,000 queries, same memory)", lambda _: ["recall", "--queries", str(queries), "-m", str(root)],
                    recall_bench.ENV, [figure_ref("recall_bench", "`recall --queries`")], 1, warm=False,
                    per=(len(asked), "query"), note="one unprofiled run: its 1,000 queries are the samples"),
    ]


def copy_memory(source: Path, target: Path) -> Path:
    """A copy of a memory that a dream may consume, in the same state: file times kept (the card cache and
    recall's index check them) and git's index refreshed (the copy's inodes differ; else git would rehash
    every card in the profiled dream)."""
    shutil.copytree(source, target, symlinks=True)
    subprocess.run(["git", "-C", str(target), "update-index", "-q", "--refresh"], check=False, capture_output=True)
    return target


def dream_spec(session: Session, runs: int) -> ProcessSpec:
    """The incremental dream on bench/dream_bench.py's memory (prepared once, ~20 s; copied for each run)."""
    tmp = session.tmp / "dream"
    tmp.mkdir()
    print("dream: 10,000 cards written by a dream, then 1,000 new events ...", flush=True)
    prepared, _, _ = dream_bench.incremental_memory(tmp, 10_000, 0, dream_bench.readings_log(tmp, 10_000))

    def arguments(label: str) -> list[str]:
        return ["dream", "-m", str(copy_memory(prepared, tmp / f"copy-{label}"))]

    return ProcessSpec("dream-incremental", "Incremental dream", "memdream dream -m MEMORY  (1,000 new events on "
                       "10,000 cards written by a dream)", arguments, dream_bench.ENV,
                       [figure_ref("dream_bench", "incremental dream:")], runs, warm=False, import_runs=1,
                       note="each run dreams its own copy of one prepared memory")


def ingest_spec(session: Session, runs: int) -> ProcessSpec:
    """bench/ingest_bench.py's 200,000 events into a fresh memory each run."""
    tmp = session.tmp / "ingest"
    tmp.mkdir()
    events = 200_000
    log = tmp / "big.jsonl"
    ingest_bench.write_log(log, events)

    def arguments(label: str) -> list[str]:
        root = tmp / f"memory-{label}"
        init_memory(root)
        return ["ingest", str(log), "-m", str(root), "--format", "json"]

    return ProcessSpec("ingest", "Ingest of 200,000 events", "memdream ingest FILE -m MEMORY --format json  "
                       "(200,000 memdream-format events, a fresh memory each run)", arguments,
                       {**os.environ, "NO_COLOR": "1"},
                       [figure_ref("ingest_bench", "`memdream ingest` of"),
                        figure_ref("ingest_bench", "ingest time / bare round trip")], runs, import_runs=1,
                       per=(events, "event"),
                       note="the forked worker processes that parse, check and redact are not in the profile "
                            "(only the time the ingest process waits for them)")


def session_start_spec(session: Session, runs: int) -> ProcessSpec:
    root = session.tmp / "session-start"
    session_start_bench.build(root, 2000)
    return ProcessSpec("session-start", "SessionStart hook", "memdream context --session-start -m MEMORY --budget "
                       "2000  (2,000 cards over 10 projects, the hook's JSON on stdin, warm index)",
                       lambda _: session_start_bench.hook_arguments(root, 2000), session_start_bench.ENV,
                       [figure_ref("session_start_bench", "SessionStart hook")], runs,
                       stdin=session_start_bench.payload("project-3").encode())


def enqueue_spec(session: Session, runs: int) -> ProcessSpec:
    folder = session.tmp / "enqueue"
    root = folder / "memory"
    init_memory(root)
    return ProcessSpec("enqueue", "Enqueue from a hook", "memdream enqueue --from-hook -m MEMORY  (a SessionEnd "
                       "payload on stdin)", lambda _: ["enqueue", "--from-hook", "-m", str(root)], dict(os.environ),
                       [figure_ref("enqueue_bench", "`enqueue --from-hook` via python -m memdream")], runs,
                       stdin=enqueue_bench.hook_payload(folder))


def mcp_round(tools: MemoryTools, number: int, profiler: cProfile.Profile | None = None) -> float:
    """One round as bench/mcp_bench.py makes it (recall, plan, remember); the recall's seconds, profiled
    when ``profiler`` is given."""
    query = mcp_bench.QUERIES[number % len(mcp_bench.QUERIES)]
    if profiler is not None:
        profiler.enable()
    start = time.perf_counter()
    tools.recall(query, 2000)
    elapsed = time.perf_counter() - start
    if profiler is not None:
        profiler.disable()
    tools.plan()
    tools.remember(f"The bench service {number} listens on port {8000 + number}.")
    return elapsed


def mcp_profile(session: Session, calls: int) -> Profiled:
    """The MCP server's recall, in this process: MemoryTools as `memdream mcp` makes it (run in the memory's
    folder, no --scope), one warm-up call (it builds the index), ``calls`` timed rounds, ``calls`` profiled."""
    from memdream.mcp.server import MemoryTools, ServerOptions

    root = session.tmp / "mcp" / "memory"
    root.parent.mkdir()
    print("MCP: building 500 cards + 20,000 events ...", flush=True)
    mcp_bench.build(root, 500, 20_000)
    tools = MemoryTools(ServerOptions(root, cwd=str(root)))
    tools.recall(mcp_bench.QUERIES[0], 2000)
    walls = [mcp_round(tools, number) for number in range(calls)]
    profiler = cProfile.Profile()
    for number in range(calls, 2 * calls):
        mcp_round(tools, number, profiler)
    prof = session.prof_dir / "mcp-recall.prof"
    profiler.dump_stats(str(prof))
    figures = [figure_ref("mcp_bench", "`recall` call")]
    profiled = Profiled(key="mcp-recall", title="MCP recall", command="MemoryTools.recall(QUERY, 2000), in-process "
                        "(500 cards, 20,000 events; plan and remember calls between, as in the bench)",
                        wall_ms=statistics.median(walls) * 1000, runs=calls, in_process=True, calls=calls,
                        figures=figures, bench=bench_figure(session.bench_out, figures, None),
                        note="the bench's figure adds the MCP round trip (client, JSON-RPC over stdio, the SDK)",
                        **analysed(load_stats(prof)))
    print(f"  {summary(profiled)}", flush=True)
    return profiled


# -- main ----------------------------------------------------------------------------------------------------
def machine_text(load_before: float) -> str:
    return (f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}; 1-minute load "
            f"average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end (the machine is shared: "
            f"wall times move with the load)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="unprofiled runs of a short process")
    parser.add_argument("--heavy-runs", type=int, default=3, help="unprofiled runs of the dream and the ingest")
    parser.add_argument("--calls", type=int, default=20, help="MCP recall calls, timed and then profiled")
    parser.add_argument("--output", type=Path, default=BENCH / "PROFILES.md")
    parser.add_argument("--bench-out", type=Path, default=BENCH / "out", help="the bench scripts' --json files")
    parser.add_argument("--prof-dir", type=Path, default=BENCH / "out" / "profiles", help="where .prof files go")
    parser.add_argument("--json", type=Path, metavar="FILE", help="Also write the figures to FILE (bench/results.py).")
    args = parser.parse_args()
    figures = Figures(__file__, "profiles")
    args.prof_dir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memdream-profiles-") as name:
        session = Session(Path(name), args.prof_dir, args.bench_out, startup_modules(recall_bench.ENV))
        specs = [*recall_specs(session, args.runs), dream_spec(session, args.heavy_runs),
                 ingest_spec(session, args.heavy_runs), session_start_spec(session, args.runs),
                 enqueue_spec(session, args.runs)]
        profiles = [profile_process(session, spec) for spec in specs[:3]]
        profiles.append(mcp_profile(session, args.calls))
        profiles += [profile_process(session, spec) for spec in specs[3:]]
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    args.output.write_text(document(profiles, date, machine_text(load_before)), encoding="utf-8")
    for profiled in profiles:
        figures.add(f"{profiled.title}: wall time, {profiled.runs_text}", round(profiled.wall_ms, 2), "ms",
                    note=summary(profiled))
    figures.write(args.json, profiles=[profiled.to_json() for profiled in profiles], markdown=str(args.output))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
