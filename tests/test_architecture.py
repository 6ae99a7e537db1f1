"""The house rules that keep memdream readable, checked on the source itself: no import cycle anywhere
(an import inside a function counts: it runs too), dream stages that depend only on shared dream
modules, never on each other (ARCHITECTURE.md, "Which way imports point"), and command modules that
import neither the command line's entry point nor one another."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memdream"
# The dream pipeline's stages (memdream.dream.pipeline.STAGES), by module.
DREAM_STAGES = frozenset({"select", "extract", "merge", "verify", "admit", "induce", "propagate", "decay", "forget",
                          "plan_update", "index_file"})


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[int]:
    """The ids of import nodes under ``if TYPE_CHECKING:``: they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for inner in ast.walk(node))
    return skipped


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[str]:
    """The memdream modules ``name`` imports, at the top or inside a function. ``from pkg import sub``
    imports the submodule ``pkg.sub`` when there is one, else a name of ``pkg``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                target = submodule if submodule in modules else node.module
                if target in modules and target != name:
                    yield target


def import_graph() -> dict[str, set[str]]:
    """A copy of the graph, parsed once a test process: parsing every module took ~1.2 s a test."""
    return {name: set(imported) for name, imported in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    modules = _modules()
    return {name: frozenset(_imports(name, path, modules)) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_itself_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_dream_stages_import_shared_dream_modules_never_each_other() -> None:
    graph = import_graph()
    stages = {f"memdream.dream.{stage}" for stage in DREAM_STAGES}
    crossing = sorted((stage, target) for stage in stages for target in graph[stage] if target in stages)
    assert crossing == []


def test_command_modules_import_neither_the_command_line_nor_each_other() -> None:
    """memdream/cli/__init__.py builds the app from the command modules; they share what they need
    through the modules beside them (base, groups, options, output), never through it or one another."""
    graph = import_graph()
    cli = {name for name in graph if name.startswith("memdream.cli.")}
    commands = {name for name in cli if name.endswith("_cmd")}
    crossing = sorted((module, target) for module in cli for target in graph[module]
                      if target == "memdream.cli" or (module in commands and target in commands))
    assert crossing == []


def test_every_stage_of_the_pipeline_is_known_here() -> None:
    from memdream.dream.pipeline import STAGES

    modules = {stage.__module__.rsplit(".", 1)[-1] for stage in STAGES.values()}
    assert modules == DREAM_STAGES


# What the memory model may lean on: the bottom of the house (and git, where a memory is a repository).
MEMORY_MAY_IMPORT = frozenset({"memdream.errors", "memdream.schemas", "memdream.yamlio", "memdream.jsonio",
                               "memdream.clock", "memdream.gitops"})


def test_the_memory_model_is_the_bottom_of_the_house() -> None:
    graph = import_graph()
    upward = sorted((name, target) for name, targets in graph.items() if name.startswith("memdream.memory")
                    for target in targets
                    if not target.startswith("memdream.memory") and target not in MEMORY_MAY_IMPORT)
    assert upward == []


def test_git_is_one_self_contained_module() -> None:
    """memdream/gitops.py talks to git for everyone and takes what it needs from its callers (the memory
    folder, how to treat git's index lock): it imports nothing of memdream but the errors, and no other
    module imports GitPython."""
    assert import_graph()["memdream.gitops"] <= {"memdream", "memdream.errors"}
    importers = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if name != "memdream.gitops" and any(item == "git" or item.startswith("git.") for item in named):
                importers.append(name)
    assert importers == []


PEERS = ("ingest", "dream", "recall", "lint")


def test_ingest_dream_recall_and_lint_never_import_one_another() -> None:
    """They meet in memory/ and the shared modules (ARCHITECTURE.md): one of them importing another
    would tie two stages of the product together."""
    def peer(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[1] in PEERS else None

    crossing = sorted(f"{name} -> {target}" for name, targets in import_graph().items() if peer(name)
                      for target in targets if peer(target) and peer(target) != peer(name))
    assert crossing == []


def test_no_module_binds_the_atomic_write_at_import() -> None:
    """Modules call ``yamlio.write_atomic`` through the module: one that bound the name while a test had
    replaced it (a full disk) kept the fake for the rest of the process, and later tests failed with
    "no space left on device"."""
    bound = sorted(str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
                   if any(isinstance(node, ast.ImportFrom) and node.module == "memdream.yamlio"
                          and node.col_offset == 0 and any(alias.name == "write_atomic" for alias in node.names)
                          for node in ast.parse(path.read_text(encoding="utf-8")).body))
    assert bound == []
