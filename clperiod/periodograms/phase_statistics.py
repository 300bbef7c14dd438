"""Phase-binned period statistics of catalogs: PDM, conditional entropy and AOV.

Each statistic folds every object's light curve at every trial frequency,
bins the phases and scores the fold:

* :func:`pdm`: phase dispersion minimization (Stellingwerf 1978) with bins
  and covers; ``theta`` is the pooled variance within the phase samples over
  the variance of the data, **lowest** at the period (about 1 for noise);
* :func:`conditional_entropy`: the conditional entropy of the magnitude given
  the phase (Graham et al. 2013) on a grid of phase x magnitude cells, in
  nats, **lowest** at the period;
* :func:`aov`: phase-binned analysis of variance (Schwarzenberg-Czerny 1989),
  the variance between the bin means over the variance within the bins,
  **highest** at the period (F-distributed for noise).

The definitions are those of the float64 NumPy references
``tests/reference/{pdm,conditional_entropy,aov}.py`` (their default
conventions), which the device equals to rounding; the peers' variants are
described in ``docs/design/phase_statistics.md``. Phases are
``frac(f (t - t_first))``, measured from each object's first observation.

The device (``cl_kernels/phase_bins.mako``, fp64 or fp32) gives each
(object, trial frequency) one work-item, which folds the object's points and
adds them to its own histogram in local memory; ``peaks_topk``
(``cl_kernels/peaks.mako``) reduces the periodograms to each object's best
values, as :func:`multiterm.search <clperiod.periodograms.multiterm.search>`
does. The objects are spread over the selected devices in batches
(``clperiod.engine.scheduler.run_on_devices``); every (object, frequency) is
computed on its own, so the results do not depend on the devices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo, get_queue, require_fp64, select_devices, upload
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid, split_float32
from clperiod.periodograms.inputs import (
    PeakResults,
    blank_failed,
    check_top_k,
    degenerate_status,
    segment_reduce,
    segment_sum,
    top_k_arrays,
)
from clperiod.periodograms.multiterm import blocked_peaks
from clperiod.periodograms.standardize import standardize

__all__ = [
    "DEFAULT_AOV_BINS",
    "DEFAULT_MAGNITUDE_BINS",
    "DEFAULT_PDM_BINS",
    "DEFAULT_PHASE_BINS",
    "MAX_BINS",
    "MAX_TOP_K",
    "PhaseStatisticResult",
    "aov",
    "conditional_entropy",
    "pdm",
]

Precision = Literal["fp64", "fp32"]

#: PDM's bins per cover (PyAstronomy's and the reference's default; P4J uses 8).
DEFAULT_PDM_BINS = 10
#: AOV's phase bins (periodfind's and P4J's class default).
DEFAULT_AOV_BINS = 10
#: Conditional entropy's phase bins and magnitude bins (cuvarbase's defaults).
DEFAULT_PHASE_BINS = 10
DEFAULT_MAGNITUDE_BINS = 5
#: Most bins of one kind (phase bins times covers, magnitude bins).
MAX_BINS = 4096
#: Most peaks kept per object.
MAX_TOP_K = 64
#: Largest work-group (trial frequencies of one object) on GPUs and on other devices.
_MAX_WG = {"gpu": 256, "other": 64}


@dataclass(frozen=True, repr=False)
class PhaseStatisticResult(PeakResults):
    """Results of a phase-binned search, one entry per catalog object.

    "Best" depends on the statistic (``best``): the **lowest** value for
    PDM and conditional entropy, the **highest** for AOV. ``statistic_best``
    is that value (not negated), and ``power_best``, ``top_k_power`` and
    ``power`` are the same arrays under the names the other searches use.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    frequency_best, statistic_best : ndarray
        The best value of each object's periodogram and its frequency (NaN
        when ``status`` is not OK); among equal values the lowest frequency.
    top_k_frequency, top_k_statistic : ndarray, shape (n_objects, top_k)
        The ``top_k`` best distinct peaks (local minima for PDM and
        conditional entropy, maxima for AOV), best first; NaN where an object
        has fewer.
    status : ndarray of Status
        OK; TOO_FEW_POINTS (no more points than phase bins); ZERO_VARIANCE
        (constant values); ZERO_BASELINE, NOT_FINITE, BAD_UNCERTAINTY,
        OUT_OF_RANGE as the other searches use them.
    statistic : ndarray, shape (n_objects, nf), or None
        The periodograms when requested, columns in the order of
        ``grid.frequencies()`` (rows of objects that are not OK are NaN; NaN
        at frequency 0 and where the statistic is undefined).
    grid : FrequencyGrid or FrequencyArray
        The frequencies evaluated.
    method : str
        ``"pdm"``, ``"conditional_entropy"`` or ``"aov"``.
    best : str
        ``"minimum"`` or ``"maximum"``.
    parameters : dict
        The statistic's options: bins, covers and ``weighted`` (whether
        ``dy`` weighted it: False for a catalog without ``dy``).
    precision : str
        ``"fp64"`` or ``"fp32"``.
    devices : list of str
        Devices used.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    statistic_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_statistic: np.ndarray
    status: np.ndarray
    statistic: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    method: str
    best: str
    parameters: Mapping[str, Any]
    precision: str
    devices: list[str]
    catalog: Catalog = field(repr=False)

    @property
    def power_best(self) -> np.ndarray:
        """``statistic_best`` (the best value: lowest for PDM and conditional entropy)."""
        return self.statistic_best

    @property
    def top_k_power(self) -> np.ndarray:
        """``top_k_statistic``."""
        return self.top_k_statistic

    @property
    def power(self) -> np.ndarray | None:
        """``statistic`` (the periodograms, or None)."""
        return self.statistic


