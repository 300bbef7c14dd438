"""Tests of clperiod.periodograms.stats against astropy's LombScargle and closed forms."""

from __future__ import annotations

import decimal

import numpy as np
import pytest
from astropy.timeseries import LombScargle

from clperiod.grid import FrequencyGrid
from clperiod.periodograms import stats

NORMS = ("standard", "model", "log", "psd")
FMAX = 2.0


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    n = 60
    t = np.sort(rng.uniform(0.0, 90.0, n))
    y = 0.6 * np.sin(2 * np.pi * t / 3.3) + rng.normal(0.0, 1.0, n) + 12.0
    dy = rng.uniform(0.5, 1.5, n)
    return t, y, dy


def _peaks(ls):
    """A spread of realistic peak heights from the periodogram itself."""
    _, power = ls.autopower(maximum_frequency=FMAX)
    return np.quantile(power, [0.3, 0.7, 0.95, 0.999, 1.0])


@pytest.mark.parametrize("use_dy", [False, True])
@pytest.mark.parametrize("norm", NORMS)
def test_normalize_matches_astropy_power(data, norm, use_dy):
    t, y, dy = data
    dy = dy if use_dy else None
    freq = np.linspace(0.05, FMAX, 400)
    z = LombScargle(t, y, dy).power(freq, normalization="standard")
    expected = LombScargle(t, y, dy).power(freq, normalization=norm)
    yy = stats.weighted_sum_of_squares(y, dy)
    got = stats.normalize(z, norm, yy_weighted_sum=yy)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    np.testing.assert_allclose(stats.standard_from(got, norm, yy), z, rtol=1e-10, atol=1e-15)


def test_normalize_edges_and_errors():
    assert stats.normalize(1.0, "model") == np.inf
    assert stats.normalize(1.0, "log") == np.inf
    assert stats.normalize(0.0, "log") == 0.0
    z = np.array([0.2, 0.5])
    out = stats.normalize(z, "standard")
    out[0] = 9.0
    assert z[0] == 0.2  # a copy, not a view of the input
    with pytest.raises(ValueError, match="yy_weighted_sum"):
        stats.normalize(z, "psd")
    with pytest.raises(ValueError, match="normalization"):
        stats.normalize(z, "scipy")
    with pytest.raises(ValueError, match="normalization"):
        stats.standard_from(z, "PSD", 1.0)


def test_weighted_sum_of_squares():
    y = np.array([1.0, 2.0, 6.0])
    dy = np.array([1.0, 0.5, 2.0])
    w = dy**-2
    mean = np.sum(w * y) / np.sum(w)
    expected = np.sum(w * (y - mean) ** 2)
    assert stats.weighted_sum_of_squares(y, dy) == pytest.approx(expected, rel=1e-14)
    assert stats.weighted_sum_of_squares(y) == pytest.approx(np.sum((y - 3.0) ** 2), rel=1e-14)
    assert stats.weighted_sum_of_squares(y, center=False) == pytest.approx(41.0, rel=1e-15)


@pytest.mark.parametrize("use_dy", [False, True])
@pytest.mark.parametrize("method", ["baluev", "davies", "naive"])
@pytest.mark.parametrize("norm", NORMS)
def test_fap_and_level_match_astropy(data, norm, method, use_dy):
    t, y, dy = data
    dy = dy if use_dy else None
    ls = LombScargle(t, y, dy, normalization=norm)
    fmax = FrequencyGrid.auto(t, maximum_frequency=FMAX).fmax  # astropy's upper limit
    kwargs = dict(n=t.size, fmax=fmax, t=t, dy=dy, normalization=norm, method=method)

    z = _peaks(ls)
    expected = ls.false_alarm_probability(z, method=method, maximum_frequency=FMAX)
    got = stats.false_alarm_probability(z, **kwargs)
    np.testing.assert_allclose(got, expected, rtol=1e-10)

    fap = np.array([1e-4, 0.01, 0.1, 0.5])
    expected_level = ls.false_alarm_level(fap, method=method, maximum_frequency=FMAX)
    level = stats.false_alarm_level(fap, **kwargs)
    np.testing.assert_allclose(level, expected_level, rtol=1e-9)
    np.testing.assert_allclose(stats.false_alarm_probability(level, **kwargs), fap, rtol=1e-9)


