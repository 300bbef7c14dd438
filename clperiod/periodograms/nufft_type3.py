"""Lomb-Scargle periodograms at any frequencies through type-3 NUFFTs on OpenCL (issue 22).

The one-term periodogram at a frequency ``f`` needs the sums
``S(f) = sum_j c_j e^{2 pi i f t_j}`` of the strengths ``c = w y`` (data) and
``c = w`` (window) at ``f``, and of the window at ``2 f``. At the ``nf``
frequencies of a :class:`~clperiod.FrequencyArray` (any spacing) they are
type-3 transforms, built here on the type-1 pipeline of
:mod:`clperiod.periodograms.nufft` (spec ``methods_next.md`` section 1.5).

Method. Times are ``t = t_obs - t_0`` (``t_0`` each object's first time, so
``0 <= t <= T``, ``T`` the largest baseline of the catalog). Let ``psi(nu) =
phi(2 nu / (w D))`` be the ES kernel of width ``w`` samples of a frequency
step ``D`` and ``psi_hat(t) = integral psi(nu) e^{2 pi i nu t} d nu = D
psi_c(2 pi D t)`` its Fourier transform (``psi_c``:
:func:`~clperiod.periodograms.nufft.kernel_fourier_transform`, in cell units).
Shifting the kernel, ``e^{2 pi i f t} psi_hat(t) = integral psi(nu - f)
e^{2 pi i nu t} d nu``; so, with ``t' = t - t_c``,

    S_c(f) = sum_j c_j e^{2 pi i f t'_j} = integral psi(nu - f) G(nu) d nu,
    G(nu) = sum_j (c_j / psi_hat(t'_j)) e^{2 pi i nu t'_j}.

``S_c`` is the sum about the centre ``t_c``, ``e^{-2 pi i f t_c} S(f)``; the
power is invariant to that shift of the times (the data and window sums at
``f`` turn by ``e^{-2 pi i f t_c}``, the window at ``2 f`` by its square), so
no phase is applied to the result. The trapezoid rule on the lattice
``nu_n = n D`` is, by Poisson summation, ``S_c(f) = D sum_n psi(n D - f)
G(n D)`` plus aliases ``psi_hat(t'_j - p / D) / psi_hat(t'_j)``, ``p != 0``.
With ``D = 1 / (2 T)`` and ``t_c = 1 / (4 D) = T / 2``, ``|2 pi D t'| <= pi /
2`` and the aliases sit at ``|2 pi D (t' - p / D)| >= 3 pi / 2``: the
aliasing of a type-1 transform with upsampling 2, which the ES rules of
:func:`~clperiod.periodograms.nufft.es_kernel_params` keep near their
tolerance. The sum takes the ``w`` lattice samples nearest ``f``.

``G`` on the lattice is what the type-1 path computes: the corrected sums
of :class:`~clperiod.periodograms.nufft.NufftPlan` on the uniform grid
``FrequencyGrid(n_lo D, D, M)``, of the strengths divided by ``psi_c(2 pi D
t')`` (``nufft_type3_prescale``, ``D`` cancels), times the centring phase
``e^{-2 pi i n D t_c} = (-i)^n``, exact in any precision. The strengths are
real, so ``G(-nu)`` is the conjugate of ``G(nu)``: samples below 0 (targets
below ``w D / 2``) mirror those above and the lattice starts at ``n_lo >=
0``.

The window at ``2 f`` needs samples at spacing ``<= 1 / (2 T)`` around
``2 f``. The lattice runs from ``f_min - w D / 2`` to ``2 f_max + w D / 2``
and carries two transforms, the data and the window (both spread at
harmonic 1, ``nufft_spread_data_window``); the window at ``f`` and at
``2 f`` are read from the same transform. That costs two transforms of
``(2 f_max - f_min) / D`` samples, against three of ``2 (f_max - f_min) /
D`` for spreading the window at harmonic 2 on a lattice of half the step,
and ``4 (f_max - f_min) / D`` for a separate lattice over ``[2 f_min, 2
f_max]`` (which needs a second preparation of the points): the least for
arrays reaching below ``f_max / 2``, as period searches do, and equal to
the separate lattice at ``f_min = 0``. A model of ``K`` harmonics
(``nterms``) reads the data at ``h f`` (``h <= K``) and the window at
``h f`` (``h <= 2 K``) from the same two transforms, on a lattice up to
``2 K f_max``.

Stages (:func:`search`, through :func:`clperiod.periodograms.nufft.search_with`):

1. The type-1 path's preparation on the lattice's grid.
2. ``nufft_type3_prescale`` (``cl_kernels/nufft_type3.mako``): each point's
   strengths times ``1 / psi_c(2 pi (D t - 1/4))``, a Chebyshev series in
   ``(4 D t - 1)^2`` (:func:`prescale_coefficients`, ``D t = xi / n_grid``
   from the prepared cells); then the data and window spread at harmonic 1.
3. The FFT of every fine grid.
4. ``nufft_type3_power``: at every target the ``w`` corrected, centred
   lattice samples of each sum times the ES kernel, then the power of the
   type-1 path's ``nufft_power`` (the same Mako function), or for ``K > 1``
   the Cholesky solve of ``nufft_terms_power`` (the same Mako def of
   ``multiterm.mako``); top-k peaks of the targets in rising frequency
   (local maxima, as the direct path).

Accuracy. The type-1 transforms and the interpolation each get the
tolerance ``eps * TRANSFORM_MARGIN / TOLERANCE_SPLIT`` (a kernel one cell
wider than the type-1 path's at the fp64 default, 14 cells; 8 in fp32):
their errors add, and the prescale multiplies the strengths by up to
``psi_c(0) / psi_c(pi / 2)`` (about 5.5 at 14 cells). As on uniform grids,
frequencies far below ``1 / T`` have nearly singular normal equations,
which amplify the transforms' errors: their powers are recomputed on the
host (:mod:`clperiod.periodograms.lowfreq`).
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyopencl as cl
from numpy.polynomial import chebyshev

from clperiod import checks
from clperiod.catalog import Catalog
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo, upload
from clperiod.engine.planner import Buffer
from clperiod.grid import FrequencyGrid
from clperiod.periodograms import lowfreq, multiterm, nufft

__all__ = [
    "MAX_LATTICE",
    "PRESCALE_DEGREE",
    "TOLERANCE_SPLIT",
    "Type3Plan",
    "batch_buffers",
    "kernel_params",
    "lattice_size",
    "power",
    "prescale",
    "prescale_coefficients",
    "search",
]

Normalization = Literal["standard", "model", "log", "psd"]
Precision = Literal["fp64", "fp32"]

#: The type-1 transforms and the interpolation are each made to the type-1
#: path's transform tolerance divided by this.
TOLERANCE_SPLIT = 4
#: Degree of the Chebyshev series of ``1 / psi_c`` (relative error ~1e-14 for
#: every kernel width).
PRESCALE_DEGREE = 20
#: Largest lattice (samples): the type-1 grid's ``nf``.
MAX_LATTICE = 2**31 - 2**16


def kernel_params(eps: float | None, fp64: bool) -> tuple[int, float]:
    """Width and shape of the ES kernel of the transforms and the interpolation
    for the powers' accuracy ``eps`` (None: the default of the precision)."""
    eps = nufft.DEFAULT_EPS[fp64] if eps is None else eps
    tolerance = eps * nufft.TRANSFORM_MARGIN[fp64] / TOLERANCE_SPLIT
    return nufft.es_kernel_params(tolerance, 2.0, fp64)


