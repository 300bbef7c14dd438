"""Kepler's equation, Keplerian orbits and radial-velocity models on OpenCL devices.

The public names live in ``clperiod.kepler.api``.
"""

from clperiod.kepler.api import (
    KeplerSolution,
    KeplerStatus,
    ModelStatus,
    RVLikelihood,
    SearchResult,
    chi2,
    empty_params,
    loglike,
    radial_velocity,
    search,
    solve,
)

__all__ = [
    "KeplerSolution",
    "KeplerStatus",
    "ModelStatus",
    "RVLikelihood",
    "SearchResult",
    "chi2",
    "empty_params",
    "loglike",
    "radial_velocity",
    "search",
    "solve",
]
