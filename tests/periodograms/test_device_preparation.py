"""The searches that prepare their points on the host (multiband, MHAOV, the
phase statistics, BLS) prepare each batch of objects in the device thread that
takes it, never the whole catalog in the calling thread, and give the results
of one device bit for bit."""

import dataclasses
import threading

import numpy as np
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.periodograms import bls, mhaov, multiband, phase_statistics

GRID = FrequencyGrid(0.05, 0.0013, 300)
PERIODS = np.linspace(1.0, 9.0, 80)

SEARCHES = {
    "multiband": (
        multiband,
        lambda cat: clperiod.lombscargle_multiband(
            cat, GRID, top_k=2, periodogram=True, precision="fp32"
        ),
    ),
    "mhaov": (
        mhaov,
        lambda cat: clperiod.mhaov(cat, GRID, nharmonics=2, top_k=2, periodogram=True),
    ),
    "pdm": (
        phase_statistics,
        lambda cat: clperiod.pdm(cat, GRID, top_k=2, periodogram=True, precision="fp32"),
    ),
    "conditional_entropy": (
        phase_statistics,
        lambda cat: clperiod.conditional_entropy(cat, GRID, top_k=2, periodogram=True),
    ),
    "bls": (
        bls,
        lambda cat: clperiod.bls(
            cat, PERIODS, [0.05, 0.1], top_k=2, periodogram=True, compat="astropy"
        ),
    ),
}


def two_band_catalog() -> Catalog:
    """Twelve g+r objects of unequal length; a constant one and one with too few rows
    among them."""
    rng = np.random.default_rng(11)
    rows = []
    for k in range(12):
        n = 40 + 17 * k
        t = 5.9e4 + np.sort(rng.uniform(0.0, 60.0, n))
        band = rng.choice(np.array(["g", "r"]), n)
        y = 17.0 + 0.3 * np.sin(2 * np.pi * t / (1.3 + 0.4 * k)) + rng.normal(0, 0.05, n)
        rows.append((t, y, rng.uniform(0.02, 0.06, n), band))
    t, _, dy, band = rows[3]
    rows[3] = (t, np.full(t.size, 16.0), dy, band)
    rows[7] = tuple(column[:1] for column in rows[7])
    ids = np.repeat(np.arange(12), [r[0].size for r in rows])
    t, y, dy, band = (np.concatenate(column) for column in zip(*rows, strict=True))
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def same_arrays(a, b) -> None:
    for field in dataclasses.fields(a):
        value = getattr(a, field.name)
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, getattr(b, field.name), err_msg=field.name)


@pytest.mark.parametrize("name", sorted(SEARCHES))
def test_each_device_thread_prepares_its_own_batch(monkeypatch, name):
    module, search = SEARCHES[name]
    cat = two_band_catalog()
    one_device = search(cat)
    assert one_device.status[3] == Status.ZERO_VARIANCE
    assert one_device.status[7] == Status.TOO_FEW_POINTS
    prepared = []
    prepare = module._prepare

    def recorded(catalog, *args, **kwargs):
        prepared.append((threading.current_thread().name, catalog.n_objects))
        return prepare(catalog, *args, **kwargs)

    info = clperiod.select_devices()[0]
    monkeypatch.setattr(module, "select_devices", lambda _: [info, info])
    monkeypatch.setattr(module, "_prepare", recorded)
    spread = search(cat)
    assert spread.devices == [info.label] * 2
    assert len(prepared) >= 2
    assert all(thread.startswith("clperiod-device-") for thread, _ in prepared)
    assert sum(n for _, n in prepared) == cat.n_objects
    same_arrays(spread, one_device)
