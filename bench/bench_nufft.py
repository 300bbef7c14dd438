"""NUFFT Lomb-Scargle (``lombscargle(algorithm="nufft")``) against the direct path and nifty-ls.

Workloads (issue 22's performance targets):

* ``single``: one light curve of 1e6 points on 1e6 and 1.2e7 frequencies, fp64 and fp32,
  end to end; nifty-ls (finufft on every host core) on the same data in the same run.
* ``stages``: the stage times of one call (prepare, spread, FFT, power, peaks), each
  finished before the next, with the bytes each must move and the fraction of the
  device's memory bandwidth that reaches (``--bandwidth`` GB/s).
* ``tess``: a catalog of TESS-like light curves (20,000 points, 1e5 frequencies),
  NUFFT against the direct path.
* ``stripe82``: the Stripe 82 catalog on 330,000 frequencies, each algorithm and nifty-ls
  one call per object (the CPU target).
* ``long``: long light curves with ``algorithm="auto"`` against nifty-ls.
* ``host``: the host steps of one call on 1e6 points, each the best of ``--repeat``: for
  arrays (a NUFFT search on one device), the catalog checked and copied into page-locked
  memory and the upload from there, then its own copy (made while the device works, so not
  in ``total``); for a Catalog argument, building it (while the previous call's is alive)
  and the page-locked staging copy and upload; the time-order and status checks.
* ``crossover``: one light curve, N points x nf frequencies over a grid of sizes, both
  algorithms and ``algorithm="auto"`` (direct and auto only where the direct sums take
  under ``--direct-limit`` point-frequencies), with auto's time over the better one's:
  the data of the ``algorithm="auto"`` cost model (``fit_costs.py`` fits it).

Run: ``python bench/bench_nufft.py [workloads] [--out FILE]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from harness import best_of, run_report

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.engine.devices import get_queue, select_devices
from clperiod.engine.fft import fft_inplace
from clperiod.engine.staging import Staging
from clperiod.io import load_example
from clperiod.periodograms import nufft


def light_curve(n: int, seed: int = 1, baseline: float = 1000.0):
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, baseline, n)) + 58000.0
    y = np.sin(2 * np.pi * t / 2.7) + rng.normal(0, 1.0, n)
    dy = rng.uniform(0.5, 1.5, n)
    return t, y, dy


def grid_for(nf: int, baseline: float = 1000.0) -> FrequencyGrid:
    """``nf`` frequencies from 0.01 at a fifth of the baseline's resolution."""
    return FrequencyGrid(0.01, 1 / (5 * baseline), nf)


def nifty_seconds(t, y, dy, grid: FrequencyGrid, repeat: int) -> dict:
    try:
        import nifty_ls
    except ImportError as error:
        return {"nifty_ls": f"not installed ({error})"}
    fmax = grid.fmin + grid.df * (grid.nf - 1)

    def run():
        return nifty_ls.lombscargle(t, y, dy, fmin=grid.fmin, fmax=fmax, Nf=grid.nf).power

    seconds, power = best_of(run, repeat)
    return {"nifty_ls_s": seconds, "nifty_ls_threads": os.cpu_count(), "power": power}


