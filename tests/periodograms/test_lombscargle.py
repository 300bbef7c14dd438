"""Lomb-Scargle on the OpenCL device against SciPy and astropy."""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.signal
from astropy.timeseries import LombScargle

import clperiod
from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.engine import planner as planning
from clperiod.engine import staging as staging_module
from clperiod.engine.staging import Staging
from clperiod.io import load_example
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.periodograms.inputs import Deferred, reference_times
from clperiod.testing import sinusoid_lightcurve

NORMALIZATIONS = ["standard", "model", "log", "psd"]


def simulated(rng, n=200, baseline=80.0, epoch=58000.0, period=2.7, dy=True):
    return sinusoid_lightcurve(rng, n, period, baseline=baseline, epoch=epoch, mean=12.0,
                               amplitude=0.4, phase=0.3, noise=0.2,
                               dy=(0.1, 0.3) if dy else None)


def astropy_power(t, y, dy, freq, **kwargs):
    """astropy's exact 'cython' GLS, fed times relative to the first one.

    The periodogram is invariant to a time shift; shifting removes the phase
    rounding error (~1e-16 * f * t) that raw MJD/JD times cause in astropy's
    own evaluation, so the reference is accurate to ~1e-13.
    """
    return LombScargle(t - t[0], y, dy, **kwargs).power(freq, method="cython")


def peaks_reference(power, k):
    """Indices of the k highest local maxima (first of equal maxima)."""
    p = np.where(np.isnan(power), -np.inf, power)
    left = np.concatenate([[-np.inf], p[:-1]])
    right = np.concatenate([p[1:], [-np.inf]])
    idx = np.flatnonzero((p > left) & (p >= right))
    order = np.lexsort((idx, -p[idx]))
    return idx[order][:k]


def assert_rel(actual, expected, rtol):
    rel = np.abs(actual - expected) / np.abs(expected)
    assert np.nanmax(rel) <= rtol, f"max relative error {np.nanmax(rel):.3g} > {rtol:.1g}"


# {{{ exactness against the references


@pytest.mark.slow
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("fit_mean,center_data", [(True, True), (False, True), (False, False)])
@pytest.mark.parametrize("memory", ["local", "global"])
def test_generalized_fp64_matches_astropy(rng, normalization, fit_mean, center_data, memory):
    t, y, dy = simulated(rng)
    grid = FrequencyGrid.from_step(0.005, 0.0031, 3001)
    result = lombscargle(
        t, grid, y, dy, normalization=normalization, fit_mean=fit_mean,
        center_data=center_data, periodogram=True, memory=memory,
    )
    expected = astropy_power(
        t, y, dy, grid.frequencies(), fit_mean=fit_mean, center_data=center_data,
        normalization=normalization,
    )
    assert_rel(result.power[0], expected, 1e-9)
    assert result.frequency_best[0] == grid.frequencies()[np.argmax(expected)]


@pytest.mark.parametrize("memory", ["local", "global"])
def test_standard_fp64_matches_scipy(rng, memory):
    t, y, _ = simulated(rng, n=150)
    y = y - y.mean()
    grid = FrequencyGrid.from_range(0.02, 6.0, 4000)
    omega = 2 * np.pi * grid.frequencies()
    raw = lombscargle(t, grid, y, method="standard", normalization=None, periodogram=True,
                      memory=memory)
    assert_rel(raw.power[0], scipy.signal.lombscargle(t - t[0], y, omega), 1e-9)
    normed = lombscargle(t, grid, y, method="standard", periodogram=True, memory=memory)
    expected = scipy.signal.lombscargle(t - t[0], y, omega, normalize=True)
    assert_rel(normed.power[0], expected, 1e-9)


def test_real_light_curve_fp64_matches_astropy():
    cat = load_example("8205_errors")
    t, y, dy = cat.lightcurve(0)
    grid = FrequencyGrid.from_range(0.5, 24.0, 1500)
    result = lombscargle(cat, grid, periodogram=True)
    assert_rel(result.power[0], astropy_power(t, y, dy, grid.frequencies()), 1e-9)


def test_real_light_curve_standard_matches_scipy():
    t, y, _ = load_example("ida").lightcurve(0)
    grid = FrequencyGrid.from_range(1.0, 30.0, 5000)
    result = lombscargle(t, grid, y, method="standard", normalization=None, periodogram=True)
    expected = scipy.signal.lombscargle(t - t[0], y, 2 * np.pi * grid.frequencies())
    assert_rel(result.power[0], expected, 1e-9)


@pytest.mark.parametrize("memory", ["local", "global"])
def test_fp32_power_tolerance_and_best_frequency(rng, memory):
    t, y, dy = simulated(rng, n=400, epoch=2_458_000.0)  # raw JD epochs
    grid = FrequencyGrid.from_step(0.01, 0.0011, 6000)
    result = lombscargle(t, grid, y, dy, precision="fp32", periodogram=True, memory=memory)
    expected = astropy_power(t, y, dy, grid.frequencies())
    assert result.power.dtype == np.float32
    # documented fp32 tolerance: 2e-5 absolute on the standard normalization
    assert np.max(np.abs(result.power[0] - expected)) < 2e-5
    assert result.frequency_best[0] == grid.frequencies()[np.argmax(expected)]


