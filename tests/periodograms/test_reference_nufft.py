"""The NumPy NUFFT reference (tests/reference/nufft.py) against direct sums and astropy.

The transforms are checked against direct sums whose phases are formed in long
double (:func:`reference.nufft.nudft3`): relative l2 error ``<= 3 eps`` plus the
rounding floor ``eps_mach N max(1, max|x| / pi)``. The periodograms are checked
against astropy's exact methods (``cython`` for one term, ``chi2`` for more) with
nifty-ls's rule, ``|p - p_astropy| <= max(1e-5, 1e-9 Nf) * peak`` in float64,
and against :func:`reference.nufft.lombscargle_direct` at the level ``eps``.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from astropy.timeseries import LombScargle
from scipy.integrate import quad

from reference import nufft as ref

EPS_MACH = float(np.finfo(np.float64).eps)
NORMALIZATIONS = ("standard", "model", "log", "psd")
#: (fit_mean, center_data)
CENTRING = ((True, True), (True, False), (False, True), (False, False))
#: (eps, upsampfac) whose kernel width is not clipped
REACHABLE = [(eps, sigma) for eps in (1e-3, 1e-6, 1e-9, 1e-12) for sigma in (2.0, 1.25)
             if (eps, sigma) != (1e-12, 1.25)]


def relative_l2(value: np.ndarray, exact: np.ndarray) -> float:
    """``||value - exact|| / ||exact||`` over all entries."""
    return float(np.linalg.norm(value - exact) / np.linalg.norm(exact))


def floor(n_modes: int, x: np.ndarray) -> float:
    """Rounding floor of a transform: ``eps_mach N max(1, max|x| / pi)``."""
    return EPS_MACH * n_modes * max(1.0, float(np.max(np.abs(x))) / np.pi)


def random_strengths(rng: np.random.Generator, shape) -> np.ndarray:
    """Complex standard-normal strengths."""
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


# {{{ kernel rules (spec §1.3)


@pytest.mark.parametrize(("eps", "sigma", "width", "beta"), [
    (1e-3, 2.0, 4, 9.52), (1e-3, 1.25, 5, 9.14),
    (1e-5, 2.0, 6, 13.8), (1e-5, 1.25, 9, 16.46),
    (1e-9, 2.0, 10, 23.0), (1e-9, 1.25, 15, 27.43),
    (1e-12, 2.0, 13, 29.9),
])
def test_kernel_parameters_match_the_spec_table(eps, sigma, width, beta):
    w, b = ref.es_kernel_params(eps, sigma)
    assert w == width
    assert b == pytest.approx(beta, abs=0.005)


@pytest.mark.parametrize(("eps", "width", "beta"), [
    (1.0, 2, 4.40), (0.1, 2, 4.40), (0.01, 3, 6.78), (1e-3, 4, 9.52), (1e-4, 5, 11.5)])
def test_narrow_kernels_use_their_own_beta_per_cell(eps, width, beta):
    assert ref.es_kernel_params(eps, 2.0) == (width, pytest.approx(beta))


def test_width_is_clipped_to_16_with_a_warning():
    with pytest.warns(RuntimeWarning, match="clipped to 16"):
        w, b = ref.es_kernel_params(1e-12, 1.25)
    assert (w, b) == (16, pytest.approx(0.97 * math.pi * 0.6 * 16))


def test_eps_is_clamped_to_the_machine_epsilon_of_the_precision():
    with pytest.warns(RuntimeWarning, match="needs a kernel of 17 cells"):
        assert ref.es_kernel_params(1e-30, 2.0) == (16, pytest.approx(36.8))
    assert ref.es_kernel_params(1e-30, 2.0, dtype=np.float32) == (8, pytest.approx(18.4))


@pytest.mark.parametrize(("eps", "sigma"), [(0.0, 2.0), (-1e-9, 2.0), (math.nan, 2.0),
                                            (1e-9, 1.0), (1e-9, 0.5), (1e-9, math.inf)])
def test_bad_tolerance_or_upsampling_raises(eps, sigma):
    with pytest.raises(ValueError, match=r"eps|upsampfac"):
        ref.es_kernel_params(eps, sigma)


@pytest.mark.parametrize(("n_modes", "sigma", "width", "expected"), [
    (1000, 2.0, 10, 2000), (1000, 1.25, 15, 1250), (1001, 2.0, 10, 2048),
    (1, 2.0, 10, 20), (7, 1.25, 15, 30), (25001, 2.0, 10, 51200), (999, 1.25, 9, 1250)])
def test_fine_grid_size(n_modes, sigma, width, expected):
    assert ref.fine_grid_size(n_modes, sigma, width) == expected


def test_next_smooth_even_is_the_least_even_235_smooth_number_above():
    def smooth(m):
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        return m == 1

    for n in range(1, 600):
        expected = next(m for m in range(max(n, 2), 10 * n + 3) if m % 2 == 0 and smooth(m))
        assert ref.next_smooth_even(n) == expected


@pytest.mark.parametrize(("eps", "sigma"), [(1e-3, 2.0), (1e-9, 2.0), (1e-9, 1.25)])
def test_kernel_fourier_transform_matches_adaptive_quadrature(eps, sigma):
    width, beta = ref.es_kernel_params(eps, sigma)
    theta = np.array([0.0, 0.3, 1.0, np.pi / sigma])

    def direct(t):
        def integrand(u):
            return ref.es_kernel(2 * u / width, beta) * math.cos(t * u)

        return quad(integrand, -width / 2, width / 2, epsabs=0, epsrel=1e-12, limit=200)[0]

    exact = np.array([direct(t) for t in theta])
    np.testing.assert_allclose(ref.kernel_fourier_transform(theta, width, beta), exact,
                               rtol=1e-9)


def test_kernel_is_one_at_zero_and_vanishes_outside():
    np.testing.assert_array_equal(ref.es_kernel([0.0, -1.5, 1.0000001], 23.0), [1.0, 0.0, 0.0])
    assert ref.es_kernel(1.0, 23.0) == pytest.approx(math.exp(-23.0))


# }}}

# {{{ transforms against direct sums


def fixed_points() -> tuple[np.ndarray, np.ndarray]:
    """600 points in [-10 pi, 10 pi] (folded by the transforms) and two strength vectors."""
    rng = np.random.default_rng(2024)
    x = rng.uniform(-10 * np.pi, 10 * np.pi, 600)
    return x, random_strengths(rng, (2, x.size))


@pytest.fixture
def points():
    """:func:`fixed_points`."""
    return fixed_points()


@functools.cache
def exact_type1(n_modes: int, isign: int) -> np.ndarray:
    """Direct type 1 of :func:`fixed_points`, computed once per mode count and sign."""
    x, c = fixed_points()
    return ref.nudft1(x, c, n_modes, isign)


@pytest.mark.parametrize(("eps", "sigma"), REACHABLE)
@pytest.mark.parametrize("n_modes", [512, 601])
@pytest.mark.parametrize("isign", [1, -1])
def test_type1_meets_its_tolerance(points, eps, sigma, n_modes, isign):
    x, c = points
    exact = exact_type1(n_modes, isign)
    value = ref.nufft1(x, c, n_modes, eps, sigma, isign)
    assert value.shape == (2, n_modes)
    assert relative_l2(value, exact) <= 3 * eps + floor(n_modes, x)


def test_type1_of_a_batch_equals_each_row(points):
    x, c = points
    batch = ref.nufft1(x, c, 301)
    for row, strengths in zip(batch, c, strict=True):
        np.testing.assert_allclose(row, ref.nufft1(x, strengths, 301), rtol=0, atol=1e-12)


def test_type1_of_one_mode_is_the_sum_of_strengths(points):
    x, c = points
    np.testing.assert_allclose(ref.nufft1(x, c[0], 1), [c[0].sum()], rtol=0,
                               atol=1e-9 * np.abs(c[0]).sum())


def test_type1_is_periodic_in_x(points):
    x, c = points
    np.testing.assert_allclose(ref.nufft1(x + 2 * np.pi * 7, c, 200), ref.nufft1(x, c, 200),
                               rtol=0, atol=1e-10 * np.abs(c).sum())


@pytest.mark.parametrize("n_modes", [256, 2048])
def test_tolerance_below_the_rounding_floor_gives_the_floor(rng, n_modes):
    """eps = 1e-15 (w = 16) is not reachable: the error is ~0.1-0.4 eps_mach N max|x| / pi."""
    x = rng.uniform(-100 * np.pi, 100 * np.pi, 400)
    c = random_strengths(rng, x.size)
    error = relative_l2(ref.nufft1(x, c, n_modes, 1e-15), ref.nudft1(x, c, n_modes))
    assert 0.03 * floor(n_modes, x) <= error <= floor(n_modes, x)


def test_width_clipped_at_upsampling_125_still_reaches_its_own_accuracy(points):
    x, c = points
    with pytest.warns(RuntimeWarning, match="clipped"):
        value = ref.nufft1(x, c, 512, 1e-12, 1.25)
    assert relative_l2(value, exact_type1(512, 1)) <= 1e-9


@functools.cache
def type2_case(n_modes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Points, modes and direct type 2 (computed once per mode count)."""
    x, _ = fixed_points()
    f = random_strengths(np.random.default_rng(n_modes), (2, n_modes))
    return x, f, ref.nudft2(x, f)


