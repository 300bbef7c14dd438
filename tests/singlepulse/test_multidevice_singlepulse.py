"""A single-pulse search on two devices (DM rows split into blocks) gives
the candidates, statistics and noise tables of one device. PoCL shows one
CPU as two devices with POCL_DEVICES="pthread pthread"; device discovery is
once per process, so the runs happen in a subprocess."""

import pytest

from two_devices import run_on_two_devices

# two PoCL devices, each building every kernel variant: slow on 2 cores
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json
import numpy as np
import clperiod
from clperiod import singlepulse as sp
from clperiod.singlepulse import boxcar


devices = clperiod.select_devices("cpu")
assert len(devices) == 2, [d.label for d in devices]
rng = np.random.default_rng(9)
n_dm = 3 * boxcar.MIN_ROWS_PER_BLOCK + 17   # blocks of uneven size
x = rng.normal(0.0, 1.0, (n_dm, 4096)).astype(np.float32)
x[5] = 1.0                               # a constant row
x[n_dm - 3, 1000:1012] += 3.0            # pulses in the first and last block
x[40, 2000:2004] += 5.0
x[300, 700] = np.nan
dm = np.linspace(0, 500, n_dm)
out = {}
for plan_width in (32, 256):
    kwargs = dict(max_width=plan_width, threshold=5.5, nan_policy="mask", cluster=True)
    one = sp.search(x, dm, 64e-6, device=devices[:1], **kwargs)
    both = sp.search(x, dm, 64e-6, device=devices, **kwargs)
    out[plan_width] = {
        "candidates": len(one),
        "same_candidates": bool(np.array_equal(one, both)),
        "same_rows": all(np.array_equal(getattr(one.info, f), getattr(both.info, f))
                         for f in ("mean", "std", "row_status", "masked")),
        "same_noise": all(np.array_equal(one.info.noise[k], both.info.noise[k])
                          for k in one.info.noise),
        "devices": both.info.device,
        "constant": int(both.info.row_status[5]),
    }
print(json.dumps(out))
"""


def test_two_devices_equal_one():
    runs = run_on_two_devices(SCRIPT)
    for run in runs.values():
        assert run["candidates"] >= 2
        assert run["same_candidates"] and run["same_rows"] and run["same_noise"]
        assert run["constant"] == 1
        assert "," in run["devices"]  # both devices took blocks
