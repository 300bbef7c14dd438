"""Discover OpenCL devices, choose among them, and hand out contexts and queues.

Every device is probed once per process by building and running a trivial
kernel in a context of its own; a device (or platform) that fails is skipped
with a :class:`DeviceWarning`. This guards against runtimes that enumerate fine
but cannot compile, such as the pip PoCL 3.0 wheel on CPUs newer than its LLVM
("unknown target CPU 'generic'").

Selection (:func:`~clperiod.select_devices`) follows, in order: the explicit argument,
``CLPERIOD_DEVICE``, ``PYOPENCL_CTX`` (pyopencl's own ``P:D`` grammar), then the
default preference NVIDIA CUDA GPU > any GPU > CPU > other. Nothing here ever
prompts.

``CLPERIOD_DEVICE`` grammar (case-insensitive; a comma list is the union of its
tokens in the given order, duplicates removed). A token that names a class of
devices selects *every* usable device of that class:

* ``all``: every usable device;
* ``nvidia``, ``amd``, ``intel``, ``apple``: substring of the device vendor or
  platform name (``amd`` also matches "Advanced Micro Devices"; note that CPU
  runtimes such as PoCL report the CPU maker, e.g. "GenuineIntel");
* ``cpu``, ``gpu``, ``accelerator``: device type;
* ``P``: every device of platform index ``P``;
* ``P:D``: platform and device, each an index or a name substring;
* anything else: a substring of the device name, else of the platform name.

Indices are those of ``cl.get_platforms()`` / ``platform.get_devices()`` and are
shown in every :attr:`~clperiod.DeviceInfo.label`.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.tools as cl_tools

__all__ = [
    "DeviceInfo",
    "DeviceWarning",
    "describe",
    "get_context",
    "get_queue",
    "memory_pool",
    "thread_memory_pool",
    "trim_memory_pool",
    "has_fp64",
    "require_fp64",
    "upload",
    "write",
    "list_devices",
    "select_devices",
    "skipped_devices",
]

_INSTALL_HINT = (
    "Install an OpenCL driver: the NVIDIA driver, ROCm (AMD), the Intel compute "
    "runtime, or for CPUs `apt-get install pocl-opencl-icd` (Debian/Ubuntu) or "
    "`conda install -c conda-forge pocl`; see the README."
)
_PREFERENCE = "default preference: NVIDIA CUDA GPU > GPU > CPU"
_GRAMMAR = (
    "Selection grammar: all, cpu, gpu, accelerator, nvidia, amd, intel, apple, "
    "P, P:D, or a device/platform name substring; comma-separated for several."
)
_VENDOR_WORDS = {
    "nvidia": ("nvidia",),
    "amd": ("amd", "advanced micro devices"),
    "intel": ("intel",),
    "apple": ("apple",),
}
_KIND_WORDS = ("cpu", "gpu", "accelerator")
_PROBE_SOURCE = """
__kernel void clperiod_probe(__global const float *x, __global float *y)
{
    const size_t i = get_global_id(0);
    y[i] = 2.0f * x[i];
}
"""
_PROBE_SIZE = 16


class DeviceWarning(UserWarning):
    """An OpenCL device or platform was skipped because it failed the probe."""


@dataclass(frozen=True)
class DeviceInfo:
    """Facts about one usable OpenCL device.

    Attributes
    ----------
    device : pyopencl.Device
        The device itself.
    platform_index, device_index : int
        Indices in ``cl.get_platforms()`` and ``platform.get_devices()``.
    name, vendor, platform_name, platform_version, driver_version : str
        As reported by the OpenCL runtime.
    kind : str
        ``"gpu"``, ``"cpu"``, ``"accelerator"`` or ``"other"``.
    is_nvidia : bool
        True for devices of the NVIDIA CUDA platform.
    fp64 : bool
        Double precision support (``cl_khr_fp64`` or a non-zero
        ``double_fp_config``).
    global_mem, local_mem, max_alloc : int
        Global memory, local memory per work-group and largest single
        allocation, in bytes.
    compute_units, max_work_group_size : int
        As reported by the runtime.
    preferred_wg_multiple : int
        ``CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE`` of the probe kernel
        (the warp / wavefront / SIMD width in practice).
    """

    device: cl.Device
    platform_index: int
    device_index: int
    name: str
    vendor: str
    platform_name: str
    platform_version: str
    driver_version: str
    kind: str
    is_nvidia: bool
    fp64: bool
    global_mem: int
    local_mem: int
    max_alloc: int
    compute_units: int
    max_work_group_size: int
    preferred_wg_multiple: int

    @property
    def label(self) -> str:
        """Short unique label, e.g. ``"0:0 NVIDIA H100 80GB HBM3 (NVIDIA CUDA)"``."""
        return _label(self.platform_index, self.device_index, self.name, self.platform_name)


@dataclass(frozen=True)
class _Skipped:
    platform_index: int
    label: str
    reason: str


@dataclass(frozen=True)
class _Platform:
    name: str
    version: str
    device_names: tuple[str, ...]


@dataclass(frozen=True)
class _Discovery:
    """Outcome of probing every platform and device of this process."""

    platforms: tuple[_Platform, ...]
    usable: tuple[DeviceInfo, ...]
    skipped: tuple[_Skipped, ...]
    platform_error: str | None


_discovery: _Discovery | None = None
_discovery_lock = threading.Lock()
_contexts: dict[cl.Device, cl.Context] = {}
_queues: dict[tuple[cl.Device, bool, str, object], cl.CommandQueue] = {}
_pools: dict[tuple[cl.Device, object], cl_tools.MemoryPool] = {}
_cache_lock = threading.Lock()


# --------------------------------------------------------------------------- discovery


def _label(platform_index: int, device_index: int | str, name: str, platform_name: str) -> str:
    return f"{platform_index}:{device_index} {name.strip()} ({platform_name.strip()})"


def _summarize(exc: Exception) -> str:
    """First line of an OpenCL error plus up to two ``error:`` lines of a build log."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    head = lines[0].split(" - ")[0]
    details = [line for line in lines[1:] if line.lower().startswith("error")][:2]
    return "; ".join([head, *details])[:400]


