"""The device NUFFT Lomb-Scargle stages (clperiod.periodograms.nufft) against the reference.

Each stage is checked against ``tests/reference/nufft.py`` on the test device,
with the FFT done by NumPy on the host between the kernels: the prepared
points and strengths against the reference's mapping (spec section 1.4) and
long-double phases, the spread grids against :func:`reference.nufft.spread`,
the corrected modes against the direct sums :func:`reference.nufft.nudft1`,
and the powers against :func:`reference.nufft.lombscargle_direct` with
nifty-ls's rule (``max(1e-5, 1e-9 Nf)`` of the peak in fp64,
``max(1e-3, 1e-7 Nf)`` in fp32) and against the reference NUFFT itself.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pyopencl as cl
import pytest

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.engine.devices import get_queue, upload
from clperiod.periodograms import nufft
from reference import nufft as ref

# the stage-by-stage checks of the NUFFT kernels; the public path has its
# not-slow tests in test_lombscargle_nufft.py
pytestmark = pytest.mark.slow

NORMALIZATIONS = ("standard", "model", "log", "psd")
#: (fit_mean, center_data)
CENTRING = ((True, True), (True, False), (False, True), (False, False))


@pytest.fixture(scope="module")
def queue(cpu_device) -> cl.CommandQueue:
    """A queue on the test device."""
    return get_queue(cpu_device)


@functools.cache
def light_curve(n: int, seed: int = 5043, baseline: float = 123.0, epoch: float = 6e4):
    """nifty-ls's test data: sorted uniform times over ``baseline`` from ``epoch``."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(size=n)) * baseline + epoch
    y = np.sin(2 * np.pi * t / 7.3) + 1.23 + rng.normal(0.0, 0.3, n)
    dy = rng.uniform(0.01, 0.11, n)
    return t, y, dy


def baseline_df(t: np.ndarray, samples_per_peak: float = 5) -> float:
    return 1 / (samples_per_peak * np.ptp(t))


def host_fft(plan: nufft.NufftPlan):
    """A :class:`~clperiod.periodograms.nufft.GridFFT` by NumPy on the host (scale 1)."""

    def fft(queue, grid, n_batch, n_grid):
        rows = np.empty((n_batch, n_grid), dtype=plan.complex_dtype)
        cl.enqueue_copy(queue, rows, grid)
        modes = np.fft.ifft(rows, axis=-1, norm="forward").astype(plan.complex_dtype)
        return upload(queue, modes)

    return fft


def read(queue, buffer, shape, dtype) -> np.ndarray:
    out = np.empty(shape, dtype=dtype)
    cl.enqueue_copy(queue, out, buffer)
    return out


def nufft_power(queue, t, y, dy, grid, precision="fp64", **options) -> np.ndarray:
    """The device periodogram of one light curve (host FFT)."""
    normalization = options.pop("normalization", "standard")
    plan = nufft.NufftPlan.build(grid, precision)
    fit_mean, center_data = options.pop("fit_mean", True), options.pop("center_data", True)
    prepared = nufft.prepare(Catalog.from_single(t, y, dy), plan, fit_mean=fit_mean,
                             center_data=center_data, use_dy=dy is not None)
    return nufft.periodogram(queue, prepared, plan, host_fft(plan), normalization)[0]


def nifty_rtol(nf: int, precision: str) -> float:
    return max(1e-5, 1e-9 * nf) if precision == "fp64" else max(1e-3, 1e-7 * nf)


def assert_close_to_peak(power, expected, rtol):
    """Same NaNs; elsewhere ``|power - expected| <= rtol * max|expected|``."""
    np.testing.assert_array_equal(np.isnan(power), np.isnan(expected))
    finite = ~np.isnan(expected)
    peak = np.max(np.abs(expected[finite]))
    np.testing.assert_array_less(np.abs(power - expected)[finite], rtol * peak)


# {{{ kernel rules and correction factors


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize(("eps", "sigma"), [(1e-3, 2.0), (1e-5, 1.25), (1e-9, 2.0),
                                            (1e-9, 1.25), (1e-12, 2.0), (1e-20, 2.0)])
