"""SuperSmoother benchmarks: clperiod against its peers in the same process.

Workloads (issue #3):

* ``stripe82`` -- the 136 Stripe 82 RR Lyrae, f in [0.1, 10) d^-1,
  N_f = 330,000, alpha = 9, both variants, fp64 and fp32, best periods only
  (end to end), the share of each stage (``profile=True``: fold/sort, gather,
  smooth, chi^2, peak reduction), and the fp32/fp64 best-period agreement.
* ``single``   -- one object, 8205 (3554 points with errors),
  N_f = 5x10^5 in [0.5, 24) d^-1, both variants: end-to-end time and the
  device-memory high-water mark (planned, and the driver's figure from
  ``nvidia-smi`` when present).
* ``cpu``      -- on a CPU runtime: Stripe 82 stars on a reduced grid against
  the vectorised NumPy search of ``bench/numpy_supersmoother.py`` and against
  the ``supersmoother`` package (jakevdp) used as a period search, on the
  same cores.

Prints one JSON document (and writes it with ``--out``). Rates are
point-frequency evaluations per second (pf/s).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time

import numpy as np

import clperiod
from clperiod import FrequencyGrid, supersmoother
from clperiod.io import load_example

from harness import best_of, run_report

VARIANTS = ("original", "single_pass")


def stage_shares(timings: dict) -> dict:
    """Fraction of the profiled stage time spent in each stage."""
    stages = {k: v for k, v in timings.items() if k.endswith("_s") and k != "total_s"}
    total = sum(stages.values())
    return {k[:-2]: v / total for k, v in stages.items()} | {"stages_s": total}


class GpuMemoryPoll:
    """Highest ``nvidia-smi`` memory.used (MiB) while the block runs, or None."""

    def __init__(self, interval=0.02):
        self.interval, self.peak, self._stop = interval, None, threading.Event()

    def _poll(self):
        while not self._stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                                      "--format=csv,noheader,nounits"], capture_output=True,
                                     text=True, timeout=5).stdout.split()
                used = max(int(v) for v in out)
                self.peak = used if self.peak is None else max(self.peak, used)
            except (OSError, ValueError, subprocess.SubprocessError):
                return
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def bench_stripe82(repeat, nf=330_000):
    cat = load_example("stripe82")
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    out = {"n_objects": cat.n_objects, "n_points": int(cat.lengths.sum()), "nf": grid.nf,
           "alpha": 9.0, "device": clperiod.select_devices()[0].label}
    for variant in VARIANTS:
        periods = {}
        for precision in ("fp64", "fp32"):
            def run():
                return supersmoother(cat, grid, variant=variant, precision=precision)
            wall, result = best_of(run, repeat)
            periods[precision] = result.period
            profiled = supersmoother(cat, grid, variant=variant, precision=precision,
                                     profile=True)
            entry = {"end_to_end_s": wall,
                     "pf_per_s": out["n_points"] * grid.nf / wall,
                     "stage_shares": stage_shares(profiled.timings),
                     "device_bytes": result.device_bytes}
            if variant == "single_pass":  # the unfused path, for its stage split
                unfused = supersmoother(cat, grid, variant=variant, precision=precision,
                                        memory="global", profile=True)
                entry["global_path_s"] = unfused.timings["total_s"]
                entry["global_path_stage_shares"] = stage_shares(unfused.timings)
                entry["global_path_same_periods"] = float(np.mean(
                    unfused.period == result.period))
            out[f"{variant}_{precision}"] = entry
            print(variant, precision, json.dumps(entry, default=str), flush=True)
        out[f"{variant}_fp32_fp64_period_agreement"] = float(
            np.mean(np.isclose(periods["fp32"], periods["fp64"], rtol=1e-6)))
    return out


def bench_single(repeat, nf=500_000):
    cat = load_example("8205_errors")
    grid = FrequencyGrid.from_range(0.5, 24.0, nf)
    out = {"n_t": int(cat.lengths[0]), "nf": grid.nf,
           "device": clperiod.select_devices()[0].label}
    for variant in VARIANTS:
        for precision in ("fp64", "fp32"):
            def run():
                return supersmoother(cat, grid, variant=variant, precision=precision)
            with GpuMemoryPoll() as poll:
                wall, result = best_of(run, repeat)
            profiled = supersmoother(cat, grid, variant=variant, precision=precision,
                                     profile=True)
            entry = {"end_to_end_s": wall, "pf_per_s": out["n_t"] * grid.nf / wall,
                     "best_period": float(result.period[0]),
                     "device_bytes_planned": result.device_bytes,
                     "nvidia_smi_peak_mib": poll.peak,
                     "stage_shares": stage_shares(profiled.timings)}
            out[f"{variant}_{precision}"] = entry
            print(variant, precision, json.dumps(entry, default=str), flush=True)
    for precision in ("fp64", "fp32"):
        out[f"speedup_single_pass_vs_original_{precision}"] = (
            out[f"original_{precision}"]["end_to_end_s"]
            / out[f"single_pass_{precision}"]["end_to_end_s"])
    return out


def bench_cpu(repeat, n_objects=8, nf=2000):
    """Stripe 82 stars on a reduced grid: clperiod on the CPU runtime vs the
    vectorised NumPy search and the supersmoother package, same cores."""
    import numpy_supersmoother as peer

    cat = load_example("stripe82").subset(np.arange(n_objects))
    grid = FrequencyGrid.from_range(1.0, 3.5, nf)
    freqs = grid.frequencies()
    points = int(cat.lengths.sum())
    out = {"n_objects": n_objects, "n_points": points, "nf": nf,
           "device": clperiod.select_devices()[0].label, "cores": os.cpu_count()}
    for variant in VARIANTS:
        wall, ours = best_of(lambda: supersmoother(cat, grid, variant=variant,
                                                   periodogram=True), repeat)
        start = time.perf_counter()
        numpy_power = np.array([peer.power(*cat.lightcurve(k), freqs, variant=variant)
                                for k in range(n_objects)])
        numpy_s = time.perf_counter() - start
        out[variant] = {
            "clperiod_s": wall,
            "clperiod_pf_per_s": points * nf / wall,
            "numpy_vectorised_s": numpy_s,
            "speedup_vs_numpy": numpy_s / wall,
            "max_abs_power_difference_vs_numpy": float(np.nanmax(np.abs(numpy_power
                                                                        - ours.power))),
            "same_best_period_as_numpy": float(np.mean(
                freqs[np.argmax(numpy_power, axis=1)] == ours.frequency_best)),
        }
    try:
        out["supersmoother_package"] = jakevdp_search(cat, freqs, out)
    except ImportError:
        out["supersmoother_package"] = "not installed"
    return out


def jakevdp_search(cat, freqs, out, n_freq=200):
    """The supersmoother package as a period search (one fit per frequency),
    timed on the first ``n_freq`` frequencies and scaled to the grid."""
    from supersmoother import SuperSmoother

    sub = freqs[:n_freq]
    start = time.perf_counter()
    for k in range(cat.n_objects):
        t, y, dy = cat.lightcurve(k)
        for f in sub:
            SuperSmoother(alpha=9.0, period=1 / f).fit(t, y, dy).predict(t)
    seconds = (time.perf_counter() - start) * len(freqs) / n_freq
    return {"estimated_full_grid_s": seconds,
            "speedup_original_vs_package": seconds / out["original"]["clperiod_s"],
            "speedup_single_pass_vs_package": seconds / out["single_pass"]["clperiod_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", choices=["stripe82", "single", "cpu"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    benches = {"stripe82": bench_stripe82, "single": bench_single, "cpu": bench_cpu}
    run_report("bench_supersmoother.py", args.workloads,
               lambda name: benches[name](args.repeat), args.out)

if __name__ == "__main__":
    main()