@pytest.mark.parametrize(("eps", "sigma"), REACHABLE)
@pytest.mark.parametrize("n_modes", [400, 401])
def test_type2_meets_its_tolerance(eps, sigma, n_modes):
    x, f, exact = type2_case(n_modes)
    assert relative_l2(ref.nufft2(x, f, eps, sigma), exact) <= 3 * eps + floor(n_modes, x)


def test_spread_and_interpolate_are_adjoint(rng):
    xi = rng.uniform(0, 97, 300)
    c = random_strengths(rng, (1, xi.size))
    g = random_strengths(rng, (1, 97))
    width, beta = ref.es_kernel_params(1e-9, 2.0)
    left = np.vdot(g, ref.spread(xi, c, 97, width, beta))
    right = np.vdot(ref.interpolate(g, xi, width, beta), c)
    assert left == pytest.approx(right, rel=1e-13)


def test_spread_wraps_periodically():
    width, beta = 4, 9.52
    grid = ref.spread([0.25], [1.0], 10, width, beta)[0]
    cells = np.array([-1, 0, 1, 2])
    expected = np.zeros(10)
    expected[cells % 10] = ref.es_kernel(2 * (cells - 0.25) / width, beta)
    np.testing.assert_allclose(grid, expected, rtol=1e-15)


