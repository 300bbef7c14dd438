"""SuperSmoother smoothers on the device, for data already sorted by phase.

:func:`single_pass_smooth` runs the single-pass "generalized validation"
SuperSmoother (seed spec §4) and :func:`supsmu_smooth` Friedman's original
(§2.3) on many independent problems at once, one work-item each. The period
search (:func:`clperiod.supersmoother`) inlines the same code
(``cl_kernels/supersmoother.mako``) into its search kernels.

Both are free of units (:func:`scale_free`): every problem's values and
weights are normalised on the host before the kernel, so scaling y, or the
weights, or offsetting y, changes the smoothed values in the same way and
nothing else (the seed's slope guard compares a weighted variance with an
absolute threshold, spec §2.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.engine import kernels
from clperiod.engine.devices import get_context, get_queue, require_fp64, select_devices, upload
from clperiod.periodograms.inputs import segment_max, segment_sum

__all__ = ["ScaleFree", "scale_free", "single_pass_smooth", "supsmu_smooth"]


@dataclass(frozen=True)
class ScaleFree:
    """Values and weights of independent problems with their units removed.

    Problem ``p`` holds ``values = (y - centre[p]) / unit[p]``, with weighted
    mean 0 and weighted rms 1 (all 0 if y is constant), and weights with
    mean 1.
    """

    values: np.ndarray
    weights: np.ndarray
    centre: np.ndarray  # per problem, in the units of y
    unit: np.ndarray  # per problem, in the units of y
    owner: np.ndarray  # problem of each point

    def restore(self, values: np.ndarray) -> np.ndarray:
        """``values`` (per point, in the normalised units) in the units of y."""
        return values * self.unit[self.owner] + self.centre[self.owner]


def scale_free(y: np.ndarray, w: np.ndarray, offsets: np.ndarray) -> ScaleFree:
    """Normalise the values and weights of every problem ``offsets[p]:offsets[p+1]``.

    The weights are divided by their largest value, then by their mean. The
    values are scaled by a power of two (exactly) to magnitudes below 1,
    shifted by the problem's first value and then by the weighted mean of
    the differences (so an offset far above the spread costs no precision),
    and divided by their weighted rms. Every step is exact or rounds relative
    to the spread, and nothing overflows for finite float64 input.

    Parameters
    ----------
    y, w
        float64 values and positive weights.
    offsets
        ``(n_problems + 1,)`` problem boundaries.
    """
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    nonempty = lengths > 0
    w = w / segment_max(w, offsets)[owner]
    with np.errstate(invalid="ignore", divide="ignore"):
        w = w / (segment_sum(w, offsets) / lengths)[owner]
        magnitude = np.ldexp(1.0, np.frexp(segment_max(np.abs(y), offsets))[1])
        scaled = y / magnitude[owner]
        first = np.zeros(len(lengths))
        first[nonempty] = scaled[offsets[:-1][nonempty]]
        shifted = scaled - first[owner]
        mean = np.where(nonempty, segment_sum(w * shifted, offsets) / lengths, 0.0)
        centred = shifted - mean[owner]
        rms = np.sqrt(segment_sum(w * centred * centred, offsets) / lengths)
    rms = np.where(rms > 0, rms, 1.0)
    return ScaleFree(centred / rms[owner], w, (first + mean) * magnitude, rms * magnitude, owner)


class _Target:
    """The device, precision and queue of one call."""

    def __init__(self, precision: str, device):
        checks.choice("precision", precision, ("fp64", "fp32"))
        self.info = select_devices(device)[0]
        self.fp64 = precision == "fp64"
        if self.fp64:
            require_fp64(self.info)
        self.dtype = np.float64 if self.fp64 else np.float32
        self.context = get_context(self.info)
        self.queue = get_queue(self.info)


def _params(fp64: bool) -> dict:
    """Render parameters of ``supersmoother.mako`` (the search-only ones at defaults)."""
    return dict(real="double" if fp64 else "float", wg=32, nmax=128, compat=False, arbitrary=False)


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
        The smoothed values (NaN for problems of at most 9 points, spec §4.4),
        equivariant to a scale and offset of ``y`` and invariant to a scale
        of ``w`` (:func:`scale_free`).

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
    """Validate, normalise, upload and run one of the per-problem smoother kernels.

    ``iper`` (the original smoother's mode) is passed, with its 8n scratch
    buffer, only to ``supsmu_batch``.
    """
    x, y, w = (np.asarray(a, dtype=np.float64) for a in (x, y, w))
    offsets = np.asarray(offsets, dtype=np.int64)
    _validate(x, y, w, offsets, alpha)
    normalised = scale_free(y, w, offsets)
    y, w = normalised.values, normalised.weights
    run = _Target(precision, device)
    dtype, context, queue = run.dtype, run.context, run.queue
    out = np.empty(len(x), dtype=dtype)
    if len(x) == 0:
        return out
    (kernel,) = kernels.get_kernels(context, "supersmoother", (name,), **_params(run.fp64))
    mf = cl.mem_flags
    buffers = [
        upload(queue, a)
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
    return normalised.restore(out.astype(np.float64)).astype(dtype)


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
