"""Multi-harmonic AOV of catalogs (clperiod.mhaov) against the NumPy restatement of P4J's
statistic (tests/reference/mhaov.py) and, where it is installed, P4J itself."""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms import mhaov as mhaov_module
from clperiod.periodograms.mhaov import UNEXPLAINED_FLOOR, min_band_points
from peers import load_p4j
from reference import mhaov as ref
from two_devices import run_on_two_devices

P4J = load_p4j()
GRID = FrequencyGrid(0.05, 0.0125, 240)
BANDS = ("g", "i", "r")  # sorted, as the catalog orders them


def lightcurve(seed: int, n: int, n_bands: int = 1, epoch: float = 60000.0, baseline=40.0):
    """A ragged light curve on raw MJD epochs: a two-harmonic signal, per-band offsets and
    amplitudes, interleaved bands (labels from BANDS)."""
    rng = np.random.default_rng(seed)
    t = np.sort(epoch + rng.uniform(0.0, baseline, n))
    code = rng.integers(0, n_bands, n)
    phase = 2 * np.pi * t / 1.7
    y = 15.0 + 0.4 * code + (1.0 + 0.2 * code) * np.sin(phase) + 0.4 * np.cos(2 * phase + 1)
    dy = rng.uniform(0.1, 0.4, n)
    return t, y + rng.normal(0.0, 2 * dy), dy, np.asarray(BANDS)[code]


def catalog_of(t, y, dy, band=None):
    return Catalog.from_arrays(np.zeros(t.size, int), t, y, dy, band=band)


def expected_single(t, y, dy, frequency, nharmonics):
    """P4J's single-band statistic, times from the first observation."""
    return ref.mhaov(t - t.min(), y, dy, frequency, nharmonics)


def expected_multiband(t, y, dy, band, frequency, nharmonics, fit_harmonics=None):
    return ref.mhaov_multiband(t - t.min(), y, dy, band, frequency, nharmonics, fit_harmonics)[0]


def top_peaks(power, k):
    """Indices of the ``k`` highest local maxima (above the left neighbour, not below the
    right one; outside the grid counts as -inf), best first."""
    padded = np.concatenate([[-np.inf], power, [-np.inf]])
    peaks = np.flatnonzero((padded[1:-1] > padded[:-2]) & (padded[1:-1] >= padded[2:]))
    return peaks[np.argsort(-power[peaks], kind="stable")][:k]


def assert_peaks(result, expected, frequency, rtol):
    assert result.status[0] == Status.OK
    best = top_peaks(expected, 3)
    np.testing.assert_array_equal(result.top_k_frequency[0], frequency[best])
    np.testing.assert_allclose(result.top_k_power[0], expected[best], rtol=rtol)
    assert result.frequency_best[0] == frequency[np.argmax(expected)]


@pytest.mark.parametrize("nharmonics", [1, 2, 3])
@pytest.mark.parametrize("use_errors", [True, False])
def test_single_band_equals_the_reference(nharmonics, use_errors):
    t, y, dy, _ = lightcurve(nharmonics, 90)
    result = clperiod.mhaov(
        catalog_of(t, y, dy),
        GRID,
        nharmonics=nharmonics,
        use_errors=use_errors,
        top_k=3,
        periodogram=True,
    )
    expected = expected_single(t, y, dy if use_errors else None, GRID.frequencies(), nharmonics)
    np.testing.assert_allclose(result.power[0], expected, rtol=1e-9, atol=0)
    assert_peaks(result, expected, GRID.frequencies(), 1e-9)
    assert (result.dof_model, result.dof_residual[0]) == (2 * nharmonics, 90 - 2 * nharmonics - 1)
    assert result.fit_harmonics == nharmonics and result.bands == (None,)


@pytest.mark.parametrize(
    ("n_bands", "nharmonics", "fit_harmonics"),
    [(2, 1, None), (3, 1, None), (2, 2, None), (3, 3, None), (2, 2, 2), (3, 3, 3), (3, 2, 1)],
)
@pytest.mark.parametrize("use_errors", [True, False])
def test_multiband_equals_the_reference(n_bands, nharmonics, fit_harmonics, use_errors):
    t, y, dy, band = lightcurve(10 * n_bands + nharmonics, 120, n_bands)
    result = clperiod.mhaov(
        catalog_of(t, y, dy, band),
        GRID,
        nharmonics=nharmonics,
        fit_harmonics=fit_harmonics,
        use_errors=use_errors,
        top_k=3,
        periodogram=True,
    )
    expected = expected_multiband(
        t, y, dy if use_errors else None, band, GRID.frequencies(), nharmonics, fit_harmonics
    )
    np.testing.assert_allclose(result.power[0], expected, rtol=1e-9, atol=0)
    assert_peaks(result, expected, GRID.frequencies(), 1e-9)
    counts = np.unique(band, return_counts=True)[1]
    assert result.dof_residual[0] == np.sum(counts - 2 * nharmonics - 1)
    assert result.fit_harmonics == (fit_harmonics or 1)
    assert result.band_used.tolist() == [[True] * n_bands]