def _probe(device: cl.Device) -> int:
    """Build and run ``y = 2 x`` on ``device`` in a fresh context.

    Returns
    -------
    int
        The probe kernel's preferred work-group size multiple.

    Raises
    ------
    pyopencl.Error
        If the context, build or launch fails.
    RuntimeError
        If the kernel ran but returned wrong values.
    """
    context = cl.Context([device])
    queue = cl.CommandQueue(context, device)
    with warnings.catch_warnings():  # some drivers log even for this kernel; not news
        warnings.simplefilter("ignore", cl.CompilerWarning)
        kernel = cl.Program(context, _PROBE_SOURCE).build().clperiod_probe
    x = np.arange(_PROBE_SIZE, dtype=np.float32)
    y = np.zeros_like(x)
    flags = cl.mem_flags
    x_buf = cl.Buffer(context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(context, flags.WRITE_ONLY, y.nbytes)
    kernel(queue, (_PROBE_SIZE,), None, x_buf, y_buf)
    cl.enqueue_copy(queue, y, y_buf)
    if not np.array_equal(y, 2 * x):
        raise RuntimeError("probe kernel y = 2*x returned wrong values")
    return int(
        kernel.get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, device
        )
    )


def _kind(device: cl.Device) -> str:
    for flag, kind in (
        (cl.device_type.GPU, "gpu"),
        (cl.device_type.CPU, "cpu"),
        (cl.device_type.ACCELERATOR, "accelerator"),
    ):
        if device.type & flag:
            return kind
    return "other"


def has_fp64(device: cl.Device) -> bool:
    """Whether ``device`` computes in double precision."""
    if "cl_khr_fp64" in device.extensions.split():
        return True
    try:
        return device.double_fp_config != 0
    except cl.Error:
        return False


