"""clperiod.astropy.LombScargleMultiband against astropy's own LombScargleMultiband, and
MultibandResult.fit against astropy and the NumPy reference (tests/reference/multiband.py)."""

from __future__ import annotations

import numpy as np
import pytest
from astropy import units as u
from astropy.time import Time
from astropy.timeseries import LombScargleMultiband as AstropyMultiband

import clperiod
from clperiod import astropy as bridge
from clperiod.astropy import LombScargle, LombScargleMultiband
from clperiod.periodograms.multiband_fit import MultibandFit
from reference.multiband import MultibandLombScargle

#: A few hundred frequencies for these light curves, from 0.4 cycles per baseline: below
#: about 0.2 the harmonics of low frequencies nearly repeat the constants, and astropy and the
#: NumPy reference differ by 1e-8 relative there (the normal matrix's conditioning).
SMALL_GRID = {"nyquist_factor": 1, "minimum_frequency": 0.01}
NTERMS = [(1, 1), (0, 1), (2, 0), (2, 2), (3, 1)]
FREQUENCY = 0.43  # a frequency near the signal's, for the models


def multiband_data(rng, n_bands=3, n=70, epoch=0.0):
    """``n`` points over 40 days in ``n_bands`` bands (period 2.3 d, band offsets and
    amplitudes), observation ``k`` in sorted band ``k`` for the first ``n_bands`` points
    (where astropy 8's model adds the right band means)."""
    names = np.array(["g", "i", "r", "u", "z", "y"][:n_bands])
    band = np.concatenate([names, rng.choice(names, n - n_bands)])
    later = np.sort(rng.uniform(1, 40, n - n_bands))
    t = epoch + np.concatenate([np.arange(n_bands) * 0.1, later])
    number = np.searchsorted(np.sort(names), band)
    y = (15 + 0.5 * number + (1 + 0.2 * number) * np.sin(2 * np.pi * t / 2.3 + 0.3 * number)
         + rng.normal(0, 0.2, n))
    dy = rng.uniform(0.1, 0.3, n)
    return t, y, band, dy


