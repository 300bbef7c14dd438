"""clperiod.astropy.LombScargle against astropy's own LombScargle on the same data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from astropy import units as u
from astropy.time import Time, TimeDelta
from astropy.timeseries import LombScargle as AstropyLombScargle
from astropy.timeseries import TimeSeries
from astropy.timeseries.periodograms.lombscargle.implementations import (
    main as astropy_methods,
)

from clperiod import astropy as bridge
from clperiod import FrequencyGrid
from clperiod.periodograms import stats
from clperiod.astropy import (
    LombScargle,
    lombscargle_clperiod,
    register_astropy_method,
)
from clperiod.periodograms.multiterm import multiterm_power
from clperiod.testing import sinusoid_lightcurve

NORMALIZATIONS = ["standard", "model", "log", "psd"]
CENTERING = list(itertools.product([True, False], [True, False]))  # (fit_mean, center_data)
EXACT = {"method": "cython"}  # astropy's exact O(N * Nf) sum: the reference
SMALL_GRID = {"nyquist_factor": 2}  # a few hundred frequencies for these light curves


@pytest.fixture
def data(rng):
    """80 points over 50 days around MJD 58000, period 2.7 d, uncertainties."""
    return sinusoid_lightcurve(rng, 80, 2.7, baseline=50.0, mean=12.0, amplitude=0.4,
                               phase=0.3, noise=0.2, dy=(0.1, 0.3))


def relative(actual, expected):
    actual, expected = np.asarray(actual), np.asarray(expected)
    return np.max(np.abs(actual - expected) / np.abs(expected))


# {{{ powers


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("fit_mean,center_data", CENTERING)
@pytest.mark.parametrize("weighted", [True, False])
def test_fp64_autopower_matches_astropy(data, cpu_device, normalization, fit_mean, center_data,
                                        weighted):
    t, y, dy = data
    dy = dy if weighted else None
    options = {"fit_mean": fit_mean, "center_data": center_data, "normalization": normalization}
    ours = LombScargle(t, y, dy, device=cpu_device, **options)
    theirs = AstropyLombScargle(t - t[0], y, dy, **options)  # shifted: exact reference
    frequency, power = ours.autopower(**SMALL_GRID)
    expected_frequency, expected = theirs.autopower(**SMALL_GRID, **EXACT)
    np.testing.assert_array_equal(frequency, expected_frequency)
    assert relative(power, expected) < 1e-10
    assert relative(ours.power(frequency[::3]), expected[::3]) < 1e-10


def test_fp32_power_is_close(data, cpu_device):
    t, y, dy = data
    frequency, power = LombScargle(t, y, dy, precision="fp32", device=cpu_device).autopower()
    expected = AstropyLombScargle(t - t[0], y, dy).power(frequency, **EXACT)
    error = np.abs(power - expected)
    # The lowest grid frequency (half a cycle over the baseline) is the worst
    # conditioned for fp32 with a floating mean; elsewhere ~1e-7.
    assert error.max() < 1e-4
    assert error[2:].max() < 2e-6
    assert frequency[np.argmax(power)] == frequency[np.argmax(expected)]


def test_autofrequency_equals_astropy(data):
    t, y, dy = data
    ours, theirs = LombScargle(t, y, dy), AstropyLombScargle(t, y, dy)
    for kwargs in ({}, {"samples_per_peak": 10, "nyquist_factor": 2},
                   {"minimum_frequency": 0.2, "maximum_frequency": 3.0},
                   {"minimum_frequency": 0.2, "maximum_frequency": 3.0, "samples_per_peak": 3}):
        np.testing.assert_array_equal(ours.autofrequency(**kwargs), theirs.autofrequency(**kwargs))
        assert (ours.autofrequency(return_freq_limits=True, **kwargs)
                == theirs.autofrequency(return_freq_limits=True, **kwargs))


def test_any_order_shape_and_sign_of_a_uniform_grid(data, cpu_device):
    t, y, dy = data
    ours = LombScargle(t, y, dy, device=cpu_device)
    theirs = AstropyLombScargle(t - t[0], y, dy)
    grid = np.linspace(0.05, 2.0, 600)
    shuffled = np.random.default_rng(3).permutation(grid)
    for frequency in (grid[::-1], shuffled, grid.reshape(20, 30), -grid, np.float64(0.37),
                      np.concatenate([grid, grid[:50]])):
        power = ours.power(frequency)
        assert np.shape(power) == np.shape(frequency)
        assert relative(power, theirs.power(np.abs(frequency), **EXACT)) < 1e-10
    assert ours.power(np.array([])).shape == (0,)
    zero = ours.power(np.array([0.0, 0.5]))
    assert np.isnan(zero[0]) and np.isnan(theirs.power(np.array([0.0, 0.5]), **EXACT)[0])


def test_piecewise_uniform_frequencies_run_as_one_grid(data, cpu_device, monkeypatch):
    t, y, dy = data
    calls = []
    original = bridge.lombscargle
    monkeypatch.setattr(bridge, "lombscargle",
                        lambda *a, **k: calls.append(a[1]) or original(*a, **k))
    frequency = np.concatenate([np.linspace(0.1, 1.0, 300), [1.5],
                                np.arange(2.0, 3.0, 0.01), np.linspace(4.0, 4.4, 41)])
    power = LombScargle(t, y, dy, device=cpu_device).power(frequency)
    expected = AstropyLombScargle(t - t[0], y, dy).power(frequency, **EXACT)
    assert relative(power, expected) < 1e-10
    assert len(calls) == 1
    np.testing.assert_array_equal(calls[0].frequencies(), frequency)


@pytest.mark.parametrize("precision, tolerance, nterms",
                         [("fp64", 1e-12, 1), ("fp32", 3e-6, 1), ("fp64", 1e-12, 2)])
def test_arbitrary_frequencies_equal_astropys(data, cpu_device, precision, tolerance, nterms):
    """Uniform in period, log-spaced, a spacing that drifts too slowly for neighbouring
    steps to differ visibly, in any order with repeats: astropy's exact methods."""
    t, y, dy = data
    ours = LombScargle(t, y, dy, nterms=nterms, precision=precision, device=cpu_device)
    theirs = AstropyLombScargle(t - t[0], y, dy, nterms=nterms)
    method = EXACT if nterms == 1 else {"method": "chi2"}
    drifting = 0.2 + np.cumsum(1e-3 * np.cumprod(np.full(1500, 1 + 1e-12)))
    rng = np.random.default_rng(8)
    for frequency in (1.0 / np.linspace(0.5, 10.0, 500), np.geomspace(0.05, 5.0, 400),
                      drifting, rng.permutation(np.concatenate([np.geomspace(0.1, 2, 99)] * 2))):
        power = ours.power(frequency)
        expected = theirs.power(frequency, **method)
        assert np.max(np.abs(power - expected)) < tolerance * np.max(expected)


