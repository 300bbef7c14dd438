"""Multiband Lomb-Scargle periodograms of catalogs (VanderPlas & Ivezic 2015).

The model of astropy's ``LombScargleMultiband(...).power(method="flexible")``:
at each frequency a Fourier series of ``nterms_base`` harmonics shared by all
bands plus, per band, an offset and ``nterms_band`` harmonics of its own,
fitted by weighted least squares with astropy's ridge. The device
(``cl_kernels/multiband.mako``, fp64 or fp32) accumulates each object's
weighted harmonic sums band by band and solves every frequency's normal
system by Cholesky, with the unknowns that the band offsets and harmonics
duplicate eliminated exactly (the kernel's notes); ``peaks_topk``
(``cl_kernels/peaks.mako``) reduces the periodograms to each object's top-k
peaks, as :func:`multiterm.search <clperiod.periodograms.multiterm.search>`
does. Frequencies are a uniform grid or any array; the objects are cut
into batches that fit the smallest device and spread over the selected
devices (``clperiod.engine.scheduler.run_on_devices``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of
from clperiod.engine import kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_queue,
    require_fp64,
    select_devices,
    upload,
)
from clperiod.engine.planner import Buffer, MemoryBudget, batch_bounds
from clperiod.engine.scheduler import run_on_devices
from clperiod.engine.staging import check_periodogram_memory
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid, split_float32
from clperiod.periodograms import multiterm
from clperiod.periodograms.bootstrap import DEFAULT_RESAMPLINGS, bootstrap_fap
from clperiod.periodograms.inputs import (
    PeakResults,
    band_order,
    banded_status,
    blank_failed,
    check_choice,
    check_top_k,
    row_cells,
    segment_reduce,
    segment_sum,
    top_k_arrays,
)
from clperiod.periodograms.lombscargle import batch_points
from clperiod.periodograms.multiband_fit import DEFAULT_REG_BAND, MultibandFit

Precision = Literal["fp64", "fp32"]

__all__ = [
    "DEFAULT_REG_BAND",
    "MAX_BANDS",
    "MAX_NTERMS",
    "MultibandResult",
    "lombscargle_multiband",
    "min_points",
    "n_parameters",
]

#: Most harmonics of the base and of the band models.
MAX_NTERMS = 4
#: Most bands of a catalog (the kernel's reduced normal system, up to
#: 2 max(K - L, 0) + B (1 + 2L) unknowns, lives in private memory).
MAX_BANDS = 8
_WG = 64
#: Values whose residuals about their band means are below this fraction of
#: their magnitude are constant to rounding (ZERO_VARIANCE).
_RESOLUTION = 64 * np.finfo(np.float64).eps


@dataclass(frozen=True, repr=False)
class MultibandResult(PeakResults):
    """Multiband Lomb-Scargle search results, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    frequency_best, power_best : ndarray
        Highest periodogram peak of each object (NaN when ``status`` is not
        OK); among equal maxima the lowest frequency.
    top_k_frequency, top_k_power : ndarray, shape (n_objects, top_k)
        The ``top_k`` highest distinct peaks (local maxima), best first; NaN
        where an object has fewer peaks.
    status : ndarray of Status
        OK; TOO_FEW_POINTS (no rows, or fewer than
        :func:`~clperiod.periodograms.multiband.min_points`); ZERO_VARIANCE
        (values constant within every band); ZERO_BASELINE, NOT_FINITE,
        BAD_UNCERTAINTY, OUT_OF_RANGE as the other searches use them.
    power : ndarray, shape (n_objects, nf), or None
        The periodograms when requested (float64, or float32 with
        ``precision="fp32"``), columns in the order of ``grid.frequencies()``;
        rows of objects that are not OK are NaN, and so are the powers at
        frequency 0, where the model is degenerate.
    grid : FrequencyGrid or FrequencyArray
        The frequencies evaluated, as given.
    bands : tuple
        The band labels, in the order of the model's band parameters
        (``(None,)`` for a catalog without bands: one band).
    nterms_base, nterms_band : int
        The model.
    devices : list of str
        The devices that shared the objects.
    center_data : bool
        Whether each band's weighted mean was subtracted first.
    reg_base, reg_band : float or None
        The ridges.
    regularize_by_trace : bool
        Whether the ridges are in units of the normal matrix's trace (else in
        its own units, those of ``dy**-2``).
    precision : {"fp64", "fp32"}
        The arithmetic of the sums and the solve.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    bands: tuple[Any, ...]
    nterms_base: int
    nterms_band: int
    devices: list[str]
    catalog: Catalog = field(repr=False)
    center_data: bool = True
    reg_base: float | None = None
    reg_band: float | None = DEFAULT_REG_BAND
    regularize_by_trace: bool = True
    precision: Precision = "fp64"

    def fit(self, index: int) -> MultibandFit:
        """The model of object ``index`` (catalog order) at any frequency.

        Its rows, with this search's ``nterms_base``, ``nterms_band``, ridges
        and ``center_data``: ``fit(k).model(t, r.frequency_best[k])`` is the
        model behind the best peak, ``model_parameters`` and ``offset`` those
        of astropy's ``LombScargleMultiband`` on the object's rows (times from
        its first observation, ``MultibandFit.epoch``; the model takes times in
        the catalog's scale). Bands without rows of the object are left out.

        Raises
        ------
        IndexError
            ``index`` out of range.
        ValueError
            The object has no rows.
        """
        index = checks.integer("index", index)
        if not -self.catalog.n_objects <= index < self.catalog.n_objects:
            raise IndexError(f"index {index} out of range for {self.catalog.n_objects} objects")
        index %= self.catalog.n_objects
        rows = slice(self.catalog.offsets[index], self.catalog.offsets[index + 1])
        t = self.catalog.t[rows]
        if t.size == 0:
            raise ValueError(f"object {self.ids[index]!r} (index {index}) has no rows to fit")
        codes = (
            np.zeros(t.size, dtype=np.intp)
            if self.catalog.band_codes is None
            else self.catalog.band_codes[rows].astype(np.intp)
        )
        present, band_index = np.unique(codes, return_inverse=True)
        dy = self.catalog.dy
        return MultibandFit(
            t=t - t.min(),
            y=self.catalog.y[rows],
            weights=np.ones(t.size) if dy is None else dy[rows] ** -2.0,
            band_index=band_index.ravel(),
            labels=tuple(self.bands[code] for code in present),
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            regularize_by_trace=self.regularize_by_trace,
            center_data=self.center_data,
            epoch=float(t.min()),
        )

    def false_alarm_probability(
        self, n_resamplings: int = DEFAULT_RESAMPLINGS, *, seed: int | None = None, device=None
    ) -> np.ndarray:
        """Bootstrap false-alarm probability of each object's best peak.

        Every object is resampled ``n_resamplings`` times within its bands
        (times and band labels kept, ``(y, dy)`` drawn with replacement from
        the same band's rows) and the copies are searched with this search's
        grid, model and ridges; the FAP is ``(1 + #{copies whose best power
        >= power_best}) / (1 + n_resamplings)``, at least ``1 / (1 +
        n_resamplings)``. See :func:`clperiod.periodograms.bootstrap.bootstrap_fap`
        (which also returns the counts and the seed).

        Parameters
        ----------
        n_resamplings : int
            Resampled copies per object, >= 1.
        seed : int, optional
            Seed of the generator (0 to 2**64 - 1): the same seed gives the
            same probabilities on every device. By default a fresh one.
        device
            Devices that draw and search the copies (see
            :func:`clperiod.select_devices`).

        Returns
        -------
        ndarray
            One probability per object; NaN where ``status`` is not OK (and
            where no copy could be searched, possible only for a handful of
            resamplings).
        """
        search = functools.partial(
            lombscargle_multiband,
            grid=self.grid,
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            center_data=self.center_data,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            regularize_by_trace=self.regularize_by_trace,
            precision=self.precision,
            device=device,
        )
        return bootstrap_fap(
            self.catalog,
            search,
            n_resamplings=n_resamplings,
            seed=seed,
            observed=self,
            device=device,
        ).fap


