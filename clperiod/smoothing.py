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
from .device import get_context, get_queue, select_devices
from .grid import FrequencyGrid

__all__ = ["single_pass_smooth", "supsmu_smooth", "single_pass_periodogram", "FUSED_MAX_POINTS"]

#: Longest light curve of the fused (local-memory) search kernel.
FUSED_MAX_POINTS = 128
_WG = 32


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
    _validate(x, y, w, offsets, alpha, precision)
    info = select_devices(device)[0]
    fp64 = precision == "fp64"
    if fp64 and not info.fp64:
        raise ValueError(f"precision='fp64' needs double precision, which {info.label} lacks")
    dtype = np.float64 if fp64 else np.float32
    out = np.empty(len(x), dtype=dtype)
    if len(x) == 0:
        return out
    context, queue = get_context(info), get_queue(info)
    (kernel,) = kernels.get_kernels(context, "supersmoother", (name,), **_params(fp64))
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


def _validate(x, y, w, offsets, alpha, precision) -> None:
    if precision not in ("fp64", "fp32"):
        raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
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
    if catalog.dy is None:
        raise ValueError("the SuperSmoother search needs uncertainties dy")
    if int(catalog.lengths.max(initial=0)) > FUSED_MAX_POINTS:
        raise ValueError(f"the fused kernel holds at most {FUSED_MAX_POINTS} points per object")
    if not 0 <= alpha <= 10:
        raise ValueError(f"alpha must be in [0, 10], got {alpha}")
    info = select_devices(device)[0]
    fp64 = precision == "fp64"
    if precision not in ("fp64", "fp32"):
        raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
    if fp64 and not info.fp64:
        raise ValueError(f"precision='fp64' needs double precision, which {info.label} lacks")
    dtype = np.float64 if fp64 else np.float32
    n_obj = catalog.n_objects
    lengths = catalog.lengths
    owner = np.repeat(np.arange(n_obj), lengths)
    starts = catalog.offsets[:-1]
    w = 1.0 / (catalog.dy * catalog.dy)
    nonempty = lengths > 0
    t0 = np.zeros(n_obj)
    t0[nonempty] = np.minimum.reduceat(catalog.t, starts[nonempty])
    tau = catalog.t - t0[owner]
    w_sum = np.bincount(owner, w, n_obj)
    ybar = np.bincount(owner, w * catalog.y, n_obj) / w_sum
    chi0 = np.bincount(owner, w * (catalog.y - ybar[owner]) ** 2, n_obj) / np.maximum(lengths, 1)

    context, queue = get_context(info), get_queue(info)
    (kernel,) = kernels.get_kernels(context, "supersmoother", ("sp_search_local",),
                                    **_params(fp64))
    mf = cl.mem_flags

    def upload(array):
        array = np.ascontiguousarray(array if len(array) else np.zeros(1, array.dtype))
        return cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)

    if fp64:
        phase_args = [upload(tau), np.float64(grid.fmin), np.float64(grid.df)]
    else:
        a = grid.fmin * tau - np.round(grid.fmin * tau)
        b = grid.df * tau - np.round(grid.df * tau)
        b_hi = b.astype(np.float32)
        phase_args = [upload(a.astype(np.float32)), upload(b_hi),
                      upload((b - b_hi).astype(np.float32))]
    power = np.empty((n_obj, grid.nf), dtype=dtype)
    out = cl.Buffer(context, mf.WRITE_ONLY, max(power.nbytes, 1))
    blocks = -(-grid.nf // _WG)
    # the buffers must outlive the launch: keep them referenced until the copy below
    inputs = [
        *phase_args, upload(catalog.y.astype(dtype)), upload(w.astype(dtype)),
        upload(starts.astype(np.int32)), upload(lengths.astype(np.int32)),
        upload(chi0.astype(dtype)),
    ]
    kernel.set_args(*inputs, np.int32(blocks), np.int32(grid.nf), dtype(alpha), out)
    cl.enqueue_nd_range_kernel(queue, kernel, (n_obj * blocks * _WG,), (_WG,))
    cl.enqueue_copy(queue, power, out, is_blocking=True)
    return power
