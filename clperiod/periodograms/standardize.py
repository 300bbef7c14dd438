"""Per-object centring and scaling of values that keep full precision at any scale.

Least-squares periodogram statistics do not change when ``y`` and ``dy`` are
scaled together, nor (for centred data) when ``y`` is offset. Before any sum,
each object's values are therefore expressed in its own units:

1. the values are scaled by the power of two of their largest magnitude
   (exact; a value below 2**-1022 of the largest may lose digits that
   float64 could not resolve in the object anyway), so no sum or square
   overflows;
2. centred data: the object's first value is subtracted (exact for the
   values within a factor of two of it, so a large common offset costs no
   digits);
3. the weights are ``(min(dy) / dy)**2`` (in ``(0, 1]``), normalised to sum 1;
4. the weighted mean is subtracted, then the weighted mean of the result
   again (the second pass removes the rounding of the first);
5. the centred values are scaled by a power of two that brings their
   weighted mean square into ``[1/4, 1)``.

The device preparation of the Lomb-Scargle kernel inputs
(``cl_kernels/lsprepare.mako``) does the same steps in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clperiod.periodograms.inputs import segment_reduce, segment_sum

__all__ = ["RESOLUTION", "Standardized", "standardize"]

#: An object does not vary when the weighted RMS of its centred values is at
#: most this fraction of the weighted RMS of its values: one float64 epsilon,
#: about one unit in the last place (the values do not resolve a variation).
RESOLUTION = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Standardized:
    """Values of objects (segments of flat arrays) in per-object units.

    Attributes
    ----------
    u : ndarray
        Flat centred (when asked) values ``(y - ybar) / 2**exponent`` of
        every row.
    wn : ndarray
        Flat weights, normalised to sum 1 per object.
    yy : ndarray
        Per object ``sum(wn * u**2)``, in ``[1/4, 1)`` (0 for constant objects).
    exponent : ndarray of int
        Per object, the power of two of the unit of ``u``.
    weight_total : ndarray
        Per object ``sum(dy**-2) * min(dy)**2`` (the sum of the unnormalised
        weights; the object's row count without ``dy``).
    dy_min : ndarray
        Per object, the smallest uncertainty (1 without ``dy``).
    flat : ndarray of bool
        Per object: the values do not vary within float64 resolution
        (:data:`RESOLUTION`), or the object has no rows.
    center : ndarray
        Per object, the value subtracted from ``y`` (its weighted mean; 0
        for uncentred data), so ``y = center + u * 2**exponent``.
    """

    u: np.ndarray
    wn: np.ndarray
    yy: np.ndarray
    exponent: np.ndarray
    weight_total: np.ndarray
    dy_min: np.ndarray
    flat: np.ndarray
    center: np.ndarray

    def weighted_sum_of_squares(self) -> np.ndarray:
        """Per object ``sum(dy**-2 * (y - ybar)**2)`` in the values' units
        (the psd normalization's ``YY``; ``ybar = 0`` for uncentred data)."""
        with np.errstate(over="ignore"):
            spread = np.ldexp(np.sqrt(self.yy), self.exponent) / self.dy_min
            return self.weight_total * spread * spread


def standardize(
    y: np.ndarray, dy: np.ndarray | None, offsets: np.ndarray, center: bool
) -> Standardized:
    """Centre (when ``center``) and scale each object's values (module notes).

    Parameters
    ----------
    y : ndarray
        Flat float64 values (finite).
    dy : ndarray or None
        Flat float64 uncertainties (finite, > 0); None weighs every row 1.
    offsets : ndarray
        ``(n_objects + 1,)`` row offsets of the objects.
    center : bool
        Subtract each object's weighted mean.

    Returns
    -------
    Standardized
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    first = offsets[:-1][lengths > 0]

    def per_row(values: np.ndarray) -> np.ndarray:
        return np.repeat(values, lengths)

    exponent = np.frexp(segment_reduce(np.maximum, np.abs(y), offsets, 0.0))[1]
    scaled = np.ldexp(y, -per_row(exponent))
    reference = np.zeros(lengths.size)
    if center:
        reference[lengths > 0] = scaled[first]
    u = scaled - per_row(reference)
    if dy is None:
        dy_min = np.ones(lengths.size)
        w = np.ones_like(u)
    else:
        dy_min = segment_reduce(np.minimum, dy, offsets, 1.0)
        w = per_row(dy_min) / dy
        w *= w
    weight_total = segment_sum(w, offsets)
    with np.errstate(invalid="ignore", divide="ignore"):  # objects without rows: 0 / 0
        wn = w / per_row(weight_total)
        if center:
            mean = segment_sum(w * u, offsets) / weight_total
            u -= per_row(mean)
            residual = segment_sum(wn * u, offsets)
            yy = np.maximum(segment_sum(wn * u * u, offsets) - residual * residual, 0.0)
            u -= per_row(residual)
            reference += mean + residual
        else:
            yy = segment_sum(wn * u * u, offsets)
    flat = (lengths == 0) | (yy <= RESOLUTION**2 * segment_sum(wn * scaled * scaled, offsets))
    unit = np.frexp(np.sqrt(yy))[1]
    return Standardized(
        u=np.ldexp(u, -per_row(unit)),
        wn=wn,
        yy=np.ldexp(yy, -2 * unit),
        exponent=exponent + unit,
        weight_total=weight_total,
        dy_min=dy_min,
        flat=flat,
        center=np.ldexp(reference, exponent),
    )
