"""Box least squares transit searches of light curves and catalogs on the device.

Kovács, Zucker & Mazeh (2002) with astropy's ``BoxLeastSquares`` parameters
and results. Each object's times are taken from its earliest one
(``tau = t - min t``), its values from their median (``u = y - median y``),
and weighted by ``v = dy**-2``. A box ``I`` (the points in transit) gives

* ``depth = ybar_out - ybar_in`` (weighted means of ``u`` outside and inside),
* ``depth_err = sqrt(1 / V_in + 1 / V_out)`` (``V``: sums of ``v``),
* ``depth_snr = depth / depth_err`` and ``log_likelihood = V_in depth**2 / 2``.

Per trial period the search keeps the box of greatest ``objective``
(``"likelihood"``: ``log_likelihood``, ``"snr"``: ``depth_snr``) among the
boxes of every duration, and reports astropy's fields for it.

* ``method="binned"`` (astropy's ``"fast"``): bins of ``min(durations) /
  oversample`` over the period, boxes of whole bins, prefix sums. With
  ``compat="astropy"`` it is astropy's algorithm, including its two gaps at
  phase 0 (the last, partial bin is left out of every box, and boxes longer
  than ``oversample`` bins never straddle phase 0; see
  ``docs/design/phase_statistics.md``); with ``compat=None`` (default) boxes
  wrap around phase 0 and every start is tried.
* ``method="exact"`` (astropy's ``"slow"``): for each duration ``d``, box
  centres every ``d / oversample`` from phase 0, each box holding the points
  strictly within ``d / 2`` of its centre.

The device (``cl_kernels/bls.mako``) folds, bins and scans one (object,
period) per work-group and reduces the periodograms to each object's top-k
peaks (``cl_kernels/peaks.mako``); the objects are spread over the selected
devices in batches (``clperiod.engine.scheduler.run_on_devices``). Box sums
are exact 64-bit fixed-point integers (each object's ``u v`` and ``v``
scaled so that their sums stay below 2**61; ``v`` at least one unit), so
boxes holding the same points tie exactly, as in astropy, and a box is
empty exactly when its weight is 0.
The binned search fills each object's bins in one of two ways, which give the
same integers: every point adds its weights into its bin with atomic adds
(``Layout.binning="atomic"``), or, for points in time order, each bin's sums
are differences of the points' prefix sums at the first point of each (cycle,
bin) (``"prefix"``). By default an object takes the prefix fill where
its (cycle, bin) boundaries over the trial periods do not outnumber its points
times the periods: densely sampled light curves (TESS, Kepler), not sparse
ground-based ones.
The host turns the chosen boxes' sums into float64 fields, so fp32 kernels
(folding in double-single, objective in float) report fp64-accurate values of
the boxes they choose.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of, refuse_masked
from clperiod.engine import kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_queue,
    require_fp64,
    select_devices,
    upload,
)
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.grid import MAX_NF, FrequencyArray, FrequencyGrid, split_float32
from clperiod.periodograms import bls_stats
from clperiod.periodograms.inputs import (
    NO_PEAK,
    PeakResults,
    check_choice,
    check_top_k,
    degenerate_status,
    segment_reduce,
    segment_sum,
)
from clperiod.periodograms.standardize import standardize

__all__ = ["MAX_TOP_K", "MIN_POINTS", "BlsResult", "Layout", "bls", "layout_for"]

Objective = Literal["likelihood", "snr"]
Method = Literal["binned", "exact", "fast", "slow"]
Precision = Literal["fp64", "fp32"]
#: astropy's method names for the two searches.
_METHODS = {"binned": "binned", "fast": "binned", "exact": "exact", "slow": "exact"}
#: Fewest observations of a searched object: more than the box model's two
#: levels (in and out of transit), which two points always fit exactly.
MIN_POINTS = 3
#: Most peaks kept per object.
MAX_TOP_K = 64
#: Per object, the fixed-point sums of ``|u v|`` and of ``v`` stay below
#: 2**(_FIXED_BITS + 1) (padded bins may count some twice: < 2**62).
_FIXED_BITS = 60
#: Most (object, period) results one launch writes.
_MAX_BLOCK = 1 << 22
#: Most bytes of global-memory bins one launch of the binned kernel uses.
_SCRATCH_BYTES = 1 << 28
#: Local memory the compiler may keep for itself, in bytes.
_LOCAL_MARGIN = 1024
#: Points apart in time of neighbouring points in device memory (:func:`_interleaved`).
_INTERLEAVE = 32
#: Points staged per tile of the exact kernel.
_TILE = 256
#: Work-group sizes of the search and of the peak search, by device kind.
_WG = {"gpu": 256, "other": 64}
_PEAKS_WG = {"gpu": 128, "other": 16}
#: An object's bins are filled from prefix sums (:func:`_prefix_objects`) where
#: its boundary searches over the trial periods are at most this many per point
#: and period.
_PREFIX_WORK = 1.0
#: Bin counts of one launch of the binned search differ at most by this factor
#: (a launch sizes its local memory for its longest period).
_BINS_RATIO = 2
#: Cycles whose boundary searches the prefix fill issues together.
_BATCH = 2
_FIELDS = (
    "power",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
)


@dataclass(frozen=True)
class Layout:
    """Where the binned kernel keeps its bins and how it fills them.

    Attributes
    ----------
    local_bins : bool or None
        Bins in local memory (True), in global memory (False), or local
        wherever a launch's longest period fits (None).
    atomics : {"int64", "split"}
        64-bit atomic adds (``cl_khr_int64_base_atomics``), or each as two
        32-bit atomic adds with a carry.
    local_bytes : int or None
        The local memory a work-group may use, in bytes (None: the device's).
    binning : {None, "atomic", "prefix"}
        How every object's bins are filled (module notes): each point added
        with atomic adds, from prefix sums of its points in time order, or
        per object by the work of each (None). fp64: both give the same bins,
        bit for bit; fp32: the prefix fill places points by double-single
        times (a point within ~2**-44 of an edge relative to the times may
        fall differently), for objects whose edges allow it.
    """

    local_bins: bool | None
    atomics: str
    local_bytes: int | None = None
    binning: str | None = None

    def __post_init__(self) -> None:
        if self.local_bins is not None:
            checks.boolean("local_bins", self.local_bins)
        checks.choice("atomics", self.atomics, ("int64", "split"))
        if self.local_bytes is not None:
            checks.integer("local_bytes", self.local_bytes, low=1)
        checks.choice("binning", self.binning, (None, "atomic", "prefix"))


def layout_for(info: DeviceInfo) -> Layout:
    """The layout for a device: local bins where they fit, 64-bit atomic adds
    where the device has them (else split ones, which need a little-endian device).

    Raises
    ------
    ValueError
        A big-endian device without 64-bit atomic adds.
    """
    if _has_int64_atomics(info):
        return Layout(local_bins=None, atomics="int64")
    if not info.device.endian_little:
        raise ValueError(
            f"{info.label} has neither 64-bit atomic adds nor a little-endian memory, "
            "which the binned BLS kernel needs"
        )
    return Layout(local_bins=None, atomics="split")


def _has_int64_atomics(info: DeviceInfo) -> bool:
    return "cl_khr_int64_base_atomics" in info.device.extensions


def _checked_layout(layout: Layout | None, info: DeviceInfo) -> Layout:
    """``layout`` (default :func:`layout_for`), or ValueError where the device
    lacks its atomics."""
    if layout is None:
        return layout_for(info)
    if not isinstance(layout, Layout):
        raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
    if layout.atomics == "int64" and not _has_int64_atomics(info):
        raise ValueError(f"{info.label} lacks cl_khr_int64_base_atomics: use atomics='split'")
    return layout


@dataclass(frozen=True, repr=False)
class BlsResult(PeakResults):
    """Box least squares search results, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    period_best, power_best : ndarray
        The trial period of highest power and that power (NaN where
        ``status`` is not OK); among equal powers the shortest period.
    depth_best, depth_err_best, duration_best, transit_time_best,
    depth_snr_best, log_likelihood_best : ndarray
        astropy's fields of the best box at ``period_best``.
    top_k_index, top_k_power : ndarray, shape (n_objects, top_k)
        The ``top_k`` highest distinct peaks (local maxima along the sorted
        periods), best first: their columns of ``periods`` (-1 and NaN
        where an object has fewer). ``top_k_period`` gives their periods.
    frequency_best, top_k_frequency : ndarray
        ``1 / period_best`` and ``1 / top_k_period``.
    status : ndarray of Status
        OK; TOO_FEW_POINTS (fewer than
        :data:`~clperiod.periodograms.bls.MIN_POINTS` rows, or no trial
        period has a box with observations both inside and outside);
        ZERO_VARIANCE (constant values); ZERO_BASELINE (all times equal);
        OUT_OF_RANGE (the fields overflow float64); NOT_FINITE and
        BAD_UNCERTAINTY as the other searches use them.
    periods : ndarray
        The trial periods, in the order given (the columns of the
        periodogram fields).
    power, depth, depth_err, duration, transit_time, depth_snr, log_likelihood :
        ndarray, shape (n_objects, n_periods), or None
        With ``periodogram=True``: astropy's ``BoxLeastSquaresResults``
        fields of every object at every period (``power`` -inf and the others
        NaN at a period without an admissible box; rows of objects that are
        not OK all NaN); else None.
    grid : FrequencyGrid or FrequencyArray
        The trial frequencies (the grid given, or ``1 / periods``).
    durations : ndarray
        The box durations searched, in the order given.
    objective, method : str
        The objective and the search (``"binned"`` or ``"exact"``).
    oversample : int
        Bins per shortest duration (binned) or box centres per duration (exact).
    compat : str or None
        ``"astropy"`` or None (binned).
    devices : list of str
        Devices used.
    """

    ids: np.ndarray
    period_best: np.ndarray
    power_best: np.ndarray
    depth_best: np.ndarray
    depth_err_best: np.ndarray
    duration_best: np.ndarray
    transit_time_best: np.ndarray
    depth_snr_best: np.ndarray
    log_likelihood_best: np.ndarray
    top_k_index: np.ndarray
    top_k_power: np.ndarray
    frequency_best: np.ndarray
    top_k_frequency: np.ndarray
    status: np.ndarray
    periods: np.ndarray
    power: np.ndarray | None
    depth: np.ndarray | None
    depth_err: np.ndarray | None
    duration: np.ndarray | None
    transit_time: np.ndarray | None
    depth_snr: np.ndarray | None
    log_likelihood: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    durations: np.ndarray
    objective: str
    method: str
    oversample: int
    compat: str | None
    devices: list[str]
    catalog: Catalog = field(repr=False)

    @property
    def period(self) -> np.ndarray:
        """Best period of each object (the trial period itself)."""
        return self.period_best

    @property
    def top_k_period(self) -> np.ndarray:
        """Periods of the top-k peaks (NaN where an object has fewer)."""
        found = self.top_k_index >= 0
        return np.where(found, self.periods[np.where(found, self.top_k_index, 0)], np.nan)

    def _lightcurve(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The rows of OK object ``index``, or IndexError / ValueError."""
        index = checks.integer("index", index)
        if not -self.catalog.n_objects <= index < self.catalog.n_objects:
            raise IndexError(f"index {index} out of range for {self.catalog.n_objects} objects")
        index %= self.catalog.n_objects
        if self.status[index] != Status.OK:
            raise ValueError(
                f"object {self.ids[index]!r} (index {index}) has no best box: status "
                f"{Status(self.status[index]).name}"
            )
        rows = slice(self.catalog.offsets[index], self.catalog.offsets[index + 1])
        dy = None if self.catalog.dy is None else self.catalog.dy[rows]
        return self.catalog.t[rows], self.catalog.y[rows], dy

    def compute_stats(self, index: int) -> dict[str, Any]:
        """Vetting statistics of object ``index``'s best box (host, float64).

        :func:`clperiod.periodograms.bls_stats.compute_stats` of the object's
        rows at ``period_best``, ``duration_best`` and ``transit_time_best``:
        astropy's ``BoxLeastSquares.compute_stats``.

        Raises
        ------
        IndexError
            ``index`` out of range.
        ValueError
            The object's status is not OK.
        """
        t, y, dy = self._lightcurve(index)
        index %= self.catalog.n_objects
        return bls_stats.compute_stats(
            t,
            y,
            dy,
            float(self.period_best[index]),
            float(self.duration_best[index]),
            float(self.transit_time_best[index]),
        )

    def model(self, index: int, t_model: Any) -> np.ndarray:
        """Object ``index``'s best box model at times ``t_model`` (astropy's ``model``).

        The weighted mean of its values in transit inside the box, of the
        others outside (:func:`clperiod.periodograms.bls_stats.box_model`).

        Raises
        ------
        IndexError, ValueError
            As :meth:`compute_stats`.
        """
        t, y, dy = self._lightcurve(index)
        index %= self.catalog.n_objects
        return bls_stats.box_model(
            t,
            y,
            dy,
            t_model,
            float(self.period_best[index]),
            float(self.duration_best[index]),
            float(self.transit_time_best[index]),
        )


def bls(
    catalog: Catalog | Any,
    periods: Any,
    durations: Any,
    *,
    objective: Objective = "likelihood",
    method: Method = "binned",
    oversample: int = 10,
    compat: Literal["astropy"] | None = None,
    top_k: int = 1,
    periodogram: bool = False,
    precision: Precision = "fp64",
    device: Any = None,
    layout: Layout | None = None,
) -> BlsResult:
    """Box least squares transit search of every object of a catalog.

    With ``compat="astropy"``, each object's periodogram fields equal
    astropy's ``BoxLeastSquares(t, y, dy).power(periods, durations,
    objective=objective, method=..., oversample=oversample)`` on its rows to
    rounding (``method`` ``"fast"`` for binned, ``"slow"`` for exact).

    Parameters
    ----------
    catalog : Catalog or list of light curves
        The objects (a list of ``(t, y[, dy])`` tuples, DataFrames or Tables
        as :meth:`clperiod.Catalog.from_lightcurves` takes it).
    periods : array_like, FrequencyGrid or FrequencyArray
        Trial periods (> 0, any order, repeats allowed), in the unit of
        ``t``; or frequencies (> 0), whose periods are searched.
        :func:`clperiod.periodograms.bls_stats.autoperiod` gives astropy's grid.
    durations : float or array_like
        Box durations (> 0, each shorter than every period), in the unit of
        ``t``. Among boxes of equal power the first duration given wins.
    objective : {"likelihood", "snr"}
        Maximise the log-likelihood or the depth's signal-to-noise ratio.
    method : {"binned", "exact", "fast", "slow"}
        The binned or exact search (astropy's names ``"fast"`` and ``"slow"``).
    oversample : int
        Bins per shortest duration (binned; the box durations are rounded
        to whole bins) or box centres per duration (exact), >= 1.
    compat : {None, "astropy"}
        Binned: None lets boxes wrap around phase 0 and tries every start;
        ``"astropy"`` reproduces astropy's bins exactly, with its gaps at
        phase 0 (module notes). Not used by the exact search.
    top_k : int
        Distinct peaks kept per object, 1 to
        :data:`~clperiod.periodograms.bls.MAX_TOP_K`.
    periodogram : bool
        Also return every field at every period (``n_objects x n_periods``
        float64 arrays on the host).
    precision : {"fp64", "fp32"}
        The kernels' arithmetic. fp64 folds with astropy's roundings; fp32
        folds in double-single (phases to ~1e-7 cycles for any epoch), so a
        point within ~1e-7 cycles of a bin or box edge may fall on the other
        side, and compares boxes in float; either way the fields of the
        chosen boxes are computed in float64 from exact sums.
    device
        Device selection (see :func:`clperiod.select_devices`); objects are
        spread over every selected device. fp64 needs devices with fp64.
    layout : Layout, optional
        Where the binned kernel keeps its bins on every device and how it
        fills them (default :func:`~clperiod.periodograms.bls.layout_for` of
        each, which picks the bin filling per object).

    Returns
    -------
    BlsResult

    Raises
    ------
    TypeError
        Bad argument types.
    ValueError
        Bad options; periods or durations not finite and positive; a
        duration not shorter than every period; a search too large for the
        device (bins of one period beyond its memory, indices beyond int32);
        fp64 on a device without it.
    """
    catalog = _checked_catalog(catalog)
    trials = _trial_periods(periods)
    durations = _checked_durations(durations, float(trials.searched[0]))
    options = _Options(
        objective=checks.choice("objective", objective, ("likelihood", "snr")),
        method=_METHODS[checks.choice("method", method, tuple(_METHODS))],
        oversample=checks.integer("oversample", oversample, low=1),
        compat=checks.choice("compat", compat, (None, "astropy")),
        top_k=check_top_k(top_k, MAX_TOP_K),
        periodogram=checks.boolean("periodogram", periodogram),
    )
    check_choice("precision", precision, Precision)
    devices = select_devices(device)
    layouts = []
    for info in devices:
        if precision == "fp64":
            require_fp64(info)
        layouts.append(_checked_layout(layout, info))
    plan = _plan(trials.searched, durations, options, precision == "fp64")
    objects, found = _search_devices(
        list(zip(devices, layouts, strict=True)),
        catalog,
        plan,
        options,
        None if layout is None else layout.binning,
    )
    return _result(
        catalog, trials, plan, options, objects, found, [info.label for info in devices]
    )


@dataclass(frozen=True)
class _Options:
    """The checked options of a search (``method``: "binned" or "exact")."""

    objective: str
    method: str
    oversample: int
    compat: str | None
    top_k: int
    periodogram: bool


# {{{ inputs


def _checked_catalog(catalog: Any) -> Catalog:
    """``catalog`` (a Catalog or list of light curves) with int32 row offsets."""
    catalog = catalog_of(catalog)
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the BLS kernels index at most "
            f"{np.iinfo(np.int32).max} points (search it in slices)"
        )
    return catalog


