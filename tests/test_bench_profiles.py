"""bench/profile_report.py: areas of a profile, imports per package, the wall-time split and the "why" text, on
small made-up profiles (bench/profiles.py, which runs the real processes, is a `make bench` step, not a test)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.profile_report import (
    CACHE,
    IMPORTS,
    OTHER,
    UNSEEN,
    FunctionKey,
    Profiled,
    area_seconds,
    budget_ms,
    document,
    explanation,
    floor_ratio,
    function_areas,
    import_groups,
    parse_importtime,
    shares,
    short_path,
    slug,
    summary,
    top_functions,
    wall_split,
)

STDLIB = "/usr/lib/python3.11"
SITE = "/repo/.venv/lib/python3.11/site-packages"
MAIN = ("<string>", 1, "<module>")
PROGRAM = ("/repo/memdream/__main__.py", 1, "<module>")
COMMAND = ("/repo/memdream/cli/recall_cmd.py", 28, "recall")
ENGINE = ("/repo/memdream/recall/engine.py", 612, "recall")
BM25 = ("/repo/memdream/recall/rank.py", 289, "bm25")
GET = ("~", 0, "<method 'get' of 'dict' objects>")
LOAD_INDEX = ("/repo/memdream/recall/index.py", 555, "load_card_index")
UNPICKLE = ("~", 0, "<built-in method _pickle.load>")
FROM_DICT = ("/repo/memdream/memory/card.py", 42, "from_dict")
GIT = (f"{STDLIB}/subprocess.py", 506, "run")
POLL = ("~", 0, "<method 'poll' of 'select.poll' objects>")
FIND = ("<frozen importlib._bootstrap>", 1165, "_find_and_load")
TYPER_MODULE = (f"{SITE}/typer/main.py", 1, "<module>")
COMPILE = (f"{STDLIB}/re/_compiler.py", 37, "_compile")
# (caller, callee, cumulative seconds of the call) and each function's self seconds: a recall process.
CALLS = [(MAIN, PROGRAM, 0.200), (PROGRAM, FIND, 0.030), (FIND, TYPER_MODULE, 0.030), (TYPER_MODULE, COMPILE, 0.010),
         (PROGRAM, COMMAND, 0.170), (COMMAND, ENGINE, 0.150), (ENGINE, BM25, 0.060), (BM25, GET, 0.020),
         (ENGINE, LOAD_INDEX, 0.060), (LOAD_INDEX, UNPICKLE, 0.040), (LOAD_INDEX, FROM_DICT, 0.010),
         (ENGINE, FROM_DICT, 0.010), (COMMAND, GIT, 0.020), (GIT, POLL, 0.015)]
SELF = {MAIN: 0.0, PROGRAM: 0.0, FIND: 0.020, TYPER_MODULE: 0.020, COMPILE: 0.010, COMMAND: 0.0, ENGINE: 0.020,
        BM25: 0.040, GET: 0.020, LOAD_INDEX: 0.0, UNPICKLE: 0.040, FROM_DICT: 0.020, GIT: 0.005, POLL: 0.015}


def stats_table(calls: list[tuple[FunctionKey, FunctionKey, float]], self_s: dict[FunctionKey, float]) -> dict[Any, Any]:
    """pstats' table for a call graph: function -> (calls, calls, self s, cumulative s, callers)."""
    table: dict[Any, Any] = {}
    for key, own in self_s.items():
        callers = {caller: (1, 1, 0.0, ct) for caller, callee, ct in calls if callee == key}
        cumulative = sum(edge[3] for edge in callers.values()) or own + sum(ct for caller, _, ct in calls if caller == key)
        table[key] = (1, 1, own, cumulative, callers)
    return table


def areas_ms() -> dict[str, float]:
    return {area: round(seconds * 1000, 6) for area, seconds in area_seconds(STATS, function_areas(STATS, "/repo")).items()}


STATS = stats_table(CALLS, SELF)


def test_short_paths_name_files_as_a_reader_knows_them() -> None:
    assert short_path(f"{SITE}/typer/main.py") == "typer/main.py"
    assert short_path(f"{STDLIB}/json/decoder.py") == "json/decoder.py"
    assert short_path("/repo/memdream/recall/rank.py", "/repo") == "memdream/recall/rank.py"


