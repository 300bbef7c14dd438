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

1. The one-term path's preparation (``nufft.prepare_on_device``, or
   ``nufft.prepare`` on the host for devices without fp64): standardized
   weights and values, unwrapped cells ``n_grid df tt`` and the phases
   ``e^{2 pi i f_s tt}``; objects with fewer points than the model's unknowns
   and one more (:func:`clperiod.periodograms.multiterm.min_points`) are
   TOO_FEW_POINTS here.
2. :func:`spread` (``nufft_spread_data_window`` for ``h <= K``,
   ``nufft_spread_window`` for ``h > K``, of ``cl_kernels/nufft.mako``, at
   harmonic ``h``) onto ``3 K`` fine grids per object.
3. The FFT of every grid row (:func:`clperiod.engine.fft.fft_inplace`).
4. :func:`power` (``nufft_terms_power`` of ``cl_kernels/nufft_terms.mako``):
   the ``nf`` central modes divided by the kernel's Fourier transform, then
   the normal equations of the direct multi-term kernel, solved by Cholesky.

A Cholesky pivot at or below the transforms' tolerance
(:attr:`~clperiod.periodograms.nufft.NufftPlan.degenerate`) gives NaN, as a
singular system does in the direct kernel, and so does ``f = 0``. The
normal equations of the lowest frequencies (``f T`` below about 0.5) are
nearly singular and amplify the transforms' errors: each object's bins there
whose estimated error exceeds the bound take the exact least-squares powers
of :mod:`clperiod.periodograms.lowfreq` (written over the kernel's before the
peak search).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from clperiod.catalog import Catalog
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo
from clperiod.engine.planner import Buffer
from clperiod.periodograms import lowfreq, multiterm, nufft

__all__ = ["batch_buffers", "power", "search", "spread"]


def _first_transform(h: int, nterms: int) -> int:
    """The fine-grid row of an object where the transforms at ``h x`` start:
    data and window pairs for ``h <= K``, then the windows ``h > K``."""
    return 2 * (h - 1) if h <= nterms else nterms + h - 1


def spread(
    queue: cl.CommandQueue,
    points: nufft.DevicePoints,
    plan: nufft.NufftPlan,
    nterms: int,
    grid: cl.MemoryObjectHolder,
) -> None:
    """Queue the spreading of the ``3 K`` transforms of every object into ``grid`` (stage 2).

    ``grid`` receives ``(n_objects, 3 K, n_grid)``
    interleaved complex values in the order of ``cl_kernels/nufft_terms.mako``;
    rows past the batch's are left unwritten.
    """
    nufft.clear_for_scatter(queue, points, plan, grid, 3 * nterms)
    for h in range(1, 2 * nterms + 1):
        vectors = "data_window" if h <= nterms else "window"
        nufft.spread_harmonic(
            queue, points, plan, grid, vectors, h, 3 * nterms, _first_transform(h, nterms)
        )


def power(
    queue: cl.CommandQueue,
    modes: cl.MemoryObjectHolder,
    points: nufft.DevicePoints,
    plan: nufft.NufftPlan,
    nterms: int,
    out: cl.MemoryObjectHolder,
    normalization: multiterm.Normalization = "standard",
    fft_scale: float = 1.0,
) -> None:
    """Queue the correction and the multi-term power of the FFT'd grids ``modes``
    into ``out`` (stage 4).

    Parameters
    ----------
    modes
        The FFT of :func:`spread`'s grids, scaled by ``fft_scale``.
    out
        Receives the powers, ``(n_objects, nf)`` in the plan's precision: NaN
        for objects with fewer points than
        :func:`~clperiod.periodograms.multiterm.min_points`.
    normalization
        ``"standard"``, ``"model"`` or ``"log"`` (psd powers are the standard
        ones times the psd factor, which :func:`search` applies).

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
        nterms=nterms,
        fit_mean=points.fit_mean,
        normalization=normalization,
    )
    nf = plan.grid.nf
    global_size, local_size = nufft._range(nf, points.n_objects, nufft._work_group(queue))
    kernel(
        queue,
        global_size,
        local_size,
        modes,
        nufft._device_correction(queue, plan, fft_scale),
        points.yy,
        points.n_points,
        np.int32(multiterm.min_points(nterms, points.fit_mean)),
        np.int32(nf),
        np.int32(plan.n_grid),
        np.int32(0 if plan.grid.fmin == 0 else -1),
        plan.dtype(plan.degenerate),
        out,
    )


def batch_buffers(plan: nufft.NufftPlan, nterms: int, top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points).

    Per object the ``3 K`` fine grids (twice: the FFT may need as much again),
    the ``nf`` powers, the peaks and the per-object inputs; per point those
    of the one-term path (``nufft.batch_buffers``).
    """
    real = np.dtype(plan.dtype).itemsize
    one_term = {b.name: b for b in nufft.batch_buffers(plan, True, top_k)}
    return [
        Buffer("fine grids", per_item=3 * nterms * plan.n_grid * 2 * real, count=2),
        one_term["powers"],
        one_term["peaks"],
        one_term["object inputs"],
        one_term["points"],
    ]


def search(
    info: DeviceInfo,
    catalog: Catalog,
    plan: nufft.NufftPlan,
    nterms: int,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
    normalization: multiterm.Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
    owned: tuple[int, int, int, int] | None = None,
    cutoff: np.ndarray | None = None,
) -> nufft.BatchPeaks:
    """Prepare, spread, FFT (:func:`clperiod.engine.fft.fft_inplace`), power and
    top-k peaks of a batch of objects on one device.

    Parameters
    ----------
    catalog
        The batch (validated); rows are sorted in time here where needed.
    nterms
        Harmonics of the model, 1 to :data:`~clperiod.periodograms.multiterm.MAX_NTERMS`.
    fit_mean, center_data, use_dy
        The model, as in astropy, and whether ``dy**-2`` weighs the points.
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
        Fine-grid rows to transform at least, so that batches of fewer
        objects reuse one FFT plan.
    owned
        A piece of a larger grid, as in :func:`clperiod.periodograms.nufft.search`.
    cutoff
        Per object, the frequency below which the bins take exact powers
        (default: :func:`clperiod.periodograms.lowfreq.nufft_cutoffs` of the
        batch).

    Returns
    -------
    clperiod.periodograms.nufft.BatchPeaks
    """
    exact = lowfreq.ExactPowers(
        lambda queue, grid, points, out, norm: power(queue, grid, points, plan, nterms, out, norm),
        catalog,
        plan.grid,
        lowfreq.Model(nterms, fit_mean, center_data, use_dy),
        plan,
        cutoff,
    )
    return nufft.search_with(
        info,
        catalog,
        plan,
        nufft.Transforms(
            per_object=3 * nterms,
            spread=lambda queue, points, grid: spread(queue, points, plan, nterms, grid),
            power=exact,
            min_points=multiterm.min_points(nterms, fit_mean),
        ),
        model={"fit_mean": fit_mean, "center_data": center_data, "use_dy": use_dy},
        normalization=normalization,
        top_k=top_k,
        periodograms=periodograms,
        n_rows=n_rows,
        owned=owned,
    )
