"""Device-memory planning: split work into batches that fit a device.

A batch is a run of consecutive objects (an object is never split) and the
frequency tiles to evaluate for them, cut into chunks when the periodogram
must be returned and would not fit. The budget is a fraction ``beta`` of the
device's global memory, and no single buffer exceeds the device's maximum
allocation size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .device import DeviceInfo

__all__ = ["Batch", "KernelShape", "plan_batches", "DEFAULT_BETA"]

#: Fraction of a device's global memory that one batch may use.
DEFAULT_BETA = 0.5


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
class Batch:
    """Objects ``[obj_start, obj_stop)`` and tile chunks ``(first, count)``."""

    obj_start: int
    obj_stop: int
    tile_chunks: tuple[tuple[int, int], ...]

    @property
    def n_objects(self) -> int:
        return self.obj_stop - self.obj_start


def plan_batches(
    lengths: np.ndarray,
    nf: int,
    shape: KernelShape,
    device: DeviceInfo,
    *,
    point_bytes: int,
    real_bytes: int,
    top_k: int,
    periodogram: bool,
    beta: float = DEFAULT_BETA,
) -> list[Batch]:
    """Split ``len(lengths)`` objects into batches that fit ``device``.

    Parameters
    ----------
    lengths
        Points per object, in catalog order.
    nf
        Number of grid frequencies.
    shape
        Kernel launch shape (tile size).
    device
        Target device; its global memory and maximum allocation are respected.
    point_bytes
        Device bytes per observation (all per-point arrays together).
    real_bytes
        Size of the kernel's real type.
    top_k
        Peaks kept per object.
    periodogram
        Whether each object's full periodogram is written.
    beta
        Fraction of global memory a batch may use.

    Returns
    -------
    list of Batch
        Covering every object once, in order.

    Raises
    ------
    MemoryError
        When a single object's data alone exceed the budget.
    """
    budget = int(beta * device.global_mem)
    max_alloc = device.max_alloc
    n_tiles = shape.n_tiles(nf)
    per_object = 4 * 4 + n_tiles * top_k * (real_bytes + 4) + top_k * (real_bytes + 4)
    per_point = point_bytes
    point_array_bytes = max(1, point_bytes // 4)  # the largest single per-point array

    batches: list[Batch] = []
    start = 0
    n_objects = len(lengths)
    while start < n_objects:
        stop, used_points = start, 0
        while stop < n_objects:
            points = used_points + int(lengths[stop])
            objects = stop + 1 - start
            fixed = points * per_point + objects * per_object
            partial_bytes = objects * n_tiles * top_k * (real_bytes + 4)
            if stop > start and (
                fixed > budget // 2
                or points * point_array_bytes > max_alloc
                or partial_bytes > max_alloc
                or (periodogram and objects * shape.owned * real_bytes > max_alloc)
            ):
                break
            used_points, stop = points, stop + 1
        if used_points * per_point > budget:
            raise MemoryError(
                f"object {start} has {int(lengths[start])} points, more than fits in "
                f"{budget / 2**30:.2f} GiB of {device.label}"
            )
        objects = stop - start
        chunks: tuple[tuple[int, int], ...] = ((0, n_tiles),)
        if periodogram:
            room = min(max_alloc, max(budget - used_points * per_point, budget // 4) // 2)
            tiles_per_chunk = max(1, room // (objects * shape.owned * real_bytes))
            chunks = tuple(
                (first, min(tiles_per_chunk, n_tiles - first))
                for first in range(0, n_tiles, tiles_per_chunk)
            )
        batches.append(Batch(start, stop, chunks))
        start = stop
    return batches
