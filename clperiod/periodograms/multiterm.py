"""Multi-term (Fourier series) Lomb-Scargle periodograms of light curves and catalogs.

The model at each frequency is an offset (with ``fit_mean``) plus ``nterms``
harmonics, fitted by weighted least squares exactly as astropy's
``LombScargle(..., nterms=K).power(method="chi2")`` does; the power is the
reduction of chi^2 in astropy's normalizations. The device evaluates the
weighted harmonic sums and solves each frequency's small normal system
(``cl_kernels/multiterm.mako``, fp64). :class:`clperiod.astropy.LombScargle`
uses it for ``nterms != 1`` and astropy's ``chi2`` methods;
:func:`multiterm_max_power` evaluates many light curves on the same times (a
bootstrap's resamplings) in one ND-range; :func:`multiterm_coefficients`
returns the fits themselves (:func:`clperiod.scipy.lombscargle`'s amplitudes).
:func:`search` evaluates every object of a catalog (each with its own
times) and reduces its periodogram to the top-k peaks on the device: the
direct path of ``clperiod.lombscargle(..., nterms=K)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, refuse_masked
from clperiod.engine import kernels
from clperiod.engine.devices import get_context, get_queue, require_fp64, select_devices, upload
from clperiod.engine.planner import Buffer
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid
from clperiod.periodograms import lowfreq
from clperiod.periodograms.inputs import check_choice, segment_reduce
from clperiod.periodograms.standardize import Standardized, standardize

__all__ = [
    "blocked_peaks",
    "MAX_NTERMS",
    "CatalogPeaks",
    "PreparedObjects",
    "batch_buffers",
    "min_points",
    "multiterm_coefficients",
    "multiterm_max_power",
    "multiterm_power",
    "prepare_objects",
    "search",
]

Normalization = Literal["standard", "model", "log", "psd"]

#: Most harmonics (the normal system has up to 2 * MAX_NTERMS + 1 unknowns,
#: held in private memory).
MAX_NTERMS = 8
_WG = 64
#: Most powers (light curves x frequencies) one kernel call of
#: :func:`multiterm_max_power` writes (32 MiB of float64).
_MAX_BLOCK = 1 << 22
#: Light curves per work-item of a batch on a CPU device, which share the
#: cosines and sines of the times (fastest measured on PoCL); other devices
#: take 1, as more spill registers on GPUs.
_CPU_ROWS = 8


def multiterm_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
    normalization: Normalization = "standard",
    direct_harmonics: bool = False,
    device=None,
) -> np.ndarray:
    """Multi-term Lomb-Scargle power of one light curve on a frequency grid.

    Parameters
    ----------
    t, y : array_like
        Times and values (finite, float64).
    dy : array_like or None
        Uncertainties (positive); None weighs every point 1.
    grid : FrequencyGrid or FrequencyArray
        Ordinary frequencies: a uniform grid ``fmin + k df`` or any array
        (:meth:`clperiod.FrequencyGrid.from_frequencies`; each frequency
        evaluated as it would be alone).
    nterms : int
        Harmonics of the model, 0 to :data:`MAX_NTERMS` (0 needs ``fit_mean``).
    fit_mean, center_data : bool
        Constant term in the model; subtract the weighted mean first
        (astropy's meaning: either one centres the data).
    normalization : {"standard", "model", "log", "psd"}
        astropy's normalizations of ``p = chi2_ref - chi2``: ``p / chi2_ref``,
        ``p / (chi2_ref - p)``, ``-log(1 - p / chi2_ref)`` and ``p / 2``.
    direct_harmonics : bool
        Evaluate the sine and cosine of every harmonic ``h`` from its own
        phase ``h f t`` (reduced to one cycle) instead of by angle addition
        from the first harmonic: recurrence-free, ``2 nterms`` sine-cosine
        evaluations per point and frequency instead of one. Both are exact
        to rounding; they differ in the last digits.
    device
        Device selection (see :func:`clperiod.select_devices`); the first
        selected device computes. It must support fp64.

    Returns
    -------
    ndarray
        ``(grid.nf,)`` float64 powers, in the order of ``grid.frequencies()``;
        NaN where the model is degenerate (frequency 0, fewer distinct phases
        than unknowns), and everywhere when ``y`` does not vary within
        float64 resolution
        (``clperiod.periodograms.standardize.RESOLUTION``). The values are centred and
        scaled per light curve first, so a common scale of ``y`` and ``dy``
        or an offset of centred ``y`` leaves the powers unchanged. The
        lowest frequencies whose normal equations are too ill conditioned
        for 1e-9 of the peak (``f T`` below about 0.05 to 0.5, rising with
        ``nterms``) take exact least-squares powers
        (:mod:`clperiod.periodograms.lowfreq`).

    Raises
    ------
    ValueError
        Bad arguments, non-finite data, non-positive ``dy``, fewer points
        than unknowns, or a device without fp64.
    """
    nterms = _check_options(nterms, fit_mean, normalization)
    searched, positions = search_grid(grid)
    t, y, dy = _checked(t, y, dy, 2 * nterms + int(fit_mean), batch=False)
    values = _standardized(y, dy, fit_mean or center_data)
    ((_, z),) = _power_blocks(
        t, values, searched, nterms, fit_mean, device, block_rows=1, direct=direct_harmonics
    )
    _replace_low_bins(z, t, y, dy, searched, nterms, fit_mean, center_data)
    power = _normalized(z, values, normalization)[0]
    return power if positions is None else power[positions]


def multiterm_coefficients(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
    direct_harmonics: bool = False,
    device=None,
) -> np.ndarray:
    """Least-squares coefficients of the multi-term model at every grid frequency.

    The fit behind :func:`multiterm_power`: at frequency ``f`` the model
    ``[offset] + sum_h a_h sin(2 pi h f t) + b_h cos(2 pi h f t)`` (times as
    given, not shifted), fitted with weights ``dy**-2`` to ``y``, or with
    ``center_data`` and no ``fit_mean`` to ``y`` less its weighted mean.

    Parameters
    ----------
    t, y, dy, grid, nterms, fit_mean, center_data, direct_harmonics, device
        As :func:`multiterm_power`.

    Returns
    -------
    ndarray
        ``(grid.nf, int(fit_mean) + 2 * nterms)`` float64, rows in the order
        of ``grid.frequencies()``: the offset (with
        ``fit_mean``), then ``a_h, b_h`` for ``h = 1 .. nterms``; rows of NaN
        where the model is degenerate (frequency 0, fewer distinct phases
        than unknowns).

    Raises
    ------
    ValueError
        As :func:`multiterm_power`.
    """
    nterms = _check_options(nterms, fit_mean, "standard")
    searched, positions = search_grid(grid)
    t, y, dy = _checked(t, y, dy, 2 * nterms + int(fit_mean), batch=False)
    values = _standardized(y, dy, fit_mean or center_data)
    ((_, x),) = _kernel_blocks(
        t,
        values,
        searched,
        nterms,
        fit_mean,
        device,
        block_rows=1,
        direct=direct_harmonics,
        coefficients=True,
    )
    x = _in_units_of_y(x[0], values, fit_mean)
    x = _shift_origin(x, searched.frequencies(), float(np.median(t)), nterms, fit_mean)
    return x if positions is None else x[positions]


def multiterm_max_power(
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    *,
    fit_mean: bool = True,
    center_data: bool = True,
    normalization: Normalization = "standard",
    device=None,
) -> np.ndarray:
    """Highest multi-term power of each of many light curves sharing their times.

    Every light curve is evaluated as :func:`multiterm_power` would, but
    all of them in one 2-D ND-range (frequency x light curve; on a CPU
    device each work-item takes 8 light curves, which share the cosines and
    sines of the times), in blocks of at most 2**22 powers (32 MiB), and
    only each light curve's maximum comes back: the bootstrap of
    :class:`clperiod.astropy.LombScargle` costs one kernel call instead of
    one Python round trip per resampling.

    Parameters
    ----------
    t : array_like, shape (n,)
        Times shared by every light curve (finite).
    y : array_like, shape (n_curves, n)
        Values, one light curve per row (finite).
    dy : array_like, shape (n,) or (n_curves, n), or None
        Uncertainties (positive); None weighs every point 1.
    grid : FrequencyGrid or FrequencyArray
        As :func:`multiterm_power`.
    nterms : int
        Harmonics of the model, 0 to :data:`MAX_NTERMS` (0 needs ``fit_mean``).
    fit_mean, center_data : bool
        As :func:`multiterm_power` (each light curve is centred on its own
        weighted mean).
    normalization : {"standard", "model", "log", "psd"}
        As :func:`multiterm_power`.
    device
        Device selection (see :func:`clperiod.select_devices`); the first
        selected device computes. It must support fp64.

    Returns
    -------
    ndarray
        ``(n_curves,)`` float64: each light curve's largest power on the
        grid, skipping frequencies where its model is degenerate (NaN only if
        it is degenerate at every frequency, or ``y`` does not vary): the
        maximum of
        ``multiterm_power(t, y[i], dy[i], ...)`` for each row ``i``.

    Raises
    ------
    ValueError
        As :func:`multiterm_power`, or ``y`` not two-dimensional.
    """
    nterms = _check_options(nterms, fit_mean, normalization)
    searched, _ = search_grid(grid)
    t, y, dy = _checked(t, y, dy, 2 * nterms + int(fit_mean), batch=True)
    values = _standardized(y, dy, fit_mean or center_data)
    maxima = np.empty(y.shape[0])
    block_rows = max(1, _MAX_BLOCK // searched.nf)
    for block, z in _power_blocks(t, values, searched, nterms, fit_mean, device, block_rows):
        _replace_low_bins(
            z,
            t,
            y[block],
            None if dy is None else dy[block],
            searched,
            nterms,
            fit_mean,
            center_data,
        )
        # every normalization increases with z: normalizing the maxima is exact
        maxima[block] = _normalized(np.fmax.reduce(z, axis=1), values, normalization, block)
    return maxima


def _replace_low_bins(
    z: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    fit_mean: bool,
    center_data: bool,
) -> None:
    """Replace, in place, the standard powers ``z`` (``(n_curves, nf)``, light
    curves ``y`` on the times ``t``) of the low-frequency bins whose normal
    equations are too ill conditioned for the bound ``lowfreq.DIRECT_EPS``
    by the exact ones (:func:`clperiod.periodograms.lowfreq.low_frequency_fits`)."""
    if nterms == 0:  # a constant: nothing depends on the frequency
        return
    n_curves, n = y.shape
    catalog = Catalog.from_offsets(
        np.arange(n_curves),
        np.arange(n_curves + 1) * n,
        np.tile(t, n_curves),
        y.ravel(),
        None if dy is None else dy.ravel(),
    )
    exact = lowfreq.low_frequency_fits(
        catalog,
        grid if isinstance(grid, FrequencyGrid) else grid.frequencies(),
        lowfreq.Model(nterms, fit_mean, center_data, dy is not None),
        fp64=True,
        tolerance=None,
        eps=lowfreq.DIRECT_EPS[True],
    )
    for curve in exact.objects:
        stop = exact.stop[curve]
        z[curve, exact.first : stop] = exact.power[curve, : stop - exact.first]


def _check_options(nterms, fit_mean: bool, normalization: str) -> int:
    """Checked ``nterms`` (as int) and ``normalization``."""
    nterms = checks.integer("nterms", nterms, low=0, high=MAX_NTERMS)
    if nterms == 0 and not fit_mean:
        raise ValueError("nterms = 0 needs fit_mean=True (the model would be empty)")
    check_choice("normalization", normalization, Normalization)
    return nterms


def _standardized(y: np.ndarray, dy: np.ndarray | None, center: bool) -> Standardized:
    """Each light curve (row of ``y``) centred (when ``center``) and scaled
    (``clperiod.periodograms.standardize.standardize``): the powers keep their precision
    for any finite scale and offset."""
    n_curves, n = y.shape
    offsets = np.arange(n_curves + 1, dtype=np.int64) * n
    return standardize(y.ravel(), None if dy is None else dy.ravel(), offsets, center)


def _power_blocks(
    t,
    values: Standardized,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    fit_mean: bool,
    device,
    block_rows: int,
    direct: bool = False,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Each block of ``block_rows`` light curves: its rows and standard powers
    ``(n_rows, nf)`` (NaN for light curves that do not vary; ``grid`` as
    :func:`clperiod.grid.search_grid` gives it); one kernel call per block."""
    for block, p in _kernel_blocks(
        t, values, grid, nterms, fit_mean, device, block_rows, direct, coefficients=False
    ):
        with np.errstate(invalid="ignore", divide="ignore"):
            z = p / values.yy[block, None]
        yield block, np.where(values.flat[block, None], np.nan, z)


def _kernel_blocks(
    t,
    values: Standardized,
    grid: FrequencyGrid | FrequencyArray,
    nterms: int,
    fit_mean: bool,
    device,
    block_rows: int,
    direct: bool,
    coefficients: bool,
) -> Iterator[tuple[slice, np.ndarray]]:
    """Each block of ``block_rows`` standardized light curves: its rows and the
    kernel's output in the standardized units: ``p = chi2_ref - chi2``
    ``(n_rows, nf)``, or with ``coefficients`` the fits' coefficients
    ``(n_rows, nf, M)`` (times from their median); one kernel call per block."""
    n_curves = values.yy.size
    w = values.wn.reshape(n_curves, t.size)
    wy = (values.wn * values.u).reshape(n_curves, t.size)
    info = select_devices(device)[0]
    require_fp64(info)
    context, queue = get_context(info), get_queue(info)
    per_item = _CPU_ROWS if n_curves > 1 and info.kind == "cpu" else 1
    (kernel,) = kernels.get_kernels(
        context,
        "multiterm",
        ("multiterm_power",),
        nterms=nterms,
        bias=int(fit_mean),
        wg=_WG,
        rows=per_item,
        direct=direct,
        coefficients=coefficients,
        arbitrary=not isinstance(grid, FrequencyGrid),
        catalog=False,
    )
    per_frequency = int(fit_mean) + 2 * nterms if coefficients else 1
    pending: list[cl.Event] = []  # queued uploads, passed by each block's blocking read
    t_buffer = upload(queue, t - np.median(t), pending)
    frequencies = (
        [np.float64(grid.fmin), np.float64(grid.df)]
        if isinstance(grid, FrequencyGrid)
        else [upload(queue, grid.frequencies(), pending)]
    )
    for start in range(0, n_curves, block_rows):
        block = slice(start, start + block_rows)
        n_rows = w[block].shape[0]
        inputs = [upload(queue, a, pending) for a in (w[block], wy[block])]
        out = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, 8 * n_rows * grid.nf * per_frequency)
        kernel.set_args(
            t_buffer,
            *inputs,
            np.int32(t.size),
            *frequencies,
            np.int32(grid.nf),
            np.int32(n_rows),
            out,
        )
        cl.enqueue_nd_range_kernel(
            queue, kernel, (-(-grid.nf // _WG) * _WG, -(-n_rows // per_item)), (_WG, 1)
        )
        p = np.empty((n_rows, grid.nf) + ((per_frequency,) if coefficients else ()))
        cl.enqueue_copy(queue, p, out, is_blocking=True)
        pending.clear()
        yield block, p


def _in_units_of_y(x: np.ndarray, values: Standardized, fit_mean: bool) -> np.ndarray:
    """Coefficients ``(nf, M)`` of the fits to one standardized light curve as
    coefficients of the fit to its ``y``: scaled by its unit ``2**exponent``,
    with the centring value added back to the offset (with ``fit_mean``)."""
    x = np.ldexp(x, values.exponent[0])
    if fit_mean:
        x[:, 0] += values.center[0]
    return x


def _shift_origin(
    x: np.ndarray, frequency: np.ndarray, origin: float, nterms: int, fit_mean: bool
) -> np.ndarray:
    """Coefficients ``(nf, M)`` of fits in times ``t - origin`` as coefficients in ``t``.

    Harmonic ``h`` at frequency ``f`` turns by ``phi = 2 pi h f origin``:
    ``a sin(th - phi) + b cos(th - phi)`` is ``a' sin th + b' cos th`` with
    ``a' = a cos phi + b sin phi`` and ``b' = b cos phi - a sin phi``.
    """
    shifted = x.copy()
    for h in range(1, nterms + 1):
        turn = h * frequency * origin
        turn -= np.rint(turn)
        cos, sin = np.cos(2 * np.pi * turn), np.sin(2 * np.pi * turn)
        a, b = x[:, int(fit_mean) + 2 * (h - 1)], x[:, int(fit_mean) + 2 * h - 1]
        shifted[:, int(fit_mean) + 2 * (h - 1)] = a * cos + b * sin
        shifted[:, int(fit_mean) + 2 * h - 1] = b * cos - a * sin
    return shifted


def _checked(
    t, y, dy, unknowns: int, *, batch: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Checked float64 ``t`` (1-D), ``y`` (``(n_curves, n)``: as given with
    ``batch``, else one light curve) and ``dy`` (None, or broadcast to ``y``)."""
    for name, values in (("t", t), ("y", y), ("dy", dy)):
        refuse_masked(name, values)
    t = np.asarray(t, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64)
    if not batch:
        y = y.ravel()[None]
    elif y.ndim != 2:
        raise ValueError(f"y must have shape (n_curves, n), got {y.shape}")
    if y.shape[-1:] != t.shape:
        raise ValueError(f"t and y differ in length: {t.size} and {y.shape[-1]}")
    if dy is not None:
        dy = np.broadcast_to(np.asarray(dy, dtype=np.float64), y.shape)
    if not (
        np.isfinite(t).all() and np.isfinite(y).all() and (dy is None or np.isfinite(dy).all())
    ):
        raise ValueError("t, y and dy must be finite")
    if dy is not None and (dy <= 0).any():
        raise ValueError("dy must be positive")
    if t.size < unknowns:
        raise ValueError(f"{t.size} points cannot fit a model of {unknowns} parameters")
    return t, y, dy


def _normalized(
    z: np.ndarray, values: Standardized, normalization: str, rows: slice = slice(None)
) -> np.ndarray:
    """astropy's normalizations of the standard powers ``z`` of light curves
    ``rows`` (``z``'s first axis; ``psd`` needs their weighted sums of squares)."""
    return _from_standard(z, normalization, 0.5 * values.weighted_sum_of_squares()[rows])


def _from_standard(z: np.ndarray, normalization: str, psd_scale: np.ndarray) -> np.ndarray:
    """astropy's normalizations of standard powers ``z`` (rows: objects); ``psd``
    multiplies row ``i`` by ``psd_scale[i]`` (``1/2 sum dy^-2 (y - ybar)^2``)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if normalization == "psd":
            return z * psd_scale.reshape(psd_scale.shape + (1,) * (z.ndim - 1))
        if normalization == "standard":
            return z
        if normalization == "model":
            return z / (1 - z)
        return -np.log1p(-z)


# {{{ catalogs: clperiod.lombscargle(..., nterms=K), direct path


def min_points(nterms: int, fit_mean: bool) -> int:
    """Fewest observations of a searched object: the model's unknowns
    (``2 nterms``, plus the mean with ``fit_mean``) and one degree of freedom."""
    return 2 * nterms + int(fit_mean) + 1


@dataclass(frozen=True)
class PreparedObjects:
    """The standardized points of a catalog's objects that can be searched.

    Attributes
    ----------
    status : ndarray of int8
        Per object: OK, TOO_FEW_POINTS (fewer than :func:`min_points`) or
        ZERO_VARIANCE; objects that are not OK keep no points.
    offsets : ndarray of int32
        ``(n_objects + 1,)`` offsets of the kept points.
    t : ndarray
        Times of the kept points, as given.
    w, wy : ndarray
        Their weights (summing to 1 per object) and weights times
        standardized values (``clperiod.periodograms.standardize``).
    yy : ndarray
        Per object ``sum w u^2`` of the standardized values ``u`` (NaN if not OK).
    psd_scale : ndarray
        Per object ``1/2 sum dy^-2 (y - ybar)^2`` in the data's units (0 if not OK).
    """

    status: np.ndarray
    offsets: np.ndarray
    t: np.ndarray
    w: np.ndarray
    wy: np.ndarray
    yy: np.ndarray
    psd_scale: np.ndarray

    @property
    def n_objects(self) -> int:
        """Objects of the catalog."""
        return len(self.status)

    @property
    def owners(self) -> np.ndarray:
        """The object of each kept point."""
        return np.repeat(np.arange(self.n_objects), np.diff(self.offsets))


def prepare_objects(
    catalog: Catalog, nterms: int, *, fit_mean: bool, center_data: bool, use_dy: bool
) -> PreparedObjects:
    """Statuses and standardized points of every object of ``catalog``.

    Parameters
    ----------
    catalog
        Validated light curves (finite values, ``dy > 0``), at most
        ``2**31 - 1`` rows (int32 point offsets).
    nterms
        Harmonics of the model (sets the fewest points).
    fit_mean, center_data
        The model, as in astropy; values are centred when either is set.
    use_dy
        Weigh by ``dy**-2`` (else every point weighs 1).

    Raises
    ------
    ValueError
        The catalog has more rows than int32 offsets reach.
    """
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the multi-term kernels index at most "
            f"{np.iinfo(np.int32).max} points per batch"
        )
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < min_points(nterms, fit_mean)] = Status.TOO_FEW_POINTS
    values = standardize(
        catalog.y, catalog.dy if use_dy else None, catalog.offsets, center=fit_mean or center_data
    )
    status[(status == Status.OK) & values.flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    keep = np.repeat(ok, catalog.lengths)
    offsets = np.concatenate([[0], np.cumsum(np.where(ok, catalog.lengths, 0))])
    return PreparedObjects(
        status=status,
        offsets=offsets.astype(np.int32),
        t=catalog.t[keep],
        w=values.wn[keep],
        wy=(values.wn * values.u)[keep],
        yy=np.where(ok, values.yy, np.nan),
        psd_scale=np.where(ok, 0.5 * values.weighted_sum_of_squares(), 0.0),
    )


@dataclass(frozen=True)
class CatalogPeaks:
    """The top-k peaks of a catalog's objects (:func:`search`).

    Attributes
    ----------
    status : ndarray of int8
        As in :class:`PreparedObjects`.
    values : ndarray of float64, shape (n_objects, top_k)
        Peak powers in the search's normalization, best first (not finite
        where there is no peak).
    indices : ndarray of int32, shape (n_objects, top_k)
        Their grid indices (``2**31 - 1``: no peak).
    psd_scale : ndarray of float64
        As in :class:`PreparedObjects`.
    """

    status: np.ndarray
    values: np.ndarray
    indices: np.ndarray
    psd_scale: np.ndarray


#: Work-group size of the peak search on GPUs and on other devices.
_PEAKS_WG = {"gpu": 128, "other": 16}


def batch_buffers(top_k: int) -> list[Buffer]:
    """The device buffers of a batch of :func:`search`, for
    :mod:`clperiod.engine.planner` (items: objects, units: points): the block
    of powers (at most 2**22 float64), the peaks, the offsets and, per point,
    the times, weights and weighted values."""
    return [
        Buffer("powers", fixed=8 * _MAX_BLOCK),
        Buffer("peaks", per_item=top_k * (8 + 4) * 2),
        Buffer("offsets", per_item=4, fixed=4),
        Buffer("points", per_unit=3 * 8),
    ]


def search(
    queue: cl.CommandQueue,
    catalog: Catalog,
    grid: FrequencyGrid,
    nterms: int,
    *,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
    normalization: Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    cutoff: np.ndarray | None = None,
) -> CatalogPeaks:
    """The multi-term periodograms of every object of ``catalog`` and their top-k peaks.

    Each object's times are taken from the middle of its range, and its
    powers are evaluated (``multiterm_catalog`` of ``cl_kernels/multiterm.mako``,
    fp64) in blocks of at most 2**22 powers: several whole periodograms, or
    bins of one object's grid; the bins below ``cutoff``, whose normal
    equations are too ill conditioned for the bound ``lowfreq.DIRECT_EPS``,
    take the exact powers of :func:`clperiod.periodograms.lowfreq.exact_bins`;
    ``peaks_topk`` (``cl_kernels/peaks.mako``) finds each block's peaks, and
    the blocks of one object are merged on the host. The normal systems are
    those of :func:`multiterm_power`.

    Parameters
    ----------
    queue
        The device queue (fp64 device).
    catalog, nterms, fit_mean, center_data, use_dy
        As :func:`prepare_objects`.
    grid
        The frequencies ``fmin + k df``.
    normalization
        astropy's normalizations; psd powers are in the data's units.
    top_k
        Peaks kept per object (distinct local maxima, as the one-term search).
    periodograms
        If given, ``(n_objects, nf)`` float64 host array receiving the
        periodograms (NaN rows for objects that are not OK).
    cutoff
        Per object, the frequency below which bins take exact powers
        (default: :func:`clperiod.periodograms.lowfreq.low_frequency_cutoffs`
        of the batch).

    Returns
    -------
    CatalogPeaks
    """
    prepared = prepare_objects(
        catalog, nterms, fit_mean=fit_mean, center_data=center_data, use_dy=use_dy
    )
    n_obj = prepared.n_objects
    middle = 0.5 * (
        segment_reduce(np.minimum, prepared.t, prepared.offsets)
        + segment_reduce(np.maximum, prepared.t, prepared.offsets)
    )
    pending: list[cl.Event] = []
    points = [
        upload(queue, a, pending)
        for a in (prepared.t - middle[prepared.owners], prepared.w, prepared.wy)
    ]
    starts = upload(queue, prepared.offsets, pending)
    (kernel,) = kernels.get_kernels(
        queue.context,
        "multiterm",
        ("multiterm_catalog",),
        nterms=nterms,
        bias=int(fit_mean),
        wg=_WG,
        rows=1,
        direct=False,
        coefficients=False,
        arbitrary=False,
        catalog=True,
    )

    model = lowfreq.Model(nterms, fit_mean, center_data, use_dy)
    if cutoff is None:
        cutoff = lowfreq.low_frequency_cutoffs(
            catalog,
            model,
            lowfreq.lowest_positive(grid),
            fp64=True,
            tolerance=None,
            eps=lowfreq.DIRECT_EPS[True],
            queue=queue,
        )
    exact = lowfreq.exact_bins(catalog, grid, model, cutoff)
    exact_p = exact.power * prepared.yy[:, None]  # the kernel's p = chi2_ref - chi2

    def launch(first: int, rows: int, lo: int, hi: int, power: cl.Buffer) -> None:
        kernel(
            queue,
            (-(-(hi - lo) // _WG) * _WG, rows),
            (_WG, 1),
            *points,
            starts,
            np.int32(first),
            np.float64(grid.fmin),
            np.float64(grid.df),
            np.int32(lo),
            np.int32(hi - lo),
            power,
        )
        if exact.any():
            pending.extend(
                lowfreq.write_rows(queue, power, exact_p, exact, (first, rows), (lo, hi))
            )

    def store(first: int, rows: int, own_lo: int, own_hi: int, block: np.ndarray) -> None:
        assert periodograms is not None
        z = block / prepared.yy[first : first + rows, None]
        periodograms[first : first + rows, own_lo:own_hi] = _from_standard(
            z, normalization, prepared.psd_scale[first : first + rows]
        )

    values, indices = blocked_peaks(
        queue, launch, n_obj, grid.nf, top_k, store if periodograms is not None else None
    )
    pending.clear()
    z = values / prepared.yy[:, None]
    return CatalogPeaks(
        prepared.status,
        _from_standard(z, normalization, prepared.psd_scale),
        indices,
        prepared.psd_scale,
    )


def blocked_peaks(
    queue: cl.CommandQueue,
    launch: Callable[[int, int, int, int, cl.Buffer], None],
    n_obj: int,
    nf: int,
    top_k: int,
    store: Callable[[int, int, int, int, np.ndarray], None] | None = None,
    dtype: type = np.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate powers (``dtype``: float64, or float32) in blocks of at most
    ``_MAX_BLOCK`` (2**22) and keep each object's top-k peaks (``peaks_topk``),
    merged over the blocks.

    ``launch(first, rows, lo, hi, buffer)`` queues the powers of objects
    ``first .. first + rows - 1`` on bins ``lo .. hi - 1`` into ``buffer``
    (``(rows, hi - lo)``); ``store(first, rows, own_lo, own_hi, block)``, if
    given, receives the powers of the owned bins ``own_lo .. own_hi - 1``.
    Returns the ``(n_obj, top_k)`` values (``dtype``) and grid indices.
    """
    blocks = _bin_blocks(nf)
    itemsize = np.dtype(dtype).itemsize
    values: np.ndarray = np.full((n_obj, len(blocks) * top_k), -np.inf, dtype=dtype)
    indices = np.full((n_obj, len(blocks) * top_k), np.iinfo(np.int32).max, dtype=np.int32)
    largest = max(1, min(n_obj, max(1, _MAX_BLOCK // nf)) * min(nf, _MAX_BLOCK))
    buffer = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, itemsize * largest)
    for number, (own_lo, own_hi) in enumerate(blocks):
        lo, hi = max(own_lo - 1, 0), min(own_hi + 1, nf)  # the neighbours of the owned bins
        rows_per_launch = max(1, _MAX_BLOCK // (hi - lo))
        for first in range(0, n_obj, rows_per_launch):
            rows = min(rows_per_launch, n_obj - first)
            launch(first, rows, lo, hi, buffer)
            found = slice(number * top_k, (number + 1) * top_k)
            values[first : first + rows, found], indices[first : first + rows, found] = (
                _top_k_peaks(queue, buffer, rows, (lo, hi, own_lo, own_hi, nf), top_k, dtype)
            )
            if store is not None:
                block: np.ndarray = np.empty((rows, hi - lo), dtype=dtype)
                cl.enqueue_copy(queue, block, buffer)
                store(first, rows, own_lo, own_hi, block[:, own_lo - lo : own_hi - lo])
    return _best_of_blocks(values, indices, top_k)


def _bin_blocks(nf: int) -> list[tuple[int, int]]:
    """The grid's bins in blocks that, with a neighbour on each side, fit
    :data:`_MAX_BLOCK` powers (one block when the whole grid does)."""
    if nf <= _MAX_BLOCK:
        return [(0, nf)]
    size = _MAX_BLOCK - 2
    return [(lo, min(lo + size, nf)) for lo in range(0, nf, size)]


def _top_k_peaks(
    queue: cl.CommandQueue,
    power: cl.Buffer,
    rows: int,
    bins: tuple[int, int, int, int, int],
    top_k: int,
    dtype: type = np.float64,
) -> tuple[np.ndarray, np.ndarray]:
    """``peaks_topk`` (``cl_kernels/peaks.mako``) of ``rows`` rows of powers
    (``dtype``) of the bins ``bins = (lo, hi, own_lo, own_hi, nf)``: each row
    holds bins ``lo .. hi - 1``, of which ``own_lo .. own_hi - 1`` are searched."""
    wg = _PEAKS_WG["gpu" if queue.device.type & cl.device_type.GPU else "other"]
    real = "double" if np.dtype(dtype) == np.float64 else "float"
    (kernel,) = kernels.get_kernels(
        queue.context, "peaks", ("peaks_topk",), real=real, wg=wg, top_k=top_k
    )
    lo, hi, own_lo, own_hi, nf = bins
    values: np.ndarray = np.empty((rows, top_k), dtype=dtype)
    indices = np.empty((rows, top_k), dtype=np.int32)
    best_val = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, values.nbytes)
    best_idx = cl.Buffer(queue.context, cl.mem_flags.WRITE_ONLY, indices.nbytes)
    kernel(
        queue,
        (rows * wg,),
        (wg,),
        power,
        np.int32(hi - lo),
        np.int32(lo),
        np.int32(own_lo - lo),
        np.int32(own_hi - own_lo),
        np.int32(nf),
        best_val,
        best_idx,
    )
    cl.enqueue_copy(queue, values, best_val)
    cl.enqueue_copy(queue, indices, best_idx)
    return values, indices


def _best_of_blocks(
    values: np.ndarray, indices: np.ndarray, top_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``top_k`` highest of each row's peaks found block by block (equal
    values in grid order)."""
    order = np.lexsort((indices, -values), axis=-1)[:, :top_k]
    return np.take_along_axis(values, order, -1), np.take_along_axis(indices, order, -1)


# }}}
