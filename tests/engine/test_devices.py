"""Tests for device discovery, selection, contexts/queues, the report and ``clperiod info``.

They run on the real OpenCL devices of the machine (PoCL's CPU device in CI);
failures of other runtimes are simulated by monkeypatching the probe or
``cl.get_platforms``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyopencl as cl
import pytest

from clperiod import cli
from clperiod.engine import devices as device
from clperiod.engine.devices import DeviceWarning, describe, list_devices, select_devices

ROOT = Path(__file__).absolute().parents[2]
POCL_BUILD_ERROR = (
    "clBuildProgram failed: BUILD_PROGRAM_FAILURE - "
    "clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
    "Build on <pyopencl.Device 'Broken CPU' on 'Broken Platform' at 0x1>:\n\n"
    "error: unknown target CPU 'generic'\n"
    "Device Broken CPU failed to build the program\n"
)


class _BrokenDevice:
    """Stand-in for a device whose runtime cannot compile (the probe is patched)."""

    name = "Broken CPU"


class _BrokenPlatform:
    """Stand-in platform holding one :class:`_BrokenDevice`."""

    def __init__(self, name: str = "Broken Platform") -> None:
        self.name = name
        self.version = "OpenCL 3.0 fake"

    def get_devices(self) -> list[_BrokenDevice]:
        return [_BrokenDevice()]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLPERIOD_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget the cached probe results for this test (restored afterwards)."""
    monkeypatch.setattr(device, "_discovery", None)


def _add_broken_platform(monkeypatch: pytest.MonkeyPatch, name: str = "Broken Platform") -> int:
    """Append a platform whose only device fails the probe; return its index."""
    real_platforms = cl.get_platforms()
    real_probe = device._probe

    def probe(dev: cl.Device) -> int:
        if isinstance(dev, _BrokenDevice):
            raise cl.RuntimeError(POCL_BUILD_ERROR)
        return real_probe(dev)

    monkeypatch.setattr(cl, "get_platforms", lambda: [*real_platforms, _BrokenPlatform(name)])
    monkeypatch.setattr(device, "_probe", probe)
    monkeypatch.setattr(device, "_discovery", None)
    return len(real_platforms)


@pytest.fixture
def with_broken_platform(monkeypatch: pytest.MonkeyPatch) -> int:
    return _add_broken_platform(monkeypatch)


def fake_device(**fields) -> device.DeviceInfo:
    """A copy of the first real device with some facts replaced."""
    info = list_devices()[0]
    return type(info)(**{**info.__dict__, **fields})


def _index_selector(info: device.DeviceInfo) -> str:
    return f"{info.platform_index}:{info.device_index}"


# ----------------------------------------------------------------- discovery and facts


def test_devices_have_sane_facts() -> None:
    devices = list_devices()
    assert devices
    for info in devices:
        assert info.kind in {"gpu", "cpu", "accelerator", "other"}
        assert info.label.startswith(f"{_index_selector(info)} {info.name} (")
        assert info.global_mem >= info.max_alloc > 0
        assert info.local_mem > 0 and info.compute_units > 0
        assert info.max_work_group_size >= info.preferred_wg_multiple >= 1
        has_fp64 = "cl_khr_fp64" in info.device.extensions or info.device.double_fp_config != 0
        assert info.fp64 == has_fp64


def test_probe_results_are_cached() -> None:
    assert list_devices() == list_devices()
    assert device._discover() is device._discover()


# ----------------------------------------------------------------- selection grammar


def test_select_kind_words() -> None:
    for kind in {d.kind for d in list_devices()} & {"cpu", "gpu", "accelerator"}:
        assert select_devices(kind.upper()) == [d for d in list_devices() if d.kind == kind]


def test_select_all() -> None:
    assert select_devices("all") == list_devices()


def test_select_platform_and_device_index() -> None:
    for info in list_devices():
        assert select_devices(_index_selector(info)) == [info]
    if any((d.platform_index, d.device_index) == (0, 0) for d in list_devices()):
        assert select_devices("0:0")[0].device == cl.get_platforms()[0].get_devices()[0]