def test_every_function_lands_in_its_area_and_the_areas_add_up() -> None:
    areas = areas_ms()
    assert areas[IMPORTS] == pytest.approx(50)  # the import machinery, the module's code and the regex it compiled
    assert areas["ranking/BM25"] == pytest.approx(60)  # bm25 and the dict lookups it makes
    assert areas[CACHE] == pytest.approx(50)  # the unpickling, and from_dict as far as the cache loader called it
    assert areas["recall's own code (selecting, rendering)"] == pytest.approx(20)  # the engine's own time
    assert areas["other memdream code"] == pytest.approx(10)  # from_dict as far as the engine called it
    assert areas["git subprocesses"] == pytest.approx(20)
    assert areas["compiling regexes"] == pytest.approx(0)  # at import: a container claims what it calls
    assert sum(areas.values()) == pytest.approx(sum(SELF.values()) * 1000)


def test_top_functions_by_self_and_cumulative_time_leave_out_the_dispatch() -> None:
    found = function_areas(STATS, "/repo")
    by_self = top_functions(STATS, found, "self", 3, "/repo")
    assert [row["function"] for row in by_self][:2] == ["memdream/recall/rank.py:289 bm25",
                                                         "<built-in method _pickle.load>"]
    assert by_self[0] == {"function": "memdream/recall/rank.py:289 bm25", "area": "ranking/BM25", "calls": 1,
                          "self_ms": 40.0, "cumulative_ms": 60.0}
    cumulative = [row["function"] for row in top_functions(STATS, found, "cumulative", 3, "/repo")]
    assert cumulative == ["memdream/cli/recall_cmd.py:28 recall", "memdream/recall/engine.py:612 recall",
                          "memdream/recall/rank.py:289 bm25"]


IMPORTTIME = """\
import time: self [us] | cumulative | imported package
import time:       248 |        248 |   _io
import time:      1000 |       1248 | site
some other line on stderr
import time:       500 |        500 |     enum
import time:      2000 |       2500 |   typer._click.core
import time:      3000 |       5500 | typer
import time:       400 |        400 |   json
import time:      1000 |       1400 | memdream.cli
import time:       300 |        300 |   rapidfuzz
import time:       700 |       1000 | runpy
"""


def test_imports_go_to_the_package_that_first_imported_them() -> None:
    lines = parse_importtime(IMPORTTIME)
    assert [(line.depth, line.name, line.self_us) for line in lines][:3] == [(1, "_io", 248), (0, "site", 1000),
                                                                             (2, "enum", 500)]
    groups = import_groups(lines, startup={"_io", "site"})
    assert groups == {"typer/click": 5.5, "memdream.*": 1.4, "standard library": 0.7, "rapidfuzz": 0.3}


def recall_process(**changes: Any) -> Profiled:
    """One recall process: 300 ms, 20 ms to start, 180 ms of imports, a profile of 200 ms without imports."""
    data: dict[str, Any] = {
        "key": "recall-one", "title": "One recall process", "command": "memdream recall Q", "wall_ms": 300.0,
        "runs": 5, "profile_ms": 260.0, "start_ms": 20.0, "imports_ms": {"typer/click": 100.0, "memdream.*": 70.0,
                                                                          "standard library": 9.5, "tiny": 0.5},
        "areas_ms": {IMPORTS: 60.0, CACHE: 120.0, "ranking/BM25": 60.0, OTHER: 20.0}, "floor_ms": 90.0,
        "top_self": [{"function": "<built-in method builtins.exec>", "area": OTHER, "calls": 3, "self_ms": 30.0,
                      "cumulative_ms": 260.0},
                     {"function": "<built-in method _pickle.load>", "area": CACHE, "calls": 3, "self_ms": 25.0,
                      "cumulative_ms": 25.0}],
        "top_cumulative": [], "figures": [{"script": "recall_bench", "prefix": "one `memdream recall` process"}],
        "bench": {"value": "301 ms", "target": "≤ 1.5× import typer = ≤ 142 ms (issue 24)", "budget_ms": 142.0,
                  "value_ms": 301.0}}
    data.update(changes)
    return Profiled.from_json(data)