def test_one_band_of_a_multiband_catalog_is_p4js_band_statistic():
    """P4J's get_periodogram(band): the band's own statistic with the multiband's
    degrees of freedom and one fitted harmonic."""
    t, y, dy, band = lightcurve(12, 120, 3)
    cat = catalog_of(t, y, dy, band)
    _, per_band = ref.mhaov_multiband(t - t.min(), y, dy, band, GRID.frequencies(), 2)
    for label in ("g", "r"):
        alone = clperiod.mhaov(cat.select_bands(label), GRID, nharmonics=2, periodogram=True)
        np.testing.assert_allclose(alone.power[0], per_band[label], rtol=1e-9)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_frequency_array_in_its_order(precision):
    """Unsorted, repeated, log-spaced frequencies: each evaluated as alone, columns in the
    array's order, peaks along rising frequency."""
    t, y, dy, band = lightcurve(3, 100, 2)
    frequency = np.geomspace(0.05, 3.0, 150)
    given = np.concatenate([frequency[::-1], frequency[:10]])
    grid = FrequencyGrid.from_frequencies(given)
    assert isinstance(grid, clperiod.FrequencyArray)
    result = clperiod.mhaov(
        catalog_of(t, y, dy, band),
        grid,
        nharmonics=2,
        top_k=3,
        periodogram=True,
        precision=precision,
    )
    expected = expected_multiband(t, y, dy, band, given, 2)
    rtol = 1e-9 if precision == "fp64" else 1e-4
    np.testing.assert_allclose(result.power[0], expected, rtol=rtol, atol=0)
    rising = expected_multiband(t, y, dy, band, frequency, 2)
    assert_peaks(result, rising, frequency, rtol)
    np.testing.assert_array_equal(result.frequency(), given)


def survey(n_objects: int, seed: int, epoch: float) -> Catalog:
    """ZTF-like g and r light curves on raw epochs: 70-150 rows over three seasons of
    nightly visits, RR Lyrae-like saw-tooth light curves (3/5) and sinusoids of 0.25-30 d."""
    rng = np.random.default_rng(seed)
    nights = np.arange(1100.0)
    nights = nights[(nights % 365.25) < 240]
    lcs = []
    for k in range(n_objects):
        n = int(rng.integers(70, 150))
        t = np.sort(epoch + rng.choice(nights, n) + rng.uniform(0.15, 0.4, n))
        band = rng.choice(np.array(["g", "r"]), n)
        red = band == "r"
        amplitude = rng.uniform(0.1, 0.8) * np.where(red, 0.7, 1.0)
        if k % 5 < 3:
            phase = 2 * np.pi * t / rng.uniform(0.3, 0.9)
            shape = sum(np.sin(h * phase + 0.7 * h) / h for h in (1, 2, 3))
        else:
            shape = np.sin(2 * np.pi * t / np.exp(rng.uniform(np.log(0.25), np.log(30))))
        dy = rng.uniform(0.02, 0.08, n)
        lcs.append((t, 17 + 0.4 * red + amplitude * shape + rng.normal(0, dy), dy, band))
    return Catalog.from_lightcurves(lcs)


def explained_share(result):
    """The statistic's explained share Z (theta = d2 / d1 Z / (1 - Z))."""
    scale = result.dof_residual[:, None] / result.dof_model
    return result.power / (scale + result.power)


