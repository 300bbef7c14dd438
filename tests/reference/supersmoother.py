"""Reference SuperSmoother and SuperSmoother period search, written for clarity.

This module restates ``shared/spec/seed_algorithms.md`` (cited below as "spec")
in plain Python loops over double-precision floats:

* :func:`smooth` and :func:`supsmu` are Friedman's running-lines smoother and
  his variable-span SuperSmoother (spec §2), with the arithmetic, update order,
  constants and quirks of the GPU port (the default) and, on request, the two
  extras of the R ``ppr.f`` original (tied-x post-pass, scale widening loop);
* :func:`supsmu_single_pass` is the single-pass "generalized validation"
  variant (spec §4);
* :func:`supersmoother_power` and :func:`best_frequency` are the period
  search around either smoother (spec §3), as the seed defines it or, with
  ``scale_free=True``, on inputs made free of units (:func:`without_units`).

It is the oracle the OpenCL SuperSmoother kernels are tested against, so every
operation follows the spec to the rounding of each step; speed is irrelevant
(small n, few frequencies). Nothing here imports ``clperiod``.

Two spec points are resolved from the reference sources the spec cites:

* the single-pass floor ``r = max(1e-7, sqrt(G_min / G_2))`` (spec §4.3) is the
  comparison ``if r < 1e-7: r = 1e-7``, so a NaN ratio (``G_min = G_2 = 0``,
  e.g. y identically 0) stays NaN; ``NaN ** 0 == 1`` then makes
  ``alpha = 10`` select the woofer while smaller alpha give NaN;
* the constants are the double-precision values of spec §2.1 (R's ``ppr.f``
  stores them as single-precision literals, which this module does not copy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Tweeter, midrange and woofer spans s1, s2, s3 (spec §2.1).
SPANS: tuple[float, float, float] = (0.05, 0.2, 0.5)
#: Initial "residual minimum" of the span choice (spec §2.1, §4.3).
BIG = 1e20
#: Floor of the bass-enhancement ratio (spec §2.1, §4.3).
SML = 1e-7

FloatArray = NDArray[np.float64]


# {{{ helpers


def _as_arrays(*arrays: ArrayLike) -> list[FloatArray]:
    """Convert the inputs to 1-D float64 arrays of one common length."""
    out = [np.asarray(a, dtype=np.float64) for a in arrays]
    if any(a.ndim != 1 for a in out) or len({a.size for a in out}) != 1:
        raise ValueError("inputs must be 1-D arrays of equal length")
    return out


def half_width(span: float, n: int) -> int:
    """Half-width ``h = max(2, floor(0.5 * span * n + 0.5))`` of a window (spec §2.2).

    The expression is evaluated in double precision in the order written, as
    the C code does, and truncated to an integer.
    """
    return max(2, int(0.5 * span * n + 0.5))


def vsmlsq(x: Sequence[float], *, widen_scale: bool = False) -> float:
    """Slope-stabiliser threshold ``1e-6 * scale**2`` (spec §2.1, §4.1).

    ``scale = x[3*(n//4) - 1] - x[n//4 - 1]`` (0-based). With ``widen_scale``
    the pair is widened (upper index up, lower index down) while
    ``scale <= 0``, as R's ``ppr.f`` does; the GPU port does not widen, so
    ``scale`` and the threshold may be 0 there.
    """
    n = len(x)
    if n < 4:
        raise ValueError(f"the scale of the abscissae needs n >= 4 points, got {n}")
    lo, hi = n // 4 - 1, 3 * (n // 4) - 1
    scale = x[hi] - x[lo]
    if widen_scale:
        while scale <= 0:
            if hi < n - 1:
                hi += 1
            if lo > 0:
                lo -= 1
            scale = x[hi] - x[lo]
    return 1e-6 * scale * scale


def _point(
    x: Sequence[float], y: Sequence[float], w: Sequence[float], i: int
) -> tuple[float, float, float]:
    """Point of virtual index ``i`` in ``[-n, 2n)``, wrapped once (spec §2.2, periodic).

    An index below 0 enters with abscissa ``x - 1``, one above ``n - 1`` with ``x + 1``.
    """
    n = len(x)
    if i < 0:
        return x[i + n] - 1.0, y[i + n], w[i + n]
    if i >= n:
        return x[i - n] + 1.0, y[i - n], w[i - n]
    return x[i], y[i], w[i]


def _ieee_div(a: float, b: float) -> float:
    """``a / b`` with IEEE-754 results (inf, NaN) instead of ``ZeroDivisionError``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.float64(a) / np.float64(b))


class _Window:
    """Running statistics of a weighted straight-line fit to a moving window.

    ``wt`` is the total weight, ``xbar`` and ``ybar`` the weighted means and
    ``vxx``, ``vxy``, ``vyy`` the centred sums ``sum w (x - xbar)**2``,
    ``sum w (x - xbar)(y - ybar)`` and ``sum w (y - ybar)**2``. ``vyy`` is only
    read by the single-pass variant (spec §4.2). All start at 0.
    """

    def __init__(self) -> None:
        self.wt = 0.0
        self.xbar = 0.0
        self.ybar = 0.0
        self.vxx = 0.0
        self.vxy = 0.0
        self.vyy = 0.0

    def seed(self, xi: float, eta: float, omega: float) -> None:
        """Start the window from one point with zero centred sums (spec §4.2)."""
        self.wt, self.xbar, self.ybar = omega, xi, eta

    def add(self, xi: float, eta: float, omega: float) -> None:
        """Add a point: means first, then the sums with the new means (spec §2.2, §4.2)."""
        wold = self.wt
        self.wt = wold + omega
        if self.wt > 0:
            self.xbar = (wold * self.xbar + omega * xi) / self.wt
            self.ybar = (wold * self.ybar + omega * eta) / self.wt
        if wold > 0:
            c = self.wt * omega * (xi - self.xbar) / wold
            self.vxx += c * (xi - self.xbar)
            self.vxy += c * (eta - self.ybar)
            self.vyy += self.wt * omega * (eta - self.ybar) * (eta - self.ybar) / wold

    def remove(self, xi: float, eta: float, omega: float) -> None:
        """Remove a point: sums first with the old means, then the means (spec §2.2, §4.2)."""
        wold = self.wt
        self.wt = wold - omega
        if self.wt > 0:
            c = wold * omega * (xi - self.xbar) / self.wt
            self.vxx -= c * (xi - self.xbar)
            self.vxy -= c * (eta - self.ybar)
            self.vyy -= wold * omega * (eta - self.ybar) * (eta - self.ybar) / self.wt
            self.xbar = (wold * self.xbar - omega * xi) / self.wt
            self.ybar = (wold * self.ybar - omega * eta) / self.wt

    def slope(self, vsmlsq: float) -> float:
        """Slope ``vxy / vxx``, or 0 unless ``vxx > vsmlsq`` (spec §2.2)."""
        return self.vxy / self.vxx if self.vxx > vsmlsq else 0.0

    def fit(self, xj: float, vsmlsq: float) -> float:
        """Value of the window's line at abscissa ``xj`` (spec §2.2)."""
        return self.slope(vsmlsq) * (xj - self.xbar) + self.ybar

    def hat(self, xj: float, vsmlsq: float) -> float:
        """Leverage per unit weight ``1/wt + (xj - xbar)**2 / vxx`` (spec §2.2, §4.3).

        Each term is dropped when its guard (``wt > 0``, ``vxx > vsmlsq``) fails.
        """
        h = 1.0 / self.wt if self.wt > 0 else 0.0
        if self.vxx > vsmlsq:
            h += (xj - self.xbar) * (xj - self.xbar) / self.vxx
        return h


# }}}

# {{{ Friedman's smooth and supsmu (spec §2)


def _average_tied_runs(x: Sequence[float], w: Sequence[float], smo: FloatArray) -> None:
    """R-only post-pass: smo on each run of tied abscissae becomes its weighted mean (§2.2)."""
    n = len(x)
    j = 0
    while j < n:
        j0 = j
        sy = smo[j] * w[j]
        sw = w[j]
        while j < n - 1 and x[j + 1] <= x[j]:
            j += 1
            sy += w[j] * smo[j]
            sw += w[j]
        if j > j0:
            smo[j0 : j + 1] = sy / sw if sw > 0 else 0.0
        j += 1


def smooth(
    x: ArrayLike,
    y: ArrayLike,
    w: ArrayLike,
    span: float,
    iper: int,
    vsmlsq: float,
    cross_validate: bool = True,
    *,
    tied_x_postpass: bool = False,
) -> tuple[FloatArray, FloatArray | None]:
    """Running weighted straight-line smoother of fixed span (spec §2.2).

    Parameters
    ----------
    x, y, w : array_like
        Abscissae sorted ascending (phases in [0, 1) when ``iper == 2``),
        ordinates and weights, all of length n.
    span : float
        Fraction of the points in a window; the half-width is
        ``h = max(2, floor(0.5 * span * n + 0.5))`` and every window holds
        2h + 1 consecutive points, which must not exceed n.
    iper : {1, 2}
        1: interval mode (points 0..h share the window [0, 2h], the last h + 1
        points share the last 2h + 1 points); 2: periodic mode (window
        j - h .. j + h modulo n, wrapped points shifted by -1 / +1).
        This is Friedman's ``|iper|``; his sign is ``cross_validate``.
    vsmlsq : float
        The slope is used only where the window's ``Vxx > vsmlsq``.
    cross_validate : bool
        Also return the absolute leave-one-out residuals (Friedman's iper > 0).
    tied_x_postpass : bool
        Apply R's post-pass that replaces smo on runs of tied abscissae by
        their weighted mean (omitted in the GPU port, spec §2.2 [QUIRK]).
        ``acvr`` is computed before it, as in R.

    Returns
    -------
    smo : ndarray
        The smoothed ordinates.
    acvr : ndarray or None
        ``|y_j - smo_j| / (1 - w_j * lev_j)`` where that denominator is
        positive, else the previous value (0 at j = 0); None unless
        ``cross_validate``.
    """
    xa, ya, wa = _as_arrays(x, y, w)
    if iper not in (1, 2):
        raise ValueError(f"iper must be 1 (interval) or 2 (periodic), got {iper}")
    n = xa.size
    h = half_width(span, n)
    if 2 * h + 1 > n:
        raise ValueError(f"a window of 2h+1 = {2 * h + 1} points (span {span}) exceeds n = {n}")
    xs, ys, ws = xa.tolist(), ya.tolist(), wa.tolist()
    periodic = iper == 2

    win = _Window()
    for i in range(-h - 1, h) if periodic else range(2 * h + 1):
        win.add(*_point(xs, ys, ws, i))

    smo = np.empty(n)
    acvr = np.zeros(n) if cross_validate else None
    for j in range(n):
        if periodic or (j - h - 1 >= 0 and j + h <= n - 1):
            win.remove(*_point(xs, ys, ws, j - h - 1))
            win.add(*_point(xs, ys, ws, j + h))
        smo[j] = win.fit(xs[j], vsmlsq)
        if acvr is not None:
            d = 1.0 - ws[j] * win.hat(xs[j], vsmlsq)
            if d > 0:
                acvr[j] = abs(ys[j] - smo[j]) / d
            elif j > 0:
                acvr[j] = acvr[j - 1]
    if tied_x_postpass:
        _average_tied_runs(xs, ws, smo)
    return smo, acvr


def supsmu(
    x: ArrayLike,
    y: ArrayLike,
    w: ArrayLike,
    iper: int,
    span: float = 0.0,
    alpha: float = 0.0,
    *,
    tied_x_postpass: bool = False,
    widen_scale: bool = False,
) -> FloatArray:
    """Friedman's SuperSmoother (spec §2.3).

    Parameters
    ----------
    x, y, w : array_like
        Abscissae sorted ascending, ordinates, weights (length n >= 5 unless
        all x are equal).
    iper : int
        2 requests periodic mode; it falls back to interval mode (1) when
        ``x[0] < 0`` or ``x[-1] > 1``, and any value other than 1 or 2 means 1.
    span : float
        > 0: a single fixed-span :func:`smooth`; <= 0: automatic span choice.
    alpha : float
        Bass enhancement, applied only for ``0 < alpha <= 10`` at points with
        ``0 < resmin < R_woofer``: the span grows toward the woofer by the
        factor ``max(1e-7, resmin / R_woofer) ** (10 - alpha)``.
    tied_x_postpass : bool
        R's tied-x post-pass in every :func:`smooth` call (off in the GPU port).
    widen_scale : bool
        R's widening of the scale pair while ``scale <= 0`` (off in the GPU port).

    Returns
    -------
    ndarray
        The smoothed ordinates. When ``x[-1] <= x[0]`` (all x equal) every
        value is the weighted mean of y (0 if the weights sum to <= 0).

    Notes
    -----
    Automatic span (spec §2.3 steps 3-7): tweeter, midrange and woofer fits
    F_k with their leave-one-out residuals r_k; R_k = r_k smoothed with the
    midrange span; per point a span from the R_k (:func:`supsmu_span`);
    those spans smoothed with the midrange span; per point the fits
    interpolated at that span (:func:`supsmu_blend`); finally a tweeter
    smooth of the interpolated values.
    """
    xa, ya, wa = _as_arrays(x, y, w)
    n = xa.size
    if xa[-1] <= xa[0]:
        sy = sw = 0.0
        for wj, yj in zip(wa.tolist(), ya.tolist()):
            sy += wj * yj
            sw += wj
        return np.full(n, sy / sw if sw > 0 else 0.0)

    threshold = vsmlsq(xa.tolist(), widen_scale=widen_scale)
    jper = iper
    if iper == 2 and (xa[0] < 0 or xa[-1] > 1):
        jper = 1
    if jper not in (1, 2):
        jper = 1

    def run(
        values: ArrayLike, span_k: float, cross_validate: bool
    ) -> tuple[FloatArray, FloatArray | None]:
        return smooth(
            xa, values, wa, span_k, jper, threshold, cross_validate, tied_x_postpass=tied_x_postpass
        )

    if span > 0:
        return run(ya, span, False)[0]

    fits, resid = np.empty((3, n)), np.empty((3, n))
    for k, span_k in enumerate(SPANS):
        fits[k], acvr = run(ya, span_k, True)
        resid[k] = run(acvr, SPANS[1], False)[0]
    chosen = [supsmu_span(resid[:, j], alpha) for j in range(n)]
    smoothed_span = run(chosen, SPANS[1], False)[0]
    blended = [supsmu_blend(smoothed_span[j], fits[:, j]) for j in range(n)]
    return run(blended, SPANS[0], False)[0]


def supsmu_span(residuals: Sequence[float], alpha: float) -> float:
    """Span chosen at one point from its smoothed residuals R_1, R_2, R_3 (spec §2.3 step 4).

    The span of the first smallest R_k (scan from ``resmin = 1e20``, replace on
    strict <); then, if ``0 < alpha <= 10`` and ``0 < resmin < R_3``, the bass
    enhancement ``span += (0.5 - span) * max(1e-7, resmin / R_3) ** (10 - alpha)``.
    """
    span, resmin = math.nan, BIG
    for k in range(3):
        if residuals[k] < resmin:
            resmin = residuals[k]
            span = SPANS[k]
    if 0 < alpha <= 10 and resmin < residuals[2] and resmin > 0:
        span += (SPANS[2] - span) * max(SML, resmin / residuals[2]) ** (10.0 - alpha)
    return span


def supsmu_blend(span: float, fits: Sequence[float]) -> float:
    """Interpolate the tweeter, midrange, woofer fits at a smoothed span (spec §2.3 steps 5-6).

    The span is clipped to [0.05, 0.5]; below 0.2 the result is
    ``(1 - phi) F_2 + phi F_1`` with ``phi = (0.2 - span) / 0.15``, otherwise
    ``(1 - phi) F_2 + phi F_3`` with ``phi = (span - 0.2) / 0.3``.
    """
    if span <= SPANS[0]:
        span = SPANS[0]
    if span >= SPANS[2]:
        span = SPANS[2]
    if span < SPANS[1]:
        phi = (SPANS[1] - span) / (SPANS[1] - SPANS[0])
        return (1.0 - phi) * fits[1] + phi * fits[0]
    phi = (span - SPANS[1]) / (SPANS[2] - SPANS[1])
    return (1.0 - phi) * fits[1] + phi * fits[2]


# }}}

# {{{ single-pass generalized-validation variant (spec §4)


def single_pass_sweep(
    x: ArrayLike, y: ArrayLike, w: ArrayLike, h: Sequence[int], vsmlsq: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The one sweep of the single-pass variant (spec §4.2, first part of §4.3).

    Three periodic windows of half-widths ``h = (h0, h1, h2)`` slide together;
    each starts from the point ``n - h_k - 1`` (abscissa x - 1) and adds the
    other 2 h_k points, and at every step removes index ``j - h_k - 1`` and
    then adds ``j + h_k`` (both wrapped once).

    Returns
    -------
    fits : ndarray, shape (n, 3)
        ``F_k(j)``, the span-k line at ``x_j``.
    rss : ndarray, shape (n, 3)
        ``RSS_k(j) = Vyy0 - 2 b_k Vxy0 + b_k**2 Vxx0 [+ Wt0 (ybar_k - ybar0 -
        b_k (xbar_k - xbar0))**2 for k > 0]``: the residual sum of the span-k
        line over the tweeter window (window 0).
    leverage : ndarray, shape (n, 3)
        ``L_k(j) = w_j (1/Wt_k + [Vxx_k > vsmlsq] (x_j - xbar_k)**2 / Vxx_k)``.
    """
    xa, ya, wa = _as_arrays(x, y, w)
    xs, ys, ws = xa.tolist(), ya.tolist(), wa.tolist()
    n = len(xs)
    windows = [_Window() for _ in h]
    for win, hk in zip(windows, h):
        win.seed(*_point(xs, ys, ws, -hk - 1))
        for i in range(-hk, hk):
            win.add(*_point(xs, ys, ws, i))

    fits = np.empty((n, 3))
    rss = np.empty((n, 3))
    leverage = np.empty((n, 3))
    tweeter = windows[0]
    for j in range(n):
        for win, hk in zip(windows, h):
            win.remove(*_point(xs, ys, ws, j - hk - 1))
            win.add(*_point(xs, ys, ws, j + hk))
        for k, win in enumerate(windows):
            b = win.slope(vsmlsq)
            fits[j, k] = b * (xs[j] - win.xbar) + win.ybar
            r = tweeter.vyy - 2 * b * tweeter.vxy + b * b * tweeter.vxx
            if k > 0:
                d = win.ybar - tweeter.ybar - b * (win.xbar - tweeter.xbar)
                r += d * d * tweeter.wt
            rss[j, k] = r
            leverage[j, k] = ws[j] * win.hat(xs[j], vsmlsq)
    return fits, rss, leverage


def single_pass_half_width(scores: Sequence[float], h: Sequence[int], alpha: int) -> float:
    """Real half-width H chosen from the scores G_k (spec §4.3).

    Scan k = 0, 1, 2 from ``G_min = 1e20``, ``H = h2``; on a strictly smaller
    G_k set ``H = (h1 + h_k) / 2``. Then ``r = sqrt(G_min / G_2)``, floored at
    1e-7 by comparison (a NaN stays NaN), and ``H += (h2 - H) * r**(10 - alpha)``.
    """
    gmin, big_h = BIG, float(h[2])
    for k in range(3):
        if scores[k] < gmin:
            gmin = scores[k]
            big_h = (h[1] + h[k]) / 2.0
    r = math.sqrt(_ieee_div(gmin, scores[2]))
    if r < SML:
        r = SML
    return big_h + (h[2] - big_h) * r ** (10.0 - alpha)


def single_pass_blend(big_h: float, h: Sequence[int], fits: Sequence[float]) -> float:
    """Blend the span fits at real half-width H (spec §4.3).

    ``H < h1``: ``phi = (H - h1)/(h0 - h1)``, result ``(1 - phi) F1 + phi F0``;
    otherwise ``phi = (H - h1)/(h2 - h1)``, result ``(1 - phi) F1 + phi F2``.
    ``H == h1`` gives exactly F1 when ``h2 > h1``.
    """
    f = big_h - h[1]
    if f < 0:
        f = _ieee_div(f, h[0] - h[1])
        return (1.0 - f) * fits[1] + f * fits[0]
    f = _ieee_div(f, h[2] - h[1])
    return (1.0 - f) * fits[1] + f * fits[2]


def supsmu_single_pass(x: ArrayLike, y: ArrayLike, w: ArrayLike, alpha: float) -> FloatArray:
    """Single-pass "generalized validation" SuperSmoother (spec §4).

    Parameters
    ----------
    x, y, w : array_like
        Phases sorted ascending in [0, 1), ordinates, weights (all > 0; the
        reference code has no zero-weight guards, spec §4.4). Always periodic.
    alpha : float
        Clamped to [0, 10] and truncated to an integer (spec §4.1 [QUIRK]);
        bass enhancement is always on (alpha = 0 gives the exponent 10).

    Returns
    -------
    ndarray
        The smoothed ordinates; all NaN for n <= 9, where h0 = h1 = h2 = 2 and
        the blend evaluates 0/0 (spec §4.4).

    Notes
    -----
    Per point, ``G_k = |RSS_k| / (1 - L_k)**2`` scores each span (see
    :func:`single_pass_sweep`), :func:`single_pass_half_width` turns the scores
    into a real half-width and :func:`single_pass_blend` interpolates the fits.
    There is no span smoothing and no final tweeter pass.
    """
    xa, ya, wa = _as_arrays(x, y, w)
    n = xa.size
    if n <= 9:
        return np.full(n, np.nan)
    if np.any(wa <= 0):
        raise ValueError("the single-pass smoother needs weights > 0")
    alpha_int = int(min(max(alpha, 0.0), 10.0))
    h = [half_width(s, n) for s in SPANS]
    fits, rss, leverage = single_pass_sweep(xa, ya, wa, h, vsmlsq(xa.tolist()))
    smo = np.empty(n)
    for j in range(n):
        gap = 1.0 - leverage[j]
        scores = [_ieee_div(abs(rss[j, k]), gap[k] * gap[k]) for k in range(3)]
        smo[j] = single_pass_blend(single_pass_half_width(scores, h, alpha_int), h, fits[j])
    return smo


# }}}

# {{{ period search (spec §3)


def without_units(y: ArrayLike, w: ArrayLike) -> tuple[FloatArray, FloatArray, float, float]:
    """Values and weights of one problem with their units removed.

    The seed is not free of units: its slope guard ``Vxx > vsmlsq`` compares a
    sum of weights times squared phases with a threshold of squared phases
    alone, and its span choices start from ``BIG = 1e20`` in the units of y
    (resp. w y^2). Weights divided by their mean and values
    ``(y - ybar_w) / s``, ``s`` the weighted rms, remove both dependences;
    the smoothers are equivariant to the scale and offset of y otherwise.

    Returns
    -------
    values, weights, centre, s
        ``y = centre + s * values``; ``mean(weights) = 1``.
    """
    ya, wa = _as_arrays(y, w)
    weights = wa / np.mean(wa)
    centre = float(np.sum(weights * ya) / np.sum(weights))
    s = math.sqrt(float(np.mean(weights * (ya - centre) ** 2)))
    return (ya - centre) / (s if s > 0 else 1.0), weights, centre, s


def supersmoother_power(
    t: ArrayLike,
    y: ArrayLike,
    dy: ArrayLike,
    frequencies: ArrayLike,
    *,
    variant: Literal["original", "single_pass"] = "original",
    alpha: float = 9.0,
    periodic: bool = True,
    scale_free: bool = False,
) -> FloatArray:
    """SuperSmoother periodogram of one light curve (spec §3, §6).

    Parameters
    ----------
    t, y, dy : array_like
        Times, values and their uncertainties (weights ``w = 1/dy**2``).
    frequencies : array_like
        Ordinary frequencies (cycles per unit of t), each > 0.
    variant : {"original", "single_pass"}
        :func:`supsmu` with span 0 (spec §3.4) or :func:`supsmu_single_pass` (§4).
    alpha : float
        Bass enhancement passed to the smoother.
    periodic : bool
        Original variant only: periodic windows (iper = 2) or Friedman's
        interval mode (iper = 1), which is what gpu_supersmoother runs
        (spec §3.4 [QUIRK], §9.1). The single-pass variant is always periodic.
    scale_free : bool
        Smooth the values and weights of :func:`without_units` instead of the
        seed's raw y and ``1/dy**2``: the power is then invariant to a common
        scale of y and dy and to an offset of y.

    Returns
    -------
    ndarray
        ``power_k = (n/2) (chi0 - chi2_k) / chi0`` with
        ``chi0 = sum w (y - ybar_w)**2 / n``, ``ybar_w = (sum w y / n) / (sum w / n)``
        and ``chi2_k = sum w (y - smo)**2 / n`` over the folded, smoothed curve
        (spec §3.1, §3.5). At most n/2; it can be negative.

    Notes
    -----
    Folding (spec §3.3): ``t0 = min t``; phases ``fmod(t - t0, P) / P`` with
    ``P = 1/f``; points stably sorted by phase (ties keep the input order).
    The smoother gets the raw y, not y - ybar_w (spec §3.1), unless ``scale_free``.
    """
    ta, ya, dya = _as_arrays(t, y, dy)
    freqs = np.asarray(frequencies, dtype=np.float64)
    if freqs.ndim != 1:
        raise ValueError("frequencies must be a 1-D array")
    if variant not in ("original", "single_pass"):
        raise ValueError(f"unknown variant {variant!r}")
    if variant == "single_pass" and not periodic:
        raise ValueError("the single-pass variant is always periodic (spec §4.1)")
    n = ta.size
    tau = ta - ta.min()
    w = 1.0 / (dya * dya)
    if scale_free:  # weights from dy / min(dy): no overflow for any finite dy
        ya, w, _, _ = without_units(ya, (dya.min() / dya) ** 2)
    ybar = (np.sum(w * ya) / n) / (np.sum(w) / n)
    chi0 = np.sum(w * (ya - ybar) ** 2) / n

    power = np.empty(freqs.size)
    for k, f in enumerate(freqs.tolist()):
        period = 1.0 / f
        phase = np.fmod(tau, period) / period
        order = np.argsort(phase, kind="stable")
        xs, ys, ws = phase[order], ya[order], w[order]
        if variant == "original":
            smo = supsmu(xs, ys, ws, 2 if periodic else 1, 0.0, alpha)
        else:
            smo = supsmu_single_pass(xs, ys, ws, alpha)
        chi2 = np.sum(ws * (ys - smo) ** 2) / n
        power[k] = 0.5 * (chi0 - chi2) * n / chi0
    return power


def best_frequency(power: ArrayLike, frequencies: ArrayLike) -> float:
    """Frequency of the first strict maximum of ``power`` (spec §3.6, §9.8).

    The running best starts at ``power[0]`` (so all-negative periodograms
    work) and moves only to strictly larger values; a NaN never wins, and a
    NaN ``power[0]`` keeps index 0.
    """
    p = np.asarray(power, dtype=np.float64)
    freqs = np.asarray(frequencies, dtype=np.float64)
    if p.ndim != 1 or p.shape != freqs.shape or p.size == 0:
        raise ValueError("power and frequencies must be non-empty 1-D arrays of equal length")
    best = 0
    for k in range(1, p.size):
        if p[k] > p[best]:
            best = k
    return float(freqs[best])


# }}}
