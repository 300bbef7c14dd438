"""Periodogram normalizations and false-alarm probabilities.

The false-alarm probability (FAP) of a peak of height ``z`` is the chance
that pure Gaussian noise gives a periodogram maximum at least that high.
The ``baluev``, ``davies`` and ``naive`` approximations follow astropy's
``_statistics.py`` (Baluev 2008, Table 1); ``townsend`` is eq. 3 of
Townsend (2010) with the number of grid frequencies as the number of
independent trials:

    FAP = 1 - (1 - fap_single(z)) ** nf,  fap_single = (1 - z_std) ** ((N - 3) / 2)

(one term, centred data), where ``fap_single`` is written in the
periodogram's own normalization (for ``psd`` it is the chi-square(2) tail
``exp(-z)``, as in astropy).
:func:`false_alarm_probability` evaluates one light curve (astropy's
arguments); :func:`catalog_false_alarm_probability` every object of a
catalog at once, from segment sums over its flat arrays.

The null hypothesis has ``dH = 1`` parameter (the mean) when the data are
centred (``fit_mean`` or ``center_data``, astropy's ``distribution()``
convention) and ``dH = 0`` otherwise ("y is zero-mean noise"); the model
adds ``2 n`` harmonic components (``nterms = n``), leaving ``NK = N - dH -
2 n`` noise degrees of freedom. For ``n = 1`` the formulas are astropy's
(Baluev's ``dK = dH + 2``). For ``n > 1`` (astropy refuses ``nterms != 1``
and uncentred data) Baluev's derivation is generalized: at one frequency
the standard power is ``Beta(n, NK / 2)`` (psd: ``Gamma(n)``), and the Rice
formula for the process whose ``2 n`` components are the cosines and sines
of harmonics ``h = 1 .. n`` (frequency-derivative variance ``h**2`` times
that of the fundamental) gives::

    tau(Z) = W A_n Gamma(n + NK/2) / (Gamma(n) Gamma((NK+1)/2))
             * Z**(n - 1/2) * (1 - Z)**((NK - 1)/2)           (standard)
    tau(z) = W A_n z**(n - 1/2) exp(-z) / Gamma(n)           (psd)

with ``W = fmax * T_eff`` and ``A_n = E[sqrt(sum_h h**2 s_h)]`` for ``s``
uniform on the simplex (exact, by divided differences; ``A_1 = 1``,
``A_2 = 14/9``); the model and log powers are mapped to the standard one.

Normalizations, from the standard power ``z = (chi2_0 - chi2) / chi2_0``:
``standard`` ``z``; ``model`` ``z / (1 - z)``; ``log`` ``-ln(1 - z)``;
``psd`` ``z * YY / 2`` with ``YY = sum(dy**-2 * (y - ybar)**2)`` (``ybar = 0``
for uncentred data).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import numpy as np
from scipy import optimize
from scipy.special import betainc, betaincinv, gammaincc, gammainccinv, gammaln, xlogy

from clperiod import checks
from clperiod.catalog import Catalog, catalog_of, refuse_masked, remembered
from clperiod.periodograms.inputs import segment_sum
from clperiod.periodograms.standardize import standardize

NORMALIZATIONS = ("standard", "model", "log", "psd")
FAP_METHODS = ("baluev", "davies", "naive", "townsend")
_DH = 1  # parameters of the null hypothesis of centred data (the mean)


# ---------------------------------------------------------------- normalizations
def weighted_sum_of_squares(y: Any, dy: Any = None, *, center: bool = True) -> float:
    """``sum(dy**-2 * (y - ybar)**2)``, the ``YY`` that scales the psd power.

    Parameters
    ----------
    y : array_like
        Values.
    dy : array_like, optional
        Uncertainties (weights ``dy**-2``, unnormalized); default all 1.
    center : bool
        Subtract the weighted mean ``ybar`` first (astropy does when
        ``fit_mean`` or ``center_data``); else ``ybar = 0``.

    Returns
    -------
    float
        Computed in units of the data (``clperiod.periodograms.standardize.standardize``),
        so it keeps its precision for any scale and offset that float64 holds.
    """
    refuse_masked("y", y)
    refuse_masked("dy", dy)
    y = np.asarray(y, dtype=np.float64).ravel()
    dy = None if dy is None else np.broadcast_to(np.asarray(dy, dtype=np.float64), y.shape)
    values = standardize(y, dy, np.array([0, y.size]), center)
    return float(values.weighted_sum_of_squares()[0])


def normalize(
    p_standard: Any, normalization: str, *, yy_weighted_sum: float | None = None
) -> np.ndarray:
    """Convert standard-normalized power ``z`` (in [0, 1]) to ``normalization``.

    Parameters
    ----------
    p_standard : array_like
        Standard-normalized power.
    normalization : {"standard", "model", "log", "psd"}
        Target normalization.
    yy_weighted_sum : float, optional
        :func:`weighted_sum_of_squares` of the data; required for ``psd``.

    Returns
    -------
    ndarray
        Power in the target normalization (``model`` and ``log`` are
        ``inf`` at ``z = 1``).
    """
    z = np.asarray(p_standard, dtype=np.float64)
    _check_normalization(normalization, yy_weighted_sum)
    with np.errstate(divide="ignore"):
        if normalization == "model":
            return z / (1.0 - z)
        if normalization == "log":
            return -np.log1p(-z)
    if normalization == "psd":
        assert yy_weighted_sum is not None  # _check_normalization raised otherwise
        return 0.5 * z * yy_weighted_sum
    return z.copy()


def standard_from(
    power: Any, normalization: str, yy_weighted_sum: float | None = None
) -> np.ndarray:
    """Inverse of :func:`normalize`: standard power from ``normalization``.

    Parameters
    ----------
    power : array_like
        Power in ``normalization``.
    normalization : {"standard", "model", "log", "psd"}
        Its normalization.
    yy_weighted_sum : float, optional
        :func:`weighted_sum_of_squares` of the data; required for ``psd``.

    Returns
    -------
    ndarray
        Standard-normalized power.
    """
    p = np.asarray(power, dtype=np.float64)
    _check_normalization(normalization, yy_weighted_sum)
    if normalization == "model":
        return p / (1.0 + p)
    if normalization == "log":
        return -np.expm1(-p)
    if normalization == "psd":
        assert yy_weighted_sum is not None  # _check_normalization raised otherwise
        return 2.0 * p / yy_weighted_sum
    return p.copy()


def _check_normalization(normalization: str, yy_weighted_sum: float | None) -> None:
    _check_name(normalization)
    if normalization == "psd" and yy_weighted_sum is None:
        raise ValueError("normalization='psd' needs yy_weighted_sum")


def _check_name(normalization: str) -> None:
    checks.choice("normalization", normalization, NORMALIZATIONS)


# ------------------------------------------------------------ false alarms
@dataclass(frozen=True)
class _Null:
    """What the FAP of one periodogram, or of one per object, depends on.

    ``n``, ``trials`` and ``bandwidth`` are ``(n_objects,)`` arrays, or 0-d
    for one light curve (:meth:`single`); :func:`_fap` lines their first axis
    up with the first axis of the peak heights.
    """

    n: np.ndarray  # data points
    normalization: str
    method: str
    trials: np.ndarray  # independent frequencies: nf (townsend), else fmax * (max t - min t)
    bandwidth: np.ndarray  # W = fmax * T_eff (baluev, davies); NaN otherwise
    nterms: int = 1  # harmonics of the periodic model (2 * nterms components)
    dh: int = _DH  # parameters of the null hypothesis: 1 (the mean) if centred, else 0

    def single(self) -> _Null:
        """This null of one object with 0-d fields, which broadcast against any ``z``."""
        return _Null(
            self.n[0],
            self.normalization,
            self.method,
            self.trials[0],
            self.bandwidth[0],
            self.nterms,
            self.dh,
        )

    def noise_dof(self) -> Any:
        """``NK = n - dH - 2 nterms``, the noise degrees of freedom of each object."""
        return self.n - self.dh - 2 * self.nterms


def false_alarm_probability(
    z: Any,
    *,
    n: int,
    fmax: float,
    t: Any = None,
    dy: Any = None,
    normalization: str = "standard",
    method: str = "baluev",
    fit_mean: bool = True,
    center_data: bool = True,
    nf: int | None = None,
    nterms: int = 1,
) -> np.ndarray:
    """False-alarm probability of periodogram maxima ``z`` under pure noise.

    Parameters
    ----------
    z : array_like
        Peak heights in ``normalization`` (as astropy's
        ``LombScargle.false_alarm_probability``).
    n : int
        Number of data points of the light curve.
    fmax : float
        Highest frequency searched (astropy uses the last grid frequency).
    t : array_like, optional
        The ``n`` times; required except for ``townsend``.
    dy : array_like, optional
        Uncertainties; they weight the effective baseline (baluev, davies).
    normalization : {"standard", "model", "log", "psd"}
        Normalization of ``z``.
    method : {"baluev", "davies", "naive", "townsend"}
        ``baluev`` (default): Baluev's alias-free approximation;
        ``davies``: the Davies upper bound; ``naive``: ``fmax * T``
        independent frequencies; ``townsend``: ``nf`` independent frequencies.
    fit_mean, center_data : bool
        Either one centres the data: the null hypothesis is then a constant
        plus noise (``dH = 1``, astropy's); with both False it is zero-mean
        noise (``dH = 0``; astropy refuses this case).
    nf : int, optional
        Number of grid frequencies; required for ``townsend``.
    nterms : int
        Harmonics of the periodogram's model (``>= 1``); other than 1 uses
        the generalization of Baluev (2008) in the module notes (astropy
        refuses ``nterms != 1``).

    Returns
    -------
    ndarray or float
        Same shape as ``z``; NaN when ``n - dH - 2 nterms <= 0`` (no degrees
        of freedom left for the noise; ``n <= 3`` for centred one-term
        periodograms).

    Raises
    ------
    ValueError
        Unknown normalization or method, inconsistent inputs, or
        ``nterms < 1`` (no periodic model).

    See Also
    --------
    catalog_false_alarm_probability : the same for every object of a catalog.
    """
    null = _null(n, fmax, t, dy, normalization, method, fit_mean, center_data, nf, nterms)
    return _fap(null, np.asarray(z, dtype=np.float64))[()]


def catalog_false_alarm_probability(
    z: Any,
    catalog: Catalog,
    *,
    fmax: float,
    weighted: bool = True,
    normalization: str = "standard",
    method: str = "baluev",
    fit_mean: bool = True,
    center_data: bool = True,
    nf: int | None = None,
    nterms: int = 1,
) -> np.ndarray:
    """:func:`false_alarm_probability` of every object of a catalog at once.

    The per-object baselines and weighted time variances come from segment
    sums over the catalog's flat arrays, so a catalog costs a few passes
    over its rows instead of one Python call per object.

    Parameters
    ----------
    z : array_like, shape (n_objects,) or (n_objects, k)
        Peak heights in ``normalization``, one row per object.
    catalog : Catalog or list
        The light curves the periodograms were computed from (a list as
        :meth:`~clperiod.Catalog.from_lightcurves` takes).
    fmax : float
        Highest frequency searched.
    weighted : bool
        Weight the effective baselines with the catalog's ``dy`` (when it has
        them), as for periodograms of ``method="generalized"``; False for
        unweighted periodograms.
    normalization, method, fit_mean, center_data, nf, nterms
        As in :func:`false_alarm_probability`.

    Returns
    -------
    ndarray
        Same shape as ``z``; NaN for objects with ``n - dH - 2 nterms <= 0``
        (3 or fewer points for centred one-term periodograms).

    Raises
    ------
    ValueError
        As :func:`false_alarm_probability`, or ``z`` without one row per
        object.
    """
    catalog = catalog_of(catalog)
    z = np.asarray(z, dtype=np.float64)
    if z.ndim not in (1, 2) or z.shape[0] != catalog.n_objects:
        raise ValueError(
            f"z must have shape ({catalog.n_objects},) or ({catalog.n_objects}, k) "
            f"for {catalog.n_objects} objects, got {z.shape}"
        )
    fmax, nf, nterms = _check_common(normalization, method, nterms, fmax, nf)
    null = _catalog_null(
        catalog,
        weighted,
        fmax,
        nf,
        normalization,
        method,
        nterms,
        _null_parameters(fit_mean, center_data),
    )
    return _fap(null, z)


def catalog_time_spread(catalog: Catalog, weighted: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-object baseline ``max(t) - min(t)`` and weighted variance of ``t``
    (the false-alarm null's inputs; NaN for objects without rows).

    Remembered for as long as ``catalog`` lives, so a pipeline can compute
    them while the device searches and the false-alarm probabilities
    afterwards cost only their formula.

    Parameters
    ----------
    catalog : Catalog
        The light curves.
    weighted : bool
        Weight the variance with ``dy**-2`` (when the catalog has ``dy``).
    """
    weights = catalog.dy if weighted else None
    return remembered(
        catalog,
        ("time_spread", weights is not None),
        lambda: _time_spread(catalog.offsets, catalog.t, weights, with_variance=True),
    )


