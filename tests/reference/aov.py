"""Reference phase-binned analysis of variance (Schwarzenberg-Czerny 1989), for clarity.

Restates ``shared/spec/methods_next.md`` §7 (cited as "spec") in float64 NumPy; the oracle
that the OpenCL AOV kernels are tested against. Nothing here imports ``clperiod`` or a peer.

Definition (Schwarzenberg-Czerny 1989, MNRAS 241, 153: its s1, s2 and Theta; spec §7.1). Fold at
frequency ``f`` (phases ``frac(f t)``), cut the phase into ``r`` bins with ``n_k`` points
and means ``ybar_k``; ``ybar`` is the overall mean::

    s1 = sum_k n_k (ybar_k - ybar)^2               (between bins, r - 1 degrees of freedom)
    s2 = sum_k sum_{j in k} (y_j - ybar_k)^2       (within bins, N - r degrees of freedom)
    theta = (N - r) / (r - 1) * s1 / s2            (maximum at the period)

Under white Gaussian noise ``theta ~ F(r - 1, N - r)``.

Conventions (the ``convention`` argument):

* ``"textbook"`` (default): ``r`` is the number of **occupied** bins (an empty bin has no
  mean and takes no degree of freedom), so the F law holds exactly whatever the sampling.
  With ``dy`` the means are weighted by ``v = dy**-2`` and so are both sums
  (``s1 = sum_k V_k (ybar_k - ybar)^2``, ``s2 = sum v (y - ybar_k)^2``): the analysis of
  variance of a weighted least-squares step model, for which the F law still holds when
  ``dy`` is right up to a common factor. ``dy=None`` is the paper's unweighted statistic.
* ``"p4j"``: P4J's ``AOV`` (``P4J.periodogram(method="AOV")``, spec §7.3): only bins with
  2 or more points enter ``s1`` and ``s2``; with ``dy`` the bin and overall means are
  weighted but ``s1 = sum n_k (...)^2`` and ``s2`` stay unweighted; the prefactor uses the
  nominal ``nbins`` and is an **integer division** ``(N - nbins) // (nbins - 1)`` (P4J
  compiles with C division of two integers; not in the spec, found by running P4J 1.1.2).
* ``"periodfind"``: periodfind's ``AOV(n_phase, phase_bin_extent)`` (spec §7.2):
  unweighted, each point is added to bins ``(k + a) mod nbins``, ``a < extent``; empty
  bins are skipped; the prefactor keeps the raw ``N`` and the nominal ``nbins``. Computed
  here in float64 with centred sums (periodfind sums ``x^2`` in float32).

Undefined values are NaN: fewer than 2 usable bins, ``N <= r``, or ``s1 = s2 = 0``
(constant ``y``). ``s2 = 0 < s1`` (a noiseless step curve) gives ``inf``.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from reference.phase_bins import (
    FloatArray,
    IntArray,
    as_frequencies,
    bin_counts,
    bin_sums,
    inverse_variance,
    phase_bin_index,
    phases,
    weighted_bin_moments,
)

Convention = Literal["textbook", "p4j", "periodfind"]
CONVENTIONS = ("textbook", "p4j", "periodfind")


def _check(nbins: int, extent: int, convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {list(CONVENTIONS)}")
    if int(nbins) != nbins or nbins < 2:
        raise ValueError("nbins must be an integer >= 2")
    if int(extent) != extent or not 1 <= extent <= nbins:
        raise ValueError("extent must be an integer in [1, nbins]")
    if extent != 1 and convention != "periodfind":
        raise ValueError("extent > 1 is periodfind's convention only")


def f_ratio(between: FloatArray, within: FloatArray, npoints: int, nbins: FloatArray
            ) -> FloatArray:
    """``(N - r) / (r - 1) * s1 / s2``; NaN where ``r < 2``, ``N <= r`` or ``s1 = s2 = 0``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        theta = (npoints - nbins) / (nbins - 1) * between / within
    defined = (nbins >= 2) & (npoints > nbins) & ((between > 0) | (within > 0))
    return np.where(defined, theta, np.nan)


