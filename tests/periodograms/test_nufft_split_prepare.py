"""The NUFFT preparation of long objects in many work-groups (``nufft_reduce.mako``)
against ``nufft_prepare``'s one work-group per object."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

import clperiod
from clperiod import Catalog, FrequencyGrid, Status
from clperiod.engine.devices import get_queue
from clperiod.engine.staging import Staging
from clperiod.periodograms import nufft

GRID = FrequencyGrid(0.01, 0.002, 500)


def mixed_catalog() -> Catalog:
    """Objects of 0, 2, 5 and up to 3000 rows (several chunks of 64 rows), one
    with constant values, raw epochs."""
    rng = np.random.default_rng(7)
    curves = []
    for n in (1000, 0, 2, 3000, 5, 700, 64, 65):
        t = 5e4 + np.sort(rng.uniform(0, 300, n))
        curves.append((t, 3.0 + np.sin(t) + rng.normal(0, 0.5, n), rng.uniform(0.5, 1.5, n)))
    t = np.sort(rng.uniform(0, 300, 300))
    curves.append((t, np.full(300, 2.5), np.ones(300)))
    return Catalog.from_lightcurves(curves)


def prepared(device, catalog, plan, model) -> dict:
    """``prepare_on_device``'s outputs, read back."""
    queue, staging = get_queue(device), Staging(device)
    points = nufft.prepare_on_device(staging, queue, catalog, plan, **model)
    queue.finish()
    rows, n_obj = int(catalog.offsets[-1]), catalog.n_objects
    out = {"status": points.status.copy(), "psd_scale": points.psd_scale.copy()}
    for name, dtype, size in (
        ("cells", np.int64, rows),
        ("fractions", plan.dtype, rows),
        ("weights", plan.dtype, rows),
        ("weighted_values", plan.dtype, rows),
        ("phases", plan.complex_dtype, rows),
        ("n_points", np.int32, n_obj),
        ("yy", plan.dtype, n_obj),
    ):
        out[name] = np.empty(size, dtype)
        cl.enqueue_copy(queue, out[name], getattr(points, name))
    queue.finish()
    staging.release()
    return out


def split_everything(monkeypatch):
    """Every batch reduced in chunks of 64 rows."""
    monkeypatch.setattr(nufft, "LONG_OBJECT", 0)
    monkeypatch.setattr(nufft, "SPLIT_ROWS", {"gpu": 64, "other": 64})


@pytest.mark.parametrize(
    ("precision", "use_dy", "fit_mean", "center_data"),
    [
        ("fp64", True, True, True),
        ("fp64", False, False, False),
        ("fp64", True, False, True),
        ("fp32", True, True, False),
        ("fp32", False, False, True),
    ],
)
def test_split_statistics_equal_one_work_group(
    cpu_device, monkeypatch, precision, use_dy, fit_mean, center_data
):
    catalog = mixed_catalog()
    plan = nufft.NufftPlan.build(GRID, precision)
    model = {"fit_mean": fit_mean, "center_data": center_data, "use_dy": use_dy}
    one = prepared(cpu_device, catalog, plan, model)
    split_everything(monkeypatch)
    split = prepared(cpu_device, catalog, plan, model)
    constant = Status.ZERO_VARIANCE if fit_mean or center_data else Status.OK
    np.testing.assert_array_equal(one["status"], [0, 1, 1, 0, 0, 0, 0, 0, constant])
    np.testing.assert_array_equal(split["status"], one["status"])
    np.testing.assert_array_equal(split["n_points"], one["n_points"])
    ok = one["n_points"] > 0
    keep = np.repeat(ok, catalog.lengths)
    for name in ("cells", "fractions", "phases"):  # from the first time only
        np.testing.assert_array_equal(split[name][keep], one[name][keep], err_msg=name)
    np.testing.assert_array_equal(np.isnan(split["yy"]), ~ok)
    np.testing.assert_array_equal(split["psd_scale"][~ok], 0.0)
    ulp = np.finfo(plan.dtype).eps  # the sums differ in their order of addition only
    np.testing.assert_allclose(split["yy"][ok], one["yy"][ok], rtol=4 * ulp)
    np.testing.assert_allclose(split["psd_scale"][ok], one["psd_scale"][ok], rtol=1e-15)
    for name in ("weights", "weighted_values"):
        value, expected = split[name][keep], one[name][keep]
        np.testing.assert_allclose(value, expected, rtol=0, atol=4 * ulp * np.abs(expected).max())


def test_chunks_of_the_objects_of_long_batches(cpu_device, monkeypatch):
    queue = get_queue(cpu_device)
    monkeypatch.setattr(nufft, "SPLIT_ROWS", {"gpu": 16_384, "other": 16_384})
    lengths = np.array([70_000, 0, 3, 4, 16_384, 16_385])
    assert nufft._statistics_chunks(queue, lengths[1:], 4) is None  # no long object
    np.testing.assert_array_equal(
        nufft._statistics_chunks(queue, lengths, 4), np.cumsum([0, 5, 0, 0, 1, 1, 2])
    )
    monkeypatch.setattr(nufft, "LONG_OBJECT", 3)
    np.testing.assert_array_equal(nufft._statistics_chunks(queue, lengths[1:4], 3), [0, 0, 1, 2])


def test_a_long_light_curve_searched_in_many_work_groups(cpu_device, monkeypatch):
    """70,000 points (beyond LONG_OBJECT): the periodogram and the psd peak of
    the chunked reductions equal those of one work-group to rounding."""
    rng = np.random.default_rng(11)
    n = 70_000
    assert n > nufft.LONG_OBJECT
    t = 2.46e6 + np.sort(rng.uniform(0, 900, n))
    y = 12.0 + 0.1 * np.sin(2 * np.pi * t / 3.3) + rng.normal(0, 0.2, n)
    dy = rng.uniform(0.1, 0.3, n)
    grid = FrequencyGrid(0.05, 1 / 4500, 2000)

    def search(normalization):
        return clperiod.lombscargle(
            t, grid, y, dy, algorithm="nufft", normalization=normalization, periodogram=True,
            device=cpu_device,
        )

    split = search("standard"), search("psd")
    monkeypatch.setattr(nufft, "LONG_OBJECT", n)
    one = search("standard"), search("psd")
    np.testing.assert_allclose(split[0].power, one[0].power, rtol=0, atol=1e-13)
    assert split[0].frequency_best[0] == one[0].frequency_best[0]
    assert abs(1 / split[0].frequency_best[0] - 3.3) < 0.01
    np.testing.assert_allclose(split[1].power_best, one[1].power_best, rtol=1e-13)
