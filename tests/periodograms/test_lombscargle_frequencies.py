"""Lomb-Scargle on arbitrary frequency arrays (FrequencyGrid.from_frequencies): every
frequency as it would be evaluated alone, and as astropy's exact methods evaluate it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.timeseries import LombScargle

from clperiod import Catalog, FrequencyArray, FrequencyGrid, Status, lombscargle
from clperiod.engine import kernels
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.periodograms import stats
from clperiod.periodograms.lombscargle import lombscargle_async
from clperiod.testing import sinusoid_lightcurve

NORMALIZATIONS = ["standard", "model", "log", "psd"]
#: Largest difference from the power of each frequency alone, relative to the peak power.
ALONE = {"fp64": 1e-12, "fp32": 1e-6}


def simulated(rng, n=150, baseline=300.0, epoch=58000.0, period=2.7):
    """Raw MJD epochs (58000 + up to 300 days)."""
    return sinusoid_lightcurve(rng, n, period, baseline=baseline, epoch=epoch, mean=12.0,
                               amplitude=0.4, phase=0.3, noise=0.3, dy=(0.1, 0.3))


def uneven(rng, n=120):
    """Uniform in period and log-spaced frequencies, shuffled, with repeats."""
    values = np.concatenate([1.0 / np.linspace(0.3, 10.0, n // 2),
                             np.geomspace(0.02, 3.0, n - n // 2)])
    return rng.permutation(np.concatenate([values, values[:7]]))


def one_at_a_time(t, y, dy, frequencies, **options):
    """The power of each frequency evaluated alone (a uniform grid of one)."""
    return np.array([
        lombscargle(t, FrequencyGrid(f, 1.0, 1), y, dy, periodogram=True, **options).power[0, 0]
        for f in frequencies
    ])


def peaks_reference(power, k):
    """Indices of the k highest local maxima (first of equal maxima)."""
    p = np.where(np.isnan(power), -np.inf, power)
    left = np.concatenate([[-np.inf], p[:-1]])
    right = np.concatenate([p[1:], [-np.inf]])
    idx = np.flatnonzero((p > left) & (p >= right))
    return idx[np.lexsort((idx, -p[idx]))][:k]


@pytest.fixture
def arbitrary_variants(monkeypatch):
    """The ``arbitrary`` render parameter of every ls_tiles and ls_prepare program built."""
    seen = []
    original = kernels.get_kernels

    def recording(context, template, names, **params):
        if template in ("lombscargle", "lsprepare"):
            seen.append(params["arbitrary"])
        return original(context, template, names, **params)

    monkeypatch.setattr(kernels, "get_kernels", recording)
    return seen


# {{{ each frequency as alone


@pytest.mark.parametrize("precision, memory", itertools.product(["fp64", "fp32"],
                                                                 ["local", "global"]))
@pytest.mark.parametrize("method, fit_mean, center_data", [
    ("generalized", True, True), ("generalized", False, False), ("standard", False, False)])
def test_every_frequency_as_alone(rng, arbitrary_variants, precision, memory, method, fit_mean,
                                  center_data):
    t, y, dy = simulated(rng)
    dy = dy if method == "generalized" else None
    frequencies = uneven(rng)
    grid = FrequencyGrid.from_frequencies(frequencies)
    assert isinstance(grid, FrequencyArray)
    options = dict(method=method, fit_mean=fit_mean, center_data=center_data,
                   precision=precision)
    result = lombscargle(t, grid, y, dy, memory=memory, periodogram=True, **options)
    assert arbitrary_variants == [True, True]
    assert result.grid is grid and result.power.shape == (1, frequencies.size)
    alone = one_at_a_time(t, y, dy, frequencies[::6], **options)
    error = np.abs(result.power[0, ::6] - alone)
    assert error.max() <= ALONE[precision] * alone.max()
    distinct, positions, counts = np.unique(frequencies, return_inverse=True,
                                            return_counts=True)
    assert counts.max() == 2
    first = np.full(distinct.size, -1)
    first[positions[::-1]] = np.arange(frequencies.size)[::-1]
    np.testing.assert_array_equal(result.power[0], result.power[0, first[positions]])


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("fit_mean, center_data", [(True, True), (False, True), (False, False)])
def test_equals_astropy_exact_sums(rng, normalization, fit_mean, center_data):
    t, y, dy = simulated(rng, n=90)
    frequencies = uneven(rng)
    options = dict(normalization=normalization, fit_mean=fit_mean, center_data=center_data)
    result = lombscargle(t, FrequencyGrid.from_frequencies(frequencies), y, dy,
                         periodogram=True, **options)
    # times relative to the first: astropy's own phases lose ~1e-16 f t to raw MJDs
    expected = LombScargle(t - t[0], y, dy, **options).power(frequencies, method="cython")
    np.testing.assert_allclose(result.power[0], expected, rtol=1e-10)


def test_fp32_keeps_phases_of_raw_epochs(rng):
    """Ten years of MJDs and periods down to an hour (f t up to 9e4 cycles): fp32 powers
    stay within 1e-5 of fp64 as on a uniform grid."""
    t, y, dy = sinusoid_lightcurve(rng, 200, 0.137, baseline=3650.0, epoch=58000.0,
                                   amplitude=0.4, noise=0.3, dy=(0.1, 0.3))
    frequencies = rng.permutation(np.geomspace(0.01, 24.0, 400))
    grid = FrequencyGrid.from_frequencies(frequencies)
    runs = {p: lombscargle(t, grid, y, dy, precision=p, periodogram=True).power[0]
            for p in ("fp64", "fp32")}
    assert np.max(np.abs(runs["fp32"] - runs["fp64"])) < 1e-5
    expected = LombScargle(t - t[0], y, dy).power(frequencies, method="cython")
    np.testing.assert_allclose(runs["fp64"], expected, rtol=1e-9)


def test_compensated_fp32_sums(rng, monkeypatch):
    """The Kahan-compensated fp32 variant (long light curves) of the array kernel."""
    monkeypatch.setattr(LS_MODULE, "COMPENSATE_ABOVE", 100)
    t, y, dy = simulated(rng, n=400)
    frequencies = uneven(rng, 60)
    grid = FrequencyGrid.from_frequencies(frequencies)
    for memory in ("local", "global"):
        fp32 = lombscargle(t, grid, y, dy, precision="fp32", memory=memory, periodogram=True)
        fp64 = lombscargle(t, grid, y, dy, memory=memory, periodogram=True)
        assert np.max(np.abs(fp32.power - fp64.power)) < 1e-6


def test_host_preparation_gives_the_device_preparation_result(rng, monkeypatch):
    """Devices without fp64 prepare the array kernel's inputs on the host; objects
    shorter than the preparation's work-group included."""
    catalog = Catalog.from_lightcurves([simulated(rng, n=n) for n in (80, 5, 3, 12)])
    grid = FrequencyGrid.from_frequencies(uneven(rng))
    for precision in ("fp64", "fp32"):
        on_device = lombscargle(catalog, grid, precision=precision, periodogram=True, top_k=3)
        with monkeypatch.context() as patch:
            patch.setattr(LS_MODULE, "_prepares_on_device", lambda info: False)
            on_host = lombscargle(catalog, grid, precision=precision, periodogram=True,
                                  top_k=3)
        assert list(on_device.status) == [Status.OK, Status.OK, Status.TOO_FEW_POINTS,
                                          Status.OK]
        np.testing.assert_array_equal(on_device.status, on_host.status)
        np.testing.assert_array_equal(on_device.top_k_frequency, on_host.top_k_frequency)
        np.testing.assert_allclose(on_device.power, on_host.power, rtol=0,
                                   atol=1e-12 if precision == "fp64" else 1e-6)