def _step(baseline: float, fmax: float) -> float:
    """Lattice step ``1 / (2 T)`` (``T`` the largest baseline; any step for ``T = 0``)."""
    return 0.5 / baseline if baseline > 0 else 0.5 / fmax


def lattice_size(
    fmin: float, fmax: float, baseline: float, width: int, nterms: int = 1
) -> tuple[int, int]:
    """First sample ``n_lo`` and samples ``M`` of the lattice ``n / (2 T)`` of
    targets in ``[fmin, fmax]``: from ``w / 2`` samples below ``fmin`` (at
    least 0) to ``w / 2`` above ``2 nterms fmax``."""
    step = _step(baseline, fmax)
    first = max(0, math.floor(fmin / step - 0.5 * width))
    last = math.ceil(2 * nterms * fmax / step + 0.5 * width)
    return first, last - first + 1


@dataclass(frozen=True, eq=False)
class Type3Plan:
    """The transforms of one-term periodograms at an array of frequencies.

    Attributes
    ----------
    frequencies : ndarray of float64
        The targets: distinct, rising, ``>= 0`` with the last above 0.
    baseline : float
        The largest ``max(t) - min(t)`` of the objects searched.
    fp64 : bool
        Kernel precision.
    eps : float
        Requested accuracy of the powers, relative to the peak.
    nterms : int
        Harmonics of the model: the window is needed up to ``2 nterms f``.
    width, beta : int, float
        The ES kernel of the interpolation (and of the type-1 transforms).
    step : float
        Lattice step ``D = 1 / (2 baseline)``.
    first : int
        ``n_lo``: the lattice's first sample is ``n_lo D``.
    inner : NufftPlan
        The type-1 plan of the lattice ``FrequencyGrid(n_lo D, D, M)``.
    """

    frequencies: np.ndarray
    baseline: float
    fp64: bool
    eps: float
    nterms: int
    width: int
    beta: float
    step: float
    first: int
    inner: nufft.NufftPlan
    _tables: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def build(
        cls,
        frequencies: np.ndarray,
        baseline: float,
        precision: Precision = "fp64",
        eps: float | None = None,
        nterms: int = 1,
    ) -> Type3Plan:
        """The plan of ``frequencies`` (distinct, rising) for objects of at
        most ``baseline`` and a model of ``nterms`` harmonics; ``eps``
        defaults to 1e-9 (fp64) or 1e-5 (fp32).

        Raises
        ------
        ValueError
            Bad precision or ``nterms``, frequencies not rising or none above
            0, or a lattice of more than :data:`MAX_LATTICE` samples.
        """
        if precision not in ("fp64", "fp32"):
            raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
        nterms = checks.integer("nterms", nterms, low=1, high=multiterm.MAX_NTERMS)
        values = np.asarray(frequencies, dtype=np.float64)
        if values.ndim != 1 or values.size == 0 or not values[-1] > 0 or values[0] < 0:
            raise ValueError("frequencies must be a 1-D array in [0, inf) with one above 0")
        if np.any(values[1:] <= values[:-1]):
            raise ValueError("frequencies must be distinct and rising")
        fp64 = precision == "fp64"
        eps = nufft.DEFAULT_EPS[fp64] if eps is None else float(eps)
        width, beta = kernel_params(eps, fp64)
        first, size = lattice_size(values[0], values[-1], baseline, width, nterms)
        if size > MAX_LATTICE:
            raise ValueError(
                f"the type-3 lattice of {values.size} frequencies up to {values[-1]:g} for a "
                f"baseline of {baseline:g} needs {size} samples (at most {MAX_LATTICE}); "
                "use algorithm='direct'"
            )
        step = _step(baseline, values[-1])
        inner = nufft.NufftPlan.build(
            FrequencyGrid(first * step, step, size), precision, eps / TOLERANCE_SPLIT
        )
        values = values.copy()
        values.flags.writeable = False
        return cls(values, float(baseline), fp64, eps, nterms, width, beta, step, first, inner)

    @property
    def nf(self) -> int:
        """Number of target frequencies."""
        return self.frequencies.size

    @property
    def dtype(self) -> type[np.floating]:
        """Real type of the kernels."""
        return self.inner.dtype

    @property
    def degenerate(self) -> float:
        """Relative size below which a normal-equation column counts as vanished
        (as :attr:`clperiod.periodograms.nufft.NufftPlan.degenerate`)."""
        return max(
            self.eps * nufft.TRANSFORM_MARGIN[self.fp64],
            64 * float(np.finfo(self.dtype).eps),
        )

    def targets(self) -> tuple[np.ndarray, np.ndarray]:
        """Per harmonic ``h = 1 .. 2 nterms`` and target ``f``: the first
        lattice sample of ``h f`` (from ``n_lo``, int32) and its distance
        from ``h f`` in samples (in ``[-w/2, 1 - w/2)``, kernel precision),
        each of shape ``(2 nterms, nf)``."""
        harmonics = np.arange(1, 2 * self.nterms + 1)[:, None]
        position = harmonics * (self.frequencies / self.step)
        first = np.ceil(position - 0.5 * self.width)
        return (first - self.first).astype(np.int32), (first - position).astype(self.dtype)

    def device_targets(self, queue: cl.CommandQueue) -> tuple[cl.Buffer, ...]:
        """:meth:`targets` on the device of ``queue`` (uploaded once per context)."""
        key = queue.context.int_ptr
        with self._lock:
            if key not in self._tables:
                self._tables[key] = tuple(upload(queue, table) for table in self.targets())
            return self._tables[key]


