"""Lomb-Scargle periodograms of one light curve or a ragged catalog on OpenCL.

Call path: :func:`lombscargle` validates the input and prepares per-point and
per-object arrays on the host (float64), :func:`clperiod.planning.plan_batches`
cuts the catalog into batches that fit the device,
:func:`clperiod.scheduler.run_on_devices` runs the batches, and each batch
launches ``ls_tiles`` and ``ls_merge_topk`` of ``cl_kernels/lombscargle.mako``.

The periodogram is the least-squares power of a sinusoid (plus a floating
mean for the generalized method) evaluated through its 2x2 normal equations,
which equals the time-shift (tau) form of Scargle (1982) and Zechmeister &
Kuerster (2009) used by SciPy and astropy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np
import pyopencl as cl

from . import kernels, stats
from .catalog import Catalog, Status
from .device import DeviceInfo, get_context, get_queue, select_devices
from .grid import FrequencyGrid
from .planning import Batch, KernelShape, plan_batches
from .scheduler import run_on_devices

__all__ = ["lombscargle", "LombScargleResult"]

Method = Literal["generalized", "standard"]
Normalization = Literal["standard", "model", "log", "psd"]
Precision = Literal["fp64", "fp32"]
Memory = Literal["auto", "local", "global"]

#: Largest ``top_k`` (peaks are kept in private arrays of this length).
MAX_TOP_K = 64
_NO_PEAK = np.iinfo(np.int32).max


@dataclass(frozen=True)
class LombScargleResult:
    """Periodogram search results, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    frequency_best, period, power_best : ndarray
        Highest peak of each object (NaN when ``status`` is not OK).
    top_k_frequency, top_k_period, top_k_power : ndarray, shape (n_objects, top_k)
        The ``top_k`` highest distinct peaks (local maxima), best first; NaN
        where an object has fewer peaks.
    status : ndarray of Status
        Per-object status (OK, TOO_FEW_POINTS, ZERO_VARIANCE, ...).
    power : ndarray, shape (n_objects, nf), or None
        Full periodograms (kernel precision) when requested.
    grid : FrequencyGrid
        The frequency grid evaluated.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid
    method: str
    normalization: str
    precision: str
    fit_mean: bool
    center_data: bool
    devices: list[str]
    catalog: Catalog = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict, repr=False)

    @property
    def period(self) -> np.ndarray:
        """Best period of each object (``1 / frequency_best``)."""
        return 1.0 / self.frequency_best

    @property
    def top_k_period(self) -> np.ndarray:
        """Periods of the top-k peaks."""
        return 1.0 / self.top_k_frequency

    @property
    def n_points(self) -> np.ndarray:
        """Observations per object."""
        return self.catalog.lengths

    def frequency(self) -> np.ndarray:
        """The grid frequencies (columns of :attr:`power`)."""
        return self.grid.frequencies()

    def false_alarm_probability(
        self, method: str = "baluev", power: np.ndarray | None = None
    ) -> np.ndarray:
        """False-alarm probability of each object's peak(s).

        Parameters
        ----------
        method
            ``"baluev"`` (default, astropy's), ``"davies"``, ``"naive"`` or
            ``"townsend"`` (Townsend 2010, eq. 3, with the grid size as the
            number of independent frequencies).
        power
            Powers to evaluate, shape ``(n_objects,)`` or ``(n_objects, k)``,
            in this result's normalization; default :attr:`power_best`.

        Returns
        -------
        ndarray
            Same shape as ``power``; NaN for objects whose status is not OK.
        """
        z = self.power_best if power is None else np.asarray(power, dtype=np.float64)
        out = np.full(z.shape, np.nan)
        use_dy = self.method == "generalized"
        for k in np.flatnonzero(self.status == Status.OK):
            t, y, dy = self.catalog.lightcurve(k)
            out[k] = stats.false_alarm_probability(
                z[k],
                n=len(t),
                fmax=self.grid.fmax,
                t=t,
                dy=dy if use_dy else None,
                normalization=self.normalization,
                method=method,
                fit_mean=self.fit_mean,
                center_data=self.center_data,
                nf=self.grid.nf,
            )
        return out