def scaled_error(actual, expected):
    """Largest difference in units of the largest expected magnitude."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    return np.max(np.abs(actual - expected)) / np.max(np.abs(expected))


# {{{ powers


@pytest.mark.parametrize("nterms_base,nterms_band", NTERMS)
@pytest.mark.parametrize("weighted", [True, False])
def test_autopower_matches_astropy(rng, cpu_device, nterms_base, nterms_band, weighted):
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    dy = dy if weighted else None
    options = {"nterms_base": nterms_base, "nterms_band": nterms_band}
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device, **options)
    theirs = AstropyMultiband(t - t[0], y, band, dy, **options)  # shifted: exact reference
    frequency, power = ours.autopower(**SMALL_GRID)
    expected_frequency, expected = theirs.autopower(**SMALL_GRID)
    np.testing.assert_allclose(frequency, expected_frequency, rtol=1e-12)
    np.testing.assert_allclose(power, expected, rtol=1e-9)


@pytest.mark.parametrize("n_bands", [1, 2, 6])
@pytest.mark.parametrize("center_data", [True, False])
def test_power_matches_astropy_over_bands_and_centring(rng, cpu_device, n_bands, center_data):
    t, y, band, dy = multiband_data(rng, n_bands=n_bands, n=90)
    options = {"center_data": center_data, "reg_base": 1e-5}
    frequency = np.linspace(0.05, 1.5, 200)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device, **options).power(frequency)
    expected = AstropyMultiband(t, y, band, dy, **options).power(frequency)
    np.testing.assert_allclose(ours, expected, rtol=1e-9)


def test_power_takes_evenly_spaced_frequencies_in_any_order_and_shape(rng, cpu_device):
    t, y, band, dy = multiband_data(rng)
    grid = np.linspace(0.1, 1.0, 91)
    expected = AstropyMultiband(t, y, band, dy).power(grid)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    shuffled = rng.permutation(91)
    np.testing.assert_allclose(ours.power(grid[shuffled]), expected[shuffled], rtol=1e-9)
    np.testing.assert_allclose(ours.power(-grid[::-1]), expected[::-1], rtol=1e-9)
    repeated = np.stack([grid[:10], grid[:10]])
    np.testing.assert_allclose(ours.power(repeated), [expected[:10]] * 2, rtol=1e-9)
    with_zero = ours.power(np.array([0.0, 0.1, 0.2]))
    assert np.isnan(with_zero[0])
    np.testing.assert_allclose(with_zero[1:], AstropyMultiband(t, y, band, dy).power([0.1, 0.2]),
                               rtol=1e-9)


@pytest.mark.parametrize("nterms_base,nterms_band", [(1, 1), (2, 0)])
def test_power_at_uneven_frequencies_matches_astropy(rng, cpu_device, nterms_base, nterms_band):
    """Frequencies uniform in period, shuffled, repeated and negative: the array kernel."""
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    options = {"nterms_base": nterms_base, "nterms_band": nterms_band}
    frequency = rng.permutation(1 / np.linspace(1, 10, 60))
    frequency = np.concatenate([frequency, frequency[:5], -frequency[5:8]])
    expected = AstropyMultiband(t - t[0], y, band, dy, **options).power(np.abs(frequency))
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device, **options)
    np.testing.assert_allclose(ours.power(frequency), expected, rtol=1e-9)
    np.testing.assert_allclose(ours.power(frequency.reshape(4, 17)), expected.reshape(4, 17),
                               rtol=1e-9)


def test_fp32_power_follows_fp64(rng, cpu_device):
    t, y, band, dy = multiband_data(rng, epoch=2.46e6)
    frequency = 1 / np.linspace(0.5, 10, 300)
    fp64 = LombScargleMultiband(t, y, band, dy, device=cpu_device).power(frequency)
    ours = LombScargleMultiband(t, y, band, dy, precision="fp32", device=cpu_device)
    power = ours.power(frequency)
    assert power.dtype == np.float64
    np.testing.assert_allclose(power, fp64, rtol=0, atol=2e-5)
    assert ours.autopower(**SMALL_GRID)[1].dtype == np.float64
    with pytest.raises(ValueError, match="precision"):
        LombScargleMultiband(t, y, band, dy, precision="fp16")


def test_quantities_and_times_as_astropy(rng, cpu_device):
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    times = Time(t, format="mjd")
    ours = LombScargleMultiband(times, y * u.mag, band, dy * u.mag, device=cpu_device)
    theirs = AstropyMultiband(times, y * u.mag, band, dy * u.mag)
    grid = {**SMALL_GRID, "minimum_frequency": SMALL_GRID["minimum_frequency"] / u.day}
    frequency = ours.autofrequency(**grid)
    assert frequency.unit == 1 / u.day
    np.testing.assert_allclose(frequency.value, theirs.autofrequency(**grid).value, rtol=1e-12)
    power = ours.power(frequency)
    assert power.unit == u.dimensionless_unscaled
    np.testing.assert_allclose(power.value, theirs.power(frequency).value, rtol=1e-9)
    fitted = ours.model(times[:5], FREQUENCY / u.day)
    assert fitted.unit == u.mag and fitted.shape == (3, 5)
    np.testing.assert_allclose(fitted.value, theirs.model(times[:5], FREQUENCY / u.day).value,
                               rtol=1e-9)


@pytest.mark.slow
def test_power_without_trace_scaling_matches_astropy(rng, cpu_device):
    """regularize_by_trace=False: astropy's ridges in the units of dy**-2, with and
    without dy and with dy in other units (each a different ridge)."""
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    frequency = np.linspace(0.05, 1.5, 200)
    for nterms_base, nterms_band in NTERMS:
        for errors in (dy, None, 1e3 * dy):
            options = {"nterms_base": nterms_base, "nterms_band": nterms_band,
                       "reg_base": 1e-2, "reg_band": 1e-3}
            ours = LombScargleMultiband(t, y, band, errors, regularize_by_trace=False,
                                        device=cpu_device, **options).power(frequency)
            expected = AstropyMultiband(t - t[0], y, band, errors, regularize_by_trace=False,
                                        **options).power(frequency)
            np.testing.assert_allclose(ours, expected, rtol=1e-9)
            traced = AstropyMultiband(t - t[0], y, band, errors, **options).power(frequency)
            assert scaled_error(traced, expected) > 1e-3  # the ridges matter


def test_autofrequency_in_other_time_units_matches_astropy(rng):
    """astropy makes the multiband grid in days whatever the times' unit."""
    t, y, band, dy = multiband_data(rng, n=300)
    for unit in (u.hour, u.s, u.year):
        times = (t * u.day).to(unit)
        ours = LombScargleMultiband(times, y, band, dy).autofrequency()
        expected = AstropyMultiband(times, y, band, dy).autofrequency()
        assert ours.unit == expected.unit and ours.size == expected.size
        np.testing.assert_allclose(ours.value, expected.value, rtol=1e-12)
        limits = {"minimum_frequency": 0.2 / u.day, "maximum_frequency": 3 / u.day}
        np.testing.assert_allclose(
            LombScargleMultiband(times, y, band, dy).autofrequency(**limits).value,
            AstropyMultiband(times, y, band, dy).autofrequency(**limits).value, rtol=1e-12)