def test_the_wall_time_splits_into_start_imports_and_the_work_adding_up_to_it() -> None:
    rows = dict(wall_split(recall_process()))
    assert rows["interpreter start (`python -c pass`)"] == 20.0
    assert rows["imports: typer/click"] == 100.0 and rows["imports: memdream.*"] == 70.0
    assert rows["imports: other (standard library, small packages)"] == 10.0
    # 300 - 20 - 180 = 100 ms of work, in the profile's proportions without its imports (120 : 60 : 20)
    assert rows[CACHE] == pytest.approx(60.0) and rows["ranking/BM25"] == pytest.approx(30.0)
    assert rows[OTHER] == pytest.approx(10.0)
    assert sum(rows.values()) == pytest.approx(300.0)
    assert sum(shares(wall_split(recall_process()))) == pytest.approx(100.0)


def test_work_the_profile_did_not_see_is_shown_as_such() -> None:
    rows = dict(wall_split(recall_process(wall_ms=500.0)))  # 300 ms of work, the profile saw 200
    assert rows[CACHE] == pytest.approx(120.0) and rows[UNSEEN] == pytest.approx(100.0)
    assert sum(rows.values()) == pytest.approx(500.0)


def test_the_explanation_is_made_of_the_measured_figures() -> None:
    text = explanation(recall_process())
    assert text.startswith("One recall process takes 300 ms here (median of 5 unprofiled runs); the bench measured "
                           "301 ms against ≤ 1.5× import typer = ≤ 142 ms (issue 24).")
    assert ("Starting the interpreter takes 20.0 ms and the imports 180 ms (typer/click 100 ms, memdream.* 70.0 ms, "
            "standard library 9.50 ms): 200 ms before the command runs, where `python -c \"import typer\"` takes "
            "90.0 ms; that alone is more than the 142 ms the target allows.") in text
    assert ("The work after them is 100 ms: index/cache loading (pickle, freshness stats) 60.0 ms, ranking/BM25 "
            "30.0 ms.") in text
    assert "most self time in that work is `<built-in method _pickle.load>` (25.0 ms of the profiled run's 260 ms" in text
    assert text.endswith("No work at all would still miss the target: only fewer or cheaper imports (or no new "
                         "process) can meet it.")
    assert summary(recall_process()) == ("300 ms here; start + imports 200 ms (141 % of the 142 ms allowed): "
                                         "typer/click 100 ms, memdream.* 70.0 ms; work 100 ms, mostly index/cache "
                                         "loading (pickle, freshness stats) 60.0 ms, ranking/BM25 30.0 ms")


def test_the_explanation_names_the_area_that_could_close_the_gap() -> None:
    batch = recall_process(title="Batch recall", wall_ms=2000.0, per=(1000, "query"),
                           bench={"value": "107 queries/s", "target": "≥ 2,000 queries/s", "budget_ms": 500.0})
    text = explanation(batch)
    assert "that is 40 % of the 500 ms the target allows." in text
    assert "The work after them is 1.80 s (1.80 ms per query): index/cache loading" in text
    assert text.endswith("Meeting the target takes 1.50 s less, more than any one area: it needs cuts in several.")
    ingest = recall_process(title="Ingest", wall_ms=3000.0, per=(200_000, "event"),
                            areas_ms={"writing files": 4000.0, OTHER: 200.0},
                            bench={"value": "60,239 events/s", "target": "≥ 100,000 events/s", "budget_ms": 2000.0})
    text = explanation(ingest)
    assert "The work after them is 2.80 s (14.0 ms per 1,000 events): writing files 2.67 s." in text
    assert text.endswith("Meeting the target takes 1.00 s less: writing files alone is 2.67 s.")


def test_an_in_process_call_has_no_start_up_and_the_bench_adds_the_round_trip() -> None:
    mcp = recall_process(title="MCP recall", in_process=True, wall_ms=11.0, calls=20, profile_ms=400.0,
                         areas_ms={CACHE: 200.0, "ranking/BM25": 200.0},
                         bench={"value": "14.4 ms", "target": "≤ 10 ms (issue 24)", "budget_ms": 10.0,
                                "value_ms": 14.4})
    assert [area for area, _ in wall_split(mcp)] == [CACHE, "ranking/BM25", OTHER]
    text = explanation(mcp)
    assert "MCP recall takes 11.0 ms per call here" in text and "Starting the interpreter" not in text
    assert "The work is 11.0 ms: index/cache loading (pickle, freshness stats) 5.50 ms, ranking/BM25 5.50 ms." in text
    assert "about 3.40 ms beyond the call profiled here" in text
    assert text.endswith("Meeting the target takes 1.00 ms less: index/cache loading (pickle, freshness stats) alone "
                         "is 5.50 ms.")
    fast = explanation(recall_process(title="MCP recall", in_process=True, wall_ms=7.0, calls=20,
                                      bench={"value": "14.4 ms", "target": "≤ 10 ms", "budget_ms": 10.0, "value_ms": 14.4}))
    assert fast.endswith("The call itself fits in the 10.0 ms the target allows (3.00 ms to spare): what misses is the "
                         "round trip around it.")
    assert summary(mcp) == ("11.0 ms per call in-process (110 % of the 10.0 ms allowed): index/cache loading "
                            "(pickle, freshness stats) 5.50 ms, ranking/BM25 5.50 ms; the rest of the bench's 14.4 ms "
                            "is the round trip around the call")


