"""Multi-harmonic analysis of variance (MHAOV) periodograms of catalogs.

The statistic of Schwarzenberg-Czerny (1996) as P4J computes it: for a
catalog without bands, P4J's ``MHAOV(t, y, dy, Nharmonics=H, mode=1)`` (its
``periodogram(method="MHAOV")``), the F statistic of a fit of ``H`` harmonics
and a mean; for a catalog with bands, P4J's
``MultiBandPeriodogram(method="MHAOV", Nharmonics=H)``, which fits each band
with its own mean and (whatever ``H`` is) one harmonic and pools the bands'
sums of squares. The device (``cl_kernels/mhaov.mako``, fp64 or fp32)
accumulates each band's weighted harmonic sums, solves the band's centred
normal system per frequency and adds the bands' explained shares;
``peaks_topk`` (``cl_kernels/peaks.mako``) reduces the periodograms to each
object's top-k peaks, as :func:`multiterm.search
<clperiod.periodograms.multiterm.search>` does, and the objects are spread
over the selected devices (``clperiod.engine.scheduler.run_on_devices``).
False-alarm probabilities come from the device bootstrap
(:mod:`clperiod.periodograms.bootstrap`) or, on the host, from the
statistic's F law (:func:`analytic_fap`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyopencl as cl
from scipy import special

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of
from clperiod.engine import kernels
from clperiod.engine.devices import DeviceInfo, get_queue, require_fp64, select_devices, upload
from clperiod.engine.scheduler import run_on_devices, split_range
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid, split_float32
from clperiod.periodograms.bootstrap import DEFAULT_RESAMPLINGS, bootstrap_fap
from clperiod.periodograms.inputs import (
    PeakResults,
    band_order,
    banded_status,
    blank_failed,
    check_choice,
    check_top_k,
    reference_times,
    row_cells,
    top_k_arrays,
)
from clperiod.periodograms.multiterm import blocked_peaks
from clperiod.periodograms.standardize import Standardized, standardize

__all__ = [
    "MAX_NHARMONICS",
    "UNEXPLAINED_FLOOR",
    "AnalyticFap",
    "MhaovResult",
    "analytic_fap",
    "mhaov",
    "min_band_points",
]

Precision = Literal["fp64", "fp32"]
FapMethod = Literal["bootstrap", "analytic"]

#: Most harmonics of a fit (its normal system, ``2 H x 2 H``, lives in private memory).
MAX_NHARMONICS = 8
#: The unexplained share ``1 - Z`` of the F statistic is floored at this value.
UNEXPLAINED_FLOOR = 1e-9
_WG = 64
#: Most points of a batch uploaded at once (objects are never split).
_BATCH_POINTS = 1 << 24
#: A harmonic column is left out of a band's fit where the squared norm of its
#: part independent of the columns before it is at most this fraction of the
#: size of the sums that formed it: 1024 units of roundoff of the precision,
#: so that rounding changes a kept column's share by at most ~1/1000. Columns
#: are left out only where the harmonics are nearly collinear: at f = 0, where
#: all of a band's phases coincide, and at periods far beyond the baseline.
_PIVOT_TOL = {
    name: 1024 * float(np.finfo(t).eps) for name, t in (("fp64", np.float64), ("fp32", np.float32))
}


@dataclass(frozen=True, repr=False)
class MhaovResult(PeakResults):
    """MHAOV search results, one entry per catalog object.

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
        OK; TOO_FEW_POINTS (no band with ``min_points`` rows); ZERO_VARIANCE
        (values constant within every band searched); ZERO_BASELINE,
        NOT_FINITE, BAD_UNCERTAINTY, OUT_OF_RANGE as the other searches use
        them.
    power : ndarray, shape (n_objects, nf), or None
        The periodograms (the F statistic) when requested, columns in the
        order of ``grid.frequencies()``; rows of objects that are not OK are
        NaN.
    grid : FrequencyGrid or FrequencyArray
        The frequencies evaluated.
    bands : tuple
        The catalog's band labels (``(None,)`` for a catalog without bands).
    band_used : ndarray of bool, shape (n_objects, len(bands))
        The bands that enter each object's statistic (those with at least
        ``min_points`` rows; none for objects that are not OK).
    dof_model : int
        ``2 nharmonics``, the numerator's degrees of freedom of the
        statistic's scaling (``d1``).
    dof_residual : ndarray
        Per object the denominator's degrees of freedom of the scaling,
        ``N - 2 nharmonics - 1`` summed over the bands used (0 where not OK).
        Without bands the statistic follows ``F(dof_model, dof_residual)``
        for white Gaussian noise; with bands the F law's degrees of freedom
        differ (:func:`~clperiod.periodograms.mhaov.analytic_fap`).
    nharmonics : int
        Harmonics of the statistic's degrees of freedom (and of the fit
        without bands).
    fit_harmonics : int
        Harmonics fitted in each band.
    min_points : int
        Fewest rows of a band that enters the statistic.
    use_errors : bool
        Whether the rows were weighted by ``dy**-2`` (False also for a
        catalog without ``dy``).
    devices : list of str
        Devices used.
    precision : str
        ``"fp64"`` or ``"fp32"``.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    bands: tuple[Any, ...]
    band_used: np.ndarray
    dof_model: int
    dof_residual: np.ndarray
    nharmonics: int
    fit_harmonics: int
    min_points: int
    use_errors: bool
    devices: list[str]
    precision: Precision
    catalog: Catalog = field(repr=False)

    def false_alarm_probability(
        self,
        n_resamplings: int | None = None,
        *,
        method: FapMethod = "bootstrap",
        seed: int | None = None,
        device=None,
    ) -> np.ndarray:
        """False-alarm probability of each object's best peak: bootstrap or F law.

        ``method="bootstrap"`` (default): every object is resampled
        ``n_resamplings`` times within its bands (times and band labels kept,
        ``(y, dy)`` drawn with replacement from the same band's rows; all rows
        for a catalog without bands) and the copies are searched with this
        search's grid, ``nharmonics``, ``fit_harmonics``, ``min_points``,
        ``use_errors`` and precision; the FAP is ``(1 + #{copies whose best
        power >= power_best}) / (1 + n_resamplings)``, at least ``1 / (1 +
        n_resamplings)``. See :func:`clperiod.periodograms.bootstrap.bootstrap_fap`
        (which also returns the counts and the seed).

        ``method="analytic"``: the F law of the statistic for white Gaussian
        noise at one frequency, raised to the number of grid frequencies, an
        upper bound of the grid's FAP, computed on the host. See
        :func:`~clperiod.periodograms.mhaov.analytic_fap` (which also returns
        the single-frequency probability, the degrees of freedom and the
        statuses).

        Parameters
        ----------
        n_resamplings : int, optional
            Bootstrap: resampled copies per object, >= 1; default
            :data:`~clperiod.periodograms.bootstrap.DEFAULT_RESAMPLINGS` (1000).
        method : {"bootstrap", "analytic"}
            How the probability is computed.
        seed : int, optional
            Bootstrap: seed of the generator (0 to 2**64 - 1): the same seed
            gives the same probabilities on every device. By default a fresh
            one.
        device
            Bootstrap: devices that draw and search the copies (see
            :func:`clperiod.select_devices`).

        Returns
        -------
        ndarray
            One probability per object; NaN where ``status`` is not OK (and,
            for the bootstrap, where no copy could be searched, possible only
            for a handful of resamplings).

        Raises
        ------
        ValueError
            An unknown ``method``, or ``n_resamplings``, ``seed`` or
            ``device`` given with ``method="analytic"``.
        """
        check_choice("method", method, FapMethod)
        if method == "analytic":
            options = {"n_resamplings": n_resamplings, "seed": seed, "device": device}
            given = [name for name, value in options.items() if value is not None]
            if given:
                raise ValueError(f"{', '.join(given)}: only for method='bootstrap'")
            return analytic_fap(self).fap
        search = functools.partial(
            mhaov,
            grid=self.grid,
            nharmonics=self.nharmonics,
            fit_harmonics=self.fit_harmonics,
            min_points=self.min_points,
            use_errors=self.use_errors,
            precision=self.precision,
            device=device,
        )
        return bootstrap_fap(
            self.catalog,
            search,
            n_resamplings=DEFAULT_RESAMPLINGS if n_resamplings is None else n_resamplings,
            seed=seed,
            observed=self,
            device=device,
        ).fap


