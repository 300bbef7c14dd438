"""The NumPy SuperSmoother reference (tests/reference/supersmoother.py) against brute force.

The brute-force smoother below fits a weighted straight line directly to the
window the spec defines for every point (shared/spec/seed_algorithms.md §2.2),
so agreement to ~1e-12 checks the window schedule, the half-widths, the
leverage and the running-statistics arithmetic of the reference at once.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clperiod.testing import sinusoid_lightcurve
from reference import supersmoother as ref

SPANS = (0.05, 0.2, 0.5)


# {{{ brute force


def window(j, n, h, periodic):
    """Virtual indices of the window of point j (spec §2.2); periodic ones lie in [-n, 2n)."""
    if periodic:
        return np.arange(j - h, j + h + 1)
    lo = min(max(j - h, 0), n - 1 - 2 * h)
    return np.arange(lo, lo + 2 * h + 1)


def gather(x, y, w, idx):
    """Window points; an index wrapped from below (above) has x shifted by -1 (+1)."""
    n = len(x)
    return x[idx % n] + idx // n, y[idx % n], w[idx % n]


def line_fit(xs, ys, ws, vsmlsq):
    """Weighted least-squares line of one window: (xbar, ybar, slope, wt, vxx)."""
    wt = ws.sum()
    xbar = np.sum(ws * xs) / wt
    ybar = np.sum(ws * ys) / wt
    vxx = np.sum(ws * (xs - xbar) ** 2)
    vxy = np.sum(ws * (xs - xbar) * (ys - ybar))
    return xbar, ybar, (vxy / vxx if vxx > vsmlsq else 0.0), wt, vxx


def brute_smooth(x, y, w, span, periodic, vsmlsq):
    """smo and leave-one-out |residual| by one direct fit per point."""
    n = len(x)
    h = max(2, math.floor(0.5 * span * n + 0.5))
    smo, acvr = np.empty(n), np.zeros(n)
    for j in range(n):
        xbar, ybar, b, wt, vxx = line_fit(*gather(x, y, w, window(j, n, h, periodic)), vsmlsq)
        smo[j] = ybar + b * (x[j] - xbar)
        lev = 1 / wt + ((x[j] - xbar) ** 2 / vxx if vxx > vsmlsq else 0.0)
        d = 1 - w[j] * lev
        acvr[j] = abs(y[j] - smo[j]) / d if d > 0 else (acvr[j - 1] if j else 0.0)
    return smo, acvr


def brute_supsmu(x, y, w, periodic, alpha, vsmlsq):
    """Spec §2.3 steps 3-7, vectorised over the points, on top of brute_smooth."""
    fits = [brute_smooth(x, y, w, s, periodic, vsmlsq) for s in SPANS]
    resid = np.array([brute_smooth(x, r, w, 0.2, periodic, vsmlsq)[0] for _, r in fits])
    best = np.argmin(resid, axis=0)
    resmin = resid[best, np.arange(len(x))]
    sigma = np.array(SPANS)[best]
    if 0 < alpha <= 10:
        boost = (resmin < resid[2]) & (resmin > 0)
        ratio = np.maximum(1e-7, resmin[boost] / resid[2][boost])
        sigma[boost] += (0.5 - sigma[boost]) * ratio ** (10 - alpha)
    sig = np.clip(brute_smooth(x, sigma, w, 0.2, periodic, vsmlsq)[0], 0.05, 0.5)
    low = np.clip((0.2 - sig) / 0.15, 0, None)
    high = np.clip((sig - 0.2) / 0.3, 0, None)
    f1, f2, f3 = (f for f, _ in fits)
    z = np.where(sig < 0.2, (1 - low) * f2 + low * f1, (1 - high) * f2 + high * f3)
    return brute_smooth(x, z, w, 0.05, periodic, vsmlsq)[0]


def random_curve(rng, n):
    return sinusoid_lightcurve(rng, n, 1.0, baseline=1.0, epoch=0.0, noise=0.3, dy=(0.5, 2.0))


# }}}

# {{{ smooth (spec §2.2)


@pytest.mark.parametrize(
    "n,span,h",
    [
        (7, 0.5, 2), (20, 0.05, 2), (20, 0.2, 2), (20, 0.5, 5),
        (101, 0.05, 3), (101, 0.2, 10), (101, 0.5, 25), (60, 0.5, 15),
    ],
)
def test_half_width_by_hand(n, span, h):
    assert ref.half_width(span, n) == h


def test_vsmlsq_scale_and_widening():
    x = np.arange(12) / 12  # n // 4 = 3: x[8] - x[2] = 0.5
    assert ref.vsmlsq(x) == pytest.approx(0.25e-6, rel=1e-15)
    tied = [0.0] * 9 + [0.5, 0.7, 1.0]
    assert ref.vsmlsq(tied) == 0.0
    assert ref.vsmlsq(tied, widen_scale=True) == pytest.approx(0.25e-6, rel=1e-15)  # x[9] - x[1]


@pytest.mark.parametrize("n", [7, 20, 101])
@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("span", [0.05, 0.2, 0.3, 0.5])
def test_smooth_matches_brute_force(rng, n, periodic, span):
    x, y, w = random_curve(rng, n)
    threshold = ref.vsmlsq(x)
    smo, acvr = ref.smooth(x, y, w, span, 2 if periodic else 1, threshold)
    brute_smo, brute_acvr = brute_smooth(x, y, w, span, periodic, threshold)
    np.testing.assert_allclose(smo, brute_smo, rtol=1e-12, atol=1e-12)
    # 1 / (1 - w lev) amplifies rounding where a window's end point has high leverage
    np.testing.assert_allclose(acvr, brute_acvr, rtol=1e-10, atol=1e-12)
    smo_only, none = ref.smooth(x, y, w, span, 2 if periodic else 1, threshold, False)
    assert none is None
    np.testing.assert_array_equal(smo_only, smo)


@pytest.mark.parametrize("periodic", [False, True])
def test_smooth_without_slope_is_window_mean(rng, periodic):
    """vsmlsq above every Vxx: slope 0, leverage 1/Wt only (spec §2.2)."""
    x, y, w = random_curve(rng, 30)
    smo, acvr = ref.smooth(x, y, w, 0.2, 2 if periodic else 1, 1e300)
    brute_smo, brute_acvr = brute_smooth(x, y, w, 0.2, periodic, 1e300)
    np.testing.assert_allclose(smo, brute_smo, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(acvr, brute_acvr, rtol=1e-12, atol=1e-12)


def test_smooth_zero_weight_guards_by_hand():
    """Zero-weight windows keep zero statistics; 1 - w lev <= 0 copies the previous acvr."""
    x = np.linspace(0.1, 0.7, 7)
    y = np.array([1.0, -2.0, 3.0, -4.0, 5.0, 6.5, 7.25])
    w = np.array([0, 0, 0, 0, 0, 0, 1.0])
    smo, acvr = ref.smooth(x, y, w, 0.2, 1, 0.0)  # h = 2: windows [0,4] x3, [1,5], [2,6] x3
    np.testing.assert_array_equal(smo, [0, 0, 0, 0, 7.25, 7.25, 7.25])
    np.testing.assert_array_equal(acvr, [1, 2, 3, 4, 2.25, 0.75, 0.75])


@pytest.mark.parametrize("span", [0.05, 0.1, 0.2, 0.3, 0.5, 0.9])
def test_smooth_interval_reproduces_line(rng, span):
    x = np.sort(rng.uniform(-3, 5, 50))
    w = rng.uniform(0.1, 3.0, 50)
    y = 1.5 - 0.75 * x
    smo, acvr = ref.smooth(x, y, w, span, 1, ref.vsmlsq(x))
    np.testing.assert_allclose(smo, y, rtol=0, atol=1e-12)
    np.testing.assert_allclose(acvr, 0, atol=1e-11)


@pytest.mark.parametrize("iper", [1, 2])
def test_smooth_constant(rng, iper):
    x, _, w = random_curve(rng, 40)
    smo, acvr = ref.smooth(x, np.full(40, 3.7), w, 0.3, iper, ref.vsmlsq(x))
    np.testing.assert_allclose(smo, 3.7, rtol=1e-14)
    np.testing.assert_allclose(acvr, 0, atol=1e-13)


def test_smooth_rejects_window_larger_than_n():
    x = np.array([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="exceeds n"):
        ref.smooth(x, x, np.ones(4), 0.05, 1, 0.0)
    with pytest.raises(ValueError, match="iper"):
        ref.smooth(x, x, np.ones(4), 0.05, -1, 0.0)


def test_tied_x_postpass(rng):
    x = np.repeat(np.sort(rng.uniform(0, 1, 10)), [1, 3, 1, 2, 1, 1, 4, 1, 2, 1])
    n = x.size
    y = rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, n)
    threshold = ref.vsmlsq(x)
    smo, acvr = ref.smooth(x, y, w, 0.2, 1, threshold)
    smo_pp, acvr_pp = ref.smooth(x, y, w, 0.2, 1, threshold, tied_x_postpass=True)
    np.testing.assert_array_equal(acvr_pp, acvr)
    expected = smo.copy()
    for value in np.unique(x):
        run = x == value
        expected[run] = np.sum(w[run] * smo[run]) / np.sum(w[run])
    np.testing.assert_allclose(smo_pp, expected, rtol=1e-14, atol=1e-15)
    assert not np.allclose(smo_pp, smo)
    out = ref.supsmu(x, y, w, 1, tied_x_postpass=True)
    for value in np.unique(x):
        assert np.ptp(out[x == value]) == 0
    assert not np.allclose(out, ref.supsmu(x, y, w, 1))


# }}}

# {{{ supsmu (spec §2.3)


@pytest.mark.parametrize("n", [40, 101])
@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("alpha", [0.0, 4.5, 9.0, 10.0, 11.0])
def test_supsmu_matches_brute_force(rng, n, periodic, alpha):
    x, y, w = random_curve(rng, n)
    got = ref.supsmu(x, y, w, 2 if periodic else 1, alpha=alpha)
    want = brute_supsmu(x, y, w, periodic, alpha, ref.vsmlsq(x))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_supsmu_bass_enhancement_changes_result(rng):
    x, y, w = random_curve(rng, 101)
    plain = ref.supsmu(x, y, w, 1)
    np.testing.assert_array_equal(ref.supsmu(x, y, w, 1, alpha=10.5), plain)  # alpha > 10: off
    np.testing.assert_array_equal(ref.supsmu(x, y, w, 1, alpha=-1.0), plain)
    assert not np.allclose(ref.supsmu(x, y, w, 1, alpha=8.0), plain)


def test_supsmu_span_by_hand():
    span = ref.supsmu_span
    assert span((1.0, 2.0, 4.0), 0.0) == 0.05  # alpha <= 0: no enhancement
    assert span((1.0, 2.0, 4.0), 10.5) == 0.05  # alpha > 10: none either
    assert span((2.0, 1.0, 4.0), 5.0) == pytest.approx(0.2 + 0.3 * 0.25**5, rel=1e-15)
    assert span((1.0, 2.0, 4.0), 10.0) == 0.5  # exponent 0: woofer where resmin < R_3
    assert span((1.0, 2.0, 1.0), 5.0) == 0.05  # first minimum; resmin == R_3: no enhancement
    assert span((3.0, 2.0, 1.0), 5.0) == 0.5
    assert span((0.0, 2.0, 4.0), 5.0) == 0.05  # resmin == 0: no enhancement
    # the ratio 1e-12 is floored at 1e-7
    assert span((1e-12, 2.0, 1.0), 9.0) == pytest.approx(0.05 + 0.45e-7, rel=1e-12)


def test_supsmu_blend_by_hand():
    fits = (1.0, -2.0, 4.0)
    assert ref.supsmu_blend(0.2, fits) == -2.0
    assert ref.supsmu_blend(0.05, fits) == 1.0
    assert ref.supsmu_blend(0.5, fits) == 4.0
    assert ref.supsmu_blend(-0.3, fits) == 1.0  # clipped to the tweeter
    assert ref.supsmu_blend(0.9, fits) == 4.0  # clipped to the woofer
    assert ref.supsmu_blend(0.125, fits) == pytest.approx(-0.5, rel=1e-15)
    assert ref.supsmu_blend(0.35, fits) == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize("alpha", [0.0, 5.0, 10.0])
def test_supsmu_reproduces_line(rng, alpha):
    x = np.sort(rng.uniform(0, 1, 60))
    w = rng.uniform(0.2, 2.0, 60)
    y = -2.0 + 4.0 * x
    np.testing.assert_allclose(ref.supsmu(x, y, w, 1, alpha=alpha), y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("iper", [1, 2])
def test_supsmu_constant(rng, iper):
    x, _, w = random_curve(rng, 50)
    smo = ref.supsmu(x, np.full(50, -0.3), w, iper, alpha=9.0)
    np.testing.assert_allclose(smo, -0.3, rtol=1e-13)


def test_supsmu_all_equal_x_is_weighted_mean():
    y = np.array([1.0, 2.0, 4.0])
    w = np.array([1.0, 3.0, 0.5])
    np.testing.assert_allclose(ref.supsmu(np.full(3, 0.4), y, w, 2), 9.0 / 4.5, rtol=1e-15)
    np.testing.assert_array_equal(ref.supsmu(np.full(3, 0.4), y, np.zeros(3), 1), 0.0)


def test_supsmu_jper_logic(rng):
    x, y, w = random_curve(rng, 50)
    interval = ref.supsmu(x, y, w, 1, alpha=9.0)
    periodic = ref.supsmu(x, y, w, 2, alpha=9.0)
    assert not np.allclose(interval, periodic)
    for iper in (0, 3, -2):
        np.testing.assert_array_equal(ref.supsmu(x, y, w, iper, alpha=9.0), interval)
    stretched = 2 * x  # beyond [0, 1]: periodic request falls back to interval mode
    np.testing.assert_array_equal(ref.supsmu(stretched, y, w, 2), ref.supsmu(stretched, y, w, 1))


@pytest.mark.parametrize("iper", [1, 2])
def test_supsmu_fixed_span_is_one_smooth(rng, iper):
    x, y, w = random_curve(rng, 50)
    fixed = ref.supsmu(x, y, w, iper, span=0.3)
    np.testing.assert_array_equal(fixed, ref.smooth(x, y, w, 0.3, iper, ref.vsmlsq(x))[0])


# }}}

# {{{ single pass (spec §4)


def periodic_fit(x, y, w, j, h, vsmlsq):
    return line_fit(*gather(x, y, w, window(j, len(x), h, True)), vsmlsq)


@pytest.mark.parametrize("n", [10, 30, 101])
def test_single_pass_sweep_identity(rng, n):
    """F_k, L_k and RSS_k (tweeter-window residual sum of the span-k line, §4.3) by brute force."""
    x, y, w = random_curve(rng, n)
    h = [ref.half_width(s, n) for s in SPANS]
    threshold = ref.vsmlsq(x)
    fits, rss, leverage = ref.single_pass_sweep(x, y, w, h, threshold)
    for j in range(n):
        x0, y0, w0 = gather(x, y, w, window(j, n, h[0], True))
        vyy0 = np.sum(w0 * (y0 - np.sum(w0 * y0) / w0.sum()) ** 2)
        for k in range(3):
            xbar, ybar, b, wt, vxx = periodic_fit(x, y, w, j, h[k], threshold)
            assert fits[j, k] == pytest.approx(ybar + b * (x[j] - xbar), rel=1e-12, abs=1e-12)
            lev = w[j] * (1 / wt + ((x[j] - xbar) ** 2 / vxx if vxx > threshold else 0.0))
            assert leverage[j, k] == pytest.approx(lev, rel=1e-12)
            brute_rss = np.sum(w0 * (y0 - ybar - b * (x0 - xbar)) ** 2)
            assert abs(rss[j, k] - brute_rss) <= 1e-11 * (vyy0 + brute_rss)


@pytest.mark.parametrize("n", [1, 4, 5, 9])
def test_single_pass_nan_for_small_n(rng, n):
    x, y, w = random_curve(rng, n)
    assert np.isnan(ref.supsmu_single_pass(x, y, w, 9.0)).all()
    assert math.isnan(ref.single_pass_blend(2.0, (2, 2, 2), (1.0, 2.0, 3.0)))  # the 0/0 behind it


def test_single_pass_finite_from_n_10(rng):
    x, y, w = random_curve(rng, 10)
    assert np.isfinite(ref.supsmu_single_pass(x, y, w, 9.0)).all()


@pytest.mark.parametrize("h", [(3, 10, 25), (2, 2, 5)])
def test_single_pass_blend_by_hand(h):
    fits = (1.25, -0.5, 4.0)
    assert ref.single_pass_blend(float(h[1]), h, fits) == -0.5  # H == h1: midrange exactly
    assert ref.single_pass_blend(float(h[2]), h, fits) == 4.0
    mid = (h[1] + h[2]) / 2
    assert ref.single_pass_blend(mid, h, fits) == pytest.approx(0.5 * (-0.5 + 4.0), rel=1e-15)
    if h[0] < h[1]:
        assert ref.single_pass_blend(float(h[0]), h, fits) == 1.25


def test_single_pass_half_width_by_hand():
    h = (3, 10, 25)
    half = ref.single_pass_half_width
    assert half((1.0, 2.0, 4.0), h, 0) == pytest.approx(6.5 + 18.5 * 0.5**10, rel=1e-15)
    assert half((2.0, 1.0, 4.0), h, 8) == pytest.approx(10 + 15 * 0.5**2, rel=1e-15)
    assert half((1.0, 1.0, 4.0), h, 9) == pytest.approx(6.5 + 18.5 * 0.5, rel=1e-15)
    assert half((4.0, 4.0, 4.0), h, 3) == 25.0  # first minimum, ratio 1
    assert half((2.0, 1.0, 4.0), h, 10) == 25.0  # exponent 0
    assert half((1e-30, 1.0, 1.0), h, 9) == pytest.approx(6.5 + 18.5 * 1e-7, rel=1e-12)


def test_single_pass_alpha_clamped_and_truncated(rng):
    x, y, w = random_curve(rng, 60)
    sp = ref.supsmu_single_pass
    np.testing.assert_array_equal(sp(x, y, w, 9.9), sp(x, y, w, 9.0))
    np.testing.assert_array_equal(sp(x, y, w, -3.0), sp(x, y, w, 0.0))
    np.testing.assert_array_equal(sp(x, y, w, 25.0), sp(x, y, w, 10.0))
    assert not np.array_equal(sp(x, y, w, 9.0), sp(x, y, w, 0.0))
    woofer = [periodic_fit(x, y, w, j, ref.half_width(0.5, 60), ref.vsmlsq(x)) for j in range(60)]
    expected = [ybar + b * (xj - xbar) for (xbar, ybar, b, _, _), xj in zip(woofer, x)]
    # alpha 10: H = h2 everywhere, the woofer fit
    np.testing.assert_allclose(sp(x, y, w, 10.0), expected, rtol=1e-12, atol=1e-12)


def test_single_pass_zero_signal_quirk(rng):
    """y == 0: every G_k is 0, sqrt(0/0) stays NaN (no fmax), NaN**0 == 1 at alpha 10."""
    x, _, w = random_curve(rng, 40)
    assert np.isnan(ref.supsmu_single_pass(x, np.zeros(40), w, 9.0)).all()
    np.testing.assert_array_equal(ref.supsmu_single_pass(x, np.zeros(40), w, 10.0), 0.0)


# }}}

# {{{ period search (spec §3)


def irregular_times(rng, n=100, baseline=30.0):
    return 5000.0 + np.sort(rng.uniform(0, baseline, n))


def sawtooth(t, f_true):
    period = 1 / f_true
    return np.fmod(t - t.min(), period) / period


def fine_grid(baseline=30.0):
    """Five times oversampled grid around f_true = 1/0.73 (aliases and half/double included)."""
    df = 0.2 / baseline
    return np.arange(0.6, 2.9, df), df


CASES = [("original", True), ("original", False), ("single_pass", True)]


@pytest.mark.slow
@pytest.mark.parametrize("variant,periodic", CASES)
@pytest.mark.parametrize("signal", ["sawtooth", "sinusoid"])
def test_period_search_finds_true_frequency(rng, variant, periodic, signal):
    f_true = 1 / 0.73
    t = irregular_times(rng)
    n = t.size
    if signal == "sawtooth":
        y, dy = 10.0 + sawtooth(t, f_true), np.ones(n)
    else:
        dy = rng.uniform(0.05, 0.15, n)
        y = 10.0 + np.sin(2 * np.pi * f_true * t) + rng.normal(0, dy)
    freqs, df = fine_grid()
    power = ref.supersmoother_power(t, y, dy, freqs, variant=variant, periodic=periodic)
    assert np.all(power <= n / 2 * (1 + 1e-12))
    assert abs(ref.best_frequency(power, freqs) - f_true) <= df
    assert power.max() > 0.6 * n / 2  # periodic windows pay for the sawtooth's jump


def test_sawtooth_power_is_n_over_2_at_true_frequency(rng):
    """Interval mode fits the folded noiseless sawtooth (a straight line) exactly: chi2 = 0."""
    t = irregular_times(rng)
    f_true = 1 / 0.73
    y = sawtooth(t, f_true)
    power = ref.supersmoother_power(t, y, np.ones(t.size), [f_true], periodic=False)
    assert power[0] == pytest.approx(t.size / 2, rel=1e-12)


def test_power_is_chi2_formula_by_hand(rng):
    t = irregular_times(rng, n=40)
    y = rng.normal(size=40)
    dy = rng.uniform(0.5, 2.0, 40)
    f = 0.9
    w = 1 / dy**2
    period = 1 / f
    phase = np.fmod(t - t.min(), period) / period
    order = np.argsort(phase, kind="stable")
    smo = ref.supsmu(phase[order], y[order], w[order], 1, alpha=9.0)
    chi2 = np.sum(w[order] * (y[order] - smo) ** 2) / 40
    chi0 = np.sum(w * (y - np.average(y, weights=w)) ** 2) / 40
    got = ref.supersmoother_power(t, y, dy, [f], periodic=False)[0]
    assert got == pytest.approx(20 * (chi0 - chi2) / chi0, rel=1e-10)


@pytest.mark.parametrize("periodic", [False, True])
def test_power_uses_minimum_time_as_epoch(rng, periodic):
    """t0 = min t, not the first row: shuffling the input only changes rounding (spec §3.1)."""
    t = irregular_times(rng, n=50)
    y = np.sin(2 * np.pi * 0.9 * t) + rng.normal(0, 0.3, 50)
    dy = rng.uniform(0.5, 2.0, 50)
    freqs = np.array([0.37, 0.9, 1.41])
    shuffle = rng.permutation(50)
    shuffle = np.roll(shuffle, -int(np.argmin(shuffle)) - 1)  # the earliest time is not first
    want = ref.supersmoother_power(t, y, dy, freqs, periodic=periodic)
    got = ref.supersmoother_power(t[shuffle], y[shuffle], dy[shuffle], freqs, periodic=periodic)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_fold_keeps_input_order_on_tied_phases():
    """Exactly tied phases (t and t + P) are smoothed in input order (stable sort, spec §3.3)."""
    t = np.array([0, 0.25, 1.25, 0.5, 2.25, 0.75, 1.5, 1.75, 0.125, 1.125, 2.5, 2.875])
    y = np.sin(3.0 * np.arange(12))
    phase = np.fmod(t, 1.0)
    stable = np.argsort(phase, kind="stable")
    np.testing.assert_array_equal(stable, [0, 8, 9, 1, 2, 4, 3, 6, 10, 5, 7, 11])
    reverse = np.lexsort((-np.arange(12), phase))  # ties in the opposite order
    chi0 = np.mean((y - y.mean()) ** 2)

    def power(order):
        smo = ref.supsmu(phase[order], y[order], np.ones(12), 1, alpha=9.0)
        return 6 * (chi0 - np.mean((y[order] - smo) ** 2)) / chi0

    got = ref.supersmoother_power(t, y, np.ones(12), [1.0], periodic=False)[0]
    assert got == pytest.approx(power(stable), rel=1e-12)
    assert got != pytest.approx(power(reverse), rel=1e-6)


@pytest.mark.parametrize("variant,periodic", CASES)
def test_scale_free_inputs_remove_the_seeds_units(rng, variant, periodic):
    """The seed depends on the units of dy (slope guard) and y (initial
    residual minimum 1e20); on :func:`without_units` inputs the power does not."""
    t = irregular_times(rng, n=60)
    y = 1e4 + 300 * np.sin(2 * np.pi * t / 0.73) + rng.normal(0, 100, 60)
    dy = np.full(60, 100.0)
    freqs = np.linspace(0.6, 2.9, 40)

    def power(scale, scale_free):
        return ref.supersmoother_power(t, scale * y, scale * dy, freqs, variant=variant,
                                       periodic=periodic, scale_free=scale_free)

    base = power(1.0, True)
    for scale in (1e-2, 1e-30, 1e30):
        np.testing.assert_allclose(power(scale, True), base, rtol=0, atol=1e-10)
    assert np.abs(power(1e-2, False) - power(1.0, False)).max() > 0.01


def test_without_units_by_hand():
    values, weights, centre, scale = ref.without_units([1.0, 3.0, 7.0], [2.0, 1.0, 1.0])
    np.testing.assert_allclose(weights, [1.5, 0.75, 0.75], rtol=1e-15)
    assert centre == pytest.approx(3.0, rel=1e-15)  # (2 + 3 + 7) / 4
    assert scale == pytest.approx(np.sqrt((1.5 * 4 + 0 + 0.75 * 16) / 3), rel=1e-15)
    np.testing.assert_allclose(centre + scale * values, [1.0, 3.0, 7.0], rtol=1e-15)


def test_single_pass_rejects_interval_mode():
    with pytest.raises(ValueError, match="always periodic"):
        t = np.arange(20.0)
        ref.supersmoother_power(t, t, np.ones(20), [0.3], variant="single_pass", periodic=False)


@pytest.mark.parametrize(
    "power,index",
    [
        ([-3.0, -1.0, -1.0, -2.0], 1),  # negative powers, first of equal maxima
        ([5.0, 4.0, 5.0], 0),
        ([1.0, np.nan, 2.0, 2.0], 2),  # NaN never wins
        ([np.nan, 1.0, 2.0], 0),  # a NaN start keeps index 0
        ([0.5], 0),
    ],
)
def test_best_frequency_first_strict_maximum(power, index):
    freqs = 0.1 + 0.01 * np.arange(len(power))
    assert ref.best_frequency(power, freqs) == freqs[index]


@pytest.mark.slow
def test_agrees_with_jakevdp_supersmoother(rng):
    """Qualitative cross-check (spec §2.4: not bit-compatible): same best period."""
    jvp = pytest.importorskip("supersmoother")
    f_true = 1 / 0.73
    t = irregular_times(rng)
    dy = np.full(t.size, 0.1)
    phase = 2 * np.pi * f_true * t
    y = np.sin(phase) + 0.5 * np.sin(2 * phase + 1) + rng.normal(0, 0.1, t.size)
    freqs, df = fine_grid()
    ours = ref.supersmoother_power(t, y, dy, freqs, alpha=9.0)
    chi0 = np.sum(((y - np.average(y, weights=dy**-2)) / dy) ** 2)
    fits = (jvp.SuperSmoother(alpha=9.0, period=1 / f).fit(t, y, dy).predict(t) for f in freqs)
    theirs = np.array([1 - np.sum(((y - fit) / dy) ** 2) / chi0 for fit in fits])
    best = ref.best_frequency(ours, freqs)
    assert abs(best - ref.best_frequency(theirs, freqs)) <= 1.01 * df  # at most neighbours
    assert abs(best - f_true) <= df


# }}}
