"""The NumPy MHAOV reference (tests/reference/mhaov.py): definitions, astropy, and P4J."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.timeseries import LombScargle

from peers import load_p4j
from reference import mhaov as ref

P4J = load_p4j()
needs_p4j = pytest.mark.skipif(P4J is None, reason="P4J is not installed")
FREQUENCY = np.linspace(0.05, 4.0, 120)
PERIOD = 0.61


def light_curve(seed: int, n: int = 120, float32: bool = False):
    """Two-harmonic signal plus noise over 30 days from t = 0 (float32-exact if asked)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 30, n))
    t -= t[0]
    phase = 2 * np.pi * t / PERIOD
    y = 15 + 0.5 * np.sin(phase) + 0.2 * np.sin(2 * phase + 1) + 0.3 * rng.normal(size=n)
    dy = rng.uniform(0.1, 0.5, n)
    if float32:
        return tuple(a.astype(np.float32).astype(np.float64) for a in (t, y, dy))
    return t, y, dy


@pytest.mark.parametrize("nharmonics", [1, 2, 3])
@pytest.mark.parametrize("with_errors", [False, True])
def test_recurrence_equals_least_squares(nharmonics, with_errors):
    t, y, dy = light_curve(1)
    dy = dy if with_errors else None
    recurrence = ref.mhaov_raw(t, y, dy, FREQUENCY, nharmonics)
    dense = ref.mhaov_least_squares(t, y, dy, FREQUENCY, nharmonics)
    np.testing.assert_allclose(recurrence, dense, rtol=1e-11)


@pytest.mark.parametrize("nharmonics", [1, 2, 3])
def test_raw_over_chi2_is_astropy_standard_power(nharmonics):
    """dchi2 / chi2_c is the fraction of variance a (2H+1)-parameter fit explains: astropy's
    LombScargle 'standard' power with nterms = H (fit_mean, center_data)."""
    t, y, dy = light_curve(2)
    weights = dy**-2.0
    total = ref.centred_sum_of_squares(y, weights)
    power = LombScargle(t, y, dy, nterms=nharmonics).power(FREQUENCY, method="chi2")
    np.testing.assert_allclose(ref.mhaov(t, y, dy, FREQUENCY, nharmonics, mode=0) / total,
                               power, rtol=1e-10)


def test_f_form_and_noiseless_sinusoid():
    t, y, dy = light_curve(3)
    n, harmonics = t.size, 2
    raw = ref.mhaov(t, y, dy, FREQUENCY, harmonics, mode=0)
    total = ref.centred_sum_of_squares(y, dy**-2.0)
    expected = (n - 2 * harmonics - 1) / (2 * harmonics) * raw / (total - raw)
    np.testing.assert_allclose(ref.mhaov(t, y, dy, FREQUENCY, harmonics), expected, rtol=1e-12)
    clean = 3.0 + 2.0 * np.cos(2 * np.pi * t / PERIOD - 0.4)
    clean_raw = ref.mhaov(t, clean, dy, [1 / PERIOD, 0.0], 1, mode=0)
    np.testing.assert_allclose(clean_raw[0], ref.centred_sum_of_squares(clean, dy**-2.0),
                               rtol=1e-12)
    assert abs(clean_raw[1]) < 1e-9 * clean_raw[0]  # f = 0 explains nothing
    assert ref.mhaov(t, clean, dy, [1 / PERIOD], 1)[0] > 1e8  # the 1e-9 floor, not inf


def test_invariant_to_units_offsets_and_time_shift():
    t, y, dy = light_curve(4)
    statistic = ref.mhaov(t, y, dy, FREQUENCY, 2)
    moved = ref.mhaov(t + 500.0, -40.0 * y + 7.0, 40.0 * dy, FREQUENCY, 2)
    np.testing.assert_allclose(moved, statistic, rtol=1e-9)
    bands = np.array(["g", "r"])[np.arange(t.size) % 2]
    combined, _ = ref.mhaov_multiband(t, y, dy, bands, FREQUENCY)
    y_moved = 0.01 * y + np.where(bands == "g", 3.0, -2.0)
    moved, _ = ref.mhaov_multiband(t + 500.0, y_moved, 0.01 * dy, bands, FREQUENCY)
    np.testing.assert_allclose(moved, combined, rtol=1e-9)


