"""Batched one-dimensional complex FFTs of device arrays (the NUFFT's FFT step).

:func:`fft_inplace` transforms each row of a ``complex64`` or ``complex128``
:class:`pyopencl.array.Array` of shape ``(n,)`` or ``(batch, n)``::

    F_k = sum_j a_j exp(isign * 2 pi i j k / n),    k = 0 ... n - 1,

without normalisation; ``isign=+1`` is FINUFFT's type-1 sign, numpy's
``n * numpy.fft.ifft``. Two methods do it:

* ``"vkfft"``: VkFFT on the device, through pyvkfft's OpenCL backend (the
  optional extra ``clperiod[fft]``; pyvkfft is built from source, see
  ``scripts/setup_env.sh``). Plans are cached per (queue, shape, dtype), at most
  :data:`MAX_PLANS` of them: a plan holds compiled kernels and, for long
  transforms, a scratch buffer as large as the array, so two queues never share
  one.
* ``"host"``: :mod:`scipy.fft` on the array mapped into host memory; rows of
  more than :data:`FOUR_STEP_MIN` values, up to :data:`FOUR_STEP_MAX`, in four
  steps (:func:`_four_step`), whose transforms fit the caches and share every
  core even when the batch has fewer rows than cores.

``method="auto"`` takes VkFFT where :func:`available`, except on CPU devices,
whose memory the host method maps without a copy and transforms as fast or
faster. There ``method="vkfft"`` runs only rows longer than the device's local
memory whose length has no prime factor above 13, which VkFFT splits into
several kernel launches: its single-launch kernels for long rows (and those it
launches to set up Bluestein and Rader transforms) keep more per-work-item state
than PoCL's worker-thread stacks hold, and the process dies with a
segmentation fault.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import io
import math
import threading
import warnings
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.fft

from clperiod.engine.staging import in_parts

__all__ = [
    "FOUR_STEP_MAX",
    "FOUR_STEP_MIN",
    "MAX_PLANS",
    "FFTWarning",
    "available",
    "clear_plans",
    "fft_inplace",
    "method_for",
    "unavailable_reason",
]

#: At most this many VkFFT plans are kept (least recently used ones go first).
MAX_PLANS = 8
#: Host rows of more than FOUR_STEP_MIN values, up to FOUR_STEP_MAX (the
#: longest measured), are transformed in four steps (shorter rows fit the
#: caches); the four steps hold a second copy of the rows while they run.
FOUR_STEP_MIN = 1 << 20
FOUR_STEP_MAX = 1 << 25

Method = Literal["auto", "vkfft", "host"]

_lock = threading.Lock()
#: Held while ``sys.stdout`` is redirected (a process-wide setting): two
#: threads redirecting at once would leave it redirected.
_quiet = threading.Lock()
_probes: dict[tuple[cl.Context, cl.Device], str | None] = {}
# (queue, shape, dtype) -> plan, or the reason the host computes that transform
_plans: collections.OrderedDict[tuple[cl.CommandQueue, tuple[int, ...], np.dtype], Any] = (
    collections.OrderedDict()
)


class FFTWarning(UserWarning):
    """VkFFT could not plan a transform, which then ran on the host."""


def _vkfft_app_class() -> Any:
    from pyvkfft.opencl import VkFFTApp

    return VkFFTApp


def _new_app(queue: cl.CommandQueue, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """A VkFFT in-place, unnormalised plan along the last axis; pyvkfft's own
    diagnostics (printed on failure) are dropped, its exception is kept
    (threads plan one at a time while ``sys.stdout`` is redirected).

    Single-precision plans read their twiddle factors from a table computed in
    double precision (VkFFT's ``useLUT``) instead of the device's float32 sines
    and cosines, which are too coarse on some devices for the float32 accuracy
    bound of the NUFFT periodograms."""
    lut = {"useLUT": 1} if np.dtype(dtype) == np.complex64 else {}
    with _quiet, contextlib.redirect_stdout(io.StringIO()):
        return _vkfft_app_class()(shape, dtype, queue, ndim=1, inplace=True, norm=0, **lut)


def _probe(queue: cl.CommandQueue) -> str | None:
    """Why VkFFT cannot run on the queue's device, or None when a small
    transform of a unit impulse gives the expected all-ones row."""
    try:
        _vkfft_app_class()
    except ImportError as error:
        return f"pyvkfft is not installed ({error}); install clperiod[fft]"
    except Exception as error:  # a broken build fails in many ways
        return f"pyvkfft does not import: {type(error).__name__}: {error}"
    impulse = np.zeros(16, np.complex64)
    impulse[0] = 1
    try:
        array = cla.to_device(queue, impulse)
        _new_app(queue, impulse.shape, impulse.dtype).ifft(array, queue=queue)
        result = array.get(queue=queue)
    except Exception as error:  # pyvkfft raises RuntimeError, pyopencl cl.Error
        return f"VkFFT failed on {queue.device.name.strip()}: {type(error).__name__}: {error}"
    if not np.allclose(result, 1, rtol=0, atol=1e-6):
        return f"VkFFT gives wrong results on {queue.device.name.strip()}"
    return None


def unavailable_reason(queue: cl.CommandQueue) -> str | None:
    """Why VkFFT cannot run on the device of ``queue``, or None when it can.

    Checked once per (context, device): pyvkfft must import and transform a
    short row correctly.
    """
    key = (queue.context, queue.device)
    with _lock:
        if key not in _probes:
            _probes[key] = _probe(queue)
        return _probes[key]


def available(queue: cl.CommandQueue) -> bool:
    """Whether VkFFT runs on the device of ``queue`` (see :func:`unavailable_reason`)."""
    return unavailable_reason(queue) is None


def _is_cpu(device: cl.Device) -> bool:
    return bool(device.type & cl.device_type.CPU)


def _is_13_smooth(n: int) -> bool:
    """Whether ``n`` has no prime factor above 13 (VkFFT's native radices)."""
    for prime in (2, 3, 5, 7, 11, 13):
        while n % prime == 0:
            n //= prime
    return n == 1


def _unsafe_on_device(device: cl.Device, n: int, dtype: np.dtype) -> str | None:
    """Why a VkFFT transform of rows of ``n`` would be unsafe, judged before planning."""
    if not _is_cpu(device):
        return None
    if not _is_13_smooth(n):
        return "on a CPU device VkFFT runs only lengths without prime factors above 13"
    if n * dtype.itemsize <= device.local_mem_size:
        return "a row fits the local memory of a CPU device (one VkFFT launch per row)"
    return None


def _unsafe_plan(device: cl.Device, app: Any) -> str | None:
    """Why a VkFFT plan is unsafe on ``device`` (one launch per row on a CPU)."""
    if _is_cpu(device) and (app.nb_axis_upload[0] <= 1 or any(app.use_bluestein_fft)):
        return "VkFFT plans one launch per row, which CPU devices cannot run safely"
    return None


def _short_of_memory(error: Exception) -> bool:
    """Whether a plan failed for want of device memory, which later calls may have."""
    text = str(error).upper()
    return isinstance(error, cl.MemoryError) or "ALLOCAT" in text or "OUT_OF_RESOURCES" in text


def _plan(queue: cl.CommandQueue, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """The cached VkFFT plan for this transform, or a string: why the host does it."""
    key = (queue, shape, dtype)
    with _lock:
        if key in _plans:
            _plans.move_to_end(key)
            return _plans[key]
    reason = unavailable_reason(queue) or _unsafe_on_device(queue.device, shape[-1], dtype)
    plan: Any = reason
    if reason is None:
        try:
            app = _new_app(queue, shape, dtype)
        except Exception as error:  # pyvkfft raises RuntimeError, pyopencl cl.Error
            plan = f"VkFFT cannot plan it: {type(error).__name__}: {error}"
            warnings.warn(
                f"FFT of shape {shape} ({dtype}) runs on the host: {plan}",
                FFTWarning,
                stacklevel=3,
            )
            if _short_of_memory(error):
                return plan  # not kept: the next call plans again
        else:
            plan = _unsafe_plan(queue.device, app) or app
    with _lock:
        _plans[key] = plan
        _plans.move_to_end(key)
        while len(_plans) > MAX_PLANS:
            _plans.popitem(last=False)
    return plan


def clear_plans() -> None:
    """Forget every cached plan (their kernels and scratch buffers are released)."""
    with _lock:
        _plans.clear()


def _check_array(queue: cl.CommandQueue, array: cla.Array) -> None:
    if not isinstance(array, cla.Array):
        raise TypeError(f"array must be a pyopencl.array.Array, not {type(array).__name__}")
    if array.dtype not in (np.complex64, np.complex128):
        raise TypeError(f"array must be complex64 or complex128, not {array.dtype}")
    if array.ndim not in (1, 2):
        raise ValueError(f"array must have shape (n,) or (batch, n), not {array.shape}")
    if array.shape[-1] == 0:
        raise ValueError(f"array rows must not be empty (shape {array.shape})")
    if not array.flags.c_contiguous or array.offset != 0:
        raise ValueError("array must be C-contiguous and start at its buffer's beginning")
    if array.context != queue.context:
        raise ValueError("array must live in the context of queue")


def method_for(
    queue: cl.CommandQueue, shape: tuple[int, ...], dtype: np.dtype | type, method: Method = "auto"
) -> Literal["vkfft", "host"]:
    """The method :func:`fft_inplace` uses for an array of this shape and dtype.

    ``method="vkfft"`` raises a RuntimeError with the reason when VkFFT cannot
    (or must not) run this transform; the first call may compile its plan.
    """
    if method not in ("auto", "vkfft", "host"):
        raise ValueError(f"method must be 'auto', 'vkfft' or 'host', not {method!r}")
    if method == "host" or (method == "auto" and _is_cpu(queue.device)):
        return "host"
    plan = _plan(queue, tuple(int(s) for s in shape), np.dtype(dtype))
    if not isinstance(plan, str):
        return "vkfft"
    if method == "vkfft":
        raise RuntimeError(f"VkFFT cannot run this FFT of shape {tuple(shape)}: {plan}")
    return "host"


def _host_fft_inplace(queue: cl.CommandQueue, array: cla.Array, isign: int) -> None:
    """scipy.fft on the array mapped into host memory (the device's own memory on a
    CPU device; a copy each way on others)."""
    flags = cl.map_flags.READ | cl.map_flags.WRITE
    host, _ = cl.enqueue_map_buffer(
        queue, array.base_data, flags, 0, array.shape, array.dtype, is_blocking=True
    )
    with host.base:  # unmapped on leaving
        rows = host.reshape(-1, host.shape[-1])
        columns = _four_step_columns(rows.shape[1])
        if columns is not None:
            _four_step(rows, columns, isign)
            return
        out = _unnormalised(isign)(rows, axis=-1, overwrite_x=True)
        if not np.shares_memory(out, rows):
            rows[...] = out


def _unnormalised(isign: int) -> Callable[..., np.ndarray]:
    """The unnormalised scipy.fft transform of sign ``isign`` on every core."""
    if isign > 0:
        return functools.partial(scipy.fft.ifft, norm="forward", workers=-1)
    return functools.partial(scipy.fft.fft, norm="backward", workers=-1)


def _divisor_below_root(n: int) -> int:
    """The largest divisor of ``n`` that is at most ``sqrt(n)``."""
    return next(d for d in range(math.isqrt(n), 0, -1) if n % d == 0)


def _four_step_columns(n: int) -> int | None:
    """``n1`` of the four-step transform of rows of ``n = n1 n2`` values, or None
    where the host transforms them whole: ``n`` not above ``FOUR_STEP_MIN`` or
    above ``FOUR_STEP_MAX``, or without a divisor ``n1`` between ``sqrt(n) / 8``
    and ``sqrt(n)``."""
    if not FOUR_STEP_MIN < n <= FOUR_STEP_MAX:
        return None
    n1 = _divisor_below_root(n)
    return n1 if 64 * n1 * n1 >= n else None


def _unit_powers(n: int, rows: int, cols: int, step: int, isign: int) -> np.ndarray:
    """``exp(isign 2 pi i (step r c mod n) / n)``, ``r < rows``, ``c < cols``, from
    exact integer exponents."""
    exponents = np.multiply.outer(np.arange(rows) * step % n, np.arange(cols)) % n
    return np.exp((isign * 2j * np.pi / n) * exponents)


def _four_step(rows: np.ndarray, n1: int, isign: int) -> None:
    """Transform each row of ``rows`` in place in four steps (Bailey's).

    With ``n = n1 n2``, ``j = j1 + n1 j2`` and ``k = k2 + n2 k1``:
    ``F[k] = sum_j1 w_n1^(j1 k1) w_n^(j1 k2) sum_j2 w_n2^(j2 k2) a[j]``
    (``w_m = exp(isign 2 pi i / m)``): transforms of length ``n2`` down the
    columns of each row seen as ``(n2, n1)``, the twiddles ``w_n^(j1 k2)``
    (as two factors, ``k2 = k2a + K k2b``, of small tables), transforms of length
    ``n1`` along its rows (into a new array), and the transposition of the
    ``(n2, n1)`` result into ``F``. The transforms run on every core, the
    twiddles and the transposition in parts on the engine's worker threads.
    """
    batch, n = rows.shape
    n2 = n // n1
    transform = _unnormalised(isign)
    grid = transform(rows.reshape(batch, n2, n1), axis=1, overwrite_x=True)
    near = _divisor_below_root(n2)
    by_k2 = grid.reshape(batch, n2 // near, near, n1)
    first = _unit_powers(n, near, n1, 1, isign).astype(rows.dtype)
    second = _unit_powers(n, n2 // near, n1, near, isign).astype(rows.dtype)

    def twiddle(lo: int, hi: int) -> None:
        part = by_k2[:, lo:hi]
        part *= first
        part *= second[lo:hi, None, :]

    in_parts(n2 // near, twiddle, min_part=1)
    result = transform(grid, axis=2, overwrite_x=False)
    out = rows.reshape(batch, n1, n2)

    def transpose(lo: int, hi: int) -> None:
        out[:, lo:hi] = result[:, :, lo:hi].transpose(0, 2, 1)

    in_parts(n1, transpose, min_part=1)


def fft_inplace(
    queue: cl.CommandQueue, array: cla.Array, isign: int = 1, method: Method = "auto"
) -> None:
    """Replace each row of ``array`` by its unnormalised discrete Fourier transform.

    Parameters
    ----------
    queue
        The queue to run on (VkFFT enqueues its kernels there; the host method
        waits for it and enqueues the unmapping there).
    array
        ``complex64`` or ``complex128``, C-contiguous, shape ``(n,)`` or
        ``(batch, n)``; each row is transformed along the last axis.
    isign
        Sign of the exponent: ``+1`` gives ``F_k = sum_j a_j exp(+2 pi i jk/n)``
        (``n * numpy.fft.ifft``), ``-1`` gives ``numpy.fft.fft``.
    method
        ``"auto"`` (VkFFT where available, except on CPU devices; else the
        host), ``"vkfft"`` (RuntimeError when it cannot or must not run this
        transform) or ``"host"``.

    Raises
    ------
    TypeError
        If ``array`` is not a complex pyopencl array.
    ValueError
        If ``array`` has another shape or layout, lives in another context, or
        ``isign`` or ``method`` is invalid.
    """
    _check_array(queue, array)
    if isign not in (1, -1):
        raise ValueError(f"isign must be +1 or -1, not {isign!r}")
    if array.size == 0:
        return
    if method_for(queue, array.shape, array.dtype, method) == "host":
        _host_fft_inplace(queue, array, isign)
        return
    app = _plan(queue, array.shape, array.dtype)
    if isign > 0:
        app.ifft(array, queue=queue)
    else:
        app.fft(array, queue=queue)
