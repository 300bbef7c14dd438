"""Bind each Dask worker process to one OpenCL device.

OpenCL has no standard ``*_VISIBLE_DEVICES`` variable, so a cluster of
workers, one per device, needs a rule that gives every worker its own device.
:func:`worker_device` applies, in order:

1. ``CLPERIOD_DEVICE`` (or ``PYOPENCL_CTX``) in the worker's environment: the
   devices it names; if it names several, the worker's rank picks one of them.
2. ``CUDA_VISIBLE_DEVICES`` (dask-cuda, Ray, SLURM set it per worker): the
   first NVIDIA OpenCL GPU; NVIDIA's OpenCL driver honours the variable.
   ``ROCR_VISIBLE_DEVICES`` (Ray on AMD) likewise gives the first AMD GPU.
   When no such GPU is found the rule is skipped.
3. Otherwise the worker's rank on its host modulo the number of devices of
   the preferred class (NVIDIA GPUs, else other GPUs, else CPUs).

The choice is made once per process and cached, so a worker keeps one device
and one OpenCL context for its lifetime (contexts are cached by
:func:`clperiod.engine.devices.get_context`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from clperiod.engine.devices import DeviceInfo, list_devices, select_devices

__all__ = ["worker_device", "worker_rank"]

#: Variables that GPU schedulers set per worker, and the vendor they restrict.
_VISIBLE_DEVICE_VARIABLES: tuple[tuple[str, str], ...] = (
    ("CUDA_VISIBLE_DEVICES", "nvidia"),
    ("ROCR_VISIBLE_DEVICES", "amd"),
)

_NAME_RANK = re.compile(r"(?:^|-)(\d+)$")
_bound: DeviceInfo | None = None
_bound_lock = threading.Lock()


def worker_device() -> DeviceInfo:
    """The OpenCL device of this worker process (chosen once, then cached).

    Returns
    -------
    DeviceInfo
        The device picked by the rules of this module's docstring.

    Raises
    ------
    ValueError
        ``CLPERIOD_DEVICE`` or ``PYOPENCL_CTX`` matches no usable device.
    RuntimeError
        No usable OpenCL device at all.
    """
    global _bound
    with _bound_lock:
        if _bound is None:
            _bound = _choose_device(list_devices(), worker_rank)
        return _bound


def _choose_device(usable: Sequence[DeviceInfo], rank: Callable[[], int]) -> DeviceInfo:
    """Apply the binding rules (the logic of :func:`worker_device`) to ``usable``.

    Parameters
    ----------
    usable
        The usable devices, in platform/device order.
    rank
        Called (only when needed) for the worker's rank.

    Returns
    -------
    DeviceInfo
    """
    environ = os.environ
    if environ.get("CLPERIOD_DEVICE", "").strip() or environ.get("PYOPENCL_CTX", "").strip():
        named = select_devices()
        return named[rank() % len(named)] if len(named) > 1 else named[0]
    for variable, vendor in _VISIBLE_DEVICE_VARIABLES:
        if environ.get(variable, "").strip():
            gpus = [d for d in usable if d.kind == "gpu" and _is_vendor(d, vendor)]
            if gpus:
                return gpus[0]
    best = min(_device_class(d) for d in usable)
    candidates = [d for d in usable if _device_class(d) == best]
    return candidates[rank() % len(candidates)]


def worker_rank() -> int:
    """This worker's rank among the Dask workers of its host (0 outside a worker).

    The rank is the worker's name when that is an integer (``LocalCluster``,
    ``dask worker --name 3``), the number after the last ``-`` of a name
    (``dask worker --name node7 --nworkers 4`` gives ``node7-0`` ..
    ``node7-3``), and otherwise the position of the worker's address among
    the addresses of the workers on the same host, as the scheduler lists them.
    Outside a task (``client.run``) the worker is the one of this process, if
    it holds just one (worker processes do).
    """
    try:
        from distributed import Worker, get_client, get_worker
    except ImportError:
        return 0
    try:
        worker = get_worker()
    except ValueError:  # not in a task
        workers = list(Worker._instances)  # distributed's registry of this process's workers
        if len(workers) != 1:
            return 0
        worker = workers[0]
    rank = _rank_from_name(worker.name)
    if rank is not None:
        return rank
    workers = get_client().scheduler_info(n_workers=-1)["workers"]
    return _local_rank(worker.address, workers)


def _rank_from_name(name: Any) -> int | None:
    """The rank encoded in a worker name (``3``, ``"3"``, ``"node7-3"``), or None."""
    if isinstance(name, int):
        return name
    match = _NAME_RANK.search(str(name))
    return int(match.group(1)) if match else None


def _local_rank(address: str, workers: Mapping[str, Mapping[str, Any]]) -> int:
    """Position of ``address`` among the sorted addresses of the workers on its host.

    Parameters
    ----------
    address
        This worker's address, a key of ``workers``.
    workers
        The scheduler's ``scheduler_info()["workers"]``: address -> info with
        a ``"host"`` entry.
    """
    host = workers[address]["host"]
    return sorted(a for a, info in workers.items() if info["host"] == host).index(address)


def _is_vendor(info: DeviceInfo, vendor: str) -> bool:
    if vendor == "nvidia":
        return info.is_nvidia
    text = f"{info.vendor} {info.platform_name}".lower()
    return "amd" in text or "advanced micro devices" in text


def _device_class(info: DeviceInfo) -> int:
    """0 NVIDIA GPU, 1 other GPU, 2 CPU, 3 anything else (lower is preferred)."""
    if info.kind == "gpu":
        return 0 if info.is_nvidia else 1
    return 2 if info.kind == "cpu" else 3