def test_autofrequency_limits_match_astropy(rng):
    t, y, band, dy = multiband_data(rng)
    ours = LombScargleMultiband(t, y, band, dy)
    theirs = AstropyMultiband(t, y, band, dy)
    options = {"minimum_frequency": 0.2, "samples_per_peak": 3, "return_freq_limits": True}
    np.testing.assert_allclose(ours.autofrequency(**options), theirs.autofrequency(**options),
                               rtol=1e-12)


# }}}
# {{{ models


@pytest.mark.parametrize("nterms_base,nterms_band", NTERMS)
@pytest.mark.parametrize("center_data", [True, False])
def test_model_parameters_and_model_match_astropy(rng, nterms_base, nterms_band, center_data):
    t, y, band, dy = multiband_data(rng)
    options = {"nterms_base": nterms_base, "nterms_band": nterms_band, "center_data": center_data}
    ours = LombScargleMultiband(t, y, band, dy, **options)
    theirs = AstropyMultiband(t, y, band, dy, **options)
    assert scaled_error(ours.model_parameters(FREQUENCY),
                        theirs.model_parameters(FREQUENCY)) < 1e-9
    t_fit = np.linspace(0, 40, 9)
    assert scaled_error(ours.model(t_fit, FREQUENCY), theirs.model(t_fit, FREQUENCY)) < 1e-9
    # astropy 8 fails for a subset of the bands (its design matrix has their columns only)
    np.testing.assert_allclose(ours.model(t_fit, FREQUENCY, np.array(["r", "g"])),
                               ours.model(t_fit, FREQUENCY)[[2, 0]], rtol=1e-13)


def test_model_parameters_without_trace_scaling_match_astropy(rng):
    t, y, band, dy = multiband_data(rng)
    options = {"regularize_by_trace": False, "reg_band": 1e-3}
    ours = LombScargleMultiband(t, y, band, dy, **options)
    theirs = AstropyMultiband(t, y, band, dy, **options)
    assert scaled_error(ours.model_parameters(FREQUENCY),
                        theirs.model_parameters(FREQUENCY)) < 1e-9


def test_model_adds_each_bands_own_mean(rng):
    """Bands in any order of observations: the reference's model (astropy 8 adds the
    mean of the band of observation k to band k)."""
    t, y, band, dy = multiband_data(rng)
    order = rng.permutation(t.size)
    t, y, band, dy = t[order], y[order], band[order], dy[order]
    t_fit = np.linspace(0, 40, 9)
    expected = MultibandLombScargle(t, y, band, dy).model(t_fit, FREQUENCY)
    ours = LombScargleMultiband(t, y, band, dy).model(t_fit, FREQUENCY)
    assert scaled_error(ours, expected) < 1e-9
    means = [np.average(y[band == b], weights=dy[band == b] ** -2) for b in ("g", "i", "r")]
    np.testing.assert_allclose(ours.mean(axis=1), means, atol=0.5)  # model about its mean