@functools.cache
def type3_case(isign: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Points in [-30, 50], targets in [-20, 45], strengths and direct type 3."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-30.0, 50.0, 500)
    c = random_strengths(rng, (2, x.size))
    s = rng.uniform(-20.0, 45.0, 400)
    return x, c, s, ref.nudft3(x, c, s, isign)


@pytest.mark.parametrize(("eps", "sigma"), REACHABLE)
@pytest.mark.parametrize("isign", [1, -1])
def test_type3_meets_its_tolerance(eps, sigma, isign):
    x, c, s, exact = type3_case(isign)
    error = relative_l2(ref.nufft3(x, c, s, eps, sigma, isign), exact)
    assert error <= 4 * eps + EPS_MACH * np.max(np.abs(s)) * np.max(np.abs(x))


def test_type3_of_unsorted_repeated_and_single_targets(rng):
    x = rng.uniform(0.0, 300.0, 300)
    c = random_strengths(rng, x.size)
    s = np.array([5.0, -3.0, 5.0, 0.0, 11.5, -3.0])
    value = ref.nufft3(x, c, s)
    np.testing.assert_allclose(value, ref.nudft3(x, c, s), rtol=0, atol=1e-8 * np.abs(c).sum())
    assert value[0] == value[2] and value[1] == value[5]
    for target in (0.0, 7.25):
        np.testing.assert_allclose(ref.nufft3(x, c, [target]), ref.nudft3(x, c, [target]),
                                   rtol=0, atol=1e-8 * np.abs(c).sum())


def test_type3_of_one_point(rng):
    s = rng.uniform(-50, 50, 30)
    np.testing.assert_allclose(ref.nufft3([2.5], [1 - 2j], s), (1 - 2j) * np.exp(2.5j * s),
                               rtol=1e-8)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ref.nufft1(np.zeros((2, 3)), np.ones(6), 4), "x must be 1-D"),
    (lambda: ref.nufft1([0.0, np.nan], [1, 1], 4), "x must be finite"),
    (lambda: ref.nufft1([0.0, 1.0], [1, 1, 1], 4), "c must have shape"),
    (lambda: ref.nufft1([0.0, 1.0], [1, 1], 0), "n_modes"),
    (lambda: ref.nufft1([0.0, 1.0], [1, 1], 4, isign=0), "isign"),
    (lambda: ref.nufft2([0.0, 1.0], np.ones((2, 2, 2))), "f must have shape"),
    (lambda: ref.nufft3([0.0, 1.0], [1, 1], [[1.0]]), "s must be 1-D"),
])
def test_bad_transform_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# }}}

