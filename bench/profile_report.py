"""What bench/profiles.py makes of its measurements: the areas a profile's time falls into, the imports of
`python -X importtime` per package, the split of a run's wall time, the "why it misses" text and PROFILES.md.

Pure functions over recorded data (a pstats table, importtime's text, the measured milliseconds), so that
tests can check them on small made-up profiles; bench/profiles.py runs the processes and calls these.

How a profile's time becomes areas (the table AREA_RULES, shown in PROFILES.md too): every function's self
time is shared out over the areas of the paths that called it, in proportion to the cumulative time each
caller spent in it (cProfile keeps caller edges, not whole stacks: this is the usual gprof-style estimate).
A function an area's rule names claims the time of everything it calls, with three strengths:

- the program's top level (*root*) starts afresh: `builtins.exec` runs it and every imported module;
- a *container* (imports, git subprocesses, waiting for worker processes) claims everything below it, even
  what another rule names: a regex compiled while a module is imported is import time;
- a *specific* area (pickle, YAML, JSON, ranking, writing files, regexes) claims what it calls unless a
  container is above it; the innermost specific area wins (YAML parsed while loading a cache is YAML);
- a *weak* area (memdream's own code per package, the CLI framework) claims only what no specific area above
  it claimed (a card's ``from_dict`` called while loading the card cache stays cache loading).

Whatever no rule claims is "other". The areas of one profile add up to its total time exactly.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# -- areas ------------------------------------------------------------------------------------------------
ROOT, CONTAINER, SPECIFIC, WEAK = "root", "container", "specific", "weak"
IMPORTS = "imports"
OTHER = "other"
CACHE = "index/cache loading (pickle, freshness stats)"
UNSEEN = "outside the profile (interpreter exit, `-m` start-up)"


@dataclass(frozen=True)
class AreaRule:
    """Functions whose ``short path:function name`` matches ``pattern`` start ``area`` (with ``strength``)."""

    area: str
    pattern: str
    strength: str
    matcher: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", re.compile(self.pattern))


# First match wins: a rule naming functions comes before its file's catch-all.
AREA_RULES: tuple[AreaRule, ...] = (
    # The program itself (`python -m memdream`'s __main__, cProfile's command string): not an import.
    AreaRule(OTHER, r"^(memdream/__main__\.py|<string>):<module>$", ROOT),
    # A module's top-level code runs when it is imported (builtins.exec runs both that and the program,
    # so what it calls is told apart here, not by its callers).
    AreaRule(IMPORTS, r"^<frozen importlib\._bootstrap>:_find_and_load$|:<module>$", CONTAINER),
    AreaRule("git subprocesses", r"^(subprocess\.py|memdream/gitops\.py):", CONTAINER),
    AreaRule("waiting for worker processes", r"^multiprocessing/", CONTAINER),
    AreaRule("writing files", r"^~:<(method 'write' of '_io\.|built-in method (posix\.(write|fsync|replace|rename)|"
                              r"_pickle\.dump)>)", SPECIFIC),
    AreaRule("writing files", r"^memdream/yamlio\.py:write_atomic$|^memdream/memory/raw\.py:(write|write_fields|"
                              r"_key_line|_escape|earliest|latest|_before|publish|_fsync_dir|_open_next)$", SPECIFIC),
    AreaRule(CACHE, r"^~:<built-in method (_pickle\.loads?|marshal\.loads)>$", SPECIFIC),
    AreaRule(CACHE, r"^memdream/memory/(cachefile|cardcache)\.py:|^memdream/recall/index\.py:(read_pickle|"
                    r"load_card_index|load_segment_indexes|card_files_stamp|file_stamp|manifest|doc)$", SPECIFIC),
    AreaRule("YAML parsing and dumping", r"^(yaml/|_yaml|memdream/yamlio\.py:)|^~:.*\b_yaml\.", SPECIFIC),
    AreaRule("JSON decode/encode", r"^(json/|memdream/jsonio\.py:)|^~:.*\b(_json|orjson)\.", SPECIFIC),
    AreaRule("ranking/BM25", r"^memdream/recall/(rank|text|standing)\.py:|^rapidfuzz/|^~:.*\brapidfuzz\.", SPECIFIC),
    AreaRule("compiling regexes", r"^re/|^~:<built-in method _sre\.compile>$", SPECIFIC),
    AreaRule("recall's own code (selecting, rendering)", r"^memdream/recall/", WEAK),
    AreaRule("dream's own code (stages)", r"^memdream/dream/", WEAK),
    AreaRule("ingest's own code (per-event checks, dedup, tags)", r"^memdream/ingest/", WEAK),
    AreaRule("other memdream code", r"^memdream/", WEAK),
    AreaRule("CLI framework at run time (typer, click, rich)", r"^(typer|click|rich|shellingham)/", WEAK),
)
AREA_ORDER: tuple[str, ...] = tuple(dict.fromkeys(rule.area for rule in AREA_RULES if rule.area != OTHER)) + (OTHER,)
STRENGTH = {rule.area: rule.strength for rule in AREA_RULES}

FunctionKey = tuple[str, int, str]  # pstats' (file, line, function)
# pstats' table: function -> (primitive calls, calls, self s, cumulative s, {caller: (pc, calls, self s, cum s)})
StatsTable = Mapping[FunctionKey, tuple[int, int, float, float, Mapping[FunctionKey, tuple[int, int, float, float]]]]
_PATH_ROOTS = re.compile(r"^.*/(site-packages|lib/python3\.\d+)/")


def short_path(path: str, repo: str = "") -> str:
    """A function's file as a reader knows it: ``memdream/recall/rank.py``, ``yaml/reader.py``, ``json/decoder.py``."""
    path = _PATH_ROOTS.sub("", path)
    if repo and path.startswith(repo.rstrip("/") + "/"):
        return path[len(repo.rstrip("/")) + 1:]
    return path


