"""Keplerian RV model benchmark (issue #4): models per second, Ford 2009's load.

Workload ``models``: n_pl = 4 planets, n_obs = 256 observations (one
instrument, BJD time stamps over 3000 d), ``--n-models`` random models
(P log-uniform in [1, 1e4] d, e in [0, 0.9]). For each precision, layout and
observation memory it reports

* ``kernel_s``: the kernels alone (parameters already on the device);
* ``end_to_end_s``: :class:`clperiod.kepler.rvmodel.ModelEvaluator` called with host
  parameters (upload, kernels, download of the per-model chi^2), and the
  ``transfer_share`` = 1 - kernel / end to end;
* ``models_per_s`` (end to end) and ``solves_per_s`` (kernel);
* ``ops_fraction``: estimated arithmetic throughput (operations per Kepler
  solve x solves/s, from the measured mean iteration count; an FMA is one
  operation) over the device's peak instruction rate (``--peak-fp32`` /
  ``--peak-fp64``, operations/s: 33.5e12 / 16.7e12 on the H100 SXM);
* ``max_rel_vs_fp64``: chi^2 agreement with the fp64 run.

Workload ``cpu``: the same load on fewer models, against the vectorised NumPy
peer (``bench/numpy_kepler.py``) and radvel's C ``rv_drive`` on the same cores.
"""

from __future__ import annotations

import argparse

import numpy as np

from clperiod import kepler

from clperiod.kepler import rvmodel
from clperiod.engine.devices import select_devices
from clperiod.testing import random_planets

from harness import best_of, run_report

N_PLANETS, N_OBS = 4, 256
# operations (an FMA is one) per Danby iteration (sincos polynomial ~24,
# step ~20 with 3 divisions counted as 4 each) and per solve outside the loop
# (phase, velocity, Kahan sums); Markley's fixed sequence (starter with cbrt
# and sqrt, one sincos, a three-division correction) counts about the same
# as Danby's mean of 2 steps here, so one estimate serves both
OPS_PER_ITERATION, OPS_PER_SOLVE = 44, 20


