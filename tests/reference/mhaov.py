"""Reference multi-harmonic analysis of variance periodogram (MHAOV), written for clarity.

This module restates ``shared/spec/methods_next.md`` §3 (cited below as "spec")
in float64 NumPy: the statistic of Schwarzenberg-Czerny (1996) as P4J 1.1.2
computes it, single-band (``P4J.periodogram(method="MHAOV")``) and multiband
(``P4J.MultiBandPeriodogram(method="MHAOV")``). It is the oracle the OpenCL
MHAOV kernels are tested against; nothing here imports ``clperiod`` or P4J.

Statistic (spec §3.1). With weights ``v = dy**-2`` (ones without errors), the
weighted mean ``ybar`` and ``chi2_c = sum v (y - ybar)^2``, the raw statistic
(P4J ``mode=0``) is the weighted sum of squares that the model
``c_0 + sum_h (a_h cos h w t + b_h sin h w t)``, h = 1..H, explains:
``dchi2 = chi2_c - min sum v (y - model)^2``. The F form (``mode=1``) is
``theta = (d2 / d1) dchi2 / max(chi2_c - dchi2, 1e-9)`` with ``d1 = 2H`` and
``d2 = N - 2H - 1``; for white Gaussian noise ``theta ~ F(d1, d2)``.

Two computations of ``dchi2`` are given: :func:`mhaov_raw` follows P4J's
algorithm (spec §3.2: projection of ``(y - ybar) z^H`` onto the polynomials in
``z = exp(i 2 pi frac(f t))`` of degree ``0 .. 2H`` orthogonal on the unit
circle with weights ``v``, built by the Szego recurrence, with its clamp of the
norms at 1e-9), and :func:`mhaov_least_squares` is a plain weighted linear
least-squares fit, the independent check of the first.

Multiband (spec §3.3). P4J fits each band with its own mean and **one**
harmonic whatever ``nharmonics`` is, and uses ``nharmonics`` only in the
degrees of freedom ``d1 = 2 nharmonics``, ``d2_b = N_b - 2 nharmonics - 1``.
Band statistics ``theta_b = (d2_b / d1) dchi2_b / (chi2_c,b - dchi2_b)`` and the
combined ``theta = sum d2_b sum dchi2_b / (d1 (sum chi2_c,b - sum dchi2_b))``
have no clamp. :func:`mhaov_multiband` reproduces that by default
(``fit_harmonics=None``); ``fit_harmonics=nharmonics`` gives the textbook
multiband statistic.

Phases. P4J forms ``frac(t f)`` in float32. ``phase_dtype=np.float32``
reproduces that rounding (``t`` and ``f`` rounded to float32, the product and
``2 pi frac`` formed as P4J's C code forms them), so that the reference can be
compared with P4J closer than the float32 phase error (``~ 4e-7 |t f|`` rad);
the default float64 phases are the statistic itself.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

FloatArray = NDArray[np.float64]
ComplexArray = NDArray[np.complex128]

#: P4J's floor on the norms of the orthogonal polynomials and on ``chi2_c - dchi2``.
NORM_FLOOR = 1e-9
#: The value of pi in P4J's C code, a float32 constant there.
P4J_PI = 3.1415926535897


def inverse_variance(dy: ArrayLike | None, n: int) -> FloatArray:
    """``dy**-2`` broadcast to ``n`` points (ones without errors)."""
    if dy is None:
        return np.ones(n)
    return np.broadcast_to(np.asarray(dy, dtype=float) ** -2.0, (n,)).copy()


def weighted_mean(y: FloatArray, weights: FloatArray) -> float:
    """``sum v y / sum v``."""
    return float(np.sum(weights * y) / np.sum(weights))


def centred_sum_of_squares(y: FloatArray, weights: FloatArray) -> float:
    """``chi2_c = sum v (y - ybar)^2`` (P4J's attribute ``wvar``)."""
    return float(np.sum(weights * (y - weighted_mean(y, weights)) ** 2))


def phases(t: ArrayLike, frequency: ArrayLike, phase_dtype: DTypeLike = np.float64) -> FloatArray:
    """``2 pi frac(f t)``, shape ``(len(frequency), len(t))``, in ``phase_dtype`` arithmetic."""
    if np.dtype(phase_dtype) == np.float32:
        cycles = np.outer(np.asarray(frequency, np.float32), np.asarray(t, np.float32))
        fraction = (cycles - np.floor(cycles)).astype(np.float64)
        two_pi = 2.0 * np.float64(np.float32(P4J_PI))
        return (two_pi * fraction).astype(np.float32).astype(np.float64)
    cycles = np.outer(np.asarray(frequency, np.float64), np.asarray(t, np.float64))
    return 2.0 * np.pi * (cycles - np.floor(cycles))


def _inputs(y: ArrayLike, dy: ArrayLike | None) -> tuple[FloatArray, FloatArray]:
    """``y`` as float64 and the weights."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError("y must be one-dimensional")
    return y, inverse_variance(dy, y.size)


def _check_harmonics(nharmonics: int) -> None:
    if nharmonics < 1:
        raise ValueError(f"nharmonics must be >= 1, got {nharmonics}")


def mhaov_raw(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, frequency: ArrayLike,
              nharmonics: int = 1, phase_dtype: DTypeLike = np.float64) -> FloatArray:
    """``dchi2`` at each frequency by P4J's orthogonal-polynomial recurrence (spec §3.2)."""
    _check_harmonics(nharmonics)
    y, weights = _inputs(y, dy)
    inv_sigma = np.sqrt(weights)
    z = np.exp(1j * phases(t, frequency, phase_dtype))
    residual = (y - weighted_mean(y, weights)) * inv_sigma
    data = residual * z**nharmonics
    poly = np.broadcast_to(inv_sigma.astype(complex), z.shape).copy()
    z_power = np.ones_like(z)
    explained = np.zeros(z.shape[0])
    for _ in range(2 * nharmonics + 1):
        norm = np.maximum(np.sum(np.abs(poly) ** 2, axis=1), NORM_FLOOR)
        alpha = np.sum(z * poly * inv_sigma, axis=1) / norm
        coefficient = np.sum(np.conj(poly) * data, axis=1)
        explained += np.abs(coefficient) ** 2 / norm
        poly = z * poly - (alpha[:, None] * z_power) * np.conj(poly)
        z_power = z_power * z
    return explained


def harmonic_design(phase: FloatArray, nharmonics: int) -> FloatArray:
    """Columns ``[1, cos phase, sin phase, ..., cos H phase, sin H phase]``."""
    columns = [np.ones_like(phase)]
    for h in range(1, nharmonics + 1):
        columns += [np.cos(h * phase), np.sin(h * phase)]
    return np.stack(columns, axis=-1)


def mhaov_least_squares(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None,
                        frequency: ArrayLike, nharmonics: int = 1) -> FloatArray:
    """``dchi2`` at each frequency from a dense weighted least-squares fit (spec §3.1)."""
    _check_harmonics(nharmonics)
    y, weights = _inputs(y, dy)
    inv_sigma = np.sqrt(weights)
    z = (y - weighted_mean(y, weights)) * inv_sigma
    explained = []
    for phase in phases(t, frequency):
        x = harmonic_design(phase, nharmonics) * inv_sigma[:, None]
        theta = np.linalg.lstsq(x, z, rcond=None)[0]
        explained.append(np.sum((x @ theta) ** 2))
    return np.asarray(explained)


def f_statistic(explained: FloatArray, total: float, npoints: int, nharmonics: int,
                floor: float | None = NORM_FLOOR) -> FloatArray:
    """``(d2 / d1) dchi2 / (chi2_c - dchi2)``, the denominator floored at ``floor`` if given."""
    d1 = 2.0 * nharmonics
    d2 = npoints - 2.0 * nharmonics - 1.0
    unexplained = total - explained
    if floor is not None:
        unexplained = np.maximum(unexplained, floor)
    return (d2 / d1) * explained / unexplained


def mhaov(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, frequency: ArrayLike,
          nharmonics: int = 1, mode: int = 1, phase_dtype: DTypeLike = np.float64) -> FloatArray:
    """Single-band MHAOV periodogram: ``mode=0`` raw ``dchi2``, ``mode=1`` the F form."""
    if mode not in (0, 1):
        raise ValueError(f"mode must be 0 (raw) or 1 (F statistic), got {mode}")
    y_array, weights = _inputs(y, dy)
    explained = mhaov_raw(t, y_array, dy, frequency, nharmonics, phase_dtype)
    if mode == 0:
        return explained
    total = centred_sum_of_squares(y_array, weights)
    return f_statistic(explained, total, y_array.size, nharmonics)


def mhaov_multiband(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, bands: ArrayLike,
                    frequency: ArrayLike, nharmonics: int = 1, fit_harmonics: int | None = None,
                    phase_dtype: DTypeLike = np.float64
                    ) -> tuple[FloatArray, dict[object, FloatArray]]:
    """Multiband MHAOV as P4J combines it (spec §3.3).

    Parameters
    ----------
    t, y, dy, bands : array_like
        Observations and band labels (bands in ``np.unique`` order).
    frequency : array_like
        Frequencies, in cycles per unit of ``t``.
    nharmonics : int
        Harmonics in the degrees of freedom ``d1``, ``d2_b``.
    fit_harmonics : int, optional
        Harmonics fitted in each band; None fits one, as P4J does.
    phase_dtype : dtype
        Arithmetic of the phases (see the module docstring).

    Returns
    -------
    combined : ndarray
        The multiband statistic at each frequency.
    per_band : dict
        Band label -> that band's F statistic (no floor).
    """
    _check_harmonics(nharmonics)
    t = np.asarray(t, dtype=float)
    y_array, weights = _inputs(y, dy)
    band_labels = np.asarray(bands)
    fitted = 1 if fit_harmonics is None else fit_harmonics
    explained_sum = np.zeros(np.size(frequency))
    total_sum = 0.0
    d2_sum = 0.0
    per_band = {}
    for label in np.unique(band_labels):
        mask = band_labels == label
        sigma = weights[mask] ** -0.5
        explained = mhaov_raw(t[mask], y_array[mask], sigma, frequency, fitted, phase_dtype)
        total = centred_sum_of_squares(y_array[mask], weights[mask])
        per_band[label] = f_statistic(explained, total, int(mask.sum()), nharmonics, None)
        explained_sum += explained
        total_sum += total
        d2_sum += mask.sum() - 2.0 * nharmonics - 1.0
    combined = d2_sum * explained_sum / (2.0 * nharmonics * (total_sum - explained_sum))
    return combined, per_band