def test_fap_scalar_in_scalar_out(data):
    t, _, _ = data
    fap = stats.false_alarm_probability(0.3, n=t.size, fmax=FMAX, t=t)
    assert np.ndim(fap) == 0 and 0.0 < fap < 1.0
    level = stats.false_alarm_level(0.01, n=t.size, fmax=FMAX, t=t)
    assert np.ndim(level) == 0
    assert stats.false_alarm_probability([[0.1, 0.2]], n=t.size, fmax=FMAX, t=t).shape == (1, 2)


def test_baluev_between_single_and_davies(data):
    t, _, dy = data
    z = np.linspace(0.05, 0.6, 12)
    kwargs = dict(n=t.size, fmax=FMAX, t=t, dy=dy)
    baluev = stats.false_alarm_probability(z, method="baluev", **kwargs)
    davies = stats.false_alarm_probability(z, method="davies", **kwargs)
    single = (1 - z) ** ((t.size - 3) / 2)
    assert np.all(single <= baluev) and np.all(baluev <= davies)
    assert np.all(np.diff(baluev[z > 0.2]) < 0)


def _townsend_direct(z_std, n, nf):
    """Townsend (2010) eq. 3 evaluated literally in 50-digit decimal arithmetic."""
    with decimal.localcontext() as ctx:
        ctx.prec = 50
        one, exponent = decimal.Decimal(1), decimal.Decimal(n - 3) / 2
        return np.array(
            [float(one - (one - (one - decimal.Decimal(z)) ** exponent) ** nf) for z in z_std]
        )


@pytest.mark.parametrize("norm", NORMS[:3])
def test_townsend_formula(norm):
    n, nf = 40, 500
    z_std = np.array([0.3, 0.45, 0.6, 0.8])  # FAP away from 1, where levels are ill-conditioned
    power = stats.normalize(z_std, norm)
    kwargs = dict(n=n, fmax=1.0, normalization=norm, method="townsend", nf=nf)
    got = stats.false_alarm_probability(power, **kwargs)
    np.testing.assert_allclose(got, _townsend_direct(z_std, n, nf), rtol=1e-12)
    level = stats.false_alarm_level(got, **kwargs)
    np.testing.assert_allclose(level, power, rtol=1e-9)


def test_townsend_psd_uses_exponential_tail():
    z = np.array([3.0, 8.0, 15.0])
    kwargs = dict(n=50, fmax=1.0, normalization="psd", method="townsend", nf=200)
    got = stats.false_alarm_probability(z, **kwargs)
    np.testing.assert_allclose(got, 1 - (1 - np.exp(-z)) ** 200, rtol=1e-10)


def test_townsend_limits():
    kwargs = dict(n=100, fmax=1.0, method="townsend")
    # One frequency: the single-frequency probability.
    z = np.array([0.01, 0.2, 0.5])
    np.testing.assert_allclose(
        stats.false_alarm_probability(z, nf=1, **kwargs), (1 - z) ** 48.5, rtol=1e-12
    )
    # z = 0 is certain noise, z = 1 is impossible for noise.
    assert stats.false_alarm_probability(0.0, nf=1000, **kwargs) == 1.0
    assert stats.false_alarm_probability(1.0, nf=1000, **kwargs) == 0.0
    # Tiny probabilities keep full relative precision (no 1 - (1 - x) cancellation).
    tiny = stats.false_alarm_probability(0.9, nf=1000, **kwargs)
    np.testing.assert_allclose(tiny, 1000 * 0.1**48.5, rtol=1e-9)
    # More trials, higher FAP.
    few, many = (stats.false_alarm_probability(0.2, nf=m, **kwargs) for m in (10, 10_000))
    assert few < many


def test_townsend_needs_nf_but_not_t():
    with pytest.raises(ValueError, match="nf"):
        stats.false_alarm_probability(0.3, n=20, fmax=1.0, method="townsend")
    with pytest.raises(ValueError, match="nf"):
        stats.false_alarm_level(0.1, n=20, fmax=1.0, method="townsend", nf=0)


