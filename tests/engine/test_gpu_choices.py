"""What clperiod chooses by itself on a GPU, checked on a real one (``gpu`` marker: skipped
on the CPU devices of CI, run where ``CLPERIOD_DEVICE`` selects a GPU).

On a GPU, ``memory="auto"`` runs the local-memory Lomb-Scargle kernel, ``method="auto"``
runs Markley's Kepler solver, and a plan counts on all of the device's memory whatever the
host has free. The same choices on a CPU device are covered by the rest of the suite.
"""

from __future__ import annotations

import numpy as np
import pytest

import clperiod
from clperiod import kepler
from clperiod.engine import planner, staging
from clperiod.periodograms import lombscargle as ls_module
from clperiod.testing import sinusoid_lightcurve

pytestmark = pytest.mark.gpu

GRID = clperiod.FrequencyGrid.from_range(0.05, 5.0, 4000)


@pytest.mark.parametrize(("precision", "rtol"), [("fp64", 1e-10), ("fp32", 1e-5)])
def test_lombscargle_runs_the_local_memory_kernel_by_default(cpu_device, monkeypatch,
                                                             precision, rtol):
    chosen = []
    kernel_params = ls_module._kernel_params

    def recording(*args, **kwargs):
        params = kernel_params(*args, **kwargs)
        chosen.append(params["use_local"])
        return params

    monkeypatch.setattr(ls_module, "_kernel_params", recording)
    t, y, dy = sinusoid_lightcurve(np.random.default_rng(2), 3000, 2.7, baseline=900.0,
                                   mean=12.0, amplitude=0.4, noise=0.2, dy=(0.1, 0.3))
    power = {memory: clperiod.lombscargle(t, GRID, y, dy, precision=precision, memory=memory,
                                          periodogram=True, device=cpu_device).power
             for memory in ("auto", "global")}
    assert chosen[0] is True and chosen[-1] is False
    np.testing.assert_allclose(power["auto"], power["global"], rtol=0,
                               atol=rtol * power["global"].max())


def test_kepler_solve_runs_markley_by_default(cpu_device):
    rng = np.random.default_rng(3)
    m, e = rng.uniform(-20.0, 20.0, 100_000), rng.uniform(0.0, 0.99, 100_000)
    got = {method: kepler.solve(m, e, method=method, device=cpu_device)
           for method in ("auto", "markley", "danby")}
    np.testing.assert_array_equal(got["auto"], got["markley"])
    residual = got["auto"] - e * np.sin(got["auto"]) - m
    assert np.max(np.abs(residual)) < 1e-12 * np.max(np.abs(m))
    np.testing.assert_allclose(got["markley"], got["danby"], rtol=0, atol=1e-12 * 20.0)


def test_a_gpu_plans_with_all_its_memory_whatever_the_host_has_free(cpu_device, monkeypatch):
    monkeypatch.setattr(staging, "available_host_memory", lambda: 1 << 20)
    assert planner.plannable_memory(cpu_device, host_reserved=1 << 19) == cpu_device.global_mem