def test_bad_frequencies_raise(data, cpu_device):
    t, y, dy = data
    ours = LombScargle(t, y, dy, device=cpu_device)
    with pytest.raises(ValueError, match="finite"):
        ours.power(np.array([0.1, np.nan]))
    assert np.isnan(ours.power(np.array([0.0]))).all()  # as astropy's exact methods


# }}}

# {{{ times and units


@pytest.mark.parametrize("fmt", ["mjd", "jd", "isot"])
def test_time_inputs_as_astropy(data, cpu_device, fmt):
    t, y, dy = data
    times = Time(t, format="mjd", scale="tdb")
    times = Time(getattr(times, fmt), format=fmt, scale="tdb")
    ours = LombScargle(times, y, dy, device=cpu_device)
    theirs = AstropyLombScargle(times, y, dy)
    frequency, power = ours.autopower(**SMALL_GRID)
    expected_frequency, expected = theirs.autopower(**SMALL_GRID, **EXACT)
    assert frequency.unit == 1 / u.day
    np.testing.assert_array_equal(frequency, expected_frequency)
    assert relative(power, expected) < 1e-10
    best = frequency[np.argmax(power)]
    assert abs(1 / best.to_value(1 / u.day) - 2.7) < 0.05
    later = Time(times[-5:], format=fmt)
    np.testing.assert_allclose(ours.model(later, best), theirs.model(later, best), rtol=1e-12)
    with pytest.raises(TypeError, match="relative time"):
        ours.model(np.array([1.0]), best)


