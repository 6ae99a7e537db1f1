"""bench/results.py: RESULTS.md from the JSON files bench scripts write (bench/figures.py), as `make bench` runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.figures import Figures, at_least, at_most

REPO = Path(__file__).resolve().parent.parent


def results(folder: Path, output: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "bench" / "results.py"), str(folder), "--output", str(output)],
                          capture_output=True, text=True, check=False)


def write_run(folder: Path, name: str, figures: Figures | None, exit_code: int, log: str = "", **extra: Any) -> None:
    if figures is not None:
        figures.write(folder / f"{name}.json", **extra)
    (folder / f"{name}.exit").write_text(f"{exit_code}\n", encoding="utf-8")
    (folder / f"{name}.log").write_text(log, encoding="utf-8")


def startup_figures() -> Figures:
    figures = Figures("enqueue_bench.py", "start-up")
    floor = ('python -c "import typer"', 80.0, "ms")
    figures.add("`enqueue --from-hook`, median of 20", 100.0, "ms", floor=floor,
                target=at_most(120.0, "<= 1.5x import typer", "issue 24"), note="CPU 98 ms")
    figures.add("`memdream --help`", 130.0, "ms", floor=floor, target=at_most(104.0, "<= 1.3x import typer", "issue 24"),
                note="typer 45 ms, memdream.cli 60 ms in-process")
    figures.add("bare interpreter start-up (`python -c pass`)", 13.0, "ms")
    return figures


def test_a_met_and_a_missed_target_with_their_floor(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_run(out, "enqueue_bench", startup_figures(), 0)
    done = results(out, tmp_path / "RESULTS.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert "Python 3." in text and "cores" in text and "Date: 20" in text
    assert "**1 targets met, 1 missed, 0 script(s) failed**" in text
    assert "## Start-up" in text
    assert ("| `enqueue --from-hook`, median of 20 | 100 ms | ≤ 1.5× import typer = ≤ 120 ms (issue 24) | "
            'python -c "import typer": 80.0 ms | met | CPU 98 ms |') in text
    assert ("| `memdream --help` | 130 ms | ≤ 1.3× import typer = ≤ 104 ms (issue 24) | "
            'python -c "import typer": 80.0 ms | **missed** | typer 45 ms, memdream.cli 60 ms in-process |') in text
    assert "- start-up: `memdream --help`: 130 ms against ≤ 1.3× import typer" in text
    assert "| bare interpreter start-up (`python -c pass`) | 13.0 ms |  |  |  |  |" in text


def test_a_failed_script_is_listed_and_the_others_still_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_run(out, "enqueue_bench", startup_figures(), 0)
    write_run(out, "lint_bench", None, 2, log="building 10,000 cards\nlint failed (3): bad card\n")
    done = results(out, tmp_path / "RESULTS.md")
    assert done.returncode == 1
    assert "failed: lint_bench" in done.stdout
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert "1 script(s) failed" in text and "Failed: `bench/lint_bench.py`" in text
    assert "## Lint\n\n**`bench/lint_bench.py` failed** (exit 2)" in text
    assert "lint failed (3): bad card" in text
    assert "## Start-up" in text and "`enqueue --from-hook`, median of 20" in text


def test_a_figure_of_another_area_and_the_growth_table(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    recall = Figures("recall_bench.py", "recall")
    recall.add("`recall --queries`", 2500.0, "queries/s", target=at_least(2000, ">= 2,000 queries/s", "issue 24"))
    recall.add("`memdream --help`", 90.0, "ms", area="start-up")
    write_run(out, "recall_bench", recall, 0)
    png = tmp_path / "growth.png"
    png.write_bytes(b"\x89PNG\r\n")
    growth = Figures("growth_bench.py", "growth")
    points: list[dict[str, Any]] = [{"sessions": n, "events": 30 * n, "new_events": 30 * n, "ingest_s": 0.5, "dream_s": 0.1 * n,
               "active_bytes": 15_000 + 10 * n, "cards": 12, "raw_bytes": 30_000 * n, "log_bytes": 50_000 * n,
               "budget": 2000, "questions": 22, "recall": 0.8, "bm25": 0.7, "knowledge_recall": 1.0,
               "knowledge_bm25": 0.5, "task_recall": 0.5, "task_bm25": 0.9,
               "missed": []} for n in (10, 1000)]
    growth.add("10 sessions: dream of the step", 1.0, "s")
    write_run(out, "growth_bench", growth, 0, points=points, png=str(png))
    done = results(out, tmp_path / "RESULTS.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert text.index("## Growth") < text.index("## Recall") < text.index("## Start-up")
    assert "![dream time, active memory and recall quality as the log grows](growth.png)" in text
    assert ("| 1,000 | 30,000 | 100.00 s | 0.50 s | 25.0 KB | 30.0 MB | 12 | 80 % of 22 (70 %) | 100 % (50 %) | "
            "50 % (90 %) |") in text
    assert "| `recall --queries` | 2,500 queries/s | ≥ 2,000 queries/s (issue 24) |  | met |  |" in text
    start_up = text[text.index("## Start-up"):]
    assert "| `memdream --help` | 90.0 ms |" in start_up


def test_a_missed_figure_links_to_its_profile_and_carries_its_why(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    write_run(out, "enqueue_bench", startup_figures(), 0)
    profiles = Figures("profiles.py", "profiles")
    profiles.add("Enqueue from a hook: wall time, unprofiled, median of 5 runs", 120.0, "ms", note="120 ms: ...")
    profiled = {"anchor": "enqueue-from-a-hook", "summary": "120 ms: start + imports 100 ms (typer/click 80.0 ms)",
                "figures": [{"script": "enqueue_bench", "prefix": "`memdream --help`"}]}
    write_run(out, "profiles", profiles, 0, profiles=[profiled], markdown=str(tmp_path / "PROFILES.md"))
    done = results(out, tmp_path / "RESULTS.md")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert ("- start-up: `memdream --help`: 130 ms against ≤ 1.3× import typer = ≤ 104 ms (issue 24) (typer 45 ms, "
            "memdream.cli 60 ms in-process). Why: 120 ms: start + imports 100 ms (typer/click 80.0 ms) "
            "([profile](PROFILES.md#enqueue-from-a-hook))") in text
    assert ("| `memdream --help` | 130 ms | ≤ 1.3× import typer = ≤ 104 ms (issue 24) | python -c \"import typer\": "
            "80.0 ms | **missed** ([profile](PROFILES.md#enqueue-from-a-hook)) |") in text
    # a met figure of the same script links nowhere; the profiles' own figures are a table of their own
    assert "| `enqueue --from-hook`, median of 20 | 100 ms | ≤ 1.5× import typer = ≤ 120 ms (issue 24) | " \
           'python -c "import typer": 80.0 ms | met | CPU 98 ms |' in text
    assert "## Profiles" in text and "**1 targets met, 1 missed, 0 script(s) failed**" in text
