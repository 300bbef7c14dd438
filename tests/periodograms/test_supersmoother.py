"""SuperSmoother period search against the independent NumPy reference."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from reference import supersmoother as ref

ss_module = importlib.import_module("clperiod.periodograms.supersmoother")


def sawtooth_catalog(rng, specs, epoch=53000.0):
    """Light curves (n, period): sawtooth + noise, raw MJD-like times."""
    lcs = []
    for n, period in specs:
        t = epoch + np.sort(rng.uniform(0, 400, n))
        y = 16 + 0.3 * ((t / period) % 1.0) + rng.normal(0, 0.05, n)
        lcs.append((t, y, rng.uniform(0.02, 0.06, n)))
    return lcs, Catalog.from_lightcurves(lcs, ids=[f"s{k}" for k in range(len(lcs))])


def numpy_peaks(power, top_k):
    """Top-k local maxima (strictly above the left neighbour, not below the
    right one; outside the grid counts as -inf), best first, ties in grid order."""
    p = np.where(np.isnan(power), -np.inf, power)
    left = np.concatenate([[-np.inf], p[:-1]])
    right = np.concatenate([p[1:], [-np.inf]])
    peaks = np.flatnonzero((p > left) & (p >= right) & np.isfinite(p))
    order = np.lexsort((peaks, -p[peaks]))
    return peaks[order][:top_k]


VARIANTS = [("original", "global"), ("single_pass", "auto"), ("single_pass", "global")]


@pytest.mark.slow
@pytest.mark.parametrize("variant,memory", VARIANTS)
@pytest.mark.parametrize("compat", [False, True])
def test_fp64_matches_reference(rng, variant, memory, compat):
    lcs, cat = sawtooth_catalog(rng, [(12, 0.7), (45, 0.31), (81, 2.3), (120, 0.55), (4, 1.0)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 60)
    periodic = not (compat and variant == "original")
    r = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, compat=compat,
                               periodogram=True, top_k=3)
    assert r.periodic == periodic and r.power.dtype == np.float64
    for k, (t, y, dy) in enumerate(lcs):
        if len(t) < ss_module.MIN_POINTS[variant]:
            assert r.status[k] == Status.TOO_FEW_POINTS
            assert np.isnan(r.power[k]).all() and np.isnan(r.top_k_power[k]).all()
            continue
        expected = ref.supersmoother_power(t, y, dy, grid.frequencies(), variant=variant,
                                           periodic=periodic, scale_free=not compat)
        np.testing.assert_allclose(r.power[k], expected, rtol=1e-8, atol=1e-9 * len(t))
        best = ref.best_frequency(r.power[k], grid.frequencies())
        assert r.frequency_best[k] == best
        assert r.period[k] == 1 / best
        peaks = numpy_peaks(r.power[k], 3)
        np.testing.assert_array_equal(r.top_k_frequency[k, :len(peaks)],
                                      grid.fmin + peaks * grid.df)
        np.testing.assert_array_equal(r.top_k_power[k, :len(peaks)], r.power[k, peaks])


@pytest.mark.parametrize("variant,memory", VARIANTS)
def test_fp32_close_to_fp64(rng, variant, memory):
    lcs, cat = sawtooth_catalog(rng, [(30, 0.7), (81, 0.31), (128, 2.3)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 400)
    r64 = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodogram=True)
    r32 = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodogram=True,
                                 precision="fp32")
    assert r32.power.dtype == np.float32
    n = cat.lengths[:, None]
    # raw MJD times and 16-mag values: phases stay exact (double-single) and
    # the smoother gets y - ybar, so fp32 only rounds the running sums
    assert np.median(np.abs(r32.power - r64.power) / n) < 1e-5
    np.testing.assert_array_equal(r32.frequency_best, r64.frequency_best)


@pytest.mark.parametrize("variant", ["original", "single_pass"])
def test_radix_path_for_long_light_curves(rng, variant, monkeypatch):
    """Light curves beyond the local-memory sort take the radix path and
    give the same periodogram."""
    lcs, cat = sawtooth_catalog(rng, [(150, 0.7), (90, 0.4)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 50)
    local = clperiod.supersmoother(cat, grid, variant=variant, memory="global",
                                   periodogram=True, top_k=2)
    monkeypatch.setattr(ss_module, "bitonic_capacity", lambda info: 64)
    radix = clperiod.supersmoother(cat, grid, variant=variant, memory="global",
                                   periodogram=True, top_k=2)
    np.testing.assert_array_equal(radix.power, local.power)
    np.testing.assert_array_equal(radix.top_k_frequency, local.top_k_frequency)


def test_light_curve_longer_than_local_memory(rng):
    """5000 points: more than the bitonic sort holds on any device."""
    n = 5000
    t = 58000 + np.sort(rng.uniform(0, 900, n))
    y = 0.3 * ((t / 0.61) % 1.0) + rng.normal(0, 0.05, n)
    dy = np.full(n, 0.05)
    grid = FrequencyGrid.from_range(1 / 0.61 - 0.002, 1 / 0.61 + 0.002, 3)
    r = clperiod.supersmoother(t, grid, y, dy, variant="single_pass", periodogram=True)
    expected = ref.supersmoother_power(t, y, dy, grid.frequencies(), variant="single_pass",
                                       scale_free=True)
    np.testing.assert_allclose(r.power[0], expected, rtol=1e-8)


def test_batches_slabs_and_two_workers_match_one(rng, monkeypatch):
    """A tiny device forces object groups and frequency batches, two devices
    split a single object's grid into slabs; worker threads share the items
    and the results equal the one-shot run."""
    lcs, cat = sawtooth_catalog(rng, [(30 + 7 * k, 0.3 + 0.1 * k) for k in range(6)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 300)
    options = ss_module._Options.build("original", 9.0, None, False, "fp64", "auto", 4, True)
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 1_500_000, "max_alloc": 400_000})
    path = ss_module._choose_path([small], cat, options)
    assert len(ss_module._plan([small], cat.lengths, grid.nf, options, path)) > 2
    slabs = ss_module._plan([small, small], cat.lengths[:1], grid.nf, options, path)
    assert [(i.k_lo, i.k_hi) for i in slabs] == [(0, 75), (75, 150), (150, 225), (225, 300)]

    threads = set()
    run_item = ss_module._run_item

    def spy(*args, **kwargs):
        threads.add(threading.get_ident())
        return run_item(*args, **kwargs)

    for subset in (np.arange(6), [3]):
        part = cat.subset(subset)
        whole = clperiod.supersmoother(part, grid, periodogram=True, top_k=4, device=info)
        with monkeypatch.context() as patch:
            patch.setattr(ss_module, "select_devices", lambda _: [small, small])
            patch.setattr(ss_module, "_run_item", spy)
            split = clperiod.supersmoother(part, grid, periodogram=True, top_k=4)
        np.testing.assert_array_equal(split.power, whole.power)
        np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)
        np.testing.assert_array_equal(split.top_k_power, whole.top_k_power)
    assert len(threads) == 2


def uneven_frequencies(rng, n=50):
    """Uniform in period and log-spaced frequencies, shuffled, with repeats."""
    values = np.concatenate([1.0 / np.linspace(0.25, 5.0, n // 2),
                             np.geomspace(0.2, 4.0, n - n // 2)])
    return rng.permutation(np.concatenate([values, values[:4]]))


@pytest.mark.slow
@pytest.mark.parametrize("variant,memory", VARIANTS)
@pytest.mark.parametrize("compat", [False, True])
def test_frequency_arrays_match_reference(rng, variant, memory, compat):
    """Each frequency of an array as the reference evaluates it; periodogram columns
    in the array's order, peaks the local maxima along frequency."""
    lcs, cat = sawtooth_catalog(rng, [(12, 0.7), (81, 2.3), (120, 0.55)])
    frequencies = uneven_frequencies(rng)
    grid = FrequencyGrid.from_frequencies(frequencies)
    periodic = not (compat and variant == "original")
    r = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, compat=compat,
                               periodogram=True, top_k=3)
    assert r.grid is grid and r.power.shape == (3, frequencies.size)
    distinct, first = np.unique(frequencies, return_index=True)
    for k, (t, y, dy) in enumerate(lcs):
        expected = ref.supersmoother_power(t, y, dy, frequencies, variant=variant,
                                           periodic=periodic, scale_free=not compat)
        np.testing.assert_allclose(r.power[k], expected, rtol=1e-8, atol=1e-9 * len(t))
        peaks = numpy_peaks(r.power[k, first], 3)
        np.testing.assert_array_equal(r.top_k_frequency[k, :len(peaks)], distinct[peaks])
        np.testing.assert_array_equal(r.top_k_power[k, :len(peaks)], r.power[k, first[peaks]])