@dataclass(frozen=True)
class _Statistic:
    """What the searches differ in.

    ``kind`` is the kernel's statistic ("pdm", "aov", "ce"); ``n_phase`` its
    phase bins (PDM: bins times covers), ``n_covers`` and ``n_mag`` as in
    ``cl_kernels/phase_bins.mako``; ``weighted``: weights from ``dy`` (the
    search turns it off for a catalog without ``dy``);
    ``min_points``: fewest points of an object searched.
    """

    method: str
    kind: str
    n_phase: int
    n_covers: int
    n_mag: int
    weighted: bool
    min_points: int
    parameters: dict[str, Any]

    @property
    def minimum(self) -> bool:
        """Whether the lowest value is best."""
        return self.kind != "aov"


def pdm(
    catalog: Catalog | list,
    grid: FrequencyGrid | FrequencyArray,
    *,
    n_bins: int = DEFAULT_PDM_BINS,
    n_covers: int = 1,
    weighted: bool = True,
    top_k: int = 1,
    periodogram: bool = False,
    precision: Precision = "fp64",
    device=None,
) -> PhaseStatisticResult:
    """Phase dispersion minimization (Stellingwerf 1978) of every object of a catalog.

    At each frequency the phases ``frac(f (t - t_first))`` are cut into
    ``n_bins`` bins of width ``1 / n_bins``; each of the ``n_covers`` covers
    repeats them shifted by ``1 / (n_bins n_covers)``, so every point lies in
    ``n_covers`` of the ``M = n_bins n_covers`` samples. With ``n_k`` points
    and variance ``s_k^2`` in sample ``k`` and ``sigma^2`` the variance of
    the data::

        theta = [sum_k (n_k - 1) s_k^2 / sum_k (n_k - 1)] / sigma^2

    over the samples with points (an empty sample does not count in ``M``).
    ``theta`` is lowest at the period and about 1 for noise. With ``dy``
    (and ``weighted``), ``v = dy**-2`` weights the means and squares, and
    ``n_k - 1`` becomes ``V1 - V2 / V1`` (``V1 = sum v``, ``V2 = sum v^2``;
    P4J's generalisation); ``sigma^2`` is then the unbiased weighted
    variance. This is ``tests/reference/pdm.py``'s ``convention="stellingwerf"``.
    With one cover and Gaussian noise, ``(N - M) theta / (N - 1)`` follows
    ``Beta((N - M) / 2, (M - 1) / 2)``.

    Parameters
    ----------
    catalog : Catalog or list of light curves
        The objects (band labels are ignored: all rows of an object are one
        light curve).
    grid : FrequencyGrid or FrequencyArray
        Trial frequencies, in the units of ``1 / t``.
    n_bins : int
        Bins per cover, >= 2 (default 10).
    n_covers : int
        Covers, >= 1 (default 1: Stellingwerf's plain bins).
    weighted : bool
        Weight by ``dy**-2`` when the catalog has ``dy``.
    top_k : int
        Distinct peaks (local minima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's ``theta`` at every frequency.
    precision : {"fp64", "fp32"}
        Arithmetic of the device. fp32 folds raw MJD epochs to ~1e-7 cycles
        and carries an absolute error of a few 1e-7 in ``theta``.
    device
        Device selection (see :func:`clperiod.select_devices`); objects are
        spread over every selected device. fp64 needs devices with fp64.

    Returns
    -------
    PhaseStatisticResult
        ``statistic_best`` is each object's lowest ``theta`` (``best ==
        "minimum"``). An object needs more than ``n_bins`` points
        (TOO_FEW_POINTS); ``theta`` is NaN at frequency 0 and where no sample
        holds two points.

    Raises
    ------
    TypeError
        ``catalog`` or ``grid`` of the wrong type, or a non-integer option.
    ValueError
        Bad options, a grid without a frequency above 0, ``precision="fp64"``
        on a device without fp64, or more bins than the device's local memory
        holds.
    """
    n_bins = checks.integer("n_bins", n_bins, low=2, high=MAX_BINS)
    n_covers = checks.integer("n_covers", n_covers, low=1, high=MAX_BINS // n_bins)
    weighted = checks.boolean("weighted", weighted)
    statistic = _Statistic(
        method="pdm",
        kind="pdm",
        n_phase=n_bins * n_covers,
        n_covers=n_covers,
        n_mag=1,
        weighted=weighted,
        min_points=n_bins + 1,
        parameters={"n_bins": n_bins, "n_covers": n_covers, "weighted": weighted},
    )
    return _search(catalog, grid, statistic, top_k, periodogram, precision, device)


def aov(
    catalog: Catalog | list,
    grid: FrequencyGrid | FrequencyArray,
    *,
    n_bins: int = DEFAULT_AOV_BINS,
    weighted: bool = True,
    top_k: int = 1,
    periodogram: bool = False,
    precision: Precision = "fp64",
    device=None,
) -> PhaseStatisticResult:
    """Phase-binned analysis of variance (Schwarzenberg-Czerny 1989) of every object.

    At each frequency the phases ``frac(f (t - t_first))`` are cut into
    ``n_bins`` bins; with ``r`` the occupied bins, ``n_k`` points and mean
    ``ybar_k`` in bin ``k`` and ``ybar`` the overall mean::

        s1 = sum_k n_k (ybar_k - ybar)^2          (between the bins)
        s2 = sum_k sum_{j in k} (y_j - ybar_k)^2  (within the bins)
        theta = (N - r) / (r - 1) * s1 / s2

    ``theta`` is highest at the period and follows ``F(r - 1, N - r)`` for
    Gaussian noise. With ``dy`` (and ``weighted``) the means and both sums
    are weighted by ``dy**-2`` (the analysis of variance of a weighted step
    model; the F law still holds). This is ``tests/reference/aov.py``'s
    ``convention="textbook"``.

    Parameters
    ----------
    catalog : Catalog or list of light curves
        The objects (band labels are ignored).
    grid : FrequencyGrid or FrequencyArray
        Trial frequencies, in the units of ``1 / t``.
    n_bins : int
        Phase bins, >= 2 (default 10).
    weighted : bool
        Weight by ``dy**-2`` when the catalog has ``dy``.
    top_k : int
        Distinct peaks (local maxima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's ``theta`` at every frequency.
    precision : {"fp64", "fp32"}
        Arithmetic of the device. ``s2`` carries an absolute error of a few
        rounding units of the total sum of squares (1e-16 in fp64, 1e-7 in
        fp32).
    device
        Device selection (see :func:`clperiod.select_devices`).

    Returns
    -------
    PhaseStatisticResult
        ``statistic_best`` is each object's highest ``theta`` (``best ==
        "maximum"``). An object needs more than ``n_bins`` points
        (TOO_FEW_POINTS). ``theta`` is NaN at frequency 0 and where fewer
        than two bins are occupied; a noiseless step curve (``s2 = 0``) gives
        ``inf`` or, where rounding leaves ``s2`` a few units above 0, a value
        near the reciprocal of the rounding.

    Raises
    ------
    TypeError, ValueError
        As :func:`pdm`.
    """
    n_bins = checks.integer("n_bins", n_bins, low=2, high=MAX_BINS)
    weighted = checks.boolean("weighted", weighted)
    statistic = _Statistic(
        method="aov",
        kind="aov",
        n_phase=n_bins,
        n_covers=1,
        n_mag=1,
        weighted=weighted,
        min_points=n_bins + 1,
        parameters={"n_bins": n_bins, "weighted": weighted},
    )
    return _search(catalog, grid, statistic, top_k, periodogram, precision, device)


def conditional_entropy(
    catalog: Catalog | list,
    grid: FrequencyGrid | FrequencyArray,
    *,
    phase_bins: int = DEFAULT_PHASE_BINS,
    magnitude_bins: int = DEFAULT_MAGNITUDE_BINS,
    top_k: int = 1,
    periodogram: bool = False,
    precision: Precision = "fp64",
    device=None,
) -> PhaseStatisticResult:
    """Conditional entropy (Graham et al. 2013) of every object of a catalog.

    Each object's values are rescaled to ``y_n = (y - min y) / (max y - min
    y)`` in ``[0, 1]`` and binned into ``magnitude_bins`` bins
    ``floor(magnitude_bins y_n)`` (the maximum in the last); at each
    frequency the phases ``frac(f (t - t_first))`` go into ``phase_bins``
    bins. With ``p_ij`` the fraction of the points in phase bin ``i`` and
    magnitude bin ``j`` and ``p_i = sum_j p_ij``::

        H_c = sum_ij p_ij ln(p_i / p_ij)     (nats; empty cells add 0)

    ``H_c`` is in ``[0, ln magnitude_bins]``, lowest at the period. It counts
    points: ``dy`` is ignored. This is ``tests/reference/conditional_entropy.py``'s
    ``conditional_entropy``; cuvarbase's value is ``H_c - ln(magnitude_bins)``.

    Parameters
    ----------
    catalog : Catalog or list of light curves
        The objects (band labels are ignored).
    grid : FrequencyGrid or FrequencyArray
        Trial frequencies, in the units of ``1 / t``.
    phase_bins, magnitude_bins : int
        The cells, each >= 1 (defaults 10 and 5, cuvarbase's).
    top_k : int
        Distinct peaks (local minima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's ``H_c`` at every frequency.
    precision : {"fp64", "fp32"}
        Arithmetic of the device (the counts are exact in both; fp32 folds
        raw MJD epochs to ~1e-7 cycles and sums the entropy to ~1e-6).
    device
        Device selection (see :func:`clperiod.select_devices`).

    Returns
    -------
    PhaseStatisticResult
        ``statistic_best`` is each object's lowest ``H_c`` (``best ==
        "minimum"``). An object needs more than ``phase_bins`` points
        (TOO_FEW_POINTS) and values that are not all equal (ZERO_VARIANCE).
        ``H_c`` is NaN at frequency 0.

    Raises
    ------
    TypeError, ValueError
        As :func:`pdm`.
    """
    phase_bins = checks.integer("phase_bins", phase_bins, low=1, high=MAX_BINS)
    magnitude_bins = checks.integer("magnitude_bins", magnitude_bins, low=1, high=MAX_BINS)
    statistic = _Statistic(
        method="conditional_entropy",
        kind="ce",
        n_phase=phase_bins,
        n_covers=1,
        n_mag=magnitude_bins,
        weighted=False,
        min_points=phase_bins + 1,
        parameters={"phase_bins": phase_bins, "magnitude_bins": magnitude_bins},
    )
    return _search(catalog, grid, statistic, top_k, periodogram, precision, device)


# {{{ the search


def _search(
    catalog: Any,
    grid: Any,
    statistic: _Statistic,
    top_k: Any,
    periodogram: Any,
    precision: Any,
    device: Any,
) -> PhaseStatisticResult:
    """Check the common options, run the device and assemble the result."""
    catalog = _checked_catalog(catalog)
    if statistic.weighted and catalog.dy is None:
        parameters = {**statistic.parameters, "weighted": False}
        statistic = replace(statistic, weighted=False, parameters=parameters)
    searched, positions = _searched_grid(grid)
    top_k = check_top_k(top_k, MAX_TOP_K)
    periodogram = checks.boolean("periodogram", periodogram)
    fp64 = checks.choice("precision", precision, ("fp64", "fp32")) == "fp64"
    devices = select_devices(device)
    arbitrary = not isinstance(searched, FrequencyGrid)
    for info in devices:
        if fp64:
            require_fp64(info)
        _work_group_size(info, statistic, fp64, arbitrary)
    rows = np.full((catalog.n_objects, searched.nf), np.nan) if periodogram else None
    device_search = _DeviceSearch(catalog, searched, statistic, fp64, top_k)
    searched_status, values, indices = device_search.run(devices, rows)
    top_value, top_frequency = top_k_arrays(values, indices, searched)
    status = degenerate_status(catalog, searched_status, top_value[:, 0], statistic.weighted)
    status[(searched_status == Status.ZERO_VARIANCE) & (status == Status.OUT_OF_RANGE)] = (
        Status.ZERO_VARIANCE
    )
    statistic_rows = rows if rows is None or positions is None else rows[:, positions]
    blank_failed(status, top_value, top_frequency, statistic_rows)
    top_statistic = (-1.0 if statistic.minimum else 1.0) * top_value
    return PhaseStatisticResult(
        ids=catalog.ids,
        frequency_best=top_frequency[:, 0].copy(),
        statistic_best=top_statistic[:, 0].copy(),
        top_k_frequency=top_frequency,
        top_k_statistic=top_statistic,
        status=status,
        statistic=statistic_rows,
        grid=grid,
        method=statistic.method,
        best="minimum" if statistic.minimum else "maximum",
        parameters=dict(statistic.parameters),
        precision=precision,
        devices=[info.label for info in devices],
        catalog=catalog,
    )


def _checked_catalog(catalog: Any) -> Catalog:
    """``catalog`` (or a list of light curves) as a Catalog of int32-indexable rows."""
    catalog = catalog_of(catalog)
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the phase-statistic kernel indexes "
            f"at most {np.iinfo(np.int32).max} points (search it in slices)"
        )
    return catalog


