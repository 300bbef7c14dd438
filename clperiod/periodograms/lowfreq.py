"""Low-frequency bins of Lomb-Scargle periodograms: which ones the device
paths cannot evaluate, and their powers from a stable least-squares fit.

At a frequency ``f`` with ``f T`` small (``T`` the baseline) the harmonics of
the model are nearly constant or linear over the observations, so the normal
equations that every device path solves (one term and ``nterms`` terms; the
direct sums, and the type-1 and type-3 NUFFTs) are nearly singular: their
solutions grow like ``(f T)**-(2 nterms)`` and the errors of the sums
(rounding, or the transforms' tolerance) reach the power multiplied by
their square. Below about ``f T = 0.05`` (one term, fp64) to ``0.5`` (three
terms) the powers can miss the accuracy bound, or come out NaN.

:func:`low_frequency_cutoffs` finds, per object, the frequency below which a
path's powers miss the bound: exact fits (:func:`exact_fits`) on a ladder of
frequencies fixed per object give the size of the solution in the harmonic
basis, hence the error the path's normal equations make there
(:func:`device_error`). :func:`low_frequency_fits` evaluates the grid's bins
below the cutoffs exactly; the device paths write them over their own
(:class:`ExactPowers`, :func:`write_rows`) or merge the peaks
(:func:`peaks_below`, :func:`top_k_peaks`).

The exact fits are least squares by Householder QR of the weighted design
(:func:`exact_fits`) in a basis of the same model that stays well
conditioned at any frequency (``_Basis``): with ``theta = 2 pi f (t -
t_mid)``, ``cos(h theta)`` is a polynomial of degree ``h`` in ``cos theta``
and ``sin(h theta)`` is ``sin theta`` times one of degree ``h - 1``, so the
model spans polynomials in ``v = 1 - cos theta = 2 sin^2(theta / 2)`` and
``sin theta`` times them, taken as Chebyshev polynomials of ``v`` scaled to
the observations' range. A frequency at which the fit is not determined in
float64 (``f = 0``, fewer distinct phases than unknowns) gets NaN, the
device paths' value there.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from clperiod.catalog import Catalog
from clperiod.engine import kernels
from clperiod.engine.devices import has_fp64
from clperiod.grid import FrequencyGrid
from clperiod.periodograms import nufft
from clperiod.periodograms.inputs import NO_PEAK, segment_sum
from clperiod.periodograms.standardize import standardize

__all__ = [
    "DIRECT_EPS",
    "DIRECT_UNIT",
    "ERROR_MARGIN",
    "GRAM_PIVOT",
    "LADDER_POINTS",
    "LADDER_STEP",
    "RANK_TOLERANCE",
    "SPREAD_ROWS",
    "WALK_LIMIT",
    "ExactPowers",
    "FitPoints",
    "Fits",
    "LowFrequencyFits",
    "Model",
    "device_error",
    "effective_baselines",
    "error_unit",
    "exact_bins",
    "exact_fits",
    "fit_points",
    "leading_frequencies",
    "least_effective_baselines",
    "low_frequency_cutoffs",
    "low_frequency_fits",
    "lowest_positive",
    "nufft_cutoffs",
    "peaks_below",
    "standard_to",
    "top_k_peaks",
    "write_rows",
]

#: The direct kernels' errors of the normal equations' sums in units of the
#: precision's epsilon, by ``fp64`` (measured at low frequencies; the fp32
#: kernel sums ``w (cos - 1)`` where the phases bunch, which keeps those sums
#: to a fraction of an epsilon).
DIRECT_UNIT = {True: 0.25, False: 1 / 16}
#: Most points of an object in the fits that decide its cutoff (the fits of
#: the recomputed bins take all).
LADDER_POINTS = 4096
#: Most rows of an object whose times give its spread in
#: :func:`effective_baselines`.
SPREAD_ROWS = 64
#: Ratio of neighbouring frequencies of the ladder of :func:`low_frequency_cutoffs`.
LADDER_STEP = 1.5
#: Accuracy bound of the direct paths' powers relative to the peak, by
#: ``fp64``: that of the NUFFT's default.
DIRECT_EPS = nufft.DEFAULT_EPS
#: The ladder of :func:`low_frequency_cutoffs` starts at ``f T_eff`` of this
#: times ``nterms`` (``T_eff``: :func:`effective_baselines`): the bins above
#: it are the device paths'.
WALK_LIMIT = 0.75
#: Factor of :func:`device_error` over the first-order error of the normal
#: equations (the largest measured errors reach about 40 % of the estimate).
ERROR_MARGIN = 10.0
#: A fit counts as determined when every diagonal element of its triangular
#: factor exceeds this fraction of its column's norm, and its estimated
#: float64 error is within ``_HOST_BOUND``.
RANK_TOLERANCE = 1e3 * float(np.finfo(np.float64).eps)
#: Largest estimated float64 error of an exact fit's standard power that
#: counts as determined.
_HOST_BOUND = 1e-11
_EPS64 = float(np.finfo(np.float64).eps)
_EPS = {True: _EPS64, False: float(np.finfo(np.float32).eps)}
#: Ratio of the lengths that exact fits are padded to (:func:`_padded_lengths`).
_LENGTH_RATIO = 1.25
#: Most values of one batch of design matrices (32 MiB of float64).
_BLOCK_VALUES = 1 << 22
#: Rows of one block of a long object's design (accumulated by stacking the
#: triangular factors).
_BLOCK_ROWS = 1 << 15
#: Smallest Cholesky pivot of the Gram matrix of columns scaled to norm 1 at
#: which :func:`exact_bins` of float32 searches take the device's fits from
#: the normal equations (a condition number below about 1e3: powers within
#: about 1e-10).
GRAM_PIVOT = 1e-6
#: Smallest pivot of a Cholesky factor of columns scaled to norm 1 that
#: :func:`_cholesky_qr2` accepts (a condition number below about 1e6, where
#: two passes are as accurate as Householder's).
_CHOLESKY_PIVOT = 1e-12


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
    frequencies (NaN for objects without points). ``sigma_t`` comes from at
    most :data:`SPREAD_ROWS` rows of each object, evenly spread over its rows
    (all of them for shorter objects), so that long objects cost little; a
    few times far from the rest may then be missed, which lowers
    ``sigma_t`` and raises the ladder's top (:func:`low_frequency_cutoffs`),
    but never below :func:`least_effective_baselines`."""
    lengths = catalog.lengths.astype(np.int64)
    kept = np.minimum(lengths, SPREAD_ROWS)
    owner = np.repeat(np.arange(lengths.size), kept)
    starts = np.concatenate([[0], np.cumsum(kept)])
    rank = np.arange(starts[-1]) - starts[owner]
    rows = catalog.offsets[owner] + rank * lengths[owner] // np.maximum(kept[owner], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = catalog.t[rows] - np.repeat(np.nan_to_num(catalog.epochs()), kept)
        mean = segment_sum(t, starts) / kept
        spread = segment_sum((t - np.repeat(np.nan_to_num(mean), kept)) ** 2, starts)
        estimate = np.fmin(catalog.baselines(), np.sqrt(12 * spread / kept))
    return np.fmax(estimate, least_effective_baselines(catalog))


