"""The shape of the package: no import circle, layers that import only downwards, and no
module that shares its import path with a function or class.

Imports are read from the source with ``ast`` (every import statement, also those inside
functions and ``TYPE_CHECKING`` blocks), so a lazy import that would close a circle counts.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import clperiod
from clperiod._moved import MOVED

PACKAGE_DIR = Path(clperiod.__file__).resolve().parent

#: The data model: ragged catalogs, frequency grids, argument checks and column conversions.
DATA_MODEL = {"clperiod.catalog", "clperiod.grid", "clperiod.checks", "clperiod.columns"}
#: The edges and the top-level runs, which nothing below them may import.
TOP = ("clperiod.pipeline", "clperiod.dask", "clperiod.cli", "clperiod.plot",
       "clperiod.astropy", "clperiod.scipy")


def module_files() -> dict[str, Path]:
    """Every module of clperiod by dotted name (a package by the name of its folder)."""
    modules = {}
    for path in PACKAGE_DIR.rglob("*.py"):
        parts = ["clperiod", *path.relative_to(PACKAGE_DIR).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = module_files()


def _enclosing_module(name: str) -> str | None:
    """The longest prefix of a dotted name that is a module of clperiod."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module a (possibly relative) ``from`` import reads."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base[:len(base) - node.level + is_package]
    return ".".join(base + ([node.module] if node.module else []))


def import_sources(module: str) -> set[str]:
    """The clperiod modules that the import statements of ``module`` name (``import M``,
    ``from M import n``)."""
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.add(_absolute(module, node))
    return {name for name in found if name == "clperiod" or name.startswith("clperiod.")}


def imported_modules(module: str) -> set[str]:
    """The clperiod modules that ``module`` imports anywhere in its source.

    ``from P import n`` counts as an import of ``P.n`` when that is a module, else of ``P``.
    """
    tree = ast.parse(MODULES[module].read_text(), filename=str(MODULES[module]))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                     for alias in node.names]
        else:
            continue
        found.update(_enclosing_module(name) for name in names
                     if name == "clperiod" or name.startswith("clperiod."))
    found.discard(None)
    found.discard(module)
    return found


GRAPH = {module: imported_modules(module) for module in MODULES}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of a directed graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _violations(importers: list[str], allowed) -> list[str]:
    return [f"{module} imports {target}" for module in importers
            for target in sorted(GRAPH[module]) if not allowed(target)]


def test_the_import_graph_is_read():
    # a few edges known from the code, so that a parser gone blind fails here
    assert "clperiod.periodograms.lombscargle" in GRAPH["clperiod"]
    assert "clperiod.catalog" in GRAPH["clperiod.io.frames"]
    assert "clperiod.engine.devices" in GRAPH["clperiod.engine.planner"]
    assert "clperiod.cli" in GRAPH["clperiod.__main__"]
    assert len(MODULES) > 50


def test_graph_reader_sees_lazy_relative_and_type_checking_imports(tmp_path):
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from clperiod.grid import FrequencyGrid\n"
              "def f():\n    from . import checks\n    import clperiod.engine.devices as d\n"
              "    from clperiod.stats import false_alarm_level\n")
    MODULES["clperiod.probe"] = tmp_path / "probe.py"
    MODULES["clperiod.probe"].write_text(source)
    try:
        found = imported_modules("clperiod.probe")
        sources = import_sources("clperiod.probe")
    finally:
        del MODULES["clperiod.probe"]
    assert found == {"clperiod", "clperiod.grid", "clperiod.checks", "clperiod.engine.devices"}
    assert sources - set(MODULES) == {"clperiod.stats"}


@pytest.mark.slow
def test_imports_name_modules_at_their_paths():
    # an old path (clperiod.stats) would import, with a DeprecationWarning, through
    # clperiod._moved: the package itself uses the new ones
    unknown = {f"{module}: {name}" for module in MODULES for name in import_sources(module)
               if name not in MODULES}
    assert unknown == set()


def test_strongly_connected_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d"]]


def test_no_import_circle():
    circles = [component for component in strongly_connected(GRAPH) if len(component) > 1]
    assert circles == []


def test_engine_imports_only_the_engine():
    engine = [m for m in GRAPH if _within(m, "clperiod.engine")]
    assert len(engine) >= 6
    assert _violations(engine, lambda target: _within(target, "clperiod.engine")) == []


def test_data_model_imports_only_itself_and_the_engine():
    assert _violations(sorted(DATA_MODEL),
                       lambda target: target in DATA_MODEL
                       or _within(target, "clperiod.engine")) == []


@pytest.mark.parametrize("package", ["clperiod.io", "clperiod.kepler", "clperiod.singlepulse"])
def test_science_and_io_sit_below_the_periodograms_and_the_edges(package):
    below = [m for m in GRAPH if _within(m, package)]
    forbidden = ("clperiod.periodograms", *TOP)
    assert _violations(below, lambda target: target != "clperiod"
                       and not _within(target, *forbidden)) == []


def test_periodograms_sit_below_the_edges():
    periodograms = [m for m in GRAPH if _within(m, "clperiod.periodograms")]
    assert _violations(periodograms, lambda target: target != "clperiod"
                       and not _within(target, *TOP)) == []


def test_nothing_imports_the_command_line():
    importers = [m for m in GRAPH if m != "clperiod.__main__"]
    assert _violations(importers, lambda target: target != "clperiod.cli") == []


def test_test_data_generators_stand_apart():
    # clperiod.testing serves tests and benchmarks: it needs no part of clperiod, and no
    # part of clperiod needs it
    assert GRAPH["clperiod.testing"] == set()
    assert _violations(list(GRAPH), lambda target: target != "clperiod.testing") == []


def _packages() -> list[str]:
    return sorted(m for m, path in MODULES.items() if path.name == "__init__.py")


def _submodule_names(package: str) -> set[str]:
    names = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == package}
    if package == "clperiod":
        names |= {old.rpartition(".")[2] for old in MOVED}  # old paths that still import
    return names


def clashes(namespace: dict[str, object], submodules: set[str]) -> list[str]:
    """Names of ``namespace`` that are also submodules but are bound to something else."""
    return sorted(name for name, value in namespace.items()
                  if name in submodules and not inspect.ismodule(value))


@pytest.mark.parametrize("package", _packages())
def test_no_module_shares_its_path_with_a_function_or_class(package):
    module = importlib.import_module(package)
    assert clashes(vars(module), _submodule_names(package)) == []


def test_the_clash_check_sees_a_clash():
    assert clashes({"lombscargle": clperiod.lombscargle, "periodograms": clperiod.periodograms},
                   {"lombscargle", "periodograms"}) == ["lombscargle"]
    assert {"lombscargle", "supersmoother"} <= _submodule_names("clperiod.periodograms")
    assert {"stats", "orbits", "pulsefiles"} <= _submodule_names("clperiod")


def test_test_modules_have_distinct_names():
    """Test folders are not packages, so two test files of one name clash on import."""
    names: dict[str, list[str]] = {}
    for path in Path(__file__).parent.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.parent))
    assert {name: dirs for name, dirs in names.items() if len(dirs) > 1} == {}
