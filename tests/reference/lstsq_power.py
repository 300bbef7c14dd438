"""Reference multi-term Lomb-Scargle powers by least squares in extended precision.

The model at frequency ``f``: an offset (``fit_mean``) plus ``nterms`` harmonics
``a_h sin(2 pi h f t) + b_h cos(2 pi h f t)``, fitted to ``y`` (less its weighted
mean when ``center_data`` or ``fit_mean``) with weights ``dy**-2`` (1 without
``dy``); the standard power is ``1 - chi2 / chi2_ref`` with ``chi2_ref`` the
weighted sum of squares of the (centred) values (astropy's ``chi2`` method).

At low frequencies (``f T`` well below 1) the harmonics are nearly dependent and
float64 normal equations, or even a float64 QR of this design, lose most digits.
Here the weighted design is orthogonalised by modified Gram-Schmidt with
reorthogonalisation in ``mpmath`` at 60 significant digits, times taken from the
first observation as given: nothing is shared with ``clperiod``'s basis or
algorithm. Slow (pure Python): meant for up to a few thousand points and a few
dozen frequencies.
"""

from __future__ import annotations

import mpmath
import numpy as np

__all__ = ["lstsq_power", "lstsq_powers", "lstsq_powers_float64"]

#: Significant digits of the computation.
DIGITS = 60


def lstsq_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    frequency: float,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
) -> float:
    """Standard power at one ``frequency`` (NaN where the design is singular)."""
    with mpmath.workdps(DIGITS):
        times = [mpmath.mpf(float(v)) for v in t]
        weights = [mpmath.mpf(1)] * len(times)
        if dy is not None:
            weights = [1 / mpmath.mpf(float(d)) ** 2 for d in dy]
        values = [mpmath.mpf(float(v)) for v in y]
        total = mpmath.fsum(weights)
        if fit_mean or center_data:
            mean = mpmath.fsum(w * v for w, v in zip(weights, values, strict=True)) / total
            values = [v - mean for v in values]
        roots = [mpmath.sqrt(w) for w in weights]
        target = [r * v for r, v in zip(roots, values, strict=True)]
        reference = mpmath.fsum(x * x for x in target)
        omega = 2 * mpmath.pi * mpmath.mpf(float(frequency))
        columns = [[r for r in roots]] if fit_mean else []
        for h in range(1, nterms + 1):
            phases = [h * omega * (s - times[0]) for s in times]
            columns.append([r * mpmath.sin(p) for r, p in zip(roots, phases, strict=True)])
            columns.append([r * mpmath.cos(p) for r, p in zip(roots, phases, strict=True)])
        basis: list[list] = []
        tiny = mpmath.mpf(10) ** (-DIGITS // 2)
        for column in columns:
            scale = mpmath.sqrt(mpmath.fsum(x * x for x in column))
            if scale == 0:
                return float("nan")
            vector = list(column)
            for _ in range(2):
                for q in basis:
                    dot = mpmath.fsum(a * b for a, b in zip(q, vector, strict=True))
                    vector = [a - dot * b for a, b in zip(vector, q, strict=True)]
            norm = mpmath.sqrt(mpmath.fsum(x * x for x in vector))
            if norm <= tiny * scale:
                return float("nan")
            basis.append([x / norm for x in vector])
        projections = [mpmath.fsum(a * b for a, b in zip(q, target, strict=True)) for q in basis]
        explained = mpmath.fsum(p * p for p in projections)
        return float(explained / reference)


def lstsq_powers(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    frequencies: np.ndarray,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
) -> np.ndarray:
    """:func:`lstsq_power` at every frequency of ``frequencies``."""
    return np.array(
        [
            lstsq_power(t, y, dy, f, nterms, fit_mean=fit_mean, center_data=center_data)
            for f in np.asarray(frequencies, dtype=np.float64)
        ]
    )


def lstsq_powers_float64(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    frequencies: np.ndarray,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
) -> np.ndarray:
    """:func:`lstsq_powers` in float64 (``numpy.linalg.lstsq`` of the weighted
    design, times from their mean): fast, and as accurate where the
    harmonics are far from dependent (``f T`` above about ``nterms``)."""
    t = np.asarray(t, dtype=np.float64)
    weights = np.ones_like(t) if dy is None else np.asarray(dy, dtype=np.float64) ** -2.0
    values = np.asarray(y, dtype=np.float64)
    if fit_mean or center_data:
        values = values - np.sum(weights * values) / np.sum(weights)
    roots = np.sqrt(weights)
    target = roots * values
    centred = t - t.mean()
    powers = []
    for frequency in np.asarray(frequencies, dtype=np.float64):
        columns = [np.ones_like(t)] if fit_mean else []
        for h in range(1, nterms + 1):
            phase = 2 * np.pi * h * frequency * centred
            columns += [np.sin(phase), np.cos(phase)]
        design = np.column_stack(columns) * roots[:, None]
        coefficients, *_ = np.linalg.lstsq(design, target, rcond=None)
        residual = target - design @ coefficients
        powers.append(1 - residual @ residual / (target @ target))
    return np.array(powers)