def _searched_grid(grid: Any) -> tuple[FrequencyGrid | FrequencyArray, np.ndarray | None]:
    """:func:`clperiod.grid.search_grid` of ``grid``, with a frequency above 0."""
    searched, positions = search_grid(grid)
    if searched.fmax == 0:
        raise ValueError(
            f"grid has no frequency above 0 (the statistics at f = 0 are NaN); {grid}"
        )
    return searched, positions


def _work_group_size(info: DeviceInfo, statistic: _Statistic, fp64: bool, arbitrary: bool) -> int:
    """The largest power-of-two work-group (trial frequencies of one object)
    whose histograms and staged points fit the device's local memory."""
    real_size = 8 if fp64 else 4
    if statistic.kind == "ce":
        histogram = 4 * statistic.n_phase * statistic.n_mag
        values = 4
    else:
        n_values = 3 if statistic.kind == "pdm" and statistic.weighted else 2
        histogram = n_values * statistic.n_phase * real_size
        values = 2 * real_size
    phases = 8 if fp64 or arbitrary else 12
    per_item = histogram + phases + values
    wg = min(_MAX_WG["gpu" if info.kind == "gpu" else "other"], info.max_work_group_size)
    while wg > 1 and wg * per_item > info.local_mem:
        wg //= 2
    if per_item > info.local_mem:
        raise ValueError(
            f"{statistic.method} with {statistic.parameters} needs {per_item} bytes of local "
            f"memory per trial frequency; {info.label} has {info.local_mem}: use fewer bins"
        )
    return wg