# }}}

# {{{ orders, repeats, peaks


def test_catalog_peaks_are_local_maxima_along_frequency(rng):
    lcs = [simulated(rng, n=n, period=p) for n, p in [(60, 1.3), (150, 0.71), (3, 2.0)]]
    catalog = Catalog.from_lightcurves(lcs, ids=["a", "b", "c"])
    frequencies = uneven(rng, 300)
    grid = FrequencyGrid.from_frequencies(frequencies)
    result = lombscargle(catalog, grid, periodogram=True, top_k=4)
    order = np.argsort(frequencies, kind="stable")
    distinct = np.unique(frequencies)
    for k, (t, y, dy) in enumerate(lcs[:2]):
        single = lombscargle(t, grid, y, dy, periodogram=True, top_k=4)
        np.testing.assert_array_equal(single.power[0], result.power[k])
        np.testing.assert_array_equal(single.top_k_frequency[0], result.top_k_frequency[k])
        along = np.unique(frequencies[order], return_index=True)[1]
        sorted_power = result.power[k][order][along]  # the distinct frequencies, rising
        expected = peaks_reference(sorted_power, 4)
        np.testing.assert_array_equal(result.top_k_frequency[k], distinct[expected])
        np.testing.assert_array_equal(result.top_k_power[k], sorted_power[expected])
        assert result.frequency_best[k] == distinct[expected[0]]
    assert result.status[2] == Status.TOO_FEW_POINTS and np.isnan(result.power[2]).all()