def test_timedelta_and_quantity_units(data, cpu_device):
    t, y, dy = data
    hours = (t - t[0]) * 24 * u.h
    ours = LombScargle(hours, y * u.mag, dy * u.mag, device=cpu_device)
    theirs = AstropyLombScargle(hours, y * u.mag, dy * u.mag)
    frequency, power = ours.autopower(**SMALL_GRID)
    assert frequency.unit == 1 / u.h and power.unit == u.dimensionless_unscaled
    per_day = frequency.to(1 / u.day)  # any frequency unit converts
    assert relative(ours.power(per_day), theirs.power(frequency, **EXACT)) < 1e-10
    with pytest.raises(ValueError, match="Units of frequency"):
        ours.power(frequency.value * u.m)
    psd = LombScargle(hours, y * u.mag, normalization="psd", device=cpu_device)
    power = psd.power(frequency)
    assert power.unit == u.mag**2
    assert relative(power, AstropyLombScargle(hours, y * u.mag, normalization="psd")
                    .power(frequency, **EXACT)) < 1e-10
    delta = LombScargle(TimeDelta(t - t[0], format="jd"), y, dy, device=cpu_device)
    assert delta.autofrequency().unit == 1 / u.day


def test_model_parameters_offset_design_matrix_are_astropys(data):
    t, y, dy = data
    times = Time(t, format="mjd")
    ours, theirs = LombScargle(times, y * u.mag, dy * u.mag), AstropyLombScargle(
        times, y * u.mag, dy * u.mag)
    f = 1 / (2.7 * u.day)
    np.testing.assert_array_equal(ours.model_parameters(f), theirs.model_parameters(f))
    assert ours.offset() == theirs.offset()
    np.testing.assert_array_equal(ours.design_matrix(f), theirs.design_matrix(f))
    np.testing.assert_array_equal(ours.distribution(np.array([0.1, 0.2])),
                                  theirs.distribution(np.array([0.1, 0.2])))


def test_from_timeseries(data, cpu_device):
    t, y, dy = data
    y = y.copy()
    y[3] = np.nan  # dropped by from_timeseries, as astropy does
    series = TimeSeries(time=Time(t, format="mjd"), data={"flux": y * u.mJy, "err": dy * u.mJy})
    ours = LombScargle.from_timeseries(series, "flux", "err", device=cpu_device)
    theirs = AstropyLombScargle.from_timeseries(series, "flux", "err")
    assert ours.device is cpu_device and len(ours.t) == t.size - 1
    frequency, power = ours.autopower(**SMALL_GRID)
    assert relative(power, theirs.power(frequency, **EXACT)) < 1e-10


# }}}

