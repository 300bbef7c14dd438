"""SuperSmoother period search of one light curve or a ragged catalog on OpenCL.

For each trial frequency the light curve is folded (phase of ``t - t0``,
``t0`` the earliest time), sorted by phase (ties in input order), smoothed,
and scored by ``power = (n/2)(chi0 - chi2)/chi0`` (seed spec §3). Two
smoothers: Friedman's original SuperSmoother (§2) and the single-pass
generalized-validation variant (§4).

Call path: :func:`supersmoother` validates the input and prepares weights and
``chi0`` on the host (float64); :func:`_plan` cuts the work into items
(object groups x frequency slabs) that fit the device
(:mod:`clperiod.engine.planner`);
:func:`clperiod.engine.scheduler.run_on_devices` runs the items, each on one device:

* single pass, light curves of at most :data:`FUSED_MAX_POINTS` points: one
  fused kernel folds, sorts, smooths and scores in local memory;
* otherwise, per frequency batch: fold and sort (``sort.mako``: bitonic in
  local memory, or pyopencl radix sort for light curves longer than the local
  memory holds), gather into a coalesced [point][frequency] layout, smooth
  and score (``supersmoother.mako``);

then ``peaks.mako`` reduces each object's slab of the periodogram to its
top-k peaks on the device. Only the peaks come back unless the full
periodograms are requested. Each device keeps its object group's inputs from
item to item (:class:`_DeviceState`); slabs and batch buffers come from the
calling thread's memory pool (:func:`clperiod.engine.devices.thread_memory_pool`),
which outlives the call and is trimmed only once every device is idle, so
items and repeated searches allocate nothing and release nothing while
another device computes.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from clperiod import checks
from clperiod.catalog import Catalog, Status
from clperiod.engine import kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    require_fp64,
    select_devices,
    thread_memory_pool,
    trim_memory_pool,
    upload,
)
from clperiod.engine.planner import Buffer, MemoryBudget, batch_bounds, held_bytes, items_that_fit
from clperiod.engine.scheduler import run_on_devices
from clperiod.engine.staging import check_periodogram_memory, result_array
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid
from clperiod.io.chunks import show_id
from clperiod.periodograms.folding import FoldInputs, FoldSorter, bitonic_capacity
from clperiod.periodograms.inputs import (
    NO_PEAK,
    PeakResults,
    as_catalog,
    blank_failed,
    check_choice,
    check_top_k,
    degenerate_status,
    progress_bar,
    segment_max,
    segment_sum,
    summed_seconds,
    top_k_arrays,
)
from clperiod.periodograms.smoothing import scale_free

__all__ = ["supersmoother", "SuperSmootherResult", "FUSED_MAX_POINTS", "MIN_POINTS"]

Variant = Literal["original", "single_pass"]
Precision = Literal["fp64", "fp32"]
Memory = Literal["auto", "local", "global"]

#: Longest light curve of the fused single-pass kernel (local memory).
FUSED_MAX_POINTS = 128
#: Fewest points per object: the original smoother's woofer window needs 5,
#: the single-pass blend is 0/0 up to 9 points (spec §4.4, §9.9).
MIN_POINTS = {"original": 5, "single_pass": 10}
#: Largest ``top_k``.
MAX_TOP_K = 64
_FUSED_WG = 32
_PEAKS_WG = 256
#: Device memory of one frequency batch. On the H100 the 8205 search (3555
#: points) runs 2.5x faster with 50,000-frequency batches than with 25,000;
#: beyond ~16 GiB batches only add memory.
_BATCH_BYTES_GPU = 16 << 30
_BATCH_BYTES_CPU = 512 << 20
#: Frequencies per batch are a multiple of this (aligned [point][frequency] rows).
_BATCH_ALIGN = 256
#: An object group leaves room for sorted-path batches of at least this many
#: frequencies (each batch launches every kernel once).
_MIN_BATCH_FREQUENCIES = 64
#: Work-groups per launch stay below this (32-bit NDRange arithmetic).
_MAX_SEGMENTS = 2**31 // 256


@dataclass(frozen=True)
class SuperSmootherResult(PeakResults):
    """SuperSmoother period search results, one entry per catalog object.

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
        OK, TOO_FEW_POINTS (fewer than ``MIN_POINTS``) or ZERO_VARIANCE.
    power : ndarray, shape (n_objects, nf), or None
        Full periodograms ``(n/2)(1 - chi2/chi0)`` (kernel precision) when
        requested; rows of objects that are not OK are NaN; columns in the
        order of ``grid.frequencies()``.
    grid : FrequencyGrid or FrequencyArray
        The frequency grid evaluated.
    variant, alpha, periodic, compat, precision
        The options of the run.
    devices : list of str
        Devices used.
    device_bytes : int
        Planned device-memory high-water mark of the run (largest sum of the
        buffers one work item holds at once).
    timings : dict
        ``total_s`` and, with ``profile=True``, seconds per stage, summed
        over items: ``fused`` (fold, sort, smooth and chi^2 in one kernel), or
        ``fold_sort_gather`` (local-memory sort) / ``fold+sort`` and
        ``gather`` (radix path), then ``smooth``, ``chi2``; ``peaks`` and
        ``copy``.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    variant: str
    alpha: float
    periodic: bool
    compat: bool
    precision: str
    devices: list[str]
    device_bytes: int
    catalog: Catalog = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict, repr=False)