@pytest.mark.parametrize("variant,memory", VARIANTS)
def test_frequency_arrays_in_fp32_and_in_pieces(rng, variant, memory, monkeypatch):
    """fp32 (phases from float pairs of times and frequencies) within fp32 rounding of
    fp64 at raw MJD epochs; slabs, batches and the radix path give the one-shot result."""
    lcs, cat = sawtooth_catalog(rng, [(30, 0.7), (81, 0.31), (128, 2.3)])
    grid = FrequencyGrid.from_frequencies(uneven_frequencies(rng, 200))
    r64 = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodogram=True,
                                 top_k=2)
    r32 = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodogram=True,
                                 precision="fp32")
    assert np.median(np.abs(r32.power - r64.power) / cat.lengths[:, None]) < 1e-5
    np.testing.assert_array_equal(r32.frequency_best, r64.frequency_best)
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 1_500_000, "max_alloc": 400_000})
    monkeypatch.setattr(ss_module, "select_devices", lambda _: [small, small])
    monkeypatch.setattr(ss_module, "bitonic_capacity", lambda info: 64)
    items = []
    run_item = ss_module._run_item
    monkeypatch.setattr(ss_module, "_run_item", lambda *a, **k: items.append(a[1])
                        or run_item(*a, **k))
    split = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodogram=True,
                                   top_k=2)
    assert len(items) > 2
    np.testing.assert_array_equal(split.power, r64.power)
    np.testing.assert_array_equal(split.top_k_frequency, r64.top_k_frequency)


