"""Kepler's equation on the device (Ford 2009): groundwork of the RV models.

:func:`solve` returns the eccentric anomaly ``E`` of ``E - e sin E = M`` for
arrays of any shape (broadcast), with Danby's quartic-convergence iteration
from ``E0 = M + 0.85 e sign(sin M)`` and a bounded number of steps
(``cl_kernels/kepler.mako``). ``full=True`` also returns the sine and cosine
of the true anomaly and a per-element status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyopencl as cl

from . import kernels
from .device import get_context, get_queue, require_fp64, select_devices

__all__ = ["KeplerSolution", "KeplerStatus", "solve"]


class KeplerStatus(enum.IntEnum):
    """Per-element status of :func:`solve` (NaN results unless OK)."""

    OK = 0
    BAD_ECCENTRICITY = 1  # e < 0 or e >= 1
    NOT_FINITE = 2  # M or e is NaN or infinite
    NOT_CONVERGED = 3  # the bounded iteration did not reach 1e-6 (never seen)


@dataclass(frozen=True)
class KeplerSolution:
    """Eccentric anomaly, true anomaly (sine, cosine) and status per element."""

    eccentric_anomaly: np.ndarray
    sin_true_anomaly: np.ndarray
    cos_true_anomaly: np.ndarray
    status: np.ndarray


def solve(
    mean_anomaly,
    eccentricity,
    *,
    precision: Literal["fp64", "fp32"] = "fp64",
    full: bool = False,
    device=None,
) -> np.ndarray | KeplerSolution:
    """Solve ``E - e sin E = M`` element-wise on the device.

    Parameters
    ----------
    mean_anomaly, eccentricity
        Arrays (or scalars) broadcast against each other; radians, any
        revolution (``M`` is range-reduced exactly on the device).
    precision
        ``"fp64"`` (residual ``|E - e sin E - M|`` at rounding level, below
        1e-12 up to e = 0.99) or ``"fp32"``.
    full
        Also return the true anomaly's sine and cosine and the status.
    device
        Device selection; the first selected device is used.

    Returns
    -------
    ndarray or KeplerSolution
        ``E`` in the revolution of ``M`` (same shape as the broadcast
        inputs; NaN where ``e`` is outside ``[0, 1)`` or an input is not
        finite), or the full :class:`KeplerSolution`.
    """
    if precision not in ("fp64", "fp32"):
        raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
    m, e = np.broadcast_arrays(np.asarray(mean_anomaly), np.asarray(eccentricity))
    for name, a in (("mean_anomaly", m), ("eccentricity", e)):
        if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
            raise TypeError(f"{name} must be real numbers, got dtype {a.dtype}")
    info = select_devices(device)[0]
    fp64 = precision == "fp64"
    if fp64:
        require_fp64(info)
    dtype = np.float64 if fp64 else np.float32
    shape, n = m.shape, m.size
    outputs = [np.empty(n, dtype=dtype) for _ in range(3)] + [np.empty(n, dtype=np.int8)]
    if n:
        context = get_context(info)
        queue = get_queue(info)
        (kernel,) = kernels.get_kernels(context, "kepler", ("kepler_solve",),
                                        real="double" if fp64 else "float")
        mf = cl.mem_flags
        inputs = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR,
                            hostbuf=np.ascontiguousarray(a.ravel(), dtype=dtype)) for a in (m, e)]
        buffers = [cl.Buffer(context, mf.WRITE_ONLY, out.nbytes) for out in outputs]
        kernel.set_args(*inputs, np.int64(n), *buffers)
        cl.enqueue_nd_range_kernel(queue, kernel, (n,), None)
        for out, buffer in zip(outputs, buffers):
            cl.enqueue_copy(queue, out, buffer)
        queue.finish()
    big_e, sin_f, cos_f, status = (out.reshape(shape) for out in outputs)
    if not full:
        return big_e
    return KeplerSolution(big_e, sin_f, cos_f, status)
