"""Host memory: up-front checks, plans that fit, and page-locked memory only where it is safe."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pyopencl as cl
import pytest

import clperiod
from clperiod.engine import planner as planning
from clperiod.engine import staging
from clperiod.io import load_example
from clperiod.periodograms import lombscargle as LS_MODULE
from two_devices import run_on_two_devices

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 3000)


@pytest.fixture(scope="module")
def catalog():
    return load_example("stripe82").subset(np.arange(12))


@pytest.mark.parametrize("search", [clperiod.lombscargle, clperiod.supersmoother])
def test_periodograms_beyond_the_available_memory_are_refused_up_front(
        catalog, monkeypatch, cpu_device, search):
    """12 objects x 3000 frequencies in fp64 need 288,000 bytes: with less
    available, a clear MemoryError naming the size and the options that avoid
    it, before anything is planned or computed."""
    monkeypatch.setattr(staging, "available_host_memory", lambda: 200_000)
    message = (r"the periodograms of 12 objects x 3000 frequencies \(float64\) need 0\.00 GiB "
               r"of host memory, but 0\.00 GiB are available: search fewer objects at a time "
               r".*periodogram=False keeps the best peaks only")
    with pytest.raises(MemoryError, match=message):
        search(catalog, GRID, periodogram=True, device=cpu_device)
    monkeypatch.undo()
    result = search(catalog, GRID, periodogram=True, device=cpu_device)
    assert result.power.shape == (12, 3000)


def test_a_cpu_device_plans_within_the_available_host_memory(catalog, monkeypatch, cpu_device):
    """A CPU device's buffers are host memory: its plan shrinks with what is
    available (less the periodograms the host allocates) and still gives the
    same periodograms."""
    if cpu_device.kind != "cpu":
        pytest.skip("the host-memory cap applies to CPU devices")
    expected = clperiod.lombscargle(catalog, GRID, periodogram=True, device=cpu_device)
    plans = []
    plan = planning.plan_batches
    monkeypatch.setattr(LS_MODULE, "plan_batches",
                        lambda *a, **k: plans.append(plan(*a, **k)) or plans[-1])
    result_bytes = expected.power.nbytes
    monkeypatch.setattr(staging, "available_host_memory", lambda: result_bytes + 400_000)
    assert planning.plannable_memory(cpu_device, result_bytes) == 200_000
    small = clperiod.lombscargle(catalog, GRID, periodogram=True, device=cpu_device)
    assert sum(len(batch.chunks) for batch in plans[-1]) > 1
    np.testing.assert_array_equal(small.power, expected.power)
    np.testing.assert_array_equal(small.frequency_best, expected.frequency_best)


def test_page_locked_memory_only_while_the_host_can_spare_it(catalog, monkeypatch, cpu_device):
    """Page-locked buffers are not asked for beyond half the available memory,
    and a refused one falls back to pageable memory: same periodograms."""
    expected = clperiod.lombscargle(catalog, GRID, periodogram=True, device=cpu_device)
    asked = []
    pinned_block = staging._pinned_block
    monkeypatch.setattr(staging, "_pinned_block",
                        lambda info, context, n: asked.append(n) or pinned_block(info, context, n))
    monkeypatch.setattr(staging, "available_host_memory", lambda: 2 * expected.power.nbytes - 8)
    pool = staging.PinnedPool()
    array = pool.empty(cpu_device, expected.power.shape, np.float64)
    assert asked == [] and not pool.owns(array) and array.shape == (12, 3000)
    monkeypatch.setattr(staging, "PINNED_POOL", pool)
    pageable = clperiod.lombscargle(catalog, GRID, periodogram=True, device=cpu_device)
    assert expected.power.nbytes not in asked and not pool.owns(pageable.power)
    np.testing.assert_array_equal(pageable.power, expected.power)

    def refused(info, context, nbytes):
        raise cl.MemoryError("clCreateBuffer failed: MEM_OBJECT_ALLOCATION_FAILURE")

    monkeypatch.setattr(staging, "_pinned_block", refused)
    monkeypatch.setattr(staging, "available_host_memory", lambda: 1 << 40)
    fallback = clperiod.lombscargle(catalog, GRID, periodogram=True, device=cpu_device)
    assert not pool.owns(fallback.power)
    np.testing.assert_array_equal(fallback.power, expected.power)


def test_available_host_memory_is_the_least_of_what_limits_it(monkeypatch):
    monkeypatch.setattr(staging, "_system_available", lambda: 8 << 30)
    monkeypatch.setattr(staging, "_cgroup_room", lambda: None)
    monkeypatch.setattr(staging, "_address_space_room", lambda: None)
    assert staging.available_host_memory() == 8 << 30
    monkeypatch.setattr(staging, "_cgroup_room", lambda: 3 << 30)
    monkeypatch.setattr(staging, "_address_space_room", lambda: 5 << 30)
    assert staging.available_host_memory() == 3 << 30
    monkeypatch.setattr(staging, "_address_space_room", lambda: -(1 << 20))
    assert staging.available_host_memory() == 0
    monkeypatch.undo()
    with open("/proc/meminfo") as handle:
        mem_available = next(int(line.split()[1]) * 1024 for line in handle
                             if line.startswith("MemAvailable:"))
    assert 0 < staging.available_host_memory() <= 1.1 * mem_available


def test_cgroup_room_counts_reclaimable_page_cache_as_free(tmp_path):
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.current").write_text("805306368\n")
    (tmp_path / "memory.stat").write_text("anon 1\ninactive_file 134217728\nactive_file 5\n")
    room = staging._cgroup_directory_room(tmp_path, "memory.max", "memory.current",
                                           "inactive_file")
    assert room == (1 << 30) - (768 << 20) + (128 << 20)
    (tmp_path / "memory.max").write_text("max\n")
    assert staging._cgroup_directory_room(tmp_path, "memory.max", "memory.current",
                                           "inactive_file") is None


_UNDER_LIMIT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import clperiod

    room = int(sys.argv[1]) << 20
    rng = np.random.default_rng(1)
    t = np.sort(rng.uniform(0, 50, (128, 5)), axis=1)
    cat = clperiod.Catalog.from_lightcurves([(t[k], np.sin(t[k] * (1 + k % 7)))
                                             for k in range(128)])
    grid = clperiod.FrequencyGrid.from_range(0.1, 5.0, 160_000)  # 156 MiB of periodograms
    first = clperiod.lombscargle(cat.slice(0, 4), grid, periodogram=True).power
    pages = int(open("/proc/self/statm").read().split()[0])
    limit = pages * resource.getpagesize() + room
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
    try:
        power = clperiod.lombscargle(cat, grid, periodogram=True).power
    except MemoryError as error:
        print("MemoryError:", error)
    else:
        print("same" if np.array_equal(power[:4], first) else "different")
""")


