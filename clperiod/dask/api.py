"""Period searches of a catalog held in a Dask DataFrame, on a Dask cluster.

>>> import clperiod.dask
>>> out = clperiod.dask.lombscargle(ddf)          # doctest: +SKIP
>>> table = out.compute()                         # doctest: +SKIP

Every partition of the input becomes one :class:`~clperiod.catalog.Catalog`
(by :func:`clperiod.io.frames.catalog_from_dataframe`, so partitions get the
column types and checks of DataFrames) and one batched search on the worker
that computes it, on that worker's own device
(:func:`clperiod.dask.workers.worker_device`). The output is a Dask
DataFrame with one row per object and the columns of
:func:`clperiod.io.tables.result_columns`.

Without a grid, the search uses the default grid of catalog runs
(:class:`clperiod.pipeline.AutoGrid`: :meth:`~clperiod.FrequencyGrid.survey` over the
whole frame), which costs one pass over the frame (computed when the search
is built) for the longest baseline and the largest object.

Two input layouts are read:

* long: one row per observation, in any order, with an id column (or index)
  and t, y and optionally dy and band columns. Unless the frame is indexed by id with
  known divisions or has one partition, it is first shuffled on the id
  (``shuffle=``); each partition is then sorted by id and time.
* nested (LSDB, nested-pandas): one row per object, with an id column (or
  index) and a pyarrow ``list<struct<t, y[, dy][, band]>>`` column of observations.
  The offsets of the Arrow list array are the catalog's offsets, so a
  partition is converted without a Python loop over objects. A null or empty
  list is an object with no points (status TOO_FEW_POINTS).

With ``band_col``, the catalog of every partition carries the band label of
each row (the labels found in that partition, or the fixed ``bands``); the
searches of one band pool the bands, so their results do not change;
:func:`lombscargle_multiband` models each band, and so does :func:`mhaov`.
:func:`pdm`, :func:`aov`, :func:`conditional_entropy` and :func:`bls` give the
columns of their results (``statistic_min`` or ``statistic_max`` for the
phase-binned statistics, BLS's best-box fields after ``power``).

Exactly once: an object that appears twice in a nested partition raises a
ValueError naming it. In a frame that was not shuffled here, an object split
over several partitions is found by ``check_ids``: with the id as the index and
known divisions, each search checks that its ids lie within its partition's
divisions (divisions that do not describe the rows could split an object);
otherwise a check that gathers the ids of every input partition raises a
ValueError naming the object and the partitions. Task retries never duplicate
rows: each output partition is the result of exactly one successful task. A
worker that dies has its tasks rescheduled by the Dask scheduler (up to the
configured ``distributed.scheduler.allowed-failures`` times); tasks that raise are
retried when computed with ``retries=``, e.g. ``out.compute(retries=2)``
(``dask.annotate`` is ignored by Dask DataFrame's query planner).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from clperiod import checks
from clperiod.catalog import NAN_POLICIES, Catalog, fixed_bands
from clperiod.dask.workers import worker_device
from clperiod.grid import FrequencyArray, FrequencyGrid, supported_frequencies
from clperiod.io.chunks import show_id
from clperiod.io.formats import struct_fields
from clperiod.io.frames import catalog_from_dataframe
from clperiod.io.tables import BOX_COLUMNS, result_columns
from clperiod.periodograms.bls import MAX_TOP_K as _BLS_MAX_TOP_K
from clperiod.periodograms.bls import _checked_durations
from clperiod.periodograms.bls import bls as _bls
from clperiod.periodograms.inputs import check_top_k
from clperiod.periodograms.lombscargle import MAX_TOP_K as _LS_MAX_TOP_K
from clperiod.periodograms.lombscargle import lombscargle as _lombscargle
from clperiod.periodograms.lombscargle import remember_fap_inputs
from clperiod.periodograms.mhaov import mhaov as _mhaov
from clperiod.periodograms.multiband import lombscargle_multiband as _lombscargle_multiband
from clperiod.periodograms.phase_statistics import MAX_TOP_K as _PS_MAX_TOP_K
from clperiod.periodograms.phase_statistics import aov as _aov
from clperiod.periodograms.phase_statistics import conditional_entropy as _conditional_entropy
from clperiod.periodograms.phase_statistics import pdm as _pdm
from clperiod.periodograms.supersmoother import MAX_TOP_K as _SS_MAX_TOP_K
from clperiod.periodograms.supersmoother import supersmoother as _supersmoother
from clperiod.pipeline.run import AutoGrid

#: Most top-k peaks of the multiband and MHAOV searches: the peaks kernel's, as for
#: Lomb-Scargle.
_MB_MAX_TOP_K = _LS_MAX_TOP_K

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

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

#: ``dy_col`` value that picks :data:`DY_NAME` when the frame has it.
AUTO = "auto"
#: The uncertainty column (struct field) that ``dy_col="auto"`` uses.
DY_NAME = "dy"

#: Arguments of the searches that this front end sets itself.
_HANDLED = (
    "cat_or_t",
    "catalog",
    "grid",
    "periods",
    "y",
    "dy",
    "device",
    "nan_policy",
    "periodogram",
    "progress",
    "profile",
)


@dataclass(frozen=True)
class _Layout:
    """Where a partition keeps its ids and observations."""

    id_col: str
    id_in_index: bool
    fields: tuple[str, ...]  # t, y[, dy] column names (struct fields when nested)
    nested_col: str | None
    dy_auto: bool = False  # nested, dy_col="auto", struct fields unknown on the client
    band_col: str | None = None  # band label column (struct field when nested)
    bands: tuple[Any, ...] | None = None  # the fixed band labels


def lombscargle(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    band_col: str | None = None,
    bands: Sequence[Any] | None = None,
    nan_policy: str = "raise",
    fap_method: str | None = "baluev",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Lomb-Scargle search of every object of a Dask DataFrame.

    Parameters
    ----------
    ddf
        The catalog, in the long or nested layout (see the module docstring).
    grid
        The frequency grid, the same for every object: a
        :class:`~clperiod.FrequencyGrid`, a :class:`~clperiod.FrequencyArray`
        (any frequencies), or an :class:`~clperiod.pipeline.AutoGrid`,
        resolved on the frame (one pass, computed at once). None (default):
        ``AutoGrid()``, the default grid of catalog runs (periods from 0.05
        days up; see the module notes).
    id_col
        Name of the object-id column, or of the index.
    t_col, y_col
        Names of the time and value columns; with ``nested_col``, names of
        the fields of its structs.
    dy_col
        Name of the uncertainty column (struct field); ``"auto"`` (default):
        ``dy`` when the frame has it, else none, as the command line's
        ``--dy-col``; None: no uncertainties (unweighted).
    nested_col
        Name of the ``list<struct>`` column of the nested layout; None for the
        long layout.
    band_col
        Name of the band (filter) label column (struct field): strings or
        integers, as for :func:`clperiod.io.catalog_from_dataframe`;
        None (default) reads no bands. This search pools the bands of each
        object; the partitions' catalogs carry them.
    bands
        With ``band_col``: the band labels, fixed (a label outside them
        raises at compute time; see :meth:`~clperiod.Catalog.from_arrays`).
    nan_policy
        ``"raise"`` or ``"omit"`` rows with a non-finite t, y or dy (see
        :meth:`~clperiod.Catalog.from_arrays`).
    fap_method
        Method of the ``fap`` column (see
        :meth:`~clperiod.LombScargleResult.false_alarm_probability`); None for none.
    shuffle
        Bring the rows of every object into one partition with Dask's
        shuffle on the id before the search. None (default): for the long
        layout of more than one partition, unless the id is the index and
        its divisions are known (``set_index``); the nested layout has one
        row per object and is not shuffled. False: the frame is known to be
        partitioned by id.
    check_ids
        Check that no object appears in two partitions. With the id as the
        index (not categorical) and known divisions, each search checks that
        its partition's ids lie within the partition's divisions (no extra
        task; the output streams); otherwise the check gathers the ids of all
        input partitions in one task, so every output partition waits for
        every partition to be read (not searched). None (default): check
        unless the frame was shuffled here (a shuffle guarantees it); set
        False for frames known to be partitioned by id (LSDB, Parquet files
        that never cut an object).
    device
        A device selection string (see :func:`clperiod.select_devices`)
        used by every worker; default: each worker's own device
        (:func:`clperiod.dask.workers.worker_device`).
    **options
        Further keyword arguments of :func:`clperiod.lombscargle`
        (``method``, ``normalization``, ``precision``, ``top_k``, ...).

    Returns
    -------
    dask.dataframe.DataFrame
        One row per object, columns of :func:`clperiod.io.tables.result_columns`;
        ``id`` has the dtype of the input ids.

    Raises
    ------
    TypeError, ValueError
        At once for a bad argument or a missing column; at compute time for
        bad data or an object split across partitions (the message names the
        partition and the object).
    ImportError
        Dask is not installed (``pip install clperiod[dask]``).
    """
    layout = _layout(ddf, id_col, t_col, y_col, dy_col, nested_col, band_col, bands)
    resolved = _resolved_grid(grid, ddf, layout, nan_policy)
    return _map_search(
        _lombscargle,
        _LS_MAX_TOP_K,
        ddf,
        resolved,
        layout,
        nan_policy,
        fap_method,
        _Partitioning.build(ddf, layout, shuffle, check_ids),
        device,
        options,
    )


