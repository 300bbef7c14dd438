"""Reference Keplerian radial-velocity models and likelihoods, written for clarity.

The oracle of the OpenCL radial-velocity kernels (issue 4), in float64 NumPy
with radvel's conventions. Nothing here imports ``clperiod``.

* Parameters of a planet, "standard" basis: ``(P, K, e, w, M0)``: period,
  semi-amplitude, eccentricity in ``[0, 1)``, argument of periastron of the
  *star* [rad] and mean anomaly [rad] at the reference epoch ``t_ref``.
* Mean anomaly ``M(t) = 2 pi frac((t - t_ref) / P) + M0``: the phase is formed
  and reduced with ``floor`` in float64 before the multiplication by 2 pi.
* Velocity of a planet ``K (cos(f + w) + e cos w)`` (f: true anomaly; positive:
  receding); the model adds an offset ``gamma`` per instrument and the trend
  ``dvdt (t - t_ref) + curv (t - t_ref)**2``.
* ``var = sigma**2 + jitter[instrument]**2``, ``chi2 = sum(r**2 / var)`` and
  ``loglike = -0.5 sum(r**2 / var + log(2 pi var))`` with ``r = v - model``
  (radvel's ``loglike_jitter``).

Shapes: ``t`` ``(n_obs,)``; ``params`` ``(n_models, n_planets, 5)``; offsets and
jitter ``(n_models, n_inst)`` indexed by the integer ``instrument`` code of each
observation; ``trend`` ``(n_models, 2)`` = ``(dvdt, curv)``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

#: Newton steps of :func:`eccentric_anomaly`; ~15 suffice for e = 0.999.
ITERATIONS = 50


def eccentric_anomaly(M: ArrayLike, e: ArrayLike) -> FloatArray:
    """Solve Kepler's equation ``E - e sin E = M`` in float64.

    ``M`` is reduced to ``m = |M - 2 pi k|`` in ``[0, pi]``; there ``f(E) = E -
    e sin E - m`` is increasing and convex, so Newton's iteration from ``E0 =
    min(m + e, pi)`` (where ``f >= 0``) converges monotonically for every
    ``e < 1``. A fixed :data:`ITERATIONS` steps run for all elements.

    Parameters
    ----------
    M : array_like
        Mean anomaly [rad], any real value.
    e : array_like
        Eccentricity in ``[0, 1)``, broadcast against ``M``.

    Returns
    -------
    ndarray
        Eccentric anomaly, with the same number of turns as ``M``.
    """
    M, e = np.broadcast_arrays(np.asarray(M, np.float64), np.asarray(e, np.float64))
    turns = np.round(M / (2 * np.pi))
    reduced = M - 2 * np.pi * turns
    m = np.abs(reduced)
    E = np.minimum(m + e, np.pi)
    for _ in range(ITERATIONS):
        E = E - (E - e * np.sin(E) - m) / (1 - e * np.cos(E))
    return np.copysign(E, reduced) + 2 * np.pi * turns


def _unit_velocity(t: FloatArray, P: ArrayLike, e: ArrayLike, w: ArrayLike, M0: ArrayLike,
                   t_ref: float) -> FloatArray:
    """``cos(f + w) + e cos w`` (the velocity for ``K = 1``), parameters ``(n_models, 1)``."""
    phase = (t - t_ref) / P
    M = 2 * np.pi * (phase - np.floor(phase)) + M0
    E = eccentric_anomaly(M, e)
    f = 2 * np.arctan2(np.sqrt(1 + e) * np.sin(E / 2), np.sqrt(1 - e) * np.cos(E / 2))
    return np.cos(f + w) + e * np.cos(w)


def _instrument(t: FloatArray, instrument: ArrayLike | None) -> NDArray[np.intp]:
    """Integer instrument codes, all 0 when not given."""
    if instrument is None:
        return np.zeros(t.shape, np.intp)
    return np.asarray(instrument, np.intp)


def radial_velocity(t: ArrayLike, params: ArrayLike, t_ref: float = 0.0,
                    offsets: ArrayLike | None = None, instrument: ArrayLike | None = None,
                    trend: ArrayLike | None = None) -> FloatArray:
    """Model radial velocity of each parameter set at the times ``t``.

    Parameters
    ----------
    t : array_like
        Observation times, ``(n_obs,)``.
    params : array_like
        ``(n_models, n_planets, 5)`` planets ``(P, K, e, w, M0)``.
    t_ref : float
        Reference epoch of ``M0`` and of the trend.
    offsets : array_like, optional
        ``(n_models, n_inst)`` velocity offsets gamma.
    instrument : array_like, optional
        ``(n_obs,)`` integer instrument codes (default: all 0).
    trend : array_like, optional
        ``(n_models, 2)``: ``(dvdt, curv)``.

    Returns
    -------
    ndarray
        ``(n_models, n_obs)`` float64 velocities.
    """
    t = np.asarray(t, np.float64)
    params = np.asarray(params, np.float64)
    if params.ndim != 3 or params.shape[2] != 5:
        raise ValueError(f"params must have shape (n_models, n_planets, 5), got {params.shape}")
    v = np.zeros((params.shape[0], t.size))
    for P, K, e, w, M0 in params.transpose(1, 2, 0)[..., None]:
        v += K * _unit_velocity(t, P, e, w, M0, t_ref)
    if offsets is not None:
        v += np.asarray(offsets, np.float64)[:, _instrument(t, instrument)]
    if trend is not None:
        dvdt, curv = np.asarray(trend, np.float64).T[..., None]
        dt = t - t_ref
        v += dvdt * dt + curv * dt**2
    return v


def _variance(t: FloatArray, sigma: ArrayLike, instrument: ArrayLike | None,
              jitter: ArrayLike | None) -> FloatArray:
    """``sigma**2 + jitter[instrument]**2``: ``(n_obs,)``, or ``(n_models, n_obs)`` with jitter."""
    var = np.asarray(sigma, np.float64) ** 2
    if jitter is not None:
        var = var + np.asarray(jitter, np.float64)[:, _instrument(t, instrument)] ** 2
    return var


def _sum(terms: FloatArray, exact: bool) -> FloatArray:
    """Row sums: ``np.sum``, or ``math.fsum`` (correctly rounded) per row."""
    if exact:
        return np.array([math.fsum(row) for row in terms])
    return terms.sum(axis=1)


def chi2(t: ArrayLike, v: ArrayLike, sigma: ArrayLike, params: ArrayLike, t_ref: float = 0.0,
         offsets: ArrayLike | None = None, instrument: ArrayLike | None = None,
         trend: ArrayLike | None = None, jitter: ArrayLike | None = None,
         exact: bool = False) -> FloatArray:
    """Chi-square ``sum((v - model)**2 / (sigma**2 + jitter**2))`` of each model.

    Parameters
    ----------
    t, v, sigma : array_like
        ``(n_obs,)`` times, velocities and their uncertainties.
    params, t_ref, offsets, instrument, trend
        The model, as in :func:`radial_velocity`.
    jitter : array_like, optional
        ``(n_models, n_inst)`` jitter added in quadrature to ``sigma``.
    exact : bool
        Sum the per-point terms with ``math.fsum`` instead of ``np.sum``.

    Returns
    -------
    ndarray
        ``(n_models,)`` chi-square values.
    """
    t = np.asarray(t, np.float64)
    r = np.asarray(v, np.float64) - radial_velocity(t, params, t_ref, offsets, instrument, trend)
    return _sum(r**2 / _variance(t, sigma, instrument, jitter), exact)


def loglike(t: ArrayLike, v: ArrayLike, sigma: ArrayLike, params: ArrayLike, t_ref: float = 0.0,
            offsets: ArrayLike | None = None, instrument: ArrayLike | None = None,
            trend: ArrayLike | None = None, jitter: ArrayLike | None = None,
            exact: bool = False) -> FloatArray:
    """Gaussian log-likelihood ``-0.5 sum(r**2 / var + log(2 pi var))`` of each model.

    Parameters are those of :func:`chi2`; returns ``(n_models,)`` values equal to
    radvel's ``loglike_jitter(r, sigma, jitter[instrument])``.
    """
    t = np.asarray(t, np.float64)
    r = np.asarray(v, np.float64) - radial_velocity(t, params, t_ref, offsets, instrument, trend)
    var = np.broadcast_to(_variance(t, sigma, instrument, jitter), r.shape)
    return -0.5 * _sum(r**2 / var + np.log(2 * np.pi * var), exact)


def profile_last_planet(t: ArrayLike, v: ArrayLike, sigma: ArrayLike, instrument: ArrayLike | None,
                        params_nonlinear: ArrayLike, t_ref: float = 0.0,
                        known: ArrayLike | None = None, jitter: ArrayLike | None = None,
                        ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Chi-square minimised over the linear parameters: K of one planet and gamma per instrument.

    For each model the velocity ``K u(t) + gamma[instrument]`` (``u``: the
    planet's velocity for ``K = 1``) is fitted to ``v - known`` by weighted
    linear least squares, weights ``1 / var``. Eliminating the gammas
    (``gamma_i = (Y_i - K U_i) / S_i`` with per-instrument weighted sums ``S_i``
    of 1, ``U_i`` of u, ``Y_i`` of the data) leaves one equation for K; the
    returned chi-square is summed from the residuals of that solution.

    Parameters
    ----------
    t, v, sigma : array_like
        ``(n_obs,)`` times, velocities and their uncertainties.
    instrument : array_like or None
        ``(n_obs,)`` integer codes ``0 .. n_inst - 1``, each used at least once
        (None: one instrument).
    params_nonlinear : array_like
        ``(n_models, 4)``: ``(P, e, w, M0)`` of the fitted planet.
    t_ref : float
        Reference epoch of ``M0``.
    known : array_like, optional
        Fixed velocity of the other signals (planets, trend), ``(n_obs,)`` or
        ``(n_models, n_obs)``, subtracted from ``v``.
    jitter : array_like, optional
        ``(n_models, n_inst)`` jitter added in quadrature to ``sigma``.

    Returns
    -------
    chi2_min : ndarray
        ``(n_models,)`` minimum chi-square.
    K_hat : ndarray
        ``(n_models,)`` best semi-amplitude (may be negative).
    gamma_hat : ndarray
        ``(n_models, n_inst)`` best offsets.
    """
    t = np.asarray(t, np.float64)
    codes = _instrument(t, instrument)
    P, e, w, M0 = np.asarray(params_nonlinear, np.float64).T[..., None]
    u = _unit_velocity(t, P, e, w, M0, t_ref)
    y = np.asarray(v, np.float64) - (0.0 if known is None else np.asarray(known, np.float64))
    weight = np.broadcast_to(1 / _variance(t, sigma, instrument, jitter), u.shape)
    onehot = (codes[:, None] == np.arange(codes.max() + 1)).astype(np.float64)
    S, U, Y = weight @ onehot, (weight * u) @ onehot, (weight * y) @ onehot
    K = (((weight * u * y).sum(axis=1) - (U * Y / S).sum(axis=1))
         / ((weight * u * u).sum(axis=1) - (U * U / S).sum(axis=1)))
    gamma = (Y - K[:, None] * U) / S
    r = y - K[:, None] * u - gamma[:, codes]
    return (weight * r**2).sum(axis=1), K, gamma