@pytest.mark.slow
def test_fp32_long_light_curve_compensated(rng, monkeypatch):
    t, y, dy = simulated(rng, n=20_000, baseline=1500.0, epoch=2_458_000.0, period=0.61)
    grid = FrequencyGrid.from_range(0.1, 5.0, 1000)
    expected = astropy_power(t, y, dy, grid.frequencies())
    errors = {}
    for threshold in (10**9, 1000):  # plain fp32 sums, then Kahan-compensated blocks
        monkeypatch.setattr(LS_MODULE, "COMPENSATE_ABOVE", threshold)
        for memory in ("local", "global"):
            result = lombscargle(t, grid, y, dy, precision="fp32", periodogram=True, memory=memory)
            errors[threshold, memory] = np.max(np.abs(result.power[0] - expected))
            assert result.frequency_best[0] == grid.frequencies()[np.argmax(expected)]
    for memory in ("local", "global"):
        assert errors[1000, memory] < 1e-8
        assert errors[1000, memory] < errors[10**9, memory] / 5


def test_fp32_where_phases_bunch_together():
    """Documented fp32 bound: standard power within 2e-5 of fp64 where f T >= 0.1.

    Stripe 82 (SDSS, MJD times) at its lowest autofrequencies and at the
    1/day alias, where the phases of all observations of a star lie close
    together: the fit is nearly singular and amplifies rounding (plain fp32
    sums and Chebyshev steps gave 7e-4 and 7.5e-5 there)."""
    cat = load_example("stripe82")
    grids = [FrequencyGrid.auto(cat), FrequencyGrid.from_range(0.95, 1.05, 1000)]
    for grid in grids:
        fp64 = lombscargle(cat, grid, periodogram=True)
        for memory in ("local", "global"):
            fp32 = lombscargle(cat, grid, periodogram=True, precision="fp32", memory=memory)
            assert np.max(np.abs(fp32.power - fp64.power)) < 2e-5
    for star in (65, 128):  # the worst alias peaks on the star's own grid
        t, y, dy = cat.lightcurve(star)
        grid = FrequencyGrid.auto(t, maximum_frequency=3.0)
        assert grid.fmin * np.ptp(t) == pytest.approx(0.1)
        fp64 = lombscargle(t, grid, y, dy, periodogram=True)
        fp32 = lombscargle(t, grid, y, dy, periodogram=True, precision="fp32")
        assert np.max(np.abs(fp32.power - fp64.power)) < 2e-5


@pytest.mark.slow
def test_fp32_lowest_bins_below_the_lowest_autofrequency():
    """Below f T = 0.1 the normal equations are ill conditioned (the fp32 error
    grew like 1e-7 / (f T)^2): those bins take exact least-squares powers, so
    fp32 stays within its tolerance of fp64 there (issue 22)."""
    cat = load_example("stripe82")
    f_times_t = 0.005 * np.arange(1, 21)
    worst = np.zeros(f_times_t.size)
    for star in range(0, cat.n_objects, 4):
        t, y, dy = cat.lightcurve(star)
        grid = FrequencyGrid.from_step(0.005 / np.ptp(t), 0.005 / np.ptp(t), f_times_t.size)
        fp64 = lombscargle(t, grid, y, dy, periodogram=True)
        fp32 = lombscargle(t, grid, y, dy, periodogram=True, precision="fp32")
        worst = np.maximum(worst, np.abs(fp32.power[0] - fp64.power[0]))
    assert np.max(worst) < 1e-6


def test_reference_times_are_observations_nearest_the_middle():
    t = np.array([0.0, 10.0, 4.0, 6.0, 7.0, 3.0, 5.0, 5.0, 8.0])
    cat = Catalog(np.arange(4), np.array([0, 3, 3, 5, 9]), t, np.zeros(9))
    # [0, 10, 4] -> middle 5 -> 4;  no rows -> NaN;  [6, 7] -> 6.5 -> 6 (first);
    # [3, 5, 5, 8] -> 5.5 -> 5 (first of the two)
    np.testing.assert_array_equal(reference_times(cat), [4.0, np.nan, 6.0, 5.0])


def preparation_catalog(rng):
    """JD times, weights of 1e-6 to 1e4, cgs fluxes, values of 1e200, an offset of
    1e13, a flat, a short and an empty object."""
    curves = [simulated(rng, n=n, epoch=2.46e6) for n in (5, 90, 700)]
    t, y, dy = simulated(rng, n=60, epoch=2.46e6)
    curves.append((t, y, dy * 10.0 ** rng.uniform(-2, 3, t.size)))
    t, y, dy = simulated(rng, n=50, epoch=2.46e6)
    curves += [(t, 3e-27 * y, 3e-27 * dy), (t, 1e200 * y, 1e200 * dy), (t, y + 1e13, dy)]
    curves.append((np.arange(12.0), np.full(12, 7.5), np.ones(12)))  # zero variance
    curves.append((np.arange(2.0), np.arange(2.0), np.ones(2)))  # too few points
    full = Catalog.from_lightcurves(curves)
    offsets = np.concatenate([full.offsets[:3], full.offsets[2:]])  # object 2 is empty
    return Catalog(np.arange(offsets.size - 1), offsets, full.t, full.y, full.dy)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("method,fit_mean,center_data", [
    ("generalized", True, True), ("generalized", False, True), ("generalized", False, False),
    ("standard", False, False), ("standard", True, True)])
