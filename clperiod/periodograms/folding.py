"""Phase folding and stable per-(object, frequency) sorting on the device.

The building block of the SuperSmoother period search: for every object and
trial frequency, fold the light curve (phase of ``t - t0``, ``t0`` = earliest
time of the object) and sort the points by phase, ties in original order.
Light curves that fit the device's local memory are folded and sorted by one
work-group each with a bitonic network (``cl_kernels/sort.mako``); longer ones
are folded by an element-wise kernel and sorted with two stable passes of
:class:`pyopencl.algorithm.RadixSort` (phase bits, then segment number).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from pyopencl.algorithm import RadixSort

from clperiod import checks
from clperiod.catalog import Catalog
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo, get_queue, require_fp64, select_devices, upload
from clperiod.grid import FrequencyArray, FrequencyGrid, split_float32

__all__ = [
    "FoldedSorted",
    "FoldInputs",
    "FoldSorter",
    "bitonic_capacity",
    "fold_and_sort",
    "SortMethod",
]

SortMethod = Literal["auto", "bitonic", "radix"]

#: Largest capacity of the local-memory (bitonic) sort, in points; a device
#: holds less when its local memory is smaller (:func:`bitonic_capacity`).
BITONIC_MAX = 4096
#: Frequencies per launch of :func:`fold_and_sort` (bounds the host copies).
_FREQS_PER_LAUNCH = 4096


def bitonic_capacity(info: DeviceInfo) -> int:
    """Most points per light curve the local-memory sort holds on ``info``
    (8-byte packed keys in local memory, a power of two)."""
    fits = max(1, (info.local_mem - 1024) // 8)
    return min(BITONIC_MAX, 1 << (fits.bit_length() - 1))


@dataclass(frozen=True)
class FoldedSorted:
    """Sorted phases and permutations for every (object, frequency).

    Object ``k`` at grid frequency ``j`` occupies
    ``phase[base[k] + j * n_k : base[k] + (j + 1) * n_k]``; ``order`` holds the
    matching row indices within the object (``0 .. n_k - 1``).
    """

    phase: np.ndarray
    order: np.ndarray
    base: np.ndarray
    lengths: np.ndarray
    nf: int
    method: str

    def object(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(phase, order)`` of object ``k``, each of shape ``(nf, n_k)``."""
        n = int(self.lengths[k])
        span = slice(int(self.base[k]), int(self.base[k]) + self.nf * n)
        return self.phase[span].reshape(self.nf, n), self.order[span].reshape(self.nf, n)


def fold_and_sort(
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    *,
    precision: Literal["fp64", "fp32"] = "fp64",
    method: SortMethod = "auto",
    device=None,
) -> FoldedSorted:
    """Fold every object at every grid frequency and sort by phase (stable).

    Parameters
    ----------
    catalog
        The light curves (only ``t`` is used).
    grid
        Trial frequencies: a uniform grid, or any array (folded in its
        order).
    precision
        Type of the phases; fp32 phases are formed from double-single inputs
        and stay accurate to ~1e-7 cycles for raw MJD/BJD times.
    method
        ``"bitonic"`` (local memory; at most :data:`BITONIC_MAX` points per
        object), ``"radix"`` (any length) or ``"auto"`` (bitonic when every
        object fits).
    device
        Device selection; the first selected device is used.

    Returns
    -------
    FoldedSorted
    """
    checks.choice("precision", precision, ("fp64", "fp32"))
    checks.choice("method", method, get_args(SortMethod))
    info = select_devices(device)[0]
    fp64 = precision == "fp64"
    if fp64:
        require_fp64(info)
    lengths = catalog.lengths
    longest = int(lengths.max(initial=0))
    capacity = bitonic_capacity(info)
    if method == "auto":
        method = "bitonic" if longest <= capacity else "radix"
    if method == "bitonic" and longest > capacity:
        raise ValueError(
            f"the bitonic sort holds at most {capacity} points on this device; got {longest}"
        )

    dtype = np.float64 if fp64 else np.float32
    base = (grid.nf * catalog.offsets[:-1]).astype(np.int64)
    phase = np.empty(grid.nf * len(catalog.t), dtype=dtype)
    order = np.empty(grid.nf * len(catalog.t), dtype=np.int32)
    if len(catalog.t):
        queue = get_queue(info)
        inputs = FoldInputs(queue, catalog, grid, fp64)
        sorter = FoldSorter(info, queue, inputs, method)
        for k0 in range(0, grid.nf, _FREQS_PER_LAUNCH):
            nf = min(_FREQS_PER_LAUNCH, grid.nf - k0)
            chunk_base = inputs.upload((nf * catalog.offsets[:-1]).astype(np.int64))
            chunk_phase, chunk_order = sorter.run(k0, nf, chunk_base)
            _scatter(chunk_phase.get(), phase, catalog, grid.nf, k0, nf)
            _scatter(chunk_order.get(), order, catalog, grid.nf, k0, nf)
    return FoldedSorted(phase, order, base, lengths, grid.nf, method)


