"""Shared pytest fixtures.

OpenCL program caches (PoCL's kernel cache, pyopencl's) stay on: they make
repeated test runs much faster and never change results.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clperiod.io import example_path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The bundled example light curves (``clperiod/data``)."""
    return example_path("ida").parent


@pytest.fixture
def rng() -> np.random.Generator:
    """A freshly seeded random generator for each test."""
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def cpu_device():
    """The device the tests run on: ``clperiod.engine.devices.select_devices()[0]``.

    That honours ``CLPERIOD_DEVICE`` / ``PYOPENCL_CTX`` and otherwise picks
    the preferred device; on CI (no GPU) it is Debian's PoCL CPU device.
    Fails the test when no usable OpenCL device exists: the set-up
    (``scripts/setup_env.sh``) installs one, so its absence is an error.
    """
    from clperiod.engine.devices import select_devices

    try:
        return select_devices()[0]
    except (RuntimeError, ValueError) as error:
        pytest.fail(f"no usable OpenCL device: {error}")


@pytest.fixture(autouse=True)
def _gpu_only(request: pytest.FixtureRequest) -> None:
    """Skip a test marked ``gpu`` when the selected device (:func:`cpu_device`) is no GPU."""
    if request.node.get_closest_marker("gpu") is None:
        return
    device = request.getfixturevalue("cpu_device")
    if device.kind != "gpu":
        pytest.skip(f"needs a GPU OpenCL device; the selected device is {device.label} "
                    f"({device.kind}): set CLPERIOD_DEVICE to a GPU")
