"""Single-pulse (boxcar matched-filter) search of de-dispersed time series.

The public names live in ``clperiod.singlepulse.boxcar``.
"""

from clperiod.singlepulse.boxcar import (
    CANDIDATE_DTYPE,
    Candidates,
    Level,
    RowStatus,
    SearchInfo,
    boxcar_plan,
    search,
)

__all__ = [
    "CANDIDATE_DTYPE",
    "Candidates",
    "Level",
    "RowStatus",
    "SearchInfo",
    "boxcar_plan",
    "search",
]
