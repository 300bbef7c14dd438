"""The scheduler's trace hook: every call and item of run_on_devices reports
its times to the tracer within ``tracing``, and nothing outside it."""

import threading
import time

import pytest

from clperiod.engine.devices import select_devices
from clperiod.engine import scheduler
from clperiod.engine.scheduler import run_on_devices, tracing


class Recorder:
    def __init__(self):
        self.calls, self.items = [], []

    def call(self, n_items, n_devices, start, stop):
        self.calls.append((n_items, n_devices, start, stop))

    def item(self, device, index, start, stop):
        self.items.append((device.label, index, start, stop, threading.current_thread().name))


@pytest.fixture(scope="module")
def device():
    return select_devices()[0]


def slow_square(device, x):
    time.sleep(0.01)
    return x * x


def test_traced_call_reports_each_item_once_within_the_call(device):
    recorder = Recorder()
    with tracing(recorder):
        out = run_on_devices([device, device], list(range(6)), slow_square)
    assert out == [0, 1, 4, 9, 16, 25]
    assert [(n, d) for n, d, _, _ in recorder.calls] == [(6, 2)]
    _, _, call_start, call_stop = recorder.calls[0]
    assert sorted(index for _, index, *_ in recorder.items) == list(range(6))
    for label, _, start, stop, thread in recorder.items:
        assert label == device.label
        assert call_start <= start and stop - start >= 0.009 and stop <= call_stop
        assert thread.startswith("clperiod-device-")
    assert len({thread for *_, thread in recorder.items}) == 2


def test_one_device_items_run_in_the_calling_thread_and_are_traced(device):
    recorder = Recorder()
    with tracing(recorder):
        out = run_on_devices([device], [3, 4], slow_square)
    assert out == [9, 16]
    assert [index for _, index, *_ in recorder.items] == [0, 1]
    assert {thread for *_, thread in recorder.items} == {threading.current_thread().name}


def test_a_failing_item_is_traced_and_raised(device):
    def fail_on_two(device, x):
        if x == 2:
            raise ValueError("item 2")
        return x

    recorder = Recorder()
    with tracing(recorder), pytest.raises(ValueError, match="item 2"):
        run_on_devices([device], [1, 2, 3], fail_on_two)
    assert [index for _, index, *_ in recorder.items] == [0, 1]
    assert len(recorder.calls) == 1


def test_nothing_is_traced_outside_the_block(device):
    recorder = Recorder()
    with tracing(recorder):
        pass
    assert run_on_devices([device, device], [1, 2], slow_square) == [1, 4]
    assert recorder.calls == [] and recorder.items == []


def test_progress_is_reported_by_one_worker_at_a_time(device):
    """A device listed three times: three workers; the progress callback is
    never entered by two of them at once and counts every item."""
    inside, overlaps, counted = [0], [0], [0]

    def progress(n):
        inside[0] += 1
        overlaps[0] += inside[0] > 1
        time.sleep(0.002)  # a slow callback (a terminal write)
        counted[0] += n
        inside[0] -= 1

    results = run_on_devices([device] * 3, list(range(30)), lambda d, x: x + 1, progress)
    assert results == list(range(1, 31))
    assert counted[0] == 30 and overlaps[0] == 0


def test_an_interrupted_call_starts_no_other_item_and_waits_for_those_under_way(
    device, monkeypatch
):
    """Ctrl-C while devices work: the workers finish the items under way, take no
    other, and the interrupt reaches the caller once they have stopped."""
    started, finished = [], []

    def slow(device, x):
        started.append(x)
        time.sleep(0.05)
        finished.append(x)
        return x

    waits = []
    original = scheduler.concurrent.futures.wait

    def interrupted_once(futures, *args, **kwargs):
        waits.append(1)
        if len(waits) == 1:
            time.sleep(0.02)
            raise KeyboardInterrupt
        return original(futures, *args, **kwargs)

    monkeypatch.setattr(scheduler.concurrent.futures, "wait", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        run_on_devices([device] * 2, list(range(40)), slow)
    monkeypatch.undo()
    assert len(started) <= 4 and sorted(started) == sorted(finished)
    time.sleep(0.2)
    assert len(started) <= 4


def test_a_failing_progress_callback_is_raised(device):
    def progress(n):
        raise RuntimeError("the terminal is gone")

    with pytest.raises(RuntimeError, match="terminal is gone"):
        run_on_devices([device] * 2, list(range(4)), lambda d, x: x, progress)