@pytest.mark.parametrize("epoch", [2460000.5, 59000.0])
@pytest.mark.parametrize(("nharmonics", "tolerance"), [(1, 2e-6), (2, 3e-4)])
def test_fp32_close_to_fp64_on_raw_epochs(epoch, nharmonics, tolerance):
    """The explained share Z agrees to ~3e-7, except where the harmonics of a two-harmonic
    fit are nearly collinear (the 1/day alias of these night-time visits: 1e-4)."""
    cat = survey(6, 4, epoch)
    grid = FrequencyGrid(0.02, 1e-3, 3000)
    runs = [
        clperiod.mhaov(
            cat,
            grid,
            nharmonics=nharmonics,
            fit_harmonics=nharmonics,
            periodogram=True,
            precision=p,
        )
        for p in ("fp64", "fp32")
    ]
    assert runs[1].precision == "fp32"
    np.testing.assert_allclose(
        explained_share(runs[1]), explained_share(runs[0]), rtol=0, atol=tolerance
    )
    np.testing.assert_allclose(runs[1].power_best, runs[0].power_best, rtol=1e-4)
    np.testing.assert_array_equal(runs[1].frequency_best, runs[0].frequency_best)


@pytest.mark.slow
@pytest.mark.parametrize("epoch", [2460000.5, 59000.0])
def test_fp32_best_periods_of_a_survey_catalog(epoch):
    """fp32 finds fp64's best period for >= 99 % of a ZTF-like catalog on raw epochs."""
    cat = survey(120, 3, epoch)
    grid = FrequencyGrid(0.02, 2e-4, 20000)
    fp64, fp32 = (clperiod.mhaov(cat, grid, precision=p) for p in ("fp64", "fp32"))
    assert (fp64.status == Status.OK).all()
    assert np.mean(fp32.frequency_best == fp64.frequency_best) >= 0.99
    np.testing.assert_allclose(fp32.power_best, fp64.power_best, rtol=1e-4)


def test_statuses_and_bands_left_out():
    rng = np.random.default_rng(9)
    good = lightcurve(1, 60, 2)
    t, y, dy, band = good
    one_short = (t[:33], y[:33], dy[:33], np.where(np.arange(33) < 30, "g", "i"))
    flat_band = (t, np.where(band == "g", 3.0, y), dy, band)
    lcs = [
        good,
        (t[:3], y[:3], dy[:3], band[:3]),  # too few in every band
        (t, np.where(band == "g", 2.0, 5.0), dy, band),  # constant within each band
        (np.full(20, 60000.0), rng.normal(size=20), dy[:20], band[:20]),  # zero baseline
        one_short,  # band i left out
        flat_band,  # a constant band stays in
    ]
    cat = Catalog.from_lightcurves(lcs)
    result = clperiod.mhaov(cat, GRID, periodogram=True)
    assert result.status.tolist() == [
        Status.OK,
        Status.TOO_FEW_POINTS,
        Status.ZERO_VARIANCE,
        Status.ZERO_BASELINE,
        Status.OK,
        Status.OK,
    ]
    assert np.isnan(result.power[1:4]).all() and np.isnan(result.frequency_best[1:4]).all()
    assert result.band_used[4].tolist() == [True, False]
    assert result.dof_residual.tolist() == [60 - 2 * 3, 0, 0, 0, 30 - 3, 60 - 2 * 3]
    t4, y4, dy4, band4 = one_short
    kept = band4 == "g"
    expected = expected_single(t4[kept], y4[kept], dy4[kept], GRID.frequencies(), 1)
    np.testing.assert_allclose(result.power[4], expected, rtol=1e-9)
    with np.errstate(invalid="ignore"):  # the constant band's own statistic is 0 / 0
        flat_expected = expected_multiband(*flat_band, GRID.frequencies(), 1)
    np.testing.assert_allclose(result.power[5], flat_expected, rtol=1e-9)
    alone = clperiod.mhaov(Catalog.from_lightcurves([good]), GRID, periodogram=True)
    np.testing.assert_array_equal(result.power[0], alone.power[0])


def test_invalid_rows_of_an_unchecked_catalog():
    t, y, dy, _ = lightcurve(2, 40)
    y_nan, dy_zero = y.copy(), dy.copy()
    y_nan[5], dy_zero[7] = np.nan, 0.0
    offsets = np.arange(4) * 40
    stack = np.concatenate
    cat = Catalog(
        np.arange(3), offsets, stack([t] * 3), stack([y, y_nan, y]), stack([dy, dy, dy_zero])
    )
    result = clperiod.mhaov(cat, GRID)
    assert result.status.tolist() == [Status.OK, Status.NOT_FINITE, Status.BAD_UNCERTAINTY]
    unweighted = clperiod.mhaov(cat, GRID, use_errors=False)
    assert unweighted.status.tolist() == [Status.OK, Status.NOT_FINITE, Status.OK]


