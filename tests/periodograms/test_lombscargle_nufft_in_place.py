"""A NUFFT search of one light curve given as arrays: its catalog copies and checks the
columns into page-locked memory, which the device uploads from in place, and the result
gets a copy of its own (made while the device works). A catalog's page-locked copy
(Catalog.page_locked) is uploaded in place too."""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import Catalog
from clperiod.catalog import relocated, single_catalog
from clperiod.engine import staging
from clperiod.engine.staging import PINNED_POOL
from clperiod.periodograms import lombscargle as LS_MODULE

N = 20_000
GRID = clperiod.FrequencyGrid(0.01, 2e-4, 3000)


def light_curve(seed: int = 4, ordered: bool = True):
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, 1000, N) + 58000.0
    if ordered:
        t.sort()
    y = np.sin(2 * np.pi * t / 2.7) + rng.normal(0, 1.0, N)
    dy = rng.uniform(0.5, 1.5, N)
    return t, y, dy


def search(data, **options):
    options = {"algorithm": "nufft", "periodogram": True, "top_k": 3, **options}
    if isinstance(data, Catalog):
        return clperiod.lombscargle(data, GRID, **options)
    return clperiod.lombscargle(data[0], GRID, *data[1:], **options)


def assert_same_results(result, expected):
    np.testing.assert_array_equal(result.status, expected.status)
    np.testing.assert_array_equal(result.top_k_power, expected.top_k_power)
    np.testing.assert_array_equal(result.top_k_frequency, expected.top_k_frequency)
    np.testing.assert_array_equal(result.power, expected.power)


def in_page_locked_memory(catalog: Catalog) -> list[bool]:
    return [PINNED_POOL.owns(c) for c in (catalog.t, catalog.y, catalog.dy) if c is not None]


@pytest.fixture
def staged_copies(monkeypatch):
    """Sizes of the arrays that Staging copies into its page-locked block."""
    sizes: list[int] = []
    copy = staging.parallel_copy

    def counted(destination, source):
        sizes.append(np.asarray(source).size)
        copy(destination, source)

    monkeypatch.setattr(staging, "parallel_copy", counted)
    return sizes


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"precision": "fp32", "normalization": "psd"},
        {"method": "standard", "dy": False},
        {"nterms": 2, "normalization": "model"},
    ],
)
def test_arrays_are_uploaded_in_place_with_the_results_of_a_catalog(
    cpu_device, staged_copies, options
):
    options = dict(options)
    t, y, dy = light_curve()
    data = (t, y) if options.pop("dy", True) is False else (t, y, dy)
    expected = search(Catalog.from_single(*data), **options)
    assert N in staged_copies  # a catalog's columns are copied into the staging block
    staged_copies.clear()
    result = search(data, **options)
    if cpu_device.fp64:  # the device prepares the raw columns
        assert N not in staged_copies
    assert_same_results(result, expected)
    assert not any(in_page_locked_memory(result.catalog))
    assert result.catalog.checked and result.catalog.time_ordered
    np.testing.assert_array_equal(result.catalog.t, t)
    np.testing.assert_array_equal(result.catalog.y, y)


def test_auto_and_unsorted_and_omitted_rows_give_the_results_of_a_catalog(cpu_device):
    t, y, dy = light_curve(seed=5, ordered=False)
    y[[3, 70]] = np.nan
    expected = search(Catalog.from_single(t, y, dy, nan_policy="omit"), nan_policy="omit")
    result = search((t, y, dy), nan_policy="omit")
    assert_same_results(result, expected)
    assert result.catalog.n_dropped == 2 and not result.catalog.time_ordered
    t, y, dy = light_curve(seed=6)
    for algorithm in ("auto", "direct"):
        expected = search(Catalog.from_single(t[:300], y[:300], dy[:300]), algorithm=algorithm)
        assert_same_results(search((t[:300], y[:300], dy[:300]), algorithm=algorithm), expected)