@functools.cache
def prescale_coefficients(width: int, beta: float) -> np.ndarray:
    """Chebyshev coefficients of ``1 / psi_c(theta)`` in ``x = 2 (2 theta / pi)^2
    - 1``, ``|theta| <= pi / 2`` (``psi_c``:
    :func:`~clperiod.periodograms.nufft.kernel_fourier_transform`), read-only."""

    # Chebyshev points of the degree, as numpy.polynomial.chebyshev.chebinterpolate
    x = np.cos(np.pi * (np.arange(PRESCALE_DEGREE + 1) + 0.5) / (PRESCALE_DEGREE + 1))
    theta = 0.5 * np.pi * np.sqrt(0.5 * (x + 1))
    values = 1.0 / nufft.kernel_fourier_transform(theta, width, beta)
    coefficients = chebyshev.chebfit(x, values, PRESCALE_DEGREE)
    coefficients.setflags(write=False)
    return coefficients


def prescale(
    queue: cl.CommandQueue,
    points: nufft.DevicePoints,
    plan: Type3Plan,
    n_rows: int,
    fp64_math: bool | None = None,
) -> None:
    """Queue ``nufft_type3_prescale``: the strengths of the ``n_rows`` rows
    divided by ``psi_c(2 pi (D t - 1/4))`` (stage 2), computed in float64
    (``fp64_math``; default: where the device has it) or float32."""
    if n_rows == 0:
        return
    if fp64_math is None:
        fp64_math = bool(queue.device.double_fp_config)
    math_type = np.float64 if fp64_math else np.float32
    (kernel,) = kernels.get_kernels(
        queue.context,
        "nufft_type3",
        ("nufft_type3_prescale",),
        real="double" if plan.fp64 else "float",
        stage="prescale",
        math="double" if math_type is np.float64 else "float",
    )
    coefficients = prescale_coefficients(plan.width, plan.beta)
    wg = nufft._work_group(queue)
    kernel(
        queue,
        (-(-n_rows // wg) * wg,),
        (wg,),
        points.cells,
        points.fractions,
        np.int32(n_rows),
        math_type(plan.inner.n_grid),
        upload(queue, coefficients.astype(math_type)),
        np.int32(coefficients.size),
        points.weights,
        points.weighted_values,
    )


def spread(
    queue: cl.CommandQueue,
    points: nufft.DevicePoints,
    plan: Type3Plan,
    n_rows: int,
    grid: cl.MemoryObjectHolder,
) -> None:
    """Queue the prescale and the spreading of the data and the window at
    harmonic 1 into ``grid``, ``(n_objects, 2, n_grid)``."""
    prescale(queue, points, plan, n_rows)
    nufft.clear_for_scatter(queue, points, plan.inner, grid, 2)
    nufft.spread_harmonic(queue, points, plan.inner, grid, "data_window", 1, 2, 0)


def power(
    queue: cl.CommandQueue,
    modes: cl.MemoryObjectHolder,
    points: nufft.DevicePoints,
    plan: Type3Plan,
    out: cl.MemoryObjectHolder,
    normalization: Normalization = "standard",
) -> None:
    """Queue ``nufft_type3_power``: the interpolation of the FFT'd grids
    ``modes`` at the targets (and their harmonics) and their powers,
    ``(n_objects, nf)`` in the plan's precision, into ``out`` (stage 4): NaN
    for objects with fewer points than
    :func:`~clperiod.periodograms.multiterm.min_points`.

    Raises
    ------
    ValueError
        ``normalization`` not "standard", "model" or "log" (psd powers are the
        standard ones times the psd factor, which :func:`search` applies).
    """
    if normalization not in ("standard", "model", "log"):
        raise ValueError(
            f"normalization must be 'standard', 'model' or 'log', got {normalization!r}"
        )
    (kernel,) = kernels.get_kernels(
        queue.context,
        "nufft_type3",
        ("nufft_type3_power",),
        real="double" if plan.fp64 else "float",
        stage="power",
        fit_mean=points.fit_mean,
        nterms=plan.nterms,
        normalization=normalization,
    )
    inner = plan.inner
    global_size, local_size = nufft._range(plan.nf, points.n_objects, nufft._work_group(queue))
    kernel(
        queue,
        global_size,
        local_size,
        modes,
        nufft._device_correction(queue, inner, 1.0),
        *plan.device_targets(queue),
        points.yy,
        points.n_points,
        np.int32(multiterm.min_points(plan.nterms, points.fit_mean)),
        np.int32(plan.nf),
        np.int32(inner.grid.nf),
        np.int32(inner.n_grid),
        np.int32(plan.first % 4),
        np.int32(plan.width),
        plan.dtype(plan.beta),
        np.int32(0 if plan.frequencies[0] == 0 else -1),
        plan.dtype(plan.degenerate),
        out,
    )


def batch_buffers(plan: Type3Plan, top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points): per
    object two fine grids (twice: the FFT's scratch), the ``nf`` powers, the
    peaks and the inputs; per point those of the type-1 path; the target
    tables and the lattice's correction factors once."""
    real = np.dtype(plan.dtype).itemsize
    one_term = {b.name: b for b in nufft.batch_buffers(plan.inner, True, top_k)}
    return [
        Buffer("fine grids", per_item=2 * plan.inner.n_grid * 2 * real, count=2),
        Buffer("powers", per_item=plan.nf * real),
        one_term["peaks"],
        one_term["object inputs"],
        one_term["points"],
        Buffer(
            "targets",
            fixed=plan.nf * 2 * plan.nterms * (4 + real) + plan.inner.grid.nf * real,
        ),
    ]


def search(
    info: DeviceInfo,
    catalog: Catalog,
    plan: Type3Plan,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
    normalization: Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
    owned: tuple[int, int, int, int] | None = None,
    cutoff: np.ndarray | None = None,
) -> nufft.BatchPeaks:
    """Prepare, prescale, spread, FFT, interpolate, power and top-k peaks of a
    batch of objects at the plan's frequencies on one device.

    Parameters are those of :func:`clperiod.periodograms.nufft.search`, with
    the plan's targets in place of its grid (``periodograms``: ``(n_objects,
    nf)``; peak indices index the targets; ``owned``: the targets a piece of
    a larger array). With ``plan.nterms > 1``, objects with fewer points than
    :func:`~clperiod.periodograms.multiterm.min_points` are TOO_FEW_POINTS.
    The targets below each object's ``cutoff`` (default:

    :func:`clperiod.periodograms.lowfreq.nufft_cutoffs` of the batch), whose
    normal equations amplify the transforms' errors beyond the bound, take
    exact powers (:class:`clperiod.periodograms.lowfreq.ExactPowers`).
    """
    nufft._check_normalization(normalization)
    rows = int(catalog.offsets[-1])
    exact = lowfreq.ExactPowers(
        lambda queue, grid, points, out, norm: power(queue, grid, points, plan, out, norm),
        catalog,
        plan.frequencies,
        lowfreq.Model(plan.nterms, fit_mean, center_data, use_dy),
        plan,
        cutoff,
    )
    return nufft.search_with(
        info,
        catalog,
        plan.inner,
        nufft.Transforms(
            per_object=2,
            spread=lambda queue, points, grid: spread(queue, points, plan, rows, grid),
            power=exact,
            min_points=multiterm.min_points(plan.nterms, fit_mean) if plan.nterms > 1 else None,
            n_powers=plan.nf,
        ),
        model={"fit_mean": fit_mean, "center_data": center_data, "use_dy": use_dy},
        normalization=normalization,
        top_k=top_k,
        periodograms=periodograms,
        n_rows=n_rows,
        owned=owned,
    )