def test_select_platform_index() -> None:
    info = list_devices()[0]
    chosen = select_devices(str(info.platform_index))
    assert info in chosen
    assert {d.platform_index for d in chosen} == {info.platform_index}


def test_select_name_substring_case_insensitive() -> None:
    info = list_devices()[0]
    fragment = info.name[len(info.name) // 4 : len(info.name) // 4 + 6].swapcase()
    chosen = select_devices(fragment)
    assert info in chosen
    assert all(fragment.lower() in d.name.lower() for d in chosen)


def test_select_platform_name_substring() -> None:
    """A word matching no device name falls back to the platform names."""
    alpha = fake_device(name="Alpha Engine", platform_name="Foo Compute", platform_index=0)
    beta = fake_device(name="Beta Foo", platform_name="Bar Compute", platform_index=1)
    devices = [alpha, beta]
    assert device._match_token("compute", devices) == devices
    assert device._match_token("bar", devices) == [beta]
    assert device._match_token("foo", devices) == [beta]  # a device name wins
    assert device._match_token("alpha", devices) == [alpha]


def test_select_vendor_word() -> None:
    intel = fake_device(vendor="GenuineIntel", platform_name="Portable Computing Language")
    amd = fake_device(vendor="Advanced Micro Devices, Inc.", platform_name="AMD APP")
    nvidia = fake_device(vendor="NVIDIA Corporation", platform_name="NVIDIA CUDA")
    devices = [intel, amd, nvidia]
    assert device._match_token("intel", devices) == [intel]
    assert device._match_token("amd", devices) == [amd]
    assert device._match_token("nvidia", devices) == [nvidia]
    assert device._match_token("apple", devices) == []


def test_comma_list_is_ordered_union_without_duplicates() -> None:
    first = list_devices()[0]
    chosen = select_devices(f" {_index_selector(first)} , all,{_index_selector(first)}")
    assert chosen[0] == first
    assert len(chosen) == len({d.device for d in chosen}) == len(list_devices())


def test_select_explicit_objects() -> None:
    info = list_devices()[0]
    assert select_devices(info) == [info]
    assert select_devices(info.device) == [info]
    copy = dataclasses.replace(info)
    assert select_devices([info, info.device, copy, _index_selector(info)]) == [info]


@pytest.mark.parametrize("selection", ["nonsense-device", "all,nonsense-device", "", "7:7", []])
def test_nonsense_selection_lists_devices(selection: str | list) -> None:
    with pytest.raises(ValueError, match="matches no usable OpenCL device") as err:
        select_devices(selection)
    for info in list_devices():
        assert info.label in str(err.value)


def test_wrong_selection_type() -> None:
    with pytest.raises(TypeError):
        select_devices(3.5)  # type: ignore[arg-type]


# ----------------------------------------------------------------- defaults and environment


def _fake_devices(monkeypatch: pytest.MonkeyPatch, *changes: dict) -> list[device.DeviceInfo]:
    """Replace the discovered devices by copies of a real one with ``changes`` applied."""
    real = list_devices()[0]
    fakes = [dataclasses.replace(real, device_index=i, **c) for i, c in enumerate(changes)]
    found = device._Discovery(platforms=(), usable=tuple(fakes), skipped=(), platform_error=None)
    monkeypatch.setattr(device, "_discovery", found)
    return fakes


def test_default_prefers_nvidia_then_gpu_then_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = {"kind": "cpu", "is_nvidia": False, "compute_units": 256}
    amd = {"kind": "gpu", "is_nvidia": False, "compute_units": 200}
    nv_small = {"kind": "gpu", "is_nvidia": True, "compute_units": 8}
    nv_big = {"kind": "gpu", "is_nvidia": True, "compute_units": 132}
    for changes, expected in [
        ((cpu, amd, nv_small, nv_big), 3),
        ((cpu, nv_small, amd), 1),
        ((cpu, amd), 1),
        ((cpu,), 0),
    ]:
        fakes = _fake_devices(monkeypatch, *changes)
        assert select_devices() == [fakes[expected]]


def test_device_name_match_beats_platform_name(monkeypatch: pytest.MonkeyPatch) -> None:
    by_name, by_platform = _fake_devices(
        monkeypatch,
        {"name": "Foo GPU", "platform_name": "Bar"},
        {"name": "Baz", "platform_name": "Foo platform"},
    )
    assert select_devices("foo") == [by_name]
    assert select_devices("platform") == [by_platform]
    assert select_devices("all") == [by_name, by_platform]


def test_default_selection_is_single_best_device() -> None:
    chosen = select_devices()
    assert len(chosen) == 1
    kinds = {d.kind for d in list_devices()}
    for preferred in ("gpu", "cpu"):
        if preferred in kinds:
            assert chosen[0].kind == preferred
            break


def test_clperiod_device_beats_pyopencl_ctx(monkeypatch: pytest.MonkeyPatch) -> None:
    info = list_devices()[-1]
    monkeypatch.setenv("CLPERIOD_DEVICE", _index_selector(info))
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-platform:no-such-device")
    assert select_devices() == [info]
    assert f"CLPERIOD_DEVICE={_index_selector(info)}" in describe()


def test_explicit_selection_beats_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLPERIOD_DEVICE", "nonsense-device")
    assert select_devices("all") == list_devices()
    with pytest.raises(ValueError, match="CLPERIOD_DEVICE='nonsense-device'"):
        select_devices()


def test_empty_clperiod_device_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLPERIOD_DEVICE", "  ")
    monkeypatch.setenv("PYOPENCL_CTX", _index_selector(list_devices()[0]))
    assert select_devices() == [list_devices()[0]]


def test_pyopencl_ctx_used_when_clperiod_device_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    info = list_devices()[-1]
    monkeypatch.setenv("PYOPENCL_CTX", _index_selector(info))
    assert select_devices() == [info]
    assert f"reason: PYOPENCL_CTX={_index_selector(info)}" in describe()
    monkeypatch.setenv("PYOPENCL_CTX", str(info.platform_index))  # pyopencl: device 0
    assert select_devices()[0].device_index == 0


def test_pyopencl_ctx_name_substrings(monkeypatch: pytest.MonkeyPatch) -> None:
    info = list_devices()[0]
    monkeypatch.setenv("PYOPENCL_CTX", f"{info.platform_index}:{info.name[:5].upper()}")
    assert select_devices()[0].name.lower().startswith(info.name[:5].lower())


@pytest.mark.parametrize("spec", ["no-such-platform", "0:no-such-device", "0:0:0"])
def test_pyopencl_ctx_not_matching_raises(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    with pytest.raises(ValueError, match="PYOPENCL_CTX"):
        select_devices()


# ----------------------------------------------------------------- probe failures


def test_failing_device_is_skipped_with_warning(with_broken_platform: int) -> None:
    with pytest.warns(DeviceWarning, match="Broken CPU") as record:
        usable = list_devices()
    messages = [str(w.message) for w in record if w.category is DeviceWarning]
    assert len(messages) == 1 and "unknown target CPU 'generic'" in messages[0]
    assert all(d.platform_index != with_broken_platform for d in usable)
    label, reason = device.skipped_devices()[0]
    assert label == f"{with_broken_platform}:0 Broken CPU (Broken Platform)"
    assert reason == (
        "clBuildProgram failed: BUILD_PROGRAM_FAILURE; error: unknown target CPU 'generic'"
    )
    report = describe()
    assert f"platform {with_broken_platform}: Broken Platform" in report
    assert f"probe: skipped: {reason}" in report


def test_selecting_a_skipped_device_explains_why(with_broken_platform: int) -> None:
    with pytest.warns(DeviceWarning):
        list_devices()
    with pytest.raises(ValueError, match="unknown target CPU 'generic'"):
        select_devices("broken cpu")
    with pytest.raises(ValueError, match="Skipped devices"):
        select_devices(f"{with_broken_platform}:0")


def test_pyopencl_ctx_last_matching_platform_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """A later platform of the same name shadows the first, as in pyopencl."""
    first = list_devices()[0]
    twin_index = _add_broken_platform(monkeypatch, name=first.platform_name)
    monkeypatch.setenv("PYOPENCL_CTX", first.platform_name.upper())
    with pytest.warns(DeviceWarning), pytest.raises(ValueError, match=f"of platform {twin_index}"):
        select_devices()
    monkeypatch.setenv("PYOPENCL_CTX", str(first.platform_index))
    assert select_devices()[0].device == first.device


def test_every_device_failing_raises(monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    def probe(dev: cl.Device) -> int:
        raise cl.RuntimeError(POCL_BUILD_ERROR)

    monkeypatch.setattr(device, "_probe", probe)
    with pytest.warns(DeviceWarning), pytest.raises(RuntimeError, match="every device") as err:
        list_devices()
    assert "unknown target CPU 'generic'" in str(err.value)
    assert "pocl-opencl-icd" in str(err.value)
    assert "selected: none" in describe()


def test_platform_whose_devices_cannot_be_listed(
    monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    broken = _BrokenPlatform()

    def get_devices() -> list:
        raise cl.LogicError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")

    broken.get_devices = get_devices  # type: ignore[method-assign]
    real_platforms = cl.get_platforms()
    monkeypatch.setattr(cl, "get_platforms", lambda: [*real_platforms, broken])
    with pytest.warns(DeviceWarning, match="DEVICE_NOT_FOUND"):
        assert list_devices()
    label = f"{len(real_platforms)}:* (all devices) (Broken Platform)"
    assert device.skipped_devices() == [(label, "clGetDeviceIDs failed: DEVICE_NOT_FOUND")]


@pytest.mark.parametrize(
    "failure",
    [
        cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR"),
        RuntimeError("no ICD"),
        None,
    ],
)
def test_no_platform_gives_install_hint(
    monkeypatch: pytest.MonkeyPatch, fresh: None, failure: Exception | None
) -> None:
    def get_platforms() -> list:
        if failure is not None:
            raise failure
        return []

    monkeypatch.setattr(cl, "get_platforms", get_platforms)
    for call in (list_devices, select_devices):
        with pytest.raises(RuntimeError, match="No OpenCL platform found") as err:
            call()
        assert "pocl-opencl-icd" in str(err.value)
    assert describe().startswith("No OpenCL platform found")
    assert cli.main(["info"]) == 1


# ----------------------------------------------------------------- contexts and queues


def test_context_is_cached_per_device() -> None:
    info = list_devices()[0]
    context = device.get_context(info)
    assert device.get_context(info) is context
    assert context.devices == [info.device]


def test_queue_is_cached_per_device_profiling_and_thread() -> None:
    info = list_devices()[0]
    plain = device.get_queue(info)
    profiled = device.get_queue(info, profiling=True)
    assert device.get_queue(info) is plain and device.get_queue(info, True) is profiled
    assert profiled is not plain
    assert profiled.properties & cl.command_queue_properties.PROFILING_ENABLE
    assert not plain.properties & cl.command_queue_properties.PROFILING_ENABLE
    assert plain.context == profiled.context == device.get_context(info)
    other: list[cl.CommandQueue] = []
    thread = threading.Thread(target=lambda: other.append(device.get_queue(info)))
    thread.start()
    thread.join()
    assert other[0] is not plain


def test_queues_and_pools_of_ended_threads_are_dropped() -> None:
    """A thread's own queue and memory pool go once the thread has ended and
    another thread asks for a new one (a thread per task leaks nothing)."""
    info = list_devices()[0]
    ended: list[int] = []

    def task() -> None:
        device.get_queue(info, role="per-task")
        device.thread_memory_pool(info)
        ended.append(threading.get_ident())

    for _ in range(3):
        thread = threading.Thread(target=task)
        thread.start()
        thread.join()
    kept = device.get_queue(info, role="after the tasks")
    assert not [k for k in device._queues if k[3] in ended and k[3] != threading.get_ident()]
    assert not [k for k in device._pools if k[1] in ended and k[1] != threading.get_ident()]
    assert device.get_queue(info, role="after the tasks") is kept
    assert device.memory_pool(info) is device.memory_pool(info)


def test_a_thread_that_threading_did_not_start_keeps_its_queue() -> None:
    """A thread started by _thread (or C code) is not listed by threading until
    it asks for a queue; from then on its queue is kept while it lives."""
    import _thread

    info = list_devices()[0]
    got, done = [], threading.Event()
    release = threading.Event()

    def foreign() -> None:
        got.append(device.get_queue(info, role="foreign"))
        done.set()
        release.wait(30)
        got.append(device.get_queue(info, role="foreign"))
        done.set()

    _thread.start_new_thread(foreign, ())
    assert done.wait(30)
    done.clear()
    device.get_queue(info, role="asked meanwhile")  # a new queue: ended threads are swept
    release.set()
    assert done.wait(30) and got[0] is got[1]


def test_many_threads_pools_together_keep_at_most_a_quarter_of_the_device() -> None:
    """Each thread's pool keeps what its last call freed, up to 1/8 of the device
    memory; once the device's pools together hold more than 1/4, a pool trimmed
    at the end of an item gives its memory back."""
    info = dataclasses.replace(list_devices()[0], global_mem=8 << 20)  # 1/8: 1 MiB
    held: list[int] = []
    all_hold = threading.Barrier(3, timeout=30)

    def call() -> None:
        pool = device.thread_memory_pool(info)
        pool.allocate(900 << 10).release()  # 0.9 MiB freed into the thread's pool
        all_hold.wait()
        all_hold.wait()  # every pool holds its block now
        device.trim_memory_pool(info, pool)
        held.append(pool.managed_bytes - pool.active_bytes)
        all_hold.wait()

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(held) == 3 and min(held) == 0


FORKED = r"""
import json, multiprocessing, sys
import numpy as np
import clperiod

def search(_):
    t = np.linspace(0.0, 30.0, 100)
    grid = clperiod.FrequencyGrid.from_range(0.1, 2.0, 50)
    try:
        return float(clperiod.lombscargle(t, grid, np.sin(t)).frequency_best[0])
    except RuntimeError as error:
        return str(error)

fork = multiprocessing.get_context("fork")
with fork.Pool(1) as pool:
    before = pool.map(search, [0])[0]
in_parent = search(0)
with fork.Pool(1) as pool:
    after = pool.map(search, [0])[0]
print(json.dumps({"before": before, "parent": in_parent, "after": after}))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_a_child_forked_after_opencl_started_is_told_to_spawn():
    """OpenCL does not survive fork (PoCL's calls wait forever in the child):
    a child forked before the parent used OpenCL searches; one forked after
    gets an error that names the remedy."""
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["before"] == found["parent"] and isinstance(found["parent"], float)
    assert "forked after its parent used OpenCL" in found["after"]
    assert "spawn" in found["after"]


# ----------------------------------------------------------------- report and CLI


def test_describe_mentions_selected_device_and_reason() -> None:
    report = describe()
    chosen = select_devices()[0]
    assert f"selected: {chosen.label}" in report
    assert "reason: default preference: NVIDIA CUDA GPU > GPU > CPU" in report
    assert "probe: ok" in report and "fp64 " in report


def _run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"CLPERIOD_DEVICE", "PYOPENCL_CTX"}}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "clperiod", *args],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )


@pytest.mark.slow
def test_cli_info_subprocess() -> None:
    result = _run_cli("info")
    assert result.returncode == 0, result.stderr
    assert select_devices()[0].name in result.stdout
    assert "selected:" in result.stdout


@pytest.mark.slow
def test_cli_info_json_subprocess() -> None:
    result = _run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    usable = [f for f in facts if f["usable"]]
    assert [f["label"] for f in usable] == [d.label for d in list_devices()]
    assert sum(f["selected"] for f in usable) == 1
    assert {"fp64", "global_mem", "preferred_wg_multiple", "kind"} <= set(usable[0])


def test_cli_info_bad_selection_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CLPERIOD_DEVICE", "nonsense-device")
    assert cli.main(["info", "--json"]) == 1
    assert not any(f.get("selected") for f in json.loads(capsys.readouterr().out))


def test_cli_requires_a_command() -> None:
    assert cli.build_parser().parse_args(["info", "--json"]).json is True
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
