"""Lomb-Scargle periodograms on a uniform grid through type-1 NUFFTs on OpenCL (issue 22).

The one-term sums at ``f_m = fmin + m df`` (``m < nf``) are three type-1
non-uniform FFTs (two with ``fit_mean=False``), mapped as nifty-ls does
(spec ``methods_next.md`` section 1.4): with ``tt = t - min(t)``, points
``x = 2 pi df tt`` and ``2 x``, and the shift ``f_s = fmin + (nf // 2) df``,
the transforms of ``w y e^{2 pi i f_s tt}`` and ``w e^{2 pi i f_s tt}`` at ``x``
and of ``w e^{4 pi i f_s tt}`` at ``2 x`` hold, at mode ``k = m - nf // 2``,
the sums ``sum w y e^{2 pi i f_m tt}``, ``sum w e^{2 pi i f_m tt}`` and
``sum w e^{4 pi i f_m tt}`` (``w`` the normalised weights, ``y`` centred when
the model asks for it).

Stages (the FFT between spreading and power is the caller's, see
:class:`GridFFT`):

1. :func:`prepare` (host, float64): per object the standardised weights and
   values (:func:`~clperiod.periodograms.standardize.standardize`), the cell
   coordinates ``xi = n_grid frac(df tt)`` (``2 df tt`` for the doubled
   window) as an integer cell and a fraction, and the phase-shifted
   strengths; phases and coordinates come from exact products, so they are
   accurate to ~1e-16 cycles or cells however large ``f tt`` is.
2. :func:`spread` (``nufft_spread_1``/``_2`` of ``cl_kernels/nufft.mako``):
   the strengths spread with the ES kernel onto a periodic fine grid of
   ``n_grid`` cells, gathered per cell (no atomics).
3. The FFT of every grid row, ``G[k] = scale * sum_l g[l] e^{+2 pi i k l / n_grid}``.
4. :func:`power` (``nufft_power``): the ``nf`` central modes divided by the
   kernel's Fourier transform (:func:`correction_factors`), then the power of
   the direct kernel's normal equations in the chosen normalization.

The ES kernel's width and shape follow FINUFFT's legacy rules
(:func:`es_kernel_params`); the grid convention (cell ``l`` at
``x = 2 pi l / n_grid``, no half-box shift) is that of ``tests/reference/nufft.py``.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clperiod.catalog import Catalog, Status
from clperiod.engine import kernels
from clperiod.engine.devices import upload
from clperiod.engine.fft import fft_inplace
from clperiod.engine.planner import Buffer
from clperiod.grid import FrequencyGrid
from clperiod.periodograms.inputs import segment_reduce
from clperiod.periodograms.standardize import standardize

__all__ = [
    "BatchPeaks",
    "GridFFT",
    "NufftPlan",
    "PointSet",
    "PreparedPoints",
    "batch_buffers",
    "correction_factors",
    "es_kernel_params",
    "fine_grid_size",
    "kernel_fourier_transform",
    "periodogram",
    "power",
    "prepare",
    "search",
    "spread",
]

Normalization = Literal["standard", "model", "log", "psd"]
Precision = Literal["fp64", "fp32"]

#: Largest kernel width in fine-grid cells (FINUFFT's ``MAX_NSPREAD``).
MAX_WIDTH = 16
#: Gauss-Legendre nodes of :func:`kernel_fourier_transform` (30 already reach rounding).
QUADRATURE_NODES = 80
#: Default tolerance by ``fp64`` (nifty-ls's defaults).
DEFAULT_EPS = {True: 1e-9, False: 1e-5}
#: Work-group size of the kernels on GPUs and on other devices.
WORK_GROUP = {"gpu": 128, "other": 16}
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
    (FINUFFT <= 2.4). ``w >= 2``; a width above :data:`MAX_WIDTH` is clipped with
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
    cos(a)`` on ``[0, pi/2]`` is analytic, and :data:`QUADRATURE_NODES`
    Gauss-Legendre nodes converge to rounding.
    """
    angle, weights = _quadrature_rule(QUADRATURE_NODES)
    theta = np.asarray(theta, dtype=np.float64)
    cosines = np.cos(np.multiply.outer(theta, 0.5 * width * np.sin(angle)))
    integrand = np.exp(beta * (np.cos(angle) - 1)) * np.cos(angle)
    return 0.25 * np.pi * width * (cosines @ (weights * integrand))


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
        Requested relative tolerance of the transforms.
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
        width, beta = es_kernel_params(eps, upsampfac, fp64)
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
        return max(self.eps, 64 * float(np.finfo(self.dtype).eps))


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

