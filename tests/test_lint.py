"""The package is lint-, format- and type-clean: ``ruff check``, ``ruff format``
and ``mypy`` with the configuration in pyproject.toml (rules, line length,
ignored modules)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run_tool(module: str, *args: str) -> None:
    """Run ``python -m <module> <args>`` in the checkout; fail showing its report."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    result = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        pytest.fail(f"{module} {' '.join(args)} exited with {result.returncode}:\n"
                    f"{result.stdout}{result.stderr}", pytrace=False)


def test_ruff_finds_nothing_in_the_package():
    _run_tool("ruff", "check", "--no-fix", "--output-format=concise", "clperiod")


@pytest.mark.slow
def test_mypy_finds_nothing_in_the_package():
    _run_tool("mypy", "clperiod")


def test_ruff_format_leaves_the_package_as_it_is():
    _run_tool("ruff", "format", "--check", "clperiod")


def _discarded_copies(path: Path) -> list[int]:
    """Lines of ``path`` where a non-blocking ``enqueue_copy``'s event is dropped
    at once: pyopencl's event of a copy to or from host memory then waits for
    the copy in its destructor, holding the GIL (every other device thread
    stalls)."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            continue
        call = node.value
        name = call.func.attr if isinstance(call.func, ast.Attribute) else None
        blocking = next((k.value for k in call.keywords if k.arg == "is_blocking"), None)
        if name == "enqueue_copy" and isinstance(blocking, ast.Constant) and not blocking.value:
            lines.append(node.lineno)
    return lines


@pytest.mark.slow
def test_no_non_blocking_copy_drops_its_event():
    found = {str(path.relative_to(ROOT)): lines
             for path in sorted((ROOT / "clperiod").rglob("*.py"))
             if (lines := _discarded_copies(path))}
    assert found == {}
