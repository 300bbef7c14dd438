"""Lomb-Scargle periodograms of one light curve or a ragged catalog on OpenCL.

Call path: :func:`lombscargle` validates the input,
:func:`clperiod.engine.planner.plan_batches` cuts the catalog into batches that fit
the device, :func:`clperiod.engine.scheduler.run_on_devices` runs the batches, and
each batch uploads its raw ``t, y, dy``, prepares the per-point and per-object
kernel inputs on the device (``ls_prepare`` of ``cl_kernels/lsprepare.mako``,
fp64; devices without fp64 get them from :func:`_prepare` on the host), then
launches ``ls_tiles`` and ``ls_merge_topk`` of ``cl_kernels/lombscargle.mako``.
The preparation expresses each object's values in its own units
(:mod:`clperiod.periodograms.standardize`: centred without losing digits to an offset,
scaled by powers of two), so the powers do not depend on the units or the
offset of ``y`` in either precision.
The host thread of a batch mostly waits for its device (without the GIL), so
several devices, and reading or writing files, run alongside.

The periodogram is the least-squares power of a sinusoid (plus a floating
mean for the generalized method) evaluated through its 2x2 normal equations,
which equals the time-shift (tau) form of Scargle (1982) and Zechmeister &
Kuerster (2009) used by SciPy and astropy.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pyopencl as cl

from clperiod import checks
from clperiod.catalog import Catalog, Status, relocated, single_catalog
from clperiod.engine import kernels, workers
from clperiod.engine.devices import (
    DeviceInfo,
    get_context,
    get_queue,
    require_fp64,
    select_devices,
)
from clperiod.engine.planner import (
    Batch,
    KernelShape,
    MemoryBudget,
    batch_bounds,
    held_bytes,
    plan_batches,
)
from clperiod.engine.scheduler import BATCHES_PER_DEVICE, run_on_devices
from clperiod.engine.staging import (
    PINNED_POOL,
    Staging,
    check_periodogram_memory,
    copies_in_place,
    result_array,
)
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid, split_float32
from clperiod.periodograms import lowfreq, multiterm, nufft, nufft_terms, nufft_type3, stats
from clperiod.periodograms.algorithm import prefers_nufft, prefers_type3
from clperiod.periodograms.inputs import (
    NO_PEAK,
    Deferred,
    PeakResults,
    as_catalog,
    blank_failed,
    check_choice,
    check_top_k,
    degenerate_status,
    progress_bar,
    reference_times,
    summed_seconds,
    top_k_arrays,
)
from clperiod.periodograms.standardize import standardize

__all__ = ["lombscargle", "lombscargle_async", "LombScargleResult"]

Method = Literal["generalized", "standard"]
Algorithm = Literal["auto", "direct", "nufft"]
Normalization = Literal["standard", "model", "log", "psd"]
Precision = Literal["fp64", "fp32"]
Memory = Literal["auto", "local", "global"]

#: Largest ``top_k`` (peaks are kept in private arrays of this length).
MAX_TOP_K = 64
#: Largest grid: frequency indices (plus a tile of halo) must fit an int32.
MAX_NF = 2**31 - 2**16


@dataclass(frozen=True)
class LombScargleResult(PeakResults):
    """Periodogram search results, one entry per catalog object.

    Attributes
    ----------
    ids : ndarray
        Object ids, catalog order.
    frequency_best, period, power_best : ndarray
        Highest peak of each object (NaN when ``status`` is not OK).
    top_k_frequency, top_k_period, top_k_power : ndarray, shape (n_objects, top_k)
        The ``top_k`` highest distinct peaks (local maxima), best first; NaN
        where an object has fewer peaks.
    status : ndarray of Status
        Per-object status (OK, TOO_FEW_POINTS, ZERO_VARIANCE, ...).
    power : ndarray, shape (n_objects, nf), or None
        Full periodograms (kernel precision) when requested; columns in the
        order of ``grid.frequencies()``.
    grid : FrequencyGrid or FrequencyArray
        The frequency grid evaluated.
    nterms : int
        Harmonics of the model.
    """

    ids: np.ndarray
    frequency_best: np.ndarray
    power_best: np.ndarray
    top_k_frequency: np.ndarray
    top_k_power: np.ndarray
    status: np.ndarray
    power: np.ndarray | None
    grid: FrequencyGrid | FrequencyArray
    method: str
    normalization: str
    precision: str
    fit_mean: bool
    center_data: bool
    devices: list[str]
    catalog: Catalog = field(repr=False)
    timings: dict[str, float] = field(default_factory=dict, repr=False)
    nterms: int = 1

    def false_alarm_probability(
        self, method: str = "baluev", power: np.ndarray | None = None
    ) -> np.ndarray:
        """False-alarm probability of each object's peak(s).

        Parameters
        ----------
        method
            ``"baluev"`` (default, astropy's), ``"davies"``, ``"naive"`` or
            ``"townsend"`` (Townsend 2010, eq. 3, with the number of distinct
            grid frequencies as the number of independent frequencies).
        power
            Powers to evaluate, shape ``(n_objects,)`` or ``(n_objects, k)``,
            in this result's normalization; default ``power_best``.

        Returns
        -------
        ndarray
            Same shape as ``power``; NaN for objects whose status is not OK.
            All objects are evaluated at once
            (:func:`clperiod.periodograms.stats.catalog_false_alarm_probability`);
            ``nterms > 1`` uses its null distribution of ``2 nterms`` harmonic
            components (astropy refuses those).
        """
        z = self.power_best if power is None else np.asarray(power, dtype=np.float64)
        fap = stats.catalog_false_alarm_probability(
            z,
            self.catalog,
            fmax=self.grid.fmax,
            weighted=self.method == "generalized",
            normalization=self.normalization,
            method=method,
            fit_mean=self.fit_mean,
            center_data=self.center_data,
            nf=search_grid(self.grid)[0].nf,
            nterms=self.nterms,
        )
        ok = (self.status == Status.OK).reshape((-1,) + (1,) * (fap.ndim - 1))
        return np.where(ok, fap, np.nan)


def remember_fap_inputs(catalog: Catalog, fap_method: str | None, **options: Any) -> None:
    """Compute what :meth:`LombScargleResult.false_alarm_probability` with
    ``fap_method`` needs of ``catalog`` for a :func:`lombscargle` search with
    ``options`` (remembered for as long as the catalog lives), e.g. while the
    device searches."""
    if fap_method not in (None, "townsend"):
        method = options.get("method", "generalized")
        stats.catalog_time_spread(catalog, weighted=method == "generalized")


def lombscargle(
    cat_or_t: Catalog | np.ndarray,
    grid: FrequencyGrid | FrequencyArray,
    y: np.ndarray | None = None,
    dy: np.ndarray | None = None,
    *,
    method: Method = "generalized",
    normalization: Normalization | None = "standard",
    fit_mean: bool | None = None,
    center_data: bool | None = None,
    nterms: int = 1,
    precision: Precision = "fp64",
    algorithm: Algorithm = "direct",
    eps: float | None = None,
    memory: Memory = "auto",
    periodogram: bool = False,
    top_k: int = 1,
    device=None,
    nan_policy: Literal["raise", "omit"] = "raise",
    profile: bool = False,
    progress: bool = False,
) -> LombScargleResult:
    """Lomb-Scargle periodogram search of a light curve or a catalog.

    Parameters
    ----------
    cat_or_t
        A :class:`Catalog`, or the times of one light curve (then give ``y``
        and optionally ``dy``).
    grid
        Ordinary frequencies (cycles per time unit): a uniform
        :class:`FrequencyGrid`, or any frequencies
        (:meth:`FrequencyGrid.from_frequencies`: uniform in period,
        log-spaced, unsorted, repeated). Each frequency of a
        :class:`~clperiod.grid.FrequencyArray` is evaluated as it would be
        alone (directly: one exact phase per point and frequency, about
        ``m`` times the cost of a uniform grid's strip recurrence; or through
        type-3 NUFFTs, see ``algorithm``); periodogram columns follow its
        order and peaks are local maxima along frequency. The
        power at a frequency of 0 is NaN, as astropy's: the sine term
        vanishes there, so no sinusoid fits; peaks are found among the
        other frequencies.
    y, dy
        Values and uncertainties when ``cat_or_t`` is a time array.
    method
        ``"generalized"``: floating mean and ``dy^-2`` weights (astropy's
        default model, Zechmeister & Kuerster 2009). ``"standard"``: the
        classic unweighted Scargle periodogram of SciPy and Townsend (2010);
        uncertainties are not used (passing ``dy`` with it is an error).
    normalization
        astropy's ``"standard"``, ``"model"``, ``"log"`` or ``"psd"``; ``None``
        gives the unnormalized power 1/2 (chi2_ref - chi2), which is SciPy's
        ``lombscargle`` output and equals astropy's ``"psd"``.
    fit_mean, center_data
        As in astropy; defaults follow the method (generalized: both True,
        standard: both False, i.e. SciPy's raw form).
    nterms
        Harmonics of the periodic model, 1 (default: a sinusoid) to
        :data:`clperiod.periodograms.multiterm.MAX_NTERMS`. ``nterms > 1``
        fits ``nterms`` harmonics of each frequency (plus the mean with
        ``fit_mean``) by least squares, astropy's
        ``LombScargle(..., nterms=K).power(method="chi2")``, in every
        normalization; objects need ``2 nterms + 2`` points with ``fit_mean``
        (``2 nterms + 1`` without). The direct path computes it in fp64 only
        (``precision="fp32"`` raises: use fp64, or ``algorithm="nufft"``,
        which takes both precisions) and on evenly spaced frequencies (a
        FrequencyArray raises: ``"nufft"`` and ``"auto"`` take it through
        type-3 NUFFTs); ``memory`` does not apply.
    precision
        ``"fp64"`` or ``"fp32"``. Times stay float64 on the host; the fp32
        kernel gets per-point phases in double-single form, so raw MJD/JD
        inputs keep their accuracy. Values are centred and scaled per
        object in float64 first, so both precisions take any finite ``y``
        and ``dy``; an object whose variation is below float64's resolution
        of its values is ZERO_VARIANCE. fp32 psd periodograms are float32 in
        the units of ``(y / dy)**2`` (``y**2`` without ``dy``): outside
        ``FLOAT32_PSD_RANGE`` they raise ValueError (the peaks, scaled in
        float64, have no such limit).
    algorithm
        ``"direct"`` (default): exact sums over the observations at every
        frequency, which cost ``N_points x nf``. ``"nufft"``: the sums of
        every frequency at once through type-1 non-uniform FFTs
        (``clperiod.periodograms.nufft``; FFT by
        ``clperiod.engine.fft.fft_inplace``), which cost about
        ``N_points w + nf log nf`` (``w``: kernel width, 13 at ``eps=1e-9``),
        for long light curves on large grids. Every method, normalization,
        ``fit_mean``/``center_data``, ``nterms`` and precision is supported.
        On every path, the bins below each object's low-frequency cutoff
        (where the normal equations are too ill conditioned for the bound;
        ``f T`` below about 0.05 to 0.5, rising with ``nterms``) take exact
        least-squares powers computed on the host
        (:mod:`clperiod.periodograms.lowfreq`), before the peaks are
        found. A FrequencyArray whose distinct frequencies are
        not evenly spaced runs through type-3 NUFFTs
        (``clperiod.periodograms.nufft_type3``: a type-1 transform on a
        lattice of step ``1 / (2 T)`` up to twice the highest frequency,
        interpolated at each frequency), which cost about ``N_points w +
        G log G + nf w`` (``G ~ 8 T fmax`` cells per transform, ``T`` the
        longest baseline; up to ``2 nterms fmax`` for several harmonics).
        ``"auto"``: each object by the path a cost model predicts faster
        (:mod:`clperiod.periodograms.algorithm`), on grids and arrays; a
        catalog of short and long light curves runs both. Searches the
        direct path does not run (``nterms > 1`` in fp32 or on a
        FrequencyArray) run through the NUFFT.
    eps
        Accuracy of the ``"nufft"`` powers relative to each object's peak
        power; default ``1e-9`` (fp64) or ``1e-5`` (fp32). Not with
        ``algorithm="direct"``.
    memory
        ``"local"`` stages observations through local memory in tiles,
        ``"global"`` reads them from global memory; ``"auto"`` picks by device.
        Only with ``algorithm="direct"`` (the ``"nufft"`` path ignores it).
    periodogram
        Also return the full periodograms (``n_objects x nf``).
    top_k
        Number of distinct peaks (local maxima) reported per object.
    device
        Device selection (see :func:`clperiod.select_devices`);
        default from ``CLPERIOD_DEVICE``.
    nan_policy
        ``"raise"`` (default) on non-finite input, or ``"omit"`` to drop those
        rows (only for array input; a Catalog is already validated).
    profile
        Time the kernels with OpenCL profiling events; the sums are reported
        in ``result.timings`` (seconds). With ``algorithm="nufft"``, the
        wall time of the device batches (``nufft_s``).
    progress
        Show a tqdm progress bar over the device batches (needs the
        ``progress`` extra, ``pip install clperiod[progress]``).

    Returns
    -------
    LombScargleResult

    Raises
    ------
    TypeError
        ``grid`` is not a FrequencyGrid or FrequencyArray.
    ValueError
        Bad options or data, fp64 requested on a device without fp64, or
        ``algorithm="nufft"`` on a FrequencyArray whose type-3 lattice would
        exceed ``clperiod.periodograms.nufft_type3.MAX_LATTICE`` samples.
    MemoryError
        ``periodogram=True`` asks for more host memory than is available
        (:func:`clperiod.engine.staging.available_host_memory`; the message names
        the size), or an object too large for the device.
    """
    return _start(
        cat_or_t,
        grid,
        y,
        dy,
        method=method,
        normalization=normalization,
        fit_mean=fit_mean,
        center_data=center_data,
        nterms=nterms,
        precision=precision,
        algorithm=algorithm,
        eps=eps,
        memory=memory,
        periodogram=periodogram,
        top_k=top_k,
        device=device,
        nan_policy=nan_policy,
        profile=profile,
        progress=progress,
        defer=False,
    ).result()


def lombscargle_async(
    cat_or_t: Catalog | np.ndarray,
    grid: FrequencyGrid | FrequencyArray,
    y: np.ndarray | None = None,
    dy: np.ndarray | None = None,
    **options: Any,
) -> Deferred[LombScargleResult]:
    """Start :func:`lombscargle` and return before the device has finished.

    Takes the same arguments. On the direct one-term path, with one device,
    no progress bar, and a catalog that fits one batch of a quarter of the
    device memory, the uploads (from page-locked memory) and the kernels are
    queued and the call returns at once; otherwise the search runs to the
    end first.
    Queuing the next catalog before waiting for this one keeps the device
    busy while the host reads and writes files
    (:func:`clperiod.pipeline.run_catalog` does this).

    Returns
    -------
    Deferred
        ``.result()`` waits and returns the :class:`LombScargleResult`.
    """
    bound = _SIGNATURE.bind(cat_or_t, grid, y, dy, **options)
    bound.apply_defaults()
    return _start(**bound.arguments, defer=True)


_SIGNATURE = inspect.signature(lombscargle)


def _start(
    cat_or_t,
    grid,
    y,
    dy,
    *,
    method,
    normalization,
    fit_mean,
    center_data,
    nterms,
    precision,
    algorithm,
    eps,
    memory,
    periodogram,
    top_k,
    device,
    nan_policy,
    profile,
    progress,
    defer: bool,
) -> Deferred[LombScargleResult]:
    """Check the input, plan the batches and queue (``defer``) or run them."""
    started = time.perf_counter()
    options = _Options.build(
        method, normalization, fit_mean, center_data, precision, memory, top_k, periodogram, nterms
    )
    eps = _check_algorithm(algorithm, eps)
    if options.nterms > 1 and algorithm == "direct" and not options.fp64:
        raise ValueError(
            f"multi-term periodograms (nterms={options.nterms}) of the direct path are "
            f"computed in fp64; pass precision='fp64', or algorithm='nufft' for fp32"
        )
    devices = select_devices(device)
    catalog, own_catalog = _catalog(cat_or_t, y, dy, method, nan_policy, algorithm, devices)
    searched, positions = _searched_grid(grid, algorithm)
    if options.fp64:
        for info in devices:
            require_fp64(info)
    lengths = np.where(catalog.lengths >= options.min_points, catalog.lengths, 0)
    if periodogram:  # before the plan, which counts on the rest of the host's memory
        columns = searched.nf + (grid.nf if positions is not None else 0)
        check_periodogram_memory(catalog.n_objects, columns, options.dtype)

    def assemble(results: list[_BatchResult]) -> LombScargleResult:
        return _assemble(
            results,
            catalog if own_catalog is None else own_catalog.result(),
            _Frequencies(grid, searched, positions),
            options,
            power,
            devices,
            method,
            precision,
            started,
        )

    if options.nterms > 1 and algorithm == "direct" and not isinstance(searched, FrequencyGrid):
        raise ValueError(
            f"multi-term periodograms (nterms={options.nterms}) of the direct path need evenly "
            "spaced frequencies; use algorithm='nufft' (or 'auto'), or for one light curve "
            "clperiod.periodograms.multiterm.multiterm_power"
        )
    plan, by_nufft = _nufft_choice(
        searched, catalog, lengths, options, precision, algorithm, eps, devices
    )
    if by_nufft.any() or options.nterms > 1:
        power = (
            result_array(devices, (catalog.n_objects, searched.nf), options.dtype)
            if periodogram
            else None
        )

        def by_transforms(part, part_lengths, part_power, bar):
            assert plan is not None
            return _run_nufft(devices, plan, part, part_lengths, options, part_power, bar, profile)

        def by_sums(part, part_lengths, part_power, bar):
            if options.nterms > 1:
                assert isinstance(searched, FrequencyGrid)
                return _run_multiterm(
                    devices, searched, part, part_lengths, options, part_power, bar, profile
                )
            return _run_direct(devices, part, searched, part_lengths, options, part_power, profile)

        if by_nufft.all():
            results = by_transforms(catalog, lengths, power, progress)
        elif not by_nufft.any():
            results = by_sums(catalog, lengths, power, progress)
        else:
            results = _run_mixed(
                catalog, searched, by_nufft, options, power, lengths, by_transforms, by_sums
            )
        return Deferred.ready(assemble(results))
    _check_fp32_bins(options, searched)
    exact = _direct_exact_bins(devices, catalog, searched, options)
    if exact.any():
        power = (
            result_array(devices, (catalog.n_objects, searched.nf), options.dtype)
            if periodogram
            else None
        )
        return Deferred.ready(
            assemble(
                _run_direct_exact(
                    devices, catalog, searched, lengths, options, power, profile, exact
                )
            )
        )
    compensated = not options.fp64 and int(lengths.max(initial=0)) > COMPENSATE_ABOVE
    shape = _kernel_shape(devices, options, compensated)
    # a queued batch shares the device with the next call's: half the budget each
    defer = defer and len(devices) == 1 and not progress
    batches = _plan(devices, shape, lengths, searched, options, 0.5 if defer else 1.0)
    power = (
        result_array(devices, (catalog.n_objects, searched.nf), options.dtype)
        if periodogram
        else None
    )

    def batch_work(info: DeviceInfo, batch: Batch) -> _QueuedBatch:
        return _enqueue_batch(
            info, batch, shape, compensated, catalog, searched, options, power, profile
        )

    if defer and len(batches) == 1:
        queued = batch_work(devices[0], batches[0])
        return Deferred(lambda: assemble([queued.result()]))
    with progress_bar(progress, len(batches), "lombscargle") as bar:
        results = run_on_devices(
            devices,
            batches,
            lambda info, batch: batch_work(info, batch).result(),
            progress=bar.update if bar is not None else None,
        )
    return Deferred.ready(assemble(results))


@dataclass(frozen=True)
class _Frequencies:
    """A search's grid, the frequencies its kernels evaluate and where the
    grid's lie among them (:func:`clperiod.grid.search_grid`)."""

    grid: FrequencyGrid | FrequencyArray
    searched: FrequencyGrid | FrequencyArray
    positions: np.ndarray | None

    def columns(self, power: np.ndarray | None) -> np.ndarray | None:
        """Periodograms over the searched frequencies as periodograms over the grid's."""
        if power is None or self.positions is None:
            return power
        return power[:, self.positions]


def _searched_grid(
    grid: Any, algorithm: str
) -> tuple[FrequencyGrid | FrequencyArray, np.ndarray | None]:
    """:func:`clperiod.grid.search_grid` of ``grid``, checked for ``algorithm``."""
    searched, positions = search_grid(grid)
    if searched.fmax == 0:
        raise ValueError(f"grid has no frequency above 0 (the power at f = 0 is NaN); got {grid}")
    if searched.nf > MAX_NF:
        raise ValueError(
            f"grids of more than {MAX_NF} frequencies are not supported "
            f"(int32 frequency indices); split the range, got nf={searched.nf}"
        )
    return searched, positions


def _nufft_choice(
    searched: FrequencyGrid | FrequencyArray,
    catalog: Catalog,
    lengths: np.ndarray,
    options: _Options,
    precision: Precision,
    algorithm: str,
    eps: float | None,
    devices: list[DeviceInfo],
) -> tuple[NufftPlans | None, np.ndarray]:
    """The NUFFT plan of ``searched`` (type 1 for a grid, type 3 for an
    array) and, per object, whether the NUFFT evaluates it: none for
    ``"direct"``, all for ``"nufft"`` (and multi-term searches the direct
    path does not run: fp32, arrays), those the cost model prefers for
    ``"auto"`` (:mod:`clperiod.periodograms.algorithm`; none when a one-term
    type-3 lattice would exceed its largest size)."""
    nobody = np.zeros(catalog.n_objects, dtype=bool)
    if algorithm == "direct":
        return None, nobody
    array = not isinstance(searched, FrequencyGrid)
    everybody = algorithm == "nufft" or (options.nterms > 1 and (array or not options.fp64))
    if isinstance(searched, FrequencyGrid):
        plan = nufft.NufftPlan.build(searched, precision, eps)
        if everybody:
            return plan, ~nobody
        return plan, prefers_nufft(lengths, searched.nf, plan.n_grid, plan.width, devices)
    frequencies = searched.frequencies()
    baseline = float(np.max(catalog.baselines()[lengths > 0], initial=0.0))
    if not everybody:
        width, _ = nufft_type3.kernel_params(eps, options.fp64)
        _, size = nufft_type3.lattice_size(frequencies[0], frequencies[-1], baseline, width)
        if size > nufft_type3.MAX_LATTICE:
            return None, nobody
    array_plan = nufft_type3.Type3Plan.build(frequencies, baseline, precision, eps, options.nterms)
    if everybody:
        return array_plan, ~nobody
    return array_plan, prefers_type3(
        lengths, array_plan.nf, array_plan.inner.n_grid, array_plan.width, devices
    )


def _assemble(
    results: list[_BatchResult],
    catalog: Catalog,
    frequencies: _Frequencies,
    options: _Options,
    power: np.ndarray | None,
    devices: list[DeviceInfo],
    method: str,
    precision: str,
    started: float,
) -> LombScargleResult:
    """The result of a search from its batches' results (in catalog order)."""
    top_val = np.concatenate([r.val for r in results])
    top_idx = np.concatenate([r.idx for r in results])
    top_val, top_freq = top_k_arrays(top_val, top_idx, frequencies.searched)
    status = _search_status(
        catalog, np.concatenate([r.status for r in results]), top_val[:, 0], options
    )
    if power is not None and options.normalization == "psd" and not options.fp64:
        _check_float32_psd(np.concatenate([r.psd_scale for r in results]), status, catalog)
    power = frequencies.columns(power)
    blank_failed(status, top_val, top_freq, power)
    timings = summed_seconds(results)
    return LombScargleResult(
        ids=catalog.ids,
        frequency_best=top_freq[:, 0].copy(),
        power_best=top_val[:, 0].copy(),
        top_k_frequency=top_freq,
        top_k_power=top_val,
        status=status,
        power=power,
        grid=frequencies.grid,
        method=method,
        normalization=options.normalization,
        precision=precision,
        fit_mean=options.fit_mean,
        center_data=options.center_data,
        devices=[d.label for d in devices],
        catalog=catalog,
        timings={**timings, "total_s": time.perf_counter() - started},
        nterms=options.nterms,
    )


def _search_status(
    catalog: Catalog, prepared: np.ndarray, power_best: np.ndarray, options: _Options
) -> np.ndarray:
    """Per-object status: the preparation's (TOO_FEW_POINTS, ZERO_VARIANCE)
    with the causes of degenerate results (:func:`clperiod.periodograms.inputs.degenerate_status`).

    The preparation's ZERO_VARIANCE is kept where the degenerate-status test
    would say OUT_OF_RANGE: the standardization decides it exactly and for any
    finite values (no value leaves the range there), whereas that test centres
    in one pass; the invalid-value statuses (NOT_FINITE, BAD_UNCERTAINTY)
    take precedence over both.
    """
    use_dy = options.method == "generalized" and catalog.dy is not None
    status = degenerate_status(catalog, prepared, power_best, use_dy)
    status[(prepared == Status.ZERO_VARIANCE) & (status == Status.OUT_OF_RANGE)] = (
        Status.ZERO_VARIANCE
    )
    return status


#: The psd factors whose fp32 periodograms keep float32's precision: powers
#: down to its epsilon (relative to the largest) stay normal numbers.
FLOAT32_PSD_RANGE = (
    float(np.finfo(np.float32).tiny / np.finfo(np.float32).eps),
    float(np.finfo(np.float32).max),
)


def _check_float32_psd(psd_scale: np.ndarray, status: np.ndarray, catalog: Catalog) -> None:
    """Raise ValueError if an object's fp32 psd periodogram leaves float32's range.

    psd powers carry the units of ``(y / dy)**2`` (of ``y**2`` without
    ``dy``); the peak values are scaled in float64, the periodogram is not.
    """
    low, high = FLOAT32_PSD_RANGE
    outside = (status == Status.OK) & ~((psd_scale >= low) & (psd_scale <= high))
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        raise ValueError(
            f"normalization='psd' periodograms of precision='fp32' are float32, but "
            f"{int(outside.sum())} object(s) have psd powers outside its range "
            f"(object {catalog.ids[first]!r}: 1/2 sum dy^-2 (y - ybar)^2 = "
            f"{psd_scale[first]:.3g}, outside [{low:.1g}, {high:.1g}]); use "
            f"precision='fp64', another normalization, or rescale y (and dy)"
        )


# {{{ the NUFFT path


def _check_algorithm(algorithm: str, eps: float | None) -> float | None:
    """Check ``algorithm`` and ``eps`` (a finite number in (0, 1), not with
    ``"direct"``); ``eps`` as a float, or None for the default."""
    check_choice("algorithm", algorithm, Algorithm)
    if eps is None:
        return None
    if algorithm == "direct":
        raise ValueError("eps applies only to algorithm='nufft' or 'auto', got 'direct'")
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"eps must be a number, got {type(eps).__name__}") from None
    if not (math.isfinite(value) and 0 < value < 1):
        raise ValueError(f"eps must be a finite number in (0, 1), got {eps!r}")
    return value


NufftPlans = nufft.NufftPlan | nufft_type3.Type3Plan


def _run_nufft(
    devices: list[DeviceInfo],
    plan: NufftPlans,
    catalog: Catalog,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    progress: bool,
    profile: bool,
) -> list[_BatchResult]:
    """The NUFFT search of ``catalog`` (one term, or ``options.nterms`` through
    :mod:`clperiod.periodograms.nufft_terms`; a type-3 plan: an array of
    frequencies, :mod:`clperiod.periodograms.nufft_type3`) in batches of
    objects that fit the smallest device (:func:`_nufft_buffers`);
    ``lengths`` are the points of each object that is searched (0 for too few
    points). On GPUs every batch transforms the rows of the largest batch, so
    that one FFT plan serves them all. A grid whose fine grids do not fit the
    device for one object runs in pieces of frequencies
    (:func:`_nufft_pieces`), whose peaks are merged; the lattice of a type-3
    piece still reaches twice its highest frequency."""
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    reserved = power.nbytes if power is not None else 0
    budget = MemoryBudget.of(smallest, host_reserved=reserved)
    pieces = _nufft_pieces(plan, lengths, options, budget)
    if len(pieces) == 1:  # each batch finds its objects' cutoffs on its device
        return _run_nufft_piece(
            devices, plan, None, catalog, lengths, options, power, budget, progress, profile, None
        )
    use_dy = options.method == "generalized" and catalog.dy is not None
    cutoff = lowfreq.nufft_cutoffs(  # once for all the pieces
        catalog,
        lowfreq.Model(options.nterms, options.fit_mean, options.center_data, use_dy),
        plan,
        plan.frequencies if isinstance(plan, nufft_type3.Type3Plan) else plan.grid,
        get_queue(devices[0]),
    )
    nf, k = _plan_nf(plan), options.top_k
    found: list[list[_BatchResult]] = []
    for start, stop in pieces:
        lo, hi = max(start - 1, 0), min(stop + 1, nf)  # with the neighbours of its bins
        piece_plan = _piece_plan(plan, lo, hi)
        piece_power = (
            None if power is None else np.empty((catalog.n_objects, hi - lo), power.dtype)
        )
        owned = (lo, start - lo, stop - start, nf)
        found.append(
            _run_nufft_piece(
                devices,
                piece_plan,
                owned,
                catalog,
                lengths,
                options,
                piece_power,
                budget,
                False,
                profile,
                cutoff,
            )
        )
        if power is not None and piece_power is not None:
            power[:, start:stop] = piece_power[:, start - lo : stop - lo]
    first = found[0]
    values = np.concatenate([np.concatenate([r.val for r in part]) for part in found], axis=1)
    indices = np.concatenate([np.concatenate([r.idx for r in part]) for part in found], axis=1)
    keys = np.where(np.isnan(values), np.inf, -values)
    order = np.lexsort((indices, keys), axis=-1)[:, :k]
    return [
        _BatchResult(
            np.concatenate([r.status for r in first]),
            np.take_along_axis(values, order, -1),
            np.take_along_axis(indices, order, -1),
            np.concatenate([r.psd_scale for r in first]),
            summed_seconds(r for part in found for r in part),
        )
    ]


#: Most frequencies of a uniform grid of the fp32 direct kernel: its bin
#: numbers are exact in float32 only up to 2**24.
FP32_MAX_BINS = 2**24
#: Pieces of a grid too large for the device are halved until they fit, at most
#: this many times.
MAX_PIECE_HALVINGS = 24
#: Bytes of a NUFFT batch of several objects on CPU devices: larger batches
#: only add memory traffic there (the fine grids outgrow the caches).
CPU_NUFFT_BATCH_BYTES = 128 << 20
#: Most frequencies of one NUFFT piece: FFT plans of larger fine grids take
#: minutes to build (VkFFT's kernels for grids beyond ~2**25 cells).
MAX_PIECE_FREQUENCIES = 2**24


def _plan_nf(plan: NufftPlans) -> int:
    """Frequencies of a plan (a grid's or an array's)."""
    return plan.nf if isinstance(plan, nufft_type3.Type3Plan) else plan.grid.nf


def _piece_plan(plan: NufftPlans, start: int, stop: int) -> NufftPlans:
    """The plan of ``plan``'s frequencies ``start .. stop - 1``."""
    precision: nufft.Precision = "fp64" if plan.fp64 else "fp32"
    if isinstance(plan, nufft_type3.Type3Plan):
        return nufft_type3.Type3Plan.build(
            plan.frequencies[start:stop], plan.baseline, precision, plan.eps, plan.nterms
        )
    piece = FrequencyGrid(plan.grid.fmin + start * plan.grid.df, plan.grid.df, stop - start)
    return nufft.NufftPlan.build(piece, precision, plan.eps, plan.upsampfac)


def _nufft_pieces(
    plan: NufftPlans, lengths: np.ndarray, options: _Options, budget: MemoryBudget
) -> list[tuple[int, int]]:
    """Frequency ranges ``[start, stop)`` of the grid small enough that the
    longest object's NUFFT buffers fit ``budget``, of at most
    ``MAX_PIECE_FREQUENCIES`` each (the whole grid if it fits; the highest
    piece, whose type-3 lattice is the longest, decides)."""
    longest = int(lengths.max(initial=0))
    nf = _plan_nf(plan)
    size = min(nf, MAX_PIECE_FREQUENCIES)
    for _ in range(MAX_PIECE_HALVINGS):
        piece = _piece_plan(plan, max(0, nf - size - 2), nf)
        buffers = _nufft_buffers(piece, options)
        largest = max(b.nbytes(1, longest) for b in buffers)
        if held_bytes(buffers, 1, longest) <= budget.total and largest <= budget.max_alloc:
            break
        size = -(-size // 2)
    return [(start, min(start + size, nf)) for start in range(0, nf, size)]


def _nufft_buffers(plan: NufftPlans, options: _Options) -> list:
    """The device buffers of a NUFFT batch (one term or ``options.nterms``;
    type 3)."""
    if isinstance(plan, nufft_type3.Type3Plan):
        return nufft_type3.batch_buffers(plan, options.top_k)
    if options.nterms > 1:
        return nufft_terms.batch_buffers(plan, options.nterms, options.top_k)
    return nufft.batch_buffers(plan, options.fit_mean, options.top_k)


def _run_nufft_piece(
    devices: list[DeviceInfo],
    plan: NufftPlans,
    owned: tuple[int, int, int, int] | None,
    catalog: Catalog,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    budget: MemoryBudget,
    progress: bool,
    profile: bool,
    cutoff: np.ndarray | None,
) -> list[_BatchResult]:
    """:func:`_run_nufft` on one grid (``owned``: the piece's bins, see
    :func:`clperiod.periodograms.nufft.search`; ``cutoff``: per object, the
    frequency below which bins take exact powers, by default found by each
    batch)."""
    on_cpus = all(info.kind == "cpu" for info in devices)
    target = CPU_NUFFT_BATCH_BYTES if on_cpus else None
    buffers = _nufft_buffers(plan, options)
    threads = _nufft_threads(devices, buffers, lengths, budget, _staged(devices, catalog))
    # at least one batch per device thread, so that every thread has work
    batches = len(devices) * threads
    per_batch = -(-lengths.size // batches) if batches > 1 else None
    bounds = batch_bounds(
        lengths,
        buffers,
        dataclasses.replace(budget, total=budget.total // threads),
        target=target,
        max_items=per_batch,
        workers=batches,
    )
    use_dy = options.method == "generalized" and catalog.dy is not None
    search: functools.partial[nufft.BatchPeaks]
    if isinstance(plan, nufft_type3.Type3Plan):
        n_trans, search = 2, functools.partial(nufft_type3.search, plan=plan)
    elif options.nterms > 1:
        n_trans = 3 * options.nterms
        search = functools.partial(nufft_terms.search, plan=plan, nterms=options.nterms)
    else:
        n_trans, search = (
            (3 if options.fit_mean else 2),
            functools.partial(_one_term_search, plan=plan),
        )
    fft_rows = n_trans * max(stop - start for start, stop in bounds)

    def work(info: DeviceInfo, bound: tuple[int, int]) -> _BatchResult:
        started = time.perf_counter()
        start, stop = bound
        peaks = search(
            info,
            catalog.slice(start, stop),
            fit_mean=options.fit_mean,
            center_data=options.center_data,
            use_dy=use_dy,
            normalization=options.normalization,
            top_k=options.top_k,
            periodograms=None if power is None else power[start:stop],
            n_rows=fft_rows if info.kind != "cpu" else 0,
            owned=owned,
            cutoff=None if cutoff is None else cutoff[start:stop],
        )
        seconds = {"nufft_s": time.perf_counter() - started} if profile else {}
        return _BatchResult(peaks.status, peaks.values, peaks.indices, peaks.psd_scale, seconds)

    with progress_bar(progress, len(bounds), "lombscargle") as bar:
        return run_on_devices(
            list(devices) * threads, bounds, work, progress=bar.update if bar is not None else None
        )


def _staged(devices: list[DeviceInfo], catalog: Catalog) -> bool:
    """Whether some device copies the light curves into page-locked staging
    memory before uploading them: it prepares the points on the host (no
    fp64), or a column lies in ordinary memory (:meth:`Catalog.page_locked`)."""
    columns = [catalog.t, catalog.y] + ([] if catalog.dy is None else [catalog.dy])
    return not all(
        info.fp64 and all(copies_in_place(column, info) for column in columns) for info in devices
    )


#: Batches a GPU searches at once in a NUFFT search, each on its own device
#: thread and queue: one batch's host work and uploads overlap another's kernels.
NUFFT_GPU_THREADS = 2


def _nufft_threads(
    devices: list[DeviceInfo],
    buffers: list[Any],
    lengths: np.ndarray,
    budget: MemoryBudget,
    staged: bool,
) -> int:
    """Device threads per device of a NUFFT search of objects of ``lengths``
    points: :data:`NUFFT_GPU_THREADS` on GPUs where the longest object fits
    that share of ``budget``, else one.

    With several devices and ``staged`` light curves (:func:`_staged`), one
    thread per device where each device's share of the objects fits one
    batch: the threads would all copy into staging memory at the start, and
    those copies contend for the host's memory
    (``bench/results/2026-11-26_h100x2_nufft_threads.json``). Where a share
    takes several batches, a second thread copies the next batch while the
    device searches the last
    (``bench/results/2026-11-26_h100x2_nufft_batches_session30.json``).
    """
    if any(info.kind == "cpu" for info in devices) or lengths.size < 2:
        return 1
    if staged and len(devices) > 1:
        share = -(-lengths.size // len(devices))
        if len(batch_bounds(lengths, buffers, budget, max_items=share)) <= len(devices):
            return 1
    longest = int(lengths.max(initial=0))
    fits = held_bytes(buffers, 1, longest) <= budget.total // NUFFT_GPU_THREADS
    return NUFFT_GPU_THREADS if fits else 1


def _one_term_search(
    info: DeviceInfo,
    catalog: Catalog,
    *,
    plan: nufft.NufftPlan,
    fit_mean: bool,
    center_data: bool,
    use_dy: bool,
    normalization: nufft.Normalization,
    top_k: int,
    periodograms: np.ndarray | None = None,
    n_rows: int = 0,
    owned: tuple[int, int, int, int] | None = None,
    cutoff: np.ndarray | None = None,
) -> nufft.BatchPeaks:
    """:func:`clperiod.periodograms.nufft.search` (same arguments), with the
    exact powers of each object's bins below its ``cutoff`` (default:
    :func:`clperiod.periodograms.lowfreq.nufft_cutoffs` of the batch), whose
    normal equations amplify the transforms' errors beyond the bound
    (:class:`clperiod.periodograms.lowfreq.ExactPowers`)."""
    nufft._check_normalization(normalization)
    exact = lowfreq.ExactPowers(
        lambda queue, grid, points, out, norm: nufft.power(queue, grid, points, plan, out, norm),
        catalog,
        plan.grid,
        lowfreq.Model(1, fit_mean, center_data, use_dy),
        plan,
        cutoff,
    )
    return nufft.search_with(
        info,
        catalog,
        plan,
        nufft.one_term_transforms(plan, fit_mean, exact),
        model={"fit_mean": fit_mean, "center_data": center_data, "use_dy": use_dy},
        normalization=normalization,
        top_k=top_k,
        periodograms=periodograms,
        n_rows=n_rows,
        owned=owned,
    )


def _check_fp32_bins(options: _Options, grid: FrequencyGrid | FrequencyArray) -> None:
    """Refuse a uniform grid of more than :data:`FP32_MAX_BINS` frequencies for
    the fp32 direct kernel (its phases would be wrong beyond that bin)."""
    if not options.fp64 and isinstance(grid, FrequencyGrid) and grid.nf > FP32_MAX_BINS:
        raise ValueError(
            f"precision='fp32' direct sums take at most {FP32_MAX_BINS} frequencies of a "
            f"uniform grid (their bin numbers are float32), got {grid.nf}; use "
            f"precision='fp64', algorithm='nufft', or search the grid in parts"
        )


def _run_direct(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool,
) -> list[_BatchResult]:
    """The direct search of ``catalog`` (no deferral, no progress bar), with
    the exact powers of the low-frequency bins the kernel cannot evaluate
    (:func:`_direct_exact_bins`)."""
    exact = _direct_exact_bins(devices, catalog, grid, options)
    if exact.any():
        return _run_direct_exact(devices, catalog, grid, lengths, options, power, profile, exact)
    return _run_direct_sums(devices, catalog, grid, lengths, options, power, profile)


def _direct_exact_bins(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
) -> lowfreq.LowFrequencyFits:
    """The low-frequency bins whose one-term normal equations are too ill
    conditioned for the direct kernel to keep ``lowfreq.DIRECT_EPS`` of the
    peak, with their exact powers
    (:func:`clperiod.periodograms.lowfreq.low_frequency_fits`)."""
    use_dy = options.method == "generalized" and catalog.dy is not None
    return lowfreq.low_frequency_fits(
        catalog,
        grid if isinstance(grid, FrequencyGrid) else grid.frequencies(),
        lowfreq.Model(1, options.fit_mean, options.center_data, use_dy),
        fp64=options.fp64,
        tolerance=None,
        eps=lowfreq.DIRECT_EPS[options.fp64],
        queue=get_queue(devices[0]),
    )


def _run_direct_exact(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool,
    exact: lowfreq.LowFrequencyFits,
) -> list[_BatchResult]:
    """The direct search of ``catalog`` where ``exact`` replaces the powers of
    some objects' lowest bins (the kernel finds peaks as it computes, so
    these objects' peaks are merged on the host, :func:`_exact_peaks`); the
    other objects as usual. Both parts sum as the whole catalog would
    (compensated or not), so the bins not replaced keep their values."""
    compensated = not options.fp64 and int(lengths.max(initial=0)) > COMPENSATE_ABOVE
    chosen = exact.objects

    def run_with(search: Callable) -> Callable:
        return lambda part, part_lengths, part_power: search(
            devices,
            part,
            grid,
            part_lengths,
            options,
            part_power,
            profile,
            compensated=compensated,
        )

    return _run_parts(
        catalog,
        grid.nf,
        options,
        power,
        lengths,
        [
            (np.setdiff1d(np.arange(catalog.n_objects), chosen), run_with(_run_direct_sums)),
            (chosen, run_with(functools.partial(_exact_peaks, exact=exact.subset(chosen)))),
        ],
    )


def _exact_peaks(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool,
    *,
    compensated: bool,
    exact: lowfreq.LowFrequencyFits,
) -> list[_BatchResult]:
    """The direct search of objects whose bins ``exact.first .. exact.stop - 1``
    take exact powers.

    The kernel searches the whole grid for more peaks than asked, enough
    that the ``top_k`` highest above the replaced bins are among them, and
    writes the periodograms of the grid's first bins (the same values: a
    bin's power does not depend on the grid's length); the host replaces
    the bins, finds the peaks among them and their neighbours with the
    kernel's rule (:func:`clperiod.periodograms.lowfreq.top_k_peaks`) and
    merges the two lists. Where that would take more than :data:`MAX_TOP_K`
    peaks, the whole periodograms are evaluated instead
    (:func:`_exact_periodograms`). psd powers are computed as standard
    powers and scaled as the kernel scales them.
    """
    k = options.top_k
    reach = int(exact.stop.max()) + 2  # the replaced bins and two neighbours
    more = k + (reach + 1) // 2  # the kernel finds at most (reach + 1) // 2 peaks there
    if more > MAX_TOP_K or reach >= grid.nf:
        return _exact_periodograms(
            devices, catalog, grid, lengths, options, power, profile, compensated, exact
        )
    psd = options.normalization == "psd"
    standard = dataclasses.replace(
        options, normalization="standard" if psd else options.normalization
    )
    head: np.ndarray = np.empty((catalog.n_objects, reach), options.dtype)

    def run(on, top_k, periodograms):
        return _run_direct_sums(
            devices,
            catalog,
            on,
            lengths,
            dataclasses.replace(standard, top_k=top_k, periodogram=periodograms is not None),
            periodograms,
            profile,
            compensated=compensated,
        )

    found = run(grid, more, power)
    parts = found + run(_leading_grid(grid, reach), 1, head)
    _replace_bins(head, exact, standard.normalization)
    if power is not None:
        _replace_bins(power, exact, standard.normalization)
    values = np.concatenate([r.val for r in found])
    indices = np.concatenate([r.idx for r in found])
    psd_scale = np.concatenate([r.psd_scale for r in found])
    lowest = exact.stop[:, None] + 1  # the kernel's peaks from here on stand
    host_values, host_indices = lowfreq.peaks_below(head, exact.stop + 1)
    keys = np.concatenate([np.where(indices >= lowest, values, -np.inf), host_values], axis=1)
    bins = np.concatenate([np.where(indices >= lowest, indices, NO_PEAK), host_indices], axis=1)
    order = np.lexsort((bins, -keys), axis=-1)[:, :k]
    val, idx = np.take_along_axis(keys, order, -1), np.take_along_axis(bins, order, -1)
    if psd:
        _scale_psd(val, power, psd_scale, options.dtype)
    status = np.concatenate([r.status for r in found])
    return [_BatchResult(status, val, idx.astype(np.int32), psd_scale, summed_seconds(parts))]


def _leading_grid(
    grid: FrequencyGrid | FrequencyArray, count: int
) -> FrequencyGrid | FrequencyArray:
    """The first ``count`` frequencies of ``grid`` (a searched grid), of the
    same kind (an array stays an array, which the kernel evaluates per
    frequency)."""
    if isinstance(grid, FrequencyGrid):
        return FrequencyGrid(grid.fmin, grid.df, count)
    return FrequencyArray(grid.frequencies()[:count])


def _replace_bins(
    periodograms: np.ndarray, exact: lowfreq.LowFrequencyFits, normalization: str
) -> None:
    """Write the exact powers of ``exact`` (rows: its objects) into
    ``periodograms`` (standard, model or log powers)."""
    columns = slice(exact.first, exact.first + exact.power.shape[1])
    replaced = np.arange(exact.first, columns.stop)[None, :] < exact.stop[:, None]
    periodograms[:, columns] = np.where(
        replaced, lowfreq.standard_to(exact.power, normalization), periodograms[:, columns]
    )


def _scale_psd(
    values: np.ndarray, power: np.ndarray | None, psd_scale: np.ndarray, dtype: type
) -> None:
    """Standard peak powers and periodograms to psd ones, in place, as the
    kernel and :class:`_QueuedBatch` scale them."""
    with np.errstate(invalid="ignore"):  # no peak (-inf) of an object not OK (0)
        values *= psd_scale[:, None]
    if power is not None:
        with np.errstate(over="ignore"):
            power *= psd_scale.astype(dtype)[:, None]


#: Most bytes of the periodograms that :func:`_exact_periodograms` holds at once.
EXACT_ROWS_BYTES = 256 << 20


def _exact_periodograms(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool,
    compensated: bool,
    exact: lowfreq.LowFrequencyFits,
) -> list[_BatchResult]:
    """:func:`_exact_peaks` from whole periodograms, in groups of objects of
    at most :data:`EXACT_ROWS_BYTES`, whose peaks the host finds."""
    k = options.top_k
    psd = options.normalization == "psd"
    standard = dataclasses.replace(
        options, normalization="standard" if psd else options.normalization, periodogram=True
    )
    n_obj = catalog.n_objects
    status = np.empty(n_obj, dtype=np.int8)
    val, idx = np.empty((n_obj, k)), np.empty((n_obj, k), np.int32)
    psd_scale = np.empty(n_obj)
    parts: list[_BatchResult] = []
    per_group = max(1, EXACT_ROWS_BYTES // (grid.nf * np.dtype(options.dtype).itemsize))
    for start in range(0, n_obj, per_group):
        rows = np.arange(start, min(start + per_group, n_obj))
        periodograms: np.ndarray = np.empty((rows.size, grid.nf), options.dtype)
        result = _run_direct_sums(
            devices,
            catalog.subset(rows),
            grid,
            lengths[rows],
            standard,
            periodograms,
            profile,
            compensated=compensated,
        )
        _replace_bins(periodograms, exact.subset(rows), standard.normalization)
        status[rows] = np.concatenate([r.status for r in result])
        psd_scale[rows] = np.concatenate([r.psd_scale for r in result])
        val[rows], idx[rows] = lowfreq.top_k_peaks(periodograms, k)
        if psd:
            _scale_psd(val[rows], periodograms, psd_scale[rows], options.dtype)
        if power is not None:
            power[rows] = periodograms
        parts += result
    return [_BatchResult(status, val, idx, psd_scale, summed_seconds(parts))]


def _run_direct_sums(
    devices: list[DeviceInfo],
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool,
    compensated: bool | None = None,
) -> list[_BatchResult]:
    """The direct kernel's search of ``catalog`` (no deferral, no progress
    bar); ``compensated`` (fp32 Kahan sums) defaults to the rule of the
    catalog's longest object."""
    _check_fp32_bins(options, grid)
    if compensated is None:
        compensated = not options.fp64 and int(lengths.max(initial=0)) > COMPENSATE_ABOVE
    shape = _kernel_shape(devices, options, compensated)
    batches = _plan(devices, shape, lengths, grid, options, 1.0)
    return run_on_devices(
        devices,
        batches,
        lambda info, batch: _enqueue_batch(
            info, batch, shape, compensated, catalog, grid, options, power, profile
        ).result(),
    )


def _run_mixed(
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    by_nufft: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    lengths: np.ndarray,
    by_transforms: Callable,
    by_sums: Callable,
) -> list[_BatchResult]:
    """The objects of ``by_nufft`` through ``by_transforms``, the others through
    ``by_sums`` (each called as ``(catalog, lengths, power, progress)``): one
    result in catalog order (``power`` rows filled from both)."""
    return _run_parts(
        catalog,
        grid.nf,
        options,
        power,
        lengths,
        [
            (np.flatnonzero(by_nufft), lambda *part: by_transforms(*part, False)),
            (np.flatnonzero(~by_nufft), lambda *part: by_sums(*part, False)),
        ],
    )


def _run_parts(
    catalog: Catalog,
    nf: int,
    options: _Options,
    power: np.ndarray | None,
    lengths: np.ndarray,
    parts: list[tuple[np.ndarray, Callable]],
) -> list[_BatchResult]:
    """Each part's objects (``(rows, run)``; empty ones skipped) searched by
    ``run(catalog, lengths, power)`` of the rows: one result in catalog order
    (``power`` rows filled from every part's)."""
    k = options.top_k
    status = np.empty(catalog.n_objects, dtype=np.int8)
    val, idx = np.empty((catalog.n_objects, k)), np.empty((catalog.n_objects, k), np.int32)
    psd_scale = np.empty(catalog.n_objects)
    done: list[_BatchResult] = []
    for rows, run in parts:
        if not rows.size:
            continue
        part_power: np.ndarray | None = None
        if power is not None:
            part_power = np.empty((rows.size, nf), options.dtype)
        results = run(catalog.subset(rows), lengths[rows], part_power)
        status[rows] = np.concatenate([r.status for r in results])
        val[rows] = np.concatenate([r.val for r in results])
        idx[rows] = np.concatenate([r.idx for r in results])
        psd_scale[rows] = np.concatenate([r.psd_scale for r in results])
        if power is not None and part_power is not None:
            power[rows] = part_power
        done += results
    return [_BatchResult(status, val, idx, psd_scale, summed_seconds(done))]


def _run_multiterm(
    devices: list[DeviceInfo],
    grid: FrequencyGrid,
    catalog: Catalog,
    lengths: np.ndarray,
    options: _Options,
    power: np.ndarray | None,
    progress: bool,
    profile: bool,
) -> list[_BatchResult]:
    """The direct multi-term search (``nterms > 1``) of ``catalog``
    (:func:`clperiod.periodograms.multiterm.search`) in batches of objects that
    fit the smallest device, with several devices at least one per device
    (:func:`batch_points`); ``lengths`` are the points of each object that is
    searched (0 for too few points)."""
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    reserved = power.nbytes if power is not None else 0
    bounds = batch_bounds(
        lengths,
        multiterm.batch_buffers(options.top_k),
        MemoryBudget.of(smallest, host_reserved=reserved),
        max_units=batch_points(len(devices), int(lengths.sum()), grid.nf),
    )
    use_dy = options.method == "generalized" and catalog.dy is not None
    cutoff = lowfreq.low_frequency_cutoffs(
        catalog,
        lowfreq.Model(options.nterms, options.fit_mean, options.center_data, use_dy),
        lowfreq.lowest_positive(grid),
        fp64=True,
        tolerance=None,
        eps=lowfreq.DIRECT_EPS[True],
        queue=get_queue(devices[0]),
    )

    def work(info: DeviceInfo, bound: tuple[int, int]) -> _BatchResult:
        started = time.perf_counter()
        start, stop = bound
        peaks = multiterm.search(
            get_queue(info),
            catalog.slice(start, stop),
            grid,
            options.nterms,
            fit_mean=options.fit_mean,
            center_data=options.center_data,
            use_dy=use_dy,
            normalization=options.normalization,  # type: ignore[arg-type]
            top_k=options.top_k,
            periodograms=None if power is None else power[start:stop],
            cutoff=cutoff[start:stop],
        )
        seconds = {"multiterm_s": time.perf_counter() - started} if profile else {}
        return _BatchResult(peaks.status, peaks.values, peaks.indices, peaks.psd_scale, seconds)

    with progress_bar(progress, len(bounds), "lombscargle") as bar:
        return run_on_devices(
            devices, bounds, work, progress=bar.update if bar is not None else None
        )


# }}}

# {{{ options and host preparation


@dataclass(frozen=True)
class _Options:
    method: str
    normalization: str
    fit_mean: bool
    center_data: bool
    fp64: bool
    memory: str
    top_k: int
    periodogram: bool
    nterms: int = 1

    @property
    def dtype(self) -> type:
        return np.float64 if self.fp64 else np.float32

    @property
    def min_points(self) -> int:
        """Fewest observations with one degree of freedom left."""
        return multiterm.min_points(self.nterms, self.fit_mean)

    @classmethod
    def build(
        cls,
        method,
        normalization,
        fit_mean,
        center_data,
        precision,
        memory,
        top_k,
        periodogram,
        nterms=1,
    ) -> _Options:
        check_choice("method", method, Method)
        check_choice("precision", precision, Precision)
        check_choice("memory", memory, Memory)
        normalization = "psd" if normalization is None else normalization
        check_choice("normalization", normalization, Normalization)
        top_k = check_top_k(top_k, MAX_TOP_K)
        default = method == "generalized"
        fit_mean = default if fit_mean is None else checks.boolean("fit_mean", fit_mean)
        center_data = (
            default if center_data is None else checks.boolean("center_data", center_data)
        )
        return cls(
            method,
            normalization,
            fit_mean,
            center_data,
            precision == "fp64",
            memory,
            int(top_k),
            bool(periodogram),
            checks.integer("nterms", nterms, low=1, high=multiterm.MAX_NTERMS),
        )


def _catalog(
    cat_or_t, y, dy, method, nan_policy, algorithm: str, devices: list[DeviceInfo]
) -> tuple[Catalog, Future[Catalog] | None]:
    """The catalog of a search and, for a light curve given as arrays whose
    columns the catalog copied into page-locked memory (:func:`_uploads_in_place`),
    the job that copies them to memory of its own while the device works (the
    result holds that copy, and no page-locked memory)."""
    if method == "standard" and dy is not None and not isinstance(cat_or_t, Catalog):
        raise ValueError("method='standard' is unweighted; use method='generalized' with dy")
    if isinstance(cat_or_t, Catalog) or y is None or not _uploads_in_place(algorithm, devices):
        return as_catalog(cat_or_t, y, dy, nan_policy), None
    info = devices[0]
    catalog = single_catalog(
        cat_or_t, y, dy, nan_policy, functools.partial(PINNED_POOL.empty, info)
    )
    if not PINNED_POOL.owns(catalog.t, info):  # page-locking refused, or rows left out
        return catalog, None
    return catalog, workers.submit(relocated, catalog)


def _uploads_in_place(algorithm: str, devices: list[DeviceInfo]) -> bool:
    """Whether the device of a NUFFT search (``"nufft"`` or ``"auto"``) on one
    device uploads the raw columns (it prepares them; devices without fp64 get
    them prepared by the host), which :class:`~clperiod.engine.staging.Staging`
    then sends from the catalog's page-locked copies."""
    return algorithm != "direct" and len(devices) == 1 and _prepares_on_device(devices[0])


@dataclass(frozen=True)
class _Prepared:
    """Per-point and per-object device inputs of a run of objects.

    Every object is kept, so batches map to contiguous result rows; objects
    that are not OK get zero rows and ``yy = NaN``, which makes the kernel
    write NaN powers and report no peak for them.
    """

    status: np.ndarray  # per object
    offsets: np.ndarray  # (n_objects + 1,) rows of each object in the arrays below
    point_arrays: dict[str, np.ndarray]
    yy: np.ndarray  # sum wn*u^2 per object, u the standardized values (in [1/4, 1))
    psd_scale: np.ndarray  # 1/2 sum dy^-2 (y - ybar)^2 per object (0 if not OK)


#: The kernel's per-point phase-step input, by ``fp64``: the cosine of the
#: step for the fp64 Chebyshev recurrence, ``4 sin^2(step / 2)`` for the fp32
#: Reinsch recurrence (see ``cl_kernels/lombscargle.mako``).
_STEP_INPUT = {True: "cd", False: "vd"}


def _prepare(
    catalog: Catalog, grid: FrequencyGrid | FrequencyArray, options: _Options
) -> _Prepared:
    """The kernel inputs of ``catalog``, in NumPy (what ``ls_prepare`` computes on
    the device)."""
    status = np.full(catalog.n_objects, Status.OK, dtype=np.int8)
    status[catalog.lengths < options.min_points] = Status.TOO_FEW_POINTS
    offsets = catalog.offsets.astype(np.int64)
    lengths = catalog.lengths

    use_dy = options.method == "generalized" and catalog.dy is not None
    values = standardize(
        catalog.y,
        catalog.dy if use_dy else None,
        offsets,
        center=options.fit_mean or options.center_data,
    )
    status[(status == Status.OK) & values.flat] = Status.ZERO_VARIANCE
    ok = status == Status.OK
    yy = np.where(ok, values.yy, np.nan)
    psd_scale = np.where(ok, 0.5 * values.weighted_sum_of_squares(), 0.0)
    t, u, wn = catalog.t, values.u, values.wn
    if not ok.all():  # drop their rows
        keep = np.repeat(ok, lengths)
        lengths = np.where(ok, lengths, 0)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        t, u, wn = t[keep], u[keep], wn[keep]

    tr = t - np.repeat(reference_times(catalog), lengths)
    dtype = options.dtype
    arrays = {"w": wn.astype(dtype, copy=False), "wy": (wn * u).astype(dtype, copy=False)}
    if options.fp64:
        arrays["t"] = tr
    elif isinstance(grid, FrequencyGrid):
        arrays["a"], arrays["bh"], arrays["bl"] = grid.phase_inputs(tr)
    else:
        arrays["th"], arrays["tl"] = split_float32(tr)
    if isinstance(grid, FrequencyGrid):
        step = 2 * np.pi * grid.df * tr
        arrays[_STEP_INPUT[options.fp64]] = (
            np.cos(step) if options.fp64 else 4 * np.sin(0.5 * step) ** 2
        ).astype(dtype, copy=False)
        arrays["sd"] = np.sin(step).astype(dtype, copy=False)
    return _Prepared(status, offsets, arrays, yy, psd_scale)


# }}}

# {{{ device work


#: fp32 runs with an object longer than this sum in Kahan-compensated blocks
#: (uncompensated fp32 sums lose ~N*eps; below this the error stays < 1e-6).
COMPENSATE_ABOVE = 16384


def _kernel_shape(devices: list[DeviceInfo], options: _Options, compensated: bool) -> KernelShape:
    """One launch shape for all devices of a run (batches may go to any of them)."""
    # 16 frequencies per work-item amortise the exact seed sincos best on both
    # the H100 and PoCL (bench/results/2026-11-21_h100-sxm_ls_kernel_sweep.json);
    # GPUs want 128-wide groups, PoCL small ones (it vectorises across work-items).
    gpu = all(info.kind == "gpu" for info in devices)
    if not gpu:
        return KernelShape(wg=16, m=16)
    if compensated:  # three accumulator sets: halve the strip to stay in registers
        return KernelShape(wg=256, m=8)
    return KernelShape(wg=128 if options.fp64 else 256, m=16)


def _kernel_params(
    info: DeviceInfo, shape: KernelShape, options: _Options, compensated: bool, arbitrary: bool
) -> dict:
    """Template parameters of the tile kernel on ``info`` (``arbitrary``: the
    frequencies come from an array; its local variant stages a point per
    work-item)."""
    use_local = info.kind == "gpu" if options.memory == "auto" else options.memory == "local"
    return dict(
        real="double" if options.fp64 else "float",
        wg=shape.wg,
        m=shape.m,
        use_local=use_local,
        fit_mean=options.fit_mean,
        normalization=options.normalization,
        top_k=options.top_k,
        write_power=options.periodogram,
        compensated=compensated,
        points_per_tile=shape.wg if arbitrary else 32,
        arbitrary=arbitrary,
    )


def _plan(devices, shape, lengths, grid, options, share: float) -> list[Batch]:
    """Batches that fit ``share`` of the smallest device's budget
    (:class:`~clperiod.engine.planner.MemoryBudget`; any device may run any batch);
    with several devices up to :data:`BATCHES_PER_DEVICE` per device, so that
    the dynamic scheduling balances devices of different speed, but none of
    fewer than :data:`MIN_BATCH_PAIRS` point-frequency pairs (each batch costs
    about a millisecond of uploads and launches, and two equal devices finish
    together with one batch each). ``lengths`` are the points of each object
    that is searched (0 for too few points)."""
    smallest = min(devices, key=lambda d: (d.global_mem, d.max_alloc))
    real_bytes = np.dtype(options.dtype).itemsize
    # the raw t, y, dy that the device preparation reads, then t (fp64) or
    # its phase inputs (fp32: a, b_hi, b_lo; t_hi, t_lo for an array of
    # frequencies), w, wy, and a uniform grid's step and sd
    point_bytes = 3 * 8 + 8 + 2 * real_bytes
    if isinstance(grid, FrequencyGrid):
        point_bytes += (0 if options.fp64 else 4) + 2 * real_bytes
    frequency_bytes = 0 if isinstance(grid, FrequencyGrid) else 8 * grid.nf
    result_bytes = len(lengths) * grid.nf * real_bytes if options.periodogram else 0
    return plan_batches(
        lengths,
        grid.nf,
        shape,
        MemoryBudget.of(smallest, held=frequency_bytes, host_reserved=result_bytes, share=share),
        point_bytes=point_bytes,
        real_bytes=real_bytes,
        top_k=options.top_k,
        periodogram=options.periodogram,
        min_batches=_min_batches(len(devices), int(lengths.sum()) * grid.nf),
    )


#: Fewest point-frequency pairs of a batch split off for another device
#: (about 0.1 s of H100 fp64 work).
MIN_BATCH_PAIRS = 10**11


def _min_batches(n_devices: int, pairs: int) -> int:
    """Batches a run is cut into at least (see :func:`_plan`)."""
    if n_devices == 1:
        return 1
    per_device = -(-pairs // (n_devices * MIN_BATCH_PAIRS))
    return n_devices * max(1, min(BATCHES_PER_DEVICE, per_device))


def batch_points(n_devices: int, points: int, nf: int) -> int | None:
    """The most points of a batch of a run of ``points`` points searched on
    ``nf`` frequencies, so that ``n_devices`` devices share it: the run in at
    least one batch per device, up to :data:`BATCHES_PER_DEVICE` per device
    of at least :data:`MIN_BATCH_PAIRS` point-frequency pairs each, as
    :func:`_plan` cuts it (None, no limit, for one device)."""
    if n_devices == 1:
        return None
    return max(1, -(-points // _min_batches(n_devices, points * nf)))


def _point_order(grid: FrequencyGrid | FrequencyArray, fp64: bool) -> tuple[list, list]:
    """Names of the tile kernel's per-point inputs in its argument order:
    the phase inputs (before the grid's arguments), then the others."""
    if not isinstance(grid, FrequencyGrid):
        return (["t"] if fp64 else ["th", "tl"]), ["w", "wy"]
    return (["t"] if fp64 else ["a", "bh", "bl"]), [_STEP_INPUT[fp64], "sd", "w", "wy"]


def _grid_arguments(
    grid: FrequencyGrid | FrequencyArray, options: _Options, staging: Staging
) -> list:
    """The tile kernel's grid arguments: a uniform grid's ``fmin`` and ``df``
    (fp64; fp32 has them in its phase inputs), or an array's frequencies
    (fp64) or their float32 pairs (fp32), to be uploaded by ``staging``."""
    if isinstance(grid, FrequencyGrid):
        return [np.float64(grid.fmin), np.float64(grid.df)] if options.fp64 else []
    values = grid.frequencies()
    if options.fp64:
        return [staging.upload(values)]
    return [staging.upload(part) for part in split_float32(values)]


@dataclass(frozen=True)
class _BatchResult:
    """Per-object results of one batch, and (profiling) summed stage times."""

    status: np.ndarray
    val: np.ndarray  # (objects, top_k) float64
    idx: np.ndarray  # (objects, top_k) grid indices
    psd_scale: np.ndarray  # (objects,) float64
    seconds: dict[str, float]


@dataclass
class _QueuedBatch:
    """A batch whose commands are queued: :meth:`result` waits for them."""

    staging: Staging  # page-locked inputs and small outputs, held until done
    inputs: _DeviceInputs
    val: np.ndarray
    idx: np.ndarray
    last: list[cl.Event]  # the final commands of both queues
    events: dict[str, list[cl.Event]]  # by stage, for profiling
    psd: bool  # the peak values are standard powers, to be scaled to psd
    profile: bool

    def result(self) -> _BatchResult:
        cl.wait_for_events(self.last)
        seconds = {}
        if self.profile:
            seconds = {
                name: sum(1e-9 * (e.profile.end - e.profile.start) for e in evs)
                for name, evs in self.events.items()
            }
        val = self.val.astype(np.float64)
        psd_scale = self.inputs.psd_scale.copy()
        if self.psd:
            with np.errstate(invalid="ignore"):  # no peak (-inf) of an object not OK (0)
                val *= psd_scale[:, None]
        done = _BatchResult(self.inputs.status.copy(), val, self.idx.copy(), psd_scale, seconds)
        self.staging.release()
        return done


def _enqueue_batch(
    info: DeviceInfo,
    batch: Batch,
    shape: KernelShape,
    compensated: bool,
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    power: np.ndarray | None,
    profile: bool = False,
) -> _QueuedBatch:
    """Queue the preparation and evaluation of one batch on ``info``.

    Periodogram chunks are copied into ``power`` (rows of the batch) on a second
    queue while the next chunk computes. The returned batch gives the status,
    top-k values and grid indices of the batch's objects and, when ``profile``
    is set, the summed kernel and copy times.
    """
    o0 = batch.obj_start
    context = get_context(info)
    queue = get_queue(info, profiling=profile)
    copy_queue = get_queue(info, profiling=profile, role="copy")
    tiles, merge = kernels.get_kernels(
        context,
        "lombscargle",
        ("ls_tiles", "ls_merge_topk"),
        **_kernel_params(info, shape, options, compensated, not isinstance(grid, FrequencyGrid)),
    )
    dtype = options.dtype
    itemsize = np.dtype(dtype).itemsize
    k = options.top_k
    n_obj = batch.n_objects
    n_tiles = shape.n_tiles(grid.nf)

    staging = Staging(info)
    with staging.guard(queue, copy_queue):
        out_val, out_idx = staging.result((n_obj, k), dtype), staging.result((n_obj, k), np.int32)
        prepare = _prepare_on_device if _prepares_on_device(info) else _prepare_on_host
        inputs = prepare(queue, catalog.slice(o0, batch.obj_stop), grid, options, staging)
        phases, points, objs = [*inputs.phases, *inputs.grid], inputs.points, inputs.objects
        zero_bin = 0 if grid.fmin == 0 else -1
        part_val = staging.buffer(n_obj * n_tiles * k * itemsize)
        part_idx = staging.buffer(n_obj * n_tiles * k * 4)
        events: dict[str, list[cl.Event]] = {"tiles_s": [], "merge_s": [], "copy_s": []}
        if power is None:
            outputs = [staging.buffer(itemsize)]
        else:
            largest = max((c.obj_hi - c.obj_lo) * c.tile_count for c in batch.chunks) * shape.owned
            outputs = [
                staging.buffer(largest * itemsize) for _ in range(min(2, len(batch.chunks)))
            ]
        pending: list[cl.Event | None] = [None] * len(outputs)
        for number, chunk in enumerate(batch.chunks):
            rows = chunk.obj_hi - chunk.obj_lo
            k0 = chunk.tile_first * shape.owned
            chunk_nf = min(chunk.tile_count * shape.owned, grid.nf - k0)
            slot = number % len(outputs)
            tiles.set_args(
                *phases,
                *points,
                *objs,
                np.int32(grid.nf),
                np.int32(zero_bin),
                np.int32(n_tiles),
                np.int32(chunk.obj_lo),
                np.int32(chunk.tile_first),
                np.int32(chunk.tile_count),
                np.int32(k0),
                np.int32(chunk_nf),
                outputs[slot],
                part_val,
                part_idx,
            )
            previous = pending[slot]
            if previous is not None:
                # the output block's last copy, awaited on the host: on NVIDIA's
                # OpenCL a kernel waiting for another queue's events blocks its
                # enqueue, which pyopencl makes with the interpreter lock held
                # (bench/results/2026-11-26_h200x2_kepler_host_waits.json)
                previous.wait()
            done = cl.enqueue_nd_range_kernel(
                queue, tiles, (rows * chunk.tile_count * shape.wg,), (shape.wg,)
            )
            events["tiles_s"].append(done)
            if power is not None:
                pending[slot] = _copy_block(
                    copy_queue, power, outputs[slot], o0 + chunk.obj_lo, rows, k0, chunk_nf, done
                )
                events["copy_s"].append(pending[slot])
        best_val = staging.buffer(n_obj * k * itemsize)
        best_idx = staging.buffer(n_obj * k * 4)
        merge.set_args(part_val, part_idx, np.int32(n_tiles), best_val, best_idx)
        events["merge_s"].append(
            cl.enqueue_nd_range_kernel(queue, merge, (n_obj * shape.wg,), (shape.wg,))
        )
        val, idx = staging.results[out_val], staging.results[out_idx]
        # keep every copy's event: pyopencl waits for a copy whose event is freed,
        # holding the GIL
        last = [
            cl.enqueue_copy(queue, val, best_val, is_blocking=False),
            cl.enqueue_copy(queue, idx, best_idx, is_blocking=False),
            *events["copy_s"],
        ]
        queue.flush()
        copy_queue.flush()
        return _QueuedBatch(
            staging, inputs, val, idx, last, events, options.normalization == "psd", profile
        )


@dataclass
class _DeviceInputs:
    """The tile kernel's inputs of one batch (device buffers, in its argument
    order) and the batch's per-object status (filled once the batch's
    commands have run)."""

    phases: list  # t (fp64) or a, b_hi, b_lo (fp32; t_hi, t_lo for an array of frequencies)
    grid: list  # the grid's arguments (_grid_arguments)
    points: list  # phase step and sd (uniform grids), w, wy
    objects: list  # start, points searched, yy, psd scale
    status: np.ndarray
    psd_scale: np.ndarray  # float64, scales the peak powers of normalization "psd"


#: Work-group size of ``ls_prepare`` (one group per object) on GPUs and on
#: other devices.
PREPARE_WG = {"gpu": 256, "other": 16}


def _prepares_on_device(info: DeviceInfo) -> bool:
    """Whether ``info`` runs the preparation (it needs fp64; else the host does)."""
    return info.fp64


def _prepare_on_host(
    queue,
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    staging: Staging,
) -> _DeviceInputs:
    """:func:`_prepare` on the host, then the uploads (``staging`` sends them)."""
    prepared = _prepare(catalog, grid, options)
    rows = prepared.point_arrays
    with np.errstate(over="ignore"):  # psd factors beyond float32 (checked at the end)
        psd_factor: np.ndarray = prepared.psd_scale.astype(options.dtype)
    phase_names, point_names = _point_order(grid, options.fp64)
    inputs = _DeviceInputs(
        phases=[staging.upload(rows[name]) for name in phase_names],
        grid=_grid_arguments(grid, options, staging),
        points=[staging.upload(rows[name]) for name in point_names],
        objects=[
            staging.upload(prepared.offsets[:-1].astype(np.int32)),
            staging.upload(np.diff(prepared.offsets).astype(np.int32)),
            staging.upload(prepared.yy.astype(options.dtype)),
            staging.upload(psd_factor),
        ],
        status=prepared.status,
        psd_scale=prepared.psd_scale,
    )
    staging.send(queue)
    return inputs


def _prepare_on_device(
    queue,
    catalog: Catalog,
    grid: FrequencyGrid | FrequencyArray,
    options: _Options,
    staging: Staging,
) -> _DeviceInputs:
    """Upload the raw ``t, y, dy`` (``staging`` sends them) and queue
    ``ls_prepare`` (``cl_kernels/lsprepare.mako``), which does
    :func:`_prepare`'s work."""
    context = queue.context
    dy = catalog.dy if options.method == "generalized" else None
    use_dy = dy is not None
    wg = PREPARE_WG["gpu" if queue.device.type & cl.device_type.GPU else "other"]
    (kernel,) = kernels.get_kernels(
        context,
        "lsprepare",
        ("ls_prepare",),
        real="double" if options.fp64 else "float",
        wg=wg,
        use_dy=use_dy,
        center=options.fit_mean or options.center_data,
        min_points=options.min_points,
        ok=int(Status.OK),
        too_few=int(Status.TOO_FEW_POINTS),
        zero_variance=int(Status.ZERO_VARIANCE),
        arbitrary=not isinstance(grid, FrequencyGrid),
    )
    raw = [staging.upload(catalog.t), staging.upload(catalog.y)]
    if dy is not None:
        raw.append(staging.upload(dy))
    n_obj, n_points = catalog.n_objects, max(1, int(catalog.offsets[-1]))

    def empty(n: int, dtype) -> cl.MemoryObjectHolder:
        return staging.buffer(n * np.dtype(dtype).itemsize)

    phase_names, point_names = _point_order(grid, options.fp64)
    phases = [empty(n_points, np.float64 if options.fp64 else np.float32) for _ in phase_names]
    points = [empty(n_points, options.dtype) for _ in point_names]
    grid_arguments = _grid_arguments(grid, options, staging)
    steps = (
        [np.float64(grid.fmin), np.float64(grid.df), np.float64(2 * np.pi * grid.df)]
        if isinstance(grid, FrequencyGrid)
        else []
    )
    objects = [
        staging.upload(catalog.offsets[:-1].astype(np.int32)),
        empty(n_obj, np.int32),
        empty(n_obj, options.dtype),
        empty(n_obj, options.dtype),
    ]
    lengths = staging.upload(catalog.lengths.astype(np.int32))
    status_slot = staging.result((n_obj,), np.int8)
    psd_slot = staging.result((n_obj,), np.float64)
    status_buffer, psd_buffer = empty(n_obj, np.int8), empty(n_obj, np.float64)
    staging.send(queue)
    kernel(
        queue,
        (n_obj * wg,),
        (wg,),
        *raw,
        objects[0],
        lengths,
        *steps,
        *phases,
        *points,
        *objects[1:],
        psd_buffer,
        status_buffer,
    )
    status, psd_scale = staging.results[status_slot], staging.results[psd_slot]
    staging.events += [
        cl.enqueue_copy(queue, status, status_buffer, is_blocking=False),
        cl.enqueue_copy(queue, psd_scale, psd_buffer, is_blocking=False),
    ]
    return _DeviceInputs(phases, grid_arguments, points, objects, status, psd_scale)


def _copy_block(queue, power, buffer, row0, n_rows, k0, chunk_nf, after) -> cl.Event:
    """Enqueue the copy of a device block into ``power[row0:row0+n_rows, k0:k0+chunk_nf]``.

    Chunks are whole rows or a part of a single row, so the target is contiguous.
    """
    target = power[row0 : row0 + n_rows, k0 : k0 + chunk_nf]
    return cl.enqueue_copy(queue, target, buffer, is_blocking=False, wait_for=[after])


# }}}
