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
* ``nufft_page_locked``: the same catalog's :meth:`clperiod.Catalog.page_locked`
  copy (page-locked through the first device: no staging copy of the columns);
* ``multiband``, ``mhaov``, ``pdm``: ``4000 x --copies`` ZTF-like g+r objects of
  ``bench_multiband.py`` on its 10^5 frequencies (fp32; MHAOV with 2 harmonics);
* ``bls``: ``8 x --copies`` TESS-like light curves of ``bench_bls.py`` (10^5 periods,
  10 durations);
* ``singlepulse``: :func:`clperiod.singlepulse.search` of ``--n-dm`` DM trials (default
  6000) of ``--n-t`` samples (default 2^18) at 64 us, as ``bench_singlepulse.py`` (widths
  up to 32), from a host array of Gaussian noise with injected pulses.

For each it times (best of ``--repeat``, warm) the run on the first selected
device and on all selected devices (``CLPERIOD_DEVICE``, e.g. ``nvidia``),
reports the speed-up, and checks that the results are identical object by
object (best frequency, power, top-k and status), model by model (chi^2) or
candidate by candidate (single pulse, with the per-row statistics and noise).

``--timeline`` adds one more run of each (after the timed ones) in which every
device thread's items (``clperiod.engine.scheduler.tracing``) and, inside them,
the uploads, waits for the device and downloads (pyopencl's ``enqueue_copy``,
``CommandQueue.finish``, ``Event.wait`` and ``wait_for_events``, wrapped for that
run; a blocking download first waits for the queue, so the wait and the copy are
told apart) and the host preparation (:data:`HOST_STEPS`: the searches'
``_prepare``, Kepler's staging copy) are recorded, in seconds from the call's
start: the JSON gets, per run, each thread's spans and totals (``host_s``: item
time outside the recorded spans) and the serial parts (``serial_s``: no item
running; before the first item and after the last).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import threading
import time

import numpy as np
import pyopencl as cl

import clperiod
from clperiod import Catalog, FrequencyGrid, kepler, lombscargle, singlepulse, supersmoother
from clperiod.engine.scheduler import tracing
from clperiod.io import load_example, load_rv_example
from clperiod.testing import inject_pulse

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