def workload(n_models: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = 2456000.0 + np.sort(rng.uniform(0, 3000, N_OBS))
    sigma = rng.uniform(1, 3, N_OBS)
    params = random_planets(rng, n_models, N_PLANETS, period=(1.0, 1e4), amplitude=(1.0, 50.0),
                            e_max=0.9)
    truth = params[:1].copy()
    obs = rvmodel.Observations.build(t, np.zeros(N_OBS), sigma, t_ref=2457500.0)
    v = rvmodel.ModelEvaluator(obs, n_planets=N_PLANETS, precision="fp64").velocities(truth)[0]
    v = v + rng.normal(0, sigma)
    return t, v, sigma, params


def mean_iterations(params, t, t_ref, tol=3e-4):
    """Mean Danby iterations of the fp32 solver on a sample (host emulation)."""
    p = params[:2000]
    phase = (t[None, None, :] - t_ref) / p[..., :1] + p[..., 4:5] / (2 * np.pi)
    m = 2 * np.pi * (phase - np.rint(phase))
    e = np.broadcast_to(p[..., 2:3], m.shape)
    big_e = m + 0.85 * e * np.sign(m)
    iterations = np.zeros(m.shape)
    active = np.ones(m.shape, bool)
    for _ in range(6):
        se, ce = e * np.sin(big_e), e * np.cos(big_e)
        f, f1 = big_e - se - m, 1 - ce
        d1 = -f / f1
        d2 = -f / (f1 + 0.5 * d1 * se)
        d3 = -f / (f1 + 0.5 * d2 * se + d2 * d2 * ce / 6)
        iterations += active
        big_e = np.where(active, big_e + d3, big_e)
        active &= np.abs(d3) > tol
    return float(iterations.mean())


def kernel_time(ev, params, repeat) -> float:
    """Best time of the kernels alone, parameters already on the device."""
    slot = ev.prepare(params)

    def kernels_only():
        ev.launch(slot)
        ev.queue.finish()

    return best_of(kernels_only, repeat)[0]


def bench_models(n_models, repeat, peaks):
    info = select_devices()[0]
    t, v, sigma, params = workload(n_models)
    obs = rvmodel.Observations.build(t, v, sigma, t_ref=2457500.0)
    iterations = mean_iterations(params, t, obs.t_ref)
    ops_per_solve = iterations * OPS_PER_ITERATION + OPS_PER_SOLVE
    out = {"device": info.label, "n_models": n_models, "n_planets": N_PLANETS, "n_obs": N_OBS,
           "mean_iterations": iterations, "ops_per_solve_estimate": ops_per_solve}
    reference = None
    for precision in ("fp64", "mixed", "fp32"):
        for layout in ("fused", "split"):
            for memory in ("constant", "local", "global"):
                ev = rvmodel.ModelEvaluator(obs, n_planets=N_PLANETS, precision=precision,
                                            layout=layout, memory=memory)
                kernel_s = kernel_time(ev, params, repeat)
                wall, result = best_of(lambda: ev(params), repeat)
                chi2 = result["statistic"]
                if reference is None:
                    reference = chi2
                solves = n_models * N_PLANETS * N_OBS / kernel_s
                peak = peaks["fp64" if precision == "fp64" else "fp32"]
                entry = {
                    "kernel_s": kernel_s, "end_to_end_s": wall,
                    "transfer_share": 1 - kernel_s / wall,
                    "models_per_s": n_models / wall, "kernel_models_per_s": n_models / kernel_s,
                    "solves_per_s": solves,
                    "max_rel_vs_fp64": float(np.max(np.abs(chi2 / reference - 1))),
                    "median_rel_vs_fp64": float(np.median(np.abs(chi2 / reference - 1))),
                }
                if peak:
                    entry["ops_fraction"] = solves * ops_per_solve / peak
                out[f"{precision}/{layout}/{memory}"] = entry
    # parameters already page-locked (clperiod.kepler.empty_params): no host copy
    pinned = kepler.empty_params(n_models, N_PLANETS)
    pinned[:] = params
    for precision in ("fp64", "mixed"):
        ev = rvmodel.ModelEvaluator(obs, n_planets=N_PLANETS, precision=precision)
        kernel_s = kernel_time(ev, pinned, repeat)
        wall, _ = best_of(lambda: ev(pinned), repeat)
        out[f"{precision}/pinned_params"] = {
            "kernel_s": kernel_s, "end_to_end_s": wall, "transfer_share": 1 - kernel_s / wall,
            "models_per_s": n_models / wall}
    return out


def bench_layouts(repeat):
    """Kernel time of fused vs split by model count (mixed precision)."""
    t, v, sigma, params = workload(1 << 18)
    obs = rvmodel.Observations.build(t, v, sigma, t_ref=2457500.0)
    out = {"device": select_devices()[0].label}
    for n in (128, 1024, 8192, 32768, 131072, 262144):
        row = {}
        for layout in ("fused", "split"):
            ev = rvmodel.ModelEvaluator(obs, n_planets=N_PLANETS, precision="mixed", layout=layout)
            row[layout] = kernel_time(ev, params[:n], repeat)
        row["auto"] = rvmodel.plan(select_devices()[0], N_OBS, 1, "mixed").layout_for(n)
        out[str(n)] = row
    return out


def bench_public(n_models, repeat):
    """End to end through clperiod.kepler.chi2 (validation, planning, copies)."""
    t, v, sigma, params = workload(n_models)
    pinned = kepler.empty_params(n_models, N_PLANETS)
    pinned[:] = params
    out = {}
    for precision in ("mixed", "fp64"):
        for name, p in (("numpy_params", params), ("pinned_params", pinned)):
            wall, _ = best_of(lambda: kepler.chi2(t, v, sigma, p, t_ref=2457500.0,
                                                  precision=precision), repeat)
            out[f"{precision}/{name}"] = {"s": wall, "models_per_s": n_models / wall}
    return out


def bench_cpu(n_models, repeat):
    from numpy_kepler import chi2_numpy, radvel_chi2

    info = select_devices()[0]
    t, v, sigma, params = workload(n_models)
    t_ref = 2457500.0
    obs = rvmodel.Observations.build(t, v, sigma, t_ref=t_ref)
    out = {"device": info.label, "n_models": n_models}
    for precision in ("fp64", "mixed"):
        ev = rvmodel.ModelEvaluator(obs, n_planets=N_PLANETS, precision=precision)
        wall, _ = best_of(lambda: ev(params), repeat)
        out[precision] = {"end_to_end_s": wall, "models_per_s": n_models / wall}
    numpy_s, _ = best_of(lambda: chi2_numpy(t, v, sigma, params, t_ref), 1)
    out["numpy"] = {"s": numpy_s, "models_per_s": n_models / numpy_s}
    radvel = radvel_chi2()
    if radvel is not None:
        n_peer = max(1, n_models // 10)
        radvel_s, _ = best_of(lambda: radvel(t, v, sigma, params[:n_peer], t_ref), 1)
        out["radvel_c"] = {"models_per_s": n_peer / radvel_s, "models_timed": n_peer}
    for precision in ("fp64", "mixed"):
        rate = out[precision]["models_per_s"]
        out[precision]["speedup_vs_numpy"] = rate / out["numpy"]["models_per_s"]
        if "radvel_c" in out:
            out[precision]["speedup_vs_radvel"] = rate / out["radvel_c"]["models_per_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=["models"], choices=["models", "layouts", "public", "cpu"])
    parser.add_argument("--n-models", type=int, default=1 << 21)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peak-fp32", type=float, help="device fp32 peak, operations/s")
    parser.add_argument("--peak-fp64", type=float, help="device fp64 peak, operations/s")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    peaks = {"fp32": args.peak_fp32, "fp64": args.peak_fp64}
    runners = {"models": lambda: bench_models(args.n_models, args.repeat, peaks),
               "layouts": lambda: bench_layouts(args.repeat),
               "public": lambda: bench_public(args.n_models, args.repeat),
               "cpu": lambda: bench_cpu(args.n_models, args.repeat)}
    run_report("bench_rv.py", args.workloads, lambda name: runners[name](), args.out)


if __name__ == "__main__":
    main()