def test_a_device_listed_twice_gives_each_thread_its_own_inputs(rng, monkeypatch):
    """Two worker threads on one device keep their object groups' inputs apart
    (a shared cache let one thread's slabs use the other's group)."""
    _, cat = sawtooth_catalog(rng, [(30, 0.7), (81, 0.31), (128, 2.3)])
    grid = FrequencyGrid.from_frequencies(uneven_frequencies(rng, 200))
    whole = clperiod.supersmoother(cat, grid, periodogram=True)
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 1_500_000, "max_alloc": 400_000})
    monkeypatch.setattr(ss_module, "select_devices", lambda _: [small, small])
    monkeypatch.setattr(ss_module, "bitonic_capacity", lambda info: 64)
    both_started = threading.Barrier(2, timeout=30)
    states: dict[int, set[int]] = {}
    run_item = ss_module._run_item

    def recorded(state, *args, **kwargs):
        if threading.get_ident() not in states:
            both_started.wait()
        states.setdefault(threading.get_ident(), set()).add(id(state))
        return run_item(state, *args, **kwargs)

    monkeypatch.setattr(ss_module, "_run_item", recorded)
    split = clperiod.supersmoother(cat, grid, periodogram=True)
    assert len(states) == 2 and all(len(ids) == 1 for ids in states.values())
    assert len(set.union(*states.values())) == 2
    np.testing.assert_array_equal(split.power, whole.power)


def test_compat_defaults_and_fmod_phases(rng):
    lcs, cat = sawtooth_catalog(rng, [(40, 0.37)])
    grid = FrequencyGrid.from_range(0.5, 3.0, 40)
    r = clperiod.supersmoother(cat, grid, compat=True, periodogram=True)
    assert r.variant == "original" and not r.periodic and r.compat
    t, y, dy = lcs[0]
    expected = ref.supersmoother_power(t, y, dy, grid.frequencies(), periodic=False)
    np.testing.assert_allclose(r.power[0], expected, rtol=1e-10, atol=1e-12)
    periodic = clperiod.supersmoother(cat, grid, compat=True, periodic=True, periodogram=True)
    assert periodic.periodic and not np.allclose(periodic.power, r.power)


