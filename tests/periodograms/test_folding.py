"""Phase folding and stable sorting on the device against NumPy."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from clperiod import Catalog, FrequencyGrid
from clperiod.io import load_example
from clperiod.periodograms import folding as clsort


def reference(catalog: Catalog, grid: FrequencyGrid, k: int):
    """float64 phases frac((t - t0) f) and the stable (phase, index) order of object k."""
    t, _, _ = catalog.lightcurve(k)
    tau = t - t.min()
    phase = np.mod(np.outer(grid.frequencies(), tau), 1.0)
    order = np.argsort(phase, axis=1, kind="stable")
    return np.take_along_axis(phase, order, axis=1), order


def check(result, catalog, grid, *, atol, exact_order=True):
    for k in range(catalog.n_objects):
        phase, order = result.object(k)
        ref_phase, ref_order = reference(catalog, grid, k)
        assert phase.shape == ref_phase.shape
        np.testing.assert_allclose(phase, ref_phase, rtol=0, atol=atol)
        assert ((phase >= 0) & (phase < 1)).all()
        assert (np.diff(phase, axis=1) >= 0).all()
        t = catalog.lightcurve(k)[0]
        # the permutation reproduces the phases it claims
        recomputed = np.mod(np.outer(grid.frequencies(), t - t.min()), 1.0)
        np.testing.assert_allclose(np.take_along_axis(recomputed, order.astype(np.int64), 1),
                                   phase, rtol=0, atol=atol)
        if exact_order:
            np.testing.assert_array_equal(order, ref_order)


def lightcurves(rng, lengths, epoch=58000.0, baseline=300.0):
    return [(epoch + np.sort(rng.uniform(0, baseline, n)), rng.normal(size=n)) for n in lengths]


@pytest.mark.parametrize("method", ["bitonic", "radix"])
@pytest.mark.parametrize("lengths", [[1], [2], [3], [5, 1, 64], [100, 7, 333], [2048]])
def test_fp64_matches_numpy(rng, method, lengths):
    catalog = Catalog.from_lightcurves(lightcurves(rng, lengths))
    grid = FrequencyGrid.from_range(0.05, 5.0, 37)
    result = clsort.fold_and_sort(catalog, grid, method=method)
    assert result.method == method
    check(result, catalog, grid, atol=1e-11)


def test_threads_of_one_device_enqueue_radix_sorts_in_turn(rng, monkeypatch):
    """The radix sorts' kernels belong to the context: each thread enqueues its
    sorts holding the context's lock, and threads sorting at once get the
    one-thread result."""
    catalog = Catalog.from_lightcurves(lightcurves(rng, [300, 41, 129]))
    grid = FrequencyGrid.from_range(0.05, 5.0, 23)
    alone = clsort.fold_and_sort(catalog, grid, method="radix")
    sorters = clsort._radix_sorters
    held = []

    def recording(context, real):
        by_phase, by_segment, lock = sorters(context, real)

        def recorded(sort):
            def call(*args, **kwargs):
                held.append(lock.locked())
                return sort(*args, **kwargs)

            return call

        return recorded(by_phase), recorded(by_segment), lock

    monkeypatch.setattr(clsort, "_radix_sorters", recording)
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: clsort.fold_and_sort(catalog, grid, method="radix"),
                             range(8)))
    assert len(held) == 16 and all(held)
    for run in runs:
        np.testing.assert_array_equal(run.phase, alone.phase)
        np.testing.assert_array_equal(run.order, alone.order)


def test_auto_switches_to_radix_beyond_local_memory(rng):
    catalog = Catalog.from_lightcurves(lightcurves(rng, [clsort.BITONIC_MAX + 1, 10]))
    grid = FrequencyGrid.from_range(0.1, 2.0, 5)
    result = clsort.fold_and_sort(catalog, grid)
    assert result.method == "radix"
    check(result, catalog, grid, atol=1e-11)
    with pytest.raises(ValueError, match="bitonic"):
        clsort.fold_and_sort(catalog, grid, method="bitonic")


@pytest.mark.parametrize("method", ["bitonic", "radix"])
def test_ties_keep_input_order(method):
    # duplicate and all-equal times give exactly equal phases
    t_dup = np.repeat(np.array([0.0, 0.3, 0.7, 1.1]), 5)
    t_same = np.full(33, 5.0)
    t_desc = np.linspace(0.0, 0.99, 40)  # phases of f=1 are already sorted ...
    catalog = Catalog.from_lightcurves([(t_dup, t_dup), (t_same, t_same), (t_desc, t_desc)])
    grid = FrequencyGrid.from_step(1.0, 0.25, 3)  # ... and at f=1.25 they wrap once
    result = clsort.fold_and_sort(catalog, grid, method=method)
    check(result, catalog, grid, atol=1e-14)
    _, order = result.object(1)
    np.testing.assert_array_equal(order, np.tile(np.arange(33), (3, 1)))


@pytest.mark.parametrize("method", ["bitonic", "radix"])
def test_fp32_phases_with_raw_mjd(rng, method):
    catalog = load_example("stripe82").subset(np.arange(6))
    grid = FrequencyGrid.from_range(0.1, 10.0, 50)
    result = clsort.fold_and_sort(catalog, grid, precision="fp32", method=method)
    assert result.phase.dtype == np.float32
    check(result, catalog, grid, atol=5e-7, exact_order=False)


def test_methods_agree_and_bad_options(rng):
    catalog = Catalog.from_lightcurves(lightcurves(rng, [50, 120, 9]))
    grid = FrequencyGrid.from_range(0.2, 3.0, 11)
    a = clsort.fold_and_sort(catalog, grid, method="bitonic")
    b = clsort.fold_and_sort(catalog, grid, method="radix")
    np.testing.assert_array_equal(a.order, b.order)
    np.testing.assert_array_equal(a.phase, b.phase)
    with pytest.raises(ValueError):
        clsort.fold_and_sort(catalog, grid, method="quick")
    with pytest.raises(ValueError):
        clsort.fold_and_sort(catalog, grid, precision="fp16")


@pytest.mark.parametrize("method", ["bitonic", "radix"])
def test_frequency_chunks_are_placed_in_order(rng, monkeypatch, method):
    monkeypatch.setattr(clsort, "_FREQS_PER_LAUNCH", 7)
    catalog = Catalog.from_lightcurves(lightcurves(rng, [30, 4, 17]))
    grid = FrequencyGrid.from_range(0.2, 3.0, 20)
    check(clsort.fold_and_sort(catalog, grid, method=method), catalog, grid, atol=1e-11)


@pytest.mark.parametrize("method", ["bitonic", "radix"])
@pytest.mark.parametrize("precision, atol", [("fp64", 1e-11), ("fp32", 5e-7)])
def test_frequency_arrays_fold_in_their_order(rng, method, precision, atol):
    """Any frequencies (uniform in period, unsorted, repeated) at raw MJD epochs; fp32
    phases from the float pairs of times and frequencies."""
    catalog = Catalog.from_lightcurves(lightcurves(rng, [5, 1, 64, 200]))
    values = rng.permutation(1.0 / np.linspace(0.2, 10.0, 23))
    grid = FrequencyGrid.from_frequencies(np.concatenate([values, values[:3]]))
    result = clsort.fold_and_sort(catalog, grid, precision=precision, method=method)
    assert result.nf == 26
    check(result, catalog, grid, atol=atol, exact_order=precision == "fp64")
