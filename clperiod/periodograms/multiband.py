"""Multiband Lomb-Scargle periodograms of catalogs (VanderPlas & Ivezic 2015).

The model of astropy's ``LombScargleMultiband(...).power(method="flexible")``:
at each frequency a Fourier series of ``nterms_base`` harmonics shared by all
bands plus, per band, an offset and ``nterms_band`` harmonics of its own,
fitted by weighted least squares with astropy's ridge. The device
(``cl_kernels/multiband.mako``, fp64) accumulates each object's weighted
harmonic sums band by band and solves every frequency's normal system by
Cholesky; ``peaks_topk`` (``cl_kernels/peaks.mako``) reduces the
periodograms to each object's top-k peaks, as :func:`multiterm.search
<clperiod.periodograms.multiterm.search>` does. This is a first version:
fp64 only, uniform frequency grids, one device.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of
from clperiod.engine import kernels
from clperiod.engine.devices import get_queue, require_fp64, select_devices, upload
from clperiod.grid import FrequencyGrid
from clperiod.periodograms.bootstrap import DEFAULT_RESAMPLINGS, bootstrap_fap
from clperiod.periodograms.inputs import (
    PeakResults,
    blank_failed,
    check_top_k,
    degenerate_status,
    segment_reduce,
    segment_sum,
    top_k_arrays,
)
from clperiod.periodograms.multiband_fit import DEFAULT_REG_BAND, MultibandFit
from clperiod.periodograms.multiterm import blocked_peaks

__all__ = [
    "DEFAULT_REG_BAND",
    "MAX_BANDS",
    "MAX_NTERMS",
    "MultibandResult",
    "lombscargle_multiband",
    "min_points",
    "n_parameters",
]

#: Most harmonics of the base and of the band models.
MAX_NTERMS = 4
#: Most bands of a catalog (the normal system, up to 1 + 2K + B (1 + 2L)
#: unknowns, lives in private memory).
MAX_BANDS = 8
_WG = 64
#: Values whose residuals about their band means are below this fraction of
#: their magnitude are constant to rounding (ZERO_VARIANCE).
_RESOLUTION = 64 * np.finfo(np.float64).eps


@dataclass(frozen=True, repr=False)
class MultibandResult(PeakResults):
    """Multiband Lomb-Scargle search results, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    frequency_best, power_best : ndarray
        Highest periodogram peak of each object (NaN when ``status`` is not
        OK); among equal maxima the lowest frequency.
    top_k_frequency, top_k_power : ndarray, shape (n_objects, top_k)
        The ``top_k`` highest distinct peaks (local maxima), best first; NaN
        where an object has fewer peaks.
    status : ndarray of Status
        OK; TOO_FEW_POINTS (no rows, or fewer than
        :func:`~clperiod.periodograms.multiband.min_points`); ZERO_VARIANCE
        (values constant within every band); ZERO_BASELINE, NOT_FINITE,
        BAD_UNCERTAINTY, OUT_OF_RANGE as the other searches use them.
    power : ndarray, shape (n_objects, nf), or None
        The periodograms when requested (rows of objects that are not OK are
        NaN; NaN at frequency 0, where the model is degenerate).
    grid : FrequencyGrid
        The frequency grid evaluated.
    bands : tuple
        The band labels, in the order of the model's band parameters
        (``(None,)`` for a catalog without bands: one band).
    nterms_base, nterms_band : int
        The model.
    devices : list of str
        Device used.
    center_data : bool
        Whether each band's weighted mean was subtracted first.
    reg_base, reg_band : float or None
        The ridges, in units of the normal matrix's trace.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid
    bands: tuple[Any, ...]
    nterms_base: int
    nterms_band: int
    devices: list[str]
    catalog: Catalog = field(repr=False)
    center_data: bool = True
    reg_base: float | None = None
    reg_band: float | None = DEFAULT_REG_BAND

    def fit(self, index: int) -> MultibandFit:
        """The model of object ``index`` (catalog order) at any frequency.

        Its rows, with this search's ``nterms_base``, ``nterms_band``, ridges
        and ``center_data``: ``fit(k).model(t, r.frequency_best[k])`` is the
        model behind the best peak, ``model_parameters`` and ``offset`` those
        of astropy's ``LombScargleMultiband`` on the object's rows (times from
        its first observation, ``MultibandFit.epoch``; the model takes times in
        the catalog's scale). Bands without rows of the object are left out.

        Raises
        ------
        IndexError
            ``index`` out of range.
        ValueError
            The object has no rows.
        """
        index = checks.integer("index", index)
        if not -self.catalog.n_objects <= index < self.catalog.n_objects:
            raise IndexError(f"index {index} out of range for {self.catalog.n_objects} objects")
        index %= self.catalog.n_objects
        rows = slice(self.catalog.offsets[index], self.catalog.offsets[index + 1])
        t = self.catalog.t[rows]
        if t.size == 0:
            raise ValueError(f"object {self.ids[index]!r} (index {index}) has no rows to fit")
        codes = (
            np.zeros(t.size, dtype=np.intp)
            if self.catalog.band_codes is None
            else self.catalog.band_codes[rows].astype(np.intp)
        )
        present, band_index = np.unique(codes, return_inverse=True)
        dy = self.catalog.dy
        return MultibandFit(
            t=t - t.min(),
            y=self.catalog.y[rows],
            weights=np.ones(t.size) if dy is None else dy[rows] ** -2.0,
            band_index=band_index.ravel(),
            labels=tuple(self.bands[code] for code in present),
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            center_data=self.center_data,
            epoch=float(t.min()),
        )

    def false_alarm_probability(
        self, n_resamplings: int = DEFAULT_RESAMPLINGS, *, seed: int | None = None, device=None
    ) -> np.ndarray:
        """Bootstrap false-alarm probability of each object's best peak.

        Every object is resampled ``n_resamplings`` times within its bands
        (times and band labels kept, ``(y, dy)`` drawn with replacement from
        the same band's rows) and the copies are searched with this search's
        grid, model and ridges; the FAP is ``(1 + #{copies whose best power
        >= power_best}) / (1 + n_resamplings)``, at least ``1 / (1 +
        n_resamplings)``. See :func:`clperiod.periodograms.bootstrap.bootstrap_fap`
        (which also returns the counts and the seed).

        Parameters
        ----------
        n_resamplings : int
            Resampled copies per object, >= 1.
        seed : int, optional
            Seed of the generator (0 to 2**64 - 1): the same seed gives the
            same probabilities on every device. By default a fresh one.
        device
            Devices that draw and search the copies (see
            :func:`clperiod.select_devices`).

        Returns
        -------
        ndarray
            One probability per object; NaN where ``status`` is not OK (and
            where no copy could be searched, possible only for a handful of
            resamplings).
        """
        search = functools.partial(
            lombscargle_multiband,
            grid=self.grid,
            nterms_base=self.nterms_base,
            nterms_band=self.nterms_band,
            center_data=self.center_data,
            reg_base=self.reg_base,
            reg_band=self.reg_band,
            device=device,
        )
        return bootstrap_fap(
            self.catalog,
            search,
            n_resamplings=n_resamplings,
            seed=seed,
            observed=self,
            device=device,
        ).fap