# {{{ false alarms


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_false_alarm_probability_and_level_equal_astropy(data, normalization):
    t, y, dy = data
    ours = LombScargle(t, y * u.mag, dy * u.mag, normalization=normalization)
    # astropy's time variance is E[t^2] - E[t]^2, which loses ~1e-9 at MJD
    # epochs; relative times make it exact (the statistics are shift-invariant).
    theirs = AstropyLombScargle(t - t[0], y * u.mag, dy * u.mag, normalization=normalization)
    levels = u.Quantity(theirs.false_alarm_level([0.5, 0.1, 1e-3]))
    for method, kwargs in itertools.product(
        ["baluev", "davies", "naive", "single"],
        [{}, {"maximum_frequency": 3.0, "samples_per_peak": 10}],
    ):
        expected = theirs.false_alarm_probability(levels, method=method, **kwargs)
        got = ours.false_alarm_probability(levels, method=method, **kwargs)
        assert isinstance(got, u.Quantity) and got.unit == u.dimensionless_unscaled
        assert relative(got, expected) < 1e-10
        p = np.array([0.5, 0.1, 1e-3])
        assert relative(ours.false_alarm_level(p, method=method, **kwargs),
                        theirs.false_alarm_level(p, method=method, **kwargs)) < 1e-7
    assert isinstance(ours.false_alarm_probability(levels.value), np.ndarray)


def test_townsend_uses_the_autofrequency_grid_size(data):
    t, y, dy = data
    ours = LombScargle(t, y, dy)
    nf = len(ours.autofrequency())
    expected = stats.false_alarm_probability(0.3, n=t.size, fmax=1.0, normalization="standard",
                                             method="townsend", nf=nf)
    assert ours.false_alarm_probability(0.3, method="townsend") == pytest.approx(expected,
                                                                                 rel=1e-14)


@pytest.mark.slow
def test_bootstrap_resamplings_on_the_device_equal_astropys(data, cpu_device):
    t, y, dy = data
    ours = LombScargle(t, y * u.mag, dy * u.mag, device=cpu_device)
    theirs = AstropyLombScargle(t, y * u.mag, dy * u.mag)
    kwds = {"n_bootstraps": 40, "random_seed": 11}
    p = np.array([0.05, 0.5, 0.9])
    level = ours.false_alarm_level(p, method="bootstrap", method_kwds=kwds)
    expected = theirs.false_alarm_level(p, method="bootstrap", method_kwds=kwds)
    assert isinstance(level, u.Quantity)
    assert relative(level, expected) < 1e-8
    z = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(
        ours.false_alarm_probability(z, method="bootstrap", method_kwds=kwds),
        theirs.false_alarm_probability(z, method="bootstrap", method_kwds=kwds))
    # a NaN power (a degenerate frequency) has no false-alarm probability
    # (astropy's searchsorted would give 0)
    fap = ours.false_alarm_probability(np.array([np.nan, 0.2]), method="bootstrap",
                                       method_kwds=kwds)
    assert np.isnan(fap[0]) and fap[1] == theirs.false_alarm_probability(
        0.2, method="bootstrap", method_kwds=kwds)
    assert np.isnan(ours.false_alarm_probability(np.nan, method="bootstrap",
                                                 method_kwds=kwds))


@pytest.mark.slow
def test_uncentred_false_alarms_use_the_zero_mean_null(data, cpu_device):
    """astropy raises NotImplementedError here; clperiod's null is zero-mean noise (dH = 0)."""
    t, y, dy = data
    y = y - np.average(y, weights=dy**-2.0)  # zero-mean data, as the null assumes
    ours = LombScargle(t, y, dy, fit_mean=False, center_data=False, device=cpu_device)
    with pytest.raises(NotImplementedError):
        AstropyLombScargle(t, y, dy, fit_mean=False, center_data=False).false_alarm_probability(
            0.2)
    fmax = ours.autofrequency(return_freq_limits=True)[1]
    z = np.array([0.2, 0.3, 0.4])
    for method in ("baluev", "davies", "naive"):
        expected = stats.false_alarm_probability(
            z, n=t.size, fmax=fmax, t=t - t[0], dy=dy, method=method, fit_mean=False,
            center_data=False)
        assert relative(ours.false_alarm_probability(z, method=method), expected) < 1e-12
        p = ours.false_alarm_probability(z, method=method)
        assert relative(ours.false_alarm_level(p, method=method), z) < 1e-9
    kwds = {"n_bootstraps": 30, "random_seed": 4}
    np.testing.assert_allclose(ours.false_alarm_level(np.arange(29.5, 0, -1) / 30,
                                                      method="bootstrap", method_kwds=kwds),
                               _bootstrap_reference(t - t[0], y, dy, 1, False, False,
                                                    "standard", **kwds), rtol=1e-9)


