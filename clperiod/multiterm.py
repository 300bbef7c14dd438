"""Multi-term (Fourier series) Lomb-Scargle periodogram of one light curve.

The model at each frequency is an offset (with ``fit_mean``) plus ``nterms``
harmonics, fitted by weighted least squares exactly as astropy's
``LombScargle(..., nterms=K).power(method="chi2")`` does; the power is the
reduction of chi^2 in astropy's normalizations. The device evaluates the
weighted harmonic sums and solves each frequency's small normal system
(``cl_kernels/multiterm.mako``, fp64). :class:`clperiod.astropy.LombScargle`
uses it for ``nterms != 1``.
"""

from __future__ import annotations

import operator

import numpy as np
import pyopencl as cl

from . import kernels
from .device import get_context, get_queue, require_fp64, select_devices, upload
from .grid import FrequencyGrid
from .host import check_choice
from .lombscargle import Normalization

__all__ = ["MAX_NTERMS", "multiterm_power"]

#: Most harmonics (the normal system has up to 2 * MAX_NTERMS + 1 unknowns,
#: held in private memory).
MAX_NTERMS = 8
_WG = 64


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
        (frequency 0, fewer distinct phases than unknowns).

    Raises
    ------
    ValueError
        Bad arguments, non-finite data, non-positive ``dy``, fewer points
        than unknowns, or a device without fp64.
    """
    nterms = operator.index(nterms)
    if not 0 <= nterms <= MAX_NTERMS:
        raise ValueError(f"nterms must be in [0, {MAX_NTERMS}], got {nterms}")
    if nterms == 0 and not fit_mean:
        raise ValueError("nterms = 0 needs fit_mean=True (the model would be empty)")
    check_choice("normalization", normalization, Normalization)
    if not isinstance(grid, FrequencyGrid):
        raise TypeError(f"grid must be a FrequencyGrid, got {type(grid).__name__}")
    t, y, w = _weighted(t, y, dy, 2 * nterms + int(fit_mean))
    if fit_mean or center_data:
        y = y - np.dot(w, y) / w.sum()
    chi2_ref = float(np.dot(w, y * y))
    info = select_devices(device)[0]
    require_fp64(info)
    context, queue = get_context(info), get_queue(info)
    (kernel,) = kernels.get_kernels(context, "multiterm", ("multiterm_power",),
                                    nterms=nterms, bias=int(fit_mean), wg=_WG)
    pending: list[cl.Event] = []
    inputs = [upload(queue, a, pending) for a in (t - np.median(t), w, w * y)]
    out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 8 * grid.nf)
    kernel.set_args(*inputs, np.int32(t.size), np.float64(grid.fmin), np.float64(grid.df),
                    np.int32(grid.nf), out)
    cl.enqueue_nd_range_kernel(queue, kernel, (-(-grid.nf // _WG) * _WG,), (_WG,))
    p = np.empty(grid.nf)
    cl.enqueue_copy(queue, p, out, is_blocking=True)
    return _normalized(p, chi2_ref, normalization)


def _weighted(t, y, dy, unknowns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked float64 ``t``, ``y`` and the weights ``dy^-2``."""
    t = np.asarray(t, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    dy = np.ones_like(t) if dy is None else np.broadcast_to(
        np.asarray(dy, dtype=np.float64), t.shape).ravel()
    if y.shape != t.shape:
        raise ValueError(f"t and y differ in length: {t.size} and {y.size}")
    if not (np.isfinite(t).all() and np.isfinite(y).all() and np.isfinite(dy).all()):
        raise ValueError("t, y and dy must be finite")
    if (dy <= 0).any():
        raise ValueError("dy must be positive")
    if t.size < unknowns:
        raise ValueError(f"{t.size} points cannot fit a model of {unknowns} parameters")
    return t, y, dy**-2.0


def _normalized(p: np.ndarray, chi2_ref: float, normalization: str) -> np.ndarray:
    """astropy's normalizations of the chi^2 reduction ``p``."""
    if normalization == "psd":
        return 0.5 * p
    with np.errstate(divide="ignore", invalid="ignore"):
        if normalization == "standard":
            return p / chi2_ref
        if normalization == "model":
            return p / (chi2_ref - p)
        return -np.log(1 - p / chi2_ref)