def supersmoother(
    cat_or_t: Catalog | np.ndarray,
    grid: FrequencyGrid | FrequencyArray,
    y: np.ndarray | None = None,
    dy: np.ndarray | None = None,
    *,
    variant: Variant = "original",
    alpha: float = 9.0,
    periodic: bool | None = None,
    compat: bool = False,
    precision: Precision = "fp64",
    memory: Memory = "auto",
    periodogram: bool = False,
    top_k: int = 1,
    device=None,
    nan_policy: Literal["raise", "omit"] = "raise",
    profile: bool = False,
    progress: bool = False,
) -> SuperSmootherResult:
    """SuperSmoother period search of a light curve or a catalog.

    Parameters
    ----------
    cat_or_t
        A :class:`Catalog`, or the times of one light curve (then give ``y``
        and optionally ``dy``).
    grid
        Ordinary frequencies, all positive: a uniform :class:`FrequencyGrid`
        or any frequencies (:meth:`FrequencyGrid.from_frequencies`), each
        folded exactly at its own value; periodogram columns follow
        ``grid.frequencies()`` and peaks are local maxima along frequency.
    y, dy
        Values and uncertainties when ``cat_or_t`` is a time array. Without
        uncertainties every point has weight 1.
    variant
        ``"original"``: Friedman's SuperSmoother (three running lines,
        cross-validated span, bass enhancement, final tweeter pass).
        ``"single_pass"``: the generalized-validation variant, one sweep with
        three concurrent windows, always periodic.
    alpha
        Bass enhancement in ``[0, 10]`` (larger is smoother). The original
        variant applies it for ``0 < alpha <= 10``; the single-pass variant
        truncates it to an integer and always applies it (spec §4.1).
    periodic
        Whether smoothing windows wrap around phase 0/1. Default True, except
        for ``compat=True`` with the original variant (interval mode, as in
        the reference code). The single-pass variant is always periodic.
    compat
        Reproduce the reference GPU code (Gowanlock et al.): phases as
        ``fmod(t - t0, P) / P``, raw ``y`` fed to the smoother, interval mode
        for the original variant. See the README for every difference.
    precision
        ``"fp64"`` or ``"fp32"``. Times stay float64 on the host; fp32 phases
        come from double-single inputs, so raw MJD/BJD keep their accuracy.
    memory
        ``"auto"``: the fused local-memory kernel when the single-pass
        variant's light curves fit it, else the global-memory path;
        ``"local"`` requires the fused kernel, ``"global"`` forbids it.
    periodogram
        Also return the full periodograms (``n_objects x nf``).
    top_k
        Number of distinct peaks (local maxima) reported per object.
    device
        Device selection (see :func:`clperiod.select_devices`); several
        devices share the work items dynamically.
    nan_policy
        ``"raise"`` (default) on non-finite input, or ``"omit"`` to drop those
        rows (only for array input).
    profile
        Time every stage (the device is synchronised around each, so the
        total grows a little); see ``SuperSmootherResult.timings``.
    progress
        Show a tqdm progress bar over the work items.

    Returns
    -------
    SuperSmootherResult

    Raises
    ------
    ValueError
        Bad options or data (alpha outside [0, 10], a grid with a
        non-positive frequency, non-positive dy, ...), or fp64 on a device
        without it.
    MemoryError
        An object too large for the device even one frequency at a time, or
        ``periodogram=True`` asking for more host memory than is available
        (:func:`clperiod.engine.staging.available_host_memory`; the message names
        the size).
    """
    started = time.perf_counter()
    options = _Options.build(
        variant, alpha, periodic, compat, precision, memory, top_k, periodogram
    )
    searched, positions = search_grid(grid)
    if searched.fmin <= 0:
        raise ValueError(f"SuperSmoother frequencies must be positive, got fmin={searched.fmin}")
    catalog = as_catalog(cat_or_t, y, dy, nan_policy)
    devices = select_devices(device)
    if options.fp64:
        for info in devices:
            require_fp64(info)
    if periodogram:  # before the plan, which counts on the rest of the host's memory
        columns = searched.nf + (grid.nf if positions is not None else 0)
        check_periodogram_memory(catalog.n_objects, columns, options.dtype)
    prepared = _prepare(catalog, options)
    path = _choose_path(devices, prepared.catalog, options)
    items = _plan(
        devices, prepared.catalog.lengths, searched.nf, options, path, _frequency_bytes(searched)
    )
    power = None
    if periodogram:
        power = result_array(devices, (catalog.n_objects, searched.nf), options.dtype)
        power[prepared.status != Status.OK] = np.nan
    states: dict[int, _DeviceState] = {}  # per worker thread: a device may be listed twice
    with progress_bar(progress, len(items), "supersmoother") as bar:
        results = run_on_devices(
            devices,
            items,
            lambda info, item: _run_item(
                states.setdefault(threading.get_ident(), _DeviceState(info)),
                item,
                prepared,
                searched,
                options,
                path,
                power,
                profile,
            ),
            progress=bar.update if bar is not None else None,
        )
    for state in states.values():
        state.release()
    top_val, top_idx = _merge_peaks(items, results, prepared, options.top_k)
    top_val, top_freq = top_k_arrays(top_val, top_idx, searched)
    if power is not None and positions is not None:
        power = power[:, positions]
    status = degenerate_status(catalog, prepared.status, top_val[:, 0], catalog.dy is not None)
    blank_failed(status, top_val, top_freq, power)
    timings = summed_seconds(results)
    return SuperSmootherResult(
        ids=catalog.ids,
        frequency_best=top_freq[:, 0].copy(),
        power_best=top_val[:, 0].copy(),
        top_k_frequency=top_freq,
        top_k_power=top_val,
        status=status,
        power=power,
        grid=grid,
        variant=options.variant,
        alpha=options.alpha,
        periodic=options.periodic,
        compat=options.compat,
        precision=precision,
        devices=[d.label for d in devices],
        device_bytes=max((r.device_bytes for r in results), default=0),
        catalog=catalog,
        timings={**timings, "total_s": time.perf_counter() - started},
    )


