"""The F-law false-alarm probability of the multi-harmonic AOV (analytic_fap,
MhaovResult.false_alarm_probability(method="analytic")): the single-frequency law against a
Monte Carlo on white noise and against the device bootstrap, the grid bound, the degrees of
freedom and the statuses."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms.mhaov import AnalyticFap, analytic_fap

ONE_FREQUENCY = FrequencyGrid.from_frequencies([0.37])
BASELINE = 30.0
#: 5 frequencies per 1 / BASELINE over 0.2-0.6 cycles per day.
GRID = FrequencyGrid.from_step(0.2, 1 / (5 * BASELINE), 60)
BANDS = np.array(["g", "i", "r"])
#: The 0.1 % critical value of the Kolmogorov-Smirnov distance times sqrt(n).
KS_999 = 1.949


def white_noise(seed: int, n_objects: int, n: int, n_bands: int, dy_range=(0.5, 1.5)):
    """Raw MJD epochs over BASELINE days, band offsets, per-row uncertainties and Gaussian
    noise of exactly those uncertainties (one catalog; no bands when ``n_bands`` is 0)."""
    rng = np.random.default_rng(seed)
    owner = np.repeat(np.arange(n_objects), n)
    t = 60000.0 + rng.uniform(0.0, BASELINE, owner.size)
    code = rng.integers(0, max(n_bands, 1), owner.size)
    dy = rng.uniform(*dy_range, owner.size) * (1.0 + 0.5 * code)
    y = 15.0 + 0.7 * code + dy * rng.standard_normal(owner.size)
    return Catalog.from_arrays(owner, t, y, dy, band=BANDS[code] if n_bands else None)


def ks_distance(p: np.ndarray) -> float:
    return float(stats.kstest(p, "uniform").statistic)


@pytest.mark.parametrize(
    ("n_bands", "nharmonics", "fit_harmonics", "use_errors", "dy_range"),
    [
        (0, 1, None, True, (0.5, 1.5)),
        (0, 3, None, True, (0.5, 1.5)),
        (0, 2, None, False, (1.0, 1.0)),
        (2, 2, None, True, (0.5, 1.5)),  # P4J's: one harmonic fitted, d1 = 4 in the scaling
        (3, 1, None, True, (0.5, 1.5)),
        (3, 2, 2, True, (0.5, 1.5)),
    ],
)
def test_white_noise_follows_the_f_law_at_one_frequency(
    n_bands, nharmonics, fit_harmonics, use_errors, dy_range
):
    """The single-frequency probability of white-noise objects is uniform: its empirical
    distribution is within the 0.1 % Kolmogorov-Smirnov distance of the uniform law."""
    n_objects = 2500
    cat = white_noise(11 + n_bands, n_objects, 48, n_bands, dy_range)
    result = clperiod.mhaov(
        cat,
        ONE_FREQUENCY,
        nharmonics=nharmonics,
        fit_harmonics=fit_harmonics,
        use_errors=use_errors,
    )
    fap = analytic_fap(result)
    assert (fap.status == Status.OK).all() and fap.n_trials == 1
    np.testing.assert_allclose(fap.fap, fap.p_single, rtol=1e-14)
    assert ks_distance(fap.p_single) < KS_999 / np.sqrt(n_objects)


def test_the_scaling_of_p4j_is_not_the_law_with_bands():
    """With three bands, F(dof_model, dof_residual) of the result (P4J's scaling) is far
    from the law that analytic_fap uses (so the test above tells the two apart)."""
    cat = white_noise(14, 2500, 48, 3)
    result = clperiod.mhaov(cat, ONE_FREQUENCY)
    scaling = stats.f.sf(result.power_best, result.dof_model, result.dof_residual)
    assert ks_distance(scaling) > 0.2


def test_the_degrees_of_freedom_and_the_f_variable():
    cat = white_noise(15, 4, 40, 3)
    counts = cat.band_counts()
    result = clperiod.mhaov(cat, GRID, nharmonics=3, fit_harmonics=2)
    fap = analytic_fap(result)
    np.testing.assert_array_equal(fap.dof_model, [2 * 2 * 3] * 4)
    np.testing.assert_array_equal(fap.dof_residual, (counts - 2 * 2 - 1).sum(axis=1))
    explained = result.power_best * 6 / result.dof_residual  # Z / (1 - Z)
    x = explained * fap.dof_residual / fap.dof_model
    expected = stats.f.sf(x, fap.dof_model, fap.dof_residual)
    np.testing.assert_allclose(fap.p_single, expected, rtol=1e-12)
    np.testing.assert_allclose(fap.fap, 1 - (1 - expected) ** GRID.nf, rtol=1e-10)
    single = clperiod.mhaov(white_noise(16, 3, 40, 0), GRID, nharmonics=2)
    law = stats.f.sf(single.power_best, single.dof_model, single.dof_residual)
    np.testing.assert_allclose(analytic_fap(single).p_single, law, rtol=1e-12)


def test_the_grid_fap_bounds_white_noise():
    """Over a grid of 5 frequencies per 1 / T, at most a fraction alpha of white-noise
    objects (within the binomial error of their number) gets fap <= alpha, and the bound
    is not vacuous; per object fap lies between p_single and Bonferroni's bound."""
    n_objects = 1500
    cat = white_noise(17, n_objects, 48, 2)
    fap = analytic_fap(clperiod.mhaov(cat, GRID, nharmonics=2, fit_harmonics=2))
    assert fap.n_trials == GRID.nf
    for alpha in (0.01, 0.05, 0.1, 0.3):
        error = np.sqrt(alpha * (1 - alpha) / n_objects)
        assert np.mean(fap.fap <= alpha) <= alpha + 3 * error
    assert np.mean(fap.fap <= 0.3) > 0.3 / 3
    assert (fap.fap >= fap.p_single).all()
    assert (fap.fap <= np.minimum(1.0, GRID.nf * fap.p_single) * (1 + 1e-12)).all()


@pytest.mark.slow
@pytest.mark.parametrize(("n_bands", "nharmonics"), [(0, 2), (3, 1)])
def test_agrees_with_the_bootstrap_at_one_frequency(n_bands, nharmonics):
    """White noise of equal uncertainties at one frequency: the bootstrap's probabilities
    scatter about the F law's by their binomial error."""
    n_resamplings = 400
    cat = white_noise(19 + n_bands, 30, 60 + 10 * n_bands, n_bands, (1.0, 1.0))
    result = clperiod.mhaov(cat, ONE_FREQUENCY, nharmonics=nharmonics)
    analytic = result.false_alarm_probability(method="analytic")
    boot = result.false_alarm_probability(n_resamplings, seed=2**33 + n_bands)
    difference = boot - analytic
    error = np.sqrt(analytic * (1 - analytic) / n_resamplings)
    assert np.sqrt(np.mean((difference / error) ** 2)) < 2.0
    assert abs(difference.mean()) < 4 * difference.std() / np.sqrt(difference.size)


def test_bounds_the_bootstrap_over_a_grid():
    """On the grid the F-law FAP of white-noise objects lies above the bootstrap's
    on average, by more than the sampling error; a strong signal gets nearly 0."""
    n_resamplings = 200
    cat = white_noise(23, 30, 60, 2)
    result = clperiod.mhaov(cat, GRID, nharmonics=2)
    analytic = result.false_alarm_probability(method="analytic")
    boot = result.false_alarm_probability(n_resamplings, seed=2**35)
    difference = boot - analytic
    assert difference.mean() < -4 * difference.std() / np.sqrt(difference.size)
    t, _, dy, band = cat.lightcurve(0)
    y = 15.0 + 3 * np.sin(2 * np.pi * 0.41 * t) + dy * np.random.default_rng(1).normal(size=t.size)
    strong = clperiod.mhaov(Catalog.from_arrays(np.zeros(t.size), t, y, dy, band=band), GRID)
    assert strong.false_alarm_probability(method="analytic")[0] < 1e-12


def test_units_and_offsets_change_nothing():
    cat = white_noise(29, 5, 40, 2)
    scaled = Catalog.from_arrays(
        np.repeat(cat.ids, cat.lengths),
        cat.t,
        20.0 + 1e-3 * cat.y,
        1e-3 * cat.dy,
        band=np.asarray(cat.bands)[cat.band_codes],
    )
    one, two = (analytic_fap(clperiod.mhaov(c, GRID, nharmonics=2)) for c in (cat, scaled))
    np.testing.assert_allclose(two.fap, one.fap, rtol=1e-9)
    np.testing.assert_array_equal(two.dof_residual, one.dof_residual)


def test_a_constant_band_adds_no_degrees_of_freedom():
    cat = white_noise(31, 1, 60, 2)
    t, y, dy, band = cat.lightcurve(0)
    y = np.where(band == "i", 12.5, y)
    flat = Catalog.from_arrays(np.zeros(t.size), t, y, dy, band=band)
    result = clperiod.mhaov(flat, GRID)
    fap = analytic_fap(result)
    n_g = int(np.sum(band == "g"))
    assert result.band_used[0].tolist() == [True, True]  # the statistic's scaling keeps it
    assert (fap.dof_model[0], fap.dof_residual[0]) == (2, n_g - 3)
    alone = clperiod.mhaov(flat.select_bands("g"), GRID)
    np.testing.assert_allclose(fap.p_single, analytic_fap(alone).p_single, rtol=1e-9)


def test_objects_that_are_not_ok_get_nan_and_their_status():
    t, y, dy, band = white_noise(37, 1, 40, 2).lightcurve(0)
    flat = np.where(band == "g", 3.0, 5.0)
    lengths = [t.size, 5, t.size]
    cat = Catalog.from_arrays(
        np.repeat(np.arange(3), lengths),
        np.concatenate([t, t[:5], t]),
        np.concatenate([y, y[:5], flat]),
        np.concatenate([dy, dy[:5], dy]),
        band=np.concatenate([band, band[:5], band]),
    )
    result = clperiod.mhaov(cat, GRID, nharmonics=2)
    fap = analytic_fap(result)
    assert fap.status.tolist() == [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]
    assert 0 < fap.fap[0] < 1 and np.isnan(fap.fap[1:]).all() and np.isnan(fap.p_single[1:]).all()
    assert fap.dof_model[1:].tolist() == [0, 0] and fap.dof_residual[1:].tolist() == [0, 0]
    np.testing.assert_array_equal(result.false_alarm_probability(method="analytic"), fap.fap)
    assert repr(fap) == "AnalyticFap(n_objects=3, n_trials=60, ok=1)"
    assert isinstance(fap, AnalyticFap)


def test_fp32_gives_fp64s_probabilities():
    cat = white_noise(41, 20, 50, 2)
    fp64, fp32 = (
        analytic_fap(clperiod.mhaov(cat, GRID, precision=p)).fap for p in ("fp64", "fp32")
    )
    np.testing.assert_allclose(fp32, fp64, rtol=1e-4, atol=1e-6)


def test_bad_arguments():
    result = clperiod.mhaov(white_noise(43, 1, 40, 0), GRID)
    for name, value in (("seed", 1), ("device", "0:0"), ("n_resamplings", 10)):
        with pytest.raises(ValueError, match=f"{name}: only for method='bootstrap'"):
            result.false_alarm_probability(method="analytic", **{name: value})
    with pytest.raises(ValueError, match="method"):
        result.false_alarm_probability(method="baluev")
    with pytest.raises(TypeError, match="MhaovResult"):
        analytic_fap(clperiod.lombscargle_multiband(white_noise(43, 1, 40, 0), GRID))