def test_offset_matches_astropy(rng):
    t, y, band, dy = multiband_data(rng)
    ours = LombScargleMultiband(t, y, band, dy)
    np.testing.assert_allclose(ours.offset(), AstropyMultiband(t, y, band, dy).offset(),
                               rtol=1e-13)
    means = {b: np.average(y[band == b], weights=dy[band == b] ** -2) for b in ("g", "r")}
    offsets = ours.offset(np.linspace(0, 40, 4), np.array(["r", "g"]))
    np.testing.assert_allclose(offsets, [means["r"]] * 4 + [means["g"]] * 4, rtol=1e-13)
    uncentred = LombScargleMultiband(t, y, band, dy, center_data=False)
    np.testing.assert_array_equal(uncentred.offset(), np.zeros(t.size))


def test_result_fit_gives_each_objects_model(rng, cpu_device):
    curves = [multiband_data(rng, epoch=58000.0 + 100 * k) for k in range(2)]
    t, y, band, dy = (np.concatenate(columns) for columns in zip(*curves, strict=True))
    catalog = clperiod.Catalog.from_arrays(np.repeat([7, 8], 70), t, y, dy, band=band)
    grid = clperiod.FrequencyGrid.from_range(0.05, 1.0, 400)
    result = clperiod.lombscargle_multiband(catalog, grid, nterms_base=2, device=cpu_device)
    t1, y1, band1, dy1 = curves[1]
    fit = result.fit(1)
    assert fit.epoch == t1[0] and fit.labels == ("g", "i", "r")
    theirs = AstropyMultiband(t1 - t1[0], y1, band1, dy1, nterms_base=2)
    f = result.frequency_best[1]
    assert scaled_error(fit.model_parameters(f), theirs.model_parameters(f)) < 1e-9
    t_fit = t1[0] + np.linspace(0, 40, 9)
    reference = MultibandLombScargle(t1 - t1[0], y1, band1, dy1, nterms_base=2)
    assert scaled_error(fit.model(t_fit, f), reference.model(t_fit - t1[0], f)) < 1e-9
    assert abs(f - 1 / 2.3) < 0.01
    with pytest.raises(IndexError, match="index 2"):
        result.fit(2)


def test_object_missing_a_band_fits_only_its_bands(rng):
    t, y, band, dy = multiband_data(rng)
    keep = band != "i"
    catalog = clperiod.Catalog.from_arrays(np.zeros(keep.sum()), t[keep], y[keep], dy[keep],
                                           band=band[keep], bands=["g", "i", "r"])
    grid = clperiod.FrequencyGrid.from_range(0.4, 0.5, 3)
    fit = clperiod.lombscargle_multiband(catalog, grid).fit(0)
    assert fit.labels == ("g", "r") and fit.n_parameters == 3 + 2 * 3


# }}}
# {{{ method "fast"


#: astropy's exact single-band methods for method "fast", by nterms_base.
EXACT_BAND_METHODS = {1: ("slow", "cython", "chi2"), 2: ("chi2",)}


@pytest.mark.parametrize("nterms_base", [1, 2])
@pytest.mark.parametrize("normalization", ["standard", "psd", "model", "log"])
def test_fast_method_with_exact_band_periodograms_equals_astropys(rng, cpu_device, nterms_base,
                                                                  normalization):
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    frequency = np.linspace(0.05, 1.5, 200)
    for dy_used, fit_mean, center_data in ((dy, True, True), (None, False, True),
                                           (dy, False, False)):
        options = {"nterms_base": nterms_base, "normalization": normalization,
                   "fit_mean": fit_mean, "center_data": center_data}
        ours = LombScargleMultiband(t, y, band, dy_used, device=cpu_device, **options)
        theirs = AstropyMultiband(t - t[0], y, band, dy_used, **options)
        for sb_method in EXACT_BAND_METHODS[nterms_base]:
            expected = theirs.power(frequency, method="fast", sb_method=sb_method)
            power = ours.power(frequency, method="fast", sb_method=sb_method)
            np.testing.assert_allclose(power, expected, rtol=1e-9)