# {{{ options and host preparation


@dataclass(frozen=True)
class _Options:
    variant: str
    alpha: float
    periodic: bool
    compat: bool
    fp64: bool
    memory: str
    top_k: int
    periodogram: bool

    @property
    def dtype(self) -> type:
        return np.float64 if self.fp64 else np.float32

    @property
    def real(self) -> str:
        return "double" if self.fp64 else "float"

    @classmethod
    def build(
        cls, variant, alpha, periodic, compat, precision, memory, top_k, periodogram
    ) -> _Options:
        check_choice("variant", variant, Variant)
        check_choice("precision", precision, Precision)
        check_choice("memory", memory, Memory)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
            raise TypeError(f"alpha must be a real number, got {alpha!r}")
        if not 0 <= alpha <= 10:  # also rejects NaN
            raise ValueError(f"alpha must be in [0, 10], got {alpha}")
        top_k = check_top_k(top_k, MAX_TOP_K)
        compat = checks.boolean("compat", compat)
        if periodic is None:
            periodic = not (compat and variant == "original")
        periodic = checks.boolean("periodic", periodic)
        if variant == "single_pass" and not periodic:
            raise ValueError(
                "the single-pass variant is always periodic; use "
                "variant='original' for interval (periodic=False) smoothing"
            )
        if variant == "original" and memory == "local":
            raise ValueError(
                "the original variant has no local-memory kernel (its eight "
                "scratch arrays do not fit); use memory='auto' or 'global'"
            )
        return cls(
            variant,
            float(alpha),
            periodic,
            compat,
            precision == "fp64",
            memory,
            int(top_k),
            bool(periodogram),
        )


@dataclass(frozen=True)
class _Prepared:
    """The objects that are searched and their per-point and per-object inputs."""

    status: np.ndarray  # per catalog object
    searched: np.ndarray  # catalog indices of the OK objects
    catalog: Catalog  # the OK objects
    y: np.ndarray  # values fed to the smoother, per point of ``catalog``
    w: np.ndarray  # weights: 1/dy^2 with compat, else relative (mean 1 per object)
    chi0: np.ndarray  # per OK object


