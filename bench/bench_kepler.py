"""Kepler-solver benchmark (issue #4 groundwork): solves per second.

Kernel time from OpenCL profiling events on 2^26 random (M, e) pairs
(M in [-50, 50] rad, e in [0, 0.95)), fp32 and fp64, Danby's iteration and
Markley's fixed-cost solver, plus the end-to-end
:func:`clperiod.kepler.solve` call (host copies included) and a vectorised
NumPy Danby solver on the host as the peer (``bench/numpy_kepler.py``: 5
fixed steps after range reduction). A solve reads 2 reals and writes
3 reals and a status byte; the rate is also given as a fraction of the
device's DRAM bandwidth figure when given with ``--bandwidth`` (bytes/s).
"""

from __future__ import annotations

import argparse

import numpy as np
import pyopencl as cl

from clperiod import kepler

from clperiod.engine import kernels
from clperiod.kepler.api import SOLVE_LOCAL_SIZE
from clperiod.engine.devices import get_context, select_devices

from harness import best_of, run_report
from numpy_kepler import danby


def bench_solve(repeat, n=1 << 26, bandwidth=None):
    info = select_devices()[0]
    context = get_context(info)
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    out = {"device": info.label, "n": n}
    padded = -(-n // SOLVE_LOCAL_SIZE) * SOLVE_LOCAL_SIZE
    for precision, real, dtype in (("fp32", "float", np.float32), ("fp64", "double", np.float64)):
        m = rng.uniform(-50, 50, n).astype(dtype)
        e = rng.uniform(0, 0.95, n).astype(dtype)
        peer_n = min(n, 1 << 22)
        m_peer = np.mod(m[:peer_n].astype(np.float64) + np.pi, 2 * np.pi) - np.pi
        peer_s, _ = best_of(lambda: danby(m_peer, e[:peer_n].astype(np.float64)), 1)
        mf = cl.mem_flags
        size = np.dtype(dtype).itemsize
        buffers = [cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in (m, e)]
        buffers += [cl.Buffer(context, mf.WRITE_ONLY, n * size) for _ in range(3)]
        buffers.append(cl.Buffer(context, mf.WRITE_ONLY, n))
        for method in ("danby", "markley"):
            (kernel,) = kernels.get_kernels(context, "kepler", ("kepler_solve",), real=real,
                                            method=method)
            kernel.set_args(*buffers[:2], np.int64(n), *buffers[2:])
            times = []
            for _ in range(repeat + 1):
                event = cl.enqueue_nd_range_kernel(queue, kernel, (padded,), (SOLVE_LOCAL_SIZE,))
                event.wait()
                times.append(1e-9 * (event.profile.end - event.profile.start))
            kernel_s = min(times[1:])
            wall, got = best_of(lambda: kepler.solve(m, e, precision=precision, method=method),
                                repeat)
            g = got.astype(np.float64)
            residual = np.abs(g - e * np.sin(g) - m.astype(np.float64))
            entry = {"kernel_s": kernel_s, "solves_per_s": n / kernel_s,
                     "bytes_per_s": n * (5 * size + 1) / kernel_s,
                     "end_to_end_s": wall, "max_residual": float(residual.max()),
                     "numpy_solves_per_s": peer_n / peer_s}
            entry["speedup_vs_numpy"] = entry["solves_per_s"] / entry["numpy_solves_per_s"]
            if bandwidth:
                entry["fraction_of_bandwidth"] = entry["bytes_per_s"] / bandwidth
            out[f"{precision}/{method}"] = entry
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--n", type=int, default=1 << 26)
    parser.add_argument("--bandwidth", type=float, help="device DRAM bandwidth, bytes/s")
    parser.add_argument("--out", help="write the JSON here")
    args = parser.parse_args()
    run_report("bench_kepler.py", ["solve"],
               lambda _: bench_solve(args.repeat, args.n, args.bandwidth), args.out)


if __name__ == "__main__":
    main()
