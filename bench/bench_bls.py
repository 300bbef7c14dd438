"""Box least squares (issue 24) against astropy ``BoxLeastSquares``.

Workloads:

* ``tess``: one TESS-like light curve (20,000 points at 2-minute cadence, a 2.5 mmag
  transit), 1e5 trial periods from 0.5 to 13 days, 10 durations from 1 to 7 hours, the
  binned method, likelihood objective: clperiod end to end, fp64 and fp32, and astropy's
  fast method on every host core (the periods split over one process per core; timed on a
  warm pool, whose workers have started and imported astropy, and on a pool started for the
  call, ``_cold``), with the ratios and the agreement of the best periods. Each precision is
  timed with each bin filling of ``--path`` (``Layout.binning``: ``atomic``, ``prefix``, or
  ``auto``, the default's choice; by default atomic and prefix, for an A/B in one run); in
  fp64 the fillings must give identical results.
* ``catalog``: ``--objects`` such light curves in one call, against ``--objects`` times
  the single-curve time (linear scaling).

Run: ``python bench/bench_bls.py [workloads] [--path atomic prefix auto] [--objects N]
[--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from harness import best_of, run_report

import clperiod
from clperiod import Catalog
from clperiod.engine.devices import select_devices
from clperiod.periodograms.bls import Layout, layout_for

PERIODS = np.exp(np.linspace(np.log(0.5), np.log(13.0), 100_000))
DURATIONS = np.linspace(1.0, 7.0, 10) / 24


def tess_like(seed: int = 1, period: float = 3.217):
    """``(t, y, dy)`` of 20,000 two-minute points with a box transit of ``period`` days."""
    rng = np.random.default_rng(seed)
    t = 2_459_000.0 + np.arange(20_000) * (2.0 / 1440)
    dy = np.full(t.size, 1e-3)
    phase = ((t - t[0] - 0.7) / period) % 1.0
    y = 1.0 - 2.5e-3 * (phase < 0.12 / period) + rng.normal(0, 1e-3, t.size)
    return t, y, dy


def _astropy_best(args) -> tuple[float, float]:
    from astropy.timeseries import BoxLeastSquares

    t, y, dy, periods = args
    result = BoxLeastSquares(t - t[0], y, dy).power(periods, DURATIONS, method="fast")
    k = int(np.argmax(result.power))
    return float(result.power[k]), float(periods[k])


def _astropy(t, y, dy, repeat: int) -> tuple[float, float, float]:
    """astropy's fast BLS over every host core: the seconds of a pool started
    for the call (processes and imports included), the best seconds of a warm
    pool (its workers started and astropy imported beforehand), and the best
    period."""
    workers = os.cpu_count() or 1
    parts = [(t, y, dy, part) for part in np.array_split(PERIODS, workers)]
    start = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        found = list(pool.map(_astropy_best, parts))
    cold = time.perf_counter() - start
    with ProcessPoolExecutor(workers) as pool:
        warm, _ = best_of(lambda: list(pool.map(_astropy_best, parts)), repeat)
    return cold, warm, max(found)[1]


def _layout(path: str) -> Layout:
    """The default layout of the first device, with the bins filled as ``path`` says."""
    default = layout_for(select_devices()[0])
    return Layout(default.local_bins, default.atomics, binning=None if path == "auto" else path)


def tess(repeat: int, paths: list[str]) -> dict:
    t, y, dy = tess_like()
    catalog = Catalog.from_single(t, y, dy)
    out: dict = {"device": select_devices()[0].label, "points": t.size,
                 "periods": PERIODS.size, "durations": DURATIONS.size}
    runs = [(f"{precision}_{path}", precision, _layout(path))
            for precision in ("fp64", "fp32") for path in paths]
    results = {}
    for name, precision, layout in runs:
        seconds, result = best_of(
            lambda precision=precision, layout=layout: clperiod.bls(
                catalog, PERIODS, DURATIONS, precision=precision, layout=layout
            ),
            repeat,
        )
        out[f"{name}_s"] = seconds
        out[f"{name}_best_period"] = float(np.asarray(result.period_best)[0])
        results[name] = result
    fp64 = [results[f"fp64_{path}"] for path in paths]
    out["fp64_fills_identical"] = all(
        np.array_equal(getattr(r, field), getattr(fp64[0], field))
        for r in fp64[1:] for field in ("period_best", "power_best", "depth_best",
                                        "duration_best", "transit_time_best", "top_k_power")
    )
    cold, warm, best = _astropy(t, y, dy, max(1, repeat // 2))
    out["astropy_all_cores_s"] = warm
    out["astropy_all_cores_cold_s"] = cold
    out["astropy_workers"] = os.cpu_count()
    out["astropy_best_period"] = best
    for name, _, _ in runs:
        out[f"{name}_over_astropy"] = warm / out[f"{name}_s"]
        out[f"{name}_over_astropy_cold"] = cold / out[f"{name}_s"]
    return out


def catalog(n_objects: int, repeat: int) -> dict:
    curves = [tess_like(seed=k, period=2.0 + 0.01 * k) for k in range(n_objects)]
    cat = Catalog.from_lightcurves(curves)
    single = Catalog.from_single(*curves[0])
    out: dict = {"device": select_devices()[0].label, "objects": n_objects}
    for precision in ("fp64", "fp32"):
        one, _ = best_of(lambda p=precision: clperiod.bls(single, PERIODS, DURATIONS, precision=p),
                         repeat)
        many, _ = best_of(lambda p=precision: clperiod.bls(cat, PERIODS, DURATIONS, precision=p),
                          max(1, repeat // 2))
        out[f"{precision}_one_s"] = one
        out[f"{precision}_catalog_s"] = many
        out[f"{precision}_catalog_over_linear"] = many / (n_objects * one)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", choices=["tess", "catalog"])
    parser.add_argument("--path", nargs="+", default=["atomic", "prefix"],
                        choices=["atomic", "prefix", "auto"],
                        help="bin fillings timed in fp64 (tess workload)")
    parser.add_argument("--objects", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    runners = {"tess": lambda: tess(args.repeat, args.path),
               "catalog": lambda: catalog(args.objects, args.repeat)}
    run_report("bench_bls.py", args.workloads, lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