def n_parameters(nterms_base: int, nterms_band: int, n_bands: int) -> int:
    """Unknowns of the flexible model: ``1 + 2 nterms_base + n_bands (1 + 2 nterms_band)``."""
    return 1 + 2 * nterms_base + n_bands * (1 + 2 * nterms_band)


def min_points(nterms_base: int, nterms_band: int, n_bands: int) -> int:
    """Fewest observations of an object with data in ``n_bands`` bands: the
    model's independent unknowns (:func:`n_parameters` less the base constant,
    which the band offsets duplicate) and one degree of freedom."""
    return n_parameters(nterms_base, nterms_band, n_bands)


def lombscargle_multiband(
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    *,
    nterms_base: int = 1,
    nterms_band: int = 1,
    center_data: bool = True,
    reg_base: float | None = None,
    reg_band: float | None = DEFAULT_REG_BAND,
    regularize_by_trace: bool = True,
    precision: Precision = "fp64",
    top_k: int = 1,
    periodogram: bool = False,
    device=None,
) -> MultibandResult:
    """Multiband Lomb-Scargle period search of every object of a catalog.

    Each object's power equals astropy's
    ``LombScargleMultiband(t - t[0], y, band, dy, nterms_base=...,
    nterms_band=..., reg_base=..., reg_band=..., regularize_by_trace=...,
    center_data=...)
    .power(grid.frequencies(), method="flexible")`` on its own rows, to
    rounding (``normalization`` and ``fit_mean`` do not change that method's
    power, so none is taken).

    Parameters
    ----------
    catalog : Catalog
        Light curves with a band label per row (``Catalog.from_arrays(...,
        band=...)``); a catalog without bands is searched as one band. The
        bands of an object without rows of its own are left out of its model.
    grid : FrequencyGrid or FrequencyArray
        Ordinary frequencies, in the units of ``1 / t``: a uniform grid
        ``fmin + k df``, or any frequencies
        (:meth:`~clperiod.FrequencyGrid.from_frequencies`: uniform in period,
        log-spaced, unsorted, repeated), each evaluated as it would be alone;
        periodogram columns follow its order and peaks are local maxima
        along frequency.
    nterms_base, nterms_band : int
        Harmonics of the model shared by all bands and of each band's model,
        0 to :data:`~clperiod.periodograms.multiband.MAX_NTERMS`, not both 0.
    center_data : bool
        Subtract each band's weighted mean before fitting (astropy's
        default). Without it the reference chi^2 is taken about zero, so data
        far from zero give powers near 1 at every frequency, as in astropy.
    reg_base, reg_band : float or None
        astropy's ridges on the base and band parameters; at least one is
        needed (the model's constants are degenerate without).
    regularize_by_trace : bool
        As astropy: the ridges are in units of the normal matrix's trace
        (default: they scale with the data's weights), else absolute, in the
        units of ``dy**-2`` (so that scaling ``dy``, or leaving it out, changes
        their effect; an object's own ridge is then ``reg / sum(dy**-2)`` per
        unit of its normalised weights: the kernel's notes).
    precision : {"fp64", "fp32"}
        Arithmetic of the device's sums and solves. Times stay float64 on the
        host and fp32 phases come from double-single inputs, so raw MJD/JD
        epochs keep ~1e-7-cycle phases; values are centred and scaled per
        object in float64 first. fp32 powers are within about 1e-5 of fp64's
        where the normal system is well conditioned; near the frequencies
        where the harmonics of the observations nearly repeat (f -> 0, the
        1/day aliases of ground-based data), with several harmonics, they
        can differ by more (up to ~1e-2) or be NaN where float32 leaves the
        system singular (``docs/guide/multiband.md``).
    top_k : int
        Distinct peaks (local maxima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's periodogram (``n_objects x nf`` on the
        host, in the kernel's precision).
    device
        Device selection (see :func:`clperiod.select_devices`); several
        devices share the objects (batches that fit the smallest, handed out
        dynamically). fp64 needs devices that support it.

    Returns
    -------
    MultibandResult

    Raises
    ------
    TypeError
        ``catalog`` is not a Catalog or ``grid`` not a FrequencyGrid or
        FrequencyArray.
    ValueError
        Bad options, more than :data:`~clperiod.periodograms.multiband.MAX_BANDS`
        bands, a grid without a frequency above 0, or fp64 on a device
        without it.
    MemoryError
        ``periodogram=True`` asks for more host memory than is available,
        or an object too large for the device.
    """
    catalog = _checked_catalog(catalog)
    searched, positions = search_grid(grid)
    if searched.fmax == 0:
        raise ValueError(f"grid has no frequency above 0 (the power at f = 0 is NaN); got {grid}")
    nterms_base = checks.integer("nterms_base", nterms_base, low=0, high=MAX_NTERMS)
    nterms_band = checks.integer("nterms_band", nterms_band, low=0, high=MAX_NTERMS)
    if nterms_base == 0 and nterms_band == 0:
        raise ValueError("at least one of nterms_base and nterms_band must be > 0")
    center_data = checks.boolean("center_data", center_data)
    ridge = _checked_ridge(reg_base, reg_band)
    regularize_by_trace = checks.boolean("regularize_by_trace", regularize_by_trace)
    check_choice("precision", precision, Precision)
    top_k = check_top_k(top_k, 64)
    periodogram = checks.boolean("periodogram", periodogram)
    devices = select_devices(device)
    if precision == "fp64":
        for info in devices:
            require_fp64(info)
    options = _Options(
        (nterms_base, nterms_band),
        ridge,
        precision == "fp64",
        top_k,
        catalog.n_bands,
        regularize_by_trace,
    )
    power: np.ndarray | None = None
    if periodogram:
        columns = searched.nf + (grid.nf if positions is not None else 0)
        check_periodogram_memory(catalog.n_objects, columns, options.dtype)
        power = np.full((catalog.n_objects, searched.nf), np.nan, options.dtype)
    searched_status, values, indices = _run(
        devices, catalog, center_data, searched, options, power
    )
    top_power, top_frequency = top_k_arrays(values, indices, searched)
    status = banded_status(catalog, searched_status, top_power[:, 0], use_dy=True)
    if power is not None and positions is not None:
        power = power[:, positions]
    blank_failed(status, top_power, top_frequency, power)
    return MultibandResult(
        ids=catalog.ids,
        frequency_best=top_frequency[:, 0].copy(),
        power_best=top_power[:, 0].copy(),
        top_k_frequency=top_frequency,
        top_k_power=top_power,
        status=status,
        power=power,
        grid=grid,
        bands=(None,) if catalog.bands is None else catalog.bands,
        nterms_base=nterms_base,
        nterms_band=nterms_band,
        devices=[info.label for info in devices],
        catalog=catalog,
        center_data=center_data,
        reg_base=reg_base if reg_base is None else ridge[0],
        reg_band=reg_band if reg_band is None else ridge[1],
        regularize_by_trace=regularize_by_trace,
        precision=precision,
    )