def test_kernel_rules_are_the_reference_rules(precision, eps, sigma):
    dtype = np.float64 if precision == "fp64" else np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # widths clipped to 16, in both
        width, beta = nufft.es_kernel_params(eps, sigma, precision == "fp64")
        assert (width, beta) == ref.es_kernel_params(eps, sigma, dtype=dtype)
    for n_modes in (1, 777, 1000, 25001):
        assert nufft.fine_grid_size(n_modes, sigma, width) == ref.fine_grid_size(
            n_modes, sigma, width)
    theta = np.linspace(-np.pi / sigma, np.pi / sigma, 41)
    np.testing.assert_allclose(nufft.kernel_fourier_transform(theta, width, beta),
                               ref.kernel_fourier_transform(theta, width, beta), rtol=1e-13)


def test_width_beyond_16_cells_is_clipped_with_a_warning():
    with pytest.warns(RuntimeWarning, match="clipped to 16"):
        assert nufft.es_kernel_params(1e-14, 1.25)[0] == 16


@pytest.mark.parametrize(("eps", "sigma"), [(0.0, 2.0), (np.nan, 2.0), (1e-9, 1.0)])
def test_bad_tolerance_or_upsampling_raises(eps, sigma):
    with pytest.raises(ValueError, match=r"eps|upsampfac"):
        nufft.es_kernel_params(eps, sigma)


def test_plan_defaults_and_bad_precision():
    grid = FrequencyGrid(0.0, 0.01, 1000)
    fp64, fp32 = nufft.NufftPlan.build(grid), nufft.NufftPlan.build(grid, "fp32")
    assert (fp64.eps, fp64.width, fp64.n_grid) == (1e-9, 10, 2000)
    assert (fp32.eps, fp32.width, fp32.dtype) == (1e-5, 6, np.float32)
    with pytest.raises(ValueError, match="precision"):
        nufft.NufftPlan.build(grid, "fp16")


def test_correction_factors_divide_by_the_kernel_transform_and_fft_scale():
    plan = nufft.NufftPlan.build(FrequencyGrid(0.0, 0.01, 777))
    k = np.arange(777) - 388
    psi = ref.kernel_fourier_transform(2 * np.pi * k / plan.n_grid, plan.width, plan.beta)
    np.testing.assert_allclose(nufft.correction_factors(plan), 1 / psi, rtol=1e-14)
    np.testing.assert_allclose(nufft.correction_factors(plan, 1 / plan.n_grid),
                               plan.n_grid / psi, rtol=1e-14)


# }}}

# {{{ preparation


def prepared_one(t, y, dy, grid, precision="fp64", fit_mean=True, center_data=True):
    plan = nufft.NufftPlan.build(grid, precision)
    catalog = Catalog.from_single(t, y, dy)
    return plan, nufft.prepare(catalog, plan, fit_mean=fit_mean, center_data=center_data,
                               use_dy=dy is not None)


def cell_coordinates(point_set: nufft.PointSet) -> np.ndarray:
    return point_set.cells + point_set.fractions.astype(np.float64)