@dataclass(frozen=True, repr=False)
class AnalyticFap:
    """F-law false-alarm probabilities of an MHAOV search, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    fap : ndarray
        ``1 - (1 - p_single) ** n_trials``: for white Gaussian noise, an upper
        bound of the probability of a best peak at least ``power_best`` on
        the grid (:func:`analytic_fap`); NaN where ``status`` is not OK.
    p_single : ndarray
        The probability that white Gaussian noise reaches ``power_best`` at one
        given frequency: the survival function of ``F(dof_model,
        dof_residual)`` at the statistic's F variable; NaN where ``status`` is
        not OK.
    status : ndarray of Status
        The search's status (TOO_FEW_POINTS where no band has the rows that
        the degrees of freedom need, ZERO_VARIANCE, ...).
    dof_model, dof_residual : ndarray of int64
        The F law's degrees of freedom: ``2 fit_harmonics B`` and ``sum_b (N_b
        - 2 fit_harmonics - 1)`` over the ``B`` bands that enter the
        statistic with values that vary; 0 where ``status`` is not OK.
    n_trials : int
        The distinct frequencies of the grid.
    """

    ids: np.ndarray
    fap: np.ndarray
    p_single: np.ndarray
    status: np.ndarray
    dof_model: np.ndarray
    dof_residual: np.ndarray
    n_trials: int

    def __repr__(self) -> str:
        return (
            f"AnalyticFap(n_objects={self.ids.size}, n_trials={self.n_trials}, "
            f"ok={int((self.status == Status.OK).sum())})"
        )


