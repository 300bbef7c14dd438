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

import contextlib
import functools
import warnings
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.engine.devices import get_queue, upload
from clperiod.engine.staging import Staging
from clperiod.periodograms import nufft
from reference import nufft as ref

# the stage-by-stage checks of the NUFFT kernels; the public path has its
# not-slow tests in test_lombscargle_nufft.py
pytestmark = pytest.mark.slow

NORMALIZATIONS = ("standard", "model", "log", "psd")
#: The transforms' tolerance of the default fp64 plan.
TRANSFORM_EPS = nufft.DEFAULT_EPS[True] * nufft.TRANSFORM_MARGIN[True]
#: The reference NUFFT computes the same transforms (up to rounding).
REFERENCE_NUFFT_RTOL = 1e-11
#: (fit_mean, center_data)
CENTRING = ((True, True), (True, False), (False, True), (False, False))


#: The stagings of the module's device buffers, released when it ends (a pooled
#: buffer collected later would move the pool's counts under another test).
_STAGINGS: list[Staging] = []


def held_staging(device) -> Staging:
    _STAGINGS.append(Staging(device))
    return _STAGINGS[-1]


@pytest.fixture(scope="module", autouse=True)
def _release_stagings():
    yield
    spread_case.cache_clear()
    while _STAGINGS:
        _STAGINGS.pop().release()


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
    points = device_points(
        queue,
        Catalog.from_single(t, y, dy),
        plan,
        fit_mean=fit_mean,
        center_data=center_data,
        use_dy=dy is not None,
    )
    return nufft.periodogram(queue, points, plan, host_fft(plan), normalization)[0]


def device_points(queue, catalog, plan, **options) -> nufft.DevicePoints:
    """Host-prepared points of ``catalog`` on the device of ``queue``."""
    prepared = nufft.prepare(nufft.time_sorted(catalog), plan, **options)
    fields = {
        name: upload(queue, getattr(prepared, name))
        for name in (
            "starts",
            "n_points",
            "cells",
            "fractions",
            "weights",
            "weighted_values",
            "phases",
            "yy",
        )
    }
    return nufft.DevicePoints(
        len(prepared.status),
        options["fit_mean"],
        **fields,
        status=prepared.status,
        psd_scale=prepared.psd_scale,
    )


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
@pytest.mark.parametrize(
    ("eps", "sigma"),
    [(1e-3, 2.0), (1e-5, 1.25), (1e-9, 2.0), (1e-9, 1.25), (1e-12, 2.0), (1e-20, 2.0)],
)
def test_kernel_rules_are_the_reference_rules(precision, eps, sigma):
    dtype = np.float64 if precision == "fp64" else np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # widths clipped to 16, in both
        width, beta = nufft.es_kernel_params(eps, sigma, precision == "fp64")
        assert (width, beta) == ref.es_kernel_params(eps, sigma, dtype=dtype)
    for n_modes in (1, 777, 1000, 25001):
        assert nufft.fine_grid_size(n_modes, sigma, width) == ref.fine_grid_size(
            n_modes, sigma, width
        )
    theta = np.linspace(-np.pi / sigma, np.pi / sigma, 41)
    np.testing.assert_allclose(
        nufft.kernel_fourier_transform(theta, width, beta),
        ref.kernel_fourier_transform(theta, width, beta),
        rtol=1e-13,
    )


@pytest.mark.parametrize(
    ("eps", "sigma"),
    [(eps, 2.0) for eps in (1e-2, 1e-3, 1e-9, 1e-12, 1e-13, 1e-15)]
    + [(eps, 1.25) for eps in (1e-5, 1e-7, 1e-9)],
)
def test_es_polynomial_is_the_kernel_within_its_cut(eps, sigma):
    """On every unit interval of the support, within about the kernel's own cut
    e^-beta at |d| = w/2 (and the float64 rounding of the widest kernels)."""
    width, beta = nufft.es_kernel_params(eps, sigma)
    coefficients = nufft.es_polynomial(width, beta)
    lanes = nufft.polynomial_lanes(width)
    assert coefficients.shape == (width + nufft.POLYNOMIAL_EXTRA_DEGREE + 1, lanes)
    assert lanes >= width and not coefficients[:, width:].any()
    s = np.linspace(-1, 1, 2001)
    d = np.arange(width)[:, None] + (s + 1) / 2 - width / 2
    values = np.polynomial.polynomial.polyval(s, coefficients[:, :width])
    exact = ref.es_kernel(2 * d / width, beta)
    assert np.abs(values - exact).max() <= 1.1 * np.exp(-beta) + 1e-14


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
    assert (fp64.eps, fp64.width, fp64.n_grid) == (1e-9, 13, 2000)  # transforms to 1e-12
    assert (fp32.eps, fp32.width, fp32.dtype) == (1e-5, 8, np.float32)  # to 1e-7
    with pytest.raises(ValueError, match="precision"):
        nufft.NufftPlan.build(grid, "fp16")