class Timeline:
    """One run's events per thread, in seconds from ``origin``: the calls and
    items of ``run_on_devices`` (as the scheduler's tracer), the pyopencl
    transfers and waits (:func:`recorded_pyopencl`) and the host steps
    (:func:`recorded_host_steps`)."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self.calls: list[dict] = []
        self.items: list[dict] = []
        self.spans: list[tuple[str, str, float, float]] = []  # thread, kind, start, stop

    def call(self, n_items, n_devices, start, stop) -> None:
        self.calls.append({"thread": threading.current_thread().name, "n_items": n_items,
                           "n_devices": n_devices, "start": _us(start - self.origin),
                           "stop": _us(stop - self.origin)})

    def item(self, device, index, start, stop) -> None:
        self.items.append({"thread": threading.current_thread().name, "device": device.label,
                           "index": index, "start": start - self.origin,
                           "stop": stop - self.origin})

    @contextlib.contextmanager
    def span(self, kind: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.spans.append((threading.current_thread().name, kind, start - self.origin,
                               time.perf_counter() - self.origin))

    def summary(self, wall: float) -> dict:
        """Per thread its items, spans and totals; the time no item ran
        (``serial_s``), before the first and after the last (None where no
        item ran: a one-device Kepler call goes straight to its evaluator)."""
        threads: dict[str, dict] = {}
        for item in self.items:
            entry = threads.setdefault(item["thread"], {"device": item["device"], "items": []})
            entry["items"].append((item["index"], item["start"], item["stop"]))
        for name, kind, start, stop in self.spans:
            threads.setdefault(name, {"device": None, "items": []}).setdefault(
                "spans", []).append((kind, start, stop))
        out = {name: _thread_summary(entry) for name, entry in threads.items()}
        intervals = sorted((i["start"], i["stop"]) for i in self.items)
        covered, reach = 0.0, 0.0
        for start, stop in intervals:
            covered += max(0.0, stop - max(start, reach))
            reach = max(reach, stop)
        serial = {"serial_s": None, "serial_before_s": None, "serial_after_s": None}
        if intervals:  # else the call did not go through the scheduler
            serial = {"serial_s": _us(wall - covered), "serial_before_s": _us(intervals[0][0]),
                      "serial_after_s": _us(wall - reach)}
        return {"wall_s": _us(wall), "calls": self.calls, **serial, "threads": out}


def _thread_summary(entry: dict) -> dict:
    """Totals of one thread: item time, and per kind the spans inside items;
    ``host_s`` the item time outside the spans."""
    items, spans = entry["items"], entry.get("spans", [])
    inside: dict[str, float] = {}
    outside: dict[str, float] = {}
    for kind, start, stop in spans:
        within = any(lo <= start and stop <= hi for _, lo, hi in items)
        totals = inside if within else outside
        totals[kind] = totals.get(kind, 0.0) + stop - start
    busy = sum(hi - lo for _, lo, hi in items)
    return {"device": entry["device"], "items_s": _us(busy),
            "in_items_s": {k: _us(v) for k, v in sorted(inside.items())},
            "host_s": _us(busy - sum(inside.values())),
            "outside_items_s": {k: _us(v) for k, v in sorted(outside.items())},
            "items": [[index, _us(lo), _us(hi)] for index, lo, hi in items],
            "spans": [[kind, _us(lo), _us(hi)] for kind, lo, hi in spans]}


def _us(seconds: float) -> float:
    return round(seconds, 6)


@contextlib.contextmanager
def recorded_pyopencl(timeline: Timeline):
    """Record pyopencl's copies and waits in ``timeline`` within the block: a
    copy to a buffer is an upload; a blocking copy from one first waits for its
    queue (a wait), then downloads."""
    copy, finish, wait, wait_for = (cl.enqueue_copy, cl.CommandQueue.finish, cl.Event.wait,
                                    cl.wait_for_events)

    def enqueue_copy(queue, dest, src, **kwargs):
        to_device = isinstance(dest, cl.MemoryObjectHolder)
        if isinstance(src, cl.MemoryObjectHolder) and not to_device:
            if kwargs.get("is_blocking", True):
                with timeline.span("wait"):
                    finish(queue)
            with timeline.span("download"):
                return copy(queue, dest, src, **kwargs)
        with timeline.span("upload" if to_device else "copy"):
            return copy(queue, dest, src, **kwargs)

    def timed(function):
        def waiting(*args, **kwargs):
            with timeline.span("wait"):
                return function(*args, **kwargs)
        return waiting

    cl.enqueue_copy = enqueue_copy
    cl.CommandQueue.finish, cl.Event.wait, cl.wait_for_events = (timed(finish), timed(wait),
                                                                 timed(wait_for))
    try:
        yield
    finally:
        cl.enqueue_copy = copy
        cl.CommandQueue.finish, cl.Event.wait, cl.wait_for_events = finish, wait, wait_for


#: Host functions recorded as spans of their kind: (kind, module, function name).
HOST_STEPS = (
    ("prepare", "clperiod.periodograms.multiband", "_prepare"),
    ("prepare", "clperiod.periodograms.mhaov", "_prepare"),
    ("prepare", "clperiod.periodograms.phase_statistics", "_prepare"),
    ("prepare", "clperiod.periodograms.bls", "_prepare"),
    ("prepare", "clperiod.periodograms.bls", "_astropy_copies"),
    ("stage", "clperiod.kepler.rvmodel", "parallel_copy"),
)


@contextlib.contextmanager
def recorded_host_steps(timeline: Timeline):
    """Record the calls of :data:`HOST_STEPS` in ``timeline`` within the block."""
    originals = []
    for kind, name, function in HOST_STEPS:
        module = importlib.import_module(name)
        original = getattr(module, function)
        originals.append((module, function, original))

        def step(*args, __kind=kind, __original=original, **kwargs):
            with timeline.span(__kind):
                return __original(*args, **kwargs)

        setattr(module, function, step)
    try:
        yield
    finally:
        for module, function, original in originals:
            setattr(module, function, original)


def traced(run) -> dict:
    """One run of ``run()`` with its :class:`Timeline` summary."""
    timeline = Timeline()
    with recorded_pyopencl(timeline), recorded_host_steps(timeline), tracing(timeline):
        timeline.origin = time.perf_counter()
        run()
        wall = time.perf_counter() - timeline.origin
    return timeline.summary(wall)


def compare(run, same, repeat: int, timeline: bool) -> dict:
    """Best-of times of ``run(devices)`` on the first selected device and on
    all, the speed-up, whether ``same(one, all)`` and, with ``timeline``, a
    traced run of each."""
    devices = clperiod.select_devices()
    one, result_one = best_of(lambda: run(devices[:1]), repeat)
    many, result_many = best_of(lambda: run(devices), repeat)
    out = {"devices": [d.label for d in devices], "one_device_s": one, "all_devices_s": many,
           "speedup": one / many, "identical_results": bool(same(result_one, result_many))}
    if timeline:
        out["timeline"] = {"one_device": traced(lambda: run(devices[:1])),
                           "all_devices": traced(lambda: run(devices))}
    return out


def scaling(run, cat: Catalog, nf: int, repeat: int, timeline: bool) -> dict:
    out = {"n_objects": cat.n_objects, "n_points": int(cat.lengths.sum()), "nf": nf,
           **compare(run, identical, repeat, timeline)}
    out["pf_per_s_all"] = out["n_points"] * nf / out["all_devices_s"]
    return out


def bench_lombscargle(repeat: int, copies: int, nf: int, timeline: bool) -> dict:
    cat = repeated(synthetic_catalog(1000), copies)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    return scaling(lambda devices: lombscargle(cat, grid, top_k=3, device=devices),
                   cat, nf, repeat, timeline)


def bench_supersmoother(repeat: int, copies: int, nf: int, timeline: bool) -> dict:
    cat = repeated(load_example("stripe82"), copies)
    grid = FrequencyGrid.from_range(0.1, 10.0, nf)
    return scaling(lambda devices: supersmoother(cat, grid, precision="fp32", top_k=3,
                                                 device=devices), cat, nf, repeat, timeline)


def bench_kepler(repeat: int, n_models: int, timeline: bool, pinned: bool = False) -> dict:
    data = load_rv_example("hd164922")
    rng = np.random.default_rng(0)
    params = kepler.empty_params(n_models, 1) if pinned else np.empty((n_models, 1, 5))
    params[..., 0] = np.exp(rng.uniform(np.log(2.0), np.log(5000.0), (n_models, 1)))
    params[..., 1] = rng.uniform(1.0, 10.0, (n_models, 1))
    params[..., 2] = rng.uniform(0.0, 0.9, (n_models, 1))
    params[..., 3:] = rng.uniform(0.0, 2 * np.pi, (n_models, 1, 2))
    t_ref = 0.5 * (data.t.min() + data.t.max())

    def run(selection):
        return kepler.chi2(data.t, data.v, data.sigma, params, t_ref=t_ref,
                           instrument=data.instrument, device=selection)

    out = {"n_models": n_models, "n_planets": 1, "n_obs": int(data.t.size),
           "precision": "mixed", "page_locked_params": pinned,
           **compare(run, lambda a, b: np.array_equal(a, b, equal_nan=True), repeat, timeline)}
    out["models_per_s_all"] = n_models / out["all_devices_s"]
    return out


def _ztf_like_bands(copies: int) -> Catalog:
    """``bench_multiband.py``'s ZTF-like g+r catalog, 4000 objects times ``copies``."""
    from bench_multiband import ztf_like

    ids, t, y, dy, band, _ = ztf_like(4000 * copies)
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def bench_nufft(repeat: int, copies: int, timeline: bool, page_locked: bool = False) -> dict:
    """The NUFFT path on TESS-like light curves (20,000 points, 10^5 frequencies),
    the catalog's columns in ordinary or page-locked memory."""
    rng = np.random.default_rng(5)
    n_objects, n = 250 * copies, 20_000
    t = np.sort(rng.uniform(0, 27, (n_objects, n)), axis=1).ravel() + 59000.0
    y = np.sin(2 * np.pi * t / 3.1) + rng.normal(0, 1, t.size)
    cat = Catalog.from_offsets(np.arange(n_objects), np.arange(n_objects + 1) * n, t, y,
                               np.ones_like(t))
    grid = FrequencyGrid(0.05, 1 / (5 * 27), 100_000)
    if page_locked:
        cat = cat.page_locked()
    return scaling(lambda devices: lombscargle(cat, grid, algorithm="nufft", device=devices),
                   cat, grid.nf, repeat, timeline)


