"""One light curve of 1e8 points, and one of 1e6 points on 1e9 frequencies, through
``lombscargle(algorithm="nufft")``: the memory limits of issue 22 (pieces, no driver
out-of-memory). Prints JSON lines: case, seconds, best frequency, pieces of the grid.

Run: ``python bench/check_nufft_limits.py [cases]`` (cases: points, frequencies).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import clperiod
from clperiod import FrequencyGrid
from clperiod.engine.devices import select_devices
from clperiod.engine.planner import MemoryBudget
from clperiod.periodograms import lombscargle as ls_module
from clperiod.periodograms import nufft


def case(name: str, n: int, grid: FrequencyGrid) -> None:
    rng = np.random.default_rng(7)
    t = np.sort(rng.uniform(0, 1000, n)) + 58000.0
    y = np.sin(2 * np.pi * t / 2.7) + rng.normal(0, 1.0, n)
    dy = np.full(n, 1.0)
    plan = nufft.NufftPlan.build(grid)
    options = ls_module._Options.build(
        "generalized", "standard", None, None, "fp64", "auto", 1, False, 1
    )
    pieces = ls_module._nufft_pieces(
        plan, np.array([n]), options, MemoryBudget.of(select_devices()[0])
    )
    start = time.perf_counter()
    try:
        result = clperiod.lombscargle(t, grid, y, dy, algorithm="nufft")
        row = {"best_f": float(result.frequency_best[0]), "status": int(result.status[0])}
    except Exception as error:  # reported, not hidden: the point of the check
        row = {"error": f"{type(error).__name__}: {error}"}
    row.update(
        case=name,
        n=n,
        nf=grid.nf,
        pieces=len(pieces),
        seconds=time.perf_counter() - start,
        true_f=1 / 2.7,
    )
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    wanted = sys.argv[1:] or ["points", "frequencies"]
    if "points" in wanted:
        case("1e8 points x 1e5 frequencies", 100_000_000, FrequencyGrid(0.01, 2e-4, 100_000))
    if "frequencies" in wanted:
        case("1e6 points x 1e9 frequencies", 1_000_000, FrequencyGrid(0.01, 4e-7, 1_000_000_000))
