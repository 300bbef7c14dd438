"""Multi-term Lomb-Scargle (clperiod.multiterm and the astropy bridge's
nterms) against astropy's exact "chi2" method."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy.timeseries import LombScargle as AstropyLombScargle

from clperiod import FrequencyGrid
from clperiod.astropy import LombScargle
from clperiod.multiterm import MAX_NTERMS, multiterm_power

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
        ours.false_alarm_probability(0.5)
    with pytest.raises(NotImplementedError, match="multiterm periodograms"):
        ours.false_alarm_level(0.01)
