"""``lombscargle(..., algorithm="nufft")`` against ``algorithm="direct"`` on the test device.

Powers agree with nifty-ls's rule: within ``max(1e-5, 1e-9 Nf)`` of the peak
power in fp64 and ``max(1e-3, 1e-7 Nf)`` in fp32. Grids start at
``fmin >= 2 df`` unless the test is about ``fmin = 0``.
"""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.io import load_example
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.periodograms import lowfreq, nufft
from clperiod.testing import sinusoid_lightcurve

NORMALIZATIONS = ["standard", "model", "log", "psd"]


def simulated(rng, n=300, period=3.1, baseline=100.0, epoch=58000.0, dy=True):
    return sinusoid_lightcurve(rng, n, period, baseline=baseline, epoch=epoch, mean=12.0,
                               amplitude=0.4, phase=0.3, noise=0.3,
                               dy=(0.1, 0.3) if dy else None)


def nifty_rtol(nf: int, precision: str) -> float:
    return max(1e-5, 1e-9 * nf) if precision == "fp64" else max(1e-3, 1e-7 * nf)


def peak_relative_error(power, expected) -> float:
    """``max |power - expected| / max |expected|`` (same NaNs required)."""
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    return float(np.nanmax(np.abs(power - expected)) / np.nanmax(np.abs(expected)))


def both(*args, **options):
    """The direct and NUFFT results of the same search."""
    return (lombscargle(*args, **options),
            lombscargle(*args, algorithm="nufft", **options))


# {{{ accuracy against the direct path


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("method", ["generalized", "standard"])
def test_random_light_curve_matches_direct(rng, method, normalization, precision):
    t, y, dy = simulated(rng, dy=method == "generalized")
    grid = FrequencyGrid(0.002, 0.001, 5000)
    direct, fast = both(t, grid, y, dy, method=method, normalization=normalization,
                        precision=precision, periodogram=True)
    assert peak_relative_error(fast.power[0], direct.power[0]) <= nifty_rtol(5000, precision)
    assert fast.frequency_best[0] == direct.frequency_best[0]
    np.testing.assert_allclose(fast.power_best, direct.power_best,
                               rtol=nifty_rtol(5000, precision))
    assert (fast.method, fast.normalization, fast.precision) == (method, normalization, precision)


@pytest.mark.parametrize(("fit_mean", "center_data"), [(True, False), (False, True),
                                                       (False, False)])
def test_model_variants_match_direct(rng, fit_mean, center_data):
    t, y, dy = simulated(rng)
    grid = FrequencyGrid(0.002, 0.001, 5000)
    direct, fast = both(t, grid, y, dy, fit_mean=fit_mean, center_data=center_data,
                        periodogram=True)
    assert peak_relative_error(fast.power[0], direct.power[0]) <= 1e-5
    assert fast.frequency_best[0] == direct.frequency_best[0]


def test_zero_frequency_is_nan_as_in_the_direct_path(rng):
    t, y, dy = simulated(rng)
    grid = FrequencyGrid(0.0, 0.001, 4000)
    direct, fast = both(t, grid, y, dy, periodogram=True)
    assert np.isnan(fast.power[0, 0]) and np.isnan(direct.power[0, 0])
    # the lowest rows carry the transforms' largest relative errors (as in nifty-ls)
    assert peak_relative_error(fast.power[0, 2:], direct.power[0, 2:]) <= 1e-5
    assert fast.frequency_best[0] == direct.frequency_best[0]


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_real_light_curve_every_normalization(precision):
    cat = load_example("8205_errors")
    grid = FrequencyGrid.from_range(0.5, 24.0, 1500)
    for normalization in NORMALIZATIONS:
        direct, fast = both(cat, grid, normalization=normalization, precision=precision,
                            periodogram=True, top_k=3)
        rtol = nifty_rtol(grid.nf, precision)
        assert peak_relative_error(fast.power[0], direct.power[0]) <= rtol, normalization
        np.testing.assert_array_equal(fast.top_k_frequency, direct.top_k_frequency)


