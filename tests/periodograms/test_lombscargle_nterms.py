"""``lombscargle(..., nterms=K)``: multi-term periodograms of catalogs on both algorithms.

The direct path (``multiterm_catalog`` of ``cl_kernels/multiterm.mako``, fp64) is
checked against astropy's exact ``chi2`` method; the NUFFT path
(``clperiod.periodograms.nufft_terms``) against the direct path and the NumPy
reference ``tests/reference/nufft.py``. Light curves are at raw MJD epochs
(``t >= 6e4``); astropy gets times from each object's first observation (its
own phases lose digits at raw epochs). NUFFT powers are compared at
frequencies ``f >= 1 / T`` (``T`` the object's baseline): below, the normal
equations are ill-conditioned and amplify the transforms' errors (as in
nifty-ls), which the tests of the lowest frequencies bound separately.
"""

from __future__ import annotations

import numpy as np
import pytest
from astropy.timeseries import LombScargle as AstropyLombScargle

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.periodograms import multiterm, nufft, nufft_terms, stats
from clperiod.periodograms.multiterm import MAX_NTERMS
from reference.nufft import lombscargle_nufft

NORMALIZATIONS = ["standard", "model", "log", "psd"]
#: Largest NUFFT power error over the peak power at f >= 1/T (measured on
#: PoCL at the default eps: up to 5e-12 in fp64, 1.3e-6 in fp32).
NUFFT_TOLERANCE = {"fp64": 1e-10, "fp32": 1e-5}
GRID = FrequencyGrid(0.004, 0.002, 2500)  # T = 100: df T = 0.2, f up to 5 per day


def harmonic_light_curve(rng, n, period, epoch=6e4, baseline=100.0, dy=True):
    """A non-sinusoidal signal (three harmonics) plus noise, at raw MJD epochs."""
    t = epoch + np.sort(rng.uniform(0, baseline, n))
    phase = 2 * np.pi * t / period
    y = (12 + 0.5 * np.sin(phase) + 0.3 * np.cos(2 * phase + 0.4) + 0.2 * np.sin(3 * phase)
         + rng.normal(0, 0.2, n))
    return t, y, (rng.uniform(0.1, 0.3, n) if dy else None)


@pytest.fixture(scope="module")
def light_curves():
    rng = np.random.default_rng(2207)
    return [harmonic_light_curve(rng, n, p, epoch=e)
            for n, p, e in [(150, 3.1, 6e4), (90, 0.71, 6.1e4), (220, 11.3, 58000.0)]]


@pytest.fixture(scope="module")
def catalog(light_curves):
    return Catalog.from_lightcurves(light_curves, ids=["a", "b", "c"])


def astropy_chi2(t, y, dy, grid, nterms, **options):
    return AstropyLombScargle(t - t[0], y, dy, nterms=nterms, **options).power(
        grid.frequencies(), method="chi2")


def peak_relative_error(power, expected, keep=slice(None)) -> float:
    """``max |power - expected| / max |expected|`` over ``keep`` (same NaNs required)."""
    power, expected = power[keep], expected[keep]
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    return float(np.nanmax(np.abs(power - expected)) / np.nanmax(np.abs(expected)))


def above_one_over_baseline(t, grid) -> np.ndarray:
    return grid.frequencies() * np.ptp(t) >= 1


def peaks_reference(power, k):
    """Indices of the k highest local maxima (first of equal maxima)."""
    p = np.where(np.isnan(power), -np.inf, power)
    left = np.concatenate([[-np.inf], p[:-1]])
    right = np.concatenate([p[1:], [-np.inf]])
    idx = np.flatnonzero((p > left) & (p >= right))
    order = np.lexsort((idx, -p[idx]))
    return idx[order][:k]


# {{{ the direct path against astropy's chi2


@pytest.mark.slow
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("nterms", [2, 3])
def test_direct_catalog_matches_astropy_chi2(light_curves, catalog, nterms, normalization):
    result = lombscargle(catalog, GRID, nterms=nterms, normalization=normalization,
                         periodogram=True, top_k=3)
    assert result.nterms == nterms and result.power.dtype == np.float64
    for row, (t, y, dy) in enumerate(light_curves):
        expected = astropy_chi2(t, y, dy, GRID, nterms, normalization=normalization)
        np.testing.assert_allclose(result.power[row], expected, rtol=1e-9,
                                   atol=1e-10 * np.abs(expected).max())
        assert result.frequency_best[row] == GRID.frequencies()[np.argmax(expected)]
        np.testing.assert_array_equal(
            result.top_k_frequency[row],
            GRID.frequencies()[peaks_reference(result.power[row], 3)])


