"""Keplerian orbit parameterisations and converters (host, NumPy).

Conventions (those of radvel): ``w`` is the argument of periastron of the
*star's* orbit in radians; a planet's radial velocity is
``K (cos(f + w) + e cos w)``, positive when the star recedes (redshift); times
and periods share one unit (days in practice); ``K`` is in velocity units.

A basis names the five per-planet parameters, in order:

============================  ===============================================
basis                         parameters
============================  ===============================================
``"per k e w m0"``            period, K, e, w, mean anomaly at ``t_ref`` (rad)
``"per k secosw sesinw m0"``  ... with sqrt(e) cos w, sqrt(e) sin w
``"per k e w tp"``            ..., time of periastron
``"per k secosw sesinw tp"``
``"per k e w tc"``            ..., time of conjunction (transit): f = pi/2 - w
``"per k secosw sesinw tc"``
============================  ===============================================

``"per k e w m0"`` is the standard basis (Ford 2009's, with an explicit
reference epoch); the device kernels read every basis directly (``tc``
through the mean anomaly at conjunction, :func:`conjunction_mean_anomaly`).
"""

from __future__ import annotations

import numpy as np

from clperiod.catalog import refuse_masked

__all__ = [
    "BASES",
    "STANDARD",
    "conjunction_mean_anomaly",
    "conjunction_mean_anomaly_from_cos_sin",
    "convert",
    "timeperi_to_timetrans",
    "timetrans_to_timeperi",
]

STANDARD = "per k e w m0"
#: The parameter bases every RV function takes (``basis=``), radvel's names.
BASES: tuple[str, ...] = (
    STANDARD,
    "per k secosw sesinw m0",
    "per k e w tp",
    "per k secosw sesinw tp",
    "per k e w tc",
    "per k secosw sesinw tc",
)
TWO_PI = 2.0 * np.pi


def check_basis(basis: str) -> tuple[str, str]:
    """Validate ``basis``; return its (eccentricity form, time form) words."""
    if not (isinstance(basis, str) and basis in BASES):
        raise ValueError(f"unknown basis {basis!r}; choose one of {BASES}")
    words = basis.split()
    return ("e_w" if words[2] == "e" else "secosw_sesinw"), words[4]


def _eccentric_from_true(f: np.ndarray, e: np.ndarray) -> np.ndarray:
    return 2.0 * np.arctan(np.tan(f / 2.0) * np.sqrt((1.0 - e) / (1.0 + e)))


def conjunction_mean_anomaly(e, w) -> np.ndarray:
    """Mean anomaly at conjunction (true anomaly ``pi/2 - w``), in ``(-pi, pi]``.

    ``tp = tc - P M_c / (2 pi)``; the same value as radvel's formula, from
    ``E = atan2(sqrt(1 - e^2) cos w, e + sin w)``, which has no singular angle.
    """
    w = np.asarray(w, dtype=np.float64)
    return conjunction_mean_anomaly_from_cos_sin(e, np.cos(w), np.sin(w))


def conjunction_mean_anomaly_from_cos_sin(e, cos_w, sin_w) -> np.ndarray:
    """:func:`conjunction_mean_anomaly` of ``w`` given by its cosine and sine."""
    e = np.asarray(e, dtype=np.float64)
    root = np.sqrt((1.0 - e) * (1.0 + e))
    return np.arctan2(root * cos_w, e + sin_w) - e * root * cos_w / (1.0 + e * sin_w)


def timetrans_to_timeperi(tc, per, e, w) -> np.ndarray:
    """Time of periastron from the time of conjunction (radvel's formula)."""
    e = np.asarray(e, dtype=np.float64)
    big_e = _eccentric_from_true(np.pi / 2.0 - np.asarray(w, dtype=np.float64), e)
    return np.asarray(tc) - np.asarray(per) / TWO_PI * (big_e - e * np.sin(big_e))


def timeperi_to_timetrans(tp, per, e, w) -> np.ndarray:
    """Time of conjunction from the time of periastron (inverse of the above)."""
    e = np.asarray(e, dtype=np.float64)
    big_e = _eccentric_from_true(np.pi / 2.0 - np.asarray(w, dtype=np.float64), e)
    return np.asarray(tp) + np.asarray(per) / TWO_PI * (big_e - e * np.sin(big_e))


def _split(params, basis: str, t_ref: float) -> tuple[np.ndarray, ...]:
    """Per-planet (P, K, e, w, tp) from any basis, float64."""
    ecc_form, time_form = check_basis(basis)
    refuse_masked("params", params)
    p = np.asarray(params, dtype=np.float64)
    if p.shape[-1:] != (5,):
        raise ValueError(f"params must end in an axis of 5 per-planet values, got shape {p.shape}")
    per, k, a, b, tau = np.moveaxis(p, -1, 0)
    if ecc_form == "e_w":
        e, w = a, b
    else:
        e, w = a * a + b * b, np.arctan2(b, a)
    if time_form == "m0":
        tp = t_ref - np.mod(tau, TWO_PI) * per / TWO_PI
    elif time_form == "tc":
        tp = timetrans_to_timeperi(tau, per, e, w)
    else:
        tp = tau
    return per, k, e, w, tp


def _join(per, k, e, w, tp, basis: str, t_ref: float) -> np.ndarray:
    ecc_form, time_form = check_basis(basis)
    if ecc_form == "e_w":
        a, b = e, w
    else:
        root = np.sqrt(e)
        circular = ~(e > 0)
        # +0.0 exactly (no signed zeros), so w reads back as atan2(0, 0) = 0
        a = np.where(circular, 0.0, root * np.cos(w))
        b = np.where(circular, 0.0, root * np.sin(w))
        # a circular orbit loses w here: keep its phase by moving the
        # periastron time by w
        tp = tp - np.where(circular, w, 0.0) * per / TWO_PI
        w = np.where(circular, 0.0, w)
    if time_form == "m0":
        tau = np.mod(TWO_PI * (t_ref - tp) / per, TWO_PI)
    elif time_form == "tc":
        tau = timeperi_to_timetrans(tp, per, e, w)
    else:
        tau = tp
    return np.stack(np.broadcast_arrays(per, k, a, b, tau), axis=-1)


def convert(params, from_basis: str, to_basis: str, t_ref: float = 0.0) -> np.ndarray:
    """Convert per-planet parameters between bases.

    Parameters
    ----------
    params
        Array of shape ``(..., 5)`` in ``from_basis``.
    from_basis, to_basis
        Names from :data:`BASES`.
    t_ref
        Reference epoch of the ``m0`` bases (same time unit as ``tp``).

    Returns
    -------
    ndarray
        Float64 array of the same shape in ``to_basis``. ``w`` comes back in
        ``(-pi, pi]`` when derived from (secosw, sesinw), ``m0`` in
        ``[0, 2 pi)``; ``tp`` derived from ``m0`` is the last periastron at or
        before ``t_ref``.
    """
    per, k, e, w, tp = _split(params, from_basis, t_ref)
    return _join(per, k, e, w, tp, to_basis, t_ref)
