"""Period searches over Dask DataFrames, one device per worker.

The public names live in ``clperiod.dask.api``.
"""

from clperiod.dask.api import (
    aov,
    bls,
    conditional_entropy,
    lombscargle,
    lombscargle_multiband,
    mhaov,
    pdm,
    supersmoother,
)

__all__ = [
    "aov",
    "bls",
    "conditional_entropy",
    "lombscargle",
    "lombscargle_multiband",
    "mhaov",
    "pdm",
    "supersmoother",
]