def analytic_fap(result: MhaovResult) -> AnalyticFap:
    """False-alarm probabilities of an MHAOV search's best peaks from the F law.

    For white Gaussian noise whose ``dy`` are right up to one factor common
    to all rows (without errors: the same scatter in every row), each band
    ``b`` of ``N_b`` rows that enters the statistic splits its ``chi2_b``
    about its weighted mean into the share a fit of ``F = fit_harmonics``
    harmonics explains at ``f``, ``chi2`` with ``2 F`` degrees of freedom,
    and an independent residual with ``N_b - 2 F - 1`` (Cochran's theorem);
    the bands are independent, so the pooled shares have ``d1 = 2 F B`` and
    ``d2 = sum_b (N_b - 2 F - 1)``, and at each frequency

        x = (sum_b dchi2_b / d1) / (sum_b (chi2_b - dchi2_b) / d2) ~ F(d1, d2)

    (Schwarzenberg-Czerny 1996; without bands ``d1 = 2 H``, ``d2 = N - 2 H
    - 1`` and ``x`` is the statistic itself). The statistic is ``theta =
    x * (d1 / d2) * (result.dof_residual / result.dof_model)``: P4J's
    multiband scaling, which counts ``2 H`` for ``d1`` whatever the number
    of bands and harmonics fitted. ``p_single`` is ``P(F(d1, d2) >= x)`` at
    the best peak (``scipy.special.fdtrc``, as ``scipy.stats.f.sf``), and
    over the grid's ``M`` distinct frequencies

        fap = 1 - (1 - p_single) ** M.

    That is exact for ``M`` independent frequencies. Grid frequencies closer
    than about ``1 / T`` (``T`` the baseline) are correlated, which lowers
    the true FAP: Bonferroni's ``M p_single`` bounds it above for any grid,
    and ``fap`` is within ``(M p_single)**2 / 2`` of that bound: a
    conservative bound where it is small, the more so the finer the grid.
    (``M = T (fmax - fmin)``, the usual count of independent frequencies,
    understates the FAP of randomly sampled light curves.) Bands with
    constant values add nothing to the statistic and are left out of ``B``;
    bands with ``dy`` off by different factors, or unweighted bands of
    different scatter, break the law.

    Parameters
    ----------
    result : MhaovResult
        The search (:func:`clperiod.mhaov`).

    Returns
    -------
    AnalyticFap

    Raises
    ------
    TypeError
        ``result`` is not an MhaovResult.
    """
    if not isinstance(result, MhaovResult):
        raise TypeError(f"result must be an MhaovResult, got {type(result).__name__}")
    ok = result.status == Status.OK
    catalog = result.catalog
    dy = catalog.dy if result.use_errors else None
    counts = catalog.band_counts()
    cells = row_cells(catalog)
    flat = _band_values(catalog, cells, counts, result.band_used, dy)[1].flat.reshape(counts.shape)
    varying = result.band_used & ~flat
    dof_model = 2 * result.fit_harmonics * varying.sum(axis=1)
    residual = counts - 2 * result.fit_harmonics - 1
    dof_residual = np.where(varying, residual, 0).sum(axis=1)
    p_single = np.full(catalog.n_objects, np.nan)
    ratio = result.power_best[ok] * result.dof_model / result.dof_residual[ok]
    x = ratio * dof_residual[ok] / dof_model[ok]
    p_single[ok] = special.fdtrc(dof_model[ok], dof_residual[ok], x)
    n_trials = search_grid(result.grid)[0].nf
    with np.errstate(divide="ignore"):  # p_single = 1 where the best power is 0
        fap = -np.expm1(n_trials * np.log1p(-p_single))
    return AnalyticFap(
        ids=result.ids,
        fap=fap,
        p_single=p_single,
        status=result.status,
        dof_model=dof_model,
        dof_residual=dof_residual,
        n_trials=n_trials,
    )