def test_device_preparation_matches_the_host(rng, precision, method, fit_mean, center_data):
    """``ls_prepare`` against the NumPy preparation, array by array."""
    cat = preparation_catalog(rng)
    grid = FrequencyGrid.from_range(0.01, 25.0, 40_000)
    options = LS_MODULE._Options.build(method, "standard", fit_mean, center_data, precision,
                                       "auto", 1, False)
    host = LS_MODULE._prepare(cat, grid, options)
    info = clperiod.select_devices()[0]
    queue = clperiod.engine.devices.get_queue(info)
    staging = Staging(info)
    inputs = LS_MODULE._prepare_on_device(queue, cat, grid, options, staging)

    def read(buffer, dtype, n):
        out = np.empty(n, dtype)
        import pyopencl as cl
        cl.enqueue_copy(queue, out, buffer, is_blocking=True)
        return out

    n_obj, n_pts, real = cat.n_objects, cat.t.size, options.dtype
    queue.finish()
    np.testing.assert_array_equal(inputs.status, host.status)
    ok = host.status == Status.OK
    flat = Status.ZERO_VARIANCE if fit_mean or center_data else Status.OK  # y = 7.5
    assert list(host.status) == [Status.OK, Status.OK, Status.TOO_FEW_POINTS, Status.OK,
                                 Status.OK, Status.OK, Status.OK, Status.OK, flat,
                                 Status.TOO_FEW_POINTS]
    np.testing.assert_array_equal(read(inputs.objects[1], np.int32, n_obj),
                                  np.where(ok, cat.lengths, 0))
    yy = read(inputs.objects[2], real, n_obj)
    assert np.isnan(yy[~ok]).all()
    rtol = 1e-12 if precision == "fp64" else 2e-7
    np.testing.assert_allclose(yy[ok], host.yy[ok], rtol=rtol)
    np.testing.assert_allclose(read(inputs.objects[3], real, n_obj)[ok],
                               host.psd_scale[ok].astype(real), rtol=rtol)
    np.testing.assert_allclose(inputs.psd_scale, host.psd_scale, rtol=1e-12)
    rows = np.concatenate([np.arange(cat.offsets[k], cat.offsets[k + 1])
                           for k in np.flatnonzero(ok)])  # the host keeps only these
    device = {name: read(buffer, real, n_pts)[rows]
              for name, buffer in zip((LS_MODULE._STEP_INPUT[options.fp64], "sd", "w", "wy"),
                                      inputs.points)}
    if options.fp64:
        np.testing.assert_array_equal(read(inputs.phases[0], np.float64, n_pts)[rows],
                                      host.point_arrays["t"])
        for name in ("cd", "sd"):
            np.testing.assert_allclose(device[name], host.point_arrays[name], rtol=0, atol=1e-15)
        np.testing.assert_allclose(device["w"], host.point_arrays["w"], rtol=1e-14)
        np.testing.assert_allclose(device["wy"], host.point_arrays["wy"], rtol=0,
                                   atol=1e-13 * np.abs(host.point_arrays["wy"]).max())
    else:
        a, bh, bl = (read(b, np.float32, n_pts)[rows] for b in inputs.phases)
        ulp = np.float32(2.0**-24)
        np.testing.assert_allclose(a, host.point_arrays["a"], rtol=0, atol=ulp)
        np.testing.assert_allclose(bh.astype(np.float64) + bl,
                                   host.point_arrays["bh"].astype(np.float64)
                                   + host.point_arrays["bl"], rtol=0, atol=1e-14)
        for name in ("vd", "sd", "w", "wy"):
            np.testing.assert_allclose(device[name], host.point_arrays[name], rtol=2 * ulp,
                                       atol=ulp * np.abs(host.point_arrays[name]).max())


