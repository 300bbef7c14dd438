"""Low-frequency bins of Lomb-Scargle periodograms: which ones the fast paths
cannot evaluate, and their powers from a stable least-squares fit.

At a frequency ``f`` with ``f T`` small (``T`` the baseline) the harmonics of
the model are nearly constant or linear over the observations, so the normal
equations that every device path solves (one term and ``nterms`` terms; the
direct sums, and the type-1 and type-3 NUFFTs) are nearly singular: their
coefficients grow like ``(f T)**-(2 nterms)`` and the errors of the sums
(rounding, or the transforms' tolerance) reach the power multiplied by
their square. Below about ``f T = 0.3`` (one term) to ``0.5`` (three terms)
the powers can miss the accuracy bound, or come out NaN.

The host decides, per object, which of the lowest frequencies to recompute
(:func:`low_frequency_fits`): it fits the model exactly at the lowest
frequency above 0, estimates the error the device path makes there from
the size of the fit's coefficients in the harmonic basis
(:func:`device_error`) and moves up the frequencies until that estimate is
within the bound. The fits are least squares by Householder QR of the
weighted design in a basis of the same model that stays well conditioned at
low frequencies: with ``theta = 2 pi f (t - t_mid)``, ``s = sin theta`` and
``v = 1 - cos theta = 2 sin^2(theta / 2)``, the harmonics span

* with the mean: ``1, v, ..., v**K`` and ``s, s v, ..., s v**(K - 1)``,
* without it: ``cos theta`` and ``v**j (v - (2 j + 1) / (j + 1))``,
  ``j = 1 .. K - 1`` (the polynomials in ``v`` of degree ``<= K`` whose
  Chebyshev constant vanishes), and the same odd functions,

since ``cos(h theta)`` is a polynomial of degree ``h`` in ``cos theta`` and
``sin(h theta)`` is ``sin theta`` times one of degree ``h - 1``. A frequency
at which this fit is not determined in float64 (``f = 0``, fewer distinct
phases than unknowns) gets NaN, the device paths' value there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from clperiod.catalog import Catalog
from clperiod.grid import FrequencyGrid
from clperiod.periodograms import nufft
from clperiod.periodograms.inputs import NO_PEAK, segment_sum
from clperiod.periodograms.standardize import standardize

__all__ = [
    "DIRECT_EPS",
    "ERROR_MARGIN",
    "WALK_LIMIT",
    "FitPoints",
    "Fits",
    "Model",
    "LowFrequencyFits",
    "device_error",
    "error_unit",
    "effective_baselines",
    "exact_fits",
    "fit_points",
    "leading_frequencies",
    "low_frequency_fits",
    "write_rows",
    "ExactPowers",
    "standard_to",
    "top_k_peaks",
]

#: Accuracy bound of the direct paths' powers relative to the peak, by
#: ``fp64``: that of the NUFFT's default.
DIRECT_EPS = nufft.DEFAULT_EPS
#: The walk over the lowest frequencies stops at ``f T_eff`` of this times
#: ``nterms`` (``T_eff``: :attr:`FitPoints.baseline`): the normal equations
#: of the model are well conditioned above it.
WALK_LIMIT = 1.0
#: Factor of :func:`device_error` over the first-order error of the normal
#: equations: their measured errors reach about a third of it.
ERROR_MARGIN = 10.0
#: A fit counts as determined when its estimated float64 error is within the
#: bound, and every diagonal element of its triangular factor exceeds this
#: fraction of its column's norm.
RANK_TOLERANCE = 1e3 * float(np.finfo(np.float64).eps)
#: Most values of one batch of design matrices (32 MiB of float64).
_BLOCK_VALUES = 1 << 22
#: Rows of one block of a long object's design (accumulated by stacking the
#: triangular factors).
_BLOCK_ROWS = 1 << 15


@dataclass(frozen=True)
class FitPoints:
    """Standardized points of a catalog's objects, for the exact fits.

    Attributes
    ----------
    t : ndarray
        Flat times from each object's mid-range epoch.
    sw, su : ndarray
        Flat ``sqrt(w)`` and ``sqrt(w) u`` (``w``: weights summing to 1 per
        object, ``u``: standardized values, centred when the model asks).
    offsets : ndarray of int64
        ``(n_objects + 1,)`` offsets of the objects' points.
    ok : ndarray of bool
        Objects with enough points that vary.
    weight_norm : ndarray
        Per object ``sqrt(sum w**2)``.
    """

    t: np.ndarray
    sw: np.ndarray
    su: np.ndarray
    offsets: np.ndarray
    ok: np.ndarray
    weight_norm: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Points of each object."""
        return np.diff(self.offsets)


