"""Per-object result tables: one row per object, plain NumPy columns.

:func:`result_columns` turns a period-search result (Lomb-Scargle,
SuperSmoother, multiband Lomb-Scargle, multi-harmonic AOV, PDM, conditional
entropy, AOV or BLS) into the columns every writer, the command line and the
Dask front end share, so a result has one tabular form whatever the destination.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from clperiod.catalog import Status
from clperiod.grid import grid_warning_names, grid_warnings

__all__ = ["BOX_COLUMNS", "result_columns", "value_column"]

#: The best box's fields a BLS result adds after ``power`` (its objective).
BOX_COLUMNS = ("depth", "depth_err", "duration", "transit_time", "depth_snr", "log_likelihood")


def result_columns(result: Any, *, fap_method: str | None = "baluev") -> dict[str, np.ndarray]:
    """The per-object columns of a period-search result.

    Parameters
    ----------
    result
        A period-search result: Lomb-Scargle, SuperSmoother,
        :class:`~clperiod.MultibandResult`, :class:`~clperiod.MhaovResult`,
        :class:`~clperiod.periodograms.phase_statistics.PhaseStatisticResult`
        (PDM, conditional entropy, AOV) or
        :class:`~clperiod.periodograms.bls.BlsResult`.
    fap_method
        False-alarm-probability method for the ``fap`` column (Lomb-Scargle
        only; see :meth:`~clperiod.LombScargleResult.false_alarm_probability`), or None
        for no ``fap`` column.  The other searches have no analytic false
        alarm probability (the multiband and MHAOV ones are bootstraps, asked
        for on their own) and never get the column.

    Returns
    -------
    dict of str to ndarray
        In this order: ``id``, ``n_points``, ``period``, ``frequency``,
        ``power``, ``fap`` (see above), ``period_1 .. period_k`` and
        ``power_1 .. power_k`` (the top-k distinct peaks, best first),
        ``status`` (int, :class:`~clperiod.catalog.Status` value),
        ``status_name`` and ``grid_warning`` (comma-separated
        :class:`~clperiod.grid.GridWarning` names, ``""`` when the grid
        resolves the object).  Objects that are not OK have NaN numbers.

        The value columns are named by :func:`value_column`: a phase-binned
        statistic's are ``statistic_min``, ``statistic_min_1 ..`` (PDM and
        conditional entropy, whose best value is the lowest) or
        ``statistic_max``, ``statistic_max_1 ..`` (AOV) in place of
        ``power``, ``power_1 ..``. A BLS result's ``power`` is its
        objective (log-likelihood or depth S/N), followed by its best box's
        :data:`BOX_COLUMNS`.
    """
    value = value_column(result)
    columns: dict[str, np.ndarray] = {
        "id": np.asarray(result.ids),
        "n_points": np.asarray(result.n_points, dtype=np.int64),
        "period": np.asarray(result.period, dtype=np.float64),
        "frequency": np.asarray(result.frequency_best, dtype=np.float64),
        value: np.asarray(result.power_best, dtype=np.float64),
    }
    columns.update(_box_columns(result))
    if fap_method is not None and _has_analytic_fap(result):
        columns["fap"] = np.asarray(result.false_alarm_probability(method=fap_method))
    top_k_period = np.asarray(result.top_k_period, dtype=np.float64)
    top_k_power = np.asarray(result.top_k_power, dtype=np.float64)
    for rank in range(top_k_period.shape[1]):
        columns[f"period_{rank + 1}"] = top_k_period[:, rank]
    for rank in range(top_k_power.shape[1]):
        columns[f"{value}_{rank + 1}"] = top_k_power[:, rank]
    status = np.asarray(result.status, dtype=np.int8)
    columns["status"] = status
    columns["status_name"] = _status_names(status)
    columns["grid_warning"] = grid_warning_names(grid_warnings(result.grid, result.catalog))
    return columns


def _has_analytic_fap(result: Any) -> bool:
    """Whether ``result.false_alarm_probability`` takes Lomb-Scargle's
    ``method`` names: a ``method`` and no ``n_resamplings`` (the multiband
    and MHAOV searches resample; MHAOV's ``method`` is its own)."""
    fap = getattr(result, "false_alarm_probability", None)
    if fap is None:
        return False
    parameters = inspect.signature(fap).parameters
    return "method" in parameters and "n_resamplings" not in parameters


def value_column(result: Any) -> str:
    """The name of a result's best-value column: ``statistic_min`` or
    ``statistic_max`` for a phase-binned statistic (its ``best`` is
    "minimum" or "maximum"), else ``power``."""
    best = getattr(result, "best", None)
    if best == "minimum":
        return "statistic_min"
    if best == "maximum":
        return "statistic_max"
    return "power"


def _box_columns(result: Any) -> dict[str, np.ndarray]:
    """A BLS result's best-box fields (:data:`BOX_COLUMNS`); none for others."""
    if not hasattr(result, "depth_best"):
        return {}
    return {name: np.asarray(getattr(result, f"{name}_best"), np.float64) for name in BOX_COLUMNS}


def _status_names(status: Any) -> np.ndarray:
    """Names of :class:`~clperiod.catalog.Status` values (object array, same shape)."""
    status = np.asarray(status)
    invalid = (status < 0) | (status >= _STATUS_NAMES.size)
    if invalid.any():
        raise ValueError(f"{int(status[invalid].flat[0])} is not a valid Status")
    return _STATUS_NAMES[status]


#: Status names by value (the values are 0, 1, 2, ...).
_STATUS_NAMES = np.array([Status(value).name for value in range(len(Status))], dtype=object)