def textbook(index: IntArray, y: FloatArray, weights: FloatArray, nbins: int
             ) -> FloatArray:
    """Weighted AOV with ``r`` = occupied bins (unweighted when all weights are 1)."""
    count, v1, _, mean, within = weighted_bin_moments(index, y, weights, nbins)
    overall = np.sum(weights * y) / np.sum(weights)
    occupied = count > 0
    between = np.sum(np.where(occupied, v1 * (mean - overall) ** 2, 0.0), axis=1)
    return f_ratio(between, np.sum(within, axis=1), y.size, np.sum(occupied, axis=1))


def p4j(index: IntArray, y: FloatArray, weights: FloatArray, nbins: int) -> FloatArray:
    """P4J's AOV: weighted means, unweighted sums, bins of 2+ points, integer prefactor."""
    count, _, _, mean, _ = weighted_bin_moments(index, y, weights, nbins)
    overall = np.sum(weights * y) / np.sum(weights)
    used = count >= 2
    deviation = y[None, :] - np.take_along_axis(mean, index, axis=1)
    within = np.sum(np.where(used, bin_sums(index, deviation**2, nbins), 0.0), axis=1)
    between = np.sum(np.where(used, count * (mean - overall) ** 2, 0.0), axis=1)
    prefactor = (y.size - nbins) // (nbins - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return prefactor * between / within


def periodfind(index: IntArray, y: FloatArray, nbins: int, extent: int) -> FloatArray:
    """periodfind's AOV: each point in ``extent`` consecutive bins, nominal ``r``, raw N."""
    spread = np.concatenate([(index + a) % nbins for a in range(extent)], axis=1)
    values = np.tile(y, extent)
    count = bin_counts(spread, nbins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = bin_sums(spread, values, nbins) / count
    overall = np.mean(y)
    between = np.sum(np.where(count > 0, count * (mean - overall) ** 2, 0.0), axis=1)
    deviation = values[None, :] - np.take_along_axis(mean, spread, axis=1)
    within = np.sum(deviation**2, axis=1)
    return f_ratio(between, within, y.size, np.full(between.shape, nbins))


def aov(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, frequency: ArrayLike,
        nbins: int = 10, convention: Convention = "textbook", extent: int = 1,
        phase_dtype: DTypeLike = np.float64) -> FloatArray:
    """Phase-binned AOV statistic theta at each trial frequency (maximum is best).

    Parameters
    ----------
    t, y, dy
        The light curve; ``dy=None`` for equal weights (``"periodfind"`` ignores ``dy``;
        ``"p4j"`` with ``dy`` is P4J's ``use_errorbars=1``).
    frequency
        Trial frequencies (cycles per unit of ``t``), positive.
    nbins
        Phase bins.
    convention
        ``"textbook"``, ``"p4j"`` or ``"periodfind"`` (module docstring).
    extent
        periodfind's ``phase_bin_extent`` (bins each point is added to).
    phase_dtype
        ``np.float32`` folds and bins as P4J does; default float64.

    Returns
    -------
    numpy.ndarray
        theta per frequency; NaN or inf where undefined (module docstring).
    """
    _check(nbins, extent, convention)
    y = np.asarray(y, dtype=float)
    weights = inverse_variance(None if convention == "periodfind" else dy, y.size)
    phase = phases(t, as_frequencies(frequency), phase_dtype)
    index = phase_bin_index(phase, nbins, phase_dtype)
    if convention == "p4j":
        return p4j(index, y, weights, nbins)
    if convention == "periodfind":
        return periodfind(index, y, nbins, extent)
    return textbook(index, y, weights, nbins)


def pdm_theta_to_aov(theta_pdm: FloatArray, npoints: int, nbins: ArrayLike) -> FloatArray:
    """Unweighted AOV theta from Stellingwerf's PDM theta with one cover (spec §5.1):
    ``(N - r)/(r - 1) (1/x - 1)`` with ``x = (N - r) theta_pdm / (N - 1)``, ``r`` the
    occupied bins (per frequency, or one number)."""
    nbins = np.asarray(nbins)
    x = (npoints - nbins) * theta_pdm / (npoints - 1)
    return (npoints - nbins) / (nbins - 1) * (1.0 / x - 1.0)