def test_fast_band_methods_run_the_nufft_within_astropys_approximation(rng, cpu_device,
                                                                       monkeypatch):
    """sb_method "fast" and "fastchi2" (one harmonic) run clperiod's NUFFT: 1e-9 of the peak
    from astropy's exact powers, and from astropy's fast ones by no more than that plus
    astropy's own approximation; "auto" lets the cost model choose, the others are exact."""
    t, y, band, dy = multiband_data(rng, n=150, epoch=58000.0)
    algorithms = []
    original = bridge.lombscargle
    monkeypatch.setattr(bridge, "lombscargle",
                        lambda *a, **k: algorithms.append(k["algorithm"]) or original(*a, **k))
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    theirs = AstropyMultiband(t - t[0], y, band, dy)
    frequency, power = ours.autopower(method="fast", sb_method="fast")
    assert algorithms == ["nufft"] * 3  # one call per band
    exact = theirs.power(frequency, method="fast", sb_method="slow")
    approximate = theirs.power(frequency, method="fast", sb_method="fast")
    assert scaled_error(power, exact) < 1e-9
    assert scaled_error(power, approximate) < 1e-9 + scaled_error(approximate, exact)
    np.testing.assert_allclose(frequency, theirs.autofrequency(), rtol=1e-12)
    for sb_method, algorithm in (("fastchi2", "nufft"), ("auto", "auto"), ("cython", "direct"),
                                 ("scipy", "direct")):
        algorithms.clear()
        scipy = sb_method == "scipy"  # no floating mean, uniform dy (astropy's rules)
        options = {"dy": None if scipy else dy, "fit_mean": not scipy}
        ours = LombScargleMultiband(t, y, band, device=cpu_device, **options)
        exact = AstropyMultiband(t - t[0], y, band, **options).power(
            frequency, method="fast", sb_method="slow")
        assert scaled_error(ours.power(frequency, method="fast", sb_method=sb_method),
                            exact) < 1e-9
        assert algorithms == [algorithm] * 3


def test_fast_method_with_several_harmonics_is_exact(rng, cpu_device, monkeypatch):
    """nterms_base > 1: every band method fits the harmonics exactly (the multi-term NUFFT
    loses accuracy below one cycle per baseline, where autofrequency starts)."""
    t, y, band, dy = multiband_data(rng, epoch=58000.0)
    monkeypatch.setattr(bridge, "lombscargle", None)  # no clperiod.lombscargle call
    ours = LombScargleMultiband(t, y, band, dy, nterms_base=2, device=cpu_device)
    theirs = AstropyMultiband(t - t[0], y, band, dy, nterms_base=2)
    frequency = np.linspace(0.05, 1.5, 100)
    expected = theirs.power(frequency, method="fast", sb_method="chi2")
    for sb_method in ("auto", "fastchi2", "chi2", "clperiod"):
        np.testing.assert_allclose(ours.power(frequency, method="fast", sb_method=sb_method),
                                   expected, rtol=1e-9)