# {{{ Lomb-Scargle on a regular grid against astropy and direct sums


def nifty_rtol(nf: int) -> float:
    """nifty-ls's float64 tolerance relative to the peak power."""
    return max(1e-5, 1e-9 * nf)


def assert_close_to_peak(power, expected, rtol):
    """Same NaNs; elsewhere ``|power - expected| <= rtol * max|expected|``."""
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    finite = ~np.isnan(expected)
    peak = np.max(np.abs(expected[finite]))
    np.testing.assert_array_less(np.abs(power - expected)[finite], rtol * peak)


@pytest.fixture(scope="module")
def light_curve():
    """nifty-ls's test data (N = 300, t = sort(U) * 123) at MJD-like epochs (t + 6e4)."""
    rng = np.random.default_rng(5043)
    n = 300
    t = np.sort(rng.uniform(size=n)) * 123 + 6e4
    y = np.sin(2 * np.pi * t / 7.3) + 1.23 + rng.normal(0.0, 0.3, n)
    dy = rng.uniform(0.01, 0.11, n)
    return t, y, dy


def baseline_df(t) -> float:
    """Default astropy grid spacing: five samples per peak."""
    return 1 / (5 * np.ptp(t))


def astropy_power(t, y, dy, freqs, *, fit_mean, center_data, normalization, nterms):
    """astropy's exact power; NaN where ``chi2`` finds the matrix singular (f = 0)."""
    model = LombScargle(t, y, dy, fit_mean=fit_mean, center_data=center_data,
                        normalization=normalization, nterms=nterms)
    if nterms == 1:
        return model.power(freqs, method="cython")
    out = np.full(freqs.size, np.nan)
    positive = freqs > 0
    out[positive] = model.power(freqs[positive], method="chi2")
    return out


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
@pytest.mark.parametrize(("fmin_in_df", "nf"), [(0.0, 1000), (40.5, 777)])
def test_one_term_matches_astropy(light_curve, normalization, fit_mean, center_data,
                                  fmin_in_df, nf):
    t, y, dy = light_curve
    df = baseline_df(t)
    fmin = fmin_in_df * df
    freqs = fmin + df * np.arange(nf)
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    expected = astropy_power(t, y, dy, freqs, nterms=1, **options)
    power = ref.lombscargle_nufft(t, y, dy, fmin, df, nf, **options)
    assert_close_to_peak(power, expected, nifty_rtol(nf))
    assert_close_to_peak(ref.lombscargle_direct(t, y, dy, freqs, **options), expected, 1e-10)
    assert np.isnan(power[0]) == (fmin == 0)


@pytest.mark.parametrize("nterms", [2, 3])
@pytest.mark.parametrize(("normalization", "fit_mean", "center_data"),
                         [(normalization, True, True) for normalization in NORMALIZATIONS]
                         + [("standard", *centring) for centring in CENTRING[1:]])