def _make_info(
    platform: cl.Platform, platform_index: int, device: cl.Device, device_index: int, multiple: int
) -> DeviceInfo:
    vendor = device.vendor.strip()
    return DeviceInfo(
        device=device,
        platform_index=platform_index,
        device_index=device_index,
        name=device.name.strip(),
        vendor=vendor,
        platform_name=platform.name.strip(),
        platform_version=platform.version.strip(),
        driver_version=device.driver_version.strip(),
        kind=_kind(device),
        is_nvidia="nvidia" in f"{platform.name} {vendor}".lower(),
        fp64=has_fp64(device),
        global_mem=int(device.global_mem_size),
        local_mem=int(device.local_mem_size),
        max_alloc=int(device.max_mem_alloc_size),
        compute_units=int(device.max_compute_units),
        max_work_group_size=int(device.max_work_group_size),
        preferred_wg_multiple=multiple,
    )


def _inspect_platform(
    platform: cl.Platform, index: int
) -> tuple[_Platform, list[DeviceInfo], list[_Skipped]]:
    """Probe every device of one platform."""
    name, version = platform.name.strip(), platform.version.strip()
    try:
        devices = platform.get_devices()
    except cl.Error as exc:
        label = _label(index, "*", "(all devices)", name)
        return _Platform(name, version, ()), [], [_Skipped(index, label, _summarize(exc))]
    usable, skipped = [], []
    for device_index, device in enumerate(devices):
        try:
            multiple = _probe(device)
            usable.append(_make_info(platform, index, device, device_index, multiple))
        except (cl.Error, RuntimeError) as exc:
            label = _label(index, device_index, device.name, name)
            skipped.append(_Skipped(index, label, _summarize(exc)))
    return _Platform(name, version, tuple(d.name.strip() for d in devices)), usable, skipped


def _probe_all() -> _Discovery:
    try:
        platforms = cl.get_platforms()
    except (cl.Error, RuntimeError) as exc:
        return _Discovery((), (), (), _summarize(exc))
    if not platforms:
        return _Discovery((), (), (), "cl.get_platforms() returned no platform")
    records, usable, skipped = [], [], []
    for index, platform in enumerate(platforms):
        record, good, bad = _inspect_platform(platform, index)
        records.append(record)
        usable += good
        skipped += bad
    for entry in skipped:
        warnings.warn(
            f"clperiod: skipping OpenCL device {entry.label}: {entry.reason}",
            DeviceWarning,
            stacklevel=1,  # discovery is cached and shared: no caller frame is the user's
        )
    return _Discovery(tuple(records), tuple(usable), tuple(skipped), None)


def _discover() -> _Discovery:
    """Probe once per process (thread-safe) and return the cached outcome."""
    global _discovery
    _refuse_in_forked_child()
    with _discovery_lock:
        if _discovery is None:
            _discovery = _probe_all()
        return _discovery


#: Set in a child forked after this process had started OpenCL.
_forked_after_opencl = False


def _note_fork_in_child() -> None:
    """An OpenCL runtime's threads and driver state do not survive ``fork``:
    its calls in the child wait forever (PoCL) or fail. Remember that the
    parent had started one, and start the caches' locks afresh."""
    global _forked_after_opencl, _discovery_lock, _cache_lock
    _forked_after_opencl = _forked_after_opencl or _discovery is not None or bool(_contexts)
    _discovery_lock, _cache_lock = threading.Lock(), threading.Lock()


os.register_at_fork(after_in_child=_note_fork_in_child)


def _refuse_in_forked_child() -> None:
    if _forked_after_opencl:
        raise RuntimeError(
            "clperiod cannot use OpenCL in a process forked after its parent used "
            "OpenCL: the runtime does not survive fork (its calls would wait "
            "forever). Start worker processes with multiprocessing's 'spawn' or "
            "'forkserver' method (multiprocessing.get_context('spawn')), or use "
            "clperiod only in the workers"
        )