def test_a_run_that_met_the_budget_says_so() -> None:
    assert explanation(recall_process(wall_ms=140.0, start_ms=10.0, imports_ms={"typer/click": 60.0})).endswith(
        "This run met the 142 ms the target allows (2.00 ms to spare): the bench's miss came with the machine's load.")


@pytest.mark.parametrize(("figure", "per", "expected"), [
    ({"unit": "ms", "target": {"limit": 142.0}}, None, 142.0),
    ({"unit": "s", "target": {"limit": 1.0}}, None, 1000.0),
    ({"unit": "queries/s", "target": {"limit": 2000}}, (1000, "query"), 500.0),
    ({"unit": "events/s", "target": {"limit": 100_000}}, (200_000, "event"), 2000.0),
    ({"unit": "x", "target": {"limit": 1.3}, "floor": {"value": 2.0, "unit": "s"}}, None, 2600.0),
    ({"unit": "ms", "target": None}, None, None),
])
def test_the_time_a_target_allows(figure: dict[str, Any], per: tuple[int, str] | None, expected: float | None) -> None:
    assert budget_ms(figure, per) == (pytest.approx(expected) if expected is not None else None)


def test_sections_have_the_anchors_github_gives_their_headings() -> None:
    assert slug("Batch recall of 1,000 queries") == "batch-recall-of-1000-queries"
    assert slug("SessionStart hook") == "sessionstart-hook"
    profiled = recall_process()
    assert Profiled.from_json(profiled.to_json()) == profiled
    assert profiled.to_json()["anchor"] == "one-recall-process"
    text = document([profiled], "2026-12-02 10:00 UTC", "2 cores")
    assert "| [One recall process](#one-recall-process) | 300 ms | 200 ms | 100 ms |" in text
    assert "\n## One recall process\n" in text and "**Why:** One recall process takes 300 ms" in text
    assert "| index/cache loading (pickle, freshness stats) | 60.0 ms | 20.0 % |" in text
    assert "## How functions map to areas" in text


def test_a_target_relative_to_import_typer_is_taken_of_this_runs_floor() -> None:
    figure = {"unit": "ms", "value": 301.0, "target": {"op": "<=", "limit": 142.0},
              "floor": {"name": 'python -c "import typer"', "value": 94.4, "unit": "ms"}}
    assert floor_ratio(figure) == pytest.approx(142.0 / 94.4)
    assert floor_ratio({"unit": "s", "target": {"limit": 1.0}, "floor": None}) is None
    process = recall_process(statistic="fastest", bench={"value": "301 ms", "target": "≤ 142 ms", "budget_ms": 142.0,
                                                         "floor_ratio": 1.5})
    text = explanation(process)  # this run's floor is 90 ms: the target allows it 135 ms, not the bench's 142
    assert text.startswith("One recall process takes 300 ms here (fastest of 5 unprofiled runs)")
    assert "that alone is more than the 135 ms (1.5× this run's `import typer`) the target allows." in text


def test_work_lost_in_the_noise_is_said_so() -> None:
    quick = recall_process(wall_ms=190.0, start_ms=20.0, imports_ms={"typer/click": 100.0, "memdream.*": 75.0})
    assert ("The separately measured start and imports take as long as the fastest whole run (195 ms against "
            "190 ms): the command's own work is lost in the noise.") in explanation(quick)
    assert summary(quick).endswith("typer/click 100 ms, memdream.* 75.0 ms; the work is lost in the noise")