def lombscargle(
    cat_or_t: Catalog | np.ndarray,
    grid: FrequencyGrid,
    y: np.ndarray | None = None,
    dy: np.ndarray | None = None,
    *,
    method: Method = "generalized",
    normalization: Normalization | None = "standard",
    fit_mean: bool | None = None,
    center_data: bool | None = None,
    precision: Precision = "fp64",
    memory: Memory = "auto",
    periodogram: bool = False,
    top_k: int = 1,
    device=None,
    nan_policy: Literal["raise", "omit"] = "raise",
    profile: bool = False,
) -> LombScargleResult:
    """Lomb-Scargle periodogram search of a light curve or a catalog.

    Parameters
    ----------
    cat_or_t
        A :class:`Catalog`, or the times of one light curve (then give ``y``
        and optionally ``dy``).
    grid
        Uniform frequency grid (ordinary frequency, cycles per time unit).
    y, dy
        Values and uncertainties when ``cat_or_t`` is a time array.
    method
        ``"generalized"``: floating mean and ``dy^-2`` weights (astropy's
        default model, Zechmeister & Kuerster 2009). ``"standard"``: the
        classic unweighted Scargle periodogram of SciPy and Townsend (2010);
        uncertainties are not used (passing ``dy`` with it is an error).
    normalization
        astropy's ``"standard"``, ``"model"``, ``"log"`` or ``"psd"``; ``None``
        gives the unnormalized power 1/2 (chi2_ref - chi2), which is SciPy's
        ``lombscargle`` output and equals astropy's ``"psd"``.
    fit_mean, center_data
        As in astropy; defaults follow the method (generalized: both True,
        standard: both False, i.e. SciPy's raw form).
    precision
        ``"fp64"`` or ``"fp32"``. Times stay float64 on the host; the fp32
        kernel gets per-point phases in double-single form, so raw MJD/JD
        inputs keep their accuracy.
    memory
        ``"local"`` stages observations through local memory in tiles,
        ``"global"`` reads them from global memory; ``"auto"`` picks by device.
    periodogram
        Also return the full periodograms (``n_objects x nf``).
    top_k
        Number of distinct peaks (local maxima) reported per object.
    device
        Device selection (see :func:`clperiod.device.select_devices`);
        default from ``CLPERIOD_DEVICE``.
    nan_policy
        ``"raise"`` (default) on non-finite input, or ``"omit"`` to drop those
        rows (only for array input; a Catalog is already validated).
    profile
        Time the kernels with OpenCL profiling events; the sums are reported
        in ``result.timings`` (seconds).

    Returns
    -------
    LombScargleResult

    Raises
    ------
    ValueError
        Bad options or data, or fp64 requested on a device without fp64.
    """
    started = time.perf_counter()
    catalog = _as_catalog(cat_or_t, y, dy, method, nan_policy)
    options = _Options.build(
        method, normalization, fit_mean, center_data, precision, memory, top_k, periodogram
    )
    if not isinstance(grid, FrequencyGrid):
        raise TypeError(f"grid must be a FrequencyGrid, got {type(grid).__name__}")
    devices = select_devices(device)
    if options.fp64:
        for info in devices:
            if not info.fp64:
                raise ValueError(
                    f"precision='fp64' needs double precision, which {info.label} lacks; "
                    "use precision='fp32' or another device"
                )
    prepared = _prepare(catalog, grid, options)
    n_obj = catalog.n_objects
    top_val = np.full((n_obj, options.top_k), np.nan)
    top_freq = np.full((n_obj, options.top_k), np.nan)
    power = None
    if periodogram:
        power = np.full((n_obj, grid.nf), np.nan, dtype=options.dtype)
    valid = prepared.objects
    timings: dict[str, float] = {}
    if len(valid):
        shape = _kernel_shape(devices, options)
        batches = _plan(devices, shape, prepared, grid, options)
        results = run_on_devices(
            devices,
            batches,
            lambda info, batch: _run_batch(info, batch, shape, prepared, grid, options, profile),
        )
        for batch, (vals, idx, pgram, events) in zip(batches, results):
            for name, seconds in events.items():
                timings[name] = timings.get(name, 0.0) + seconds
            rows = valid[batch.obj_start : batch.obj_stop]
            found = idx != _NO_PEAK
            top_val[rows] = np.where(found, vals, np.nan)
            top_freq[rows] = np.where(found, grid.fmin + idx * grid.df, np.nan)
            if power is not None:
                power[rows] = pgram
    return LombScargleResult(
        ids=catalog.ids,
        frequency_best=top_freq[:, 0].copy(),
        power_best=top_val[:, 0].copy(),
        top_k_frequency=top_freq,
        top_k_power=top_val,
        status=prepared.status,
        power=power,
        grid=grid,
        method=method,
        normalization=options.normalization,
        precision=precision,
        fit_mean=options.fit_mean,
        center_data=options.center_data,
        devices=[d.label for d in devices],
        catalog=catalog,
        timings={**timings, "total_s": time.perf_counter() - started},
    )