def _bootstrap_reference(t, y, dy, nterms, fit_mean, center_data, normalization,
                         n_bootstraps, random_seed):
    """Sorted maxima of astropy's exact periodograms of the bootstrap draws
    (astropy's own bootstrap ignores nterms, fit_mean and center_data)."""
    ls = AstropyLombScargle(t, y, dy)
    frequency = ls.autofrequency(maximum_frequency=ls.autofrequency(return_freq_limits=True)[1])
    rng = np.random.default_rng(random_seed)
    maxima = []
    for _ in range(n_bootstraps):
        pick = rng.integers(0, y.size, y.size)
        resampled = AstropyLombScargle(t, y[pick], dy[pick], nterms=nterms, fit_mean=fit_mean,
                                       center_data=center_data, normalization=normalization)
        maxima.append(resampled.power(frequency, method="chi2").max())
    return np.sort(maxima)


def test_false_alarm_errors(data):
    t, y, dy = data
    with pytest.raises(ValueError, match="periodic model"):
        LombScargle(t, y, nterms=0).false_alarm_probability(0.2)
    with pytest.raises(ValueError, match="periodic model"):
        LombScargle(t, y, nterms=0).false_alarm_level(0.1, method="bootstrap")
    ours = LombScargle(t, y, dy)
    with pytest.raises(ValueError, match="method must be one of"):
        ours.false_alarm_level(0.1, method="cython")
    with pytest.raises(TypeError, match="takes no method_kwds"):
        ours.false_alarm_level(0.1, method_kwds={"n_bootstraps": 5})
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]"):
        ours.false_alarm_level(1.5)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # astropy's
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_false_alarm_levels_at_probabilities_0_and_1_are_astropys(data, normalization):
    t, y, dy = data
    ours = LombScargle(t, y, dy, normalization=normalization)
    theirs = AstropyLombScargle(t - t[0], y, dy, normalization=normalization)
    top = 1.0 if normalization == "standard" else np.inf
    for method in ("baluev", "davies", "naive", "single"):
        level = ours.false_alarm_level([0.0, 1.0, 0.1], method=method)
        expected = theirs.false_alarm_level([0.0, 1.0, 0.1], method=method)
        np.testing.assert_array_equal(level[:2], [top, 0.0])
        np.testing.assert_array_equal(expected[:2], [top, 0.0])
        assert relative(level[2], expected[2]) < 1e-7
        np.testing.assert_array_equal(ours.false_alarm_probability(level[:2], method=method),
                                      [0.0, 1.0])
    kwds = {"n_bootstraps": 20, "random_seed": 2}
    assert relative(ours.false_alarm_level([0.0, 1.0], method="bootstrap", method_kwds=kwds),
                    theirs.false_alarm_level([0.0, 1.0], method="bootstrap",
                                             method_kwds=kwds)) < 1e-9


# }}}

# {{{ astropy's method names


ASTROPY_METHODS = ["slow", "chi2", "cython", "fast", "fastchi2", "scipy"]


def test_available_methods_are_astropys_and_clperiod():
    assert LombScargle.available_methods == AstropyLombScargle.available_methods + ["clperiod"]


