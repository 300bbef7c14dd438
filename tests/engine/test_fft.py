"""Batched complex FFTs of device arrays (clperiod.engine.fft): VkFFT and the host method."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import pytest

from clperiod.engine import fft
from clperiod.engine.devices import get_queue

ROOT = Path(__file__).resolve().parents[2]

# max |error| / max |reference| over a row set; rounding grows like log n
TOLERANCE = {np.complex64: 2e-6, np.complex128: 1e-14}


@pytest.fixture
def queue(cpu_device) -> cl.CommandQueue:
    return get_queue(cpu_device)


@pytest.fixture(autouse=True)
def _fresh_caches():
    fft.clear_plans()
    fft._probes.clear()
    yield
    fft.clear_plans()
    fft._probes.clear()


@pytest.fixture
def vkfft_queue(queue) -> cl.CommandQueue:
    reason = fft.unavailable_reason(queue)
    if reason is not None:
        pytest.skip(f"VkFFT is not usable here: {reason}")
    return queue


def _rows(rng, shape, dtype) -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _reference(rows: np.ndarray, isign: int) -> np.ndarray:
    wide = rows.astype(np.complex128)
    if isign > 0:
        return np.fft.ifft(wide, axis=-1, norm="forward")
    return np.fft.fft(wide, axis=-1)


def _relative_error(queue, rows, isign, method) -> float:
    array = cla.to_device(queue, rows)
    fft.fft_inplace(queue, array, isign=isign, method=method)
    expected = _reference(rows, isign)
    return float(np.max(np.abs(array.get(queue=queue) - expected)) / np.max(np.abs(expected)))


def _long_smooth_length(device: cl.Device) -> int:
    """The shortest 2^a 3^b 5^c row longer than the device's local memory in complex64."""
    limit = device.local_mem_size // 8
    return min(2**a * 3**b * 5**c for a in range(40) for b in range(25) for c in range(18)
               if 2**a * 3**b * 5**c > limit)


# ------------------------------------------------------------------ sign and normalisation
@pytest.mark.parametrize("method", ["host", "auto"])
@pytest.mark.parametrize("isign", [1, -1])
def test_shifted_impulse_gives_the_signed_unnormalised_exponential(queue, method, isign):
    n = 12
    impulse = np.zeros((2, n), np.complex128)
    impulse[:, 1] = 1
    array = cla.to_device(queue, impulse)
    fft.fft_inplace(queue, array, isign=isign, method=method)
    k = np.arange(n)
    np.testing.assert_allclose(array.get(queue=queue), np.exp(isign * 2j * np.pi * k / n)[None]
                               * np.ones((2, 1)), rtol=0, atol=1e-14)


# ------------------------------------------------------------------ host method
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("shape", [(1250,), (3, 1031), (2, 7)])
@pytest.mark.parametrize("isign", [1, -1])
def test_host_method_matches_numpy(queue, rng, dtype, shape, isign):
    rows = _rows(rng, shape, dtype)
    assert _relative_error(queue, rows, isign, "host") <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("shape", [(6000,), (3, 4096), (2, 1250)])
@pytest.mark.parametrize("isign", [1, -1])
def test_host_four_step_matches_numpy(queue, rng, monkeypatch, dtype, shape, isign):
    """Rows in the four-step window (moved down to these lengths) are transformed
    by it, to the whole transform's accuracy."""
    monkeypatch.setattr(fft, "FOUR_STEP_MIN", 1000)
    calls = []
    four_step = fft._four_step
    monkeypatch.setattr(fft, "_four_step", lambda *args: calls.append(args) or four_step(*args))
    rows = _rows(rng, shape, dtype)
    assert _relative_error(queue, rows, isign, "host") <= TOLERANCE[dtype]
    assert len(calls) == 1


def test_four_step_splits_only_long_rows_with_a_divisor_near_the_root():
    assert fft._four_step_columns(2_000_000) == 1250  # 1250 x 1600
    assert fft._four_step_columns(4_000_000) == 2000
    assert fft._four_step_columns(24_000_000) == 4800
    assert fft._four_step_columns(1 << 20) is None  # not above FOUR_STEP_MIN
    assert fft._four_step_columns(2 * fft.FOUR_STEP_MAX) is None
    assert fft._four_step_columns(1_048_583) is None  # a prime
    assert fft._four_step_columns(2 * 1_048_573) is None  # 2 x a prime


def test_host_method_keeps_the_dtype(queue, rng):
    array = cla.to_device(queue, _rows(rng, (2, 64), np.complex64))
    fft.fft_inplace(queue, array, method="host")
    assert array.dtype == np.complex64 and array.shape == (2, 64)