def test_changing_the_arrays_after_the_call_changes_no_result(cpu_device):
    t, y, dy = light_curve(seed=7)
    result = search((t, y, dy))
    kept = result.catalog.t.copy(), result.catalog.y.copy(), result.catalog.dy.copy()
    power, best = result.power.copy(), result.frequency_best.copy()
    t += 0.5
    y[:] = np.cos(2 * np.pi * t / 5.3)
    dy *= 3.0
    again = search((t, y, dy))  # may reuse the page-locked blocks of the first call
    for column, value in zip(
        (result.catalog.t, result.catalog.y, result.catalog.dy), kept, strict=True
    ):
        np.testing.assert_array_equal(column, value)
    np.testing.assert_array_equal(result.power, power)
    np.testing.assert_array_equal(result.frequency_best, best)
    assert_same_results(again, search(Catalog.from_single(t, y, dy)))
    assert abs(again.period[0] - 5.3) < 0.01


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t, y, dy: y.__setitem__(17, np.nan), "non-finite y in object 0 at row 17"),
        (lambda t, y, dy: dy.__setitem__(9, 0.0), "dy <= 0 in object 0 at row 9"),
        (lambda t, y, dy: t.__setitem__(4, np.inf), "non-finite t in object 0 at row 4"),
    ],
)
def test_bad_arrays_raise_before_anything_is_queued(cpu_device, monkeypatch, change, message):
    def refuse(*args, **kwargs):
        raise AssertionError("queued work for bad input")

    monkeypatch.setattr(LS_MODULE.nufft, "search", refuse)
    monkeypatch.setattr(LS_MODULE.workers, "submit", refuse)
    t, y, dy = light_curve(seed=8)
    change(t, y, dy)
    with pytest.raises(ValueError, match=message):
        search((t, y, dy))
    with pytest.raises(ValueError, match="mismatched lengths of object 0: t=20000, y=19999"):
        search((t, y[1:], dy))


def test_without_page_locked_memory_the_catalog_is_its_own(cpu_device, monkeypatch):
    """Page-locking refused (too little host memory): ordinary memory, no second copy."""
    monkeypatch.setattr(staging, "PINNED_FRACTION", 0.0)
    monkeypatch.setattr(LS_MODULE, "PINNED_POOL", staging.PinnedPool())  # none to recycle
    submitted = []
    monkeypatch.setattr(LS_MODULE.workers, "submit", lambda *job: submitted.append(job))
    t, y, dy = light_curve(seed=9)
    result = search((t, y, dy), periodogram=False)
    assert submitted == [] and not any(in_page_locked_memory(result.catalog))
    assert_same_results(result, search(Catalog.from_single(t, y, dy), periodogram=False))


def test_relocated_copies_the_columns_and_keeps_what_is_known(cpu_device):
    t, y, dy = light_curve(seed=10)
    pinned = single_catalog(
        t, y, dy, "raise", lambda shape, dtype: PINNED_POOL.empty(cpu_device, shape, dtype)
    )
    assert all(in_page_locked_memory(pinned))
    moved = relocated(pinned)
    assert not any(in_page_locked_memory(moved))
    for name in ("t", "y", "dy"):
        column = getattr(moved, name)
        np.testing.assert_array_equal(column, getattr(pinned, name))
        assert not column.flags.writeable and not np.shares_memory(column, getattr(pinned, name))
    assert moved.checked and "time_ordered" in moved.__dict__ and moved.time_ordered
    np.testing.assert_array_equal(moved.ids, [0])
    np.testing.assert_array_equal(moved.offsets, [0, N])


@pytest.mark.parametrize("algorithm", ["nufft", "direct"])
def test_a_page_locked_catalog_is_uploaded_in_place(cpu_device, staged_copies, algorithm):
    """Catalog.page_locked: the device preparing the points uploads the columns
    where they lie (no staging copy of them), with the results of the catalog."""
    t, y, dy = light_curve(seed=11)
    catalog = Catalog.from_offsets([5, 6, 7], [0, 5000, 12000, N], t, y, dy)
    expected = search(catalog, algorithm=algorithm)
    assert N in staged_copies
    staged_copies.clear()
    locked = catalog.page_locked(cpu_device)
    assert all(PINNED_POOL.owns(c, cpu_device) for c in (locked.t, locked.y, locked.dy))
    result = search(locked, algorithm=algorithm)
    if cpu_device.fp64:
        assert N not in staged_copies
    assert_same_results(result, expected)