@pytest.mark.slow
@pytest.mark.parametrize(("fit_mean", "center_data"),
                         [(True, False), (False, True), (False, False)])
@pytest.mark.parametrize("nterms", [2, 3])
def test_direct_model_variants_match_astropy_chi2(light_curves, catalog, nterms, fit_mean,
                                                   center_data):
    result = lombscargle(catalog, GRID, nterms=nterms, fit_mean=fit_mean,
                         center_data=center_data, periodogram=True)
    for row, (t, y, dy) in enumerate(light_curves):
        expected = astropy_chi2(t, y, dy, GRID, nterms, fit_mean=fit_mean,
                                center_data=center_data)
        np.testing.assert_allclose(result.power[row], expected, rtol=1e-9,
                                   atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_standard_method_is_the_unweighted_uncentred_fit(rng, algorithm):
    t, y, _ = harmonic_light_curve(rng, 120, 2.3, dy=False)
    y -= 12.0  # a mean near 0, so that the uncentred fit finds the signal
    result = lombscargle(t, GRID, y, method="standard", nterms=2, algorithm=algorithm,
                         periodogram=True)
    assert not result.fit_mean and not result.center_data
    expected = astropy_chi2(t, y, None, GRID, 2, fit_mean=False, center_data=False)
    tolerance = 1e-9 if algorithm == "direct" else NUFFT_TOLERANCE["fp64"]
    assert peak_relative_error(result.power[0], expected,
                               above_one_over_baseline(t, GRID)) <= tolerance
    assert abs(result.period[0] - 2.3) < 0.01


def test_single_light_curve_with_dy_arguments(light_curves):
    t, y, dy = light_curves[0]
    result = lombscargle(t, GRID, y, dy, nterms=2, periodogram=True)
    expected = astropy_chi2(t, y, dy, GRID, 2)
    np.testing.assert_allclose(result.power[0], expected, rtol=1e-9,
                               atol=1e-10 * expected.max())
    assert abs(result.period[0] - 3.1) < 0.01


# }}}

# {{{ the NUFFT path against the direct path and the reference


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("nterms", [1, 2, 3])
def test_nufft_catalog_matches_direct(light_curves, catalog, nterms, normalization, precision):
    fast = lombscargle(catalog, GRID, nterms=nterms, normalization=normalization,
                       algorithm="nufft", precision=precision, periodogram=True, top_k=3)
    direct = lombscargle(catalog, GRID, nterms=nterms, normalization=normalization,
                         periodogram=True, top_k=3)
    assert fast.power.dtype == np.dtype(np.float64 if precision == "fp64" else np.float32)
    assert (fast.nterms, fast.precision) == (nterms, precision)
    for row, (t, _, _) in enumerate(light_curves):
        keep = above_one_over_baseline(t, GRID)
        error = peak_relative_error(fast.power[row], direct.power[row], keep)
        assert error <= NUFFT_TOLERANCE[precision], (row, error)
    np.testing.assert_array_equal(fast.frequency_best, direct.frequency_best)
    np.testing.assert_allclose(fast.power_best, direct.power_best,
                               rtol=NUFFT_TOLERANCE[precision])


@pytest.mark.parametrize(("fit_mean", "center_data"),
                         [(True, False), (False, True), (False, False)])
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_nufft_model_variants_match_direct(light_curves, catalog, precision, fit_mean,
                                           center_data):
    options = dict(nterms=2, fit_mean=fit_mean, center_data=center_data, periodogram=True)
    fast = lombscargle(catalog, GRID, algorithm="nufft", precision=precision, **options)
    direct = lombscargle(catalog, GRID, **options)
    for row, (t, _, _) in enumerate(light_curves):
        keep = above_one_over_baseline(t, GRID)
        assert (peak_relative_error(fast.power[row], direct.power[row], keep)
                <= NUFFT_TOLERANCE[precision])


@pytest.mark.parametrize("nterms", [2, 3])
def test_nufft_matches_the_numpy_reference(light_curves, nterms):
    t, y, dy = light_curves[1]
    for normalization in ("standard", "psd"):
        fast = lombscargle(t, GRID, y, dy, nterms=nterms, algorithm="nufft",
                           normalization=normalization, periodogram=True)
        expected = lombscargle_nufft(t, y, dy, GRID.fmin, GRID.df, GRID.nf, nterms=nterms,
                                     normalization=normalization, eps=1e-12)
        assert (peak_relative_error(fast.power[0], expected, above_one_over_baseline(t, GRID))
                <= NUFFT_TOLERANCE["fp64"])


@pytest.mark.parametrize("fit_mean", [True, False])
def test_nufft_terms_with_one_term_equals_the_one_term_path(catalog, cpu_device, fit_mean):
    plan = nufft.NufftPlan.build(GRID)
    options = dict(fit_mean=fit_mean, center_data=True, use_dy=True, normalization="log",
                   top_k=2)
    one, terms = np.empty((3, GRID.nf)), np.empty((3, GRID.nf))
    nufft.search(cpu_device, catalog, plan, **options, periodograms=one)
    peaks = nufft_terms.search(cpu_device, catalog, plan, 1, **options, periodograms=terms)
    for row in range(3):
        assert peak_relative_error(terms[row], one[row]) <= 1e-11
    np.testing.assert_array_equal(peaks.indices[:, 0], np.nanargmax(one, axis=1))


def test_lowest_frequencies_and_frequency_zero(light_curves):
    t, y, dy = light_curves[0]
    grid = FrequencyGrid(0.0, 0.002, 2000)  # f T from 0 to 400, steps of 0.2
    direct = lombscargle(t, grid, y, dy, nterms=3, periodogram=True).power[0]
    # measured at f = df (f T = 0.2): 2.5e-9 (fp64) and 4.6e-6 (fp32) on PoCL,
    # 4.6e-4 in fp32 on an H100 (NVIDIA's fp32 exp and sqrt); 1.1e-6 at f T = 0.4
    for precision, bound in (("fp64", 5e-8), ("fp32", 1e-3)):
        fast = lombscargle(t, grid, y, dy, nterms=3, algorithm="nufft", precision=precision,
                           periodogram=True)
        power = fast.power[0]
        assert np.isnan(power[0]) and np.isnan(direct[0])  # no sinusoid fits at f = 0
        finite = np.isfinite(power[1:])
        assert finite[1:].all()  # fp32 may leave f = df singular within its tolerance
        error = np.abs(power[1:][finite] - direct[1:][finite]) / np.nanmax(direct)
        assert error.max() <= bound, (precision, error.max())
        assert fast.frequency_best[0] == grid.frequencies()[np.nanargmax(direct)]


# }}}

# {{{ peaks, catalogs, statuses, blocks


@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_top_k_are_the_distinct_peaks_without_the_periodogram(catalog, algorithm):
    full = lombscargle(catalog, GRID, nterms=2, algorithm=algorithm, periodogram=True, top_k=5)
    best = lombscargle(catalog, GRID, nterms=2, algorithm=algorithm, top_k=5)
    assert best.power is None
    np.testing.assert_array_equal(best.top_k_frequency, full.top_k_frequency)
    np.testing.assert_array_equal(best.top_k_power, full.top_k_power)
    for row in range(catalog.n_objects):
        expected = peaks_reference(full.power[row], 5)
        np.testing.assert_array_equal(full.top_k_frequency[row], GRID.frequencies()[expected])
        np.testing.assert_array_equal(full.top_k_power[row], full.power[row][expected])


def test_direct_blocks_of_bins_and_objects_give_the_same_results(catalog, monkeypatch):
    whole = lombscargle(catalog, GRID, nterms=2, periodogram=True, top_k=4)
    for block in (700, 3000):  # several blocks per object; one object per launch
        monkeypatch.setattr(multiterm, "_MAX_BLOCK", block)
        split = lombscargle(catalog, GRID, nterms=2, periodogram=True, top_k=4)
        np.testing.assert_array_equal(split.power, whole.power)
        np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)
        np.testing.assert_array_equal(split.top_k_power, whole.top_k_power)


