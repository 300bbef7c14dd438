"""Accuracy of ``lombscargle(..., algorithm="nufft")`` (one term) against exact sums and peers.

References:

* exact sums: :func:`reference.nufft.lombscargle_direct` (float64 sums over
  ``t - min(t)``; within ~2e-13 of the peak of long-double sums on these
  cases), and clperiod's direct kernel where the light curve is long;
* astropy's ``LombScargle(...).power(f, method="cython")``, from raw epochs;
* nifty-ls (float64), skipped where it is not installed. Its float32 path is
  not used: nifty-ls 1.1.0 with finufft 2.5.1 gives float32 powers tens of
  percent away from astropy's (its pure-Python path does not).

Bounds, relative to the peak power of the reference: against the peers,
nifty-ls's own rule ``max(1e-5, 1e-9 nf)`` (fp64), ``max(1e-3, 1e-7 nf)``
(fp32); against the exact sums, issue 22's bound at the default ``eps``:
1e-9 (fp64) and 1e-5 (fp32). The cases include those where near-degenerate
normal equations (short light curves, the lowest frequencies) amplify the
transforms' error, which :data:`clperiod.periodograms.nufft.TRANSFORM_MARGIN`
covers.
Light curves start at raw MJD epochs unless noted.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from astropy.timeseries import LombScargle

from clperiod import Catalog, FrequencyGrid, lombscargle
from clperiod.io import load_example
from clperiod.testing import sinusoid_lightcurve
from peers import load_nifty_ls
from reference import nufft as ref

NIFTY = load_nifty_ls()
needs_nifty = pytest.mark.skipif(NIFTY is None, reason="nifty-ls is not installed "
                                 "(pip install nifty-ls, in the test extra)")

NORMALIZATIONS = ("standard", "model", "log", "psd")
#: (fit_mean, center_data)
CENTRING = ((True, True), (True, False), (False, True), (False, False))
#: issue 22: powers within this fraction of the peak of the exact ones at the default eps
BOUND = {"fp64": 1e-9, "fp32": 1e-5}


# {{{ light curves, grids and periodograms


@functools.cache
def light_curve(n: int, *, seed: int = 5043, baseline: float = 123.0, epoch: float = 6e4,
                weighted: bool = True):
    """nifty-ls's test signal (period 7.3 d, mean 1.23, dy in [0.01, 0.11]) from ``epoch``."""
    return sinusoid_lightcurve(np.random.default_rng(seed), n, 7.3, baseline=baseline,
                               epoch=epoch, mean=1.23, amplitude=1.0, noise=0.3,
                               dy=(0.01, 0.11) if weighted else None)


def object_of(name: str, row: int = 0):
    """``(t, y, dy)`` of one object of a bundled catalog (``dy`` None when it has none)."""
    catalog = load_example(name)
    rows = slice(catalog.offsets[row], catalog.offsets[row + 1])
    return catalog.t[rows], catalog.y[rows], None if catalog.dy is None else catalog.dy[rows]


def baseline_grid(t: np.ndarray, fmin_in_df: float, nf: int) -> FrequencyGrid:
    """``nf`` frequencies from ``fmin_in_df`` steps of ``df = 1 / (5 T)``."""
    df = 1 / (5 * np.ptp(t))
    return FrequencyGrid(fmin_in_df * df, df, nf)


def nufft_power(t, y, dy, grid, eps=None, **options) -> np.ndarray:
    return lombscargle(t, grid, y, dy, algorithm="nufft", eps=eps, periodogram=True,
                       **options).power[0]


def direct_power(t, y, dy, grid, **options) -> np.ndarray:
    return lombscargle(t, grid, y, dy, periodogram=True, **options).power[0]


def exact_power(t, y, dy, grid, **options) -> np.ndarray:
    return ref.lombscargle_direct(t, y, dy, grid.frequencies(), **options)


def astropy_power(t, y, dy, grid, *, fit_mean=True, center_data=True,
                  normalization="standard") -> np.ndarray:
    model = LombScargle(t, y, dy, fit_mean=fit_mean, center_data=center_data,
                        normalization=normalization)
    return model.power(grid.frequencies(), method="cython")


