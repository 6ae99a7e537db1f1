"""Write bench/RESULTS.md from one `make bench` run: the figures each script wrote with --json (bench/figures.py).

Runs nothing itself. Reads a folder (default bench/out/) holding, per script NAME: NAME.json (its figures),
NAME.exit (its exit code, written by the Makefile) and NAME.log (what it printed). Writes the date, the machine
(cores, Python, load average) and one table per area: figure, value, target, floor or baseline measured in the
same run, met or not, and the script's note (a miss's explanation where the script measured one). A script
that failed or wrote no figures is listed as failed, with the last lines it printed. When bench/profiles.py ran
(its profiles.json), a missed figure it profiled links to its section of bench/PROFILES.md, and the list of
misses carries the profile's one-line explanation.

Exits 1 when a script failed (after writing the file), so that `make bench` fails too.

Usage: python bench/results.py [FOLDER] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
# Areas in the order RESULTS.md shows them; a script's figures name their area (bench/figures.py).
AREAS = ["growth", "ingest", "dream", "incremental dream", "recall", "start-up", "recall quality", "LoCoMo",
         "real sessions", "transcripts", "lint", "review", "MCP", "opt-out", "redaction", "profiles"]
# Where a script's figures go when it wrote none (it failed before).
SCRIPT_AREAS = {"ingest_bench": "ingest", "dream_bench": "dream", "recall_bench": "recall",
                "enqueue_bench": "start-up", "session_start_bench": "start-up", "knowledge_bench": "recall quality",
                "locomo": "LoCoMo", "real_sessions": "real sessions", "transcript_bench": "transcripts",
                "lint_bench": "lint", "review_bench": "review", "mcp_bench": "MCP", "opt_out_bench": "opt-out",
                "redactions": "redaction", "growth_bench": "growth", "profiles": "profiles"}
SIGNS = {"<=": "≤", ">=": "≥", "==": "="}
LOG_TAIL = 15


@dataclass
class Run:
    """One script's run: its figures (or none), its exit code, the tail of what it printed."""

    name: str
    data: dict[str, Any] = field(default_factory=dict)
    exit: int | None = None
    log: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.exit) or not self.data.get("figures")


@dataclass(frozen=True)
class ProfileLink:
    """Where bench/PROFILES.md explains a missed figure: the link to its section, and its one-line why."""

    href: str
    summary: str


def profile_links(runs: list[Run], output: Path) -> dict[tuple[str, str], ProfileLink]:
    """(script, figure name prefix) -> its profile, from the runs that wrote profiles (bench/profiles.py)."""
    links: dict[tuple[str, str], ProfileLink] = {}
    for run in runs:
        document = run.data.get("markdown")
        href = os.path.relpath(Path(str(document)).resolve(), output.resolve().parent) if document else "PROFILES.md"
        for profiled in run.data.get("profiles") or []:
            link = ProfileLink(f"{href}#{profiled['anchor']}", str(profiled.get("summary", "")))
            for figure in profiled.get("figures") or []:
                links.setdefault((str(figure["script"]), str(figure["prefix"])), link)
    return links


def profile_of(links: dict[tuple[str, str], ProfileLink], run: Run, figure: dict[str, Any]) -> ProfileLink | None:
    """The profile that explains ``figure`` of ``run``, when the figure missed its target and one does."""
    if figure.get("met") is not False:
        return None
    return next((link for (script, prefix), link in links.items()
                 if script == run.name and str(figure["name"]).startswith(prefix)), None)