def n_parameters(nterms_base: int, nterms_band: int, n_bands: int) -> int:
    """Unknowns of the flexible model: ``1 + 2 nterms_base + n_bands (1 + 2 nterms_band)``."""
    return 1 + 2 * nterms_base + n_bands * (1 + 2 * nterms_band)


def min_points(nterms_base: int, nterms_band: int, n_bands: int) -> int:
    """Fewest observations of an object with data in ``n_bands`` bands: the
    model's independent unknowns (:func:`n_parameters` less the base constant,
    which the band offsets duplicate) and one degree of freedom."""
    return n_parameters(nterms_base, nterms_band, n_bands)


def lombscargle_multiband(
    catalog: Catalog,
    grid: FrequencyGrid,
    *,
    nterms_base: int = 1,
    nterms_band: int = 1,
    center_data: bool = True,
    reg_base: float | None = None,
    reg_band: float | None = DEFAULT_REG_BAND,
    top_k: int = 1,
    periodogram: bool = False,
    device=None,
) -> MultibandResult:
    """Multiband Lomb-Scargle period search of every object of a catalog.

    Each object's power equals astropy's
    ``LombScargleMultiband(t - t[0], y, band, dy, nterms_base=...,
    nterms_band=..., reg_base=..., reg_band=..., center_data=...)
    .power(grid.frequencies(), method="flexible")`` on its own rows, to
    rounding (``normalization`` and ``fit_mean`` do not change that method's
    power, so none is taken).

    Parameters
    ----------
    catalog : Catalog
        Light curves with a band label per row (``Catalog.from_arrays(...,
        band=...)``); a catalog without bands is searched as one band. The
        bands of an object without rows of its own are left out of its model.
    grid : FrequencyGrid
        Ordinary frequencies ``fmin + k df``, in the units of ``1 / t``.
    nterms_base, nterms_band : int
        Harmonics of the model shared by all bands and of each band's model,
        0 to :data:`~clperiod.periodograms.multiband.MAX_NTERMS`, not both 0.
    center_data : bool
        Subtract each band's weighted mean before fitting (astropy's
        default). Without it the reference chi^2 is taken about zero, so data
        far from zero give powers near 1 at every frequency, as in astropy.
    reg_base, reg_band : float or None
        astropy's ridges on the base and band parameters, in units of the
        normal matrix's trace (astropy's ``regularize_by_trace=True``); at
        least one is needed (the model's constants are degenerate without).
    top_k : int
        Distinct peaks (local maxima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's periodogram (``n_objects x nf`` float64
        on the host).
    device
        Device selection (see :func:`clperiod.select_devices`); the first
        selected device computes. It must support fp64.

    Returns
    -------
    MultibandResult

    Raises
    ------
    TypeError
        ``catalog`` is not a Catalog or ``grid`` not a FrequencyGrid.
    ValueError
        Bad options, more than :data:`~clperiod.periodograms.multiband.MAX_BANDS`
        bands, or a device without fp64.
    """
    catalog = _checked_catalog(catalog)
    if not isinstance(grid, FrequencyGrid):
        raise TypeError(f"grid must be a FrequencyGrid (fmin + k df), got {type(grid).__name__}")
    nterms_base = checks.integer("nterms_base", nterms_base, low=0, high=MAX_NTERMS)
    nterms_band = checks.integer("nterms_band", nterms_band, low=0, high=MAX_NTERMS)
    if nterms_base == 0 and nterms_band == 0:
        raise ValueError("at least one of nterms_base and nterms_band must be > 0")
    center_data = checks.boolean("center_data", center_data)
    ridge = _checked_ridge(reg_base, reg_band)
    top_k = check_top_k(top_k, 64)
    periodogram = checks.boolean("periodogram", periodogram)
    info = select_devices(device)[0]
    require_fp64(info)
    queue = get_queue(info)
    prepared = _prepare(catalog, nterms_base, nterms_band, center_data)
    power = np.full((catalog.n_objects, grid.nf), np.nan) if periodogram else None
    values, indices = _search(
        queue, prepared, grid, (nterms_base, nterms_band), ridge, top_k, power
    )
    top_power, top_frequency = top_k_arrays(values, indices, grid)
    status = _final_status(catalog, prepared.status, top_power[:, 0])
    blank_failed(status, top_power, top_frequency, power)
    return MultibandResult(
        ids=catalog.ids,
        frequency_best=top_frequency[:, 0].copy(),
        power_best=top_power[:, 0].copy(),
        top_k_frequency=top_frequency,
        top_k_power=top_power,
        status=status,
        power=power,
        grid=grid,
        bands=(None,) if catalog.bands is None else catalog.bands,
        nterms_base=nterms_base,
        nterms_band=nterms_band,
        devices=[info.label],
        catalog=catalog,
        center_data=center_data,
        reg_base=reg_base if reg_base is None else ridge[0],
        reg_band=reg_band if reg_band is None else ridge[1],
    )