def min_band_points(nharmonics: int, fit_harmonics: int) -> int:
    """Fewest rows of a band (of an object without bands): the fit's
    ``2 fit_harmonics + 1`` unknowns and the statistic's ``2 nharmonics + 1``,
    and one degree of freedom left."""
    return 2 * max(nharmonics, fit_harmonics) + 2


def mhaov(
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    *,
    nharmonics: int = 1,
    fit_harmonics: int | None = None,
    min_points: int | None = None,
    use_errors: bool = True,
    top_k: int = 1,
    periodogram: bool = False,
    precision: Precision = "fp64",
    device=None,
) -> MhaovResult:
    """Multi-harmonic analysis of variance period search of every object of a catalog.

    The F statistic of Schwarzenberg-Czerny (1996). With weights ``w =
    dy**-2`` (1 with ``use_errors=False`` or without ``dy``), a band's
    ``chi2 = sum w (y - ybar)^2`` about its weighted mean and ``dchi2`` the
    part of it that a weighted least-squares fit of a mean and
    ``fit_harmonics`` harmonics explains at frequency ``f``:

    * catalog without bands (P4J ``MHAOV(t, y, dy, Nharmonics=H, mode=1)``,
      ``fit_harmonics = H``): ``theta = d2 / d1 * dchi2 / (chi2 - dchi2)``
      with ``d1 = 2 H``, ``d2 = N - 2 H - 1``; for white Gaussian noise it
      follows ``F(d1, d2)`` at each frequency.
    * catalog with bands (P4J ``MultiBandPeriodogram(method="MHAOV",
      Nharmonics=H)``): each band ``b`` has its own mean and fit,
      ``theta = sum_b d2_b / d1 * sum_b dchi2_b / sum_b (chi2_b - dchi2_b)``,
      ``d2_b = N_b - 2 H - 1``. P4J fits one harmonic per band whatever
      ``H`` is (``fit_harmonics=None``); ``H`` then enters only ``d1`` and
      ``d2_b``.

    The denominator's share of ``chi2`` is floored at
    :data:`~clperiod.periodograms.mhaov.UNEXPLAINED_FLOOR` (1e-9), so a
    model that fits exactly gives a large finite value (P4J floors the
    single-band denominator at 1e-9 in units of ``chi2``, which is the same
    wherever the fit leaves more than 1e-9 of a ``chi2`` of at least 1
    unexplained, and does not floor the multiband one). At ``f = 0``, and
    wherever all of a band's phases coincide, the harmonics explain nothing
    of that band (as in P4J).

    Parameters
    ----------
    catalog : Catalog
        Light curves, with or without a band label per row; a list of light
        curves is taken as :meth:`Catalog.from_lightcurves` builds it.
    grid : FrequencyGrid or FrequencyArray
        Ordinary frequencies (cycles per unit of ``t``): a uniform grid or
        any frequencies (:meth:`FrequencyGrid.from_frequencies`; periodogram
        columns follow their order, peaks are local maxima along frequency).
    nharmonics : int
        ``H`` above (P4J's ``Nharmonics``), 1 to
        :data:`~clperiod.periodograms.mhaov.MAX_NHARMONICS` (8).
    fit_harmonics : int, optional
        Harmonics fitted in each band of a catalog with bands: None fits one,
        as P4J does; ``nharmonics`` gives the textbook multiband statistic.
        A catalog without bands fits ``nharmonics`` (another value raises).
    min_points : int, optional
        Fewest rows of a band for it to enter an object's statistic (of an
        object, without bands); fewer leave the band out (an object with no
        band left is TOO_FEW_POINTS). Default and least
        ``2 max(nharmonics, fit_harmonics) + 2``
        (:func:`~clperiod.periodograms.mhaov.min_band_points`); ALeRCE keeps
        bands with at least 15.
    use_errors : bool
        Weight rows by ``dy**-2`` (P4J's ``err``); False weighs every row 1
        (P4J with ``err`` all equal).
    top_k : int
        Distinct peaks (local maxima) kept per object, 1 to 64.
    periodogram : bool
        Also return every object's periodogram (``n_objects x nf`` float64).
    precision : {"fp64", "fp32"}
        Arithmetic of the device. Times stay float64 on the host, measured
        from each object's reference observation; fp32 gets each point's
        phase inputs as float32 pairs, so raw MJD or JD epochs keep ~1e-7
        cycles of phase accuracy. fp32's explained shares ``dchi2 / chi2``
        are good to a few 1e-7 (about 1e-4 where the harmonics of a fit of
        two or more are nearly collinear: periods beyond the baseline,
        the 1/day alias of night-time observations).
    device
        Device selection (see :func:`clperiod.select_devices`); objects are
        spread over every selected device. fp64 needs devices with fp64.

    Returns
    -------
    MhaovResult

    Raises
    ------
    TypeError
        ``catalog`` is not a Catalog or a list of light curves, ``grid`` not
        a FrequencyGrid or FrequencyArray, or an option of the wrong type.
    ValueError
        An option out of range, or ``precision="fp64"`` on a device without
        fp64.
    """
    catalog = catalog_of(catalog)
    searched, positions = search_grid(grid)
    nharmonics = checks.integer("nharmonics", nharmonics, low=1, high=MAX_NHARMONICS)
    fitted = _fit_harmonics(catalog, nharmonics, fit_harmonics)
    least = min_band_points(nharmonics, fitted)
    fewest = least if min_points is None else checks.integer("min_points", min_points, low=least)
    use_errors = checks.boolean("use_errors", use_errors)
    top_k = check_top_k(top_k, 64)
    periodogram = checks.boolean("periodogram", periodogram)
    check_choice("precision", precision, Precision)
    devices = select_devices(device)
    if precision == "fp64":
        for info in devices:
            require_fp64(info)
    use_errors = use_errors and catalog.dy is not None
    prepare = functools.partial(
        _prepare, nharmonics=nharmonics, fewest=fewest, weighted=use_errors
    )
    power = np.full((catalog.n_objects, searched.nf), np.nan) if periodogram else None
    options = _Search(searched, fitted, precision, top_k)
    found = _search(devices, catalog, prepare, options, power)
    top_power, top_frequency = top_k_arrays(found.values, found.indices, searched)
    status = banded_status(catalog, found.status, top_power[:, 0], use_dy=use_errors)
    blank_failed(status, top_power, top_frequency, power)
    return MhaovResult(
        ids=catalog.ids,
        frequency_best=top_frequency[:, 0].copy(),
        power_best=top_power[:, 0].copy(),
        top_k_frequency=top_frequency,
        top_k_power=top_power,
        status=status,
        power=power if power is None or positions is None else power[:, positions],
        grid=grid,
        bands=(None,) if catalog.bands is None else catalog.bands,
        band_used=found.band_used & (status == Status.OK)[:, None],
        dof_model=2 * nharmonics,
        dof_residual=np.where(status == Status.OK, found.dof_residual, 0),
        nharmonics=nharmonics,
        fit_harmonics=fitted,
        min_points=fewest,
        use_errors=use_errors,
        devices=[info.label for info in devices],
        precision=precision,
        catalog=catalog,
    )


