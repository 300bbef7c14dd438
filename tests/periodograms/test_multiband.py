"""Multiband Lomb-Scargle of catalogs (clperiod.lombscargle_multiband) against the NumPy
restatement of astropy's method "flexible" (tests/reference/multiband.py) and astropy."""

from __future__ import annotations

import numpy as np
import pytest
from astropy.timeseries import LombScargleMultiband

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms import multiband
from clperiod.periodograms.multiband import min_points
from reference.multiband import MultibandLombScargle

GRID = FrequencyGrid(0.05, 0.0125, 240)
BANDS = ("g", "r", "z")  # sorted, as the catalog orders them


def lightcurve(seed: int, n: int, n_bands: int, period: float = 1.7):
    """A ragged multiband light curve on raw MJD epochs: one sinusoid, per-band offsets
    and amplitudes, interleaved bands."""
    rng = np.random.default_rng(seed)
    t = np.sort(60000.0 + rng.uniform(0.0, 40.0, n))
    band = np.asarray(BANDS[:n_bands])[rng.integers(0, n_bands, n)]
    code = np.searchsorted(BANDS[:n_bands], band) if n_bands > 1 else np.zeros(n, int)
    phase = 2 * np.pi * t / period
    y = 15.0 + 0.4 * code + (1.0 + 0.2 * code) * np.sin(phase) + 0.3 * np.cos(2 * phase)
    dy = rng.uniform(0.1, 0.3, n)
    return t, y + rng.normal(0.0, dy), dy, band


def reference(t, y, dy, band, **model):
    """The reference periodogram on GRID, times from the first observation."""
    return MultibandLombScargle(t - t.min(), y, band, dy, **model).power(GRID.frequencies())


def top_peaks(power, k):
    """Grid indices of the ``k`` highest local maxima (above the left neighbour, not below
    the right one; outside the grid counts as -inf), best first."""
    padded = np.concatenate([[-np.inf], power, [-np.inf]])
    peaks = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]))
    return peaks[np.argsort(-power[peaks], kind="stable")][:k]


def search(t, y, dy, band, **options):
    cat = Catalog.from_arrays(np.zeros(t.size, int), t, y, dy, band=band)
    return clperiod.lombscargle_multiband(cat, GRID, periodogram=True, **options)


@pytest.mark.parametrize(("nterms_base", "nterms_band"), [(0, 1), (1, 0), (1, 1), (2, 0), (2, 1)])
@pytest.mark.parametrize("n_bands", [1, 2, 3])
@pytest.mark.parametrize("with_dy", [True, False])
def test_equals_the_reference(nterms_base, nterms_band, n_bands, with_dy):
    t, y, dy, band = lightcurve(nterms_base + 3 * nterms_band + 7 * n_bands, 70, n_bands)
    dy = dy if with_dy else None
    model = dict(nterms_base=nterms_base, nterms_band=nterms_band)
    result = search(t, y, dy, band, top_k=3, **model)
    expected = reference(t, y, dy, band, **model)
    np.testing.assert_allclose(result.power[0], expected, rtol=1e-9, atol=0)
    assert result.status[0] == Status.OK
    assert result.frequency_best[0] == GRID.frequencies()[np.argmax(expected)]
    assert result.power_best[0] == pytest.approx(expected.max(), rel=1e-9)
    np.testing.assert_array_equal(result.top_k_frequency[0],
                                  GRID.frequencies()[top_peaks(expected, 3)])
    np.testing.assert_allclose(result.top_k_power[0], expected[top_peaks(expected, 3)],
                               rtol=1e-9)


@pytest.mark.parametrize("with_dy", [True, False])
def test_equals_astropy(with_dy):
    t, y, dy, band = lightcurve(11, 80, 3)
    dy = dy if with_dy else None
    for model in (dict(nterms_base=1, nterms_band=1), dict(nterms_base=2, nterms_band=0)):
        expected = LombScargleMultiband(t - t[0], y, band, dy, **model).power(
            GRID.frequencies(), method="flexible"
        )
        np.testing.assert_allclose(search(t, y, dy, band, **model).power[0], expected,
                                   rtol=1e-9, atol=0)