@dataclass(frozen=True)
class _Trials:
    """Trial periods as given, the distinct ones in rising order (what the
    device searches) and where the given ones lie among those."""

    periods: np.ndarray
    searched: np.ndarray
    positions: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray


def _trial_periods(periods: Any) -> _Trials:
    """Checked trial periods from periods or a frequency grid."""
    if isinstance(periods, (FrequencyGrid, FrequencyArray)):
        frequencies = periods.frequencies()
        if np.any(frequencies == 0):
            raise ValueError("the grid holds frequency 0, which has no period")
        given, grid = 1.0 / frequencies, periods
    else:
        refuse_masked("periods", periods)
        given = np.array(periods, dtype=np.float64, ndmin=1)
        if given.ndim != 1 or given.size == 0:
            raise ValueError(f"periods must be a non-empty 1-D array, got shape {given.shape}")
        if not (np.isfinite(given).all() and (given > 0).all()):
            bad = int(np.flatnonzero(~(np.isfinite(given) & (given > 0)))[0])
            raise ValueError(f"periods must be finite and > 0, got {given[bad]} at index {bad}")
        grid = FrequencyArray(1.0 / given)
    if given.size > MAX_NF:
        raise ValueError(f"at most {MAX_NF} periods, got {given.size}")
    if given.size == 1 or bool(np.all(given[1:] > given[:-1])):
        return _Trials(given, given, None, grid)
    searched, positions = np.unique(given, return_inverse=True)
    return _Trials(given, searched, positions.ravel(), grid)