def test_min_points_and_empty_objects():
    t, y, dy, band = lightcurve(4, 50, 2)
    lcs = [(t, y, dy, band), (t[:0], y[:0], dy[:0], band[:0])]
    cat = Catalog.from_lightcurves(lcs)
    counts = cat.band_counts()[0]
    fewest = int(counts.max())
    result = clperiod.mhaov(cat, GRID, min_points=fewest, periodogram=True)
    assert result.min_points == fewest and result.status[1] == Status.TOO_FEW_POINTS
    kept = band == BANDS[int(np.argmax(counts))]
    np.testing.assert_allclose(
        result.power[0],
        expected_single(t[kept], y[kept], dy[kept], GRID.frequencies(), 1),
        rtol=1e-9,
    )
    assert min_band_points(2, 1) == 6
    with pytest.raises(ValueError, match="min_points"):
        clperiod.mhaov(cat, GRID, nharmonics=2, min_points=5)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_units_offsets_and_time_shifts_leave_it_unchanged(precision):
    t, y, dy, band = lightcurve(5, 90, 3)
    t = np.round(t * 2**20) / 2**20  # t + 2.4e6 is exact
    base = clperiod.mhaov(
        catalog_of(t, y, dy, band), GRID, nharmonics=2, periodogram=True, precision=precision
    )
    offsets = np.select([band == "g", band == "i"], [1e4, -3.0], 0.5)
    moved = [
        catalog_of(t, 1e-6 * y, 1e-6 * dy, band),  # units, with errors
        catalog_of(t, -250.0 * y + offsets, 250.0 * dy, band),
        catalog_of(t + 2.4e6, y, dy, band),  # MJD -> JD
    ]
    rtol = 1e-9 if precision == "fp64" else 1e-4
    for cat in moved:
        other = clperiod.mhaov(cat, GRID, nharmonics=2, periodogram=True, precision=precision)
        np.testing.assert_allclose(other.power, base.power, rtol=rtol)
    plain = clperiod.mhaov(catalog_of(t, y, dy, band), GRID, use_errors=False, periodogram=True)
    scaled = clperiod.mhaov(
        catalog_of(t, 3e8 * y + 7.0, dy, band), GRID, use_errors=False, periodogram=True
    )
    np.testing.assert_allclose(scaled.power, plain.power, rtol=1e-9)
    assert not plain.use_errors and not np.allclose(plain.power, base.power)


def test_zero_frequency_and_exact_fit():
    """f = 0 explains nothing (P4J: 0); a noiseless model meets the floor of 1 - Z."""
    t, _, dy, _ = lightcurve(6, 40)
    clean = 3.0 + 2.0 * np.cos(2 * np.pi * (t - t[0]) / 1.25 - 0.4)
    grid = FrequencyGrid(0.0, 0.4, 3)  # 0, 0.4, 0.8 = 1 / 1.25
    result = clperiod.mhaov(catalog_of(t, clean, dy), grid, periodogram=True)
    assert result.power[0, 0] == 0.0
    d2_over_d1 = (40 - 3) / 2
    assert result.power[0, 2] == pytest.approx(d2_over_d1 / UNEXPLAINED_FLOOR, rel=1e-6)
    assert result.frequency_best[0] == 0.8


def test_bad_arguments():
    t, y, dy, band = lightcurve(7, 30, 2)
    cat = catalog_of(t, y, dy, band)
    single = catalog_of(t, y, dy)
    for options, error, match in [
        (dict(nharmonics=0), ValueError, "nharmonics"),
        (dict(nharmonics=9), ValueError, "nharmonics"),
        (dict(nharmonics=1.0), TypeError, "nharmonics"),
        (dict(fit_harmonics=0), ValueError, "fit_harmonics"),
        (dict(min_points=3), ValueError, "min_points"),
        (dict(top_k=0), ValueError, "top_k"),
        (dict(precision="fp16"), ValueError, "precision"),
        (dict(use_errors="yes"), TypeError, "use_errors"),
        (dict(periodogram=1), TypeError, "periodogram"),
    ]:
        with pytest.raises(error, match=match):
            clperiod.mhaov(cat, GRID, **options)
    with pytest.raises(ValueError, match="fit_harmonics=2 needs a catalog with bands"):
        clperiod.mhaov(single, GRID, fit_harmonics=2)
    with pytest.raises(TypeError, match="grid"):
        clperiod.mhaov(cat, GRID.frequencies())
    with pytest.raises(TypeError, match="catalog"):
        clperiod.mhaov((t, y), GRID)