def test_a_shuffled_uniform_grid_runs_on_the_uniform_kernel(rng, arbitrary_variants):
    t, y, dy = simulated(rng, n=80)
    uniform = FrequencyGrid.from_range(0.05, 3.0, 500)
    order = rng.permutation(uniform.nf)
    shuffled = FrequencyGrid.from_frequencies(np.concatenate([uniform.frequencies()[order],
                                                              uniform.frequencies()[:3]]))
    assert isinstance(shuffled, FrequencyArray)
    result = lombscargle(t, shuffled, y, dy, periodogram=True, top_k=3)
    reference = lombscargle(t, uniform, y, dy, periodogram=True, top_k=3)
    assert arbitrary_variants == [False, False, False, False]
    np.testing.assert_array_equal(result.power[0, :500], reference.power[0, order])
    np.testing.assert_array_equal(result.power[0, 500:], reference.power[0, :3])
    np.testing.assert_allclose(result.top_k_frequency, reference.top_k_frequency, rtol=1e-15)


def test_single_and_equal_frequencies(rng):
    t, y, dy = simulated(rng, n=60)
    alone = lombscargle(t, FrequencyGrid.from_frequencies([0.37]), y, dy, periodogram=True)
    assert type(alone.grid) is FrequencyGrid and alone.grid.nf == 1
    repeated = lombscargle(t, FrequencyGrid.from_frequencies([0.37] * 5), y, dy,
                           periodogram=True, top_k=2)
    np.testing.assert_array_equal(repeated.power[0], np.full(5, alone.power[0, 0]))
    assert repeated.frequency_best[0] == 0.37 and np.isnan(repeated.top_k_frequency[0, 1])


def test_zero_frequency_is_nan_and_never_a_peak(rng):
    t, _, dy = simulated(rng, n=60)
    y = 0.01 * (t - t[0]) + rng.normal(0, 0.2, t.size)  # a trend: low frequencies are highest
    frequencies = np.array([0.3, 0.0, 0.001, 0.2, 0.0, 0.05, 0.5])
    for precision in ("fp64", "fp32"):
        result = lombscargle(t, FrequencyGrid.from_frequencies(frequencies), y, dy,
                             precision=precision, periodogram=True, top_k=2)
        zero = frequencies == 0
        assert np.isnan(result.power[0, zero]).all() and np.isfinite(result.power[0, ~zero]).all()
        assert result.frequency_best[0] == 0.001
    with pytest.raises(ValueError, match="no frequency above 0"):
        lombscargle(t, FrequencyGrid.from_frequencies([0.0, 0.0]), y, dy)


def test_false_alarm_probability_uses_the_distinct_frequencies(rng):
    t, y, dy = simulated(rng, n=70)
    frequencies = uneven(rng)
    result = lombscargle(t, FrequencyGrid.from_frequencies(frequencies), y, dy)
    for method in ("baluev", "townsend"):
        expected = stats.false_alarm_probability(
            result.power_best, n=t.size, fmax=frequencies.max(), t=t, dy=dy, method=method,
            nf=np.unique(frequencies).size)
        np.testing.assert_allclose(result.false_alarm_probability(method), expected,
                                   rtol=1e-12)


def test_async_and_the_nufft_path(rng):
    t, y, dy = simulated(rng, n=80)
    frequencies = uneven(rng)
    grid = FrequencyGrid.from_frequencies(frequencies)
    queued = lombscargle_async(t, grid, y, dy, periodogram=True).result()
    np.testing.assert_array_equal(queued.power,
                                  lombscargle(t, grid, y, dy, periodogram=True).power)
    # uneven: the type-3 NUFFT (tests/periodograms/test_lombscargle_nufft_type3.py)
    uneven_nufft = lombscargle(t, grid, y, dy, algorithm="nufft", periodogram=True)
    assert np.max(np.abs(uneven_nufft.power - queued.power)) <= 1e-9 * np.max(queued.power)
    # evenly spaced in another order: the NUFFT path on its uniform grid
    uniform = FrequencyGrid.from_range(0.05, 3.0, 300)
    backwards = FrequencyGrid.from_frequencies(uniform.frequencies()[::-1])
    nufft = lombscargle(t, backwards, y, dy, algorithm="nufft", periodogram=True)
    direct = lombscargle(t, uniform, y, dy, periodogram=True)
    np.testing.assert_allclose(nufft.power[0], direct.power[0, ::-1], rtol=0, atol=1e-8)


def test_bad_grids(rng):
    t, y, dy = simulated(rng, n=30)
    with pytest.raises(TypeError, match="grid must be a FrequencyGrid or FrequencyArray"):
        lombscargle(t, np.array([0.1, 0.2]), y, dy)
    with pytest.raises(ValueError, match="frequencies must be finite and >= 0"):
        lombscargle(t, FrequencyArray([0.1, -0.2]), y, dy)


# }}}
