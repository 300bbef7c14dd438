"""Multi-term Lomb-Scargle periodograms on a uniform grid through type-1 NUFFTs (issue 22).

The model of :mod:`clperiod.periodograms.multiterm` (an offset with
``fit_mean``, and ``K`` harmonics) needs, at every ``f_m = fmin + m df``
(``m < nf``), the window sums ``sum w e^{2 pi i h f_m tt}`` for ``h = 1 .. 2K``
and the data sums ``sum w y e^{2 pi i h f_m tt}`` for ``h = 1 .. K`` (``w``
the normalised weights, ``y`` centred when the model asks for it,
``tt = t - min(t)``). They are mapped onto type-1 NUFFTs as nifty-ls maps them
(spec ``methods_next.md`` section 1.4): for ``h <= K`` one pair of transforms
of ``(w y, w) e^{2 pi i h f_s tt}`` at the points ``h x``, for ``h > K`` one of
``w e^{2 pi i h f_s tt}`` at ``h x``, with ``x = 2 pi df tt`` and the shift
``f_s = fmin + (nf // 2) df`` of :mod:`clperiod.periodograms.nufft`, so that
mode ``m - nf // 2`` of the transforms at ``h x`` holds the sums at ``h f_m``.
That is ``3 K`` transforms per object (three for ``K = 1``, as the one-term
path with ``fit_mean``).

Stages, on :mod:`clperiod.periodograms.nufft`'s plan, kernel and FFT:

1. :func:`prepare` (host, float64): statuses and standardized values
   (:func:`clperiod.periodograms.multiterm.prepare_objects`), then for each
   ``h`` the cell coordinates ``n_grid frac(h df tt)`` and the phase-shifted
   strengths, from the exact products of :mod:`~clperiod.periodograms.nufft`.
2. :func:`spread` (``nufft_spread_2``, ``nufft_spread_1`` of
   ``cl_kernels/nufft.mako``) onto ``3 K`` fine grids per object.
3. The FFT of every grid row (:func:`clperiod.engine.fft.fft_inplace`).
4. :func:`power` (``nufft_terms_power`` of ``cl_kernels/nufft_terms.mako``):
   the ``nf`` central modes divided by the kernel's Fourier transform, then
   the normal equations of the direct multi-term kernel, solved by Cholesky.

A Cholesky pivot at or below the transforms' tolerance
(:attr:`~clperiod.periodograms.nufft.NufftPlan.degenerate`) gives NaN, as a
singular system does in the direct kernel, and so does ``f = 0``; the powers
of nearly singular systems (frequencies below about ``1 / T``) carry the
largest errors, as in nifty-ls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from clperiod.catalog import Catalog
from clperiod.engine import kernels
from clperiod.engine.devices import upload
from clperiod.engine.fft import fft_inplace
from clperiod.engine.planner import Buffer
from clperiod.periodograms import multiterm, nufft
from clperiod.periodograms.inputs import segment_reduce

__all__ = ["PreparedTerms", "batch_buffers", "power", "prepare", "search", "spread"]


@dataclass(frozen=True)
class PreparedTerms:
    """The spreading inputs of a batch of objects (:func:`prepare`).

    Attributes
    ----------
    status : ndarray of int8
        Per object: OK, TOO_FEW_POINTS or ZERO_VARIANCE; objects that are not
        OK keep no points and get ``yy = NaN`` (NaN powers).
    offsets : ndarray of int32
        ``(n_objects + 1,)`` point offsets, the same in every point set.
    point_sets : tuple of PointSet
        The points ``h x`` for ``h = 1 .. 2K``: for ``h <= K`` carrying the data
        and the window ``(w y, w) e^{i h s x}``, for ``h > K`` the window alone.
    yy : ndarray
        Per object ``sum w y^2`` of the standardized values (NaN if not OK).
    psd_scale : ndarray
        Per object ``1/2 sum dy^-2 (y - ybar)^2`` in the data's units.
    fit_mean : bool
        The model has a constant term.
    """

    status: np.ndarray
    offsets: np.ndarray
    point_sets: tuple[nufft.PointSet, ...]
    yy: np.ndarray
    psd_scale: np.ndarray
    fit_mean: bool

    @property
    def n_objects(self) -> int:
        """Objects of the batch."""
        return len(self.status)

    @property
    def nterms(self) -> int:
        """Harmonics of the model."""
        return len(self.point_sets) // 2

    @property
    def n_transforms(self) -> int:
        """Transforms per object: ``3 K``."""
        return 3 * self.nterms


def prepare(
    catalog: Catalog,
    plan: nufft.NufftPlan,
    nterms: int,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
) -> PreparedTerms:
    """The spreading inputs of every object of ``catalog`` (module notes, stage 1).

    Parameters
    ----------
    catalog
        Validated light curves (finite values, ``dy > 0``), in any time order,
        at raw epochs; at most ``2**31 - 1`` rows.
    plan
        Grid, precision and kernel (:class:`~clperiod.periodograms.nufft.NufftPlan`).
    nterms
        Harmonics of the model, 1 to :data:`~clperiod.periodograms.multiterm.MAX_NTERMS`.
    fit_mean, center_data
        The model, as in astropy; values are centred when either is set.
    use_dy
        Weigh by ``dy**-2`` (else every point weighs 1).

    Returns
    -------
    PreparedTerms
    """
    objects = multiterm.prepare_objects(
        catalog, nterms, fit_mean=fit_mean, center_data=center_data, use_dy=use_dy
    )
    owners = objects.owners
    start = segment_reduce(np.minimum, objects.t, objects.offsets)
    tt = objects.t - start[owners]
    turns = nufft._turns(plan.shift_frequency, tt)
    point_sets = []
    for h in range(1, 2 * nterms + 1):
        columns = [objects.wy, objects.w] if h <= nterms else [objects.w]
        h_turns = h * turns - np.rint(h * turns)
        point_sets.append(nufft._point_set(h * plan.grid.df, h_turns, tt, owners, columns, plan))
    return PreparedTerms(
        status=objects.status,
        offsets=objects.offsets,
        point_sets=tuple(point_sets),
        yy=objects.yy,
        psd_scale=objects.psd_scale,
        fit_mean=fit_mean,
    )


def _work_group(queue: cl.CommandQueue) -> int:
    return nufft.WORK_GROUP["gpu" if queue.device.type & cl.device_type.GPU else "other"]


def _range(n: int, n_objects: int, wg: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """Global and local sizes of a (n items, objects) launch."""
    return (-(-n // wg) * wg, n_objects), (wg, 1)


def _first_transform(h: int, nterms: int) -> int:
    """The fine-grid row of an object where the transforms at ``h x`` start:
    data and window pairs for ``h <= K``, then the windows ``h > K``."""
    return 2 * (h - 1) if h <= nterms else nterms + h - 1


def spread(
    queue: cl.CommandQueue, prepared: PreparedTerms, plan: nufft.NufftPlan, n_rows: int = 0
) -> cl.Buffer:
    """Queue the spreading of every point set (stage 2).

    Parameters
    ----------
    n_rows
        Grid rows to allocate at least (rows past the batch's are left
        unwritten), so that batches of fewer objects share one FFT shape.

    Returns
    -------
    cl.Buffer
        The fine grids, ``(n_objects, 3 K, n_grid)`` interleaved complex, in
        the order of ``cl_kernels/nufft_terms.mako``.
    """
    spread_1, spread_2 = kernels.get_kernels(
        queue.context,
        "nufft",
        ("nufft_spread_1", "nufft_spread_2"),
        real="double" if plan.fp64 else "float",
        stage="spread",
    )
    n_obj, n_trans = prepared.n_objects, prepared.n_transforms
    itemsize = np.dtype(plan.complex_dtype).itemsize
    rows = max(1, n_rows, n_obj * n_trans)
    grid = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, rows * plan.n_grid * itemsize)
    starts = upload(queue, prepared.offsets)
    global_size, local_size = _range(plan.n_grid, n_obj, _work_group(queue))
    for h, point_set in enumerate(prepared.point_sets, start=1):
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
            np.int32(_first_transform(h, prepared.nterms)),
            grid,
        )
    return grid


def power(
    queue: cl.CommandQueue,
    modes: cl.Buffer,
    prepared: PreparedTerms,
    plan: nufft.NufftPlan,
    normalization: multiterm.Normalization = "standard",
    fft_scale: float = 1.0,
) -> cl.Buffer:
    """Queue the correction and the multi-term power of the FFT'd grids ``modes`` (stage 4).

    Parameters
    ----------
    modes
        The FFT of :func:`spread`'s grids, scaled by ``fft_scale``.
    normalization
        ``"standard"``, ``"model"`` or ``"log"`` (psd powers are the standard
        ones times :attr:`PreparedTerms.psd_scale`, which :func:`search` applies).

    Returns
    -------
    cl.Buffer
        Powers, ``(n_objects, nf)`` in the plan's precision.

    Raises
    ------
    ValueError
        Another normalization.
    """
    if normalization not in ("standard", "model", "log"):
        raise ValueError(
            f"normalization must be 'standard', 'model' or 'log', got {normalization!r}"
        )
    (kernel,) = kernels.get_kernels(
        queue.context,
        "nufft_terms",
        ("nufft_terms_power",),
        real="double" if plan.fp64 else "float",
        nterms=prepared.nterms,
        fit_mean=prepared.fit_mean,
        normalization=normalization,
    )
    nf, n_obj = plan.grid.nf, prepared.n_objects
    out = cl.Buffer(
        queue.context, cl.mem_flags.WRITE_ONLY, max(1, n_obj * nf) * np.dtype(plan.dtype).itemsize
    )
    global_size, local_size = _range(nf, n_obj, _work_group(queue))
    kernel(
        queue,
        global_size,
        local_size,
        modes,
        upload(queue, nufft.correction_factors(plan, fft_scale)),
        upload(queue, prepared.yy.astype(plan.dtype)),
        np.int32(nf),
        np.int32(plan.n_grid),
        np.int32(0 if plan.grid.fmin == 0 else -1),
        plan.dtype(plan.degenerate),
        out,
    )
    return out


def batch_buffers(plan: nufft.NufftPlan, nterms: int, top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points).

    Per object the ``3 K`` fine grids (twice: the FFT may need as much again),
    the ``nf`` powers, the peaks and the per-object inputs; per point the
    cells and fractions of the ``2 K`` point sets and their ``3 K`` complex
    strengths.
    """
    real = np.dtype(plan.dtype).itemsize
    n_trans = 3 * nterms
    return [
        Buffer("fine grids", per_item=n_trans * plan.n_grid * 2 * real, count=2),
        Buffer("powers", per_item=plan.grid.nf * real),
        Buffer("peaks", per_item=top_k * (real + 4)),
        Buffer("object inputs", per_item=4 + real),
        Buffer("points", per_unit=2 * nterms * (4 + real) + n_trans * 2 * real),
    ]


