"""The layers stay apart and imports run one way.

    app.py, views/  ->  cli/, server/  ->  viewmodels/  ->  engine/  ->  indexes/  ->  core/

(cli/ may start the app, so it may import server/, never views/; server/ never imports cli/;
viewmodels/ is what the surfaces show, computed from engine/, which never imports it;
demo/ is data, found by engine/paths.py.)
Read from the source (every import, also those inside functions and under TYPE_CHECKING), not by
importing anything.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("core", "indexes", "engine", "viewmodels", "server", "cli", "views")
PREFIX = "searchgrade."


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return PREFIX + ".".join(parts)


def source_files(top: str) -> list[Path]:
    return sorted((ROOT / top).rglob("*.py")) if top != "app" else [ROOT / "app.py"]


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, by full dotted name (relative imports resolved)."""
    names: set[str] = set()
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            # `from searchgrade.engine import labels` imports the submodule labels.
            names.update(f"{module}.{alias.name}" for alias in node.names
                         if module.startswith(PREFIX) and _is_module(f"{module}.{alias.name}"))
    return names


def _is_module(dotted: str) -> bool:
    parts = dotted.removeprefix(PREFIX).split(".")
    target = ROOT.joinpath(*parts)
    return target.with_suffix(".py").is_file() or (target / "__init__.py").is_file()


def top_of(module: str) -> str | None:
    """'searchgrade.engine.run.pipeline' -> 'engine'; a module outside searchgrade -> None."""
    if not module.startswith(PREFIX):
        return None
    return module.removeprefix(PREFIX).split(".")[0]


def graph(tops=TOPS + ("app",)) -> dict[str, set[str]]:
    """Our module -> the modules of ours it imports."""
    found: dict[str, set[str]] = {}
    for top in tops:
        for path in source_files(top):
            found[module_name(path)] = {m for m in imports_of(path) if m.startswith(PREFIX)}
    return found


def offenders(top: str, allowed_tops: set[str]) -> dict[str, list[str]]:
    bad = {}
    for path in source_files(top):
        wrong = sorted(m for m in imports_of(path) if top_of(m) is not None and top_of(m) not in allowed_tops)
        if wrong:
            bad[str(path.relative_to(ROOT))] = wrong
    return bad


def third_party(top: str) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): {m.split(".")[0] for m in imports_of(p) if top_of(m) is None and m}
            for p in source_files(top)}


def test_walker_sees_imports_inside_functions_and_submodules():
    # A guard that cannot fail is no guard: the walker must find the lazy imports the run uses.
    on_ray = imports_of(ROOT / "engine" / "ray" / "stage_runner.py")
    assert "searchgrade.indexes.builtin.ann" in on_ray  # `from ...builtin import ann` inside a method
    assert "streamlit" in {m.split(".")[0] for m in imports_of(ROOT / "views" / "_common.py")}
    assert "searchgrade.server.jobs" in imports_of(ROOT / "views" / "_common.py")


def test_nothing_imports_the_old_top_level_names():
    # One import name: a bare `engine` / `indexes` / `core` / `views` would be a second copy of a module.
    bare = {"engine", "indexes", "core", "viewmodels", "views", "cli", "server", "app", "demo"}
    found = {}
    for top in TOPS + ("app", "tests", "bench"):
        files = source_files(top) if top not in ("tests", "bench") else sorted((ROOT / top).rglob("*.py"))
        for path in files:
            names = {m.split(".")[0] for m in imports_of(path)} & bare
            if names:
                found[str(path.relative_to(ROOT))] = sorted(names)
    assert found == {}


@pytest.mark.parametrize(("top", "allowed"), [
    ("core", {"core"}),
    ("indexes", {"core", "indexes"}),
    ("engine", {"core", "indexes", "engine", "demo"}),  # demo: the bundled collection (data)
    ("viewmodels", {"core", "indexes", "engine", "viewmodels"}),
    ("server", {"core", "indexes", "engine", "viewmodels", "server"}),
    ("cli", {"core", "indexes", "engine", "viewmodels", "server", "cli"}),
    ("views", {"core", "indexes", "engine", "viewmodels", "server", "views"}),
])
def test_imports_run_one_way(top, allowed):
    assert offenders(top, allowed) == {}


