"""Shared worker threads: ordered queues, reuse, errors, fork."""

import multiprocessing
import threading
import time

import pytest

from clperiod.engine import workers


def _worker_threads() -> int:
    return sum(t.name.startswith("clperiod-worker") for t in threading.enumerate())


def test_serial_queue_runs_jobs_one_at_a_time_in_order():
    spans = []

    def job(k):
        started = time.perf_counter()
        time.sleep(0.01)
        spans.append((k, started, time.perf_counter()))
        return k * k

    serial = workers.SerialQueue()
    futures = [serial.submit(job, k) for k in range(5)]
    assert [f.result(timeout=10) for f in futures] == [0, 1, 4, 9, 16]
    assert [k for k, _, _ in spans] == list(range(5))
    assert all(spans[i][2] <= spans[i + 1][1] for i in range(4))  # no overlap


def test_a_failed_job_reaches_its_future_and_the_queue_goes_on():
    serial = workers.SerialQueue()
    bad = serial.submit(lambda: 1 / 0)
    good = serial.submit(lambda: "next")
    serial.join()
    assert bad.done() and good.done()
    with pytest.raises(ZeroDivisionError):
        bad.result()
    assert good.result() == "next"


def test_join_waits_for_every_queued_job():
    done = []
    serial = workers.SerialQueue()
    for k in range(3):
        serial.submit(lambda k=k: (time.sleep(0.01), done.append(k)))
    serial.join()
    assert done == [0, 1, 2]
    workers.SerialQueue().join()  # nothing queued: returns at once


def test_cancel_drops_the_jobs_not_started_and_join_waits_for_the_one_running():
    done = []
    serial = workers.SerialQueue()
    running = threading.Event()
    first = serial.submit(lambda: (running.set(), time.sleep(0.1), done.append(0)))
    later = [serial.submit(done.append, k) for k in (1, 2)]
    running.wait(10)
    serial.cancel()
    serial.join()
    assert done == [0] and first.done() and all(f.cancelled() for f in later)
    assert serial.submit(done.append, 3).result(timeout=10) is None and done == [0, 3]


def test_idle_workers_are_reused():
    workers.submit(time.sleep, 0).result(timeout=10)
    time.sleep(0.05)  # the worker is idle again
    before = _worker_threads()
    for _ in range(5):
        workers.submit(time.sleep, 0).result(timeout=10)
        time.sleep(0.01)
    assert _worker_threads() == before >= 1


def _child_submits(result):
    serial = workers.SerialQueue()
    result.put((workers.submit(lambda: 7).result(timeout=10),
                serial.submit(lambda: 8).result(timeout=10)))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork")
def test_a_forked_process_starts_its_own_workers():
    busy = workers.SerialQueue()
    busy.submit(time.sleep, 0.2)  # forked while the parent's queue is running
    context = multiprocessing.get_context("fork")
    result = context.Queue()
    child = context.Process(target=_child_submits, args=(result,))
    child.start()
    assert result.get(timeout=30) == (7, 8)
    child.join(timeout=30)
    assert child.exitcode == 0
    busy.join()