# }}}
# {{{ the objects' points


@dataclass(frozen=True)
class _Prepared:
    """The points of the objects that can be searched, as the kernel takes them.

    ``status`` per object: OK, or why it is not searched (its points are
    left out; NOT_FINITE stands for every invalid value, which
    :func:`~clperiod.periodograms.inputs.degenerate_status` names); per kept
    point ``tau``, the time from its object's first observation (float64),
    and ``values``: the weights and weighted centred values (PDM, AOV) or the
    magnitude bins (CE); ``offsets`` of the kept points (int32);
    ``constants``: ``(n_objects, 2)`` per-object constants (PDM, AOV) or the
    table ``m ln m`` (CE), in the kernel's precision.
    """

    status: np.ndarray
    offsets: np.ndarray
    tau: np.ndarray
    values: tuple[np.ndarray, ...]
    constants: np.ndarray


def _prepare(catalog: Catalog, statistic: _Statistic, dtype: type) -> _Prepared:
    """The kernel's inputs for ``catalog`` (see :class:`_Prepared`)."""
    status = _screened(catalog, statistic.min_points, statistic.weighted)
    keep = np.repeat(status == Status.OK, catalog.lengths)
    lengths = np.where(status == Status.OK, catalog.lengths, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    y = catalog.y[keep]
    if statistic.kind == "ce":
        flat, values, constants = _magnitude_bins(y, offsets, statistic.n_mag, dtype)
    else:
        dy = catalog.dy[keep] if statistic.weighted and catalog.dy is not None else None
        flat, values, constants = _weighted_values(y, dy, offsets, statistic, dtype)
    status[(status == Status.OK) & flat] = Status.ZERO_VARIANCE
    t = catalog.t[keep]
    tau = t - np.repeat(segment_reduce(np.minimum, t, offsets), lengths)
    ok = np.repeat(status == Status.OK, lengths)
    lengths = np.where(status == Status.OK, lengths, 0)
    return _Prepared(
        status=status,
        offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
        tau=tau[ok],
        values=tuple(v[ok] for v in values),
        constants=constants,
    )


def _screened(catalog: Catalog, min_points: int, use_dy: bool) -> np.ndarray:
    """Per object: TOO_FEW_POINTS below ``min_points``, NOT_FINITE for any
    invalid t, y or (used) dy, else OK."""
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < min_points] = Status.TOO_FEW_POINTS
    invalid = ~(np.isfinite(catalog.t) & np.isfinite(catalog.y))
    if use_dy and catalog.dy is not None:
        invalid |= ~(np.isfinite(catalog.dy) & (catalog.dy > 0))
    if invalid.any():
        owners = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
        status[np.unique(owners[invalid])] = Status.NOT_FINITE
    return status