def test_real_catalog_same_best_periods():
    cat = load_example("stripe82")
    cat = cat.slice(0, 24)
    grid = FrequencyGrid.from_range(0.2, 4.0, 20000)
    direct, fast = both(cat, grid, periodogram=True)
    np.testing.assert_array_equal(fast.status, direct.status)
    np.testing.assert_array_equal(fast.period, direct.period)
    for row in range(cat.n_objects):
        assert peak_relative_error(fast.power[row], direct.power[row]) <= 2e-5


def test_eps_sets_the_accuracy(rng):
    t, y, dy = simulated(rng)
    grid = FrequencyGrid(0.002, 0.001, 5000)
    direct = lombscargle(t, grid, y, dy, periodogram=True).power[0]
    errors = [peak_relative_error(
        lombscargle(t, grid, y, dy, algorithm="nufft", eps=eps, periodogram=True).power[0],
        direct) for eps in (1e-3, 1e-6, 1e-12)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[0] <= 3e-3 and errors[2] <= 1e-10


# }}}

# {{{ peaks, catalogs, statuses, batches


def peaks_reference(power, k):
    """Indices of the k highest local maxima (first of equal maxima)."""
    p = np.where(np.isnan(power), -np.inf, power)
    left = np.concatenate([[-np.inf], p[:-1]])
    right = np.concatenate([p[1:], [-np.inf]])
    idx = np.flatnonzero((p > left) & (p >= right))
    order = np.lexsort((idx, -p[idx]))
    return idx[order][:k]


def test_top_k_are_the_distinct_peaks_of_the_periodogram(rng):
    t, y, dy = simulated(rng, n=90)
    grid = FrequencyGrid(0.02, 0.01, 3000)
    result = lombscargle(t, grid, y, dy, algorithm="nufft", periodogram=True, top_k=7)
    expected = peaks_reference(result.power[0], 7)
    np.testing.assert_array_equal(result.top_k_frequency[0], grid.frequencies()[expected])
    np.testing.assert_array_equal(result.top_k_power[0], result.power[0][expected])
    best = lombscargle(t, grid, y, dy, algorithm="nufft", top_k=7)
    np.testing.assert_array_equal(best.top_k_frequency, result.top_k_frequency)
    assert best.power is None


def test_catalog_mixing_objects_and_degenerate_statuses(rng):
    lcs = [simulated(rng, n=n, period=p) for n, p in [(40, 1.3), (333, 0.71), (129, 5.5)]]
    t = np.linspace(0.0, 10.0, 30)
    lcs.insert(1, (t, np.full(30, 3.0), np.full(30, 0.1)))  # constant: ZERO_VARIANCE
    lcs.insert(3, (t[:3], np.array([1.0, 2.0, 0.5]), np.full(3, 0.1)))  # TOO_FEW_POINTS
    cat = Catalog.from_lightcurves(lcs, ids=list("abcde"))
    grid = FrequencyGrid(0.01, 0.005, 3000)
    for precision in ("fp64", "fp32"):
        direct, fast = both(cat, grid, precision=precision, periodogram=True, top_k=3)
        np.testing.assert_array_equal(fast.status, direct.status)
        assert list(fast.status) == [Status.OK, Status.ZERO_VARIANCE, Status.OK,
                                     Status.TOO_FEW_POINTS, Status.OK]
        ok = fast.status == Status.OK
        assert np.isnan(fast.power[~ok]).all() and np.isnan(fast.top_k_power[~ok]).all()
        np.testing.assert_array_equal(fast.frequency_best, direct.frequency_best)
        for row in np.flatnonzero(ok):
            assert (peak_relative_error(fast.power[row], direct.power[row])
                    <= nifty_rtol(grid.nf, precision))
        assert list(fast.ids) == list("abcde")
        np.testing.assert_allclose(fast.false_alarm_probability(),
                                   direct.false_alarm_probability(), rtol=1e-2)


def test_small_memory_budget_splits_the_catalog(rng, monkeypatch):
    cat = Catalog.from_lightcurves([simulated(rng, n=60 + 10 * k, period=1 + 0.1 * k)
                                    for k in range(6)])
    grid = FrequencyGrid(0.02, 0.01, 3000)
    full = lombscargle(cat, grid, algorithm="nufft", periodogram=True, top_k=2)
    info = clperiod.select_devices()[0]
    tiny = type(info)(**{**info.__dict__, "global_mem": 3_000_000, "max_alloc": 1_000_000})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [tiny])
    batches = []
    original = LS_MODULE.batch_bounds
    monkeypatch.setattr(LS_MODULE, "batch_bounds",
                        lambda *a, **k: batches.append(original(*a, **k)) or batches[-1])
    split = lombscargle(cat, grid, algorithm="nufft", periodogram=True, top_k=2)
    assert len(batches[0]) > 1
    np.testing.assert_array_equal(split.power, full.power)
    np.testing.assert_array_equal(split.top_k_frequency, full.top_k_frequency)


