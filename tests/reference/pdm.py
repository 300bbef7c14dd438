"""Reference phase dispersion minimization (Stellingwerf 1978), written for clarity.

Restates ``shared/spec/methods_next.md`` §5 (cited as "spec") in float64 NumPy; the oracle
that the OpenCL PDM kernels are tested against. Nothing here imports ``clperiod`` or a peer.

Definition (Stellingwerf 1978, ApJ 224, 953: its sigma^2, s^2 and Theta; spec §5.1). Fold at
frequency ``f`` (phases ``frac(f t)``) and cut the phase circle into ``nbins`` bins of width
``1 / nbins``; ``ncovers`` covers repeat that bin set shifted by ``c / (nbins ncovers)``,
``c = 0 .. ncovers - 1``, so that every point lies in ``ncovers`` of the ``M = nbins
ncovers`` samples. With ``n_k`` points and variance ``s_k^2`` in sample ``k``::

    s^2     = sum_k (n_k - 1) s_k^2 / (sum_k n_k - M)        (pooled sample variance)
    sigma^2 = sum_j (y_j - ybar)^2 / (N - 1)                 (variance of the data)
    theta = s^2 / sigma^2                                    (minimum at the period)

Weights (P4J's generalisation; the paper is unweighted). With ``v = dy**-2`` a sample's
``(n_k - 1) s_k^2`` becomes ``SS_k = sum v (y - ybar_k)^2`` about its weighted mean and its
``n_k - 1`` becomes ``V1_k - V2_k / V1_k`` (``V1 = sum v``, ``V2 = sum v^2``); ``sigma^2``
is ``SS / (V1 - V2 / V1)`` over all points. Equal weights give the formulas above.

Conventions (the ``convention`` argument; spec §5.2):

* ``"stellingwerf"`` (default): samples with at least 2 points enter both sums. A sample
  with one point adds 0 to both (``SS_k = 0``, ``n_k - 1 = 0``), so the only choice is that
  empty samples do not count in ``M``: ``sum_k n_k - M`` is ``sum_k (n_k - 1)`` over the
  occupied samples. Weighted.
* ``"p4j"``: P4J's ``PDM1`` (``P4J.periodogram(method="PDM1")``): weighted, only samples
  with **3** or more points count (a 2-point sample is dropped from both sums), no covers.
* ``"pyastronomy"``: PyAstronomy's ``PyPDM.pdmEquiBinCover``: unweighted; ``M`` counts
  every sample, empty or with one point (``sum_{n_k > 1} n_k - M``), and ``sigma^2`` is that
  of the data listed twice (``2 SS / (2N - 1)``). ``PyPDM.pdmEquiBin`` equals
  ``"stellingwerf"`` with one cover when every bin holds 3 points or more (it merges
  sparser bins with a neighbour, which this reference does not do).

Undefined values are NaN: ``sigma^2 = 0`` (constant ``y``) or no degree of freedom left in
the samples (``sum_k n_k - M <= 0``, e.g. fewer points than bins). Under white Gaussian
noise with one cover, ``(N - M) theta / (N - 1) ~ Beta((N - M)/2, (M - 1)/2)``
(Schwarzenberg-Czerny 1997, ApJ 489, 941).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from reference.phase_bins import (
    FloatArray,
    IntArray,
    as_frequencies,
    cover_bin_index,
    inverse_variance,
    phase_bin_index,
    phases,
    weighted_bin_moments,
)

Convention = Literal["stellingwerf", "p4j", "pyastronomy"]
#: Fewest points for a sample to enter the sums, per convention.
MIN_SAMPLE_POINTS = {"stellingwerf": 2, "p4j": 3, "pyastronomy": 2}


def total_variance(y: FloatArray, weights: FloatArray) -> float:
    """Unbiased weighted variance ``SS / (V1 - V2 / V1)`` (``SS / (N - 1)`` unweighted)."""
    v1, v2 = np.sum(weights), np.sum(weights**2)
    mean = np.sum(weights * y) / v1
    return float(np.sum(weights * (y - mean) ** 2) / (v1 - v2 / v1))


def _check(nbins: int, ncovers: int, convention: str) -> None:
    if convention not in MIN_SAMPLE_POINTS:
        raise ValueError(f"convention must be one of {sorted(MIN_SAMPLE_POINTS)}")
    if int(nbins) != nbins or nbins < 2:
        raise ValueError("nbins must be an integer >= 2")
    if int(ncovers) != ncovers or ncovers < 1:
        raise ValueError("ncovers must be an integer >= 1")
    if convention == "p4j" and ncovers != 1:
        raise ValueError("P4J's PDM has no covers: ncovers must be 1")


def sample_sums(phase: FloatArray, y: FloatArray, weights: FloatArray, nbins: int,
                ncovers: int, phase_dtype: DTypeLike = np.float64
                ) -> tuple[IntArray, FloatArray, FloatArray]:
    """Per (frequency, sample): count, ``SS_k`` and ``V1_k - V2_k / V1_k``.

    Samples are ordered cover by cover, ``k = c nbins + b``; shape ``(n_freq, M)``.
    """
    counts, squares, dof = [], [], []
    for cover in range(ncovers):
        if ncovers == 1:
            index = phase_bin_index(phase, nbins, phase_dtype)
        else:
            index = cover_bin_index(phase, nbins, ncovers, cover)
        count, v1, v2, _, ss = weighted_bin_moments(index, y, weights, nbins)
        with np.errstate(invalid="ignore", divide="ignore"):
            dof.append(np.where(count > 0, v1 - v2 / v1, 0.0))
        counts.append(count)
        squares.append(ss)
    return np.hstack(counts), np.hstack(squares), np.hstack(dof)


def theta_from_samples(count: IntArray, squares: FloatArray, dof: FloatArray,
                       variance: float, convention: Convention = "stellingwerf"
                       ) -> FloatArray:
    """Theta from the per-sample sums of :func:`sample_sums` and the data's variance."""
    used = count >= MIN_SAMPLE_POINTS[convention]
    numerator = np.sum(np.where(used, squares, 0.0), axis=1)
    if convention == "pyastronomy":
        denominator = np.sum(np.where(used, count, 0), axis=1) - count.shape[1]
    else:
        denominator = np.sum(np.where(used, dof, 0.0), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = numerator / denominator / variance
    return np.where((denominator > 0) & (variance > 0), theta, np.nan)


def pdm(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, frequency: ArrayLike,
        nbins: int = 10, ncovers: int = 1, convention: Convention = "stellingwerf",
        phase_dtype: DTypeLike = np.float64) -> FloatArray:
    """Stellingwerf's PDM statistic theta at each trial frequency (minimum is best).

    Parameters
    ----------
    t, y, dy
        The light curve; ``dy=None`` for equal weights (``"pyastronomy"`` ignores ``dy``).
    frequency
        Trial frequencies (cycles per unit of ``t``), positive.
    nbins, ncovers
        Bins per cover and number of covers (``M = nbins ncovers`` samples).
    convention
        ``"stellingwerf"``, ``"p4j"`` or ``"pyastronomy"`` (module docstring).
    phase_dtype
        ``np.float32`` folds and bins as P4J does (``"p4j"`` comparisons); default float64.

    Returns
    -------
    numpy.ndarray
        theta per frequency; NaN where undefined (module docstring).
    """
    _check(nbins, ncovers, convention)
    y = np.asarray(y, dtype=float)
    weights = inverse_variance(None if convention == "pyastronomy" else dy, y.size)
    phase = phases(t, as_frequencies(frequency), phase_dtype)
    count, squares, dof = sample_sums(phase, y, weights, nbins, ncovers, phase_dtype)
    variance = total_variance(y, weights)
    if convention == "pyastronomy":
        variance *= 2.0 * (y.size - 1) / (2.0 * y.size - 1)
    return theta_from_samples(count, squares, dof, variance, convention)


def beta_parameters(npoints: int, nbins: int) -> tuple[float, float]:
    """Parameters ``(a, b)`` of the Beta law of ``(N - M) theta / (N - 1)`` for white
    Gaussian noise with one cover and every bin occupied (Schwarzenberg-Czerny 1997)."""
    return (npoints - nbins) / 2.0, (nbins - 1) / 2.0