def false_alarm_level(
    fap: Any,
    *,
    n: int,
    fmax: float,
    t: Any = None,
    dy: Any = None,
    normalization: str = "standard",
    method: str = "baluev",
    fit_mean: bool = True,
    center_data: bool = True,
    nf: int | None = None,
    nterms: int = 1,
) -> np.ndarray:
    """Peak height whose false-alarm probability is ``fap``.

    The inverse of :func:`false_alarm_probability` (same arguments): closed
    forms for ``naive`` and ``townsend`` (the inverse regularized incomplete
    beta or gamma function when ``nterms > 1``); for ``baluev`` and
    ``davies`` the root nearest the naive level, bracketed and solved with
    Brent's method.

    Parameters
    ----------
    fap : array_like
        False-alarm probabilities, ``0 <= fap <= 1``.

    Returns
    -------
    ndarray or float
        Levels in ``normalization``, same shape as ``fap``: 0 for
        ``fap = 1`` and the top of the range (1 for ``standard``, inf
        otherwise) for ``fap = 0``, as astropy; NaN when
        ``n - dH - 2 nterms <= 0``, and (``baluev``, ``davies``) where the
        bound never falls to ``fap``: with one noise degree of freedom the
        tau term does not vanish at the top of the range, so small
        probabilities (and 0) have no level.
    """
    null = _null(n, fmax, t, dy, normalization, method, fit_mean, center_data, nf, nterms)
    p = np.asarray(fap, dtype=np.float64)
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("false-alarm probabilities must lie in [0, 1]")
    if null.noise_dof() <= 0:
        return np.full(p.shape, np.nan)[()]
    if method in ("naive", "townsend"):
        return _inverse_trials(null, p)[()]
    levels = [_solve_level(null, float(pi)) for pi in p.flat]
    return np.array(levels, dtype=np.float64).reshape(p.shape)[()]