def nifty_power(t, y, dy, grid, **options) -> np.ndarray:
    """nifty-ls's float64 powers at the grid's frequencies above 0 (NaN at ``f = 0``)."""
    freqs = grid.frequencies()
    positive = freqs > 0
    out = np.full(grid.nf, np.nan)
    out[positive] = NIFTY.lombscargle(t, y, dy, fmin=freqs[positive][0], fmax=freqs[-1],
                                      Nf=int(positive.sum()), **options).power
    return out


def nifty_rtol(nf: int, precision: str) -> float:
    return max(1e-5, 1e-9 * nf) if precision == "fp64" else max(1e-3, 1e-7 * nf)


def peak_error(power: np.ndarray, expected: np.ndarray) -> float:
    """``max |power - expected| / max |expected|`` (the same NaNs required)."""
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    return float(np.nanmax(np.abs(power - expected)) / np.nanmax(np.abs(expected)))


# }}}

# {{{ against astropy and nifty-ls: every normalization and model, raw epochs


GRIDS = (("fmin=0", 0.0, 2000), ("fmin>0", 40.5, 1777))


@functools.cache
def model_case(normalization: str, fit_mean: bool, center_data: bool, grid_name: str,
               precision: str = "fp64", weighted: bool = True):
    """(t, y, dy, grid, options, NUFFT power) of 300 points from MJD 60000."""
    t, y, dy = light_curve(300, weighted=weighted)
    _, fmin_in_df, nf = next(g for g in GRIDS if g[0] == grid_name)
    grid = baseline_grid(t, fmin_in_df, nf)
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    return t, y, dy, grid, options, nufft_power(t, y, dy, grid, precision=precision, **options)


@pytest.mark.slow
@pytest.mark.parametrize("grid_name", [g[0] for g in GRIDS])
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_every_normalization_and_model_matches_astropy(normalization, fit_mean, center_data,
                                                        grid_name):
    t, y, dy, grid, options, power = model_case(normalization, fit_mean, center_data, grid_name)
    expected = astropy_power(t, y, dy, grid, **options)
    assert peak_error(power, expected) <= nifty_rtol(grid.nf, "fp64")
    assert np.nanargmax(power) == np.nanargmax(expected)
    assert np.isnan(power[0]) == (grid.fmin == 0)


@needs_nifty
@pytest.mark.parametrize("grid_name", [g[0] for g in GRIDS])
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_every_normalization_and_model_matches_nifty_ls(normalization, fit_mean, center_data,
                                                         grid_name):
    t, y, dy, grid, options, power = model_case(normalization, fit_mean, center_data, grid_name)
    expected = nifty_power(t, y, dy, grid, **options)
    assert peak_error(power[1:], expected[1:]) <= nifty_rtol(grid.nf, "fp64")
    assert np.nanargmax(power) == np.nanargmax(expected)


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_fp32_matches_astropy_and_nifty_ls(normalization, weighted):
    """Without ``dy`` every point weighs 1, as in astropy and nifty-ls."""
    t, y, dy, grid, options, power = model_case(normalization, True, True, "fmin>0", "fp32",
                                                weighted)
    assert power.dtype == np.float32
    rtol = nifty_rtol(grid.nf, "fp32")
    assert peak_error(power, astropy_power(t, y, dy, grid, **options)) <= rtol
    if NIFTY is not None:
        assert peak_error(power, nifty_power(t, y, dy, grid, **options)) <= rtol


REAL = [  # (catalog, object, fmin, fmax, nf): grids about the known periods
    ("ida", 0, 1.0, 30.0, 11_111),            # raw JD epochs, no dy
    ("8205_errors", 0, 0.05, 6.0, 3_571),
    ("stripe82", 0, 0.5, 5.0, 30_001),        # raw MJD epochs, RR Lyrae
    ("stripe82", 77, 0.5, 5.0, 30_001),
]


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize(("name", "row", "fmin", "fmax", "nf"), REAL)
def test_real_light_curves_match_astropy_and_nifty_ls(name, row, fmin, fmax, nf, precision):
    t, y, dy = object_of(name, row)
    grid = FrequencyGrid.from_range(fmin, fmax, nf)
    rtol = nifty_rtol(nf, precision)
    for normalization in ("standard", "psd"):
        power = nufft_power(t, y, dy, grid, precision=precision, normalization=normalization)
        expected = astropy_power(t, y, dy, grid, normalization=normalization)
        assert peak_error(power, expected) <= rtol, normalization
        assert np.argmax(power) == np.argmax(expected)
        if NIFTY is not None:
            peer = nifty_power(t, y, dy, grid, normalization=normalization)
            assert peak_error(power, peer) <= rtol, normalization


