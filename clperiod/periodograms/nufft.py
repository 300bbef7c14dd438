"""Lomb-Scargle periodograms on a uniform grid through type-1 NUFFTs on OpenCL (issue 22).

The one-term sums at ``f_m = fmin + m df`` (``m < nf``) are three type-1
non-uniform FFTs (two with ``fit_mean=False``), mapped as nifty-ls does
(spec ``methods_next.md`` section 1.4): with ``tt = t - t_0`` (``t_0`` the
object's first time), cell coordinates ``xi = n_grid df tt`` and ``2 xi``,
and the shift ``f_s = fmin + (nf // 2) df``, the transforms of
``w y e^{2 pi i f_s tt}`` and ``w e^{2 pi i f_s tt}`` at ``xi`` and of
``w e^{4 pi i f_s tt}`` at ``2 xi`` hold, at mode ``k = m - nf // 2``, the
sums ``sum w y e^{2 pi i f_m tt}``, ``sum w e^{2 pi i f_m tt}`` and
``sum w e^{4 pi i f_m tt}`` (``w`` the normalised weights, ``y`` centred when
the model asks for it).

Stages:

1. Preparation: rows sorted in time within each object (:func:`time_sorted`);
   on a device with fp64, ``nufft_prepare`` (the standardisation of
   ``ls_prepare``, one work-group per object; in batches with an object of
   more than ``LONG_OBJECT`` rows the kernels of
   ``cl_kernels/nufft_reduce.mako``, many work-groups per object) and ``nufft_points`` (one
   work-item per row: the unwrapped cell and fraction of ``xi`` and the phase
   ``e^{2 pi i f_s tt}``, from exact fma products) in
   :func:`prepare_on_device`; elsewhere the same arrays from NumPy
   (:func:`prepare`, :func:`upload_points`).
2. :func:`spread`: the ES kernel onto the periodic fine grid at harmonic 1
   (data, window) and 2 (window): on GPUs a gather, one work-item per cell; on
   CPUs point by point, one work-item per block of cells, with the kernel's
   values from its piecewise polynomial (:func:`es_polynomial`,
   ``SPREAD_OPTIONS``); a scatter for objects of few points on large grids.
3. The FFT of every grid row (``clperiod.engine.fft.fft_inplace``).
4. :func:`power`: the ``nf`` central modes divided by the kernel's Fourier
   transform (:func:`correction_factors`), then the power of the direct
   kernel's normal equations; top-k peaks on the device.

The ES kernel's width and shape follow FINUFFT's legacy rules
(:func:`es_kernel_params`) for the transforms' tolerance ``eps *
TRANSFORM_MARGIN``; the grid convention (cell ``l`` at ``x = 2 pi l / n_grid``,
no half-box shift) is that of ``tests/reference/nufft.py``.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clperiod.catalog import Catalog, Status
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo, get_queue, upload
from clperiod.engine.fft import fft_inplace
from clperiod.engine.planner import Buffer
from clperiod.engine.staging import Staging
from clperiod.grid import FrequencyGrid
from clperiod.periodograms.inputs import segment_reduce
from clperiod.periodograms.standardize import standardize

__all__ = [
    "BatchPeaks",
    "GridFFT",
    "NufftPlan",
    "DevicePoints",
    "PreparedPoints",
    "batch_buffers",
    "clear_for_scatter",
    "correction_factors",
    "es_kernel_params",
    "es_polynomial",
    "fine_grid_size",
    "grid_bytes",
    "kernel_fourier_transform",
    "one_term_transforms",
    "periodogram",
    "polynomial_lanes",
    "power",
    "prepare",
    "prepare_on_device",
    "quadrature",
    "scatters",
    "Transforms",
    "search",
    "search_with",
    "spread",
    "spread_harmonic",
    "time_sorted",
    "upload_points",
]

Normalization = Literal["standard", "model", "log", "psd"]
Precision = Literal["fp64", "fp32"]

#: Largest kernel width in fine-grid cells (FINUFFT's ``MAX_NSPREAD``).
MAX_WIDTH = 16
#: Gauss-Legendre nodes of :func:`kernel_fourier_transform` (30 already reach rounding).
QUADRATURE_NODES = 80
#: A batch spreads by scatter when its longest object's points times the kernel
#: width, times this, are at most the fine grid's cells (:func:`scatters`).
SCATTER_RATIO = 8
#: On GPUs a batch scatters only where its longest object's points times this
#: are at most the cells of all its objects: a scattered point takes one
#: work-item about 1.5e-5 s, a gathered cell about 2e-10 s per object (H100).
GPU_SCATTER_RATIO = 100_000
#: Modes per block of the host quadrature (a block x nodes temporary).
_QUADRATURE_BLOCK = 1 << 16
#: Default accuracy of the powers, relative to the peak, by ``fp64``.
DEFAULT_EPS = {True: 1e-9, False: 1e-5}
#: The transforms' tolerance is ``eps`` times this, by ``fp64``: their errors
#: reach the powers amplified by near-degenerate normal equations (short light
#: curves, the lowest frequencies), by up to ~300 at the default.
TRANSFORM_MARGIN = {True: 1e-3, False: 1e-2}
#: Work-group size of the kernels on GPUs and on other devices.
WORK_GROUP = {"gpu": 128, "other": 16}
#: Periodograms longer than this are searched for peaks in chunks of it (one
#: work-group each), whose peaks the host merges.
PEAK_CHUNK = 1 << 16
#: Work-group size of ``nufft_prepare`` (one group per object) and of the
#: kernels of ``cl_kernels/nufft_reduce.mako``.
PREPARE_WG = {"gpu": 256, "other": 16}
#: A batch with an object longer than this reduces the objects' statistics in
#: chunks of :data:`SPLIT_ROWS` rows, one work-group each (``nufft_reduce.mako``).
LONG_OBJECT = 1 << 16
#: Rows per work-group of ``nufft_reduce.mako``, on GPUs and on other devices.
SPLIT_ROWS = {"gpu": 1 << 11, "other": 1 << 14}
#: Whether each work-item of ``nufft_prepare`` reads a run of consecutive rows
#: (CPU caches), by kind of device, else every work-group-th row (coalesced).
PREPARE_CONTIGUOUS = {"gpu": False, "other": True}
#: How each kind of device spreads (:func:`spread_harmonic`): ``horner``, the
#: kernel values from :func:`es_polynomial` instead of exp and sqrt (fp64 only:
#: evaluated in float32 the polynomial misses the fp32 bound on short light
#: curves, 2.5e-5 of the peak for 10 points); ``blocks``,
#: the point-major ``nufft_blocks_*`` kernels instead of the per-cell gather
#: (devices with fp64). The GPU choice is unmeasured: the kernels as before.
SPREAD_OPTIONS = {
    "gpu": {"horner": False, "blocks": False},
    "other": {"horner": True, "blocks": True},
}
#: Fine-grid cells per work-item of the ``nufft_blocks_*`` kernels.
SPREAD_BLOCK = 512
#: A run of consecutive work-items of ``nufft_blocks_*`` takes blocks from this
#: many places of the grid (``cl_kernels/nufft.mako``): CPU runtimes hand each
#: thread such runs, and the points of a light curve fill a run of blocks.
BLOCK_INTERLEAVE = 16
#: The degree of :func:`es_polynomial` is the kernel's width plus this.
POLYNOMIAL_EXTRA_DEGREE = 1
#: The largest float64 below 1: a cell fraction never reaches 1.
_BELOW_ONE = float(np.nextafter(1.0, 0.0))
#: Veltkamp's splitting constant for float64 (2**27 + 1).
_SPLITTER = 134217729.0


# {{{ the ES kernel


def es_kernel_params(eps: float, upsampfac: float, fp64: bool = True) -> tuple[int, float]:
    """Width ``w`` (cells) and shape ``beta`` of the ES kernel for a tolerance.

    ``eps`` is first raised to the machine epsilon of the precision. For
    ``upsampfac == 2``: ``w = ceil(log10(10 / eps))``, ``beta = 2.30 w`` (2.20 w,
    2.26 w, 2.38 w for w = 2, 3, 4); otherwise ``w = ceil(ln(1 / eps) / (pi
    sqrt(1 - 1 / upsampfac)))`` and ``beta = 0.97 pi (1 - 1 / (2 upsampfac)) w``
    (FINUFFT <= 2.4). ``w >= 2``; a width above ``MAX_WIDTH`` is clipped with
    a ``RuntimeWarning`` (the tolerance is then not reached).

    Raises
    ------
    ValueError
        ``eps`` not a positive finite number, or ``upsampfac`` not finite and > 1.
    """
    eps, upsampfac = float(eps), float(upsampfac)
    if not (math.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    if not (math.isfinite(upsampfac) and upsampfac > 1):
        raise ValueError(f"upsampfac must be a finite number > 1, got {upsampfac!r}")
    eps = max(eps, float(np.finfo(np.float64 if fp64 else np.float32).eps))
    if upsampfac == 2.0:
        width = max(2, math.ceil(math.log10(10.0 / eps)))
    else:
        width = max(2, math.ceil(math.log(1.0 / eps) / (math.pi * math.sqrt(1 - 1 / upsampfac))))
    if width > MAX_WIDTH:
        warnings.warn(
            f"eps={eps:g} at upsampfac={upsampfac:g} needs a kernel of {width} cells; "
            f"clipped to {MAX_WIDTH}, so the tolerance is not reached",
            RuntimeWarning,
            stacklevel=2,
        )
        width = MAX_WIDTH
    if upsampfac == 2.0:
        beta_per_cell = {2: 2.20, 3: 2.26, 4: 2.38}.get(width, 2.30)
    else:
        beta_per_cell = 0.97 * math.pi * (1 - 1 / (2 * upsampfac))
    return width, beta_per_cell * width


def polynomial_lanes(width: int) -> int:
    """Columns of :func:`es_polynomial`: the vector width (4, 8 or 16) of the
    kernels that evaluate every interval at once, at least ``width``."""
    return next(lanes for lanes in (4, 8, 16) if lanes >= width)


@functools.cache
def es_polynomial(width: int, beta: float) -> np.ndarray:
    """The ES kernel as a polynomial on each unit interval of its support.

    Row ``k``, column ``i < width`` of the result is the coefficient of ``s**k``
    of the kernel on interval ``i``: ``phi(2 d / w)`` at ``d = i + (s + 1) / 2
    - w / 2`` for ``s`` in ``[-1, 1]``; columns ``>= width`` (up to
    :func:`polynomial_lanes`) are zero. The degree is ``width +
    POLYNOMIAL_EXTRA_DEGREE``: Chebyshev interpolation in float64, whose error
    is about ``e^-beta / 2``, the size of the kernel's own cut at ``|d| = w / 2``
    (read-only).
    """
    degree = width + POLYNOMIAL_EXTRA_DEGREE
    nodes = np.cos(np.pi * (np.arange(degree + 1) + 0.5) / (degree + 1))
    coefficients = np.zeros((degree + 1, polynomial_lanes(width)))
    for interval in range(width):
        z = (2 * interval + nodes + 1 - width) / width
        values = np.exp(-beta * z * z / (1 + np.sqrt(np.maximum(0.0, 1 - z * z))))
        chebyshev = np.polynomial.chebyshev.chebfit(nodes, values, degree)
        coefficients[:, interval] = np.polynomial.chebyshev.cheb2poly(chebyshev)
    coefficients.setflags(write=False)
    return coefficients


def _next_smooth_even(n: int) -> int:
    """Smallest even integer ``>= n`` whose only prime factors are 2, 3 and 5."""
    m = max(2, n + n % 2)
    while True:
        rest = m
        for p in (2, 3, 5):
            while rest % p == 0:
                rest //= p
        if rest == 1:
            return m
        m += 2


def fine_grid_size(n_modes: int, upsampfac: float, width: int) -> int:
    """Fine-grid cells: the next 2-3-5-smooth even integer ``>= max(ceil(upsampfac
    n_modes), 2 width)``."""
    return _next_smooth_even(max(math.ceil(upsampfac * n_modes), 2 * width))


@functools.cache
def _quadrature_rule(n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre angles on ``[0, pi/2]`` and their weights on ``[-1, 1]``."""
    nodes, weights = np.polynomial.legendre.leggauss(n_nodes)
    return 0.25 * np.pi * (nodes + 1), weights


