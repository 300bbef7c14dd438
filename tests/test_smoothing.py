"""Single-pass SuperSmoother kernel against the independent NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest
from reference import supersmoother as ref

from clperiod.smoothing import single_pass_smooth


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
        expected = ref.supsmu_single_pass(xs[p], ys[p], ws[p], alpha)
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
        np.abs(smo[offsets[p]:offsets[p + 1]] - ref.supsmu_single_pass(xs[p], ys[p], ws[p], 9.0))
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


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_fused_periodogram_matches_reference(rng, precision):
    from clperiod import Catalog, FrequencyGrid
    from clperiod.smoothing import single_pass_periodogram

    lcs = []
    for n, period in [(12, 0.7), (45, 0.31), (81, 2.3), (128, 0.55), (9, 1.0)]:
        t = 53000 + np.sort(rng.uniform(0, 400, n))
        y = 16 + 0.3 * ((t / period) % 1.0) + rng.normal(0, 0.05, n)  # sawtooth
        lcs.append((t, y, rng.uniform(0.02, 0.06, n)))
    catalog = Catalog.from_lightcurves(lcs)
    grid = FrequencyGrid.from_range(0.2, 4.0, 70)
    power = single_pass_periodogram(catalog, grid, 9.0, precision=precision)
    for k, (t, y, dy) in enumerate(lcs):
        expected = ref.supersmoother_power(t, y, dy, grid.frequencies(), variant="single_pass")
        if len(t) <= 9:
            assert np.isnan(power[k]).all() and np.isnan(expected).all()
            continue
        if precision == "fp64":
            np.testing.assert_allclose(power[k], expected, rtol=1e-8, atol=1e-8 * len(t))
        else:
            assert np.median(np.abs(power[k] - expected)) < 1e-3 * len(t)
            assert np.argmax(power[k]) == np.argmax(expected)


@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("alpha", [0.0, 5.5, 9.0, 10.0])
@pytest.mark.parametrize("kind", ["random", "ties"])
def test_supsmu_fp64_matches_reference(rng, periodic, alpha, kind):
    from clperiod.smoothing import supsmu_smooth

    lengths = [5, 6, 10, 24, 25, 57, 81, 200, 4]
    xs, ys, ws, offsets = problems(rng, lengths, kind)
    smo = supsmu_smooth(np.concatenate(xs), np.concatenate(ys), np.concatenate(ws), offsets,
                        alpha, periodic=periodic)
    for p, n in enumerate(lengths):
        got = smo[offsets[p]:offsets[p + 1]]
        if n < 5:
            assert np.isnan(got).all()
            continue
        expected = ref.supsmu(xs[p], ys[p], ws[p], 2 if periodic else 1, 0.0, alpha)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_supsmu_all_equal_abscissae_and_fp32(rng):
    from clperiod.smoothing import supsmu_smooth

    x = np.concatenate([np.full(8, 0.25), np.sort(rng.uniform(0, 1, 60))])
    y = rng.normal(size=68)
    w = rng.uniform(0.5, 2, 68)
    offsets = np.array([0, 8, 68])
    smo = supsmu_smooth(x, y, w, offsets)
    np.testing.assert_allclose(smo[:8], np.sum(w[:8] * y[:8]) / np.sum(w[:8]), rtol=1e-12)
    smo32 = supsmu_smooth(x, y, w, offsets, precision="fp32")
    expected = ref.supsmu(x[8:], y[8:], w[8:], 2, 0.0, 9.0)
    assert np.median(np.abs(smo32[8:] - expected)) < 1e-5
    assert np.max(np.abs(smo32[8:] - expected)) < 1e-2


@pytest.mark.parametrize("periodic", [True, False])
def test_original_periodogram_matches_reference(rng, periodic, monkeypatch):
    from clperiod import Catalog, FrequencyGrid
    from clperiod import smoothing

    lcs = []
    for n, period in [(12, 0.7), (40, 0.31), (81, 2.3), (4, 1.0)]:
        t = 53000 + np.sort(rng.uniform(0, 400, n))
        y = 16 + 0.3 * ((t / period) % 1.0) + rng.normal(0, 0.05, n)
        lcs.append((t, y, rng.uniform(0.02, 0.06, n)))
    catalog = Catalog.from_lightcurves(lcs)
    grid = FrequencyGrid.from_range(0.2, 4.0, 30)
    power = smoothing.original_periodogram(catalog, grid, 9.0, periodic=periodic)
    for k, (t, y, dy) in enumerate(lcs):
        if len(t) < 5:
            assert np.isnan(power[k]).all()
            continue
        expected = ref.supersmoother_power(t, y, dy, grid.frequencies(), variant="original",
                                           periodic=periodic)
        np.testing.assert_allclose(power[k], expected, rtol=1e-8, atol=1e-8 * len(t))


def test_search_input_checks(rng):
    from clperiod import Catalog, FrequencyGrid
    from clperiod import smoothing

    t = np.sort(rng.uniform(0, 10, 20))
    grid = FrequencyGrid.from_range(0.2, 4.0, 10)
    no_dy = Catalog.from_lightcurves([(t, np.sin(t))])
    with pytest.raises(ValueError, match="dy"):
        smoothing.original_periodogram(no_dy, grid)
    long = Catalog.from_lightcurves([(np.arange(200.0), np.zeros(200), np.ones(200))])
    with pytest.raises(ValueError, match="at most"):
        smoothing.single_pass_periodogram(long, grid)
    ok = Catalog.from_lightcurves([(t, np.sin(t), np.ones(20))])
    with pytest.raises(ValueError, match="alpha"):
        smoothing.single_pass_periodogram(ok, grid, alpha=-1)


def test_original_periodogram_frequency_batches(rng, monkeypatch):
    import clperiod
    from clperiod import Catalog, FrequencyGrid
    from clperiod import smoothing

    lcs = [(np.sort(rng.uniform(0, 50, n)), rng.normal(size=n), np.full(n, 0.1)) for n in (30, 45)]
    catalog = Catalog.from_lightcurves(lcs)
    grid = FrequencyGrid.from_range(0.2, 4.0, 40)
    whole = smoothing.original_periodogram(catalog, grid)
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 400_000, "max_alloc": 100_000})
    monkeypatch.setattr(smoothing, "select_devices", lambda _: [small])
    np.testing.assert_array_equal(smoothing.original_periodogram(catalog, grid), whole)