def _checked_durations(durations: Any, shortest_period: float) -> np.ndarray:
    """Durations as a float64 1-D array: finite, > 0, shorter than every period."""
    refuse_masked("durations", durations)
    values = np.array(durations, dtype=np.float64, ndmin=1)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"durations must be a number or a non-empty 1-D array, got {values}")
    if not (np.isfinite(values).all() and (values > 0).all()):
        raise ValueError(f"durations must be finite and > 0, got {values}")
    if not values.max() < shortest_period:
        raise ValueError(
            f"the longest duration ({values.max():.6g}) must be shorter than the shortest "
            f"period searched ({shortest_period:.6g}): search longer periods only (a lower "
            "maximum frequency; --min-period on the command line) or give shorter durations"
        )
    return values


# }}}
# {{{ the light curves as the kernels take them


@dataclass(frozen=True)
class _Objects:
    """Per object of a catalog: ``status`` (OK, TOO_FEW_POINTS or
    ZERO_VARIANCE), ``totals`` (the sums of its kept ``uv`` and ``v``),
    ``t_ref = min t``, and what turns integer sums into the data's units:
    ``ybar = (sum uv / sum v) * 2**depth_exponent`` and ``V = sum v *
    weight_unit / dy_min**2`` (module notes)."""

    status: np.ndarray
    totals: np.ndarray
    t_ref: np.ndarray
    depth_exponent: np.ndarray
    weight_unit: np.ndarray
    dy_min: np.ndarray


@dataclass(frozen=True)
class _Prepared:
    """The points of a catalog's objects that can be searched (module notes).

    Objects not OK keep no points; per kept point ``tau = t - min t`` and the
    fixed-point ``uv`` and ``v``; the ``offsets`` of each object's kept
    points, and the :class:`_Objects` fields.

    Per object ``sorted`` tells whether the binned kernel fills its bins from
    prefix sums, its points then in time order (else interleaved,
    :func:`_interleaved`). ``tables`` holds those objects' prefix sums and guides.
    """

    offsets: np.ndarray
    tau: np.ndarray
    uv: np.ndarray
    v: np.ndarray
    objects: _Objects
    sorted: np.ndarray
    tables: _PrefixTables


@dataclass(frozen=True)
class _PrefixTables:
    """For the objects filled from prefix sums (zeros for the others; empty
    arrays where there are none): from entry ``offsets[k] + k`` the ``n + 1``
    exclusive prefix sums ``uv`` and ``v`` of object ``k``'s ``n`` points in
    time order, and its ``guide``, the first point at or after ``j h`` for
    ``j = 0 .. n``; per object ``inv_step = 1 / h = n / span`` (0 for span 0)."""

    uv: np.ndarray
    v: np.ndarray
    guide: np.ndarray
    inv_step: np.ndarray


def _prepare(catalog: Catalog, plan: _Plan, binning: str | None) -> _Prepared:
    """The kernels' inputs for ``catalog`` (see :class:`_Prepared`), each
    object's bins filled as ``binning`` asks (:func:`_prefix_objects`)."""
    status = _initial_status(catalog)
    ok = status == Status.OK
    keep = np.repeat(ok, catalog.lengths)
    offsets = np.concatenate([[0], np.cumsum(np.where(ok, catalog.lengths, 0))])
    owners = np.repeat(np.arange(catalog.n_objects), np.diff(offsets))
    t = catalog.t[keep]
    t_ref = segment_reduce(np.minimum, t, offsets, np.nan)
    tau = t - t_ref[owners]
    dy = None if catalog.dy is None else catalog.dy[keep]
    fixed = _fixed_point(catalog.y[keep], dy, offsets, owners)
    spans = segment_reduce(np.maximum, tau, offsets)
    sorted_objects = _prefix_objects(plan, np.diff(offsets), spans, binning)
    order = _kernel_order(tau, offsets, owners, sorted_objects)
    tau, uv, v = tau[order], fixed.uv[order], fixed.v[order]
    return _Prepared(
        offsets=offsets.astype(np.int32),
        tau=tau,
        uv=uv,
        v=v,
        objects=_Objects(
            status=status,
            totals=fixed.totals,
            t_ref=t_ref,
            depth_exponent=fixed.depth_exponent,
            weight_unit=fixed.weight_unit,
            dy_min=fixed.dy_min,
        ),
        sorted=sorted_objects,
        tables=_prefix_tables(tau, uv, v, offsets, spans, sorted_objects),
    )


def _prefix_objects(
    plan: _Plan, lengths: np.ndarray, spans: np.ndarray, binning: str | None
) -> np.ndarray:
    """Per object, whether the binned kernel fills its bins from prefix sums:
    never (``binning="atomic"``), wherever it can (``"prefix"``: objects with
    points; fp32 those of :func:`_double_single_edges`), or (None) where it can
    and its boundary searches, ``(floor(span / P) + 1) (K + 1)`` at each
    period, add up to at most :data:`_PREFIX_WORK` times its points times the
    periods."""
    if not plan.binned or binning == "atomic":
        return np.zeros(lengths.size, dtype=bool)
    possible = lengths > 0
    if not plan.fp64:
        possible &= _double_single_edges(plan, spans)
    if binning == "prefix":
        return possible
    boundaries = plan.real_bins.astype(np.float64) + 1
    searches = spans * np.sum(boundaries / plan.periods) + np.sum(boundaries)
    return possible & (searches <= _PREFIX_WORK * lengths * plan.periods.size)


