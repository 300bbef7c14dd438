"""Vectorised NumPy Keplerian RV chi-square: the CPU peer of the RV benchmarks (issue 4).

Same conventions as clperiod and tests/reference/kepler_rv.py (radvel's):
planets ``(P, K, e, w, M0)``, ``M = 2 pi frac((t - t_ref) / P) + M0``, velocity
``K (cos(f + w) + e cos w)``. Models are processed in chunks of
``(models, n_obs)`` arrays; Kepler's equation is solved with Danby's quartic
iteration (radvel's correction) for a fixed number of steps. The second peer
is radvel's C ``rv_drive_array`` called per model and planet (loaded by
tests/peers.py without radvel's package ``__init__``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness import best_of

#: Danby steps; the residual reaches rounding for e <= 0.99 after 4.
ITERATIONS = 5
#: Elements of each temporary ``(models, n_obs)`` array.
CHUNK_ELEMENTS = 1 << 16

Chi2 = Callable[..., np.ndarray]


def danby(M: np.ndarray, e: np.ndarray, iterations: int = ITERATIONS) -> np.ndarray:
    """Eccentric anomaly: starter ``M + 0.85 e sign(sin M)``, then quartic Danby steps."""
    E = M + 0.85 * e * np.sign(np.sin(M))
    for _ in range(iterations):
        es, ec = e * np.sin(E), e * np.cos(E)
        f, f1 = E - es - M, 1 - ec
        d1 = -f / f1
        d2 = -f / (f1 + 0.5 * d1 * es)
        E = E - f / (f1 + 0.5 * d2 * es + d2 * d2 * ec / 6)
    return E


def chi2_numpy(t: np.ndarray, v: np.ndarray, sigma: np.ndarray, params: np.ndarray,
               t_ref: float = 0.0) -> np.ndarray:
    """Chi-square ``sum(((v - model) / sigma)**2)`` of each model.

    Parameters
    ----------
    t, v, sigma : ndarray
        ``(n_obs,)`` times, velocities and uncertainties.
    params : ndarray
        ``(n_models, n_planets, 5)`` planets ``(P, K, e, w, M0)``, e <= 0.99.
    t_ref : float
        Reference epoch of ``M0``.

    Returns
    -------
    ndarray
        ``(n_models,)`` float64 chi-square values.
    """
    t, v, sigma = (np.asarray(a, np.float64) for a in (t, v, sigma))
    params = np.asarray(params, np.float64)
    step = max(1, CHUNK_ELEMENTS // t.size)
    out = np.empty(len(params))
    for start in range(0, len(params), step):
        model = np.zeros((len(params[start:start + step]), t.size))
        for P, K, e, w, M0 in params[start:start + step].transpose(1, 2, 0)[..., None]:
            phase = (t - t_ref) / P
            E = danby(2 * np.pi * (phase - np.floor(phase)) + np.mod(M0, 2 * np.pi), e)
            cos_e, denominator = np.cos(E), 1 - e * np.cos(E)
            cos_f = (cos_e - e) / denominator
            sin_f = np.sqrt(1 - e * e) * np.sin(E) / denominator
            model += K * (cos_f * np.cos(w) - sin_f * np.sin(w) + e * np.cos(w))
        out[start:start + step] = (((v - model) / sigma) ** 2).sum(axis=1)
    return out


def radvel_chi2() -> Chi2 | None:
    """:func:`chi2_numpy` computed with radvel's C ``rv_drive_array``, or None without radvel.

    The returned function loops over models and planets in Python (radvel's
    own way: one ``rv_drive`` call per planet) and refuses e > 0.99, for
    which radvel's C solver may end the process.
    """
    from peers import load_radvel

    radvel = load_radvel()
    if radvel is None or radvel.rv_drive_array is None:
        return None
    drive = radvel.rv_drive_array

    def chi2(t, v, sigma, params, t_ref=0.0):
        t, v, sigma = (np.ascontiguousarray(a, np.float64) for a in (t, v, sigma))
        params = np.asarray(params, np.float64)
        if np.any(params[..., 2] > 0.99):
            raise ValueError("radvel's C Kepler solver needs e <= 0.99")
        out = np.empty(len(params))
        for i, planets in enumerate(params):
            model = np.zeros_like(t)
            for P, K, e, w, M0 in planets:
                model += drive(t, P, t_ref - M0 * P / (2 * np.pi), e, w, K)
            out[i] = (((v - model) / sigma) ** 2).sum()
        return out

    return chi2


def time_peers(t: np.ndarray, v: np.ndarray, sigma: np.ndarray, params: np.ndarray,
               t_ref: float = 0.0, repeat: int = 3) -> dict:
    """Best-of-``repeat`` times of :func:`chi2_numpy` and of radvel's C peer (when installed).

    Returns
    -------
    dict
        Per peer (``"numpy"``, ``"radvel"``): ``seconds`` and ``evaluations_per_s``
        (planet velocities per second, ``n_models * n_planets * n_obs / seconds``);
        ``"max_chi2_rel_diff"`` between the two peers when both ran.
    """
    evaluations = params.shape[0] * params.shape[1] * len(t)
    report, results = {}, {}
    peers = {"numpy": chi2_numpy, "radvel": radvel_chi2()}
    for name, function in peers.items():
        if function is None:
            continue
        seconds, results[name] = best_of(lambda f=function: f(t, v, sigma, params, t_ref), repeat)
        report[name] = {"seconds": seconds, "evaluations_per_s": evaluations / seconds}
    if len(results) == 2:
        report["max_chi2_rel_diff"] = float(np.max(np.abs(results["numpy"] / results["radvel"] - 1)))
    return report