def load_runs(folder: Path) -> list[Run]:
    names = sorted({path.stem for path in folder.iterdir() if path.suffix in (".json", ".exit")})
    runs = []
    for name in names:
        run = Run(name)
        json_path, exit_path, log_path = (folder / f"{name}{suffix}" for suffix in (".json", ".exit", ".log"))
        if json_path.exists():
            try:
                run.data = json.loads(json_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                run.log = f"{json_path.name}: not JSON ({error})\n"
        if exit_path.exists():
            text = exit_path.read_text(encoding="utf-8").strip()
            run.exit = int(text) if text.lstrip("-").isdigit() else 1
        if log_path.exists():
            run.log += "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-LOG_TAIL:])
        runs.append(run)
    return runs


# -- formatting ------------------------------------------------------------------------------------------
def number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 100:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def shown(value: Any, unit: str) -> str:
    """A value in its unit, as a person reads it."""
    if value is None:
        return "not measured"
    if unit == "share":
        return f"{100 * value:.0f} %"
    if unit == "score":
        return f"{value:.3f}"
    if unit == "x":
        return f"{value:.2f}×"
    if unit.startswith("of "):
        return f"{value} {unit}"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{number(value)} {unit}"


def prose(text: str) -> str:
    """A script's ASCII (<=, 1.5x) as it is typeset here (≤, 1.5×)."""
    for ascii_sign, sign in SIGNS.items():
        if ascii_sign != "==":
            text = text.replace(ascii_sign, sign)
    return re.sub(r"(\d)x\b", "\\1×", text)


def target_text(target: dict[str, Any] | None, unit: str) -> str:
    if not target:
        return ""
    text = prose(str(target.get("text") or f"{target['op']} {target['limit']}"))
    if "import typer" in text or "BM25" in text:  # relative to this run's floor: say what it came to
        text += f" = {SIGNS.get(target['op'], target['op'])} {shown(target['limit'], unit)}"
    source = target.get("source")
    return f"{text} ({source})" if source else text


def floor_text(floor: dict[str, Any] | None) -> str:
    if not floor:
        return ""
    return f"{floor['name']}: {shown(floor['value'], floor['unit'])}"


def met_text(figure: dict[str, Any], profile: ProfileLink | None = None) -> str:
    if figure.get("met") is None:
        return "not measured" if figure.get("target") and figure.get("value") is None else ""
    if figure["met"]:
        return "met"
    return f"**missed** ([profile]({profile.href}))" if profile else "**missed**"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(figures: list[dict[str, Any]], profile: Callable[[dict[str, Any]], ProfileLink | None] = lambda _: None,
          ) -> list[str]:
    lines = ["| figure | value | target | floor / baseline (same run) | met | note |", "|---|---|---|---|---|---|"]
    for figure in figures:
        unit = str(figure.get("unit", ""))
        cells = [figure["name"], shown(figure.get("value"), unit), target_text(figure.get("target"), unit),
                 floor_text(figure.get("floor")), met_text(figure, profile(figure)),
                 prose(str(figure.get("note") or ""))]
        lines.append("| " + " | ".join(cell(text) for text in cells) + " |")
    return lines


# -- the document ------------------------------------------------------------------------------------------
def machine_line(runs: list[Run]) -> str:
    machines = [run.data["machine"] for run in runs if isinstance(run.data.get("machine"), dict)]
    if not machines:
        return "Machine: unknown (no script wrote its figures)."
    first = machines[0]
    loads = [value[0] for m in machines for value in (m.get("load_before"), m.get("load_after")) if value]
    load = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"
    return (f"Machine: {first['cores']} cores, {first['arch']}, Python {first['python']}; 1-minute load average "
            f"{load} at the scripts' starts and ends (the machine is shared: wall times move with the load).")


def date_line(runs: list[Run]) -> str:
    dates = sorted(str(run.data["date"]) for run in runs if run.data.get("date"))
    if not dates:
        return "Date: unknown."
    wall = sum(float(run.data.get("wall_s") or 0) for run in runs)
    return (f"Date: {dates[0][:10]}, scripts started {dates[0][11:16]}–{dates[-1][11:16]} UTC; "
            f"the scripts took {wall / 60:.1f} minutes in all.")


def area_of(run: Run) -> str:
    return str(run.data.get("area") or SCRIPT_AREAS.get(run.name, "other"))


def by_area(runs: list[Run]) -> dict[str, list[tuple[Run, list[dict[str, Any]]]]]:
    """Area -> the runs that have figures there (a script may feed several areas), in AREAS order."""
    grouped: dict[str, list[tuple[Run, list[dict[str, Any]]]]] = {}
    for run in runs:
        figures = run.data.get("figures") or []
        areas = list(dict.fromkeys(str(f.get("area") or area_of(run)) for f in figures)) or [area_of(run)]
        for area in areas:
            grouped.setdefault(area, []).append(
                (run, [f for f in figures if str(f.get("area") or area_of(run)) == area]))
    order = {area: index for index, area in enumerate(AREAS)}
    return dict(sorted(grouped.items(), key=lambda item: (order.get(item[0], len(AREAS)), item[0])))


def source_line(run: Run) -> str:
    argv = " ".join(arg for arg in run.data.get("argv", []) if not arg.endswith(".json") and arg != "--json")
    command = f"bench/{run.data.get('script', run.name + '.py')}" + (f" {argv}" if argv else "")
    machine: dict[str, Any] = run.data["machine"] if isinstance(run.data.get("machine"), dict) else {}
    load = ""
    if machine.get("load_before") and machine.get("load_after"):
        load = f", load {machine['load_before'][0]:.1f} → {machine['load_after'][0]:.1f}"
    return f"`{command}` ({run.data.get('wall_s', '?')} s{load})"


def failure_lines(run: Run) -> list[str]:
    why = f"exit {run.exit}" if run.exit else "it wrote no figures"
    lines = [f"**`bench/{run.name}.py` failed** ({why}); the last lines it printed:", "", "```"]
    lines += (run.log.strip() or "(nothing)").splitlines() + ["```", ""]
    return lines


def growth_lines(run: Run, output: Path) -> list[str]:
    points = run.data.get("points") or []
    lines = []
    png = Path(str(run.data.get("png", "")))
    if png.exists():
        link = os.path.relpath(png.resolve(), output.resolve().parent)
        lines += [f"![dream time, active memory and recall quality as the log grows]({link})", ""]
    lines += ["| sessions | events | dream of the step | ingest of the step | active memory (cards, plan, INDEX) | "
              "raw layer | cards | recall quality (BM25) | knowledge questions (BM25) | task questions (BM25) |",
              "|" + "---|" * 10]
    for p in points:
        lines.append(f"| {p['sessions']:,} | {p['events']:,} | {p['dream_s']:.2f} s | {p['ingest_s']:.2f} s | "
                     f"{p['active_bytes'] / 1000:,.1f} KB | {p['raw_bytes'] / 1e6:,.1f} MB | {p['cards']} | "
                     f"{percent(p['recall'])} of {p['questions']} ({percent(p['bm25'])}) | "
                     f"{percent(p.get('knowledge_recall'))} ({percent(p.get('knowledge_bm25'))}) | "
                     f"{percent(p.get('task_recall'))} ({percent(p.get('task_bm25'))}) |")
    return lines + [""]


def percent(share: float | None) -> str:
    return "–" if share is None else f"{100 * share:.0f} %"


def summary_lines(runs: list[Run], links: dict[tuple[str, str], ProfileLink]) -> list[str]:
    figures = [(run, area_of(run), f) for run in runs for f in run.data.get("figures") or []]
    met = sum(1 for _, _, f in figures if f.get("met") is True)
    missed = [(run, f.get("area") or area, f) for run, area, f in figures if f.get("met") is False]
    failed = [run for run in runs if run.failed]
    lines = [f"**{met} targets met, {len(missed)} missed, {len(failed)} script(s) failed** "
             f"({len(runs)} scripts, {len(figures)} figures; the rest have no target and are for reading).", ""]
    if missed:
        lines.append("Missed:")
        for run, area, f in missed:
            unit = str(f.get("unit", ""))
            note = f" ({prose(str(f['note']))})" if f.get("note") else ""
            what = f["name"] if str(f["name"]).lower().startswith(area.lower()) else f"{area}: {f['name']}"
            profile = profile_of(links, run, f)
            why = f". Why: {profile.summary} ([profile]({profile.href}))" if profile else ""
            lines.append(f"- {what}: {shown(f.get('value'), unit)} against "
                         f"{target_text(f.get('target'), unit)}{note}{why}")
        lines.append("")
    if failed:
        lines += ["Failed: " + ", ".join(f"`bench/{run.name}.py`" for run in failed), ""]
    return lines


def render(runs: list[Run], output: Path) -> str:
    lines = ["# Benchmark results", "",
             "Written by `make bench`: every script under `bench/` ran once with `--json` into `bench/out/`, then "
             "`bench/results.py` wrote this file. Do not edit it by hand; run `make bench` again.", "",
             date_line(runs), "", machine_line(runs), "",
             "Targets are issue 24's where it sets one (marked so), else the script's own or the README's. A floor "
             "or baseline is measured in the same run unless its name says otherwise; a target relative to it "
             "(`1.5× import typer`) is worked out from this run's floor.", ""]
    links = profile_links(runs, output)
    lines += summary_lines(runs, links)
    for area, entries in by_area(runs).items():
        lines += [f"## {area[0].upper()}{area[1:]}", ""]
        for run, figures in entries:
            if run.failed:
                lines += failure_lines(run)
                continue
            lines += [f"From {source_line(run)}.", ""]
            if area == "growth" and run.data.get("points"):
                lines += growth_lines(run, output)
            else:
                lines += table(figures, partial(profile_of, links, run)) + [""]
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", type=Path, default=BENCH / "out")
    parser.add_argument("--output", "-o", type=Path, default=BENCH / "RESULTS.md")
    args = parser.parse_args()
    if not args.folder.is_dir():
        raise SystemExit(f"results: no folder {args.folder} (run `make bench`)")
    runs = load_runs(args.folder)
    if not runs:
        raise SystemExit(f"results: nothing in {args.folder} (run `make bench`)")
    args.output.write_text(render(runs, args.output), encoding="utf-8")
    failed = [run.name for run in runs if run.failed]
    print(f"wrote {args.output}: {len(runs)} scripts" + (f"; failed: {', '.join(failed)}" if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
