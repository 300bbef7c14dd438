"""Vectorised NumPy SuperSmoother periodogram: the CPU peer of bench_supersmoother.

Every trial frequency is a row of ``(nf, n)`` arrays; the running-window
sweeps loop over the n points in Python and update all frequencies at once
with NumPy (the natural way to vectorise a sequential smoother). Same
definitions as clperiod (seed spec §2-§4, GPU-port semantics, periodic
windows by default), independent code.
"""

from __future__ import annotations

import numpy as np

SPANS = (0.05, 0.2, 0.5)


class Windows:
    """Running weighted-line statistics of one window per frequency row."""

    def __init__(self, x, y, w):
        self.wt, self.xbar, self.ybar = w.copy(), x.copy(), y.copy()
        self.vxx = np.zeros_like(x)
        self.vxy = np.zeros_like(x)
        self.vyy = np.zeros_like(x)

    def add(self, x, y, w):
        wold = self.wt
        self.wt = wold + w
        ok = self.wt > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            self.xbar = np.where(ok, (wold * self.xbar + w * x) / self.wt, self.xbar)
            self.ybar = np.where(ok, (wold * self.ybar + w * y) / self.wt, self.ybar)
            f = np.where(wold > 0, self.wt * w / wold, 0.0)
        dx, dy = x - self.xbar, y - self.ybar
        self.vxx = self.vxx + f * dx * dx
        self.vxy = self.vxy + f * dx * dy
        self.vyy = self.vyy + f * dy * dy

    def remove(self, x, y, w):
        wold = self.wt
        self.wt = wold - w
        ok = self.wt > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.where(ok, wold * w / self.wt, 0.0)
            dx, dy = x - self.xbar, y - self.ybar
            self.vxx = self.vxx - f * dx * dx
            self.vxy = self.vxy - f * dx * dy
            self.vyy = self.vyy - f * dy * dy
            self.xbar = np.where(ok, (wold * self.xbar - w * x) / self.wt, self.xbar)
            self.ybar = np.where(ok, (wold * self.ybar - w * y) / self.wt, self.ybar)

    def slope(self, vsml):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.vxx > vsml, self.vxy / self.vxx, 0.0)

    def hat(self, xj, vsml):
        with np.errstate(divide="ignore", invalid="ignore"):
            h = np.where(self.wt > 0, 1 / self.wt, 0.0)
            return h + np.where(self.vxx > vsml, (xj - self.xbar) ** 2 / self.vxx, 0.0)


def _at(a, i, n, periodic=True):
    """Column i of a (wrapped once in periodic mode) and the phase shift."""
    if i < 0:
        return a[:, i + n], -1.0
    if i >= n:
        return a[:, i - n], 1.0
    return a[:, i], 0.0


def _half_widths(n):
    return [max(2, int(0.5 * s * n + 0.5)) for s in SPANS]


