"""Lomb-Scargle statistics do not depend on the units or the offset of y.

With ``y -> a y + b`` and ``dy -> a dy`` every periodogram statistic (one- and
multi-term powers in every normalization, best frequencies, false-alarm
probabilities) stays the same within its precision's tolerance; psd powers
without ``dy`` carry the units of ``y**2`` and scale by ``a**2``; offsets
apply to centred models (``fit_mean`` or ``center_data``).
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from astropy.timeseries import LombScargle
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.periodograms import stats
from clperiod.periodograms.multiterm import (
    multiterm_coefficients,
    multiterm_max_power,
    multiterm_power,
)
from clperiod.testing import sinusoid_lightcurve

NORMALIZATIONS = ["standard", "model", "log", "psd"]
#: (method, fit_mean, center_data, with dy)
MODELS = [("generalized", True, True, True), ("generalized", True, True, False),
          ("generalized", False, True, True), ("generalized", False, False, True),
          ("standard", False, False, False), ("standard", False, True, False)]
#: Tolerance on powers relative to the object's highest power.
TOLERANCE = {"fp64": 1e-10, "fp32": 1e-5}
GRID = FrequencyGrid.from_range(0.05, 5.0, 600)


def light_curve(n=80, seed=5):
    return sinusoid_lightcurve(np.random.default_rng(seed), n, 1.7, baseline=50.0,
                               amplitude=0.3, noise=0.2, dy=(0.1, 0.3))


T, Y, DY = light_curve()


def scales():
    """``a = m 10**e`` over the float64 range that keeps ``a y`` and ``a dy`` normal."""
    return st.builds(lambda m, e: m * 10.0**e, st.floats(1.0, 9.99), st.integers(-300, 300))


def offsets():
    """``b / (a std(y))``: 0, or +-10**k up to 1e15."""
    return st.one_of(st.just(0.0), st.builds(lambda s, k: s * 10.0**k,
                                             st.sampled_from([-1.0, 1.0]), st.floats(0, 15)))


def shifted(a: float, b_over_std: float) -> tuple[np.ndarray, np.ndarray, float]:
    """``a y``, ``a y + b`` and ``b``."""
    scaled = a * Y
    b = b_over_std * a * np.std(Y)
    with np.errstate(over="ignore"):
        return scaled, scaled + b, b


def psd_factor(normalization: str, with_dy: bool, a: float) -> float:
    """How the power scales with ``a``: ``a**2`` for psd without ``dy``, else 1."""
    return a * a if normalization == "psd" and not with_dy else 1.0


def representable(values: np.ndarray, factor: float) -> bool:
    """Whether ``values`` are finite and powers scaled by ``factor`` stay normal
    float64 numbers."""
    return bool(np.isfinite(values).all()) and 1e-280 < factor < 1e280


def assert_same_powers(actual, expected, factor: float, tolerance: float) -> None:
    """``actual / factor`` equals ``expected`` within ``tolerance`` of the highest power."""
    expected = np.asarray(expected, dtype=np.float64)
    scaled = np.asarray(actual, dtype=np.float64) / factor
    np.testing.assert_array_equal(np.isnan(scaled), np.isnan(expected))
    error = np.nanmax(np.abs(scaled - expected)) / np.nanmax(np.abs(expected))
    assert error <= tolerance, f"relative error {error:.3g} > {tolerance:.1g}"


def assert_same_best(result, base, tolerance: float) -> None:
    """Same best frequency, unless the two highest peaks of ``base`` tie within
    ``tolerance`` (then either)."""
    if result.frequency_best[0] != base.frequency_best[0]:
        first, second = base.top_k_power[0]
        assert first - second <= 2 * tolerance * abs(first), "best frequency moved"


_BASE: dict = {}


def base_result(**options):
    """The search of the unscaled light curve (cached per options)."""
    key = tuple(sorted(options.items()))
    if key not in _BASE:
        dy = DY if options.pop("with_dy") else None
        _BASE[key] = lombscargle(T, GRID, Y, dy, top_k=2, **options)
    return _BASE[key]


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(MODELS), normalization=st.sampled_from(NORMALIZATIONS),
       precision=st.sampled_from(["fp64", "fp32"]), a=scales(), b_over_std=offsets(),
       host_prepares=st.booleans(),
       fap_method=st.sampled_from(["baluev", "davies", "naive", "townsend"]))
@example(model=MODELS[0], normalization="standard", precision="fp32", a=1e-26, b_over_std=0.0,
         host_prepares=False, fap_method="baluev")  # cgs fluxes
@example(model=MODELS[0], normalization="log", precision="fp32", a=3e22, b_over_std=0.0,
         host_prepares=True, fap_method="baluev")
@example(model=MODELS[0], normalization="standard", precision="fp64", a=1.0, b_over_std=1e14,
         host_prepares=False, fap_method="davies")
@pytest.mark.slow
def test_lombscargle_is_invariant(model, normalization, precision, a, b_over_std, host_prepares,
                                  fap_method):
    method, fit_mean, center_data, with_dy = model
    if not (fit_mean or center_data):
        b_over_std = 0.0  # an uncentred model depends on the offset
    factor = psd_factor(normalization, with_dy, a)
    scaled, moved, b = shifted(a, b_over_std)
    assume(representable(moved, factor))
    # fp32 psd periodograms without dy are float32 in y's units: compare the peaks only
    periodogram = not (precision == "fp32" and factor != 1.0)
    options = dict(method=method, fit_mean=fit_mean, center_data=center_data,
                   normalization=normalization, precision=precision, periodogram=periodogram)
    base = base_result(with_dy=with_dy, **options)
    dy = a * DY if with_dy else None
    tolerance = TOLERANCE[precision]
    with mock.patch.object(LS_MODULE, "_prepares_on_device", lambda info: not host_prepares):
        result = lombscargle(T, GRID, scaled, dy, top_k=2, **options)
        offset = lombscargle(T, GRID, moved, dy, top_k=2, **options)
        # the statistic of the data as float64 holds them, offset removed exactly
        unshifted = lombscargle(T, GRID, moved - b, dy, top_k=2, **options)

    assert result.status[0] == offset.status[0] == Status.OK
    assert_same_powers(result.top_k_power, base.top_k_power, factor, tolerance)
    assert_same_best(result, base, tolerance)
    assert_same_powers(offset.top_k_power, unshifted.top_k_power, 1.0, tolerance)
    assert_same_best(offset, unshifted, tolerance)
    if periodogram:
        assert_same_powers(result.power, base.power, factor, tolerance)
        assert_same_powers(offset.power, unshifted.power, 1.0, tolerance)
    if factor == 1.0:  # (psd without dy assumes unit noise: not scale-free)
        z = base.top_k_power
        np.testing.assert_allclose(result.false_alarm_probability(fap_method, power=z),
                                   base.false_alarm_probability(fap_method, power=z),
                                   rtol=1e-12)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("host_prepares", [False, True])
def test_large_offsets_keep_full_precision(precision, host_prepares):
    """y + 1e8 ... 1e14 against astropy's power of the same float64 values."""
    tolerance = {"fp64": 1e-9, "fp32": 2e-5}[precision]
    with mock.patch.object(LS_MODULE, "_prepares_on_device", lambda info: not host_prepares):
        for b in (1e8, 1e12, 1e14):
            moved = Y + b
            expected = LombScargle(T - T[0], moved - b, DY).power(GRID.frequencies(),
                                                                  method="cython")
            result = lombscargle(T, GRID, moved, DY, precision=precision, periodogram=True)
            assert result.status[0] == Status.OK
            assert np.max(np.abs(result.power[0] - expected)) <= tolerance * expected.max()
            assert result.frequency_best[0] == GRID.frequencies()[np.argmax(expected)]


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("host_prepares", [False, True])
def test_variation_below_float64_resolution_is_zero_variance(precision, host_prepares):
    """y + b with b so large that y's variation is about one unit in the last place."""
    varying = Y + 1e14  # std 0.25, ulp 0.016: resolved
    flat = Y + 1e17 * np.std(Y)  # ulp 4 std
    with mock.patch.object(LS_MODULE, "_prepares_on_device", lambda info: not host_prepares):
        catalog = Catalog.from_lightcurves([(T, varying, DY), (T, flat, DY)])
        result = lombscargle(catalog, GRID, precision=precision)
    assert list(result.status) == [Status.OK, Status.ZERO_VARIANCE]
    assert np.isnan(result.power_best[1])


