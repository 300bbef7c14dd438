"""Lomb-Scargle benchmarks: clperiod against its peers in the same process.

Workloads (issue #2):

* ``single``  -- one object, the 8205 light curve (N_t = 3554, with errors),
  N_f = 10^6, generalized LS, fp64 and fp32: kernel time (OpenCL profiling)
  and end to end; peers astropy ``fast`` (LRA) and ``cython``, nifty-ls
  (finufft, all host cores), SciPy.
* ``catalog`` -- 1000 objects with log-normal lengths (mean ~165), N_f = 2x10^5,
  fp64: best periods only, and with every periodogram returned (compared with
  the transfer floor measured on the same device).
* ``cpu``     -- the catalog workload scaled for a CPU runtime, against
  astropy ``cython`` on the same cores.

Prints one JSON document (and writes it with ``--out``). Throughput is given in
point-frequency evaluations per second (pf/s) and as a fraction of the device's
arithmetic peak, counting the kernel's inner-loop operations per pf
(7 accumulation FMAs/adds + 1 multiply + the recurrence: 2 FMAs for the fp64
Chebyshev form, 4 for the fp32 rotation).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import clperiod
from clperiod import Catalog, FrequencyGrid, lombscargle
from clperiod.io import load_example

from harness import best_of, run_report

OPS_PER_PF = {"fp64": 10, "fp32": 12}


def device_peak(info) -> dict:
    """Arithmetic peak (operations/s) for known NVIDIA GPUs, else None."""
    dev = info.device
    try:
        major = dev.compute_capability_major_nv
    except Exception:  # not an NVIDIA device
        return {"fp64_ops": None, "fp32_ops": None}
    per_sm = {9: (64, 128), 8: (32, 64) if dev.compute_capability_minor_nv == 0 else (2, 128)}
    fp64, fp32 = per_sm.get(major, (None, None))
    clock = dev.max_clock_frequency * 1e6
    sms = dev.max_compute_units
    return {
        "fp64_ops": fp64 * sms * clock if fp64 else None,
        "fp32_ops": fp32 * sms * clock if fp32 else None,
        "sm": sms,
        "clock_mhz": dev.max_clock_frequency,
    }


def fraction(pf_per_s, precision, peak):
    ops = peak.get(f"{precision}_ops")
    return None if not ops else pf_per_s * OPS_PER_PF[precision] / ops


def synthetic_catalog(n_objects=1000, seed=42, mean_len=165):
    """Log-normal lengths (mean ~mean_len), ZTF-like cadence over ~3 years."""
    rng = np.random.default_rng(seed)
    sigma = 0.8
    mu = np.log(mean_len) - sigma**2 / 2
    lengths = np.clip(rng.lognormal(mu, sigma, n_objects).astype(int), 10, 5000)
    lcs = []
    for n in lengths:
        t = 58000 + np.sort(rng.uniform(0, 1000, n))
        period = rng.uniform(0.1, 10)
        y = 17 + 0.3 * np.sin(2 * np.pi * t / period) + rng.normal(0, 0.1, n)
        lcs.append((t, y, rng.uniform(0.05, 0.15, n)))
    return Catalog.from_lightcurves(lcs)


def bench_single(repeat, peers):
    cat = load_example("8205_errors")
    t, y, dy = cat.lightcurve(0)
    grid = FrequencyGrid.from_range(0.5, 24.0, 1_000_000)
    out = {"n_t": len(t), "nf": grid.nf, "pf": len(t) * grid.nf}
    info = clperiod.select_devices()[0]
    peak = device_peak(info)
    out["device"], out["peak"] = info.label, peak
    for precision in ("fp64", "fp32"):
        run = lambda: lombscargle(cat, grid, precision=precision, profile=True)  # noqa: E731
        wall, result = best_of(run, repeat)
        kernel = min(
            lombscargle(cat, grid, precision=precision, profile=True).timings["tiles_s"]
            for _ in range(repeat)
        )
        pfs = out["pf"] / kernel
        out[precision] = {
            "kernel_s": kernel,
            "end_to_end_s": wall,
            "pf_per_s": pfs,
            "fraction_of_peak": fraction(pfs, precision, peak),
            "best_period": float(result.period[0]),
        }
    if peers:
        out["peers"] = single_peers(t, y, dy, grid, out["fp64"]["end_to_end_s"])
    return out


def single_peers(t, y, dy, grid, ours):
    from astropy.timeseries import LombScargle

    freq = grid.frequencies()
    peers = {}
    ls = LombScargle(t, y, dy)
    wall, _ = best_of(lambda: ls.power(freq, method="fast"), 1)
    peers["astropy_fast_lra_s"] = wall
    sub = freq[:20_000]
    wall, _ = best_of(lambda: ls.power(sub, method="cython"), 1)
    peers["astropy_cython_extrapolated_s"] = wall * len(freq) / len(sub)
    # SciPy (classic LS; materialises N x Nf arrays, so a 10^4-frequency slice, extrapolated)
    import scipy.signal

    sub = 2 * np.pi * freq[:10_000]
    wall, _ = best_of(lambda: scipy.signal.lombscargle(t, y - y.mean(), sub), 1)
    peers["scipy_standard_extrapolated_s"] = wall * len(freq) / len(sub)
    wall, _ = best_of(lambda: lombscargle(t, grid, y - y.mean(), method="standard"), 3)
    peers["clperiod_standard_fp64_s"] = wall
    try:
        import nifty_ls

        call = lambda: nifty_ls.lombscargle(  # noqa: E731
            t, y, dy, fmin=grid.fmin, fmax=grid.fmax, Nf=grid.nf, backend="finufft"
        )
        wall, _ = best_of(call, 2)
        peers["nifty_ls_finufft_s"] = wall
        peers["nifty_ls_threads"] = os.cpu_count()
    except ImportError:
        peers["nifty_ls_finufft_s"] = None
    peers["ratios_peer_over_clperiod_fp64"] = {
        k: v / ours
        for k, v in peers.items()
        if k.endswith("_s") and v and not k.startswith(("clperiod", "scipy"))
    }
    peers["ratio_scipy_over_clperiod_standard"] = (
        peers["scipy_standard_extrapolated_s"] / peers["clperiod_standard_fp64_s"]
    )
    return peers


def transfer_floor(info, nbytes):
    """Device-to-host seconds for ``nbytes`` into pinned host memory."""
    import pyopencl as cl

    ctx = clperiod.engine.devices.get_context(info)
    queue = clperiod.engine.devices.get_queue(info)
    dev_buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    pinned = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR, nbytes)
    host, _ = cl.enqueue_map_buffer(
        queue, pinned, cl.map_flags.WRITE | cl.map_flags.READ, 0, (nbytes,), np.uint8
    )
    cl.enqueue_copy(queue, host, dev_buf, is_blocking=True)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        cl.enqueue_copy(queue, host, dev_buf, is_blocking=True)
        best = min(best, time.perf_counter() - start)
    pageable = np.empty(nbytes, np.uint8)
    start = time.perf_counter()
    cl.enqueue_copy(queue, pageable, dev_buf, is_blocking=True)
    return best, time.perf_counter() - start


def bench_catalog(repeat, n_objects=1000, nf=200_000, peers=False):
    cat = synthetic_catalog(n_objects)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    n_t = int(cat.lengths.sum())
    info = clperiod.select_devices()[0]
    peak = device_peak(info)
    out = {"device": info.label, "n_objects": n_objects, "n_t": n_t, "nf": nf, "pf": n_t * nf}
    wall, result = best_of(lambda: lombscargle(cat, grid), repeat)
    kernel = lombscargle(cat, grid, profile=True).timings
    out["best_only"] = {
        "end_to_end_s": wall,
        "kernel_s": kernel["tiles_s"] + kernel["merge_s"],
        "pf_per_s_end_to_end": n_t * nf / wall,
        "fraction_of_peak": fraction(n_t * nf / kernel["tiles_s"], "fp64", peak),
    }
    start = time.perf_counter()
    full = lombscargle(cat, grid, periodogram=True)
    first = time.perf_counter() - start
    del full
    wall, full = best_of(lambda: lombscargle(cat, grid, periodogram=True), repeat)
    timings = lombscargle(cat, grid, periodogram=True, profile=True).timings
    nbytes = full.power.nbytes
    pinned_s, pageable_s = transfer_floor(info, nbytes)
    out["periodogram"] = {
        "first_call_s": first,
        "end_to_end_s": wall,
        "kernel_s": timings["tiles_s"],
        "copy_s": timings["copy_s"],
        "bytes": nbytes,
        "d2h_pinned_floor_s": pinned_s,
        "d2h_pageable_s": pageable_s,
        "ratio_to_floor": wall / pinned_s,
    }
    assert np.array_equal(full.frequency_best, result.frequency_best)
    if peers:
        out["astropy_cython"] = astropy_catalog(
            cat, grid, wall_ours=out["best_only"]["end_to_end_s"], max_objects=10, max_nf=20_000
        )
    return out


def astropy_catalog(cat, grid, wall_ours, max_objects=None, max_nf=None):
    """astropy ``cython`` over (a prefix of) the catalog and grid, in pf/s."""
    from astropy.timeseries import LombScargle

    freq = grid.frequencies()[:max_nf]
    n = cat.n_objects if max_objects is None else min(max_objects, cat.n_objects)
    start = time.perf_counter()
    pf = 0
    for k in range(n):
        t, y, dy = cat.lightcurve(k)
        LombScargle(t, y, dy).power(freq, method="cython")
        pf += len(t) * len(freq)
    wall = time.perf_counter() - start
    ours_pfs = int(cat.lengths.sum()) * grid.nf / wall_ours
    return {"objects": n, "pf_per_s": pf / wall, "clperiod_over_astropy_pf_rate": ours_pfs / (pf / wall)}


def bench_cpu(repeat):
    """Catalog mode on a CPU runtime vs astropy cython (single thread) on the same host."""
    cat = synthetic_catalog(100, mean_len=165)
    grid = FrequencyGrid.from_range(0.1, 10.0, 20_000)
    info = clperiod.select_devices()[0]
    wall, _ = best_of(lambda: lombscargle(cat, grid), repeat)
    out = {"device": info.label, "n_objects": 100, "nf": grid.nf, "clperiod_s": wall}
    out["clperiod_pf_per_s"] = int(cat.lengths.sum()) * grid.nf / wall
    out["astropy_cython"] = astropy_catalog(cat, grid, wall, max_objects=20)
    out["cores"] = os.cpu_count()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", choices=["single", "catalog", "cpu"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peers", action="store_true", help="also time the peers")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    benches = {
        "single": lambda: bench_single(args.repeat, args.peers),
        "catalog": lambda: bench_catalog(args.repeat, peers=args.peers),
        "cpu": lambda: bench_cpu(args.repeat),
    }
    run_report("bench_lombscargle.py", args.workloads, lambda name: benches[name](), args.out)

if __name__ == "__main__":
    main()