def bench_multiband(repeat: int, copies: int, timeline: bool) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.lombscargle_multiband(
        cat, GRID, precision="fp32", device=devices), cat, GRID.nf, repeat, timeline)


def bench_mhaov(repeat: int, copies: int, timeline: bool) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.mhaov(
        cat, GRID, nharmonics=2, precision="fp32", device=devices), cat, GRID.nf, repeat,
        timeline)


def bench_pdm(repeat: int, copies: int, timeline: bool) -> dict:
    from bench_multiband import GRID

    cat = _ztf_like_bands(copies)
    return scaling(lambda devices: clperiod.pdm(cat, GRID, precision="fp32", device=devices),
                   cat, GRID.nf, repeat, timeline)


def bench_bls(repeat: int, copies: int, timeline: bool) -> dict:
    from bench_bls import DURATIONS, PERIODS, tess_like

    curves = [tess_like(seed=k, period=2.0 + 0.01 * k) for k in range(8 * copies)]
    cat = Catalog.from_lightcurves(curves)
    return scaling(lambda devices: clperiod.bls(cat, PERIODS, DURATIONS, device=devices),
                   cat, PERIODS.size, repeat, timeline)


TSAMP = 64e-6


def pulse_data(n_dm: int, n_t: int) -> np.ndarray:
    """Unit Gaussian noise (float32, host) with the three pulses of ``bench_singlepulse.py``."""
    data = np.random.default_rng(0).standard_normal((n_dm, n_t), dtype=np.float32)
    for row, start, width, amp in ((n_dm // 3, n_t // 5, 8, 4.0), (n_dm // 2, n_t // 2, 600, 0.5),
                                   (2 * n_dm // 3, 3 * n_t // 4, 3000, 0.25)):
        inject_pulse(data, row, start, width, amp)
    return data


def same_candidates(a, b) -> bool:
    """Same candidates, per-row statistics, status and noise of every level."""
    return (np.array_equal(a, b)
            and all(np.array_equal(getattr(a.info, name), getattr(b.info, name))
                    for name in ("mean", "std", "row_status", "masked"))
            and all(np.array_equal(a.info.noise[k], b.info.noise[k]) for k in a.info.noise))


def bench_singlepulse(repeat: int, n_dm: int, n_t: int, timeline: bool) -> dict:
    data = pulse_data(n_dm, n_t)
    dm = np.linspace(0, 3000, n_dm)
    out = {"n_dm": n_dm, "n_t": n_t, "tsamp": TSAMP, "max_width": 32, "threshold": 7.0,
           "host_bytes": data.nbytes,
           **compare(lambda devices: singlepulse.search(data, dm, TSAMP, max_width=32,
                                                        threshold=7.0, device=devices),
                     same_candidates, repeat, timeline)}
    out["real_time_factor_all"] = n_t * TSAMP / out["all_devices_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*",
                        help="lombscargle, supersmoother, kepler, kepler_pinned, nufft, "
                        "nufft_page_locked, "
                        "multiband, mhaov, pdm, bls, singlepulse (default: all)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--nf", type=int, default=200_000)
    parser.add_argument("--nf-ss", type=int, default=330_000)
    parser.add_argument("--n-models", type=int, default=10_000_000, help="kepler models")
    parser.add_argument("--n-dm", type=int, default=6000, help="single-pulse DM trials")
    parser.add_argument("--n-t", type=int, default=1 << 18, help="single-pulse samples")
    parser.add_argument("--timeline", action="store_true",
                        help="add a traced run of each: every device thread's timeline")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    repeat, copies, traced_too = args.repeat, args.copies, args.timeline
    runners = {
        "lombscargle": lambda: bench_lombscargle(repeat, copies, args.nf, traced_too),
        "supersmoother": lambda: bench_supersmoother(repeat, copies, args.nf_ss, traced_too),
        "kepler": lambda: bench_kepler(repeat, args.n_models, traced_too),
        "kepler_pinned": lambda: bench_kepler(repeat, args.n_models, traced_too, pinned=True),
        "nufft": lambda: bench_nufft(repeat, copies, traced_too),
        "nufft_page_locked": lambda: bench_nufft(repeat, copies, traced_too, page_locked=True),
        "multiband": lambda: bench_multiband(repeat, copies, traced_too),
        "mhaov": lambda: bench_mhaov(repeat, copies, traced_too),
        "pdm": lambda: bench_pdm(repeat, copies, traced_too),
        "bls": lambda: bench_bls(repeat, copies, traced_too),
        "singlepulse": lambda: bench_singlepulse(repeat, args.n_dm, args.n_t, traced_too),
    }
    unknown = set(args.workloads) - set(runners)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(runners)}")
    run_report("bench_multidevice.py", args.workloads or list(runners),
               lambda name: runners[name](), args.out, shown=without_spans)


def without_spans(entry: dict) -> dict:
    """``entry`` with each thread's timeline reduced to its totals (for the terminal)."""
    if "timeline" not in entry:
        return entry
    runs = {}
    for run, summary in entry["timeline"].items():
        threads = {name: {k: v for k, v in thread.items() if k not in ("items", "spans")}
                   for name, thread in summary["threads"].items()}
        runs[run] = {**{k: v for k, v in summary.items() if k != "calls"}, "threads": threads}
    return {**entry, "timeline": runs}


if __name__ == "__main__":
    main()