def _scatter(chunk: np.ndarray, out: np.ndarray, catalog: Catalog, nf_all: int, k0: int, nf: int):
    """Place a frequency chunk (layout with ``nf`` frequencies) into the full layout."""
    for k, n in enumerate(catalog.lengths):
        n = int(n)
        src = int(nf * catalog.offsets[k])
        dst = int(nf_all * catalog.offsets[k]) + k0 * n
        out[dst : dst + nf * n] = chunk[src : src + nf * n]


class FoldInputs:
    """Device inputs of the fold kernels: phase arguments and object layout.

    Times are taken relative to each object's earliest one (in float64);
    fp64 and ``compat`` kernels get them in the kernel type with ``fmin`` and
    ``df`` (or the array of frequencies), other fp32 kernels the double-single
    phase inputs of :meth:`~clperiod.FrequencyGrid.phase_inputs` (or the
    float32 pairs of the times and of the frequencies,
    :func:`clperiod.grid.split_float32`). ``arbitrary`` says which
    (the kernels' render parameter). With ``pending``, the uploads are only
    queued, as :func:`clperiod.engine.devices.upload` queues them.
    """

    def __init__(
        self,
        queue: cl.CommandQueue,
        catalog: Catalog,
        grid: FrequencyGrid | FrequencyArray,
        fp64: bool,
        compat: bool = False,
        pending: list[cl.Event] | None = None,
    ):
        self.queue, self.pending = queue, pending
        self.fp64, self.compat = fp64, compat
        self.arbitrary = not isinstance(grid, FrequencyGrid)
        self.real = "double" if fp64 else "float"
        self.lengths_host = catalog.lengths
        owner = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
        tau = catalog.t - catalog.start_times()[owner]
        dtype = np.float64 if fp64 else np.float32
        if isinstance(grid, FrequencyGrid) and (fp64 or compat):
            self.phase_args = [self.upload(tau.astype(dtype)), dtype(grid.fmin), dtype(grid.df)]
        elif isinstance(grid, FrequencyGrid):
            self.phase_args = [self.upload(a) for a in grid.phase_inputs(tau)]
        elif fp64 or compat:
            self.phase_args = [self.upload(a.astype(dtype)) for a in (tau, grid.frequencies())]
        else:
            pairs = (*split_float32(tau), *split_float32(grid.frequencies()))
            self.phase_args = [self.upload(a) for a in pairs]
        self.starts = self.upload(catalog.offsets[:-1].astype(np.int32))
        self.lengths = self.upload(catalog.lengths.astype(np.int32))

    def upload(self, array: np.ndarray) -> cl.Buffer:
        return upload(self.queue, array, self.pending)