def single(repeat: int) -> dict:
    out: dict = {"device": select_devices()[0].label}
    t, y, dy = light_curve(1_000_000)
    for nf in (1_000_000, 12_000_000):
        grid = grid_for(nf)
        row: dict = {}
        for precision in ("fp64", "fp32"):
            seconds, result = best_of(
                lambda precision=precision: clperiod.lombscargle(
                    t, grid, y, dy, algorithm="nufft", precision=precision, periodogram=True
                ),
                repeat,
            )
            row[f"nufft_{precision}_s"] = seconds
            row[f"nufft_{precision}_best_f"] = float(result.frequency_best[0])
            if precision == "fp64":
                ours = result.power[0]
        peer = nifty_seconds(t, y, dy, grid, max(1, repeat // 2))
        if "power" in peer:
            theirs = peer.pop("power")
            row["max_abs_diff_vs_nifty_over_peak"] = float(
                np.nanmax(np.abs(ours - theirs)) / np.nanmax(theirs)
            )
            row["nifty_over_nufft_fp64"] = peer["nifty_ls_s"] / row["nufft_fp64_s"]
        row.update(peer)
        if nf == 1_000_000:
            start = time.perf_counter()
            clperiod.lombscargle(t, grid, y, dy, algorithm="direct")
            row["direct_fp64_s"] = time.perf_counter() - start
            row["direct_over_nufft_fp64"] = row["direct_fp64_s"] / row["nufft_fp64_s"]
        out[f"1e6x{nf:.0e}"] = row
    return out


def stages(repeat: int, bandwidth_gbs: float) -> dict:
    info = select_devices()[0]
    queue = get_queue(info)
    out: dict = {"device": info.label, "peak_bandwidth_GBps": bandwidth_gbs}
    t, y, dy = light_curve(1_000_000)
    catalog = Catalog.from_single(t, y, dy)
    for nf in (1_000_000, 12_000_000):
        for precision in ("fp64", "fp32"):
            plan = nufft.NufftPlan.build(grid_for(nf), precision)
            real = np.dtype(plan.dtype).itemsize
            times: dict[str, list[float]] = {}
            for _ in range(repeat + 1):
                staging = Staging(info)
                marks = [time.perf_counter()]
                points = nufft.prepare_on_device(
                    staging, queue, catalog, plan, fit_mean=True, center_data=True, use_dy=True
                )
                queue.finish()
                marks.append(time.perf_counter())
                grid = staging.buffer(nufft.grid_bytes(points, plan))
                nufft.spread(queue, points, plan, grid)
                queue.finish()
                marks.append(time.perf_counter())
                fft_inplace(queue, _rows(queue, grid, points, plan))
                queue.finish()
                marks.append(time.perf_counter())
                powers = staging.buffer(plan.grid.nf * real)
                nufft.power(queue, grid, points, plan, powers)
                queue.finish()
                marks.append(time.perf_counter())
                nufft._top_k_peaks(queue, staging, powers, 1, plan, 1)
                queue.finish()
                marks.append(time.perf_counter())
                staging.release()
                for name, a, b in zip(
                    ("prepare", "spread", "fft", "power", "peaks"), marks, marks[1:], strict=False
                ):
                    times.setdefault(name, []).append(b - a)
            best = {name: min(values[1:]) for name, values in times.items()}
            n, grid_b = t.size, nufft.grid_bytes(points, plan)
            moved = {
                "prepare": 3 * 3 * 8 * n + n * (8 + 4 * real),
                "spread": grid_b + 2 * n * (8 + 4 * real),
                "fft": 2 * grid_b,
                "power": 3 * plan.grid.nf * 2 * real + plan.grid.nf * real,
                "peaks": plan.grid.nf * real,
            }
            out[f"1e6x{nf:.0e}/{precision}"] = {
                "n_grid": plan.n_grid,
                "width": plan.width,
                "seconds": best,
                "total_s": sum(best.values()),
                "bytes_floor": moved,
                "bandwidth_fraction": {
                    name: moved[name] / best[name] / (bandwidth_gbs * 1e9) for name in best
                },
            }
    return out


def _rows(queue, grid, points, plan):
    import pyopencl.array as cla

    rows = points.n_objects * points.n_transforms
    return cla.Array(queue, (rows, plan.n_grid), plan.complex_dtype, data=grid)


def tess(repeat: int, n_objects: int) -> dict:
    curves = [light_curve(20_000, seed=k, baseline=27.0) for k in range(n_objects)]
    catalog = Catalog.from_lightcurves(curves)
    grid = FrequencyGrid(0.05, 1 / (5 * 27.0), 100_000)
    out: dict = {"device": select_devices()[0].label, "objects": n_objects}
    for algorithm in ("nufft", "direct"):
        seconds, result = best_of(
            lambda algorithm=algorithm: clperiod.lombscargle(catalog, grid, algorithm=algorithm),
            repeat if algorithm == "nufft" else 1,
        )
        out[f"{algorithm}_s"] = seconds
        out[f"{algorithm}_best_f"] = result.frequency()[:5].tolist()
    out["direct_over_nufft"] = out["direct_s"] / out["nufft_s"]
    return out


def crossover(repeat: int, direct_limit: float) -> dict:
    out: dict = {"device": select_devices()[0].label, "rows": []}
    for n in (10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000):
        t, y, dy = light_curve(n)
        for nf in (1000, 10_000, 100_000, 1_000_000, 10_000_000):
            grid = grid_for(nf)
            row: dict = {"n": n, "nf": nf}
            for algorithm in ("nufft", "direct", "auto"):
                if algorithm != "nufft" and n * nf > direct_limit:
                    continue
                row[f"{algorithm}_s"], _ = best_of(
                    lambda algorithm=algorithm: clperiod.lombscargle(
                        t, grid, y, dy, algorithm=algorithm
                    ),
                    repeat if n * nf < 1e11 else 1,
                )
            if "direct_s" in row:
                row["auto_over_best"] = row["auto_s"] / min(row["nufft_s"], row["direct_s"])
            out["rows"].append(row)
            print(row, flush=True)
    return out


def host_profile(repeat: int) -> dict:
    """cProfile of one call (1e6 points, 1e6 frequencies, fp64, peaks only): the
    functions with the most own time, and the call's wall time without profiling."""
    import cProfile
    import io
    import pstats

    t, y, dy = light_curve(1_000_000)
    grid = grid_for(1_000_000)
    out: dict = {"device": select_devices()[0].label}
    for periodogram in (False, True):
        seconds, _ = best_of(
            lambda periodogram=periodogram: clperiod.lombscargle(
                t, grid, y, dy, algorithm="nufft", periodogram=periodogram
            ),
            repeat,
        )
        out[f"wall_s_periodogram_{periodogram}"] = seconds
    profiler = cProfile.Profile()
    profiler.runcall(clperiod.lombscargle, t, grid, y, dy, algorithm="nufft")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    out["profile"] = text.getvalue().splitlines()[-22:]
    return out


def host_steps(repeat: int) -> dict:
    """Milliseconds of the host steps of one 1e6-point call, each the best of ``repeat``:
    ``total`` those before the device starts on arrays, ``total_catalog`` on a Catalog."""
    import functools

    from clperiod.catalog import relocated, single_catalog
    from clperiod.engine.staging import PINNED_POOL
    from clperiod.periodograms.inputs import degenerate_status

    info = select_devices()[0]
    queue = get_queue(info)
    t, y, dy = light_curve(1_000_000)
    page_locked = functools.partial(PINNED_POOL.empty, info)
    held = {
        "catalog": Catalog.from_single(t, y, dy),
        "arrays": single_catalog(t, y, dy, "raise", page_locked),
    }

    def build() -> None:  # a result of the previous call holds its catalog
        held["catalog"] = Catalog.from_single(t, y, dy)

    def build_page_locked() -> None:
        held["arrays"] = single_catalog(t, y, dy, "raise", page_locked)

    def stage(catalog: Catalog) -> None:
        staging = Staging(info)
        for column in (catalog.t, catalog.y, catalog.dy):
            staging.upload(column)
        staging.send(queue)
        queue.finish()
        staging.release()

    status, best = np.zeros(1, np.int8), np.ones(1)
    steps = {
        "arrays_catalog_page_locked": build_page_locked,
        "arrays_upload_in_place": lambda: stage(held["arrays"]),
        "arrays_own_copy_overlapped": lambda: relocated(held["arrays"]),
        "catalog": build,
        "staging_copy_and_upload": lambda: stage(held["catalog"]),
        "time_sorted": lambda: nufft.time_sorted(held["catalog"]),
        "status": lambda: degenerate_status(held["catalog"], status, best, True),
    }
    out: dict = {"device": info.label, "ms": {}}
    for name, step in steps.items():
        seconds, _ = best_of(step, repeat)
        out["ms"][name] = 1e3 * seconds
    ms = out["ms"]
    checks = ms["time_sorted"] + ms["status"]
    ms["total"] = ms["arrays_catalog_page_locked"] + ms["arrays_upload_in_place"] + checks
    ms["total_catalog"] = ms["catalog"] + ms["staging_copy_and_upload"] + checks
    return out


def stripe82(repeat: int) -> dict:
    """The Stripe 82 catalog (136 RR Lyrae) on 330,000 frequencies: each algorithm,
    and nifty-ls one call per object on the same cores (the CPU target of issue 22)."""
    catalog = load_example("stripe82")
    grid = FrequencyGrid.from_range(0.1, 10.0, 330_000)
    out: dict = {"device": select_devices()[0].label, "objects": catalog.n_objects}
    clperiod.lombscargle(catalog.subset(np.arange(2)), grid, algorithm="nufft")  # warm-up
    for algorithm in ("auto", "nufft", "direct"):
        seconds, result = best_of(
            lambda algorithm=algorithm: clperiod.lombscargle(catalog, grid, algorithm=algorithm),
            repeat,
        )
        out[f"{algorithm}_s"] = seconds
        out[f"{algorithm}_best_f"] = result.frequency_best[:3].tolist()
    try:
        import nifty_ls
    except ImportError as error:
        out["nifty_ls"] = f"not run: {error}"
        return out
    objects = [catalog.lightcurve(k)[:3] for k in range(catalog.n_objects)]
    fmax = grid.fmin + grid.df * (grid.nf - 1)

    def nifty() -> list[float]:
        best = []
        for t, y, dy in objects:
            power = nifty_ls.lombscargle(t, y, dy, fmin=grid.fmin, fmax=fmax, Nf=grid.nf).power
            best.append(grid.fmin + grid.df * float(np.argmax(power)))
        return best

    seconds, best = best_of(nifty, repeat)
    out["nifty_ls_s"] = seconds
    out["nifty_best_f"] = best[:3]
    out["auto_over_nifty"] = out["auto_s"] / seconds
    return out


def long_series(repeat: int) -> dict:
    """Long light curves (1e5 and 1e6 points, 1e5 and 1e6 frequencies) with
    ``algorithm="auto"`` against nifty-ls on the same cores."""
    out: dict = {"device": select_devices()[0].label}
    for n in (100_000, 1_000_000):
        t, y, dy = light_curve(n)
        for nf in (100_000, 1_000_000):
            grid = grid_for(nf)
            seconds, result = best_of(
                lambda grid=grid: clperiod.lombscargle(t, grid, y, dy, algorithm="auto"), repeat
            )
            row = {"auto_s": seconds, "auto_best_f": float(result.frequency_best[0])}
            peer = nifty_seconds(t, y, dy, grid, repeat)
            peer.pop("power", None)
            row.update(peer)
            if "nifty_ls_s" in peer:
                row["auto_over_nifty"] = seconds / peer["nifty_ls_s"]
            out[f"{n:.0e}x{nf:.0e}"] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "workloads",
        nargs="*",
        default=["single"],
        choices=["single", "stages", "host", "tess", "crossover", "profile", "stripe82", "long"],
    )
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bandwidth", type=float, default=3350.0, help="peak GB/s")
    parser.add_argument("--tess-objects", type=int, default=1000)
    parser.add_argument("--direct-limit", type=float, default=2e12)
    parser.add_argument("--out")
    args = parser.parse_args()
    runners = {
        "single": lambda: single(args.repeat),
        "stages": lambda: stages(args.repeat, args.bandwidth),
        "host": lambda: host_steps(args.repeat),
        "tess": lambda: tess(args.repeat, args.tess_objects),
        "crossover": lambda: crossover(args.repeat, args.direct_limit),
        "profile": lambda: host_profile(args.repeat),
        "stripe82": lambda: stripe82(args.repeat),
        "long": lambda: long_series(args.repeat),
    }
    run_report("bench_nufft.py", args.workloads, lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
