"""Phase-binned statistics (issue 24): PDM, conditional entropy and AOV against CPU peers.

Workloads ``pdm``, ``ce`` and ``aov``, on ZTF-like objects (about 165 nightly points over 3
years, raw MJD epochs; eclipsing binaries, transits and sawtooth curves) and 1e5 trial
frequencies: point-frequency evaluations per second end to end from a built catalog, fp32
and fp64 (the issue's target: 1e11 in fp32 on an H100 for 1000 objects), the agreement of
their best frequencies, and a peer on a sample of the objects over every host core: P4J's
``PDM`` and ``AOV`` (Cython, float32; they fold ``t - t_first`` here) and, for the
conditional entropy, whose peers need CUDA, the float64 NumPy reference
(``tests/reference/conditional_entropy.py``).

Run: ``python bench/bench_phase_statistics.py [workloads] [--objects N] [--nf N] [--out FILE]``.
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

SEARCHES = {
    "pdm": (clperiod.pdm, {"n_bins": 10}),
    "ce": (clperiod.conditional_entropy, {"phase_bins": 10, "magnitude_bins": 5}),
    "aov": (clperiod.aov, {"n_bins": 10}),
}


def ztf_like(n_objects: int, seed: int = 3) -> list[tuple[np.ndarray, ...]]:
    """``n_objects`` light curves ``(t, y, dy)`` of 150 to 180 points over 1100 nights."""
    from reference import light_curves as lc

    rng = np.random.default_rng(seed)
    shapes = (lc.eclipsing_binary, lc.transit, lc.sawtooth)
    curves = []
    for k in range(n_objects):
        n = int(rng.integers(150, 180))
        period = float(np.exp(rng.uniform(np.log(0.3), np.log(30.0))))
        t, y, dy = shapes[k % 3](seed + k, period, n=n, baseline=1100.0, noise=0.2)
        curves.append((t + 58200.0, y, dy))
    return curves


def _p4j_best(args) -> float:
    from P4J.algorithms.analysis_of_variance import AOV
    from P4J.algorithms.phase_dispersion_minimization import PDM

    name, t, y, dy, frequencies = args
    t32, y32, dy32 = ((t - t.min()).astype(np.float32), y.astype(np.float32),
                      dy.astype(np.float32))
    peer = PDM(t32, y32, dy32, 10) if name == "pdm" else AOV(t32, y32, dy32, 10, 1)
    values = np.array([peer.eval_frequency(f) for f in frequencies.astype(np.float32)])
    return float(frequencies[np.argmin(values) if name == "pdm" else np.argmax(values)])


def _numpy_best(args) -> float:
    from reference.conditional_entropy import conditional_entropy

    _, t, y, _, frequencies = args
    entropy = np.concatenate([conditional_entropy(t - t.min(), y, part)
                              for part in np.array_split(frequencies, 50)])
    return float(frequencies[np.argmin(entropy)])


def _peer(name: str, curves: list, frequencies: np.ndarray) -> tuple[str, float, list]:
    """The peer's name, its seconds over ``curves`` on every host core, its best frequencies."""
    fn, peer = (_numpy_best, "numpy reference") if name == "ce" else (_p4j_best, "P4J")
    if peer == "P4J":
        try:
            import P4J  # noqa: F401
        except ImportError as error:
            return f"not run: {error}", float("nan"), []
    items = [(name, t, y, dy, frequencies) for t, y, dy in curves]
    start = time.perf_counter()
    with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
        best = list(pool.map(fn, items))
    return peer, time.perf_counter() - start, best


def workload(name: str, n_objects: int, nf: int, repeat: int, sample: int) -> dict:
    curves = ztf_like(n_objects)
    catalog = Catalog.from_lightcurves(curves)
    grid = FrequencyGrid(0.03, 1.0 / (5 * 1100.0), nf)
    search, options = SEARCHES[name]
    evaluations = catalog.t.size * grid.nf
    out: dict = {"device": select_devices()[0].label, "objects": n_objects,
                 "points": int(catalog.t.size), "nf": grid.nf, **options}
    best = {}
    for precision in ("fp32", "fp64"):
        seconds, result = best_of(
            lambda precision=precision: search(catalog, grid, precision=precision, **options),
            repeat,
        )
        out[f"{precision}_s"] = seconds
        out[f"{precision}_point_frequencies_per_s"] = evaluations / seconds
        best[precision] = result.frequency_best
    out["fp32_same_best_as_fp64"] = float(np.mean(best["fp32"] == best["fp64"]))
    peer, seconds, peer_best = _peer(name, curves[:sample], grid.frequencies())
    out["peer"] = peer
    if peer_best:
        out["peer_objects"] = sample
        out["peer_workers"] = os.cpu_count() or 1
        out["peer_point_frequencies_per_s"] = (
            sum(c[0].size for c in curves[:sample]) * grid.nf / seconds
        )
        out["fp32_over_peer"] = (
            out["fp32_point_frequencies_per_s"] / out["peer_point_frequencies_per_s"]
        )
        out["peer_same_best_as_fp64"] = float(
            np.mean(np.abs(np.asarray(peer_best) - best["fp64"][:sample]) <= 1.01 * grid.df)
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help=f"of {list(SEARCHES)} (default: all)")
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--nf", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=16, help="objects the peer searches")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    unknown = sorted(set(args.workloads) - set(SEARCHES))
    if unknown:
        parser.error(f"unknown workloads {unknown}; choose from {list(SEARCHES)}")
    run_report(
        "bench_phase_statistics.py",
        args.workloads or list(SEARCHES),
        lambda name: workload(name, args.objects, args.nf, args.repeat, args.sample),
        args.out,
    )


if __name__ == "__main__":
    main()