def function_name(key: FunctionKey, repo: str = "") -> str:
    """``file:function`` (``~:<built-in method posix.fsync>`` for a builtin), what AREA_RULES match."""
    path, _, name = key
    return f"{short_path(path, repo)}:{name}"


def rule_for(name: str) -> AreaRule | None:
    return next((rule for rule in AREA_RULES if rule.matcher.search(name)), None)


def _claimed(inherited: dict[str, float], rule: AreaRule | None) -> dict[str, float]:
    """The areas of a function's time: what its callers' areas give it, then what its own rule claims."""
    if rule is None:
        return inherited
    if rule.strength == ROOT:
        return {rule.area: 1.0}
    kept = {CONTAINER: {CONTAINER}, SPECIFIC: {CONTAINER}, WEAK: {CONTAINER, SPECIFIC}}[rule.strength]
    out = {area: share for area, share in inherited.items() if STRENGTH.get(area) in kept and area != rule.area}
    out[rule.area] = max(0.0, 1.0 - sum(out.values()))
    return out


def _inherited(callers: Mapping[FunctionKey, tuple[int, int, float, float]],
               shares: Mapping[FunctionKey, dict[str, float]]) -> dict[str, float]:
    """The callers' areas, weighted by the cumulative time each caller spent in this function."""
    weights = {caller: edge[3] for caller, edge in callers.items() if caller in shares}
    total = sum(weights.values())
    if total <= 0:  # calls too short to time: count them instead
        weights = {caller: float(callers[caller][1]) for caller in weights}
        total = sum(weights.values())
    if total <= 0:
        return {OTHER: 1.0}
    mixed: dict[str, float] = {}
    for caller, weight in weights.items():
        for area, share in shares[caller].items():
            mixed[area] = mixed.get(area, 0.0) + share * weight / total
    return mixed


