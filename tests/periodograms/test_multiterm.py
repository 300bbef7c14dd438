"""Multi-term Lomb-Scargle (clperiod.periodograms.multiterm and the astropy bridge's
nterms) against astropy's exact "chi2" method."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.timeseries import LombScargle as AstropyLombScargle

from clperiod import FrequencyGrid
from clperiod.astropy import LombScargle
from clperiod.periodograms import multiterm, stats
from clperiod.periodograms.multiterm import (
    MAX_NTERMS,
    multiterm_coefficients,
    multiterm_max_power,
    multiterm_power,
)

GRID = FrequencyGrid.from_range(0.01, 3.0, 1500)


@pytest.fixture(scope="module")
def light_curve():
    """Two harmonics of a 2.3 d signal plus noise, MJD-like times."""
    rng = np.random.default_rng(11)
    t = 58000.0 + np.sort(rng.uniform(0, 100, 160))
    phase = 2 * np.pi * t / 2.3
    y = 1 + 0.5 * np.sin(phase) + 0.3 * np.cos(2 * phase + 0.4) + rng.normal(0, 0.2, t.size)
    return t, y, rng.uniform(0.1, 0.3, t.size)


def astropy_chi2(t, y, dy, nterms, **options):
    return AstropyLombScargle(t, y, dy, nterms=nterms, **options).power(
        GRID.frequencies(), method="chi2")


CASES = [(nterms, normalization, fit_mean, center_data)
         for nterms, normalization, (fit_mean, center_data) in itertools.product(
             [0, 2, 3, MAX_NTERMS], ["standard", "model", "log", "psd"],
             [(True, True), (False, True), (False, False)])
         if nterms or fit_mean]  # nterms 0 without the mean is an empty model


@pytest.mark.slow
@pytest.mark.parametrize(("nterms", "normalization", "fit_mean", "center_data"), CASES)
def test_matches_astropy_chi2(light_curve, cpu_device, nterms, normalization, fit_mean,
                              center_data):
    t, y, dy = light_curve
    for errors in (dy, None):
        options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
        expected = astropy_chi2(t, y, errors, nterms, **options)
        got = multiterm_power(t, y, errors, GRID, nterms, device=cpu_device, **options)
        scale = np.abs(expected).max() if nterms else 1.0  # nterms 0: zero up to rounding
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12 * scale)


def test_the_true_period_wins_with_two_terms(light_curve, cpu_device):
    t, y, dy = light_curve
    power = multiterm_power(t, y, dy, GRID, 2, device=cpu_device)
    assert abs(1 / GRID.frequencies()[np.argmax(power)] - 2.3) < 0.01


def test_frequency_zero_is_nan(light_curve, cpu_device):
    t, y, dy = light_curve
    power = multiterm_power(t, y, dy, FrequencyGrid(0.0, 0.01, 4), 2, device=cpu_device)
    assert np.isnan(power[0]) and np.isfinite(power[1:]).all()


@pytest.mark.parametrize("nterms", [1, 2, MAX_NTERMS])
def test_direct_harmonics_equal_the_recurrence_to_rounding(light_curve, cpu_device, nterms):
    t, y, dy = light_curve
    recurrence = multiterm_power(t, y, dy, GRID, nterms, device=cpu_device)
    direct = multiterm_power(t, y, dy, GRID, nterms, direct_harmonics=True, device=cpu_device)
    expected = astropy_chi2(t, y, dy, nterms)  # astropy's design matrix: direct sin(h phi)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(direct, expected, rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(direct, recurrence, rtol=1e-11, atol=1e-14 * scale)
    assert not np.array_equal(direct, recurrence)  # other arithmetic


@pytest.mark.parametrize(("nterms", "fit_mean", "center_data"),
                         [(1, True, True), (1, False, False), (2, True, False),
                          (3, False, True), (0, True, True)])
@pytest.mark.parametrize("direct", [False, True])
def test_coefficients_are_the_least_squares_fit(cpu_device, nterms, fit_mean, center_data,
                                                direct):
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 40, 120)) + 3.0  # times from 0: an accurate numpy reference
    y = 2 + np.sin(2 * np.pi * t / 1.7) + 0.4 * np.cos(4 * np.pi * t / 1.7 + 1.0)
    y += rng.normal(0, 0.3, t.size)
    dy = rng.uniform(0.2, 0.5, t.size)
    grid = FrequencyGrid(0.0, 0.013, 80)
    got = multiterm_coefficients(t, y, dy, grid, nterms, fit_mean=fit_mean,
                                 center_data=center_data, direct_harmonics=direct,
                                 device=cpu_device)
    assert got.shape == (80, int(fit_mean) + 2 * nterms)
    assert np.isnan(got[0]).all() == bool(nterms)  # f = 0: the sines vanish
    target = y - np.average(y, weights=dy**-2.0) if center_data and not fit_mean else y
    for k in (1, 45, 79):
        f = grid.frequencies()[k]
        columns = [np.ones_like(t)] if fit_mean else []
        for h in range(1, nterms + 1):
            columns += [np.sin(2 * np.pi * h * f * t), np.cos(2 * np.pi * h * f * t)]
        design = np.column_stack(columns) / dy[:, None]
        expected = np.linalg.lstsq(design, target / dy, rcond=None)[0]
        np.testing.assert_allclose(got[k], expected, rtol=0, atol=1e-10 * np.abs(expected).max())
    # the power is the fit's reduction of chi2
    power = multiterm_power(t, y, dy, grid, nterms, fit_mean=fit_mean, center_data=center_data,
                            normalization="psd", device=cpu_device)
    if nterms:
        f = grid.frequencies()[45]
        model = got[45, 0] if fit_mean else 0.0
        for h in range(1, nterms + 1):
            a, b = got[45, int(fit_mean) + 2 * h - 2: int(fit_mean) + 2 * h]
            model = model + a * np.sin(2 * np.pi * h * f * t) + b * np.cos(2 * np.pi * h * f * t)
        reference = target - np.average(target, weights=dy**-2.0) if fit_mean else target
        chi2_ref = np.sum(reference**2 / dy**2)
        assert 0.5 * (chi2_ref - np.sum((target - model) ** 2 / dy**2)) == pytest.approx(
            power[45], rel=1e-10)


def test_bad_input_raises(light_curve, cpu_device):
    t, y, dy = light_curve
    with pytest.raises(ValueError, match=r"nterms must be in \[0, 8\]"):
        multiterm_power(t, y, dy, GRID, MAX_NTERMS + 1, device=cpu_device)
    with pytest.raises(ValueError, match="needs fit_mean"):
        multiterm_power(t, y, dy, GRID, 0, fit_mean=False, device=cpu_device)
    with pytest.raises(ValueError, match="finite"):
        multiterm_power(t, np.where(t > t[5], y, np.nan), dy, GRID, 2, device=cpu_device)
    with pytest.raises(ValueError, match="positive"):
        multiterm_power(t, y, -dy, GRID, 2, device=cpu_device)
    with pytest.raises(ValueError, match="cannot fit a model of 7 parameters"):
        multiterm_power(t[:6], y[:6], dy[:6], GRID, 3, device=cpu_device)
    with pytest.raises(ValueError, match="differ in length"):
        multiterm_power(t, y[:-1], None, GRID, 2, device=cpu_device)
    with pytest.raises(ValueError, match="normalization must be one of"):
        multiterm_power(t, y, dy, GRID, 2, normalization="snr", device=cpu_device)
    with pytest.raises(TypeError, match="FrequencyGrid"):
        multiterm_power(t, y, dy, GRID.frequencies(), 2, device=cpu_device)


@pytest.mark.parametrize("nterms", [1, 3])
@pytest.mark.parametrize("direct", [False, True])
def test_frequency_arrays_evaluate_each_frequency_as_alone(light_curve, cpu_device, nterms,
                                                           direct):
    """Uniform in period and log-spaced, shuffled, with repeats and a zero: each
    frequency's power and fit as on a grid of that frequency alone, and astropy's."""
    t, y, dy = light_curve
    rng = np.random.default_rng(5)
    values = np.concatenate([1.0 / np.linspace(0.4, 12.0, 80), np.geomspace(0.01, 3.0, 80)])
    frequencies = rng.permutation(np.concatenate([values, values[:5], [0.0]]))
    grid = FrequencyGrid.from_frequencies(frequencies)
    power = multiterm_power(t, y, dy, grid, nterms, direct_harmonics=direct, device=cpu_device)
    fits = multiterm_coefficients(t, y, dy, grid, nterms, direct_harmonics=direct,
                                  device=cpu_device)
    assert power.shape == (frequencies.size,) and fits.shape == (frequencies.size, 1 + 2 * nterms)
    for k in range(0, frequencies.size, 9):
        alone = FrequencyGrid(frequencies[k], 1.0, 1)
        np.testing.assert_array_equal(
            power[k], multiterm_power(t, y, dy, alone, nterms, direct_harmonics=direct,
                                      device=cpu_device)[0])
        np.testing.assert_array_equal(
            fits[k], multiterm_coefficients(t, y, dy, alone, nterms, direct_harmonics=direct,
                                            device=cpu_device)[0])
    zero = frequencies == 0
    assert np.isnan(power[zero]).all() and np.isnan(fits[zero]).all()
    expected = AstropyLombScargle(t, y, dy, nterms=nterms).power(frequencies[~zero],
                                                                  method="chi2")
    np.testing.assert_allclose(power[~zero], expected, rtol=1e-9)
    maxima = multiterm_max_power(t, np.stack([y, y[::-1]]), dy, grid, nterms,
                                 device=cpu_device)
    assert maxima[0] == np.nanmax(power)


def test_astropy_bridge_with_nterms(light_curve, cpu_device):
    t, y, dy = light_curve
    ours = LombScargle(t, y, dy, nterms=3, device=cpu_device)
    theirs = AstropyLombScargle(t, y, dy, nterms=3)
    frequency = np.linspace(0.05, 2.0, 700)
    np.testing.assert_allclose(ours.power(frequency), theirs.power(frequency, method="chi2"),
                               rtol=1e-9)
    f_ours, p_ours = ours.autopower(maximum_frequency=2.0)
    f_theirs, p_theirs = theirs.autopower(method="chi2", maximum_frequency=2.0)
    np.testing.assert_allclose(f_ours, f_theirs, rtol=1e-12)
    # below f = 1/T the normal equations are ill-conditioned: at f T = 0.1
    # both differ from a 40-digit solution by ~5e-5 (astropy 3.6e-5, clperiod
    # 6.3e-5); elsewhere clperiod is the more accurate (1e-16 against 1e-13)
    resolved = f_ours * np.ptp(t) >= 1
    np.testing.assert_allclose(p_ours[resolved], p_theirs[resolved], rtol=1e-9)
    np.testing.assert_allclose(p_ours, p_theirs, rtol=2e-4)
    np.testing.assert_allclose(ours.model(t, 1 / 2.3), theirs.model(t, 1 / 2.3))  # astropy's
    with pytest.raises(NotImplementedError, match="multiterm periodograms"):
        theirs.false_alarm_probability(0.5)  # astropy has no null for nterms != 1
    # clperiod's: Baluev (2008) generalized to 2 nterms components (clperiod.periodograms.stats)
    fmax = ours.autofrequency(return_freq_limits=True)[1]
    z = np.array([0.3, 0.4, 0.5])
    for method in ("baluev", "davies", "naive", "single"):
        expected = stats.false_alarm_probability(
            z, n=t.size, fmax=fmax, t=t - t[0], dy=dy, nterms=3,
            method="townsend" if method == "single" else method,
            nf=1 if method == "single" else None)
        np.testing.assert_allclose(ours.false_alarm_probability(z, method=method), expected,
                                   rtol=1e-12)
        p = ours.false_alarm_probability(z, method=method)
        np.testing.assert_allclose(ours.false_alarm_level(p, method=method), z, rtol=1e-9)


# {{{ many light curves on the same times: multiterm_max_power and the bootstrap


@pytest.mark.parametrize(("nterms", "fit_mean", "center_data", "normalization"),
                         [(2, True, True, "standard"), (3, False, False, "psd"),
                          (1, False, True, "model"), (0, True, True, "log")])
@pytest.mark.slow
def test_max_power_equals_each_curves_maximum(light_curve, cpu_device, monkeypatch, nterms,
                                              fit_mean, center_data, normalization):
    t, y, dy = light_curve
    rng = np.random.default_rng(5)
    picks = rng.integers(0, t.size, (13, t.size))  # not a multiple of 8 curves per item
    grid = FrequencyGrid(0.0, 0.01, 300)  # f = 0 is degenerate (NaN): skipped
    options = {"fit_mean": fit_mean, "center_data": center_data,
               "normalization": normalization, "device": cpu_device}
    for errors in (dy[picks], dy, None):  # per curve, shared, none
        rows = [None] * len(picks) if errors is None else np.broadcast_to(errors, picks.shape)
        expected = [np.nanmax(multiterm_power(t, y[p], e, grid, nterms, **options))
                    for p, e in zip(picks, rows)]
        # one kernel call, then 2 curves per call; 8 (a CPU's default), 1 (a
        # GPU's) and 3 curves per work-item
        for block, rows in ((1 << 22, 8), (700, 8), (1 << 22, 1), (700, 3)):
            monkeypatch.setattr(multiterm, "_MAX_BLOCK", block)
            monkeypatch.setattr(multiterm, "_CPU_ROWS", rows)
            got = multiterm_max_power(t, y[picks], errors, grid, nterms, **options)
            np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_max_power_errors(light_curve, cpu_device):
    t, y, dy = light_curve
    with pytest.raises(ValueError, match=r"shape \(n_curves, n\)"):
        multiterm_max_power(t, y, dy, GRID, 2, device=cpu_device)
    with pytest.raises(ValueError, match="differ in length"):
        multiterm_max_power(t[:-1], y[None], None, GRID, 2, device=cpu_device)
    with pytest.raises(ValueError, match="positive"):
        multiterm_max_power(t, y[None], -dy, GRID, 2, device=cpu_device)
    assert multiterm_max_power(t, np.empty((0, t.size)), None, GRID, 2,
                               device=cpu_device).shape == (0,)


def _bootstrap_reference(t, y, dy, nterms, fit_mean, center_data, normalization,
                         n_bootstraps, random_seed):
    """Sorted maxima of astropy's exact "chi2" periodograms of astropy's bootstrap
    draws, and the relative tolerance of each: 1e-9, or 2e-4 for a maximum below
    f = 1 / T, where the normal equations are ill-conditioned (both codes are
    off by ~5e-5 there, see test_astropy_bridge_with_nterms)."""
    ls = AstropyLombScargle(t, y, dy)
    frequency = ls.autofrequency(maximum_frequency=ls.autofrequency(return_freq_limits=True)[1])
    rng = np.random.default_rng(random_seed)
    maxima, rtol = [], []
    for _ in range(n_bootstraps):
        pick = rng.integers(0, y.size, y.size)
        power = AstropyLombScargle(t, y[pick], None if dy is None else dy[pick], nterms=nterms,
                                   fit_mean=fit_mean, center_data=center_data,
                                   normalization=normalization).power(frequency, method="chi2")
        maxima.append(power.max())
        rtol.append(1e-9 if frequency[np.argmax(power)] * np.ptp(t) >= 1 else 2e-4)
    order = np.argsort(maxima)
    return np.array(maxima)[order], np.array(rtol)[order]


@pytest.mark.parametrize(("nterms", "fit_mean", "center_data", "normalization", "weighted"),
                         [(2, True, True, "standard", True), (2, False, False, "psd", True),
                          (3, True, False, "log", False)])
@pytest.mark.slow
def test_bootstrap_equals_astropy_reference(light_curve, cpu_device, nterms, fit_mean,
                                            center_data, normalization, weighted):
    t, y, dy = (a[::2] for a in light_curve)  # 80 points: astropy's reference is slow
    t = t - t[0]  # astropy's chi2 reference loses digits at MJD epochs
    if not (fit_mean or center_data):
        y = y - np.average(y, weights=dy**-2.0)  # zero-mean data, as that null assumes
    dy = dy if weighted else None
    options = {"nterms": nterms, "fit_mean": fit_mean, "center_data": center_data,
               "normalization": normalization}
    ours = LombScargle(t, y, dy, device=cpu_device, **options)
    n = 20
    kwds = {"n_bootstraps": n, "random_seed": 8}
    expected, rtol = _bootstrap_reference(t, y, dy, **options, **kwds)
    assert np.sum(rtol == 1e-9) >= 16  # most maxima lie where the fit is well conditioned
    # p = (k + 1/2) / n picks every sorted maximum once
    p = (np.arange(n) + 0.5)[::-1] / n
    level = ours.false_alarm_level(p, method="bootstrap", method_kwds=kwds)
    assert np.all(np.abs(level - expected) <= rtol * np.abs(expected))
    z = np.quantile(expected, [0.1, 0.5, 0.9])
    np.testing.assert_array_equal(
        ours.false_alarm_probability(z, method="bootstrap", method_kwds=kwds),
        1 - np.searchsorted(expected, z) / n)


def test_bootstrap_of_a_constant_resampling_raises(cpu_device):
    t = np.array([0.0, 1.3, 2.1, 3.7, 4.2, 5.9])
    ours = LombScargle(t, [1.0, 1.0, 1.0, 1.0, 1.0, 2.0], nterms=2, device=cpu_device)
    with pytest.raises(ValueError, match="has no periodogram: constant values"):
        ours.false_alarm_level(0.1, method="bootstrap",
                               method_kwds={"n_bootstraps": 20, "random_seed": 0})


# }}}
