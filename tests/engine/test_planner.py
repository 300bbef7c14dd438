"""The one device-memory planner: its arithmetic, and every algorithm planning through it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import clperiod
from clperiod.engine import planner, staging
from clperiod.engine.planner import Buffer, MemoryBudget, batch_bounds, held_bytes, items_that_fit
from clperiod.kepler.rvmodel import ModelEvaluator, Observations
from clperiod.periodograms import lombscargle as LS_MODULE
from clperiod.periodograms import supersmoother as SS_MODULE
from clperiod.singlepulse import boxcar


# ------------------------------------------------------------------ arithmetic
def _random_buffers(rng) -> list[Buffer]:
    return [Buffer(f"b{k}", per_item=int(rng.integers(0, 50)), per_unit=int(rng.integers(0, 20)),
                   fixed=int(rng.integers(0, 200)), count=int(rng.integers(1, 4)))
            for k in range(int(rng.integers(1, 5)))]


def _fits(buffers, budget, limit, items, units) -> bool:
    return (all(b.nbytes(items, units) <= budget.max_alloc for b in buffers)
            and held_bytes(buffers, items, units) <= limit)


def test_batches_hold_whole_items_and_fit_the_budget():
    """Random buffers, items and budgets: the batches cover every item once,
    in order; a batch of several items fits the target, every buffer the
    largest allocation; each batch is as long as fits (greedy)."""
    rng = np.random.default_rng(21)
    planned = 0
    for trial in range(300):
        sizes = rng.integers(0, 60, int(rng.integers(1, 80)))
        buffers = _random_buffers(rng)
        budget = MemoryBudget(int(rng.integers(500, 20_000)), int(rng.integers(300, 8_000)), "d")
        target = int(rng.integers(200, 20_000))
        limit = min(target, budget.total)
        try:
            bounds = batch_bounds(sizes, buffers, budget, target=target)
        except MemoryError:
            alone = [_fits(buffers, budget, budget.total, 1, int(n)) for n in sizes]
            assert not all(alone), trial
            continue
        planned += 1
        assert bounds[0][0] == 0 and bounds[-1][1] == len(sizes)
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(bounds, bounds[1:]))
        for start, stop in bounds:
            units = int(sizes[start:stop].sum())
            if stop - start > 1:
                assert _fits(buffers, budget, limit, stop - start, units), trial
            else:
                assert _fits(buffers, budget, budget.total, 1, units), trial
            if stop < len(sizes):  # one more item would not fit
                assert not _fits(buffers, budget, limit, stop + 1 - start,
                                 units + int(sizes[stop])), trial
    assert planned > 100


def test_batch_limits_on_items_and_units():
    sizes = np.array([5, 5, 5, 5, 5, 5, 5])
    budget = MemoryBudget(10**6, 10**6, "d")
    assert batch_bounds(sizes, [Buffer("x", per_unit=1)], budget, max_items=3) == [
        (0, 3), (3, 6), (6, 7)]
    assert batch_bounds(sizes, [Buffer("x", per_unit=1)], budget, max_units=12) == [
        (0, 2), (2, 4), (4, 6), (6, 7)]
    # an item over a soft limit is a batch of its own
    assert batch_bounds(np.array([3, 20, 3]), [Buffer("x", per_unit=1)], budget,
                        max_units=10) == [(0, 1), (1, 2), (2, 3)]


def test_batches_shared_by_workers_are_recut_into_a_multiple_of_them():
    """Memory cuts 20 equal items into 7 + 7 + 6: two workers get four batches
    of five (not one worker running the third batch alone); a cut that is a
    multiple already, or no more batches than workers, is kept."""
    sizes, points = np.full(20, 5), [Buffer("x", per_unit=1)]
    budget = MemoryBudget(35, 10**6, "d")
    assert batch_bounds(sizes, points, budget) == [(0, 7), (7, 14), (14, 20)]
    assert batch_bounds(sizes, points, budget, workers=2) == [(0, 5), (5, 10), (10, 15), (15, 20)]
    assert batch_bounds(sizes, points, budget, workers=3) == [(0, 7), (7, 14), (14, 20)]
    assert batch_bounds(sizes, points, budget, workers=4) == [(0, 7), (7, 14), (14, 20)]
    assert batch_bounds(sizes, points, MemoryBudget(50, 10**6, "d"), workers=2) == [
        (0, 10), (10, 20)]


def test_recut_batches_fit_and_balance_the_units():
    """Random ragged items and budgets: with workers the batches still cover
    every item once and fit; where memory cut more batches than workers and
    the even cut fits, each batch is within an item of an equal share of
    the units, and there are a multiple of the workers when the items are
    equal."""
    rng = np.random.default_rng(23)
    recut = 0
    for trial in range(300):
        equal = trial % 2 == 0
        n = int(rng.integers(10, 60))
        sizes = np.full(n, int(rng.integers(1, 30))) if equal else rng.integers(0, 30, n)
        buffers = [Buffer("x", per_unit=int(rng.integers(1, 5)), per_item=int(rng.integers(0, 9)))]
        budget = MemoryBudget(int(rng.integers(150, 800)), 10**6, "d")
        workers = int(rng.integers(2, 5))
        try:
            greedy = batch_bounds(sizes, buffers, budget)
        except MemoryError:
            continue
        bounds = batch_bounds(sizes, buffers, budget, workers=workers)
        assert bounds[0][0] == 0 and bounds[-1][1] == n, trial
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(bounds, bounds[1:])), trial
        assert all(_fits(buffers, budget, budget.total, stop - start, int(sizes[start:stop].sum()))
                   for start, stop in bounds), trial
        if len(greedy) <= workers or len(greedy) % workers == 0:
            assert bounds == greedy, trial
            continue
        if bounds == greedy:  # the even cut would not fit
            continue
        recut += 1
        batches = -(-len(greedy) // workers) * workers
        assert len(bounds) <= batches, trial
        share, largest = sizes.sum() / batches, int(sizes.max())
        assert all(abs(int(sizes[start:stop].sum()) - share) <= largest
                   for start, stop in bounds), trial
        if equal:
            assert len(bounds) == batches, trial
    assert recut > 60


def test_an_item_too_large_for_the_device_is_a_memory_error_naming_it():
    budget = MemoryBudget(1000, 400, "tiny device")
    sizes = np.array([10, 10, 90, 10])
    with pytest.raises(MemoryError, match=r"object 2 \(90 points\) needs a buffer of 450 bytes "
                                          r"\(points\), more than the largest allocation of "
                                          r"tiny device \(400 bytes\)"):
        batch_bounds(sizes, [Buffer("points", per_unit=5)], budget)
    with pytest.raises(MemoryError, match=r"light curve 2 \(90 samples\) needs 1080 bytes of "
                                          r"device memory, more than fits in the 1000 bytes"):
        batch_bounds(sizes, [Buffer("points", per_unit=4, count=3)], budget,
                     item="light curve", unit="samples")
    with pytest.raises(MemoryError, match=r"a batch of 128 models of 40 observations needs"):
        items_that_fit([Buffer("velocities", per_unit=8)], budget, most=1000, size=40,
                       least=128, item="model", unit="observations")


def test_items_that_fit_is_the_most_that_fit():
    rng = np.random.default_rng(22)
    for trial in range(300):
        buffers = _random_buffers(rng)
        budget = MemoryBudget(int(rng.integers(500, 50_000)), int(rng.integers(300, 20_000)), "d")
        size, most = int(rng.integers(0, 30)), int(rng.integers(1, 500))
        target = int(rng.integers(100, 50_000))
        limit = min(target, budget.total)
        try:
            n = items_that_fit(buffers, budget, most=most, size=size, target=target)
        except MemoryError:
            assert not _fits(buffers, budget, budget.total, 1, size), trial
            continue
        assert 1 <= n <= most
        assert _fits(buffers, budget, limit, n, n * size) or n == 1, trial
        assert _fits(buffers, budget, budget.total, n, n * size), trial
        if n < most:
            assert not _fits(buffers, budget, limit, n + 1, (n + 1) * size), trial


def test_the_budget_is_the_fraction_of_device_memory_less_what_is_held(cpu_device, monkeypatch):
    gpu = replace(cpu_device, kind="gpu", global_mem=80 << 30, max_alloc=20 << 30)
    assert planner.DEVICE_FRACTION == 0.5
    budget = MemoryBudget.of(gpu)
    assert (budget.total, budget.max_alloc, budget.device) == (40 << 30, 20 << 30, gpu.label)
    assert MemoryBudget.of(gpu, held=1 << 30).total == 39 << 30
    assert MemoryBudget.of(gpu, share=0.5).total == 20 << 30
    assert MemoryBudget.of(gpu, held=50 << 30).total == 0
    # a CPU device's buffers are host memory: half of what the host can spare
    monkeypatch.setattr(staging, "available_host_memory", lambda: 9 << 30)
    cpu = replace(cpu_device, kind="cpu", global_mem=80 << 30)
    assert MemoryBudget.of(cpu, host_reserved=1 << 30).total == 2 << 30


def test_buffers_refuse_negative_sizes():
    with pytest.raises(ValueError, match="buffer 'x'"):
        Buffer("x", per_unit=-1)
    with pytest.raises(ValueError, match="buffer 'y'"):
        Buffer("y", count=0)


# -------------------------------------------------------- every algorithm
@pytest.fixture
def small_device(cpu_device, monkeypatch):
    """A CPU device of 1 GiB whose plans count on all of it (host memory aplenty)."""
    monkeypatch.setattr(staging, "available_host_memory", lambda: 1 << 40)
    return replace(cpu_device, global_mem=1 << 30, max_alloc=256 << 20)


def _budget(monkeypatch, device, total: int) -> None:
    """Shrink the device fraction so that a batch may use ``total`` bytes of ``device``."""
    monkeypatch.setattr(planner, "DEVICE_FRACTION", total / device.global_mem)


def test_lombscargle_plans_through_the_planner(rng, small_device, monkeypatch):
    lcs = [(np.sort(rng.uniform(0, 30, n)), rng.normal(size=n)) for n in range(40, 100, 3)]
    cat = clperiod.Catalog.from_lightcurves(lcs)
    grid = clperiod.FrequencyGrid.from_range(0.05, 5.0, 4000)
    plans = []
    plan = LS_MODULE.plan_batches
    monkeypatch.setattr(LS_MODULE, "plan_batches", lambda *a, **k: plans.append(plan(*a, **k))
                        or plans[-1])
    whole = clperiod.lombscargle(cat, grid, periodogram=True, top_k=3, device=small_device)
    _budget(monkeypatch, small_device, 16_000)
    split = clperiod.lombscargle(cat, grid, periodogram=True, top_k=3, device=small_device)
    assert len(plans[0]) == 1 and len(plans[1]) > 3
    np.testing.assert_array_equal(split.power, whole.power)
    np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)


@pytest.mark.parametrize("variant", ["original", "single_pass"])
def test_supersmoother_plans_through_the_planner(rng, small_device, monkeypatch, variant):
    """Object groups and frequency batches from the budget: the periodograms of one."""
    lcs = [(np.sort(rng.uniform(0, 30, n)), rng.normal(size=n)) for n in (150, 170, 190, 210)]
    cat = clperiod.Catalog.from_lightcurves(lcs)
    grid = clperiod.FrequencyGrid.from_range(0.1, 4.0, 700)
    items, batches = [], []
    plan, batch = SS_MODULE._plan, SS_MODULE._SlabRun._batch
    monkeypatch.setattr(SS_MODULE, "_plan", lambda *a: items.append(plan(*a)) or items[-1])
    monkeypatch.setattr(SS_MODULE._SlabRun, "_batch",
                        lambda self: batches.append(batch(self)) or batches[-1])
    kw = dict(variant=variant, periodogram=True, top_k=3, device=small_device)
    whole = clperiod.supersmoother(cat, grid, **kw)
    assert len(items[0]) == len(batches) == 1
    _budget(monkeypatch, small_device, 400_000)
    split = clperiod.supersmoother(cat, grid, **kw)
    assert len(items[1]) == 4 and max(batches[1:]) < grid.nf // 4  # 5 launches or more
    np.testing.assert_array_equal(split.power, whole.power)
    np.testing.assert_array_equal(split.top_k_frequency, whole.top_k_frequency)


def test_single_pulse_plans_through_the_planner(small_device, monkeypatch):
    """Row blocks and time chunks from the budget: the candidates of one."""
    rng = np.random.default_rng(23)
    x = rng.normal(size=(8, 3 * 65536)).astype(np.float32)
    x[2, 70_000:70_012] += 4.0
    x[5, 65_530:65_540] += 5.0
    blocks = []
    search_rows = boxcar._search_rows
    monkeypatch.setattr(boxcar, "_search_rows",
                        lambda info, rows, block, s: blocks.append(block)
                        or search_rows(info, rows, block, s))
    whole = boxcar.search(x, np.arange(8.0), 1e-3, device=small_device)
    assert blocks == [(0, 8)] and whole.info.chunks == 1
    _budget(monkeypatch, small_device, 1_200_000)  # two rows of a 65536-sample chunk
    split = boxcar.search(x, np.arange(8.0), 1e-3, device=small_device)
    assert blocks[1:] == [(0, 2), (2, 4), (4, 6), (6, 8)] and split.info.chunks == 3
    assert len(whole) >= 2
    np.testing.assert_array_equal(split, whole)
    np.testing.assert_array_equal(split.info.std, whole.info.std)


@pytest.mark.parametrize(("layout", "batch"), [("fused", 1152), ("split", 256)])
def test_rv_models_plan_through_the_planner(small_device, monkeypatch, layout, batch):
    """Models per launch from the budget (the split layout's velocities take
    most of it): the statistics of one launch."""
    rng = np.random.default_rng(24)
    t = np.sort(rng.uniform(0, 300, 40))
    obs = Observations.build(t, rng.normal(0, 5, 40), np.full(40, 2.0))
    n = 3000
    params = np.stack([rng.uniform(2, 100, (n, 2)), rng.uniform(1, 30, (n, 2)),
                       rng.uniform(0, 0.6, (n, 2)), rng.uniform(-3, 3, (n, 2)),
                       rng.uniform(-3, 3, (n, 2))], axis=-1)
    kw = dict(n_planets=2, layout=layout, precision="fp64", device=small_device)
    whole = ModelEvaluator(obs, **kw)
    assert whole.plan.batch_models == clperiod.kepler.rvmodel.BATCH_MODELS
    _budget(monkeypatch, small_device, 300_000)
    split = ModelEvaluator(obs, **kw)
    assert split.plan.batch_models == batch
    np.testing.assert_array_equal(split(params)["statistic"], whole(params)["statistic"])