@pytest.mark.slow
def test_recovers_eclipsing_period_where_lombscargle_picks_the_harmonic():
    rng = np.random.default_rng(0)
    n, period = 150, 0.8
    t = 58000 + np.sort(rng.uniform(0, 200, n))
    phase = ((t - 58000) / period) % 1.0

    def dip(center, width):
        d = np.abs(((phase - center + 0.5) % 1) - 0.5)
        return np.where(d < width, 1 - d / width, 0)

    y = 15 - dip(0.0, 0.08) - 0.3 * dip(0.5, 0.08) + rng.normal(0, 0.03, n)
    dy = np.full(n, 0.03)
    grid = FrequencyGrid.from_range(0.2, 5, 20000)
    assert clperiod.lombscargle(t, grid, y, dy).period[0] == pytest.approx(period / 2, rel=1e-3)
    for variant in ("original", "single_pass"):
        r = clperiod.supersmoother(t, grid, y, dy, variant=variant)
        assert r.period[0] == pytest.approx(period, rel=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["original", "single_pass"])
def test_recovers_sawtooth_period(variant):
    rng = np.random.default_rng(1)
    n, period = 150, 0.8
    t = 58000 + np.sort(rng.uniform(0, 200, n))
    y = 15 + 0.5 * (((t - 58000) / period) % 1.0) ** 6 + rng.normal(0, 0.03, n)
    grid = FrequencyGrid.from_range(0.2, 5, 20000)
    r = clperiod.supersmoother(t, grid, y, np.full(n, 0.03), variant=variant)
    assert r.period[0] == pytest.approx(period, rel=1e-3)


@pytest.mark.slow
def test_stripe82_fp32_agrees_with_fp64():
    """Stripe 82 RR Lyrae, f in [1, 3.5) d^-1 (their periods), 40 stars on
    the CPU; the full 136-star, 330,000-frequency comparison runs in bench/."""
    from clperiod.io import load_example

    cat = load_example("stripe82").subset(np.arange(40))
    grid = FrequencyGrid.from_range(1.0, 3.5, 12000)
    r64 = clperiod.supersmoother(cat, grid, variant="single_pass")
    r32 = clperiod.supersmoother(cat, grid, variant="single_pass", precision="fp32")
    assert np.mean(np.isclose(r32.period, r64.period, rtol=1e-6)) >= 0.99


def test_without_uncertainties_uses_unit_weights(rng):
    lcs, _ = sawtooth_catalog(rng, [(50, 0.41)])
    t, y, _ = lcs[0]
    grid = FrequencyGrid.from_range(0.5, 3.0, 30)
    r = clperiod.supersmoother(t, grid, y, variant="single_pass", periodogram=True)
    expected = ref.supersmoother_power(t, y, np.ones_like(t), grid.frequencies(),
                                       variant="single_pass", scale_free=True)
    np.testing.assert_allclose(r.power[0], expected, rtol=1e-8, atol=1e-9)


def test_degenerate_objects_get_status(rng):
    t = np.sort(rng.uniform(0, 30, 40))
    cat = Catalog.from_lightcurves([(t, np.full(40, 3.0), np.ones(40)),
                                    (t[:7], np.sin(t[:7]), np.ones(7)),
                                    (t, np.sin(t), np.ones(40))])
    grid = FrequencyGrid.from_range(0.5, 3.0, 30)
    r = clperiod.supersmoother(cat, grid, variant="single_pass", periodogram=True)
    assert list(r.status) == [Status.ZERO_VARIANCE, Status.TOO_FEW_POINTS, Status.OK]
    assert np.isnan(r.period[:2]).all() and np.isfinite(r.period[2])
    assert np.isnan(r.power[:2]).all() and np.isfinite(r.power[2]).all()
    original = clperiod.supersmoother(cat, grid)  # 7 points are enough for Friedman's
    assert list(original.status) == [Status.ZERO_VARIANCE, Status.OK, Status.OK]
    flat = clperiod.supersmoother(cat.subset([0]), grid)
    assert np.isnan(flat.period).all()


