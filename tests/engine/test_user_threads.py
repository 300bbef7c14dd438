"""Searches called from several user threads at once, all on one device, give
the results of the same calls made one after another: the calls share the
device's context, programs, memory pools and page-locked host memory, but no
queue, kernel object or per-call state."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, kepler, singlepulse
from clperiod.periodograms import folding
from clperiod.testing import random_planets

pytestmark = pytest.mark.slow

THREADS = 4
GRID = FrequencyGrid.from_range(0.1, 3.0, 700)


def catalog(seed: int, bands: bool = False) -> Catalog:
    """Three noisy sawtooth-and-sine light curves of 60-150 points."""
    rng = np.random.default_rng(seed)
    curves = []
    for _ in range(3):
        n = int(rng.integers(60, 150))
        t = np.sort(rng.uniform(0.0, 40.0, n)) + 58000.0
        period = rng.uniform(0.4, 5.0)
        y = ((t / period) % 1.0) + 0.3 * np.sin(2 * np.pi * t / (1.7 * period))
        curves.append((t, y + rng.normal(0.0, 0.2, n), np.full(n, 0.2)))
    if not bands:
        return Catalog.from_lightcurves(curves)
    ids = np.concatenate([np.full(len(t), k) for k, (t, _, _) in enumerate(curves)])
    t, y, dy = (np.concatenate([c[i] for c in curves]) for i in range(3))
    band = np.where(np.random.default_rng(seed).random(t.size) < 0.5, "g", "r")
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def peaks(result) -> list[np.ndarray]:
    fields = ("top_k_frequency", "top_k_power", "power", "status")
    return [np.asarray(getattr(result, name)) for name in fields if hasattr(result, name)]


SEARCHES = {
    "lombscargle": lambda s: peaks(
        clperiod.lombscargle(catalog(s), GRID, top_k=2, periodogram=True)
    ),
    "lombscargle nufft": lambda s: peaks(
        clperiod.lombscargle(catalog(s), GRID, algorithm="nufft", top_k=2, periodogram=True)
    ),
    "multiband": lambda s: peaks(
        clperiod.lombscargle_multiband(catalog(s, bands=True), GRID, top_k=2, periodogram=True)
    ),
    "supersmoother": lambda s: peaks(
        clperiod.supersmoother(catalog(s), GRID, top_k=2, periodogram=True)
    ),
    "pdm": lambda s: peaks(clperiod.pdm(catalog(s), GRID, top_k=2, periodogram=True)),
    "conditional entropy": lambda s: peaks(
        clperiod.conditional_entropy(catalog(s), GRID, top_k=2, periodogram=True)
    ),
    "aov": lambda s: peaks(clperiod.aov(catalog(s), GRID, top_k=2, periodogram=True)),
    "mhaov": lambda s: peaks(clperiod.mhaov(catalog(s), GRID, top_k=2, periodogram=True)),
    "bls": lambda s: peaks(
        clperiod.bls(catalog(s), np.linspace(0.4, 6.0, 500), [0.05, 0.1], top_k=2)
    ),
}


def kepler_chi2(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 300.0, 40))
    params = random_planets(rng, 3000, 1, period=(1.0, 100.0))
    v = rng.normal(0.0, 5.0, t.size)
    return [kepler.chi2(t, v, np.ones_like(t), params, precision="fp64")]


def pulses(seed: int) -> list[np.ndarray]:
    data = np.random.default_rng(seed).standard_normal((8, 4096), dtype=np.float32)
    data[3, 1000:1008] += 5.0
    found = singlepulse.search(data, np.linspace(0.0, 70.0, 8), 1e-3, max_width=16)
    return [np.asarray(found), found.info.mean, found.info.std]


def same_in_threads(search) -> None:
    """Eight calls on four threads equal the same calls made in turn."""
    seeds = list(range(8))
    alone = [search(seed) for seed in seeds]
    with ThreadPoolExecutor(THREADS) as pool:
        together = list(pool.map(search, seeds))
    for seed, (want, got) in enumerate(zip(alone, together, strict=True)):
        for expected, actual in zip(want, got, strict=True):
            np.testing.assert_array_equal(actual, expected, err_msg=f"call {seed}")


@pytest.mark.parametrize("name", SEARCHES)
def test_periodograms_from_several_threads(name):
    same_in_threads(SEARCHES[name])


def test_supersmoother_radix_path_from_several_threads(monkeypatch):
    monkeypatch.setattr(clperiod.periodograms.supersmoother, "bitonic_capacity", lambda info: 32)
    monkeypatch.setattr(folding, "bitonic_capacity", lambda info: 32)
    same_in_threads(SEARCHES["supersmoother"])


def test_kepler_from_several_threads():
    same_in_threads(kepler_chi2)


def test_single_pulse_from_several_threads():
    same_in_threads(pulses)