def function_areas(stats: StatsTable, repo: str = "", passes: int = 12) -> dict[FunctionKey, dict[str, float]]:
    """Each function's time as shares of areas (adding up to 1). Functions go from the largest cumulative
    time down (callers before callees, nearly always); a few passes settle recursion and odd orders."""
    rules = {key: rule_for(function_name(key, repo)) for key in stats}
    order = sorted(stats, key=lambda key: -stats[key][3])
    shares: dict[FunctionKey, dict[str, float]] = {key: {OTHER: 1.0} for key in stats}
    for _ in range(passes):
        changed = 0.0
        for key in order:
            callers = {caller: edge for caller, edge in stats[key][4].items() if caller != key}
            new = _claimed(_inherited(callers, shares) if callers else {OTHER: 1.0}, rules[key])
            old = shares[key]
            changed = max(changed, *(abs(new.get(area, 0.0) - old.get(area, 0.0)) for area in {*new, *old}))
            shares[key] = new
        if changed < 1e-9:
            break
    return shares


def area_seconds(stats: StatsTable, shares: Mapping[FunctionKey, dict[str, float]]) -> dict[str, float]:
    """Seconds of the profile per area (``shares`` from :func:`function_areas`), in AREA_ORDER; they add up
    to the profile's total self time."""
    totals = dict.fromkeys(AREA_ORDER, 0.0)
    for key, areas in shares.items():
        for area, share in areas.items():
            totals[area] = totals.get(area, 0.0) + stats[key][2] * share
    return totals


def main_area(areas: Mapping[str, float]) -> str:
    return max(areas.items(), key=lambda item: item[1])[0] if areas else OTHER


# Dispatch every command goes through (the interpreter running the module, typer and click calling the
# command): at the top of any cumulative list, and saying nothing about the command.
PLUMBING = re.compile(r"^(<frozen |<string>:|~:<built-in method builtins\.(exec|__import__)>|typer/|click/|"
                      r"memdream/__main__\.py:|memdream/cli/(__init__|base)\.py:|cProfile\.py:|runpy\.py:)")


def top_functions(stats: StatsTable, shares: Mapping[FunctionKey, dict[str, float]], by: str, count: int = 12,
                  repo: str = "") -> list[dict[str, Any]]:
    """The ``count`` functions with the most self time (``by="self"``) or cumulative time (``"cumulative"``,
    leaving out PLUMBING), as rows: function, area (its largest, from :func:`function_areas`), calls, self
    ms, cumulative ms."""
    keys = [key for key in stats if by == "self" or not PLUMBING.search(function_name(key, repo))]
    keys.sort(key=lambda key: -(stats[key][2] if by == "self" else stats[key][3]))
    return [{"function": display_name(key, repo), "area": main_area(shares[key]), "calls": stats[key][1],
             "self_ms": round(stats[key][2] * 1000, 2), "cumulative_ms": round(stats[key][3] * 1000, 2)}
            for key in keys[:count]]


def display_name(key: FunctionKey, repo: str = "") -> str:
    path, line, name = key
    return name if path == "~" else f"{short_path(path, repo)}:{line} {name}"


# -- imports (python -X importtime) ------------------------------------------------------------------------
IMPORT_GROUPS = {"typer": "typer/click", "click": "typer/click", "shellingham": "typer/click", "rich": "rich",
                 "pygments": "rich", "markdown_it": "rich", "mdurl": "rich", "yaml": "yaml", "_yaml": "yaml",
                 "memdream": "memdream.*"}
STDLIB = "standard library"
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \| ( *)(\S+)\s*$")


@dataclass(frozen=True)
class ImportLine:
    depth: int
    name: str
    self_us: int


