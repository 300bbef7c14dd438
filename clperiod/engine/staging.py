"""Host memory: what the host can spare, page-locked (pinned) staging and copies.

:func:`available_host_memory` is what this process can still take
(``MemAvailable``, a cgroup's memory limit, the address-space limit
``RLIMIT_AS``); :func:`check_periodogram_memory` refuses periodograms larger
than that with a :class:`MemoryError` naming the size. Transfers go through
page-locked memory, which copies at the full bus speed: returned periodograms
and model results (:func:`result_array`) and upload blocks come from
:data:`PINNED_POOL`, recycled page-locked arrays
that are only asked for while they stay well below the available memory
(ordinary pageable memory otherwise, and when page-locking is refused);
:class:`Staging` holds one batch's device buffers and its page-locked block;
:func:`parallel_copy` fills staging memory on several threads. The catalogs'
own copies of their columns come from :data:`HOST_POOL`, recycled ordinary
memory (new memory costs a page fault per page on first write).
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import ctypes
import os
import resource
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl

from clperiod.engine import workers
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    memory_pool,
    trim_memory_pool,
)

__all__ = [
    "HOST_POOL",
    "HOST_POOL_FREE_BYTES",
    "HOST_POOL_MIN_BYTES",
    "HostPool",
    "PINNED_FRACTION",
    "PINNED_FREE_FRACTION",
    "PINNED_POOL",
    "PinnedPool",
    "RecyclingPool",
    "Staging",
    "available_host_memory",
    "check_periodogram_memory",
    "copies_in_place",
    "in_parts",
    "parallel_copy",
    "result_array",
    "serves",
]

#: Page-locked buffers are asked for only up to this fraction of the
#: available host memory (page-locked memory cannot be swapped out, and
#: PoCL aborts the process when such a buffer cannot be backed).
PINNED_FRACTION = 0.5


class RecyclingPool:
    """Host arrays that are views of blocks recycled across calls.

    An array handed out is a view of a block through a small ctypes object;
    when the last numpy view of it is garbage-collected the ctypes object
    dies and the block returns to the pool for the next request of a similar
    size. Subclasses make the blocks (:class:`PinnedPool`, :class:`HostPool`).
    """

    #: A request may take a free block up to twice its size, or up to this
    #: many bytes larger (small requests of varying size share blocks).
    _SMALL_SLACK = 1 << 20

    def __init__(self, max_free: int = 8, max_free_bytes: int | None = None):
        self._free: dict[int, list[np.ndarray]] = {}
        self._lock = threading.Lock()
        self._max_free = max_free
        self._max_free_bytes = max_free_bytes
        # blocks whose arrays died, not yet in _free: a finalizer only appends
        # here (atomic), as it may run inside any allocation, even while this
        # thread holds the lock (a garbage collection in _take)
        self._returned: collections.deque[tuple[int | None, np.ndarray]] = collections.deque()

    def _hand_out(
        self, key: int, block: np.ndarray, nbytes: int, shape: tuple[int, ...], dtype: np.dtype
    ) -> np.ndarray:
        """An array of ``shape`` on the first ``nbytes`` of ``block`` (a uint8
        array), which returns to the free list of ``key`` when the array dies."""
        view: Any = (ctypes.c_char * nbytes).from_address(block.ctypes.data)
        weakref.finalize(view, self._give_back, key, block)
        return np.frombuffer(view, dtype=dtype).reshape(shape)

    def _take(self, key: int, nbytes: int) -> np.ndarray | None:
        with self._lock:
            self._file_returned()
            free = self._free.get(key, [])
            most = max(2 * nbytes, nbytes + self._SMALL_SLACK)
            fits = [i for i, m in enumerate(free) if nbytes <= m.nbytes <= most]
            if not fits:
                return None
            return free.pop(min(fits, key=lambda i: free[i].nbytes))

    def _give_back(self, key: int, block: np.ndarray) -> None:
        """Finalizer of a handed-out array: its block is free again (a block
        larger than the pool keeps in all goes back to the system at once)."""
        if self._max_free_bytes is not None and block.nbytes > self._max_free_bytes:
            self._drop_oversized(block)
        else:
            self._returned.append((key, block))

    def release_free(self) -> None:
        """Hand every free block back to the system."""
        with self._lock:
            self._file_returned()
            for free in self._free.values():
                for block in free:
                    self._forget(block)
            self._free.clear()

    def _file_returned(self) -> None:
        """Move the blocks given back into the free lists, keeping the newest
        ``max_free`` per key, and of those at most ``max_free_bytes`` in all
        (the lock is held)."""
        while self._returned:
            key, block = self._returned.popleft()
            if key is None:
                self._forget(block)
                continue
            free = self._free.setdefault(key, [])
            free.append(block)
            for dropped in free[: -self._max_free]:
                self._forget(dropped)
            del free[: -self._max_free]
        if self._max_free_bytes is None:
            return
        for free in self._free.values():
            kept = 0
            for k in range(len(free) - 1, -1, -1):  # the newest first
                kept += free[k].nbytes
                if kept > self._max_free_bytes:
                    for dropped in free[: k + 1]:
                        self._forget(dropped)
                    del free[: k + 1]
                    break

    def _forget(self, block: np.ndarray) -> None:
        """A block leaves the pool (the lock is held)."""

    def _drop_oversized(self, block: np.ndarray) -> None:
        """A returned block too large to keep (from a finalizer, which may run
        while this thread holds the lock: it must not take it); ordinary
        memory goes when its last reference does."""


class PinnedPool(RecyclingPool):
    """Page-locked host arrays, recycled across calls.

    Device-to-host copies into page-locked memory run at the full bus speed,
    but page-locking is slow (about 0.4 s per GB on an H100 host) and so is
    mapping and unmapping, so buffers are allocated and mapped once and kept
    (a block is the host mapping of one buffer; free lists per context).
    """

    def __init__(self, max_free: int = 8, max_free_bytes: int | None = None):
        super().__init__(max_free, max_free_bytes)
        self._buffers: dict[int, cl.Buffer] = {}  # mapping address -> buffer (kept alive)

    def empty(self, info: DeviceInfo, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A page-locked array of ``shape``; ordinary (pageable) memory when the
        host has too little memory to spare for it (:data:`PINNED_FRACTION`
        of :func:`available_host_memory`) or the runtime refuses it."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes == 0:
            return np.empty(shape, dtype=dtype)
        context = get_context(info)
        key = context.int_ptr
        mapped = self._take(key, nbytes)
        if mapped is None:
            if nbytes > PINNED_FRACTION * available_host_memory():
                self.release_free()  # free page-locked blocks count as taken
                if nbytes > PINNED_FRACTION * available_host_memory():
                    return np.empty(shape, dtype=dtype)
            try:
                mapped, buffer = _pinned_block(info, context, nbytes)
            except (cl.Error, MemoryError):
                return np.empty(shape, dtype=dtype)
            with self._lock:
                self._buffers[mapped.ctypes.data] = buffer
        return self._hand_out(key, mapped, nbytes, shape, dtype)

    def owns(self, array: np.ndarray, info: DeviceInfo | None = None) -> bool:
        """Whether ``array``'s memory lies in a page-locked buffer of the pool
        (with ``info``: one whose pages that device's copies read at the bus
        speed, :func:`serves`)."""
        start = array.__array_interface__["data"][0]
        with self._lock:
            return any(
                base <= start
                and start + array.nbytes <= base + buffer.size
                and (info is None or serves(buffer.context, info))
                for base, buffer in self._buffers.items()
            )

    def _forget(self, block: np.ndarray) -> None:
        self._buffers.pop(block.ctypes.data, None)

    def _drop_oversized(self, block: np.ndarray) -> None:
        self._returned.append((None, block))  # forgotten, not filed, under the lock


def serves(context: cl.Context, info: DeviceInfo) -> bool:
    """Whether memory page-locked through ``context`` is page-locked for the
    copies of device ``info``: on the NVIDIA platform for every GPU of it (the
    driver shares a process's page-locked memory among its GPUs,
    ``bench/results/2026-11-26_h200x2_pinned_contexts.json``), elsewhere for
    the devices of that context only (the others copy it as pageable memory)."""
    own = get_context(info)
    if context == own:
        return True
    return info.is_nvidia and context.devices[0].platform == info.device.platform


class HostPool(RecyclingPool):
    """Ordinary (pageable) host arrays of at least :data:`HOST_POOL_MIN_BYTES`,
    recycled across calls.

    The first write to each page of new memory costs a page fault that
    clears the page, more than copying the data in, so blocks are kept for
    the next request of a similar size: at most 8, and at most
    :data:`HOST_POOL_FREE_BYTES` free in all (the rest goes back to the
    system).
    """

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """A new array of ``shape``, in recycled memory if it is large."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        if nbytes < HOST_POOL_MIN_BYTES:
            return np.empty(shape, dtype=dtype)
        block = self._take(0, nbytes)
        if block is None:
            block = np.empty(nbytes, dtype=np.uint8)
        return self._hand_out(0, block, nbytes, shape, dtype)