def test_host_preparation_gives_the_device_preparation_result(rng, monkeypatch):
    """Devices without fp64 prepare on the host: same statuses, peaks and powers."""
    cat = preparation_catalog(rng)
    grid = FrequencyGrid.from_range(0.01, 25.0, 4000)
    on_device = lombscargle(cat, grid, periodogram=True, top_k=3)
    monkeypatch.setattr(LS_MODULE, "_prepares_on_device", lambda info: False)
    on_host = lombscargle(cat, grid, periodogram=True, top_k=3)
    np.testing.assert_array_equal(on_device.status, on_host.status)
    np.testing.assert_array_equal(on_device.top_k_frequency, on_host.top_k_frequency)
    np.testing.assert_allclose(on_device.power, on_host.power, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fit_mean,center_data", [(True, True), (False, True), (False, False)])
def test_zero_frequency_is_nan_as_in_astropy(rng, fit_mean, center_data):
    t, _, dy = simulated(rng, n=60)
    y = 0.05 * (t - t[0]) + rng.normal(0, 0.2, t.size)  # a trend: the lowest bins are highest
    grid = FrequencyGrid.auto(t, minimum_frequency=0.0, maximum_frequency=2.0)
    assert grid.fmin == 0.0
    runs = [(norm, "fp64", memory) for norm in NORMALIZATIONS for memory in ("local", "global")]
    runs += [("standard", "fp32", memory) for memory in ("local", "global")]
    for normalization, precision, memory in runs:
        kwargs = dict(normalization=normalization, fit_mean=fit_mean, center_data=center_data)
        expected = astropy_power(t, y, dy, grid.frequencies(), **kwargs)
        assert np.isnan(expected[0]) and np.isfinite(expected[1:]).all()  # astropy: 0/0
        result = lombscargle(t, grid, y, dy, precision=precision, memory=memory,
                             periodogram=True, **kwargs)
        assert np.isnan(result.power[0, 0]) and np.isfinite(result.power[0, 1:]).all()
        if precision == "fp64":
            assert_rel(result.power[0, 1:], expected[1:], 1e-9)
        # the peak search skips the NaN bin: bin 1 is a peak beside it
        assert np.nanargmax(expected) == 1
        assert result.frequency_best[0] == grid.frequencies()[1]
    expected = astropy_power(t, y, dy, grid.frequencies(), fit_mean=fit_mean,
                             center_data=center_data)
    peaks = lombscargle(t, grid, y, dy, top_k=3, fit_mean=fit_mean, center_data=center_data)
    np.testing.assert_array_equal(peaks.top_k_frequency[0],
                                  grid.frequencies()[peaks_reference(expected, 3)])


# }}}

# {{{ variants, catalogs, peaks


def test_variants_and_catalog_agree(rng):
    lcs = [simulated(rng, n=n, period=p) for n, p in [(40, 1.3), (333, 0.71), (7, 2.0), (129, 5.5)]]
    cat = Catalog.from_lightcurves(lcs, ids=["a", "b", "c", "d"])
    grid = FrequencyGrid.from_range(0.05, 3.0, 2500)
    runs = {
        (precision, memory): lombscargle(cat, grid, precision=precision, memory=memory,
                                         periodogram=True, top_k=3)
        for precision, memory in itertools.product(["fp64", "fp32"], ["local", "global"])
    }
    base = runs["fp64", "local"]
    for (precision, _), run in runs.items():
        tol = 1e-12 if precision == "fp64" else 2e-5
        np.testing.assert_allclose(run.power, base.power, atol=tol)
        np.testing.assert_array_equal(run.status, base.status)
    for k, (t, y, dy) in enumerate(lcs):
        single = lombscargle(t, grid, y, dy, periodogram=True, top_k=3)
        np.testing.assert_array_equal(single.power[0], base.power[k])
        np.testing.assert_array_equal(single.top_k_frequency[0], base.top_k_frequency[k])
    assert list(base.ids) == ["a", "b", "c", "d"]


def test_top_k_are_distinct_peaks(rng):
    t, y, dy = simulated(rng, n=90)
    grid = FrequencyGrid.from_range(0.01, 5.0, 3000)
    result = lombscargle(t, grid, y, dy, periodogram=True, top_k=7)
    expected = peaks_reference(result.power[0], 7)
    np.testing.assert_array_equal(result.top_k_frequency[0], grid.frequencies()[expected])
    np.testing.assert_array_equal(result.top_k_power[0], result.power[0][expected])
    assert result.period[0] == result.top_k_period[0, 0]


def test_more_peaks_requested_than_exist():
    t = np.linspace(0, 10, 50)
    y = np.sin(2 * np.pi * 0.3 * t)
    grid = FrequencyGrid.from_range(0.1, 0.5, 6)  # few bins, at most 3 peaks
    result = lombscargle(t, grid, y, method="standard", periodogram=True, top_k=5)
    n_found = np.count_nonzero(~np.isnan(result.top_k_frequency[0]))
    assert n_found == len(peaks_reference(result.power[0], 5))
    assert np.isnan(result.top_k_frequency[0, n_found:]).all()


def test_deterministic_and_inputs_untouched(rng):
    t, y, dy = simulated(rng, n=120)
    copies = [a.copy() for a in (t, y, dy)]
    grid = FrequencyGrid.from_range(0.1, 4.0, 2000)
    first = lombscargle(t, grid, y, dy, precision="fp32", periodogram=True)
    second = lombscargle(t, grid, y, dy, precision="fp32", periodogram=True)
    np.testing.assert_array_equal(first.power, second.power)
    for original, now in zip(copies, (t, y, dy)):
        np.testing.assert_array_equal(original, now)


def test_small_memory_budget_batches_and_chunks(rng, monkeypatch):
    lcs = [simulated(rng, n=60 + 10 * k, period=1 + 0.1 * k) for k in range(9)]
    cat = Catalog.from_lightcurves(lcs)
    grid = FrequencyGrid.from_range(0.05, 3.0, 5000)
    full = lombscargle(cat, grid, periodogram=True, top_k=2)
    info = clperiod.select_devices()[0]
    tiny = type(info)(**{**info.__dict__, "global_mem": 40_000, "max_alloc": 20_000})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [tiny])
    calls = []
    original = planning.plan_batches

    def spy(*args, **kwargs):
        batches = original(*args, **kwargs)
        calls.append(batches)
        return batches

    monkeypatch.setattr(LS_MODULE, "plan_batches", spy)
    split = lombscargle(cat, grid, periodogram=True, top_k=2)
    assert len(calls[0]) > 1  # several uploads
    assert any(c.tile_count < planning.KernelShape(16, 16).n_tiles(5000) for c in calls[0][0].chunks)
    np.testing.assert_array_equal(split.power, full.power)
    np.testing.assert_array_equal(split.top_k_frequency, full.top_k_frequency)