def test_the_preparations_zero_variance_is_not_overruled():
    """The degenerate-status test (one-pass centring) does not turn the
    standardization's ZERO_VARIANCE into OUT_OF_RANGE; invalid values (NaN)
    still take precedence."""
    with_nan = Y.copy()
    with_nan[3] = np.nan
    n = T.size
    catalog = Catalog(np.arange(3), [0, n, 2 * n, 3 * n], np.tile(T, 3),
                      np.r_[Y, Y, with_nan], np.tile(DY, 3))
    prepared = np.array([Status.ZERO_VARIANCE, Status.OK, Status.ZERO_VARIANCE], np.int8)
    options = LS_MODULE._Options.build("generalized", "standard", None, None, "fp64", "auto",
                                       1, False)
    status = LS_MODULE._search_status(catalog, prepared, np.array([np.nan, 0.5, np.nan]),
                                      options)
    assert list(status) == [Status.ZERO_VARIANCE, Status.OK, Status.NOT_FINITE]


@pytest.mark.parametrize("a", [1e-26, 1e25])
@pytest.mark.parametrize("host_prepares", [False, True])
def test_fp32_with_tiny_or_huge_values(a, host_prepares):
    """cgs fluxes and values above 1e20 give the fp32 periodogram of the data in any unit."""
    expected = LombScargle(T - T[0], Y, DY).power(GRID.frequencies(), method="cython")
    with mock.patch.object(LS_MODULE, "_prepares_on_device", lambda info: not host_prepares):
        result = lombscargle(T, GRID, a * Y, a * DY, precision="fp32", periodogram=True)
    assert result.status[0] == Status.OK
    assert np.max(np.abs(result.power[0] - expected)) < 2e-5
    assert result.frequency_best[0] == GRID.frequencies()[np.argmax(expected)]