# {{{ options and host preparation


@dataclass(frozen=True)
class _Options:
    method: str
    normalization: str
    fit_mean: bool
    center_data: bool
    fp64: bool
    memory: str
    top_k: int
    periodogram: bool

    @property
    def dtype(self) -> type:
        return np.float64 if self.fp64 else np.float32

    @property
    def min_points(self) -> int:
        """Fewest observations with one degree of freedom left."""
        return 4 if self.fit_mean else 3

    @classmethod
    def build(
        cls, method, normalization, fit_mean, center_data, precision, memory, top_k, periodogram
    ) -> _Options:
        _check_choice("method", method, Method)
        _check_choice("precision", precision, Precision)
        _check_choice("memory", memory, Memory)
        normalization = "psd" if normalization is None else normalization
        _check_choice("normalization", normalization, Normalization)
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
            raise TypeError(f"top_k must be an integer, got {top_k!r}")
        if not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be in [1, {MAX_TOP_K}], got {top_k}")
        default = method == "generalized"
        fit_mean = default if fit_mean is None else bool(fit_mean)
        center_data = default if center_data is None else bool(center_data)
        return cls(
            method,
            normalization,
            fit_mean,
            center_data,
            precision == "fp64",
            memory,
            int(top_k),
            bool(periodogram),
        )


def _check_choice(name: str, value, kind) -> None:
    choices = get_args(kind)
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _as_catalog(cat_or_t, y, dy, method, nan_policy) -> Catalog:
    if isinstance(cat_or_t, Catalog):
        if y is not None or dy is not None:
            raise ValueError("give y and dy inside the Catalog, not as arguments")
        return cat_or_t
    if y is None:
        raise ValueError("y is required when the first argument is a time array")
    if method == "standard" and dy is not None:
        raise ValueError("method='standard' is unweighted; use method='generalized' with dy")
    return Catalog.from_single(cat_or_t, y, dy, nan_policy=nan_policy)


@dataclass(frozen=True)
class _Prepared:
    """Per-point and per-object device inputs for the valid objects."""

    objects: np.ndarray  # catalog indices of the objects sent to the device
    status: np.ndarray  # per catalog object
    offsets: np.ndarray  # (n_valid + 1,) rows of each valid object in the arrays below
    point_arrays: dict[str, np.ndarray]
    yy: np.ndarray  # sum wn*y'^2 per valid object
    psd_scale: np.ndarray  # 1/2 sum w*y'^2 per valid object


