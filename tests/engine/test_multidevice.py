"""Several devices (CLPERIOD_DEVICE=all) give the results of one, object by
object. PoCL shows one CPU as two devices with POCL_DEVICES="pthread pthread";
device discovery is once per process, so the runs happen in a subprocess."""

import numpy as np
import pytest
from two_devices import run_on_two_devices

from clperiod.catalog import Status
from clperiod.engine.devices import select_devices
from clperiod.engine.planner import KernelShape, MemoryBudget, plan_batches
from clperiod.engine.scheduler import BATCHES_PER_DEVICE
from clperiod.periodograms import lombscargle as ls_module

# two PoCL devices, each building every kernel variant: slow on 2 cores
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, sys
import numpy as np
import clperiod
from clperiod import Catalog, FrequencyGrid

devices = clperiod.select_devices("cpu")
assert len(devices) == 2, [d.label for d in devices]
rng = np.random.default_rng(5)
lcs = []
for k in range(40):
    n = int(rng.integers(20, 200))
    t = np.sort(rng.uniform(0, 100, n))
    lcs.append((t, np.sin(2 * np.pi * t / (0.5 + k / 10)) + 0.3 * rng.standard_normal(n),
                rng.uniform(0.1, 0.3, n)))
# objects that are not searched, mid-catalog: too few points, constant values
lcs.insert(13, (np.arange(3.0), np.ones(3), np.ones(3)))
lcs.insert(29, (np.arange(50.0), np.full(50, 2.5), np.ones(50)))
cat = Catalog.from_lightcurves(lcs, ids=[f"obj{k}" for k in range(42)])
grid = FrequencyGrid.from_range(0.05, 3.0, 3000)
out = {}
for name, run in (("lombscargle", clperiod.lombscargle), ("supersmoother", clperiod.supersmoother)):
    one = run(cat, grid, top_k=3, device=devices[:1])
    both = run(cat, grid, top_k=3, device=devices)
    out[name] = {
        "devices": both.devices,
        "same": all(np.array_equal(getattr(one, f), getattr(both, f), equal_nan=True)
                    for f in ("ids", "frequency_best", "power_best", "top_k_frequency",
                              "top_k_power", "status")),
        "ok": int((one.status == 0).sum()),
        "not_ok": [int(both.status[13]), int(both.status[29])],
    }
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def two_device_runs():
    return run_on_two_devices(SCRIPT)


@pytest.mark.parametrize("name", ["lombscargle", "supersmoother"])
def test_two_devices_equal_one(name, two_device_runs):
    out = two_device_runs[name]
    assert len(out["devices"]) == 2
    assert out["same"] and out["ok"] == 40
    assert out["not_ok"] == [Status.TOO_FEW_POINTS, Status.ZERO_VARIANCE]


def test_batches_spread_over_devices():
    """Several devices: at least BATCHES_PER_DEVICE batches each, of similar points."""
    info = select_devices()[0]
    lengths = np.random.default_rng(0).integers(50, 300, 1000)
    shape = KernelShape(wg=128, m=16)
    batches = plan_batches(lengths, 1000, shape, MemoryBudget.of(info), point_bytes=16,
                           real_bytes=8, top_k=1,
                           periodogram=False, min_batches=2 * BATCHES_PER_DEVICE)
    assert len(batches) >= 2 * BATCHES_PER_DEVICE
    points = [lengths[b.obj_start:b.obj_stop].sum() for b in batches]
    assert max(points) <= lengths.sum() / (2 * BATCHES_PER_DEVICE) + 300
    assert batches[0].obj_start == 0 and batches[-1].obj_stop == 1000
    assert all(a.obj_stop == b.obj_start for a, b in zip(batches, batches[1:]))


def greedy_batches(lengths, nf, shape, budget, max_alloc, point_bytes, real_bytes, top_k,
                   periodogram, min_batches):
    """The batch boundaries by the definition: add objects one at a time while
    the batch's points, bytes and arrays fit (always at least one object);
    None when an object alone exceeds the budget or the largest allocation."""
    n_tiles = shape.n_tiles(nf)
    per_object = 4 * 4 + (n_tiles + 1) * top_k * (real_bytes + 4)
    share = -(-int(lengths.sum()) // min_batches)
    bounds, start = [], 0
    while start < len(lengths):
        stop, points = start + 1, int(lengths[start])
        if (points * point_bytes + per_object > budget
                or points * (point_bytes // 4) > max_alloc
                or n_tiles * top_k * (real_bytes + 4) > max_alloc):
            return None
        while stop < len(lengths):
            more, objects = points + int(lengths[stop]), stop + 1 - start
            if (more > share or more * point_bytes + objects * per_object > budget // 2
                    or more * max(1, point_bytes // 4) > max_alloc
                    or objects * n_tiles * top_k * (real_bytes + 4) > max_alloc
                    or (periodogram and objects * shape.owned * real_bytes > max_alloc)):
                break
            points, stop = more, stop + 1
        bounds.append((start, stop))
        start = stop
    return bounds


@pytest.mark.parametrize("periodogram", [False, True])
def test_batch_boundaries_follow_the_greedy_definition(periodogram):
    rng = np.random.default_rng(5)
    shape = KernelShape(wg=16, m=4)
    planned = 0
    for trial in range(40):
        lengths = rng.integers(0, 400, rng.integers(1, 300))
        budget = MemoryBudget(int(rng.integers(20_000, 400_000)),
                              int(rng.integers(2_000, 200_000)), "small")
        nf, top_k, min_batches = int(rng.integers(10, 3000)), int(rng.integers(1, 4)), int(
            rng.integers(1, 9))
        expected = greedy_batches(lengths, nf, shape, budget.total, budget.max_alloc, 40, 8,
                                  top_k, periodogram, min_batches)
        if expected is None:
            with pytest.raises(MemoryError, match=r"object \d+ \(\d+ points\) needs"):
                plan_batches(lengths, nf, shape, budget, point_bytes=40, real_bytes=8,
                             top_k=top_k, periodogram=periodogram, min_batches=min_batches)
            continue
        batches = plan_batches(lengths, nf, shape, budget, point_bytes=40, real_bytes=8,
                               top_k=top_k, periodogram=periodogram, min_batches=min_batches)
        assert [(b.obj_start, b.obj_stop) for b in batches] == expected, trial
        planned += 1
    assert planned >= 20


def test_lombscargle_splits_small_runs_once_per_device():
    """Batches of another device carry at least MIN_BATCH_PAIRS of work."""
    pairs = ls_module.MIN_BATCH_PAIRS
    assert ls_module._min_batches(1, 1000 * pairs) == 1
    assert ls_module._min_batches(2, pairs) == 2
    assert ls_module._min_batches(2, 2 * pairs + 1) == 4
    assert ls_module._min_batches(3, 100 * pairs) == 3 * BATCHES_PER_DEVICE
    # the same cut as most points per batch (the multi-term and multiband searches)
    assert ls_module.batch_points(1, 10**6, 10**9) is None
    assert ls_module.batch_points(2, 1001, 1) == 501
    assert ls_module.batch_points(2, 10**6, 10**7) == 10**6 // (2 * BATCHES_PER_DEVICE)
    assert ls_module.batch_points(3, 10**6, 10**9) == -(-10**6 // (3 * BATCHES_PER_DEVICE))
