"""Resumable catalog runs: a catalog file in, a results file out.

:func:`run_catalog` reads the input chunk by chunk
(:class:`~clperiod.io.readers.CatalogReader`), runs a period search on
each chunk, and writes every finished chunk but the input's last atomically
(temporary name, then ``os.replace``) as a part file (Arrow IPC) in a work
directory next to the output, ``<output>.parts/``; the last chunk's rows go
straight to the output, which is then complete (runs that keep periodograms
write its part too). The directory's ``manifest.json`` records the input file
(path, size, modification time), the reader settings (layout, columns, chunk
size) and the search settings. A run that finds a work directory with the
same manifest skips the chunks already written, so an interrupted run
continues where it stopped, with no object lost or written twice; a manifest
that does not match is refused (``restart=True`` discards it). Each part
records a checksum of its chunk's input rows
(:attr:`~clperiod.io.readers.CatalogChunk.checksum`), so an input edited
in place (same size and modification time) is refused too, naming the chunk.

Before anything is read, the output paths are checked (not directories) and
locked (:func:`clperiod.pipeline.runlock.locked_outputs`): a second run on the same
output stops at once with :class:`~clperiod.pipeline.runlock.OutputLockedError` and
touches nothing of the first. With periodograms, each chunk is searched in
groups of objects (at most :data:`PERIODOGRAM_BYTES`, and a quarter of the
available host memory), each group written to the chunk's periodogram part
as soon as it is computed.

I/O overlaps compute: a fresh run (no manifest in the work directory, no
periodograms) reads its first chunk and queues its search before anything
else (the chunk's row checks, the work directory, the manifest, the output),
which then overlaps the device; a reader thread reads and checks the next
chunk; the next chunk's search is queued on the device before the current
one is waited for (:meth:`PeriodSearch.start`); and a writer thread computes
the previous chunk's table (false-alarm probabilities) and commits its part
file while an appender thread adds its rows to the output (under a temporary
name). The
threads are long-lived workers (:mod:`clperiod.engine.workers`). When every chunk
is done the output is renamed into place, the periodogram parts are joined
in input order, and the work directory is removed (moved aside at once,
deleted in a background thread: :func:`clperiod.io.disposal.dispose`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import inspect
import itertools
import json
import queue
import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clperiod.engine import workers
from clperiod.catalog import Catalog, catalog_of, is_lightcurve_list
from clperiod.io.readers import DEFAULT_CHUNK_ROWS, CatalogChunk, CatalogReader, checked
from clperiod.io.chunks import Block, Chunker
from clperiod.engine.devices import select_devices
from clperiod.io.disposal import dispose
from clperiod.grid import SURVEY_MIN_PERIOD, FrequencyGrid, GridWarning
from clperiod.periodograms.inputs import Deferred
from clperiod.engine.planner import available_host_memory
from clperiod.io.results import (
    PeriodogramWriter,
    ResultsWriter,
    atomic_path,
    is_temporary,
    remove_temporaries,
    result_format,
    results_table,
)
from clperiod.io.results import periodogram_format as _periodogram_format
from clperiod.pipeline.runlock import locked_outputs
from clperiod.periodograms.stats import catalog_time_spread
from clperiod.io.tables import result_columns
from clperiod.engine.workers import SerialQueue

__all__ = ["ALGORITHMS", "AutoGrid", "CatalogRun", "GridResolutionWarning", "PeriodSearch",
           "catalog_extent", "default_plot_labels", "run_catalog", "work_directory"]

#: Period searches a catalog run can use.
ALGORITHMS = ("lombscargle", "supersmoother")
#: Search arguments the run sets itself.
_HANDLED = ("cat_or_t", "grid", "y", "dy", "device", "periodogram", "progress", "profile",
            "nan_policy")
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
    0.05 days) it is :meth:`FrequencyGrid.survey` (astropy's rule, reaching
    periods of ``min_period`` at least); with ``min_period=None`` astropy's
    ``autofrequency`` (:meth:`FrequencyGrid.auto`). A run resolves it by
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
            return FrequencyGrid.auto(times, *limits, minimum_frequency=low,
                                      maximum_frequency=high)
        return FrequencyGrid.survey(times, *limits, self.min_period, minimum_frequency=low,
                                    maximum_frequency=high)


@dataclass(frozen=True)
class PeriodSearch:
    """What a catalog run computes for every object.

    Parameters
    ----------
    algorithm : {"lombscargle", "supersmoother"}
        The search.
    grid : FrequencyGrid or AutoGrid
        The frequency grid; default :class:`AutoGrid` (resolved on the input,
        periods from 0.05 days up).
    options : mapping
        Keyword arguments of the search (``method``, ``normalization``,
        ``precision``, ``top_k``, ``variant``, ...), JSON-ready values. The
        run sets ``device``, ``periodogram`` and ``progress`` itself.
    fap_method : str or None
        Method of the ``fap`` column (Lomb-Scargle), or None for none.
    """

    algorithm: str
    grid: FrequencyGrid | AutoGrid = field(default_factory=AutoGrid)
    options: Mapping[str, Any] = field(default_factory=dict)
    fap_method: str | None = "baluev"

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if not isinstance(self.grid, (FrequencyGrid, AutoGrid)):
            raise TypeError("grid must be a FrequencyGrid or AutoGrid, got "
                            f"{type(self.grid).__name__}")
        accepted = [name for name in inspect.signature(self.function).parameters
                    if name not in _HANDLED]
        unknown = sorted(set(self.options) - set(accepted))
        if unknown:
            raise ValueError(f"unknown {self.algorithm} option(s) {unknown}; accepted: {accepted}")
        object.__setattr__(self, "options", dict(sorted(self.options.items())))
        try:
            json.dumps(self.options)
        except TypeError as error:
            raise TypeError(f"search options must be JSON values: {error}") from None

    @property
    def function(self) -> Any:
        """The search function (``clperiod.lombscargle`` or ``clperiod.supersmoother``)."""
        from clperiod import lombscargle
        from clperiod import supersmoother

        return {"lombscargle": lombscargle, "supersmoother": supersmoother}[self.algorithm]

    def run(self, catalog: Catalog, *, device: Any = None, periodogram: bool = False) -> Any:
        """Search one catalog with a resolved grid."""
        return self.function(catalog, self._resolved_grid(), device=device,
                             periodogram=periodogram, **self.options)

    def start(self, catalog: Catalog, *, device: Any = None) -> Deferred:
        """Begin the search of one catalog (best peaks, no periodograms):
        Lomb-Scargle on one device returns with it queued
        (:func:`clperiod.lombscargle_async`), so the caller can prepare the
        next catalog while the device works; ``.result()`` waits."""
        if self.algorithm != "lombscargle":
            return Deferred.ready(self.run(catalog, device=device))
        from clperiod.periodograms.lombscargle import lombscargle_async

        return lombscargle_async(catalog, self._resolved_grid(), device=device, **self.options)

    def _resolved_grid(self) -> FrequencyGrid:
        if not isinstance(self.grid, FrequencyGrid):
            raise ValueError("resolve the AutoGrid first (run_catalog does)")
        return self.grid

    def settings(self) -> dict[str, Any]:
        """JSON-ready description (the grid as given, resolved or not)."""
        grid = ({"auto": dataclasses.asdict(self.grid)} if isinstance(self.grid, AutoGrid)
                else _grid_facts(self.grid))
        return {"algorithm": self.algorithm, "grid": grid, "options": dict(self.options),
                "fap_method": self.fap_method}


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
    grid : FrequencyGrid
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
    """

    output: Path
    periodogram: Path | None
    figures: list[Path]
    n_objects: int
    n_chunks: int
    n_resumed: int
    grid: FrequencyGrid
    devices: list[str]
    timings: dict[str, float]
    grid_warnings: dict[str, int] = field(default_factory=dict)


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
        list of light curves (:meth:`Catalog.from_lightcurves`).
    search : PeriodSearch
        Algorithm, grid and options.
    output : path-like
        Results file (one row per object, the columns of
        :func:`clperiod.io.tables.result_columns`); Parquet or CSV.
    periodogram : path-like, optional
        Also write every periodogram there (``.npy``, ``.npz``, ``.h5``,
        ``.parquet``; see :mod:`clperiod.io.results`).
    output_format, periodogram_format : str, optional
        Formats, default from the suffixes.
    chunk_rows : int
        Observations per chunk when ``source`` is a path or a Catalog.
    device
        Device selection (see :func:`clperiod.engine.devices.select_devices`).
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
        :data:`DEFAULT_PLOTS` objects of the input.
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
        return _run_locked(source, search, output, periodogram=periodogram,
                           output_format=output_format, periodogram_format=periodogram_format,
                           chunk_rows=chunk_rows, device=device, restart=restart,
                           progress=progress, plot=plot, plot_ids=plot_ids,
                           plot_format=plot_format, plot_labels=plot_labels)