def test_correction_factors_divide_by_the_kernel_transform_and_fft_scale():
    plan = nufft.NufftPlan.build(FrequencyGrid(0.0, 0.01, 777))
    k = np.arange(777) - 388
    psi = ref.kernel_fourier_transform(2 * np.pi * k / plan.n_grid, plan.width, plan.beta)
    np.testing.assert_allclose(nufft.correction_factors(plan), 1 / psi, rtol=1e-14)
    np.testing.assert_allclose(
        nufft.correction_factors(plan, 1 / plan.n_grid), plan.n_grid / psi, rtol=1e-14
    )


def test_host_quadrature_in_blocks_equals_one_block():
    theta = np.linspace(-3.0, 3.0, 2 * nufft._QUADRATURE_BLOCK + 17)
    picked = theta[:: nufft._QUADRATURE_BLOCK // 3]
    np.testing.assert_allclose(
        nufft.kernel_fourier_transform(theta, 13, 30.0)[:: nufft._QUADRATURE_BLOCK // 3],
        ref.kernel_fourier_transform(picked, 13, 30.0),
        rtol=1e-13,
    )


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("nf", [1, 776, 100_001])
def test_device_correction_factors_equal_the_host_quadrature(queue, precision, nf):
    plan = nufft.NufftPlan.build(FrequencyGrid(0.01, 1e-3, nf), precision)
    if not queue.device.double_fp_config:
        pytest.skip("nufft_correction needs fp64")
    factors = np.empty(nf, plan.dtype)
    cl.enqueue_copy(queue, factors, nufft._correction_on_device(queue, plan, 1 / plan.n_grid))
    host = nufft.correction_factors(plan, 1 / plan.n_grid)
    rtol = 1e-13 if precision == "fp64" else 1e-7
    np.testing.assert_allclose(factors, host, rtol=rtol)


# }}}

# {{{ preparation


def prepared_one(t, y, dy, grid, precision="fp64", fit_mean=True, center_data=True):
    plan = nufft.NufftPlan.build(grid, precision)
    catalog = nufft.time_sorted(Catalog.from_single(t, y, dy))
    return plan, nufft.prepare(
        catalog, plan, fit_mean=fit_mean, center_data=center_data, use_dy=dy is not None
    )


def on_device(device, catalog, plan, fit_mean=True, center_data=True, use_dy=True):
    """``nufft_prepare``'s points of ``catalog`` (time-sorted), and its host twin's."""
    queue, staging = get_queue(device), held_staging(device)
    catalog = nufft.time_sorted(catalog)
    points = nufft.prepare_on_device(
        staging, queue, catalog, plan, fit_mean=fit_mean, center_data=center_data, use_dy=use_dy
    )
    queue.finish()
    host = nufft.prepare(catalog, plan, fit_mean=fit_mean, center_data=center_data, use_dy=use_dy)
    return points, host


def read_points(queue, points: nufft.DevicePoints, plan, n_rows: int) -> dict:
    complex_dtype = plan.complex_dtype
    return {
        "cells": read(queue, points.cells, n_rows, np.int64),
        "fractions": read(queue, points.fractions, n_rows, plan.dtype),
        "weights": read(queue, points.weights, n_rows, plan.dtype),
        "weighted_values": read(queue, points.weighted_values, n_rows, plan.dtype),
        "phases": read(queue, points.phases, n_rows, complex_dtype),
        "n_points": read(queue, points.n_points, points.n_objects, np.int32),
        "yy": read(queue, points.yy, points.n_objects, plan.dtype),
    }


def coordinates(prepared, harmonic: int = 1) -> np.ndarray:
    """Unwrapped cell coordinates ``h xi`` (float64)."""
    return harmonic * (prepared.cells + prepared.fractions.astype(np.float64))


def test_points_and_strengths_are_the_reference_mapping():
    t, y, dy = light_curve(300)
    grid = FrequencyGrid(40.5 * baseline_df(t), baseline_df(t), 777)
    plan, prepared = prepared_one(t, y, dy, grid)
    tt = t - t.min()
    np.testing.assert_allclose(
        coordinates(prepared), plan.n_grid * grid.df * tt, rtol=0, atol=1e-9
    )
    assert np.all(np.diff(prepared.cells) >= 0)
    weighted = ref._Weighted(t, y, dy, True)
    shift = np.exp(2j * np.pi * plan.shift_frequency * tt)
    scale = np.sqrt(prepared.yy[0] / weighted.yy)  # the standardised units
    for value, expected in (
        (prepared.weighted_values * prepared.phases, weighted.wy * shift * scale),
        (prepared.weights * prepared.phases, weighted.w * shift),
    ):
        np.testing.assert_allclose(value, expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    assert prepared.psd_scale[0] == pytest.approx(
        0.5 * weighted.yy * weighted.weight_sum, rel=1e-13
    )


def test_phases_and_cells_of_raw_epochs_are_exact(cpu_device):
    """JD-size epochs, f_s tt up to 1e4 cycles and 1e5 cells: phasors and cell
    coordinates within 1e-14 of long-double values (float64 products are off by
    ~1e-11), on the host and on the device."""
    rng = np.random.default_rng(3)
    t = 2.46e6 + np.sort(rng.uniform(0, 3000, 500))
    y, dy = rng.normal(size=500), np.ones(500)
    grid = FrequencyGrid(2.0, 1 / 15000, 100001)
    plan = nufft.NufftPlan.build(grid)
    points, host = on_device(cpu_device, Catalog.from_single(t, y, dy), plan)
    device = read_points(get_queue(cpu_device), points, plan, t.size)
    tt = (t - t.min()).astype(np.longdouble)
    turns = np.longdouble(plan.shift_frequency) * tt
    exact_phase = np.exp(2j * np.pi * (turns - np.rint(turns)).astype(np.float64))
    exact_xi = (plan.n_grid * np.longdouble(grid.df) * tt).astype(np.float64)
    for prepared in (host, SimpleNamespace(**device)):
        np.testing.assert_allclose(prepared.phases, exact_phase, rtol=0, atol=1e-14)
        np.testing.assert_allclose(coordinates(prepared), exact_xi, rtol=0, atol=1e-9)
        off = coordinates(prepared) - exact_xi  # ~1e-14 cells relative to the cell number
        np.testing.assert_array_less(np.abs(off), 1e-14 * np.maximum(1, np.abs(exact_xi)))


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("use_dy", [True, False])
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
def test_device_preparation_equals_the_host_twin(
    cpu_device, precision, use_dy, fit_mean, center_data
):
    curves = [light_curve(n, seed=n) for n in (50, 3, 400, 120)]
    curves[3] = (curves[3][0], np.full(120, 4.0), curves[3][2])  # no variance
    catalog = Catalog.from_lightcurves(curves)
    plan = nufft.NufftPlan.build(FrequencyGrid(0.01, 0.002, 500), precision)
    points, host = on_device(cpu_device, catalog, plan, fit_mean, center_data, use_dy)
    device = read_points(get_queue(cpu_device), points, plan, catalog.offsets[-1])
    np.testing.assert_array_equal(points.status, host.status)
    np.testing.assert_array_equal(device["n_points"], host.n_points)
    np.testing.assert_allclose(points.psd_scale, host.psd_scale, rtol=1e-13)
    tolerance = 1e-13 if plan.fp64 else 1e-6
    ok = host.n_points > 0
    np.testing.assert_array_equal(np.isnan(device["yy"]), ~ok)
    keep = np.repeat(ok, catalog.lengths)
    # the values are in units of sqrt(yy), a power of 2 that may round either way
    for points_yy, prepared in ((device["yy"], device), (host.yy, vars(host))):
        prepared["weighted_values"] = np.where(
            keep, prepared["weighted_values"] / np.sqrt(np.repeat(points_yy, catalog.lengths)), 0
        )
    for name in ("cells", "fractions", "weights", "weighted_values", "phases"):
        value, expected = device[name][keep], vars(host)[name][keep]
        atol = 0 if name == "cells" else tolerance * np.abs(expected).max()
        np.testing.assert_allclose(value, expected, rtol=0, atol=atol, err_msg=name)


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize(
    ("fit_mean", "center_data", "use_dy"), [(True, True, True), (False, False, False)]
)
def test_preparation_reads_rows_strided_or_contiguous_alike(
    cpu_device, monkeypatch, precision, fit_mean, center_data, use_dy
):
    """Each work-item of nufft_prepare reading every WG-th row (GPUs) or a run of
    rows (CPUs): the same statistics up to the order of the sums, on objects
    shorter and longer than the work-group."""
    curves = [light_curve(n, seed=n) for n in (5, 50, 3, 1000, 17)]
    catalog = Catalog.from_lightcurves(curves)
    plan = nufft.NufftPlan.build(FrequencyGrid(0.01, 0.002, 500), precision)
    queue = get_queue(cpu_device)
    read = {}
    for contiguous in (False, True):
        for kind in nufft.PREPARE_CONTIGUOUS:
            monkeypatch.setitem(nufft.PREPARE_CONTIGUOUS, kind, contiguous)
        points, _ = on_device(cpu_device, catalog, plan, fit_mean, center_data, use_dy)
        read[contiguous] = (points, read_points(queue, points, plan, catalog.offsets[-1]))
    (strided, by_row), (contiguous, by_run) = read[False], read[True]
    np.testing.assert_array_equal(strided.status, contiguous.status)
    np.testing.assert_allclose(strided.psd_scale, contiguous.psd_scale, rtol=1e-14)
    tolerance = 1e-14 if plan.fp64 else 1e-6
    keep = np.repeat(by_row["n_points"] > 0, catalog.lengths)  # rows of the others unwritten
    assert keep.sum() == catalog.offsets[-1] - (3 if fit_mean else 0)  # 3 rows: too few
    for name, value in by_run.items():
        expected = by_row[name]
        if expected.size == keep.size:
            value, expected = value[keep], expected[keep]
        atol = 0 if name in ("cells", "n_points") else tolerance * np.nanmax(np.abs(expected))
        np.testing.assert_allclose(value, expected, rtol=0, atol=atol, err_msg=name)


def test_unsorted_times_are_sorted_and_wrapping_arcs_kept_unwrapped():
    """0.3 samples per peak: x goes round the box more than three times."""
    t, y, dy = light_curve(200)
    grid = FrequencyGrid(0.1, baseline_df(t, 0.3), 300)
    plan, in_order = prepared_one(t, y, dy, grid)
    assert np.ptp(in_order.cells) > 3 * plan.n_grid
    order = np.random.default_rng(1).permutation(t.size)
    _, shuffled = prepared_one(t[order], y[order], dy[order], grid)
    for name in ("cells", "fractions", "weights", "weighted_values", "phases"):
        np.testing.assert_array_equal(getattr(shuffled, name), getattr(in_order, name))


def test_time_sorted_sorts_within_objects_only():
    catalog = Catalog.from_lightcurves(
        [([3.0, 1.0, 2.0], [1.0, 2.0, 3.0], [1.0] * 3), ([0.5, 0.7], [4.0, 5.0], [1.0] * 2)]
    )
    sorted_catalog = nufft.time_sorted(catalog)
    np.testing.assert_array_equal(sorted_catalog.t, [1.0, 2.0, 3.0, 0.5, 0.7])
    np.testing.assert_array_equal(sorted_catalog.y, [2.0, 3.0, 1.0, 4.0, 5.0])
    assert nufft.time_sorted(sorted_catalog) is sorted_catalog


def test_objects_with_too_few_points_or_no_variance_get_nan_and_no_points():
    rng = np.random.default_rng(2)
    curves = [
        (np.sort(rng.uniform(0, 50, n)), rng.normal(size=n), np.ones(n)) for n in (40, 3, 25)
    ]
    curves[2] = (curves[2][0], np.full(25, 4.0), curves[2][2])
    catalog = Catalog.from_lightcurves(curves)
    plan = nufft.NufftPlan.build(FrequencyGrid(0.01, 0.004, 200))
    prepared = nufft.prepare(catalog, plan, fit_mean=True, center_data=True, use_dy=True)
    assert list(prepared.status) == [Status.OK, Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]
    assert list(prepared.starts) == [0, 40, 43]
    assert list(prepared.n_points) == [40, 0, 0]
    assert np.isnan(prepared.yy[1:]).all()


# }}}

# {{{ spreading and corrected modes


SPREAD_CASES = [  # (points, precision, samples per peak, nf, fmin in df)
    (10, "fp64", 5, 64, 0.0),
    (300, "fp64", 5, 777, 40.5),
    (300, "fp64", 1, 300, 3.25),
    (300, "fp64", 0.3, 300, 3.25),
    (10_000, "fp64", 5, 1000, 2.0),
    (300, "fp32", 5, 777, 40.5),
    (3000, "fp32", 1, 1024, 0.0),
]
#: The long-double direct sums of 1e4 points take ~10 s.
MODE_CASES = [
    pytest.param(*case, marks=pytest.mark.slow) if case[0] > 3000 else case
    for case in SPREAD_CASES
]


#: The ways of spreading: (SCATTER_RATIO, SPREAD_OPTIONS of every kind of device,
#: SPREAD_BLOCK); the per-cell gather and the scatter with exp and sqrt (GPUs)
#: or the piecewise polynomial, and the point-major blocks (CPUs), also of 16 cells.
WAYS = {
    "gather": (2**62, {"horner": False, "blocks": False}, nufft.SPREAD_BLOCK),
    "scatter": (0, {"horner": False, "blocks": False}, nufft.SPREAD_BLOCK),
    "horner-gather": (2**62, {"horner": True, "blocks": False}, nufft.SPREAD_BLOCK),
    "horner-scatter": (0, {"horner": True, "blocks": False}, nufft.SPREAD_BLOCK),
    "blocks": (2**62, {"horner": True, "blocks": True}, nufft.SPREAD_BLOCK),
    "blocks-16": (2**62, {"horner": True, "blocks": True}, 16),
}
#: Ways whose kernel values are the same exp and sqrt, or the same polynomial.
SAME_KERNEL_VALUES = (("gather", "scatter"), ("horner-gather", "horner-scatter", "blocks"))


@contextlib.contextmanager
def spreading(way: str | None):
    """Spread by ``way`` (:data:`WAYS`) on any device; None: the device's own way."""
    if way is None:
        yield
        return
    ratio, options, block = WAYS[way]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(nufft, "SCATTER_RATIO", ratio)
        patch.setattr(nufft, "GPU_SCATTER_RATIO", ratio)
        patch.setattr(nufft, "SPREAD_BLOCK", block)
        for kind in nufft.SPREAD_OPTIONS:
            patch.setitem(nufft.SPREAD_OPTIONS, kind, options)
        yield


@functools.cache
def spread_case(device, n, precision, spp, nf, fmin_in_df, fit_mean=True, host=False, way=None):
    """Points prepared on the device (or on the host and uploaded) and spread
    (by a way of :data:`WAYS`, or the device's own)."""
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    plan = nufft.NufftPlan.build(FrequencyGrid(fmin_in_df * df, df, nf), precision)
    queue, staging = get_queue(device), held_staging(device)
    catalog = Catalog.from_single(t, y, dy)
    points, prepared = on_device(device, catalog, plan, fit_mean=fit_mean)
    if host:
        points = nufft.upload_points(staging, prepared, fit_mean)
        staging.send(queue)
    grid = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nufft.grid_bytes(points, plan))
    cl.enqueue_fill_buffer(queue, grid, np.float32(np.nan), 0, nufft.grid_bytes(points, plan))
    with spreading(way):
        assert way is None or nufft.scatters(points, plan, queue.device) == way.endswith("scatter")
        nufft.spread(queue, points, plan, grid)
    shape = (points.n_transforms, plan.n_grid)
    return plan, points, prepared, grid, read(queue, grid, shape, plan.complex_dtype)


def transform_inputs(prepared, fit_mean=True):
    """(cell coordinates mod n_grid, strengths) of each transform, in output order."""
    xi, xi2 = coordinates(prepared), coordinates(prepared, 2)
    data = prepared.weighted_values * prepared.phases
    window = prepared.weights * prepared.phases
    doubled = window * prepared.phases
    return [(xi, data), *([(xi, window)] if fit_mean else []), (xi2, doubled)]


@pytest.mark.parametrize("way", list(WAYS))
@pytest.mark.parametrize("host", [False, True], ids=["device-prepared", "host-prepared"])
@pytest.mark.parametrize("case", SPREAD_CASES)
def test_spread_grid_matches_the_reference_spread(cpu_device, case, host, way):
    """Up to rounding, and up to the kernel's edge value e^-beta per point: a point
    within rounding of w/2 cells from a cell falls on either edge of its support.
    The grid starts as NaN: every cell must be written (or zeroed for the scatter)."""
    plan, _, prepared, _, grids = spread_case(cpu_device, *case, host=host, way=way)
    tolerance = 1e-13 if plan.fp64 else 2e-6
    for grid, (xi, strengths) in zip(grids, transform_inputs(prepared), strict=True):
        expected = ref.spread(
            np.mod(xi, plan.n_grid),
            strengths.astype(np.complex128),
            plan.n_grid,
            plan.width,
            plan.beta,
        )[0]
        edge = 2 * np.exp(-plan.beta) * np.abs(strengths).max()
        np.testing.assert_allclose(
            grid, expected, rtol=0, atol=tolerance * np.abs(expected).max() + edge
        )


@pytest.mark.parametrize("ways", SAME_KERNEL_VALUES, ids="=".join)
@pytest.mark.parametrize("case", SPREAD_CASES[:4] + SPREAD_CASES[5:6])
def test_ways_with_the_same_kernel_values_agree(cpu_device, case, ways):
    """The same kernel values summed in the same order (one image per point here);
    fp32 gathers with compensated sums, the blocks in float64, the scatter adds plainly."""
    grids = [spread_case(cpu_device, *case, way=way)[-1] for way in ways]
    tolerance = 1e-15 if case[1] == "fp64" else 1e-6
    for grid in grids[1:]:
        np.testing.assert_allclose(grid, grids[0], rtol=0, atol=tolerance * np.abs(grids[0]).max())


def test_spread_without_fit_mean_has_two_transforms(cpu_device):
    plan, _, _, _, grids = spread_case(cpu_device, 300, "fp64", 5, 777, 40.5, fit_mean=False)
    assert grids.shape == (2, plan.n_grid)
    *_, mean_grids = spread_case(cpu_device, 300, "fp64", 5, 777, 40.5)
    np.testing.assert_allclose(grids[0], mean_grids[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(grids[1], mean_grids[2], rtol=0, atol=1e-15)


@pytest.mark.parametrize(("n", "precision", "spp", "nf", "fmin_in_df"), MODE_CASES)
def test_corrected_modes_match_direct_sums(cpu_device, n, precision, spp, nf, fmin_in_df):
    """Relative l2 error <= 3 eps (plus the fp32 rounding floor) against long-double
    direct sums at the prepared points."""
    queue = get_queue(cpu_device)
    plan, points, prepared, grid, _ = spread_case(cpu_device, n, precision, spp, nf, fmin_in_df)
    n_trans = points.n_transforms
    modes = host_fft(plan)(queue, grid, n_trans, plan.n_grid)
    sums = cl.Buffer(
        queue.context,
        cl.mem_flags.WRITE_ONLY,
        n_trans * nf * np.dtype(plan.complex_dtype).itemsize,
    )
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, nf * np.dtype(plan.dtype).itemsize)
    nufft.power(queue, modes, points, plan, out, sums=sums)
    corrected = read(queue, sums, (n_trans, nf), plan.complex_dtype)
    floor = 3 * plan.eps + (0 if plan.fp64 else 50 * np.finfo(np.float32).eps)
    for row, (xi, strengths) in zip(corrected, transform_inputs(prepared), strict=True):
        x = 2 * np.pi * np.mod(xi.astype(np.longdouble), plan.n_grid) / plan.n_grid
        exact = ref.nudft1(x, strengths.astype(np.complex128), nf)
        assert np.linalg.norm(row - exact) <= floor * np.linalg.norm(exact)


# }}}

# {{{ periodograms


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize(("fit_mean", "center_data"), CENTRING)
@pytest.mark.parametrize(("fmin_in_df", "nf"), [(0.0, 1000), (40.5, 777)])
def test_power_matches_direct_sums_and_the_reference_nufft(
    queue, normalization, fit_mean, center_data, fmin_in_df, nf
):
    t, y, dy = light_curve(300)
    df = baseline_df(t)
    fmin = fmin_in_df * df
    options = dict(fit_mean=fit_mean, center_data=center_data, normalization=normalization)
    power = nufft_power(queue, t, y, dy, FrequencyGrid(fmin, df, nf), **options)
    direct = ref.lombscargle_direct(t, y, dy, fmin + df * np.arange(nf), **options)
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp64"))
    assert_close_to_peak(
        power,
        ref.lombscargle_nufft(t, y, dy, fmin, df, nf, **options, eps=TRANSFORM_EPS),
        REFERENCE_NUFFT_RTOL,
    )
    assert np.isnan(power[0]) == (fmin == 0)


@pytest.mark.parametrize(
    ("normalization", "n", "nf", "fmin_in_df", "spp"),
    [
        *[
            (normalization, *case)
            for normalization in NORMALIZATIONS
            for case in ((10, 61, 0.0, 5), (300, 777, 40.5, 5), (3000, 1024, 0.0, 1))
        ],
        ("standard", 10_000, 1000, 2.5, 5),
    ],
)
def test_fp32_power_meets_the_fp32_rule(queue, normalization, n, nf, fmin_in_df, spp):
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    fmin = fmin_in_df * df
    power = nufft_power(
        queue, t, y, dy, FrequencyGrid(fmin, df, nf), "fp32", normalization=normalization
    )
    assert power.dtype == np.float32
    direct = ref.lombscargle_direct(
        t, y, dy, fmin + df * np.arange(nf), normalization=normalization
    )
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp32"))


@pytest.mark.parametrize(
    ("n", "nf", "fmin_in_df", "spp"),
    [(10, 64, 0.0, 5), (10_000, 1001, 2.0, 5), (500, 1250, 0.5, 0.8)],
)
def test_power_over_point_counts_and_wrapping_grids(queue, n, nf, fmin_in_df, spp):
    """10 to 1e4 points; 0.8 samples per peak puts x around the box more than once."""
    t, y, dy = light_curve(n)
    df = baseline_df(t, spp)
    fmin = fmin_in_df * df
    power = nufft_power(queue, t, y, dy, FrequencyGrid(fmin, df, nf))
    direct = ref.lombscargle_direct(t, y, dy, fmin + df * np.arange(nf))
    assert_close_to_peak(power, direct, nifty_rtol(nf, "fp64"))
    assert_close_to_peak(
        power,
        ref.lombscargle_nufft(t, y, dy, fmin, df, nf, eps=TRANSFORM_EPS),
        REFERENCE_NUFFT_RTOL,
    )


def test_power_is_invariant_to_epoch_and_units(queue):
    """Julian-date epochs round t to 5e-10 d, which moves the powers by ~1e-10."""
    t, y, dy = light_curve(300, epoch=0.0)
    grid = FrequencyGrid(0.0, baseline_df(t), 800)
    for normalization in ("standard", "psd"):
        power = nufft_power(queue, t, y, dy, grid, normalization=normalization)
        scaled = nufft_power(
            queue,
            t,
            1e3 * y + (normalization == "standard") * 17.0,
            1e3 * dy,
            grid,
            normalization=normalization,
        )
        assert_close_to_peak(scaled, power, 1e-12)  # psd is in units of (y / dy)^2
    moved = nufft_power(queue, t + 2.46e6, y, dy, grid)
    assert_close_to_peak(moved, nufft_power(queue, t, y, dy, grid), 1e-9)


def test_catalog_rows_equal_single_objects_and_bad_objects_are_nan(queue):
    curves = [light_curve(n, seed=n) for n in (50, 3, 400, 120)]
    catalog = Catalog.from_lightcurves(curves)
    grid = FrequencyGrid(0.01, 0.002, 500)
    plan = nufft.NufftPlan.build(grid)
    points = device_points(queue, catalog, plan, fit_mean=True, center_data=True, use_dy=True)
    powers = nufft.periodogram(queue, points, plan, host_fft(plan), "model")
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
    plan = nufft.NufftPlan.build(FrequencyGrid(0.0, 0.01, 100))
    points = device_points(
        queue, Catalog.from_single(t, y, dy), plan, fit_mean=True, center_data=True, use_dy=True
    )
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nufft.grid_bytes(points, plan))
    for normalization in ("chi2", "psd"):
        with pytest.raises(ValueError, match="normalization|psd"):
            nufft.power(queue, buffer, points, plan, buffer, normalization)


# }}}
