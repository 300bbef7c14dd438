"""Random search for one more planet in radial velocities, on the device.

For each trial orbit (P log-uniform, e, w and M0 uniform in a box) the
planet's semi-amplitude K and every instrument offset are linear parameters:
the kernel solves them by weighted least squares together with the minimum
chi^2 (``statistic="profile"`` of ``cl_kernels/rvmodel.mako``), so the search
spans four dimensions instead of 5 + n_inst. Planets already found are held
fixed (``known``); searching again for each planet with the others known
refines a multi-planet solution (see ``examples/rv_search.py``).

The trial orbits come in batches, each drawn from its own random stream
(spawned from ``seed``) by the device thread that evaluates it, so several
devices share a search and draw in parallel while the best orbits stay those
of a one-device run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from clperiod.kepler import orbits
from clperiod.kepler.rvmodel import (
    ModelEvaluator,
    ModelStatus,
    MultiDeviceEvaluator,
    Observations,
    Precision,
    model_params,
)

__all__ = ["SearchResult", "search"]


@dataclass(frozen=True)
class SearchResult:
    """Best trial orbits of :func:`search`, best first.

    Attributes
    ----------
    params
        ``(n_best, 5)`` new planet in the standard basis ``(P, K, e, w, M0)``
        (K >= 0: a negative least-squares K is folded into ``w + pi``).
    offsets
        ``(n_best, n_inst)`` least-squares offsets, instruments in
        ``instruments`` order.
    chi2
        ``(n_best,)`` minimum chi^2 of each trial orbit.
    known
        ``(n_known, 5)`` the fixed planets (standard basis).
    instruments, t_ref, n_models
        Instrument labels, reference epoch and number of trial orbits.
    """

    params: np.ndarray
    offsets: np.ndarray
    chi2: np.ndarray
    known: np.ndarray
    instruments: tuple[str, ...]
    t_ref: float
    n_models: int

    @property
    def best(self) -> np.ndarray:
        """``(5,)`` the best trial orbit."""
        return self.params[0]

    def planets(self, i: int = 0) -> np.ndarray:
        """``(n_known + 1, 5)`` the known planets followed by trial ``i``."""
        return np.concatenate([self.known, self.params[i : i + 1]])


def _check_range(name: str, value, low: float, high: float) -> tuple[float, float]:
    try:
        a, b = (float(x) for x in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a (min, max) pair, got {value!r}") from None
    if not (low <= a <= b <= high) or not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(
            f"{name} range must satisfy {low} <= min <= max <= {high}, got ({a}, {b})"
        )
    return a, b


def search(
    t,
    v_obs,
    sigma,
    *,
    period: tuple[float, float],
    eccentricity: tuple[float, float] = (0.0, 0.9),
    instrument=None,
    known=None,
    jitter=None,
    trend=None,
    n_models: int = 1_000_000,
    n_best: int = 10,
    t_ref: float | None = None,
    precision: Precision = "mixed",
    seed=None,
    batch: int = 1 << 18,
    device=None,
) -> SearchResult:
    """Random search over (P, e, w, M0) of one planet, K and offsets solved.

    The velocities must outnumber the fitted parameters (five and an offset
    per instrument).

    Parameters
    ----------
    t, v_obs, sigma, instrument
        The radial velocities (as for :func:`clperiod.kepler.chi2`).
    period
        ``(min, max)`` period range, drawn log-uniform; ``min > 0``.
    eccentricity
        ``(min, max)`` within ``[0, 1)``, drawn uniform; ``w`` and ``M0``
        are uniform in ``[0, 2 pi)``.
    known
        ``(n_known, 5)`` planets held fixed, standard basis (P, K, e, w, M0).
    jitter
        Fixed jitter per instrument, ``(n_inst,)`` or ``{label: value}``.
    trend
        Fixed ``(dvdt, curv)`` about ``t_ref``.
    n_models, n_best
        Number of trial orbits and of best ones returned.
    t_ref
        Reference epoch of ``M0`` (default: the middle of the time span).
    precision, device
        As for :func:`clperiod.kepler.chi2` (several devices share the
        batches).
    seed
        Seed or :class:`numpy.random.Generator` of the trial orbits: batch
        ``i`` is drawn from its ``i``-th spawned stream
        (:meth:`numpy.random.Generator.spawn`).
    batch
        Trial orbits per batch (one random stream and one device call).

    Returns
    -------
    SearchResult
    """
    t_arr = np.asarray(t, dtype=np.float64)
    if t_ref is None:
        t_ref = 0.5 * (float(np.min(t_arr)) + float(np.max(t_arr))) if t_arr.size else 0.0
    obs = Observations.build(t, v_obs, sigma, instrument, t_ref)
    fitted = 5 + len(obs.instruments)  # P, e, w, M0 searched; K and the offsets solved
    if obs.n_obs <= fitted:
        raise ValueError(
            f"the search fits {fitted} parameters (P, K, e, w, M0 and an offset per "
            f"instrument) and needs more velocities than that; got {obs.n_obs}"
        )
    p_lo, p_hi = _check_range("period", period, 0.0, math.inf)
    if p_lo <= 0:
        raise ValueError(f"period range must be positive, got {period!r}")
    e_lo, e_hi = _check_range("eccentricity", eccentricity, 0.0, 1.0)
    if e_hi >= 1:
        raise ValueError(f"eccentricity must stay below 1, got {eccentricity!r}")
    if int(n_models) < 1 or int(n_best) < 1 or int(batch) < 1:
        raise ValueError("n_models, n_best and batch must be positive")
    n_models, n_best, batch = int(n_models), min(int(n_best), int(n_models)), int(batch)
    if known is not None and (np.ndim(known) != 2 or np.shape(known)[-1] != 5):
        raise ValueError(f"known must have shape (n_known, 5), got {np.shape(known)}")
    fixed = (
        np.zeros((0, 5))
        if known is None or len(known) == 0
        else model_params(known, orbits.STANDARD)[0][0]
    )
    jit = obs.per_instrument("jitter", jitter, (1,))
    tr = None if trend is None else np.asarray(trend, dtype=np.float64).reshape(1, 2)
    evaluator = MultiDeviceEvaluator(
        obs,
        n_planets=fixed.shape[0] + 1,
        statistic="profile",
        jitter=jit is not None,
        trend=0 if tr is None else 2,
        precision=precision,
        device=device,
    )
    starts = range(0, n_models, batch)
    streams = np.random.default_rng(seed).spawn(len(starts))
    box = ((math.log(p_lo), math.log(p_hi)), (e_lo, e_hi))

    def run_batch(ev: ModelEvaluator, item: tuple[int, np.random.Generator]):
        start, rng = item
        trial = _trials(rng, min(batch, n_models - start), *box)
        return _best_of_batch(ev, fixed, trial, jit, tr, n_best)

    kept = evaluator.map(list(zip(starts, streams, strict=True)), run_batch)
    best_chi2, best_p, best_k, best_off = (
        np.concatenate(parts) for parts in zip(*kept, strict=True)
    )
    top = np.argsort(best_chi2, kind="stable")[:n_best]
    best_chi2, best_p, best_k, best_off = best_chi2[top], best_p[top], best_k[top], best_off[top]
    params = best_p.copy()
    params[:, 1] = np.abs(best_k)
    params[:, 3] = np.mod(best_p[:, 3] + np.where(best_k < 0, math.pi, 0.0), 2 * math.pi)
    return SearchResult(params, best_off, best_chi2, fixed, obs.instruments, obs.t_ref, n_models)


def _trials(
    rng: np.random.Generator,
    m: int,
    log_period: tuple[float, float],
    eccentricity: tuple[float, float],
) -> np.ndarray:
    """``(m, 5)`` trial orbits (P, K = 1, e, w, M0): P log-uniform, the rest
    uniform (w and M0 in ``[0, 2 pi)``)."""
    trial = np.empty((m, 5))
    trial[:, 0] = np.exp(rng.uniform(*log_period, m))
    trial[:, 1] = 1.0  # profiled
    trial[:, 2] = rng.uniform(*eccentricity, m)
    trial[:, 3] = rng.uniform(0.0, 2 * math.pi, m)
    trial[:, 4] = rng.uniform(0.0, 2 * math.pi, m)
    return trial


def _best_of_batch(
    ev: ModelEvaluator,
    fixed: np.ndarray,
    trial: np.ndarray,
    jitter: np.ndarray | None,
    trend: np.ndarray | None,
    n_best: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Evaluate trial orbits with the ``fixed`` planets on one device; the
    ``n_best`` lowest chi^2 (inf where not OK), their orbits, K and offsets."""
    m, n_inst = trial.shape[0], len(ev.obs.instruments)
    params = np.concatenate([np.broadcast_to(fixed, (m, *fixed.shape)), trial[:, None]], axis=1)
    out = ev(
        params,
        None,
        None if jitter is None else np.broadcast_to(jitter, (m, n_inst)),
        None if trend is None else np.broadcast_to(trend, (m, 2)),
    )
    score = np.where(out["status"] == ModelStatus.OK, out["statistic"], np.inf)
    keep = np.argpartition(score, n_best - 1)[:n_best] if m > n_best else np.arange(m)
    return score[keep], trial[keep], out["k"][keep], out["offsets"][keep]
