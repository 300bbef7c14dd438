"""Single-pulse search benchmark (issue #5): real-time factor on an SKA-like load.

Workload ``ska``: ``--n-dm`` DM trials (default 6000) of ``--n-t`` samples at
64 us, Gaussian noise generated on the device (pyopencl.clrandom) with a few
injected pulses, searched from the device array (as after GPU de-dispersion):

* widths up to 32 (``plan="dit"``, one level), target >= 1000x real time;
* the decimation plan up to 4096 samples, target >= 300x real time.

For each it reports the wall time of :func:`clperiod.singlepulse.search`
(best of ``--repeat``, warm), its stage timings, the real-time factor
(observation span / wall time), DM-samples per second, and the bytes the
passes must read (statistics, autocovariance, boxcar and decimation passes)
over the wall time as a fraction of ``--bandwidth`` (the device's measured
peak, bytes/s).

Workload ``cpu``: a small load on the CPU device against the NumPy reference
(``tests/reference/singlepulse.py``) on the same cores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from clperiod import singlepulse
from clperiod.engine.devices import get_context, get_queue, select_devices
from clperiod.testing import inject_pulse, pulse_plane

from harness import best_of, run_report

TSAMP = 64e-6


def device_noise(n_dm: int, n_t: int, seed: int = 0):
    """Unit Gaussian noise on the device with three injected pulses."""
    import pyopencl.clrandom as clrandom

    info = select_devices()[0]
    queue = get_queue(info)
    data = clrandom.PhiloxGenerator(get_context(info), seed=seed).normal(
        queue, (n_dm, n_t), np.float32)
    for row, start, width, amp in ((n_dm // 3, n_t // 5, 8, 4.0), (n_dm // 2, n_t // 2, 600, 0.5),
                                   (2 * n_dm // 3, 3 * n_t // 4, 3000, 0.25)):
        inject_pulse(data, row, start, width, amp)
    queue.finish()
    return data


def passes_bytes(n_dm: int, n_t: int, plan) -> float:
    """Bytes the passes read and write at least: statistics (1 read),
    autocovariance and boxcar of every level (1 read each), decimation
    (read + half write per level)."""
    total = n_dm * n_t * 4.0  # statistics
    for lv in plan:
        n = n_t >> lv.level
        total += 2 * n_dm * n * 4.0 * (-(-lv.wmax // 32) if lv.level == 0 else 1)
        if lv.level:
            total += n_dm * (2 * n + n) * 4.0
    return total


def bench_ska(n_dm, n_t, repeat, bandwidth):
    info = select_devices()[0]
    data = device_noise(n_dm, n_t)
    dm = np.linspace(0, 3000, n_dm)
    span = n_t * TSAMP
    out = {"device": info.label, "n_dm": n_dm, "n_t": n_t, "tsamp": TSAMP, "span_s": span}
    for name, max_width in (("widths_32", 32), ("dit_4096", 4096)):
        wall, cands = best_of(lambda: singlepulse.search(data, dm, TSAMP, max_width=max_width,
                                                         threshold=7.0), repeat)
        moved = passes_bytes(n_dm, n_t, cands.info.plan)
        entry = {"wall_s": wall, "real_time_factor": span / wall,
                 "dm_samples_per_s": n_dm * n_t / wall, "timings": cands.info.timings,
                 "candidates": len(cands), "detections": cands.info.n_detections,
                 "bytes_min": moved, "bytes_per_s": moved / wall,
                 "top": cands[np.argsort(cands["snr"])[::-1][:3]].tolist()}
        if bandwidth:
            entry["fraction_of_bandwidth"] = moved / wall / bandwidth
        out[name] = entry
    return out


def bench_cpu(n_dm, n_t, repeat):
    from reference import singlepulse as reference

    x = pulse_plane(n_dm, n_t, seed=0)
    dm = np.arange(n_dm, dtype=float)
    out = {"device": select_devices()[0].label, "n_dm": n_dm, "n_t": n_t}
    for name, max_width in (("widths_32", 32), ("dit_4096", 4096)):
        wall, _ = best_of(lambda: singlepulse.search(x, dm, TSAMP, max_width=max_width,
                                                     threshold=6.0), repeat)
        start = time.perf_counter()
        reference.search(x, dm, TSAMP, max_width=max_width, threshold=6.0)
        numpy_s = time.perf_counter() - start
        out[name] = {"clperiod_s": wall, "numpy_reference_s": numpy_s,
                     "speedup_vs_numpy": numpy_s / wall,
                     "dm_samples_per_s": n_dm * n_t / wall}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=["ska"], choices=["ska", "cpu"])
    parser.add_argument("--n-dm", type=int, default=6000)
    parser.add_argument("--n-t", type=int, default=1 << 18)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bandwidth", type=float, help="device peak bandwidth, bytes/s")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    runners = {"ska": lambda: bench_ska(args.n_dm, args.n_t, args.repeat, args.bandwidth),
               "cpu": lambda: bench_cpu(args.n_dm, args.n_t, args.repeat)}
    run_report("bench_singlepulse.py", args.workloads, lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