def _double_single_edges(plan: _Plan, spans: np.ndarray) -> np.ndarray:
    """Per object, whether the fp32 prefix fill's double-single edges (~2**-44
    relative) keep their order: under 2**22 cycles of the shortest period, and
    bins wider than 2**-30 times the span plus the longest period."""
    periods = plan.periods
    return (spans < 2.0**22 * periods[0]) & (plan.width > 2.0**-30 * (spans + periods[-1]))


def _prefix_tables(
    tau: np.ndarray,
    uv: np.ndarray,
    v: np.ndarray,
    offsets: np.ndarray,
    spans: np.ndarray,
    sorted_objects: np.ndarray,
) -> _PrefixTables:
    """The :class:`_PrefixTables` of the points ``tau``, ``uv``, ``v`` (in the
    kernel's order) for the objects ``sorted_objects``."""
    if not sorted_objects.any():
        empty = np.zeros(0, np.int64)
        return _PrefixTables(empty, empty, empty.astype(np.int32), np.zeros(spans.size))
    lengths = np.diff(offsets)
    n_objects = lengths.size
    owners = np.repeat(np.arange(n_objects), lengths)
    first_entry = offsets[:-1] + np.arange(n_objects)
    kept = np.repeat(sorted_objects, lengths + 1)
    # the entry after each point holds the sum through it (modulo 2**64: exact)
    after = np.arange(tau.size) + owners + 1

    def exclusive_sums(values: np.ndarray) -> np.ndarray:
        running = np.cumsum(values.view(np.uint64))
        before = np.concatenate([np.zeros(1, np.uint64), running])[offsets[:-1]]
        sums = np.zeros(tau.size + n_objects, np.uint64)
        sums[after] = running - before[owners]
        return np.where(kept, sums.view(np.int64), 0)

    with np.errstate(divide="ignore", invalid="ignore"):
        inv_step = np.where(sorted_objects & (spans > 0), lengths / spans, 0.0)
    cells = np.minimum(np.floor(tau * inv_step[owners]), lengths[owners]).astype(np.int64)
    counts = np.bincount(first_entry[owners] + cells, minlength=tau.size + n_objects)
    before_cell = np.cumsum(counts) - counts - np.repeat(offsets[:-1], lengths + 1)
    return _PrefixTables(
        uv=exclusive_sums(uv),
        v=exclusive_sums(v),
        guide=np.where(kept, before_cell, 0).astype(np.int32),
        inv_step=inv_step,
    )


def _initial_status(catalog: Catalog) -> np.ndarray:
    """OK, or why an object is not searched: too few rows, invalid values
    (NOT_FINITE here; :func:`degenerate_status` later tells which) or constant ones."""
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < MIN_POINTS] = Status.TOO_FEW_POINTS
    status[_invalid_objects(catalog)] = Status.NOT_FINITE
    with np.errstate(all="ignore"):
        flat = standardize(catalog.y, catalog.dy, catalog.offsets, center=True).flat
    status[(status == Status.OK) & flat] = Status.ZERO_VARIANCE
    return status


@dataclass(frozen=True)
class _FixedPoint:
    """Per point ``uv`` and ``v`` as integers; per object their ``totals`` and
    the units of the sums (see :class:`_Prepared`)."""

    uv: np.ndarray
    v: np.ndarray
    totals: np.ndarray
    depth_exponent: np.ndarray
    weight_unit: np.ndarray
    dy_min: np.ndarray


def _fixed_point(
    y: np.ndarray, dy: np.ndarray | None, offsets: np.ndarray, owners: np.ndarray
) -> _FixedPoint:
    """``u v`` and ``v`` in each object's own units (``u = y - median y`` over
    the power of two of its largest magnitude, ``v = (min dy / dy)**2``),
    scaled by powers of two so that each object's sums of magnitudes stay below
    2**_FIXED_BITS, and rounded to int64 (``v`` to at least 1)."""
    n_objects = offsets.size - 1
    u = y - _segment_median(y, offsets)[owners]
    u_exponent = np.frexp(segment_reduce(np.maximum, np.abs(u), offsets))[1]
    dy_min = np.ones(n_objects) if dy is None else segment_reduce(np.minimum, dy, offsets)
    v_relative = np.ones_like(y) if dy is None else (dy_min[owners] / dy) ** 2
    uv_relative = np.ldexp(u, -u_exponent[owners]) * v_relative
    uv_shift = _fixed_point_shift(segment_sum(np.abs(uv_relative), offsets))
    v_shift = _fixed_point_shift(segment_sum(v_relative, offsets))
    uv = np.rint(np.ldexp(uv_relative, uv_shift[owners])).astype(np.int64)
    v = np.maximum(np.rint(np.ldexp(v_relative, v_shift[owners])), 1).astype(np.int64)
    return _FixedPoint(
        uv=uv,
        v=v,
        totals=np.column_stack([_integer_sums(uv, offsets), _integer_sums(v, offsets)]),
        depth_exponent=v_shift - uv_shift + u_exponent,
        weight_unit=np.ldexp(1.0, -v_shift),
        dy_min=dy_min,
    )


def _kernel_order(
    tau: np.ndarray, offsets: np.ndarray, owners: np.ndarray, sorted_objects: np.ndarray
) -> np.ndarray:
    """The order of the points in the kernels: in time within the objects of
    ``sorted_objects``, :func:`_interleaved` within the others."""
    if sorted_objects.all():
        return np.lexsort((tau, owners))
    if not sorted_objects.any():
        return _interleaved(offsets, owners)
    return np.where(
        sorted_objects[owners], np.lexsort((tau, owners)), _interleaved(offsets, owners)
    )


def _interleaved(offsets: np.ndarray, owners: np.ndarray) -> np.ndarray:
    """An order of each object's points in which neighbours are
    :data:`_INTERLEAVE` observations apart: points ``0, S, 2S, ..., 1, S + 1,
    ...``. Neighbouring work-items then add into different bins (the sums do
    not depend on the order), not into the same one from one stretch of a
    densely sampled light curve."""
    position = np.arange(owners.size) - offsets[owners]
    return np.lexsort((position, position % _INTERLEAVE, owners))


def _invalid_objects(catalog: Catalog) -> np.ndarray:
    """Per object, whether a value is not finite or a ``dy`` not positive (only
    catalogs made by the constructor, which does not check values, hold them)."""
    if catalog.checked:
        return np.zeros(catalog.n_objects, dtype=bool)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(catalog.t) & np.isfinite(catalog.y))
        if catalog.dy is not None:
            bad |= ~(np.isfinite(catalog.dy) & (catalog.dy > 0))
    return segment_sum(bad.astype(np.float64), catalog.offsets) > 0