def test_object_larger_than_the_device_is_a_clear_error(rng, monkeypatch):
    info = clperiod.select_devices()[0]
    tiny = type(info)(**{**info.__dict__, "global_mem": 4_000, "max_alloc": 2_000})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [tiny])
    t, y, dy = simulated(rng, n=500)
    with pytest.raises(MemoryError, match="500 points"):
        lombscargle(t, FrequencyGrid.from_range(0.1, 1.0, 100), y, dy)


def test_periodogram_overlap_chunks_of_rows(rng, monkeypatch):
    cat = Catalog.from_lightcurves([simulated(rng, n=30 + k, period=1 + k) for k in range(20)])
    grid = FrequencyGrid.from_range(0.05, 3.0, 3000)
    full = lombscargle(cat, grid, periodogram=True)
    monkeypatch.setattr(planning, "MIN_CHUNK_BYTES", 1)
    chunks = planning._periodogram_chunks(20, 3000, 12, planning.KernelShape(16, 16), 8, 1 << 30)
    assert len(chunks) >= planning.OVERLAP_CHUNKS
    assert [c.obj_lo for c in chunks[1:]] == [c.obj_hi for c in chunks[:-1]]
    assert chunks[0].obj_lo == 0 and chunks[-1].obj_hi == 20
    assert all(c.tile_first == 0 and c.tile_count == 12 for c in chunks)
    split = lombscargle(cat, grid, periodogram=True)
    np.testing.assert_array_equal(split.power, full.power)
    np.testing.assert_array_equal(split.frequency_best, full.frequency_best)


def test_pinned_pool_recycles_buffers():
    info = clperiod.select_devices()[0]
    pool = staging_module.PinnedPool()
    key = clperiod.engine.devices.get_context(info).int_ptr
    first = pool.empty(info, (1000, 400), np.float64)  # 3.2 MB
    first[:] = 1.0
    address = first.__array_interface__["data"][0]
    view = first[3]
    del first
    assert pool._take(key, 3_200_000) is None  # view alive
    assert view[0] == 1.0
    del view
    # too small to take the 3.2 MB buffer: not half its size, nor within 1 MiB of it
    other = pool.empty(info, (1000, 100), np.float64)
    again = pool.empty(info, (1000, 400), np.float64)
    assert again.__array_interface__["data"][0] == address
    assert again.shape == (1000, 400) and again.dtype == np.float64
    assert other.__array_interface__["data"][0] != address
    del other, again
    assert pool.empty(info, (900, 400), np.float64).__array_interface__["data"][0] == address
    small = pool.empty(info, (10, 10), np.float64)
    small_address = small.__array_interface__["data"][0]
    del small
    # a small request takes a free buffer up to 1 MiB larger than it
    assert pool.empty(info, (3, 10), np.float64).__array_interface__["data"][0] == small_address