def test_multi_term_matches_astropy_chi2(light_curve, nterms, normalization, fit_mean,
                                         center_data):
    """From f = 2 df up, as nifty-ls tests: the lowest rows are ill-conditioned (spec §1.1)."""
    t, y, dy = light_curve
    df, nf = baseline_df(t), 400
    freqs = 2 * df + df * np.arange(nf)
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization,
                   nterms=nterms)
    expected = astropy_power(t, y, dy, freqs, **options)
    power = ref.lombscargle_nufft(t, y, dy, 2 * df, df, nf, **options)
    assert_close_to_peak(power, expected, nifty_rtol(nf))
    assert_close_to_peak(ref.lombscargle_direct(t, y, dy, freqs, **options), expected, 1e-10)


@pytest.mark.parametrize("nterms", [1, 2, 3])
def test_zero_frequency_gives_nan(light_curve, nterms):
    t, y, dy = light_curve
    df = baseline_df(t)
    power = ref.lombscargle_nufft(t, y, dy, 0.0, df, 50, nterms=nterms)
    direct = ref.lombscargle_direct(t, y, dy, df * np.arange(50), nterms=nterms)
    assert np.isnan(power[0]) and np.isnan(direct[0])
    assert not np.any(np.isnan(power[1:]))
    assert_close_to_peak(power[2:], direct[2:], 1e-5)


@pytest.fixture(scope="module")
def direct_powers(light_curve):
    """Direct powers on ``5 df + m df``, ``m < 2001``, for nterms 1 and 2."""
    t, y, dy = light_curve
    df = baseline_df(t)
    freqs = 5 * df + df * np.arange(2001)
    return {nterms: ref.lombscargle_direct(t, y, dy, freqs, nterms=nterms) for nterms in (1, 2)}


@pytest.mark.parametrize(("eps", "sigma"), REACHABLE)
@pytest.mark.parametrize("nterms", [1, 2])
def test_power_error_is_below_eps_of_the_peak(light_curve, direct_powers, eps, sigma, nterms):
    """From f = 5 df up: below, two harmonics make the normal matrix ill-conditioned."""
    t, y, dy = light_curve
    df, nf = baseline_df(t), 2001
    fmin = 5 * df
    direct = direct_powers[nterms]
    power = ref.lombscargle_nufft(t, y, dy, fmin, df, nf, nterms=nterms, eps=eps,
                                  upsampfac=sigma)
    assert_close_to_peak(power, direct, 2 * eps)


@pytest.mark.parametrize("nf", [1, 2, 3])
def test_tiny_grids(light_curve, nf):
    t, y, dy = light_curve
    freqs = 0.31 + 0.01 * np.arange(nf)
    for nterms in (1, 2):
        power = ref.lombscargle_nufft(t, y, dy, 0.31, 0.01, nf, nterms=nterms)
        assert power.shape == (nf,)
        assert_close_to_peak(power, ref.lombscargle_direct(t, y, dy, freqs, nterms=nterms),
                             1e-9)


def test_power_is_invariant_to_epoch_and_units(light_curve):
    t, y, dy = light_curve
    df = baseline_df(t)
    power = ref.lombscargle_nufft(t, y, dy, df, df, 500)
    moved = ref.lombscargle_nufft(t - 6e4, 1e3 * y + 17.0, 1e3 * dy, df, df, 500)
    assert_close_to_peak(moved, power, 1e-9)


def test_dy_none_means_unit_uncertainties(light_curve):
    t, y, _ = light_curve
    df = baseline_df(t)
    for normalization in ("standard", "psd"):
        np.testing.assert_allclose(
            ref.lombscargle_nufft(t, y, None, df, df, 300, normalization=normalization),
            ref.lombscargle_nufft(t, y, np.ones_like(y), df, df, 300,
                                  normalization=normalization), rtol=1e-15)


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(fmin=-1.0), "fmin"), (dict(fmin=math.nan), "fmin"), (dict(df=0.0), "df"),
    (dict(df=-0.1), "df"), (dict(nf=0), "nf"), (dict(nf=2.5), "nf"),
    (dict(normalization="chi2"), "normalization"), (dict(nterms=0), "nterms"),
])
def test_bad_grid_or_options_raise(light_curve, kwargs, message):
    t, y, dy = light_curve
    args = dict(fmin=0.1, df=0.01, nf=10) | kwargs
    with pytest.raises(ValueError, match=message):
        ref.lombscargle_nufft(t, y, dy, **args)