def least_effective_baselines(catalog: Catalog) -> np.ndarray:
    """Per object the least :func:`effective_baselines` its baseline ``T``
    and number of points ``n`` allow, ``T min(1, sqrt(6 / n))``: ``n`` times
    over ``T`` spread least with one at each end and the rest at the mean,
    ``sigma_t = T / sqrt(2 n)``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return catalog.baselines() * np.fmin(1.0, np.sqrt(6.0 / catalog.lengths))


# {{{ exact fits


def _unknowns(nterms: int, fit_mean: bool) -> int:
    return 2 * nterms + int(fit_mean)


def _nodes(nterms: int) -> np.ndarray:
    """Phases (cycles) of ``4 nterms + 4`` points evenly spread over a cycle:
    the trapezoid rule there integrates the model's functions (trigonometric
    polynomials of degree ``<= 2 nterms``) exactly."""
    count = 4 * nterms + 4
    cycles = np.arange(count) / count
    return cycles - np.rint(cycles)


def _harmonics(cycles: np.ndarray, nterms: int, fit_mean: bool) -> np.ndarray:
    """``[1 (with the mean), cos h theta, sin h theta (h = 1 .. K)]`` at ``cycles``."""
    columns = [np.ones_like(cycles)] if fit_mean else []
    columns += [np.cos(2 * np.pi * h * cycles) for h in range(1, nterms + 1)]
    columns += [np.sin(2 * np.pi * h * cycles) for h in range(1, nterms + 1)]
    return np.stack(columns, axis=-1)


@functools.cache
def _from_nodes(nterms: int, fit_mean: bool) -> np.ndarray:
    """The matrix taking a model's values at :func:`_nodes` to its
    coefficients in :func:`_harmonics` (read-only)."""
    inverse = np.linalg.pinv(_harmonics(_nodes(nterms), nterms, fit_mean))
    inverse.flags.writeable = False
    return inverse


@dataclass(frozen=True)
class _Basis:
    """The model's basis (module notes) at one frequency per request.

    With ``x = 2 v / v_max - 1`` (``v_max``: the largest ``v`` of the
    request's points, so ``-1 <= x <= 1``) the even functions are the
    Chebyshev polynomials ``T_j(x)``, ``j <= K``, and the odd ones
    ``s T_j(x)``, ``j < K``. Without the mean the even ones are the
    combinations ``T_i - (c_i / c_p) T_p``, ``i != p``, whose Chebyshev
    constant in ``theta`` vanishes (``c_i``: the mean of ``T_i(x)`` over a
    cycle, ``p`` the largest in magnitude).
    """

    nterms: int
    fit_mean: bool
    scale: np.ndarray  # (n,) 2 / v_max (0 where v_max = 0)
    pivot: np.ndarray  # (n,) p, without the mean
    ratio: np.ndarray  # (n, K + 1) c_i / c_p, without the mean
    kept: np.ndarray  # (n, K) the even polynomials i != p, without the mean

    @classmethod
    def of(cls, v_max: np.ndarray, nterms: int, fit_mean: bool) -> _Basis:
        scale = np.divide(2.0, v_max, out=np.zeros_like(v_max), where=v_max > 0)
        n = v_max.size
        if fit_mean:
            none = np.zeros((n, 0), np.int64)
            return cls(nterms, fit_mean, scale, np.zeros(n, np.int64), none, none)
        nodes = np.broadcast_to(_nodes(nterms), (n, 4 * nterms + 4))
        _, x = _versine(nodes, scale)
        mean = np.stack([c.mean(axis=1) for c in _chebyshev(x, nterms)], axis=1)
        pivot = np.argmax(np.abs(mean), axis=1)
        ratio = mean / np.take_along_axis(mean, pivot[:, None], axis=1)
        everything = np.broadcast_to(np.arange(nterms + 1), (n, nterms + 1))
        kept = everything[everything != pivot[:, None]].reshape(n, nterms)
        return cls(nterms, fit_mean, scale, pivot, ratio, kept)

    def columns(self, cycles: np.ndarray) -> list[np.ndarray]:
        """The basis functions at ``cycles`` (``(n, rows)``, reduced to ``[-1/2, 1/2]``)."""
        s, x = _versine(cycles, self.scale)
        chebyshev = _chebyshev(x, self.nterms)
        odd = [s * c for c in chebyshev[: self.nterms]]
        if self.fit_mean:
            return chebyshev + odd
        stacked = np.stack(chebyshev)  # (K + 1, n, rows)
        eliminated = stacked[self.pivot, np.arange(self.pivot.size)]
        reduced = stacked - self.ratio.T[:, :, None] * eliminated
        even = np.take_along_axis(reduced, self.kept.T[:, :, None], axis=0)
        return [*even, *odd]

    def harmonic_coefficients(self, coefficients: np.ndarray) -> np.ndarray:
        """The coefficients (``(n, m)``) of fits in this basis in the harmonics
        (:func:`_harmonics`): the fitted model at the nodes, transformed."""
        nodes = np.broadcast_to(_nodes(self.nterms), (self.scale.size, 4 * self.nterms + 4))
        values = np.einsum("mnr,nm->nr", np.stack(self.columns(nodes)), coefficients)
        return values @ _from_nodes(self.nterms, self.fit_mean).T


def _versine(cycles: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sin theta`` and ``x = scale v - 1`` (``v = 1 - cos theta``) at
    ``cycles`` (``(n, rows)``; ``scale``: ``(n,)``)."""
    half = np.sin(np.pi * cycles)
    return np.sin(2 * np.pi * cycles), 2 * half * half * scale[:, None] - 1


def _chebyshev(x: np.ndarray, degree: int) -> list[np.ndarray]:
    """``T_0(x) .. T_degree(x)``."""
    values = [np.ones_like(x), x]
    for _ in range(1, degree):
        values.append(2 * x * values[-1] - values[-2])
    return values[: degree + 1]


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
    *,
    accurate: bool = True,
) -> Fits:
    """The model's least-squares fit of object ``objects[i]`` at
    ``frequencies[i]`` for every ``i`` (module notes), batched over requests
    padded with rows of weight 0 to the same length, which depends on the
    object's length alone (powers of ``1.25``), so that a request gives the
    same values in any batch, on any device, in any catalog.

    ``accurate=False`` solves the normal equations of the stable basis
    instead of factorizing its design where their condition allows
    (Cholesky QR, module notes): estimates for the cutoffs, whose relative
    errors stay below about 1e-4."""
    n = objects.size
    power, amplification = np.full(n, np.nan), np.full(n, np.nan)
    padded = _padded_lengths(points.lengths[objects])
    order = np.argsort(padded, kind="stable")
    ordered = padded[order]
    columns = _unknowns(nterms, fit_mean) + 1
    start = 0
    while start < n:
        rows = int(ordered[start])
        stop = int(np.searchsorted(ordered, rows, side="right"))
        per_batch = max(1, _BLOCK_VALUES // (columns * min(rows, _BLOCK_ROWS)))
        stop = min(stop, start + per_batch)
        group = order[start:stop]
        power[group], amplification[group] = _fit_group(
            points, objects[group], frequencies[group], nterms, fit_mean, accurate, rows
        )
        start = stop
    return Fits(power, amplification)


def _padded_lengths(lengths: np.ndarray) -> np.ndarray:
    """The rows that requests of objects of ``lengths`` points are padded to:
    the least ``ceil(_LENGTH_RATIO**k)`` at least as long (at least 1), a
    function of the length alone."""
    n = np.maximum(lengths.astype(np.int64), 1)
    k = np.ceil(np.log(n) / np.log(_LENGTH_RATIO))
    return np.maximum(np.ceil(_LENGTH_RATIO**k).astype(np.int64), n)


def _fit_group(
    points: FitPoints,
    objects: np.ndarray,
    frequencies: np.ndarray,
    nterms: int,
    fit_mean: bool,
    accurate: bool,
    padded: int,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_fits` of requests padded to ``padded`` rows (zero rows
    weigh nothing), their rows in blocks whose triangular factors are stacked."""
    m = _unknowns(nterms, fit_mean)
    blocks = range(0, padded, _BLOCK_ROWS)
    v_max = np.zeros(objects.size)
    rows = None
    for first in blocks:
        rows = _block(points, objects, frequencies, first, padded)
        cycles, inside, _ = rows
        half = np.sin(np.pi * cycles)
        v_max = np.maximum(v_max, np.max(np.where(inside, 2 * half * half, 0.0), axis=1))
    basis = _Basis.of(v_max, nterms, fit_mean)
    factor: np.ndarray | None = None
    norms = np.zeros((objects.size, m))
    for first in blocks:
        if len(blocks) > 1 or rows is None:
            rows = _block(points, objects, frequencies, first, padded)
        cycles, inside, index = rows
        sw = np.where(inside, points.sw[index], 0.0)
        design = np.stack(
            [c * sw for c in basis.columns(cycles)] + [np.where(inside, points.su[index], 0.0)],
            axis=1,
        )
        norms += np.einsum("ncr,ncr->nc", design[:, :m], design[:, :m])
        if factor is not None:
            design = np.concatenate([factor.transpose(0, 2, 1), design], axis=2)
        factor = _triangular_factor(design, accurate)
    assert factor is not None
    return _power_of_factor(factor, np.sqrt(norms), basis)


def _block(
    points: FitPoints, objects: np.ndarray, frequencies: np.ndarray, first: int, padded: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``first .. first + _BLOCK_ROWS - 1`` (of ``padded``) of the
    requests: their phases (cycles in ``[-1/2, 1/2]``), whether they are
    points of the request's object, and the points' indices (0 for the
    padding)."""
    lengths = points.lengths[objects]
    j = np.arange(first, min(first + _BLOCK_ROWS, padded))
    inside = j[None, :] < lengths[:, None]
    index = np.where(inside, points.offsets[objects, None] + j[None, :], 0)
    cycles = frequencies[:, None] * points.t[index]
    cycles -= np.rint(cycles)
    return cycles, inside, index


def _triangular_factor(columns: np.ndarray, accurate: bool = True) -> np.ndarray:
    """The triangular factor ``R`` (``(n, c, c)``) of a stack of matrices
    given by their columns (``(n, c, rows)``, ``rows >= c``), the last one
    the values.

    Where the model's columns scaled to norm 1 are well conditioned (below
    about 1e6, :data:`_CHOLESKY_PIVOT`) it is Cholesky QR twice
    (:func:`_cholesky_qr2`), or with ``accurate=False`` the Cholesky factor
    of their Gram matrix with the values' column; elsewhere Householder
    reflections (:func:`_householder`)."""
    if accurate:
        factor, ok = _cholesky_qr2_with_values(columns)
    else:
        norms = np.sqrt(np.einsum("ncr,ncr->nc", columns, columns))
        scaled = columns / np.where(norms > 0, norms, 1.0)[:, :, None]
        factor, ok = _cholesky_factor(np.matmul(scaled, scaled.transpose(0, 2, 1)))
        factor *= norms[:, None, :]
    if not ok.all():
        factor[~ok] = _householder(columns[~ok].transpose(0, 2, 1))
    return factor


def _cholesky_qr2_with_values(columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_triangular_factor` by :func:`_cholesky_qr2` of the model's
    columns, the values projected twice; and where it holds."""
    values = columns[:, -1:, :]
    q, r, ok = _cholesky_qr2(columns[:, :-1, :])
    projection = np.matmul(q, values.transpose(0, 2, 1))
    residual = values - np.matmul(projection.transpose(0, 2, 1), q)
    again = np.matmul(q, residual.transpose(0, 2, 1))
    projection += again
    residual -= np.matmul(again.transpose(0, 2, 1), q)
    n, c = columns.shape[:2]
    factor = np.zeros((n, c, c))
    factor[:, :-1, :-1] = r
    factor[:, :-1, -1] = projection[:, :, 0]
    factor[:, -1, -1] = np.sqrt(np.einsum("nr,nr->n", residual[:, 0], residual[:, 0]))
    return factor, ok


def _cholesky_qr2(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Q`` (by columns, as ``a``), ``R`` and whether the factorization
    holds, of a stack of matrices by their columns ``a`` (``(n, m, rows)``)
    by Cholesky QR twice with columns scaled to norm 1: as accurate as
    Householder's where the scaled columns' condition number is below about
    1e6 (:data:`_CHOLESKY_PIVOT`); False elsewhere."""
    norms = np.sqrt(np.einsum("ncr,ncr->nc", a, a))
    scaled = a / np.where(norms > 0, norms, 1.0)[:, :, None]
    first, ok = _cholesky_factor(np.matmul(scaled, scaled.transpose(0, 2, 1)))
    q = np.matmul(np.linalg.inv(first).transpose(0, 2, 1), scaled)
    second, again = _cholesky_factor(np.matmul(q, q.transpose(0, 2, 1)))
    ok &= again
    q = np.matmul(np.linalg.inv(second).transpose(0, 2, 1), q)
    return q, np.matmul(second, first) * norms[:, None, :], ok


def _cholesky_factor(
    gram: np.ndarray, smallest: float = _CHOLESKY_PIVOT
) -> tuple[np.ndarray, np.ndarray]:
    """Upper triangular ``R`` with ``R^T R = gram`` for a stack of Gram
    matrices of columns of norm about 1, and whether every pivot exceeds
    ``smallest`` (the identity stands in where one does not)."""
    n, m, _ = gram.shape
    r = np.zeros_like(gram)
    ok = np.ones(n, dtype=bool)
    for j in range(m):
        pivot = gram[:, j, j] - np.einsum("nk,nk->n", r[:, :j, j], r[:, :j, j])
        ok &= pivot > smallest
        diagonal = np.sqrt(np.where(ok, pivot, 1.0))
        r[:, j, j] = diagonal
        rest = gram[:, j, j + 1 :] - np.einsum("nk,nkc->nc", r[:, :j, j], r[:, :j, j + 1 :])
        r[:, j, j + 1 :] = rest / diagonal[:, None]
    r[~ok] = np.eye(m)
    return r, ok


def _householder(design: np.ndarray) -> np.ndarray:
    """The triangular factor of :func:`_triangular_factor` by Householder
    reflections (in NumPy loops over the columns: no BLAS threads for these
    small factorizations)."""
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
    factor: np.ndarray, norms: np.ndarray, basis: _Basis
) -> tuple[np.ndarray, np.ndarray]:
    """Standard powers and amplifications (:class:`Fits`) from the triangular
    factors ``(n, m + 1, m + 1)`` of the weighted designs in ``basis`` with
    the values as last column, and the designs' column norms ``(n, m)``."""
    m = norms.shape[1]
    diagonal = np.abs(np.diagonal(factor[:, :m, :m], axis1=1, axis2=2))
    projection = factor[:, :m, m]
    residual = np.abs(factor[:, m, m])
    explained = np.sum(projection * projection, axis=1)
    reference = explained + residual * residual
    full_rank = np.all(diagonal > RANK_TOLERANCE * norms, axis=1)
    triangle = np.where(full_rank[:, None, None], factor[:, :m, :m], np.eye(m))
    coefficients = np.linalg.solve(triangle, projection[..., None])[..., 0]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        harmonic = basis.harmonic_coefficients(coefficients)
        amplification = np.sqrt(np.sum(harmonic * harmonic, axis=1) / reference)
        # first-order error of chi2 from float64 errors of the design's columns
        error = _EPS64 * residual * np.sum(np.abs(coefficients) * norms, axis=1)
        determined = full_rank & (error <= _HOST_BOUND * reference)
        power = np.where(determined, explained / reference, np.nan)
    return power, np.where(determined, amplification, np.inf)


class _DeviceFits:
    """Fits from the normal equations of the stable basis on an fp64 OpenCL
    device: the kernel sums each request's Gram matrix
    (``cl_kernels/lowfreq.mako``), the host solves it. Requests whose scaled
    Gram matrix has a Cholesky pivot below ``smallest`` are fitted on the host
    by :func:`exact_fits` (``accurate`` as given).

    With the defaults these are the cutoffs' estimates
    (``exact_fits(..., accurate=False)``); ``smallest=``:data:`GRAM_PIVOT`,
    ``accurate=True`` gives powers within about 1e-10 of the exact ones
    (:func:`exact_bins` of float32 searches)."""

    def __init__(
        self,
        queue: cl.CommandQueue,
        points: FitPoints,
        nterms: int,
        fit_mean: bool,
        *,
        smallest: float = _CHOLESKY_PIVOT,
        accurate: bool = False,
    ):
        self.queue, self.points, self.nterms, self.fit_mean = queue, points, nterms, fit_mean
        self.smallest, self.accurate = smallest, accurate
        # CPUs run a work-group's items in loops: few items, few barriers
        cpu = queue.device.type & cl.device_type.CPU
        self.wg = 8 if cpu else 64
        self.arrays = [
            cl_array.to_device(queue, np.ascontiguousarray(a))
            for a in (points.t, points.sw, points.su, points.offsets.astype(np.int64))
        ]
        (self.kernel,) = kernels.get_kernels(
            queue.context, "lowfreq", ("lowfreq_gram",), nterms=nterms, wg=self.wg
        )

    def __call__(self, objects: np.ndarray, frequencies: np.ndarray) -> Fits:
        n, columns = objects.size, 2 * self.nterms + 2
        upper = np.triu_indices(columns)
        gram_d = cl_array.empty(self.queue, (n, upper[0].size), np.float64)
        v_max_d = cl_array.empty(self.queue, n, np.float64)
        requests = [
            cl_array.to_device(self.queue, a)
            for a in (objects.astype(np.int32), frequencies.astype(np.float64))
        ]
        self.kernel(
            self.queue,
            (n * self.wg,),
            (self.wg,),
            *(a.data for a in self.arrays),
            *(a.data for a in requests),
            gram_d.data,
            v_max_d.data,
        )
        full = np.zeros((n, columns, columns))
        full[:, upper[0], upper[1]] = gram_d.get()
        full[:, upper[1], upper[0]] = full[:, upper[0], upper[1]]
        basis = _Basis.of(v_max_d.get(), self.nterms, self.fit_mean)
        if self.fit_mean:
            gram = full
        else:
            change = _to_basis(basis)
            gram = np.matmul(change.transpose(0, 2, 1), np.matmul(full, change))
        m = gram.shape[1] - 1
        norms = np.sqrt(np.maximum(np.diagonal(gram, axis1=1, axis2=2), 0.0))
        scaled = gram / np.where(norms > 0, norms, 1.0)[:, :, None]
        scaled /= np.where(norms > 0, norms, 1.0)[:, None, :]
        factor, ok = _cholesky_factor(scaled, self.smallest)
        factor *= norms[:, None, :]
        power, amplification = _power_of_factor(factor, norms[:, :m], basis)
        if not ok.all():
            rest = exact_fits(
                self.points,
                objects[~ok],
                frequencies[~ok],
                self.nterms,
                self.fit_mean,
                accurate=self.accurate,
            )
            power[~ok], amplification[~ok] = rest.power, rest.amplification
        return Fits(power, amplification)


def _to_basis(basis: _Basis) -> np.ndarray:
    """Per request, the matrix (``(n, 2 K + 2, m + 1)``) taking the
    coefficients of the kernel's columns (``cl_kernels/lowfreq.mako``) to
    the columns of a basis without the mean and the values."""
    k, n = basis.nterms, basis.scale.size
    columns = 2 * k + 2
    change = np.zeros((n, columns, columns - 1))
    rows = np.arange(n)
    for j in range(k):  # the even polynomials kept: T_i - (c_i / c_p) T_p
        kept = basis.kept[:, j]
        change[rows, kept, j] = 1.0
        change[rows, basis.pivot, j] = -basis.ratio[rows, kept]
    for j in range(k + 1):  # the odd ones, then the values
        change[:, k + 1 + j, k + j] = 1.0
    return change


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
    direct sums (``tolerance`` None) :data:`DIRECT_UNIT` of the precision's
    epsilon, in float64 times the square root of the effective number of
    points."""
    if tolerance is not None:
        return np.full(points.ok.size, tolerance)
    unit = DIRECT_UNIT[fp64] * _EPS[fp64]
    if not fp64:
        return np.full(points.ok.size, unit)
    with np.errstate(divide="ignore"):
        return unit / points.weight_norm


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

    def subset(self, objects: np.ndarray) -> LowFrequencyFits:
        """The fits of ``objects`` (indices), in that order."""
        return LowFrequencyFits(self.first, self.stop[objects], self.power[objects])

    @classmethod
    def none(cls, n_objects: int) -> LowFrequencyFits:
        """No bin of any object."""
        return cls(0, np.zeros(n_objects, dtype=np.int64), np.empty((n_objects, 0)))


def low_frequency_cutoffs(
    catalog: Catalog,
    model: Model,
    lowest: float,
    *,
    fp64: bool,
    tolerance: float | None,
    eps: float,
    queue: cl.CommandQueue | None = None,
) -> np.ndarray:
    """Per object, the frequency below which a device path's powers miss the
    accuracy bound (0: none above ``lowest``).

    A frequency ``f`` is outside the bound when the estimated device error
    (:func:`device_error`) exceeds ``eps`` times the highest exact power
    at the frequencies tried so far (a lower bound of the peak), or the
    exact fit is not determined. The frequencies tried are a ladder
    fixed per object, from ``WALK_LIMIT nterms / T_eff``
    (:func:`effective_baselines`) down in steps of ``LADDER_STEP``, so the
    cutoff does not depend on the grid: the descent ends at the first one
    outside the bound (the cutoff is then the one above it) or at the first
    at or below ``lowest``. Objects whose ladder starts at or below
    ``lowest`` cost nothing more than their ``T_eff``; the ladder's fits of
    longer objects take :data:`LADDER_POINTS` of their points, evenly
    spread over their rows.

    Parameters
    ----------
    catalog
        The objects (validated).
    model
        The periodogram's model.
    lowest
        The lowest frequency above 0 of the grid.
    fp64, tolerance
        The device path: its precision, and the tolerance of its transforms
        (None: direct sums), for :func:`error_unit`.
    eps
        Accuracy bound of the powers relative to the peak.
    queue
        An OpenCL queue whose device has float64 to estimate the fits on
        (Gram matrices summed by ``cl_kernels/lowfreq.mako``); None, or a
        device without float64: the host.
    """
    cutoff = np.zeros(catalog.n_objects)
    with np.errstate(divide="ignore", invalid="ignore"):
        highest = WALK_LIMIT * model.nterms / least_effective_baselines(catalog)
    if not np.any((catalog.lengths >= model.min_points) & (highest > lowest)):
        return cutoff  # no ladder can start above the grid's first frequency
    with np.errstate(divide="ignore", invalid="ignore"):
        top = WALK_LIMIT * model.nterms / effective_baselines(catalog)
    # times all equal (T_eff = 0): no frequency is determined, the paths' NaN stand
    usable = (catalog.lengths >= model.min_points) & np.isfinite(top)
    chosen = np.flatnonzero(usable & (top > lowest))
    if not chosen.size:
        return cutoff
    points = fit_points(
        _thinned(catalog.subset(chosen), LADDER_POINTS),
        min_points=model.min_points,
        center=model.fit_mean or model.center_data,
        use_dy=model.use_dy,
    )
    unit = error_unit(points, fp64=fp64, tolerance=tolerance)
    top = top[chosen]

    def rung(objects: np.ndarray, k: np.ndarray) -> np.ndarray:
        return top[objects] / LADDER_STEP ** k.astype(np.float64)

    ladder = (
        _DeviceFits(queue, points, model.nterms, model.fit_mean)
        if queue is not None and has_fp64(queue.device)
        else None
    )

    def fit(objects: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if ladder is not None:
            fits = ladder(objects, rung(objects, k))
        else:
            fits = exact_fits(
                points, objects, rung(objects, k), model.nterms, model.fit_mean, accurate=False
            )
        with np.errstate(invalid="ignore"):
            return fits.power, device_error(fits.amplification, unit[objects])

    # The bracket: the top rung and the last one (the first at or below
    # ``lowest``); the rungs between need no fits where the last one's error
    # is within the bound of the top one's power.
    active = np.flatnonzero(points.ok)
    last = np.ceil(np.log(top[active] / lowest) / math.log(LADDER_STEP)).astype(np.int64)
    last += rung(active, last) > lowest
    last -= (last > 1) & (rung(active, last - 1) <= lowest)
    power, error = fit(np.concatenate([active, active]), np.concatenate([0 * last, last]))
    reached, power_last = power[: active.size], power[active.size :]
    with np.errstate(invalid="ignore"):
        outside = ~(error[: active.size] <= eps * reached) | np.isnan(reached)
        walk = ~outside & ~((error[active.size :] <= eps * reached) & ~np.isnan(power_last))
    cutoff[chosen[active[outside]]] = top[active[outside]]
    reached, active = reached[walk], active[walk]
    k = np.ones(active.size, dtype=np.int64)
    while active.size:
        power, error = fit(active, k)
        reached = np.fmax(reached, power)
        with np.errstate(invalid="ignore"):
            outside = ~(error <= eps * reached) | np.isnan(power)
        cutoff[chosen[active[outside]]] = rung(active[outside], k[outside] - 1)
        going = ~outside & (rung(active, k) > lowest)
        active, reached, k = active[going], reached[going], k[going] + 1
    return cutoff


def lowest_positive(grid: FrequencyGrid | np.ndarray) -> float:
    """The lowest frequency above 0 of ``grid`` (inf if none)."""
    if isinstance(grid, FrequencyGrid):
        if grid.fmin > 0:
            return grid.fmin
        return grid.fmin + grid.df if grid.nf > 1 else np.inf
    positive = grid[grid > 0]
    return float(positive[0]) if positive.size else np.inf


def _thinned(catalog: Catalog, most: int) -> Catalog:
    """``catalog`` with each object of more than ``most`` points cut to
    ``most`` of them, evenly spread over its rows."""
    lengths = catalog.lengths
    if lengths.max(initial=0) <= most:
        return catalog
    kept = np.minimum(lengths, most)
    offsets = np.concatenate([[0], np.cumsum(kept)])
    owner = np.repeat(np.arange(lengths.size), kept)
    rank = np.arange(offsets[-1]) - offsets[owner]
    rows = catalog.offsets[owner] + rank * lengths[owner] // kept[owner]
    return Catalog.from_offsets(
        catalog.ids,
        offsets,
        catalog.t[rows],
        catalog.y[rows],
        None if catalog.dy is None else catalog.dy[rows],
    )


def nufft_cutoffs(
    catalog: Catalog,
    model: Model,
    plan: Any,
    grid: FrequencyGrid | np.ndarray,
    queue: cl.CommandQueue | None = None,
) -> np.ndarray:
    """:func:`low_frequency_cutoffs` of a NUFFT search on ``grid`` (``plan``:
    its type-1 or type-3 plan, whose ``fp64`` and ``eps`` give the transforms'
    tolerance; ``queue``: as there)."""
    return low_frequency_cutoffs(
        catalog,
        model,
        lowest_positive(grid),
        fp64=plan.fp64,
        tolerance=plan.eps * nufft.TRANSFORM_MARGIN[plan.fp64],
        eps=plan.eps,
        queue=queue,
    )


def exact_bins(
    catalog: Catalog,
    grid: FrequencyGrid | np.ndarray,
    model: Model,
    cutoff: np.ndarray,
    queue: cl.CommandQueue | None = None,
) -> LowFrequencyFits:
    """The bins of ``grid`` (a uniform grid, or distinct rising frequencies)
    above 0 and below each object's ``cutoff`` (:func:`low_frequency_cutoffs`),
    and their exact powers (:func:`exact_fits`); with ``queue`` (for the
    float32 bound), from the normal equations summed on its device where
    they are well conditioned (:data:`GRAM_PIVOT`)."""
    n_objects = catalog.n_objects
    frequencies = leading_frequencies(grid, float(cutoff.max(initial=0.0)))
    first = int(np.searchsorted(frequencies, 0.0, side="right"))
    stop = np.maximum(np.searchsorted(frequencies, cutoff), first).astype(np.int64)
    width = int(stop.max(initial=first)) - first
    power = np.full((n_objects, width), np.nan)
    if width:
        counts = stop - first
        objects = np.repeat(np.arange(n_objects), counts)
        columns = np.arange(objects.size) - np.repeat(np.cumsum(counts) - counts, counts)
        chosen = np.flatnonzero(counts)
        points = fit_points(
            catalog.subset(chosen),
            min_points=model.min_points,
            center=model.fit_mean or model.center_data,
            use_dy=model.use_dy,
        )
        requests = (np.searchsorted(chosen, objects), frequencies[first + columns])
        if queue is not None and has_fp64(queue.device):
            fits = _DeviceFits(
                queue, points, model.nterms, model.fit_mean, smallest=GRAM_PIVOT, accurate=True
            )(*requests)
        else:
            fits = exact_fits(points, *requests, model.nterms, model.fit_mean)
        power[objects, columns] = fits.power
    return LowFrequencyFits(first, stop, power)


def low_frequency_fits(
    catalog: Catalog,
    grid: FrequencyGrid | np.ndarray,
    model: Model,
    *,
    fp64: bool,
    tolerance: float | None,
    eps: float,
    queue: cl.CommandQueue | None = None,
) -> LowFrequencyFits:
    """:func:`exact_bins` below the objects' :func:`low_frequency_cutoffs` (the
    bins a device path cannot evaluate to ``eps`` of the peak).

    Parameters
    ----------
    catalog
        The objects (validated).
    grid
        The frequencies: a uniform grid, or distinct rising ones.
    model, fp64, tolerance, eps, queue
        As :func:`low_frequency_cutoffs`.
    """
    cutoff = low_frequency_cutoffs(
        catalog, model, lowest_positive(grid), fp64=fp64, tolerance=tolerance, eps=eps, queue=queue
    )
    return exact_bins(catalog, grid, model, cutoff, None if fp64 else queue)


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
    the copies of the exact powers of each object's bins below its cutoff
    (:func:`exact_bins`) over the transforms'; the cutoffs (unless given) and
    the exact powers are computed on the host once the transforms are
    queued, while the device works.

    Attributes
    ----------
    power
        The transforms' power stage, ``power(queue, grids, points, out,
        normalization)``.
    catalog
        The batch.
    grid
        Its frequencies: a uniform grid, or distinct rising ones.
    model
        The periodogram's model.
    plan
        The batch's type-1 or type-3 plan (its ``fp64`` is the powers'
        precision).
    cutoff
        Per object of the batch (:func:`low_frequency_cutoffs`); None: its
        :func:`nufft_cutoffs`, found when the stage is queued.
    """

    power: Callable[..., None]
    catalog: Catalog
    grid: FrequencyGrid | np.ndarray
    model: Model
    plan: Any
    cutoff: np.ndarray | None = None
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
        if self.cutoff is None:  # the ladder's fits estimated on queue's device
            self.cutoff = nufft_cutoffs(self.catalog, self.model, self.plan, self.grid, queue)
        if not np.any(self.cutoff > 0):
            return
        fp64 = self.plan.fp64
        fits = exact_bins(
            self.catalog, self.grid, self.model, self.cutoff, None if fp64 else queue
        )
        if fits.any():
            dtype = np.float64 if fp64 else np.float32
            values = standard_to(fits.power, normalization).astype(dtype)
            nf = self.grid.nf if isinstance(self.grid, FrequencyGrid) else self.grid.size
            self._events += write_rows(
                queue, out, values, fits, (0, self.catalog.n_objects), (0, nf)
            )