def supersmoother(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    band_col: str | None = None,
    bands: Sequence[Any] | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """SuperSmoother search of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (there is no ``fap``
    column); ``**options`` go to :func:`clperiod.supersmoother` (``variant``,
    ``alpha``, ``precision``, ``top_k``, ...).
    """
    layout = _layout(ddf, id_col, t_col, y_col, dy_col, nested_col, band_col, bands)
    resolved = _resolved_grid(grid, ddf, layout, nan_policy)
    return _map_search(
        _supersmoother,
        _SS_MAX_TOP_K,
        ddf,
        resolved,
        layout,
        nan_policy,
        None,
        _Partitioning.build(ddf, layout, shuffle, check_ids),
        device,
        options,
    )


def lombscargle_multiband(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    band_col: str,
    bands: Sequence[Any] | None = None,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Multiband Lomb-Scargle search of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (there is no ``fap``
    column), except that ``band_col`` is required: the search models each
    band of an object (:func:`clperiod.lombscargle_multiband`). Each
    partition's catalog has the bands found in it, unless ``bands`` fixes
    them; an object's results do not depend on the bands of the others.
    ``**options`` go to :func:`clperiod.lombscargle_multiband`
    (``nterms_base``, ``nterms_band``, ``center_data``, ``top_k``, ...).
    """
    if band_col is None:
        raise ValueError("the multiband search models each band: band_col must name a column")
    layout = _layout(ddf, id_col, t_col, y_col, dy_col, nested_col, band_col, bands)
    resolved = _resolved_grid(grid, ddf, layout, nan_policy)
    return _map_search(
        _lombscargle_multiband,
        _MB_MAX_TOP_K,
        ddf,
        resolved,
        layout,
        nan_policy,
        None,
        _Partitioning.build(ddf, layout, shuffle, check_ids),
        device,
        options,
    )


def mhaov(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    band_col: str | None = None,
    bands: Sequence[Any] | None = None,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Multi-harmonic AOV search of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (there is no ``fap``
    column). With ``band_col`` each partition's catalog carries the band of
    every row and the search is the multiband statistic of
    :func:`clperiod.mhaov` (each band its own mean and fit); without it, the
    single-band statistic. ``**options`` go to :func:`clperiod.mhaov`
    (``nharmonics``, ``fit_harmonics``, ``min_points``, ``use_errors``,
    ``precision``, ``top_k``).
    """
    layout = _layout(ddf, id_col, t_col, y_col, dy_col, nested_col, band_col, bands)
    resolved = _resolved_grid(grid, ddf, layout, nan_policy)
    return _map_search(
        _mhaov,
        _MB_MAX_TOP_K,
        ddf,
        resolved,
        layout,
        nan_policy,
        None,
        _Partitioning.build(ddf, layout, shuffle, check_ids),
        device,
        options,
    )


def pdm(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Phase dispersion minimization of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (no ``fap`` column, no
    bands); the lowest ``theta`` is in ``statistic_min`` and the top-k in
    ``statistic_min_1 ..``. ``**options`` go to :func:`clperiod.pdm`
    (``n_bins``, ``n_covers``, ``weighted``, ``precision``, ``top_k``).
    """
    frame = _Frame(ddf, id_col, t_col, y_col, dy_col, nested_col, nan_policy)
    return frame.search(_pdm, _PS_MAX_TOP_K, grid, shuffle, check_ids, device, options)


def aov(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Phase-binned analysis of variance of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (no ``fap`` column, no
    bands); the highest ``theta`` is in ``statistic_max`` and the top-k in
    ``statistic_max_1 ..``. ``**options`` go to :func:`clperiod.aov`
    (``n_bins``, ``weighted``, ``precision``, ``top_k``).
    """
    frame = _Frame(ddf, id_col, t_col, y_col, dy_col, nested_col, nan_policy)
    return frame.search(_aov, _PS_MAX_TOP_K, grid, shuffle, check_ids, device, options)


def conditional_entropy(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Conditional entropy of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (no ``fap`` column, no
    bands); the lowest entropy is in ``statistic_min`` and the top-k in
    ``statistic_min_1 ..``. ``**options`` go to
    :func:`clperiod.conditional_entropy` (``phase_bins``,
    ``magnitude_bins``, ``precision``, ``top_k``).
    """
    frame = _Frame(ddf, id_col, t_col, y_col, dy_col, nested_col, nan_policy)
    return frame.search(
        _conditional_entropy, _PS_MAX_TOP_K, grid, shuffle, check_ids, device, options
    )


def bls(
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray | AutoGrid | None = None,
    *,
    durations: Any,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    nested_col: str | None = None,
    nan_policy: str = "raise",
    shuffle: bool | None = None,
    check_ids: bool | None = None,
    device: str | None = None,
    **options: Any,
) -> dd.DataFrame:
    """Box least squares transit search of every object of a Dask DataFrame.

    Parameters and result as :func:`lombscargle` (no ``fap`` column, no
    bands): the periods of the grid's frequencies are searched;
    ``durations`` (each shorter than the grid's shortest period, checked at
    once) and ``**options`` go to :func:`clperiod.bls` (``objective``,
    ``method``, ``oversample``, ``compat``, ``precision``, ``top_k``).
    ``power`` is the objective; the best box's ``depth``, ``depth_err``,
    ``duration``, ``transit_time``, ``depth_snr`` and ``log_likelihood``
    follow it.
    """
    frame = _Frame(ddf, id_col, t_col, y_col, dy_col, nested_col, nan_policy)
    resolved = frame.grid(grid)
    durations = _checked_bls_durations(durations, resolved)
    return frame.search(
        _bls,
        _BLS_MAX_TOP_K,
        resolved,
        shuffle,
        check_ids,
        device,
        {**options, "durations": durations},
    )


def _checked_bls_durations(durations: Any, grid: Any) -> list[float]:
    """``durations`` as a list, each shorter than the shortest period of ``grid``."""
    if not isinstance(grid, (FrequencyGrid, FrequencyArray)) or grid.fmax <= 0:
        return durations
    return [float(d) for d in _checked_durations(durations, 1.0 / grid.fmax)]


@dataclass(frozen=True)
class _Frame:
    """A frame of one-band searches: its layout, read as the arguments say."""

    ddf: Any
    id_col: str
    t_col: str
    y_col: str
    dy_col: str | None
    nested_col: str | None
    nan_policy: str

    @functools.cached_property
    def layout(self) -> _Layout:
        """The frame's columns as the arguments name them (read once)."""
        return _layout(
            self.ddf, self.id_col, self.t_col, self.y_col, self.dy_col, self.nested_col, None, None
        )

    def grid(self, grid: Any) -> Any:
        """``grid`` resolved on the frame (:func:`_resolved_grid`)."""
        return _resolved_grid(grid, self.ddf, self.layout, self.nan_policy)

    def search(
        self,
        search: Callable[..., Any],
        max_top_k: int,
        grid: Any,
        shuffle: bool | None,
        check_ids: bool | None,
        device: str | None,
        options: dict[str, Any],
    ) -> dd.DataFrame:
        """The lazy output frame of ``search`` (:func:`_map_search`), no ``fap`` column."""
        layout = self.layout
        return _map_search(
            search,
            max_top_k,
            self.ddf,
            self.grid(grid),
            layout,
            self.nan_policy,
            None,
            _Partitioning.build(self.ddf, layout, shuffle, check_ids),
            device,
            options,
        )


@dataclass(frozen=True)
class _Partitioning:
    """Whether a frame is shuffled by id before the search, and whether the
    output ids are checked across partitions: against the frame's
    ``divisions`` within each search (the id is the index and the divisions
    are known), or by gathering them after the searches."""

    shuffle: bool
    check_ids: bool
    divisions: tuple[Any, ...] | None = None

    @classmethod
    def build(
        cls, ddf: Any, layout: _Layout, shuffle: bool | None, check_ids: bool | None
    ) -> _Partitioning:
        for name, value in (("shuffle", shuffle), ("check_ids", check_ids)):
            if value is not None and not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True, False or None, got {value!r}")
        if shuffle is None:
            by_index = layout.id_in_index and ddf.known_divisions
            shuffle = layout.nested_col is None and not by_index and ddf.npartitions > 1
        if check_ids is None:
            check_ids = not shuffle
        import pandas as pd

        divisions = None
        # categorical ids order by their categories, which need not compare
        ordered = not isinstance(ddf.index.dtype, pd.CategoricalDtype)
        if check_ids and not shuffle and layout.id_in_index and ddf.known_divisions and ordered:
            divisions = tuple(ddf.divisions)
        return cls(bool(shuffle), bool(check_ids), divisions)


# ---------------------------------------------------------------------- grid


def _resolved_grid(grid: Any, ddf: Any, layout: _Layout, nan_policy: str) -> Any:
    """A FrequencyGrid or FrequencyArray as given; an AutoGrid (None: the
    default) resolved on the frame."""
    if grid is None:
        grid = AutoGrid()
    if not isinstance(grid, AutoGrid):
        return grid
    return grid.resolve(*_extent(ddf, layout, nan_policy))


def _extent(ddf: Any, layout: _Layout, nan_policy: str) -> tuple[float, int]:
    """Longest baseline and largest object of the frame (one computed pass)."""
    if layout.nested_col is None:
        t = ddf[layout.fields[0]]
        if nan_policy == "omit":
            t = t[t.notnull()]
        key = t.index if layout.id_in_index else ddf[layout.id_col]
        spans = t.groupby(key).agg(["min", "max", "count"])
        extent = ((spans["max"] - spans["min"]).max(), spans["count"].max())
    else:
        import pandas as pd

        parts = ddf.map_partitions(
            _partition_extent,
            layout,
            nan_policy,
            meta=pd.DataFrame({"baseline": [0.0], "largest": [0]}),
        )
        extent = (parts["baseline"].max(), parts["largest"].max())
    import dask

    baseline, largest = dask.compute(*extent)
    if not (np.isfinite(baseline) and baseline > 0):
        raise ValueError(
            "the frame has no object with two distinct times: no automatic grid; "
            "pass a FrequencyGrid"
        )
    return float(baseline), int(largest)


def _partition_extent(frame: pd.DataFrame, layout: _Layout, nan_policy: str) -> pd.DataFrame:
    """Longest baseline and largest object of one partition of the nested layout."""
    import pandas as pd

    if len(frame) == 0:
        return pd.DataFrame({"baseline": [np.nan], "largest": [0]})
    catalog = _partition_catalog(frame, layout, nan_policy)
    baselines = catalog.baselines()
    baseline = np.nanmax(baselines) if np.any(np.isfinite(baselines)) else np.nan
    return pd.DataFrame({"baseline": [baseline], "largest": [int(catalog.lengths.max())]})


# ---------------------------------------------------------------------- graph


def _map_search(
    search: Callable[..., Any],
    max_top_k: int,
    ddf: dd.DataFrame,
    grid: FrequencyGrid | FrequencyArray,
    layout: _Layout,
    nan_policy: str,
    fap_method: str | None,
    partitioning: _Partitioning,
    device: str | None,
    options: dict[str, Any],
) -> dd.DataFrame:
    """The lazy output frame: the shuffle by id, one search task per partition,
    and the id check (as ``partitioning`` says)."""
    if not isinstance(grid, (FrequencyGrid, FrequencyArray)):
        raise TypeError(
            f"grid must be a FrequencyGrid, FrequencyArray or AutoGrid, got {type(grid).__name__}"
        )
    checks.choice("nan_policy", nan_policy, NAN_POLICIES)
    if device is not None and not isinstance(device, str):
        raise TypeError(
            "device must be a selection string such as 'gpu' or '0:1' (device objects "
            f"cannot be sent to other processes), got {type(device).__name__}"
        )
    _check_options(search, options)
    top_k = check_top_k(options.get("top_k", 1), max_top_k)
    id_dtype = ddf.index.dtype if layout.id_in_index else ddf.dtypes[layout.id_col]
    meta = _meta(id_dtype, top_k, fap_method, search)
    needed = _needed_columns(layout)
    if set(ddf.columns) != set(needed):
        ddf = ddf[needed]  # Parquet and other readers then load only these
    if partitioning.shuffle:
        ddf = ddf.shuffle(on_index=True) if layout.id_in_index else ddf.shuffle(on=layout.id_col)
    import dask

    # the divisions travel once to each worker, not in every task
    divisions = partitioning.divisions
    bounds = None if divisions is None else dask.delayed(divisions, pure=True)
    results = ddf.map_partitions(
        _search_partition,
        search,
        grid,
        layout,
        nan_policy,
        fap_method,
        device,
        options,
        meta,
        bounds,
        meta=meta,
        clear_divisions=True,
    )
    if not partitioning.check_ids or divisions is not None:
        return results
    import pandas as pd

    # the ids of the input partitions, not of the results: an output partition
    # computed alone then waits for the other partitions' ids, not their searches
    tagged = ddf.map_partitions(
        _partition_ids,
        layout,
        meta=pd.DataFrame({"id": meta["id"], "partition": np.zeros(0, np.int64)}),
    )
    n_objects = tagged.reduction(
        chunk=_same,
        aggregate=_count_unique,
        meta=int,
        split_every=False,
    )
    return results.map_partitions(_after_check, n_objects, meta=meta)


def _needed_columns(layout: _Layout) -> list[str]:
    """The columns of the frame that the searches read."""
    names = [] if layout.id_in_index else [layout.id_col]
    if layout.nested_col is not None:
        names.append(layout.nested_col)
    else:
        names.extend(layout.fields)
        if layout.band_col is not None:
            names.append(layout.band_col)
    return list(dict.fromkeys(names))


def _check_options(search: Callable[..., Any], options: dict[str, Any]) -> None:
    accepted = [name for name in inspect.signature(search).parameters if name not in _HANDLED]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise TypeError(
            f"clperiod.dask.{search.__name__}() got unsupported option(s) {unknown}; it "
            f"accepts {accepted} (periodogram, progress and profile are not available: "
            "the output is one row per object)"
        )


def _layout(
    ddf: Any,
    id_col: str,
    t_col: str,
    y_col: str,
    dy_col: str | None,
    nested_col: str | None,
    band_col: str | None = None,
    bands: Sequence[Any] | None = None,
) -> _Layout:
    """Check the named columns against the frame's metadata (and resolve
    ``dy_col="auto"`` where the metadata tells the columns) and the fixed bands."""
    try:
        import dask.dataframe as dd
    except ImportError as error:
        raise ImportError("clperiod.dask needs Dask: pip install clperiod[dask]") from error
    if not isinstance(ddf, dd.DataFrame):
        raise TypeError(f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__}")
    columns = list(ddf.columns)
    id_in_index = id_col not in columns and ddf.index.name == id_col
    dy_auto = dy_col == AUTO
    if dy_auto:
        found = columns if nested_col is None else _known_fields(ddf, nested_col)
        dy_col = (DY_NAME if DY_NAME in found else None) if found is not None else None
        dy_auto = found is None
    fields = (t_col, y_col) if dy_col is None else (t_col, y_col, dy_col)
    if band_col is None and bands is not None:
        raise ValueError("bands fixes the band labels but no band_col was given")
    fixed = None if bands is None else fixed_bands(bands)
    labelled = [] if band_col is None else [band_col]
    wanted = [nested_col] if nested_col is not None else [*fields, *labelled]
    absent = [name for name in wanted if name not in columns]
    if id_col not in columns and not id_in_index:
        absent.insert(0, id_col)
    if absent:
        raise ValueError(
            f"the frame has no column {absent} (columns: {columns}, index: {ddf.index.name!r})"
        )
    if nested_col is not None:
        _check_nested_dtype(ddf.dtypes[nested_col], nested_col, fields, band_col)
    return _Layout(id_col, id_in_index, fields, nested_col, dy_auto, band_col, fixed)


def _known_fields(ddf: Any, nested_col: str) -> list[str] | None:
    """The struct fields of a nested column when its dtype tells them
    (pyarrow-backed), else None (resolved on the workers)."""
    import pandas as pd

    dtype = ddf.dtypes.get(nested_col) if nested_col in ddf.columns else None
    if isinstance(dtype, pd.ArrowDtype):
        return struct_fields(dtype.pyarrow_dtype)
    return None


def _meta(
    id_dtype: Any, top_k: int, fap_method: str | None, search: Callable[..., Any]
) -> pd.DataFrame:
    """The empty output frame: the columns of ``result_columns`` for no objects
    of ``search`` (a copy of the one built for the first such call)."""
    return _built_meta(id_dtype, top_k, fap_method, search).copy()


@functools.lru_cache(maxsize=64)
def _built_meta(
    id_dtype: Any, top_k: int, fap_method: str | None, search: Callable[..., Any]
) -> pd.DataFrame:
    import pandas as pd

    meta = pd.DataFrame(result_columns(_NoObjects(top_k, search), fap_method=fap_method))
    return meta.astype({"id": id_dtype, "status_name": "str", "grid_warning": "str"})


#: The best value of the phase-binned statistics (their results' ``best``).
_BEST_VALUES: dict[Callable[..., Any], str] = {
    _pdm: "minimum",
    _conditional_entropy: "minimum",
    _aov: "maximum",
}


class _NoObjects:
    """A search result of zero objects: the attributes ``result_columns`` reads."""

    def __init__(self, top_k: int, search: Callable[..., Any]) -> None:
        best = _BEST_VALUES.get(search)
        if best is not None:
            self.best = best
        if search is _bls:
            for name in BOX_COLUMNS:
                setattr(self, f"{name}_best", np.zeros(0))
        self.ids = np.zeros(0, dtype=np.int64)
        self.n_points = np.zeros(0, dtype=np.int64)
        self.period = self.frequency_best = self.power_best = np.zeros(0)
        self.top_k_period = self.top_k_power = np.zeros((0, top_k))
        self.status = np.zeros(0, dtype=np.int8)
        self.catalog = Catalog(
            np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(0), np.zeros(0)
        )
        self.grid = FrequencyGrid(1.0, 1.0, 1)

    def false_alarm_probability(self, method: str) -> np.ndarray:
        return np.zeros(0)


# ---------------------------------------------------------------------- tasks


def _search_partition(
    frame: pd.DataFrame,
    search: Callable[..., Any],
    grid: FrequencyGrid | FrequencyArray,
    layout: _Layout,
    nan_policy: str,
    fap_method: str | None,
    device: str | None,
    options: dict[str, Any],
    meta: pd.DataFrame,
    divisions: tuple[Any, ...] | None,
    partition_info: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Search one partition on this worker's device; one output row per object
    (its ids checked against the frame's ``divisions`` where given)."""
    if len(frame) == 0:
        return meta.copy()
    number = partition_info["number"] if partition_info is not None else 0
    try:
        catalog = _partition_catalog(frame, layout, nan_policy)
    except (TypeError, ValueError) as error:
        raise type(error)(f"partition {number}: {error}") from error
    if divisions is not None:
        _check_within_divisions(frame.index, divisions, number)
    with ThreadPoolExecutor(1, thread_name_prefix="clperiod-columns") as helper:
        inputs = helper.submit(_column_inputs, catalog, search, options, fap_method)
        result = search(
            catalog, grid, device=worker_device() if device is None else device, **options
        )
        inputs.result()
    import pandas as pd

    return pd.DataFrame(result_columns(result, fap_method=fap_method)).astype(
        meta.dtypes.to_dict()
    )


def _column_inputs(
    catalog: Catalog, search: Callable[..., Any], options: dict[str, Any], fap_method: str | None
) -> None:
    """Compute what the output columns need of ``catalog`` (both remembered for
    as long as it lives), while the device searches: the frequencies its
    sampling supports (grid warnings) and Lomb-Scargle's false-alarm inputs."""
    supported_frequencies(catalog)
    if search is _lombscargle:
        remember_fap_inputs(catalog, fap_method, **options)


def _check_within_divisions(ids: pd.Index, divisions: tuple[Any, ...], number: int) -> None:
    """ValueError naming an id of partition ``number`` outside its divisions
    (from ``divisions[number]`` up to the next, which only the last partition
    includes). Partitions within their divisions share no id."""
    low, high = divisions[number], divisions[number + 1]
    last = number + 2 == len(divisions)
    if ids.min() >= low and (ids.max() <= high if last else ids.max() < high):
        return
    outside = (ids < low) | ((ids > high) if last else (ids >= high))
    raise ValueError(
        f"partition {number}: object id {show_id(ids[np.asarray(outside)][0])} lies outside "
        f"the partition's divisions ({show_id(low)} to {show_id(high)}, "
        f"{'inclusive' if last else 'exclusive'}): the frame's divisions do not describe its "
        "rows, so an object may be split over partitions; let clperiod.dask shuffle the "
        "frame by id (shuffle=True)"
    )


def _partition_catalog(frame: pd.DataFrame, layout: _Layout, nan_policy: str) -> Any:
    """The catalog of one partition: long partitions sorted by id and time first."""
    fields = layout.fields
    if layout.nested_col is None:
        frame = _by_object_and_time(frame, layout.id_col, fields[0])
    elif layout.dy_auto:
        import pyarrow as pa

        present = struct_fields(pa.array(frame[layout.nested_col]).type) or []
        fields = (*fields, DY_NAME) if DY_NAME in present else fields
    return catalog_from_dataframe(
        frame,
        layout.id_col,
        *fields,
        nested_col=layout.nested_col,
        nan_policy=nan_policy,
        band_col=layout.band_col,
        bands=layout.bands,
    )


def _by_object_and_time(frame: pd.DataFrame, id_col: str, t_col: str) -> pd.DataFrame:
    """The rows sorted by id, then time (a stable sort: ties keep their order).

    Ids of object dtype are compared by their string form, as
    :func:`clperiod.io.frames.catalog_from_dataframe` reads them.
    """

    if _in_order(frame, id_col, t_col):
        return frame

    def key(column: pd.Series) -> pd.Series:
        return column.astype(str) if column.name == id_col and column.dtype == object else column

    return frame.sort_values([id_col, t_col], key=key, kind="stable")


def _in_order(frame: pd.DataFrame, id_col: str, t_col: str) -> bool:
    """Whether the rows are already sorted by numeric id, then time (no NaN
    among them); other ids are sorted in any case."""
    ids = frame[id_col] if id_col in frame.columns else frame.index.get_level_values(id_col)
    t = frame[t_col]
    if not all(isinstance(c.dtype, np.dtype) and c.dtype.kind in "iuf" for c in (ids, t)):
        return False
    ids, t = np.asarray(ids), np.asarray(t)
    same = ids[1:] == ids[:-1]
    return bool(np.all((ids[1:] > ids[:-1]) | (same & (t[1:] >= t[:-1]))))


def _partition_ids(
    frame: pd.DataFrame, layout: _Layout, partition_info: dict[str, Any] | None = None
) -> pd.DataFrame:
    """The distinct object ids of one input partition, with its number."""
    import pandas as pd

    number = partition_info["number"] if partition_info is not None else 0
    ids = frame.index if layout.id_in_index else frame[layout.id_col]
    return pd.DataFrame({"id": pd.unique(ids), "partition": np.int64(number)})


def _same(frame: pd.DataFrame) -> pd.DataFrame:
    return frame


def _count_unique(tagged: pd.DataFrame) -> int:
    """Number of objects; ValueError naming an object found in several partitions."""
    repeated = tagged["id"].duplicated(keep=False).to_numpy()
    if repeated.any():
        object_id = tagged["id"].to_numpy()[repeated][0]
        where = tagged["partition"].to_numpy()[repeated & (tagged["id"] == object_id).to_numpy()]
        raise ValueError(
            f"object id {show_id(object_id)} appears in partitions {sorted(set(where.tolist()))}: "
            "the rows of one object must lie in one partition; let clperiod.dask shuffle "
            "the frame by id (shuffle=True)"
        )
    return len(tagged)


def _after_check(results: pd.DataFrame, n_objects: int) -> pd.DataFrame:
    """The search results, released once the id check (``n_objects``) has passed."""
    return results


# ---------------------------------------------------------------------- checks


def _check_nested_dtype(
    dtype: Any, name: str, fields: tuple[str, ...], band_col: str | None = None
) -> None:
    """Check a nested column's dtype on the client where it tells the type:
    pyarrow-backed and NumPy dtypes. Others (nested-pandas', object) are
    converted by pyarrow and checked on the workers."""
    import pandas as pd

    if isinstance(dtype, pd.ArrowDtype):
        _check_nested_type(dtype.pyarrow_dtype, name, fields, band_col)
    elif isinstance(dtype, np.dtype) and dtype.kind != "O":
        raise ValueError(f"column {name!r} must hold list<struct<...>> values, got {dtype}")


def _check_nested_type(
    pa_type: Any, name: str, fields: tuple[str, ...], band_col: str | None
) -> None:
    import pyarrow as pa

    present = struct_fields(pa_type)
    if present is None:
        raise ValueError(f"column {name!r} must hold list<struct<...>> values, got {pa_type}")
    struct = pa_type.value_type
    for field in fields:
        if field not in present:
            raise ValueError(f"column {name!r} has no field {field!r} (fields: {present})")
        kind = struct.field(field).type
        if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
            raise TypeError(f"field {field!r} of column {name!r} must be numbers, got {kind}")
    if band_col is not None and band_col not in present:
        raise ValueError(f"column {name!r} has no field {band_col!r} (fields: {present})")