def test_devices_and_batches_give_the_same_results(monkeypatch):
    """Objects spread over two workers of one device, and cut into batches of few points,
    give the results of one batch."""
    cat = Catalog.from_lightcurves([lightcurve(20 + k, 40 + 7 * k, 1 + k % 3) for k in range(9)])
    one = clperiod.mhaov(cat, GRID, top_k=2, periodogram=True)
    info = clperiod.select_devices()[0]
    monkeypatch.setattr(mhaov_module, "select_devices", lambda _: [info, info])
    monkeypatch.setattr(mhaov_module, "_BATCH_POINTS", 100)
    assert len(mhaov_module._object_batches(np.append(0, np.cumsum(cat.lengths)), 2)) == 9
    spread = clperiod.mhaov(cat, GRID, top_k=2, periodogram=True)
    assert spread.devices == [info.label] * 2
    for name in (
        "frequency_best",
        "power_best",
        "top_k_frequency",
        "top_k_power",
        "power",
        "status",
    ):
        np.testing.assert_array_equal(getattr(spread, name), getattr(one, name))


TWO_DEVICES = r"""
import json
import numpy as np
import clperiod
from clperiod import Catalog, FrequencyGrid

devices = clperiod.select_devices("cpu")
rng = np.random.default_rng(5)
lcs = []
for k in range(30):
    n = int(rng.integers(20, 120))
    t = np.sort(rng.uniform(0, 100, n))
    band = rng.choice(np.array(["g", "r"]), n)
    lcs.append((t, np.sin(2 * np.pi * t / (0.5 + k / 10)) + 0.3 * rng.standard_normal(n),
                rng.uniform(0.1, 0.3, n), band))
cat = Catalog.from_lightcurves(lcs)
grid = FrequencyGrid.from_range(0.05, 3.0, 2000)
out = {"n_devices": len(devices)}
for precision in ("fp64", "fp32"):
    one = clperiod.mhaov(cat, grid, top_k=3, precision=precision, device=devices[:1])
    both = clperiod.mhaov(cat, grid, top_k=3, precision=precision, device=devices)
    out[precision] = {
        "devices": len(both.devices),
        "same": all(np.array_equal(getattr(one, f), getattr(both, f), equal_nan=True)
                    for f in ("frequency_best", "power_best", "top_k_frequency",
                              "top_k_power", "status")),
    }
print(json.dumps(out))
"""


@pytest.mark.slow
def test_two_devices_equal_one():
    out = run_on_two_devices(TWO_DEVICES)
    assert out["n_devices"] == 2
    for precision in ("fp64", "fp32"):
        assert out[precision] == {"devices": 2, "same": True}


@pytest.mark.skipif(P4J is None, reason="P4J is not installed")
def test_equals_p4j():
    """P4J 1.1.2 computes in float32: its error is a few 1e-6 of the peak here."""
    t, y, dy, band = lightcurve(8, 120, 3, epoch=0.0, baseline=30.0)
    t, y, dy = (a.astype(np.float32).astype(np.float64) for a in (t, y, dy))
    from P4J.algorithms.multiharmonic_aov import MHAOV

    frequency = np.float32(GRID.frequencies()).astype(np.float64)
    grid = FrequencyGrid.from_frequencies(frequency)
    statistic = MHAOV(*(np.float32(a) for a in (t, y, dy)), 2, 1)
    theirs = np.array([statistic.eval_frequency(f) for f in np.float32(frequency)])
    ours = clperiod.mhaov(catalog_of(t, y, dy), grid, nharmonics=2, periodogram=True).power[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=2e-5 * theirs.max())
    assert np.argmax(ours) == np.argmax(theirs)
    multiband = P4J.MultiBandPeriodogram(method="MHAOV", Nharmonics=2)
    multiband.set_data(t, y, dy, band)
    multiband.frequency_grid_evaluation(fmin=0.05, fmax=3.0, fresolution=0.01)
    frequency, theirs = multiband.get_periodogram()
    ours = clperiod.mhaov(
        catalog_of(t, y, dy, band),
        FrequencyGrid.from_frequencies(np.float64(frequency)),
        nharmonics=2,
        periodogram=True,
    ).power[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=2e-5 * theirs.max())
    assert np.argmax(ours) == np.argmax(theirs)