@pytest.mark.parametrize(("y_or_dy", "message"), [
    ("short y", "one length"), ("zero dy", "dy must be positive"), ("nan y", "y must be")])
def test_bad_light_curve_raises(light_curve, y_or_dy, message):
    t, y, dy = light_curve
    if y_or_dy == "short y":
        y = y[:-1]
    elif y_or_dy == "zero dy":
        dy = np.where(np.arange(dy.size) == 3, 0.0, dy)
    else:
        y = np.where(np.arange(y.size) == 3, np.nan, y)
    with pytest.raises(ValueError, match=message):
        ref.lombscargle_nufft(t, y, dy, 0.1, 0.01, 10)


# }}}

# {{{ Lomb-Scargle at arbitrary frequencies (type 3)


@pytest.fixture(scope="module")
def period_grid(light_curve):
    """Frequencies uniform in period (0.5-50 d), shuffled, with repeats and f = 0."""
    rng = np.random.default_rng(7)
    freqs = 1 / rng.uniform(0.5, 50.0, 600)
    return np.concatenate([freqs, freqs[:10], [0.0]])


@pytest.mark.parametrize("nterms", [1, 2, 3])
@pytest.mark.parametrize("sigma", [2.0, 1.25])
def test_any_frequencies_match_direct_sums(light_curve, period_grid, nterms, sigma):
    t, y, dy = light_curve
    power = ref.lombscargle_frequencies(t, y, dy, period_grid, nterms=nterms, upsampfac=sigma)
    direct = ref.lombscargle_direct(t, y, dy, period_grid, nterms=nterms)
    assert_close_to_peak(power, direct, 1e-8)
    assert np.isnan(power[-1])
    np.testing.assert_array_equal(power[600:610], power[:10])


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
def test_any_frequencies_match_astropy(light_curve, period_grid, normalization, fit_mean,
                                       center_data):
    t, y, dy = light_curve
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    expected = astropy_power(t, y, dy, period_grid, nterms=1, **options)
    power = ref.lombscargle_frequencies(t, y, dy, period_grid, **options)
    assert_close_to_peak(power, expected, nifty_rtol(period_grid.size))


@pytest.mark.parametrize("nterms", [1, 2])
def test_any_frequencies_equal_per_frequency_evaluation(light_curve, period_grid, nterms):
    t, y, dy = light_curve
    freqs = period_grid[:25]
    together = ref.lombscargle_frequencies(t, y, dy, freqs, nterms=nterms)
    alone = [ref.lombscargle_frequencies(t, y, dy, [f], nterms=nterms)[0] for f in freqs]
    assert_close_to_peak(together, np.array(alone), 1e-8)
    direct_alone = [ref.lombscargle_direct(t, y, dy, [f], nterms=nterms)[0] for f in freqs]
    np.testing.assert_allclose(ref.lombscargle_direct(t, y, dy, freqs, nterms=nterms),
                               direct_alone, rtol=1e-12)


def test_regular_grid_through_type3_equals_type1(light_curve):
    t, y, dy = light_curve
    df = baseline_df(t)
    freqs = 3 * df + df * np.arange(1500)
    assert_close_to_peak(ref.lombscargle_frequencies(t, y, dy, freqs),
                         ref.lombscargle_nufft(t, y, dy, 3 * df, df, 1500), 1e-8)


@pytest.mark.parametrize("freqs", [[-0.1, 0.2], [0.1, np.nan], [], [[0.1, 0.2]], [np.inf]])
@pytest.mark.parametrize("function", [ref.lombscargle_frequencies, ref.lombscargle_direct])
def test_bad_frequencies_raise(light_curve, freqs, function):
    t, y, dy = light_curve
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="frequency"):
            function(t, y, dy, freqs)


# }}}
