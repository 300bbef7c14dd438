"""Period searches over Dask DataFrames, one device per worker.

The public names live in ``clperiod.dask.api``.
"""

from clperiod.dask.api import (
    lombscargle,
    lombscargle_multiband,
    mhaov,
    supersmoother,
)

__all__ = [
    "lombscargle",
    "lombscargle_multiband",
    "mhaov",
    "supersmoother",
]
