"""The choice of ``lombscargle(algorithm="auto")``: direct sums or NUFFT, per object.

A light curve of ``N`` searched points on ``nf`` frequencies costs, in
seconds, about

* direct: ``N nf / rate + N serial``, the pairs summed at the device's rate
  plus each point's share of the per-frequency loop that a single object
  cannot spread over the device;
* NUFFT: ``N point + G cell + N w crowd / G``, the preparation of the
  points, the ``G`` fine-grid cells of its three transforms (spread, FFT,
  correction), and the gather of ``N w / G`` points into each cell when
  the points crowd a small grid (``w`` the kernel width).

plus a fixed cost per call of each path. Each object goes where its cost
is lower, unless running the path of fewer objects costs more than it
saves: a catalog that mixes short and long light curves runs both paths in
one call. The constants were fitted to
``bench/bench_nufft.py crossover`` (one light curve, N = 10 .. 10^7, nf = 10^3
.. 10^7) on an H100 (GPUs) and on PoCL with two cores (CPUs; ``point`` and
``crowd`` again after the point-major spreading of 2026-11-26);
``bench/results`` holds the measurements and the model's worst choice.

On an array of ``nf`` frequencies (:class:`~clperiod.FrequencyArray`), the
direct sums take one exact phase per pair (``array_rate``), and the type-3
NUFFT (:mod:`clperiod.periodograms.nufft_type3`) costs its points as the
type-1 path does, ``G`` cells of two transforms on its lattice, and the
interpolation (``target``: per frequency and object, three sums of ``w``
lattice samples and the power). These two constants are not yet fitted to
GPU measurements: the GPU values are conservative estimates (they favour
the direct sums); the CPU values are PoCL timings on two shared cores
(about 1e8 pairs per second direct, 5e-7 s per frequency, mostly the ``2 w``
kernel exponentials).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clperiod.engine.devices import DeviceInfo

__all__ = ["COSTS", "Costs", "prefers_nufft", "prefers_type3"]


@dataclass(frozen=True)
class Costs:
    """Seconds per unit of work of both algorithms on one kind of device.

    Attributes
    ----------
    rate : float
        Direct point-frequency pairs per second.
    serial : float
        Direct seconds per point that do not shrink with fewer frequencies.
    point, cell : float
        NUFFT seconds per point and per fine-grid cell.
    crowd : float
        NUFFT seconds per point gathered into one cell, times the cells.
    fixed_direct, fixed_nufft : float
        Seconds of a call of each path beyond its objects' costs.
    array_rate : float
        Direct point-frequency pairs per second on an array of frequencies.
    target : float
        Type-3 NUFFT seconds per frequency of an array and object.
    """

    rate: float
    serial: float
    point: float
    cell: float
    crowd: float
    fixed_direct: float
    fixed_nufft: float
    array_rate: float
    target: float

    def direct(self, n: np.ndarray, nf: int) -> np.ndarray:
        """Seconds of the direct sums of objects of ``n`` points."""
        return n * (nf / self.rate + self.serial)

    def nufft(self, n: np.ndarray, n_grid: int, width: int) -> np.ndarray:
        """Seconds of the NUFFT of objects of ``n`` points on ``n_grid`` cells."""
        return (
            n * self.point
            + np.where(n > 0, 3 * n_grid * self.cell, 0.0)
            + (self.crowd * n * width / n_grid)
        )

    def direct_array(self, n: np.ndarray, nf: int) -> np.ndarray:
        """Seconds of the direct sums of objects of ``n`` points on an array of ``nf``."""
        return n * (nf / self.array_rate + self.serial)

    def type3(self, n: np.ndarray, nf: int, n_grid: int, width: int) -> np.ndarray:
        """Seconds of the type-3 NUFFT of objects of ``n`` points at ``nf``
        frequencies through a lattice of ``n_grid`` cells."""
        return (
            n * self.point
            + np.where(n > 0, 2 * n_grid * self.cell + nf * self.target, 0.0)
            + (self.crowd * n * width / n_grid)
        )


#: By device kind ("gpu" or "cpu": PoCL and other CPU runtimes).
COSTS = {
    "gpu": Costs(
        rate=1.5e12,
        serial=3.4e-7,
        point=2.3e-8,
        cell=8e-11,
        crowd=1.6e-5,
        fixed_direct=1.0e-3,
        fixed_nufft=1.6e-3,
        array_rate=1.5e12,  # not measured: the uniform grids' rate, which favours direct
        target=1e-9,  # not measured: an estimate above the kernel's memory traffic
    ),
    "cpu": Costs(
        rate=4e8,
        serial=0.0,
        point=9e-8,
        cell=1.5e-8,
        crowd=2.5e-6,
        fixed_direct=1.0e-3,
        fixed_nufft=1.3e-3,
        array_rate=1e8,
        target=5e-7,
    ),
}


def prefers_nufft(
    lengths: np.ndarray, nf: int, n_grid: int, width: int, devices: list[DeviceInfo]
) -> np.ndarray:
    """Per object, whether ``algorithm="auto"`` runs it through the NUFFT.

    The cheapest of: every object direct, every object by NUFFT, or each by
    its cheaper path (both fixed costs), with the costs of the slowest kind
    among ``devices``; ``lengths`` are the points searched (0: an object
    whose status is decided before the search, which either path reports).
    """
    costs = _costs_of(devices)
    n = np.asarray(lengths, dtype=np.float64)
    return _cheapest(costs, costs.direct(n, nf), costs.nufft(n, n_grid, width))


def prefers_type3(
    lengths: np.ndarray, nf: int, n_grid: int, width: int, devices: list[DeviceInfo]
) -> np.ndarray:
    """Per object, whether ``algorithm="auto"`` runs it through the type-3
    NUFFT on an array of ``nf`` frequencies (lattice of ``n_grid`` cells),
    chosen as :func:`prefers_nufft` chooses."""
    costs = _costs_of(devices)
    n = np.asarray(lengths, dtype=np.float64)
    return _cheapest(costs, costs.direct_array(n, nf), costs.type3(n, nf, n_grid, width))


def _costs_of(devices: list[DeviceInfo]) -> Costs:
    """The costs of the slowest kind among ``devices``."""
    return COSTS["cpu" if any(d.kind == "cpu" for d in devices) else "gpu"]


def _cheapest(costs: Costs, direct: np.ndarray, by_nufft: np.ndarray) -> np.ndarray:
    """Per object, whether it runs through the NUFFT in the cheapest of: all
    direct, all by NUFFT, each by its cheaper path (both fixed costs)."""
    options = {
        "direct": (costs.fixed_direct + direct.sum(), np.zeros(direct.size, dtype=bool)),
        "nufft": (costs.fixed_nufft + by_nufft.sum(), np.ones(direct.size, dtype=bool)),
        "mixed": (
            costs.fixed_direct + costs.fixed_nufft + np.minimum(direct, by_nufft).sum(),
            by_nufft < direct,
        ),
    }
    return min(options.values(), key=lambda option: option[0])[1]