@pytest.mark.parametrize("method", ASTROPY_METHODS + ["auto", "clperiod"])
@pytest.mark.parametrize("nterms", [1, 2])
def test_every_method_name_computes_the_exact_periodogram(data, cpu_device, method, nterms):
    t, y, dy = data
    if method == "scipy":  # astropy's scipy method: no floating mean, uniform errors
        options, dy = {"fit_mean": False}, np.full_like(dy, 0.2)
    else:
        options = {}
    ours = LombScargle(t, y, dy, nterms=nterms, device=cpu_device, **options)
    theirs = AstropyLombScargle(t - t[0], y, dy, nterms=nterms, **options)
    frequency = np.linspace(0.05, 2.0, 300)
    if nterms != 1 and method in ("slow", "cython", "fast", "scipy"):
        with pytest.raises(ValueError, match="nterms != 1 needs method"):
            ours.power(frequency, method=method)
        return
    expected = theirs.power(frequency, method="cython" if nterms == 1 else "chi2")
    assert relative(ours.power(frequency, method=method), expected) < 1e-10
    # from f = 1 / T up (below, multi-term normal equations are ill-conditioned)
    f_auto, p_auto = ours.autopower(method=method, minimum_frequency=0.02, **SMALL_GRID)
    assert relative(p_auto, theirs.power(f_auto, method="chi2")) < 1e-9
    zero = ours.power(np.array([0.0, 0.5]), method=method)
    assert np.isnan(zero[0]) and np.isfinite(zero[1])


def test_chi2_methods_use_the_multiterm_kernel(data, cpu_device, monkeypatch):
    t, y, dy = data
    calls = []
    original = bridge.multiterm_power
    monkeypatch.setattr(bridge, "multiterm_power",
                        lambda *a, **k: calls.append(k["direct_harmonics"]) or original(*a, **k))
    ours = LombScargle(t, y, dy, device=cpu_device)
    frequency = np.linspace(0.05, 2.0, 300)
    single = ours.power(frequency, method="cython")
    assert calls == []
    chi2 = ours.power(frequency, method="chi2")
    assert calls == [False] and relative(chi2, single) < 1e-10


@pytest.mark.parametrize(("method", "nterms"), [("fast", 1), ("fastchi2", 1), ("fastchi2", 3),
                                                ("auto", 1)])
def test_use_fft_false_sums_without_recurrences(data, cpu_device, method, nterms):
    t, y, dy = data
    ours = LombScargle(t, y, dy, nterms=nterms, device=cpu_device)
    theirs = AstropyLombScargle(t - t[0], y, dy, nterms=nterms)
    frequency = np.linspace(0.05, 2.0, 300)
    default = ours.power(frequency, method=method)
    # the approximation controls of astropy's fast methods change nothing exact
    tuned = ours.power(frequency, method=method, method_kwds={
        "algorithm": "fasper", "trig_sum_kwds": {"oversampling": 2}, "use_fft": True})
    np.testing.assert_array_equal(tuned, default)
    direct = ours.power(frequency, method=method, method_kwds={"use_fft": False})
    expected = theirs.power(frequency, method="chi2")
    assert relative(direct, expected) < 1e-10 and relative(default, expected) < 1e-10
    assert not np.array_equal(direct, default)  # other arithmetic: no recurrences
    np.testing.assert_array_equal(direct, multiterm_power(
        t, y, dy, FrequencyGrid(0.05, (2.0 - 0.05) / 299, 300), nterms, direct_harmonics=True,
        device=cpu_device))


def test_methods_refuse_what_astropy_refuses(data, cpu_device):
    t, y, dy = data
    frequency = np.linspace(0.05, 2.0, 50)
    with pytest.raises(ValueError, match="no floating mean"):
        LombScargle(t, y, device=cpu_device).power(frequency, method="scipy")
    with pytest.raises(ValueError, match="uniform uncertainties"):
        LombScargle(t, y, dy, fit_mean=False, device=cpu_device).power(frequency,
                                                                        method="scipy")
    with pytest.raises(ValueError, match="computed in fp64"):
        LombScargle(t, y, dy, precision="fp32", device=cpu_device).power(
            frequency, method="fast", method_kwds={"use_fft": False})
    with pytest.raises(ValueError, match="kernel must be one of"):
        lombscargle_clperiod(t, y, dy, frequency, kernel="fft")


