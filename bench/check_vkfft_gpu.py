"""VkFFT (pyvkfft, OpenCL) on the GPU: correctness and speed of batched C2C FFTs,
against cuFFT (CuPy) on the same GPU, for the NUFFT's fine grids.

Transform: in place, unnormalised, exponent sign +1 (FINUFFT type-1), i.e.
pyvkfft VkFFTApp(norm=0).ifft and cuFFT CUFFT_INVERSE. Reference: scipy.fft on
the host (all cores). Times are per transform, averaged over back-to-back
launches between two queue finishes (launch overhead amortised), and the
latency of one launch + finish. Bandwidth = one read + one write of the array
per transform (the minimum), as a fraction of the H100's 3.35 TB/s.

usage: python3 vkfft_gpu.py --out result.json [--quick] [--plan-only N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.fft

HBM = 3.35e12  # bytes/s, H100 SXM HBM3

CASES = [  # (batch, n)
    (1, 2**20), (1, 2**22), (1, 2**24), (1, 10**7), (1, 2 * 10**7),
    (1, 12_597_120),  # 2^7 3^9 5: radix-3 heavy
    (1, 1_048_573),  # prime: Bluestein
    (1, 1_574_640), (3, 2**22), (3, 10**7), (16, 2**20), (64, 65_536), (1000, 3072), (3, 1250),
]
QUICK = [(1, 2**20), (3, 2**16), (64, 3072)]


def nvidia_queue() -> cl.CommandQueue:
    for p in cl.get_platforms():
        for d in p.get_devices():
            if "NVIDIA" in p.name or os.environ.get("VKFFT_ANY_DEVICE"):
                return cl.CommandQueue(cl.Context([d]), d)
    raise SystemExit("no NVIDIA OpenCL device (is /etc/OpenCL/vendors/nvidia.icd there?)")


def per_call(run, finish, budget=0.25) -> tuple[float, float]:
    """(seconds per transform over back-to-back launches, latency of one launch)."""
    run()
    finish()
    t0 = time.perf_counter()
    run()
    finish()
    latency = time.perf_counter() - t0
    reps = max(3, min(200, int(budget / max(latency, 1e-5))))
    t0 = time.perf_counter()
    for _ in range(reps):
        run()
    finish()
    return (time.perf_counter() - t0) / reps, latency


def rel_err(a: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(a - ref)) / np.max(np.abs(ref)))


def vkfft_case(queue, x: np.ndarray) -> dict:
    from pyvkfft.opencl import VkFFTApp

    t0 = time.perf_counter()
    app = VkFFTApp(x.shape, x.dtype, queue, ndim=1, inplace=True, norm=0)
    plan = time.perf_counter() - t0
    a = cla.to_device(queue, x)
    t0 = time.perf_counter()
    app.ifft(a, queue=queue)
    queue.finish()
    first = time.perf_counter() - t0
    result = a.get(queue=queue)
    t, latency = per_call(lambda: app.ifft(a, queue=queue), queue.finish)
    out = dict(plan_s=plan, first_call_s=first, s=t, latency_s=latency,
               uploads=int(app.nb_axis_upload[0]), bluestein=bool(app.use_bluestein_fft[0]),
               tmp_buffer_bytes=int(app.tmp_buffer_nbytes))
    del app, a
    return out, result


def cufft_case(x: np.ndarray):
    try:
        import cupy
        from cupy.cuda import cufft
    except ImportError as error:
        return dict(error=f"no cupy: {error}"), None
    kind = cufft.CUFFT_Z2Z if x.dtype == np.complex128 else cufft.CUFFT_C2C
    t0 = time.perf_counter()
    plan = cufft.Plan1d(x.shape[-1], kind, x.shape[0])
    plan_s = time.perf_counter() - t0
    a = cupy.asarray(x)
    plan.fft(a, a, cufft.CUFFT_INVERSE)
    cupy.cuda.runtime.deviceSynchronize()
    result = cupy.asnumpy(a)
    sync = cupy.cuda.runtime.deviceSynchronize
    t, latency = per_call(lambda: plan.fft(a, a, cufft.CUFFT_INVERSE), sync)
    del a, plan
    cupy.get_default_memory_pool().free_all_blocks()
    return dict(plan_s=plan_s, s=t, latency_s=latency), result


def one_case(queue, batch: int, n: int, dtype) -> dict:
    rng = np.random.default_rng(n + batch)
    x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(dtype)
    ref = scipy.fft.ifft(x.astype(np.complex128), axis=-1, norm="forward", workers=-1)
    nbytes = 2 * x.nbytes
    row = dict(batch=batch, n=n, dtype=np.dtype(dtype).name, array_MB=x.nbytes / 1e6)
    try:
        vk, vres = vkfft_case(queue, x)
        vk["max_rel_err"] = rel_err(vres, ref)
        vk["GBps"] = nbytes / vk["s"] / 1e9
        vk["hbm_fraction"] = nbytes / vk["s"] / HBM
        row["vkfft"] = vk
    except Exception as error:  # report and go on
        row["vkfft"] = dict(error=f"{type(error).__name__}: {error}")
    try:
        cu, cres = cufft_case(x)
        if cres is not None:
            cu["max_rel_err"] = rel_err(cres, ref)
            cu["GBps"] = nbytes / cu["s"] / 1e9
            cu["hbm_fraction"] = nbytes / cu["s"] / HBM
        row["cufft"] = cu
    except Exception as error:
        row["cufft"] = dict(error=f"{type(error).__name__}: {error}")
    if "s" in row["vkfft"] and "s" in row["cufft"]:
        row["vkfft_over_cufft_time"] = row["vkfft"]["s"] / row["cufft"]["s"]
    return row


def plan_only(n: int) -> None:
    """Plan and run one transform in this fresh process; print the times as JSON."""
    queue = nvidia_queue()
    from pyvkfft.opencl import VkFFTApp

    t0 = time.perf_counter()
    app = VkFFTApp((1, n), np.complex128, queue, ndim=1, inplace=True, norm=0)
    plan = time.perf_counter() - t0
    a = cla.zeros(queue, (1, n), np.complex128)
    t0 = time.perf_counter()
    app.ifft(a, queue=queue)
    queue.finish()
    print(json.dumps(dict(n=n, plan_s=plan, first_call_s=time.perf_counter() - t0)))


def plan_cache(n: int) -> dict:
    """Plan time in a fresh process with an empty, then a filled driver compile cache."""
    cache = f"/tmp/vkfft_nvcache_{os.getpid()}"
    env = dict(os.environ, CUDA_CACHE_PATH=cache)
    runs = {}
    for name in ("empty_cache", "filled_cache", "cache_disabled"):
        run_env = dict(env, CUDA_CACHE_DISABLE="1") if name == "cache_disabled" else env
        done = subprocess.run([sys.executable, __file__, "--plan-only", str(n)], env=run_env,
                              capture_output=True, text=True, timeout=120)
        runs[name] = (json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0
                      else dict(error=done.stderr[-500:]))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=False)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--plan-only", type=int)
    args = parser.parse_args()
    if args.plan_only:
        plan_only(args.plan_only)
        return
    from pyvkfft.opencl import vkfft_version
    from pyvkfft.version import __version__ as pyvkfft_version

    queue = nvidia_queue()
    device = queue.device
    info = dict(device=device.name, driver=device.driver_version, platform=device.platform.name,
                pyvkfft=pyvkfft_version, vkfft=vkfft_version(), python=platform.python_version(),
                numpy=np.__version__, pyopencl=cl.VERSION_TEXT, local_mem=device.local_mem_size,
                max_work_group=device.max_work_group_size, hbm_Bps=HBM)
    try:
        import cupy

        info["cupy"] = cupy.__version__
        info["cufft"] = cupy.cuda.cufft.getVersion()
    except ImportError:
        info["cupy"] = None
    print(json.dumps(info), flush=True)
    rows = []
    started = time.perf_counter()
    for batch, n in QUICK if args.quick else CASES:
        for dtype in (np.complex128, np.complex64):
            row = one_case(queue, batch, n, dtype)
            rows.append(row)
            vk, cu = row["vkfft"], row["cufft"]
            print(f"{batch:5d} x {n:9d} {row['dtype']:10s} "
                  f"vkfft {vk.get('s', float('nan')) * 1e3:8.3f} ms "
                  f"({vk.get('GBps', float('nan')):6.0f} GB/s, err {vk.get('max_rel_err', float('nan')):.1e}, "
                  f"plan {vk.get('plan_s', float('nan')):.2f} s, uploads {vk.get('uploads')}) "
                  f"cufft {cu.get('s', float('nan')) * 1e3:8.3f} ms "
                  f"({cu.get('GBps', float('nan')):6.0f} GB/s, err {cu.get('max_rel_err', float('nan')):.1e})"
                  + (f" {vk['error']}" if "error" in vk else "")
                  + (f" {cu['error']}" if "error" in cu else ""), flush=True)
    cache = plan_cache(2**22 if not args.quick else 2**16)
    print("plan in fresh processes:", json.dumps(cache), flush=True)
    result = dict(info=info, cases=rows, plan_cache=cache, wall_s=time.perf_counter() - started)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
