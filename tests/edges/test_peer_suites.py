"""The peers' own test suites, run through clperiod's drop-in replacements.

The test modules of the installed astropy (``LombScargle``,
``LombScargleMultiband``) and SciPy (``TestLombscargle``) are copied into a
temporary folder with only the import of the periodogram switched to
clperiod's, and run by pytest in a subprocess; every test must pass (none
skipped). Skipped where the installed package ships without its tests.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

import clperiod

ASTROPY_TESTS = "astropy.timeseries.periodograms.lombscargle.tests"
ASTROPY_MODULES = ("test_lombscargle", "test_statistics", "test_utils")
#: astropy's import of the class, in each module (core or the package).
ASTROPY_IMPORT = re.compile(
    r"^from astropy\.timeseries\.periodograms\.lombscargle(?:\.core)? import LombScargle$",
    re.MULTILINE)
ASTROPY_MULTIBAND_TESTS = (
    "astropy.timeseries.periodograms.lombscargle_multiband.tests.test_lombscargle_multiband")
ASTROPY_MULTIBAND_IMPORT = re.compile(
    r"^from astropy\.timeseries\.periodograms\.lombscargle_multiband import LombScargleMultiband$",
    re.MULTILINE)
SCIPY_TESTS = "scipy.signal.tests.test_spectral"


def _installed_test_file(module: str) -> Path:
    """The source file of an installed test module (skip the test without it)."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        spec = None
    if spec is None or spec.origin is None:
        pytest.skip(f"{module} is not installed")
    return Path(spec.origin)


def _run_pytest(folder: Path, *arguments: str) -> dict[str, int]:
    """Run pytest on ``folder`` in a subprocess that imports this clperiod;
    the junit counts ``tests``, ``failures``, ``errors`` and ``skipped``."""
    (folder / "pytest.ini").write_text("[pytest]\n")  # no configuration from above
    report = folder / "report.xml"
    root = str(Path(clperiod.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
         str(folder), f"--junitxml={report}", *arguments],
        cwd=folder, env=env, capture_output=True, text=True, timeout=1500)
    assert report.exists(), completed.stdout[-3000:] + completed.stderr[-3000:]
    suite = ElementTree.parse(report).getroot().find("testsuite")
    counts = {key: int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")}
    summary = completed.stdout[-3000:]
    assert counts["failures"] == counts["errors"] == counts["skipped"] == 0, summary
    return counts


@pytest.mark.slow
def test_astropys_lombscargle_suites_pass_through_the_bridge(tmp_path):
    folder = _installed_test_file(f"{ASTROPY_TESTS}.test_lombscargle").parent
    for module in ASTROPY_MODULES:
        source, switched = ASTROPY_IMPORT.subn("from clperiod.astropy import LombScargle",
                                              (folder / f"{module}.py").read_text())
        assert switched == 1, module
        (tmp_path / f"{module}.py").write_text(source)
    counts = _run_pytest(tmp_path, *(f"{module}.py" for module in ASTROPY_MODULES))
    # astropy 8.0: 1766 with every method name parametrized in (766 with two names)
    assert counts["tests"] > 1000


@pytest.mark.slow
def test_astropys_multiband_suite_passes_through_the_bridge(tmp_path):
    """Both methods ("flexible" and "fast" with every single-band method), units, times,
    models and from_timeseries. Only the multiband class is switched: the module's
    single-band LombScargle stays astropy's, the reference of its test that one band of
    method "fast" is the single-band periodogram."""
    source, switched = ASTROPY_MULTIBAND_IMPORT.subn(
        "from clperiod.astropy import LombScargleMultiband",
        _installed_test_file(ASTROPY_MULTIBAND_TESTS).read_text())
    assert switched == 1
    (tmp_path / "test_lombscargle_multiband.py").write_text(source)
    counts = _run_pytest(tmp_path, "test_lombscargle_multiband.py")
    assert counts["tests"] > 900  # astropy 8.0: 966


@pytest.mark.slow
def test_scipys_lombscargle_tests_pass_through_the_bridge(tmp_path):
    source = _installed_test_file(SCIPY_TESTS).read_text()
    # the module's own import stays; this one rebinds the name its tests call
    # (and a guard of ours checks that it does)
    switched = source + (
        "\nfrom clperiod.scipy import lombscargle  # noqa: E402, F811\n\n\n"
        "def test_TestLombscargle_calls_clperiod():\n"
        "    assert lombscargle.__module__ == 'clperiod.scipy'\n")
    (tmp_path / "test_spectral.py").write_text(switched)
    counts = _run_pytest(tmp_path, "test_spectral.py", "-k", "TestLombscargle")
    assert counts["tests"] >= 20
