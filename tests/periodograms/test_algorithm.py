"""``lombscargle(algorithm="auto")``: the cost model's choices and mixed catalogs."""

from __future__ import annotations

import numpy as np
import pytest

from clperiod import Catalog, FrequencyGrid, Status, lombscargle
from clperiod.engine.devices import select_devices
from clperiod.periodograms import algorithm
from clperiod.periodograms import lombscargle as LS_MODULE


def light_curve(rng, n, baseline=100.0):
    t = np.sort(rng.uniform(0, baseline, n)) + 58000.0
    y = np.sin(2 * np.pi * t / 3.1) + rng.normal(0, 0.5, n)
    return t, y, rng.uniform(0.5, 1.5, n)


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
def test_short_curves_go_direct_and_long_ones_to_the_nufft(kind, monkeypatch):
    devices = [d for d in select_devices() if d.kind == "cpu"] if kind == "cpu" else []
    if kind == "gpu":
        monkeypatch.setattr(algorithm, "COSTS", {"gpu": algorithm.COSTS["gpu"],
                                                 "cpu": algorithm.COSTS["gpu"]})
        devices = select_devices()
    nf = 1_000_000
    lengths = np.array([10, 0, *[12] * 20, 1_000_000])
    chosen = algorithm.prefers_nufft(lengths, nf, 2 * nf, 13, devices)
    assert chosen.tolist() == [False] * 22 + [True]
    # one short curve alone: direct; long ones alone: NUFFT for all
    assert not algorithm.prefers_nufft(np.array([20]), 1000, 2000, 13, devices).any()
    assert algorithm.prefers_nufft(np.array([10**6, 0]), nf, 2 * nf, 13, devices).all()


def test_mixing_costs_both_fixed_costs():
    costs = algorithm.COSTS["gpu"]
    lengths = np.array([10_000, 50])
    nf = 10_000
    mixed = costs.fixed_direct + costs.fixed_nufft + costs.nufft(
        lengths[:1].astype(float), 2 * nf, 13).sum() + costs.direct(
        lengths[1:].astype(float), nf).sum()
    everything_nufft = costs.fixed_nufft + costs.nufft(lengths.astype(float), 2 * nf, 13).sum()
    chosen = algorithm.prefers_nufft(lengths, nf, 2 * nf, 13, [])
    assert chosen.tolist() == ([True, True] if everything_nufft <= mixed else [True, False])


def test_a_mixed_catalog_equals_each_path_on_its_objects(rng, monkeypatch):
    curves = [light_curve(rng, n) for n in (400, 2, 30, 600, 80)]
    catalog = Catalog.from_lightcurves(curves, ids=list("abcde"))
    grid = FrequencyGrid(0.02, 0.002, 3000)
    by_nufft = np.array([True, False, False, True, False])
    monkeypatch.setattr(LS_MODULE, "prefers_nufft", lambda *args: by_nufft)
    options = dict(top_k=3, periodogram=True, normalization="psd")
    mixed = lombscargle(catalog, grid, algorithm="auto", eps=1e-10, **options)
    direct = lombscargle(catalog, grid, algorithm="direct", **options)
    fast = lombscargle(catalog, grid, algorithm="nufft", eps=1e-10, **options)
    np.testing.assert_array_equal(mixed.ids, list("abcde"))
    assert mixed.status.tolist() == direct.status.tolist()
    assert mixed.status[1] == Status.TOO_FEW_POINTS
    for rows, expected in ((by_nufft, fast), (~by_nufft, direct)):
        np.testing.assert_array_equal(mixed.power[rows], expected.power[rows])
        np.testing.assert_array_equal(mixed.top_k_frequency[rows], expected.top_k_frequency[rows])
        np.testing.assert_array_equal(mixed.top_k_power[rows], expected.top_k_power[rows])


def test_auto_on_one_path_equals_that_path(rng):
    t, y, dy = light_curve(rng, 50)
    grid = FrequencyGrid(0.02, 0.01, 500)
    auto = lombscargle(t, grid, y, dy, algorithm="auto", periodogram=True)
    direct = lombscargle(t, grid, y, dy, periodogram=True)
    np.testing.assert_array_equal(auto.power, direct.power)
