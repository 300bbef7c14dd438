"""Resumable catalog runs: a catalog file in, a results file out (:func:`run_catalog`).

A run searches the input chunk by chunk, commits each chunk as a part file in
a work directory beside the output, ``<output>.parts/``, and resumes from
there when it is run again. How a run proceeds (chunks, resume, kill safety,
locks, threads) is described in the design notes, ``docs/design/pipeline.md``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import inspect
import itertools
import json
import queue
import threading
import time
import warnings
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clperiod.catalog import Catalog, Status, catalog_of, is_lightcurve_list
from clperiod.engine import workers
from clperiod.engine.devices import select_devices
from clperiod.engine.staging import available_host_memory
from clperiod.engine.workers import SerialQueue
from clperiod.grid import SURVEY_MIN_PERIOD, FrequencyArray, FrequencyGrid, GridWarning
from clperiod.io.chunks import Block, Chunker
from clperiod.io.readers import DEFAULT_CHUNK_ROWS, CatalogChunk, CatalogReader
from clperiod.io.results import (
    PeriodogramWriter,
    ResultsWriter,
    atomic_path,
    is_temporary,
    remove_path,
    remove_temporaries,
    result_format,
    results_table,
)
from clperiod.io.results import periodogram_format as _periodogram_format
from clperiod.io.tables import result_columns
from clperiod.periodograms.inputs import Deferred
from clperiod.periodograms.lombscargle import remember_fap_inputs
from clperiod.pipeline.runlock import locked_outputs

__all__ = [
    "ALGORITHMS",
    "AutoGrid",
    "CatalogRun",
    "GridResolutionWarning",
    "PeriodSearch",
    "catalog_extent",
    "default_plot_labels",
    "run_catalog",
    "work_directory",
]

#: Period searches a catalog run can use: the names of their functions in
#: ``clperiod`` (each takes a catalog, a grid, ``device=``, ``periodogram=``
#: and keyword options, and returns a result that
#: :func:`clperiod.io.tables.result_columns` reads).
ALGORITHMS = (
    "lombscargle",
    "supersmoother",
    "lombscargle_multiband",
    "mhaov",
    "pdm",
    "aov",
    "conditional_entropy",
    "bls",
)
#: The searches whose results have an analytic false-alarm probability (a ``fap`` column).
_ANALYTIC_FAP = ("lombscargle",)
#: Search arguments the run sets itself.
_HANDLED = (
    "cat_or_t",
    "catalog",
    "grid",
    "periods",
    "y",
    "dy",
    "device",
    "periodogram",
    "progress",
    "profile",
    "nan_policy",
)
#: Periodograms of one chunk are computed in groups of objects of at most this
#: many bytes (less when the host has less to spare), each written as soon as
#: it is computed, so a run never holds more in memory.
PERIODOGRAM_BYTES = 1 << 30
#: Objects plotted when no ids are given: the first ones of the run.
DEFAULT_PLOTS = 5
#: Finished chunks waiting to be written at most (bounds memory).
_PENDING_WRITES = 2
_MANIFEST = "manifest.json"
_RUN_FORMAT = 3  # 2: part files in Arrow IPC; 3: chunk checksums in them


@dataclass(frozen=True)
class AutoGrid:
    """The default grid of catalog runs, resolved on the input.

    With ``min_period`` (default :data:`~clperiod.grid.SURVEY_MIN_PERIOD`,
    0.05 days) it is :meth:`~clperiod.FrequencyGrid.survey` (astropy's rule, reaching
    periods of ``min_period`` at least); with ``min_period=None`` astropy's
    ``autofrequency`` (:meth:`~clperiod.FrequencyGrid.auto`). A run resolves it by
    reading the input once (:func:`catalog_extent`) for the longest baseline
    and the largest object, then keeps the grid in its manifest.
    """

    samples_per_peak: float = 5
    nyquist_factor: float = 5
    minimum_frequency: float | None = None
    maximum_frequency: float | None = None
    min_period: float | None = SURVEY_MIN_PERIOD

    def resolve(self, baseline: float, n_samples: int) -> FrequencyGrid:
        """The grid for a catalog whose longest baseline and largest object are given."""
        # the rules depend on a catalog only through these two numbers;
        # evenly spaced times reproduce them exactly
        times = np.linspace(0.0, baseline, max(int(n_samples), 2))
        limits = (self.samples_per_peak, self.nyquist_factor)
        low, high = self.minimum_frequency, self.maximum_frequency
        if self.min_period is None:
            return FrequencyGrid.auto(
                times, *limits, minimum_frequency=low, maximum_frequency=high
            )
        return FrequencyGrid.survey(
            times, *limits, self.min_period, minimum_frequency=low, maximum_frequency=high
        )


@dataclass(frozen=True)
class PeriodSearch:
    """What a catalog run computes for every object.

    Parameters
    ----------
    algorithm : str
        The search (one of ``ALGORITHMS``): the function of that name in
        ``clperiod``. The multiband search models the bands of each object
        (its catalog's band labels, e.g. ``open_catalog(..., band_col=...)``),
        and so does the multi-harmonic AOV of a catalog with bands (without
        bands it is the single-band statistic); the others pool them. BLS
        searches the periods of the grid's frequencies and needs
        ``durations`` among the options (each shorter than the grid's
        shortest period).
    grid : FrequencyGrid, FrequencyArray or AutoGrid
        The frequency grid; default :class:`AutoGrid` (resolved on the input,
        periods from 0.05 days up). A :class:`~clperiod.FrequencyArray` (any
        frequencies, :meth:`~clperiod.FrequencyGrid.from_frequencies`) is
        searched as given; the run's settings identify it by its size, its
        extremes and a BLAKE2b hash of its values.
    options : mapping
        Keyword arguments of the search (``method``, ``normalization``,
        ``precision``, ``top_k``, ``variant``, ``nterms_base``,
        ``nterms_band``, ``nharmonics``, ``n_bins``, ``n_covers``,
        ``magnitude_bins``, ``durations``, ``objective``, ...), JSON-ready
        values. The run sets ``device``,
        ``periodogram`` and ``progress`` itself.
    fap_method : str or None
        Method of the ``fap`` column (Lomb-Scargle), or None for none; the
        searches without an analytic false-alarm probability (SuperSmoother,
        multiband, multi-harmonic AOV, PDM, AOV, conditional entropy, BLS)
        write no ``fap`` column whatever it says.
    """

    algorithm: str
    grid: FrequencyGrid | FrequencyArray | AutoGrid = field(default_factory=AutoGrid)
    options: Mapping[str, Any] = field(default_factory=dict)
    fap_method: str | None = "baluev"

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if not isinstance(self.grid, (FrequencyGrid, FrequencyArray, AutoGrid)):
            raise TypeError(
                "grid must be a FrequencyGrid, FrequencyArray or AutoGrid, got "
                f"{type(self.grid).__name__}"
            )
        accepted = [
            name for name in inspect.signature(self.function).parameters if name not in _HANDLED
        ]
        unknown = sorted(set(self.options) - set(accepted))
        if unknown:
            raise ValueError(f"unknown {self.algorithm} option(s) {unknown}; accepted: {accepted}")
        object.__setattr__(self, "options", dict(sorted(self.options.items())))
        try:
            json.dumps(self.options)
        except TypeError as error:
            raise TypeError(f"search options must be JSON values: {error}") from None

    @property
    def fap_column(self) -> str | None:
        """The method of the results' ``fap`` column: ``fap_method`` for a search
        with an analytic false-alarm probability (Lomb-Scargle), else None."""
        return self.fap_method if self.algorithm in _ANALYTIC_FAP else None

    @property
    def function(self) -> Any:
        """The search function: ``clperiod.<algorithm>``."""
        import clperiod

        return getattr(clperiod, self.algorithm)

    def run(self, catalog: Catalog, *, device: Any = None, periodogram: bool = False) -> Any:
        """Search one catalog with a resolved grid."""
        return self.function(
            catalog, self._resolved_grid(), device=device, periodogram=periodogram, **self.options
        )

    def start(self, catalog: Catalog, *, device: Any = None) -> Deferred:
        """Begin the search of one catalog (best peaks, no periodograms):
        Lomb-Scargle on one device returns with it queued
        (:func:`clperiod.lombscargle_async`), so the caller can prepare the
        next catalog while the device works; ``.result()`` waits."""
        if self.algorithm != "lombscargle":
            return Deferred.ready(self.run(catalog, device=device))
        from clperiod.periodograms.lombscargle import lombscargle_async

        return lombscargle_async(catalog, self._resolved_grid(), device=device, **self.options)

    def _resolved_grid(self) -> FrequencyGrid | FrequencyArray:
        if isinstance(self.grid, AutoGrid):
            raise ValueError("resolve the AutoGrid first (run_catalog does)")
        return self.grid

    def settings(self) -> dict[str, Any]:
        """JSON-ready description (the grid as given, resolved or not)."""
        grid = (
            {"auto": dataclasses.asdict(self.grid)}
            if isinstance(self.grid, AutoGrid)
            else _grid_facts(self.grid)
        )
        return {
            "algorithm": self.algorithm,
            "grid": grid,
            "options": dict(self.options),
            "fap_method": self.fap_method,
        }


@dataclass(frozen=True)
class CatalogRun:
    """What :func:`run_catalog` did.

    Attributes
    ----------
    output : Path
        The results file.
    periodogram : Path or None
        The periodogram file, when requested.
    figures : list of Path
        Figures written by this call (chunks resumed from the work directory
        made theirs earlier).
    n_objects, n_chunks : int
        Objects and chunks of the input.
    n_resumed : int
        Chunks found finished in the work directory and not recomputed.
    grid : FrequencyGrid or FrequencyArray
        The grid searched.
    devices : list of str
        Devices used.
    timings : dict
        Seconds: ``read_s`` (reading and checking chunks, reader thread),
        ``compute_s`` (searches), ``write_s`` (result tables, false-alarm
        probabilities, part files, output rows and figures, writer thread),
        ``join_s`` (closing the output, joining the periodogram parts) and
        ``total_s`` (wall time).
        Reading and writing overlap the searches, so ``total_s`` is less
        than their sum.
    grid_warnings : dict of str to int
        Objects per :class:`~clperiod.grid.GridWarning` name that the grid
        does not resolve (empty when it resolves every object; a
        :class:`GridResolutionWarning` is issued otherwise).
    statuses : dict of str to int
        Objects per status name other than OK (their results are NaN; the
        ``status_name`` column says which).
    """

    output: Path
    periodogram: Path | None
    figures: list[Path]
    n_objects: int
    n_chunks: int
    n_resumed: int
    grid: FrequencyGrid | FrequencyArray
    devices: list[str]
    timings: dict[str, float]
    grid_warnings: dict[str, int] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)


class GridResolutionWarning(UserWarning):
    """A catalog run's grid does not resolve some objects
    (:func:`~clperiod.grid.grid_warnings`)."""


def work_directory(output: str | Path) -> Path:
    """The work directory of a run writing ``output``: ``<output>.parts``."""
    output = Path(output)
    return output.with_name(output.name + ".parts")


def default_plot_labels(source: Any) -> Any:
    """The :class:`~clperiod.plot.PlotLabels` of a run's figures: the input's t and y
    column names (a time column of timestamps, read as MJD, in days)."""
    from clperiod.plot import PlotLabels

    columns = getattr(source, "columns", {"t": "t", "y": "y"})
    if getattr(source, "timestamps", False):
        return PlotLabels(f"{columns['t']} (MJD)", columns["y"], t_unit="d")
    return PlotLabels(columns["t"], columns["y"])


def catalog_extent(chunks: Iterable[CatalogChunk]) -> tuple[float, int]:
    """Longest baseline and largest object of a catalog, read once."""
    baseline, largest = np.nan, 0
    for chunk in chunks:
        catalog = chunk.catalog
        baselines = catalog.baselines()
        if np.any(np.isfinite(baselines)):
            baseline = np.fmax(baseline, np.nanmax(baselines))
        largest = max(largest, int(catalog.lengths.max()))
    return float(baseline), largest


def run_catalog(
    source: CatalogReader | Catalog | list | str | Path,
    search: PeriodSearch,
    output: str | Path,
    *,
    periodogram: str | Path | None = None,
    output_format: str | None = None,
    periodogram_format: str | None = None,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    device: Any = None,
    restart: bool = False,
    progress: bool | None = None,
    plot: str | Path | None = None,
    plot_ids: Sequence[Any] | None = None,
    plot_format: str = "png",
    plot_labels: Any = None,
) -> CatalogRun:
    """Search every object of a catalog file; resumable (see the module notes).

    Parameters
    ----------
    source : CatalogReader, path-like, Catalog or list
        The input: an opened reader (its options decide the layout, columns
        and chunks), a file path (opened with defaults and ``chunk_rows``),
        or an in-memory catalog (identified by a hash of its content) or
        list of light curves (:meth:`~clperiod.Catalog.from_lightcurves`).
    search : PeriodSearch
        Algorithm, grid and options.
    output : path-like
        Results file (one row per object, the columns of
        :func:`clperiod.io.tables.result_columns`); Parquet or CSV.
    periodogram : path-like, optional
        Also write every periodogram there (``.npy``, ``.npz``, ``.h5``,
        ``.parquet``; see ``clperiod.io.results``).
    output_format, periodogram_format : str, optional
        Formats, default from the suffixes.
    chunk_rows : int
        Observations per chunk when ``source`` is a path or a Catalog.
    device
        Device selection (see :func:`clperiod.select_devices`).
    restart : bool
        Discard a previous run's work directory instead of resuming it.
    progress : bool or None
        A tqdm progress bar over objects; None (default) shows it only on a
        terminal (tqdm's ``disable=None``), False never.
    plot : path-like, optional
        Folder for one figure per chosen object
        (:func:`clperiod.plot.plot_objects`: periodogram with the best peak
        and false-alarm levels, and the folded light curve).
    plot_ids : sequence, optional
        Ids of the objects to plot (matched by their string form; ids that
        the input lacks give a warning); default: the first
        ``DEFAULT_PLOTS`` objects of the input.
    plot_format : str
        Figure file format (``png``, ``pdf``, ``svg``, ...).
    plot_labels : clperiod.plot.PlotLabels, optional
        Names and units on the figures' axes; default
        :func:`default_plot_labels` of the input (its column names; days for
        Julian dates and timestamps; magnitudes inverted).

    Returns
    -------
    CatalogRun

    Raises
    ------
    ValueError
        Bad input (the message names the file and row), a work directory
        whose manifest does not match this run, a finished chunk whose input
        rows changed since, or bad options.
    IsADirectoryError, NotADirectoryError
        ``output`` or ``periodogram`` is a directory, or ``plot`` a file
        (checked before anything is read).
    clperiod.pipeline.runlock.OutputLockedError
        Another run is writing ``output`` or ``periodogram``.
    MemoryError
        A single object's periodogram is larger than the available host memory.
    """
    output = Path(output)
    destinations = [output, *([Path(periodogram)] if periodogram is not None else [])]
    _check_destinations(destinations, plot)
    with locked_outputs(*destinations):
        return _run_locked(
            source,
            search,
            output,
            periodogram=periodogram,
            output_format=output_format,
            periodogram_format=periodogram_format,
            chunk_rows=chunk_rows,
            device=device,
            restart=restart,
            progress=progress,
            plot=plot,
            plot_ids=plot_ids,
            plot_format=plot_format,
            plot_labels=plot_labels,
        )


def _run_locked(
    source: Any,
    search: PeriodSearch,
    output: Path,
    *,
    periodogram: Any,
    output_format: str | None,
    periodogram_format: str | None,
    chunk_rows: int,
    device: Any,
    restart: bool,
    progress: bool | None,
    plot: Any,
    plot_ids: Sequence[Any] | None,
    plot_format: str,
    plot_labels: Any,
) -> CatalogRun:
    """:func:`run_catalog` once its output files are checked and locked."""
    started = time.perf_counter()
    reader = _as_reader(source, chunk_rows)
    # seconds; each key is added to by one thread only
    timings = {"read_s": 0.0, "compute_s": 0.0, "write_s": 0.0}
    formats = (
        result_format(output, output_format),
        _periodogram_format(periodogram, periodogram_format) if periodogram else None,
    )
    work = work_directory(output)
    chunks = iter(reader)  # a Parquet file is opened here
    with contextlib.ExitStack() as stack:
        stack.callback(chunks.close)  # runs once the reader thread below has stopped
        first = _first_chunk(chunks, timings)
        # the reader thread reads on while this thread sets the run up
        rest = itertools.chain([first], stack.enter_context(_Prefetch(chunks, timings)))
        devices = select_devices(device)
        settings, manifest = _check_run(reader, search, periodogram is not None, work, restart)
        resuming = manifest is not None
        for path in (output, periodogram, work):
            if path is not None:
                remove_temporaries(path)
        if manifest is None:
            manifest = _new_manifest(work, settings, search, reader)
        grid = _run_grid(search, manifest)
        plan = _Plan(
            dataclasses.replace(search, grid=grid),
            grid,
            work,
            devices,
            periodogram is not None,
            _figures(plot, plot_ids, plot_format, plot_labels, reader),
        )
        results = stack.enter_context(
            ResultsWriter(output, formats[0], _run_metadata(settings, grid))
        )
        bar = stack.enter_context(_progress_bar(progress, reader, search.algorithm))
        tally = _search_chunks(plan, rest, results, bar, timings)
        if resuming:  # a fresh work directory holds this run's parts only
            _check_no_stale_parts(work, tally.n_chunks)
        _warn_missing_plot_ids(plan.figures, tally.plotted)
        _warn_grid(grid, tally.grid_warnings)
        joined = time.perf_counter()
    if periodogram is not None:
        _join_periodograms(work, tally.n_chunks, periodogram, formats[1], grid, tally.n_objects)
    remove_path(work)
    timings |= {"join_s": time.perf_counter() - joined, "total_s": time.perf_counter() - started}
    return CatalogRun(
        output,
        Path(periodogram) if periodogram else None,
        list(tally.figures),
        tally.n_objects,
        tally.n_chunks,
        tally.n_resumed,
        grid,
        [d.label for d in devices],
        timings,
        tally.grid_warnings,
        tally.statuses,
    )


# ---------------------------------------------------------------------- the run


@dataclass(frozen=True)
class _Figures:
    """Which objects a run plots, where and how."""

    folder: Path
    ids: tuple[str, ...] | None  # None: the first DEFAULT_PLOTS objects of the input
    fmt: str
    labels: Any


@dataclass(frozen=True)
class _Plan:
    """What a run does with each chunk (settled once its work directory is)."""

    search: PeriodSearch  # with the run's grid
    grid: FrequencyGrid | FrequencyArray
    work: Path
    devices: list
    periodograms: bool
    figures: _Figures | None


@dataclass(frozen=True)
class _Begun:
    """A chunk whose search is under way (queued on the device, or done)."""

    chunk: CatalogChunk
    searches: list[Deferred]
    plot_ids: np.ndarray


@dataclass(frozen=True)
class _Searched:
    """A chunk's search results, for the writer thread."""

    chunk: CatalogChunk
    results: list[Any]
    plot_job: tuple | None  # (result with periodograms, catalog, ids) of the objects to plot


@dataclass(frozen=True)
class _Written:
    """What writing a chunk gave: its figures, and its objects per grid warning
    and per status other than OK."""

    figures: tuple[Path, ...]
    grid_warnings: Counter[str]
    statuses: Counter[str]


@dataclass(frozen=True)
class _Tally:
    """What a run went through."""

    n_objects: int
    n_chunks: int
    n_resumed: int
    plotted: frozenset[str]  # ids of the objects chosen to plot (resumed chunks included)
    figures: tuple[Path, ...]
    grid_warnings: dict[str, int]  # objects per GridWarning name
    statuses: dict[str, int]  # objects per status name other than OK


def _first_chunk(chunks: Iterator[CatalogChunk], timings: dict[str, float]) -> CatalogChunk:
    """The input's first chunk, checked (the reader raises for an empty input or a bad row)."""
    started = time.perf_counter()
    first = next(chunks)
    timings["read_s"] += time.perf_counter() - started
    return first


def _figures(
    plot: Any, plot_ids: Sequence[Any] | None, plot_format: str, plot_labels: Any, reader: Any
) -> _Figures | None:
    """What a run plots (None: no figures); labels default to the input's columns."""
    if plot is None:
        return None
    ids = None if plot_ids is None else tuple(str(i) for i in plot_ids)
    labels = default_plot_labels(reader) if plot_labels is None else plot_labels
    return _Figures(Path(plot), ids, plot_format, labels)


def _search_chunks(
    plan: _Plan,
    chunks: Iterable[CatalogChunk],
    output: ResultsWriter,
    bar: Any,
    timings: dict[str, float],
) -> _Tally:
    """Search and write every chunk not already in the work directory.

    A chunk's search is queued before the previous chunk's results are waited
    for (:meth:`PeriodSearch.start`), so the device goes from one chunk to the
    next without waiting for the host. A writer thread takes the chunks in
    input order: it commits each part file while an appender thread adds the
    chunk's rows to the output (a resumed chunk: the rows of its part file).
    """
    writer, appender = SerialQueue(), SerialQueue()

    def hand_over(begun: _Begun, final: bool = False) -> concurrent.futures.Future[_Written]:
        """Wait for a begun chunk's search, then queue its writing (``final``:
        the input's last chunk)."""
        searched = _wait_for(plan, begun, writer, timings)
        return writer.submit(_write, plan, searched, output, appender, bar, timings, final)

    pending: deque[concurrent.futures.Future[_Written]] = deque()
    written: list[_Written] = []
    n_objects = n_chunks = n_resumed = 0
    plotted: set[str] = set()
    begun: _Begun | None = None
    try:
        for chunk in chunks:
            plot_ids = _plot_ids(plan.figures, chunk.catalog, n_objects)
            plotted.update(plot_ids.astype(str).tolist())
            n_chunks, n_objects = n_chunks + 1, n_objects + chunk.catalog.n_objects
            resumed = _finished(plan, chunk)
            previous, begun = begun, None if resumed else _begin(plan, chunk, plot_ids, timings)
            if previous is not None:
                pending.append(hand_over(previous))
            if resumed:
                n_resumed += 1
                pending.append(writer.submit(_copy_part, plan, chunk, output, bar))
            written += _done(pending, most_pending=_PENDING_WRITES)
        last, begun = begun, None
        if last is not None:
            pending.append(hand_over(last, final=True))
        written += _done(pending, most_pending=0)
    except BaseException:
        try:
            # a bad row or a failed search: keep the chunk in flight if it finishes
            if begun is not None:
                with contextlib.suppress(Exception):
                    hand_over(begun)
        finally:
            _settle_writes(writer, appender)
        raise
    return _Tally(
        n_objects,
        n_chunks,
        n_resumed,
        frozenset(plotted),
        tuple(path for done in written for path in done.figures),
        dict(sum((done.grid_warnings for done in written), Counter())),
        dict(sum((done.statuses for done in written), Counter())),
    )


def _settle_writes(writer: SerialQueue, appender: SerialQueue) -> None:
    """Wait for the queued writes (the writer's jobs use the appender, so the
    writer goes first). An interrupt while waiting cancels the writes not
    started and still waits for those under way, through further interrupts:
    nothing may write once the run's outputs are unlocked."""

    def join() -> None:
        writer.join()
        appender.join()

    try:
        join()
    except KeyboardInterrupt:
        writer.cancel()
        appender.cancel()
        workers.through_interrupts(join)


def _plot_ids(figures: _Figures | None, catalog: Catalog, objects_before: int) -> np.ndarray:
    """Ids of a chunk to plot, ``objects_before`` objects into the input."""
    if figures is None:
        return catalog.ids[:0]
    if figures.ids is None:
        return catalog.ids[: max(0, DEFAULT_PLOTS - objects_before)]
    return catalog.ids[np.isin(catalog.ids.astype(str), figures.ids)]


def _begin(
    plan: _Plan, chunk: CatalogChunk, plot_ids: np.ndarray, timings: dict[str, float]
) -> _Begun:
    """Begin a chunk's search: queued on the device when it can be (best
    peaks); with periodograms, run now in groups of objects, each group's
    periodograms written to the chunk's periodogram part as soon as they are
    computed (they bound the host memory)."""
    started = time.perf_counter()
    if plan.periodograms:
        searches = _search_in_groups(plan, chunk)
    else:
        searches = [plan.search.start(chunk.catalog, device=plan.devices)]
    timings["compute_s"] += time.perf_counter() - started
    return _Begun(chunk, searches, plot_ids)


def _search_in_groups(plan: _Plan, chunk: CatalogChunk) -> list[Deferred]:
    """Search a chunk with periodograms, group by group (:func:`_group_objects`),
    each group's written to the chunk's periodogram part; the results without them."""
    catalog, n, size = chunk.catalog, chunk.catalog.n_objects, _group_objects(plan.grid)
    with PeriodogramWriter(
        plan.work / _periodogram_part(chunk.index), n, plan.grid, "npy"
    ) as part:
        return [
            Deferred.ready(_search_group(plan, catalog.slice(start, min(start + size, n)), part))
            for start in range(0, n, size)
        ]


def _search_group(plan: _Plan, group: Catalog, part: PeriodogramWriter) -> Any:
    """Search a group of objects with periodograms, write these to ``part``;
    the result without them (so no group's are held while the next is searched)."""
    result = plan.search.run(group, device=plan.devices, periodogram=True)
    part.write(result.ids, result.power)
    return _without_periodograms(result)


#: Result fields that hold periodograms (``statistic``: the phase-binned
#: statistics'; the others after ``power``: BLS's box fields).
_PERIODOGRAM_FIELDS = (
    "power",
    "statistic",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
)


def _without_periodograms(result: Any) -> Any:
    """``result`` with every periodogram field None."""
    fields = {item.name for item in dataclasses.fields(result)}
    return dataclasses.replace(result, **{n: None for n in _PERIODOGRAM_FIELDS if n in fields})


def _group_objects(grid: FrequencyGrid | FrequencyArray) -> int:
    """Objects per periodogram group: at most :data:`PERIODOGRAM_BYTES` of
    periodograms, and at most a quarter of the available host memory."""
    group_bytes = min(PERIODOGRAM_BYTES, available_host_memory() // 4)
    return max(1, group_bytes // (8 * grid.nf))


def _wait_for(
    plan: _Plan, begun: _Begun, writer: SerialQueue, timings: dict[str, float]
) -> _Searched:
    """A begun chunk's results, once its search is done, and the search of its
    objects to plot (figures need their periodograms)."""
    search = plan.search
    if search.algorithm == "lombscargle" and not plan.periodograms:
        # the fap column's inputs, while the device works (after the next chunk
        # is queued, so they never delay it)
        inputs = functools.partial(remember_fap_inputs, **search.options)
        writer.submit(inputs, begun.chunk.catalog, search.fap_method)
    started = time.perf_counter()
    results = [deferred.result() for deferred in begun.searches]
    plot_job = _plot_job(plan, begun.chunk.catalog, begun.plot_ids)
    timings["compute_s"] += time.perf_counter() - started
    return _Searched(begun.chunk, results, plot_job)


def _plot_job(plan: _Plan, catalog: Catalog, ids: np.ndarray) -> tuple | None:
    """A periodogram search of just the objects to plot."""
    if not ids.size:
        return None
    subset = catalog.subset(np.flatnonzero(np.isin(catalog.ids, ids)))
    result = plan.search.run(subset, device=plan.devices, periodogram=True)
    return result, subset, list(ids)


def _done(pending: deque, most_pending: int) -> list[_Written]:
    """The writes finished, in order, waiting until at most ``most_pending`` are left."""
    done = []
    while len(pending) > most_pending or (pending and pending[0].done()):
        done.append(pending.popleft().result())
    return done


def _write(
    plan: _Plan,
    searched: _Searched,
    output: ResultsWriter,
    appender: SerialQueue,
    bar: Any,
    timings: dict[str, float],
    final: bool,
) -> _Written:
    """Writer thread: figures, then the result part (the commit) alongside
    the output rows (the periodogram part is written by then, see :func:`_begin`).

    The input's ``final`` chunk has no result part, so no chunk summary, whose
    checksum reads every array of the chunk: its rows complete the output (a
    run that stops before the output is in place searches it again; runs with
    periodograms keep the part, as their join reads its ids). This saves 10 %
    of a 10,000-object run on an H100
    (``bench/results/2026-11-25_h100-sxm_ab_pipeline_10000.json``)."""
    started = time.perf_counter()
    chunk = searched.chunk
    columns = [
        result_columns(result, fap_method=plan.search.fap_column) for result in searched.results
    ]
    joined = (
        columns[0]
        if len(columns) == 1
        else {name: np.concatenate([c[name] for c in columns]) for name in columns[0]}
    )
    figures = _draw(plan.figures, searched.plot_job)
    if final and not plan.periodograms:
        output.write(results_table(joined))
    else:
        table = results_table(joined, metadata=chunk.summary())
        appended = appender.submit(output.write, table)  # alongside the commit
        _write_part(plan.work / _result_part(chunk.index), table)
        appended.result()
    timings["write_s"] += time.perf_counter() - started
    _advance(bar, chunk.n_rows)
    return _Written(
        tuple(figures),
        _grid_warning_counts(joined["grid_warning"]),
        _status_counts(joined["status_name"]),
    )


def _draw(figures: _Figures | None, plot_job: tuple | None) -> list[Path]:
    """The figures of a chunk's objects to plot."""
    if figures is None or plot_job is None:
        return []
    from clperiod.plot import plot_objects

    result, catalog, ids = plot_job
    return plot_objects(
        result, catalog, ids, figures.folder, fmt=figures.fmt, labels=figures.labels
    )


def _copy_part(plan: _Plan, chunk: CatalogChunk, output: ResultsWriter, bar: Any) -> _Written:
    """Writer thread: a resumed chunk's rows, from its part file, to the output."""
    table = _read_part(plan.work / _result_part(chunk.index))
    output.write(table)
    _advance(bar, chunk.n_rows)

    def column(name: str) -> list:
        return table.column(name).to_pylist() if name in table.column_names else []

    return _Written(
        (), _grid_warning_counts(column("grid_warning")), _status_counts(column("status_name"))
    )


def _advance(bar: Any, n: int) -> None:
    if bar is not None:
        bar.update(n)


def _grid_warning_counts(names: Any) -> Counter[str]:
    """Objects per :class:`GridWarning` of a chunk's ``grid_warning`` column."""
    names = np.asarray(names, dtype=object)
    counts: Counter[str] = Counter()
    for flag in GridWarning:
        key = str(flag.name).lower()
        count = int(np.count_nonzero((names == key) | (names == "coarse_step,low_fmax")))
        if count:
            counts[key] = count
    return counts


def _status_counts(names: Any) -> Counter[str]:
    """Objects per status name other than OK of a chunk's ``status_name`` column."""
    return Counter(str(name) for name in names if name != Status.OK.name)


def _finished(plan: _Plan, chunk: CatalogChunk) -> bool:
    """Whether the work directory holds this chunk; refuses a part of another chunk."""
    part = plan.work / _result_part(chunk.index)
    if not part.exists():
        return False
    if plan.periodograms and not (plan.work / _periodogram_part(chunk.index)).exists():
        return False
    stored = json.loads(_read_part(part).schema.metadata[b"clperiod"])
    expected = _normalised(chunk.summary())
    if stored == expected:
        return True
    if _without_checksum(stored) == _without_checksum(expected):
        last = chunk.first_row + chunk.n_rows - 1
        raise ValueError(
            f"the rows of chunk {chunk.index} of the input (file rows {chunk.first_row} to "
            f"{last}) changed since {part} was written (checksum {stored['checksum']} "
            f"there, {expected['checksum']} now): the input was modified after the run "
            "stopped; restart the run (restart=True, --restart) to search it again"
        )
    raise ValueError(
        f"{part} holds {stored}, but chunk {chunk.index} of the input is {expected}; "
        f"the work directory {plan.work} is stale: restart the run"
    )


def _warn_missing_plot_ids(figures: _Figures | None, plotted: frozenset[str]) -> None:
    """Warn about requested plot ids that the input does not hold."""
    if figures is None or figures.ids is None:
        return
    missing = sorted(set(figures.ids) - plotted)
    if missing:
        warnings.warn(
            f"no object with id(s) {', '.join(missing)} in the input: nothing plotted for them",
            stacklevel=4,
        )  # the caller of run_catalog


def _warn_grid(grid: FrequencyGrid | FrequencyArray, grid_warnings: dict[str, int]) -> None:
    """Warn about objects that the grid does not resolve (:class:`GridWarning`)."""
    if not grid_warnings:
        return
    counts = ", ".join(f"{count} with {name}" for name, count in grid_warnings.items())
    remedies = []
    if any("coarse_step" in name for name in grid_warnings):
        remedies.append("a finer step (more samples per peak) resolves their peaks")
    if any("low_fmax" in name for name in grid_warnings):
        remedies.append(
            "a higher fmax (a shorter minimum period) reaches the frequencies their "
            "sampling resolves, if such periods are wanted"
        )
    warnings.warn(
        f"the grid ({grid.nf:,} frequencies from {grid.fmin:.6g} to {grid.fmax:.6g}) does "
        f"not resolve every object: {counts} (see the grid_warning column); "
        + "; ".join(remedies),
        GridResolutionWarning,
        stacklevel=4,
    )  # the caller of run_catalog


class _Prefetch:
    """Iterate over ``items`` in a worker thread, one item ahead."""

    _DONE = object()

    def __init__(self, items: Iterable[Any], timings: dict[str, float]) -> None:
        self._items = iter(items)
        self._timings = timings
        self._queue: queue.Queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._job: concurrent.futures.Future | None = None

    def __enter__(self) -> Iterator[Any]:
        self._job = workers.submit(self._run)
        return self._iterate()

    def __exit__(self, *exc: object) -> None:
        """Stop the reader and wait for it, through further interrupts (the
        caller closes the items next, which must not be running)."""
        self._stop.set()
        job = self._job
        if job is None:
            return

        def drain() -> None:
            while True:
                with contextlib.suppress(queue.Empty):
                    self._queue.get_nowait()  # frees a reader waiting on the full queue
                if not concurrent.futures.wait([job], timeout=0.05).not_done:
                    return

        workers.through_interrupts(drain)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    item = next(self._items)
                except StopIteration:
                    self._put((self._DONE, None))
                    return
                self._timings["read_s"] += time.perf_counter() - started
                self._put((item, None))
        except BaseException as error:  # handed to the consumer
            self._put((None, error))

    def _put(self, entry: tuple) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.05)
                return
            except queue.Full:
                continue

    def _iterate(self) -> Iterator[Any]:
        while True:
            item, error = self._queue.get()
            if error is not None:
                raise error
            if item is self._DONE:
                return
            yield item


# ---------------------------------------------------------------------- work directory


def _check_destinations(files: list[Path], plot: Any) -> None:
    """Refuse output files that are directories (or the same file twice) and a
    figure folder that is a file, before anything is read or searched;
    create missing parent folders."""
    for path in files:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; give the name of a file to write")
        path.parent.mkdir(parents=True, exist_ok=True)
    if len(files) == 2 and files[0].resolve() == files[1].resolve():
        raise ValueError(f"the results and the periodograms would both go to {files[0]}")
    if plot is not None and Path(plot).exists() and not Path(plot).is_dir():
        raise NotADirectoryError(f"{plot} is a file, not a folder for figures")


def _open_work(work: Path, settings: dict[str, Any], restart: bool) -> dict[str, Any] | None:
    """The matching manifest of a previous run, or None for a fresh work directory.

    Files that a killed run left half written (temporary names) are removed.
    """
    if restart:
        remove_path(work)
    manifest_path = work / _MANIFEST
    if not manifest_path.exists():
        if work.exists() and not all(is_temporary(p) for p in work.iterdir()):
            raise ValueError(
                f"{work} exists but holds no {_MANIFEST}; it is not a clperiod "
                "work directory: move it away"
            )
        remove_path(work)
        work.mkdir(parents=True)
        return None
    manifest = json.loads(manifest_path.read_text())
    differences = _differences(manifest.get("settings", {}), settings)
    if differences and not any(work.glob("part-*")):
        # a run of other settings that wrote no part (its search refused an
        # option, say): nothing to resume, nothing lost
        remove_path(work)
        work.mkdir(parents=True)
        return None
    if differences:
        shown = "; ".join(differences[:6])
        raise ValueError(
            f"the work directory {work} belongs to a run with other settings ({shown}); "
            "run with the same input and options to resume it, or restart (--restart) "
            "to discard it"
        )
    for stray in filter(is_temporary, work.iterdir()):
        stray.unlink()
    return manifest


def _new_manifest(
    work: Path, settings: dict[str, Any], search: PeriodSearch, reader: Any
) -> dict[str, Any]:
    """Resolve the grid (reading the input once for an AutoGrid) and record the run."""
    grid: FrequencyGrid | FrequencyArray
    if isinstance(search.grid, AutoGrid):
        grid = search.grid.resolve(*catalog_extent(reader))
    else:
        grid = search.grid
    manifest = {"settings": settings, "grid": _grid_facts(grid)}
    with atomic_path(work / _MANIFEST) as temporary:
        temporary.write_text(json.dumps(manifest, indent=1))
    return manifest


def _check_no_stale_parts(work: Path, n_chunks: int) -> None:
    """Refuse part files beyond the input's chunks (a work directory of another input)."""
    expected = {_result_part(index) for index in range(n_chunks)}
    extra = sorted(p.name for p in work.glob("part-*.arrow") if p.name not in expected)
    if extra:
        raise ValueError(
            f"{work} holds parts beyond the {n_chunks} chunks of the input "
            f"({extra[0]}, ...): restart the run"
        )


def _join_periodograms(
    work: Path,
    n_chunks: int,
    path: Any,
    fmt: str | None,
    grid: FrequencyGrid | FrequencyArray,
    n_objects: int,
) -> None:
    """Join the periodogram parts, in input order, into one file (each part
    mapped, and written in slices of at most :data:`PERIODOGRAM_BYTES`)."""
    rows = max(1, PERIODOGRAM_BYTES // (8 * grid.nf))
    with PeriodogramWriter(path, n_objects, grid, fmt) as writer:
        for index in range(n_chunks):
            ids = _read_part(work / _result_part(index)).column("id").to_numpy()
            power = np.load(work / _periodogram_part(index), mmap_mode="r")
            for start in range(0, ids.size, rows):
                writer.write(ids[start : start + rows], power[start : start + rows])


def _result_part(index: int) -> str:
    return f"part-{index:06d}.arrow"


def _write_part(path: Path, table: Any) -> None:
    """Commit a chunk's results table: uncompressed Arrow IPC (a tenth of the
    time of Parquet), written atomically."""
    import pyarrow.feather as feather

    with atomic_path(path) as temporary:
        feather.write_feather(table, temporary, compression="uncompressed")


def _read_part(path: Path) -> Any:
    """A committed chunk's results table (schema metadata included)."""
    import pyarrow.feather as feather

    return feather.read_table(path, memory_map=False)


def _periodogram_part(index: int) -> str:
    return f"periodogram-{index:06d}.npy"


# ---------------------------------------------------------------------- helpers


class _MemorySource:
    """An in-memory catalog read in chunks like a file (identified by a content
    hash); every chunk keeps the catalog's band labels."""

    layout = "catalog"

    def __init__(self, catalog: Catalog, chunk_rows: int) -> None:
        self.catalog, self.chunk_rows = catalog, chunk_rows
        self.n_rows = int(catalog.offsets[-1])

    def identity(self) -> dict[str, Any]:
        import hashlib

        cat = self.catalog
        digest = hashlib.blake2b(digest_size=16)
        if cat.bands is not None:  # catalogs without bands keep the digest of earlier runs
            digest.update(repr(cat.bands).encode())
        for array in (cat.ids, cat.offsets, cat.t, cat.y, cat.dy, cat.band_codes):
            if array is not None:
                array = array.astype(str) if array.dtype == object else array
                digest.update(str(array.dtype).encode())
                digest.update(np.ascontiguousarray(array).tobytes())
        return {"catalog_blake2b": digest.hexdigest()}

    def settings(self) -> dict[str, Any]:
        return {"chunk_rows": self.chunk_rows}

    def __iter__(self) -> Iterator[CatalogChunk]:
        cat = self.catalog
        columns = {"t": cat.t, "y": cat.y, "dy": cat.dy, "band_codes": cat.band_codes}
        present = {name: values for name, values in columns.items() if values is not None}
        chunker = Chunker(self.chunk_rows, None, rows_are_objects=False)
        blocks = [*chunker.add(Block(cat.ids, cat.offsets, present, 0, False)), *chunker.finish()]
        for index, block in enumerate(blocks):
            catalog = Catalog(
                block.ids,
                block.offsets,
                block.columns["t"],
                block.columns["y"],
                block.columns.get("dy"),
                band_codes=block.columns.get("band_codes"),
                bands=cat.bands,
            )
            yield CatalogChunk(index, block.first_row, int(block.offsets[-1]), catalog)


def _as_reader(source: Any, chunk_rows: int) -> Any:
    if isinstance(source, CatalogReader):
        return source
    if isinstance(source, Catalog) or is_lightcurve_list(source):
        return _MemorySource(catalog_of(source, name="source"), chunk_rows)
    return CatalogReader(source, chunk_rows=chunk_rows)


def _progress_bar(progress: bool | None, reader: Any, algorithm: str) -> Any:
    """A tqdm bar over the input's rows (observations, or objects of a nested file)."""
    if progress is False:
        return contextlib.nullcontext()
    try:
        from tqdm.auto import tqdm
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install clperiod[progress]") from None
        return contextlib.nullcontext()
    unit = "lc" if reader.layout == "nested-parquet" else "obs"
    return tqdm(
        total=reader.n_rows,
        unit=unit,
        unit_scale=True,
        desc=algorithm,
        disable=None if progress is None else False,
    )


def _grid_facts(grid: FrequencyGrid | FrequencyArray) -> dict[str, Any]:
    """A grid as JSON: ``fmin``, ``df``, ``nf`` of a uniform grid; ``nf``,
    ``fmin``, ``fmax`` and the BLAKE2b hash of the float64 values of an array."""
    if isinstance(grid, FrequencyGrid):
        return {"fmin": grid.fmin, "df": grid.df, "nf": grid.nf}
    import hashlib

    values = np.ascontiguousarray(grid.frequencies(), dtype="<f8")
    digest = hashlib.blake2b(values.tobytes(), digest_size=16).hexdigest()
    return {"nf": grid.nf, "fmin": grid.fmin, "fmax": grid.fmax, "frequencies_blake2b": digest}


def _run_grid(search: PeriodSearch, manifest: dict[str, Any]) -> FrequencyGrid | FrequencyArray:
    """The grid a run searches: the search's array (the manifest records its
    hash, which the settings already matched), else the manifest's grid."""
    if isinstance(search.grid, FrequencyArray):
        return search.grid
    return FrequencyGrid(**manifest["grid"])


def _run_metadata(
    settings: dict[str, Any], grid: FrequencyGrid | FrequencyArray
) -> dict[str, Any]:
    """Provenance stored in the results file: version, input, search with its grid."""
    return {
        "clperiod": settings["clperiod"],
        "input": settings["input"],
        "search": dict(settings["search"], grid=_grid_facts(grid)),
    }


def _check_run(
    reader: CatalogReader, search: PeriodSearch, with_periodogram: bool, work: Path, restart: bool
) -> tuple[dict, dict | None]:
    """The run's settings and the manifest of the run it resumes (None: a
    fresh work directory)."""
    settings = _normalised(
        {
            "run_format": _RUN_FORMAT,
            "clperiod": _version(),
            "input": reader.identity(),
            "reader": reader.settings(),
            "search": search.settings(),
            "periodogram": with_periodogram,
        }
    )
    return settings, _open_work(work, settings, restart)


def _without_checksum(summary: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in summary.items() if key != "checksum"}


def _normalised(value: Any) -> Any:
    """``value`` as it reads back from JSON (tuples -> lists, NumPy scalars -> Python)."""
    return json.loads(json.dumps(value, default=lambda v: v.item()))


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Human-readable differences between two JSON values."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new)):
            out += _differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    if old != new:
        return [f"{prefix.rstrip('.')}: {old!r} there, {new!r} now"]
    return []


def _version() -> str:
    from clperiod import __version__

    return __version__
