"""The layers stay apart: views -> engine -> indexes -> core, and nothing imports upwards.

Read from the source (every import, also those inside functions), not by importing anything.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imports_of(package: str) -> dict[str, set[str]]:
    """Top-level module names each file of a package imports: file (relative to the root) -> names."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def offenders(package: str, allowed) -> dict[str, list[str]]:
    return {file: sorted(n for n in names if not allowed(n))
            for file, names in imports_of(package).items() if any(not allowed(n) for n in names)}


def test_walker_sees_imports_inside_functions():
    # A guard that cannot fail is no guard: the walker must find the lazy imports engine uses.
    assert "indexes" in imports_of("engine")["engine/pipeline.py"]
    assert "streamlit" in imports_of("views")["views/_common.py"]


@pytest.mark.parametrize("package", ["core", "indexes"])
def test_core_and_indexes_never_import_engine(package):
    assert offenders(package, lambda name: name != "engine") == {}


def test_core_imports_neither_engine_nor_indexes():
    assert offenders("core", lambda name: name not in ("engine", "indexes")) == {}


def test_engine_never_imports_streamlit_or_views():
    assert offenders("engine", lambda name: name not in ("streamlit", "views")) == {}


def test_views_import_only_engine_and_the_drawing_libraries():
    allowed = {"engine", "views", "streamlit", "plotly", "pandas", "__future__"}
    assert offenders("views", lambda name: name in allowed or name in sys.stdlib_module_names) == {}
