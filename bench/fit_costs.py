"""Fit the ``algorithm="auto"`` cost model to a ``bench_nufft.py crossover`` table.

Reads the JSON that ``bench_nufft.py crossover --out FILE`` writes, fits the
constants of :class:`clperiod.periodograms.algorithm.Costs` for uniform grids by
non-negative least squares on relative errors:

* direct: ``fixed_direct + N nf / rate + N serial``;
* NUFFT: ``fixed_nufft + N point + 3 G cell + crowd N w / G`` (``G`` cells and
  kernel width ``w`` of the fp64 plan at the default ``eps``),

and prints them with, row by row, the path each model (the fitted one and the
library's current one) chooses and the measured time of that choice over the
better measured time. The worst such ratio is the claim ``algorithm="auto"``
makes (issue 22: at most 1.2).

Run: ``python bench/fit_costs.py FILE [--kind gpu|cpu]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

import numpy as np
from bench_nufft import grid_for
from scipy.optimize import nnls

from clperiod.periodograms.algorithm import COSTS, Costs
from clperiod.periodograms.nufft import NufftPlan


def crossover_rows(path: str) -> list[dict]:
    """The rows of the first ``crossover`` table in a bench JSON file."""

    def find(node):
        if isinstance(node, dict):
            if "crossover" in node and isinstance(node["crossover"], dict):
                return node["crossover"]["rows"]
            for value in node.values():
                found = find(value)
                if found is not None:
                    return found
        return None

    with open(path) as file:
        rows = find(json.load(file))
    if not rows:
        raise SystemExit(f"{path} holds no crossover rows")
    return rows


def _relative_nnls(columns: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Non-negative coefficients minimising the relative errors of ``columns @ c``."""
    scale = columns.max(axis=0)
    scale[scale == 0] = 1.0
    weighted = columns / scale / seconds[:, None]
    coefficients, _ = nnls(weighted, np.ones_like(seconds))
    return coefficients / scale


def fit(rows: list[dict], base: Costs) -> Costs:
    """``base`` with the uniform-grid constants fitted to ``rows``."""
    direct = [r for r in rows if "direct_s" in r]
    n = np.array([r["n"] for r in direct], float)
    nf = np.array([r["nf"] for r in direct], float)
    fixed, per_pair, per_point = _relative_nnls(
        np.column_stack([np.ones_like(n), n * nf, n]), np.array([r["direct_s"] for r in direct])
    )
    n = np.array([r["n"] for r in rows], float)
    plans = [NufftPlan.build(grid_for(r["nf"])) for r in rows]
    cells = np.array([p.n_grid for p in plans], float)
    width = np.array([p.width for p in plans], float)
    nufft_fixed, point, cell, crowd = _relative_nnls(
        np.column_stack([np.ones_like(n), n, 3 * cells, n * width / cells]),
        np.array([r["nufft_s"] for r in rows]),
    )
    return dataclasses.replace(
        base,
        rate=1 / per_pair if per_pair > 0 else np.inf,
        serial=per_point,
        point=point,
        cell=cell,
        crowd=crowd,
        fixed_direct=fixed,
        fixed_nufft=nufft_fixed,
    )


def choice_over_best(rows: list[dict], costs: Costs) -> list[tuple[int, int, str, float]]:
    """Per row with both times: ``(N, nf, chosen path, its time / the better time)``."""
    out = []
    for row in rows:
        if "direct_s" not in row:
            continue
        plan = NufftPlan.build(grid_for(row["nf"]))
        n = np.array([row["n"]], float)
        direct = costs.fixed_direct + costs.direct(n, row["nf"])[0]
        by_nufft = costs.fixed_nufft + costs.nufft(n, plan.n_grid, plan.width)[0]
        path = "nufft" if by_nufft < direct else "direct"
        best = min(row["nufft_s"], row["direct_s"])
        out.append((row["n"], row["nf"], path, row[f"{path}_s"] / best))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--kind", choices=["gpu", "cpu"], default="gpu")
    args = parser.parse_args()
    rows = crossover_rows(args.file)
    current = COSTS[args.kind]
    fitted = fit(rows, current)
    print("fitted:", fitted)
    for name, costs in (("current", current), ("fitted", fitted)):
        ratios = choice_over_best(rows, costs)
        worst = max(ratios, key=lambda r: r[3])
        print(f"{name}: worst choice {worst[2]} at N={worst[0]}, nf={worst[1]}: {worst[3]:.3f}x")
        for n, nf, path, ratio in ratios:
            if ratio > 1.05:
                print(f"  N={n:>9} nf={nf:>9} {path:6} {ratio:.3f}x")
    measured = [r["auto_over_best"] for r in rows if "auto_over_best" in r]
    if measured:
        print(f"measured auto over best: worst {max(measured):.3f}x")


if __name__ == "__main__":
    main()