def fit_points(catalog: Catalog, *, min_points: int, center: bool, use_dy: bool) -> FitPoints:
    """The :class:`FitPoints` of ``catalog`` (validated): objects with at least
    ``min_points`` points whose values vary are OK; ``center`` subtracts each
    object's weighted mean; ``use_dy`` weighs by ``dy**-2``."""
    offsets = catalog.offsets.astype(np.int64)
    values = standardize(catalog.y, catalog.dy if use_dy else None, offsets, center)
    sw = np.sqrt(values.wn)
    return FitPoints(
        t=catalog.t - np.repeat(np.nan_to_num(catalog.epochs()), catalog.lengths),
        sw=sw,
        su=sw * values.u,
        offsets=offsets,
        ok=(catalog.lengths >= min_points) & ~values.flat,
        weight_norm=np.sqrt(segment_sum(values.wn * values.wn, offsets)),
    )


def effective_baselines(catalog: Catalog) -> np.ndarray:
    """Per object ``min(T, sqrt(12) sigma_t)`` (``T``: baseline, ``sigma_t``:
    standard deviation of the times), ``T`` for evenly spread times and less
    for times bunched in part of the baseline: the scale of the low
    frequencies (NaN for objects without points)."""
    lengths = catalog.lengths
    with np.errstate(invalid="ignore", divide="ignore"):
        t = catalog.t - np.repeat(np.nan_to_num(catalog.epochs()), lengths)
        mean = segment_sum(t, catalog.offsets) / lengths
        spread = segment_sum((t - np.repeat(np.nan_to_num(mean), lengths)) ** 2, catalog.offsets)
        return np.fmin(catalog.baselines(), np.sqrt(12 * spread / lengths))


# {{{ exact fits


def _unknowns(nterms: int, fit_mean: bool) -> int:
    return 2 * nterms + int(fit_mean)


def _stable_columns(cycles: np.ndarray, nterms: int, fit_mean: bool) -> list[np.ndarray]:
    """The model's basis functions (module notes) at phases ``cycles`` (in
    cycles, reduced to ``[-1/2, 1/2]``), in the order of :func:`_basis_to_harmonics`."""
    half = np.sin(np.pi * cycles)
    v = 2 * half * half
    s = np.sin(2 * np.pi * cycles)
    even: list[np.ndarray] = []
    if fit_mean:
        power = np.ones_like(v)
        even.append(power)
        for _ in range(nterms):
            power = power * v
            even.append(power)
    else:
        even.append(np.cos(2 * np.pi * cycles))
        power = v
        for j in range(1, nterms):
            even.append(power * (v - (2 * j + 1) / (j + 1)))
            power = power * v
    odd = [s]
    for _ in range(1, nterms):
        odd.append(odd[-1] * v)
    return even + odd


@functools.cache
def _basis_to_harmonics(nterms: int, fit_mean: bool) -> np.ndarray:
    """``D`` with the basis functions of :func:`_stable_columns` equal to
    ``D @ [1 (with the mean), cos h theta, sin h theta (h = 1 .. K)]``: the
    coefficients of a fit in the harmonics are ``D.T`` times its own."""
    theta = np.linspace(-np.pi, np.pi, 8 * nterms + 8, endpoint=False) + 0.1
    harmonics = [np.ones_like(theta)] if fit_mean else []
    harmonics += [np.cos(h * theta) for h in range(1, nterms + 1)]
    harmonics += [np.sin(h * theta) for h in range(1, nterms + 1)]
    stable = np.column_stack(_stable_columns(theta / (2 * np.pi), nterms, fit_mean))
    transposed, *_ = np.linalg.lstsq(np.column_stack(harmonics), stable, rcond=None)
    return transposed.T