def test_bad_input(rng):
    t = np.sort(rng.uniform(0, 30, 40))
    y = np.sin(t)
    grid = FrequencyGrid.from_range(0.5, 3.0, 30)
    with pytest.raises(ValueError, match="alpha"):
        clperiod.supersmoother(t, grid, y, alpha=10.5)
    with pytest.raises(ValueError, match="alpha"):
        clperiod.supersmoother(t, grid, y, alpha=float("nan"))
    with pytest.raises(TypeError, match="alpha"):
        clperiod.supersmoother(t, grid, y, alpha="9")
    with pytest.raises(ValueError, match="positive"):
        clperiod.supersmoother(t, FrequencyGrid.from_range(0.0, 3.0, 30), y)
    with pytest.raises(ValueError, match="positive"):
        clperiod.supersmoother(t, FrequencyGrid.from_frequencies([0.5, 0.0, 2.0]), y)
    with pytest.raises(ValueError, match="dy"):
        clperiod.supersmoother(t, grid, y, np.where(t > 10, 0.1, -0.1))
    with pytest.raises(ValueError):
        clperiod.supersmoother(t, grid, np.where(t > 10, np.nan, y))
    with pytest.raises(ValueError):
        clperiod.supersmoother(t, grid, y[:-1])
    with pytest.raises(ValueError, match="variant"):
        clperiod.supersmoother(t, grid, y, variant="fast")
    with pytest.raises(ValueError, match="always periodic"):
        clperiod.supersmoother(t, grid, y, variant="single_pass", periodic=False)
    with pytest.raises(ValueError, match="local-memory"):
        clperiod.supersmoother(t, grid, y, memory="local")
    long = np.arange(200.0)
    with pytest.raises(ValueError, match="memory='local'"):
        clperiod.supersmoother(long, grid, np.sin(long), variant="single_pass", memory="local")
    with pytest.raises(ValueError, match="top_k"):
        clperiod.supersmoother(t, grid, y, top_k=0)
    with pytest.raises(TypeError, match="grid"):
        clperiod.supersmoother(t, grid.frequencies(), y)
    with pytest.raises(ValueError, match="y"):
        clperiod.supersmoother(t, grid)
    r = clperiod.supersmoother(t, grid, np.where(t > 10, np.nan, y), nan_policy="omit")
    assert r.catalog.n_dropped == np.sum(t > 10)


def test_object_too_large_for_the_device_raises(rng, monkeypatch):
    info = clperiod.select_devices()[0]
    tiny = type(info)(**{**info.__dict__, "global_mem": 100_000, "max_alloc": 50_000})
    monkeypatch.setattr(ss_module, "select_devices", lambda _: [tiny])
    t = np.arange(2000.0)
    with pytest.raises(MemoryError, match="object 0"):
        clperiod.supersmoother(t, FrequencyGrid.from_range(0.5, 3.0, 30), np.sin(t))