def _weighted_values(
    y: np.ndarray, dy: np.ndarray | None, offsets: np.ndarray, statistic: _Statistic, dtype: type
) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """PDM's and AOV's point values and per-object constants.

    The values are centred on their weighted mean and scaled
    (:func:`~clperiod.periodograms.standardize.standardize`), the weights
    ``dy**-2`` normalised to mean 1 per object (exactly 1 without ``dy``).
    The constants are computed in float64 from the values as the device
    holds them: ``Q = sum w u^2``, and ``(n_covers Q, 1 / sigma^2)`` (PDM) or
    ``(Q, S^2 / V)`` (AOV, ``S = sum w u``, ``V = sum w``).
    Returns the objects whose values do not vary, ``(w, w u)`` and the constants.
    """
    lengths = np.diff(offsets)
    values = standardize(y, dy, offsets, center=True)
    weights = np.ones_like(y) if dy is None else values.wn * np.repeat(lengths, lengths)
    w: np.ndarray = weights.astype(dtype)
    wy: np.ndarray = (weights * values.u).astype(dtype)
    w64, wy64 = w.astype(np.float64), wy.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = segment_sum(wy64 * wy64 / w64, offsets)
        total = segment_sum(w64, offsets)
        mean_square = segment_sum(wy64, offsets) ** 2 / total
        if statistic.kind == "pdm":
            dof = total - segment_sum(w64 * w64, offsets) / total
            constants = np.stack([statistic.n_covers * q, dof / (q - mean_square)], axis=1)
        else:
            constants = np.stack([q, mean_square], axis=1)
    constants = np.where(values.flat[:, None], 0.0, constants)
    return values.flat, (w, wy), constants.astype(dtype)