def test_batches_cut_by_memory_are_shared_evenly_by_the_device_threads(rng, monkeypatch):
    """Memory cuts ten objects into three batches; two device threads get
    four of about equal points instead, with the results of one batch."""
    cat = Catalog.from_lightcurves([simulated(rng, n=200, period=1 + 0.1 * k) for k in range(10)])
    grid = FrequencyGrid(0.02, 0.01, 3000)
    whole = lombscargle(cat, grid, algorithm="nufft", periodogram=True, top_k=2)
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 6_000_000, "max_alloc": 2_000_000})
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [small, small])
    cuts = []
    original = LS_MODULE.batch_bounds

    def recorded(*args, **kwargs):
        cuts.append((original(*args, **{**kwargs, "workers": 1}), original(*args, **kwargs)))
        return cuts[-1][1]

    monkeypatch.setattr(LS_MODULE, "batch_bounds", recorded)
    shared = lombscargle(cat, grid, algorithm="nufft", periodogram=True, top_k=2)
    assert cuts == [([(0, 4), (4, 8), (8, 10)], [(0, 3), (3, 5), (5, 8), (8, 10)])]
    np.testing.assert_array_equal(shared.power, whole.power)
    np.testing.assert_array_equal(shared.top_k_frequency, whole.top_k_frequency)
    np.testing.assert_array_equal(shared.top_k_power, whole.top_k_power)


def test_peaks_of_long_periodograms_merged_from_chunks_are_the_same(rng, monkeypatch):
    cat = Catalog.from_lightcurves([simulated(rng, n=n) for n in (300, 2, 500)])
    grid = FrequencyGrid(0.0, 0.004, 1000)
    whole = lombscargle(cat, grid, algorithm="nufft", top_k=6, periodogram=True)
    monkeypatch.setattr(nufft, "PEAK_CHUNK", 97)
    split = lombscargle(cat, grid, algorithm="nufft", top_k=6)
    np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)
    np.testing.assert_array_equal(split.top_k_power, whole.top_k_power)
    order = np.argsort(-np.nan_to_num(whole.power[0], nan=-np.inf), kind="stable")
    assert whole.top_k_power[0, 0] == whole.power[0, order[0]]


def test_padded_fft_rows_leave_the_results_unchanged(rng, cpu_device):
    t, y, dy = simulated(rng, n=200)
    plan = nufft.NufftPlan.build(FrequencyGrid(0.02, 0.01, 2000))
    options = dict(fit_mean=True, center_data=True, use_dy=True, normalization="psd", top_k=3)
    catalog = Catalog.from_single(t, y, dy)
    plain, padded = np.empty((1, 2000)), np.empty((1, 2000))
    a = nufft.search(cpu_device, catalog, plan, **options, periodograms=plain)
    b = nufft.search(cpu_device, catalog, plan, **options, periodograms=padded, n_rows=7)
    np.testing.assert_array_equal(padded, plain)
    np.testing.assert_array_equal(b.indices, a.indices)
    np.testing.assert_array_equal(b.values, a.values)