def _no_device_message(found: _Discovery) -> str:
    if found.platform_error is not None:
        return f"No OpenCL platform found ({found.platform_error}). {_INSTALL_HINT}"
    reasons = "\n".join(f"  {s.label}: {s.reason}" for s in found.skipped)
    return (
        "No usable OpenCL device: every device failed the probe kernel:\n"
        f"{reasons}\n{_INSTALL_HINT}"
    )


def list_devices() -> list[DeviceInfo]:
    """Every OpenCL device that passes the probe kernel, in platform/device order.

    The probe runs once per process; devices that fail it are reported once
    with a :class:`~clperiod.engine.devices.DeviceWarning` and listed by
    :func:`~clperiod.engine.devices.skipped_devices`.

    Returns
    -------
    list of DeviceInfo

    Raises
    ------
    RuntimeError
        If there is no OpenCL platform (no ICD installed) or no device passes
        the probe; the message says how to install a driver.
    """
    found = _discover()
    if not found.usable:
        raise RuntimeError(_no_device_message(found))
    return list(found.usable)


def skipped_devices() -> list[tuple[str, str]]:
    """``(label, reason)`` for every device or platform that failed the probe."""
    return [(s.label, s.reason) for s in _discover().skipped]


# --------------------------------------------------------------------------- selection


def _matches_part(part: str, index: int, name: str) -> bool:
    return index == int(part) if part.isdigit() else part in name.lower()