def _pinned_block(
    info: DeviceInfo, context: cl.Context, nbytes: int
) -> tuple[np.ndarray, cl.Buffer]:
    """A new page-locked buffer of ``nbytes`` and its host mapping."""
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
    buffer = cl.Buffer(context, flags, nbytes)
    mapped, _ = cl.enqueue_map_buffer(
        get_queue(info, role="pinned"),
        buffer,
        cl.map_flags.READ | cl.map_flags.WRITE,
        0,
        (nbytes,),
        np.uint8,
        is_blocking=True,
    )
    return mapped, buffer


#: Most bytes of free page-locked blocks :data:`PINNED_POOL` keeps: this
#: fraction of the host's physical memory (page-locked memory cannot be
#: swapped out).
PINNED_FREE_FRACTION = 1 / 16


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
        return None


_physical = _physical_memory()
#: The process-wide pool used for returned periodograms and upload staging.
PINNED_POOL = PinnedPool(
    max_free_bytes=None if _physical is None else int(PINNED_FREE_FRACTION * _physical)
)

#: Smallest array that :class:`HostPool` recycles (smaller ones are recycled by malloc).
HOST_POOL_MIN_BYTES = 1 << 20
#: Most bytes of free blocks :data:`HOST_POOL` keeps.
HOST_POOL_FREE_BYTES = 256 << 20
#: The process-wide pool of the catalogs' own copies of their columns.
HOST_POOL = HostPool(max_free_bytes=HOST_POOL_FREE_BYTES)