def _null(n, fmax, t, dy, normalization, method, fit_mean, center_data, nf, nterms) -> _Null:
    """Validate the FAP arguments of one light curve and reduce it to its null."""
    fmax, nf, nterms = _check_common(normalization, method, nterms, fmax, nf)
    n = checks.integer("n", n, low=1)
    if method != "townsend":
        t, dy = _times_and_weights(t, dy, n)
    return _objects_null(
        np.array([0, n]),
        t,
        dy,
        fmax,
        nf,
        normalization,
        method,
        nterms,
        _null_parameters(fit_mean, center_data),
    ).single()


def _null_parameters(fit_mean: bool, center_data: bool) -> int:
    """``dH``: 1 (the mean) when the data are centred, else 0 (astropy's convention)."""
    return int(bool(fit_mean or center_data))


def _check_common(
    normalization: str, method: str, nterms: Any, fmax: Any, nf: Any
) -> tuple[float, int | None, int]:
    """Checks shared by one light curve and a catalog; ``fmax``, ``nf`` and
    ``nterms`` as float and ints."""
    _check_name(normalization)
    checks.choice("method", method, FAP_METHODS)
    nterms = checks.integer("nterms", nterms)
    if nterms < 1:
        raise ValueError(
            f"false-alarm probabilities need a periodic model (nterms >= 1), got nterms={nterms}"
        )
    fmax = checks.real("fmax", fmax, positive=True)
    if method != "townsend":
        return fmax, None, nterms
    if nf is None:
        raise ValueError("method='townsend' needs nf >= 1 (the number of grid frequencies)")
    return fmax, checks.integer("nf", nf, low=1), nterms


