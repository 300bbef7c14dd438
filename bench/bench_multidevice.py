"""Multi-device scaling (issue #6): one catalog on one device, then on several.

Workloads:

* ``lombscargle``: the foundation issue's catalog (1000 objects, log-normal
  lengths, mean ~165 points; ``--nf`` frequencies, default 2x10^5) repeated
  ``--copies`` times (default 4) so that each device gets enough batches, fp64,
  best period and top-3 peaks;
* ``supersmoother``: the bundled SDSS Stripe 82 catalog (136 RR Lyrae)
  repeated ``--copies`` times, 3.3x10^5 frequencies (``--nf-ss``), fp32,
  variant ``original``.

For each it times (best of ``--repeat``, warm) the run on the first selected
device and on all selected devices (``CLPERIOD_DEVICE``, e.g. ``nvidia``),
reports the speed-up, and checks that the results are identical object by
object (best frequency, power, top-k and status).
"""

from __future__ import annotations

import argparse

import numpy as np

import clperiod
from clperiod import Catalog, FrequencyGrid, lombscargle, supersmoother
from clperiod.io import load_example

from bench_lombscargle import synthetic_catalog
from harness import best_of, run_report


def repeated(cat: Catalog, copies: int) -> Catalog:
    """``copies`` copies of a catalog, with ids made unique."""
    lengths = np.tile(cat.lengths, copies)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return Catalog.from_offsets(np.arange(cat.n_objects * copies), offsets,
                                np.tile(cat.t, copies), np.tile(cat.y, copies),
                                None if cat.dy is None else np.tile(cat.dy, copies))


def identical(a, b) -> bool:
    """Same per-object results (NaN equal to NaN)."""
    return all(np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True)
               for name in ("frequency_best", "power_best", "top_k_frequency", "top_k_power",
                            "status"))


def scaling(run, cat: Catalog, nf: int, repeat: int) -> dict:
    devices = clperiod.select_devices()
    one, result_one = best_of(lambda: run(devices[:1]), repeat)
    many, result_many = best_of(lambda: run(devices), repeat)
    return {"devices": [d.label for d in devices], "n_objects": cat.n_objects,
            "n_points": int(cat.lengths.sum()), "nf": nf,
            "one_device_s": one, "all_devices_s": many, "speedup": one / many,
            "pf_per_s_all": int(cat.lengths.sum()) * nf / many,
            "identical_results": identical(result_one, result_many)}


def bench_lombscargle(repeat: int, copies: int, nf: int) -> dict:
    cat = repeated(synthetic_catalog(1000), copies)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    return scaling(lambda devices: lombscargle(cat, grid, top_k=3, device=devices),
                   cat, nf, repeat)


def bench_supersmoother(repeat: int, copies: int, nf: int) -> dict:
    cat = repeated(load_example("stripe82"), copies)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    return scaling(lambda devices: supersmoother(cat, grid, precision="fp32", top_k=3,
                                                 device=devices), cat, nf, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help="lombscargle, supersmoother (default: both)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--nf-ss", type=int, default=330_000)
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    runners = {"lombscargle": lambda: bench_lombscargle(args.repeat, args.copies, args.nf),
               "supersmoother": lambda: bench_supersmoother(args.repeat, args.copies, args.nf_ss)}
    unknown = set(args.workloads) - set(runners)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(runners)}")
    run_report("bench_multidevice.py", args.workloads or list(runners), lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