def test_argument_errors(data):
    t, _, dy = data
    base = dict(n=t.size, fmax=FMAX, t=t)
    with pytest.raises(ValueError, match="method"):
        stats.false_alarm_probability(0.3, method="bootstrap", **base)
    with pytest.raises(ValueError, match="normalization"):
        stats.false_alarm_probability(0.3, normalization="scipy", **base)
    # uncentred data has a null (zero-mean noise, dH = 0): more noise degrees
    # of freedom than centred data, so a smaller FAP at the same power
    uncentred = stats.false_alarm_probability(0.3, fit_mean=False, center_data=False, **base)
    assert 0 < uncentred < stats.false_alarm_probability(0.3, **base)
    level = stats.false_alarm_level(0.1, fit_mean=False, center_data=False, **base)
    assert stats.false_alarm_probability(level, fit_mean=False, center_data=False,
                                         **base) == pytest.approx(0.1, rel=1e-9)
    with pytest.raises(ValueError, match="periodic model"):
        stats.false_alarm_probability(0.3, nterms=0, **base)
    assert stats.false_alarm_probability(0.3, fit_mean=False, center_data=True, **base) > 0
    with pytest.raises(ValueError, match="t is required"):
        stats.false_alarm_probability(0.3, n=t.size, fmax=FMAX)
    with pytest.raises(ValueError, match="shape"):
        stats.false_alarm_probability(0.3, n=t.size + 1, fmax=FMAX, t=t)
    with pytest.raises(ValueError, match="shape"):
        stats.false_alarm_probability(0.3, dy=dy[:-1], **base)
    assert np.isnan(stats.false_alarm_probability(0.3, n=3, fmax=FMAX, t=t[:3]))
    assert np.isnan(stats.false_alarm_level(0.1, n=3, fmax=FMAX, t=t[:3]))
    with pytest.raises(ValueError, match="n must be"):
        stats.false_alarm_probability(0.3, n=0, fmax=FMAX, t=t[:0])
    with pytest.raises(ValueError, match="fmax"):
        stats.false_alarm_probability(0.3, n=t.size, fmax=0.0, t=t)
    for bad in (-0.1, 1.1, np.nan):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            stats.false_alarm_level(bad, **base)


def test_large_epochs_do_not_lose_the_effective_baseline(data):
    t, _, dy = data
    kwargs = dict(n=t.size, fmax=FMAX, dy=dy, method="baluev")
    z = np.array([0.2, 0.4])
    shifted = stats.false_alarm_probability(z, t=t + 2_450_000.0, **kwargs)
    np.testing.assert_allclose(shifted, stats.false_alarm_probability(z, t=t, **kwargs), rtol=1e-12)


@pytest.mark.parametrize("method", ["baluev", "davies"])
def test_a_level_the_bound_never_reaches_is_nan(method):
    """One noise degree of freedom (4 centred points): the standard power's
    tau term stays finite at z = 1, so the bound never falls below its value
    there and smaller probabilities have no level (astropy returns a level
    whose FAP is 1, or NaN with a warning)."""
    t = np.array([0.0, 1.3, 4.1, 9.7])
    kwargs = dict(n=4, fmax=5.0, t=t, method=method)
    assert float(stats.false_alarm_probability(1 - 1e-12, **kwargs)) > 0.99
    assert np.isnan(stats.false_alarm_level([0.1, 0.5, 0.9], **kwargs)).all()
    few = dict(kwargs, fmax=0.05)  # few trials: the bound at the top is lower
    top = float(stats.false_alarm_probability(1 - 1e-12, **few))
    assert 0.3 < top < 0.9
    level = float(stats.false_alarm_level(0.9, **few))
    assert 0 < level < 1
    np.testing.assert_allclose(stats.false_alarm_probability(level, **few), 0.9, rtol=1e-9)
    assert np.isnan(stats.false_alarm_level(top / 2, **few))
    assert np.isnan(stats.false_alarm_level(0.0, **few))  # no level where FAP = 0 either
    assert stats.false_alarm_level(1.0, **few) == 0.0


@pytest.mark.parametrize("method", ["baluev", "davies", "naive", "townsend"])
@pytest.mark.parametrize("norm", ["standard", "model", "log", "psd"])
@pytest.mark.parametrize("nterms", [1, 3])
def test_levels_of_probabilities_0_and_1_are_the_ends_of_the_range(data, method, norm, nterms):
    """As astropy: FAP 1 at power 0 and FAP 0 only at the top of the range."""
    t, _, dy = data
    kwargs = dict(n=t.size, fmax=FMAX, t=t, dy=dy, normalization=norm, method=method, nf=500,
                  nterms=nterms)
    top = 1.0 if norm == "standard" else np.inf
    levels = stats.false_alarm_level([0.0, 1.0, 0.5], **kwargs)
    np.testing.assert_array_equal(levels[:2], [top, 0.0])
    assert 0 < levels[2] < top
    np.testing.assert_array_equal(stats.false_alarm_probability(levels, **kwargs)[:2],
                                  [0.0, 1.0])