class FoldSorter:
    """Fold and sort every object of a :class:`FoldInputs` on one device,
    leaving phases and permutations in device arrays.

    ``method`` is ``"bitonic"`` (every object must fit
    :func:`bitonic_capacity`) or ``"radix"``.
    """

    def __init__(
        self,
        info: DeviceInfo,
        queue: cl.CommandQueue,
        inputs: FoldInputs,
        method: str,
        allocator=None,
    ):
        self.info, self.queue, self.inputs, self.method = info, queue, inputs, method
        self.allocator = allocator
        self.dtype = np.float64 if inputs.fp64 else np.float32
        self.longest = int(inputs.lengths_host.max(initial=1))
        self.nmax = max(2, 1 << (self.longest - 1).bit_length())
        self.wg = min(256, max(32, self.nmax // 2))

    def run(self, k0: int, nf: int, base: cl.Buffer) -> tuple[cl_array.Array, cl_array.Array]:
        """Phases and permutations of frequencies ``k0 .. k0 + nf - 1``, object
        ``o`` at frequency ``j`` in ``[base[o] + j n_o, base[o] + (j + 1) n_o)``."""
        return (self._bitonic if self.method == "bitonic" else self._radix)(k0, nf, base)

    def gather(
        self,
        k0: int,
        nf: int,
        base: cl.Buffer,
        y: cl.Buffer,
        w: cl.Buffer,
        out: tuple[cl.Buffer, cl.Buffer, cl.Buffer],
    ) -> None:
        """Fold, sort (bitonic only) and write phases, ``y`` and ``w`` in phase
        order into the coalesced layout: point ``i`` of object ``o`` at
        frequency ``j`` at ``base[o] + i nf + j``."""
        inputs = self.inputs
        kernel = self._kernel("fold_sort_gather")
        kernel.set_args(
            *inputs.phase_args,
            y,
            w,
            inputs.starts,
            inputs.lengths,
            base,
            np.int32(k0),
            np.int32(nf),
            *out,
        )
        groups = len(inputs.lengths_host) * nf
        cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * self.wg,), (self.wg,))

    def _kernel(self, name: str) -> cl.Kernel:
        (kernel,) = kernels.get_kernels(
            self.queue.context,
            "sort",
            (name,),
            real=self.inputs.real,
            wg=self.wg,
            nmax=min(self.nmax, BITONIC_MAX),
            compat=self.inputs.compat,
            arbitrary=self.inputs.arbitrary,
        )
        return kernel

    def _bitonic(self, k0, nf, base):
        inputs = self.inputs
        kernel = self._kernel("fold_sort_local")
        total = max(nf * int(inputs.lengths_host.sum()), 1)
        phase = cl_array.empty(self.queue, total, self.dtype, allocator=self.allocator)
        order = cl_array.empty(self.queue, total, np.int32, allocator=self.allocator)
        kernel.set_args(
            *inputs.phase_args,
            inputs.starts,
            inputs.lengths,
            base,
            np.int32(k0),
            np.int32(nf),
            phase.data,
            order.data,
        )
        groups = len(inputs.lengths_host) * nf
        cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * self.wg,), (self.wg,))
        return phase, order

    def _radix(self, k0, nf, base):
        inputs = self.inputs
        kernel = self._kernel("fold")
        n_obj = len(inputs.lengths_host)
        n_seg = n_obj * nf
        total = nf * int(inputs.lengths_host.sum())
        # pyopencl's scan asserts when an array is short compared with its
        # interval count (3 per compute unit) on wide GPUs: pad with entries
        # that sort last (phase +inf, segment n_seg) and drop them afterwards.
        padded = max(total, 2 * (3 * self.info.compute_units) ** 2)
        new = dict(allocator=self.allocator)
        phase = _filled(self.queue, padded, self.dtype(np.inf), self.allocator)
        index = cl_array.zeros(self.queue, padded, np.int32, **new)
        seg = _filled(self.queue, padded, np.int32(n_seg), self.allocator)
        kernel.set_args(
            *inputs.phase_args,
            inputs.starts,
            inputs.lengths,
            base,
            np.int32(k0),
            np.int32(nf),
            np.int32(n_obj),
            np.int32(self.longest),
            phase.data,
            index.data,
            seg.data,
        )
        cl.enqueue_nd_range_kernel(self.queue, kernel, (n_seg * self.longest,), None)
        by_phase, by_segment, enqueuing = _radix_sorters(self.queue.context, inputs.real)
        with enqueuing:
            (phase, index, seg), _ = by_phase(
                phase, index, seg, queue=self.queue, key_bits=64 if inputs.fp64 else 32, **new
            )
            (phase, index, seg), _ = by_segment(
                phase, index, seg, queue=self.queue, key_bits=int(n_seg).bit_length(), **new
            )
        return phase[: max(total, 1)], index[: max(total, 1)]


def _filled(queue: cl.CommandQueue, n: int, value: np.generic, allocator) -> cl_array.Array:
    """A new device array of ``n`` copies of ``value``, filled by a fill
    command (``Array.fill`` sets the arguments of a kernel that every thread
    of the context shares)."""
    array = cl_array.empty(queue, n, value.dtype, allocator=allocator)
    array.add_event(cl.enqueue_fill_buffer(queue, array.data, value, 0, array.nbytes))
    return array


@functools.cache
def _radix_sorters(context: cl.Context, real: str) -> tuple[RadixSort, RadixSort, threading.Lock]:
    """Two stable radix sorts: by phase bits (order-preserving for phases >= 0), then
    by segment. Every array the keys read must be sorted along (pyopencl rule).

    Their kernels belong to the context, and a launch sets a kernel's arguments
    before it enqueues it, so threads of one context enqueue sorts one at a
    time (the lock returned with them)."""
    args = f"{real} *phase, int *index, int *seg"
    names = ["phase", "index", "seg"]
    if real == "double":
        by_phase = RadixSort(
            context, args, "as_ulong(phase[i])", names, key_dtype=np.uint64, bits_at_a_time=4
        )
    else:
        by_phase = RadixSort(
            context, args, "as_uint(phase[i])", names, key_dtype=np.uint32, bits_at_a_time=4
        )
    by_segment = RadixSort(
        context, args, "(uint) seg[i]", names, key_dtype=np.uint32, bits_at_a_time=4
    )
    return by_phase, by_segment, threading.Lock()