def test_direct_search_on_several_devices_gives_each_a_batch(catalog, monkeypatch):
    """Two devices share a direct multi-term search that fits one batch: its
    460 points in batches of at most 230 (three: objects are not split), with
    one device's results."""
    import clperiod
    from clperiod.periodograms import lombscargle as ls_module

    whole = lombscargle(catalog, GRID, nterms=2, periodogram=True, top_k=4)
    info = clperiod.select_devices()[0]
    monkeypatch.setattr(ls_module, "select_devices", lambda _: [info, info])
    seen = []
    original = ls_module.run_on_devices

    def spy(devices, bounds, work, **kwargs):
        seen.append(list(bounds))
        return original(devices, bounds, work, **kwargs)

    monkeypatch.setattr(ls_module, "run_on_devices", spy)
    shared = lombscargle(catalog, GRID, nterms=2, periodogram=True, top_k=4)
    assert seen == [[(0, 1), (1, 2), (2, 3)]]
    np.testing.assert_array_equal(shared.power, whole.power)
    np.testing.assert_array_equal(shared.top_k_frequency, whole.top_k_frequency)
    np.testing.assert_array_equal(shared.top_k_power, whole.top_k_power)


@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
@pytest.mark.parametrize("nterms", [2, 3])
def test_statuses_follow_the_unknowns_of_the_model(rng, algorithm, nterms):
    good = harmonic_light_curve(rng, 80, 1.7)
    t = np.linspace(6e4, 6e4 + 50, 2 * nterms + 2)
    lcs = [good, (t[:-1], rng.normal(size=t.size - 1), np.ones(t.size - 1)),  # 2K + 1 points
           (t, rng.normal(size=t.size), np.ones(t.size)),  # 2K + 2: searched
           (t, np.full(t.size, 3.0), np.ones(t.size))]  # constant
    cat = Catalog.from_lightcurves(lcs)
    result = lombscargle(cat, GRID, nterms=nterms, algorithm=algorithm, periodogram=True)
    assert list(result.status) == [Status.OK, Status.TOO_FEW_POINTS, Status.OK,
                                   Status.ZERO_VARIANCE]
    assert np.isnan(result.power[[1, 3]]).all() and np.isnan(result.period[[1, 3]]).all()
    assert np.isfinite(result.period[[0, 2]]).all()
    # without the mean, 2K + 1 points leave one degree of freedom
    free = lombscargle(cat, GRID, nterms=nterms, algorithm=algorithm, fit_mean=False)
    assert free.status[1] == Status.OK


