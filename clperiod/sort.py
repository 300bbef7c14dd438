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
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from pyopencl.algorithm import RadixSort

from . import kernels
from .catalog import Catalog
from .device import DeviceInfo, get_context, get_queue, require_fp64, select_devices, upload
from .grid import FrequencyGrid

__all__ = ["FoldedSorted", "FoldInputs", "fold_and_sort", "SortMethod"]

SortMethod = Literal["auto", "bitonic", "radix"]

#: Capacity of the local-memory (bitonic) sort, in points.
BITONIC_MAX = 2048
_WG = 128
#: Frequencies per launch (bounds the NDRange and the radix-sort temporaries).
_FREQS_PER_LAUNCH = 4096


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
    grid: FrequencyGrid,
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
        Trial frequencies.
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
    if precision not in ("fp64", "fp32"):
        raise ValueError(f"precision must be 'fp64' or 'fp32', got {precision!r}")
    if method not in get_args(SortMethod):
        raise ValueError(f"method must be one of {get_args(SortMethod)}, got {method!r}")
    info = select_devices(device)[0]
    fp64 = precision == "fp64"
    if fp64:
        require_fp64(info)
    lengths = catalog.lengths
    longest = int(lengths.max(initial=0))
    if method == "auto":
        method = "bitonic" if longest <= BITONIC_MAX else "radix"
    if method == "bitonic" and longest > BITONIC_MAX:
        raise ValueError(f"bitonic sort holds at most {BITONIC_MAX} points; got {longest}")

    dtype = np.float64 if fp64 else np.float32
    base = (grid.nf * catalog.offsets[:-1]).astype(np.int64)
    phase = np.empty(grid.nf * len(catalog.t), dtype=dtype)
    order = np.empty(grid.nf * len(catalog.t), dtype=np.int32)
    if len(catalog.t):
        run = _Run(info, catalog, grid, fp64)
        for k0 in range(0, grid.nf, _FREQS_PER_LAUNCH):
            nf = min(_FREQS_PER_LAUNCH, grid.nf - k0)
            chunk_phase, chunk_order = (run.bitonic if method == "bitonic" else run.radix)(k0, nf)
            _scatter(chunk_phase, phase, catalog, grid.nf, k0, nf)
            _scatter(chunk_order, order, catalog, grid.nf, k0, nf)
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

    Times are taken relative to each object's earliest one; fp64 kernels get
    them as float64 with ``fmin`` and ``df``, fp32 kernels the double-single
    phase inputs of :meth:`FrequencyGrid.phase_inputs`.
    """

    def __init__(self, context: cl.Context, catalog: Catalog, grid: FrequencyGrid, fp64: bool):
        self.context = context
        owner = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
        tau = catalog.t - catalog.start_times()[owner]
        if fp64:
            self.phase_args = [self.upload(tau), np.float64(grid.fmin), np.float64(grid.df)]
        else:
            self.phase_args = [self.upload(a) for a in grid.phase_inputs(tau)]
        self.starts = self.upload(catalog.offsets[:-1].astype(np.int32))
        self.lengths = self.upload(catalog.lengths.astype(np.int32))

    def upload(self, array: np.ndarray) -> cl.Buffer:
        return upload(self.context, array)


class _Run:
    """One fold-and-sort call on one device."""

    def __init__(self, info: DeviceInfo, catalog: Catalog, grid: FrequencyGrid, fp64: bool):
        self.info, self.catalog = info, catalog
        self.context = get_context(info)
        self.queue = get_queue(info)
        self.real = "double" if fp64 else "float"
        self.dtype = np.float64 if fp64 else np.float32
        self.fold = FoldInputs(self.context, catalog, grid, fp64)
        self.fp64 = fp64

    def bitonic(self, k0: int, nf: int) -> tuple[np.ndarray, np.ndarray]:
        (kernel,) = kernels.get_kernels(
            self.context, "sort", ("fold_sort_local",), real=self.real, wg=_WG, nmax=BITONIC_MAX
        )
        total = nf * len(self.catalog.t)
        base = self.fold.upload((nf * self.catalog.offsets[:-1]).astype(np.int64))
        phase = cl_array.empty(self.queue, total, self.dtype)
        order = cl_array.empty(self.queue, total, np.int32)
        kernel.set_args(*self.fold.phase_args, self.fold.starts, self.fold.lengths, base, np.int32(k0), np.int32(nf),
                        phase.data, order.data)
        groups = self.catalog.n_objects * nf
        cl.enqueue_nd_range_kernel(self.queue, kernel, (groups * _WG,), (_WG,))
        return phase.get(), order.get()

    def radix(self, k0: int, nf: int) -> tuple[np.ndarray, np.ndarray]:
        (kernel,) = kernels.get_kernels(
            self.context, "sort", ("fold",), real=self.real, wg=_WG, nmax=BITONIC_MAX
        )
        n_obj = self.catalog.n_objects
        n_seg = n_obj * nf
        total = nf * len(self.catalog.t)
        # pyopencl's scan asserts when an array is short compared with its
        # interval count (3 per compute unit) on wide GPUs: pad with entries
        # that sort last (phase +inf, segment n_seg) and drop them afterwards.
        padded = max(total, 2 * (3 * self.info.compute_units) ** 2)
        base = self.fold.upload((nf * self.catalog.offsets[:-1]).astype(np.int64))
        phase = cl_array.empty(self.queue, padded, self.dtype).fill(np.inf)
        index = cl_array.zeros(self.queue, padded, np.int32)
        seg = cl_array.empty(self.queue, padded, np.int32).fill(n_seg)
        longest = int(self.catalog.lengths.max())
        kernel.set_args(*self.fold.phase_args, self.fold.starts, self.fold.lengths, base, np.int32(k0), np.int32(nf),
                        np.int32(n_obj), phase.data, index.data, seg.data)
        cl.enqueue_nd_range_kernel(self.queue, kernel, (longest, n_obj, nf), None)
        by_phase, by_segment = _radix_sorters(self.context, self.real)
        (phase, index, seg), _ = by_phase(phase, index, seg, queue=self.queue,
                                          key_bits=64 if self.fp64 else 32)
        (phase, index, seg), _ = by_segment(phase, index, seg, queue=self.queue,
                                            key_bits=int(n_seg).bit_length())
        return phase[:total].get(), index[:total].get()


@functools.cache
def _radix_sorters(context: cl.Context, real: str) -> tuple[RadixSort, RadixSort]:
    """Two stable radix sorts: by phase bits (order-preserving for phases >= 0), then
    by segment. Every array the keys read must be sorted along (pyopencl rule)."""
    args = f"{real} *phase, int *index, int *seg"
    names = ["phase", "index", "seg"]
    if real == "double":
        by_phase = RadixSort(context, args, "as_ulong(phase[i])", names, key_dtype=np.uint64,
                             bits_at_a_time=4)
    else:
        by_phase = RadixSort(context, args, "as_uint(phase[i])", names, key_dtype=np.uint32,
                             bits_at_a_time=4)
    by_segment = RadixSort(context, args, "(uint) seg[i]", names, key_dtype=np.uint32,
                           bits_at_a_time=4)
    return by_phase, by_segment