def _checked_catalog(catalog: Any) -> Catalog:
    """``catalog`` as a Catalog with at most :data:`MAX_BANDS` bands and int32 offsets."""
    if not isinstance(catalog, Catalog):
        raise TypeError(f"catalog must be a clperiod.Catalog, got {type(catalog).__name__}")
    catalog = catalog_of(catalog)
    if catalog.n_bands > MAX_BANDS:
        raise ValueError(
            f"catalog has {catalog.n_bands} bands; the multiband search takes at most "
            f"{MAX_BANDS} (select some with Catalog.select_bands)"
        )
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the multiband kernel indexes at most "
            f"{np.iinfo(np.int32).max} points (search it in slices)"
        )
    return catalog


def _checked_ridge(reg_base: Any, reg_band: Any) -> tuple[float, float]:
    """``(reg_base, reg_band)`` as floats (0 for None); one must be positive."""
    ridge = []
    for name, value in (("reg_base", reg_base), ("reg_band", reg_band)):
        ridge.append(0.0 if value is None else checks.real(name, value, positive=True))
    if ridge == [0.0, 0.0]:
        raise ValueError(
            "give reg_base or reg_band: without a ridge the flexible model's normal "
            "matrix is singular (its base constant duplicates the band offsets)"
        )
    return ridge[0], ridge[1]


