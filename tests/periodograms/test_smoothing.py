"""Single-pass SuperSmoother kernel against the independent NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

from clperiod.periodograms.smoothing import single_pass_smooth
from reference import supersmoother as ref


def reference(smoother, x, y, w, *args):
    """The NumPy smoother on the problem's values and weights made free of units."""
    values, weights, centre, scale = ref.without_units(y, w)
    return centre + scale * smoother(x, values, weights, *args)


def problems(rng, lengths, kind="random"):
    xs, ys, ws = [], [], []
    for n in lengths:
        x = np.sort(rng.uniform(0, 1, n))
        if kind == "ties":
            x = np.sort(np.round(x * 7) / 8)
        y = np.sin(2 * np.pi * x) + rng.normal(0, 0.3, n)
        xs.append(x)
        ys.append(y)
        ws.append(rng.uniform(0.5, 2.0, n))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return xs, ys, ws, offsets


@pytest.mark.parametrize("alpha", [0.0, 9.0, 9.7, 10.0])
@pytest.mark.parametrize("kind", ["random", "ties"])
def test_fp64_matches_reference(rng, alpha, kind):
    lengths = [10, 11, 24, 25, 50, 81, 200, 3, 9]
    xs, ys, ws, offsets = problems(rng, lengths, kind)
    smo = single_pass_smooth(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws),
                             offsets, alpha)
    for p, n in enumerate(lengths):
        expected = reference(ref.supsmu_single_pass, xs[p], ys[p], ws[p], alpha)
        got = smo[offsets[p]:offsets[p + 1]]
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12, equal_nan=True)
        if n <= 9:
            assert np.isnan(got).all()


def test_fp32_matches_reference(rng):
    lengths = [12, 40, 81, 150]
    xs, ys, ws, offsets = problems(rng, lengths)
    smo = single_pass_smooth(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws),
                             offsets, 9.0, precision="fp32")
    assert smo.dtype == np.float32
    # fp32 running sums move the span choice slightly where two spans score
    # almost alike: a few points differ by up to ~1e-3 of the signal, most by ~1e-6
    errors = np.concatenate([
        np.abs(smo[offsets[p]:offsets[p + 1]]
               - reference(ref.supsmu_single_pass, xs[p], ys[p], ws[p], 9.0))
        for p in range(len(lengths))
    ])
    assert errors.max() < 2e-3
    assert np.median(errors) < 2e-5


def test_bad_input(rng):
    xs, ys, ws, offsets = problems(rng, [20, 30])
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    with pytest.raises(ValueError, match="alpha"):
        single_pass_smooth(x, y, w, offsets, 11.0)
    with pytest.raises(ValueError, match="w > 0"):
        single_pass_smooth(x, y, np.where(np.arange(50) == 3, 0.0, w), offsets)
    with pytest.raises(ValueError, match="ascending"):
        single_pass_smooth(x[::-1].copy(), y, w, offsets)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        single_pass_smooth(x + 1, y, w, offsets)
    with pytest.raises(ValueError, match="offsets"):
        single_pass_smooth(x, y, w, np.array([0, 20]))
    with pytest.raises(ValueError, match="finite"):
        single_pass_smooth(x, np.where(np.arange(50) == 5, np.nan, y), w, offsets)


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 5.5, 9.0, 10.0])
@pytest.mark.parametrize("kind", ["random", "ties"])
def test_supsmu_fp64_matches_reference(rng, periodic, alpha, kind):
    from clperiod.periodograms.smoothing import supsmu_smooth

    lengths = [5, 6, 10, 24, 25, 57, 81, 200, 4]
    xs, ys, ws, offsets = problems(rng, lengths, kind)
    smo = supsmu_smooth(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws), offsets,
                        alpha, periodic=periodic)
    for p, n in enumerate(lengths):
        got = smo[offsets[p]:offsets[p + 1]]
        if n < 5:
            assert np.isnan(got).all()
            continue
        expected = reference(ref.supsmu, xs[p], ys[p], ws[p], 2 if periodic else 1, 0.0, alpha)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_supsmu_all_equal_abscissae_and_fp32(rng):
    from clperiod.periodograms.smoothing import supsmu_smooth

    x = np.concatenate([np.full(8, 0.25), np.sort(rng.uniform(0, 1, 60))])
    y = rng.normal(size=68)
    w = rng.uniform(0.5, 2, 68)
    offsets = np.array([0, 8, 68])
    smo = supsmu_smooth(x, y, w, offsets)
    np.testing.assert_allclose(smo[:8], np.sum(w[:8] * y[:8]) / np.sum(w[:8]), rtol=1e-12)
    smo32 = supsmu_smooth(x, y, w, offsets, precision="fp32")
    expected = reference(ref.supsmu, x[8:], y[8:], w[8:], 2, 0.0, 9.0)
    assert np.median(np.abs(smo32[8:] - expected)) < 1e-5
    assert np.max(np.abs(smo32[8:] - expected)) < 1e-2


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("smoother", ["single_pass", "original"])
@pytest.mark.parametrize("y_scale,w_scale,offset", [
    (1e-30, 1.0, 0.0), (1e30, 1e-60, 0.0), (1.0, 1e20, 0.0), (1.0, 1e-20, 0.0),
    (1e4, 1e-8, 1e8), (1.0, 1.0, -1e6)])
def test_smoothers_are_free_of_units(rng, precision, smoother, y_scale, w_scale, offset):
    """Scaling y by a, w by b and offsetting y by c gives a * smooth + c:
    the slope guard no longer compares the weights' units with a constant
    (within the rounding of the input offset and of the output's dtype)."""
    from clperiod.periodograms.smoothing import supsmu_smooth

    smooth = single_pass_smooth if smoother == "single_pass" else supsmu_smooth
    xs, ys, ws, offsets = problems(rng, [12, 40, 81], kind="ties")
    x, y, w = np.concatenate(xs), np.concatenate(ys), np.concatenate(ws)
    base = smooth(x, y, w, offsets, precision=precision).astype(np.float64)
    moved = smooth(x, y_scale * (y + offset), w_scale * w, offsets, precision=precision)
    spread, eps = np.std(y), np.finfo(moved.dtype).eps
    tolerance = (1e-5 if precision == "fp32" else 1e-12) + 4 * eps * abs(offset) / spread
    np.testing.assert_allclose(moved / y_scale - offset, base, rtol=0, atol=tolerance * spread)