def _segment_median(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-object medians as ``numpy.median`` gives them (NaN for no rows)."""
    lengths = np.diff(offsets)
    owners = np.repeat(np.arange(lengths.size), lengths)
    by_value = np.argsort(values)
    ordered = values[by_value[np.argsort(owners[by_value], kind="stable")]]
    median = np.full(lengths.size, np.nan)
    filled = np.flatnonzero(lengths)
    low = offsets[filled] + (lengths[filled] - 1) // 2
    high = offsets[filled] + lengths[filled] // 2
    median[filled] = (ordered[low] + ordered[high]) / 2
    return median


def _fixed_point_shift(sums: np.ndarray) -> np.ndarray:
    """Per object the power of two that brings a sum of magnitudes below
    2**_FIXED_BITS (0 for an empty sum)."""
    exponent = np.frexp(sums)[1]
    return np.where(sums > 0, _FIXED_BITS - exponent, 0)


def _integer_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Exact per-object sums of int64 ``values`` (0 for objects without rows)."""
    sums = np.zeros(offsets.size - 1, dtype=np.int64)
    filled = np.flatnonzero(np.diff(offsets) > 0)
    if filled.size:
        sums[filled] = np.add.reduceat(values, offsets[:-1][filled])
    return sums


# }}}
# {{{ the trial grid as the kernels take it


@dataclass(frozen=True)
class _Plan:
    """Per searched period and duration, what the kernel reads.

    Binned: the bin ``width``, ``real_bins`` (K) per period, ``box_bins``
    (m) per duration and the ``pad``ding; exact: the ``centres`` per
    (period, duration) and the centre ``steps`` per duration. ``key_stride``
    separates the durations in a box's key.
    """

    periods: np.ndarray
    durations: np.ndarray
    fp64: bool
    key_stride: int
    width: float = 0.0
    real_bins: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    box_bins: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    pad: int = 0
    centres: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def binned(self) -> bool:
        """Whether this is a binned search."""
        return self.real_bins.size > 0

    def slot_lengths(self) -> np.ndarray:
        """Binned: per period, the bins holding its prefix sums (``K + pad + 1``)."""
        return self.real_bins.astype(np.int64) + self.pad + 1


def _plan(periods: np.ndarray, durations: np.ndarray, options: _Options, fp64: bool) -> _Plan:
    """The kernel inputs of the trial grid (astropy's operations, in float64)."""
    if options.method == "binned":
        width = float(np.min(durations)) / options.oversample
        real_bins = np.ceil(periods / width)
        box_bins = np.floor(durations / width + 0.5).astype(np.int64)  # C's round()
        pad = options.oversample if options.compat == "astropy" else int(box_bins.max())
        key_stride = int(real_bins[-1]) + pad + 1
        _check_indices(real_bins[-1] + pad + 1, durations.size, key_stride)
        return _Plan(
            periods,
            durations,
            fp64,
            key_stride,
            width=width,
            real_bins=real_bins.astype(np.int32),
            box_bins=box_bins.astype(np.int32),
            pad=pad,
        )
    steps = durations / options.oversample
    centres = np.ceil((periods[:, None] + steps) / steps)  # len(numpy.arange(0, P + s, s))
    key_stride = int(centres.max())
    _check_indices(key_stride, durations.size, key_stride)
    return _Plan(
        periods, durations, fp64, key_stride, centres=centres.astype(np.int32), steps=steps
    )


def _check_indices(largest: float, n_durations: int, key_stride: int) -> None:
    """Raise unless bin or centre counts and box keys fit int32."""
    limit = np.iinfo(np.int32).max
    if not (largest < limit and n_durations * key_stride < limit):
        raise ValueError(
            f"the search needs {largest:.0f} bins or box centres per period for "
            f"{n_durations} durations, beyond the kernels' int32 indices: use fewer, "
            "shorter periods or a smaller oversample"
        )


# }}}
# {{{ the device search


@dataclass(frozen=True)
class _Found:
    """What the device found, per object (rows) and kept peak (columns):
    ``indices`` (into the searched periods, NO_PEAK for none), ``keys`` and
    ``sums`` (``(..., 2)`` int64) of the chosen boxes; with a periodogram the
    keys and sums of every searched period."""

    indices: np.ndarray
    keys: np.ndarray
    sums: np.ndarray
    all_keys: np.ndarray | None
    all_sums: np.ndarray | None


@dataclass(frozen=True)
class _PeriodRange:
    """One range of periods searched by one kernel variant: owned periods
    ``own_lo .. own_hi - 1``, evaluated ``lo .. hi - 1`` (with each owned
    period's neighbours, for the peak test), and rows per launch."""

    lo: int
    hi: int
    own_lo: int
    own_hi: int
    local_bins: bool
    slot_len: int
    rows: int


def _search_devices(
    devices: list[tuple[DeviceInfo, Layout]],
    catalog: Catalog,
    plan: _Plan,
    options: _Options,
    binning: str | None,
) -> tuple[_Objects, _Found]:
    """:func:`_search` of consecutive batches of objects
    (:func:`~clperiod.engine.scheduler.split_range`), spread over ``devices``
    (each with its layout), each prepared (:func:`_prepare`, the bins filled
    as ``binning`` asks, and with ``compat="astropy"`` :func:`_astropy_copies`)
    by the device thread that takes it; the objects' fields and finds joined
    in catalog order."""
    batches = split_range(0, catalog.n_objects, len(devices)) or [(0, 0)]  # one, if empty
    layouts = {id(info): layout for info, layout in devices}
    astropy = options.method == "binned" and options.compat == "astropy"

    def work(info: DeviceInfo, batch: tuple[int, int]) -> tuple[_Objects, _Found]:
        part = catalog.slice(*batch)
        prepared = _prepare(part, plan, binning)
        found = _search(get_queue(info), info, prepared, plan, options, layouts[id(info)])
        if astropy:
            _astropy_copies(part, prepared, plan, options, found)
        return prepared.objects, found

    parts = run_on_devices([info for info, _ in devices], batches, work)
    if len(parts) == 1:
        return parts[0]
    joined = {
        name: np.concatenate([getattr(per_object, name) for per_object, _ in parts])
        for name in ("status", "totals", "t_ref", "depth_exponent", "weight_unit", "dy_min")
    }
    return _Objects(**joined), _joined([found for _, found in parts], plan.periods.size, options)


def _joined(parts: list[_Found], n_periods: int, options: _Options) -> _Found:
    """The batches' finds, in order, as one; peak columns (one set of
    ``top_k`` per period range, which differ between devices) padded with
    NO_PEAK, which ranks last."""
    columns = max(part.indices.shape[1] for part in parts)

    def padded(array: np.ndarray, fill: int) -> np.ndarray:
        extra = [(0, 0), (0, columns - array.shape[1])] + [(0, 0)] * (array.ndim - 2)
        return np.pad(array, extra, constant_values=fill)

    periodogram = options.periodogram
    return _Found(
        indices=np.concatenate([padded(part.indices, NO_PEAK) for part in parts]),
        keys=np.concatenate([padded(part.keys, NO_PEAK) for part in parts]),
        sums=np.concatenate([padded(part.sums, 0) for part in parts]),
        all_keys=np.concatenate([p.all_keys for p in parts]) if periodogram else None,
        all_sums=np.concatenate([p.all_sums for p in parts]) if periodogram else None,
    )


def _search(
    queue: cl.CommandQueue,
    info: DeviceInfo,
    prepared: _Prepared,
    plan: _Plan,
    options: _Options,
    layout: Layout,
) -> _Found:
    """Run the search kernel over every object and period range; per launch the
    top-k peaks (``peaks_topk``) and their boxes (``bls_gather``), merged on
    the host later; every period's box too with ``options.periodogram``."""
    n_obj, n_periods = prepared.objects.status.size, plan.periods.size
    kind = "gpu" if info.kind == "gpu" else "other"
    wg = min(_WG[kind], 1 << (info.max_work_group_size.bit_length() - 1))
    real = "double" if plan.fp64 else "float"
    pending: list[cl.Event] = []
    inputs = _upload_inputs(queue, prepared, plan, pending)
    prefix = bool(inputs.prefix)
    ranges = list(_ranges(plan, info, layout, n_obj, wg))
    largest = max(block.rows * (block.hi - block.lo) for block in ranges)
    real_size = 8 if plan.fp64 else 4
    outputs = [
        cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes * largest)
        for nbytes in (real_size, 4, 16)
    ]
    columns = len(ranges) * options.top_k
    indices = np.full((n_obj, columns), NO_PEAK, dtype=np.int32)
    keys = np.full((n_obj, columns), NO_PEAK, dtype=np.int32)
    sums = np.zeros((n_obj, columns, 2), dtype=np.int64)
    all_keys = np.full((n_obj, n_periods), NO_PEAK, np.int32) if options.periodogram else None
    all_sums = np.zeros((n_obj, n_periods, 2), np.int64) if options.periodogram else None
    # every buffer before the first launch (allocating waits for the queue on
    # some platforms), each reused by the launches in turn
    top = _top_buffers(queue.context, max(block.rows for block in ranges) * options.top_k)
    scratch_bytes = max(_scratch_bytes(plan, block) for block in ranges)
    scratch = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, scratch_bytes or 1)
    reads: list[tuple[tuple[slice, slice], list[Any], list[Any]]] = []
    for number, block in enumerate(ranges):
        search, gather = _kernels(
            queue.context, plan, options, layout, block.local_bins, prefix, wg
        )
        arguments = _plan_arguments(plan, inputs, block, wg, scratch)
        found = slice(number * options.top_k, (number + 1) * options.top_k)
        for first in range(0, n_obj, block.rows):
            rows = min(block.rows, n_obj - first)
            search(
                queue,
                ((block.hi - block.lo) * wg, rows),
                (wg, 1),
                *inputs.points,
                np.int32(first),
                *inputs.periods,
                np.int32(block.lo),
                np.int32(block.hi - block.lo),
                np.int32(plan.key_stride),
                *arguments,
                *outputs,
            )
            chosen = slice(first, first + rows)
            peaks = _top_boxes(
                queue,
                gather,
                outputs,
                top,
                rows,
                block,
                n_periods,
                options.top_k,
                kind,
                real,
                pending,
            )
            reads.append(((chosen, found), [indices, keys, sums], peaks))
            if all_keys is not None and all_sums is not None:
                own = slice(block.own_lo, block.own_hi)
                boxes = _read_boxes(queue, outputs, rows, block, pending)
                reads.append(((chosen, own), [all_keys, all_sums], boxes))
                _settle(queue, reads)  # a periodogram's launches are not held twice
    _settle(queue, reads)
    pending.clear()
    return _Found(indices, keys, sums, all_keys, all_sums)