def _prepare(catalog: Catalog, options: _Options) -> _Prepared:
    """Status, the smoother's values and weights, and ``chi0`` (spec §3.1).

    Outside ``compat`` they are free of units (:func:`clperiod.periodograms.smoothing.scale_free`):
    weights ``(dy_min / dy)^2`` over their mean, values ``y - ybar_w``
    (centred with full precision) over their weighted rms. The periodogram
    is then invariant to a common scale of y and dy and to an offset of y,
    and fp32 holds any finite input. ``compat`` feeds the raw ``y`` and
    ``1/dy^2``, as the seed does, whose slope guard and span-choice
    constants then depend on the units (README).
    """
    lengths = catalog.lengths
    owner = np.repeat(np.arange(catalog.n_objects), lengths)
    dy = np.ones_like(catalog.y) if catalog.dy is None else catalog.dy
    smallest_dy = -segment_max(-dy, catalog.offsets)
    normalised = scale_free(catalog.y, (smallest_dy[owner] / dy) ** 2, catalog.offsets)
    w, fed = normalised.weights, normalised.values
    with np.errstate(invalid="ignore", divide="ignore"):
        chi0 = segment_sum(w * fed * fed, catalog.offsets) / lengths
        level = (
            segment_sum(w * (catalog.y / normalised.unit[owner]) ** 2, catalog.offsets) / lengths
        )
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[lengths < MIN_POINTS[options.variant]] = Status.TOO_FEW_POINTS
    flat = (status == Status.OK) & ~(chi0 > (64 * np.finfo(np.float64).eps) ** 2 * level)
    status[flat] = Status.ZERO_VARIANCE
    if options.compat:
        fed, w, chi0 = _seed_inputs(catalog, status, options)
    searched = np.flatnonzero(status == Status.OK)
    keep = (status == Status.OK)[owner]
    return _Prepared(
        status, searched, catalog.subset(searched), fed[keep], w[keep], chi0[searched]
    )