def test_pinned_pool_takes_back_buffers_while_its_lock_is_held():
    """A handed-out array can die in a garbage collection that runs inside the
    pool's own locked section (an allocation in _take); its finalizer must not
    wait for the lock (it did, and the thread deadlocked on itself)."""
    import gc
    import threading

    info = clperiod.select_devices()[0]
    pool = staging_module.PinnedPool()
    array = pool.empty(info, (1000,), np.float64)
    address = array.__array_interface__["data"][0]
    cycle = [array]
    cycle.append(cycle)  # only the cyclic garbage collector frees it
    del array, cycle

    def collect_while_locked():
        with pool._lock:
            gc.collect()

    thread = threading.Thread(target=collect_while_locked, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert pool.empty(info, (1000,), np.float64).__array_interface__["data"][0] == address


def test_staging_uploads_and_returns_results():
    """Inputs reach the device buffers from page-locked memory; results are views."""
    import pyopencl as cl

    info = clperiod.select_devices()[0]
    queue = clperiod.engine.devices.get_queue(info)
    staging = Staging(info)
    values = np.arange(1000, dtype=np.float64) * 0.5
    indices = np.arange(7, dtype=np.int32)
    buffers = [staging.upload(values), staging.upload(indices), staging.upload(values[:0])]
    slot = staging.result((2, 3), np.int8)
    staging.send(queue)
    assert staging.results[slot].shape == (2, 3) and staging.results[slot].dtype == np.int8
    assert staging_module.PINNED_POOL.owns(staging.results[slot])
    back_values, back_indices = np.empty_like(values), np.empty_like(indices)
    cl.enqueue_copy(queue, back_values, buffers[0])
    cl.enqueue_copy(queue, back_indices, buffers[1], is_blocking=True)
    np.testing.assert_array_equal(back_values, values)
    np.testing.assert_array_equal(back_indices, indices)


def test_batch_buffers_come_from_the_pool_and_go_back(monkeypatch):
    """Released buffers return to the device pool for reuse; beyond the held
    limit the pool frees them."""
    info = clperiod.select_devices()[0]
    pool = clperiod.engine.devices.memory_pool(info)
    assert clperiod.engine.devices.memory_pool(info) is pool
    active = pool.active_bytes
    staging = Staging(info)
    assert staging.buffer(1 << 20).size >= 1 << 20
    assert pool.active_bytes >= active + (1 << 20)  # held by the staging
    staging.release()
    assert pool.active_bytes == active
    held = pool.held_blocks
    assert held >= 1
    again = Staging(info)
    again.buffer(1 << 20)
    assert pool.held_blocks == held - 1  # the freed block, reused
    monkeypatch.setattr(clperiod.engine.devices, "POOL_HELD_FRACTION", 0.0)
    again.release()
    assert pool.held_blocks == 0 and pool.managed_bytes == pool.active_bytes


def test_progress_bar_counts_batches(rng, capsys):
    pytest.importorskip("tqdm")
    cat = Catalog.from_lightcurves([simulated(rng, n=30) for _ in range(3)])
    result = lombscargle(cat, FrequencyGrid.from_range(0.1, 2.0, 200), progress=True)
    assert "1/1" in capsys.readouterr().err
    assert (result.status == Status.OK).all()


# }}}

# {{{ real data


def test_ida_half_rotation_period():
    cat = load_example("ida")
    grid = FrequencyGrid.from_range(1.0, 30.0, 200_000)  # per day; times are JD
    for precision in ("fp64", "fp32"):
        result = lombscargle(cat, grid, method="standard", precision=precision)
        hours = result.period[0] * 24
        assert abs(hours - 4.63 / 2) < 0.05, hours


@pytest.mark.slow
def test_8205_period():
    cat = load_example("8205_errors")
    grid = FrequencyGrid.from_range(0.5, 24.0, 200_000)
    for precision in ("fp64", "fp32"):
        result = lombscargle(cat, grid, precision=precision)
        assert abs(result.period[0] - 0.5647) < 0.001


@pytest.mark.slow
def test_stripe82_fp32_agrees_with_fp64():
    cat = load_example("stripe82")
    grid = FrequencyGrid.from_range(0.1, 10.0, 330_000)
    fp64 = lombscargle(cat, grid)
    fp32 = lombscargle(cat, grid, precision="fp32")
    assert cat.n_objects == 136
    agree = np.isclose(fp32.period, fp64.period, rtol=1e-6)
    assert agree.mean() >= 0.99, agree.mean()


# }}}

# {{{ statistics


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_false_alarm_probability_matches_astropy(rng, normalization):
    t, y, dy = simulated(rng, n=70)
    grid = FrequencyGrid.auto(t)
    result = lombscargle(t, grid, y, dy, normalization=normalization)
    ls = LombScargle(t, y, dy, normalization=normalization)
    expected = ls.false_alarm_probability(
        result.power_best[0], maximum_frequency=grid.fmax, method="baluev"
    )
    np.testing.assert_allclose(result.false_alarm_probability()[0], expected, rtol=1e-8)


# }}}

# {{{ bad input


def test_degenerate_objects_get_status_and_nan(rng):
    good = simulated(rng, n=80)
    flat = (np.arange(20.0), np.full(20, 3.0), np.ones(20))
    short = (np.arange(3.0), np.arange(3.0), np.ones(3))
    cat = Catalog.from_lightcurves([good, flat, short, good])
    grid = FrequencyGrid.from_range(0.1, 2.0, 500)
    result = lombscargle(cat, grid, periodogram=True)
    assert list(result.status) == [Status.OK, Status.ZERO_VARIANCE, Status.TOO_FEW_POINTS, Status.OK]
    assert np.isnan(result.period[1:3]).all() and np.isnan(result.power[1:3]).all()
    assert np.isnan(result.false_alarm_probability()[1:3]).all()
    single = lombscargle(*good[:1], grid, *good[1:], periodogram=True)
    np.testing.assert_array_equal(result.power[3], single.power[0])


def test_catalog_of_only_degenerate_objects():
    grid = FrequencyGrid.from_range(0.1, 2.0, 100)
    result = lombscargle(np.arange(3.0), grid, np.arange(3.0), periodogram=True, top_k=2)
    assert result.status[0] == Status.TOO_FEW_POINTS
    assert np.isnan(result.period).all() and np.isnan(result.top_k_power).all()
    assert np.isnan(result.power).all()


def test_a_list_of_light_curves_is_a_catalog(rng):
    """Tuples, DataFrames and Tables as the first argument: the catalog of
    Catalog.from_lightcurves, with ids 0 .. K-1 (also for the grid helpers,
    the false-alarm probabilities and SuperSmoother)."""
    pd = pytest.importorskip("pandas")
    curves = [simulated(rng, n=40 + 10 * k, period=1.5 + k) for k in range(3)]
    grid = FrequencyGrid.from_range(0.05, 2.0, 800)
    expected = lombscargle(Catalog.from_lightcurves(curves), grid)
    frames = [pd.DataFrame({"t": t, "y": y, "dy": dy}) for t, y, dy in curves]
    for listed in (curves, tuple(curves), frames):
        result = lombscargle(listed, grid)
        np.testing.assert_array_equal(result.ids, [0, 1, 2])
        np.testing.assert_array_equal(result.power_best, expected.power_best)
    np.testing.assert_allclose(expected.period, [1.5, 2.5, 3.5], rtol=0.02)
    assert FrequencyGrid.auto(curves) == FrequencyGrid.auto(Catalog.from_lightcurves(curves))
    assert FrequencyGrid.richards(curves, 0.1, 1.0) == \
        FrequencyGrid.richards(Catalog.from_lightcurves(curves), 0.1, 1.0)
    fap = clperiod.periodograms.stats.catalog_false_alarm_probability(expected.power_best, curves,
                                                          fmax=grid.fmax, nf=grid.nf)
    np.testing.assert_array_equal(fap, expected.false_alarm_probability())
    smoothed = clperiod.supersmoother(curves, FrequencyGrid.from_range(0.05, 2.0, 200))
    np.testing.assert_allclose(smoothed.period, [1.5, 2.5, 3.5], rtol=0.03)
    unweighted = lombscargle([(t, y) for t, y, _ in curves], grid, method="standard")
    assert unweighted.catalog.dy is None
    with pytest.raises(ValueError, match="inside the Catalog or the light curves"):
        lombscargle(curves, grid, dy=curves[0][2])
    with pytest.raises(ValueError, match="y is required when the first argument is a time "
                                         "array .*list of"):
        lombscargle(curves[0][0], grid)


def test_nan_policy(rng):
    t, y, dy = simulated(rng, n=50)
    y = y.copy()
    y[7] = np.nan
    grid = FrequencyGrid.from_range(0.1, 2.0, 100)
    with pytest.raises(ValueError, match="7"):
        lombscargle(t, grid, y, dy)
    dropped = lombscargle(t, grid, y, dy, nan_policy="omit", periodogram=True)
    keep = np.arange(50) != 7
    clean = lombscargle(t[keep], grid, y[keep], dy[keep], periodogram=True)
    np.testing.assert_array_equal(dropped.power, clean.power)


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(method="fast"), ValueError),
        (dict(normalization="scipy"), ValueError),
        (dict(precision="fp16"), ValueError),
        (dict(memory="texture"), ValueError),
        (dict(top_k=0), ValueError),
        (dict(top_k=65), ValueError),
        (dict(top_k=1.5), TypeError),
        (dict(method="standard"), ValueError),  # dy given with the unweighted method
    ],
)
def test_bad_options(rng, kwargs, error):
    t, y, dy = simulated(rng, n=30)
    with pytest.raises(error):
        lombscargle(t, FrequencyGrid.from_range(0.1, 1.0, 10), y, dy, **kwargs)


