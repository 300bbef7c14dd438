"""Reference conditional entropy periodogram (Graham et al. 2013), written for clarity.

Restates ``shared/spec/methods_next.md`` §6 (cited as "spec") in float64 NumPy; the oracle
that the OpenCL conditional entropy kernels are tested against. Nothing here imports
``clperiod`` or a peer.

Definition (Graham, Drake, Mahabal et al. 2013, MNRAS 434, 2629, §2; spec §6.1). Rescale
``y`` to ``[0, 1]`` by its minimum and maximum, fold at frequency ``f`` (phases
``frac(f t)``) and cut the unit square into ``phase_bins x mag_bins`` cells. With ``p_ij``
the fraction of the points in phase bin ``i`` and magnitude bin ``j`` and
``p_i = sum_j p_ij``, the conditional entropy of magnitude given phase is::

    H_c = sum_ij p_ij ln(p_i / p_ij)          (empty cells add 0; minimum at the period)

The magnitude bin is ``floor(mag_bins y_n)``, and the maximum point (``y_n = 1``) goes to
the last bin. ``H_c`` ignores ``dy`` and is invariant to ``y -> a y + c`` for ``a > 0``
(and for ``a < 0``, which mirrors the magnitude bins, except for points on bin edges).
Constant ``y`` has no magnitude scale: NaN.

Peers' variants (spec §6.2, §6.3), each its own function:

* :func:`cuvarbase_entropy`: cuvarbase's standard kernel,
  ``H = sum_nm N_nm ln(dm_m N_n / N_nm) / sum_nm N_nm`` over overlapped counts: a point in
  bins ``(n, m)`` also counts in phase bins ``n - 1 .. n - phase_overlap`` (cyclic) and
  magnitude bins ``m - 1 .. max(0, m - mag_overlap)``; ``N_n = sum_m N_nm``. Magnitude bin
  ``m`` then spans ``[m, min(m + 1 + mag_overlap, mag_bins)) / mag_bins``, and ``dm_m`` is
  that width (the spec's "reduced near the top magnitude bin"; ``1 / mag_bins`` without
  overlap, when ``H = H_c - ln(mag_bins)``). cuvarbase puts the maximum point one past
  the last magnitude bin (spec §6.2 [QUIRK]); here it goes to the last bin.
* :func:`periodfind_entropy`: periodfind's ``ConditionalEntropy`` with ``normalize=True``
  (its default): ``y_n = 0.999 (y - min)/(max - min) + 5e-4``; each point is added to
  phase bins ``(i + a) mod phase_bins``, ``a < phase_extent``, and magnitude bins
  ``(j + b) mod mag_bins``, ``b < mag_extent`` (both forward and cyclic);
  ``p_ij = count_ij / (N phase_extent mag_extent)``; no bin-width term. periodfind folds
  ``frac(t / P)``; here ``frac(f t)`` with ``f = 1 / P``.

cuvarbase's ``weighted``, ``balanced_magbins`` and ``compute_log_prob`` variants are not
restated: the spec describes them too loosely to reproduce.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from reference.phase_bins import FloatArray, IntArray, as_frequencies, phase_bin_index, phases


def _check_bins(**bins: int) -> None:
    for name, value in bins.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1")


def rescaled(y: ArrayLike) -> FloatArray | None:
    """``(y - min y) / (max y - min y)`` in ``[0, 1]``; None for constant ``y``."""
    y = np.asarray(y, dtype=float)
    span = np.max(y) - np.min(y)
    if not span > 0:
        return None
    return (y - np.min(y)) / span


def magnitude_bin(y_n: FloatArray, mag_bins: int) -> IntArray:
    """``floor(mag_bins y_n)``, the top point (``y_n = 1``) in the last bin."""
    return np.minimum(np.floor(y_n * mag_bins).astype(np.int64), mag_bins - 1)


def cell_counts(phase_index: IntArray, mag_index: IntArray, phase_bins: int, mag_bins: int
                ) -> FloatArray:
    """Counts per (frequency, phase bin, magnitude bin), shape ``(n_freq, phase_bins,
    mag_bins)``; ``mag_index`` is per point (``(n_points,)``) or per (frequency, point)."""
    nfreq = phase_index.shape[0]
    cell = phase_index * mag_bins + np.broadcast_to(mag_index, phase_index.shape)
    flat = (cell + phase_bins * mag_bins * np.arange(nfreq)[:, None]).ravel()
    counts = np.bincount(flat, minlength=nfreq * phase_bins * mag_bins)
    return counts.reshape(nfreq, phase_bins, mag_bins).astype(float)


def entropy_from_counts(counts: FloatArray, mag_widths: FloatArray | None = None
                        ) -> FloatArray:
    """``sum N_ij ln(w_j N_i / N_ij) / sum N_ij`` per frequency (``w_j = 1`` by default),
    with ``N_i = sum_j N_ij``; empty cells add 0."""
    row = np.sum(counts, axis=2, keepdims=True)
    widths = np.ones(counts.shape[2]) if mag_widths is None else mag_widths
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = counts * np.log(widths * row / counts)
    total = np.sum(counts, axis=(1, 2))
    return np.sum(np.where(counts > 0, terms, 0.0), axis=(1, 2)) / total


def conditional_entropy(t: ArrayLike, y: ArrayLike, frequency: ArrayLike,
                        phase_bins: int = 10, mag_bins: int = 5) -> FloatArray:
    """Graham et al.'s conditional entropy ``H_c`` at each trial frequency (minimum is best).

    Parameters
    ----------
    t, y
        The light curve (no weights: ``H_c`` counts points).
    frequency
        Trial frequencies (cycles per unit of ``t``), positive.
    phase_bins, mag_bins
        Cells of the phase x magnitude partition (defaults: cuvarbase's).

    Returns
    -------
    numpy.ndarray
        ``H_c`` in nats per frequency, in ``[0, ln mag_bins]``; NaN for constant ``y``.
    """
    _check_bins(phase_bins=phase_bins, mag_bins=mag_bins)
    frequency = as_frequencies(frequency)
    y_n = rescaled(y)
    if y_n is None:
        return np.full(frequency.size, np.nan)
    phase_index = phase_bin_index(phases(t, frequency), phase_bins)
    counts = cell_counts(phase_index, magnitude_bin(y_n, mag_bins), phase_bins, mag_bins)
    return entropy_from_counts(counts)


def cuvarbase_entropy(t: ArrayLike, y: ArrayLike, frequency: ArrayLike, phase_bins: int = 10,
                      mag_bins: int = 5, phase_overlap: int = 0, mag_overlap: int = 0
                      ) -> FloatArray:
    """cuvarbase's conditional entropy with bin-width term and overlaps (module docstring)."""
    _check_bins(phase_bins=phase_bins, mag_bins=mag_bins, phase_overlap=phase_overlap + 1,
                mag_overlap=mag_overlap + 1)
    frequency = as_frequencies(frequency)
    y_n = rescaled(y)
    if y_n is None:
        return np.full(frequency.size, np.nan)
    phase_index = phase_bin_index(phases(t, frequency), phase_bins)
    mag_index = magnitude_bin(y_n, mag_bins)
    counts = np.zeros((frequency.size, phase_bins, mag_bins))
    for shift_m in range(mag_overlap + 1):
        shifted_m = mag_index - shift_m
        keep = shifted_m >= 0
        for shift_p in range(phase_overlap + 1):
            shifted_p = (phase_index[:, keep] - shift_p) % phase_bins
            counts += cell_counts(shifted_p, shifted_m[keep], phase_bins, mag_bins)
    bins = np.arange(mag_bins)
    widths = (np.minimum(bins + 1 + mag_overlap, mag_bins) - bins) / mag_bins
    return entropy_from_counts(counts, widths)


def periodfind_entropy(t: ArrayLike, y: ArrayLike, frequency: ArrayLike, phase_bins: int = 10,
                       mag_bins: int = 10, phase_extent: int = 1, mag_extent: int = 1
                       ) -> FloatArray:
    """periodfind's conditional entropy, ``normalize=True`` (module docstring)."""
    _check_bins(phase_bins=phase_bins, mag_bins=mag_bins, phase_extent=phase_extent,
                mag_extent=mag_extent)
    frequency = as_frequencies(frequency)
    y_n = rescaled(y)
    if y_n is None:
        return np.full(frequency.size, np.nan)
    phase_index = phase_bin_index(phases(t, frequency), phase_bins)
    mag_index = np.floor((0.999 * y_n + 5e-4) * mag_bins).astype(np.int64)
    counts = np.zeros((frequency.size, phase_bins, mag_bins))
    for shift_m in range(mag_extent):
        for shift_p in range(phase_extent):
            counts += cell_counts((phase_index + shift_p) % phase_bins,
                                  (mag_index + shift_m) % mag_bins, phase_bins, mag_bins)
    return entropy_from_counts(counts)
