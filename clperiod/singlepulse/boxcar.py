"""Single-pulse search: boxcar matched filtering of de-dispersed time series.

:func:`search` takes a DM x time array (host NumPy, a memory map, or a
pyopencl array) and returns the candidates as a structured array. The steps
(``cl_kernels/singlepulse.mako``), all on the device:

1. per-DM mean and standard deviation with the streaming and pairwise
   formulas of Chan et al. (Adamek & Armour eqs. 1-2), optionally with
   iterative 3-sigma clipping (``robust=True``) against bright pulses and RFI;
   rows far from unit scale are scaled by powers of two (on the host, or
   inside the moments), so nothing depends on the data's units;
2. the boxcar plan (:func:`boxcar_plan`): every width 1..32 at full
   resolution and, for wider pulses, AstroAccelerate's decimation in time
   (widths 17..32 of series summed over 2, 4, 8, ... samples);
3. the noise of each boxcar width from the autocovariance of each (decimated)
   series: exactly per width (``snr_mode="exact"``) or with the paper's
   linear approximation between width 1 and the widest boxcar of the level
   (eqs. 4-5, ``"approx"``);
4. per start sample the best SNR and its width (Algorithm 1), appended to a
   compact detection list on the device when above ``threshold``;
5. friends-of-friends clustering of neighbouring detections in time, DM and
   width into candidates (:mod:`clperiod.singlepulse.clustering`).

Data longer than a chunk (sized by :mod:`clperiod.engine.planner`) are
processed in time chunks that overlap by the widest boxcar; statistics are accumulated over
all chunks first, and each detection belongs to the chunk holding its start,
so chunking neither loses nor duplicates candidates.
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from pyopencl.tools import ImmediateAllocator, MemoryPool

from clperiod import checks
from clperiod.catalog import mask_of
from clperiod.engine import kernels
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    select_devices,
    upload,
    write,
)
from clperiod.engine.planner import Buffer, MemoryBudget, items_that_fit
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.singlepulse import clustering

__all__ = [
    "CANDIDATE_DTYPE",
    "Candidates",
    "Level",
    "RowStatus",
    "SearchInfo",
    "boxcar_plan",
    "search",
]

#: Fields of a candidate (see :func:`search`).
CANDIDATE_DTYPE = np.dtype(
    [
        ("dm_index", np.int32),
        ("dm", np.float64),
        ("sample", np.int64),
        ("time", np.float64),
        ("snr", np.float32),
        ("width", np.int32),
        ("members", np.int32),
        ("begin", np.int64),
        ("end", np.int64),
    ]
)

FULL_WIDTHS = 32  # widths at full resolution in the DIT plan
DIT_WIDTHS = (17, 32)  # decimated widths of each DIT level
FULL_PLAN_MAX = 512  # largest max_width of plan="full" (local memory)
LOCAL_SIZE = 128
PER_ITEM = 8  # autocovariance terms per work-item
BOX_PER_ITEM = 16  # boxcar starts per work-item and sub-tile
BOX_TILES = (4, 2, 1)  # boxcar sub-tiles per work-group: the most that fit
# in local memory (4: 8192 starts, 37 KiB)
CLIP_SIGMA = 3.0
CLIP_ITERATIONS = 3
STAT_BLOCK = 1 << 16  # samples per work-group of row_moments; chunks are
# multiples of it (and of the tiles), so chunking does
# not change any partial sum
MIN_ROWS_PER_BLOCK = 256  # with several devices, DM rows are split into blocks
# of at least this many (each block has fixed costs)
#: Device bytes of one time chunk at most (where the device has room for more).
_CHUNK_BYTES_GPU = 4 << 30
_CHUNK_BYTES_CPU = 256 << 20
#: What a chunk of host rows holds on the device per (row, sample): the
#: float32 samples, and the decimated series of the levels (each at most half
#: the one before it: the chunk's size in all, half of it the largest).
_CHUNK_BUFFERS = (Buffer("samples", per_unit=4), Buffer("decimated series", per_unit=2, count=2))
#: Rows the float32 device passes take as they are: largest |x| at most 2**100
#: and the largest deviation from a block's first sample 0 or at least
#: 2**-100. Host rows outside are scaled by a power of two on the host; device
#: arrays outside raise.
FLOAT32_RANGE = (2.0**-100, 2.0**100)
#: Deviations whose squares the moments take as they are; rows outside get
#: their values scaled by a power of two inside the moments kernel.
MOMENT_RANGE = (2.0**-32, 2.0**32)


class RowStatus(enum.IntEnum):
    """Per-DM-row status: rows that are not OK give no candidates."""

    OK = 0
    CONSTANT = 1  # zero variance
    NO_DATA = 2  # no finite sample
    OUT_OF_RANGE = 3  # the samples' mean or standard deviation overflows (not finite)


@dataclass(frozen=True)
class Level:
    """One level of the boxcar plan: widths ``widths * 2**level`` samples."""

    level: int
    widths: np.ndarray  # in samples of the level (decimated by 2**level)

    @property
    def scale(self) -> int:
        """Native samples per sample of this level."""
        return 1 << self.level

    @property
    def wmax(self) -> int:
        """Largest width, in samples of this level."""
        return int(self.widths[-1])


def boxcar_plan(max_width: int = 32, plan: str = "dit") -> tuple[Level, ...]:
    """The boxcar widths searched, level by level.

    Parameters
    ----------
    max_width
        Widest boxcar in native samples.
    plan
        ``"dit"``: widths 1..32 at full resolution, then for each level
        k = 1, 2, ... the decimated widths 17..32 (native 17*2**k .. 32*2**k,
        step 2**k) up to ``max_width`` (AstroAccelerate's BoxDIT). ``"full"``:
        every width 1..max_width at full resolution (max_width <= 512).
    """
    if not isinstance(max_width, (int, np.integer)) or max_width < 1:
        raise ValueError(f"max_width must be a positive integer, got {max_width!r}")
    checks.choice("plan", plan, ("dit", "full"))
    if plan == "full":
        if max_width > FULL_PLAN_MAX:
            raise ValueError(f"plan='full' supports max_width <= {FULL_PLAN_MAX}; use plan='dit'")
        return (Level(0, np.arange(1, max_width + 1)),)
    levels = [Level(0, np.arange(1, min(FULL_WIDTHS, max_width) + 1))]
    k = 1
    while DIT_WIDTHS[0] << k <= max_width:
        widths = np.arange(DIT_WIDTHS[0], DIT_WIDTHS[1] + 1)
        levels.append(Level(k, widths[widths << k <= max_width]))
        k += 1
    return tuple(levels)


@dataclass(frozen=True)
class SearchInfo:
    """What a :func:`search` did: statistics, plan, conventions and timings."""

    tsamp: float
    dm: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    row_status: np.ndarray
    masked: np.ndarray  # non-finite samples per row
    plan: tuple[Level, ...]
    noise: dict[int, np.ndarray]  # level -> (n_dm, wmax) noise of the boxcar sums of z (float32)
    snr_mode: str
    robust: bool
    threshold: float
    n_detections: int
    chunks: int
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    conventions: str = (
        "snr = boxcar sum of (x - mean)/std over the noise of that width; sample = boxcar "
        "centre (start + width // 2), time = sample * tsamp; width in native samples"
    )


class Candidates(np.ndarray):
    """Structured array of candidates (:data:`CANDIDATE_DTYPE`) with ``.info``."""

    info: SearchInfo | None

    def __array_finalize__(self, obj) -> None:
        self.info = getattr(obj, "info", None)


def _as_rows(data, nan_policy: str) -> tuple[np.ndarray | cl_array.Array, int, int]:
    """The rows to search (a memory map stays one: chunks are read as needed;
    masked samples of a masked array are NaN, as ``nan_policy`` allows)."""
    if isinstance(data, cl_array.Array):
        if data.ndim != 2 or data.dtype != np.float32 or not data.flags.c_contiguous:
            raise ValueError("a device array must be 2-D, float32 and C-contiguous")
        return data, *data.shape
    mask = mask_of(data)
    if mask is not None and mask.any():
        data = _masked_as_nan(data, mask, nan_policy)
    a = np.asanyarray(np.ma.getdata(data))
    if a.ndim != 2:
        raise ValueError(f"data must be a 2-D (DM, time) array, got {a.ndim} dimensions")
    if not (np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)):
        raise TypeError(f"data must hold real numbers, got dtype {a.dtype}")
    return a, *a.shape


def _dm_values(dm, n_dm: int) -> np.ndarray:
    """The DM of each row as float64, or an error naming ``dm``."""
    values = np.asarray(dm)
    if values.dtype.kind not in "iuf":
        raise TypeError(f"dm must be real numbers (pc cm^-3), got dtype {values.dtype}")
    if values.shape != (n_dm,):
        raise ValueError(f"dm must have one value per row ({n_dm}), got shape {values.shape}")
    return values.astype(np.float64)


def _row_status(mean: np.ndarray, std: np.ndarray, masked: np.ndarray, n_t: int) -> np.ndarray:
    """The :class:`RowStatus` of each row from its statistics."""
    status = np.where(std > 0, RowStatus.OK, RowStatus.CONSTANT)
    status = np.where(np.isfinite(mean) & np.isfinite(std), status, RowStatus.OUT_OF_RANGE)
    return np.where(masked >= n_t, RowStatus.NO_DATA, status).astype(np.int8)


def _masked_as_nan(data, mask: np.ndarray, nan_policy: str) -> np.ndarray:
    """A masked array's samples with the masked ones NaN (``nan_policy="mask"``)."""
    if nan_policy == "raise":
        where = np.argwhere(mask)[0].tolist()
        raise ValueError(
            f"data has {int(mask.sum())} masked samples (the first at row, "
            f"sample {where}); nan_policy='mask' leaves them out"
        )
    values = np.asarray(np.ma.getdata(getattr(data, "unmasked", data)))
    if values.dtype.kind not in "f":
        values = values.astype(np.float32)
    return np.where(mask, np.nan, values).astype(values.dtype, copy=False)


def _mean_std(parts) -> tuple[np.ndarray, np.ndarray]:
    """Per-row mean and standard deviation from per-block (count, mean, M2, ...)."""
    total, mu, spread = _merge_moments(*parts[:3])
    with np.errstate(invalid="ignore", divide="ignore"):
        return mu, np.where(total > 0, np.sqrt(spread / np.maximum(total, 1)), 0.0)


def _merge_moments(count, mean, m2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge (count, mean, M2) partials along the last axis (Chan et al. eq. 2)."""
    count, mean, m2 = (np.asarray(a, dtype=np.float64) for a in (count, mean, m2))
    total = count.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(total > 0, (count * mean).sum(axis=-1) / total, 0.0)
    spread = m2.sum(axis=-1) + (count * (mean - mu[..., None]) ** 2).sum(axis=-1)
    return total, mu, spread


class _Device:
    """Programs, queue and device memory of one search on one device.

    Device buffers come from a memory pool that lives as long as the search:
    releasing a buffer that queued kernels still use waits for the device on
    some drivers (NVIDIA's), which serialised the passes; the pool releases
    everything once, at the end.
    """

    def __init__(self, info: DeviceInfo) -> None:
        self.info = info
        self.context = get_context(info)
        self.queue = get_queue(info)
        self.pool = MemoryPool(ImmediateAllocator(self.queue))
        self._held: list[cl.Buffer | cl.Event] = []

    def empty(self, nbytes: int) -> cl.MemoryObjectHolder:
        """A device buffer of ``nbytes`` (at least 1) from the pool."""
        return self.pool.allocate(max(1, nbytes))

    def upload(self, array: np.ndarray) -> cl.Buffer:
        """A device copy of ``array``, queued without waiting for the queue;
        the buffer and the copy (which holds ``array``) are kept until the
        search ends."""
        buf = upload(self.queue, array, pending=self._held)
        self._held.append(buf)
        return buf

    def program(self, raw: bool, wmax: int, wmin: int) -> dict[str, cl.Kernel]:
        names = ("row_moments", "decimate", "autocovariance", "boxcar")
        return dict(
            zip(
                names,
                kernels.get_kernels(
                    self.context,
                    "singlepulse",
                    names,
                    raw=raw,
                    wmax=wmax,
                    wmin=wmin,
                    local_size=LOCAL_SIZE,
                    per_item=PER_ITEM,
                    box_per_item=BOX_PER_ITEM,
                    box_tiles=self.box_tiles(wmax),
                ),
                strict=True,
            )
        )

    def box_tiles(self, wmax: int) -> int:
        """Boxcar sub-tiles per work-group whose samples fit in local memory."""
        for tiles in BOX_TILES:
            span = LOCAL_SIZE * BOX_PER_ITEM * tiles + _round_up(wmax, 4)
            if 4 * (span + span // 8 + 4 + wmax) <= 3 * self.info.local_mem // 4:
                return tiles
        return BOX_TILES[-1]


@dataclass(frozen=True)
class _Chunk:
    """Native samples [lo, hi) owned, [lo, end) on the device (halo included)."""

    lo: int
    hi: int
    end: int


def _chunks(n_t: int, chunk: int, halo: int, align: int) -> list[_Chunk]:
    chunk = max(align, chunk // align * align)
    return [
        _Chunk(lo, min(n_t, lo + chunk), min(n_t, lo + chunk + halo))
        for lo in range(0, n_t, chunk)
    ]


def search(
    data,
    dm,
    tsamp: float,
    *,
    max_width: int = 32,
    threshold: float = 6.0,
    plan: str = "dit",
    snr_mode: str = "approx",
    robust: bool = False,
    nan_policy: str = "raise",
    cluster: bool = True,
    dm_tol: int = clustering.CLUSTER_DEFAULTS["dm_tol"],
    time_tol: float = clustering.CLUSTER_DEFAULTS["time_tol"],
    width_tol: float = clustering.CLUSTER_DEFAULTS["width_tol"],
    chunk_samples: int | None = None,
    device=None,
) -> Candidates:
    """Search de-dispersed time series for single pulses.

    Parameters
    ----------
    data
        ``(n_dm, n_t)`` samples: a NumPy array or memory map (float32;
        float64 and integers are converted chunk by chunk) or a float32
        ``pyopencl.array.Array`` already on the device.
    dm
        ``(n_dm,)`` DM of each row (pc cm^-3).
    tsamp
        Sampling time in seconds.
    max_width
        Widest boxcar, native samples (must not exceed the series length).
    threshold
        Detection threshold in SNR (> 0).
    plan
        ``"dit"`` or ``"full"`` (:func:`boxcar_plan`).
    snr_mode
        ``"approx"``: the noise of width N is the paper's eq. 5 between
        width 1 and the widest boxcar of the level, both measured;
        ``"exact"``: measured for every width from the autocovariance.
    robust
        Statistics with iterative 3-sigma clipping (3 passes), so bright
        pulses or RFI do not inflate the noise.
    nan_policy
        ``"raise"`` on NaN/inf samples, or ``"mask"``: they are left out of
        the statistics and count as the row mean (zero signal).
    cluster
        Merge neighbouring detections (friends of friends: DM indices within
        ``dm_tol``, centres within ``time_tol`` times the larger width,
        widths within a factor ``2**width_tol``) into single candidates;
        ``False`` returns every detection.
    chunk_samples
        Time samples per chunk (default: sized from the device memory).
    device
        Device selection (default ``CLPERIOD_DEVICE``). With several
        devices the DM rows are split into blocks that the devices take in
        turn (results identical to one device); a device array is searched
        on the first selected device.

    Returns
    -------
    Candidates
        Structured array (:data:`CANDIDATE_DTYPE`) sorted by sample and DM:
        ``dm_index``, ``dm``, ``sample`` (boxcar centre, native samples),
        ``time`` (``sample * tsamp``, seconds), ``snr``, ``width`` (native
        samples), ``members`` (detections merged), ``begin``/``end`` (first
        and last sample covered by the members). ``.info`` holds the
        per-row statistics and status, the plan and timings.
    """
    started = time.perf_counter()
    checks.choice("nan_policy", nan_policy, ("raise", "mask"))
    rows, n_dm, n_t = _as_rows(data, nan_policy)
    dm = _dm_values(dm, n_dm)
    tsamp = checks.real("tsamp", tsamp, positive=True)
    threshold = checks.real("threshold", threshold, positive=True)
    checks.choice("snr_mode", snr_mode, ("approx", "exact"))
    levels = boxcar_plan(max_width, plan)
    if n_dm == 0 or n_t == 0:
        raise ValueError(f"data is empty (shape {(n_dm, n_t)})")
    if max_width > n_t:
        raise ValueError(f"max_width {max_width} exceeds the series length {n_t}")
    if max(lv.level + _log2_ceil(lv.wmax) for lv in levels) > STAT_BLOCK.bit_length() - 1:
        raise ValueError(f"max_width {max_width} is too large (at most {STAT_BLOCK})")
    align = max(STAT_BLOCK, LOCAL_SIZE * PER_ITEM * levels[-1].scale)
    # a chunk's level-k series must reach max(wmax, lags) samples past its
    # owned part (boxcars and autocovariance products that start inside it)
    halo = max(max(lv.wmax, _lags(lv)) << lv.level for lv in levels) + levels[-1].scale
    if chunk_samples is not None:
        chunk_samples = checks.integer("chunk_samples", chunk_samples, low=1)
    settings = _Settings(
        levels, snr_mode, bool(robust), nan_policy, float(threshold), chunk_samples, halo, align
    )
    devices = select_devices(device)
    if isinstance(rows, cl_array.Array):
        devices = devices[:1]  # the array lives on one device
    blocks = _row_blocks(devices, rows, settings)
    parts = run_on_devices(
        devices, blocks, lambda info, block: _search_rows(info, rows, block, settings)
    )
    det = tuple(np.concatenate([p.detections[i] for p in parts]) for i in range(4))
    timings = {
        stage: sum(p.timings[stage] for p in parts) for stage in ("statistics", "noise", "boxcar")
    }
    t0 = time.perf_counter()
    out = _candidates(det, dm, tsamp, cluster, dm_tol, time_tol, width_tol)
    timings["clustering"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - started
    mean, std, masked, status = (
        np.concatenate([getattr(p, name) for p in parts])
        for name in ("mean", "std", "masked", "status")
    )
    noise = {lv.level: np.concatenate([p.sigma[lv.level] for p in parts]) for lv in levels}
    out.info = SearchInfo(
        tsamp,
        dm,
        mean,
        std,
        status,
        masked,
        levels,
        noise,
        snr_mode,
        bool(robust),
        float(threshold),
        len(det[0]),
        parts[0].chunks,
        ", ".join(sorted({p.device for p in parts})),
        timings,
    )
    return out


@dataclass(frozen=True)
class _Settings:
    """What every block of rows is searched with."""

    levels: tuple[Level, ...]
    snr_mode: str
    robust: bool
    nan_policy: str
    threshold: float
    chunk_samples: int | None
    halo: int
    align: int


@dataclass(frozen=True)
class _RowsResult:
    """The search of one block of rows on one device (row indices global)."""

    mean: np.ndarray
    std: np.ndarray
    masked: np.ndarray
    status: np.ndarray
    sigma: dict[int, np.ndarray]
    detections: tuple[np.ndarray, ...]  # row, start, width, snr
    chunks: int
    device: str
    timings: dict[str, float]


def _search_rows(
    info: DeviceInfo, rows, block: tuple[int, int], settings: _Settings
) -> _RowsResult:
    """Statistics, noise and detections of rows ``[lo, hi)`` on one device."""
    lo, hi = block
    n_rows, n_t = hi - lo, rows.shape[1]
    if (lo, hi) != (0, rows.shape[0]):
        rows = rows[lo:hi]
    dev = _Device(info)
    chunks = _chunks(
        n_t, _chunk_samples(info, rows, n_rows, settings), settings.halo, settings.align
    )
    job = _job(dev, rows, settings)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    stats = _statistics(job, chunks, settings.robust)
    if settings.nan_policy == "raise" and stats.masked.any():
        first = lo + int(np.argmax(stats.masked > 0))
        raise ValueError(
            f"data has {int(stats.masked.sum())} non-finite samples in rows "
            f"{lo}..{hi - 1} (first in row {first}); pass nan_policy='mask' to "
            f"leave them out"
        )
    status = _row_status(stats.mean, stats.std, stats.masked, n_t)
    timings["statistics"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    norm = _normalisation(dev, stats, status)
    noise = _noise(job, norm, chunks, settings.robust)
    timings["noise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    row, start, width, snr = _detections(job, norm, noise, chunks, settings.threshold)
    timings["boxcar"] = time.perf_counter() - t0
    mean, std = stats.mean / stats.host_scale, stats.std / stats.host_scale  # the data's units
    return _RowsResult(
        mean,
        std,
        stats.masked,
        status,
        noise.sigma,
        (row + lo, start, width, snr),
        len(chunks),
        info.label,
        timings,
    )


def _row_blocks(devices: list[DeviceInfo], rows, settings: _Settings) -> list[tuple[int, int]]:
    """Blocks of DM rows, each searched on one device: as many rows as the
    shortest chunk of host rows fits on the smallest device, and the
    devices' shares (:func:`~clperiod.engine.scheduler.split_range`)."""
    n_dm, n_t = rows.shape
    per_block = n_dm
    if not isinstance(rows, cl_array.Array):
        smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
        per_block = items_that_fit(
            _CHUNK_BUFFERS,
            MemoryBudget.of(smallest),
            most=n_dm,
            size=_shortest_chunk(n_t, settings),
            item="DM row",
            unit="samples",
        )
    n_blocks = -(-n_dm // per_block)
    return [
        block
        for k in range(n_blocks)
        for block in split_range(
            n_dm * k // n_blocks,
            n_dm * (k + 1) // n_blocks,
            len(devices),
            min_size=MIN_ROWS_PER_BLOCK,
        )
    ]


def _chunk_samples(info: DeviceInfo, rows, n_rows: int, settings: _Settings) -> int:
    """Time samples per chunk: all of a device array's, else ``chunk_samples``,
    else the most whose device buffers for ``n_rows`` host rows, halo included,
    fit ``info`` (up to :data:`_CHUNK_BYTES_GPU`, or ``_CPU``); :func:`_chunks`
    aligns them."""
    if isinstance(rows, cl_array.Array):
        return rows.shape[1]
    if settings.chunk_samples is not None:
        return int(settings.chunk_samples)
    n_t = rows.shape[1]
    target = _CHUNK_BYTES_GPU if info.kind == "gpu" else _CHUNK_BYTES_CPU
    fit = items_that_fit(
        _CHUNK_BUFFERS,
        MemoryBudget.of(info),
        most=n_t + settings.halo,
        size=n_rows,
        least=_shortest_chunk(n_t, settings),
        target=target,
        item="sample",
        unit="DM rows",
    )
    return max(settings.align, fit - settings.halo)


def _shortest_chunk(n_t: int, settings: _Settings) -> int:
    """Samples on the device of the shortest chunk (one alignment and its halo)."""
    return min(n_t, settings.align + settings.halo)


def _candidates(det, dm, tsamp, cluster, dm_tol, time_tol, width_tol) -> Candidates:
    row, start, width, snr = det
    if cluster and len(row):
        c = clustering.cluster(
            row, start, width, snr, dm_tol=dm_tol, time_tol=time_tol, width_tol=width_tol
        )
        row, start, width, snr = c.dm_index, c.start, c.width, c.snr
        members, begin, end = c.members, c.begin, c.end
    else:
        order = np.lexsort((width, row, start + width // 2))
        row, start, width, snr = row[order], start[order], width[order], snr[order]
        members, begin, end = np.ones(len(row), np.int32), start, start + width - 1
    out = np.empty(len(row), dtype=CANDIDATE_DTYPE).view(Candidates)
    out["dm_index"] = row
    out["dm"] = dm[row] if len(row) else []
    out["sample"] = start + width // 2
    out["time"] = out["sample"] * tsamp
    out["snr"] = snr
    out["width"] = width
    out["members"] = members
    out["begin"] = begin
    out["end"] = end
    return out


# The device passes of one block of rows, in order: statistics (_statistics),
# normalisation (_normalisation), noise per level (_noise), detections per
# chunk and level (_detections). Each pass returns a frozen record the next
# ones take.


@dataclass(frozen=True)
class _Job:
    """What every pass over one block of rows on one device reads.

    ``raw`` reads the samples as the device holds them (level 0, normalised
    on the fly), ``deep[k]`` the series of DIT level k, ``plain`` decimates
    below the DIT levels. ``needed`` are the levels whose series the passes
    use, in increasing order: the plan's levels and, for ``"approx"``, those
    decimated by the widest boxcar of each level (its measured noise).
    """

    dev: _Device
    rows: np.ndarray | cl_array.Array
    levels: tuple[Level, ...]
    exact: bool
    needed: tuple[int, ...]
    raw: dict[str, cl.Kernel]
    deep: dict[int, dict[str, cl.Kernel]]
    plain: dict[str, cl.Kernel]
    no_clip: cl.Buffer  # the clip arguments of moments without clipping
    unit: cl.Buffer  # per-row scale 1 of the moments

    @property
    def n_dm(self) -> int:
        """Rows of the block."""
        return self.rows.shape[0]

    def program(self, level: int) -> dict[str, cl.Kernel]:
        """The kernels that read the series of ``level``."""
        return self.raw if level == 0 else self.deep[level]


def _job(dev: _Device, rows, settings: _Settings) -> _Job:
    """Build the programs of the plan and upload the constant arguments."""
    levels, exact = settings.levels, settings.snr_mode == "exact"
    needed = {lv.level for lv in levels} | (
        set() if exact else {lv.level + _log2_ceil(lv.wmax) for lv in levels}
    )
    raw = dev.program(True, levels[0].wmax, 1)
    deep = {lv.level: dev.program(False, lv.wmax, int(lv.widths[0])) for lv in levels[1:]}
    plain = dev.program(False, FULL_WIDTHS, 1)
    no_clip = dev.upload(np.zeros(1, np.float32))
    unit = dev.upload(np.ones(rows.shape[0], np.float32))
    return _Job(dev, rows, levels, exact, tuple(sorted(needed)), raw, deep, plain, no_clip, unit)


# ------------------------------------------------------------------ statistics
@dataclass(frozen=True)
class _Statistics:
    """Per-row mean and standard deviation, in the units on the device (the
    data times ``host_scale``), and the count of non-finite samples."""

    mean: np.ndarray
    std: np.ndarray
    masked: np.ndarray
    host_scale: np.ndarray  # per row: the device holds x * host_scale (a power of two)


def _statistics(job: _Job, chunks: list[_Chunk], robust: bool) -> _Statistics:
    """The statistics of every row over all chunks.

    A first pass also measures each row's range; rows outside the float32
    range are rescaled (:func:`_float32_scale`), rows whose squares would
    leave it get scaled moments (:func:`_moment_scale`), and the pass runs
    again; rows of ordinary scale need the one pass.
    """
    host_scale = moment_scale = np.ones(job.n_dm)
    parts = _row_moments(job, chunks, host_scale, moment_scale, None)
    host_scale, rescaled = _float32_scale(job, chunks, parts)
    moment_scale, scaled = _moment_scale(parts, host_scale)
    if rescaled or scaled:
        parts = _row_moments(job, chunks, host_scale, moment_scale, None)
    masked = parts[3]
    for _ in range(CLIP_ITERATIONS if robust else 0):
        mu, std = _mean_std(parts)
        clip = (mu.astype(np.float32), (CLIP_SIGMA * std).astype(np.float32))
        parts = _row_moments(job, chunks, host_scale, moment_scale, clip)
    mu, std = _mean_std(parts)
    return _Statistics(mu, std, masked, host_scale)


def _row_moments(
    job: _Job, chunks: list[_Chunk], host_scale: np.ndarray, moment_scale: np.ndarray, clip
) -> tuple[np.ndarray, ...]:
    """The statistics pass over every chunk: per (row, block) count, mean,
    M2, largest |x| and largest deviation, and the non-finite count per row."""
    got = []
    for c in chunks:
        x, stride = _upload(job, host_scale, c)
        got.append(_series_moments(job, x, stride, c.hi - c.lo, STAT_BLOCK, clip, moment_scale)())
    count, mean, m2, magnitude, deviation = (
        np.concatenate([g[i] for g in got], axis=1) for i in (0, 1, 2, 4, 5)
    )
    return count, mean, m2, sum(g[3] for g in got), magnitude, deviation


def _float32_scale(job: _Job, chunks: list[_Chunk], parts) -> tuple[np.ndarray, bool]:
    """The host scale of each row: a power of two (to a largest |x| in
    [0.5, 1)) for rows outside :data:`FLOAT32_RANGE` and those whose float32
    copy overflowed or lost precision, else 1; raise for a device array.
    True if any row was rescaled."""
    host_scale = np.ones(job.n_dm)
    lo, hi = FLOAT32_RANGE
    magnitude, deviation = parts[4].max(axis=1), parts[5].max(axis=1)
    outside = ~(magnitude <= hi) | ((deviation > 0) & (deviation < lo))
    if isinstance(job.rows, cl_array.Array):
        if outside.any():
            row = int(np.argmax(outside))
            raise ValueError(
                f"row {row} of the device array (largest |x| {magnitude[row]:.3g}, "
                f"deviations up to {deviation[row]:.3g}) is outside the float32 range "
                f"the search takes: |x| <= 2**100 (~1.3e30) and deviations 0 or >= "
                f"2**-100 (~7.9e-31); scale the data, or pass a host array (rows "
                f"outside are rescaled on the host)"
            )
        return host_scale, False
    suspect = outside.copy()
    if job.rows.dtype != np.float32:  # the cast may have overflowed or flushed to 0
        suspect |= (parts[3] > 0) | (magnitude < lo)
    rows = np.flatnonzero(suspect)
    if not len(rows):
        return host_scale, False
    largest = _source_magnitude(job.rows, chunks, rows)
    rescale = (
        (largest > 0) & np.isfinite(largest) & (outside[rows] | (largest > hi) | (largest < lo))
    )
    host_scale[rows[rescale]] = np.ldexp(1.0, -np.frexp(largest[rescale])[1])
    return host_scale, bool(rescale.any())


def _source_magnitude(data: np.ndarray, chunks: list[_Chunk], rows: np.ndarray) -> np.ndarray:
    """Largest finite |x| of each of ``rows`` of the host data, in float64."""
    largest = np.zeros(len(rows))
    for c in chunks:
        part = np.abs(np.asarray(data[rows, c.lo : c.hi], dtype=np.float64))
        part[~np.isfinite(part)] = 0
        largest = np.maximum(largest, part.max(axis=1, initial=0))
    return largest


def _moment_scale(parts, host_scale: np.ndarray) -> tuple[np.ndarray, bool]:
    """The scale of each row's moments: a power of two (to deviations within
    [0.5, 1)) for rows whose deviations leave :data:`MOMENT_RANGE` and that
    the host did not rescale, else 1; True if any."""
    lo, hi = MOMENT_RANGE
    deviation = parts[5].max(axis=1)
    outside = (deviation > 0) & np.isfinite(deviation) & ((deviation < lo) | (deviation > hi))
    outside &= host_scale == 1  # rescaled rows fit already
    return np.where(outside, np.ldexp(1.0, -np.frexp(deviation)[1]), 1.0), bool(outside.any())


def _series_moments(
    job: _Job, x, stride: int, n: int, block: int, clip, scale: np.ndarray | None = None
):
    """Enqueue the per (row, block of ``block`` samples) count, mean, M2,
    largest |x| and largest deviation from the block's first sample of
    ``x``'s first ``n`` samples per row, and the non-finite count per row;
    returns a function that waits for them (so several series can be
    enqueued before one wait). ``scale``: per-row power of two the kernel
    multiplies the deviations by (default 1); the results are unscaled."""
    queue = job.dev.queue
    groups = max(1, -(-n // block))
    size = job.n_dm * groups
    out = job.dev.empty(6 * size * 4)  # count, mean, M2, bad, shift, deviation
    if clip is None:
        clip_args = [job.no_clip] * 2
    else:
        clip_args = [job.dev.upload(clip[0]), job.dev.upload(clip[1])]
    factor = np.ones(job.n_dm) if scale is None else scale
    scale_buf = job.unit if (factor == 1).all() else job.dev.upload(factor.astype(np.float32))
    job.raw["row_moments"](
        queue,
        (groups * LOCAL_SIZE, job.n_dm),
        (LOCAL_SIZE, 1),
        x,
        np.int64(stride),
        np.int32(n),
        np.int32(block),
        np.int32(clip is not None),
        *clip_args,
        scale_buf,
        out,
    )
    host = np.empty((6, job.n_dm, groups), np.float32)
    copied = cl.enqueue_copy(queue, host, out, is_blocking=False)

    def wait():
        copied.wait()
        count, mean, m2, bad, shift, deviation = host.astype(np.float64)
        per_row = factor[:, None]
        deviation = deviation / per_row
        return (
            count,
            shift + mean / per_row,
            m2 / per_row**2,
            bad.sum(axis=1, dtype=np.int64),
            np.abs(shift) + deviation,
            deviation,
        )

    return wait


# --------------------------------------------------------------- normalisation
@dataclass(frozen=True)
class _Normalisation:
    """How the level-0 kernels turn the device's samples into z = (x - mean) /
    std: the per-row mean and inverse std on the device (0 for rows not OK),
    and the host scale the samples are uploaded with."""

    mean: cl.Buffer
    inv_std: cl.Buffer
    ok: np.ndarray
    host_scale: np.ndarray


def _normalisation(dev: _Device, stats: _Statistics, status: np.ndarray) -> _Normalisation:
    ok = status == RowStatus.OK
    inv = np.where(ok, 1.0 / np.where(ok, stats.std, 1.0), 0.0)
    return _Normalisation(
        dev.upload(stats.mean.astype(np.float32)),
        dev.upload(inv.astype(np.float32)),
        ok,
        stats.host_scale,
    )


# ------------------------------------------------------------------ series
def _upload(job: _Job, host_scale: np.ndarray, c: _Chunk) -> tuple[cl.Buffer, int]:
    """Rows [lo, end) of the chunk (times ``host_scale``) as a float32 device
    buffer; row stride."""
    if isinstance(job.rows, cl_array.Array):
        return job.rows.data, job.rows.shape[1]
    host = job.rows[:, c.lo : c.end]
    if (host_scale != 1).any():
        host = host * host_scale[:, None]
    with np.errstate(over="ignore"):  # overflow to inf is found by the statistics
        host = np.ascontiguousarray(host, dtype=np.float32)
    # a plain copy into a new buffer: creating a buffer from host memory
    # (COPY_HOST_PTR) ran at 1.6 GB/s on the H100, enqueue_copy at 9.8 GB/s
    buf = job.dev.empty(host.nbytes)
    write(job.dev.queue, buf, host)
    return buf, c.end - c.lo


@dataclass(frozen=True)
class _Series:
    """One level's series of a chunk on the device: ``n`` samples per row,
    rows ``stride`` samples apart."""

    buf: cl.MemoryObjectHolder
    n: int
    stride: int


def _source(norm: _Normalisation, level: int, series: _Series) -> list:
    """The leading kernel arguments that read ``series``: level 0 with the
    normalisation applied on the fly, deeper levels as they are."""
    return [series.buf, norm.mean, norm.inv_std] if level == 0 else [series.buf]


def _chunk_series(job: _Job, norm: _Normalisation, c: _Chunk) -> dict[int, _Series]:
    """Device series of the needed levels of a chunk; level 0 is the chunk
    as uploaded. Each level is summed from the deepest computed level above
    it (2**gap samples at a time)."""
    x, stride = _upload(job, norm.host_scale, c)
    series = {0: _Series(x, c.end - c.lo, stride)}
    for k in job.needed[1:]:
        prev = max(series)
        src, factor = series[prev], 1 << (k - prev)
        n_out = src.n // factor
        out = job.dev.empty(job.n_dm * n_out * 4)
        program = job.raw if prev == 0 else job.plain
        if n_out:
            program["decimate"](
                job.dev.queue,
                (_round_up(n_out, LOCAL_SIZE), job.n_dm),
                (LOCAL_SIZE, 1),
                *_source(norm, prev, src),
                np.int64(src.stride),
                np.int32(n_out),
                np.int32(factor),
                out,
                np.int64(n_out),
            )
        series[k] = _Series(out, n_out, n_out)
    return series


# ----------------------------------------------------------------------- noise
@dataclass(frozen=True)
class _Noise:
    """The noise of every boxcar width of every level, measured over all
    chunks: ``sigma[level]`` (rows x wmax) and its inverse on the device (0
    where there is no noise or the row is not OK). ``resident``: the series
    of the only chunk, kept on the device for the detections."""

    sigma: dict[int, np.ndarray]
    inv_sigma: dict[int, cl.Buffer]
    resident: dict[int, _Series] | None


def _noise(job: _Job, norm: _Normalisation, chunks: list[_Chunk], robust: bool) -> _Noise:
    """The noise of every boxcar width of every level.

    ``"exact"``: from the autocovariance of each level's series.
    ``"approx"``: Adamek & Armour eq. 5 between sigma_1, the standard
    deviation of the level's series, and sigma_Nmax, that of the series
    decimated Nmax = 2**m >= wmax times (sums of Nmax samples: the
    widest boxcar, measured at aligned starts as in AstroAccelerate).
    With ``robust``, both use the 3-sigma clipped series.
    """
    by_level = {lv.level: lv for lv in job.levels}
    parts: dict[int, list] = {k: [] for k in job.needed}
    resident = None
    for c in chunks:
        series = _chunk_series(job, norm, c)
        if len(chunks) == 1:
            resident = series
        for k in job.needed:
            own = (c.hi - c.lo) >> k
            if job.exact:
                parts[k].append(_autocovariance(job, norm, by_level[k], series[k], own))
            elif k > 0:  # level 0 is normalised: sigma_1 = 1
                parts[k].append((series[k], own))
    if job.exact:
        sigma = {lv.level: _exact_sigma(parts[lv.level], lv, chunks) for lv in job.levels}
    else:
        std = _level_std(job, {k: pieces for k, pieces in parts.items() if k > 0}, robust)
        sigma = {}
        for lv in job.levels:
            m = _log2_ceil(lv.wmax)
            sigma[lv.level] = _approx_sigma(std[lv.level], std[lv.level + m], lv.wmax, 1 << m)
    inv_sigma = {}
    for level, s in sigma.items():
        inv = np.zeros(s.shape, np.float32)  # 0 where no noise or the row is not OK
        np.divide(1.0, s, out=inv, where=(s > 0) & norm.ok[:, None], casting="unsafe")
        inv_sigma[level] = job.dev.upload(inv)
    return _Noise(sigma, inv_sigma, resident)


def _exact_sigma(parts: list[np.ndarray], lv: Level, chunks: list[_Chunk]) -> np.ndarray:
    """The noise of the level's boxcars from its per-chunk autocovariance sums."""
    sums = np.concatenate(parts, axis=1).sum(axis=1)
    lags = np.arange(sums.shape[1])
    terms = sum((c.hi - c.lo) >> lv.level for c in chunks)
    return _boxcar_sigma(sums / np.maximum(terms - lags, 1), lv)


def _level_std(
    job: _Job, parts: dict[int, list[tuple[_Series, int]]], robust: bool
) -> dict[int, np.ndarray]:
    """Standard deviation of each level's series (level 0: 1, it is
    normalised; clipped when robust), from the moments of every chunk's
    ``(series, owned samples)``."""
    level_std = {0: np.ones(job.n_dm)}
    if not parts:  # max_width 1: level 0 alone
        return level_std
    clip: dict[int, tuple[np.ndarray, np.ndarray] | None] = {k: None for k in parts}
    for _ in range(1 + (CLIP_ITERATIONS if robust else 0)):
        # every level and piece enqueued, then one wait
        pending = {
            k: [
                _series_moments(job, s.buf, s.stride, own, STAT_BLOCK >> k, clip[k])
                for s, own in pieces
            ]
            for k, pieces in parts.items()
        }
        got = {k: [w() for w in waits] for k, waits in pending.items()}
        # all levels merged at once: (count, mean, M2) x level x row x
        # block, levels with fewer blocks padded with empty ones
        blocks = max(sum(g[0].shape[1] for g in pieces) for pieces in got.values())
        stacked = np.zeros((3, len(got), job.n_dm, blocks))
        for j, pieces in enumerate(got.values()):
            for i in range(3):
                part = np.concatenate([g[i] for g in pieces], axis=1)
                stacked[i, j, :, : part.shape[1]] = part
        total, mu, spread = _merge_moments(*stacked)
        std = np.sqrt(spread / np.maximum(total, 1))
        for j, k in enumerate(got):
            clip[k] = (mu[j].astype(np.float32), (CLIP_SIGMA * std[j]).astype(np.float32))
            level_std[k] = std[j]
    return level_std


def _autocovariance(
    job: _Job, norm: _Normalisation, lv: Level, series: _Series, own: int
) -> np.ndarray:
    """Per-segment sums of z[t] z[t + l]: ``(n_dm, segments, lags)``."""
    queue = job.dev.queue
    segment = STAT_BLOCK >> lv.level  # level samples per work-group
    groups = max(1, -(-own // segment))
    out = job.dev.empty(job.n_dm * groups * FULL_WIDTHS * 4)
    blocks = []
    for lag0 in range(0, _lags(lv), FULL_WIDTHS):
        job.program(lv.level)["autocovariance"](
            queue,
            (groups * LOCAL_SIZE, job.n_dm),
            (LOCAL_SIZE, 1),
            *_source(norm, lv.level, series),
            np.int64(series.stride),
            np.int32(series.n),
            np.int32(own),
            np.int32(lag0),
            np.int32(segment),
            out,
        )
        host = np.empty((job.n_dm, groups, FULL_WIDTHS), np.float32)
        cl.enqueue_copy(queue, host, out)
        blocks.append(host.astype(np.float64))
    return np.concatenate(blocks, axis=2)[:, :, : _lags(lv)]


# ------------------------------------------------------------------ detections
@dataclass(frozen=True)
class _Boxcars:
    """One level's boxcars over one chunk: the series, the starts it owns and
    the native sample of its first."""

    lv: Level
    series: _Series
    own: int
    offset: int


@dataclass(frozen=True)
class _DetectionList:
    """A boxcar launch's detections on the device: the count found (which
    may exceed ``capacity``) and the row, start, width and snr buffers."""

    count: cl_array.Array
    capacity: int
    buffers: list[cl.MemoryObjectHolder]


def _detections(
    job: _Job, norm: _Normalisation, noise: _Noise, chunks: list[_Chunk], threshold: float
) -> tuple[np.ndarray, ...]:
    """All detections (row, start, width, snr) over chunks and levels."""
    found: list[list[np.ndarray]] = [[], [], [], []]
    for c in chunks:
        series = noise.resident if noise.resident is not None else _chunk_series(job, norm, c)
        runs = []
        for lv in job.levels:  # every level enqueued, then one wait for the counts
            run = _Boxcars(lv, series[lv.level], (c.hi - c.lo) >> lv.level, c.lo)
            runs.append((run, _boxcar(job, norm, noise, run, threshold, 1 << 16)))
        counts = [int(dets.count.get()[0]) for _, dets in runs]
        for (run, dets), count in zip(runs, counts, strict=True):
            if count > dets.capacity:  # the list overflowed: run again with room for all
                dets = _boxcar(job, norm, noise, run, threshold, count)
            for f, p in zip(found, _fetch(job.dev, dets, count), strict=True):
                f.append(p)
    return tuple(np.concatenate(f) for f in found)


def _boxcar(
    job: _Job, norm: _Normalisation, noise: _Noise, run: _Boxcars, threshold: float, capacity: int
) -> _DetectionList:
    """Enqueue one level's boxcars over one chunk."""
    queue, lv, stride = job.dev.queue, run.lv, run.series.stride
    cover = LOCAL_SIZE * BOX_PER_ITEM * job.dev.box_tiles(lv.wmax)  # starts per group
    groups = max(1, -(-run.own // cover))
    count = cl_array.zeros(queue, 1, np.int32, allocator=job.dev.pool)
    outs = [job.dev.empty(capacity * size) for size in (4, 8, 4, 4)]
    job.program(lv.level)["boxcar"](
        queue,
        (groups * LOCAL_SIZE, job.n_dm),
        (LOCAL_SIZE, 1),
        *_source(norm, lv.level, run.series),
        np.int64(stride),
        np.int32(run.series.n),
        np.int32(0),
        np.int32(run.own),
        noise.inv_sigma[lv.level],
        np.float32(threshold),
        np.int32(lv.scale),
        np.int64(run.offset),
        np.int32(stride % 4 == 0),
        count.data,
        np.int32(capacity),
        *outs,
    )
    return _DetectionList(count, capacity, outs)


def _fetch(dev: _Device, dets: _DetectionList, found: int) -> list[np.ndarray]:
    host: list[np.ndarray] = [
        np.empty(found, dtype) for dtype in (np.int32, np.int64, np.int32, np.float32)
    ]
    if found:
        for h, o in zip(host, dets.buffers, strict=True):
            cl.enqueue_copy(dev.queue, h, o)
    dev.queue.finish()
    return host


def _lags(lv: Level) -> int:
    """Autocovariance lags needed for the level (a multiple of 32)."""
    return _round_up(lv.wmax, FULL_WIDTHS)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def _log2_ceil(n: int) -> int:
    return int(n - 1).bit_length()


def _boxcar_sigma(gamma: np.ndarray, lv: Level) -> np.ndarray:
    """Noise of the boxcar sums of widths 1..wmax of a series with
    autocovariance ``gamma`` (rows x lags): ``(n_dm, wmax)``."""
    w = np.arange(1, lv.wmax + 1)
    lags = np.arange(gamma.shape[1])
    # var(B_w) = w g0 + 2 sum_{l=1}^{w-1} (w - l) g_l
    weights = np.clip(w[:, None] - lags[None, :], 0, None) * np.where(lags == 0, 1.0, 2.0)
    return np.sqrt(np.clip(gamma @ weights.T, 0, None))


def _approx_sigma(s1: np.ndarray, s_max: np.ndarray, wmax: int, n_max: int) -> np.ndarray:
    """Adamek & Armour eq. 5: the noise of widths 1..wmax, linear in N between
    sqrt(N) s1 and the measured noise ``s_max`` of the N = ``n_max`` boxcar."""
    w = np.arange(1, wmax + 1)
    # float32, as the device uses it (the tables are n_dm x wmax per level)
    sigma = np.multiply.outer(s1.astype(np.float32), np.sqrt(w, dtype=np.float32))
    if n_max > 1:
        slope = ((s_max - np.sqrt(n_max) * s1) / (n_max - 1)).astype(np.float32)
        sigma += np.multiply.outer(slope, (w - 1).astype(np.float32))
    return sigma
