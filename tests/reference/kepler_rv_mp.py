"""The documented Keplerian RV model evaluated in extended precision (mpmath).

Each float64 input is taken as the exact number it is, and the model of
``clperiod.kepler.orbits`` / ``clperiod.kepler`` is evaluated with ``DIGITS``
significant digits beyond the magnitude of the phase, then rounded once:

* basis ``m0``: ``M(t) = 2 pi (t - t_ref) / P + M0``;
* basis ``tp``: ``M(t) = 2 pi (t - tp) / P``;
* basis ``tc``: ``tp = tc - P / (2 pi) (E_c - e sin E_c)`` with
  ``E_c = 2 atan(tan(f_c / 2) sqrt((1 - e) / (1 + e)))``, ``f_c = pi/2 - w``
  (radvel's ``timetrans_to_timeperi``), then as ``tp``;
* ``(secosw, sesinw)``: ``e = secosw^2 + sesinw^2``, ``w = atan2(sesinw, secosw)``;
* velocity ``K (cos(f + w) + e cos w)`` (``w`` of the star).

Also :func:`reduce_mean_anomaly`: the exact ``M mod 2 pi`` of any float64.
Nothing here imports ``clperiod``. Slow (pure Python): keep inputs small.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Significant decimal digits carried beyond the integer part of a phase.
DIGITS = 40


def _digits_for(*values: float) -> int:
    """Working precision that keeps DIGITS digits after the point of ``values``."""
    largest = max((abs(v) for v in values if math.isfinite(v) and v != 0), default=1.0)
    return DIGITS + max(0, int(math.log10(largest)) + 1)


def reduce_mean_anomaly(mean_anomaly: float) -> tuple[float, int]:
    """``(m, k)`` with ``M = m + 2 pi k`` exactly, ``m`` in ``[-pi, pi]`` (rounded once)."""
    with mpmath.workdps(_digits_for(mean_anomaly) + 10):
        x = mpmath.mpf(float(mean_anomaly))
        k = mpmath.nint(x / (2 * mpmath.pi))
        return float(x - 2 * k * mpmath.pi), int(k)


def _kepler(m, e):
    """E of ``E - e sin E = m`` for ``m`` in ``[-pi, pi]`` (Newton, monotone from above)."""
    a = abs(m)
    big_e = min(a + e, +mpmath.pi)
    tolerance = mpmath.mpf(10) ** (-mpmath.mp.dps + 5)
    for _ in range(200):
        step = (big_e - e * mpmath.sin(big_e) - a) / (1 - e * mpmath.cos(big_e))
        big_e -= step
        if abs(step) <= tolerance:
            break
    return big_e if m >= 0 else -big_e


def _elements(row, ecc_form: str):
    """``(P, K, e, w)`` as mpf from one planet's float64 parameters."""
    per, k, a, b = (mpmath.mpf(float(x)) for x in row[:4])
    if ecc_form == "e":
        return per, k, a, b
    e = a * a + b * b
    w = mpmath.atan2(b, a) if e > 0 else mpmath.mpf(0)
    return per, k, e, w


def _phase_origin(tau, per, e, w, time_form: str, t_ref):
    """``(epoch, M_epoch)``: M(t) = 2 pi (t - epoch) / P + M_epoch."""
    if time_form == "m0":
        return t_ref, tau
    if time_form == "tp":
        return tau, mpmath.mpf(0)
    f_c = mpmath.pi / 2 - w
    big_e = 2 * mpmath.atan(mpmath.tan(f_c / 2) * mpmath.sqrt((1 - e) / (1 + e)))
    return tau - per / (2 * mpmath.pi) * (big_e - e * mpmath.sin(big_e)), mpmath.mpf(0)


def phase_at_origin(row, basis: str, t_origin: float, t_ref: float) -> float:
    """One planet's orbital phase at ``t_origin`` in turns, in ``[-0.5, 0.5]``:
    ``M(t_origin) / 2 pi`` less whole turns (rounded once)."""
    words = basis.split()
    with mpmath.workdps(_digits_for(t_origin, t_ref, *row) + 10):
        per, _, e, w = _elements(row, "e" if words[2] == "e" else "sqrt")
        epoch, m_epoch = _phase_origin(mpmath.mpf(float(row[4])), per, e, w, words[4],
                                       mpmath.mpf(float(t_ref)))
        turns = (mpmath.mpf(float(t_origin)) - epoch) / per + m_epoch / (2 * mpmath.pi)
        return float(turns - mpmath.nint(turns))


def _planet_velocity(t: NDArray[np.float64], row, basis: str, t_ref: float) -> list[float]:
    words = basis.split()
    ecc_form, time_form = words[2], words[4]
    out = []
    dps = _digits_for(*t, t_ref, *row) + 10
    with mpmath.workdps(dps):
        per, k, e, w = _elements(row, "e" if ecc_form == "e" else "sqrt")
        epoch, m_epoch = _phase_origin(mpmath.mpf(float(row[4])), per, e, w, time_form,
                                       mpmath.mpf(float(t_ref)))
        two_pi = 2 * mpmath.pi
        root = mpmath.sqrt((1 - e) * (1 + e))
        for time in t:
            mean = two_pi * (mpmath.mpf(float(time)) - epoch) / per + m_epoch
            mean -= two_pi * mpmath.nint(mean / two_pi)
            big_e = _kepler(mean, e)
            denom = 1 - e * mpmath.cos(big_e)
            cos_f = (mpmath.cos(big_e) - e) / denom
            sin_f = root * mpmath.sin(big_e) / denom
            out.append(float(k * (cos_f * mpmath.cos(w) - sin_f * mpmath.sin(w)
                                  + e * mpmath.cos(w))))
    return out


def radial_velocity(t: ArrayLike, params: ArrayLike, basis: str = "per k e w m0",
                    t_ref: float = 0.0) -> NDArray[np.float64]:
    """Velocities ``(n_models, n_obs)`` of ``params`` ``(n_models, n_planets, 5)`` in ``basis``.

    Each planet's velocity is exact to well below one float64 ulp of ``K``;
    the planets are summed in float64 (``math.fsum``).
    """
    t = np.asarray(t, np.float64)
    params = np.asarray(params, np.float64)
    if params.ndim != 3 or params.shape[2] != 5:
        raise ValueError(f"params must have shape (n_models, n_planets, 5), got {params.shape}")
    v = np.empty((params.shape[0], t.size))
    for i, model in enumerate(params):
        planets = [_planet_velocity(t, row, basis, t_ref) for row in model]
        v[i] = [math.fsum(values) for values in zip(*planets)]
    return v
