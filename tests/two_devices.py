"""Run a script on two devices: PoCL shows one CPU as two with
POCL_DEVICES="pthread pthread". Device discovery is once per process, so the
script runs in a subprocess; it prints its results as JSON on its last line."""

import json
import os
import subprocess
import sys


def run_on_two_devices(script: str) -> dict:
    """The JSON that ``script`` printed last, run with CLPERIOD_DEVICE=cpu on
    two PoCL devices of two compute units each (the CPU devices only, also on
    a machine with GPUs or more cores, whose item counts would differ)."""
    env = dict(os.environ, POCL_DEVICES="pthread pthread", CLPERIOD_DEVICE="cpu",
               POCL_MAX_PTHREAD_COUNT="2")
    env.pop("PYOPENCL_CTX", None)
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