def _settle(
    queue: cl.CommandQueue, reads: list[tuple[tuple[slice, slice], list[Any], list[Any]]]
) -> None:
    """Wait for the queue, then copy each read's arrays into its targets at its
    place, and forget the reads."""
    queue.finish()
    for where, targets, values in reads:
        for target, value in zip(targets, values, strict=True):
            target[where] = value
    reads.clear()


@dataclass(frozen=True)
class _Inputs:
    """Device copies: the point arguments, the period arguments, the plan's
    arrays (binned: [bin scale (fp32),] K, m; exact: centres, steps, half widths)
    and the prefix fill's arguments (:func:`_prefix_inputs`)."""

    points: list[cl.Buffer]
    periods: list[cl.Buffer]
    plan: list[cl.Buffer]
    prefix: list[Any]


def _upload_inputs(
    queue: cl.CommandQueue, prepared: _Prepared, plan: _Plan, pending: list[cl.Event]
) -> _Inputs:
    """Device copies of the points, the periods and the plan's arrays."""
    if plan.fp64:
        times, periods = [prepared.tau], [plan.periods]
    else:
        times, periods = list(split_float32(prepared.tau)), list(split_float32(1.0 / plan.periods))
    points = [upload(queue, a, pending) for a in (*times, prepared.uv, prepared.v)]
    points += [
        upload(queue, prepared.offsets, pending),
        upload(queue, prepared.objects.totals, pending),
    ]
    if plan.binned:
        scale = [] if plan.fp64 else [(plan.periods / plan.width).astype(np.float32)]
        arrays = [*scale, plan.real_bins, plan.box_bins]
    elif plan.fp64:
        arrays = [plan.centres, plan.steps, 0.5 * plan.durations]
    else:
        step = plan.steps[None, :] / plan.periods[:, None]
        half = 0.5 * plan.durations[None, :] / plan.periods[:, None]
        arrays = [plan.centres, step.astype(np.float32), half.astype(np.float32)]
    return _Inputs(
        points=points,
        periods=[upload(queue, a, pending) for a in periods],
        plan=[upload(queue, np.ascontiguousarray(a), pending) for a in arrays],
        prefix=_prefix_inputs(queue, prepared, plan, pending),
    )


def _prefix_inputs(
    queue: cl.CommandQueue, prepared: _Prepared, plan: _Plan, pending: list[cl.Event]
) -> list[Any]:
    """The binned kernel's prefix-fill arguments (empty where no object takes
    it): which objects, their tables (the prefix sums as (uv, v) pairs), [fp64:
    the times in float; fp32: the periods and bin width in double-single]."""
    if not (plan.binned and prepared.sorted.any()):
        return []
    tables = prepared.tables
    inv_step = tables.inv_step.astype(np.float64 if plan.fp64 else np.float32)
    sums = np.column_stack([tables.uv, tables.v])
    arrays = [prepared.sorted.astype(np.int32), sums, tables.guide, inv_step]
    if plan.fp64:
        arrays.append(prepared.tau.astype(np.float32))
        return [upload(queue, a, pending) for a in arrays]
    width = [np.float32(part[0]) for part in split_float32(np.array([plan.width]))]
    arrays += list(split_float32(plan.periods))
    return [*(upload(queue, a, pending) for a in arrays), *width]