def test_profile_reports_stages(rng):
    lcs, cat = sawtooth_catalog(rng, [(30, 0.7)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 40)
    r = clperiod.supersmoother(cat, grid, profile=True, periodogram=True)
    assert {"fold_sort_gather_s", "smooth_s", "chi2_s", "peaks_s", "copy_s"} <= set(r.timings)
    assert r.device_bytes > 0
    fused = clperiod.supersmoother(cat, grid, variant="single_pass", profile=True)
    assert "fused_s" in fused.timings


@pytest.mark.parametrize("variant", ["original", "single_pass"])
def test_same_best_period_as_jakevdp_supersmoother(rng, variant):
    """Qualitative cross-check with the ``supersmoother`` package (not
    bit-compatible: it smooths in time with its own span rules)."""
    jvp = pytest.importorskip("supersmoother")
    f_true = 1 / 0.73
    t = 5000.0 + np.sort(rng.uniform(0, 30, 100))
    dy = np.full(t.size, 0.1)
    phase = 2 * np.pi * f_true * t
    y = np.sin(phase) + 0.5 * np.sin(2 * phase + 1) + rng.normal(0, 0.1, t.size)
    grid = FrequencyGrid.from_step(0.6, 0.2 / 30, 345)
    freqs = grid.frequencies()
    chi0 = np.sum(((y - np.average(y, weights=dy**-2)) / dy) ** 2)
    fits = (jvp.SuperSmoother(alpha=9.0, period=1 / f).fit(t, y, dy).predict(t) for f in freqs)
    theirs = np.array([1 - np.sum(((y - fit) / dy) ** 2) / chi0 for fit in fits])
    ours = clperiod.supersmoother(t, grid, y, dy, variant=variant)
    assert abs(ours.frequency_best[0] - freqs[np.argmax(theirs)]) <= 1.01 * grid.df
    assert abs(ours.frequency_best[0] - f_true) <= grid.df


def test_repeated_searches_reuse_the_thread_pool(rng):
    """Slabs and batch buffers come from the calling thread's pool and go back
    after each item: a second search allocates nothing new; another thread
    has a pool of its own."""
    _, cat = sawtooth_catalog(rng, [(40, 0.4), (55, 0.7)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 400)
    info = clperiod.select_devices()[0]
    pool = clperiod.engine.devices.thread_memory_pool(info)
    first = clperiod.supersmoother(cat, grid, device=info)
    managed, active = pool.managed_bytes, pool.active_bytes
    assert managed > active  # the run's buffers, held for the next run
    again = clperiod.supersmoother(cat, grid, device=info)
    assert (pool.managed_bytes, pool.active_bytes) == (managed, active)
    np.testing.assert_array_equal(again.top_k_power, first.top_k_power)
    other = []
    thread = threading.Thread(target=lambda: other.append(
        clperiod.engine.devices.thread_memory_pool(info)))
    thread.start()
    thread.join()
    assert other[0] is not pool and clperiod.engine.devices.thread_memory_pool(info) is pool


def test_pools_are_trimmed_only_once_every_device_is_idle(rng, monkeypatch):
    """Freeing device memory holds the GIL and would stall the other devices'
    threads: the worker threads' pools are trimmed after their last item,
    never between items."""
    _, cat = sawtooth_catalog(rng, [(40, 0.4), (55, 0.7), (70, 1.3)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 400)
    info = clperiod.select_devices()[0]
    monkeypatch.setattr(ss_module, "select_devices", lambda _: [info, info])
    events: list[tuple[str, object]] = []
    run_item = ss_module._run_item

    def item(state, *args, **kwargs):
        result = run_item(state, *args, **kwargs)
        events.append(("item", state.pool))
        return result

    monkeypatch.setattr(ss_module, "_run_item", item)
    monkeypatch.setattr(ss_module, "trim_memory_pool",
                        lambda info, pool: events.append(("trim", pool)))
    split = clperiod.supersmoother(cat, grid)
    kinds = [kind for kind, _ in events]
    n_items = kinds.count("item")
    assert n_items == 4  # two frequency slabs per device thread
    assert kinds == ["item"] * n_items + ["trim"] * (len(kinds) - n_items)
    pools = {id(pool) for kind, pool in events if kind == "item"}
    assert {id(pool) for kind, pool in events if kind == "trim"} == pools
    whole = clperiod.supersmoother(cat, grid, device=info)
    np.testing.assert_array_equal(split.top_k_power, whole.top_k_power)


# {{{ units: scale and offset invariance


UNIT_CASES = [("original", "global", True), ("original", "global", False),
              ("single_pass", "auto", True), ("single_pass", "global", True)]


def counts_light_curves(rng, n_objects):
    """Light curves in counts (y ~ 1e4, dy = 100): the seed's slope guard and
    its initial residual minimum 1e20 make it depend on these units."""
    lcs = []
    for _ in range(n_objects):
        n = int(rng.integers(20, 100))
        t = 58000 + np.sort(rng.uniform(0, 100, n))
        y = 1e4 + 300 * np.sin(2 * np.pi * t / rng.uniform(0.3, 3)) + rng.normal(0, 100, n)
        lcs.append((t, y, np.full(n, 100.0)))
    return lcs


def scaled_catalog(lcs, scales, offset=0.0):
    """The light curves at each scale of y and dy (scale-major order)."""
    return Catalog.from_lightcurves([(t, s * (y + offset), s * dy)
                                     for s in scales for t, y, dy in lcs])


def assert_same_periodogram(power, base, n, precision, offset_ratio=0.0):
    """Periodograms of one light curve in other units agree within the precision.

    fp64: rounding of the normalised inputs (plus the rounding of an offset
    ``offset_ratio`` times the spread of y). fp32: the smoother's inputs are
    normalised in float64 first, so they round to the same float32 values
    almost always; a rare different rounding can move one span choice.
    """
    change = np.abs(power.astype(np.float64) - base) / n
    inputs = 100 * np.finfo(np.float64).eps * offset_ratio
    if precision == "fp64":
        assert change.max() <= 1e-10 + inputs
    else:
        assert np.quantile(change, 0.95) <= 1e-6 + inputs
        assert change.max() <= 2e-3 + inputs


@pytest.mark.slow
@pytest.mark.parametrize("variant,memory,periodic", UNIT_CASES)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_power_does_not_depend_on_units(rng, variant, memory, periodic, precision):
    """y ~ 1e4 and dy = 100 in counts, the same divided by 100, and scaled to
    1e-30 ... 1e30 and 1e-200 ... 1e200: the same periodograms and best periods."""
    lcs = counts_light_curves(rng, 12)
    scales = [1.0, 1e-2, 1e-30, 1e30, 1e-200, 1e200]
    grid = FrequencyGrid.from_range(0.2, 4.0, 400)
    r = clperiod.supersmoother(scaled_catalog(lcs, scales), grid, variant=variant,
                               memory=memory, periodic=periodic, precision=precision,
                               periodogram=True)
    assert (r.status == Status.OK).all() and np.isfinite(r.power).all()
    power = r.power.reshape(len(scales), len(lcs), grid.nf)
    best = r.frequency_best.reshape(len(scales), len(lcs))
    n = np.array([len(t) for t, _, _ in lcs])[:, None]
    for k in range(1, len(scales)):
        assert_same_periodogram(power[k], power[0], n, precision)
        np.testing.assert_array_equal(best[k], best[0])


@pytest.mark.parametrize("variant,memory,periodic", UNIT_CASES)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(10, 150),
       log_scale=st.floats(-30, 30), log_offset=st.floats(-2, 8), sign=st.sampled_from([-1, 1]))
@pytest.mark.slow
def test_power_is_invariant_to_scale_and_offset(variant, memory, periodic, precision, seed, n,
                                                log_scale, log_offset, sign):
    """Property: y and dy scaled together by 1e-30 ... 1e30, or y offset by
    up to 1e8 times its spread, leave every periodogram bin unchanged within
    the precision (and the rounding of the offset input)."""
    rng = np.random.default_rng(seed)
    t = 5000 + np.sort(rng.uniform(0, 50, n))
    y = 0.3 * ((t / rng.uniform(0.2, 3)) % 1.0) ** 3 + rng.normal(0, 0.1, n)
    dy = rng.uniform(0.05, 0.2, n)
    offset = sign * 10**log_offset * np.std(y)
    cat = Catalog.from_lightcurves([(t, y, dy), (t, y * 10**log_scale, dy * 10**log_scale),
                                    (t, y + offset, dy)])
    grid = FrequencyGrid.from_range(0.2, 4.0, 64)
    r = clperiod.supersmoother(cat, grid, variant=variant, memory=memory, periodic=periodic,
                               precision=precision, periodogram=True)
    assert (r.status == Status.OK).all()
    base = r.power[0].astype(np.float64)
    assert_same_periodogram(r.power[1], base, n, precision)
    assert_same_periodogram(r.power[2], base, n, precision, abs(offset) / np.std(y))


@pytest.mark.slow
def test_compat_keeps_the_seeds_dependence_on_units(rng):
    """compat=True reproduces the seed, units and all: counts and counts / 100
    each match the seed's NumPy reference, and differ from each other."""
    lcs = counts_light_curves(rng, 6)
    grid = FrequencyGrid.from_range(0.2, 4.0, 100)
    r = clperiod.supersmoother(scaled_catalog(lcs, [1.0, 1e-2]), grid, compat=True,
                               periodogram=True)
    for k, (t, y, dy) in enumerate(lcs):
        for s, row in ((1.0, k), (1e-2, len(lcs) + k)):
            expected = ref.supersmoother_power(t, s * y, s * dy, grid.frequencies(),
                                               periodic=False)
            np.testing.assert_allclose(r.power[row], expected, rtol=1e-8, atol=1e-9 * len(t))
    assert np.abs(r.power[:len(lcs)] - r.power[len(lcs):]).max() > 0.1


@pytest.mark.parametrize("precision,scale", [("fp32", 1e-25), ("fp32", 1e25), ("fp64", 1e30)])
def test_compat_outside_the_seeds_range_raises(rng, precision, scale):
    """fp32 1/dy^2 overflows or underflows; in fp64 residuals of 1e30 exceed
    the seed's initial residual minimum 1e20 (all-NaN periodograms)."""
    lcs = counts_light_curves(rng, 2)
    cat = scaled_catalog(lcs, [1.0, scale])
    grid = FrequencyGrid.from_range(0.2, 4.0, 40)
    with pytest.raises(ValueError, match=r"compat=True .* object 2 .* compat=False"):
        clperiod.supersmoother(cat, grid, compat=True, precision=precision)
    free = clperiod.supersmoother(cat, grid, precision=precision, periodogram=True)
    assert np.isfinite(free.power).all()
    np.testing.assert_array_equal(free.frequency_best[2:], free.frequency_best[:2])


# }}}