def _seed_inputs(
    catalog: Catalog, status: np.ndarray, options: _Options
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seed's smoother values (raw y), weights ``1/dy^2`` and ``chi0`` (spec §3.1).

    Raises unless the seed's arithmetic stays finite for every searched
    object: in the kernel's precision the weights must be normal numbers and
    ``chi0`` too, and ``n max(w) max(y - ybar_w)^2`` and ``max|y - ybar_w|``
    must stay below 1e18, two decades under the seed's initial residual
    minimum 1e20 (above it the span choice fails: NaN for the original variant).
    """
    offsets, lengths = catalog.offsets, catalog.lengths
    owner = np.repeat(np.arange(catalog.n_objects), lengths)
    w = np.ones_like(catalog.t) if catalog.dy is None else 1.0 / (catalog.dy * catalog.dy)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ybar = segment_sum(w * catalog.y, offsets) / segment_sum(w, offsets)
        centred = catalog.y - ybar[owner]
        chi0 = segment_sum(w * centred * centred, offsets) / lengths
        spread = segment_max(np.abs(centred), offsets)
        heaviest, lightest = segment_max(w, offsets), -segment_max(-w, offsets)
        sums = lengths * heaviest * spread * spread
    info = np.finfo(options.dtype)
    fits = (
        (lightest >= info.tiny)
        & (heaviest <= info.max)
        & (chi0 >= info.tiny)
        & (sums < 1e18)
        & (spread < 1e18)
    )
    outside = (status == Status.OK) & ~fits
    if outside.any():
        k = int(np.argmax(outside))
        raise ValueError(
            f"compat=True feeds the raw y and 1/dy^2 to the kernel, as the seed does, and "
            f"object {show_id(catalog.ids[k])} is outside the range that supports in "
            f"{'fp64' if options.fp64 else 'fp32'}: 1/dy^2 and chi0 within "
            f"[{info.tiny:.3g}, {info.max:.3g}], n max(1/dy^2) max(y - ybar)^2 and "
            f"max|y - ybar| below 1e18; use compat=False, which is free of units"
        )
    return catalog.y, w, chi0


# }}}

# {{{ planning


@dataclass(frozen=True)
class _Path:
    """How a run evaluates the periodogram."""

    fused: bool  # single-pass fused local-memory kernel
    # device buffers of a sorted-path batch, per point of one frequency (none when fused)
    batch_buffers: tuple[Buffer, ...] = ()
    fused_nmax: int = FUSED_MAX_POINTS  # keys stored per work-item by the fused kernel


@dataclass(frozen=True)
class _Item:
    """Objects ``obj_lo:obj_hi`` (of the searched catalog), grid bins ``k_lo:k_hi``."""

    obj_lo: int
    obj_hi: int
    k_lo: int
    k_hi: int


def _choose_path(devices: list[DeviceInfo], catalog: Catalog, options: _Options) -> _Path:
    """The kernel path (spec §5.2 cascade, decided from device limits)."""
    longest = int(catalog.lengths.max(initial=0))
    s = np.dtype(options.dtype).itemsize
    fused_local = FUSED_MAX_POINTS * (8 * _FUSED_WG + 2 * s)
    fits = longest <= FUSED_MAX_POINTS and all(d.local_mem >= fused_local for d in devices)
    if options.variant == "single_pass" and options.memory != "global":
        if fits:
            # size the stored keys by the longest light curve (multiples of 16
            # bound the number of programs)
            nmax = min(FUSED_MAX_POINTS, -(-max(longest, 1) // 16) * 16)
            return _Path(fused=True, fused_nmax=nmax)
        if options.memory == "local":
            raise ValueError(
                f"memory='local' needs light curves of at most {FUSED_MAX_POINTS} "
                f"points and {fused_local} bytes of local memory; the longest "
                f"has {longest} points"
            )
    buffers = [Buffer("x, y, w in phase order", per_unit=s, count=3)]
    if options.variant == "original":
        buffers += [
            Buffer("smoothed values", per_unit=s),
            Buffer("smoother scratch", per_unit=8 * s),
        ]
    if any(longest > bitonic_capacity(d) for d in devices):
        buffers.append(Buffer("radix sort keys, order and sorted copies", per_unit=3 * s + 20))
    return _Path(fused=False, batch_buffers=tuple(buffers))


def _group_buffers(itemsize: int, row_len: int) -> tuple[Buffer, Buffer]:
    """What an object group keeps on the device for an item: its periodogram
    slab of ``row_len`` bins per object, and its inputs (times or phase
    inputs, y, w per point; chi0, layout and batch offsets per object)."""
    return (
        Buffer("periodogram slab", per_item=itemsize * row_len),
        Buffer("object inputs", per_unit=3 * itemsize + 8, per_item=itemsize + 24),
    )


def _frequency_bytes(grid: FrequencyGrid | FrequencyArray) -> int:
    """Device bytes an object group's fold inputs hold for the frequencies:
    at most 8 per frequency of an array, none for a uniform grid."""
    return 0 if isinstance(grid, FrequencyGrid) else 8 * grid.nf


def _plan(
    devices: list[DeviceInfo],
    lengths: np.ndarray,
    nf: int,
    options: _Options,
    path: _Path,
    frequency_bytes: int = 0,
) -> list[_Item]:
    """Object groups x frequency slabs, sized for the smallest device
    (``frequency_bytes``: the grid's, held by every group).

    One object's slab row takes at most a quarter of the budget (more slabs
    otherwise). A group's buffers, with a batch of one frequency, take at
    most half of it, and its points at most half of it in a batch of
    :data:`_MIN_BATCH_FREQUENCIES`, so that the item's batches
    (:meth:`_SlabRun._batch`) have the other half. With several devices,
    slabs are split so that every device gets work.
    """
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    s = np.dtype(options.dtype).itemsize
    result_bytes = len(lengths) * nf * s if options.periodogram else 0
    budget = MemoryBudget.of(smallest, held=frequency_bytes, host_reserved=result_bytes)
    slabs = min(nf, -(-s * (nf + 2) // max(1, budget.total // 4)))
    per_point = held_bytes(path.batch_buffers, 0, 1)
    groups = batch_bounds(
        lengths,
        (*_group_buffers(s, -(-nf // slabs) + 2), *path.batch_buffers),
        budget,
        target=budget.total // 2,
        max_items=_MAX_SEGMENTS,
        max_units=budget.total // 2 // (_MIN_BATCH_FREQUENCIES * per_point) if per_point else None,
    )
    if len(devices) > 1:
        slabs = min(nf, max(slabs, -(-2 * len(devices) // max(len(groups), 1))))
    edges = np.linspace(0, nf, slabs + 1).round().astype(int)
    return [
        _Item(g0, g1, int(a), int(b)) for g0, g1 in groups for a, b in itertools.pairwise(edges)
    ]


# }}}

# {{{ device work


@dataclass
class _ItemResult:
    val: np.ndarray  # (objects, top_k)
    idx: np.ndarray
    device_bytes: int
    seconds: dict[str, float]


class _Clock:
    """Per-stage wall-clock times with the queue drained around each stage
    (only when profiling; otherwise a no-op)."""

    def __init__(self, queue: cl.CommandQueue, enabled: bool):
        self.queue, self.enabled = queue, enabled
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, stage: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        self.queue.finish()
        start = time.perf_counter()
        yield
        self.queue.finish()
        self.seconds[stage + "_s"] = (
            self.seconds.get(stage + "_s", 0.0) + time.perf_counter() - start
        )


class _DeviceState:
    """What one device thread keeps between the items of a run: each object
    group's inputs, shared by the group's frequency slabs, and the thread's
    memory pool, whose slabs and batch buffers serve item after item.

    Inputs are released only when the device is idle (a new group after an
    item was read back, or the end of the run), and the pool is trimmed only
    at the end of the run: releasing a buffer that queued kernels still use
    waits for them (NVIDIA), and freeing device memory takes long, both while
    holding the GIL, which would stall the other devices' threads.
    """

    def __init__(self, info: DeviceInfo):
        self.info = info
        self.pool = thread_memory_pool(info)  # of the thread that runs the items
        self.group_key: tuple[int, int] | None = None
        self.group_inputs: tuple | None = None
        self.pending: list[cl.Event] = []  # the group's uploads

    def inputs(
        self,
        item: _Item,
        prepared: _Prepared,
        grid: FrequencyGrid | FrequencyArray,
        options: _Options,
    ) -> tuple[Catalog, FoldInputs, cl.Buffer, cl.Buffer, cl.Buffer]:
        """The group's catalog, fold inputs, ``y``, ``w`` and ``chi0`` on this device."""
        key = (item.obj_lo, item.obj_hi)
        if key != self.group_key:
            self.group_inputs = None
            # the uploads are only queued: the item's first kernels wait for them,
            # and its blocking read of the peaks has passed them before they go
            pending: list[cl.Event] = []
            self.pending = pending
            queue, dtype = get_queue(self.info), options.dtype
            group = prepared.catalog.slice(*key)
            rows = slice(
                int(prepared.catalog.offsets[item.obj_lo]),
                int(prepared.catalog.offsets[item.obj_hi]),
            )
            self.group_key, self.group_inputs = (
                key,
                (
                    group,
                    FoldInputs(queue, group, grid, options.fp64, options.compat, pending),
                    upload(queue, prepared.y[rows].astype(dtype), pending),
                    upload(queue, prepared.w[rows].astype(dtype), pending),
                    upload(queue, prepared.chi0[item.obj_lo : item.obj_hi].astype(dtype), pending),
                ),
            )
        assert self.group_inputs is not None  # set with group_key
        return self.group_inputs

    def release(self) -> None:
        """Free the group's inputs and trim the pool (call when every device is idle)."""
        self.group_key = self.group_inputs = None
        self.pending.clear()
        trim_memory_pool(self.info, self.pool)


def _run_item(
    state: _DeviceState,
    item: _Item,
    prepared: _Prepared,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    path: _Path,
    power: np.ndarray | None,
    profile: bool,
) -> _ItemResult:
    """Periodogram slab, top-k peaks and (optionally) the periodogram copy of one item."""
    run = _SlabRun(state, item, prepared, grid, options, path, profile)
    if path.fused:
        run.fused()
    else:
        run.batched()
    val, idx = run.peaks()
    if power is not None:
        with run.clock("copy"):
            _copy_periodogram(
                run.queue,
                run.slab,
                power,
                prepared.searched[item.obj_lo : item.obj_hi],
                item,
                run.row_lo,
                run.row_len,
                options.dtype,
            )
    result = _ItemResult(val, idx, run.device_bytes, run.clock.seconds)
    run.release()  # the queue is drained: the item's buffers go back to the pool
    return result


class _SlabRun:
    """One item on one device: its inputs, the periodogram slab (grid bins
    ``row_lo:row_lo + row_len``, the item's bins plus their neighbours for
    the peak test) and the kernels that fill and reduce it."""

    def __init__(
        self,
        state: _DeviceState,
        item: _Item,
        prepared: _Prepared,
        grid: FrequencyGrid | FrequencyArray,
        options: _Options,
        path: _Path,
        profile: bool,
    ):
        self.info, self.item, self.grid, self.options, self.path = (
            state.info,
            item,
            grid,
            options,
            path,
        )
        self.context = get_context(state.info)
        self.queue = get_queue(state.info)
        self.pool = state.pool
        self.clock = _Clock(self.queue, profile)
        self.dtype = dtype = options.dtype
        s = np.dtype(dtype).itemsize
        group, self.inputs, self.y, self.w, self.chi0 = state.inputs(item, prepared, grid, options)
        self.group = group
        self.n_obj, self.n_points = group.n_objects, len(group.t)
        self.row_lo, row_hi = max(0, item.k_lo - 1), min(grid.nf, item.k_hi + 1)
        self.row_len = row_hi - self.row_lo
        self.slab = self.pool.allocate(self.n_obj * self.row_len * s)
        self.device_bytes = held_bytes(
            _group_buffers(s, self.row_len), self.n_obj, self.n_points
        ) + _frequency_bytes(grid)
        self.params = dict(
            real=options.real,
            wg=_FUSED_WG,
            nmax=path.fused_nmax,
            compat=options.compat,
            arbitrary=self.inputs.arbitrary,
        )
        self.held: list = []  # batch buffers, back to the pool when the item is done

    def release(self) -> None:
        """Return the slab and batch buffers to the pool (the queue must be drained)."""
        self.slab = None
        self.held.clear()

    def fused(self) -> None:
        """Fill the slab with the fused single-pass kernel."""
        inputs, n_obj = self.inputs, self.n_obj
        (kernel,) = kernels.get_kernels(
            self.context, "supersmoother", ("sp_search_local",), **self.params
        )
        per_launch = max(_FUSED_WG, (_MAX_SEGMENTS // n_obj) // _FUSED_WG * _FUSED_WG)
        for k0 in range(self.row_lo, self.row_lo + self.row_len, per_launch):
            nf = min(per_launch, self.row_lo + self.row_len - k0)
            blocks = -(-nf // _FUSED_WG)
            kernel.set_args(
                *inputs.phase_args,
                self.y,
                self.w,
                inputs.starts,
                inputs.lengths,
                self.chi0,
                np.int32(blocks),
                np.int32(k0),
                np.int32(nf),
                self.dtype(self.options.alpha),
                np.int32(self.row_len),
                np.int32(k0 - self.row_lo),
                self.slab,
            )
            with self.clock("fused"):
                cl.enqueue_nd_range_kernel(
                    self.queue, kernel, (n_obj * blocks * _FUSED_WG,), (_FUSED_WG,)
                )

    def _batch(self) -> int:
        """Frequencies per batch of the sorted path: as many as fit the
        device beside the item's slab and inputs, up to a batch of
        ``_BATCH_BYTES_GPU`` (``_CPU``)."""
        info, n_points = self.info, self.n_points
        batch = items_that_fit(
            self.path.batch_buffers,
            MemoryBudget.of(info, held=self.device_bytes),
            most=min(_MAX_SEGMENTS // self.n_obj, (2**31 - 1) // n_points, self.row_len),
            size=n_points,
            target=_BATCH_BYTES_GPU if info.kind == "gpu" else _BATCH_BYTES_CPU,
            item="frequency",
            unit="points",
        )
        if batch > _BATCH_ALIGN:  # measured: odd batch strides run up to 4x slower
            batch -= batch % _BATCH_ALIGN
        return batch

    def batched(self) -> None:
        """Fill the slab batch by batch: fold-sort-gather, smooth, chi^2."""
        options, inputs, queue, clock = self.options, self.inputs, self.queue, self.clock
        n_obj, n_points, dtype = self.n_obj, self.n_points, self.dtype
        batch = self._batch()
        self.device_bytes += held_bytes(self.path.batch_buffers, batch, batch * n_points)
        longest = int(self.group.lengths.max())
        method = "bitonic" if longest <= bitonic_capacity(self.info) else "radix"
        allocator = self.pool
        sorter = FoldSorter(self.info, queue, inputs, method, allocator=allocator)
        single_pass = options.variant == "single_pass"
        names = (
            "gather_sorted",
            "sp_search_global" if single_pass else "supsmu_search",
            "chi2_power",
        )
        gather, smooth, chi2 = kernels.get_kernels(
            self.context, "supersmoother", names, **self.params
        )
        total = batch * n_points
        xs, ys, ws = (cl_array.empty(queue, total, dtype, allocator=allocator) for _ in range(3))
        self.held += [xs, ys, ws]
        if not single_pass:
            smo = cl_array.empty(queue, total, dtype, allocator=allocator)
            scratch = cl_array.empty(queue, 8 * total, dtype, allocator=allocator)
            self.held += [smo, scratch]
        row_hi = self.row_lo + self.row_len
        starts = range(self.row_lo, row_hi, batch)
        # per batch length (all but the last are equal), uploaded before any batch runs
        bases = {
            nf: upload(queue, (nf * self.group.offsets[:-1]).astype(np.int64))
            for nf in {min(batch, row_hi - k0) for k0 in starts}
        }
        self.held += list(bases.values())
        for k0 in starts:
            nf = min(batch, row_hi - k0)
            base = bases[nf]
            if method == "bitonic":
                with clock("fold_sort_gather"):
                    sorter.gather(k0, nf, base, self.y, self.w, (xs.data, ys.data, ws.data))
            else:
                with clock("fold+sort"):
                    phase, order = sorter.run(k0, nf, base)
                with clock("gather"):
                    gather.set_args(
                        phase.data,
                        order.data,
                        self.y,
                        self.w,
                        inputs.starts,
                        inputs.lengths,
                        base,
                        np.int32(nf),
                        xs.data,
                        ys.data,
                        ws.data,
                    )
                    cl.enqueue_nd_range_kernel(queue, gather, (n_obj * nf,), None)
                del phase, order  # back to the pool for the next batch
            col0 = np.int32(k0 - self.row_lo)
            with clock("smooth"):
                if single_pass:
                    smooth.set_args(
                        xs.data,
                        ys.data,
                        ws.data,
                        inputs.lengths,
                        base,
                        self.chi0,
                        np.int32(nf),
                        dtype(options.alpha),
                        np.int32(self.row_len),
                        col0,
                        self.slab,
                    )
                else:
                    smooth.set_args(
                        xs.data,
                        ys.data,
                        ws.data,
                        inputs.lengths,
                        base,
                        np.int32(nf),
                        np.int64(nf * n_points),
                        np.int32(2 if options.periodic else 1),
                        dtype(options.alpha),
                        scratch.data,
                        smo.data,
                    )
                cl.enqueue_nd_range_kernel(queue, smooth, (n_obj * nf,), None)
            if not single_pass:
                with clock("chi2"):
                    chi2.set_args(
                        ys.data,
                        ws.data,
                        smo.data,
                        inputs.lengths,
                        base,
                        self.chi0,
                        np.int32(nf),
                        np.int32(self.row_len),
                        col0,
                        self.slab,
                    )
                    cl.enqueue_nd_range_kernel(queue, chi2, (n_obj * nf,), None)

    def peaks(self) -> tuple[np.ndarray, np.ndarray]:
        """Top-k peaks (values as float64, grid indices) of the item's own bins."""
        k, n_obj, item = self.options.top_k, self.n_obj, self.item
        (kernel,) = kernels.get_kernels(
            self.context, "peaks", ("peaks_topk",), real=self.options.real, wg=_PEAKS_WG, top_k=k
        )
        best_val = self.pool.allocate(n_obj * k * np.dtype(self.dtype).itemsize)
        best_idx = self.pool.allocate(n_obj * k * 4)
        self.held += [best_val, best_idx]
        with self.clock("peaks"):
            kernel.set_args(
                self.slab,
                np.int32(self.row_len),
                np.int32(self.row_lo),
                np.int32(item.k_lo - self.row_lo),
                np.int32(item.k_hi - item.k_lo),
                np.int32(self.grid.nf),
                best_val,
                best_idx,
            )
            cl.enqueue_nd_range_kernel(self.queue, kernel, (n_obj * _PEAKS_WG,), (_PEAKS_WG,))
        val: np.ndarray = np.empty((n_obj, k), dtype=self.dtype)
        idx = np.empty((n_obj, k), dtype=np.int32)
        cl.enqueue_copy(self.queue, val, best_val)
        cl.enqueue_copy(self.queue, idx, best_idx, is_blocking=True)
        return val.astype(np.float64), idx


def _copy_periodogram(queue, slab, power, rows, item: _Item, row_lo, row_len, dtype) -> None:
    """Copy the owned bins of a slab into ``power[rows, k_lo:k_hi]``."""
    contiguous = len(rows) == 0 or rows[-1] - rows[0] == len(rows) - 1
    whole_rows = item.k_lo == 0 and item.k_hi == power.shape[1] == row_len
    if contiguous and whole_rows:
        cl.enqueue_copy(
            queue,
            power[rows[0] : rows[0] + len(rows)] if len(rows) else power[:0],
            slab,
            is_blocking=True,
        )
        return
    block = np.empty((len(rows), row_len), dtype=dtype)
    cl.enqueue_copy(queue, block, slab, is_blocking=True)
    own0 = item.k_lo - row_lo
    power[rows, item.k_lo : item.k_hi] = block[:, own0 : own0 + item.k_hi - item.k_lo]


def _merge_peaks(
    items: list[_Item], results: list[_ItemResult], prepared: _Prepared, top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k over the frequency slabs of every object, in catalog order."""
    n_all = len(prepared.status)
    val = np.full((n_all, top_k), -np.inf)
    idx = np.full((n_all, top_k), NO_PEAK, dtype=np.int64)
    for item, result in zip(items, results, strict=True):
        rows = prepared.searched[item.obj_lo : item.obj_hi]
        both_val = np.concatenate([val[rows], result.val], axis=1)
        both_idx = np.concatenate([idx[rows], result.idx], axis=1)
        empty = both_idx == NO_PEAK
        # best first: higher value, then lower grid index; empty slots last
        order = np.lexsort((both_idx, -np.where(empty, -np.inf, both_val), empty), axis=1)
        order = order[:, :top_k]
        val[rows] = np.take_along_axis(both_val, order, axis=1)
        idx[rows] = np.take_along_axis(both_idx, order, axis=1)
    return val, idx


# }}}