# }}}

# {{{ point counts from 10 to 1e6


POINT_COUNTS = (10, 100, 1000, 10_000, 100_000, 1_000_000)


def point_count(n: int, *more, marks=()):
    """The parameters of a case of ``n`` points, marked slow from 1e5 points."""
    return pytest.param(n, *more, marks=[*([pytest.mark.slow] * (n >= 100_000)), *marks])


@functools.cache
def long_case(n: int):
    """``n`` points over 1000 d from MJD 60000, 1501 frequencies from 0 (the signal's near
    row 685): the direct kernel's fp64 powers and the NUFFT's by precision."""
    t, y, dy = light_curve(n, baseline=1000.0)
    grid = baseline_grid(t, 0.0, 1501)
    return t, y, dy, grid, direct_power(t, y, dy, grid), {
        precision: nufft_power(t, y, dy, grid, precision=precision)
        for precision in ("fp64", "fp32")}


@pytest.mark.parametrize(("n", "precision"), [
    point_count(n, precision)
    for n in POINT_COUNTS for precision in ("fp64", "fp32")])
def test_point_counts_match_the_direct_kernel(n, precision):
    *_, grid, direct, powers = long_case(n)
    power = powers[precision]
    assert peak_error(power, direct) <= nifty_rtol(grid.nf, precision)
    assert np.nanargmax(power) == np.nanargmax(direct)
    if n >= 1000:  # the signal's frequency is found
        assert abs(grid.frequencies()[np.nanargmax(power)] - 1 / 7.3) <= grid.df


@needs_nifty
@pytest.mark.parametrize("n", [point_count(n) for n in POINT_COUNTS])
def test_point_counts_match_nifty_ls(n):
    t, y, dy, grid, _, powers = long_case(n)
    expected = nifty_power(t, y, dy, grid)
    assert peak_error(powers["fp64"][1:], expected[1:]) <= nifty_rtol(grid.nf, "fp64")


# }}}

# {{{ the error bound of the default eps, against exact sums

BOUND_CASES = [  # (light curve, fmin in df, nf, fit_mean/center_data)
    pytest.param("random 3000", 2.0, 1777, CENTRING, id="3000 points, fmin>0"),
    pytest.param("random 3000", 0.0, 2000, ((True, True),), id="3000 points, fmin=0"),
    pytest.param("8205", 0.0, 2000, CENTRING, id="8205, fmin=0"),
    pytest.param("random 10", 2.0, 1777, ((True, True),), id="10 points"),
    pytest.param("random 300", 0.0, 2000, ((True, True),), id="300 points, fmin=0"),
    pytest.param("stripe82", 0.0, 2000, ((True, True),), id="stripe82, fmin=0"),
]


def bound_light_curve(name: str):
    if name.startswith("random"):
        return light_curve(int(name.split()[1]))
    return object_of("8205_errors" if name == "8205" else name)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fmin_in_df", "nf", "centring"), BOUND_CASES)
