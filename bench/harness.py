"""Shared pieces of the benchmark scripts: timing, the JSON report, and the test helpers.

Importing this module puts ``tests/`` on :data:`sys.path` (once), so that the scripts reach
the NumPy references (``tests/reference``) and the peer loaders (``tests/peers.py``) they
compare against; synthetic data come from :mod:`clperiod.testing`.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import clperiod

TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if TESTS not in sys.path:
    sys.path.append(TESTS)


def best_of(fn: Callable, repeat: int):
    """Minimum wall time of ``repeat`` calls (after one warm-up) and the last result."""
    result = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_report(script: str, workloads: list[str], run: Callable[[str], dict],
               out: str | None, shown: Callable[[dict], dict] = lambda entry: entry) -> dict:
    """Run each workload, print its JSON (``shown`` of it) as it finishes, write the whole
    report to ``out``."""
    report = {
        "date": date.today().isoformat(),
        "host": platform.node(),
        "clperiod": clperiod.__version__,
        "command": f"python bench/{script} " + " ".join(sys.argv[1:]),
    }
    for name in workloads:
        report[name] = run(name)
        print(json.dumps({name: shown(report[name])}, indent=1, default=str), flush=True)
    if out:
        with open(out, "w") as handle:
            json.dump(report, handle, indent=1, default=str)
    return report