def _fit_harmonics(catalog: Catalog, nharmonics: int, fit_harmonics: Any) -> int:
    """The harmonics fitted per band: ``nharmonics`` without bands, else
    ``fit_harmonics`` (1 for None, as P4J)."""
    if fit_harmonics is not None:
        fit_harmonics = checks.integer("fit_harmonics", fit_harmonics, low=1, high=MAX_NHARMONICS)
    if catalog.bands is None:
        if fit_harmonics not in (None, nharmonics):
            raise ValueError(
                f"fit_harmonics={fit_harmonics} needs a catalog with bands; without bands "
                f"the fit has nharmonics={nharmonics} harmonics"
            )
        return nharmonics
    return 1 if fit_harmonics is None else fit_harmonics


# {{{ host preparation


@dataclass(frozen=True)
class _Prepared:
    """The points of a catalog's objects that enter the statistic, as the kernel takes them.

    ``status`` is OK, TOO_FEW_POINTS or ZERO_VARIANCE per object (objects not
    OK keep no points); the kept points are sorted by object and band (time
    order within a band), with their time from the object's reference
    observation ``tau``, weight ``w`` (summing to 1 per band), ``wu`` (``w``
    times the band-centred, scaled value) and band code; ``offsets`` of the
    objects' kept points. Per object and band: ``band_scale`` (the band's
    share of the object's ``chi2`` over its scaled ``sum w u^2``; 0 for bands
    that add nothing) and ``band_used``; per object ``dof_residual`` and
    ``f_scale``, the F statistic's ``d2 / d1``.
    """

    status: np.ndarray
    offsets: np.ndarray
    tau: np.ndarray
    w: np.ndarray
    wu: np.ndarray
    band: np.ndarray
    band_scale: np.ndarray
    band_used: np.ndarray
    dof_residual: np.ndarray
    f_scale: np.ndarray