def test_fast_weights_count_the_frequencies_asked_for(rng, cpu_device):
    """astropy weights each band by its squared powers summed over the frequencies asked
    for, repeats included; the power at frequency 0 is NaN and left out of the weights."""
    t, y, band, dy = multiband_data(rng)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    theirs = AstropyMultiband(t, y, band, dy)
    frequency = np.array([0.2, 0.43, 0.43, 0.43, 0.9, 1.3])
    expected = theirs.power(frequency, method="fast", sb_method="slow")
    assert scaled_error(expected, theirs.power(np.unique(frequency), method="fast",
                                               sb_method="slow")[[0, 1, 1, 1, 2, 3]]) > 1e-3
    power = ours.power(np.concatenate([[0.0], -frequency]), method="fast", sb_method="slow")
    assert np.isnan(power[0])
    np.testing.assert_allclose(power[1:], expected, rtol=1e-9)
    np.testing.assert_allclose(ours.power(frequency.reshape(2, 3), method="fast"),
                               expected.reshape(2, 3), rtol=1e-9)
    assert ours.power(0.43, method="fast").shape == ()
    assert ours.power(np.array([0.0]), method="fast").shape == (1,)


def test_fast_method_of_one_band_is_the_single_band_periodogram(rng, cpu_device):
    t, y, band, dy = multiband_data(rng, n_bands=1)
    frequency = np.linspace(0.05, 1.5, 100)
    for sb_method, errors, fit_mean in (("auto", dy, True), ("cython", dy, True),
                                        ("scipy", 0.2, False)):
        multiband = LombScargleMultiband(t, y, band, errors, fit_mean=fit_mean,
                                         device=cpu_device)
        single = LombScargle(t, y, errors, fit_mean=fit_mean, device=cpu_device)
        assert scaled_error(multiband.power(frequency, method="fast", sb_method=sb_method),
                            single.power(frequency, method=sb_method)) < 1e-9


def test_fast_fp32_follows_fp64(rng, cpu_device):
    t, y, band, dy = multiband_data(rng, epoch=2.46e6)
    frequency = 1 / np.linspace(0.5, 10, 300)
    fp64 = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    fp32 = LombScargleMultiband(t, y, band, dy, precision="fp32", device=cpu_device)
    for sb_method in ("fast", "cython"):
        np.testing.assert_allclose(fp32.power(frequency, method="fast", sb_method=sb_method),
                                   fp64.power(frequency, method="fast", sb_method=sb_method),
                                   rtol=0, atol=2e-5)


def test_fast_method_refuses_what_astropy_does_not_run(rng, cpu_device):
    t, y, band, dy = multiband_data(rng)
    frequency = np.linspace(0.1, 1, 10)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    with pytest.raises(ValueError, match="nterms_base=0 leaves no periodic model"):
        LombScargleMultiband(t, y, band, dy, nterms_base=0).power(frequency, method="fast")
    with pytest.raises(ValueError, match=r"sb_method='nope'.*method must be one of"):
        ours.power(frequency, method="fast", sb_method="nope")
    with pytest.raises(ValueError, match=r"sb_method='slow'.*nterms_base=2.*nterms != 1"):
        LombScargleMultiband(t, y, band, dy, nterms_base=2).power(frequency, method="fast",
                                                                  sb_method="slow")
    with pytest.raises(ValueError, match=r"sb_method='scipy'.*fit_mean=False"):
        ours.power(frequency, method="fast", sb_method="scipy")
    with pytest.raises(ValueError, match=r"sb_method='scipy'.*uniform uncertainties"):
        LombScargleMultiband(t, y, band, dy, fit_mean=False).power(frequency, method="fast",
                                                                   sb_method="scipy")
    with pytest.raises(ValueError, match="fp64"):
        LombScargleMultiband(t, y, band, dy, nterms_base=2, precision="fp32").power(
            frequency, method="fast")
    few = np.concatenate([band[:-2], ["x", "x"]])
    with pytest.raises(ValueError, match=r"band 'x'.*TOO_FEW_POINTS"):
        LombScargleMultiband(t, y, few, dy, device=cpu_device).power(frequency, method="fast")


# }}}
# {{{ bootstrap false alarms