@dataclass(frozen=True)
class _Prepared:
    """The points of a catalog's objects that can be searched, as the kernel takes them.

    ``status`` is OK or TOO_FEW_POINTS per object (objects not OK keep no
    points); per kept point, each object's points ordered by band, its time
    from its object's first observation, weight (summing to 1 per object) and
    weight times scaled value; ``offsets`` of the kept points; ``cells`` the
    offsets of the ``n_bands`` bands of every object (``n_objects n_bands +
    1``); ``chi2_ref`` per object ``sum w u^2`` of the scaled values (NaN if
    not OK, 0 if they do not vary); ``ridge_scale`` per object, what the
    ridges are multiplied by per unit of normalised weight (the kernel's
    notes: ``2 + nterms_base + nterms_band`` for ridges in units of the
    trace, ``1 / sum(dy**-2)`` for absolute ones).
    """

    status: np.ndarray
    offsets: np.ndarray
    cells: np.ndarray
    n_bands: int
    t: np.ndarray
    w: np.ndarray
    wy: np.ndarray
    chi2_ref: np.ndarray
    ridge_scale: np.ndarray


def _prepare(
    catalog: Catalog, nterms_base: int, nterms_band: int, center: bool, by_trace: bool
) -> _Prepared:
    """The kernel's inputs for ``catalog`` (see :class:`_Prepared`); ``by_trace``:
    the ridges are in units of the normal matrix's trace."""
    n_objects, n_bands, lengths = catalog.n_objects, catalog.n_bands, catalog.lengths
    counts = catalog.band_counts()
    status = np.full(n_objects, Status.OK, dtype=np.int8)
    too_few = lengths < min_points(nterms_base, nterms_band, (counts > 0).sum(axis=1))
    status[too_few | (lengths == 0)] = Status.TOO_FEW_POINTS
    # from here on each object's rows band by band (objects keep their rows' place)
    rows = band_order(counts, *row_cells(catalog))
    y, offsets = catalog.y[rows], catalog.offsets
    with np.errstate(all="ignore"):
        weights = np.ones_like(y) if catalog.dy is None else catalog.dy[rows] ** -2.0
        values = _centred(y, weights, counts.ravel(), center)
        total = segment_sum(weights, offsets)
        w = weights / np.repeat(total, lengths)
        ridge_scale = (
            np.full(total.shape, 2.0 + nterms_base + nterms_band) if by_trace else 1 / total
        )
        square = segment_sum(w * values * values, offsets)
        flat = ~(square > _RESOLUTION**2 * segment_sum(w * y * y, offsets))
        scaled = values / np.repeat(np.sqrt(np.where(flat, 1.0, square)), lengths)
        chi2_ref = segment_sum(w * scaled * scaled, offsets)
    status[(status == Status.OK) & flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    kept = np.where(ok, lengths, 0)
    t = catalog.t[rows] - np.repeat(segment_reduce(np.minimum, catalog.t, offsets), lengths)
    wy = w * scaled
    if not ok.all():
        keep = np.repeat(ok, lengths)
        t, w, wy = t[keep], w[keep], wy[keep]
    return _Prepared(
        status=status,
        offsets=np.concatenate([[0], np.cumsum(kept)]).astype(np.int32),
        cells=np.concatenate([[0], np.cumsum(np.where(ok[:, None], counts, 0))]).astype(np.int32),
        n_bands=n_bands,
        t=t,
        w=w,
        wy=wy,
        chi2_ref=np.where(ok, chi2_ref, np.nan),
        ridge_scale=ridge_scale,
    )


def _centred(y: np.ndarray, weights: np.ndarray, sizes: np.ndarray, center: bool) -> np.ndarray:
    """``y`` (its rows in runs of ``sizes``, one per object and band) less the
    weighted mean of its run, twice for the digits the first pass loses;
    ``y`` itself without ``center``."""
    if not center:
        return y
    runs = np.concatenate([[0], np.cumsum(sizes)])
    total = segment_sum(weights, runs)
    centred = y
    for _ in range(2):
        means = segment_sum(weights * centred, runs) / total
        centred = centred - np.repeat(means, sizes)
    return centred


@dataclass(frozen=True)
class _Options:
    """What the batches of one search share: the model (``nterms``: base and
    band harmonics; ``ridge``: reg_base and reg_band, 0 for none; ``by_trace``:
    the ridges in units of the normal matrix's trace), the arithmetic, the
    peaks kept and the catalog's number of bands."""

    nterms: tuple[int, int]
    ridge: tuple[float, float]
    fp64: bool
    top_k: int
    n_bands: int
    by_trace: bool = True

    @property
    def dtype(self) -> type:
        """The kernel's real type."""
        return np.float64 if self.fp64 else np.float32


def _run(
    devices: list[DeviceInfo],
    catalog: Catalog,
    center: bool,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    power: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every object's status (OK, TOO_FEW_POINTS or ZERO_VARIANCE, as
    :func:`_prepare` gives it), top-k standard powers (float64) and their
    indices into ``grid`` (rising frequencies), and its periodogram into
    ``power`` when given: batches of objects (:func:`_batches`) handed out to
    ``devices``, each prepared (``center``: centre the values) by the device
    thread that takes it."""
    bounds = _batches(devices, catalog.lengths, grid, options, power)

    def work(info: DeviceInfo, bound: tuple[int, int]) -> tuple[np.ndarray, ...]:
        start, stop = bound
        prepared = _prepare(catalog.slice(start, stop), *options.nterms, center, options.by_trace)
        found = _search(
            get_queue(info),
            prepared,
            grid,
            options,
            None if power is None else power[start:stop],
        )
        return (prepared.status, *found)

    parts = run_on_devices(devices, bounds, work)
    if not parts:
        top_k = options.top_k
        return np.empty(0, np.int8), np.empty((0, top_k)), np.empty((0, top_k), np.int32)
    status, values, indices = (np.concatenate(column) for column in zip(*parts, strict=True))
    return status, values, indices


def _batches(
    devices: list[DeviceInfo],
    lengths: np.ndarray,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    power: np.ndarray | None,
) -> list[tuple[int, int]]:
    """Consecutive runs of objects (``lengths``: their rows, at least the
    points searched) whose device buffers fit the smallest device; with
    several devices at least one per device, as :func:`clperiod.lombscargle`
    cuts its runs (:func:`~clperiod.periodograms.lombscargle.batch_points`)."""
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    held = 0 if isinstance(grid, FrequencyGrid) else 8 * grid.nf
    reserved = 0 if power is None else power.nbytes
    budget = MemoryBudget.of(smallest, held=held, host_reserved=reserved)
    share = batch_points(len(devices), int(lengths.sum()), grid.nf)
    buffers = [*multiterm.batch_buffers(options.top_k), Buffer("bands", per_unit=2)]
    return batch_bounds(lengths, buffers, budget, max_units=share)


class _PhaseInputs:
    """The kernel's phase arguments for one batch's points (device buffers).

    fp64: the times and the grid's ``fmin, df`` or its frequencies. fp32:
    :meth:`~clperiod.FrequencyGrid.phase_inputs` of the times (``a`` for the
    first bin of the launch, so that the launch's bin numbers stay exact in
    float32), or the float32 pairs of the times and of the frequencies
    (:func:`~clperiod.grid.split_float32`).
    """

    def __init__(
        self,
        queue: cl.CommandQueue,
        t: np.ndarray,
        grid: FrequencyGrid | FrequencyArray,
        fp64: bool,
        pending: list[cl.Event],
    ) -> None:
        self._queue, self._t, self._pending = queue, t, pending
        # fp32 on a uniform grid: the grid whose first bin the inputs are for
        self._rebased = grid if not fp64 and isinstance(grid, FrequencyGrid) else None
        self._first_bin = 0
        if fp64:
            self.points = [upload(queue, t, pending)]
        elif isinstance(grid, FrequencyGrid):
            self.points = [upload(queue, a, pending) for a in grid.phase_inputs(t)]
        else:
            self.points = [upload(queue, a, pending) for a in split_float32(t)]
        self.grid: list = []
        if isinstance(grid, FrequencyGrid):
            self.grid = [np.float64(grid.fmin), np.float64(grid.df)] if fp64 else []
        else:
            frequencies = grid.frequencies()
            parts = [frequencies] if fp64 else split_float32(frequencies)
            self.grid = [upload(queue, part, pending) for part in parts]

    def for_launch(self, first_bin: int) -> list:
        """The point arguments of a launch whose first bin is ``first_bin``."""
        grid = self._rebased
        if grid is not None and first_bin != self._first_bin:
            shifted = FrequencyGrid(grid.fmin + first_bin * grid.df, grid.df, 1)
            self.points[0] = upload(self._queue, shifted.phase_inputs(self._t)[0], self._pending)
            self._first_bin = first_bin
        return self.points


#: Most running sums of one work-item over its bins (:func:`_bins_per_item`):
#: more would leave the registers.
_SUMS_PER_ITEM = 80


def _bins_per_item(grid: FrequencyGrid | FrequencyArray, options: _Options) -> int:
    """Bins of each work-item on uniform grids: the most of 8, 4 and 2 whose
    running sums fit the registers (one phase and rotations by e^{2 pi i df t}
    per point instead of a phase per bin), else 1; 1 on arrays."""
    if not isinstance(grid, FrequencyGrid):
        return 1
    h = max(options.nterms)
    sums = 2 * (2 * h + 1) + 2 * (h + 1)
    return next((f for f in (8, 4, 2) if f * sums <= _SUMS_PER_ITEM), 1)


def _search(
    queue: cl.CommandQueue,
    prepared: _Prepared,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    power: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """One batch's top-k standard powers (float64) and their grid indices, and
    its periodograms into ``power`` when given; blocks of at most 2**22 powers
    as :func:`clperiod.periodograms.multiterm.search` evaluates them."""
    n_obj = prepared.status.size
    dtype = options.dtype
    pending: list[cl.Event] = []
    phases = _PhaseInputs(queue, prepared.t, grid, options.fp64, pending)
    points = [upload(queue, a.astype(dtype), pending) for a in (prepared.w, prepared.wy)]
    cells = upload(queue, prepared.cells, pending)
    ridge_scale = upload(queue, prepared.ridge_scale.astype(dtype), pending)
    per_item = _bins_per_item(grid, options)
    (kernel,) = kernels.get_kernels(
        queue.context,
        "multiband",
        ("multiband_catalog",),
        real="double" if options.fp64 else "float",
        arbitrary=not isinstance(grid, FrequencyGrid),
        nterms_base=options.nterms[0],
        nterms_band=options.nterms[1],
        nbands=options.n_bands,
        wg=_WG,
        per_item=per_item,
    )
    ridge = [dtype(r) for r in options.ridge]

    def launch(first: int, rows: int, lo: int, hi: int, out: cl.Buffer) -> None:
        items = -(-(hi - lo) // per_item)
        kernel(
            queue,
            (-(-items // _WG) * _WG, rows),
            (_WG, 1),
            *phases.for_launch(lo),
            *points,
            cells,
            np.int32(first),
            *phases.grid,
            np.int32(lo),
            np.int32(hi - lo),
            np.int32(0 if lo == 0 and grid.fmin == 0 else -1),  # the bin of f = 0
            *ridge,
            ridge_scale,
            out,
        )

    def store(first: int, rows: int, own_lo: int, own_hi: int, block: np.ndarray) -> None:
        assert power is not None
        power[first : first + rows, own_lo:own_hi] = (
            block / prepared.chi2_ref[first : first + rows, None]
        )

    values, indices = multiterm.blocked_peaks(
        queue,
        launch,
        n_obj,
        grid.nf,
        options.top_k,
        store if power is not None else None,
        dtype=dtype,
    )
    pending.clear()
    return values.astype(np.float64) / prepared.chi2_ref[:, None], indices