def parse_importtime(text: str) -> list[ImportLine]:
    """The module lines of ``-X importtime``'s output (other lines of stderr are skipped)."""
    lines = []
    for raw in text.splitlines():
        found = _IMPORT_LINE.match(raw)
        if found:
            lines.append(ImportLine(len(found.group(3)) // 2, found.group(4), int(found.group(1))))
    return lines


def _own_group(module: str) -> str | None:
    top = module.split(".")[0]
    if top in IMPORT_GROUPS:
        return IMPORT_GROUPS[top]
    return None if top in sys.stdlib_module_names or top.startswith("_") else top


def import_groups(lines: list[ImportLine], startup: Iterable[str] = ()) -> dict[str, float]:
    """Milliseconds of imports per group: a module's own self time goes to its package's group; a
    standard-library module counts for the package that first imported it (it would not be imported
    without it), or for the standard library when the interpreter's runner imported it. Modules of
    ``startup`` (what `python -c pass` imports) are left out: they are the interpreter's start."""
    skip = set(startup)
    parents: dict[int, int] = {}
    pending: list[int] = []  # importtime prints a module after the modules it imported (post-order)
    for index, line in enumerate(lines):
        while pending and lines[pending[-1]].depth > line.depth:
            child = pending.pop()
            if lines[child].depth == line.depth + 1:
                parents[child] = index
        pending.append(index)
    groups: dict[int, str] = {}
    for index in reversed(range(len(lines))):  # parents come after their children
        own = _own_group(lines[index].name)
        groups[index] = own or (groups[parents[index]] if index in parents else STDLIB)
    totals: dict[str, float] = {}
    for index, line in enumerate(lines):
        if line.name not in skip:
            totals[groups[index]] = totals.get(groups[index], 0.0) + line.self_us / 1000
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


# -- a run's wall time, split ----------------------------------------------------------------------------------
@dataclass
class Profiled:
    """One operation's measurements, as bench/profiles.py records them (and its --json holds)."""

    key: str
    title: str
    command: str
    wall_ms: float  # unprofiled: the ``statistic`` of ``runs`` runs (per call when in-process)
    runs: int
    profile_ms: float  # cProfile's total of the profiled run (slower than unprofiled)
    areas_ms: dict[str, float]  # the profile's milliseconds per area
    top_self: list[dict[str, Any]]
    top_cumulative: list[dict[str, Any]]
    in_process: bool = False
    start_ms: float = 0.0  # `python -c pass`
    imports_ms: dict[str, float] = field(default_factory=dict)  # per group, from -X importtime
    floor_ms: float | None = None  # `python -c "import typer"`
    profiled_wall_ms: float | None = None
    per: tuple[int, str] | None = None  # (1000, "query"): the work is shown per one of these too
    figures: list[dict[str, str]] = field(default_factory=list)  # the bench figures it explains: script, prefix
    # The bench's figure: value, target (text), budget_ms, and floor_ratio when the target is a multiple of
    # `python -c "import typer"` (then this run's own floor sets the budget).
    bench: dict[str, Any] | None = None
    note: str = ""
    calls: int = 0  # in-process: the profiled calls
    # A process repeats one command: its fastest run is the one least disturbed by the machine's other work.
    # In-process calls differ (their queries): their median.
    statistic: str = "median"

    @property
    def runs_text(self) -> str:
        what = "call" if self.in_process else "run"
        return f"one unprofiled {what}" if self.runs == 1 else f"{self.statistic} of {self.runs} unprofiled {what}s"

    @property
    def anchor(self) -> str:
        return slug(self.title)

    @property
    def imports_total(self) -> float:
        return sum(self.imports_ms.values())

    def to_json(self) -> dict[str, Any]:
        """The measurements, plus what bench/results.py shows of them (it does not import this module)."""
        return {**vars(self), "anchor": self.anchor, "summary": summary(self), "explanation": explanation(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Profiled:
        known = {name: value for name, value in data.items() if name in cls.__dataclass_fields__}
        if known.get("per") is not None:
            known["per"] = (int(known["per"][0]), str(known["per"][1]))
        return cls(**known)


def work_ms(profiled: Profiled) -> float:
    """The wall time left for the command's work: after the interpreter's start and the imports."""
    if profiled.in_process:
        return profiled.wall_ms
    return max(0.0, profiled.wall_ms - profiled.start_ms - profiled.imports_total)


def work_areas(profiled: Profiled) -> dict[str, float]:
    """The work's milliseconds per area, largest first: the profile's areas (imports left out in a process,
    where -X importtime measures them; per call in-process), scaled down to the unprofiled work time
    (cProfile's own cost taken out in proportion). When the unprofiled work is longer than what the
    profile saw, the areas stay as profiled and the difference is UNSEEN: the interpreter's exit
    (freeing what the command built) and whatever runs before cProfile starts or after it stops."""
    areas = {area: ms / max(profiled.calls, 1) for area, ms in profiled.areas_ms.items() if ms > 0 and not
             (area == IMPORTS and not profiled.in_process)}
    seen, work = sum(areas.values()), work_ms(profiled)
    if seen <= 0:
        return {UNSEEN: work} if work > 0 else {}
    scale = min(1.0, work / seen)
    out = {area: ms * scale for area, ms in areas.items()}
    if work > seen:
        out[UNSEEN] = work - seen
    return dict(sorted(out.items(), key=lambda item: -item[1]))


def wall_split(profiled: Profiled, smallest_import_ms: float = 1.0) -> list[tuple[str, float]]:
    """Rows (area, ms) of the wall time: interpreter start, imports per group (groups under
    ``smallest_import_ms`` folded into "imports: other"), then the work's areas; "other" last."""
    rows: list[tuple[str, float]] = []
    if not profiled.in_process:
        rows.append(("interpreter start (`python -c pass`)", profiled.start_ms))
        small = 0.0
        for group, ms in profiled.imports_ms.items():
            if ms < smallest_import_ms or group == STDLIB:
                small += ms
            else:
                rows.append((f"imports: {group}", ms))
        if small:
            rows.append(("imports: other (standard library, small packages)", small))
    work = work_areas(profiled)
    rows += [(area, ms) for area, ms in work.items() if area not in (OTHER, UNSEEN)]
    rows += [(area, work[area]) for area in (UNSEEN,) if area in work]
    rows.append((OTHER, work.get(OTHER, 0.0)))
    return rows


def shares(rows: list[tuple[str, float]]) -> list[float]:
    """Each row's share of the rows' total in % (adding up to 100)."""
    total = sum(ms for _, ms in rows)
    return [100 * ms / total if total else 0.0 for _, ms in rows]


# -- explanation -------------------------------------------------------------------------------------------
def ms_text(value: float) -> str:
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 100:
        return f"{value:,.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def budget_ms(figure: Mapping[str, Any], per: tuple[int, str] | None) -> float | None:
    """The time a bench figure's target allows the profiled run: a limit in ms or s as it is; a rate
    (queries/s, events/s) turned into the time ``per``'s count may take; a ratio times its floor."""
    target = figure.get("target") or {}
    limit, unit = target.get("limit"), str(figure.get("unit", ""))
    if limit is None:
        return None
    if unit == "ms":
        return float(limit)
    if unit == "s":
        return float(limit) * 1000
    if unit.endswith("/s") and per is not None and limit:
        return per[0] / float(limit) * 1000
    floor = figure.get("floor") or {}
    if unit == "x" and floor.get("unit") == "s":
        return float(limit) * float(floor["value"]) * 1000
    return None


def floor_ratio(figure: Mapping[str, Any]) -> float | None:
    """The multiple of `python -c "import typer"` a target allows (1.5), when the target is one."""
    target, floor = figure.get("target") or {}, figure.get("floor") or {}
    if "import typer" not in str(floor.get("name", "")) or floor.get("unit") != figure.get("unit"):
        return None
    return float(target["limit"]) / float(floor["value"]) if target.get("limit") and floor.get("value") else None


def budget_of(profiled: Profiled) -> tuple[float | None, str]:
    """The time the target allows this run, and how it was worked out: a multiple of the floor is taken of
    this run's floor (the bench's was measured at another moment, at another load); else the bench's."""
    bench = profiled.bench or {}
    ratio = bench.get("floor_ratio")
    if ratio and profiled.floor_ms:
        return ratio * profiled.floor_ms, f" ({ratio:.1f}× this run's `import typer`)"
    return bench.get("budget_ms"), ""


def _listing(items: Iterable[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {ms_text(ms)}" for name, ms in items)


def plural(unit: str) -> str:
    return unit[:-1] + "ies" if unit.endswith("y") else unit + "s"


def _per_text(profiled: Profiled, work: float) -> str:
    """The work per item (per 1,000 items when one takes under 0.1 ms)."""
    if profiled.per is None or not profiled.per[0]:
        return ""
    count, unit = profiled.per
    each = work / count
    return f" ({ms_text(each * 1000)} per 1,000 {plural(unit)})" if each < 0.1 else f" ({ms_text(each)} per {unit})"


def work_function(profiled: Profiled) -> dict[str, Any] | None:
    """The function with the most self time in the command's own work (not an import, not the module
    code that builtins.exec runs)."""
    return next((row for row in profiled.top_self if row["area"] != IMPORTS and
                 row["function"] != "<built-in method builtins.exec>"), None)


def _round_trip_sentence(profiled: Profiled) -> str:
    """In-process: what the bench's figure holds beyond the profiled call (the protocol's round trip)."""
    bench_ms = (profiled.bench or {}).get("value_ms")
    if not profiled.in_process or not bench_ms or bench_ms <= profiled.wall_ms:
        return ""
    return (f"The bench's {ms_text(bench_ms)} also holds the MCP round trip (the client, JSON-RPC over stdio, the "
            f"SDK's validation): about {ms_text(bench_ms - profiled.wall_ms)} beyond the call profiled here "
            f"(another run, another load).")


def _start_sentence(profiled: Profiled, budget: float | None, how: str) -> str:
    before = profiled.start_ms + profiled.imports_total
    groups = [(group, ms) for group, ms in profiled.imports_ms.items() if ms >= 1.0][:5]
    text = (f"Starting the interpreter takes {ms_text(profiled.start_ms)} and the imports "
            f"{ms_text(profiled.imports_total)} ({_listing(groups)}): {ms_text(before)} before the command runs")
    if profiled.floor_ms:
        text += f", where `python -c \"import typer\"` takes {ms_text(profiled.floor_ms)}"
    if budget:
        text += (f"; that alone is more than the {ms_text(budget)}{how} the target allows" if before > budget
                 else f"; that is {100 * before / budget:.0f} % of the {ms_text(budget)}{how} the target allows")
    return text + "."


def _gap_sentence(profiled: Profiled, budget: float, work: dict[str, float]) -> str:
    gap = profiled.wall_ms - budget
    bench_ms = (profiled.bench or {}).get("value_ms")
    if gap <= 0 and profiled.in_process and bench_ms and bench_ms > budget:
        return (f"The call itself fits in the {ms_text(budget)} the target allows ({ms_text(-gap)} to spare): "
                f"what misses is the round trip around it.")
    if gap <= 0:
        return (f"This run met the {ms_text(budget)} the target allows ({ms_text(-gap)} to spare): "
                f"the bench's miss came with the machine's load.")
    if not profiled.in_process and profiled.start_ms + profiled.imports_total >= budget:
        return ("No work at all would still miss the target: only fewer or cheaper imports (or no new process) "
                "can meet it.")
    top = next(iter(named_areas(work, 1)), None)
    if top is not None and top[1] >= gap:
        return f"Meeting the target takes {ms_text(gap)} less: {top[0]} alone is {ms_text(top[1])}."
    return f"Meeting the target takes {ms_text(gap)} less, more than any one area: it needs cuts in several."


def named_areas(work: Mapping[str, float], count: int) -> list[tuple[str, float]]:
    """The ``count`` largest areas of the work that say something (not "other", not the unseen, not nothing)."""
    return [(area, ms) for area, ms in work.items() if area not in (OTHER, UNSEEN) and ms >= 0.005][:count]


def _work_sentence(profiled: Profiled, work: Mapping[str, float]) -> str:
    if not profiled.in_process and work_ms(profiled) <= 0:
        return (f"The separately measured start and imports take as long as the fastest whole run "
                f"({ms_text(profiled.start_ms + profiled.imports_total)} against {ms_text(profiled.wall_ms)}): the "
                f"command's own work is lost in the noise.")
    named = named_areas(work, 3)
    return (f"The {'work' if profiled.in_process else 'work after them'} is "
            f"{ms_text(work_ms(profiled))}{_per_text(profiled, work_ms(profiled))}"
            + (f": {_listing(named)}." if named else "."))


def explanation(profiled: Profiled) -> str:
    """A paragraph saying where the time goes and why the target is missed, from the measured figures only."""
    budget, how = budget_of(profiled)
    what = (f"{profiled.title} takes {ms_text(profiled.wall_ms)}"
            f"{' per call' if profiled.in_process else ''} here ({profiled.runs_text})")
    if profiled.bench:
        what += f"; the bench measured {profiled.bench['value']} against {profiled.bench['target']}"
    sentences = [what + "."]
    if not profiled.in_process:
        sentences.append(_start_sentence(profiled, budget, how))
    work = work_areas(profiled)
    sentences.append(_work_sentence(profiled, work))
    first = work_function(profiled)
    if first:
        sentences.append(f"The function with the most self time in that work is `{first['function']}` "
                         f"({ms_text(first['self_ms'])} of the profiled run's {ms_text(profiled.profile_ms)}, "
                         f"{first['area']}).")
    sentences.append(_round_trip_sentence(profiled))
    if budget:
        sentences.append(_gap_sentence(profiled, budget, work))
    return " ".join(sentence for sentence in sentences if sentence)


def _of_budget(ms: float, budget: float | None) -> str:
    return f" ({100 * ms / budget:.0f} % of the {ms_text(budget)} allowed)" if budget else ""


def summary(profiled: Profiled) -> str:
    """The one line RESULTS.md shows next to a missed figure: the time here, how much of what the target
    allows goes before the command runs (or, in-process, to the call), and where the rest goes."""
    work = work_areas(profiled)
    named = named_areas(work, 2)
    budget, _ = budget_of(profiled)
    if profiled.in_process:
        bench_ms = (profiled.bench or {}).get("value_ms")
        trip = (f"; the rest of the bench's {ms_text(bench_ms)} is the round trip around the call"
                if bench_ms and bench_ms > profiled.wall_ms else "")
        return (f"{ms_text(profiled.wall_ms)} per call in-process{_of_budget(profiled.wall_ms, budget)}: "
                f"{_listing(named)}{trip}")
    before = profiled.start_ms + profiled.imports_total
    groups = [(group, ms) for group, ms in profiled.imports_ms.items() if group != STDLIB][:2]
    if work_ms(profiled) <= 0:
        return (f"{ms_text(profiled.wall_ms)} here; start + imports {ms_text(before)}{_of_budget(before, budget)}: "
                f"{_listing(groups)}; the work is lost in the noise")
    return (f"{ms_text(profiled.wall_ms)} here; start + imports {ms_text(before)}{_of_budget(before, budget)}: "
            f"{_listing(groups)}; work {ms_text(work_ms(profiled))}{_per_text(profiled, work_ms(profiled))}"
            + (f", mostly {_listing(named)}" if named else ""))


# -- PROFILES.md ---------------------------------------------------------------------------------------------
def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def _function_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| function | area | calls | self | cumulative |", "|---|---|---|---|---|"]
    for row in rows:
        name = str(row["function"]).replace("|", "\\|")
        lines.append(f"| `{name}` | {row['area']} | {row['calls']:,} | {ms_text(row['self_ms'])} | "
                     f"{ms_text(row['cumulative_ms'])} |")
    return lines


def section(profiled: Profiled) -> list[str]:
    rows = wall_split(profiled)
    lines = [f"## {profiled.title}", "", f"`{profiled.command}`" + (f" — {profiled.note}" if profiled.note else ""), "",
             f"**Why:** {explanation(profiled)}", "",
             f"Wall time {ms_text(profiled.wall_ms)}{' per call' if profiled.in_process else ''}, "
             f"{profiled.runs_text}"
             + (f"; the profiled run: {ms_text(profiled.profiled_wall_ms)} wall" if profiled.profiled_wall_ms else "")
             + (f"; {profiled.calls} profiled calls" if profiled.calls else "")
             + f", {ms_text(profiled.profile_ms)} in cProfile's functions.", "",
             "| area | ms | share |", "|---|---|---|"]
    lines += [f"| {area} | {ms_text(ms)} | {share:.1f} % |" for (area, ms), share in zip(rows, shares(rows))]
    lines += ["", "Top functions by self time (profiled run):", ""] + _function_table(profiled.top_self)
    lines += ["", "Top functions by cumulative time (profiled run; interpreter, import and typer/click dispatch "
              "left out):", ""] + _function_table(profiled.top_cumulative)
    return lines + [""]


def rules_table() -> list[str]:
    lines = ["| area | functions (`file:function`, a regular expression) | strength |", "|---|---|---|"]
    for rule in AREA_RULES:
        lines.append(f"| {rule.area} | `{rule.pattern.replace('|', chr(92) + '|')}` | {rule.strength} |")
    return lines + [f"| {OTHER} | everything no rule claims (the interpreter's top level) | |"]


def overview_table(profiles: list[Profiled]) -> list[str]:
    lines = ["| operation | wall (unprofiled) | start + imports | work | largest work area | why |",
             "|---|---|---|---|---|---|"]
    for profiled in profiles:
        before = "–" if profiled.in_process else ms_text(profiled.start_ms + profiled.imports_total)
        work = work_areas(profiled)
        largest = " ".join(f"{area} {ms_text(ms)}" for area, ms in named_areas(work, 1)) or "–"
        lines.append(f"| [{profiled.title}](#{profiled.anchor}) | {ms_text(profiled.wall_ms)} | {before} | "
                     f"{ms_text(work_ms(profiled))} | {largest} | {summary(profiled)} |")
    return lines


METHOD = (
    "How to read it. Each operation is one of the missed targets of `bench/RESULTS.md`, on the data its bench "
    "script builds (the scripts' own builders). A process is run a few times unprofiled (the wall time: the "
    "fastest run, the one least disturbed by the shared machine's other work, as for its floors), once "
    "with `python -X importtime` (the imports per package) and once with `python -m cProfile -o FILE -m memdream …` "
    "(where the rest goes); an in-process operation is timed over its calls, then the same calls profiled. The "
    "split adds up to the unprofiled wall time: the interpreter's start is `python -c pass` measured alongside; "
    "the imports are `-X importtime`'s self times (a standard-library module counts for the package that "
    "imported it first; what `python -c pass` imports is the start); the profile's areas (imports left out) are "
    "scaled down to the remaining work time, taking cProfile's own cost out in proportion; when that time is "
    "longer than what the profile saw, the difference is shown as outside the profile (mostly the "
    "interpreter's exit, which frees what the command built). cProfile slows Python calls more than C code, "
    "so these proportions lean towards code made of many small calls: read them as estimates, and the "
    "function tables' milliseconds as the profiled run's, not the real run's. The profiles themselves are in "
    "`bench/out/profiles/*.prof` (`python -m pstats FILE`).")


def document(profiles: list[Profiled], date: str, machine: str) -> str:
    """PROFILES.md: what was measured, the overview, one section per operation, the area table. ``machine``
    says the cores, Python and the load average at the start and the end."""
    lines = ["# Profiles of the missed speed targets", "",
             "Written by `bench/profiles.py` (a `make bench` step, after the bench scripts); do not edit by hand.",
             "", f"Date: {date}. Machine: {machine}.", "", METHOD, ""]
    lines += overview_table(profiles) + [""]
    for profiled in profiles:
        lines += section(profiled)
    lines += ["## How functions map to areas", "",
              "From `bench/profile_report.py` (`AREA_RULES`, first match wins). A function's self time goes to the "
              "areas of the calls above it, in proportion to the time each caller spent in it; the root (the "
              "program) starts afresh, a container claims everything below it, a specific area everything below "
              "it but containers, a weak area only what no specific area above it claimed.", ""]
    lines += rules_table()
    return "\n".join(lines).rstrip() + "\n"
