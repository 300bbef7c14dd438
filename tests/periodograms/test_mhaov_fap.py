"""Bootstrap false-alarm probabilities of the multi-harmonic AOV
(MhaovResult.false_alarm_probability, its default method): the bootstrap of
clperiod.periodograms.bootstrap with every search option of the result."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms import mhaov as mhaov_module
from clperiod.periodograms.bootstrap import DEFAULT_RESAMPLINGS, bootstrap_fap

GRID = FrequencyGrid(0.05, 0.0125, 240)
BANDS = ("g", "r")
SEED = 2**40 + 77


def lightcurve(seed: int, n: int, amplitude: float, n_bands: int = 2):
    """Raw MJD epochs, a two-harmonic signal of ``amplitude`` (in units of the noise),
    per-band offsets."""
    rng = np.random.default_rng(seed)
    t = np.sort(60000.0 + rng.uniform(0.0, 30.0, n))
    code = rng.integers(0, n_bands, n)
    phase = 2 * np.pi * t / 1.3
    dy = rng.uniform(0.5, 1.5, n)
    signal = amplitude * (np.sin(phase) + 0.5 * np.cos(2 * phase + 1))
    return t, 15.0 + 0.6 * code + signal + dy * rng.standard_normal(n), dy, np.array(BANDS)[code]


def catalog(curves, bands: bool = True) -> Catalog:
    owner = np.repeat(np.arange(len(curves)), [curve[0].size for curve in curves])
    t, y, dy, band = (np.concatenate(column) for column in zip(*curves, strict=True))
    return Catalog.from_arrays(owner, t, y, dy, band=band if bands else None)


@pytest.mark.parametrize("bands", [True, False])
def test_a_strong_signal_has_the_smallest_fap_and_noise_does_not(bands):
    cat = catalog([lightcurve(1, 50, 3.0), lightcurve(2, 50, 0.0)], bands)
    result = clperiod.mhaov(cat, GRID, nharmonics=2)
    fap = result.false_alarm_probability(99, seed=SEED)
    assert fap[0] == 1 / 100
    assert 0.05 < fap[1] < 1


def test_equals_bootstrap_fap_with_the_results_options():
    cat = catalog([lightcurve(3, 40, 0.6), lightcurve(4, 44, 0.4), lightcurve(5, 40, 3.0)])
    options = dict(nharmonics=2, fit_harmonics=2, min_points=8, use_errors=False,
                   precision="fp32")
    result = clperiod.mhaov(cat, GRID, top_k=2, **options)
    fap = result.false_alarm_probability(59, seed=SEED)
    search = functools.partial(clperiod.mhaov, grid=GRID, **options)
    boot = bootstrap_fap(cat, search, n_resamplings=59, seed=SEED)
    np.testing.assert_array_equal(fap, boot.fap)
    assert 0.05 < fap[0] < 0.95 and fap[2] == 1 / 60  # not trivial
    default = bootstrap_fap(cat, functools.partial(clperiod.mhaov, grid=GRID),
                            n_resamplings=59, seed=SEED)
    assert not np.array_equal(default.n_exceeding, boot.n_exceeding)


def test_the_copies_are_searched_with_every_option_of_the_result(monkeypatch):
    cat = catalog([lightcurve(6, 40, 1.0)])
    result = clperiod.mhaov(cat, GRID, nharmonics=3, fit_harmonics=2, min_points=9,
                            use_errors=False, precision="fp32")
    calls = []

    def recording(copies, **options):
        calls.append(options)
        return clperiod.mhaov(copies, **options)

    monkeypatch.setattr(mhaov_module, "mhaov", recording)
    result.false_alarm_probability(5, seed=1, device="0:0")
    assert calls == [dict(grid=GRID, nharmonics=3, fit_harmonics=2, min_points=9,
                          use_errors=False, precision="fp32", device="0:0")]


def test_the_same_seed_gives_the_same_probabilities():
    cat = catalog([lightcurve(7, 40, 0.5), lightcurve(8, 40, 0.3)], bands=False)
    result = clperiod.mhaov(cat, GRID)
    one = result.false_alarm_probability(39, seed=SEED)
    np.testing.assert_array_equal(one, result.false_alarm_probability(39, seed=SEED))
    assert not np.array_equal(one, result.false_alarm_probability(39, seed=SEED + 1))


def test_objects_that_are_not_ok_get_nan():
    t, y, dy, band = lightcurve(9, 40, 3.0)
    flat = np.where(band == "g", 3.0, 5.0)  # constant within each band
    cat = catalog([(t, y, dy, band), (t[:3], y[:3], dy[:3], band[:3]), (t, flat, dy, band)])
    result = clperiod.mhaov(cat, GRID)
    assert result.status.tolist() == [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]
    fap = result.false_alarm_probability(19, seed=2)
    assert fap[0] == 1 / 20 and np.isnan(fap[1:]).all()


def test_the_bootstrap_is_the_default_with_its_default_resamplings(monkeypatch):
    result = clperiod.mhaov(catalog([lightcurve(10, 40, 1.0)]), GRID)
    calls = []

    def recording(catalog, search, **options):
        calls.append(options)
        return bootstrap_fap(catalog, search, **{**options, "n_resamplings": 3})

    monkeypatch.setattr(mhaov_module, "bootstrap_fap", recording)
    result.false_alarm_probability(seed=4)
    assert calls[0]["n_resamplings"] == DEFAULT_RESAMPLINGS and calls[0]["seed"] == 4
