"""Multi-device scaling (issue #6): one catalog on one device, then on several.

Workloads:

* ``lombscargle``: the foundation issue's catalog (1000 objects, log-normal
  lengths, mean ~165 points; ``--nf`` frequencies, default 2x10^5) repeated
  ``--copies`` times (default 4) so that each device gets enough batches, fp64,
  best period and top-3 peaks;
* ``supersmoother``: the bundled SDSS Stripe 82 catalog (136 RR Lyrae)
  repeated ``--copies`` times, 3.3x10^5 frequencies (``--nf-ss``), fp32,
  variant ``original``;
* ``kepler``: :func:`clperiod.kepler.chi2` of ``--n-models`` (default 10^7)
  random one-planet models on the bundled HD 164922 velocities (401, three
  instruments), precision ``mixed``, parameters in an ordinary NumPy array;
* ``kepler_pinned``: the same with the parameters in
  :func:`clperiod.kepler.empty_params` (page-locked, no staging copy);
* ``nufft``: ``250 x --copies`` TESS-like light curves (20,000 points) through the
  NUFFT on 10^5 frequencies;
* ``multiband``, ``mhaov``, ``pdm``: ``4000 x --copies`` ZTF-like g+r objects of
  ``bench_multiband.py`` on its 10^5 frequencies (fp32; MHAOV with 2 harmonics);
* ``bls``: ``8 x --copies`` TESS-like light curves of ``bench_bls.py`` (10^5 periods,
  10 durations).

For each it times (best of ``--repeat``, warm) the run on the first selected
device and on all selected devices (``CLPERIOD_DEVICE``, e.g. ``nvidia``),
reports the speed-up, and checks that the results are identical object by
object (best frequency, power, top-k and status) or model by model (chi^2).
"""

from __future__ import annotations

import argparse

import numpy as np

import clperiod
from clperiod import Catalog, FrequencyGrid, kepler, lombscargle, supersmoother
from clperiod.io import load_example, load_rv_example

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


def bench_kepler(repeat: int, n_models: int, pinned: bool = False) -> dict:
    data = load_rv_example("hd164922")
    rng = np.random.default_rng(0)
    params = kepler.empty_params(n_models, 1) if pinned else np.empty((n_models, 1, 5))
    params[..., 0] = np.exp(rng.uniform(np.log(2.0), np.log(5000.0), (n_models, 1)))
    params[..., 1] = rng.uniform(1.0, 10.0, (n_models, 1))
    params[..., 2] = rng.uniform(0.0, 0.9, (n_models, 1))
    params[..., 3:] = rng.uniform(0.0, 2 * np.pi, (n_models, 1, 2))
    t_ref = 0.5 * (data.t.min() + data.t.max())
    devices = clperiod.select_devices()

    def run(selection):
        return kepler.chi2(data.t, data.v, data.sigma, params, t_ref=t_ref,
                           instrument=data.instrument, device=selection)

    one, chi2_one = best_of(lambda: run(devices[:1]), repeat)
    many, chi2_many = best_of(lambda: run(devices), repeat)
    return {"devices": [d.label for d in devices], "n_models": n_models, "n_planets": 1,
            "n_obs": int(data.t.size), "precision": "mixed", "page_locked_params": pinned,
            "one_device_s": one, "all_devices_s": many, "speedup": one / many,
            "models_per_s_all": n_models / many,
            "identical_results": bool(np.array_equal(chi2_one, chi2_many, equal_nan=True))}


def _ztf_like_bands(copies: int) -> Catalog:
    """``bench_multiband.py``'s ZTF-like g+r catalog, 4000 objects times ``copies``."""
    from bench_multiband import ztf_like

    ids, t, y, dy, band, _ = ztf_like(4000 * copies)
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def bench_nufft(repeat: int, copies: int) -> dict:
    """The NUFFT path on TESS-like light curves (20,000 points, 10^5 frequencies)."""
    rng = np.random.default_rng(5)
    n_objects, n = 250 * copies, 20_000
    t = np.sort(rng.uniform(0, 27, (n_objects, n)), axis=1).ravel() + 59000.0
    y = np.sin(2 * np.pi * t / 3.1) + rng.normal(0, 1, t.size)
    cat = Catalog.from_offsets(np.arange(n_objects), np.arange(n_objects + 1) * n, t, y,
                               np.ones_like(t))
    grid = FrequencyGrid(0.05, 1 / (5 * 27), 100_000)
    return scaling(lambda devices: lombscargle(cat, grid, algorithm="nufft", device=devices),
                   cat, grid.nf, repeat)


def bench_multiband(repeat: int, copies: int) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.lombscargle_multiband(
        cat, GRID, precision="fp32", device=devices), cat, GRID.nf, repeat)


def bench_mhaov(repeat: int, copies: int) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.mhaov(
        cat, GRID, nharmonics=2, precision="fp32", device=devices), cat, GRID.nf, repeat)


def bench_pdm(repeat: int, copies: int) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.pdm(cat, GRID, precision="fp32", device=devices),
                   cat, GRID.nf, repeat)


def bench_bls(repeat: int, copies: int) -> dict:
    from bench_bls import DURATIONS, PERIODS, tess_like

    curves = [tess_like(seed=k, period=2.0 + 0.01 * k) for k in range(8 * copies)]
    cat = Catalog.from_lightcurves(curves)
    return scaling(lambda devices: clperiod.bls(cat, PERIODS, DURATIONS, device=devices),
                   cat, PERIODS.size, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*",
                        help="lombscargle, supersmoother, kepler, kepler_pinned, nufft, "
                        "multiband, mhaov, pdm, bls (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--nf-ss", type=int, default=330_000)
    parser.add_argument("--n-models", type=int, default=10_000_000, help="kepler models")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    runners = {"lombscargle": lambda: bench_lombscargle(args.repeat, args.copies, args.nf),
               "supersmoother": lambda: bench_supersmoother(args.repeat, args.copies, args.nf_ss),
               "kepler": lambda: bench_kepler(args.repeat, args.n_models),
               "kepler_pinned": lambda: bench_kepler(args.repeat, args.n_models, pinned=True),
               "nufft": lambda: bench_nufft(args.repeat, args.copies),
               "multiband": lambda: bench_multiband(args.repeat, args.copies),
               "mhaov": lambda: bench_mhaov(args.repeat, args.copies),
               "pdm": lambda: bench_pdm(args.repeat, args.copies),
               "bls": lambda: bench_bls(args.repeat, args.copies)}
    unknown = set(args.workloads) - set(runners)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(runners)}")
    run_report("bench_multidevice.py", args.workloads or list(runners), lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
