"""Fold-and-sort benchmark: local-memory bitonic vs two-pass pyopencl RadixSort.

Issue #3 asks to use whichever sort is faster per light-curve size. Prints JSON
with the wall time per (object, frequency) segment and the sorted-key rate.
"""

from __future__ import annotations

import argparse
import json
from datetime import date

import numpy as np

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.periodograms.folding import BITONIC_MAX, fold_and_sort

from harness import best_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    info = clperiod.select_devices()[0]
    rows = []
    for n, nf in ((16, 20000), (64, 8000), (256, 2000), (1024, 500), (2048, 250), (4096, 125),
                  (8192, 60)):
        t = 58000 + np.sort(rng.uniform(0, 1000, n))
        catalog = Catalog.from_lightcurves([(t, np.zeros(n))] * 8)
        grid = FrequencyGrid.from_range(0.1, 10.0, nf)
        row = {"n": n, "segments": 8 * nf}
        for method in ("bitonic", "radix"):
            if method == "bitonic" and n > BITONIC_MAX:
                continue
            for precision in ("fp64", "fp32"):
                seconds, _ = best_of(lambda: fold_and_sort(catalog, grid, method=method,
                                                         precision=precision), 3)
                row[f"{method}_{precision}_s"] = seconds
                row[f"{method}_{precision}_keys_per_s"] = 8 * nf * n / seconds
        rows.append(row)
        print(json.dumps(row), flush=True)
    report = {"date": date.today().isoformat(), "device": info.label,
              "command": "python bench/bench_sort.py", "note": "end to end incl. host copies",
              "rows": rows}
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main()
