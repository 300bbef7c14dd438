"""Multi-term (Fourier series) Lomb-Scargle periodogram of one light curve.

The model at each frequency is an offset (with ``fit_mean``) plus ``nterms``
harmonics, fitted by weighted least squares exactly as astropy's
``LombScargle(..., nterms=K).power(method="chi2")`` does; the power is the
reduction of chi^2 in astropy's normalizations. The device evaluates the
weighted harmonic sums and solves each frequency's small normal system
(``cl_kernels/multiterm.mako``, fp64). :class:`clperiod.astropy.LombScargle`
uses it for ``nterms != 1``; :func:`multiterm_max_power` evaluates many
light curves on the same times (a bootstrap's resamplings) in one ND-range.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator

import numpy as np
import pyopencl as cl

from . import kernels
from .device import get_context, get_queue, require_fp64, select_devices, upload
from .grid import FrequencyGrid
from .host import check_choice
from .lombscargle import Normalization
from .standardize import Standardized, standardize

__all__ = ["MAX_NTERMS", "multiterm_max_power", "multiterm_power"]

#: Most harmonics (the normal system has up to 2 * MAX_NTERMS + 1 unknowns,
#: held in private memory).
MAX_NTERMS = 8
_WG = 64
#: Most powers (light curves x frequencies) one kernel call of
#: :func:`multiterm_max_power` writes (32 MiB of float64).
_MAX_BLOCK = 1 << 22
#: Light curves per work-item of a batch on a CPU device: they share the
#: cosines and sines of the times (1000 bootstrap resamplings x 1000
#: frequencies on 2 PoCL cores: 2.0-2.2 s with 1, 0.52-0.57 s with 8). Other
#: devices take 1: on an H100 (1000 x 300 points x 3750 frequencies) 2 per
#: item saved 5-8 %, while 4 and 8 spilled registers at 6 terms (1.8x and 17x
#: slower).
_CPU_ROWS = 8


def multiterm_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
    normalization: Normalization = "standard",
    device=None,
) -> np.ndarray:
    """Multi-term Lomb-Scargle power of one light curve on a uniform grid.

    Parameters
    ----------
    t, y : array_like
        Times and values (finite, float64).
    dy : array_like or None
        Uncertainties (positive); None weighs every point 1.
    grid : FrequencyGrid
        Ordinary frequencies ``fmin + k df``.
    nterms : int
        Harmonics of the model, 0 to :data:`MAX_NTERMS` (0 needs ``fit_mean``).
    fit_mean, center_data : bool
        Constant term in the model; subtract the weighted mean first
        (astropy's meaning: either one centres the data).
    normalization : {"standard", "model", "log", "psd"}
        astropy's normalizations of ``p = chi2_ref - chi2``: ``p / chi2_ref``,
        ``p / (chi2_ref - p)``, ``-log(1 - p / chi2_ref)`` and ``p / 2``.
    device
        Device selection (see :func:`clperiod.select_devices`); the first
        selected device computes. It must support fp64.

    Returns
    -------
    ndarray
        ``(grid.nf,)`` float64 powers; NaN where the model is degenerate
        (frequency 0, fewer distinct phases than unknowns), and everywhere
        when ``y`` does not vary within float64 resolution
        (:data:`clperiod.standardize.RESOLUTION`). The values are centred and
        scaled per light curve first, so a common scale of ``y`` and ``dy``
        or an offset of centred ``y`` leaves the powers unchanged.

    Raises
    ------
    ValueError
        Bad arguments, non-finite data, non-positive ``dy``, fewer points
        than unknowns, or a device without fp64.
    """
    nterms = _check_options(nterms, fit_mean, normalization, grid)
    t, y, dy = _checked(t, np.ravel(y)[None], dy, 2 * nterms + int(fit_mean))
    values = _standardized(y, dy, fit_mean or center_data)
    ((_, z),) = _power_blocks(t, values, grid, nterms, fit_mean, device, block_rows=1)
    return _normalized(z, values, normalization)[0]


def multiterm_max_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
    normalization: Normalization = "standard",
    device=None,
) -> np.ndarray:
    """Highest multi-term power of each of many light curves sharing their times.

    Every light curve is evaluated as :func:`multiterm_power` would, but
    all of them in one 2-D ND-range (frequency x light curve; on a CPU
    device each work-item takes 8 light curves, which share the cosines and
    sines of the times), in blocks of at most 2**22 powers (32 MiB), and
    only each light curve's maximum comes back: the bootstrap of
    :class:`clperiod.astropy.LombScargle` costs one kernel call instead of
    one Python round trip per resampling.

    Parameters
    ----------
    t : array_like, shape (n,)
        Times shared by every light curve (finite).
    y : array_like, shape (n_curves, n)
        Values, one light curve per row (finite).
    dy : array_like, shape (n,) or (n_curves, n), or None
        Uncertainties (positive); None weighs every point 1.
    grid : FrequencyGrid
        Ordinary frequencies ``fmin + k df``.
    nterms : int
        Harmonics of the model, 0 to :data:`MAX_NTERMS` (0 needs ``fit_mean``).
    fit_mean, center_data : bool
        As :func:`multiterm_power` (each light curve is centred on its own
        weighted mean).
    normalization : {"standard", "model", "log", "psd"}
        As :func:`multiterm_power`.
    device
        Device selection (see :func:`clperiod.select_devices`); the first
        selected device computes. It must support fp64.

    Returns
    -------
    ndarray
        ``(n_curves,)`` float64: each light curve's largest power on the
        grid, skipping frequencies where its model is degenerate (NaN only if
        it is degenerate at every frequency, or ``y`` does not vary): the
        maximum of
        ``multiterm_power(t, y[i], dy[i], ...)`` for each row ``i``.

    Raises
    ------
    ValueError
        As :func:`multiterm_power`, or ``y`` not two-dimensional.
    """
    nterms = _check_options(nterms, fit_mean, normalization, grid)
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError(f"y must have shape (n_curves, n), got {y.shape}")
    t, y, dy = _checked(t, y, dy, 2 * nterms + int(fit_mean))
    values = _standardized(y, dy, fit_mean or center_data)
    maxima = np.empty(y.shape[0])
    block_rows = max(1, _MAX_BLOCK // grid.nf)
    for block, z in _power_blocks(t, values, grid, nterms, fit_mean, device, block_rows):
        # every normalization increases with z: normalizing the maxima is exact
        maxima[block] = _normalized(np.fmax.reduce(z, axis=1), values, normalization, block)
    return maxima


def _check_options(nterms, fit_mean: bool, normalization: str, grid: FrequencyGrid) -> int:
    """Checked ``nterms`` (as int), ``normalization`` and ``grid``."""
    nterms = operator.index(nterms)
    if not 0 <= nterms <= MAX_NTERMS:
        raise ValueError(f"nterms must be in [0, {MAX_NTERMS}], got {nterms}")
    if nterms == 0 and not fit_mean:
        raise ValueError("nterms = 0 needs fit_mean=True (the model would be empty)")
    check_choice("normalization", normalization, Normalization)
    if not isinstance(grid, FrequencyGrid):
        raise TypeError(f"grid must be a FrequencyGrid, got {type(grid).__name__}")
    return nterms


def _standardized(y: np.ndarray, dy: np.ndarray | None, center: bool) -> Standardized:
    """Each light curve (row of ``y``) centred (when ``center``) and scaled
    (:func:`clperiod.standardize.standardize`): the powers keep their precision
    for any finite scale and offset."""
    n_curves, n = y.shape
    offsets = np.arange(n_curves + 1, dtype=np.int64) * n
    return standardize(y.ravel(), None if dy is None else dy.ravel(), offsets, center)


def _power_blocks(t, values: Standardized, grid: FrequencyGrid, nterms: int, fit_mean: bool,
                  device, block_rows: int) -> Iterator[tuple[slice, np.ndarray]]:
    """Each block of ``block_rows`` light curves: its rows and standard powers
    ``(n_rows, nf)`` (NaN for light curves that do not vary); one kernel call
    per block."""
    n_curves = values.yy.size
    w = values.wn.reshape(n_curves, t.size)
    wy = (values.wn * values.u).reshape(n_curves, t.size)
    info = select_devices(device)[0]
    require_fp64(info)
    context, queue = get_context(info), get_queue(info)
    per_item = _CPU_ROWS if n_curves > 1 and info.kind == "cpu" else 1
    (kernel,) = kernels.get_kernels(context, "multiterm", ("multiterm_power",),
                                    nterms=nterms, bias=int(fit_mean), wg=_WG, rows=per_item)
    pending: list[cl.Event] = []  # queued uploads, passed by each block's blocking read
    t_buffer = upload(queue, t - np.median(t), pending)
    for start in range(0, n_curves, block_rows):
        block = slice(start, start + block_rows)
        n_rows = w[block].shape[0]
        inputs = [upload(queue, a, pending) for a in (w[block], wy[block])]
        out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 8 * n_rows * grid.nf)
        kernel.set_args(t_buffer, *inputs, np.int32(t.size), np.float64(grid.fmin),
                        np.float64(grid.df), np.int32(grid.nf), np.int32(n_rows), out)
        cl.enqueue_nd_range_kernel(queue, kernel,
                                   (-(-grid.nf // _WG) * _WG, -(-n_rows // per_item)), (_WG, 1))
        p = np.empty((n_rows, grid.nf))
        cl.enqueue_copy(queue, p, out, is_blocking=True)
        pending.clear()
        with np.errstate(invalid="ignore", divide="ignore"):
            z = p / values.yy[block, None]
        yield block, np.where(values.flat[block, None], np.nan, z)


def _checked(t, y: np.ndarray, dy, unknowns: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Checked float64 ``t`` (1-D), ``y`` (``(n_curves, n)``) and ``dy``
    (None, or broadcast to ``y``)."""
    t = np.asarray(t, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64)
    if y.shape[-1:] != t.shape:
        raise ValueError(f"t and y differ in length: {t.size} and {y.shape[-1]}")
    if dy is not None:
        dy = np.broadcast_to(np.asarray(dy, dtype=np.float64), y.shape)
    if not (np.isfinite(t).all() and np.isfinite(y).all()
            and (dy is None or np.isfinite(dy).all())):
        raise ValueError("t, y and dy must be finite")
    if dy is not None and (dy <= 0).any():
        raise ValueError("dy must be positive")
    if t.size < unknowns:
        raise ValueError(f"{t.size} points cannot fit a model of {unknowns} parameters")
    return t, y, dy


def _normalized(z: np.ndarray, values: Standardized, normalization: str,
                rows: slice = slice(None)) -> np.ndarray:
    """astropy's normalizations of the standard powers ``z`` of light curves
    ``rows`` (``z``'s first axis; ``psd`` needs their weighted sums of squares)."""
    if normalization == "psd":
        yy = values.weighted_sum_of_squares()[rows]
        return 0.5 * z * yy.reshape(yy.shape + (1,) * (z.ndim - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        if normalization == "standard":
            return z
        if normalization == "model":
            return z / (1 - z)
        return -np.log1p(-z)