@dataclass(frozen=True)
class Fits:
    """Exact least-squares fits of objects at frequencies (:func:`exact_fits`).

    Attributes
    ----------
    power : ndarray
        Standard powers ``1 - chi2 / chi2_ref``; NaN where the fit is not
        determined in float64.
    amplification : ndarray
        The norm of the fit's coefficients ``c`` in the harmonic basis (the
        normal equations' unknowns) over ``sqrt(chi2_ref)``.
    """

    power: np.ndarray
    amplification: np.ndarray


def exact_fits(
    points: FitPoints,
    objects: np.ndarray,
    frequencies: np.ndarray,
    nterms: int,
    fit_mean: bool,
) -> Fits:
    """The model's least-squares fit of object ``objects[i]`` at
    ``frequencies[i]`` for every ``i`` (module notes), batched over requests
    of similar lengths."""
    n = objects.size
    power, amplification = np.full(n, np.nan), np.full(n, np.nan)
    lengths = points.lengths[objects]
    order = np.argsort(lengths, kind="stable")
    columns = _unknowns(nterms, fit_mean) + 1
    start = 0
    while start < n:
        longest = int(lengths[order[start]])
        rows = max(1, _BLOCK_VALUES // (columns * max(1, min(2 * longest, _BLOCK_ROWS))))
        stop = start + 1
        while stop < n and stop - start < rows and lengths[order[stop]] <= 2 * longest:
            stop += 1
        group = order[start:stop]
        power[group], amplification[group] = _fit_group(
            points, objects[group], frequencies[group], nterms, fit_mean
        )
        start = stop
    return Fits(power, amplification)


def _fit_group(
    points: FitPoints,
    objects: np.ndarray,
    frequencies: np.ndarray,
    nterms: int,
    fit_mean: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_fits` of requests padded to one length (zero rows weigh
    nothing), their rows in blocks whose triangular factors are stacked."""
    m = _unknowns(nterms, fit_mean)
    lengths = points.lengths[objects]
    longest = int(lengths.max())
    factor: np.ndarray | None = None
    norms = np.zeros((objects.size, m))
    for first in range(0, longest, _BLOCK_ROWS):
        j = np.arange(first, min(first + _BLOCK_ROWS, longest))
        inside = j[None, :] < lengths[:, None]
        index = np.where(inside, points.offsets[objects, None] + j[None, :], 0)
        cycles = frequencies[:, None] * points.t[index]
        cycles -= np.rint(cycles)
        sw = np.where(inside, points.sw[index], 0.0)
        design = np.stack(
            [c * sw for c in _stable_columns(cycles, nterms, fit_mean)]
            + [np.where(inside, points.su[index], 0.0)],
            axis=-1,
        )
        norms += np.sum(design[..., :m] ** 2, axis=1)
        if factor is not None:
            design = np.concatenate([factor, design], axis=1)
        factor = _triangular_factor(design)
    assert factor is not None
    return _power_of_factor(factor, np.sqrt(norms), nterms, fit_mean)


def _triangular_factor(design: np.ndarray) -> np.ndarray:
    """The triangular factor ``R`` (``(n, c, c)``) of a stack of matrices
    ``(n, rows, c)``, ``rows >= c``, by Householder reflections (in NumPy
    loops over the columns: no BLAS threads for these small factorizations)."""
    a = design.copy()
    columns = a.shape[2]
    for j in range(columns):
        v = a[:, j:, j].copy()
        norm = np.sqrt(np.einsum("nr,nr->n", v, v))
        v[:, 0] += np.copysign(norm, v[:, 0])
        size = np.einsum("nr,nr->n", v, v)
        scale = np.divide(2.0, size, out=np.zeros_like(size), where=size > 0)
        projection = np.einsum("nr,nrc->nc", v, a[:, j:, j:]) * scale[:, None]
        a[:, j:, j:] -= v[:, :, None] * projection[:, None, :]
    return np.triu(a[:, :columns, :])


def _power_of_factor(
    factor: np.ndarray, norms: np.ndarray, nterms: int, fit_mean: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Standard powers and amplifications (:class:`Fits`) from the triangular
    factors ``(n, m + 1, m + 1)`` of the weighted designs with the values as
    last column, and the designs' column norms ``(n, m)``."""
    m = norms.shape[1]
    diagonal = np.abs(np.diagonal(factor[:, :m, :m], axis1=1, axis2=2))
    projection = factor[:, :m, m]
    residual = np.abs(factor[:, m, m])
    explained = np.sum(projection * projection, axis=1)
    reference = explained + residual * residual
    full_rank = np.all(diagonal > RANK_TOLERANCE * norms, axis=1)
    triangle = np.where(full_rank[:, None, None], factor[:, :m, :m], np.eye(m))
    coefficients = np.linalg.solve(triangle, projection[..., None])[..., 0]
    harmonic = coefficients @ _basis_to_harmonics(nterms, fit_mean)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        amplification = np.sqrt(np.sum(harmonic * harmonic, axis=1) / reference)
        # first-order error of chi2 from float64 errors of the design's columns
        error = _EPS64 * residual * np.sum(np.abs(coefficients) * norms, axis=1)
        determined = full_rank & (error <= _HOST_BOUND * reference)
        power = np.where(determined, explained / reference, np.nan)
    return power, np.where(determined, amplification, np.inf)


_EPS64 = float(np.finfo(np.float64).eps)
_EPS = {True: _EPS64, False: float(np.finfo(np.float32).eps)}
_DTYPE = {True: np.float64, False: np.float32}
#: Largest estimated float64 error of an exact fit's standard power that
#: counts as determined.
_HOST_BOUND = 1e-11


# }}}

# {{{ which bins, and their powers


def leading_frequencies(grid: FrequencyGrid | np.ndarray, limit: float) -> np.ndarray:
    """The frequencies of ``grid`` (uniform, or distinct and rising) below ``limit``."""
    if isinstance(grid, FrequencyGrid):
        count = 0 if not limit > grid.fmin else math.ceil((limit - grid.fmin) / grid.df)
        return np.asarray(grid.frequency(np.arange(min(count, grid.nf))), dtype=np.float64)
    return grid[: int(np.searchsorted(grid, limit))]


def error_unit(points: FitPoints, *, fp64: bool, tolerance: float | None) -> np.ndarray:
    """Per object, the error of a device path's window sums relative to their
    scale (the weights sum to 1): the transforms' ``tolerance``, or for
    direct sums (``tolerance`` None) the precision's rounding, in float64
    times the square root of the effective number of points."""
    if tolerance is not None:
        return np.full(points.ok.size, tolerance)
    if not fp64:
        return np.full(points.ok.size, _EPS[False])
    with np.errstate(divide="ignore"):
        return _EPS[True] / points.weight_norm


def device_error(amplification: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Estimated error of a device path's standard power where the normal
    equations are ill conditioned: their first-order response ``c.dA c`` to
    errors ``unit`` of the sums (``c``: the coefficients in the harmonic
    basis, :class:`Fits`), times :data:`ERROR_MARGIN`."""
    return ERROR_MARGIN * unit * amplification * amplification


@dataclass(frozen=True)
class Model:
    """A periodogram's model: ``nterms`` harmonics, a floating mean
    (``fit_mean``), centred values (``center_data``), ``dy**-2`` weights
    (``use_dy``); objects need ``min_points`` points."""

    nterms: int
    fit_mean: bool
    center_data: bool
    use_dy: bool

    @property
    def min_points(self) -> int:
        """Fewest points of a searched object: the unknowns and one more."""
        return _unknowns(self.nterms, self.fit_mean) + 1


@dataclass(frozen=True)
class LowFrequencyFits:
    """Exact powers of the lowest bins that a device path cannot evaluate.

    Attributes
    ----------
    first : int
        The first bin above frequency 0 (bin 0 at ``f = 0`` keeps the device
        path's NaN).
    stop : ndarray of int
        Per object: bins ``first .. stop - 1`` take the exact powers (none
        where ``stop <= first``).
    power : ndarray, shape (n_objects, width)
        Standard powers of bins ``first .. first + width - 1`` (NaN where not
        determined in float64, and past each object's ``stop``).
    """

    first: int
    stop: np.ndarray
    power: np.ndarray

    @property
    def objects(self) -> np.ndarray:
        """The objects with exact powers."""
        return np.flatnonzero(self.stop > self.first)

    def any(self) -> bool:
        """Whether some object has exact powers."""
        return bool(np.any(self.stop > self.first))

    @classmethod
    def none(cls, n_objects: int) -> LowFrequencyFits:
        """No bin of any object."""
        return cls(0, np.zeros(n_objects, dtype=np.int64), np.empty((n_objects, 0)))


def low_frequency_fits(
    catalog: Catalog,
    grid: FrequencyGrid | np.ndarray,
    model: Model,
    *,
    fp64: bool,
    tolerance: float | None,
    eps: float,
) -> LowFrequencyFits:
    """The bins of each object whose device powers miss the accuracy bound, and
    their exact powers.

    Walks up the frequencies from the first above 0, all objects at once:
    the exact fit of each (:func:`exact_fits`) gives the power and the
    estimated device error (:func:`device_error`); a bin whose estimate
    exceeds ``eps`` times the highest exact power so far (a lower bound of
    the object's peak), or whose fit is not determined, takes the exact
    power, and an object's walk ends at its first bin within the bound, or
    at ``f = WALK_LIMIT nterms / T_eff`` (:func:`effective_baselines`).
    Objects whose first frequency above 0 is there already cost nothing
    more than their ``T_eff``.

    Parameters
    ----------
    catalog
        The objects (validated).
    grid
        The frequencies: a uniform grid, or distinct rising ones.
    model
        The periodogram's model.
    fp64, tolerance
        The device path: its precision, and the tolerance of its transforms
        (None: direct sums), for :func:`error_unit`.
    eps
        Accuracy bound of the powers relative to the peak.
    """
    n_objects = catalog.n_objects
    with np.errstate(divide="ignore", invalid="ignore"):
        limit = WALK_LIMIT * model.nterms / effective_baselines(catalog)
    walks = catalog.lengths >= model.min_points
    frequencies = leading_frequencies(grid, float(np.max(limit[walks], initial=0.0)))
    first = int(np.searchsorted(frequencies, 0.0, side="right"))
    walks &= first < frequencies.size
    walks[walks] = frequencies[first] < limit[walks]
    if not walks.any():
        return LowFrequencyFits.none(n_objects)
    chosen = np.flatnonzero(walks)
    points = fit_points(
        catalog.subset(chosen),
        min_points=model.min_points,
        center=model.fit_mean or model.center_data,
        use_dy=model.use_dy,
    )
    unit = error_unit(points, fp64=fp64, tolerance=tolerance)
    limit = np.where(points.ok, limit[chosen], 0.0)
    stop = np.full(chosen.size, first, dtype=np.int64)
    reached = np.zeros(chosen.size)
    found: list[np.ndarray] = []
    active = np.flatnonzero(frequencies[first] < limit)
    k = first
    while active.size:
        fits = exact_fits(
            points, active, np.full(active.size, frequencies[k]), model.nterms, model.fit_mean
        )
        reached[active] = np.fmax(reached[active], fits.power)
        outside = device_error(fits.amplification, unit[active]) > eps * reached[active]
        column = np.full(chosen.size, np.nan)
        column[active] = fits.power
        found.append(column)
        active = active[outside]
        stop[active] = k + 1
        k += 1
        if k == frequencies.size:
            break
        active = active[frequencies[k] < limit[active]]
    width = int(stop.max()) - first
    power = np.full((n_objects, width), np.nan)
    if width:
        beyond = np.arange(first, first + width)[None, :] >= stop[:, None]
        power[chosen] = np.where(beyond, np.nan, np.column_stack(found[:width]))
    stops = np.full(n_objects, first, dtype=np.int64)
    stops[chosen] = stop
    return LowFrequencyFits(first, stops, power)


# }}}

# {{{ applying them


def write_rows(
    queue: cl.CommandQueue,
    buffer: cl.MemoryObjectHolder,
    values: np.ndarray,
    fits: LowFrequencyFits,
    objects: tuple[int, int],
    bins: tuple[int, int],
) -> list[cl.Event]:
    """Queue the copies of the exact powers ``values`` (``fits.power`` in the
    buffer's normalization and type) into the device powers ``buffer`` whose
    rows are objects ``objects = (first, count)`` and whose columns are the
    grid bins ``bins = (lo, hi)``: one rectangular copy per run of
    neighbouring objects with the same bins. Keep the returned events until
    the queue has run them (they hold the host arrays)."""
    first, count = objects
    lo, hi = bins
    itemsize = values.dtype.itemsize
    stop = np.minimum(fits.stop[first : first + count], hi)
    start = max(fits.first, lo)
    events = []
    row = 0
    while row < count:
        end = row + 1
        while end < count and stop[end] == stop[row]:
            end += 1
        if stop[row] > start:
            block = np.ascontiguousarray(
                values[first + row : first + end, start - fits.first : stop[row] - fits.first]
            )
            events.append(
                cl.enqueue_copy(
                    queue,
                    buffer,
                    block,
                    buffer_origin=((start - lo) * itemsize, row),
                    host_origin=(0, 0),
                    region=(block.shape[1] * itemsize, end - row),
                    buffer_pitches=((hi - lo) * itemsize,),
                    host_pitches=(block.shape[1] * itemsize,),
                    is_blocking=False,
                )
            )
        row = end
    return events


def standard_to(z: np.ndarray, normalization: str) -> np.ndarray:
    """Standard powers ``z`` in astropy's ``"standard"``, ``"model"`` or
    ``"log"`` normalization."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if normalization == "model":
            return z / (1 - z)
        if normalization == "log":
            return -np.log1p(-z)
    return z


@dataclass
class ExactPowers:
    """The power stage of a NUFFT search (``nufft.Transforms.power``), then
    the copies of the exact powers of each object's low-frequency bins
    (:func:`low_frequency_fits`, computed while the device works) over the
    transforms'.

    Attributes
    ----------
    power
        The transforms' power stage, ``power(queue, grids, points, out,
        normalization)``.
    catalog
        The batch.
    grid
        Its frequencies: a uniform grid, or distinct rising ones.
    model, fp64, tolerance, eps
        As :func:`low_frequency_fits`.
    """

    power: Callable[..., None]
    catalog: Catalog
    grid: FrequencyGrid | np.ndarray
    model: Model
    fp64: bool
    tolerance: float
    eps: float
    _events: list = field(default_factory=list, repr=False)

    def __call__(
        self,
        queue: cl.CommandQueue,
        grids: cl.MemoryObjectHolder,
        points: Any,
        out: cl.MemoryObjectHolder,
        normalization: str,
    ) -> None:
        self.power(queue, grids, points, out, normalization)
        fits = low_frequency_fits(
            self.catalog,
            self.grid,
            self.model,
            fp64=self.fp64,
            tolerance=self.tolerance,
            eps=self.eps,
        )
        if fits.any():
            values = standard_to(fits.power, normalization).astype(_DTYPE[self.fp64])
            nf = self.grid.nf if isinstance(self.grid, FrequencyGrid) else self.grid.size
            self._events += write_rows(
                queue, out, values, fits, (0, self.catalog.n_objects), (0, nf)
            )


def top_k_peaks(rows: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``top_k`` highest distinct peaks of each periodogram row, as the
    device kernels find them: a peak is strictly above its left neighbour and
    not below its right one (neighbours outside the row or NaN count as
    ``-inf``; NaN is never a peak), best first, equal values in grid order.

    Returns
    -------
    values, indices : ndarray, shape (n_rows, top_k)
        float64 peak powers (``-inf`` where a row has fewer peaks) and their
        bins (int32, :data:`~clperiod.periodograms.inputs.NO_PEAK` there).
    """
    n_rows, nf = rows.shape
    value = rows.astype(np.float64)
    edge = np.full((n_rows, 1), -np.inf)
    left = np.concatenate([edge, value[:, :-1]], axis=1)
    right = np.concatenate([value[:, 1:], edge], axis=1)
    peak = ~np.isnan(value) & ~(left >= value) & ~(right > value)
    candidate = np.where(peak, value, -np.inf)
    if nf > top_k:
        kth = np.partition(candidate, nf - top_k, axis=1)[:, nf - top_k]
        peak &= candidate >= kth[:, None]
    row, column = np.nonzero(peak)
    order = np.lexsort((column, -candidate[row, column], row))
    row, column = row[order], column[order]
    rank = np.arange(row.size) - np.searchsorted(row, row)
    kept = rank < top_k
    values = np.full((n_rows, top_k), -np.inf)
    indices = np.full((n_rows, top_k), NO_PEAK, dtype=np.int32)
    values[row[kept], rank[kept]] = candidate[row[kept], column[kept]]
    indices[row[kept], rank[kept]] = column[kept]
    return values, indices


# }}}