def _vsml(x, n):
    scale = x[:, 3 * (n // 4) - 1] - x[:, n // 4 - 1]
    return 1e-6 * scale * scale


def smooth(x, y, w, h, vsml, periodic, residuals=False):
    """Running lines of half-width h for every row; optional LOO residuals."""
    nf, n = x.shape
    first, last = (-h - 1, h) if periodic else (0, 2 * h + 1)
    xi, s = _at(x, first, n)
    win = Windows(xi + s, _at(y, first, n)[0], _at(w, first, n)[0])
    win.wt = np.zeros(nf)
    win.xbar = np.zeros(nf)
    win.ybar = np.zeros(nf)
    for i in range(first, last):
        xi, s = _at(x, i, n)
        win.add(xi + s, _at(y, i, n)[0], _at(w, i, n)[0])
    smo = np.empty_like(y)
    acvr = np.empty_like(y) if residuals else None
    for j in range(n):
        out, into = j - h - 1, j + h
        if periodic or (out >= 0 and into <= n - 1):
            xo, so = _at(x, out, n)
            win.remove(xo + so, _at(y, out, n)[0], _at(w, out, n)[0])
            xn, sn = _at(x, into, n)
            win.add(xn + sn, _at(y, into, n)[0], _at(w, into, n)[0])
        xj = x[:, j]
        smo[:, j] = win.slope(vsml) * (xj - win.xbar) + win.ybar
        if residuals:
            d = 1 - w[:, j] * win.hat(xj, vsml)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.abs(y[:, j] - smo[:, j]) / d
            prev = acvr[:, j - 1] if j > 0 else 0.0
            acvr[:, j] = np.where(d > 0, r, prev)
    return smo, acvr


def supsmu(x, y, w, alpha, periodic=True):
    """Friedman's SuperSmoother of every row (automatic span, bass enhancement)."""
    n = x.shape[1]
    h = _half_widths(n)
    vsml = _vsml(x, n)
    fits, res = [], []
    for hk in h:
        fit, acvr = smooth(x, y, w, hk, vsml, periodic, residuals=True)
        fits.append(fit)
        res.append(smooth(x, acvr, w, h[1], vsml, periodic)[0])
    res = np.stack(res)
    best = np.argmin(res, axis=0)  # first minimum, as the strict scan
    span = np.asarray(SPANS)[best]
    resmin = np.min(res, axis=0)
    if 0 < alpha <= 10:
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.maximum(1e-7, resmin / res[2])
            boost = (resmin < res[2]) & (resmin > 0)
            span = np.where(boost, span + (SPANS[2] - span) * ratio ** (10 - alpha), span)
    span = np.clip(smooth(x, span, w, h[1], vsml, periodic)[0], SPANS[0], SPANS[2])
    low = span < SPANS[1]
    phi = np.where(low, (SPANS[1] - span) / (SPANS[1] - SPANS[0]),
                   (span - SPANS[1]) / (SPANS[2] - SPANS[1]))
    blended = (1 - phi) * fits[1] + phi * np.where(low, fits[0], fits[2])
    return smooth(x, blended, w, h[0], vsml, periodic)[0]


def supsmu_single_pass(x, y, w, alpha):
    """The single-pass generalized-validation smoother of every row (spec §4)."""
    nf, n = x.shape
    h = _half_widths(n)
    vsml = _vsml(x, n)
    a = int(min(max(alpha, 0), 10))
    wins = []
    for hk in h:
        xi, s = _at(x, -hk - 1, n)
        win = Windows(xi + s, _at(y, -hk - 1, n)[0], _at(w, -hk - 1, n)[0])
        for i in range(-hk, hk):
            xi, s = _at(x, i, n)
            win.add(xi + s, _at(y, i, n)[0], _at(w, i, n)[0])
        wins.append(win)
    smo = np.empty_like(y)
    for j in range(n):
        for win, hk in zip(wins, h):
            xo, so = _at(x, j - hk - 1, n)
            win.remove(xo + so, _at(y, j - hk - 1, n)[0], _at(w, j - hk - 1, n)[0])
            xn, sn = _at(x, j + hk, n)
            win.add(xn + sn, _at(y, j + hk, n)[0], _at(w, j + hk, n)[0])
        xj, wj = x[:, j], w[:, j]
        t = wins[0]
        fits, scores = [], []
        for k, win in enumerate(wins):
            b = win.slope(vsml)
            fits.append(b * (xj - win.xbar) + win.ybar)
            r = t.vyy - 2 * b * t.vxy + b * b * t.vxx
            if k:
                r = r + t.wt * (win.ybar - t.ybar - b * (win.xbar - t.xbar)) ** 2
            gap = 1 - wj * win.hat(xj, vsml)
            scores.append(np.abs(r) / (gap * gap))
        gmin = np.full(nf, 1e20)
        big_h = np.full(nf, float(h[2]))
        for k in range(3):
            better = scores[k] < gmin
            gmin = np.where(better, scores[k], gmin)
            big_h = np.where(better, (h[1] + h[k]) / 2, big_h)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.sqrt(gmin / scores[2])
        r = np.where(r < 1e-7, 1e-7, r)
        big_h = big_h + (h[2] - big_h) * r ** (10 - a)
        low = big_h < h[1]
        with np.errstate(divide="ignore", invalid="ignore"):  # h0 == h1 below 25 points
            phi = np.where(low, (big_h - h[1]) / (h[0] - h[1]), (big_h - h[1]) / (h[2] - h[1]))
        smo[:, j] = (1 - phi) * fits[1] + phi * np.where(low, fits[0], fits[2])
    return smo


def power(t, y, dy, freqs, variant="original", alpha=9.0, periodic=True, chunk=4096):
    """SuperSmoother periodogram ``(n/2)(1 - chi2/chi0)`` of one light curve."""
    t, y, dy, freqs = (np.asarray(a, dtype=np.float64) for a in (t, y, dy, freqs))
    n = len(t)
    w = 1 / (dy * dy)
    ybar = np.sum(w * y) / np.sum(w)
    chi0 = np.sum(w * (y - ybar) ** 2) / n
    tau = t - t.min()
    out = np.empty(len(freqs))
    for k0 in range(0, len(freqs), chunk):
        f = freqs[k0:k0 + chunk, None]
        phase = np.mod(tau * f, 1.0)
        order = np.argsort(phase, axis=1, kind="stable")
        x = np.take_along_axis(phase, order, axis=1)
        ys, ws = (y - ybar)[order], w[order]
        if variant == "original":
            smo = supsmu(x, ys, ws, alpha, periodic)
        else:
            smo = supsmu_single_pass(x, ys, ws, alpha)
        chi2 = np.sum(ws * (ys - smo) ** 2, axis=1) / n
        out[k0:k0 + chunk] = 0.5 * n * (chi0 - chi2) / chi0
    return out