@pytest.mark.parametrize("top", ["core", "indexes", "engine", "viewmodels", "server", "cli"])
def test_only_views_import_streamlit(top):
    assert {f: n for f, n in third_party(top).items() if "streamlit" in n} == {}


def test_views_import_only_ours_and_the_drawing_libraries():
    allowed = {"streamlit", "plotly", "pandas", "__future__"}
    bad = {f: sorted(n - allowed - set(sys.stdlib_module_names)) for f, n in third_party("views").items()}
    assert {f: n for f, n in bad.items() if n} == {}


def test_app_imports_only_views():
    assert {top_of(m) for m in imports_of(ROOT / "app.py") if top_of(m)} <= {"views"}


def circles(found: dict[str, set[str]]) -> list[set[str]]:
    """Groups of two or more modules that import each other, directly or through others (the
    strongly connected parts of the import graph)."""
    def reachable(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for name in found.get(todo.pop(), ()):
                if name in found and name not in seen:
                    seen.add(name)
                    todo.append(name)
        return seen

    reach = {module: reachable(module) for module in found}
    groups, placed = [], set()
    for module in sorted(found):
        if module in placed:
            continue
        group = {module} | {other for other in reach[module] if module in reach[other]}
        placed |= group
        if len(group) > 1:
            groups.append(group)
    return groups


def test_circles_finds_a_circle_through_a_third_module_and_nothing_else():
    found = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert circles(found) == [{"a", "b", "c"}]


def test_no_import_circles():
    # Every import counts, also one inside a function or under TYPE_CHECKING: a circle hidden in a
    # function is still two modules that cannot be read (or moved) one without the other.
    assert [sorted(group) for group in circles(graph())] == []


#: What the screens may use of the evaluator: the view models (viewmodels), the package faces (the
#: metric records among them: a page names and explains a metric from its record), and the records
#: a page needs to start a run or show its settings. Not the run's stages, the store's SQL modules,
#: Ray, the metrics' internals or the systems under test (indexes/).
VIEWS_MAY_USE = {
    "searchgrade.engine", "searchgrade.engine.paths", "searchgrade.engine.store", "searchgrade.engine.metrics",
    "searchgrade.engine.collections", "searchgrade.engine.run.config", "searchgrade.engine.run.request",
    "searchgrade.engine.run.strategies",
    "searchgrade.engine.run.scoring", "searchgrade.engine.labels.rescore", "searchgrade.engine.training.reranker",
    "searchgrade.engine.llm.settings", "searchgrade.engine.llm.env", "searchgrade.engine.llm.key_policy",
    "searchgrade.engine.llm.querygen", "searchgrade.engine.llm.judge", "searchgrade.engine.llm.prompts",
    "searchgrade.engine.llm.accounting", "searchgrade.engine.tuning.view",
}


def _public_for_views(module: str) -> bool:
    if any(part.startswith("_") for part in module.split(".")[1:]) and not module.startswith("searchgrade.views."):
        return False
    top = top_of(module)
    return (top in ("views", "server", "viewmodels")
            or module in VIEWS_MAY_USE)


def test_views_import_only_the_evaluators_public_modules():
    bad = {str(p.relative_to(ROOT)): sorted(m for m in imports_of(p) if top_of(m) and not _public_for_views(m))
           for p in source_files("views") + [ROOT / "app.py"]}
    assert {f: m for f, m in bad.items() if m} == {}


# -- the tree's shape

#: The one module allowed past MAX_LINES: forward-only migrations are DDL text, read in order.
LONG_ALLOWED = {"engine/store/migrations.py"}
MAX_LINES = 500


def test_no_module_is_over_500_lines():
    files = [p for top in (*TOPS, "app", "tests", "bench") for p in (
        source_files(top) if top not in ("tests", "bench") else sorted((ROOT / top).rglob("*.py")))]
    long = {str(p.relative_to(ROOT)): n for p in files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert {f: n for f, n in long.items() if f not in LONG_ALLOWED} == {}


def test_indexes_holds_its_six_loose_modules_and_no_more():
    # New modules go into concept folders; indexes/ holds its six (base, build, executor, hub,
    # registry, settings) and no more.
    loose = sorted(p.name for p in (ROOT / "indexes").glob("*.py") if p.name != "__init__.py")
    assert loose == ["base.py", "build.py", "executor.py", "hub.py", "registry.py", "settings.py"]
