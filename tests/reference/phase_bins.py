"""Folding and phase-bin sums shared by the PDM, AOV and conditional entropy references.

Written for clarity in float64 NumPy (``shared/spec/methods_next.md`` §5-§7, cited as
"spec"). Phases are ``frac(f t)`` of the times as given: the reference epoch is ``t = 0``
(shift ``t`` first to fold about another epoch). Arrays over trial frequencies have shape
``(n_frequencies, n_points)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def phases(t: ArrayLike, frequency: ArrayLike, phase_dtype: DTypeLike = np.float64
           ) -> FloatArray:
    """Phases ``frac(f t)`` in ``[0, 1)``, shape ``(len(frequency), len(t))``.

    ``phase_dtype=np.float32`` reproduces P4J's float32 folding (its ``PDM`` and ``AOV``):
    ``fmodf(t, 1 / f) * f`` with ``t``, ``f``, ``1 / f`` and the product rounded to float32
    (spec §5.2, §7.3); that is ``frac`` only for ``t >= 0`` (``fmodf`` of a negative time
    is negative, and P4J then drops the point or indexes out of its bins): compare with
    P4J on positive times. The default is the exact float64 ``frac(f t)``.
    """
    if np.dtype(phase_dtype) == np.float32:
        t32 = np.asarray(t, np.float32)
        f32 = np.atleast_1d(np.asarray(frequency, np.float32))
        period32 = (np.float32(1.0) / f32)[:, None]
        folded = (np.fmod(t32[None, :], period32) * f32[:, None]).astype(np.float32)
        return folded.astype(np.float64)
    cycles = np.outer(np.asarray(frequency, np.float64), np.asarray(t, np.float64))
    return cycles - np.floor(cycles)


def phase_bin_index(phase: FloatArray, nbins: int, phase_dtype: DTypeLike = np.float64
                    ) -> IntArray:
    """Bin ``floor(nbins * phase) mod nbins`` (a phase rounded up to 1 goes to bin 0).

    With ``phase_dtype=np.float32`` the product is rounded to float32 first, as P4J does.
    """
    scaled = phase * nbins
    if np.dtype(phase_dtype) == np.float32:
        scaled = (phase.astype(np.float32) * np.float32(nbins)).astype(np.float64)
    return np.floor(scaled).astype(np.int64) % nbins


def cover_bin_index(phase: FloatArray, nbins: int, ncovers: int, cover: int) -> IntArray:
    """Bin of cover ``cover`` (spec §5.1): the bins of width ``1 / nbins`` shifted by
    ``cover / (nbins ncovers)``, cyclic.

    Computed from the fine index ``q = floor(nbins ncovers phase)`` as
    ``floor((q - cover) / ncovers) mod nbins``, which equals
    ``floor(nbins frac(phase - cover / (nbins ncovers)))`` without a second rounding.
    """
    fine = phase_bin_index(phase, nbins * ncovers)
    return np.floor_divide(fine - cover, ncovers) % nbins


def bin_sums(index: IntArray, values: FloatArray, nbins: int) -> FloatArray:
    """``sum values`` per (frequency, bin), shape ``(n_frequencies, nbins)``.

    ``index`` is ``(n_frequencies, n_points)``; ``values`` is ``(n_points,)`` or the same
    shape as ``index``. Sums run in point order (``numpy.bincount``).
    """
    nfreq = index.shape[0]
    flat = (index + nbins * np.arange(nfreq)[:, None]).ravel()
    weights = np.broadcast_to(values, index.shape).ravel()
    return np.bincount(flat, weights=weights, minlength=nfreq * nbins).reshape(nfreq, nbins)


def bin_counts(index: IntArray, nbins: int) -> IntArray:
    """Number of points per (frequency, bin), shape ``(n_frequencies, nbins)``."""
    nfreq = index.shape[0]
    flat = (index + nbins * np.arange(nfreq)[:, None]).ravel()
    return np.bincount(flat, minlength=nfreq * nbins).reshape(nfreq, nbins)


def weighted_bin_moments(index: IntArray, y: FloatArray, weights: FloatArray, nbins: int
                         ) -> tuple[IntArray, FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per (frequency, bin): count ``n``, ``V1 = sum v``, ``V2 = sum v^2``, weighted mean
    and ``SS = sum v (y - mean)^2``.

    Two passes (means first, then squared deviations), so ``SS`` has no cancellation. The
    mean of an empty bin is NaN and its ``SS`` is 0.
    """
    count = bin_counts(index, nbins)
    v1 = bin_sums(index, weights, nbins)
    v2 = bin_sums(index, weights**2, nbins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = bin_sums(index, weights * y, nbins) / v1
    deviation = y[None, :] - np.take_along_axis(mean, index, axis=1)
    squares = bin_sums(index, weights[None, :] * deviation**2, nbins)
    return count, v1, v2, mean, squares


def inverse_variance(dy: ArrayLike | None, n: int) -> FloatArray:
    """``dy**-2`` broadcast to ``n`` points (ones without errors)."""
    if dy is None:
        return np.ones(n)
    return np.broadcast_to(np.asarray(dy, dtype=float) ** -2.0, (n,)).copy()


def as_frequencies(frequency: ArrayLike) -> FloatArray:
    """Trial frequencies as a 1-d float64 array; raises for non-positive or non-finite ones."""
    frequency = np.atleast_1d(np.asarray(frequency, dtype=float))
    if frequency.ndim != 1 or not np.all(np.isfinite(frequency)) or np.any(frequency <= 0):
        raise ValueError("frequency must be a 1-d array of finite positive values")
    return frequency