def test_bootstrap_fap_equals_the_catalog_search_bootstrap(rng, cpu_device):
    """The bridge's FAP of the highest power is MultibandResult's bootstrap with the seed."""
    t, y, band, dy = multiband_data(rng)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    frequency, power = ours.autopower(**SMALL_GRID)
    kwds = {"n_bootstraps": 200, "random_seed": 17}
    fap = ours.false_alarm_probability(power.max(), method_kwds=kwds, **SMALL_GRID)
    catalog = clperiod.Catalog.from_arrays(np.zeros(t.size, dtype=np.int64), t, y, dy,
                                           band=band)
    grid = ours._auto_grid(5, SMALL_GRID["nyquist_factor"], SMALL_GRID["minimum_frequency"],
                           None)
    result = clperiod.lombscargle_multiband(catalog, grid, reg_band=ours.reg_band,
                                            device=cpu_device)
    np.testing.assert_allclose(result.power_best[0], power.max(), rtol=1e-12)
    expected = result.false_alarm_probability(200, seed=17, device=cpu_device)[0]
    assert fap == expected
    assert fap == pytest.approx(1 / 201)  # the signal is strong


def test_bootstrap_level_and_probability_agree(rng, cpu_device):
    """Noise only: FAP(level(p)) is about p; FAP falls with power; shapes are kept."""
    t, _, band, dy = multiband_data(rng)
    y = rng.normal(0, 1, t.size) * dy
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    kwds = {"n_bootstraps": 300, "random_seed": 5}
    levels = ours.false_alarm_level([0.5, 0.1, 0.02], method_kwds=kwds, **SMALL_GRID)
    assert np.all(np.diff(levels) > 0)
    faps = ours.false_alarm_probability(levels, method_kwds=kwds, **SMALL_GRID)
    np.testing.assert_allclose(faps, [0.5, 0.1, 0.02], atol=0.01)
    grid_faps = ours.false_alarm_probability(np.array([[0.0, 1.0]]), method_kwds=kwds,
                                             **SMALL_GRID)
    assert grid_faps.shape == (1, 2)
    np.testing.assert_allclose(grid_faps, [[1.0, 1 / 301]])


# }}}
# {{{ what is not supported


def test_unsupported_options_raise(rng, cpu_device):
    t, y, band, dy = multiband_data(rng)
    ours = LombScargleMultiband(t, y, band, dy, device=cpu_device)
    frequency = np.linspace(0.1, 1, 10)
    with pytest.raises(ValueError, match="method must be one of"):
        ours.power(frequency, method="slow")
    with pytest.raises(ValueError, match="method must be one of"):
        ours.autopower(method="slow")
    with pytest.raises(NotImplementedError, match="distribution"):
        ours.distribution(0.5)
    for name in ("false_alarm_probability", "false_alarm_level"):
        with pytest.raises(ValueError, match="method must be 'bootstrap'"):
            getattr(ours, name)(0.5, method="baluev")
        with pytest.raises(ValueError, match="unknown method_kwds"):
            getattr(ours, name)(0.5, method_kwds={"samples": 3})
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        ours.false_alarm_level(1.5)
    with pytest.raises(ValueError, match="reg_base or reg_band"):
        LombScargleMultiband(t, y, band, dy, reg_band=None).power(frequency)


def test_bad_arguments_raise(rng):
    """As astropy, a model without harmonics is refused when it is fitted."""
    t, y, band, dy = multiband_data(rng)
    empty = LombScargleMultiband(t, y, band, dy, nterms_base=0, nterms_band=0)
    with pytest.raises(ValueError, match="at least one of nterms_base and nterms_band"):
        empty.power([0.5])
    with pytest.raises(ValueError, match="at least one of nterms_base and nterms_band"):
        empty.model_parameters(0.5)
    with pytest.raises(ValueError, match="nterms_band"):
        LombScargleMultiband(t, y, band, dy, nterms_band=5)
    with pytest.raises(ValueError, match=r"absent from the data: \['v'\]"):
        LombScargleMultiband(t, y, band, dy).model([1.0], FREQUENCY, np.array(["v"]))
    with pytest.raises(ValueError, match="dy must be finite and > 0"):
        MultibandFit.from_arrays(t, y, band, -dy)
    with pytest.raises(ValueError, match="one length"):
        MultibandFit.from_arrays(t, y[:-1], band)


# }}}