def _prepare(catalog: Catalog, nharmonics: int, fewest: int, weighted: bool) -> _Prepared:
    """The kernel's inputs for ``catalog`` (see :class:`_Prepared`)."""
    n_obj, n_bands = catalog.n_objects, catalog.n_bands
    owners, codes = row_cells(catalog)
    dy = catalog.dy if weighted else None
    counts = catalog.band_counts()
    used = (counts >= fewest) & ~_invalid_objects(catalog, owners, dy)[:, None]
    status = np.where(used.any(axis=1), Status.OK, Status.TOO_FEW_POINTS).astype(np.int8)
    order, values = _band_values(catalog, (owners, codes), counts, used, dy)
    flat = values.flat.reshape(n_obj, n_bands)
    status[(status == Status.OK) & (flat | ~used).all(axis=1)] = Status.ZERO_VARIANCE
    adds = used & ~flat & (status == Status.OK)[:, None]
    band_scale = _band_shares(values, adds) / np.where(adds, values.yy.reshape(adds.shape), 1.0)
    kept = adds.ravel()[(owners * n_bands + codes)[order]]
    rows = order[kept]
    reference = reference_times(catalog)
    dof = np.where(used, counts - 2 * nharmonics - 1, 0).sum(axis=1)
    if catalog.lengths.max(initial=0) > np.iinfo(np.int32).max:
        raise ValueError("an object has more rows than the kernel indexes (2**31 - 1)")
    return _Prepared(
        status=status,
        offsets=np.concatenate([[0], np.cumsum(np.bincount(owners[rows], minlength=n_obj))]),
        tau=catalog.t[rows] - reference[owners[rows]],
        w=values.wn[kept],
        wu=(values.wn * values.u)[kept],
        band=codes[rows].astype(np.int16),
        band_scale=band_scale,
        band_used=used & (status == Status.OK)[:, None],
        dof_residual=dof.astype(np.float64),
        f_scale=dof / (2.0 * nharmonics),
    )


def _band_values(
    catalog: Catalog,
    cells: tuple[np.ndarray, np.ndarray],
    counts: np.ndarray,
    used: np.ndarray,
    dy: np.ndarray | None,
) -> tuple[np.ndarray, Standardized]:
    """The rows of the ``used`` bands (per object and band; ``cells``: the
    rows' objects and bands, :func:`~clperiod.periodograms.inputs.row_cells`;
    ``counts``: the catalog's :meth:`~clperiod.Catalog.band_counts`), sorted
    by object and band, and their values standardized band by band (``flat``
    per band)."""
    owners, codes = cells
    order = band_order(counts, owners, codes)
    order = order[used[owners[order], codes[order]]]
    cell_offsets = np.concatenate([[0], np.cumsum(np.where(used, counts, 0).ravel())])
    values = standardize(catalog.y[order], None if dy is None else dy[order], cell_offsets, True)
    return order, values