@pytest.mark.parametrize("nharmonics", [1, 2])
def test_multiband_combination(nharmonics):
    t, y, dy = light_curve(5, n=150)
    bands = np.random.default_rng(5).choice(np.array(["g", "i", "r"]), t.size)
    combined, per_band = ref.mhaov_multiband(t, y, dy, bands, FREQUENCY, nharmonics)
    assert list(per_band) == ["g", "i", "r"]
    raws, totals, d2 = [], [], []
    for label in per_band:
        mask = bands == label
        raws.append(ref.mhaov_least_squares(t[mask], y[mask], dy[mask], FREQUENCY, 1))
        totals.append(ref.centred_sum_of_squares(y[mask], dy[mask] ** -2.0))
        d2.append(mask.sum() - 2 * nharmonics - 1)
        band_f = d2[-1] / (2 * nharmonics) * raws[-1] / (totals[-1] - raws[-1])
        np.testing.assert_allclose(per_band[label], band_f, rtol=1e-10)
    raw, total = np.sum(raws, axis=0), np.sum(totals)
    expected = np.sum(d2) * raw / (2 * nharmonics * (total - raw))
    np.testing.assert_allclose(combined, expected, rtol=1e-10)
    fitted, _ = ref.mhaov_multiband(t, y, dy, bands, FREQUENCY, 2, fit_harmonics=2)
    mask = bands == "g"
    one_band, _ = ref.mhaov_multiband(t[mask], y[mask], dy[mask], bands[mask], FREQUENCY, 2,
                                      fit_harmonics=2)
    single = ref.f_statistic(ref.mhaov_raw(t[mask], y[mask], dy[mask], FREQUENCY, 2),
                             totals[0], int(mask.sum()), 2, None)
    np.testing.assert_allclose(one_band, single, rtol=1e-12)
    assert not np.allclose(fitted, combined)


def test_invalid_arguments_raise():
    t, y, dy = light_curve(6)
    with pytest.raises(ValueError, match="nharmonics"):
        ref.mhaov(t, y, dy, FREQUENCY, 0)
    with pytest.raises(ValueError, match="mode"):
        ref.mhaov(t, y, dy, FREQUENCY, 1, mode=2)


def p4j_single(t, y, dy, frequency, nharmonics, mode):
    from P4J.algorithms.multiharmonic_aov import MHAOV

    f32 = (np.asarray(a, np.float32) for a in (t, y, dy))
    statistic = MHAOV(*f32, nharmonics, mode)
    return np.array([statistic.eval_frequency(f) for f in np.float32(frequency)])


@needs_p4j
@pytest.mark.parametrize("nharmonics", [1, 2, 3])
@pytest.mark.parametrize("mode", [0, 1])
def test_single_band_equals_p4j(nharmonics, mode):
    """P4J sums in float32: its error is ~2e-7 of the peak (up to 6e-6 relative at values
    1e-3 of the peak); the reference reproduces its float32 phases."""
    t, y, dy = light_curve(7, float32=True)
    frequency = FREQUENCY.astype(np.float32).astype(np.float64)
    theirs = p4j_single(t, y, dy, frequency, nharmonics, mode)
    ours = ref.mhaov(t, y, dy, frequency, nharmonics, mode, phase_dtype=np.float32)
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6 * ours.max())
    assert np.argmax(theirs) == np.argmax(ours)


@needs_p4j
@pytest.mark.parametrize("nharmonics", [1, 2])
def test_multiband_equals_p4j(nharmonics):
    t, y, dy = light_curve(8, n=150, float32=True)
    bands = np.random.default_rng(8).choice(np.array(["g", "i", "r"]), t.size)
    y = (y + np.where(bands == "g", 0.5, 0.0)).astype(np.float32).astype(np.float64)
    periodogram = P4J.MultiBandPeriodogram(method="MHAOV", Nharmonics=nharmonics)
    periodogram.set_data(t, y, dy, bands)
    periodogram.frequency_grid_evaluation(fmin=0.05, fmax=3.0, fresolution=0.01)
    frequency, theirs = periodogram.get_periodogram()
    ours, per_band = ref.mhaov_multiband(t, y, dy, bands, np.float64(frequency), nharmonics,
                                         phase_dtype=np.float32)
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-6 * ours.max())
    for label, band_ours in per_band.items():
        band_theirs = periodogram.get_periodogram(label)[1]
        np.testing.assert_allclose(band_theirs, band_ours, rtol=1e-6,
                                   atol=2e-6 * band_ours.max())