def _match_token(token: str, devices: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    """Usable devices named by one lower-case ``CLPERIOD_DEVICE`` token."""
    if token == "all":
        return list(devices)
    if ":" in token:
        plat, _, dev = token.partition(":")
        return [
            d
            for d in devices
            if _matches_part(plat, d.platform_index, d.platform_name)
            and _matches_part(dev, d.device_index, d.name)
        ]
    if token.isdigit():
        return [d for d in devices if d.platform_index == int(token)]
    if token in _VENDOR_WORDS:
        return [
            d
            for d in devices
            if any(w in f"{d.vendor} {d.platform_name}".lower() for w in _VENDOR_WORDS[token])
        ]
    if token in _KIND_WORDS:
        return [d for d in devices if d.kind == token]
    by_name = [d for d in devices if token in d.name.lower()]
    return by_name or [d for d in devices if token in d.platform_name.lower()]


def _no_match(what: str, found: _Discovery) -> ValueError:
    lines = [f"{what} matches no usable OpenCL device.", "Usable devices:"]
    lines += [f"  {d.label}" for d in found.usable] or ["  (none)"]
    if found.skipped:
        lines += ["Skipped devices:"] + [f"  {s.label}: {s.reason}" for s in found.skipped]
    lines.append(_GRAMMAR)
    return ValueError("\n".join(lines))


def _select_string(text: str, found: _Discovery, source: str) -> list[DeviceInfo]:
    tokens = [t.strip().lower() for t in text.split(",") if t.strip()]
    if not tokens:
        raise _no_match(source, found)
    chosen: list[DeviceInfo] = []
    for token in tokens:
        matched = _match_token(token, found.usable)
        if not matched:
            raise _no_match(f"{source}: {token!r}", found)
        chosen += matched
    return chosen


def _select_device(device: cl.Device, found: _Discovery) -> DeviceInfo:
    for info in found.usable:
        if info.device == device:
            return info
    raise _no_match(f"explicit device {device.name.strip()!r}", found)


def _parse_pyopencl_ctx(spec: str, found: _Discovery) -> list[DeviceInfo]:
    """Mirror ``pyopencl.choose_devices`` for ``PYOPENCL_CTX`` (non-interactive).

    ``"P[:D[,D...]]"``; each part is an index or a case-insensitive name
    substring. As in pyopencl, the *last* platform whose name matches wins, the
    first matching device wins, and a missing device part means device 0.
    """
    source = f"PYOPENCL_CTX={spec!r}"
    plat_part, _, rest = spec.partition(":")
    dev_part, _, leftover = rest.partition(":")
    if leftover:
        raise _no_match(f"{source} (too many ':' fields)", found)
    plat_index = _pick_platform(plat_part.strip().lower(), found.platforms)
    if plat_index is None:
        raise _no_match(f"{source} (platform {plat_part!r})", found)
    names = found.platforms[plat_index].device_names
    chosen = []
    for part in (dev_part or "0").split(","):
        dev_index = _pick_device(part.strip().lower(), names)
        wanted = (plat_index, dev_index)
        info = next(
            (d for d in found.usable if (d.platform_index, d.device_index) == wanted), None
        )
        if info is None:
            raise _no_match(f"{source} (device {part!r} of platform {plat_index})", found)
        chosen.append(info)
    return chosen


def _pick_platform(answer: str, platforms: Sequence[_Platform]) -> int | None:
    if not answer:
        return 0 if platforms else None
    if answer.isdigit() and int(answer) < len(platforms):
        return int(answer)
    matches = [i for i, p in enumerate(platforms) if answer in p.name.lower()]
    return matches[-1] if matches else None


def _pick_device(answer: str, names: Sequence[str]) -> int | None:
    if answer.isdigit() and int(answer) < len(names):
        return int(answer)
    return next((i for i, n in enumerate(names) if answer in n.lower()), None)


def _preference_key(info: DeviceInfo) -> tuple[int, int, int, int]:
    rank = 0 if info.is_nvidia and info.kind == "gpu" else {"gpu": 1, "cpu": 2}.get(info.kind, 3)
    return (rank, -info.compute_units, info.platform_index, info.device_index)


def _resolve_explicit(
    selection: str | DeviceInfo | cl.Device | Sequence, found: _Discovery
) -> list[DeviceInfo]:
    if isinstance(selection, str):
        return _select_string(selection, found, f"device={selection!r}")
    if isinstance(selection, DeviceInfo):
        return [selection]
    if isinstance(selection, cl.Device):
        return [_select_device(selection, found)]
    if not isinstance(selection, Sequence):
        raise TypeError(f"cannot select devices from {type(selection).__name__}: {selection!r}")
    items = list(selection)
    if not items:
        raise _no_match("empty selection []", found)
    return [info for item in items for info in _resolve_explicit(item, found)]


def _resolve(
    selection: str | DeviceInfo | cl.Device | Sequence | None,
) -> tuple[list[DeviceInfo], str]:
    """Chosen devices (duplicates kept) and the reason they were chosen."""
    found = _discover()
    if selection is not None:
        return _resolve_explicit(selection, found), "explicit selection"
    env = os.environ.get("CLPERIOD_DEVICE", "").strip()
    if env:
        return _select_string(env, found, f"CLPERIOD_DEVICE={env!r}"), f"CLPERIOD_DEVICE={env}"
    ctx = os.environ.get("PYOPENCL_CTX", "").strip()
    if ctx:
        return _parse_pyopencl_ctx(ctx, found), f"PYOPENCL_CTX={ctx}"
    usable = list_devices()
    return [min(usable, key=_preference_key)], _PREFERENCE


def select_devices(
    selection: str | DeviceInfo | cl.Device | Sequence | None = None,
) -> list[DeviceInfo]:
    """Choose the devices to run on.

    Parameters
    ----------
    selection
        ``None`` (use ``CLPERIOD_DEVICE``, else ``PYOPENCL_CTX``, else the
        best device by the preference NVIDIA CUDA GPU > GPU > CPU > other; ties
        go to more compute units, then the lower index), a selection string in
        the grammar of this module's docstring, a :class:`DeviceInfo`, a
        ``pyopencl.Device``, or a sequence of any of these (union, in order).

    Returns
    -------
    list of DeviceInfo
        At least one device, duplicates removed, in selection order.

    Raises
    ------
    ValueError
        If a selection (argument or environment variable) matches no usable
        device; the message lists the usable and skipped devices.
    RuntimeError
        If there is no usable OpenCL device at all.
    """
    chosen, _ = _resolve(selection)
    return _dedupe(chosen)


def _dedupe(chosen: Sequence[DeviceInfo]) -> list[DeviceInfo]:
    unique: dict[tuple[int, int], DeviceInfo] = {}
    for info in chosen:
        unique.setdefault((info.platform_index, info.device_index), info)
    return list(unique.values())


# --------------------------------------------------------------------------- contexts / queues


def get_context(info: DeviceInfo) -> cl.Context:
    """The process-wide context of one device (created on first use).

    Probe contexts are released after probing, so that a process pinned to one
    GPU does not hold memory on the others.
    """
    _refuse_in_forked_child()
    with _cache_lock:
        if info.device not in _contexts:
            _contexts[info.device] = cl.Context([info.device])
        return _contexts[info.device]


def get_queue(info: DeviceInfo, profiling: bool = False, role: str = "compute") -> cl.CommandQueue:
    """An in-order command queue on ``info``, cached per (device, profiling, role,
    calling thread).

    Parameters
    ----------
    info
        The device.
    profiling
        Enable event profiling (``evt.profile.start/end``).
    role
        Name of the queue; distinct roles (e.g. ``"compute"`` and ``"copy"``)
        give distinct queues, the OpenCL analogue of CUDA streams, so copies
        can overlap kernels.
    """
    # current_thread() registers a thread that threading did not start, so
    # _forget_ended_threads sees it alive
    key = (info.device, profiling, role, threading.current_thread().ident)
    context = get_context(info)
    with _cache_lock:
        if key not in _queues:
            _forget_ended_threads()
            props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
            _queues[key] = cl.CommandQueue(context, info.device, properties=props)
        return _queues[key]


def _forget_ended_threads() -> None:
    """Drop the queues and pools of threads that have ended (``_cache_lock``
    is held): a program that starts a thread per task would otherwise keep
    a queue and up to :data:`POOL_HELD_FRACTION` of device memory per task."""
    alive = {thread.ident for thread in threading.enumerate()}
    for queue_key in [k for k in _queues if k[3] not in alive]:
        del _queues[queue_key]
    for pool_key in [k for k in _pools if k[1] is not None and k[1] not in alive]:
        del _pools[pool_key]


#: Freed pool memory kept for reuse at most (fraction of the device memory);
#: beyond it :func:`trim_memory_pool` hands it back to the driver.
POOL_HELD_FRACTION = 1 / 8


def memory_pool(info: DeviceInfo) -> cl_tools.MemoryPool:
    """The process-wide device-memory pool of ``info`` (pyopencl's
    :class:`~pyopencl.tools.MemoryPool`, created on first use).

    NVIDIA allocates a buffer on its first use, and that allocation waits
    for the kernels running on the device. Pooled buffers are allocated
    once and reused, so a batch can be queued while the one before it runs.
    Freed memory stays in the pool (see :func:`trim_memory_pool`); an
    allocation that finds the device full first frees what the pool holds.
    Return a buffer only once the commands that use it have finished.
    """
    return _pool(info, None)


def thread_memory_pool(info: DeviceInfo) -> cl_tools.MemoryPool:
    """A device-memory pool of ``info`` for the calling thread alone.

    Like :func:`memory_pool`, but a buffer may go back to it while commands
    of this thread's in-order queue (:func:`get_queue`) still use it: the
    next buffer it hands out is used by later commands of the same queue.
    """
    return _pool(info, threading.current_thread().ident)


def _pool(info: DeviceInfo, thread: object) -> cl_tools.MemoryPool:
    context = get_context(info)
    with _cache_lock:
        if (info.device, thread) not in _pools:
            _forget_ended_threads()
            allocator = cl_tools.ImmediateAllocator(cl.CommandQueue(context, info.device))
            _pools[info.device, thread] = cl_tools.MemoryPool(allocator)
        return _pools[info.device, thread]


def trim_memory_pool(info: DeviceInfo, pool: cl_tools.MemoryPool | None = None) -> None:
    """Free the unused memory of ``pool`` (default :func:`memory_pool`) if it
    holds more than ``POOL_HELD_FRACTION`` of the device memory, or all pools
    of the device (the process-wide one and the threads') together hold more
    than twice that (many threads, each keeping memory for its next call)."""
    pool = memory_pool(info) if pool is None else pool
    limit = POOL_HELD_FRACTION * info.global_mem
    with _cache_lock:
        pools = [held for (device, _), held in _pools.items() if device == info.device]
    together = sum(held.managed_bytes - held.active_bytes for held in pools)
    if pool.managed_bytes - pool.active_bytes > limit or together > 2 * limit:
        pool.free_held()


def require_fp64(info: DeviceInfo) -> None:
    """Raise a ValueError naming ``info`` unless it supports double precision."""
    if not info.fp64:
        raise ValueError(
            f"precision='fp64' needs double precision, which {info.label} lacks; "
            "use precision='fp32' or another device"
        )


def upload(
    queue: cl.CommandQueue, array: np.ndarray, pending: list[cl.Event] | None = None
) -> cl.Buffer:
    """A read-only device copy of ``array`` (one element if empty: OpenCL
    buffers cannot be empty), written through ``queue``.

    Without ``pending`` the call waits for the copy (:func:`write`). With it,
    the copy is only queued and its event (which holds ``array``) appended to
    ``pending``; keep the list until a later wait on ``queue`` (a blocking
    read, ``finish``) has passed the copy. Creating the buffer with
    ``COPY_HOST_PTR`` instead would copy while holding the GIL.
    """
    array = np.ascontiguousarray(array if array.size else np.zeros(1, array.dtype))
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_ONLY, array.nbytes)
    if pending is None:
        write(queue, buffer, array)
    else:
        pending.append(cl.enqueue_copy(queue, buffer, array, is_blocking=False))
    return buffer