def kernel_fourier_transform(theta: np.ndarray, width: int, beta: float) -> np.ndarray:
    """Fourier transform ``psi(theta)`` of the ES kernel in cell units (real, even).

    ``psi(theta) = integral_{|u| <= w/2} phi(2 u / w) e^{i theta u} du``; with
    ``u = (w / 2) sin(a)`` the integrand ``e^{beta (cos a - 1)} cos(theta w sin(a) / 2)
    cos(a)`` on ``[0, pi/2]`` is analytic, and ``QUADRATURE_NODES``
    Gauss-Legendre nodes converge to rounding: ``psi(theta) = sum_q c_q
    cos(theta x_q)`` with the nodes and weights of :func:`quadrature`.
    """
    nodes, weights = quadrature(width, beta)
    theta = np.asarray(theta, dtype=np.float64).ravel()
    psi = np.empty_like(theta)
    for lo in range(0, theta.size, _QUADRATURE_BLOCK):  # bounded temporaries
        block = theta[lo : lo + _QUADRATURE_BLOCK]
        psi[lo : lo + block.size] = np.cos(np.multiply.outer(block, nodes)) @ weights
    return psi


def quadrature(width: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``x_q = (w / 2) sin(a_q)`` and weights ``c_q`` of
    :func:`kernel_fourier_transform`'s quadrature."""
    angle, weights = _quadrature_rule(QUADRATURE_NODES)
    integrand = np.exp(beta * (np.cos(angle) - 1)) * np.cos(angle)
    return 0.5 * width * np.sin(angle), 0.25 * np.pi * width * weights * integrand


# }}}

# {{{ plan


@dataclass(frozen=True)
class NufftPlan:
    """The transforms of one-term periodograms on a uniform grid.

    Attributes
    ----------
    grid : FrequencyGrid
        The frequencies ``fmin + m df``, ``m < nf``.
    fp64 : bool
        Kernel precision (strengths, fractions and sums in float64, else float32).
    eps : float
        Requested accuracy of the powers, relative to the peak; the transforms
        are made to ``eps * TRANSFORM_MARGIN[fp64]``.
    upsampfac : float
        Fine-grid cells per mode.
    width, beta : int, float
        The ES kernel (:func:`es_kernel_params`).
    n_grid : int
        Fine-grid cells (:func:`fine_grid_size`).
    """

    grid: FrequencyGrid
    fp64: bool
    eps: float
    upsampfac: float
    width: int
    beta: float
    n_grid: int

    @classmethod
    def build(
        cls,
        grid: FrequencyGrid,
        precision: Precision = "fp64",
        eps: float | None = None,
        upsampfac: float = 2.0,
    ) -> NufftPlan:
        """The plan of ``grid``; ``eps`` defaults to 1e-9 (fp64) or 1e-5 (fp32)."""
        if precision not in ("fp64", "fp32"):
            raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
        fp64 = precision == "fp64"
        eps = DEFAULT_EPS[fp64] if eps is None else float(eps)
        width, beta = es_kernel_params(eps * TRANSFORM_MARGIN[fp64], upsampfac, fp64)
        n_grid = fine_grid_size(grid.nf, upsampfac, width)
        return cls(grid, fp64, eps, float(upsampfac), width, beta, n_grid)

    @property
    def dtype(self) -> type[np.floating]:
        """Real type of the kernels."""
        return np.float64 if self.fp64 else np.float32

    @property
    def complex_dtype(self) -> type[np.complexfloating]:
        """Complex type of the grids and strengths (interleaved real pairs)."""
        return np.complex128 if self.fp64 else np.complex64

    @property
    def shift_frequency(self) -> float:
        """``fmin + (nf // 2) df``: the frequency of mode 0."""
        return self.grid.fmin + (self.grid.nf // 2) * self.grid.df

    @property
    def degenerate(self) -> float:
        """Relative size below which a normal-equation column counts as vanished:
        the transforms' tolerance, at least 64 machine epsilons."""
        return max(self.eps * TRANSFORM_MARGIN[self.fp64], 64 * float(np.finfo(self.dtype).eps))


def correction_factors(plan: NufftPlan, fft_scale: float = 1.0) -> np.ndarray:
    """``1 / (psi(2 pi k / n_grid) fft_scale)`` of modes ``k = m - nf // 2``, ``m < nf``.

    ``fft_scale`` is the factor of the FFT's output over the unnormalised sum
    (``1 / n_grid`` for a normalised backward transform).
    """
    return _correction_factors(
        plan.grid.nf, plan.n_grid, plan.width, plan.beta, fft_scale, np.dtype(plan.dtype).str
    )


@functools.lru_cache(maxsize=8)
def _correction_factors(
    nf: int, n_grid: int, width: int, beta: float, fft_scale: float, dtype: str
) -> np.ndarray:
    """:func:`correction_factors`, kept for the grids of the last calls (a
    quadrature over every mode: the largest host cost of a call), read-only."""
    k = np.arange(nf) - nf // 2
    psi = kernel_fourier_transform(2 * np.pi * k / n_grid, width, beta)
    factors = (1.0 / (psi * fft_scale)).astype(dtype)
    factors.setflags(write=False)
    return factors


# }}}

# {{{ preparation


def _two_product(a: float, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``a b = p + e`` exactly (Dekker's product with Veltkamp's splitting)."""
    p = a * b
    scaled_a, scaled_b = _SPLITTER * a, _SPLITTER * b
    a_hi = scaled_a - (scaled_a - a)
    b_hi = scaled_b - (scaled_b - b)
    a_lo, b_lo = a - a_hi, b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _turns(frequency: float, tt: np.ndarray) -> np.ndarray:
    """``frequency * tt`` less its nearest integer, in ``[-1/2, 1/2]``, from the exact product."""
    p, e = _two_product(frequency, tt)
    r = (p - np.rint(p)) + e
    return r - np.rint(r)


def _cell_coordinates(step: float, tt: np.ndarray, n_grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Unwrapped cells (int64) and fractions (``[0, 1)``) of ``xi = n_grid step tt``,
    from exact products (the arithmetic of ``nufft_prepare``)."""
    p, e = _two_product(step, tt)
    q, q_err = _two_product(float(n_grid), p)
    cell = np.floor(q)
    fraction = (q - cell) + (q_err + n_grid * e)
    under, over = fraction < 0, fraction >= 1
    cell[under] -= 1
    fraction[under] += 1
    cell[over] += 1
    fraction[over] -= 1
    return cell.astype(np.int64), fraction


def time_sorted(catalog: Catalog) -> Catalog:
    """``catalog`` with each object's rows in ascending time (itself if they are:
    :attr:`clperiod.Catalog.time_ordered`)."""
    if catalog.time_ordered:
        return catalog
    owners = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
    order = np.lexsort((catalog.t, owners))
    return dataclasses.replace(
        catalog,
        t=catalog.t[order],
        y=catalog.y[order],
        dy=None if catalog.dy is None else catalog.dy[order],
    )


@dataclass(frozen=True)
class PreparedPoints:
    """The spreading inputs of a batch, computed on the host (:func:`prepare`).

    Rows are the catalog's, in ascending time within each object (every
    object keeps its rows; those of objects that are not OK are zero and
    not spread).

    Attributes
    ----------
    status : ndarray of int8
        Per object: OK, TOO_FEW_POINTS or ZERO_VARIANCE.
    starts, n_points : ndarray of int32
        Per object the first row and the rows spread (0 if not OK).
    cells : ndarray of int64
        ``floor(xi)`` of ``xi = n_grid df (t - t_0)``, unwrapped (``t_0``
        the object's first time).
    fractions : ndarray
        ``xi - cell`` in ``[0, 1)`` (kernel precision).
    weights, weighted_values : ndarray
        ``wn`` and ``wn (u - r) 2^-f`` (kernel precision; ``clperiod.periodograms.standardize``).
    phases : ndarray
        ``e^{2 pi i f_s (t - t_0)}`` (complex, kernel precision).
    yy : ndarray
        Per object ``sum wn (u - r)^2 4^-f`` (NaN if not OK; kernel precision).
    psd_scale : ndarray of float64
        Per object ``1/2 sum dy^-2 (y - ybar)^2`` in the data's units (0 if not OK).
    """

    status: np.ndarray
    starts: np.ndarray
    n_points: np.ndarray
    cells: np.ndarray
    fractions: np.ndarray
    weights: np.ndarray
    weighted_values: np.ndarray
    phases: np.ndarray
    yy: np.ndarray
    psd_scale: np.ndarray


def prepare(
    catalog: Catalog, plan: NufftPlan, *, fit_mean: bool, center_data: bool, use_dy: bool
) -> PreparedPoints:
    """The spreading inputs of every object of ``catalog`` on the host (the
    work of ``nufft_prepare``, for devices without fp64).

    Parameters
    ----------
    catalog
        Validated light curves (finite values, ``dy > 0``), rows in ascending
        time within each object (:func:`time_sorted`), at raw epochs; at most
        ``2**31 - 1`` rows (int32 point indices).
    plan
        Grid, precision and kernel.
    fit_mean, center_data
        The model, as in astropy; values are centred when either is set.
    use_dy
        Weigh by ``dy**-2`` (else every point weighs 1).
    """
    _check_rows(catalog)
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < (4 if fit_mean else 3)] = Status.TOO_FEW_POINTS
    values = standardize(
        catalog.y, catalog.dy if use_dy else None, catalog.offsets, center=fit_mean or center_data
    )
    status[(status == Status.OK) & values.flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    keep = np.repeat(ok, catalog.lengths)
    tt = catalog.t - np.repeat(
        segment_reduce(np.minimum, catalog.t, catalog.offsets), catalog.lengths
    )
    tt[~keep] = 0.0
    cells, fractions = _cell_coordinates(plan.grid.df, tt, plan.n_grid)
    below_one = np.nextafter(plan.dtype(1), plan.dtype(0))
    return PreparedPoints(
        status=status,
        starts=catalog.offsets[:-1].astype(np.int32),
        n_points=np.where(ok, catalog.lengths, 0).astype(np.int32),
        cells=cells,
        fractions=np.minimum(fractions.astype(plan.dtype), below_one),
        weights=np.where(keep, values.wn, 0.0).astype(plan.dtype),
        weighted_values=np.where(keep, values.wn * values.u, 0.0).astype(plan.dtype),
        phases=np.exp(2j * np.pi * _turns(plan.shift_frequency, tt)).astype(plan.complex_dtype),
        yy=np.where(ok, values.yy, np.nan).astype(plan.dtype),
        psd_scale=np.where(ok, 0.5 * values.weighted_sum_of_squares(), 0.0),
    )


def _check_rows(catalog: Catalog) -> None:
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the NUFFT kernels index at most "
            f"{np.iinfo(np.int32).max} points per batch"
        )


@dataclass
class DevicePoints:
    """The spreading inputs of a batch on the device.

    The buffers are :class:`PreparedPoints`'s arrays (plus the per-object
    ``psd`` factor in kernel precision); ``status`` and ``psd_scale`` are
    host arrays, filled once the queue has passed ``events``.
    """

    n_objects: int
    fit_mean: bool
    starts: cl.MemoryObjectHolder
    n_points: cl.MemoryObjectHolder
    cells: cl.MemoryObjectHolder
    fractions: cl.MemoryObjectHolder
    weights: cl.MemoryObjectHolder
    weighted_values: cl.MemoryObjectHolder
    phases: cl.MemoryObjectHolder
    yy: cl.MemoryObjectHolder
    status: np.ndarray
    psd_scale: np.ndarray
    longest: int = 0
    events: list[cl.Event] = field(default_factory=list)

    @property
    def n_transforms(self) -> int:
        """Transforms per object: data, window (with ``fit_mean``) and doubled window."""
        return 3 if self.fit_mean else 2


def upload_points(staging: Staging, prepared: PreparedPoints, fit_mean: bool) -> DevicePoints:
    """:class:`DevicePoints` of host-prepared points (``staging`` sends them)."""
    return DevicePoints(
        n_objects=len(prepared.status),
        fit_mean=fit_mean,
        starts=staging.upload(prepared.starts),
        n_points=staging.upload(prepared.n_points),
        cells=staging.upload(prepared.cells),
        fractions=staging.upload(prepared.fractions),
        weights=staging.upload(prepared.weights),
        weighted_values=staging.upload(prepared.weighted_values),
        phases=staging.upload(prepared.phases),
        yy=staging.upload(prepared.yy),
        status=prepared.status,
        psd_scale=prepared.psd_scale,
        longest=int(prepared.n_points.max(initial=0)),
    )


def _device_kind(queue: cl.CommandQueue) -> str:
    """The key of the per-device-kind constants: "gpu" or "other"."""
    return "gpu" if queue.device.type & cl.device_type.GPU else "other"


def _prepare_work_group(queue: cl.CommandQueue) -> int:
    """``nufft_prepare``'s work-group: :data:`PREPARE_WG`."""
    return PREPARE_WG[_device_kind(queue)]


def _prepare_parameters(fit_mean: bool, center_data: bool, use_dy: bool) -> dict:
    """The render parameters of the model shared by ``nufft_prepare`` and
    ``nufft_reduce.mako``."""
    return {
        "use_dy": use_dy,
        "center": fit_mean or center_data,
        "min_points": 4 if fit_mean else 3,
        "ok": int(Status.OK),
        "too_few": int(Status.TOO_FEW_POINTS),
        "zero_variance": int(Status.ZERO_VARIANCE),
    }


def _statistics_chunks(
    queue: cl.CommandQueue, lengths: np.ndarray, min_points: int
) -> np.ndarray | None:
    """The first chunk of each object of a batch, ``(n_objects + 1,)`` int32,
    when its statistics are reduced in chunks (``nufft_reduce.mako``: an
    object longer than :data:`LONG_OBJECT` rows), else None.

    Objects of at least ``min_points`` rows get ``ceil(rows /``
    :data:`SPLIT_ROWS` ``)`` chunks, the others none.
    """
    if lengths.size == 0 or int(lengths.max()) <= LONG_OBJECT:
        return None
    rows = SPLIT_ROWS[_device_kind(queue)]
    chunks = np.where(lengths >= min_points, -(-lengths // rows), 0)
    return np.concatenate(([0], np.cumsum(chunks))).astype(np.int32)


def _queue_split_statistics(
    queue: cl.CommandQueue,
    staging: Staging,
    plan: NufftPlan,
    parameters: dict,
    raw: list[cl.MemoryObjectHolder],
    objects: tuple[cl.MemoryObjectHolder, cl.MemoryObjectHolder, int],
    chunks: tuple[cl.MemoryObjectHolder, int],
    outputs: tuple[cl.MemoryObjectHolder, ...],
) -> None:
    """Queue the kernels of ``nufft_reduce.mako``: ``nufft_prepare``'s outputs
    in many work-groups per object.

    ``raw``: the device ``t, y`` (and ``dy``); ``objects``: the first rows,
    rows and number of the objects; ``chunks``: the first chunk of each
    object (:func:`_statistics_chunks`) and their number; ``outputs``: the
    buffers of ``nufft_prepare``'s outputs, in its order.
    """
    wg = _prepare_work_group(queue)
    extremes, sums, moments, finish = kernels.get_kernels(
        queue.context,
        "nufft_reduce",
        (
            "nufft_reduce_extremes",
            "nufft_reduce_sums",
            "nufft_reduce_moments",
            "nufft_reduce_finish",
        ),
        real="double" if plan.fp64 else "float",
        wg=wg,
        **parameters,
    )
    starts, lengths, n_obj = objects
    chunk_start, n_chunks = chunks
    partials = [staging.buffer(8 * width * max(1, n_chunks)) for width in (2, 2, 3)]
    rows = (*raw[1:], starts, lengths, chunk_start, np.int32(n_obj))
    if n_chunks:
        groups = ((n_chunks * wg,), (wg,))
        extremes(queue, *groups, *rows, partials[0])
        sums(queue, *groups, *rows, *partials[:2])
        moments(queue, *groups, *rows, *partials)
    finish(
        queue, (n_obj * wg,), (wg,), *raw[:2], starts, lengths, chunk_start, *partials, *outputs
    )


def prepare_on_device(
    staging: Staging,
    queue: cl.CommandQueue,
    catalog: Catalog,
    plan: NufftPlan,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
) -> DevicePoints:
    """Upload the raw ``t, y, dy`` and queue ``nufft_prepare`` and
    ``nufft_points`` (a device with fp64), which do :func:`prepare`'s work
    (``staging`` is sent here: upload nothing else through it).

    Parameters are those of :func:`prepare`.
    """
    _check_rows(catalog)
    wg = _prepare_work_group(queue)
    parameters = _prepare_parameters(fit_mean, center_data, use_dy)
    prepare_kernel, points_kernel = kernels.get_kernels(
        queue.context,
        "nufft",
        ("nufft_prepare", "nufft_points"),
        real="double" if plan.fp64 else "float",
        stage="prepare",
        wg=wg,
        **parameters,
        contiguous=PREPARE_CONTIGUOUS[_device_kind(queue)],
    )
    raw = [staging.upload(catalog.t), staging.upload(catalog.y)]
    if use_dy:
        assert catalog.dy is not None
        raw.append(staging.upload(catalog.dy))
    n_obj, n_rows = catalog.n_objects, int(catalog.offsets[-1])
    real = np.dtype(plan.dtype).itemsize
    points = DevicePoints(
        n_objects=n_obj,
        fit_mean=fit_mean,
        starts=staging.upload(catalog.offsets[:-1].astype(np.int32)),
        n_points=staging.buffer(4 * n_obj),
        cells=staging.buffer(8 * n_rows),
        fractions=staging.buffer(real * n_rows),
        weights=staging.buffer(real * n_rows),
        weighted_values=staging.buffer(real * n_rows),
        phases=staging.buffer(2 * real * n_rows),
        yy=staging.buffer(real * n_obj),
        status=np.empty(0, np.int8),
        psd_scale=np.empty(0),
        longest=int(catalog.lengths.max(initial=0)),
    )
    lengths = staging.upload(catalog.lengths.astype(np.int32))
    chunk_starts = _statistics_chunks(queue, catalog.lengths, parameters["min_points"])
    chunks = (
        None if chunk_starts is None else (staging.upload(chunk_starts), int(chunk_starts[-1]))
    )
    status_slot = staging.result((n_obj,), np.int8)
    psd_slot = staging.result((n_obj,), np.float64)
    stats, scale, psd, status = (staging.buffer(n * n_obj) for n in (8 * 7, real, 8, 1))
    staging.send(queue)
    if n_obj and chunks is not None:
        _queue_split_statistics(
            queue,
            staging,
            plan,
            parameters,
            raw,
            (points.starts, lengths, n_obj),
            chunks,
            (stats, points.n_points, points.yy, scale, psd, status),
        )
    elif n_obj:
        prepare_kernel(
            queue,
            (n_obj * wg,),
            (wg,),
            *raw,
            points.starts,
            lengths,
            stats,
            points.n_points,
            points.yy,
            scale,
            psd,
            status,
        )
    if n_rows:
        row_wg = _work_group(queue)
        points_kernel(
            queue,
            (-(-n_rows // row_wg) * row_wg,),
            (row_wg,),
            *raw,
            points.starts,
            np.int32(n_obj),
            np.int32(n_rows),
            points.n_points,
            stats,
            np.float64(plan.grid.df),
            np.float64(plan.n_grid),
            np.float64(plan.shift_frequency),
            points.cells,
            points.fractions,
            points.weights,
            points.weighted_values,
            points.phases,
        )
    points.status, points.psd_scale = staging.results[status_slot], staging.results[psd_slot]
    points.events += [
        cl.enqueue_copy(queue, points.status, status, is_blocking=False),
        cl.enqueue_copy(queue, points.psd_scale, psd, is_blocking=False),
    ]
    return points


# }}}

# {{{ device stages


class GridFFT(Protocol):
    """The FFT stage: ``scale * sum_l g[l] e^{+2 pi i k l / n_grid}`` of every row.

    ``grid`` holds ``n_batch`` rows of ``n_grid`` interleaved complex values
    (the plan's complex type), one after the other (batch stride ``n_grid``);
    the result is a buffer of the same layout (it may be ``grid`` itself),
    whose commands are queued on ``queue`` or done when it returns.
    ``scale`` is the ``fft_scale`` given to :func:`power`.
    """

    def __call__(
        self, queue: cl.CommandQueue, grid: cl.Buffer, n_batch: int, n_grid: int
    ) -> cl.Buffer: ...


def _work_group(queue: cl.CommandQueue) -> int:
    return WORK_GROUP[_device_kind(queue)]


def _range(n: int, n_objects: int, wg: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Global and local sizes of a (n items, objects) launch."""
    return (-(-n // wg) * wg, n_objects), (wg, 1)


def _spread_options(queue: cl.CommandQueue) -> dict[str, bool]:
    """``SPREAD_OPTIONS`` of the queue's device (no blocks without fp64)."""
    options = dict(SPREAD_OPTIONS[_device_kind(queue)])
    options["blocks"] = options["blocks"] and bool(queue.device.double_fp_config)
    return options


def _spread_kernel(queue: cl.CommandQueue, plan: NufftPlan, vectors: str, way: str) -> cl.Kernel:
    """``nufft_<way>_<vectors>``: ``way`` "spread" (the gather), "scatter" or
    "blocks", ``vectors`` "data_window", "data" or "window"."""
    options = _spread_options(queue)
    kernel_names = tuple(
        f"nufft_{kind}_{v}"
        for v in ("data_window", "data", "window")
        for kind in ("spread", "scatter", "blocks")
        if kind != "blocks" or options["blocks"]
    )
    found = kernels.get_kernels(
        queue.context,
        "nufft",
        kernel_names,
        real="double" if plan.fp64 else "float",
        stage="spread",
        horner=options["horner"] and plan.fp64,
        lanes=polynomial_lanes(plan.width)
        if (options["horner"] and plan.fp64) or options["blocks"]
        else None,
        block=SPREAD_BLOCK if options["blocks"] else 0,
        interleave=BLOCK_INTERLEAVE if options["blocks"] else None,
    )
    return dict(zip(kernel_names, found, strict=True))[f"nufft_{way}_{vectors}"]


#: Device copies of :func:`es_polynomial`, per (context, width, beta, type).
_DEVICE_POLYNOMIALS: collections.OrderedDict[tuple, cl.Buffer] = collections.OrderedDict()
_MAX_DEVICE_POLYNOMIALS = 8
_polynomials_lock = threading.Lock()


def _device_polynomial(queue: cl.CommandQueue, plan: NufftPlan) -> cl.Buffer:
    """:func:`es_polynomial` of the plan's kernel on the device of ``queue``, in
    the plan's precision, kept for the kernels of the last calls."""
    key = (queue.context, plan.width, plan.beta, plan.fp64)
    with _polynomials_lock:
        buffer = _DEVICE_POLYNOMIALS.get(key)
        if buffer is None:
            coefficients = es_polynomial(plan.width, plan.beta).astype(plan.dtype)
            buffer = _DEVICE_POLYNOMIALS[key] = upload(queue, coefficients)
            while len(_DEVICE_POLYNOMIALS) > _MAX_DEVICE_POLYNOMIALS:
                _DEVICE_POLYNOMIALS.popitem(last=False)
        _DEVICE_POLYNOMIALS.move_to_end(key)
        return buffer


def _power_kernel(
    queue: cl.CommandQueue,
    plan: NufftPlan,
    fit_mean: bool,
    normalization: str,
    write_sums: bool,
) -> cl.Kernel:
    (kernel,) = kernels.get_kernels(
        queue.context,
        "nufft",
        ("nufft_power",),
        real="double" if plan.fp64 else "float",
        stage="power",
        fit_mean=fit_mean,
        normalization=normalization,
        write_sums=write_sums,
    )
    return kernel


#: Device copies of correction factors, per (context, grid, kernel, scale, type).
_DEVICE_CORRECTIONS: collections.OrderedDict[tuple, cl.Buffer] = collections.OrderedDict()
_MAX_DEVICE_CORRECTIONS = 4
_corrections_lock = threading.Lock()


def _device_correction(queue: cl.CommandQueue, plan: NufftPlan, fft_scale: float) -> cl.Buffer:
    """:func:`correction_factors` on the device of ``queue``, kept for the
    grids of the last calls (an upload of ``nf`` values otherwise)."""
    key = (queue.context, plan.grid.nf, plan.n_grid, plan.width, plan.beta, fft_scale, plan.fp64)
    with _corrections_lock:
        buffer = _DEVICE_CORRECTIONS.get(key)
        if buffer is None:
            buffer = (
                _correction_on_device(queue, plan, fft_scale)
                if queue.device.double_fp_config
                else upload(queue, correction_factors(plan, fft_scale))
            )
            _DEVICE_CORRECTIONS[key] = buffer
            while len(_DEVICE_CORRECTIONS) > _MAX_DEVICE_CORRECTIONS:
                _DEVICE_CORRECTIONS.popitem(last=False)
        _DEVICE_CORRECTIONS.move_to_end(key)
        return buffer


def _correction_on_device(queue: cl.CommandQueue, plan: NufftPlan, fft_scale: float) -> cl.Buffer:
    """:func:`correction_factors` computed by ``nufft_correction`` (a device
    with fp64): no host quadrature over every mode and no upload."""
    (kernel,) = kernels.get_kernels(
        queue.context,
        "nufft",
        ("nufft_correction",),
        real="double" if plan.fp64 else "float",
        stage="correction",
    )
    nodes, weights = (upload(queue, a) for a in quadrature(plan.width, plan.beta))
    nf = plan.grid.nf
    factors = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nf * np.dtype(plan.dtype).itemsize)
    wg = _work_group(queue)
    kernel(
        queue,
        (-(-nf // wg) * wg,),
        (wg,),
        nodes,
        weights,
        np.int32(QUADRATURE_NODES),
        np.int64(nf),
        np.float64(plan.n_grid),
        np.float64(fft_scale),
        factors,
    ).wait()  # other queues of the context may read the cached factors next
    return factors


def _check_normalization(normalization: str) -> None:
    if normalization not in ("standard", "model", "log", "psd"):
        raise ValueError(
            f"normalization must be 'standard', 'model', 'log' or 'psd', got {normalization!r}"
        )


def grid_bytes(points: DevicePoints, plan: NufftPlan, n_rows: int = 0) -> int:
    """Bytes of :func:`spread`'s fine grids."""
    rows = max(1, n_rows, points.n_objects * points.n_transforms)
    return rows * plan.n_grid * np.dtype(plan.complex_dtype).itemsize


def spread(
    queue: cl.CommandQueue, points: DevicePoints, plan: NufftPlan, grid: cl.MemoryObjectHolder
) -> None:
    """Queue the spreading of the batch's transforms into ``grid`` (stage 2).

    ``grid`` (:func:`grid_bytes`) receives ``(n_objects, n_transforms,
    n_grid)`` interleaved complex values: the data and the window (with
    ``fit_mean``) at ``xi``, the window at ``2 xi``; rows past the batch's
    are left unwritten.
    """
    n_trans = points.n_transforms
    launches = (("data_window" if points.fit_mean else "data", 1, 0), ("window", 2, n_trans - 1))
    clear_for_scatter(queue, points, plan, grid, n_trans)
    for vectors, harmonic, first in launches:
        spread_harmonic(queue, points, plan, grid, vectors, harmonic, n_trans, first)


def scatters(points: DevicePoints, plan: NufftPlan, device: cl.Device) -> bool:
    """Whether the batch spreads by scatter (``nufft_scatter_*``): its longest
    object reaches at most 1 / ``SCATTER_RATIO`` of the grid's cells and, on
    a GPU, its points times ``GPU_SCATTER_RATIO`` are at most the cells
    of all the batch's objects (one work-item scatters an object's points one
    after another, which pays on a GPU only for a few points or many objects)."""
    if points.n_objects == 0 or points.longest * plan.width * SCATTER_RATIO > plan.n_grid:
        return False
    if device.type & cl.device_type.GPU:
        return points.longest * GPU_SCATTER_RATIO <= points.n_objects * plan.n_grid
    return True


def clear_for_scatter(
    queue: cl.CommandQueue,
    points: DevicePoints,
    plan: NufftPlan,
    grid: cl.MemoryObjectHolder,
    n_trans: int,
) -> None:
    """Zero the batch's ``n_trans`` transforms per object in ``grid`` when it
    :func:`scatters` (before any :func:`spread_harmonic` of the batch)."""
    if scatters(points, plan, queue.device):
        size = points.n_objects * n_trans * plan.n_grid * np.dtype(plan.complex_dtype).itemsize
        cl.enqueue_fill_buffer(queue, grid, np.uint32(0), 0, size)


def spread_harmonic(
    queue: cl.CommandQueue,
    points: DevicePoints,
    plan: NufftPlan,
    grid: cl.MemoryObjectHolder,
    vectors: str,
    harmonic: int,
    n_trans: int,
    first: int,
) -> None:
    """Queue ``nufft_spread_<vectors>`` (``data_window``, ``data`` or
    ``window``) of the points at ``harmonic`` times ``xi`` into transforms
    ``first``, ... of the ``n_trans`` of each object in ``grid``; its
    ``nufft_scatter_<vectors>`` twin when the batch :func:`scatters` (``grid``
    zeroed by :func:`clear_for_scatter`), else its point-major
    ``nufft_blocks_<vectors>`` twin where ``SPREAD_OPTIONS`` asks for it."""
    if scatters(points, plan, queue.device):
        way = "scatter"
        global_size: tuple[int, ...] = (points.n_objects,)
        local_size: tuple[int, ...] | None = None
    elif _spread_options(queue)["blocks"]:
        way = "blocks"
        rows = -(-plan.n_grid // (SPREAD_BLOCK * BLOCK_INTERLEAVE))
        global_size, local_size = (rows * BLOCK_INTERLEAVE, points.n_objects), (1, 1)
    else:
        way = "spread"
        global_size, local_size = _range(plan.n_grid, points.n_objects, _work_group(queue))
    _spread_kernel(queue, plan, vectors, way)(
        queue,
        global_size,
        local_size,
        points.starts,
        points.n_points,
        points.cells,
        points.fractions,
        points.weights,
        points.weighted_values,
        points.phases,
        np.int32(harmonic),
        np.int32(plan.n_grid),
        np.int32(plan.width),
        plan.dtype(plan.beta),
        _device_polynomial(queue, plan),
        np.int32(es_polynomial(plan.width, plan.beta).shape[0]),
        np.int32(n_trans),
        np.int32(first),
        grid,
    )


def power(
    queue: cl.CommandQueue,
    modes: cl.MemoryObjectHolder,
    points: DevicePoints,
    plan: NufftPlan,
    out: cl.MemoryObjectHolder,
    normalization: Normalization = "standard",
    fft_scale: float = 1.0,
    sums: cl.MemoryObjectHolder | None = None,
) -> None:
    """Queue the correction and power of the FFT'd grids ``modes`` into ``out`` (stage 4).

    Parameters
    ----------
    modes
        The FFT of :func:`spread`'s grids (:class:`GridFFT`), scaled by ``fft_scale``.
    out
        Receives the powers, ``(n_objects, nf)`` in the plan's precision.
    normalization
        astropy's normalizations; "psd" powers are the standard powers times
        the psd factor of :func:`prepare` in kernel precision.
    sums
        If given, also receives the corrected transforms at the grid
        frequencies, ``(n_objects, n_transforms, nf)`` interleaved complex.
    """
    _check_normalization(normalization)
    if normalization == "psd":
        raise ValueError("power() writes standard powers for 'psd'; scale them on the host")
    kernel = _power_kernel(queue, plan, points.fit_mean, normalization, sums is not None)
    nf = plan.grid.nf
    global_size, local_size = _range(nf, points.n_objects, _work_group(queue))
    kernel(
        queue,
        global_size,
        local_size,
        modes,
        _device_correction(queue, plan, fft_scale),
        points.yy,
        np.int32(nf),
        np.int32(plan.n_grid),
        np.int32(0 if plan.grid.fmin == 0 else -1),
        plan.dtype(plan.degenerate),
        *([sums] if sums is not None else []),
        out,
    )


def periodogram(
    queue: cl.CommandQueue,
    points: DevicePoints,
    plan: NufftPlan,
    fft: GridFFT,
    normalization: Normalization = "standard",
    fft_scale: float = 1.0,
) -> np.ndarray:
    """Spread, ``fft``, correct and power: the ``(n_objects, nf)`` periodograms."""
    psd = normalization == "psd"
    grid = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, grid_bytes(points, plan))
    spread(queue, points, plan, grid)
    modes = fft(queue, grid, points.n_objects * points.n_transforms, plan.n_grid)
    result = np.empty((points.n_objects, plan.grid.nf), dtype=plan.dtype)
    out = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, max(1, result.nbytes))
    power(queue, modes, points, plan, out, "standard" if psd else normalization, fft_scale)
    cl.enqueue_copy(queue, result, out)
    queue.finish()
    if psd:
        with np.errstate(over="ignore", invalid="ignore"):
            result *= points.psd_scale.astype(plan.dtype)[:, None]
    return result


# }}}

# {{{ search of a batch


def batch_buffers(plan: NufftPlan, fit_mean: bool, top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points).

    Per object the fine grids (``n_transforms`` rows of ``n_grid`` complex
    values, twice: the FFT may need as much again, VkFFT's scratch or the host
    transform's output), the ``nf`` powers, the peaks and the per-object
    inputs; per point the raw ``t, y, dy`` and the prepared cells, fractions,
    weights and phases.
    """
    real = np.dtype(plan.dtype).itemsize
    n_trans = 3 if fit_mean else 2
    return [
        Buffer("fine grids", per_item=n_trans * plan.n_grid * 2 * real, count=2),
        Buffer("powers", per_item=plan.grid.nf * real),
        Buffer("peaks", per_item=top_k * (real + 4)),
        Buffer("object inputs", per_item=32 + 2 * real),
        Buffer("points", per_unit=3 * 8 + 8 + 5 * real),
    ]


@dataclass(frozen=True)
class BatchPeaks:
    """The top-k peaks of a batch's objects (:func:`search`).

    Attributes
    ----------
    status : ndarray of int8
        The preparation's per-object status.
    values : ndarray of float64, shape (n_objects, top_k)
        Peak powers, best first (``-inf`` or NaN where there is no peak).
    indices : ndarray of int32, shape (n_objects, top_k)
        Their grid indices (``2**31 - 1``: no peak).
    psd_scale : ndarray of float64
        Per object ``1/2 sum dy^-2 (y - ybar)^2`` in the data's units.
    """

    status: np.ndarray
    values: np.ndarray
    indices: np.ndarray
    psd_scale: np.ndarray


def _top_k_peaks(
    queue: cl.CommandQueue,
    staging: Staging,
    powers: cl.MemoryObjectHolder,
    n_obj: int,
    plan: NufftPlan,
    top_k: int,
    owned: tuple[int, int, int, int] | None = None,
    nf: int | None = None,
) -> Callable[[], tuple[np.ndarray, np.ndarray]]:
    """Queue ``peaks_topk`` (``cl_kernels/peaks.mako``) of every object's
    periodogram, in chunks of :data:`PEAK_CHUNK` bins when longer, and the
    copies of its results; returns the function that merges them (after
    ``queue.finish()``) into the ``(n_obj, top_k)`` values and indices.
    ``owned`` (see :func:`search`) searches a piece of a larger grid whole;
    ``nf``: powers per object, if not the plan's grid's."""
    wg = _work_group(queue)
    nf = plan.grid.nf if nf is None else nf
    chunks = -(-nf // PEAK_CHUNK) if nf > PEAK_CHUNK and owned is None else 1
    (kernel,) = kernels.get_kernels(
        queue.context,
        "peaks",
        ("peaks_topk",),
        real="double" if plan.fp64 else "float",
        wg=wg,
        top_k=top_k,
        split=chunks > 1,
    )
    values = np.empty((n_obj, chunks * top_k), dtype=plan.dtype)
    indices = np.empty((n_obj, chunks * top_k), dtype=np.int32)
    best_val = staging.buffer(values.nbytes)
    best_idx = staging.buffer(indices.nbytes)
    if n_obj:
        if chunks > 1:
            shape: tuple[int, ...] = (PEAK_CHUNK, 0, 0, 0, nf, chunks)
        else:
            shape = (nf, *(owned or (0, 0, nf, nf)))
        kernel(
            queue,
            (n_obj * chunks * wg,),
            (wg,),
            powers,
            *(np.int32(v) for v in shape),
            best_val,
            best_idx,
        )
        staging.events.append(cl.enqueue_copy(queue, values, best_val, is_blocking=False))
        staging.events.append(cl.enqueue_copy(queue, indices, best_idx, is_blocking=False))

    def merged() -> tuple[np.ndarray, np.ndarray]:
        if chunks == 1:
            return values, indices
        # best first; equal values (and -inf: no peak) in grid order; NaN last
        keys = np.where(np.isnan(values), np.inf, -values.astype(np.float64))
        order = np.lexsort((indices, keys), axis=-1)[:, :top_k]
        return np.take_along_axis(values, order, -1), np.take_along_axis(indices, order, -1)

    return merged


def search(
    info: DeviceInfo,
    catalog: Catalog,
    plan: NufftPlan,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
    normalization: Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
    owned: tuple[int, int, int, int] | None = None,
) -> BatchPeaks:
    """Prepare, spread, FFT (``clperiod.engine.fft.fft_inplace``), power and
    top-k peaks of a batch of objects on one device.

    Parameters
    ----------
    catalog
        The batch (validated); rows are sorted in time here where needed.
    fit_mean, center_data, use_dy
        As in :func:`prepare`.
    normalization
        The powers' normalization. psd powers are computed as standard powers
        and scaled by ``psd_scale`` on the host in float64 (peaks) and in the
        plan's precision (``periodograms``), as the direct path does.
    top_k
        Peaks kept per object.
    periodograms
        If given, ``(n_objects, nf)`` host array (plan precision) receiving the
        periodograms.
    n_rows
        Fine-grid rows to transform at least, so that batches of fewer
        objects reuse one FFT plan.
    owned
        For ``plan``'s grid a piece of a larger one: ``(first_bin, own0,
        n_own, nf_all)``, the larger grid's bin of the piece's first, the
        piece's bins whose peaks are searched (the others are their
        neighbours) and the larger grid's size; peak indices are then the
        larger grid's.
    """
    _check_normalization(normalization)
    return search_with(
        info,
        catalog,
        plan,
        one_term_transforms(plan, fit_mean),
        model={"fit_mean": fit_mean, "center_data": center_data, "use_dy": use_dy},
        normalization=normalization,
        top_k=top_k,
        periodograms=periodograms,
        n_rows=n_rows,
        owned=owned,
    )


def one_term_transforms(
    plan: NufftPlan, fit_mean: bool, power_stage: Callable[..., None] | None = None
) -> Transforms:
    """The one-term model's :class:`Transforms` with ``plan``; ``power_stage``
    in place of :func:`power` (same call) if given."""
    return Transforms(
        per_object=3 if fit_mean else 2,
        spread=lambda queue, points, grid: spread(queue, points, plan, grid),
        power=power_stage
        or (lambda queue, grid, points, out, norm: power(queue, grid, points, plan, out, norm)),
    )


@dataclass(frozen=True)
class Transforms:
    """The transforms of a model, for :func:`search_with`.

    Attributes
    ----------
    per_object : int
        Fine-grid rows per object.
    spread : callable
        ``spread(queue, points, grid)`` queues the spreading of every row.
    power : callable
        ``power(queue, grid, points, out, normalization)`` queues the powers
        ("standard", "model" or "log") of the transformed grids into ``out``.
    min_points : int or None
        Fewest points of an object, if the model needs more than
        ``nufft_prepare``'s (others become TOO_FEW_POINTS).
    n_powers : int or None
        Powers per object, if not the plan's grid's ``nf`` (the target
        frequencies of ``clperiod.periodograms.nufft_type3``).
    """

    per_object: int
    spread: Callable[[cl.CommandQueue, DevicePoints, cl.MemoryObjectHolder], None]
    power: Callable[..., None]
    min_points: int | None = None
    n_powers: int | None = None


def search_with(
    info: DeviceInfo,
    catalog: Catalog,
    plan: NufftPlan,
    transforms: Transforms,
    *,
    model: dict[str, bool],
    normalization: str,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
    owned: tuple[int, int, int, int] | None = None,
) -> BatchPeaks:
    """:func:`search` with the transforms of any model (one term here, several
    in ``clperiod.periodograms.nufft_terms``, any frequencies in
    ``clperiod.periodograms.nufft_type3``): prepare (``model``: the keywords of
    :func:`prepare`), spread, FFT, power and top-k peaks."""
    catalog = time_sorted(catalog)
    queue = get_queue(info)
    staging = Staging(info)
    with staging.guard(queue):
        if info.fp64:
            points = prepare_on_device(staging, queue, catalog, plan, **model)
        else:
            points = upload_points(staging, prepare(catalog, plan, **model), model["fit_mean"])
            staging.send(queue)
        n_obj = points.n_objects
        rows = max(1, n_rows, n_obj * transforms.per_object)
        grid = staging.buffer(rows * plan.n_grid * np.dtype(plan.complex_dtype).itemsize)
        transforms.spread(queue, points, grid)
        fft_inplace(queue, cla.Array(queue, (rows, plan.n_grid), plan.complex_dtype, data=grid))
        psd = normalization == "psd"
        nf = plan.grid.nf if transforms.n_powers is None else transforms.n_powers
        powers = staging.buffer(max(1, n_obj * nf) * np.dtype(plan.dtype).itemsize)
        transforms.power(queue, grid, points, powers, "standard" if psd else normalization)
        peaks = _top_k_peaks(queue, staging, powers, n_obj, plan, top_k, owned, nf)
        copies = []  # kept until the queue finishes: a dropped copy event waits, GIL held
        if periodograms is not None and n_obj:
            copies.append(cl.enqueue_copy(queue, periodograms, powers, is_blocking=False))
        queue.finish()
    staging.release()
    status, psd_scale = points.status.copy(), points.psd_scale.copy()
    if transforms.min_points is not None:
        too_few = (status == Status.OK) & (catalog.lengths < transforms.min_points)
        status[too_few] = Status.TOO_FEW_POINTS
        psd_scale[too_few] = 0.0
    values, indices = peaks()
    peak_values = values.astype(np.float64)
    if psd:
        with np.errstate(invalid="ignore", over="ignore"):  # -inf * 0 of objects not OK
            peak_values *= psd_scale[:, None]
            if periodograms is not None:
                periodograms *= psd_scale.astype(plan.dtype)[:, None]
    return BatchPeaks(status, peak_values, indices, psd_scale)


# }}}
