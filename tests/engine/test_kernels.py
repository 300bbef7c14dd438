"""Kernel engine: template rendering, program caching, build errors; scheduler."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from mako.exceptions import TopLevelLookupException

import clperiod
from clperiod.engine import kernels
from clperiod.engine.devices import get_context
from clperiod.engine.scheduler import run_on_devices
from clperiod.periodograms import lombscargle as LS_MODULE

LS_PARAMS = dict(
    real="double", wg=16, m=4, use_local=True, fit_mean=True, normalization="standard",
    top_k=1, write_power=False, compensated=False, points_per_tile=32, arbitrary=False,
)


@pytest.fixture
def context():
    return get_context(clperiod.select_devices()[0])


def test_render_variants_differ_and_need_every_parameter():
    fp64 = kernels.render("lombscargle", **LS_PARAMS)
    fp32 = kernels.render("lombscargle", **{**LS_PARAMS, "real": "float"})
    assert "cl_khr_fp64" in fp64 and "typedef double real_t" in fp64
    assert "cl_khr_fp64" not in fp32 and "typedef float real_t" in fp32
    incomplete = dict(LS_PARAMS)
    del incomplete["top_k"]
    with pytest.raises(NameError):  # strict_undefined: missing parameters fail at render time
        kernels.render("lombscargle", **incomplete)
    with pytest.raises(TopLevelLookupException):
        kernels.render("no_such_template")


def test_programs_cached_per_context_and_variant(context):
    first = kernels.get_program(context, "lombscargle", **LS_PARAMS)
    again = kernels.get_program(context, "lombscargle", **LS_PARAMS)
    other = kernels.get_program(context, "lombscargle", **{**LS_PARAMS, "top_k": 2})
    assert first is again and first is not other
    tiles, = kernels.get_kernels(context, "lombscargle", ("ls_tiles",), **LS_PARAMS)
    assert kernels.get_kernels(context, "lombscargle", ("ls_tiles",), **LS_PARAMS)[0] is tiles
    seen = []
    thread = threading.Thread(
        target=lambda: seen.append(
            kernels.get_kernels(context, "lombscargle", ("ls_tiles",), **LS_PARAMS)[0]
        )
    )
    thread.start()
    thread.join()
    assert seen[0] is not tiles  # kernel objects are per thread


SCALARS_SOURCE = """typedef double real_t;
__kernel void scalars(__global real_t *out, const real_t x, const int n, const long m,
                      const float f, __local real_t *scratch)
{
    scratch[0] = x;
    out[0] = scratch[0] + n + m + f;
}
__kernel void vector_arg(__global float *out, const float4 v) { out[0] = v.x; }
"""


@pytest.mark.slow
@pytest.mark.parametrize("asked", [False, True])
def test_logs_of_successful_builds_are_quiet_unless_asked(asked):
    """Importing clperiod silences pyopencl's note on a successful build's log
    (NVIDIA writes one for every large kernel); PYOPENCL_COMPILER_OUTPUT=1 shows it."""
    script = ("import clperiod, pyopencl; "
              "pyopencl.compiler_output('Function f is a kernel, so overriding noinline')")
    env = {k: v for k, v in os.environ.items() if k != "PYOPENCL_COMPILER_OUTPUT"}
    if asked:
        env["PYOPENCL_COMPILER_OUTPUT"] = "1"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert ("overriding noinline" in done.stderr) == asked
    assert "Non-empty compiler output" not in done.stderr


def test_build_seconds_count_builds_not_cache_hits(context):
    params = {**LS_PARAMS, "top_k": 61}  # built by no other test
    before = kernels.build_seconds()
    kernels.get_program(context, "lombscargle", **params)
    built = kernels.build_seconds()
    assert built > before
    kernels.get_program(context, "lombscargle", **params)
    assert kernels.build_seconds() == built


def test_scalar_arguments_are_declared_from_the_kernels_argument_info(context, monkeypatch):
    import pyopencl as cl

    monkeypatch.setattr(kernels, "render", lambda template, **params: SCALARS_SOURCE)
    scalars, vector = kernels.get_kernels(context, "scalars_for_test", ("scalars", "vector_arg"))
    assert kernels.declare_scalar_args(scalars, {"real_t": "double"})
    assert not kernels.declare_scalar_args(vector)  # a float4: left to pyopencl
    queue = cl.CommandQueue(context)
    out = np.zeros(1)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 8)
    # declared (get_kernels did it): scalars of other NumPy types and Python numbers
    # are converted to the declared types, which pyopencl's generic handling refuses
    scalars(queue, (1,), (1,), buffer, np.float32(0.5), 2, np.int32(3), 0.25,
            cl.LocalMemory(8))
    cl.enqueue_copy(queue, out, buffer)
    assert out[0] == 5.75


def test_build_failure_reports_log_and_source(context, monkeypatch):
    broken = "__kernel void k(__global float *x) { x[0] = undefined_name; }\n"
    monkeypatch.setattr(kernels, "render", lambda template, **params: broken)
    with pytest.raises(kernels.KernelBuildError) as info:
        kernels.get_program(context, "broken_for_test", flag=True)
    message = str(info.value)
    assert "broken_for_test" in message and "build log" in message
    path = message.split("rendered source: ")[1].split()[0]
    with open(path) as handle:
        assert handle.read() == broken
    os.unlink(path)


def test_scheduler_keeps_order_and_spreads_items():
    info = clperiod.select_devices()[0]
    devices = [info, type(info)(**{**info.__dict__, "device_index": info.device_index})]
    used = []

    def work(device, item):
        used.append(id(device))
        time.sleep(0.002)  # let both workers take items
        return item * item

    assert run_on_devices(devices, list(range(50)), work) == [k * k for k in range(50)]
    assert len(set(used)) == 2
    assert run_on_devices(devices[:1], [3, 1, 2], work) == [9, 1, 4]


def test_scheduler_workers_outlive_a_call_and_nest():
    """Each device keeps its worker thread across calls (so its queues and
    kernel objects are reused); a worker that schedules again runs inline."""
    info = clperiod.select_devices()[0]
    devices = [info, info]

    def thread(device, item):
        time.sleep(0.002)
        return threading.get_ident()

    first = set(run_on_devices(devices, list(range(8)), thread))
    second = set(run_on_devices(devices, list(range(8)), thread))
    assert len(first) == 2 and first == second
    assert threading.get_ident() not in first

    def nested(device, item):
        return run_on_devices(devices, [item, item + 1], lambda d, k: (k, threading.get_ident()))

    for (a, ta), (b, tb) in run_on_devices(devices, [0, 10, 20, 30], nested):
        assert b == a + 1 and ta == tb in first


def test_scheduler_reraises_worker_errors():
    info = clperiod.select_devices()[0]

    def work(device, item):
        if item == 7:
            raise ArithmeticError("item 7")
        return item

    with pytest.raises(ArithmeticError, match="item 7"):
        run_on_devices([info, info], list(range(20)), work)
    with pytest.raises(ArithmeticError):
        run_on_devices([info], list(range(20)), work)


def test_lombscargle_batches_on_two_workers_match_one(rng, monkeypatch):
    """Batches spread over two worker threads give the single-worker result
    (periodograms requested: one batch in flight per device)."""
    info = clperiod.select_devices()[0]
    small = type(info)(**{**info.__dict__, "global_mem": 60_000, "max_alloc": 30_000})
    lcs = []
    for k in range(8):
        t = np.sort(rng.uniform(0, 50, 40 + 9 * k))
        lcs.append((t, np.sin(t * (1 + k)) + rng.normal(0, 0.1, len(t)), np.full(len(t), 0.1)))
    cat = clperiod.Catalog.from_lightcurves(lcs)
    grid = clperiod.FrequencyGrid.from_range(0.05, 2.0, 700)
    one = clperiod.lombscargle(cat, grid, device=info, periodogram=True, top_k=2)
    threads = set()
    original = LS_MODULE._enqueue_batch

    def spy(*args, **kwargs):
        threads.add(threading.get_ident())
        return original(*args, **kwargs)

    monkeypatch.setattr(LS_MODULE, "select_devices", lambda _: [small, small])
    monkeypatch.setattr(LS_MODULE, "_enqueue_batch", spy)
    two = clperiod.lombscargle(cat, grid, periodogram=True, top_k=2)
    assert len(threads) == 2
    np.testing.assert_array_equal(one.power, two.power)
    np.testing.assert_array_equal(one.top_k_frequency, two.top_k_frequency)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_scheduler_in_a_forked_child_starts_its_own_workers():
    info = clperiod.select_devices()[0]
    assert run_on_devices([info, info], [1, 2, 3], lambda d, k: k) == [1, 2, 3]
    pid = os.fork()
    if pid == 0:  # the child: the parent's worker threads do not exist here
        signal.alarm(30)  # a child waiting on them would hang: end it instead
        try:
            ok = run_on_devices([info, info], [4, 5, 6], lambda d, k: k) == [4, 5, 6]
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def warning_free_variants():
    """(template, parameters) covering every value of every rvmodel and kepler
    render parameter, the statistic-dependent code in every combination."""
    arithmetic = [("double", "double"), ("float", "double"), ("float", "ds"), ("float", "float"),
                  ("float", "float_device")]
    combos = itertools.product(arithmetic, ("chi2", "loglike", "profile"), (False, True), (0, 2))
    rv = []
    for i, ((real, phase), statistic, jitter, trend) in enumerate(combos):
        rv.append(("rvmodel", dict(
            real=real, phase=phase, statistic=statistic, jitter=jitter, trend=trend,
            offsets=statistic != "profile" and i % 2 == 0, n_planets=1 + i % 2,
            n_inst=1 + 2 * (i % 2), ecc_form=("e_w", "secosw_sesinw")[i // 2 % 2],
            time_form=("m0", "tp", "tc")[i % 3], space=("constant", "local", "global")[i % 3],
            method=("danby", "markley")[i // 3 % 2],
            result="double" if real == "double" or phase in ("double", "float_device")
            else "float")))
    kepler = [("kepler", dict(real=real, method=method))
              for real in ("double", "float") for method in ("danby", "markley")]
    return rv + kepler


@pytest.mark.slow
def test_rv_and_kepler_kernels_compile_without_warnings(tmp_path):
    """Every rvmodel and kepler variant compiles warning-free under clang's
    -Wall -Wextra and its implicit-conversion warnings (some OpenCL
    compilers print warnings, which pyopencl reports as build output);
    unused parameters remain: each kernel has one argument list for all
    variants."""
    clang = shutil.which("clang-15") or shutil.which("clang")
    if clang is None:
        pytest.skip("clang is not installed")
    flags = ["-x", "cl", "-cl-std=CL1.2", "-fsyntax-only", "-Xclang", "-finclude-default-header",
             "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wconversion", "-Wdouble-promotion",
             "-Wsign-conversion", "-Wshadow"]
    for index, (template, params) in enumerate(warning_free_variants()):
        path = tmp_path / f"{template}_{index}.cl"
        path.write_text(kernels.render(template, **params))
        result = subprocess.run([clang, *flags, str(path)], capture_output=True, text=True)
        assert (result.returncode, result.stderr) == (0, ""), (template, params)