# {{{ host preparation


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
    """Cells and fractions (``[0, 1)``) of ``xi = n_grid frac(step tt)``, from exact products."""
    p, e = _two_product(step, tt)
    q, q_err = _two_product(float(n_grid), p - np.floor(p))
    cell = np.floor(q)
    fraction = (q - cell) + (q_err + n_grid * e)
    under, over = fraction < 0, fraction >= 1
    cell[under] -= 1
    fraction[under] += 1
    cell[over] += 1
    fraction[over] -= 1
    return np.mod(cell, n_grid).astype(np.int32), np.minimum(fraction, _BELOW_ONE)


@dataclass(frozen=True)
class PointSet:
    """Points of one transform set, sorted by cell within each object.

    Attributes
    ----------
    cells : ndarray of int32
        ``floor(xi)`` in ``[0, n_grid)``.
    fractions : ndarray
        ``xi - cell`` in ``[0, 1)`` (kernel precision).
    strengths : ndarray, shape (points, n_vec)
        Complex strengths of the ``n_vec`` transforms sharing the points.
    """

    cells: np.ndarray
    fractions: np.ndarray
    strengths: np.ndarray


@dataclass(frozen=True)
class PreparedPoints:
    """The spreading inputs of a batch of objects (:func:`prepare`).

    Attributes
    ----------
    status : ndarray of int8
        Per object: OK, TOO_FEW_POINTS or ZERO_VARIANCE; objects that are not
        OK keep no points and get ``yy = NaN`` (NaN powers).
    offsets : ndarray of int32
        ``(n_objects + 1,)`` point offsets, the same in both point sets.
    points : PointSet
        At ``x``: the data ``w y e^{i s x}`` and, with ``fit_mean``, the
        window ``w e^{i s x}``.
    doubled : PointSet
        At ``2 x``: ``w e^{2 i s x}``.
    yy : ndarray
        Per object ``sum w y^2`` of the standardised values (NaN if not OK).
    psd_scale : ndarray
        Per object ``1/2 sum dy^-2 (y - ybar)^2`` in the data's units.
    """

    status: np.ndarray
    offsets: np.ndarray
    points: PointSet
    doubled: PointSet
    yy: np.ndarray
    psd_scale: np.ndarray

    @property
    def n_objects(self) -> int:
        """Objects of the batch."""
        return len(self.status)

    @property
    def n_transforms(self) -> int:
        """Transforms per object: data, window (with ``fit_mean``) and doubled window."""
        return self.points.strengths.shape[1] + 1


def _sorted_by_cell(
    cells: np.ndarray, owners: np.ndarray, n_grid: int, *columns: np.ndarray
) -> tuple[np.ndarray, ...]:
    """``cells`` and ``columns`` reordered so that cells ascend within each object."""
    key = owners * np.int64(n_grid) + cells
    if np.all(key[1:] >= key[:-1]):  # sorted times whose arc does not wrap
        return (cells, *columns)
    order = np.argsort(key, kind="stable")
    return tuple(column[order] for column in (cells, *columns))


def _point_set(
    step: float,
    turns: np.ndarray,
    tt: np.ndarray,
    owners: np.ndarray,
    columns: list[np.ndarray],
    plan: NufftPlan,
) -> PointSet:
    """The points ``n_grid frac(step tt)`` carrying ``columns * e^{2 pi i turns}``."""
    cells, fractions = _cell_coordinates(step, tt, plan.n_grid)
    phasor = np.exp(2j * np.pi * turns)
    strengths = np.stack([column * phasor for column in columns], axis=-1)
    cells, fractions, strengths = _sorted_by_cell(cells, owners, plan.n_grid, fractions, strengths)
    fractions = np.minimum(fractions.astype(plan.dtype), np.nextafter(plan.dtype(1), 0))
    return PointSet(cells, fractions, strengths.astype(plan.complex_dtype))


