"""Multiband periodograms (issue 23) against astropy ``LombScargleMultiband`` and P4J.

Workloads, on ZTF-like objects (g and r, about 150 points in total, a 3-year baseline, raw
MJD epochs) and 1e5 frequencies:

* ``ls``: multiband Lomb-Scargle (nterms_base 1, nterms_band 1), objects per second end
  to end from a built catalog, fp64 and fp32; astropy's flexible method on a sample of
  the objects over every host core (a process each), with the ratio and the agreement of
  the best periods.
* ``mhaov``: the multiband multi-harmonic AOV (2 harmonics), objects per second; P4J's
  ``MultiBandPeriodogram(method="MHAOV")`` on a sample over every host core, and on one.
* ``bootstrap``: 1000 resamplings of one object's multiband Lomb-Scargle false-alarm
  probability, fp64 and fp32.

Run: ``python bench/bench_multiband.py [workloads] [--objects N] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from harness import best_of, run_report

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.engine.devices import select_devices

GRID = FrequencyGrid(1e-3, 1e-4, 100_000)


def ztf_like(n_objects: int, seed: int = 3):
    """Flat ``(ids, t, y, dy, band)`` of ``n_objects`` two-band sinusoidal variables and
    their true frequencies."""
    rng = np.random.default_rng(seed)
    rows = []
    true_f = 1 / rng.uniform(0.2, 50.0, n_objects)
    for k in range(n_objects):
        n = int(rng.integers(130, 170))
        nights = np.sort(rng.choice(1100, n, replace=False)).astype(float)
        t = 58200.0 + nights + rng.uniform(0.1, 0.4, n)
        band = rng.choice(np.array(["g", "r"]), n, p=[0.45, 0.55])
        amplitude = np.where(band == "g", 0.3, 0.2)
        dy = rng.uniform(0.02, 0.1, n)
        y = (
            np.where(band == "g", 17.3, 17.0)
            + amplitude * np.sin(2 * np.pi * true_f[k] * t + k)
            + rng.normal(0, 1, n) * dy
        )
        rows.append((np.full(n, k), t, y, dy, band))
    columns = [np.concatenate(parts) for parts in zip(*rows, strict=True)]
    return (*columns, true_f)


def _astropy_best(args) -> float:
    from astropy.timeseries import LombScargleMultiband

    t, y, dy, band = args
    power = LombScargleMultiband(t - t.min(), y, band, dy).power(
        GRID.frequencies(), method="flexible"
    )
    return float(GRID.frequencies()[np.argmax(power)])


def _p4j_best(args) -> float:
    import P4J

    t, y, dy, band = args
    periodogram = P4J.MultiBandPeriodogram(method="MHAOV", Nharmonics=2)
    periodogram.set_data(t, y, dy, band)
    periodogram.frequency_grid_evaluation(
        fmin=GRID.fmin, fmax=GRID.fmin + (GRID.nf - 1) * GRID.df, fresolution=GRID.df
    )
    frequency, power = periodogram.get_periodogram()
    return float(frequency[np.argmax(power)])


def _objects(ids, t, y, dy, band, count: int) -> list[tuple]:
    starts = np.searchsorted(ids, np.arange(count + 1))
    return [
        (t[a:b], y[a:b], dy[a:b], band[a:b])
        for a, b in zip(starts[:-1], starts[1:], strict=True)
    ]


def _peer(fn, objects: list[tuple], workers: int) -> tuple[float, list[float]]:
    """Seconds and best frequencies of ``fn`` over ``objects`` on ``workers`` processes."""
    start = time.perf_counter()
    if workers == 1:
        best = [fn(item) for item in objects]
    else:
        with ProcessPoolExecutor(workers) as pool:
            best = list(pool.map(fn, objects))
    return time.perf_counter() - start, best


def _same_peak(a, b) -> float:
    """Fraction of equal best frequencies (within one grid step)."""
    return float(np.mean(np.abs(np.asarray(a) - np.asarray(b)) <= 1.01 * GRID.df))


def ls(n_objects: int, repeat: int, sample: int) -> dict:
    ids, t, y, dy, band, _ = ztf_like(n_objects)
    catalog = Catalog.from_arrays(ids, t, y, dy, band=band)
    out: dict = {"device": select_devices()[0].label, "objects": n_objects, "nf": GRID.nf}
    for precision in ("fp64", "fp32"):
        seconds, result = best_of(
            lambda precision=precision: clperiod.lombscargle_multiband(
                catalog, GRID, precision=precision
            ),
            repeat,
        )
        out[f"{precision}_s"] = seconds
        out[f"{precision}_objects_per_s"] = n_objects / seconds
        out[f"{precision}_best"] = result.frequency_best
    out["fp32_same_best_as_fp64"] = _same_peak(out["fp32_best"], out["fp64_best"])
    workers = os.cpu_count() or 1
    seconds, best = _peer(_astropy_best, _objects(ids, t, y, dy, band, sample), workers)
    out["astropy_objects"] = sample
    out["astropy_workers"] = workers
    out["astropy_objects_per_s"] = sample / seconds
    out["fp64_over_astropy"] = out["fp64_objects_per_s"] / out["astropy_objects_per_s"]
    out["fp32_over_astropy"] = out["fp32_objects_per_s"] / out["astropy_objects_per_s"]
    out["astropy_same_best_as_fp64"] = _same_peak(best, out["fp64_best"][:sample])
    for precision in ("fp64", "fp32"):
        out.pop(f"{precision}_best")
    return out


def mhaov(n_objects: int, repeat: int, sample: int) -> dict:
    ids, t, y, dy, band, _ = ztf_like(n_objects)
    catalog = Catalog.from_arrays(ids, t, y, dy, band=band)
    out: dict = {"device": select_devices()[0].label, "objects": n_objects, "nf": GRID.nf}
    for precision in ("fp64", "fp32"):
        seconds, result = best_of(
            lambda precision=precision: clperiod.mhaov(
                catalog, GRID, nharmonics=2, precision=precision
            ),
            repeat,
        )
        out[f"{precision}_s"] = seconds
        out[f"{precision}_objects_per_s"] = n_objects / seconds
        out[f"{precision}_best"] = result.frequency_best
    out["fp32_same_best_as_fp64"] = _same_peak(out["fp32_best"], out["fp64_best"])
    objects = _objects(ids, t, y, dy, band, sample)
    try:
        import P4J  # noqa: F401
    except ImportError as error:
        out["p4j"] = f"not run: {error}"
    else:
        workers = os.cpu_count() or 1
        seconds, best = _peer(_p4j_best, objects, workers)
        out["p4j_objects"] = sample
        out["p4j_workers"] = workers
        out["p4j_objects_per_s"] = sample / seconds
        one, _ = _peer(_p4j_best, objects[:2], 1)
        out["p4j_one_core_s_per_object"] = one / 2
        out["fp32_over_p4j_all_cores"] = out["fp32_objects_per_s"] / out["p4j_objects_per_s"]
        out["fp32_over_p4j_one_core"] = out["fp32_objects_per_s"] * out[
            "p4j_one_core_s_per_object"
        ]
        out["p4j_same_best_as_fp64"] = _same_peak(best, out["fp64_best"][:sample])
    for precision in ("fp64", "fp32"):
        out.pop(f"{precision}_best")
    return out


def bootstrap(repeat: int) -> dict:
    ids, t, y, dy, band, _ = ztf_like(1, seed=11)
    catalog = Catalog.from_arrays(ids, t, y, dy, band=band)
    out: dict = {"device": select_devices()[0].label, "rows": int(t.size), "nf": GRID.nf}
    for precision in ("fp64", "fp32"):
        result = clperiod.lombscargle_multiband(catalog, GRID, precision=precision)
        seconds, fap = best_of(
            lambda result=result: result.false_alarm_probability(1000, seed=5), repeat
        )
        out[f"{precision}_1000_resamplings_s"] = seconds
        out[f"{precision}_fap"] = float(np.asarray(fap)[0])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "workloads", nargs="+", choices=["ls", "mhaov", "bootstrap"]
    )
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--sample", type=int, default=32, help="objects the peers search")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    runners = {
        "ls": lambda: ls(args.objects, args.repeat, args.sample),
        "mhaov": lambda: mhaov(args.objects, args.repeat, args.sample),
        "bootstrap": lambda: bootstrap(args.repeat),
    }
    run_report("bench_multiband.py", args.workloads, lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