def _times_and_weights(t: Any, dy: Any, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``t`` and ``dy`` of one light curve as float64 arrays (``dy`` may stay None)."""
    if t is None:
        raise ValueError("t is required for the baluev, davies and naive methods")
    refuse_masked("t", t)
    refuse_masked("dy", dy)
    t = np.asarray(t, dtype=np.float64)
    if t.shape != (n,):
        raise ValueError(f"t must have shape ({n},), got {t.shape}")
    if dy is None:
        return t, None
    dy = np.asarray(dy, dtype=np.float64)
    if dy.shape != t.shape:
        raise ValueError(f"dy must have shape {t.shape}, got {dy.shape}")
    return t, dy


def _catalog_null(
    catalog: Catalog, weighted: bool, fmax, nf, normalization, method, nterms, dh
) -> _Null:
    """:func:`_objects_null` of a catalog, from :func:`catalog_time_spread`."""
    spread = None if method == "townsend" else catalog_time_spread(catalog, weighted)
    return _spread_null(catalog.lengths, spread, fmax, nf, normalization, method, nterms, dh)


def _objects_null(offsets, t, dy, fmax, nf, normalization, method, nterms, dh) -> _Null:
    """The null of each object, whose rows are ``offsets[k]:offsets[k + 1]`` of
    ``t`` and ``dy`` (``dy`` None: unit weights; ``t`` None for townsend,
    which needs no times)."""
    spread = (
        None
        if method == "townsend"
        else _time_spread(offsets, t, dy, with_variance=method != "naive")
    )
    return _spread_null(np.diff(offsets), spread, fmax, nf, normalization, method, nterms, dh)


def _spread_null(lengths, spread, fmax, nf, normalization, method, nterms, dh) -> _Null:
    """The null from the objects' (baseline, time variance); ``spread`` None
    for townsend (the grid size counts the trials)."""
    nan = np.full(lengths.shape, np.nan)
    if spread is None:
        trials, bandwidth = np.full(lengths.shape, float(nf)), nan
    else:
        baseline, variance = spread
        trials = fmax * baseline
        bandwidth = nan if method == "naive" else fmax * np.sqrt(4 * np.pi * variance)
    return _Null(lengths, normalization, method, trials, bandwidth, nterms, dh)


#: Rows per block of :func:`_time_spread`: its float64 temporaries of this
#: length stay in a core's cache (3x faster than whole-catalog passes on
#: 5 million rows).
_BLOCK_ROWS = 1 << 16


def _time_spread(offsets, t, dy, with_variance: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Per-object baseline ``max(t) - min(t)`` and, if asked, the ``dy**-2``
    weighted variance of ``t`` (NaN for objects without rows), in blocks of
    whole objects of about :data:`_BLOCK_ROWS` rows."""
    n_objects = offsets.size - 1
    starts = np.searchsorted(offsets, np.arange(0, offsets[-1], _BLOCK_ROWS))
    cuts = np.append(np.unique(np.append(0, starts[starts < n_objects])), n_objects)
    parts = []
    for lo, hi in itertools.pairwise(cuts):
        rows = slice(offsets[lo], offsets[hi])
        parts.append(
            _block_spread(
                offsets[lo : hi + 1] - offsets[lo],
                t[rows],
                None if dy is None else dy[rows],
                with_variance,
            )
        )
    baseline = np.concatenate([part[0] for part in parts])
    variance = np.concatenate([part[1] for part in parts]) if with_variance else None
    return baseline, variance


def _block_spread(offsets, t, dy, with_variance: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`_time_spread` of one block.

    The variance is taken about the weighted mean, summed from each object's
    earliest time (astropy's ``E[t^2] - E[t]^2`` is the same value but loses
    digits for large epochs such as JD).
    """
    lengths = np.diff(offsets)
    filled = lengths > 0
    starts = offsets[:-1][filled]
    low = np.full(lengths.shape, np.nan)
    high = np.full(lengths.shape, np.nan)
    if starts.size:
        low[filled] = np.minimum.reduceat(t, starts)
        high[filled] = np.maximum.reduceat(t, starts)
    if not with_variance:
        return high - low, None
    dt = t - np.repeat(low, lengths)
    w = None if dy is None else _relative_weights(dy, offsets, starts, filled)
    with np.errstate(invalid="ignore"):  # objects without rows: 0 / 0
        total = lengths.astype(np.float64) if w is None else segment_sum(w, offsets)
        mean = segment_sum(dt if w is None else w * dt, offsets) / total
        dt -= np.repeat(mean, lengths)
        square = dt * dt
        variance = segment_sum(square if w is None else w * square, offsets) / total
    return high - low, variance


def _relative_weights(
    dy: np.ndarray, offsets: np.ndarray, starts: np.ndarray, filled: np.ndarray
) -> np.ndarray:
    """``(min(dy) / dy)**2`` per object: the weights ``dy**-2`` up to a factor
    per object, in ``(0, 1]`` for any scale of ``dy``."""
    smallest = np.ones(filled.shape)
    if starts.size:
        smallest[filled] = np.minimum.reduceat(dy, starts)
    w = np.repeat(smallest, np.diff(offsets)) / dy
    return w * w


def _fap(null: _Null, z: np.ndarray) -> np.ndarray:
    """FAP of peak heights ``z`` whose leading axis runs over the null's objects
    (any shape for a 0-d null); NaN where no noise degrees of freedom are left."""

    def per_row(values: Any) -> np.ndarray:
        values = np.asarray(values)
        return values.reshape(values.shape + (1,) * (z.ndim - values.ndim))

    known = null.noise_dof() > 0
    valid = per_row(known)
    # a stand-in (NK = 2) where the answer is NaN anyway keeps the formulas finite there
    n = per_row(np.where(known, null.n, null.dh + 2 * null.nterms + 2))
    single = _fap_single(z, n, null.normalization, null.nterms, null.dh)
    if null.method in ("naive", "townsend"):
        # 1 - (1 - single) ** trials, accurate for small single.
        with np.errstate(divide="ignore"):
            fap = -np.expm1(per_row(null.trials) * np.log1p(-single))
    else:
        with np.errstate(invalid="ignore"):  # z = inf: 0 * inf, replaced below
            tau = _tau_davies(
                z, n, per_row(null.bandwidth), null.normalization, null.nterms, null.dh
            )
        if null.method == "davies":
            fap = single + tau
        else:  # baluev: 1 - (1 - single) * exp(-tau), accurate for small values.
            fap = -np.expm1(-tau) + single * np.exp(-tau)
        # at z = inf the bound is 0 where tau vanishes there (as at the top, z = 1,
        # of the standard power): with more than one noise degree of freedom
        vanishes = (null.normalization == "psd") | (n - null.dh - 2 * null.nterms > 1)
        fap = np.where(np.isposinf(z), np.where(vanishes, 0.0, np.nan), fap)
    return np.where(valid, fap, np.nan)


def _inverse_trials(null: _Null, p: np.ndarray) -> np.ndarray:
    """Closed-form inverse of the naive and townsend FAPs (``p = 1``: level 0)."""
    with np.errstate(divide="ignore"):  # p = 1: log1p(-1) = -inf, single = 1
        single = -np.expm1(np.log1p(-p) / null.trials)
    return _inverse_fap_single(single, null.n, null.normalization, null.nterms, null.dh)


def _solve_level(null: _Null, p: float) -> float:
    """Root of ``FAP(z) = p`` nearest the naive level (baluev, davies).

    The FAP is 1 at ``z = 0`` and falls to 0 at the top of the range, but it
    need not be monotonic for small ``z``; bracketing outward from the naive
    level (``null.trials`` independent frequencies) picks the root that
    astropy's solver, started there, converges to.
    """
    lower, upper = 0.0, (1.0 if null.normalization == "standard" else math.inf)
    if p == 1:  # FAP(0) = 1 for every method: the single-frequency tail is 1, tau is 0
        return lower
    if p == 0:  # the bound reaches 0 only at the top of the range, if at all
        return upper if null.normalization == "psd" or null.noise_dof() > 1 else math.nan
    start = float(_inverse_trials(null, np.asarray(p)))
    start = min(max(start, np.nextafter(lower, 1.0)), np.nextafter(upper, 0.0))

    def excess(z: float) -> float:
        return float(_fap(null, np.asarray(z))) - p

    low = high = start
    for _ in range(2000):
        if excess(high) < 0:
            break
        high = 0.5 * (high + upper) if upper < math.inf else 2.0 * high
    else:  # the bound stays above p up to the top of the range: no such level
        return math.nan
    for _ in range(2000):
        if excess(low) > 0:
            break
        low = 0.5 * (low + lower)
    if not excess(low) > 0 > excess(high):
        raise ValueError(f"could not bracket the false-alarm level for fap={p}")
    return optimize.brentq(excess, low, high, xtol=1e-300, rtol=4 * np.finfo(float).eps)


def _fap_single(
    z: np.ndarray, n: Any, normalization: str, nterms: int = 1, dh: int = _DH
) -> np.ndarray:
    """Single-frequency FAP: Baluev (2008) Table 1 for one term (astropy's
    rows, ``NK = n - dH - 2``), :func:`_fap_single_terms` for more."""
    nk = n - dh - 2 * nterms
    if nterms != 1:
        return _fap_single_terms(z, nk, nterms, normalization)
    if normalization == "psd":
        return np.exp(-z)
    if normalization == "standard":
        return (1 - z) ** (0.5 * nk)
    if normalization == "model":
        return (1 + z) ** (-0.5 * nk)
    return np.exp(-0.5 * nk * z)


def _inverse_fap_single(
    p: np.ndarray, n: Any, normalization: str, nterms: int = 1, dh: int = _DH
) -> np.ndarray:
    nk = n - dh - 2 * nterms
    if nterms != 1:
        return _inverse_fap_single_terms(p, nk, nterms, normalization)
    with np.errstate(divide="ignore"):
        if normalization == "psd":
            return -np.log(p)
        if normalization == "standard":
            return 1 - p ** (2 / nk)
        if normalization == "model":
            return -1 + p ** (-2 / nk)
        return -2 / nk * np.log(p)


def _tau_davies(
    z: np.ndarray, n: Any, bandwidth: Any, normalization: str, nterms: int = 1, dh: int = _DH
) -> np.ndarray:
    """The tau term of the Davies bound: Baluev (2008) Table 1 for one term
    (astropy's rows), :func:`_tau_terms` for more."""
    nh, nk, w = n - dh, n - dh - 2 * nterms, bandwidth
    if nterms != 1:
        return _tau_terms(z, nk, w, nterms, normalization)
    if normalization == "psd":
        return w * np.exp(-z) * np.sqrt(z)
    if normalization == "standard":
        return _gamma(nh) * w * (1 - z) ** (0.5 * (nk - 1)) * np.sqrt(0.5 * nh * z)
    if normalization == "model":
        return _gamma(nk) * w * (1 + z) ** (-0.5 * nk) * np.sqrt(0.5 * nk * z)
    return _gamma(nk) * w * np.exp(-0.5 * z * (nk - 0.5)) * np.sqrt(nk * np.sinh(0.5 * z))


def _gamma(n: Any) -> np.ndarray:
    """``sqrt(2 / n) * Gamma(n / 2) / Gamma((n - 1) / 2)``."""
    return np.sqrt(2 / n) * np.exp(gammaln(n / 2) - gammaln((n - 1) / 2))


# ------------------------------------------------- models of 2 * nterms components
def _fap_single_terms(z: np.ndarray, nk: Any, nterms: int, normalization: str) -> np.ndarray:
    """``P(power > z)`` at one frequency for ``nterms`` harmonics and ``nk``
    noise degrees of freedom: the standard power is ``Beta(nterms, nk / 2)``,
    the psd power ``Gamma(nterms)`` (for ``nterms = 1``, Baluev's Table 1)."""
    if normalization == "psd":
        return gammaincc(nterms, z)
    _, complement = _standard_and_complement(z, normalization)
    return betainc(0.5 * nk, nterms, complement)


def _inverse_fap_single_terms(
    p: np.ndarray, nk: Any, nterms: int, normalization: str
) -> np.ndarray:
    """Inverse of :func:`_fap_single_terms` in ``z``."""
    if normalization == "psd":
        return gammainccinv(nterms, p)
    complement = betaincinv(0.5 * nk, nterms, p)  # 1 - z_std
    with np.errstate(divide="ignore"):
        if normalization == "standard":
            return 1 - complement
        if normalization == "model":
            return 1 / complement - 1
        return -np.log(complement)


def _tau_terms(
    z: np.ndarray, nk: Any, bandwidth: Any, nterms: int, normalization: str
) -> np.ndarray:
    """The tau term for ``nterms`` harmonics: the Rice formula's expected number
    of upcrossings of ``z`` (module notes; for ``nterms = 1`` Baluev's
    Table 1)."""
    rate = bandwidth * _harmonic_rate_factor(nterms)
    if normalization == "psd":
        return rate * np.exp(xlogy(nterms - 0.5, z) - z - gammaln(nterms))
    z_std, complement = _standard_and_complement(z, normalization)
    log_scale = gammaln(nterms + 0.5 * nk) - gammaln(nterms) - gammaln(0.5 * (nk + 1))
    return rate * np.exp(
        log_scale + xlogy(nterms - 0.5, z_std) + xlogy(0.5 * (nk - 1), complement)
    )


def _standard_and_complement(z: np.ndarray, normalization: str) -> tuple[np.ndarray, np.ndarray]:
    """Standard power ``z_std`` of ``z`` in ``normalization`` (not psd) and
    ``1 - z_std``, each without cancellation."""
    if normalization == "standard":
        return z, 1 - z
    # -log(1 - z_std): model z_std = z / (1 + z), log z_std = 1 - exp(-z)
    minus_log = np.log1p(z) if normalization == "model" else z
    return -np.expm1(-minus_log), np.exp(-minus_log)


@cache
def _harmonic_rate_factor(nterms: int) -> float:
    """``A_n = E[sqrt(sum_h h**2 s_h)]``, ``s`` uniform on the simplex of ``n`` parts.

    The mean of ``g(sum_h a_h s_h)`` over that simplex is ``(n - 1)!`` times
    the divided difference of ``g``'s ``(n - 1)``-fold antiderivative at the
    ``a_h``; for ``g = sqrt`` and ``a_h = h**2`` that antiderivative is
    ``x**(n - 1/2) / prod_{k<n} (k + 1/2)``, whose values ``h**(2n - 1) /
    const`` are rational, so the sum is exact in fractions.
    """
    n = nterms
    const = math.prod(Fraction(2 * k + 1, 2) for k in range(1, n))
    total = sum(
        Fraction(h ** (2 * n - 1), math.prod(h * h - j * j for j in range(1, n + 1) if j != h))
        for h in range(1, n + 1)
    )
    return float(math.factorial(n - 1) * total / const)
