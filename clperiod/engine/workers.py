"""Long-lived worker threads shared by catalog runs.

A catalog run reads, writes and cleans up in background threads. Starting a
thread, and ending it, costs the interpreter a fraction of a millisecond each,
at a run's start and end, where nothing overlaps it; so the threads are kept:
:func:`submit` runs a job on an idle worker (a new one only when none is idle),
and :class:`SerialQueue` runs jobs one after another, in order, on them.
"""

from __future__ import annotations

import collections
import concurrent.futures
import os
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["SerialQueue", "submit", "through_interrupts"]

#: Workers at most; more than any number of concurrent runs needs (each holds
#: at most three at once), so a job never waits for a worker.
MAX_WORKERS = 256

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_queues: weakref.WeakSet[SerialQueue] = weakref.WeakSet()


def submit(function: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
    """Run ``function(*args)`` on an idle worker thread."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                MAX_WORKERS, thread_name_prefix="clperiod-worker"
            )
        return _pool.submit(function, *args)


def through_interrupts(wait: Callable[[], Any]) -> None:
    """Call ``wait`` until it returns, again whenever an interrupt
    (KeyboardInterrupt) stops it: for waits on work that still writes into
    memory or files the caller is about to give up."""
    while True:
        try:
            wait()
            return
        except KeyboardInterrupt:
            continue


class SerialQueue:
    """Jobs that run one at a time, in the order submitted, on the worker threads."""

    def __init__(self) -> None:
        self._jobs: collections.deque = collections.deque()
        self._lock = threading.Lock()
        self._running = False
        self._last: concurrent.futures.Future | None = None
        self._current: concurrent.futures.Future | None = None  # the job running
        _queues.add(self)

    def submit(self, function: Callable[..., Any], *args: Any) -> concurrent.futures.Future:
        """Queue ``function(*args)`` after the jobs already queued."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            self._jobs.append((future, function, args))
            self._last = future
            start, self._running = not self._running, True
        if start:
            submit(self._drain)
        return future

    def join(self) -> None:
        """Wait until every job queued so far has run (whatever its outcome) or
        been cancelled."""
        with self._lock:
            waited = [job for job in (self._last, self._current) if job is not None]
        concurrent.futures.wait(waited)

    def cancel(self) -> None:
        """Cancel the jobs that have not started."""
        with self._lock:
            for future, _, _ in self._jobs:
                future.cancel()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    self._running = False
                    return
                future, function, args = self._jobs.popleft()
                if not future.set_running_or_notify_cancel():
                    continue
                self._current = future
            try:
                result = function(*args)
            except BaseException as error:  # handed to whoever waits on the future
                future.set_exception(error)
            else:
                future.set_result(result)
            finally:
                with self._lock:
                    self._current = None


def _after_fork_in_child() -> None:
    """A forked process has none of the parent's threads: start afresh."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()
    for serial in list(_queues):
        serial._jobs.clear()
        serial._lock = threading.Lock()
        serial._running = False
        serial._last = serial._current = None


os.register_at_fork(after_in_child=_after_fork_in_child)
