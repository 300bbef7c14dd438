"""The documentation: the Sphinx site builds without a warning, the README stays a front
door, relative links lead to files, and every benchmark result is indexed."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RESULTS = ROOT / "bench" / "results"
#: The README is the front door; the documentation lives in docs/.
README_MAX_LINES = 260
#: A Markdown link or image: ``[text](target)``, the target up to a space or ``)``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
DOCS_PACKAGES = ("sphinx", "myst_parser", "pydata_sphinx_theme", "numpydoc")


def markdown_files() -> list[Path]:
    """README.md and every Markdown page of docs/ (not the build output)."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.relative_to(DOCS).parts]
    return [ROOT / "README.md", *sorted(pages)]


def relative_links(markdown: str) -> list[str]:
    """Targets of the Markdown links outside code blocks that name a local file."""
    prose = FENCE.sub("", markdown)
    targets = (match.group(1) for match in LINK.finditer(prose))
    return [t for t in targets if not SCHEME.match(t) and not t.startswith("#")]


def test_link_finder_sees_only_local_links_outside_code():
    text = ("[a](guide/x.md#part) ![b](_static/p.png) [c](https://example.org) [d](#here)\n"
            "```\n[e](inside/code.md)\n```\n[f](../up.json \"title\")\n")
    assert relative_links(text) == ["guide/x.md#part", "_static/p.png", "../up.json"]


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_lead_to_files(page):
    missing = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_readme_is_a_front_door():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines; keep it a front door of at most {README_MAX_LINES} "
        "and move the details to docs/")


def test_every_result_file_is_indexed():
    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(\d{4}-\d\d-\d\d_[^`/]+\.json)`", index))
    present = {p.name for p in RESULTS.glob("*.json")}
    assert not present - named, f"not in bench/results/README.md: {sorted(present - named)}"
    assert not named - present, f"indexed but absent: {sorted(named - present)}"


@pytest.mark.slow
def test_performance_plot_is_drawn_from_a_result(tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "performance.png"
    subprocess.run([sys.executable, str(DOCS / "make_performance_plot.py"), "--output",
                    str(output)], check=True, capture_output=True, cwd=ROOT)
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # a Sphinx build: about 8 s on 2 cores
def test_documentation_builds_without_warnings(tmp_path):
    absent = [name for name in DOCS_PACKAGES if importlib.util.find_spec(name) is None]
    if absent:
        pytest.skip(f"{', '.join(absent)} not installed (pip install -e '.[docs]')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, cwd=ROOT, env=env)
    assert build.returncode == 0, f"sphinx-build -W failed:\n{build.stdout}\n{build.stderr}"
    assert (tmp_path / "html" / "api" / "clperiod.html").is_file()


PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _resolve(dotted: str):
    """The object a dotted clperiod name denotes (ImportError/AttributeError if none)."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            found = getattr(found, name)
        return found
    raise ImportError(dotted)


def clperiod_uses(source: str) -> list[tuple[int, str, list[str]]]:
    """(line, dotted name, keywords) of every clperiod name a code block uses:
    its imports, attribute chains on them, and the keywords of calls to them."""
    import ast

    tree = ast.parse(source)
    aliases: dict[str, str] = {}
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "clperiod":
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else "clperiod"
                    uses.append((node.lineno, alias.name, []))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("clperiod"):
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                uses.append((node.lineno, f"{node.module}.{alias.name}", []))

    def dotted(expression) -> str | None:
        if isinstance(expression, ast.Name):
            return aliases.get(expression.id)
        if isinstance(expression, ast.Attribute):
            base = dotted(expression.value)
            return None if base is None else f"{base}.{expression.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := dotted(node.func)):
            uses.append((node.lineno, name, [k.arg for k in node.keywords if k.arg]))
        elif isinstance(node, ast.Attribute) and (name := dotted(node)):
            uses.append((node.lineno, name, []))
    return uses


def test_the_example_checker_finds_names_and_keywords():
    uses = clperiod_uses(
        "import clperiod\nfrom clperiod.io import load_example as load\n"
        "cat = load('stripe82')\n"
        "r = clperiod.lombscargle(cat, grid, top_k=3, bogus=1)\n"
        "clperiod.no_such_function(cat)\n"
    )
    assert (4, "clperiod.lombscargle", ["top_k", "bogus"]) in uses
    assert (3, "clperiod.io.load_example", []) in uses
    with pytest.raises(AttributeError):
        _resolve("clperiod.no_such_function")
    assert _resolve("clperiod.io.load_example").__name__ == "load_example"


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_code_examples_name_what_exists(page):
    """Every clperiod function, class and module a page's Python examples use
    exists, and every keyword they pass is one the callable takes."""
    import inspect

    problems = []
    text = page.read_text()
    for block in PYTHON_BLOCK.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        for line, name, keywords in clperiod_uses(block.group(1)):
            where = f"{page.relative_to(ROOT)}:{first_line + line - 1}"
            try:
                found = _resolve(name)
            except (ImportError, AttributeError) as error:
                problems.append(f"{where}: {name} does not exist ({error})")
                continue
            if not keywords or not callable(found):
                continue
            try:
                parameters = inspect.signature(found).parameters.values()
            except (TypeError, ValueError):
                continue
            if any(p.kind is p.VAR_KEYWORD for p in parameters):
                continue
            unknown = set(keywords) - {p.name for p in parameters}
            if unknown:
                problems.append(f"{where}: {name} takes no keyword {sorted(unknown)}")
    assert problems == []
