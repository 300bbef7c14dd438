"""Multi-term Lomb-Scargle (astropy bridge, ``nterms``) against astropy's own methods.

The 8205 light curve with errors (3555 points), ``--nf`` frequencies on
0.01-10 /d, for each ``--nterms``: :func:`clperiod.periodograms.multiterm.multiterm_power`
(best of ``--repeat`` after a warm-up) against astropy's ``fastchi2`` (the
``auto`` choice for regular grids) on the same grid and its exact ``chi2``
method timed on the first 2000 frequencies and extrapolated. Reports the
ratios, the rate in point-frequencies per second and an arithmetic estimate
(``27 + 14 K`` operations per point-frequency: the sine/cosine polynomial,
2K harmonic rotations and their weighted sums) as a fraction of
``--peak-fp64`` operations/s when given.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from astropy.timeseries import LombScargle
from harness import best_of, run_report

import clperiod
from clperiod import FrequencyGrid
from clperiod.io import load_example
from clperiod.periodograms.multiterm import multiterm_power

CHI2_SAMPLE = 2000


def bench(nterms: list[int], nf: int, repeat: int, peak: float | None) -> dict:
    curve = load_example("8205_errors")
    t, y, dy = curve.t, curve.y, curve.dy
    grid = FrequencyGrid.from_range(0.01, 10.0, nf)
    device = clperiod.select_devices()[:1]
    out = {"device": device[0].label, "n_t": int(t.size), "nf": nf}
    for k in nterms:
        ours, power = best_of(lambda: multiterm_power(t, y, dy, grid, k, device=device), repeat)
        model = LombScargle(t, y, dy, nterms=k)
        started = time.perf_counter()
        fast = model.power(grid.frequencies(), method="fastchi2")
        fast_s = time.perf_counter() - started
        started = time.perf_counter()
        exact = model.power(grid.frequencies()[:CHI2_SAMPLE], method="chi2")
        chi2_s = (time.perf_counter() - started) * nf / CHI2_SAMPLE
        pf_per_s = t.size * nf / ours
        out[f"nterms_{k}"] = {
            "clperiod_s": ours, "astropy_fastchi2_s": fast_s,
            "astropy_chi2_s_extrapolated": chi2_s,
            "speedup_vs_fastchi2": fast_s / ours, "speedup_vs_chi2": chi2_s / ours,
            "pf_per_s": pf_per_s,
            "fraction_of_fp64_peak": pf_per_s * (27 + 14 * k) / peak if peak else None,
            "max_rel_vs_chi2": float(np.max(np.abs(power[:CHI2_SAMPLE] - exact)
                                            / np.abs(exact))),
            "max_abs_vs_fastchi2": float(np.max(np.abs(power - fast))),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nterms", type=int, nargs="+", default=[2, 3, 6])
    parser.add_argument("--nf", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peak-fp64", type=float, help="device fp64 peak, operations/s")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    run_report("bench_multiterm.py", ["multiterm"],
               lambda _: bench(args.nterms, args.nf, args.repeat, args.peak_fp64), args.out)


if __name__ == "__main__":
    main()