def check_periodogram_memory(n_objects: int, nf: int, dtype) -> None:
    """Raise a :class:`MemoryError` naming the size and the options that avoid
    it when the periodograms of ``n_objects`` objects on ``nf`` frequencies
    are larger than :func:`available_host_memory` (before a search plans or
    computes anything)."""
    nbytes = n_objects * nf * np.dtype(dtype).itemsize
    available = available_host_memory()
    if nbytes > available:
        PINNED_POOL.release_free()  # free page-locked blocks count as taken
        available = available_host_memory()
    if nbytes > available:
        raise MemoryError(
            f"the periodograms of {n_objects} objects x {nf} frequencies ({np.dtype(dtype)}) "
            f"need {_gib(nbytes)} of host memory, but {_gib(available)} are available: "
            "search fewer objects at a time (Catalog.slice), or have "
            "clperiod.pipeline.run_catalog write them to a file in groups (periodogram=FILE); "
            "periodogram=False keeps the best peaks only"
        )


def copies_in_place(array: np.ndarray, info: DeviceInfo) -> bool:
    """Whether device ``info`` copies to or from ``array`` where it lies, at the
    bus speed and beside its kernels: C-contiguous, in memory that
    :data:`PINNED_POOL` page-locked for it (:func:`serves`)."""
    return array.flags.c_contiguous and PINNED_POOL.owns(array, info)


def result_array(devices: Sequence[DeviceInfo], shape: tuple[int, ...], dtype) -> np.ndarray:
    """A host array that ``devices`` copy results (periodograms, model
    statistics) into: page-locked
    (:data:`PINNED_POOL`) when that memory is page-locked for every one of
    them (:func:`serves`), so that their copies run at the bus speed and
    overlap their kernels, else recycled ordinary memory (:data:`HOST_POOL`)."""
    context = get_context(devices[0])
    if all(serves(context, info) for info in devices):
        return PINNED_POOL.empty(devices[0], shape, dtype)
    return HOST_POOL.empty(shape, dtype)