def _invalid_objects(catalog: Catalog, owners: np.ndarray, dy: np.ndarray | None) -> np.ndarray:
    """Per object, whether a row has a non-finite ``t``, ``y`` or (used) ``dy``,
    or a ``dy <= 0`` (only unchecked catalogs can)."""
    if catalog.checked:
        return np.zeros(catalog.n_objects, dtype=bool)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(catalog.t) & np.isfinite(catalog.y))
        if dy is not None:
            bad |= ~(np.isfinite(dy) & (dy > 0))
    return np.bincount(owners[bad], minlength=catalog.n_objects) > 0


def _band_shares(values: Standardized, adds: np.ndarray) -> np.ndarray:
    """Per object and band, the band's share of the object's summed ``chi2 =
    sum dy**-2 (y - ybar)**2`` over the bands that ``adds`` marks (0
    elsewhere), formed from logarithms so that no scale overflows."""
    with np.errstate(divide="ignore"):
        log_chi2 = (
            np.log2(values.weight_total)
            + np.log2(values.yy)
            + 2.0 * values.exponent
            - 2.0 * np.log2(values.dy_min)
        ).reshape(adds.shape)
    log_chi2 = np.where(adds, log_chi2, -np.inf)
    top = np.max(log_chi2, axis=1, keepdims=True, initial=-np.inf)
    share = np.where(adds, np.exp2(log_chi2 - np.where(np.isfinite(top), top, 0.0)), 0.0)
    total = share.sum(axis=1, keepdims=True)
    return np.divide(share, total, out=np.zeros_like(share), where=total > 0)


# }}}
# {{{ device search


@dataclass(frozen=True)
class _Search:
    """What every batch evaluates: the frequencies (as :func:`search_grid`
    gives them), the harmonics fitted, the precision and the peaks kept."""

    grid: FrequencyGrid | FrequencyArray
    harmonics: int
    precision: str
    top_k: int

    @property
    def fp64(self) -> bool:
        return self.precision == "fp64"

    @property
    def real(self) -> str:
        return "double" if self.fp64 else "float"

    @property
    def arbitrary(self) -> bool:
        return not isinstance(self.grid, FrequencyGrid)


@dataclass(frozen=True)
class _Found:
    """Per object (catalog order): ``status``, ``band_used`` and
    ``dof_residual`` as :func:`_prepare` gives them, and the top-k
    statistics ``values`` and their grid ``indices``."""

    status: np.ndarray
    band_used: np.ndarray
    dof_residual: np.ndarray
    values: np.ndarray
    indices: np.ndarray


def _search(
    devices: list[DeviceInfo],
    catalog: Catalog,
    prepare: Callable[[Catalog], _Prepared],
    options: _Search,
    power: np.ndarray | None,
) -> _Found:
    """Every object's top-k statistics and their grid indices, the batches
    of objects spread over ``devices``, each prepared (``prepare``) by the
    device thread that takes it; the periodograms into ``power`` when given."""
    batches = _object_batches(catalog.offsets, len(devices))

    def work(info: DeviceInfo, batch: tuple[int, int]) -> _Found:
        lo, hi = batch
        prepared = prepare(catalog.slice(lo, hi))
        rows = None if power is None else power[lo:hi]
        values, indices = _search_batch(get_queue(info), prepared, options, rows)
        return _Found(prepared.status, prepared.band_used, prepared.dof_residual, values, indices)

    parts = run_on_devices(devices, batches, work)
    n_obj, n_bands = catalog.n_objects, catalog.n_bands
    found = _Found(
        status=np.full(n_obj, Status.OK, np.int8),
        band_used=np.zeros((n_obj, n_bands), bool),
        dof_residual=np.zeros(n_obj),
        values=np.full((n_obj, options.top_k), -np.inf),
        indices=np.full((n_obj, options.top_k), np.iinfo(np.int32).max, dtype=np.int32),
    )
    for (lo, hi), part in zip(batches, parts, strict=True):
        for name in ("status", "band_used", "dof_residual", "values", "indices"):
            getattr(found, name)[lo:hi] = getattr(part, name)
    return found