# }}}

# {{{ bad arguments


@pytest.mark.parametrize("algorithm", ["fft", "Auto", None])
def test_bad_algorithm_is_an_error(rng, algorithm):
    t, y, dy = simulated(rng, n=20)
    with pytest.raises(ValueError, match="algorithm"):
        lombscargle(t, FrequencyGrid(0.1, 0.1, 10), y, dy, algorithm=algorithm)


@pytest.mark.parametrize("eps", [0.0, -1e-6, 1.0, np.nan, np.inf])
def test_bad_eps_is_an_error(rng, eps):
    t, y, dy = simulated(rng, n=20)
    with pytest.raises(ValueError, match="eps"):
        lombscargle(t, FrequencyGrid(0.1, 0.1, 10), y, dy, algorithm="nufft", eps=eps)


def test_eps_of_the_direct_path_or_not_a_number_is_an_error(rng):
    t, y, dy = simulated(rng, n=20)
    grid = FrequencyGrid(0.1, 0.1, 10)
    with pytest.raises(ValueError, match="eps applies only to algorithm='nufft' or 'auto'"):
        lombscargle(t, grid, y, dy, eps=1e-6)
    with pytest.raises(TypeError, match="eps must be a number"):
        lombscargle(t, grid, y, dy, algorithm="nufft", eps="small")


# }}}


def test_grids_too_large_for_the_device_run_in_pieces(rng, monkeypatch):
    cat = Catalog.from_lightcurves([simulated(rng, n=n) for n in (300, 2, 500)])
    grid = FrequencyGrid(0.0, 0.004, 1000)
    whole = lombscargle(cat, grid, algorithm="nufft", top_k=4, periodogram=True)
    plan = nufft.NufftPlan.build(grid)
    budget = LS_MODULE.MemoryBudget(total=60 * plan.n_grid, max_alloc=1 << 30, device="x")
    pieces = LS_MODULE._nufft_pieces(plan, cat.lengths, LS_MODULE._Options.build(
        "generalized", "standard", None, None, "fp64", "auto", 4, True, 1), budget)
    assert len(pieces) > 1 and pieces[0][0] == 0 and pieces[-1][1] == grid.nf
    assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:], strict=False))
    monkeypatch.setattr(LS_MODULE, "MAX_PIECE_FREQUENCIES", 256)
    capped = LS_MODULE._nufft_pieces(plan, cat.lengths, LS_MODULE._Options.build(
        "generalized", "standard", None, None, "fp64", "auto", 4, True, 1),
        LS_MODULE.MemoryBudget(total=1 << 40, max_alloc=1 << 30, device="x"))
    assert capped == [(0, 256), (256, 512), (512, 768), (768, 1000)]
    monkeypatch.setattr(LS_MODULE, "_nufft_pieces",
                        lambda *args: [(0, 300), (300, 301), (301, 650), (650, 1000)])
    split = lombscargle(cat, grid, algorithm="nufft", top_k=4, periodogram=True)
    np.testing.assert_array_equal(split.status, whole.status)
    np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)
    np.testing.assert_allclose(split.top_k_power, whole.top_k_power, rtol=1e-9)
    ok = whole.status == Status.OK
    np.testing.assert_allclose(split.power[ok], whole.power[ok], rtol=0,
                               atol=1e-9 * np.nanmax(whole.power))