def test_points_and_strengths_are_the_reference_mapping():
    t, y, dy = light_curve(300)
    grid = FrequencyGrid(40.5 * baseline_df(t), baseline_df(t), 777)
    plan, prepared = prepared_one(t, y, dy, grid)
    tt = t - t.min()
    x = 2 * np.pi * grid.df * tt
    for point_set, k in ((prepared.points, 1), (prepared.doubled, 2)):
        xi = plan.n_grid * np.mod(k * x / (2 * np.pi), 1.0)
        distance = np.abs(cell_coordinates(point_set) - xi)
        np.testing.assert_array_less(np.minimum(distance, plan.n_grid - distance), 1e-12)
        assert np.all(np.diff(point_set.cells) >= 0)
    weighted = ref._Weighted(t, y, dy, True)
    shift = np.exp(2j * np.pi * plan.shift_frequency * tt)
    data, window = prepared.points.strengths.T
    scale = np.sqrt(prepared.yy[0] / weighted.yy)  # the standardised units
    for value, expected in ((data, weighted.wy * shift * scale), (window, weighted.w * shift),
                            (prepared.doubled.strengths[:, 0], weighted.w * shift**2)):
        np.testing.assert_allclose(value, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert prepared.n_transforms == 3
    assert prepared.psd_scale[0] == pytest.approx(0.5 * weighted.yy * weighted.weight_sum,
                                                  rel=1e-13)


def test_phases_and_cells_of_raw_epochs_are_exact():
    """JD-size epochs, f_s tt up to 1.6e4 cycles and 2e5 cells: phasors and cell
    coordinates within 1e-14 of long-double values (float64 products are off by ~1e-11)."""
    rng = np.random.default_rng(3)
    t = 2.46e6 + np.sort(rng.uniform(0, 3000, 500))
    y, dy = rng.normal(size=500), np.ones(500)
    grid = FrequencyGrid(2.0, 1 / 15000, 100001)
    plan, prepared = prepared_one(t, y, dy, grid)
    tt = (t - t.min()).astype(np.longdouble)
    for point_set, k in ((prepared.points, 1), (prepared.doubled, 2)):
        turns = k * np.longdouble(plan.shift_frequency) * tt
        exact = np.exp(2j * np.pi * (turns - np.rint(turns)).astype(np.float64))
        np.testing.assert_allclose(point_set.strengths[:, -1] * 500, exact, rtol=0, atol=1e-14)
        cycles = k * np.longdouble(grid.df) * tt
        xi = (plan.n_grid * (cycles - np.floor(cycles))).astype(np.float64)
        np.testing.assert_allclose(cell_coordinates(point_set), xi, rtol=0, atol=1e-14)


def test_unsorted_times_and_wrapping_arcs_are_sorted_by_cell():
    """One sample per peak: x spans the whole box and 2x twice, so the cells wrap."""
    t, y, dy = light_curve(200)
    grid = FrequencyGrid(0.1, baseline_df(t, 1.0), 300)
    plan, in_order = prepared_one(t, y, dy, grid)
    time_order = np.floor(plan.n_grid * np.mod(2 * grid.df * (t - t.min()), 1.0))
    assert np.any(np.diff(time_order) < 0)
    order = np.random.default_rng(1).permutation(t.size)
    _, shuffled = prepared_one(t[order], y[order], dy[order], grid)
    for a, b in ((in_order.points, shuffled.points), (in_order.doubled, shuffled.doubled)):
        assert np.all(np.diff(b.cells) >= 0)
        ka, kb = np.lexsort((a.fractions, a.cells)), np.lexsort((b.fractions, b.cells))
        np.testing.assert_array_equal(a.cells[ka], b.cells[kb])
        np.testing.assert_allclose(a.strengths[ka], b.strengths[kb], rtol=0, atol=1e-15)


def test_objects_with_too_few_points_or_no_variance_get_nan_and_no_points():
    rng = np.random.default_rng(2)
    curves = [(np.sort(rng.uniform(0, 50, n)), rng.normal(size=n), np.ones(n))
              for n in (40, 3, 25)]
    curves[2] = (curves[2][0], np.full(25, 4.0), curves[2][2])
    catalog = Catalog.from_lightcurves(curves)
    plan = nufft.NufftPlan.build(FrequencyGrid(0.01, 0.004, 200))
    prepared = nufft.prepare(catalog, plan, fit_mean=True, center_data=True, use_dy=True)
    assert list(prepared.status) == [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]
    assert list(prepared.offsets) == [0, 40, 40, 40]
    assert np.isnan(prepared.yy[1:]).all()


# }}}

# {{{ spreading and corrected modes


SPREAD_CASES = [  # (points, precision, samples per peak, nf, fmin in df)
    (10, "fp64", 5, 64, 0.0),
    (300, "fp64", 5, 777, 40.5),
    (300, "fp64", 1, 300, 3.25),
    (10_000, "fp64", 5, 1000, 2.0),
    (300, "fp32", 5, 777, 40.5),
    (3000, "fp32", 1, 1024, 0.0),
]
#: The long-double direct sums of 1e4 points take ~10 s.
MODE_CASES = [pytest.param(*case, marks=pytest.mark.slow) if case[0] > 3000 else case
              for case in SPREAD_CASES]


@functools.cache
def spread_case(queue, n, precision, spp, nf, fmin_in_df, fit_mean=True):
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    plan, prepared = prepared_one(t, y, dy, FrequencyGrid(fmin_in_df * df, df, nf), precision,
                                  fit_mean=fit_mean)
    grid = nufft.spread(queue, prepared, plan)
    shape = (prepared.n_transforms, plan.n_grid)
    return plan, prepared, grid, read(queue, grid, shape, plan.complex_dtype)


def transform_inputs(prepared):
    """(cell coordinates, strengths) of each transform, in output order."""
    points, doubled = prepared.points, prepared.doubled
    return ([(cell_coordinates(points), s) for s in points.strengths.T]
            + [(cell_coordinates(doubled), doubled.strengths[:, 0])])


@pytest.mark.parametrize("case", SPREAD_CASES)
def test_spread_grid_matches_the_reference_spread(queue, case):
    """Up to rounding, and up to the kernel's edge value e^-beta per point: a point
    within rounding of w/2 cells from a cell (as the last point is at df T = 1/5) falls
    on either edge of its support."""
    plan, prepared, _, grids = spread_case(queue, *case)
    tolerance = 1e-13 if plan.fp64 else 2e-6
    for grid, (xi, strengths) in zip(grids, transform_inputs(prepared), strict=True):
        expected = ref.spread(xi, strengths.astype(np.complex128), plan.n_grid, plan.width,
                              plan.beta)[0]
        edge = 2 * np.exp(-plan.beta) * np.abs(strengths).max()
        np.testing.assert_allclose(grid, expected, rtol=0,
                                   atol=tolerance * np.abs(expected).max() + edge)


def test_spread_without_fit_mean_has_two_transforms(queue):
    plan, _, _, grids = spread_case(queue, 300, "fp64", 5, 777, 40.5, fit_mean=False)
    assert grids.shape == (2, plan.n_grid)
    *_, mean_grids = spread_case(queue, 300, "fp64", 5, 777, 40.5)
    np.testing.assert_allclose(grids[0], mean_grids[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(grids[1], mean_grids[2], rtol=0, atol=1e-15)


@pytest.mark.parametrize(("n", "precision", "spp", "nf", "fmin_in_df"), MODE_CASES)
def test_corrected_modes_match_direct_sums(queue, n, precision, spp, nf, fmin_in_df):
    """Relative l2 error <= 3 eps (plus the fp32 rounding floor) against long-double
    direct sums at the prepared points."""
    plan, prepared, grid, _ = spread_case(queue, n, precision, spp, nf, fmin_in_df)
    n_trans = prepared.n_transforms
    modes = host_fft(plan)(queue, grid, n_trans, plan.n_grid)
    sums = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY,
                     n_trans * nf * np.dtype(plan.complex_dtype).itemsize)
    nufft.power(queue, modes, prepared, plan, sums=sums)
    corrected = read(queue, sums, (n_trans, nf), plan.complex_dtype)
    floor = 3 * plan.eps + (0 if plan.fp64 else 50 * np.finfo(np.float32).eps)
    for row, (xi, strengths) in zip(corrected, transform_inputs(prepared), strict=True):
        x = 2 * np.pi * xi.astype(np.longdouble) / plan.n_grid
        exact = ref.nudft1(x, strengths.astype(np.complex128), nf)
        assert np.linalg.norm(row - exact) <= floor * np.linalg.norm(exact)


# }}}

# {{{ periodograms


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
@pytest.mark.parametrize(("fmin_in_df", "nf"), [(0.0, 1000), (40.5, 777)])
def test_power_matches_direct_sums_and_the_reference_nufft(queue, normalization, fit_mean,
                                                           center_data, fmin_in_df, nf):
    t, y, dy = light_curve(300)
    df = baseline_df(t)
    fmin = fmin_in_df * df
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    power = nufft_power(queue, t, y, dy, FrequencyGrid(fmin, df, nf), **options)
    direct = ref.lombscargle_direct(t, y, dy, fmin + df * np.arange(nf), **options)
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp64"))
    assert_close_to_peak(power, ref.lombscargle_nufft(t, y, dy, fmin, df, nf, **options),
                         1e-11)
    assert np.isnan(power[0]) == (fmin == 0)


@pytest.mark.parametrize(("normalization", "n", "nf", "fmin_in_df", "spp"), [
    *[(normalization, *case) for normalization in NORMALIZATIONS
      for case in ((10, 61, 0.0, 5), (300, 777, 40.5, 5), (3000, 1024, 0.0, 1))],
    ("standard", 10_000, 1000, 2.5, 5)])
def test_fp32_power_meets_the_fp32_rule(queue, normalization, n, nf, fmin_in_df, spp):
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    fmin = fmin_in_df * df
    power = nufft_power(queue, t, y, dy, FrequencyGrid(fmin, df, nf), "fp32",
                        normalization=normalization)
    assert power.dtype == np.float32
    direct = ref.lombscargle_direct(t, y, dy, fmin + df * np.arange(nf),
                                    normalization=normalization)
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp32"))


@pytest.mark.parametrize(("n", "nf", "fmin_in_df", "spp"), [
    (10, 64, 0.0, 5), (10_000, 1001, 2.0, 5), (500, 1250, 0.5, 0.8)])
def test_power_over_point_counts_and_wrapping_grids(queue, n, nf, fmin_in_df, spp):
    """10 to 1e4 points; 0.8 samples per peak puts x around the box more than once."""
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    fmin = fmin_in_df * df
    power = nufft_power(queue, t, y, dy, FrequencyGrid(fmin, df, nf))
    direct = ref.lombscargle_direct(t, y, dy, fmin + df * np.arange(nf))
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp64"))
    assert_close_to_peak(power, ref.lombscargle_nufft(t, y, dy, fmin, df, nf), 1e-11)


def test_power_is_invariant_to_epoch_and_units(queue):
    """Julian-date epochs round t to 5e-10 d, which moves the powers by ~1e-10."""
    t, y, dy = light_curve(300, epoch=0.0)
    grid = FrequencyGrid(0.0, baseline_df(t), 800)
    for normalization in ("standard", "psd"):
        power = nufft_power(queue, t, y, dy, grid, normalization=normalization)
        scaled = nufft_power(queue, t, 1e3 * y + (normalization == "standard") * 17.0,
                             1e3 * dy, grid, normalization=normalization)
        assert_close_to_peak(scaled, power, 1e-12)  # psd is in units of (y / dy)^2
    moved = nufft_power(queue, t + 2.46e6, y, dy, grid)
    assert_close_to_peak(moved, nufft_power(queue, t, y, dy, grid), 1e-9)


def test_catalog_rows_equal_single_objects_and_bad_objects_are_nan(queue):
    curves = [light_curve(n, seed=n) for n in (50, 3, 400, 120)]
    catalog = Catalog.from_lightcurves(curves)
    grid = FrequencyGrid(0.01, 0.002, 500)
    plan = nufft.NufftPlan.build(grid)
    prepared = nufft.prepare(catalog, plan, fit_mean=True, center_data=True, use_dy=True)
    powers = nufft.periodogram(queue, prepared, plan, host_fft(plan), "model")
    assert np.isnan(powers[1]).all()
    for row, k in ((0, 0), (2, 2), (3, 3)):
        single = nufft_power(queue, *curves[k], grid, normalization="model")
        np.testing.assert_allclose(powers[row], single, rtol=1e-13)


def test_matches_the_direct_kernel_at_exact_aliases(queue):
    """Integer times: at f = 1/2 every phase is 0 or pi, the sine column vanishes and
    both the direct kernel and the NUFFT keep the cosine column alone."""
    rng = np.random.default_rng(11)
    t = np.sort(rng.choice(np.arange(58000.0, 58400.0), 200, replace=False))
    y = np.cos(2 * np.pi * t / 9.1) + rng.normal(0, 0.5, t.size)
    dy = rng.uniform(0.5, 1.0, t.size)
    grid = FrequencyGrid(0.0, 0.5 / 400, 601)  # f = 1/2 at index 400
    power = nufft_power(queue, t, y, dy, grid)
    direct = lombscargle(t, grid, y, dy, periodogram=True).power[0]
    assert np.isfinite(power[400])
    assert_close_to_peak(power, direct, 1e-8)


def test_bad_normalization_raises(queue):
    t, y, dy = light_curve(50)
    plan, prepared = prepared_one(t, y, dy, FrequencyGrid(0.0, 0.01, 100))
    grid = nufft.spread(queue, prepared, plan)
    with pytest.raises(ValueError, match="normalization"):
        nufft.power(queue, grid, prepared, plan, "chi2")


# }}}
