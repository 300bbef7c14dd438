"""clperiod: period searches and time-domain kernels for any OpenCL device.

>>> import clperiod
>>> cat = clperiod.Catalog.from_arrays(ids, t, y, dy)            # doctest: +SKIP
>>> grid = clperiod.FrequencyGrid.from_range(0.1, 10, 330_000)   # doctest: +SKIP
>>> result = clperiod.lombscargle(cat, grid)                     # doctest: +SKIP
>>> result.period                                                # doctest: +SKIP
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from clperiod import _moved, kepler, singlepulse
from clperiod.catalog import Catalog, Status
from clperiod.engine.devices import DeviceInfo, list_devices, select_devices
from clperiod.grid import FrequencyArray, FrequencyGrid
from clperiod.kepler import orbits
from clperiod.periodograms.bls import BlsResult, bls
from clperiod.periodograms.lombscargle import LombScargleResult, lombscargle, lombscargle_async
from clperiod.periodograms.mhaov import MhaovResult, mhaov
from clperiod.periodograms.multiband import MultibandResult, lombscargle_multiband
from clperiod.periodograms.phase_statistics import (
    PhaseStatisticResult,
    aov,
    conditional_entropy,
    pdm,
)
from clperiod.periodograms.supersmoother import SuperSmootherResult, supersmoother

try:
    __version__ = version("clperiod")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_moved.install()  # old module paths (clperiod.stats, ...) import their new modules

__all__ = [
    "BlsResult",
    "Catalog",
    "DeviceInfo",
    "FrequencyArray",
    "FrequencyGrid",
    "LombScargleResult",
    "MhaovResult",
    "MultibandResult",
    "PhaseStatisticResult",
    "Status",
    "SuperSmootherResult",
    "aov",
    "conditional_entropy",
    "bls",
    "list_devices",
    "lombscargle",
    "lombscargle_async",
    "lombscargle_multiband",
    "mhaov",
    "pdm",
    "select_devices",
    "supersmoother",
    "kepler",
    "orbits",
    "singlepulse",
    "__version__",
]