def _object_batches(offsets: np.ndarray, n_devices: int) -> list[tuple[int, int]]:
    """Consecutive object ranges: :func:`split_range`'s share of the devices,
    each cut further to at most :data:`_BATCH_POINTS` rows (objects whole)."""
    batches = []
    for lo, hi in split_range(0, offsets.size - 1, n_devices):
        while lo < hi:
            end = int(np.searchsorted(offsets, offsets[lo] + _BATCH_POINTS, side="right")) - 1
            end = min(hi, max(end, lo + 1))
            batches.append((lo, end))
            lo = end
    return batches


def _search_batch(
    queue: cl.CommandQueue,
    prepared: _Prepared,
    options: _Search,
    power: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The top-k statistics and grid indices of the objects of ``prepared``
    (and their periodograms into the rows ``power``), on ``queue``'s device."""
    real = np.float64 if options.fp64 else np.float32
    pending: list[cl.Event] = []
    inputs = [
        upload(queue, a, pending)
        for a in (
            *_phase_inputs(prepared.tau, options),
            prepared.w.astype(real),
            prepared.wu.astype(real),
            prepared.band,
            prepared.offsets.astype(np.int32),
            prepared.band_scale.astype(real),
        )
    ]
    n_phase = 1 if options.fp64 else (2 if options.arbitrary else 3)
    grid_arguments = _grid_arguments(queue, options, pending)
    (kernel,) = kernels.get_kernels(
        queue.context,
        "mhaov",
        ("mhaov_catalog",),
        real=options.real,
        harmonics=options.harmonics,
        wg=_WG,
        arbitrary=options.arbitrary,
        pivot_tol=_PIVOT_TOL[options.precision],
    )
    n_bands = np.int32(prepared.band_scale.shape[1])
    scale = prepared.f_scale

    def launch(first: int, rows: int, bin_lo: int, bin_hi: int, out: cl.Buffer) -> None:
        kernel(
            queue,
            (-(-(bin_hi - bin_lo) // _WG) * _WG, rows),
            (_WG, 1),
            *inputs[:n_phase],
            *grid_arguments,
            *inputs[n_phase:],
            n_bands,
            np.int32(first),
            np.int32(bin_lo),
            np.int32(bin_hi - bin_lo),
            out,
        )

    def store(first: int, rows: int, own_lo: int, own_hi: int, block: np.ndarray) -> None:
        assert power is not None
        objects = slice(first, first + rows)
        power[objects, own_lo:own_hi] = _f_statistic(block, scale[first : first + rows, None])

    values, indices = blocked_peaks(
        queue,
        launch,
        prepared.status.size,
        options.grid.nf,
        options.top_k,
        store if power is not None else None,
        np.float64 if options.real == "double" else np.float32,
    )
    pending.clear()
    return _f_statistic(values, scale[:, None]), indices


def _phase_inputs(tau: np.ndarray, options: _Search) -> tuple[np.ndarray, ...]:
    """The per-point phase inputs of the kernel (its module notes): fp64 the
    times; fp32 ``frac(fmin tau)`` and ``frac(df tau)`` as a float32 pair, or
    for a frequency array the times as a float32 pair."""
    if options.fp64:
        return (tau,)
    if isinstance(options.grid, FrequencyGrid):
        return options.grid.phase_inputs(tau)
    return split_float32(tau)


def _grid_arguments(
    queue: cl.CommandQueue, options: _Search, pending: list[cl.Event]
) -> list[Any]:
    """The grid's kernel arguments: ``fmin, df`` (fp64 uniform grid), none
    (fp32 uniform grid: in the phase inputs), the frequencies (fp64 array) or
    their float32 pairs (fp32 array)."""
    grid = options.grid
    if isinstance(grid, FrequencyGrid):
        return [np.float64(grid.fmin), np.float64(grid.df)] if options.fp64 else []
    if options.fp64:
        return [upload(queue, grid.frequencies(), pending)]
    return [upload(queue, part, pending) for part in split_float32(grid.frequencies())]


def _f_statistic(explained: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """``scale * Z / max(1 - Z, floor)`` of explained shares ``Z``."""
    explained = np.asarray(explained, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return scale * explained / np.maximum(1.0 - explained, UNEXPLAINED_FLOOR)


# }}}