def search(
    queue: cl.CommandQueue,
    prepared: PreparedTerms,
    plan: nufft.NufftPlan,
    normalization: multiterm.Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
) -> nufft.BatchPeaks:
    """Spread, FFT (:func:`clperiod.engine.fft.fft_inplace`), power and top-k peaks.

    Parameters
    ----------
    prepared
        The batch's points (:func:`prepare`).
    normalization
        The powers' normalization. psd powers are computed as standard powers
        and scaled by ``psd_scale`` on the host in float64 (peaks) and in the
        plan's precision (``periodograms``), as the one-term path does.
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
    clperiod.periodograms.nufft.BatchPeaks
    """
    n_obj = prepared.n_objects
    grid = spread(queue, prepared, plan, n_rows)
    rows = max(1, n_rows, n_obj * prepared.n_transforms)
    fft_inplace(queue, cla.Array(queue, (rows, plan.n_grid), plan.complex_dtype, data=grid))
    psd = normalization == "psd"
    powers = power(queue, grid, prepared, plan, "standard" if psd else normalization)
    values, indices = nufft._top_k_peaks(queue, powers, n_obj, plan, top_k)
    if periodograms is not None and n_obj:
        cl.enqueue_copy(queue, periodograms, powers)
    queue.finish()
    if psd:
        with np.errstate(invalid="ignore", over="ignore"):  # -inf * 0 of objects not OK
            values *= prepared.psd_scale[:, None]
            if periodograms is not None:
                periodograms *= prepared.psd_scale.astype(plan.dtype)[:, None]
    return nufft.BatchPeaks(prepared.status, values, indices, prepared.psd_scale)
