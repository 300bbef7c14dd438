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


def test_mypy_finds_nothing_in_the_package():
    _run_tool("mypy", "clperiod")


def test_ruff_format_leaves_the_package_as_it_is():
    _run_tool("ruff", "format", "--check", "clperiod")
