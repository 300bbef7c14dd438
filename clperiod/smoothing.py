"""SuperSmoother kernels on the device (building blocks of the period search).

:func:`single_pass_smooth` runs the single-pass "generalized validation"
SuperSmoother (seed spec §4) on many independent problems at once, one
work-item each: points already sorted by phase in ``[0, 1)``, periodic
windows. :func:`single_pass_periodogram` inlines the same smoother (a Mako def
in ``cl_kernels/supersmoother.mako``) into a fused fold-sort-smooth kernel for
light curves that fit local memory.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyopencl as cl

from . import kernels
from .catalog import Catalog
from .device import get_context, get_queue, require_fp64, select_devices
from .grid import FrequencyGrid
from .sort import BITONIC_MAX, FoldInputs

__all__ = [
    "single_pass_smooth",
    "supsmu_smooth",
    "single_pass_periodogram",
    "original_periodogram",
    "FUSED_MAX_POINTS",
]

#: Longest light curve of the fused (local-memory) search kernel.
FUSED_MAX_POINTS = 128
_WG = 32


class _Target:
    """The device, precision and queue of one call."""

    def __init__(self, precision: str, device):
        if precision not in ("fp64", "fp32"):
            raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
        self.info = select_devices(device)[0]
        self.fp64 = precision == "fp64"
        if self.fp64:
            require_fp64(self.info)
        self.dtype = np.float64 if self.fp64 else np.float32
        self.context = get_context(self.info)
        self.queue = get_queue(self.info)


def _params(fp64: bool) -> dict:
    return dict(real="double" if fp64 else "float", wg=_WG, nmax=FUSED_MAX_POINTS)


def single_pass_smooth(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    offsets: np.ndarray,
    alpha: float = 9.0,
    *,
    precision: Literal["fp64", "fp32"] = "fp64",
    device=None,
) -> np.ndarray:
    """Smooth every problem ``offsets[p]:offsets[p+1]`` of ``(x, y, w)``.

    Parameters
    ----------
    x
        Phases in ``[0, 1)``, ascending within each problem.
    y, w
        Ordinates and weights (``w > 0``).
    offsets
        ``(n_problems + 1,)`` problem boundaries, ``offsets[0] = 0``.
    alpha
        Bass enhancement in ``[0, 10]``; truncated to an integer (spec §4.1).
    precision
        ``"fp64"`` or ``"fp32"``.
    device
        Device selection; the first selected device is used.

    Returns
    -------
    ndarray
        The smoothed values (NaN for problems of at most 9 points, spec §4.4).

    Raises
    ------
    ValueError
        Mismatched lengths, bad offsets, unsorted or out-of-range phases,
        non-positive or non-finite weights, alpha outside [0, 10], fp64 on a
        device without it.
    """
    return _smooth_batch("sp_smooth_batch", x, y, w, offsets, alpha, precision, device)


def supsmu_smooth(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    offsets: np.ndarray,
    alpha: float = 9.0,
    *,
    periodic: bool = True,
    precision: Literal["fp64", "fp32"] = "fp64",
    device=None,
) -> np.ndarray:
    """Friedman's SuperSmoother with automatic span on every problem (spec §2.3).

    Same inputs as :func:`single_pass_smooth`; ``periodic=False`` is
    Friedman's interval mode (what the reference GPU code runs). ``alpha``
    enhances the bass only for ``0 < alpha <= 10`` and is not truncated. GPU-port
    semantics: no tied-x post-pass, no widening of the scale pair. Problems of
    fewer than 5 points give NaN.
    """
    return _smooth_batch(
        "supsmu_batch", x, y, w, offsets, alpha, precision, device, iper=2 if periodic else 1
    )


def _smooth_batch(name, x, y, w, offsets, alpha, precision, device, iper=None) -> np.ndarray:
    """Validate, upload and run one of the per-problem smoother kernels.

    ``iper`` (the original smoother's mode) is passed, with its 8n scratch
    buffer, only to ``supsmu_batch``.
    """
    x, y, w = (np.asarray(a, dtype=np.float64) for a in (x, y, w))
    offsets = np.asarray(offsets, dtype=np.int64)
    _validate(x, y, w, offsets, alpha)
    run = _Target(precision, device)
    dtype, context, queue = run.dtype, run.context, run.queue
    out = np.empty(len(x), dtype=dtype)
    if len(x) == 0:
        return out
    (kernel,) = kernels.get_kernels(context, "supersmoother", (name,), **_params(run.fp64))
    mf = cl.mem_flags
    buffers = [
        cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.ascontiguousarray(a))
        for a in (x.astype(dtype), y.astype(dtype), w.astype(dtype), offsets.astype(np.int32))
    ]
    smo = cl.Buffer(context, mf.WRITE_ONLY, out.nbytes)
    n_problems = np.int32(len(offsets) - 1)
    if iper is None:
        kernel.set_args(*buffers, n_problems, dtype(alpha), smo)
    else:
        scratch = cl.Buffer(context, mf.READ_WRITE, 8 * out.nbytes)
        kernel.set_args(*buffers, n_problems, np.int32(iper), dtype(alpha), scratch, smo)
    cl.enqueue_nd_range_kernel(queue, kernel, (int(n_problems),), None)
    cl.enqueue_copy(queue, out, smo, is_blocking=True)
    return out


def _validate(x, y, w, offsets, alpha) -> None:
    if not (x.ndim == y.ndim == w.ndim == 1) or not (len(x) == len(y) == len(w)):
        raise ValueError("x, y and w must be 1-D arrays of one length")
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(x):
        raise ValueError("offsets must start at 0 and end at len(x)")
    if np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must be non-decreasing")
    if not (np.isfinite(x).all() and np.isfinite(y).all() and np.isfinite(w).all()):
        raise ValueError("x, y and w must be finite")
    if np.any((x < 0) | (x >= 1)):
        raise ValueError("phases x must lie in [0, 1)")
    if np.any(w <= 0):
        raise ValueError("the single-pass smoother needs weights w > 0")
    inside = np.ones(max(len(x) - 1, 0), dtype=bool)
    inside[offsets[1:-1][offsets[1:-1] > 0] - 1] = False  # no order across problem boundaries
    if np.any(np.diff(x)[inside] < 0):
        raise ValueError("phases must be ascending within each problem")
    if not 0 <= alpha <= 10:
        raise ValueError(f"alpha must be in [0, 10], got {alpha}")


def single_pass_periodogram(
    catalog: Catalog,
    grid: FrequencyGrid,
    alpha: float = 9.0,
    *,
    precision: Literal["fp64", "fp32"] = "fp64",
    device=None,
) -> np.ndarray:
    """Single-pass SuperSmoother periodogram of every object (fused kernel).

    Folds (phase of ``t - t0``, ``t0`` = earliest time), sorts (stable) and
    smooths in local memory, one work-item per (object, frequency), and
    returns ``power = (n/2)(chi0 - chi2)/chi0`` (spec §3.5) with shape
    ``(n_objects, nf)``. Objects may have at most :data:`FUSED_MAX_POINTS`
    points (longer ones need the global-memory path) and need ``dy``.
    """
    _check_search(catalog, alpha, FUSED_MAX_POINTS)
    run = _Target(precision, device)
    fp64, dtype, context, queue = run.fp64, run.dtype, run.context, run.queue
    (kernel,) = kernels.get_kernels(context, "supersmoother", ("sp_search_local",),
                                    **_params(fp64))
    search = _SearchInputs(context, catalog, grid, fp64)
    n_obj = catalog.n_objects
    power = np.empty((n_obj, grid.nf), dtype=dtype)
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, max(power.nbytes, 1))
    blocks = -(-grid.nf // _WG)
    kernel.set_args(*search.phase_args, search.y, search.w, search.starts, search.lengths,
                    search.chi0, np.int32(blocks), np.int32(grid.nf), dtype(alpha), out)
    cl.enqueue_nd_range_kernel(queue, kernel, (n_obj * blocks * _WG,), (_WG,))
    cl.enqueue_copy(queue, power, out, is_blocking=True)
    return power


def original_periodogram(
    catalog: Catalog,
    grid: FrequencyGrid,
    alpha: float = 9.0,
    *,
    periodic: bool = True,
    precision: Literal["fp64", "fp32"] = "fp64",
    device=None,
) -> np.ndarray:
    """Friedman SuperSmoother periodogram of every object, device-resident.

    Per batch of frequencies: fold and sort (``sort.mako``, local memory, at
    most :data:`clperiod.sort.BITONIC_MAX` points per object), gather phases,
    y and w in phase order into a coalesced [point][frequency] layout, smooth
    every (object, frequency) problem with ``supsmu_search`` (global scratch
    in the same layout) and reduce chi^2 to
    ``power = (n/2)(chi0 - chi2)/chi0``. ``periodic=False`` is Friedman's
    interval mode. Returns ``(n_objects, nf)``.
    """
    _check_search(catalog, alpha, BITONIC_MAX)
    run = _Target(precision, device)
    info, fp64, dtype, context, queue = run.info, run.fp64, run.dtype, run.context, run.queue
    real = "double" if fp64 else "float"
    (fold_sort,) = kernels.get_kernels(context, "sort", ("fold_sort_local",), real=real,
                                       wg=_SORT_WG, nmax=BITONIC_MAX)
    gather, smooth, chi2 = kernels.get_kernels(
        context, "supersmoother", ("gather_sorted", "supsmu_search", "chi2_power"), **_params(fp64)
    )
    search = _SearchInputs(context, catalog, grid, fp64)
    n_obj, n_points = catalog.n_objects, len(catalog.t)
    itemsize = np.dtype(dtype).itemsize
    per_point_frequency = 13 * itemsize + 4  # phase, x, y, w, smo, 8 scratch; order
    budget = min(info.global_mem // 4, info.max_alloc // (8 * itemsize) * per_point_frequency)
    batch = int(max(1, min(grid.nf, budget // max(1, per_point_frequency * n_points))))
    power = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, max(n_obj * grid.nf * itemsize, 1))
    rw = cl.mem_flags.READ_WRITE
    for k0 in range(0, grid.nf, batch):
        nf = min(batch, grid.nf - k0)
        total = max(nf * n_points, 1)
        base = search.upload((nf * catalog.offsets[:-1]).astype(np.int64))
        phase, xs, ys, ws, smo = (cl.Buffer(context, rw, total * itemsize) for _ in range(5))
        order = cl.Buffer(context, rw, total * 4)
        scratch = cl.Buffer(context, rw, 8 * total * itemsize)
        fold_sort.set_args(*search.phase_args, search.starts, search.lengths, base,
                           np.int32(k0), np.int32(nf), phase, order)
        cl.enqueue_nd_range_kernel(queue, fold_sort, (n_obj * nf * _SORT_WG,), (_SORT_WG,))
        gather.set_args(phase, order, search.y, search.w, search.starts, search.lengths, base,
                        np.int32(nf), xs, ys, ws)
        cl.enqueue_nd_range_kernel(queue, gather, (n_obj * nf,), None)
        smooth.set_args(xs, ys, ws, search.lengths, base, np.int32(nf), np.int64(total),
                        np.int32(2 if periodic else 1), dtype(alpha), scratch, smo)
        cl.enqueue_nd_range_kernel(queue, smooth, (n_obj * nf,), None)
        chi2.set_args(ys, ws, smo, search.lengths, base, search.chi0, np.int32(nf),
                      np.int32(k0), np.int32(grid.nf), power)
        cl.enqueue_nd_range_kernel(queue, chi2, (n_obj * nf,), None)
        queue.finish()  # the batch buffers are released at the next iteration
    out = np.empty((n_obj, grid.nf), dtype=dtype)
    cl.enqueue_copy(queue, out, power, is_blocking=True)
    return out


_SORT_WG = 128


def _check_search(catalog: Catalog, alpha: float, max_points: int) -> None:
    if catalog.dy is None:
        raise ValueError("the SuperSmoother search needs uncertainties dy")
    if int(catalog.lengths.max(initial=0)) > max_points:
        raise ValueError(f"this kernel holds at most {max_points} points per object")
    if not 0 <= alpha <= 10:
        raise ValueError(f"alpha must be in [0, 10], got {alpha}")


class _SearchInputs(FoldInputs):
    """Fold inputs plus y, weights ``w = 1/dy^2`` and per-object
    ``chi0 = sum w (y - ybar_w)^2 / n`` (spec §3.1) of a SuperSmoother search."""

    def __init__(self, context: cl.Context, catalog: Catalog, grid: FrequencyGrid, fp64: bool):
        super().__init__(context, catalog, grid, fp64)
        dtype = np.float64 if fp64 else np.float32
        n_obj, lengths = catalog.n_objects, catalog.lengths
        owner = np.repeat(np.arange(n_obj), lengths)
        w = 1.0 / (catalog.dy * catalog.dy)
        ybar = np.bincount(owner, w * catalog.y, n_obj) / np.bincount(owner, w, n_obj)
        chi0 = np.bincount(owner, w * (catalog.y - ybar[owner]) ** 2, n_obj)
        chi0 /= np.maximum(lengths, 1)
        self.y = self.upload(catalog.y.astype(dtype))
        self.w = self.upload(w.astype(dtype))
        self.chi0 = self.upload(chi0.astype(dtype))