def write(queue: cl.CommandQueue, buffer: cl.Buffer, array: np.ndarray) -> None:
    """Copy ``array`` into ``buffer`` and wait until the copy is done, with the
    GIL released.

    A blocking write may return as soon as ``array`` can be reused, before
    the transfer is complete; pyopencl then waits for it in the event's
    destructor while holding the GIL, which stops every other host thread
    (on NVIDIA a write can wait there for another queue's kernel).
    """
    cl.enqueue_copy(queue, buffer, array, is_blocking=False).wait()


# --------------------------------------------------------------------------- report


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _describe_device(d: DeviceInfo) -> list[str]:
    return [
        f"  {d.label}",
        f"      kind {d.kind}, vendor {d.vendor}, driver {d.driver_version}, "
        f"fp64 {'yes' if d.fp64 else 'no'}",
        f"      global memory {_fmt_bytes(d.global_mem)}, local memory {_fmt_bytes(d.local_mem)}, "
        f"max allocation {_fmt_bytes(d.max_alloc)}",
        f"      compute units {d.compute_units}, max work-group size {d.max_work_group_size}, "
        f"preferred work-group multiple {d.preferred_wg_multiple}",
        "      probe: ok",
    ]


def _describe_selection() -> list[str]:
    try:
        chosen, reason = _resolve(None)
    except (ValueError, RuntimeError) as exc:
        return ["selected: none", f"reason: {exc}"]
    labels = [d.label for d in _dedupe(chosen)]
    return ["selected: " + "\n          ".join(labels), f"reason: {reason}"]


def describe() -> str:
    """Human-readable report of platforms, devices, probe results and the choice.

    Used by ``clperiod info``. Never raises for a missing driver; the report
    then carries the install hint instead.
    """
    found = _discover()
    if found.platform_error is not None:
        return _no_device_message(found)
    lines = []
    for index, platform in enumerate(found.platforms):
        lines.append(f"platform {index}: {platform.name} ({platform.version})")
        for d in found.usable:
            if d.platform_index == index:
                lines += _describe_device(d)
        for s in found.skipped:
            if s.platform_index == index:
                lines += [f"  {s.label}", f"      probe: skipped: {s.reason}"]
    return "\n".join(lines + _describe_selection())