def test_default_eps_meets_the_fp64_bound(name, fmin_in_df, nf, centring):
    t, y, dy = bound_light_curve(name)
    grid = baseline_grid(t, fmin_in_df, nf)
    for fit_mean, center_data in centring:
        options = dict(fit_mean=fit_mean, center_data=center_data)
        error = peak_error(nufft_power(t, y, dy, grid, **options),
                           exact_power(t, y, dy, grid, **options))
        assert error <= BOUND["fp64"], (fit_mean, center_data)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fmin_in_df", "nf", "centring"), [
    pytest.param("random 3000", 2.0, 1777, CENTRING, id="3000 points, fmin>0"),
    pytest.param("8205", 0.0, 2000, CENTRING, id="8205, fmin=0"),
    pytest.param("random 10", 2.0, 1777, ((True, True),), id="10 points"),
    pytest.param("stripe82", 0.0, 2000, ((True, True),), id="stripe82, fmin=0"),
])
def test_default_eps_meets_the_fp32_bound(name, fmin_in_df, nf, centring):
    t, y, dy = bound_light_curve(name)
    grid = baseline_grid(t, fmin_in_df, nf)
    for fit_mean, center_data in centring:
        options = dict(fit_mean=fit_mean, center_data=center_data)
        error = peak_error(nufft_power(t, y, dy, grid, precision="fp32", **options),
                           exact_power(t, y, dy, grid, **options))
        assert error <= BOUND["fp32"], (fit_mean, center_data)


@pytest.mark.parametrize("name", ["random 10", "random 300", "stripe82"])
def test_eps_1e_12_meets_the_fp64_bound_on_short_light_curves(name):
    """A kernel 3 cells wider (13) brings the cases above within 1e-9 of the peak."""
    t, y, dy = bound_light_curve(name)
    grid = baseline_grid(t, 0.0, 2000)
    for fit_mean, center_data in CENTRING:
        options = dict(fit_mean=fit_mean, center_data=center_data)
        error = peak_error(nufft_power(t, y, dy, grid, eps=1e-12, **options),
                           exact_power(t, y, dy, grid, **options))
        assert error <= BOUND["fp64"], (fit_mean, center_data)


@pytest.mark.slow
def test_default_eps_meets_the_fp64_bound_on_a_long_light_curve():
    """1e5 points with the signal in the grid; the direct kernel is the exact reference."""
    *_, direct, powers = long_case(100_000)
    assert peak_error(powers["fp64"], direct) <= BOUND["fp64"]


def test_catalog_rows_meet_the_bound_of_single_objects():
    """A catalog of stripe82 objects (raw MJD) gives each row the powers of its object."""
    catalog = load_example("stripe82").slice(10, 14)
    grid = FrequencyGrid.from_range(0.5, 5.0, 4001)
    fast = lombscargle(catalog, grid, algorithm="nufft", eps=1e-12, periodogram=True)
    for row in range(catalog.n_objects):
        t, y, dy = object_of("stripe82", 10 + row)
        assert peak_error(fast.power[row], exact_power(t, y, dy, grid)) <= BOUND["fp64"]


# }}}

# {{{ known answers and invariances


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_noiseless_sinusoid_has_unit_power_at_its_frequency(precision):
    rng = np.random.default_rng(7)
    t = 6e4 + np.sort(rng.uniform(0.0, 200.0, 400))
    grid = FrequencyGrid(0.0, 1 / 1000, 1500)
    f0 = grid.frequencies()[917]
    y = 3.0 + 0.7 * np.sin(2 * np.pi * f0 * (t - 6e4) + 0.4)
    power = nufft_power(t, y, np.full(t.size, 0.1), grid, precision=precision)
    assert np.nanargmax(power) == 917
    assert power[917] == pytest.approx(1.0, abs=BOUND[precision])


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_mjd_offset_and_units_leave_the_powers_unchanged(precision):
    """``t + 6e4`` rounds the times by ~7e-12 d; y and dy scaled by 1e3 are the same data."""
    t, y, dy = light_curve(300, epoch=0.0)
    grid = baseline_grid(t, 0.0, 2000)
    power = nufft_power(t, y, dy, grid, precision=precision)
    moved = nufft_power(t + 6e4, 1e3 * y - 17.0, 1e3 * dy, grid, precision=precision)
    assert peak_error(moved, power) <= BOUND[precision]


def test_catalog_of_short_and_long_curves_equals_single_objects():
    curves = [light_curve(n, seed=n, baseline=1000.0) for n in (12, 5000, 300)]
    grid = baseline_grid(curves[1][0], 3.5, 2222)
    fast = lombscargle(Catalog.from_lightcurves(curves), grid, algorithm="nufft",
                       periodogram=True)
    for row, (t, y, dy) in enumerate(curves):
        assert peak_error(fast.power[row], nufft_power(t, y, dy, grid)) <= 1e-13


# }}}