def _run_locked(source: Any, search: PeriodSearch, output: Path, *, periodogram: Any,
                output_format: str | None, periodogram_format: str | None, chunk_rows: int,
                device: Any, restart: bool, progress: bool | None, plot: Any,
                plot_ids: Sequence[Any] | None, plot_format: str,
                plot_labels: Any) -> CatalogRun:
    """:func:`run_catalog` once its output files are checked and locked."""
    started = time.perf_counter()
    reader = _as_reader(source, chunk_rows)
    timings = {"read_s": 0.0, "compute_s": 0.0, "write_s": 0.0}
    formats = (result_format(output, output_format),
               _periodogram_format(periodogram, periodogram_format) if periodogram else None)
    work = work_directory(output)
    pairs = reader.unchecked()  # a Parquet file is opened here
    with contextlib.ExitStack() as stack:
        stack.callback(pairs.close)  # runs once the reader thread below has stopped
        reading = time.perf_counter()
        first, check_first = next(pairs)  # the reader raises for an empty input
        timings["read_s"] = time.perf_counter() - reading
        devices = select_devices(device)
        labels = default_plot_labels(reader) if plot and plot_labels is None else plot_labels
        state_args = (work, devices, periodogram is not None, plot, plot_ids, plot_format,
                      labels, timings)
        queued = state = None
        try:
            if (isinstance(search.grid, FrequencyGrid) and periodogram is None
                    and _looks_fresh(work)):
                # a fresh run queues the first chunk's search before anything
                # else, even before the chunk's rows are checked and the work
                # directory is set up: all of that then overlaps the device (a
                # failed check or set-up abandons the search; a search with
                # periodograms runs at once, writing them to the work directory)
                state = _RunState(search, *state_args)
                try:
                    with np.errstate(all="ignore"):  # nothing to say of unchecked rows
                        queued = state.begin(first)
                except Exception:
                    check_first()  # a bad row is the error to report
                    raise
            checking = time.perf_counter()
            check_first()
            timings["read_s"] += time.perf_counter() - checking
            # the reader thread reads on while this thread sets the run up
            rest = stack.enter_context(_Prefetch(checked(pairs), timings))
            settings, manifest = _check_run(reader, search, periodogram is not None, work,
                                            restart)
        except BaseException:
            if queued is not None:
                state.abandon(queued)
            raise
        resuming = manifest is not None
        if resuming and queued is not None:  # a manifest appeared meanwhile
            state.abandon(queued)
            queued = state = None
        if queued is None:
            rest = itertools.chain([first], rest)
        try:
            for path in (output, periodogram, work):
                if path is not None:
                    remove_temporaries(path)
            if manifest is None:
                manifest = _new_manifest(work, settings, search, reader)
            grid = FrequencyGrid(**manifest["grid"])
            if state is None:
                state = _RunState(dataclasses.replace(search, grid=grid), *state_args)
            results = stack.enter_context(
                ResultsWriter(output, formats[0], _run_metadata(settings, grid)))
        except BaseException:
            if queued is not None:
                state.abandon(queued)
            raise
        bar = stack.enter_context(_progress_bar(progress, reader, search.algorithm))
        state.process(rest, results, bar, queued)
        if resuming:  # a fresh work directory holds this run's parts only
            _check_no_stale_parts(work, state.n_chunks)
        state.warn_missing_plot_ids()
        state.warn_grid()
        joined = time.perf_counter()
    if periodogram is not None:
        _join_periodograms(work, state.n_chunks, periodogram, formats[1], grid, state.n_objects)
    dispose(work)
    timings = dict(state.timings, join_s=time.perf_counter() - joined,
                   total_s=time.perf_counter() - started)
    return CatalogRun(output, Path(periodogram) if periodogram else None, state.figures,
                      state.n_objects, state.n_chunks, state.n_resumed, grid,
                      [d.label for d in devices], timings, dict(state.grid_warnings))