def test_bad_arrays(rng):
    t, y, dy = simulated(rng, n=30)
    grid = FrequencyGrid.from_range(0.1, 1.0, 10)
    with pytest.raises(ValueError):
        lombscargle(t, grid, y[:-1], dy)
    with pytest.raises(ValueError):
        lombscargle(t, grid, y, -dy)
    with pytest.raises(ValueError):
        lombscargle(t, grid)
    with pytest.raises(TypeError):
        lombscargle(t, (0.1, 1.0, 10), y, dy)
    with pytest.raises(ValueError, match="nf"):
        lombscargle(t, FrequencyGrid.from_step(0.1, 1e-9, 2**31 - 1), y, dy)


def test_fp64_on_device_without_fp64(monkeypatch, rng):
    info = clperiod.select_devices()[0]
    no_fp64 = type(info)(**{**info.__dict__, "fp64": False})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [no_fp64])
    t, y, dy = simulated(rng, n=30)
    grid = FrequencyGrid.from_range(0.1, 1.0, 10)
    with pytest.raises(ValueError, match="double precision"):
        lombscargle(t, grid, y, dy)
    assert lombscargle(t, grid, y, dy, precision="fp32").status[0] == Status.OK


# }}}


def test_lombscargle_async_queues_then_matches_the_blocking_call(rng, monkeypatch):
    """One device: the call returns with the batch queued (nothing waited for);
    two calls in flight give the blocking results. Several devices, or a
    progress bar, run to the end first."""
    cats = [Catalog.from_lightcurves([simulated(rng, n=40 + 7 * k) for k in range(m)])
            for m in (5, 9)]
    grid = FrequencyGrid.from_range(0.05, 3.0, 3000)
    expected = [lombscargle(cat, grid, top_k=2, periodogram=True) for cat in cats]
    waits = []
    original = LS_MODULE._QueuedBatch.result
    monkeypatch.setattr(LS_MODULE._QueuedBatch, "result",
                        lambda self: waits.append(1) or original(self))
    pending = [clperiod.lombscargle_async(cat, grid, top_k=2, periodogram=True) for cat in cats]
    assert not waits
    for deferred, reference in zip(reversed(pending), reversed(expected)):
        result = deferred.result()
        assert deferred.result() is result
        np.testing.assert_array_equal(result.top_k_frequency, reference.top_k_frequency)
        np.testing.assert_array_equal(result.power, reference.power)
        np.testing.assert_array_equal(result.status, reference.status)
    assert len(waits) == 2
    pytest.importorskip("tqdm")
    clperiod.lombscargle_async(cats[0], grid, progress=True)
    assert len(waits) == 3
    info = clperiod.select_devices()[0]
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [info, info])
    both = clperiod.lombscargle_async(cats[1], grid)
    assert len(waits) > 3  # every batch waited for before the call returned
    np.testing.assert_array_equal(both.result().frequency_best, expected[1].frequency_best)
    with pytest.raises(ValueError, match="method"):
        clperiod.lombscargle_async(cats[0], grid, method="fast")
    with pytest.raises(TypeError):
        clperiod.lombscargle_async(cats[0], grid, bogus=1)