def prepare(
    catalog: Catalog, plan: NufftPlan, *, fit_mean: bool, center_data: bool, use_dy: bool
) -> PreparedPoints:
    """The spreading inputs of every object of ``catalog`` (module notes, stage 1).

    Parameters
    ----------
    catalog
        Validated light curves (finite values, ``dy > 0``), in any time order,
        at raw epochs; at most ``2**31 - 1`` rows (int32 point indices).
    plan
        Grid, precision and kernel.
    fit_mean, center_data
        The model, as in astropy; values are centred when either is set.
    use_dy
        Weigh by ``dy**-2`` (else every point weighs 1).

    Returns
    -------
    PreparedPoints

    Raises
    ------
    ValueError
        The catalog has more rows than int32 point indices reach.
    """
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the NUFFT kernels index at most "
            f"{np.iinfo(np.int32).max} points per batch"
        )
    min_points = 4 if fit_mean else 3
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < min_points] = Status.TOO_FEW_POINTS
    values = standardize(
        catalog.y, catalog.dy if use_dy else None, catalog.offsets, center=fit_mean or center_data
    )
    status[(status == Status.OK) & values.flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    keep = np.repeat(ok, catalog.lengths)
    lengths = np.where(ok, catalog.lengths, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    owners = np.repeat(np.arange(catalog.n_objects), lengths)
    start = segment_reduce(np.minimum, catalog.t, catalog.offsets, 0.0)
    tt = catalog.t[keep] - start[owners]
    wn, wy = values.wn[keep], (values.wn * values.u)[keep]
    turns = _turns(plan.shift_frequency, tt)
    df = plan.grid.df
    points = _point_set(df, turns, tt, owners, [wy, wn] if fit_mean else [wy], plan)
    doubled = _point_set(2 * df, 2 * turns - np.rint(2 * turns), tt, owners, [wn], plan)
    return PreparedPoints(
        status=status,
        offsets=offsets.astype(np.int32),
        points=points,
        doubled=doubled,
        yy=np.where(ok, values.yy, np.nan),
        psd_scale=np.where(ok, 0.5 * values.weighted_sum_of_squares(), 0.0),
    )


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
    return WORK_GROUP["gpu" if queue.device.type & cl.device_type.GPU else "other"]


def _range(n: int, n_objects: int, wg: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Global and local sizes of a (n items, objects) launch."""
    return (-(-n // wg) * wg, n_objects), (wg, 1)


def _spread_kernels(queue: cl.CommandQueue, plan: NufftPlan) -> tuple[cl.Kernel, ...]:
    """``nufft_spread_1`` and ``nufft_spread_2`` (one and two strength vectors)."""
    return kernels.get_kernels(
        queue.context,
        "nufft",
        ("nufft_spread_1", "nufft_spread_2"),
        real="double" if plan.fp64 else "float",
        stage="spread",
    )


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


def _check_normalization(normalization: str) -> None:
    if normalization not in ("standard", "model", "log", "psd"):
        raise ValueError(
            f"normalization must be 'standard', 'model', 'log' or 'psd', got {normalization!r}"
        )


def spread(
    queue: cl.CommandQueue, prepared: PreparedPoints, plan: NufftPlan, n_rows: int = 0
) -> cl.Buffer:
    """Queue the spreading of both point sets (stage 2).

    Parameters
    ----------
    n_rows
        Grid rows to allocate at least (rows past the batch's are left
        unwritten), so that batches of fewer objects share one FFT shape.

    Returns
    -------
    cl.Buffer
        The fine grids, ``(n_objects, n_transforms, n_grid)`` interleaved complex:
        the data, the window (with ``fit_mean``), the doubled window.
    """
    spread_1, spread_2 = _spread_kernels(queue, plan)
    n_obj, n_trans = prepared.n_objects, prepared.n_transforms
    itemsize = np.dtype(plan.complex_dtype).itemsize
    rows = max(1, n_rows, n_obj * n_trans)
    grid = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, rows * plan.n_grid * itemsize)
    starts = upload(queue, prepared.offsets)
    global_size, local_size = _range(plan.n_grid, n_obj, _work_group(queue))
    for first, point_set in ((0, prepared.points), (n_trans - 1, prepared.doubled)):
        kernel = spread_2 if point_set.strengths.shape[1] == 2 else spread_1
        kernel(
            queue,
            global_size,
            local_size,
            starts,
            upload(queue, point_set.cells),
            upload(queue, point_set.fractions),
            upload(queue, point_set.strengths),
            np.int32(plan.n_grid),
            np.int32(plan.width),
            plan.dtype(plan.beta),
            np.int32(n_trans),
            np.int32(first),
            grid,
        )
    return grid


def power(
    queue: cl.CommandQueue,
    modes: cl.Buffer,
    prepared: PreparedPoints,
    plan: NufftPlan,
    normalization: Normalization = "standard",
    fft_scale: float = 1.0,
    sums: cl.Buffer | None = None,
) -> cl.Buffer:
    """Queue the correction and power of the FFT'd grids ``modes`` (stage 4).

    Parameters
    ----------
    modes
        The FFT of :func:`spread`'s grids (:class:`GridFFT`), scaled by ``fft_scale``.
    normalization
        astropy's normalizations; psd powers are in the data's units.
    sums
        If given, also receives the corrected transforms at the grid
        frequencies, ``(n_objects, n_transforms, nf)`` interleaved complex.

    Returns
    -------
    cl.Buffer
        Powers, ``(n_objects, nf)`` in the plan's precision.
    """
    _check_normalization(normalization)
    fit_mean = prepared.n_transforms == 3
    kernel = _power_kernel(queue, plan, fit_mean, normalization, sums is not None)
    nf, n_obj = plan.grid.nf, prepared.n_objects
    out = cl.Buffer(
        queue.context, cl.mem_flags.WRITE_ONLY, max(1, n_obj * nf) * np.dtype(plan.dtype).itemsize
    )
    with np.errstate(over="ignore"):  # psd factors beyond float32 give inf powers
        scale = prepared.psd_scale.astype(plan.dtype)
    global_size, local_size = _range(nf, n_obj, _work_group(queue))
    kernel(
        queue,
        global_size,
        local_size,
        modes,
        upload(queue, correction_factors(plan, fft_scale)),
        upload(queue, prepared.yy.astype(plan.dtype)),
        upload(queue, scale),
        np.int32(nf),
        np.int32(plan.n_grid),
        np.int32(0 if plan.grid.fmin == 0 else -1),
        plan.dtype(plan.degenerate),
        *([sums] if sums is not None else []),
        out,
    )
    return out


def periodogram(
    queue: cl.CommandQueue,
    prepared: PreparedPoints,
    plan: NufftPlan,
    fft: GridFFT,
    normalization: Normalization = "standard",
    fft_scale: float = 1.0,
) -> np.ndarray:
    """Spread, ``fft``, correct and power: the ``(n_objects, nf)`` periodograms."""
    grid = spread(queue, prepared, plan)
    modes = fft(queue, grid, prepared.n_objects * prepared.n_transforms, plan.n_grid)
    out = power(queue, modes, prepared, plan, normalization, fft_scale)
    result = np.empty((prepared.n_objects, plan.grid.nf), dtype=plan.dtype)
    cl.enqueue_copy(queue, result, out)
    return result


# }}}

# {{{ search of a batch


def batch_buffers(plan: NufftPlan, fit_mean: bool, top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points).

    Per object the fine grids (``n_transforms`` rows of ``n_grid`` complex
    values, twice: the FFT may need as much again, VkFFT's scratch or the host
    transform's output), the ``nf`` powers, the peaks and the per-object
    inputs; per point the cells, fractions and strengths of both point sets.
    """
    real = np.dtype(plan.dtype).itemsize
    n_trans = 3 if fit_mean else 2
    return [
        Buffer("fine grids", per_item=n_trans * plan.n_grid * 2 * real, count=2),
        Buffer("powers", per_item=plan.grid.nf * real),
        Buffer("peaks", per_item=top_k * (real + 4)),
        Buffer("object inputs", per_item=4 + 2 * real),
        Buffer("points", per_unit=2 * (4 + real) + n_trans * 2 * real),
    ]


@dataclass(frozen=True)
class BatchPeaks:
    """The top-k peaks of a batch's objects (:func:`search`).

    Attributes
    ----------
    status : ndarray of int8
        The preparation's per-object status (:attr:`PreparedPoints.status`).
    values : ndarray of float64, shape (n_objects, top_k)
        Peak powers, best first (``-inf`` or NaN where there is no peak).
    indices : ndarray of int32, shape (n_objects, top_k)
        Their grid indices (``2**31 - 1``: no peak).
    psd_scale : ndarray of float64
        :attr:`PreparedPoints.psd_scale`.
    """

    status: np.ndarray
    values: np.ndarray
    indices: np.ndarray
    psd_scale: np.ndarray


def _top_k_peaks(
    queue: cl.CommandQueue, powers: cl.Buffer, n_obj: int, plan: NufftPlan, top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """``peaks_topk`` (``cl_kernels/peaks.mako``) of every object's periodogram."""
    wg = _work_group(queue)
    real = "double" if plan.fp64 else "float"
    (kernel,) = kernels.get_kernels(
        queue.context, "peaks", ("peaks_topk",), real=real, wg=wg, top_k=top_k
    )
    nf = plan.grid.nf
    values = np.empty((n_obj, top_k), dtype=plan.dtype)
    indices = np.empty((n_obj, top_k), dtype=np.int32)
    best_val = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, max(1, values.nbytes))
    best_idx = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, max(1, indices.nbytes))
    if n_obj:
        kernel(
            queue,
            (n_obj * wg,),
            (wg,),
            powers,
            np.int32(nf),
            np.int32(0),
            np.int32(0),
            np.int32(nf),
            np.int32(nf),
            best_val,
            best_idx,
        )
        cl.enqueue_copy(queue, values, best_val)
        cl.enqueue_copy(queue, indices, best_idx)
    return values.astype(np.float64), indices


def search(
    queue: cl.CommandQueue,
    prepared: PreparedPoints,
    plan: NufftPlan,
    normalization: Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
) -> BatchPeaks:
    """Spread, FFT (:func:`clperiod.engine.fft.fft_inplace`), power and top-k peaks.

    Parameters
    ----------
    prepared
        The batch's points (:func:`prepare`).
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
        Fine-grid rows to transform at least (:func:`spread`), so that batches
        of fewer objects reuse one FFT plan.

    Returns
    -------
    BatchPeaks
    """
    _check_normalization(normalization)
    n_obj = prepared.n_objects
    grid = spread(queue, prepared, plan, n_rows)
    rows = max(1, n_rows, n_obj * prepared.n_transforms)
    fft_inplace(queue, cla.Array(queue, (rows, plan.n_grid), plan.complex_dtype, data=grid))
    psd = normalization == "psd"
    powers = power(queue, grid, prepared, plan, "standard" if psd else normalization)
    values, indices = _top_k_peaks(queue, powers, n_obj, plan, top_k)
    if periodograms is not None and n_obj:
        cl.enqueue_copy(queue, periodograms, powers)
    queue.finish()
    if psd:
        with np.errstate(invalid="ignore", over="ignore"):  # -inf * 0 of objects not OK
            values *= prepared.psd_scale[:, None]
            if periodograms is not None:
                periodograms *= prepared.psd_scale.astype(plan.dtype)[:, None]
    return BatchPeaks(prepared.status, values, indices, prepared.psd_scale)


# }}}