def _magnitude_bins(
    y: np.ndarray, offsets: np.ndarray, n_mag: int, dtype: type
) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """Conditional entropy's magnitude bin of every point,
    ``min(floor(n_mag y_n), n_mag - 1)`` with ``y_n = (y - min) / (max - min)``
    per object (the values first scaled by a power of two, exactly, so the
    range cannot overflow), and the table ``m ln m`` up to the largest object.
    Returns the objects whose values are all equal, the bins and the table."""
    lengths = np.diff(offsets)
    exponent = np.frexp(segment_reduce(np.maximum, np.abs(y), offsets))[1]
    scaled = np.ldexp(y, -np.repeat(exponent, lengths))
    low = segment_reduce(np.minimum, scaled, offsets)
    span = segment_reduce(np.maximum, scaled, offsets) - low
    flat = ~(span > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        y_n = (scaled - np.repeat(low, lengths)) / np.repeat(span, lengths)
    bins = np.minimum(np.floor(np.nan_to_num(y_n) * n_mag), n_mag - 1).astype(np.int32)
    counts = np.arange(int(lengths.max(initial=0)) + 1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        table = np.where(counts > 0, counts * np.log(counts), 0.0)
    return flat, (bins,), table.astype(dtype)


# }}}
# {{{ the device


@dataclass(frozen=True)
class _DeviceSearch:
    """One search spread over devices: consecutive batches of objects
    (:func:`~clperiod.engine.scheduler.split_range`), each prepared
    (:func:`_prepare`) and run by a :class:`_DeviceRun` on the device that
    takes it."""

    catalog: Catalog
    searched: FrequencyGrid | FrequencyArray
    statistic: _Statistic
    fp64: bool
    top_k: int

    def run(
        self, devices: list[DeviceInfo], rows: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every object's status (as :func:`_prepare` gives it), its ``top_k``
        ranking values and grid indices (as :meth:`_DeviceRun.peaks`); the
        periodograms into ``rows`` when given."""
        n_obj = self.catalog.n_objects
        batches = split_range(0, n_obj, len(devices))
        status = np.full(n_obj, Status.OK, dtype=np.int8)
        values = np.full((n_obj, self.top_k), -np.inf)
        indices = np.full((n_obj, self.top_k), np.iinfo(np.int32).max, dtype=np.int32)
        dtype = np.float64 if self.fp64 else np.float32

        def work(info: DeviceInfo, batch: tuple[int, int]) -> tuple[np.ndarray, ...]:
            lo, hi = batch
            arbitrary = not isinstance(self.searched, FrequencyGrid)
            wg = _work_group_size(info, self.statistic, self.fp64, arbitrary)
            part = _prepare(self.catalog.slice(lo, hi), self.statistic, dtype)
            device_run = _DeviceRun(
                get_queue(info), part, self.searched, self.statistic, self.fp64, wg
            )
            found = device_run.peaks(self.top_k, None if rows is None else rows[lo:hi])
            return (part.status, *found)

        parts = run_on_devices(devices, batches, work)
        for (lo, hi), part in zip(batches, parts, strict=True):
            status[lo:hi], values[lo:hi], indices[lo:hi] = part
        return status, values, indices


class _DeviceRun:
    """The kernel of one search on one device: its buffers and launches."""

    def __init__(
        self,
        queue: cl.CommandQueue,
        prepared: _Prepared,
        searched: FrequencyGrid | FrequencyArray,
        statistic: _Statistic,
        fp64: bool,
        wg: int,
    ) -> None:
        self.queue = queue
        self.prepared = prepared
        self.searched = searched
        self.statistic = statistic
        self.fp64 = fp64
        self.wg = wg
        self.arbitrary = not isinstance(searched, FrequencyGrid)
        self._pending: list[cl.Event] = []
        self._launch_phase: tuple[int, cl.Buffer] | None = None
        (self.kernel,) = kernels.get_kernels(
            queue.context,
            "phase_bins",
            ("phase_statistic",),
            real="double" if fp64 else "float",
            statistic=statistic.kind,
            n_phase=statistic.n_phase,
            n_covers=statistic.n_covers,
            n_mag=statistic.n_mag,
            weighted=statistic.weighted and statistic.kind == "pdm",
            arbitrary=self.arbitrary,
            wg=wg,
        )
        self.phase_buffers = [self._upload(a) for a in self._phase_arrays()]
        self.value_buffers = [self._upload(a) for a in prepared.values]
        self.starts = self._upload(prepared.offsets)
        self.constants = self._upload(prepared.constants)
        self.grid_arguments = self._grid_arguments()
        frequencies = searched.frequencies() if self.arbitrary else [searched.fmin]
        self.zero_bin = np.int32(0 if frequencies[0] == 0 else -1)

    def _upload(self, array: np.ndarray) -> cl.Buffer:
        return upload(self.queue, np.ascontiguousarray(array), self._pending)

    def _phase_arrays(self) -> list[np.ndarray]:
        """The per-point phase inputs that do not change between launches."""
        tau = self.prepared.tau
        if self.fp64:
            return [tau]
        if self.arbitrary:
            return list(split_float32(tau))
        assert isinstance(self.searched, FrequencyGrid)
        return list(split_float32(_centred_turns(self.searched.df, tau)))

    def _grid_arguments(self) -> list[Any]:
        """The kernel arguments that give the frequencies."""
        if self.arbitrary:
            frequencies = self.searched.frequencies()
            if self.fp64:
                return [self._upload(frequencies)]
            return [self._upload(part) for part in split_float32(frequencies)]
        if self.fp64:
            assert isinstance(self.searched, FrequencyGrid)
            return [np.float64(self.searched.fmin), np.float64(self.searched.df)]
        return []

    def _phase_arguments(self, lo: int) -> list[cl.Buffer]:
        """The per-point phase buffers of a launch from grid bin ``lo`` (fp32 on
        a uniform grid: the phase at the launch's first frequency, made once
        per ``lo``)."""
        if self.fp64 or self.arbitrary:
            return self.phase_buffers
        if self._launch_phase is None or self._launch_phase[0] != lo:
            assert isinstance(self.searched, FrequencyGrid)
            first = self.searched.fmin + self.searched.df * lo
            turns = _centred_turns(first, self.prepared.tau).astype(np.float32)
            self._launch_phase = (lo, self._upload(turns))
        return [self._launch_phase[1], *self.phase_buffers]

    def launch(self, first: int, rows: int, lo: int, hi: int, out: cl.Buffer) -> None:
        """Queue the ranking values of objects ``first .. first + rows - 1`` on
        grid bins ``lo .. hi - 1`` into ``out``."""
        self.kernel(
            self.queue,
            (-(-(hi - lo) // self.wg) * self.wg, rows),
            (self.wg, 1),
            *self._phase_arguments(lo),
            *self.value_buffers,
            self.starts,
            np.int32(first),
            *self.grid_arguments,
            np.int32(lo),
            np.int32(hi - lo),
            self.zero_bin,
            self.constants,
            out,
        )

    def peaks(self, top_k: int, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Every object's ``top_k`` best ranking values (the statistic, negated
        where the lowest is best) and their indices in the searched grid; the
        statistic of every bin into ``rows`` when given."""
        sign = -1.0 if self.statistic.minimum else 1.0

        def store(first: int, count: int, own_lo: int, own_hi: int, block: np.ndarray) -> None:
            assert rows is not None
            rows[first : first + count, own_lo:own_hi] = sign * block

        values, indices = blocked_peaks(
            self.queue,
            self.launch,
            self.prepared.status.size,
            self.searched.nf,
            top_k,
            store if rows is not None else None,
            dtype=np.float64 if self.fp64 else np.float32,
        )
        self.queue.finish()
        self._pending.clear()
        return values.astype(np.float64), indices


def _centred_turns(frequency: float, tau: np.ndarray) -> np.ndarray:
    """``frequency * tau`` less its nearest integer, from the exact product
    (Dekker's two-product: the rounding of ``frequency * tau`` is kept)."""
    product = frequency * tau
    f_hi, f_lo = _split(np.float64(frequency))
    t_hi, t_lo = _split(tau)
    error = ((f_hi * t_hi - product) + f_hi * t_lo + f_lo * t_hi) + f_lo * t_lo
    turns = (product - np.rint(product)) + error
    return turns - np.rint(turns)


def _split(x: Any) -> tuple[Any, Any]:
    """``x = hi + lo`` exactly with ``hi`` holding the top 26 bits (Veltkamp)."""
    scaled = 134217729.0 * x
    hi = scaled - (scaled - x)
    return hi, x - hi


# }}}