# ------------------------------------------------------------------ VkFFT
# run in a child process: were VkFFT ever to overflow PoCL's thread stacks on some CPU, that
# kills the process, and it must fail this test, not end the test session
LONG_ROWS_CHILD = """
import json, sys
import numpy as np, pyopencl.array as cla
from clperiod.engine import fft
from clperiod.engine.devices import get_queue, select_devices

queue = get_queue(select_devices()[0])
n = int(sys.argv[1])
rng = np.random.default_rng(5)
errors = {}
for dtype in (np.complex128, np.complex64):
    for isign in (1, -1):
        rows = (rng.standard_normal((2, n)) + 1j * rng.standard_normal((2, n))).astype(dtype)
        array = cla.to_device(queue, rows)
        fft.fft_inplace(queue, array, isign=isign, method="vkfft")
        wide = rows.astype(np.complex128)
        expected = np.fft.ifft(wide, norm="forward") if isign > 0 else np.fft.fft(wide)
        error = np.max(np.abs(array.get() - expected)) / np.max(np.abs(expected))
        errors[f"{np.dtype(dtype).name} {isign:+d}"] = float(error)
print(json.dumps(errors))
"""


@pytest.mark.slow
def test_vkfft_matches_numpy_on_long_batched_rows(vkfft_queue, cpu_device):
    n = _long_smooth_length(vkfft_queue.device)
    device = f"{cpu_device.platform_index}:{cpu_device.device_index}"
    env = dict(os.environ, CLPERIOD_DEVICE=device)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", LONG_ROWS_CHILD, str(n)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-2000:]}"
    errors = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(errors) == ["complex128 +1", "complex128 -1", "complex64 +1", "complex64 -1"]
    for case, error in errors.items():
        assert error <= TOLERANCE[np.dtype(case.split()[0]).type], (case, error)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("shape", [(1250,), (3, 2000), (5, 3072), (2, 1031), (1, 100_003)])
def test_vkfft_matches_numpy_on_a_gpu(vkfft_queue, rng, dtype, shape):
    rows = _rows(rng, shape, dtype)
    assert fft.method_for(vkfft_queue, shape, dtype) == "vkfft"
    assert _relative_error(vkfft_queue, rows, 1, "auto") <= TOLERANCE[dtype]


def test_cpu_devices_use_the_host_and_vkfft_only_on_long_smooth_rows(queue):
    if not queue.device.type & cl.device_type.CPU:
        pytest.skip("the CPU rule applies to CPU devices")
    n = _long_smooth_length(queue.device)
    for shape in [(1250,), (3, 3072), (2, n)]:
        assert fft.method_for(queue, shape, np.complex64) == "host"
    reason = "CPU device" if fft.available(queue) else "pyvkfft"
    for shape in [(1250,), (3, 3072), (1, 300_007), (2, 7 * 11 * 13 * 17 * 19)]:
        with pytest.raises(RuntimeError, match=reason):
            fft.method_for(queue, shape, np.complex128, method="vkfft")
    if fft.available(queue):
        assert fft.method_for(queue, (2, n), np.complex64, method="vkfft") == "vkfft"


def test_plans_are_cached_per_queue_and_bounded(queue, monkeypatch):
    made = []

    def fake_app(queue, shape, dtype):
        made.append(shape)
        return SimpleNamespace(nb_axis_upload=[3], use_bluestein_fft=[False])

    monkeypatch.setattr(fft, "unavailable_reason", lambda queue: None)
    monkeypatch.setattr(fft, "_new_app", fake_app)
    n = _long_smooth_length(queue.device)
    for _ in range(2):
        assert fft.method_for(queue, (1, n), np.complex64, method="vkfft") == "vkfft"
    assert made == [(1, n)]
    for batch in range(2, fft.MAX_PLANS + 4):
        fft.method_for(queue, (batch, n), np.complex64, method="vkfft")
    assert len(fft._plans) == fft.MAX_PLANS
    fft.method_for(queue, (1, n), np.complex64, method="vkfft")  # evicted: planned again
    assert made.count((1, n)) == 2


def test_threads_planning_at_once_leave_stdout_as_it_was(monkeypatch, capsys):
    """pyvkfft's diagnostics are dropped by redirecting ``sys.stdout``; threads
    planning at once take turns, so the process's stdout is restored."""
    entered = threading.Event()

    class Talkative:
        def __init__(self, shape, dtype, queue, **options):
            entered.set()
            print("VkFFT diagnostics")
            time.sleep(0.05)  # planning releases the GIL for a while

    monkeypatch.setattr(fft, "_vkfft_app_class", lambda: Talkative)
    stdout = sys.stdout
    first = threading.Thread(target=fft._new_app, args=(None, (16,), np.complex64))
    first.start()
    entered.wait(5)
    time.sleep(0.01)
    fft._new_app(None, (16,), np.complex128)
    first.join()
    assert sys.stdout is stdout
    print("after")
    assert capsys.readouterr().out == "after\n"