def _final_status(catalog: Catalog, status: np.ndarray, power_best: np.ndarray) -> np.ndarray:
    """``status`` with the causes :func:`~clperiod.periodograms.inputs.degenerate_status`
    finds, keeping ZERO_VARIANCE for objects whose values are constant within
    each band (their pooled values may vary)."""
    final = degenerate_status(catalog, status, power_best, use_dy=True)
    final[(status == Status.ZERO_VARIANCE) & (final == Status.OUT_OF_RANGE)] = Status.ZERO_VARIANCE
    return final


def _checked_catalog(catalog: Any) -> Catalog:
    """``catalog`` as a Catalog with at most :data:`MAX_BANDS` bands and int32 offsets."""
    if not isinstance(catalog, Catalog):
        raise TypeError(f"catalog must be a clperiod.Catalog, got {type(catalog).__name__}")
    catalog = catalog_of(catalog)
    if catalog.n_bands > MAX_BANDS:
        raise ValueError(
            f"catalog has {catalog.n_bands} bands; the multiband search takes at most "
            f"{MAX_BANDS} (select some with Catalog.select_bands)"
        )
    if catalog.offsets[-1] > np.iinfo(np.int32).max:
        raise ValueError(
            f"catalog has {catalog.offsets[-1]} rows; the multiband kernel indexes at most "
            f"{np.iinfo(np.int32).max} points (search it in slices)"
        )
    return catalog


def _checked_ridge(reg_base: Any, reg_band: Any) -> tuple[float, float]:
    """``(reg_base, reg_band)`` as floats (0 for None); one must be positive."""
    ridge = []
    for name, value in (("reg_base", reg_base), ("reg_band", reg_band)):
        ridge.append(0.0 if value is None else checks.real(name, value, positive=True))
    if ridge == [0.0, 0.0]:
        raise ValueError(
            "give reg_base or reg_band: without a ridge the flexible model's normal "
            "matrix is singular (its base constant duplicates the band offsets)"
        )
    return ridge[0], ridge[1]