def test_options_of_the_reference():
    t, y, dy, band = lightcurve(5, 60, 2)
    for options in (dict(center_data=False), dict(reg_base=1e-5, reg_band=None),
                    dict(reg_base=1e-4, reg_band=1e-3)):
        np.testing.assert_allclose(search(t, y, dy, band, **options).power[0],
                                   reference(t, y, dy, band, **options), rtol=1e-9, atol=0)


def test_absolute_ridges_are_each_objects_own(monkeypatch):
    """regularize_by_trace=False: astropy's ridges in the units of dy**-2, so objects whose
    uncertainties differ by 1e5 get ridges of different weight; each object's periodogram,
    model and bootstrap keep them."""
    curves = [lightcurve(40, 60, 3), lightcurve(41, 50, 2), lightcurve(42, 70, 3)]
    curves = [(t, y, scale * dy, band) for (t, y, dy, band), scale in
              zip(curves, (1.0, 1e3, 1e-2), strict=True)]
    ids = np.repeat(np.arange(3), [c[0].size for c in curves])
    t, y, dy, band = (np.concatenate(column) for column in zip(*curves, strict=True))
    cat = Catalog.from_arrays(ids, t, y, dy, band=band)
    ridges = dict(reg_base=1e-2, reg_band=1e-3)
    result = clperiod.lombscargle_multiband(cat, GRID, periodogram=True,
                                            regularize_by_trace=False, **ridges)
    traced = clperiod.lombscargle_multiband(cat, GRID, periodogram=True, **ridges)
    assert not result.regularize_by_trace and traced.regularize_by_trace
    for k, curve in enumerate(curves):
        expected = reference(*curve, regularize_by_trace=False, **ridges)
        np.testing.assert_allclose(result.power[k], expected, rtol=1e-9, atol=0)
        t_k, y_k, dy_k, band_k = curve
        theirs = LombScargleMultiband(t_k - t_k[0], y_k, band_k, dy_k, regularize_by_trace=False,
                                      **ridges)
        f = result.frequency_best[k]
        expected = theirs.model_parameters(f)  # its split of the constants is ill-conditioned
        np.testing.assert_allclose(result.fit(k).model_parameters(f), expected, rtol=0,
                                   atol=1e-6 * np.max(np.abs(expected)))
    assert np.max(np.abs(traced.power[1] - result.power[1])) > 0.1  # a strong ridge
    f = result.frequency_best[1]
    difference = traced.fit(1).model_parameters(f) - result.fit(1).model_parameters(f)
    assert np.max(np.abs(difference)) > 0.1
    captured = {}
    monkeypatch.setattr(multiband, "bootstrap_fap", lambda catalog, search, **options:
                        captured.setdefault("search", search))
    with pytest.raises(AttributeError):  # the captured partial has no .fap
        result.false_alarm_probability(5, seed=1)
    assert captured["search"].keywords["regularize_by_trace"] is False


def test_catalog_equals_each_object_alone_and_empty_bands_change_nothing():
    """Objects with different bands in one catalog (an object without rows in a band
    leaves it out of its model) give each object's own periodogram."""
    curves = [lightcurve(20, 60, 3), lightcurve(21, 45, 2), lightcurve(22, 50, 1)]
    ids = np.repeat(np.arange(3), [c[0].size for c in curves])
    t, y, dy, band = (np.concatenate(column) for column in zip(*curves, strict=True))
    cat = Catalog.from_arrays(ids, t, y, dy, band=band)
    assert cat.bands == BANDS and (cat.band_counts() == 0).sum() == 3
    together = clperiod.lombscargle_multiband(cat, GRID, periodogram=True, top_k=2)
    for k, curve in enumerate(curves):
        alone = search(*curve, top_k=2)
        np.testing.assert_allclose(together.power[k], alone.power[0], rtol=1e-12, atol=0)
        np.testing.assert_allclose(together.power[k], reference(*curve), rtol=1e-9, atol=0)
        np.testing.assert_array_equal(together.top_k_frequency[k], alone.top_k_frequency[0])
    assert together.bands == BANDS