@pytest.mark.slow
@pytest.mark.parametrize(("room_mib", "outcome"), [(170, "same"), (100, "MemoryError: the")])
def test_an_address_space_limit_gives_results_or_a_memory_error(cpu_device, room_mib, outcome):
    """Under ``ulimit -v`` (RLIMIT_AS) with room for the periodograms but not
    twice as much, PoCL used to abort the process (an assertion on a page-
    locked buffer it could not back); now the search plans inside the limit,
    and a limit below the periodograms is a MemoryError."""
    if cpu_device.kind != "cpu":
        pytest.skip("the abort was PoCL's; GPU drivers reserve address space of their own")
    done = subprocess.run([sys.executable, "-c", _UNDER_LIMIT, str(room_mib)],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(outcome), done.stdout


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def test_host_pool_recycles_large_arrays_only():
    pool = staging.HostPool(max_free_bytes=5 << 20)
    first = pool.empty((250_000,), np.float64)  # 2 MB
    first[:] = 2.0
    address = _address(first)
    view = first[10:]
    del first
    assert pool._take(0, 2_000_000) is None  # a view is alive
    assert view[0] == 2.0
    del view
    again = pool.empty((240_000,), np.float64)
    assert _address(again) == address and again.shape == (240_000,)
    small = pool.empty((1000,), np.float64)
    assert small.base is None  # ordinary memory, not pooled
    other = pool.empty((250_000,), np.float64)
    assert _address(other) != address
    third = pool.empty((250_000,), np.float64)
    addresses = [_address(a) for a in (again, other, third)]
    del again, other, third  # 6 MB come back; 5 MB may stay: the two returned last
    assert pool._take(0, 2_000_000) is not None and pool._take(0, 2_000_000) is not None
    assert pool._take(0, 2_000_000) is None
    assert len(set(addresses)) == 3


def test_blocks_beyond_what_a_pool_keeps_go_back_at_once(cpu_device):
    """A returned block larger than the bytes a pool keeps is not kept (ordinary
    memory at once, page-locked memory at the pool's next use); release_free
    hands back every free page-locked block."""
    pool = staging.HostPool(max_free_bytes=1 << 20)
    large = pool.empty((300_000,), np.float64)  # 2.4 MB
    del large
    assert not pool._returned and pool._take(0, 2_400_000) is None
    pinned = staging.PinnedPool(max_free_bytes=1 << 20)
    large = pinned.empty(cpu_device, (300_000,), np.float64)
    assert pinned.owns(large)
    address = _address(large)
    del large
    small = pinned.empty(cpu_device, (1000,), np.float64)  # files what came back
    key = clperiod.engine.devices.get_context(cpu_device).int_ptr
    assert address not in pinned._buffers and pinned._take(key, 2_400_000) is None
    kept = [pinned.empty(cpu_device, (50_000,), np.float64) for _ in range(2)]  # 400 kB each
    del kept, small
    pinned.release_free()
    assert not pinned._buffers and not pinned._free


def test_parts_finish_before_a_failed_part_is_raised(monkeypatch):
    """in_parts raises only once every part has stopped writing."""
    monkeypatch.setattr(staging, "_COPY_WORKERS", 4)
    done = []

    def work(lo, hi):
        if lo == 0:
            raise KeyboardInterrupt
        time.sleep(0.05)
        done.append(lo)

    with pytest.raises(KeyboardInterrupt):
        staging.in_parts(4 * staging._COPY_PART, work)
    assert len(done) == 3


def test_catalog_columns_are_recycled_host_memory(monkeypatch):
    pool = staging.HostPool(max_free_bytes=64 << 20)
    monkeypatch.setattr(clperiod.catalog, "HOST_POOL", pool)
    rng = np.random.default_rng(2)
    t, y, dy = np.sort(rng.uniform(0, 9, 300_000)), rng.normal(size=300_000), np.ones(300_000)
    first = clperiod.Catalog.from_single(t, y, dy)
    addresses = {_address(first.t), _address(first.y), _address(first.dy)}
    del first
    again = clperiod.Catalog.from_single(t, y, dy)
    assert {_address(again.t), _address(again.y), _address(again.dy)} == addresses
    np.testing.assert_array_equal(again.dy, dy)
    assert not again.t.flags.writeable and not np.shares_memory(again.t, t)
PINNED_CONTEXTS = r"""
import json
import numpy as np
import clperiod
from clperiod.engine.staging import PINNED_POOL, result_array

first, second = clperiod.select_devices("cpu")
array = PINNED_POOL.empty(first, (1000,), np.float64)
print(json.dumps({"any": PINNED_POOL.owns(array), "first": PINNED_POOL.owns(array, first),
                  "second": PINNED_POOL.owns(array, second),
                  "pageable": PINNED_POOL.owns(np.ones(1000), first),
                  "periodograms_one": PINNED_POOL.owns(result_array([first], (4, 1000), "f4")),
                  "periodograms_two": PINNED_POOL.owns(
                      result_array([first, second], (4, 1000), "f4"))}))
"""


@pytest.mark.slow
def test_page_locked_memory_belongs_to_one_devices_context():
    """Memory page-locked through one device's context is page-locked for that
    device's copies only (another device copies it as pageable memory), so
    periodograms that two such devices fill go to ordinary memory."""
    owned = run_on_two_devices(PINNED_CONTEXTS)
    assert owned == {"any": True, "first": True, "second": False, "pageable": False,
                     "periodograms_one": True, "periodograms_two": False}


@pytest.mark.gpu
def test_nvidia_gpus_share_page_locked_memory():
    """On the NVIDIA platform memory page-locked through one GPU's context is page-locked
    for every GPU's copies (two GPUs needed), periodograms that both fill included;
    elsewhere it stays the first context's only (above)."""
    gpus = [info for info in clperiod.select_devices("all") if info.is_nvidia]
    if len(gpus) < 2:
        pytest.skip("needs two NVIDIA GPUs")
    array = staging.PINNED_POOL.empty(gpus[0], (1000,), np.float64)
    assert all(staging.PINNED_POOL.owns(array, info) for info in gpus)
    assert not staging.PINNED_POOL.owns(np.ones(1000), gpus[1])
    power = staging.result_array(gpus, (4, 1000), np.float32)
    assert all(staging.PINNED_POOL.owns(power, info) for info in gpus)