# ---------------------------------------------------------------------- the run


class _RunState:
    """One run over the chunks: compute in this thread, write in another.

    The writer thread takes the chunks in input order: it commits each part
    file and appends the chunk's rows to the output (resumed chunks: the rows
    of their part file), so the output grows while the device computes. The
    input's last chunk, with nothing left to overlap, is written in the run's
    own thread.
    """

    def __init__(self, search: PeriodSearch, work: Path, devices: list, with_periodogram: bool,
                 plot: Any, plot_ids: Sequence[Any] | None, plot_format: str,
                 plot_labels: Any, timings: dict[str, float]) -> None:
        self.work, self.search, self.devices = work, search, devices
        self.with_periodogram = with_periodogram
        self.plot = None if plot is None else Path(plot)
        self.plot_ids = None if plot_ids is None else np.asarray([str(i) for i in plot_ids])
        self.plot_format = plot_format
        self.plot_labels = plot_labels
        self.plots_left = DEFAULT_PLOTS
        self.plot_ids_found: set[str] = set()
        self.figures: list[Path] = []
        self.grid_warnings: dict[str, int] = {}
        self.n_objects = self.n_chunks = self.n_resumed = 0
        self.timings = timings  # read_s is the reader thread's (_Prefetch)
        self.output: ResultsWriter | None = None
        self.bar: Any = None
        self._writer = SerialQueue()  # part files, in chunk order
        self._appender = SerialQueue()  # output rows, alongside the part files
        self._writes: list[concurrent.futures.Future] = []
        self.null_in_advance = (search.algorithm == "lombscargle" and not with_periodogram
                                and search.fap_method not in (None, "townsend"))
        self.null_weighted = search.options.get("method", "generalized") == "generalized"

    def begin(self, chunk: CatalogChunk) -> tuple:
        """Count a chunk and queue its search (a fresh run's first chunk, before
        :meth:`process`, which takes what this returns)."""
        return self._queue(chunk, self._count(chunk))

    def abandon(self, queued: tuple) -> None:
        """Wait for a queued search whose run failed before :meth:`process`."""
        with contextlib.suppress(Exception):
            for search in queued[1]:
                search.result()

    def process(self, chunks: Iterable[CatalogChunk], output: ResultsWriter, bar: Any,
                queued: tuple | None = None) -> None:
        """Search and write every chunk not already in the work directory.

        A chunk's search is queued before the previous chunk's results are
        waited for (:meth:`PeriodSearch.start`), so the device goes from one
        chunk to the next without waiting for the host. ``queued`` is the
        chunk :meth:`begin` queued, if any.
        """
        self.output, self.bar = output, bar
        try:
            for chunk in chunks:
                plot_ids = self._count(chunk)
                if self._finished(chunk):
                    previous, queued = queued, None
                    self._collect(previous)
                    self.n_resumed += 1
                    self._writes.append(self._writer.submit(self._copy_part, chunk))
                    continue
                previous, queued = queued, self._queue(chunk, plot_ids)
                self._collect(previous)
            previous, queued = queued, None
            self._collect(previous, final=True)
            self._drain()
        except BaseException:
            # a bad row or a failed search: keep the chunk in flight if it finishes
            with contextlib.suppress(Exception):
                self._collect(queued)
            # the writer finishes (its jobs use the appender) before the appender
            self._writer.join()
            self._appender.join()
            raise

    def warn_missing_plot_ids(self) -> None:
        """Warn about requested plot ids that the input does not hold."""
        if self.plot is None or self.plot_ids is None:
            return
        missing = sorted(set(self.plot_ids.tolist()) - self.plot_ids_found)
        if missing:
            warnings.warn(f"no object with id(s) {', '.join(missing)} in the input: "
                          "nothing plotted for them", stacklevel=4)

    def warn_grid(self) -> None:
        """Warn about objects that the grid does not resolve (:class:`GridWarning`)."""
        if not self.grid_warnings:
            return
        grid = self.search.grid
        counts = ", ".join(f"{count} with {name}" for name, count in self.grid_warnings.items())
        warnings.warn(
            f"the grid ({grid.nf:,} frequencies from {grid.fmin:.6g} to {grid.fmax:.6g}) does "
            f"not resolve every object: {counts} (see the grid_warning column); a finer step "
            "(more samples per peak) or a higher fmax (a shorter minimum period) fixes it",
            GridResolutionWarning, stacklevel=4)  # the caller of run_catalog

    def _count_grid_warnings(self, names: Any) -> None:
        """Add a chunk's ``grid_warning`` column to the run's counts (writer thread)."""
        names = np.asarray(names, dtype=object)
        for flag in GridWarning:
            key = flag.name.lower()
            count = int(np.count_nonzero((names == key) | (names == "coarse_step,low_fmax")))
            if count:
                self.grid_warnings[key] = self.grid_warnings.get(key, 0) + count

    def _copy_part(self, chunk: CatalogChunk) -> list[Path]:
        """Writer thread: a resumed chunk's rows, from its part file, to the output."""
        table = _read_part(self.work / _result_part(chunk.index))
        if "grid_warning" in table.column_names:
            self._count_grid_warnings(table.column("grid_warning").to_pylist())
        self.output.write(table)
        self._advance(chunk.n_rows)
        return []

    def _advance(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def _count(self, chunk: CatalogChunk) -> np.ndarray:
        """Count a chunk of the input; the ids of it to plot."""
        self.n_chunks += 1
        self.n_objects += chunk.catalog.n_objects
        return self._plot_choice(chunk.catalog)

    def _queue(self, chunk: CatalogChunk, plot_ids: np.ndarray) -> tuple:
        """Begin a chunk's search: ``(chunk, searches, plot_ids)``."""
        started = time.perf_counter()
        searches = self._start(chunk)
        self.timings["compute_s"] += time.perf_counter() - started
        return chunk, searches, plot_ids

    def _start(self, chunk: CatalogChunk) -> list[Deferred]:
        """Begin the chunk's search: queued on the device when it can be
        (best peaks); with periodograms, run now in groups of objects, each
        group's periodograms written to the chunk's periodogram part as soon
        as they are computed (they bound the host memory)."""
        if not self.with_periodogram:
            return [self.search.start(chunk.catalog, device=self.devices)]
        catalog, per_group = chunk.catalog, self._group_objects()
        path = self.work / _periodogram_part(chunk.index)
        with PeriodogramWriter(path, catalog.n_objects, self.search.grid, "npy") as part:
            return [Deferred.ready(self._search_group(catalog, start, per_group, part))
                    for start in range(0, catalog.n_objects, per_group)]

    def _group_objects(self) -> int:
        """Objects per periodogram group: at most :data:`PERIODOGRAM_BYTES` of
        periodograms, and at most a quarter of the available host memory."""
        group_bytes = min(PERIODOGRAM_BYTES, available_host_memory() // 4)
        return max(1, group_bytes // (8 * self.search.grid.nf))

    def _search_group(self, catalog: Catalog, start: int, size: int,
                      part: PeriodogramWriter) -> Any:
        """Search objects ``[start, start + size)`` with periodograms, write
        these to ``part``; the result without them."""
        group = catalog.slice(start, min(start + size, catalog.n_objects))
        result = self.search.run(group, device=self.devices, periodogram=True)
        part.write(result.ids, result.power)
        return dataclasses.replace(result, power=None)

    def _collect(self, queued: tuple | None, final: bool = False) -> None:
        """Wait for a queued chunk's search, then hand it to the writer thread
        (``final``: the input has no more chunks)."""
        if queued is None:
            return
        chunk, searches, plot_ids = queued
        if self.null_in_advance:  # the fap column's inputs, while the device works (after
            # the next chunk is queued, so they never delay it)
            self._writer.submit(catalog_time_spread, chunk.catalog, self.null_weighted)
        started = time.perf_counter()
        results = [search.result() for search in searches]
        plot_job = self._plot_job(chunk.catalog, plot_ids)
        self.timings["compute_s"] += time.perf_counter() - started
        if final:  # nothing left to overlap: written here, after the writes before it
            self._drain()
            self.figures += self._write(chunk, results, plot_job, True)
            return
        self._writes.append(self._writer.submit(self._write, chunk, results, plot_job, False))
        while len(self._writes) > _PENDING_WRITES or (self._writes and self._writes[0].done()):
            self.figures += self._writes.pop(0).result()

    def _drain(self) -> None:
        """Wait for the writer thread's jobs, in order."""
        while self._writes:
            self.figures += self._writes.pop(0).result()

    def _write(self, chunk: CatalogChunk, results: list[Any], plot_job: Any,
               final: bool) -> list[Path]:
        """Writer thread (the final chunk: the run's thread): figures, then the
        result part (the commit) alongside the output rows (the periodogram
        part is written by then, see :meth:`_start`). The input's final chunk
        has no result part, as the output is complete once its rows are in (a
        run that stops before the output is in place searches that chunk
        again; runs with periodograms keep it: their join reads its ids)."""
        started = time.perf_counter()
        columns = [result_columns(result, fap_method=self.search.fap_method)
                   for result in results]
        joined = columns[0] if len(columns) == 1 else {
            name: np.concatenate([c[name] for c in columns]) for name in columns[0]}
        self._count_grid_warnings(joined["grid_warning"])
        figures = []
        if plot_job is not None:
            from clperiod.plot import plot_objects

            result, catalog, ids = plot_job
            figures = plot_objects(result, catalog, ids, self.plot, fmt=self.plot_format,
                                   labels=self.plot_labels)
        if final and not self.with_periodogram:  # no part file: no chunk summary
            self.output.write(results_table(joined))
        else:
            table = results_table(joined, metadata=chunk.summary())
            appended = self._appender.submit(self.output.write, table)  # alongside the commit
            _write_part(self.work / _result_part(chunk.index), table)
            appended.result()
        self.timings["write_s"] += time.perf_counter() - started
        self._advance(chunk.n_rows)
        return figures

    def _finished(self, chunk: CatalogChunk) -> bool:
        """Whether the work directory holds this chunk; refuses a part of another chunk."""
        part = self.work / _result_part(chunk.index)
        if not part.exists():
            return False
        if self.with_periodogram and not (self.work / _periodogram_part(chunk.index)).exists():
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
            f"the work directory {self.work} is stale: restart the run"
        )

    def _plot_choice(self, catalog: Catalog) -> np.ndarray:
        """Ids of this chunk to plot."""
        if self.plot is None:
            return catalog.ids[:0]
        if self.plot_ids is not None:
            chosen = catalog.ids[np.isin(catalog.ids.astype(str), self.plot_ids)]
            self.plot_ids_found.update(chosen.astype(str).tolist())
            return chosen
        chosen = catalog.ids[: self.plots_left]
        self.plots_left -= chosen.size
        return chosen

    def _plot_job(self, catalog: Catalog, ids: np.ndarray) -> tuple | None:
        """A periodogram search of just the objects to plot (figures need the periodogram)."""
        if not ids.size:
            return None
        subset = catalog.subset(np.flatnonzero(np.isin(catalog.ids, ids)))
        result = self.search.run(subset, device=self.devices, periodogram=True)
        return result, subset, list(ids)


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
        self._stop.set()
        while True:
            with contextlib.suppress(queue.Empty):
                self._queue.get_nowait()  # frees a reader waiting on the full queue
            if not concurrent.futures.wait([self._job], timeout=0.05).not_done:
                return

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


def _looks_fresh(work: Path) -> bool:
    """Whether a run has no manifest to resume (one stat: decided before its checks)."""
    return not (work / _MANIFEST).exists()


def _open_work(work: Path, settings: dict[str, Any], restart: bool) -> dict[str, Any] | None:
    """The matching manifest of a previous run, or None for a fresh work directory.

    Files that a killed run left half written (temporary names) are removed.
    """
    if restart:
        dispose(work)
    manifest_path = work / _MANIFEST
    if not manifest_path.exists():
        if work.exists() and not all(is_temporary(p) for p in work.iterdir()):
            raise ValueError(f"{work} exists but holds no {_MANIFEST}; it is not a clperiod "
                             "work directory: move it away")
        dispose(work)
        work.mkdir(parents=True)
        return None
    manifest = json.loads(manifest_path.read_text())
    differences = _differences(manifest.get("settings", {}), settings)
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


def _new_manifest(work: Path, settings: dict[str, Any], search: PeriodSearch,
                  reader: Any) -> dict[str, Any]:
    """Resolve the grid (reading the input once for an AutoGrid) and record the run."""
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
        raise ValueError(f"{work} holds parts beyond the {n_chunks} chunks of the input "
                         f"({extra[0]}, ...): restart the run")


def _join_periodograms(work: Path, n_chunks: int, path: Any, fmt: str | None,
                       grid: FrequencyGrid, n_objects: int) -> None:
    """Join the periodogram parts, in input order, into one file (each part
    mapped, and written in slices of at most :data:`PERIODOGRAM_BYTES`)."""
    rows = max(1, PERIODOGRAM_BYTES // (8 * grid.nf))
    with PeriodogramWriter(path, n_objects, grid, fmt) as writer:
        for index in range(n_chunks):
            ids = _read_part(work / _result_part(index)).column("id").to_numpy()
            power = np.load(work / _periodogram_part(index), mmap_mode="r")
            for start in range(0, ids.size, rows):
                writer.write(ids[start:start + rows], power[start:start + rows])


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
    """An in-memory catalog read in chunks like a file (identified by a content hash)."""

    layout = "catalog"

    def __init__(self, catalog: Catalog, chunk_rows: int) -> None:
        self.catalog, self.chunk_rows = catalog, chunk_rows
        self.n_rows = int(catalog.offsets[-1])

    def identity(self) -> dict[str, Any]:
        import hashlib

        digest = hashlib.blake2b(digest_size=16)
        for array in (self.catalog.ids, self.catalog.offsets, self.catalog.t, self.catalog.y,
                      self.catalog.dy):
            if array is not None:
                array = array.astype(str) if array.dtype == object else array
                digest.update(str(array.dtype).encode())
                digest.update(np.ascontiguousarray(array).tobytes())
        return {"catalog_blake2b": digest.hexdigest()}

    def settings(self) -> dict[str, Any]:
        return {"chunk_rows": self.chunk_rows}

    def unchecked(self) -> Iterator[tuple[CatalogChunk, Any]]:
        """The chunks (as :meth:`CatalogReader.unchecked`), with nothing left to
        check: a Catalog was checked when it was made."""
        return ((chunk, _nothing_to_check) for chunk in self)

    def __iter__(self) -> Iterator[CatalogChunk]:
        cat = self.catalog
        columns = {"t": cat.t, "y": cat.y} | ({"dy": cat.dy} if cat.dy is not None else {})
        chunker = Chunker(self.chunk_rows, None, rows_are_objects=False)
        blocks = [*chunker.add(Block(cat.ids, cat.offsets, columns, 0, False)), *chunker.finish()]
        for index, block in enumerate(blocks):
            catalog = Catalog(block.ids, block.offsets, block.columns["t"], block.columns["y"],
                              block.columns.get("dy"))
            yield CatalogChunk(index, block.first_row, int(block.offsets[-1]), catalog)


def _nothing_to_check() -> None:
    """The row check of a chunk of an in-memory catalog (done when it was made)."""


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
    return tqdm(total=reader.n_rows, unit=unit, unit_scale=True, desc=algorithm,
                disable=None if progress is None else False)


def _grid_facts(grid: FrequencyGrid) -> dict[str, Any]:
    return {"fmin": grid.fmin, "df": grid.df, "nf": grid.nf}


def _run_metadata(settings: dict[str, Any], grid: FrequencyGrid) -> dict[str, Any]:
    """Provenance stored in the results file: version, input, search with its grid."""
    return {"clperiod": settings["clperiod"], "input": settings["input"],
            "search": dict(settings["search"], grid=_grid_facts(grid))}


def _check_run(reader: CatalogReader, search: PeriodSearch, with_periodogram: bool,
               work: Path, restart: bool) -> tuple[dict, dict | None]:
    """The run's settings and the manifest of the run it resumes (None: a
    fresh work directory)."""
    settings = _normalised({
        "run_format": _RUN_FORMAT,
        "clperiod": _version(),
        "input": reader.identity(),
        "reader": reader.settings(),
        "search": search.settings(),
        "periodogram": with_periodogram,
    })
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