# ------------------------------------------------------------------ without VkFFT
def test_missing_pyvkfft_is_reported_and_the_host_computes(queue, rng, monkeypatch):
    def missing():
        raise ImportError("No module named 'pyvkfft'")

    monkeypatch.setattr(fft, "_vkfft_app_class", missing)
    assert not fft.available(queue)
    assert "clperiod[fft]" in fft.unavailable_reason(queue)
    rows = _rows(rng, (2, 1250), np.complex128)
    assert fft.method_for(queue, rows.shape, rows.dtype) == "host"
    assert _relative_error(queue, rows, 1, "auto") <= TOLERANCE[np.complex128]
    with pytest.raises(RuntimeError, match="pyvkfft is not installed"):
        fft.fft_inplace(queue, cla.to_device(queue, rows), method="vkfft")


def test_failed_plan_warns_and_the_host_computes(queue, rng, monkeypatch):
    def failing_app(queue, shape, dtype):
        raise RuntimeError("VKFFT_ERROR_FAILED_TO_ALLOCATE")

    monkeypatch.setattr(fft, "unavailable_reason", lambda queue: None)
    monkeypatch.setattr(fft, "_new_app", failing_app)
    monkeypatch.setattr(fft, "_is_cpu", lambda device: False)  # "auto" plans on CPUs too
    rows = _rows(rng, (2, 1250), np.complex64)
    with pytest.warns(fft.FFTWarning, match="FAILED_TO_ALLOCATE"):
        error = _relative_error(queue, rows, 1, "auto")
    assert error <= TOLERANCE[np.complex64]


def test_a_plan_short_of_memory_is_tried_again_and_other_failures_are_kept(queue, monkeypatch):
    made = []

    def app(queue, shape, dtype):
        made.append(shape)
        if len(made) == 1:
            raise RuntimeError("VKFFT_ERROR_FAILED_TO_ALLOCATE")
        if shape[0] == 3:
            raise RuntimeError("VKFFT_ERROR_UNSUPPORTED_RADIX")
        return SimpleNamespace(nb_axis_upload=[3], use_bluestein_fft=[False])

    monkeypatch.setattr(fft, "unavailable_reason", lambda queue: None)
    monkeypatch.setattr(fft, "_new_app", app)
    monkeypatch.setattr(fft, "_is_cpu", lambda device: False)
    monkeypatch.setattr(fft, "_plans", collections.OrderedDict())
    n = _long_smooth_length(queue.device)
    with pytest.warns(fft.FFTWarning, match="ALLOCATE"):
        assert fft.method_for(queue, (1, n), np.complex64) == "host"
    assert fft.method_for(queue, (1, n), np.complex64) == "vkfft"
    with pytest.warns(fft.FFTWarning, match="RADIX"):
        assert fft.method_for(queue, (3, n), np.complex64) == "host"
    assert fft.method_for(queue, (3, n), np.complex64) == "host"
    assert made == [(1, n), (1, n), (3, n)]


# ------------------------------------------------------------------ bad input
def test_bad_arrays_and_arguments_are_refused(queue):
    good = cla.zeros(queue, (2, 8), np.complex128)
    with pytest.raises(TypeError, match=r"pyopencl\.array\.Array"):
        fft.fft_inplace(queue, np.zeros(8, np.complex128))
    with pytest.raises(TypeError, match="complex64 or complex128"):
        fft.fft_inplace(queue, cla.zeros(queue, 8, np.float64))
    with pytest.raises(ValueError, match=r"\(n,\) or \(batch, n\)"):
        fft.fft_inplace(queue, cla.zeros(queue, (2, 2, 8), np.complex64))
    with pytest.raises(ValueError, match="must not be empty"):
        fft.fft_inplace(queue, cla.zeros(queue, (2, 0), np.complex64))
    with pytest.raises(ValueError, match="C-contiguous"):
        fft.fft_inplace(queue, good[1:])
    with pytest.raises(ValueError, match="C-contiguous"):
        fft.fft_inplace(queue, good.T)
    with pytest.raises(ValueError, match="isign"):
        fft.fft_inplace(queue, good, isign=0)
    with pytest.raises(ValueError, match="method"):
        fft.fft_inplace(queue, good, method="fftw")
    other = cl.CommandQueue(cl.Context([queue.device]))
    with pytest.raises(ValueError, match="context"):
        fft.fft_inplace(other, good)


def test_no_rows_is_a_no_op(queue):
    empty = cla.zeros(queue, (0, 8), np.complex64)
    fft.fft_inplace(queue, empty)
    assert empty.shape == (0, 8)
