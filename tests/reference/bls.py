"""Reference box least squares (Kovács, Zucker & Mazeh 2002) as astropy defines it.

Restates ``shared/spec/methods_next.md`` §4 (cited as "spec") in float64 NumPy: what
astropy 8's ``BoxLeastSquares.power`` computes with ``method="slow"`` (:func:`bls_slow`)
and ``method="fast"`` (:func:`bls_binned` with ``compat="astropy"``), its
``compute_stats`` (:func:`transit_stats`) and ``autoperiod`` (:func:`autoperiod`). The
oracle the OpenCL BLS kernels are tested against; nothing here imports ``clperiod`` or
astropy.

Model (spec §4.1; Kovács et al. 2002, A&A 391, 369, with astropy's objectives). Times are taken
relative to ``t_ref = min t`` (``tau = t - t_ref``), ``u = y - median(y)`` and
``v = dy**-2`` (ones without ``dy``). For a set ``I`` of in-transit points::

    V_in = sum_I v            ybar_in  = sum_I u v / V_in
    V_out = sum_notI v        ybar_out = sum_notI u v / V_out
    depth = ybar_out - ybar_in            depth_err = sqrt(1 / V_in + 1 / V_out)
    depth_snr = depth / depth_err         log_likelihood = V_in depth^2 / 2

``log_likelihood`` is the gain in ``-chi^2 / 2`` of the two-level (box) model over a
constant at ``ybar_out``. Objective ``"likelihood"`` maximises it, ``"snr"`` maximises
``depth_snr``; only dips count. Per period the best box gives ``power`` (the objective),
``depth``, ``depth_err``, ``duration``, ``transit_time`` (mid-transit, in
``[t_ref, t_ref + period)``), ``depth_snr`` and ``log_likelihood``.

Search grids:

* exact (spec §4.3): for each duration ``d`` (in the order given), centres
  ``c = numpy.arange(0, P + d / oversample, d / oversample)`` (so ``c ~ P`` repeats
  ``c = 0``); in transit ``|((tau - c + P/2) mod P) - P/2| < d/2``; a box is admissible when
  both sets are non-empty and ``depth > 0``; the first strictly greatest objective in
  (duration, centre) order wins.
* binned (spec §4.2): bins of width ``D = min(d) / oversample`` over ``[0, P)``, ``K =
  ceil(P / D)``; boxes are runs of ``m = round(d / D)`` bins; admissible when ``V_in`` and
  ``V_out`` are at least ``DBL_EPSILON`` and ``depth >= 0``; ``duration = m D``.
  ``compat="astropy"`` reproduces astropy's layout and its two coverage defects near phase
  0 (the last, partial bin is overwritten by the wrap padding; only ``oversample`` bins are
  padded, so longer boxes never straddle phase 0); ``compat=None`` wraps cyclically (every
  box start ``0 .. K - 1``, any length).

Where no box is admissible the power is ``-inf`` and the other fields NaN (astropy's exact
method raises ``TypeError`` there; its binned one leaves the fields uninitialised).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
Objective = Literal["likelihood", "snr"]
#: astropy's absolute floor on the in- and out-of-transit inverse variances (binned method).
DBL_EPSILON = float(np.finfo(np.float64).eps)
FIELDS = ("power", "depth", "depth_err", "duration", "transit_time", "depth_snr",
          "log_likelihood")


@dataclass(frozen=True)
class BLSResult:
    """Per-period results of :func:`bls_slow` and :func:`bls_binned` (astropy's names)."""

    power: FloatArray
    depth: FloatArray
    depth_err: FloatArray
    duration: FloatArray
    transit_time: FloatArray
    depth_snr: FloatArray
    log_likelihood: FloatArray


@dataclass(frozen=True)
class Prepared:
    """The light curve as the search sees it: ``tau``, ``u``, ``v`` and ``t_ref``."""

    tau: FloatArray
    u: FloatArray
    v: FloatArray
    t_ref: float


def prepare(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None) -> Prepared:
    """``tau = t - min t``, ``u = y - median(y)``, ``v = dy**-2`` (spec §4.1)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    if t.ndim != 1 or t.shape != y.shape:
        raise ValueError("t and y must be 1-d arrays of one length")
    v = np.ones_like(y) if dy is None else np.broadcast_to(np.asarray(dy, float) ** -2.0,
                                                           y.shape).copy()
    t_ref = float(np.min(t))
    return Prepared(t - t_ref, y - np.median(y), v, t_ref)


def check_grid(period: ArrayLike, duration: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Periods and durations as astropy validates them: absolute values, 1-d, non-empty,
    every duration shorter than every period."""
    period = np.atleast_1d(np.abs(np.asarray(period, dtype=float)))
    duration = np.atleast_1d(np.abs(np.asarray(duration, dtype=float)))
    if duration.ndim != 1 or duration.size == 0:
        raise ValueError("duration must be 1-dimensional and non-empty")
    if period.ndim != 1 or period.size == 0:
        raise ValueError("period must be 1-dimensional and non-empty")
    if not np.min(period) > np.max(duration):
        raise ValueError("The maximum transit duration must be shorter than the minimum period")
    return period, duration


def _check_options(objective: str, oversample: int) -> None:
    if objective not in ("likelihood", "snr"):
        raise ValueError("objective must be 'likelihood' or 'snr'")
    if int(oversample) != oversample or oversample < 1:
        raise ValueError("oversample must be an integer >= 1")


def box_fit(uv_in: FloatArray, v_in: FloatArray, uv_out: FloatArray, v_out: FloatArray
            ) -> dict[str, FloatArray]:
    """``depth``, ``depth_err``, ``depth_snr`` and ``log_likelihood`` of boxes from their
    sums (spec §4.1), computed as astropy's C core does."""
    with np.errstate(invalid="ignore", divide="ignore"):
        depth = uv_out / v_out - uv_in / v_in
        depth_err = np.sqrt(1.0 / v_in + 1.0 / v_out)
        return {"depth": depth, "depth_err": depth_err, "depth_snr": depth / depth_err,
                "log_likelihood": 0.5 * v_in * depth * depth}


def _best(fit: dict[str, FloatArray], admissible: NDArray[np.bool_], objective: Objective,
          duration: FloatArray, transit_time: FloatArray) -> dict[str, float]:
    """The first strictly greatest admissible box, or ``-inf`` power and NaN fields."""
    score = np.where(admissible, fit["log_likelihood" if objective == "likelihood"
                                     else "depth_snr"], -np.inf)
    k = int(np.argmax(score))
    if not np.isfinite(score[k]):
        return {name: (-np.inf if name == "power" else np.nan) for name in FIELDS}
    return {"power": float(score[k]), "depth": float(fit["depth"][k]),
            "depth_err": float(fit["depth_err"][k]), "duration": float(duration[k]),
            "transit_time": float(transit_time[k]), "depth_snr": float(fit["depth_snr"][k]),
            "log_likelihood": float(fit["log_likelihood"][k])}


def _collect(rows: list[dict[str, float]]) -> BLSResult:
    return BLSResult(**{name: np.array([row[name] for row in rows]) for name in FIELDS})


def in_transit(tau: FloatArray, period: float, duration: float, centre: FloatArray
               ) -> NDArray[np.bool_]:
    """Mask ``|((tau - c + P/2) mod P) - P/2| < d/2``, shape ``(len(centre), len(tau))``,
    with astropy's order of operations (so that points on an edge fall the same way)."""
    half = 0.5 * period
    return np.abs((tau[None, :] - centre[:, None] + half) % period - half) < 0.5 * duration


def _slow_one(data: Prepared, period: float, durations: FloatArray, oversample: int,
              objective: Objective) -> dict[str, float]:
    fits, admissible, lengths, times = [], [], [], []
    uv = data.u * data.v
    for duration in durations:
        step = duration / oversample
        centre = np.arange(0, period + step, step)
        mask = in_transit(data.tau, period, duration, centre)
        v_in = np.sum(np.where(mask, data.v, 0.0), axis=1)
        v_out = np.sum(np.where(mask, 0.0, data.v), axis=1)
        fit = box_fit(np.sum(np.where(mask, uv, 0.0), axis=1), v_in,
                      np.sum(np.where(mask, 0.0, uv), axis=1), v_out)
        fits.append(fit)
        admissible.append((v_in > 0) & (v_out > 0) & (fit["depth"] > 0))
        lengths.append(np.full(centre.size, duration))
        times.append(centre % period + data.t_ref)
    joined = {key: np.concatenate([fit[key] for fit in fits]) for key in fits[0]}
    return _best(joined, np.concatenate(admissible), objective, np.concatenate(lengths),
                 np.concatenate(times))


def bls_slow(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, period: ArrayLike,
             duration: ArrayLike, objective: Objective = "likelihood", oversample: int = 10
             ) -> BLSResult:
    """Exact BLS: every duration and every centre on astropy's grid (spec §4.3).

    Parameters
    ----------
    t, y, dy
        The light curve; ``dy=None`` for unit weights.
    period, duration
        Trial periods and box durations (units of ``t``); ``max(duration) < min(period)``.
    objective
        ``"likelihood"`` or ``"snr"``.
    oversample
        Centres per duration.

    Returns
    -------
    BLSResult
        astropy ``BoxLeastSquares.power(..., method="slow")``'s fields per period.
    """
    _check_options(objective, oversample)
    period, duration = check_grid(period, duration)
    data = prepare(t, y, dy)
    return _collect([_slow_one(data, float(p), duration, int(oversample), objective)
                     for p in period])


def round_half_away(x: float) -> int:
    """C's ``round`` for ``x >= 0`` (halves away from zero, not to even)."""
    return int(np.floor(x + 0.5))


def _binned_one(data: Prepared, period: float, durations: FloatArray, oversample: int,
                objective: Objective, compat: Literal["astropy"] | None) -> dict[str, float]:
    width = float(np.min(durations)) / oversample
    nreal = int(np.ceil(period / width))
    wrapped = data.tau - period * np.floor(data.tau / period)
    index = np.trunc(wrapped / width).astype(np.int64) + 1
    lengths = [round_half_away(d / width) for d in durations]
    uv = data.u * data.v
    if compat == "astropy":
        nbins = nreal + oversample
        sums_uv = np.bincount(index, weights=uv, minlength=nbins + 1)[:nbins + 1]
        sums_v = np.bincount(index, weights=data.v, minlength=nbins + 1)[:nbins + 1]
        for r in range(1, oversample + 1):
            sums_uv[nreal - 1 + r] = sums_uv[r]
            sums_v[nreal - 1 + r] = sums_v[r]
        starts = [np.arange(nbins - m + 1) for m in lengths]
    else:
        index = (index - 1) % nreal + 1
        real_uv = np.bincount(index, weights=uv, minlength=nreal + 1)
        real_v = np.bincount(index, weights=data.v, minlength=nreal + 1)
        pad = np.arange(1, max(lengths) + 1)
        wrap = (pad - 1) % nreal + 1
        sums_uv = np.concatenate([real_uv, real_uv[wrap]])
        sums_v = np.concatenate([real_v, real_v[wrap]])
        starts = [np.arange(nreal) for _ in lengths]
    cumulative_uv, cumulative_v = np.cumsum(sums_uv), np.cumsum(sums_v)
    total_uv, total_v = np.cumsum(uv)[-1], np.cumsum(data.v)[-1]
    fits, admissible, box_lengths, times = [], [], [], []
    for m, start in zip(lengths, starts, strict=True):
        uv_in = cumulative_uv[start + m] - cumulative_uv[start]
        v_in = cumulative_v[start + m] - cumulative_v[start]
        v_out = total_v - v_in
        fit = box_fit(uv_in, v_in, total_uv - uv_in, v_out)
        fits.append(fit)
        admissible.append((v_in >= DBL_EPSILON) & (v_out >= DBL_EPSILON)
                          & (fit["depth"] >= 0))
        box_lengths.append(np.full(start.size, m * width))
        times.append(np.fmod(start * width + 0.5 * (m * width), period) + data.t_ref)
    joined = {key: np.concatenate([fit[key] for fit in fits]) for key in fits[0]}
    return _best(joined, np.concatenate(admissible), objective, np.concatenate(box_lengths),
                 np.concatenate(times))


def bls_binned(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, period: ArrayLike,
               duration: ArrayLike, objective: Objective = "likelihood", oversample: int = 10,
               compat: Literal["astropy"] | None = None) -> BLSResult:
    """Binned BLS on a phase grid of ``min(duration) / oversample`` (spec §4.2).

    Parameters
    ----------
    t, y, dy, period, duration, objective, oversample
        As :func:`bls_slow`.
    compat
        ``"astropy"``: astropy ``method="fast"`` exactly, with its defects near phase 0;
        None: every box of ``m`` bins starting at every bin, wrapping cyclically.

    Returns
    -------
    BLSResult
        Per-period fields; ``duration`` is the quantised ``m D``.
    """
    _check_options(objective, oversample)
    if compat not in (None, "astropy"):
        raise ValueError("compat must be None or 'astropy'")
    period, duration = check_grid(period, duration)
    data = prepare(t, y, dy)
    return _collect([_binned_one(data, float(p), duration, int(oversample), objective, compat)
                     for p in period])


def autoperiod(t: ArrayLike, duration: ArrayLike, minimum_period: float | None = None,
               maximum_period: float | None = None, minimum_n_transit: int = 3,
               frequency_factor: float = 1.0) -> FloatArray:
    """astropy's heuristic period grid (spec §4.4), uniform in frequency, ascending period.

    ``df = frequency_factor min(d) / T^2`` with ``T`` the baseline; ``P_min = 2 max(d)`` and
    ``P_max = T / (minimum_n_transit - 1)`` unless given (swapped if reversed);
    ``periods = 1 / (1 / P_min - df k)``, ``k = 0 .. round((1/P_min - 1/P_max) / df)``.
    """
    t = np.asarray(t, dtype=float)
    duration = np.atleast_1d(np.abs(np.asarray(duration, dtype=float)))
    baseline = np.max(t) - np.min(t)
    step = frequency_factor * np.min(duration) / baseline**2
    low = 2.0 * np.max(duration) if minimum_period is None else minimum_period
    if maximum_period is None:
        if minimum_n_transit <= 1:
            raise ValueError("minimum_n_transit must be greater than 1")
        high = baseline / (minimum_n_transit - 1)
    else:
        high = maximum_period
    low, high = min(low, high), max(low, high)
    if low <= 0.0:
        raise ValueError("minimum_period must be positive")
    count = 1 + int(np.round((1.0 / low - 1.0 / high) / step))
    return 1.0 / (1.0 / low - step * np.arange(count))


def _depth(y: FloatArray, v: FloatArray, mask: NDArray[np.bool_],
           reference: tuple[float, float] | None = None) -> tuple[float, float]:
    """Weighted mean and its variance of the masked points, or with ``reference =
    (mean, variance)`` the depth ``mean - masked mean`` and its error; ``(0, inf)`` for an
    empty mask or an infinite reference variance."""
    if not np.any(mask) or (reference is not None and not np.isfinite(reference[1])):
        return 0.0, np.inf
    variance = 1.0 / np.sum(v[mask])
    mean = np.sum(y[mask] * v[mask]) * variance
    if reference is None:
        return float(mean), float(variance)
    return float(reference[0] - mean), float(np.sqrt(variance + reference[1]))


def transit_stats(t: ArrayLike, y: ArrayLike, dy: ArrayLike | None, period: float,
                  duration: float, transit_time: float) -> dict[str, object]:
    """Vetting statistics of one box model, as astropy's ``compute_stats`` (spec §4.4).

    Raw ``t`` and ``y`` (no reference epoch, no median), weights ``v = dy**-2``.

    Returns
    -------
    dict
        ``depth``, ``depth_odd``, ``depth_even``, ``depth_half``, ``depth_phased`` as
        ``(depth, error)``; ``transit_times``, ``per_transit_count``,
        ``per_transit_log_likelihood``, ``harmonic_amplitude``,
        ``harmonic_delta_log_likelihood``. Raises ``ValueError`` when no point is in
        transit (astropy fails there too).
    """
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    v = np.ones_like(y) if dy is None else np.broadcast_to(np.asarray(dy, float) ** -2.0,
                                                           y.shape)
    half = 0.5 * period
    inside = np.abs((t - transit_time + half) % period - half) < 0.5 * duration
    if not np.any(inside):
        raise ValueError("no point is in transit")
    odd = np.abs((t - transit_time) % (2 * period) - period) < 0.5 * duration
    even = np.abs((t - transit_time + period) % (2 * period) - period) < 0.5 * duration
    phased = np.abs((t - transit_time) % period - half) < 0.5 * duration
    halved = np.abs((t - transit_time + 0.25 * period) % half - 0.25 * period) < 0.5 * duration
    outside = _depth(y, v, ~inside)
    depth = _depth(y, v, inside, outside)
    y_out, y_in = outside[0], outside[0] - depth[0]
    number = np.round((t[inside] - transit_time) / period).astype(int)
    first = int(number.min())
    counts = np.bincount(number - first)
    gain = -0.5 * v[inside] * ((y[inside] - y_in) ** 2 - (y[inside] - y_out) ** 2)
    box_chi2 = (np.sum(v[inside] * (y[inside] - y_in) ** 2)
                + np.sum(v[~inside] * (y[~inside] - y_out) ** 2))
    design = np.column_stack([np.sin(2 * np.pi * t / period), np.cos(2 * np.pi * t / period),
                              np.ones_like(t)])
    coefficients = np.linalg.solve(design.T @ (design * v[:, None]), design.T @ (y * v))
    sine_chi2 = np.sum(v * (y - design @ coefficients) ** 2)
    return {
        "transit_times": transit_time + period * np.arange(first, int(number.max()) + 1),
        "per_transit_count": counts,
        "per_transit_log_likelihood": np.bincount(number - first, weights=gain,
                                                  minlength=counts.size),
        "depth": depth,
        "depth_odd": _depth(y, v, odd, outside),
        "depth_even": _depth(y, v, even, outside),
        "depth_half": _depth(y, v, halved, _depth(y, v, ~halved)),
        "depth_phased": _depth(y, v, phased, _depth(y, v, ~phased & ~inside)),
        "harmonic_amplitude": float(np.hypot(coefficients[0], coefficients[1])),
        "harmonic_delta_log_likelihood": float(0.5 * (box_chi2 - sine_chi2)),
    }
