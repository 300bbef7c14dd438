"""Device-memory planning: one plan for every algorithm.

A method describes the device buffers that one batch of its work holds
(:class:`Buffer`: bytes fixed, per item and per unit of the items' size, where
an item is a light curve, a DM row, a model or a frequency, and its units
are points, samples or observations); the planner decides how much work a
batch takes. Every plan keeps to three rules:

* an item is never split across batches (:func:`batch_bounds` cuts a ragged
  run of items at item boundaries; :func:`items_that_fit` counts equal
  items);
* all buffers of a batch together fit a :class:`MemoryBudget`:
  :data:`DEVICE_FRACTION` of the device's memory, less what the caller
  already holds there;
* no single buffer exceeds the device's maximum allocation.

An item too large for the device alone is a :class:`MemoryError` naming it.
Host memory is planned too: a CPU device's buffers are host memory, so its
plans stay inside what the host can spare (:func:`plannable_memory`); the
host side of transfers (page-locked staging) is :mod:`clperiod.engine.staging`.
:func:`plan_batches` is the plan of tiled frequency kernels over a ragged
catalog (Lomb-Scargle): batches of objects sharing one upload, and the
launches (chunks) that cover their frequency tiles, sized so that with
periodograms returned the output blocks fit and copies overlap compute.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from clperiod.engine import staging
from clperiod.engine.devices import DeviceInfo

__all__ = [
    "DEVICE_FRACTION",
    "OVERLAP_CHUNKS",
    "Batch",
    "Buffer",
    "Chunk",
    "KernelShape",
    "MemoryBudget",
    "batch_bounds",
    "held_bytes",
    "items_that_fit",
    "plan_batches",
    "plannable_memory",
    "tiled_buffers",
]

#: Fraction of a device's memory that the buffers of one batch may use: the
#: rest stays free for the runtime, compiled programs, the buffers of a
#: batch still in flight and other work on the device.
DEVICE_FRACTION = 0.5
#: A CPU device's plans use at most this fraction of the available host
#: memory (the rest: the host's own arrays, kernel binaries, the runtime).
HOST_PLAN_FRACTION = 0.5
#: Periodogram output is produced in about this many launches, so that the
#: device-to-host copy of one overlaps the computation of the next.
OVERLAP_CHUNKS = 8
#: No overlap chunk is made smaller than this (copies of small blocks are
#: dominated by per-transfer latency).
MIN_CHUNK_BYTES = 16 << 20


@dataclass(frozen=True)
class Buffer:
    """A device buffer that a batch holds, as a method describes it.

    One allocation takes ``fixed + per_item * items + per_unit * units``
    bytes for a batch of ``items`` items holding ``units`` units in all;
    ``count`` such allocations are made (arrays of one shape, or one per
    batch in flight).
    """

    name: str
    per_item: int = 0
    per_unit: int = 0
    fixed: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if min(self.per_item, self.per_unit, self.fixed) < 0 or self.count < 1:
            raise ValueError(f"buffer {self.name!r} has negative bytes or a count below 1: {self}")

    def nbytes(self, items: int, units: int) -> int:
        """Bytes of one allocation for ``items`` items of ``units`` units in all."""
        return self.fixed + self.per_item * items + self.per_unit * units


def held_bytes(buffers: Sequence[Buffer], items: int, units: int) -> int:
    """Bytes that ``buffers`` take together for ``items`` items of ``units`` units."""
    return sum(b.count * b.nbytes(items, units) for b in buffers)


@dataclass(frozen=True)
class MemoryBudget:
    """Device memory that the buffers of one batch may use.

    Attributes
    ----------
    total : int
        Bytes all buffers of a batch may take together.
    max_alloc : int
        Bytes of the largest single buffer (the device's maximum allocation).
    device : str
        The device's label, for messages.
    """

    total: int
    max_alloc: int
    device: str

    @classmethod
    def of(
        cls, info: DeviceInfo, *, held: int = 0, host_reserved: int = 0, share: float = 1.0
    ) -> MemoryBudget:
        """The budget of ``info``: ``share`` (the part of the device one of
        several calls running at once may use) of :data:`DEVICE_FRACTION` of
        :func:`plannable_memory` (``host_reserved``: bytes of results the
        host allocates beside a CPU device's buffers), less ``held`` bytes
        that the caller already holds on the device."""
        total = int(share * DEVICE_FRACTION * plannable_memory(info, host_reserved)) - held
        return cls(max(0, total), int(info.max_alloc), info.label)


def plannable_memory(device: DeviceInfo, host_reserved: int = 0) -> int:
    """Global memory a plan may count on: all of it on a GPU; on a CPU device,
    whose buffers are host memory, at most ``HOST_PLAN_FRACTION`` of
    :func:`~clperiod.engine.staging.available_host_memory` less
    ``host_reserved`` (results the host allocates beside them). Under an
    address-space limit PoCL aborts the process instead of failing an
    allocation (or loading a kernel), so its plans must stay well inside it."""
    if device.kind != "cpu":
        return device.global_mem
    room = staging.available_host_memory() - host_reserved
    return max(0, min(device.global_mem, int(HOST_PLAN_FRACTION * room)))


def batch_bounds(
    sizes: np.ndarray,
    buffers: Sequence[Buffer],
    budget: MemoryBudget,
    *,
    target: int | None = None,
    max_items: int | None = None,
    max_units: int | None = None,
    workers: int = 1,
    item: str = "object",
    unit: str = "points",
) -> list[tuple[int, int]]:
    """Cut a run of items into consecutive batches whose buffers fit ``budget``.

    A batch grows by whole items while its buffers together fit ``target``
    bytes, none exceeds ``budget.max_alloc``, and it holds at most
    ``max_items`` items and ``max_units`` units. An item is never split: one
    that alone exceeds these limits forms a batch of its own, which must fit
    the whole budget.

    Parameters
    ----------
    sizes
        Units of each item (points of each light curve, ...), in order.
    buffers
        What a batch holds on the device.
    budget
        The device memory to fit.
    target
        Bytes a batch of several items may take (a method's preferred batch
        size; default, and at most, ``budget.total``).
    max_items, max_units
        Most items and units of a batch of several items (default: no limit).
    workers
        Threads that share the batches. Where the limits cut the run into
        more batches than ``workers`` and not a multiple of them, it is cut
        again into the next multiple of batches of about equal units (where
        those fit), so that the threads finish together instead of one
        running the last batch alone.
    item, unit
        What an item and its unit are called, for messages.

    Returns
    -------
    list of (int, int)
        ``(start, stop)`` of each batch, covering every item once, in order.

    Raises
    ------
    MemoryError
        Naming the first item whose buffers alone exceed the budget or the
        largest allocation.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    units_before = np.concatenate([[0], np.cumsum(sizes)])
    limit = budget.total if target is None else min(target, budget.total)
    rules = _rules(buffers, budget.max_alloc, limit)
    if max_items is not None:
        rules.append(_Rule(1, 0, max_items))
    if max_units is not None:
        rules.append(_Rule(0, 1, max_units))
    reaches = [rule.reach(units_before) for rule in rules]
    bounds: list[tuple[int, int]] = []
    start, n_items = 0, len(sizes)
    while start < n_items:
        stop = min([n_items, *(reach(start) for reach in reaches)])
        if stop <= start:
            stop = start + 1
            _require_fits(
                buffers,
                budget,
                1,
                int(sizes[start]),
                f"{item} {start} ({int(sizes[start])} {unit})",
            )
        bounds.append((start, stop))
        start = stop
    if len(bounds) > workers and len(bounds) % workers:
        even = _even_bounds(units_before, -(-len(bounds) // workers) * workers)
        if all(_within(start, stop, reaches) for start, stop in even):
            bounds = even
    return bounds


def _within(start: int, stop: int, reaches: list[Callable[[int], int]]) -> bool:
    """Whether items ``[start, stop)`` form a batch that every rule allows (one
    item always does)."""
    return stop - start == 1 or all(stop <= reach(start) for reach in reaches)


def _even_bounds(units_before: np.ndarray, batches: int) -> list[tuple[int, int]]:
    """Up to ``batches`` consecutive runs of items of about equal units
    (``units_before``: units before each item), each cut at the first item
    boundary at or past its share."""
    n_items = len(units_before) - 1
    shares = units_before[-1] * np.arange(1, batches) / batches
    cuts = np.searchsorted(units_before, shares)
    edges = np.unique(np.clip(np.concatenate([[0], cuts, [n_items]]), 0, n_items))
    return list(itertools.pairwise(edges.tolist()))


def items_that_fit(
    buffers: Sequence[Buffer],
    budget: MemoryBudget,
    *,
    most: int,
    size: int = 0,
    least: int = 1,
    target: int | None = None,
    item: str = "item",
    unit: str = "units",
) -> int:
    """How many equal items of ``size`` units each one batch takes.

    The most, up to ``most``, whose buffers together fit ``target`` bytes
    (default, and at most, ``budget.total``) with none over
    ``budget.max_alloc``; never fewer than ``least`` (or ``most`` if
    smaller), which must fit the whole budget.

    Parameters
    ----------
    buffers
        What a batch holds on the device.
    budget
        The device memory to fit.
    most, least
        Bounds of the count.
    size
        Units of each item.
    target
        Bytes a batch may take (a method's preferred batch size).
    item, unit
        What an item (singular; an "s" makes the plural) and its unit are
        called, for messages.

    Returns
    -------
    int
        Items per batch.

    Raises
    ------
    MemoryError
        When ``least`` items do not fit the budget or the largest allocation.
    """
    least = min(least, most)
    limit = budget.total if target is None else min(target, budget.total)
    count = most
    for rule in _rules(buffers, budget.max_alloc, limit):
        per_item = rule.per_item + rule.per_unit * size
        if rule.room < 0:
            count = 0
        elif per_item:
            count = min(count, rule.room // per_item)
    if count >= least:
        return count
    plural = "" if least == 1 else "s"
    _require_fits(
        buffers,
        budget,
        least,
        least * size,
        f"a batch of {least} {item}{plural}" + (f" of {size} {unit}" if size else ""),
    )
    return least


@dataclass(frozen=True)
class _Rule:
    """``per_item * items + per_unit * units <= room`` for a batch."""

    per_item: int
    per_unit: int
    room: int

    def reach(self, units_before: np.ndarray) -> Callable[[int], int]:
        """The furthest stop of a batch starting at ``start`` under this rule,
        as a function of ``start`` (``units_before``: units before each item)."""
        n_items = len(units_before) - 1
        if self.room < 0:
            return lambda start: start
        if self.per_unit == 0:
            if self.per_item == 0:
                return lambda start: n_items
            return lambda start: start + self.room // self.per_item
        if self.per_item == 0:
            cost, room = units_before, self.room // self.per_unit
        else:
            cost = self.per_item * np.arange(n_items + 1) + self.per_unit * units_before
            room = self.room
        return lambda start: int(np.searchsorted(cost, cost[start] + room, "right")) - 1


def _rules(buffers: Sequence[Buffer], max_alloc: int, limit: int) -> list[_Rule]:
    """Each buffer under ``max_alloc``, all together under ``limit``."""
    rules = [_Rule(b.per_item, b.per_unit, max_alloc - b.fixed) for b in buffers]
    rules.append(
        _Rule(
            sum(b.count * b.per_item for b in buffers),
            sum(b.count * b.per_unit for b in buffers),
            limit - sum(b.count * b.fixed for b in buffers),
        )
    )
    return rules


def _require_fits(
    buffers: Sequence[Buffer], budget: MemoryBudget, items: int, units: int, what: str
) -> None:
    """Raise a :class:`MemoryError` naming ``what`` unless its buffers fit ``budget``."""
    for buffer in buffers:
        nbytes = buffer.nbytes(items, units)
        if nbytes > budget.max_alloc:
            raise MemoryError(
                f"{what} needs a buffer of {_size(nbytes)} ({buffer.name}), more than the "
                f"largest allocation of {budget.device} ({_size(budget.max_alloc)})"
            )
    nbytes = held_bytes(buffers, items, units)
    if nbytes > budget.total:
        raise MemoryError(
            f"{what} needs {_size(nbytes)} of device memory, more than fits in the "
            f"{_size(budget.total)} a batch may use on {budget.device}"
        )


def _size(nbytes: int) -> str:
    """``nbytes`` for a message: GiB, MiB or bytes."""
    if nbytes >= 1 << 30:
        return f"{nbytes / 2**30:.2f} GiB"
    if nbytes >= 1 << 20:
        return f"{nbytes / 2**20:.1f} MiB"
    return f"{nbytes} bytes"


# tiled frequency kernels over a ragged catalog


@dataclass(frozen=True)
class KernelShape:
    """Per-device launch shape of a tiled frequency kernel."""

    wg: int  # work-group size
    m: int  # frequencies per work-item

    @property
    def owned(self) -> int:
        """Frequencies owned by one tile (two halo bins are recomputed)."""
        return self.wg * self.m - 2

    def n_tiles(self, nf: int) -> int:
        """Tiles needed to cover ``nf`` frequencies."""
        return -(-nf // self.owned)


@dataclass(frozen=True)
class Chunk:
    """One kernel launch: objects ``[obj_lo, obj_hi)`` of the batch (batch-relative)
    and the tiles ``[tile_first, tile_first + tile_count)``."""

    obj_lo: int
    obj_hi: int
    tile_first: int
    tile_count: int


@dataclass(frozen=True)
class Batch:
    """Objects ``[obj_start, obj_stop)`` that share one device upload, and the
    launches that cover them."""

    obj_start: int
    obj_stop: int
    chunks: tuple[Chunk, ...]

    @property
    def n_objects(self) -> int:
        return self.obj_stop - self.obj_start


def plan_batches(
    lengths: np.ndarray,
    nf: int,
    shape: KernelShape,
    budget: MemoryBudget,
    *,
    point_bytes: int,
    real_bytes: int,
    top_k: int,
    periodogram: bool,
    min_batches: int = 1,
) -> list[Batch]:
    """Split ``len(lengths)`` objects into batches of a tiled frequency kernel.

    A batch's inputs and peak arrays (:func:`tiled_buffers`) take at most
    half of ``budget``; its periodogram blocks, when returned, the rest.

    Parameters
    ----------
    lengths
        Points per object, in catalog order.
    nf
        Number of grid frequencies.
    shape
        Kernel launch shape (tile size).
    budget
        Device memory of a batch (:meth:`MemoryBudget.of` the smallest device).
    point_bytes
        Device bytes per observation, in arrays of at most a quarter of them each.
    real_bytes
        Size of the kernel's real type.
    top_k
        Peaks kept per object.
    periodogram
        Whether each object's full periodogram is written.
    min_batches
        Split into at least this many batches of about equal points (when
        there are enough objects), so that several devices share the work.

    Returns
    -------
    list of Batch
        Covering every object once, in order.

    Raises
    ------
    MemoryError
        Naming the first object whose buffers alone exceed the budget.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n_tiles = shape.n_tiles(nf)
    buffers = tiled_buffers(n_tiles, point_bytes=point_bytes, real_bytes=real_bytes, top_k=top_k)
    # with periodograms, the objects' blocks of one tile each fit an allocation
    max_objects = budget.max_alloc // (shape.owned * real_bytes) if periodogram else None
    share = -(-int(np.sum(lengths)) // max(1, min_batches))  # points per batch at most
    bounds = batch_bounds(
        lengths, buffers, budget, target=budget.total // 2, max_items=max_objects, max_units=share
    )
    batches = []
    for start, stop in bounds:
        objects = stop - start
        chunks: tuple[Chunk, ...] = (Chunk(0, objects, 0, n_tiles),)
        if periodogram:
            used = int(np.sum(lengths[start:stop])) * point_bytes
            room = min(budget.max_alloc, max(budget.total - used, budget.total // 4) // 2)
            chunks = _periodogram_chunks(objects, nf, n_tiles, shape, real_bytes, room)
        batches.append(Batch(start, stop, chunks))
    return batches


def tiled_buffers(
    n_tiles: int, *, point_bytes: int, real_bytes: int, top_k: int
) -> tuple[Buffer, ...]:
    """The buffers of a batch of a tiled frequency kernel (per object: points
    of ``point_bytes`` over four or more arrays, layout and status, and the
    top-k values and indices of every tile and of the object)."""
    peaks = top_k * (real_bytes + 4)
    return (
        Buffer("per-point inputs", per_unit=point_bytes // 4, count=4),
        Buffer("per-object layout and status", per_item=4, count=4),
        Buffer("per-tile peaks", per_item=n_tiles * peaks),
        Buffer("peaks", per_item=peaks),
    )


def _periodogram_chunks(
    objects: int, nf: int, n_tiles: int, shape: KernelShape, real_bytes: int, room: int
) -> tuple[Chunk, ...]:
    """Launches whose periodogram blocks fit ``room`` bytes of device memory.

    Whole rows (objects) are grouped while a row fits, so each block is a
    contiguous run of result rows; about :data:`OVERLAP_CHUNKS` blocks are made
    so copies overlap compute. A single row larger than ``room`` is cut into
    tile ranges.
    """
    row_bytes = n_tiles * shape.owned * real_bytes
    target = max(objects * row_bytes // OVERLAP_CHUNKS, MIN_CHUNK_BYTES)
    block = min(room, target)
    if row_bytes <= block:
        rows = max(1, block // row_bytes)
        return tuple(
            Chunk(lo, min(lo + rows, objects), 0, n_tiles) for lo in range(0, objects, rows)
        )
    tiles = max(1, block // (shape.owned * real_bytes))
    return tuple(
        Chunk(obj, obj + 1, first, min(tiles, n_tiles - first))
        for obj in range(objects)
        for first in range(0, n_tiles, tiles)
    )


def __getattr__(name: str) -> object:
    """``available_host_memory`` moved to :mod:`clperiod.engine.staging`; the
    old ``clperiod.planning`` path keeps it with a DeprecationWarning."""
    if name == "available_host_memory":
        import warnings

        warnings.warn(
            "clperiod.engine.planner.available_host_memory moved to "
            "clperiod.engine.staging.available_host_memory",
            DeprecationWarning,
            stacklevel=2,
        )
        return staging.available_host_memory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