def test_a_deferred_result_is_finished_once_for_threads_asking_at_once():
    calls = []

    def finish():
        calls.append(1)
        time.sleep(0.02)  # waiting for the device releases the GIL
        return object()

    deferred = Deferred(finish)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: deferred.result(), range(4)))
    assert len(calls) == 1 and all(result is results[0] for result in results)


def test_a_batch_that_fails_while_queuing_returns_its_buffers(rng, monkeypatch):
    """The queues are finished before a failed batch's pooled buffers go back."""
    info = clperiod.select_devices()[0]
    pool = clperiod.engine.devices.memory_pool(info)
    cat = Catalog.from_lightcurves([simulated(rng, n=50) for _ in range(3)])
    grid = FrequencyGrid.from_range(0.05, 3.0, 2000)
    expected = lombscargle(cat, grid)
    active = pool.active_bytes

    def failing(*args, **kwargs):
        raise RuntimeError("launch failed")

    monkeypatch.setattr(LS_MODULE, "_copy_block", failing)
    with pytest.raises(RuntimeError, match="launch failed"):
        lombscargle(cat, grid, periodogram=True)
    assert pool.active_bytes == active
    monkeypatch.undo()
    np.testing.assert_array_equal(lombscargle(cat, grid).frequency_best,
                                  expected.frequency_best)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("method", ["generalized", "standard"])
def test_degenerate_frequencies_keep_the_column_that_remains(method, precision):
    """Integer times at f = 1/2, 1, 3/2: the sine column vanishes (and at f = 1
    the cosine is constant); the power is the exact least-squares fit of what
    remains, NaN where nothing remains (the cosine is the floating mean)."""
    t = np.arange(1.0, 33.0)
    y = np.random.default_rng(0).normal(size=t.size)
    grid = FrequencyGrid.from_step(0.25, 0.25, 6)
    result = lombscargle(t, grid, y, method=method, precision=precision, periodogram=True)
    fit_mean = method == "generalized"
    expected = []
    for f in grid.frequencies():
        columns = [np.cos(2 * np.pi * f * t), np.sin(2 * np.pi * f * t)]
        design = np.column_stack(columns + ([np.ones_like(t)] if fit_mean else []))
        coef, *_ = np.linalg.lstsq(design, y, rcond=1e-9)
        residual = y - design @ coef
        reference = y - y.mean() if fit_mean else y
        expected.append(1 - residual @ residual / (reference @ reference))
    if fit_mean:
        expected[3] = np.nan  # f = 1: cos = 1 is the mean, sin = 0
    tolerance = 1e-12 if precision == "fp64" else 1e-6
    np.testing.assert_allclose(result.power[0], expected, atol=tolerance, rtol=0)
    assert result.status[0] == Status.OK


@pytest.mark.parametrize("algorithm", ["direct", "auto"])
def test_fp32_direct_refuses_grids_beyond_float32_bin_numbers(algorithm):
    """Bins past 2**24 are not exact in float32: their phases would be wrong."""
    t = np.sort(np.random.default_rng(3).uniform(0, 100, 20))
    y = np.sin(t)
    grid = FrequencyGrid(0.01, 1e-6, 2**24 + 600)
    with pytest.raises(ValueError, match="at most 16777216 frequencies"):
        lombscargle(t, grid, y, precision="fp32", algorithm=algorithm)
