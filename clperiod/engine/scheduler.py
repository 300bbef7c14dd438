"""Run independent work items on one or several devices.

One worker thread per device pulls the next item from a shared queue (dynamic
assignment, so ragged batches balance themselves); results come back in input
order. pyopencl releases the GIL while it waits for a device, so the threads
overlap. The worker threads live as long as the process and serve every call,
so their per-thread caches (command queues, kernel objects) outlast a call;
with one device in all the items run in the calling thread.
:func:`split_range` cuts a run of independent rows (models, elements) into
such items. Within :func:`tracing`, every call and item reports its start and
end times to a :class:`Tracer`.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from clperiod.engine.devices import DeviceInfo
from clperiod.engine.workers import through_interrupts

__all__ = ["BATCHES_PER_DEVICE", "Tracer", "run_on_devices", "split_range", "tracing"]

Item = TypeVar("Item")
Result = TypeVar("Result")

#: With several devices, work is cut into at least this many items per device
#: (when there is enough of it), so that a faster device takes more items.
BATCHES_PER_DEVICE = 4

_workers: dict[tuple[int, int], concurrent.futures.ThreadPoolExecutor] = {}
_workers_lock = threading.Lock()
_in_worker = threading.local()  # .active: this thread is one of _workers


class Tracer(Protocol):
    """Receives the times (:func:`time.perf_counter`) of :func:`run_on_devices`'s
    calls and items; its methods are called from the worker threads."""

    def call(self, n_items: int, n_devices: int, start: float, stop: float) -> None:
        """A call of :func:`run_on_devices` ran from ``start`` to ``stop``."""

    def item(self, device: DeviceInfo, index: int, start: float, stop: float) -> None:
        """Item ``index`` of a call ran on ``device`` from ``start`` to ``stop``."""


_tracer: Tracer | None = None


@contextlib.contextmanager
def tracing(tracer: Tracer) -> Iterator[Tracer]:
    """Report every call of :func:`run_on_devices` and each of its items to
    ``tracer`` within the block (one tracer at a time, for the process)."""
    global _tracer
    previous, _tracer = _tracer, tracer
    try:
        yield tracer
    finally:
        _tracer = previous


def run_on_devices(
    devices: Sequence[DeviceInfo],
    items: Sequence[Item],
    work: Callable[[DeviceInfo, Item], Result],
    progress: Callable[[int], None] | None = None,
) -> list[Result]:
    """Apply ``work(device, item)`` to every item, spreading items over devices.

    Parameters
    ----------
    devices
        Devices to use; each gets one worker thread (a device listed twice,
        two).
    items
        Independent work items.
    work
        Called once per item with the device that runs it.
    progress
        Optional callback, called with 1 after each finished item (by one
        worker at a time).

    Returns
    -------
    list
        ``work`` results in the order of ``items``. The first exception raised
        by any worker (or by ``progress``) is re-raised after all workers
        stopped; an interrupt of the caller (KeyboardInterrupt) lets the
        workers finish the items under way, start no other, and is re-raised.
    """
    tracer = _tracer
    if tracer is not None:
        return _traced(tracer, devices, items, work, progress)
    return _run(devices, items, work, progress)


def _run(
    devices: Sequence[DeviceInfo],
    items: Sequence[Item],
    work: Callable[[DeviceInfo, Item], Result],
    progress: Callable[[int], None] | None,
) -> list[Result]:
    """:func:`run_on_devices` without a tracer."""
    if len(devices) == 1 or len(items) <= 1 or getattr(_in_worker, "active", False):
        results = []
        for item in items:
            results.append(work(devices[0], item))
            if progress:
                progress(1)
        return results

    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for index in range(len(items)):
        todo.put(index)
    out: list = [None] * len(items)
    errors: list[BaseException] = []
    reporting = threading.Lock()  # progress callbacks (tqdm's update) need not be thread-safe

    def worker(device: DeviceInfo) -> None:
        while not errors:
            try:
                index = todo.get_nowait()
            except queue.Empty:
                return
            try:
                out[index] = work(device, items[index])
                if progress:
                    with reporting:
                        progress(1)
            except BaseException as error:  # re-raised in the caller
                errors.append(error)
                return

    seen: dict[int, int] = {}
    futures = []
    for device in devices:
        slot = seen[device.device.int_ptr] = seen.get(device.device.int_ptr, -1) + 1
        futures.append(_worker(device, slot).submit(worker, device))
    try:
        concurrent.futures.wait(futures)
    except BaseException as interrupt:  # KeyboardInterrupt: stop after the items under way
        errors.append(interrupt)
        # the items under way write into the caller's arrays
        through_interrupts(lambda: concurrent.futures.wait(futures))
        raise
    if errors:
        raise errors[0]
    return out


def _traced(
    tracer: Tracer,
    devices: Sequence[DeviceInfo],
    items: Sequence[Item],
    work: Callable[[DeviceInfo, Item], Result],
    progress: Callable[[int], None] | None,
) -> list[Result]:
    """:func:`run_on_devices`, reporting the call and each item to ``tracer``."""

    def timed(device: DeviceInfo, numbered: tuple[int, Item]) -> Result:
        index, item = numbered
        start = time.perf_counter()
        try:
            return work(device, item)
        finally:
            tracer.item(device, index, start, time.perf_counter())

    start = time.perf_counter()
    try:
        return _run(devices, list(enumerate(items)), timed, progress)
    finally:
        tracer.call(len(items), len(devices), start, time.perf_counter())


def _worker(device: DeviceInfo, slot: int) -> concurrent.futures.ThreadPoolExecutor:
    """The long-lived worker thread of ``device`` (``slot``: its n-th listing)."""
    key = (device.device.int_ptr, slot)
    with _workers_lock:
        if key not in _workers:
            _workers[key] = concurrent.futures.ThreadPoolExecutor(
                1,
                thread_name_prefix=f"clperiod-device-{device.platform_index}:"
                f"{device.device_index}-{slot}",
                initializer=_mark_worker,
            )
        return _workers[key]


def _forget_workers() -> None:
    """In a forked child: none of the parent's threads exist, so start afresh."""
    global _workers_lock
    _workers.clear()
    _workers_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


def _mark_worker() -> None:
    """Work run from inside a worker that calls :func:`run_on_devices` again
    runs inline (waiting for its own thread would never end)."""
    _in_worker.active = True


def split_range(start: int, stop: int, n_devices: int, min_size: int = 1) -> list[tuple[int, int]]:
    """Cut the rows ``[start, stop)`` into consecutive items for ``n_devices``.

    Parameters
    ----------
    start, stop
        The rows.
    n_devices
        Devices that will share the items.
    min_size
        Fewest rows worth an item of their own.

    Returns
    -------
    list of (int, int)
        ``(lo, hi)`` ranges of near-equal size, in order: one with one
        device, else :data:`BATCHES_PER_DEVICE` per device, fewer where an
        item would hold fewer than ``min_size`` rows.
    """
    n = stop - start
    if n <= 0:
        return []
    count = 1
    if n_devices > 1:
        count = max(1, min(BATCHES_PER_DEVICE * n_devices, n // max(1, min_size)))
    return list(itertools.pairwise(start + n * i // count for i in range(count + 1)))