@dataclass(frozen=True)
class _Prepared:
    """The points of a catalog's objects that can be searched, as the kernel takes them.

    ``status`` is OK or TOO_FEW_POINTS per object (objects not OK keep no
    points); per kept point its time from its object's first observation,
    weight (summing to 1 per object), weight times scaled value and band
    code; ``offsets`` of the kept points; ``chi2_ref`` per object
    ``sum w u^2`` of the scaled values (NaN if not OK, 0 if they do not vary).
    """

    status: np.ndarray
    offsets: np.ndarray
    t: np.ndarray
    w: np.ndarray
    wy: np.ndarray
    band: np.ndarray
    chi2_ref: np.ndarray


def _prepare(catalog: Catalog, nterms_base: int, nterms_band: int, center: bool) -> _Prepared:
    """The kernel's inputs for ``catalog`` (see :class:`_Prepared`)."""
    counts = catalog.band_counts()
    bands_present = (counts > 0).sum(axis=1)
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    too_few = catalog.lengths < min_points(nterms_base, nterms_band, bands_present)
    status[too_few | (catalog.lengths == 0)] = Status.TOO_FEW_POINTS
    codes = (
        np.zeros(catalog.t.size, dtype=np.int16)
        if catalog.band_codes is None
        else catalog.band_codes.astype(np.int16)
    )
    owners = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
    with np.errstate(all="ignore"):
        weights = np.ones_like(catalog.y) if catalog.dy is None else catalog.dy**-2.0
        values = _centred(catalog.y, weights, owners * catalog.n_bands + codes, center)
        w = weights / np.repeat(segment_sum(weights, catalog.offsets), catalog.lengths)
        square = segment_sum(w * values * values, catalog.offsets)
        flat = ~(square > _RESOLUTION**2 * segment_sum(w * catalog.y**2, catalog.offsets))
        scale = np.repeat(np.sqrt(np.where(flat, 1.0, square)), catalog.lengths)
        scaled = values / scale
        chi2_ref = segment_sum(w * scaled * scaled, catalog.offsets)
    status[(status == Status.OK) & flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    keep = np.repeat(ok, catalog.lengths)
    first = np.repeat(segment_reduce(np.minimum, catalog.t, catalog.offsets), catalog.lengths)
    offsets = np.concatenate([[0], np.cumsum(np.where(ok, catalog.lengths, 0))])
    return _Prepared(
        status=status,
        offsets=offsets.astype(np.int32),
        t=(catalog.t - first)[keep],
        w=w[keep],
        wy=(w * scaled)[keep],
        band=codes[keep],
        chi2_ref=np.where(ok, chi2_ref, np.nan),
    )


def _centred(y: np.ndarray, weights: np.ndarray, cells: np.ndarray, center: bool) -> np.ndarray:
    """``y`` less the weighted mean of its cell (object and band), twice for
    the digits the first pass loses; ``y`` itself without ``center``."""
    if not center:
        return y
    cell_index, cells = np.unique(cells, return_inverse=True)
    size = cell_index.size
    centred = y
    for _ in range(2):
        total = np.bincount(cells, weights, minlength=size)
        means = np.bincount(cells, weights * centred, minlength=size) / total
        centred = centred - means[cells]
    return centred


def _search(
    queue: cl.CommandQueue,
    prepared: _Prepared,
    grid: FrequencyGrid,
    nterms: tuple[int, int],
    ridge: tuple[float, float],
    top_k: int,
    power: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Every object's top-k standard powers and their grid indices, and its
    periodogram into ``power`` when given; blocks of at most 2**22 powers as
    :func:`clperiod.periodograms.multiterm.search` evaluates them."""
    n_obj = prepared.status.size
    pending: list[cl.Event] = []
    points = [
        upload(queue, a, pending) for a in (prepared.t, prepared.w, prepared.wy, prepared.band)
    ]
    starts = upload(queue, prepared.offsets, pending)
    n_bands = int(prepared.band.max(initial=0)) + 1
    (kernel,) = kernels.get_kernels(
        queue.context,
        "multiband",
        ("multiband_catalog",),
        nterms_base=nterms[0],
        nterms_band=nterms[1],
        nbands=n_bands,
        wg=_WG,
    )

    def launch(first: int, rows: int, lo: int, hi: int, out: cl.Buffer) -> None:
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
            np.float64(ridge[0]),
            np.float64(ridge[1]),
            out,
        )

    def store(first: int, rows: int, own_lo: int, own_hi: int, block: np.ndarray) -> None:
        assert power is not None
        power[first : first + rows, own_lo:own_hi] = (
            block / prepared.chi2_ref[first : first + rows, None]
        )

    values, indices = blocked_peaks(
        queue, launch, n_obj, grid.nf, top_k, store if power is not None else None
    )
    pending.clear()
    return values / prepared.chi2_ref[:, None], indices