def _segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sums of ``values`` over the non-empty segments given by ``offsets``."""
    return np.add.reduceat(values, offsets[:-1]) if len(values) else np.zeros(0)


def _prepare(catalog: Catalog, grid: FrequencyGrid, options: _Options) -> _Prepared:
    lengths = catalog.lengths
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[lengths < options.min_points] = Status.TOO_FEW_POINTS
    objects = np.flatnonzero(status == Status.OK)
    rows = np.concatenate(
        [np.arange(catalog.offsets[k], catalog.offsets[k + 1]) for k in objects]
    ) if len(objects) else np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths[objects])]).astype(np.int64)
    owner = np.repeat(np.arange(len(objects)), lengths[objects])

    t = catalog.t[rows]
    y = catalog.y[rows]
    use_dy = options.method == "generalized" and catalog.dy is not None
    w = catalog.dy[rows] ** -2.0 if use_dy else np.ones_like(t)
    w_sum = _segment_sum(w, offsets)
    wn = w / w_sum[owner]
    if options.fit_mean or options.center_data:
        y = y - _segment_sum(wn * y, offsets)[owner]
    yy = _segment_sum(wn * y * y, offsets)
    raw_second_moment = _segment_sum(wn * catalog.y[rows] ** 2, offsets)
    flat = yy <= (64 * np.finfo(np.float64).eps) ** 2 * raw_second_moment
    if flat.any():
        status[objects[flat]] = Status.ZERO_VARIANCE
        keep = ~flat
        keep_rows = keep[owner]
        objects, t, y, w, wn, owner = (
            objects[keep], t[keep_rows], y[keep_rows], w[keep_rows], wn[keep_rows], owner[keep_rows]
        )
        yy = yy[keep]
        offsets = np.concatenate([[0], np.cumsum(lengths[objects])]).astype(np.int64)
        owner = np.repeat(np.arange(len(objects)), lengths[objects])

    psd_scale = 0.5 * _segment_sum(w * y * y, offsets)
    epoch = 0.5 * (
        np.minimum.reduceat(t, offsets[:-1]) + np.maximum.reduceat(t, offsets[:-1])
    )[owner] if len(t) else np.zeros(0)
    tr = t - epoch
    dtype = options.dtype
    step = 2 * np.pi * grid.df * tr
    arrays = {
        "cd": np.cos(step).astype(dtype),
        "sd": np.sin(step).astype(dtype),
        "w": wn.astype(dtype),
        "wy": (wn * y).astype(dtype),
    }
    if options.fp64:
        arrays["t"] = tr
    else:
        a = _wrap(grid.fmin * tr)
        b = _wrap(grid.df * tr)
        b_hi = b.astype(np.float32)
        arrays.update(
            a=a.astype(np.float32), bh=b_hi, bl=(b - b_hi.astype(np.float64)).astype(np.float32)
        )
    return _Prepared(objects, status, offsets, arrays, yy, psd_scale)


def _wrap(cycles: np.ndarray) -> np.ndarray:
    """Reduce phases in cycles to [-1/2, 1/2)."""
    return cycles - np.round(cycles)


# }}}

# {{{ device work


def _kernel_shape(devices: list[DeviceInfo], options: _Options) -> KernelShape:
    """One launch shape for all devices of a run (batches may go to any of them)."""
    gpu = all(info.kind == "gpu" for info in devices)
    return KernelShape(wg=128 if gpu else 64, m=16 if gpu and not options.fp64 else 8)


def _kernel_params(info: DeviceInfo, shape: KernelShape, options: _Options) -> dict:
    """Template parameters of the tile kernel on ``info``."""
    use_local = info.kind == "gpu" if options.memory == "auto" else options.memory == "local"
    return dict(
        real="double" if options.fp64 else "float",
        wg=shape.wg,
        m=shape.m,
        use_local=use_local,
        fit_mean=options.fit_mean,
        normalization=options.normalization,
        recurrence="chebyshev" if options.fp64 else "rotation",
        top_k=options.top_k,
        write_power=options.periodogram,
    )


def _plan(devices, shape, prepared, grid, options) -> list[Batch]:
    """Batches sized for the smallest device (any device may run any batch)."""
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    lengths = np.diff(prepared.offsets)
    point_bytes = sum(a.itemsize for a in prepared.point_arrays.values())
    return plan_batches(
        lengths,
        grid.nf,
        shape,
        smallest,
        point_bytes=point_bytes,
        real_bytes=np.dtype(options.dtype).itemsize,
        top_k=options.top_k,
        periodogram=options.periodogram,
    )


_POINT_ORDER = {True: ("t",), False: ("a", "bh", "bl")}


def _run_batch(
    info: DeviceInfo,
    batch: Batch,
    shape: KernelShape,
    prepared: _Prepared,
    grid: FrequencyGrid,
    options: _Options,
    profile: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, dict[str, float]]:
    """Evaluate one batch on ``info``.

    Returns top-k values and grid indices, the periodograms (or None) and
    kernel/transfer times when ``profile`` is set.
    """
    context = get_context(info)
    queue = get_queue(info, profiling=profile)
    events: dict[str, list[cl.Event]] = {"tiles_s": [], "merge_s": [], "copy_s": []}
    tiles, merge = kernels.get_kernels(
        context, "lombscargle", ("ls_tiles", "ls_merge_topk"), **_kernel_params(info, shape, options)
    )
    dtype = options.dtype
    k = options.top_k
    r0, r1 = prepared.offsets[batch.obj_start], prepared.offsets[batch.obj_stop]
    n_obj = batch.n_objects
    n_tiles = shape.n_tiles(grid.nf)
    mf = cl.mem_flags

    def upload(array: np.ndarray) -> cl.Buffer:
        array = np.ascontiguousarray(array)
        return cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=array)

    phases = [upload(prepared.point_arrays[name][r0:r1]) for name in _POINT_ORDER[options.fp64]]
    if options.fp64:
        phases += [np.float64(grid.fmin), np.float64(grid.df)]
    points = [upload(prepared.point_arrays[name][r0:r1]) for name in ("cd", "sd", "w", "wy")]
    starts = (prepared.offsets[batch.obj_start : batch.obj_stop] - r0).astype(np.int32)
    objs = [
        upload(starts),
        upload(np.diff(prepared.offsets[batch.obj_start : batch.obj_stop + 1]).astype(np.int32)),
        upload(prepared.yy[batch.obj_start : batch.obj_stop].astype(dtype)),
        upload(prepared.psd_scale[batch.obj_start : batch.obj_stop].astype(dtype)),
    ]
    itemsize = np.dtype(dtype).itemsize
    part_val = cl.Buffer(context, mf.READ_WRITE, n_obj * n_tiles * k * itemsize)
    part_idx = cl.Buffer(context, mf.READ_WRITE, n_obj * n_tiles * k * 4)
    pgram = None
    chunk_buffers: list[cl.Buffer] = []
    if options.periodogram:
        pgram = np.empty((n_obj, grid.nf), dtype=dtype)
        largest = max(count for _, count in batch.tile_chunks) * shape.owned
        chunk_buffers = [
            cl.Buffer(context, mf.WRITE_ONLY, n_obj * largest * itemsize)
            for _ in range(min(2, len(batch.tile_chunks)))
        ]
    dummy = cl.Buffer(context, mf.READ_WRITE, itemsize)
    copies: list[cl.Event] = [None, None]
    for number, (first, count) in enumerate(batch.tile_chunks):
        k0 = first * shape.owned
        chunk_nf = min(count * shape.owned, grid.nf - k0)
        slot = number % 2
        out = chunk_buffers[slot] if options.periodogram else dummy
        if copies[slot] is not None:
            copies[slot].wait()
        tiles.set_args(
            *phases, *points, *objs,
            np.int32(grid.nf), np.int32(n_tiles), np.int32(first), np.int32(count),
            np.int32(k0), np.int32(chunk_nf), out, part_val, part_idx,
        )
        events["tiles_s"].append(
            cl.enqueue_nd_range_kernel(queue, tiles, (n_obj * count * shape.wg,), (shape.wg,))
        )
        if options.periodogram:
            host = np.empty((n_obj, chunk_nf), dtype=dtype)
            copies[slot] = cl.enqueue_copy(queue, host, out, is_blocking=False)
            events["copy_s"].append(copies[slot])
            copies[slot].wait()
            pgram[:, k0 : k0 + chunk_nf] = host
            copies[slot] = None
    best_val = cl.Buffer(context, mf.WRITE_ONLY, n_obj * k * itemsize)
    best_idx = cl.Buffer(context, mf.WRITE_ONLY, n_obj * k * 4)
    merge.set_args(part_val, part_idx, np.int32(n_tiles), best_val, best_idx)
    events["merge_s"].append(
        cl.enqueue_nd_range_kernel(queue, merge, (n_obj * shape.wg,), (shape.wg,))
    )
    vals = np.empty((n_obj, k), dtype=dtype)
    idx = np.empty((n_obj, k), dtype=np.int32)
    cl.enqueue_copy(queue, vals, best_val)
    cl.enqueue_copy(queue, idx, best_idx, is_blocking=True)
    seconds = {}
    if profile:
        seconds = {
            name: sum(1e-9 * (e.profile.end - e.profile.start) for e in evs)
            for name, evs in events.items()
        }
    return vals.astype(np.float64), idx, pgram, seconds


# }}}