def test_finds_the_period_and_keeps_statistics_under_scaling_and_band_offsets():
    t, y, dy, band = lightcurve(3, 90, 3, period=1.25)
    result = search(t, y, dy, band, top_k=2)
    assert result.frequency_best[0] == pytest.approx(0.8, abs=GRID.df)
    code = np.searchsorted(BANDS, band)
    moved = search(t, 1e4 * y + np.array([3.0, -50.0, 1e3])[code], 1e4 * dy, band, top_k=2)
    np.testing.assert_allclose(moved.power[0], result.power[0], rtol=1e-9)


def test_a_catalog_without_bands_is_one_band():
    t, y, dy, _ = lightcurve(4, 50, 1)
    cat = Catalog.from_arrays(np.zeros(t.size, int), t, y, dy)
    result = clperiod.lombscargle_multiband(cat, GRID, periodogram=True)
    np.testing.assert_allclose(result.power[0], reference(t, y, dy, np.zeros(t.size)),
                               rtol=1e-9, atol=0)
    assert result.bands == (None,)


def test_statuses_of_objects_that_cannot_be_searched():
    t, y, dy, band = lightcurve(8, 40, 2)
    few = min_points(1, 1, 2) - 1
    flat = np.where(band == "g", 3.0, 5.0)  # constant within each band
    ids = np.repeat([0, 1, 2], [t.size, few, t.size])
    cat = Catalog.from_arrays(
        ids, np.concatenate([t, t[:few], t]), np.concatenate([y, y[:few], flat]),
        np.concatenate([dy, dy[:few], dy]), band=np.concatenate([band, band[:few], band]),
    )
    result = clperiod.lombscargle_multiband(cat, GRID, periodogram=True)
    assert list(result.status) == [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]
    assert np.isfinite(result.power_best[0]) and np.isnan(result.power_best[1:]).all()
    assert np.isnan(result.power[1:]).all() and np.isnan(result.top_k_frequency[1:]).all()


def test_bad_options_raise():
    t, y, dy, band = lightcurve(9, 40, 2)
    cat = Catalog.from_arrays(np.zeros(t.size, int), t, y, dy, band=band)
    run = clperiod.lombscargle_multiband
    with pytest.raises(ValueError, match="nterms_base and nterms_band"):
        run(cat, GRID, nterms_base=0, nterms_band=0)
    with pytest.raises(ValueError, match="nterms_band"):
        run(cat, GRID, nterms_band=-1)
    with pytest.raises(ValueError, match="nterms_base"):
        run(cat, GRID, nterms_base=9)
    with pytest.raises(ValueError, match="reg_base or reg_band"):
        run(cat, GRID, reg_band=None)
    with pytest.raises(ValueError, match="reg_band"):
        run(cat, GRID, reg_band=-1.0)
    with pytest.raises(TypeError, match="regularize_by_trace"):
        run(cat, GRID, regularize_by_trace="no")
    with pytest.raises(ValueError, match="top_k"):
        run(cat, GRID, top_k=0)
    with pytest.raises(TypeError, match="grid must be a FrequencyGrid or FrequencyArray"):
        run(cat, np.array([0.3, 0.1, 0.7]))
    with pytest.raises(ValueError, match="no frequency above 0"):
        run(cat, FrequencyGrid(0.0, 0.1, 1))
    with pytest.raises(ValueError, match="precision"):
        run(cat, GRID, precision="fp16")
    with pytest.raises(TypeError, match=r"catalog must be a clperiod\.Catalog"):
        run((t, y, dy), GRID)
    many = Catalog.from_arrays(np.zeros(t.size, int), t, y, dy, band=np.arange(t.size) % 9)
    with pytest.raises(ValueError, match="9 bands"):
        run(many, GRID)