# }}}

# {{{ what clperiod does not do, options, the astropy method registry


def test_unsupported_options_raise(data, cpu_device):
    t, y, dy = data
    with pytest.raises(ValueError, match="computed in fp64"):
        LombScargle(t, y, dy, nterms=2, precision="fp32")
    with pytest.raises(ValueError, match=r"nterms must be in \[0, 8\]"):
        LombScargle(t, y, dy, nterms=9)
    with pytest.raises(ValueError, match="precision must be one of"):
        LombScargle(t, y, dy, precision="fp16")
    ours = LombScargle(t, y, dy, device=cpu_device)
    with pytest.raises(ValueError, match="method must be one of"):
        ours.autopower(method="lra")
    with pytest.raises(TypeError, match="method='cython' takes method_kwds"):
        ours.power([0.1, 0.2], method="cython", method_kwds={"use_fft": True})
    with pytest.raises(ValueError, match="TOO_FEW_POINTS"):
        LombScargle(t[:3], y[:3], device=cpu_device).power([0.1, 0.2])


def test_method_kwds_choose_precision_for_one_call(data, cpu_device):
    t, y, dy = data
    ours = LombScargle(t, y, dy, device=cpu_device)
    grid = np.linspace(0.1, 2.0, 400)
    fp64, fp32 = ours.power(grid), ours.power(grid, method_kwds={"precision": "fp32"})
    assert 0 < np.max(np.abs(fp32 - fp64)) < 2e-6
    assert ours.precision == "fp64"


def test_one_line_switch(data, cpu_device):
    """The same astropy user code, run with astropy's class and with clperiod's."""
    t, y, dy = data

    def astropy_user_code(LombScargle, **extra):
        times = Time(t, format="mjd")
        ls = LombScargle(times, y * u.mag, dy * u.mag, **extra)
        frequency, power = ls.autopower(minimum_frequency=0.1 / u.day,
                                        maximum_frequency=2 / u.day)
        best = frequency[np.argmax(power)]
        return (1 / best, power.max(), ls.false_alarm_probability(power.max()),
                ls.model(times[:4], best))

    theirs = astropy_user_code(AstropyLombScargle)
    ours = astropy_user_code(LombScargle, device=cpu_device)
    assert ours[0] == theirs[0] and abs(ours[0].to_value(u.day) - 2.7) < 0.05
    # astropy's "auto" is its approximate fast method; clperiod's sum is exact.
    assert ours[1].value == pytest.approx(theirs[1].value, rel=1e-3)
    assert ours[2].value == pytest.approx(theirs[2].value, rel=1e-2)
    np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-12)


def test_register_astropy_method_is_opt_in(data, cpu_device, monkeypatch):
    t, y, dy = data
    assert "clperiod" not in astropy_methods.METHODS  # importing registers nothing
    theirs = AstropyLombScargle(t - t[0], y, dy)
    grid = np.linspace(0.05, 2.0, 500)
    with pytest.raises(ValueError, match="invalid method"):
        theirs.power(grid, method="clperiod")
    monkeypatch.setattr(astropy_methods, "METHODS", dict(astropy_methods.METHODS))
    register_astropy_method()
    register_astropy_method()  # idempotent
    assert astropy_methods.METHODS["clperiod"] is lombscargle_clperiod
    power = theirs.power(grid, method="clperiod", method_kwds={"device": cpu_device})
    assert relative(power, theirs.power(grid, **EXACT)) < 1e-10
    frequency, power = theirs.autopower(method="clperiod", method_kwds={"device": cpu_device})
    assert relative(power, theirs.power(frequency, **EXACT)) < 1e-10
    with pytest.raises(ValueError, match="already has a Lomb-Scargle method named 'fast'"):
        register_astropy_method("fast")


# }}}