def _peaks(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float64 ``rows`` and where their peaks are, by the device kernels' rule:
    strictly above the left neighbour and not below the right one
    (neighbours outside the row or NaN count as ``-inf``; NaN is never a peak)."""
    value = rows.astype(np.float64)
    edge = np.full((rows.shape[0], 1), -np.inf)
    left = np.concatenate([edge, value[:, :-1]], axis=1)
    right = np.concatenate([value[:, 1:], edge], axis=1)
    return value, ~np.isnan(value) & ~(left >= value) & ~(right > value)


def peaks_below(rows: np.ndarray, limit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The peaks (:func:`top_k_peaks`' rule) of periodograms whose rows hold
    a grid's first bins, among the bins below ``limit`` (per row, at most
    the row's length less one, so their right neighbours are in the row).

    Returns
    -------
    values, indices : ndarray, shape of ``rows``
        float64 powers of the peaks (``-inf`` elsewhere) and their bins
        (``clperiod.periodograms.inputs.NO_PEAK`` elsewhere).
    """
    value, peak = _peaks(rows)
    peak &= np.arange(rows.shape[1])[None, :] < limit[:, None]
    bins = np.broadcast_to(np.arange(rows.shape[1], dtype=np.int64), rows.shape)
    return np.where(peak, value, -np.inf), np.where(peak, bins, NO_PEAK)


def top_k_peaks(rows: np.ndarray, top_k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``top_k`` highest distinct peaks of each periodogram row, as the
    device kernels find them: a peak is strictly above its left neighbour and
    not below its right one (neighbours outside the row or NaN count as
    ``-inf``; NaN is never a peak), best first, equal values in grid order.

    Returns
    -------
    values, indices : ndarray, shape (n_rows, top_k)
        float64 peak powers (``-inf`` where a row has fewer peaks) and their
        bins (int32, ``clperiod.periodograms.inputs.NO_PEAK`` there).
    """
    n_rows, nf = rows.shape
    value, peak = _peaks(rows)
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
