"""The NumPy single-pulse reference (tests/reference/singlepulse.py).

Checks the boxcar plan against its definition, the decimated boxcar sums
against direct sums, the whole search against a brute-force restatement on
noise-free pulses, and the statistics on white noise (spec
peers_kepler_sps.md §5, S1, S2, S4 and S7).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from reference import singlepulse as ref


def gaussian_tail(t):
    """``Q(t) = P(N(0, 1) >= t)``."""
    return 0.5 * math.erfc(t / math.sqrt(2))


# {{{ plan and boxcar sums


def test_boxcar_plan_dit():
    plan = ref.boxcar_plan(4096)
    assert [k for k, _ in plan] == list(range(8))
    np.testing.assert_array_equal(plan[0][1], np.arange(1, 33))
    for _, widths in plan[1:]:
        np.testing.assert_array_equal(widths, np.arange(17, 33))
    native = np.concatenate([widths << k for k, widths in plan])
    assert native.size == 32 + 16 * 7 and native.max() == 4096
    assert np.all(np.diff(native) > 0)  # 1..32, then steps of 2, 4, ... per octave
    assert [(k, w.tolist()) for k, w in ref.boxcar_plan(100)] == [
        (0, list(range(1, 33))), (1, list(range(17, 33))), (2, list(range(17, 26)))]
    assert len(ref.boxcar_plan(33)) == 1 and ref.boxcar_plan(34)[1][1].tolist() == [17]
    ((k, widths),) = ref.boxcar_plan(5)
    assert k == 0 and widths.tolist() == [1, 2, 3, 4, 5]


def test_boxcar_plan_full_and_bad_input():
    ((k, widths),) = ref.boxcar_plan(300, "full")
    assert k == 0
    np.testing.assert_array_equal(widths, np.arange(1, 301))
    with pytest.raises(ValueError, match="max_width"):
        ref.boxcar_plan(0)
    with pytest.raises(ValueError, match="plan"):
        ref.boxcar_plan(64, "fft")


def test_decimated_sums_equal_direct_sums():
    z = np.random.default_rng(1).normal(size=(3, 1001))
    zk = z
    for k, widths in ref.boxcar_plan(512):
        zk = ref.decimate(zk) if k else zk
        assert zk.shape[-1] == z.shape[-1] >> k
        for w in widths:
            got = ref.boxcar_sums(zk, w)
            direct = np.stack([z[:, i << k : (i + w) << k].sum(axis=-1)
                               for i in range(zk.shape[-1] - w + 1)], axis=-1)
            np.testing.assert_allclose(got, direct, rtol=0, atol=1e-12 * (w << k))


# }}}

# {{{ brute force on noise-free pulses


def brute_force_search(x, max_width, threshold, snr_mode):
    """(start, width, snr) of every detection of one row, from direct sums and double sums."""
    z = (x - x.mean()) / x.std()
    found = []
    for k, widths in ref.boxcar_plan(max_width):
        n = z.size >> k
        zk = z[: n << k].reshape(n, 1 << k).sum(axis=1)
        g = [zk[: n - lag] @ zk[lag:] / (n - lag) for lag in range(widths[-1])]
        exact = {w: math.sqrt(sum(g[abs(a - b)] for a in range(w) for b in range(w)))
                 for w in widths}
        nmax, s1 = widths[-1], math.sqrt(g[0])
        sigma = exact if snr_mode == "exact" else {
            w: math.sqrt(w) * s1 + (w - 1) / (nmax - 1) * (exact[nmax] - math.sqrt(nmax) * s1)
            for w in widths}
        # snr[w_index, i]; -inf where the boxcar runs past the end
        snr = np.full((widths.size, n), -np.inf)
        for m, w in enumerate(widths):
            snr[m, : n - w + 1] = sliding_window_view(zk, w).sum(axis=-1) / sigma[w]
        best = snr.argmax(axis=0)  # the first maximum
        for i in np.flatnonzero(snr.max(axis=0) >= threshold):
            found.append((i << k, widths[best[i]] << k, snr[best[i], i]))
    return sorted(found)


@pytest.mark.parametrize("snr_mode", ["exact", "approx"])
@pytest.mark.parametrize("start, width", [(1000, 24), (1000, 72), (1001, 70)])
def test_noise_free_top_hat_matches_brute_force(snr_mode, start, width):
    x = np.zeros((1, 2048))
    x[0, start : start + width] = 5.0
    det = ref.search(x, [0.0], 1.0, max_width=128, threshold=3.0, snr_mode=snr_mode)
    want = brute_force_search(x[0], 128, 3.0, snr_mode)
    assert len(det) == len(want) > 10
    np.testing.assert_array_equal(det["start"], [s for s, _, _ in want])
    np.testing.assert_array_equal(det["width"], [w for _, w, _ in want])
    np.testing.assert_allclose(det["snr"], [s for _, _, s in want], rtol=1e-10)
    if width in (24, 72):  # widths of the plan at aligned starts: found exactly
        peak = det[np.argmax(det["snr"])]
        assert (peak["start"], peak["width"]) == (start, width)


# }}}

# {{{ white noise and injected pulses


@pytest.mark.slow
def test_white_noise_calibration():
    x = np.random.default_rng(3).normal(size=(4, 1 << 19))
    z, ok = ref.normalize(x)
    assert ok.all()
    zk = z
    for k, widths in ref.boxcar_plan(512):
        zk = ref.decimate(zk) if k else zk
        exact = ref.boxcar_sigma(zk, widths, "exact")
        approx = ref.boxcar_sigma(zk, widths, "approx")
        # unit-variance samples: sigma ~ sqrt(native width), and the interpolated
        # sigma (paper eqs. 4-5) ~ the exact one, up to the sampling error of the
        # autocovariance, ~1/sqrt(n_k); the bounds are ~1.4 times the largest
        # deviations seen over 20 seeds (0.5% and 1.3% at level 0, 2% and 5% at 4)
        rtol = 1 / math.sqrt(zk.shape[-1])
        np.testing.assert_allclose(exact / np.sqrt(widths << k), 1, rtol=12 * rtol)
        np.testing.assert_allclose(approx, exact, rtol=5 * rtol)
        for m, w in enumerate(widths):
            snr = ref.boxcar_sums(zk, w) / exact[:, m, None]
            n_eff = snr.shape[-1] / w  # independent boxcars per row
            assert np.all(np.abs(snr.mean(axis=-1)) < 5 / math.sqrt(n_eff)), (k, w)
            np.testing.assert_allclose(snr.std(axis=-1), 1, atol=0.01, err_msg=f"{k, w}")


def expected_snr(amplitude, width, level, n, snr_mode):
    """SNR of a top-hat (native ``width``, aligned to ``2**level``) in unit white noise.

    The boxcar sigma is measured from the data, so it holds the pulse's own
    autocovariance: with ``f = 2**level``, ``m = width / f`` decimated samples
    of height ``amplitude * f`` and ``n_k = n / f``, the expected level series
    has ``g(l) = f [l = 0] + amplitude**2 f**2 max(m - l, 0) / (n_k - l)``.
    This lowers the SNR below ``amplitude * sqrt(width)`` by about
    ``sqrt(1 + (2/3) * snr**2 * width / n)``.
    """
    f, m, nk, nmax = 1 << level, width >> level, n >> level, 32

    def g(lag):
        return f * (lag == 0) + amplitude**2 * f**2 * max(m - lag, 0) / (nk - lag)

    def exact(w):
        return math.sqrt(w * g(0) + 2 * sum((w - lag) * g(lag) for lag in range(1, w)))

    s1 = math.sqrt(g(0))
    sigma = exact(m) if snr_mode == "exact" else (
        math.sqrt(m) * s1 + (m - 1) / (nmax - 1) * (exact(nmax) - math.sqrt(nmax) * s1))
    return amplitude * width / sigma


@pytest.mark.parametrize("snr_mode", ["exact", "approx"])
@pytest.mark.parametrize("n, start, width, amplitude, level, max_width", [
    (1 << 21, 100_003, 8, 35.0, 0, 32),  # A sqrt(w) ~ 100 at levels 0, 2 and 5
    (1 << 19, 300_000, 96, 10.0, 2, 1024),
    (1 << 19, 200_000, 768, 3.6, 5, 1024),
])
@pytest.mark.slow
def test_injected_top_hat_snr(snr_mode, n, start, width, amplitude, level, max_width):
    x = np.random.default_rng(4).normal(size=(1, n))
    x[0, start : start + width] += amplitude
    det = ref.search(x, [0.0], 1e-3, max_width=max_width, threshold=8.0, snr_mode=snr_mode)
    peak = det[np.argmax(det["snr"])]
    assert (peak["start"], peak["width"]) == (start, width)
    assert peak["time"] == pytest.approx((start + width // 2) * 1e-3)
    want = expected_snr(amplitude, width, level, n, snr_mode)
    assert peak["snr"] == pytest.approx(want, rel=0.05)  # noise: +-1 in ~100
    if level == 0:  # a narrow pulse in a long row: the plain A sqrt(w)
        assert want == pytest.approx(amplitude * math.sqrt(width), rel=0.015)
        assert peak["snr"] == pytest.approx(amplitude * math.sqrt(width), rel=0.05)


@pytest.mark.slow
def test_false_detections_follow_gaussian_tail():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 1 << 19))
    n_rows, n = x.shape
    # width 1 alone: every sample is one independent trial, the count is binomial
    det = ref.search(x, np.zeros(n_rows), 1.0, max_width=1, threshold=4.0)
    expected = n_rows * n * gaussian_tail(4.0)
    assert abs(len(det) - expected) < 5 * math.sqrt(expected)
    # the full plan at 5 sigma: a (row, level, i) is detected when any width
    # there reaches 5, so by the union bound the expected number of detections
    # is at most n_trials * Q(5), n_trials counting every (row, width, i)
    # boxcar. Overlapping boxcars are correlated (fewer independent trials,
    # so fewer detections than the bound) but one noise excursion is
    # detected at several neighbouring i: count excursions (detections less
    # than max_width apart in one row are one) to get nearly independent
    # events, whose expected number is also below the bound.
    assert gaussian_tail(5.0) == pytest.approx(2.87e-7, rel=2e-3)
    det = ref.search(x, np.zeros(n_rows), 1.0, max_width=64, threshold=5.0, snr_mode="exact")
    n_trials = n_rows * sum((n >> k) - w + 1 for k, widths in ref.boxcar_plan(64) for w in widths)
    excursions = np.count_nonzero((np.diff(det["dm_index"], prepend=-1) != 0)
                                  | (np.diff(det["start"], prepend=-n) > 64))
    assert excursions <= n_trials * gaussian_tail(5.0)  # the bound is 24 here


# }}}

# {{{ statistics and bad rows


def test_robust_statistics_resist_a_bright_pulse():
    rng = np.random.default_rng(6)
    noise = rng.normal(10.0, 1.0, size=(2, 1 << 16))
    x = noise.copy()
    x[:, 30_000:30_050] += 1000.0
    mu, sigma = ref.statistics(x)
    assert np.all(sigma > 20) and np.all(mu > 10.5)  # the pulse dominates
    mu, sigma = ref.statistics(x, robust=True)
    np.testing.assert_allclose(mu, noise.mean(axis=1), atol=0.02)
    # 3 iterations of 3-sigma clipping of Gaussian noise converge to 0.985 sigma
    np.testing.assert_allclose(sigma, 0.985 * noise.std(axis=1), rtol=0.01)
    mu, sigma = ref.statistics(noise, robust=True)
    np.testing.assert_allclose(sigma, 0.985 * noise.std(axis=1), rtol=0.01)


def test_non_finite_samples_and_degenerate_rows():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(4, 4096))
    x[0, 100:200] = np.nan
    x[0, 300] = np.inf
    x[1] = 3.0
    x[2] = np.nan
    x[3, 2000:2010] += 5.0
    mu, sigma = ref.statistics(x)
    finite = x[0][np.isfinite(x[0])]
    np.testing.assert_allclose([mu[0], sigma[0]], [finite.mean(), finite.std()], rtol=1e-12)
    assert (mu[1], sigma[1]) == (3.0, 0.0) and np.isnan(mu[2]) and np.isnan(sigma[2])
    z, ok = ref.normalize(x)
    np.testing.assert_array_equal(ok, [True, False, False, True])
    assert np.all(z[0, 100:200] == 0) and z[0, 300] == 0 and np.all(z[1:3] == 0)
    det = ref.search(x, [1.0, 2.0, 3.0, 4.0], 1.0, max_width=64, threshold=6.0)
    assert set(det["dm_index"]) == {3}
    np.testing.assert_array_equal(det["dm"], 4.0)
    with pytest.raises(ValueError, match="one value per row"):
        ref.search(x, [1.0], 1.0)


# }}}