def test_fp32_psd_periodogram_outside_float32_is_an_error():
    """psd without dy is in y's units squared: its fp32 periodogram must fit float32."""
    tiny = 1e-26 * Y
    with pytest.raises(ValueError, match="outside its range.*precision='fp64'"):
        lombscargle(T, GRID, tiny, normalization="psd", precision="fp32", periodogram=True)
    peaks = lombscargle(T, GRID, tiny, normalization="psd", precision="fp32")
    reference = lombscargle(T, GRID, tiny, normalization="psd")
    assert peaks.frequency_best[0] == reference.frequency_best[0]
    np.testing.assert_allclose(peaks.power_best, reference.power_best, rtol=1e-5)
    assert 1e-52 < reference.power_best[0] < 1e-49


@settings(max_examples=25, deadline=None)
@given(nterms=st.integers(2, 3), normalization=st.sampled_from(NORMALIZATIONS),
       centred=st.sampled_from([(True, True), (False, True), (False, False)]),
       with_dy=st.booleans(), a=scales(), b_over_std=offsets())
@example(nterms=2, normalization="standard", centred=(True, True), with_dy=True, a=1.0,
         b_over_std=1e14)
@pytest.mark.slow
def test_multiterm_is_invariant(nterms, normalization, centred, with_dy, a, b_over_std):
    fit_mean, center_data = centred
    if not (fit_mean or center_data):
        b_over_std = 0.0
    factor = psd_factor(normalization, with_dy, a)
    scaled, moved, b = shifted(a, b_over_std)
    assume(representable(moved, factor))
    dy = DY if with_dy else None
    dy_scaled = a * DY if with_dy else None
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    base = multiterm_power(T, Y, dy, GRID, nterms, **options)
    assert_same_powers(multiterm_power(T, scaled, dy_scaled, GRID, nterms, **options),
                       base, factor, 1e-10)
    assert_same_powers(multiterm_power(T, moved, dy_scaled, GRID, nterms, **options),
                       multiterm_power(T, moved - b, dy_scaled, GRID, nterms, **options),
                       1.0, 1e-10)
    # a bootstrap batch: every light curve in its own units
    rows = np.stack([Y, scaled])
    row_dy = None if dy is None else np.stack([DY, a * DY])
    maxima = multiterm_max_power(T, rows, row_dy, GRID, nterms, **options)
    assert_same_powers(maxima[1:], maxima[:1], factor, 1e-10)
    assert_same_powers(maxima[:1], [np.nanmax(base)], 1.0, 1e-12)
    if with_dy:
        z = np.array([0.1, 0.3]) * (5.0 if normalization == "psd" else 1.0)
        null = dict(n=T.size, fmax=GRID.fmax, t=T, normalization=normalization,
                    fit_mean=fit_mean, center_data=center_data, nterms=nterms)
        np.testing.assert_allclose(stats.false_alarm_probability(z, dy=dy_scaled, **null),
                                   stats.false_alarm_probability(z, dy=DY, **null), rtol=1e-12)
        np.testing.assert_allclose(stats.false_alarm_level(0.01, dy=dy_scaled, **null),
                                   stats.false_alarm_level(0.01, dy=DY, **null), rtol=1e-10)