def test_every_device_gets_a_batch_and_the_results_do_not_change(rng, monkeypatch):
    """With several devices the NUFFT batches are at most n_objects / n_devices
    objects, so none idles; two workers on one device give one device's results."""
    cat = Catalog.from_lightcurves([simulated(rng, n=200 + 30 * k) for k in range(5)])
    grid = FrequencyGrid(0.01, 0.002, 3000)
    one = lombscargle(cat, grid, algorithm="nufft", top_k=2, periodogram=True)
    seen = []
    original = LS_MODULE.run_on_devices

    def spy(devices, bounds, work, **kwargs):
        seen.append(list(bounds))
        return original(devices, bounds, work, **kwargs)

    info = clperiod.select_devices()[0]
    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [info, info])
    monkeypatch.setattr(LS_MODULE, "run_on_devices", spy)
    two = lombscargle(cat, grid, algorithm="nufft", top_k=2, periodogram=True)
    assert seen and all(stop - start <= 3 for start, stop in seen[0]) and len(seen[0]) >= 2
    for name in ("frequency_best", "power_best", "top_k_frequency", "top_k_power", "power"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))


def test_gpus_search_two_batches_at_once_with_unchanged_results(rng, monkeypatch):
    """On GPUs each device runs NUFFT_GPU_THREADS batches at once (a thread and
    queue each) in a share of its memory, where the longest object fits that
    share, and with several GPUs where the light curves need no staging copy
    or a device's share takes several batches; on CPUs one batch per device.
    The results, exact low-frequency bins included, equal one batch's."""
    cat = Catalog.from_lightcurves([simulated(rng, n=200 + 30 * k) for k in range(7)])
    grid = FrequencyGrid(0.0005, 0.0005, 3000)  # every object has exact low-frequency bins
    plan = nufft.NufftPlan.build(grid)
    cutoffs = lowfreq.nufft_cutoffs(cat, lowfreq.Model(1, True, True, True), plan, grid)
    assert np.all(cutoffs > grid.fmin)  # found per batch, on the batch's device
    buffers = nufft.batch_buffers(plan, True, 2)
    lengths = cat.lengths
    info = clperiod.select_devices()[0]
    cpu, gpu = (type(info)(**{**info.__dict__, "kind": kind}) for kind in ("cpu", "gpu"))
    need = LS_MODULE.held_bytes(buffers, 1, int(lengths.max()))
    roomy = LS_MODULE.MemoryBudget(total=1 << 40, max_alloc=1 << 30, device="x")
    tight = LS_MODULE.MemoryBudget(total=need + need // 2, max_alloc=1 << 30, device="x")
    threads = LS_MODULE._nufft_threads
    assert threads([gpu], buffers, lengths, roomy, True) == 2
    assert threads([gpu, gpu], buffers, lengths, roomy, False) == 2
    assert threads([gpu, gpu], buffers, lengths, roomy, True) == 1  # staging copies contend
    # ... unless a device's share takes several batches: a second thread copies the next
    several = LS_MODULE.MemoryBudget(total=2 * need + 1, max_alloc=1 << 30, device="x")
    assert len(LS_MODULE.batch_bounds(lengths, buffers, several, max_items=4)) > 2
    assert threads([gpu, gpu], buffers, lengths, several, True) == 2
    assert threads([gpu], buffers, lengths, tight, False) == 1
    assert threads([gpu], buffers, lengths[:1], roomy, False) == 1
    assert threads([cpu, cpu], buffers, lengths, roomy, False) == 1
    assert LS_MODULE._staged([info], cat)
    assert LS_MODULE._staged([info], cat.page_locked(info.device)) != info.fp64

    one = lombscargle(cat, grid, algorithm="nufft", top_k=2, periodogram=True, device=info)
    seen = []
    original = LS_MODULE.run_on_devices

    def spy(devices, bounds, work, **kwargs):
        seen.append((len(devices), list(bounds)))
        return original(devices, bounds, work, **kwargs)

    monkeypatch.setattr(LS_MODULE, "_nufft_threads", lambda devices, *args: 2)
    monkeypatch.setattr(LS_MODULE, "run_on_devices", spy)
    two = lombscargle(cat, grid, algorithm="nufft", top_k=2, periodogram=True, device=info)
    assert seen and seen[0][0] == 2 and [stop - start for start, stop in seen[0][1]] == [4, 3]
    for name in ("frequency_best", "power_best", "top_k_frequency", "top_k_power", "power"):
        np.testing.assert_array_equal(getattr(two, name), getattr(one, name))
