"""Packaging and the documented entry points: wheel contents, README commands, quick start.

The wheel is built from an sdist of a copy of the checkout (the path a PyPI
user takes), so files missing from MANIFEST.in or package-data show up here.
"""

from __future__ import annotations

import email
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = sorted(p.name for p in (ROOT / "cl_kernels").glob("*.mako"))
DATA = sorted(p.name for p in (ROOT / "clperiod" / "data").iterdir() if p.is_file())
_IGNORE = shutil.ignore_patterns(
    ".git", ".whl", ".scratch", ".venv", "build", "dist", "*.egg-info", "__pycache__",
    ".pytest_cache", ".benchmarks", ".hypothesis", "*.png", "shared",
)


def _run(*command: str, cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> tuple[Path, Path]:
    """``(sdist, wheel)`` built without build isolation (no network needed)."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=_IGNORE)
    _run(sys.executable, "-c", "from setuptools import build_meta as b; b.build_sdist('../sdist')",
         cwd=source)
    (sdist,) = (work / "sdist").glob("clperiod-*.tar.gz")
    with tarfile.open(sdist) as archive:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(work / "unpacked", **safe)
    (unpacked,) = (work / "unpacked").iterdir()
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(work / "wheel"), ".", cwd=unpacked)
    (wheel,) = (work / "wheel").glob("clperiod-*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_wheel_ships_kernels_and_data(dists):
    names = set(zipfile.ZipFile(dists[1]).namelist())
    assert KERNELS, "no cl_kernels/*.mako in the checkout"
    for kernel in KERNELS:
        assert f"clperiod/cl_kernels/{kernel}" in names
    for data in DATA:
        assert f"clperiod/data/{data}" in names
    modules = [path.relative_to(ROOT).as_posix() for path in (ROOT / "clperiod").rglob("*.py")]
    assert len(modules) > 40
    assert not [module for module in modules if module not in names]
    assert not any(name.startswith(("tests/", "cl_kernels/", "examples/")) for name in names)


@pytest.mark.slow
def test_wheel_metadata(dists):
    archive = zipfile.ZipFile(dists[1])
    meta_name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(archive.read(meta_name))
    assert meta["Name"] == "clperiod" and meta["Version"] == "0.1.0"
    assert meta["Requires-Python"] == ">=3.10"
    requires = meta.get_all("Requires-Dist")
    for requirement in ("pyopencl>=2024.2", "numpy>=1.24", "scipy>=1.10", "mako>=1.2"):
        assert requirement in requires
    assert set(meta.get_all("Provides-Extra")) >= {"test", "plot", "progress", "all"}
    entry_points = archive.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert re.search(r"^clperiod = clperiod\.cli:main$", entry_points, re.M)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist())


@pytest.mark.slow
def test_sdist_has_sources_tests_and_scripts(dists):
    with tarfile.open(dists[0]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    expected = ["pyproject.toml", "LICENSE", "README.md", "Makefile", ".ci/run",
                "scripts/setup_env.sh", "examples/quickstart.py", "tests/io/test_io.py",
                "CHANGES.md", "docs/conf.py", "bench/results/README.md",
                *(f"cl_kernels/{k}" for k in KERNELS), *(f"clperiod/data/{d}" for d in DATA)]
    assert not [name for name in expected if name not in names]


def test_kernel_templates_resolve_in_checkout():
    from clperiod.engine import kernels

    assert {p.name for p in kernels.kernel_dir().glob("*.mako")} >= set(KERNELS)


def test_metadata_and_tool_settings_only_in_pyproject():
    assert not [name for name in ("setup.py", "setup.cfg", "tox.ini", ".flake8", "mypy.ini",
                                  "ruff.toml", ".ruff.toml", "pytest.ini")
                if (ROOT / name).exists()]


def test_readme_commands_match_makefile_and_ci():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(make \w+)\s*$", quick, re.M)
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text()
    for command in commands:
        assert re.search(rf"^{command.split()[1]}:", makefile, re.M)
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test$", ci, re.M)
    for script in ("scripts/setup_env.sh", ".ci/run"):
        _run("bash", "-n", script, cwd=ROOT)


@pytest.mark.slow
def test_quickstart_runs(tmp_path, cpu_device):
    pytest.importorskip("matplotlib")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "quickstart.py"), "--outdir", str(tmp_path),
         "--device", f"{cpu_device.platform_index}:{cpu_device.device_index}"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "(243) Ida" in out and "Stripe 82" in out
    # Ida: single-harmonic peak at half the ~4.63 h rotation period.
    double = float(re.search(r"2 x P = ([\d.]+) h", out).group(1))
    assert abs(double - 4.63) < 0.05
    match = re.search(r"(\d+)/136 best periods lie in the RR Lyrae range", out)
    assert int(match.group(1)) > 100
    for name in ("quickstart_ida.png", "quickstart_rrlyrae.png"):
        assert (tmp_path / name).stat().st_size > 10_000