def _ranges(
    plan: _Plan, info: DeviceInfo, layout: Layout, n_obj: int, wg: int
) -> Iterator[_PeriodRange]:
    """The searched periods in ranges that one kernel variant evaluates (binned:
    bin counts within a factor :data:`_BINS_RATIO`, in local memory where they
    fit), each with the rows per launch that the block and scratch limits allow."""
    n_periods = plan.periods.size
    slots = plan.slot_lengths() if plan.binned else np.ones(n_periods, np.int64)
    local_mem = info.local_mem if layout.local_bytes is None else layout.local_bytes
    local_room = (min(local_mem, info.local_mem) - _LOCAL_MARGIN - 16 * wg) // 16
    lo = 0
    while lo < n_periods:
        hi = _range_end(plan, slots, lo, local_room, layout)
        slot_len = int(slots[min(hi + 1, n_periods) - 1])  # the neighbour's too
        local_bins = plan.binned and layout.local_bins is not False and slot_len <= local_room
        scratch = 16 * slot_len if plan.binned and not local_bins else 0
        _check_room(plan, info, layout, hi, slot_len, local_bins, scratch)
        if scratch:
            hi = min(hi, lo + max(1, _SCRATCH_BYTES // scratch - 2))
        evaluated = min(hi + 1, n_periods) - max(lo - 1, 0)
        rows = max(1, _MAX_BLOCK // evaluated)
        if scratch:
            rows = max(1, min(rows, _SCRATCH_BYTES // (scratch * evaluated)))
        yield _PeriodRange(
            lo=max(lo - 1, 0),
            hi=min(hi + 1, n_periods),
            own_lo=lo,
            own_hi=hi,
            local_bins=local_bins,
            slot_len=slot_len,
            rows=min(rows, max(n_obj, 1)),
        )
        lo = hi


def _range_end(plan: _Plan, slots: np.ndarray, lo: int, local_room: int, layout: Layout) -> int:
    """Where the range of periods from ``lo`` ends: after at most ``_MAX_BLOCK -
    2`` periods; binned, where the bins of the range and of the period after it
    (evaluated for the peak test) would exceed :data:`_BINS_RATIO` times the
    first's, or the local memory when the first periods fit there."""
    n_periods = slots.size
    hi = min(n_periods, lo + _MAX_BLOCK - 2)
    if not plan.binned:
        return hi
    limit = _BINS_RATIO * slots[lo]
    if layout.local_bins is not False and slots[min(lo + 1, n_periods - 1)] <= local_room:
        limit = min(limit, local_room)
    end = int(np.searchsorted(slots, limit, side="right"))
    if end < n_periods:
        end -= 1  # the period after the range must fit as well
    return max(lo + 1, min(hi, end))


def _check_room(
    plan: _Plan,
    info: DeviceInfo,
    layout: Layout,
    last: int,
    slot_len: int,
    local_bins: bool,
    scratch: int,
) -> None:
    """Raise where the bins of period ``last - 1`` fit neither the layout asked
    for nor one allocation."""
    period = plan.periods[last - 1]
    if plan.binned and layout.local_bins is True and not local_bins:
        raise ValueError(
            f"period {period} needs {slot_len} bins, beyond the local memory of "
            f"{info.label} ({info.local_mem} bytes)"
        )
    if scratch > min(info.max_alloc, _SCRATCH_BYTES):
        raise ValueError(
            f"period {period} needs {slot_len} bins ({scratch} bytes), beyond what "
            f"{info.label} allocates: use shorter periods, longer durations or a smaller "
            "oversample"
        )


def _kernels(
    context: cl.Context,
    plan: _Plan,
    options: _Options,
    layout: Layout,
    local_bins: bool,
    prefix: bool,
    wg: int,
) -> tuple[cl.Kernel, cl.Kernel]:
    """The search kernel of a range (bins in local memory or not, with the
    prefix fill or not) and the program's gather kernel."""
    method = "binned" if plan.binned else "exact"
    search, gather = kernels.get_kernels(
        context,
        "bls",
        (f"bls_{method}", "bls_gather"),
        real="double" if plan.fp64 else "float",
        wg=wg,
        method=method,
        objective=options.objective,
        compat="astropy" if options.compat == "astropy" else "cyclic",
        bins_local=local_bins,
        atomics=layout.atomics,
        prefix=prefix,
        batch=_BATCH,
        tile=_TILE,
    )
    return search, gather


def _scratch_bytes(plan: _Plan, block: _PeriodRange) -> int:
    """The global memory a range's launches keep their bins in (0: local
    memory, or no bins)."""
    if not plan.binned or block.local_bins:
        return 0
    return 16 * block.slot_len * block.rows * (block.hi - block.lo)


def _plan_arguments(
    plan: _Plan, inputs: _Inputs, block: _PeriodRange, wg: int, scratch: cl.Buffer
) -> list[Any]:
    """The search kernel's arguments between ``key_stride`` and the outputs
    (``scratch``: at least :func:`_scratch_bytes` of ``block``)."""
    part = cl.LocalMemory(16 * wg)
    n_durations = np.int32(plan.durations.size)
    if not plan.binned:
        return [*inputs.plan, n_durations, part]
    width = [np.float64(plan.width)] if plan.fp64 else []
    if block.local_bins:
        bins = [cl.LocalMemory(8 * block.slot_len), cl.LocalMemory(8 * block.slot_len)]
    else:
        bins = [scratch, np.int32(block.slot_len)]
    pad = np.int32(plan.pad)
    return [*width, *inputs.plan, n_durations, pad, *inputs.prefix, *bins, part]


def _top_buffers(context: cl.Context, slots: int) -> list[cl.Buffer]:
    """Device memory for ``slots`` peaks: values, period indices, keys, sums."""
    flags = cl.mem_flags.READ_WRITE
    return [cl.Buffer(context, flags, nbytes * slots) for nbytes in (8, 4, 4, 16)]


def _top_boxes(
    queue: cl.CommandQueue,
    gather: cl.Kernel,
    outputs: list[cl.Buffer],
    top: list[cl.Buffer],
    rows: int,
    block: _PeriodRange,
    n_periods: int,
    top_k: int,
    kind: str,
    real: str,
    pending: list[cl.Event],
) -> list[np.ndarray]:
    """The top-k peaks of a launch's powers (``peaks_topk``) and their boxes
    (``bls_gather``) through the buffers ``top`` (:func:`_top_buffers`):
    period indices, keys and sums, ``(rows, top_k[, 2])``, read without
    waiting (valid once the queue has finished; the copies' events go to
    ``pending``, as a dropped one would wait for its copy holding the GIL)."""
    wg = _PEAKS_WG[kind]
    (peaks,) = kernels.get_kernels(
        queue.context, "peaks", ("peaks_topk",), real=real, wg=wg, top_k=top_k
    )
    slots = rows * top_k
    best_val, best_idx, top_box, top_sums = top
    row_len = block.hi - block.lo
    peaks(
        queue,
        (rows * wg,),
        (wg,),
        outputs[0],
        np.int32(row_len),
        np.int32(block.lo),
        np.int32(block.own_lo - block.lo),
        np.int32(block.own_hi - block.own_lo),
        np.int32(n_periods),
        best_val,
        best_idx,
    )
    gather(
        queue,
        (-(-slots // 64) * 64,),
        None,
        outputs[1],
        outputs[2],
        np.int32(row_len),
        np.int32(block.lo),
        np.int32(top_k),
        np.int32(slots),
        best_idx,
        top_box,
        top_sums,
    )
    indices = np.empty((rows, top_k), np.int32)
    keys = np.empty((rows, top_k), np.int32)
    sums = np.empty((rows, top_k, 2), np.int64)
    for host, device in ((indices, best_idx), (keys, top_box), (sums, top_sums)):
        pending.append(cl.enqueue_copy(queue, host, device, is_blocking=False))
    return [indices, keys, sums]


def _read_boxes(
    queue: cl.CommandQueue,
    outputs: list[cl.Buffer],
    rows: int,
    block: _PeriodRange,
    pending: list[cl.Event],
) -> list[np.ndarray]:
    """The keys and sums of a launch's owned periods, ``(rows, n_own[, 2])``,
    read without waiting (valid once the queue has finished; the copies'
    events go to ``pending``)."""
    keys = np.empty((rows, block.hi - block.lo), np.int32)
    sums = np.empty((rows, block.hi - block.lo, 2), np.int64)
    for host, device in ((keys, outputs[1]), (sums, outputs[2])):
        pending.append(cl.enqueue_copy(queue, host, device, is_blocking=False))
    own = slice(block.own_lo - block.lo, block.own_hi - block.lo)
    return [keys[:, own], sums[:, own]]


# }}}
# {{{ astropy's choice among copies of a box (compat="astropy")


def _astropy_copies(
    catalog: Catalog, prepared: _Prepared, plan: _Plan, options: _Options, found: _Found
) -> None:
    """:func:`_astropy_choices` for the peaks and the periodogram of ``found``."""
    choose = functools.partial(
        _astropy_choices, catalog, prepared, plan, options.oversample, objective=options.objective
    )
    choose(found.keys, found.sums, found.indices)
    if found.all_keys is not None and found.all_sums is not None:
        choose(found.all_keys, found.all_sums, np.arange(plan.periods.size)[None, :])


def _astropy_choices(
    catalog: Catalog,
    prepared: _Prepared,
    plan: _Plan,
    oversample: int,
    keys: np.ndarray,
    sums: np.ndarray,
    period_index: np.ndarray,
    objective: str,
) -> None:
    """Replace, in place, the boxes that astropy's float rounding may choose
    differently: those starting in the first ``oversample`` bins.

    astropy's binned search copies bins ``1 .. oversample`` after the last
    one, so a box inside them has a copy at the end holding the same points.
    The integer sums tie exactly and the kernel keeps the first; astropy's
    float prefix sums differ in the last bits and either may win. For each
    such (object, period) the host repeats astropy's float search
    (:func:`_astropy_key`, ``O(N + bins x durations)``) and takes its box.
    """
    starts = np.where(keys != NO_PEAK, keys % plan.key_stride, plan.key_stride)
    period_index = np.broadcast_to(period_index, keys.shape)
    for obj in np.unique(np.nonzero(starts < oversample)[0]):
        rows = slice(catalog.offsets[obj], catalog.offsets[obj + 1])
        kept = slice(prepared.offsets[obj], prepared.offsets[obj + 1])
        t, y = catalog.t[rows], catalog.y[rows]
        ivar = np.ones_like(y) if catalog.dy is None else 1.0 / catalog.dy[rows] ** 2
        curve = (t - np.min(t), (y - np.median(y)) * ivar, ivar)  # astropy's, in its order
        integers = (prepared.tau[kept], prepared.uv[kept], prepared.v[kept])
        for column in np.flatnonzero(starts[obj] < oversample):
            period = float(plan.periods[period_index[obj, column]])
            key = _astropy_key(curve, period, plan, oversample, objective)
            keys[obj, column] = key
            sums[obj, column] = _box_sums(integers, period, plan, oversample, key)


def _astropy_bins(
    tau: np.ndarray, values: np.ndarray, period: float, plan: _Plan, oversample: int
) -> np.ndarray:
    """astropy's padded prefix sums of ``values`` (float: added in point order,
    as its C loop; int64: exactly) at ``period``."""
    n_real = int(np.ceil(period / plan.width))
    n_bins = n_real + oversample
    wrapped = tau - period * np.floor(tau / period)
    index = np.trunc(wrapped / plan.width).astype(np.int64) + 1
    if values.dtype == np.int64:
        bins = np.zeros(n_bins + 1, dtype=np.int64)
        np.add.at(bins, index, values)
    else:
        bins = np.bincount(index, weights=values, minlength=n_bins + 1)[: n_bins + 1]
    bins[n_real : n_real + oversample] = bins[1 : oversample + 1]
    return np.cumsum(bins)


def _astropy_key(
    curve: tuple[np.ndarray, np.ndarray, np.ndarray],
    period: float,
    plan: _Plan,
    oversample: int,
    objective: str,
) -> int:
    """The key of the box astropy's binned search keeps at ``period``, with its
    float operations (``curve``: ``tau``, ``u v`` and ``v`` as astropy forms
    them); NO_PEAK if none is admissible."""
    tau, uv, ivar = curve
    cumulative_y = _astropy_bins(tau, uv, period, plan, oversample)
    cumulative_v = _astropy_bins(tau, ivar, period, plan, oversample)
    total_y, total_v = np.cumsum(uv)[-1], np.cumsum(ivar)[-1]
    eps = np.finfo(np.float64).eps
    scores = []
    for m in plan.box_bins:
        start = np.arange(cumulative_y.size - m)
        y_in = cumulative_y[start + m] - cumulative_y[start]
        v_in = cumulative_v[start + m] - cumulative_v[start]
        v_out = total_v - v_in
        with np.errstate(all="ignore"):
            mean_in, mean_out = y_in / v_in, (total_y - y_in) / v_out
            depth = mean_out - mean_in
            if objective == "likelihood":
                score = 0.5 * v_in * depth * depth
            else:
                score = depth / np.sqrt(1.0 / v_in + 1.0 / v_out)
        admissible = (v_in >= eps) & (v_out >= eps) & (mean_out >= mean_in)
        padded = np.full(plan.key_stride, -np.inf)
        padded[: start.size] = np.where(admissible, score, -np.inf)
        scores.append(padded)
    joined = np.concatenate(scores)
    best = int(np.argmax(joined))
    return best if np.isfinite(joined[best]) else int(NO_PEAK)


def _box_sums(
    integers: tuple[np.ndarray, np.ndarray, np.ndarray],
    period: float,
    plan: _Plan,
    oversample: int,
    key: int,
) -> np.ndarray:
    """The integer sums of box ``key`` in astropy's layout at ``period``
    (``integers``: the points' ``tau``, ``uv`` and ``v`` as the device has them)."""
    if key == NO_PEAK:
        return np.zeros(2, dtype=np.int64)
    m = int(plan.box_bins[key // plan.key_stride])
    start = key % plan.key_stride
    tau = integers[0]
    sums = []
    for values in integers[1:]:
        cumulative = _astropy_bins(tau, values, period, plan, oversample)
        sums.append(cumulative[start + m] - cumulative[start])
    return np.array(sums, dtype=np.int64)


# }}}


# {{{ results


def _box_fields(
    per_object: _Objects,
    plan: _Plan,
    objective: str,
    objects: np.ndarray,
    period_index: np.ndarray,
    keys: np.ndarray,
    sums: np.ndarray,
) -> dict[str, np.ndarray]:
    """astropy's fields of the boxes ``keys``/``sums`` of ``objects`` at the
    searched periods ``period_index`` (broadcast together), in float64:
    ``power`` -inf and the rest NaN where ``keys`` is NO_PEAK."""
    found = keys != NO_PEAK
    key = np.where(found, keys, 0)
    duration_index, start = key // plan.key_stride, key % plan.key_stride
    period = plan.periods[np.where(found, period_index, 0)]
    totals = per_object.totals[objects]
    with np.errstate(all="ignore"):
        inside_y, inside_v = sums[..., 0].astype(np.float64), sums[..., 1].astype(np.float64)
        outside_y = (totals[..., 0] - sums[..., 0]).astype(np.float64)
        outside_v = (totals[..., 1] - sums[..., 1]).astype(np.float64)
        difference = outside_y / outside_v - inside_y / inside_v
        exponent = per_object.depth_exponent[objects]
        # weights in units of min(dy)**-2, the depth in units of min(dy): no
        # intermediate leaves the float64 range unless a field does
        dy_mantissa, dy_exponent = np.frexp(per_object.dy_min[objects])
        relative = np.ldexp(difference / dy_mantissa, exponent - dy_exponent)
        weight_in = inside_v * per_object.weight_unit[objects]
        spread = np.sqrt(1.0 / weight_in + 1.0 / (outside_v * per_object.weight_unit[objects]))
        fields = {
            "depth": np.ldexp(difference, exponent),
            "depth_err": per_object.dy_min[objects] * spread,
            "depth_snr": relative / spread,
            "log_likelihood": 0.5 * weight_in * relative * relative,
        }
    if plan.binned:
        duration = plan.box_bins[duration_index] * plan.width
        phase = np.fmod(start * plan.width + 0.5 * duration, period)
    else:
        duration = plan.durations[duration_index]
        phase = np.remainder(start * plan.steps[duration_index], period)
    fields["duration"] = duration
    fields["transit_time"] = phase + per_object.t_ref[objects]
    fields["power"] = fields["log_likelihood" if objective == "likelihood" else "depth_snr"]
    for name, value in fields.items():
        fields[name] = np.where(found, value, -np.inf if name == "power" else np.nan)
    return fields


def _best_boxes(
    per_object: _Objects, plan: _Plan, options: _Options, found: _Found
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The fields of each object's top-k peaks, best first (equal powers:
    shorter period first), and their period indices (NO_PEAK: none)."""
    objects = np.arange(per_object.status.size)[:, None]
    fields = _box_fields(
        per_object, plan, options.objective, objects, found.indices, found.keys, found.sums
    )
    rank = np.where(np.isnan(fields["power"]), -np.inf, fields["power"])
    rank = np.where(found.indices == NO_PEAK, -np.inf, rank)
    order = np.lexsort((found.indices, -rank), axis=-1)[:, : options.top_k]
    chosen = {name: np.take_along_axis(value, order, -1) for name, value in fields.items()}
    indices = np.take_along_axis(found.indices, order, -1)
    return chosen, indices


def _result(
    catalog: Catalog,
    trials: _Trials,
    plan: _Plan,
    options: _Options,
    per_object: _Objects,
    found: _Found,
    devices: list[str],
) -> BlsResult:
    """The search's results: statuses, best boxes, peaks and periodograms."""
    best, indices = _best_boxes(per_object, plan, options, found)
    has_peak = indices != NO_PEAK
    top_period = np.where(has_peak, plan.periods[np.where(has_peak, indices, 0)], np.nan)
    top_power = np.where(has_peak, best["power"], np.nan)
    status = degenerate_status(catalog, per_object.status, top_power[:, 0], use_dy=True)
    no_box = (per_object.status == Status.OK) & ~has_peak[:, 0]
    status[no_box & (status == Status.OUT_OF_RANGE)] = Status.TOO_FEW_POINTS
    failed = status != Status.OK
    top_period[failed] = top_power[failed] = np.nan
    periodogram = _periodogram(per_object, plan, options, found, trials.positions)
    for value in periodogram.values():
        value[failed] = np.nan
    firsts = {name: np.where(failed, np.nan, value[:, 0]) for name, value in best.items()}
    return BlsResult(
        ids=catalog.ids,
        period_best=top_period[:, 0].copy(),
        power_best=top_power[:, 0].copy(),
        depth_best=firsts["depth"],
        depth_err_best=firsts["depth_err"],
        duration_best=firsts["duration"],
        transit_time_best=firsts["transit_time"],
        depth_snr_best=firsts["depth_snr"],
        log_likelihood_best=firsts["log_likelihood"],
        top_k_index=_given_columns(indices, failed, trials),
        top_k_power=top_power,
        frequency_best=1.0 / top_period[:, 0],
        top_k_frequency=1.0 / top_period,
        status=status,
        periods=trials.periods,
        **{name: periodogram.get(name) for name in _FIELDS},
        grid=trials.grid,
        durations=plan.durations,
        objective=options.objective,
        method=options.method,
        oversample=options.oversample,
        compat=options.compat if options.method == "binned" else None,
        devices=devices,
        catalog=catalog,
    )


def _periodogram(
    per_object: _Objects,
    plan: _Plan,
    options: _Options,
    found: _Found,
    positions: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """Every field at every given period (empty without ``options.periodogram``)."""
    if found.all_keys is None or found.all_sums is None:
        return {}
    objects = np.arange(per_object.status.size)[:, None]
    period_index = np.arange(plan.periods.size)[None, :]
    fields = _box_fields(
        per_object, plan, options.objective, objects, period_index, found.all_keys, found.all_sums
    )
    if positions is None:
        return fields
    return {name: value[:, positions] for name, value in fields.items()}


def _given_columns(indices: np.ndarray, failed: np.ndarray, trials: _Trials) -> np.ndarray:
    """Searched-period indices as columns of the given periods (the first
    column of a repeated period; -1 for no peak or a failed object)."""
    columns = np.full(indices.shape, -1, dtype=np.int64)
    found = (indices != NO_PEAK) & ~failed[:, None]
    if trials.positions is None:
        columns[found] = indices[found]
    else:
        first = np.unique(trials.positions, return_index=True)[1]
        columns[found] = first[indices[found]]
    return columns


# }}}
