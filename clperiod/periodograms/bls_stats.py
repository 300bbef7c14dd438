"""Box-model statistics on the host (float64 NumPy), as astropy's ``BoxLeastSquares``.

The period grid of a transit search (:func:`autoperiod`), the in-transit mask
of a box model (:func:`transit_mask`), the model itself (:func:`box_model`)
and the vetting statistics of one candidate (:func:`compute_stats`: odd and
even depths, per-transit counts and log-likelihoods, the sinusoid
alternative). Each follows astropy 8's ``BoxLeastSquares`` method of the
same name, expression by expression, so that points on a box edge fall as
they do there. The search itself runs on the device
(:func:`clperiod.periodograms.bls.bls`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clperiod import checks

__all__ = ["autoperiod", "box_model", "compute_stats", "transit_mask"]


def autoperiod(
    t: Any,
    durations: Any,
    minimum_period: float | None = None,
    maximum_period: float | None = None,
    minimum_n_transit: int = 3,
    frequency_factor: float = 1.0,
) -> np.ndarray:
    """astropy's heuristic period grid for a transit search, uniform in frequency.

    Parameters
    ----------
    t : array_like
        Observation times (of one light curve, or of a whole catalog: the
        grid then serves its longest baseline).
    durations : float or array_like
        The box durations of the search (their absolute values).
    minimum_period, maximum_period : float, optional
        Bounds; by default twice the longest duration and
        ``baseline / (minimum_n_transit - 1)``. Given in either order.
    minimum_n_transit : int
        Transits a signal at the longest period shows at least (with the
        default ``maximum_period``), > 1.
    frequency_factor : float
        The frequency step in units of ``min(durations) / baseline**2``.

    Returns
    -------
    ndarray
        Periods ``1 / (1 / minimum_period - k df)``, rising from
        ``minimum_period``, as astropy's ``BoxLeastSquares.autoperiod``.

    Raises
    ------
    ValueError
        No finite times, a zero baseline, ``minimum_n_transit <= 1``, a
        non-positive ``minimum_period`` or ``frequency_factor``.
    """
    t = np.asarray(t, dtype=np.float64).ravel()
    if t.size == 0 or not np.isfinite(t).all():
        raise ValueError("t must hold finite times")
    durations = np.abs(np.atleast_1d(np.asarray(durations, dtype=np.float64)))
    if durations.ndim != 1 or durations.size == 0 or not np.isfinite(durations).all():
        raise ValueError("durations must be a finite number or 1-D array")
    frequency_factor = checks.real("frequency_factor", frequency_factor, positive=True)
    baseline = float(np.max(t) - np.min(t))
    if baseline <= 0:
        raise ValueError("the times span no baseline: every time is equal")
    step = frequency_factor * float(np.min(durations)) / baseline**2
    low = 2.0 * float(np.max(durations)) if minimum_period is None else minimum_period
    if maximum_period is None:
        minimum_n_transit = checks.integer("minimum_n_transit", minimum_n_transit)
        if minimum_n_transit <= 1:
            raise ValueError("minimum_n_transit must be greater than 1")
        high = baseline / (minimum_n_transit - 1)
    else:
        high = maximum_period
    low = checks.real("minimum_period", low)
    high = checks.real("maximum_period", high)
    low, high = min(low, high), max(low, high)
    if low <= 0.0:
        raise ValueError(f"minimum_period must be positive, got {low}")
    fmin, fmax = 1.0 / high, 1.0 / low
    count = 1 + int(np.round((fmax - fmin) / step))
    return 1.0 / (fmax - step * np.arange(count))


def transit_mask(t: Any, period: float, duration: float, transit_time: float) -> np.ndarray:
    """Which times fall in the box: ``|((t - t0 + P/2) mod P) - P/2| < d/2``.

    Parameters
    ----------
    t : array_like
        Times.
    period, duration, transit_time : float
        The box model: period ``P``, duration ``d`` and a mid-transit time ``t0``.

    Returns
    -------
    ndarray of bool
        The shape of ``t``.
    """
    half = 0.5 * period
    return np.abs((np.asarray(t, dtype=np.float64) - transit_time + half) % period - half) < (
        0.5 * duration
    )


def _weights(y: np.ndarray, dy: Any) -> np.ndarray:
    """Inverse variances ``dy**-2`` broadcast to ``y`` (ones without ``dy``)."""
    if dy is None:
        return np.ones_like(y)
    return np.broadcast_to(1.0 / np.asarray(dy, dtype=np.float64) ** 2, y.shape)


def box_model(
    t: Any, y: Any, dy: Any, t_model: Any, period: float, duration: float, transit_time: float
) -> np.ndarray:
    """The box model fitted to ``(t, y, dy)``, evaluated at ``t_model``.

    The weighted mean of the in-transit values inside the box, of the others
    outside it (astropy's ``BoxLeastSquares.model``).

    Parameters
    ----------
    t, y : array_like
        The light curve.
    dy : array_like or None
        Uncertainties (None: equal weights).
    t_model : array_like
        Where to evaluate the model.
    period, duration, transit_time : float
        The box (see :func:`transit_mask`).

    Returns
    -------
    ndarray
        The model values, the shape of ``t_model``; NaN where the box or its
        complement holds no observation.
    """
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, dy)
    inside = transit_mask(t, period, duration, transit_time)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_in = np.sum(y[inside] * v[inside]) / np.sum(v[inside])
        y_out = np.sum(y[~inside] * v[~inside]) / np.sum(v[~inside])
    return np.where(transit_mask(t_model, period, duration, transit_time), y_in, y_out)


def _depth(
    y: np.ndarray, v: np.ndarray, mask: np.ndarray, reference: tuple[float, float] | None = None
) -> tuple[float, float]:
    """The weighted mean of ``y[mask]`` and its variance; with ``reference =
    (mean, variance)`` of other points, the depth ``mean - mean[mask]`` and its
    error. ``(0, inf)`` for an empty mask or a reference of infinite variance."""
    if not np.any(mask) or (reference is not None and not np.isfinite(reference[1])):
        return 0.0, np.inf
    variance = 1.0 / np.sum(v[mask])
    mean = np.sum(y[mask] * v[mask]) * variance
    if reference is None:
        return float(mean), float(variance)
    return float(reference[0] - mean), float(np.sqrt(variance + reference[1]))


def compute_stats(
    t: Any, y: Any, dy: Any, period: float, duration: float, transit_time: float
) -> dict[str, Any]:
    """Vetting statistics of one box model, as astropy's ``BoxLeastSquares.compute_stats``.

    Parameters
    ----------
    t, y : array_like
        The light curve (times as given: ``transit_time`` is in their scale).
    dy : array_like or None
        Uncertainties (None: equal weights).
    period, duration, transit_time : float
        The box model (e.g. a search's best period, its ``duration`` and
        ``transit_time``).

    Returns
    -------
    dict
        ``depth``, ``depth_odd`` (transits ``t0 + (2k + 1) P``), ``depth_even``
        (``t0 + 2k P``), ``depth_half`` (period ``P / 2``, against its own
        out-of-transit points) and ``depth_phased`` (a box half a period
        later, against the points outside both boxes), each ``(depth,
        error)``, ``(0, inf)`` where a box is empty; ``transit_times`` (every
        transit from the first to the last with an observation in it),
        ``per_transit_count``, ``per_transit_log_likelihood`` (they add up to
        the search's ``log_likelihood`` of this box), ``harmonic_amplitude``
        (of a weighted sinusoid fit at ``P``) and
        ``harmonic_delta_log_likelihood`` (the sinusoid's log-likelihood less
        the box model's: > 0 prefers the sinusoid).

    Raises
    ------
    ValueError
        No observation falls in the box (astropy fails there too).
    """
    t = np.asarray(t, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    v = _weights(y, dy)
    inside = transit_mask(t, period, duration, transit_time)
    if not np.any(inside):
        raise ValueError(
            f"no observation falls in the box (period {period}, duration {duration}, "
            f"transit_time {transit_time})"
        )
    half_width = 0.5 * duration
    odd = np.abs((t - transit_time) % (2 * period) - period) < half_width
    even = np.abs((t - transit_time + period) % (2 * period) - period) < half_width
    phased = np.abs((t - transit_time) % period - 0.5 * period) < half_width
    halved = (
        np.abs((t - transit_time + 0.25 * period) % (0.5 * period) - 0.25 * period) < half_width
    )
    outside = _depth(y, v, ~inside)
    depth = _depth(y, v, inside, outside)
    y_out = outside[0]
    y_in = y_out - depth[0]
    numbers = np.round((t[inside] - transit_time) / period).astype(int)
    first = int(numbers.min())
    counts = np.bincount(numbers - first)
    gains = -0.5 * v[inside] * ((y[inside] - y_in) ** 2 - (y[inside] - y_out) ** 2)
    box_chi2 = np.sum(v[inside] * (y[inside] - y_in) ** 2) + np.sum(
        v[~inside] * (y[~inside] - y_out) ** 2
    )
    return {
        "transit_times": transit_time + period * np.arange(first, int(numbers.max()) + 1),
        "per_transit_count": counts,
        "per_transit_log_likelihood": np.bincount(
            numbers - first, weights=gains, minlength=counts.size
        ),
        "depth": depth,
        "depth_odd": _depth(y, v, odd, outside),
        "depth_even": _depth(y, v, even, outside),
        "depth_half": _depth(y, v, halved, _depth(y, v, ~halved)),
        "depth_phased": _depth(y, v, phased, _depth(y, v, ~phased & ~inside)),
        **_harmonic(t, y, v, period, box_chi2),
    }


def _harmonic(
    t: np.ndarray, y: np.ndarray, v: np.ndarray, period: float, box_chi2: float
) -> dict[str, float]:
    """Amplitude of the weighted fit of ``a sin + b cos + c`` at ``period``, and its
    log-likelihood less the box model's (chi^2 of the box: ``box_chi2``)."""
    angle = 2 * np.pi * t / period
    design = np.column_stack([np.sin(angle), np.cos(angle), np.ones_like(t)])
    coefficients = np.linalg.solve(design.T @ (design * v[:, None]), design.T @ (y * v))
    sine_chi2 = np.sum(v * (y - design @ coefficients) ** 2)
    return {
        "harmonic_amplitude": float(np.hypot(coefficients[0], coefficients[1])),
        "harmonic_delta_log_likelihood": float(0.5 * (box_chi2 - sine_chi2)),
    }