@settings(max_examples=25, deadline=None)
@given(nterms=st.integers(1, 2), centred=st.sampled_from([(True, True), (False, True),
                                                          (False, False)]),
       with_dy=st.booleans(), direct=st.booleans(), a=scales(), b_over_std=offsets())
@example(nterms=1, centred=(True, True), with_dy=True, direct=False, a=1e-200,
         b_over_std=0.0)  # dy**-2 overflows
@example(nterms=2, centred=(True, True), with_dy=True, direct=True, a=3e250,
         b_over_std=1e12)
def test_multiterm_coefficients_are_in_the_units_of_y(nterms, centred, with_dy, direct, a,
                                                      b_over_std):
    fit_mean, center_data = centred
    if not (fit_mean or center_data):
        b_over_std = 0.0
    scaled, moved, b = shifted(a, b_over_std)
    assume(representable(moved, 1.0))
    dy, dy_scaled = (DY, a * DY) if with_dy else (None, None)
    options = dict(fit_mean=fit_mean, center_data=center_data, direct_harmonics=direct)
    grid = FrequencyGrid.from_range(0.05, 5.0, 60)
    base = multiterm_coefficients(T, Y, dy, grid, nterms, **options)
    size = np.abs(base).max()
    np.testing.assert_allclose(multiterm_coefficients(T, scaled, dy_scaled, grid, nterms,
                                                      **options) / a,
                               base, rtol=0, atol=1e-10 * size)
    # an offset moves the fitted offset only (centred data without one: nothing)
    expected = multiterm_coefficients(T, moved - b, dy_scaled, grid, nterms, **options)
    if fit_mean:
        expected[:, 0] += b
    got = multiterm_coefficients(T, moved, dy_scaled, grid, nterms, **options)
    np.testing.assert_allclose(got[:, int(fit_mean):], expected[:, int(fit_mean):], rtol=0,
                               atol=1e-10 * a * size)
    np.testing.assert_allclose(got[:, :int(fit_mean)], expected[:, :int(fit_mean)],
                               rtol=4 * np.finfo(np.float64).eps, atol=1e-10 * a * size)


@given(a=scales(), b_over_std=offsets(), center=st.booleans())
@settings(max_examples=40, deadline=None)
def test_weighted_sum_of_squares_scales_with_a_squared(a, b_over_std, center):
    if not center:
        b_over_std = 0.0
    scaled, moved, b = shifted(a, b_over_std)
    assume(representable(moved, 1.0))
    # psd YY is dimensionless with dy, in y's units squared without
    np.testing.assert_allclose(stats.weighted_sum_of_squares(moved, a * DY, center=center),
                               stats.weighted_sum_of_squares(moved - b, a * DY, center=center),
                               rtol=1e-13)
    np.testing.assert_allclose(stats.weighted_sum_of_squares(scaled, a * DY, center=center),
                               stats.weighted_sum_of_squares(Y, DY, center=center), rtol=1e-13)
    if representable(scaled, a * a):
        np.testing.assert_allclose(stats.weighted_sum_of_squares(scaled, center=center) / a / a,
                                   stats.weighted_sum_of_squares(Y, center=center), rtol=1e-13)