def available_host_memory() -> int:
    """Bytes of host memory this process can still take, as far as it can tell.

    The least of: the kernel's estimate of memory available without swapping
    (``MemAvailable`` of ``/proc/meminfo``; elsewhere free physical pages,
    ``os.sysconf``), the room under the memory limit of the process's cgroup
    (v2 ``memory.max``, v1 ``memory.limit_in_bytes``; its reclaimable page
    cache counted as free) and the room under the address-space limit
    (``RLIMIT_AS``).
    """
    rooms = [_system_available(), _cgroup_room(), _address_space_room()]
    return max(0, min(room for room in rooms if room is not None))


def _system_available() -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _cgroup_room() -> int | None:
    """Room under the memory limit of this process's cgroup (None: no limit known)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        hierarchy, controllers, group = fields
        if hierarchy == "0":
            files, root = ("memory.max", "memory.current", "inactive_file"), "/sys/fs/cgroup"
        elif "memory" in controllers.split(","):
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
            root = "/sys/fs/cgroup/memory"
        else:
            continue
        # the group's own directory, or (in a container) the mount's root
        for directory in (Path(root + group), Path(root)):
            room = _cgroup_directory_room(directory, *files)
            if room is not None:
                return room
    return None


def _cgroup_directory_room(
    directory: Path, limit_file: str, usage_file: str, cache_key: str
) -> int | None:
    try:
        limit = (directory / limit_file).read_text().strip()
        if limit == "max" or int(limit) >= 1 << 60:  # none ("max", or v1's rounded 2**63)
            return None
        usage = int((directory / usage_file).read_text())
        stat = (directory / "memory.stat").read_text().split()
    except (OSError, ValueError):
        return None
    pairs = dict(zip(stat[::2], stat[1::2], strict=False))
    return int(limit) - usage + int(pairs.get(cache_key, 0))


def _address_space_room() -> int | None:
    """Room under ``RLIMIT_AS`` (None: no limit)."""
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError):
        return limit
    return limit - pages * resource.getpagesize()


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.2f} GiB"


class Staging:
    """The memory of one batch: device buffers from the device's pool, and one
    page-locked host block for its uploads and small results.

    On NVIDIA a new buffer is allocated on first use, which waits for the
    kernels running on the device, and a copy from ordinary (pageable)
    memory may wait too; pooled buffers (:func:`clperiod.engine.devices.memory_pool`)
    and page-locked copies do not, so a batch can be queued while the
    previous one computes and the device never waits for the host.

    Use: :meth:`upload` each input and :meth:`buffer` each work buffer,
    :meth:`result` each small output, then :meth:`send` (one block from
    :data:`PINNED_POOL`, inputs copied in, uploads queued); afterwards
    ``results`` holds the output arrays (views of the block). Keep the
    object until the batch's commands have finished (and keep the events of
    copies into ``results`` in ``events``: pyopencl waits for a copy
    whose event is freed, holding the GIL), then :meth:`release` it.
    """

    _ALIGN = 256

    def __init__(self, info: DeviceInfo) -> None:
        self.info = info
        self._inputs: list[tuple[np.ndarray, cl.MemoryObjectHolder]] = []
        self._outputs: list[tuple[tuple[int, ...], np.dtype]] = []
        self._buffers: list[cl.MemoryObjectHolder] = []
        self.results: list[np.ndarray] = []
        self.events: list[cl.Event] = []
        self._block: np.ndarray | None = None

    def buffer(self, nbytes: int) -> cl.MemoryObjectHolder:
        """A device buffer of at least ``nbytes`` (pooled), held until :meth:`release`."""
        buffer = memory_pool(self.info).allocate(max(1, int(nbytes)))
        self._buffers.append(buffer)
        return buffer

    def upload(self, array: np.ndarray) -> cl.MemoryObjectHolder:
        """A device buffer that :meth:`send` will fill with ``array``."""
        buffer = self.buffer(array.nbytes)
        self._inputs.append((array, buffer))
        return buffer

    def result(self, shape: tuple[int, ...], dtype) -> int:
        """Reserve a page-locked output array; its index in ``results``."""
        self._outputs.append((shape, np.dtype(dtype)))
        return len(self._outputs) - 1

    def send(self, queue: cl.CommandQueue) -> None:
        """Copy the inputs into page-locked memory and queue their uploads (an
        input already in page-locked memory of this device's context,
        :meth:`PinnedPool.owns`, is uploaded from where it lies)."""
        in_place = [copies_in_place(array, self.info) for array, _ in self._inputs]
        sizes = [
            0 if pinned else a.nbytes
            for (a, _), pinned in zip(self._inputs, in_place, strict=True)
        ]
        sizes += [int(np.prod(shape)) * dtype.itemsize for shape, dtype in self._outputs]
        starts = np.concatenate(
            ([0], np.cumsum([-(-n // self._ALIGN) * self._ALIGN for n in sizes]))
        )
        block = PINNED_POOL.empty(self.info, (max(1, int(starts[-1])),), np.uint8)
        self._block = block
        for k, (array, buffer) in enumerate(self._inputs):
            if not array.nbytes:
                continue
            staged = array
            if not in_place[k]:
                staged = block[starts[k] : starts[k] + array.nbytes].view(array.dtype)
                parallel_copy(staged, array.reshape(-1))
            self.events.append(cl.enqueue_copy(queue, buffer, staged, is_blocking=False))
        for k, (shape, dtype) in enumerate(self._outputs, start=len(self._inputs)):
            self.results.append(block[starts[k] : starts[k] + sizes[k]].view(dtype).reshape(shape))

    @contextlib.contextmanager
    def guard(self, *queues: cl.CommandQueue) -> Iterator[Staging]:
        """Queue the batch inside this block: if it raises, the queues are
        finished before the buffers go back (no command may still use them)."""
        try:
            yield self
        except BaseException:
            for queue in queues:
                queue.finish()
            self.release()
            raise

    def release(self) -> None:
        """Return the buffers to their pools (the batch's commands must have finished)."""
        self._inputs.clear()
        self._buffers.clear()
        self.results.clear()
        self.events.clear()
        self._block = None
        trim_memory_pool(self.info)


_COPY_WORKERS = min(8, os.cpu_count() or 1)
# elements per thread at least: thinner parts of the batch copies of two device
# threads at once queue for each other (bench/results/2026-11-26_h200x2_stage_parts.json)
_COPY_PART = 1 << 18


def in_parts(n: int, work: Callable[[int, int], None], min_part: int = _COPY_PART) -> None:
    """``work(lo, hi)`` over near-equal parts of ``range(n)``: the first in this
    thread, the others on ``clperiod.engine.workers`` threads (NumPy lets go of the
    interpreter in its loops); all in this thread when ``n`` is below two
    parts of ``min_part``. Returns, or raises, once every part has stopped
    (the parts write into the caller's memory)."""
    parts = max(1, min(_COPY_WORKERS, n // min_part))
    bounds = [n * k // parts for k in range(parts + 1)]
    others = [workers.submit(work, bounds[k], bounds[k + 1]) for k in range(1, parts)]
    try:
        work(bounds[0], bounds[1])  # the first part in this thread
    finally:
        concurrent.futures.wait(others)
    for job in others:
        job.result()


def parallel_copy(destination: np.ndarray, source: np.ndarray) -> None:
    """``destination[...] = source`` (same shape, casting allowed) on several
    threads: one thread copies about 13 GB/s, below the PCIe bus from
    page-locked memory (55 GB/s on an H100 host). Values beyond a narrower
    destination type become infinite, silently: the callers' kernels flag them."""
    dst, src = destination.reshape(-1), np.ascontiguousarray(source).reshape(-1)

    def copy(lo: int, hi: int) -> None:
        with np.errstate(over="ignore"):
            np.copyto(dst[lo:hi], src[lo:hi], casting="same_kind")

    in_parts(dst.size, copy)