@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_epoch_offsets_and_units_leave_the_powers_unchanged(light_curves, algorithm):
    t, y, dy = light_curves[2]
    base = lombscargle(t - 58000.0, GRID, y, dy, nterms=3, algorithm=algorithm,
                       periodogram=True).power[0]
    moved = lombscargle(t + 2.4e6, GRID, 1e-3 * y + 5e4, 1e-3 * dy, nterms=3,
                        algorithm=algorithm, periodogram=True).power[0]
    # JD times are themselves rounded to 2e-10 d: 1e-9 cycles at the grid's top
    assert peak_relative_error(moved, base, above_one_over_baseline(t, GRID)) <= 1e-8


def test_false_alarm_probability_uses_the_multi_term_null(light_curves, catalog):
    result = lombscargle(catalog, GRID, nterms=2, top_k=2)
    fap = result.false_alarm_probability(power=result.top_k_power)
    for row, (t, _, dy) in enumerate(light_curves):
        expected = stats.false_alarm_probability(
            result.top_k_power[row], n=t.size, fmax=GRID.fmax, t=t, dy=dy, nf=GRID.nf,
            nterms=2)
        np.testing.assert_allclose(fap[row], expected, rtol=1e-12)
    one_term = stats.catalog_false_alarm_probability(result.power_best, catalog,
                                                     fmax=GRID.fmax, nf=GRID.nf)
    assert (fap[:, 0] > 10 * one_term).all()  # two terms: more ways to fit noise


# }}}

# {{{ bad arguments


@pytest.mark.parametrize(("nterms", "error"), [(0, ValueError), (MAX_NTERMS + 1, ValueError),
                                               (-1, ValueError), (1.5, TypeError),
                                               (2.0, TypeError), (True, TypeError),
                                               ("2", TypeError)])
@pytest.mark.parametrize("algorithm", ["direct", "nufft"])
def test_bad_nterms_is_an_error(light_curves, algorithm, nterms, error):
    t, y, dy = light_curves[0]
    with pytest.raises(error, match="nterms"):
        lombscargle(t, GRID, y, dy, nterms=nterms, algorithm=algorithm)


def test_fp32_multi_term_direct_path_is_refused(light_curves):
    t, y, dy = light_curves[0]
    with pytest.raises(ValueError, match=r"nterms=2.*fp64.*algorithm='nufft'"):
        lombscargle(t, GRID, y, dy, nterms=2, precision="fp32")


# }}}
