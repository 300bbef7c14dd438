"""Frequency grids: uniform ``f_k = fmin + k * df``, ``k = 0 .. nf - 1``, or any array.

Frequencies are ordinary (cycles per time unit).  Ways to choose a uniform grid:

* :meth:`~clperiod.FrequencyGrid.from_range` -- the papers' semantics: ``nf`` points
  from ``fmin`` with step ``(fmax - fmin) / nf``, so ``fmax`` is excluded;
* :meth:`~clperiod.FrequencyGrid.auto` -- astropy's ``LombScargle.autofrequency``;
* :meth:`~clperiod.FrequencyGrid.survey` -- the default of catalog runs: astropy's rule,
  extended up to periods of :data:`~clperiod.grid.SURVEY_MIN_PERIOD` days at least;
* :meth:`~clperiod.FrequencyGrid.richards` -- the Richards et al. (2011) rule used by
  gpu_lomb_scargle (``df = 0.1 / T_max``).

:meth:`~clperiod.FrequencyGrid.from_frequencies` takes any frequencies (uniform in
period, log-spaced, unsorted, repeated): a uniform grid when they are one, else a
:class:`~clperiod.FrequencyArray`, which every search taking a grid accepts
(:func:`search_grid` says what it evaluates).

:func:`grid_warnings` says, per object, where a uniform grid cannot resolve the data.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from clperiod import checks
from clperiod.catalog import Catalog, is_lightcurve_list, mask_of, refuse_masked, remembered

MAX_NF = 2**31 - 1  # frequency indices are int32 on the device
#: Shortest period, in days, that the default grid of catalog runs reaches:
#: delta Scuti stars, contact binaries and RR Lyrae are all above it.
SURVEY_MIN_PERIOD = 0.05
#: Grid points across a peak of width ``1 / T`` below which a step is coarse.
RESOLVED_SAMPLES_PER_PEAK = 5


@dataclass(frozen=True)
class FrequencyGrid:
    """A uniform grid of ``nf`` ordinary frequencies ``fmin + k * df``.

    Attributes
    ----------
    fmin : float
        First frequency, >= 0.
    df : float
        Step, > 0.
    nf : int
        Number of frequencies, ``1 <= nf <= 2**31 - 1``.
    """

    fmin: float
    df: float
    nf: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "fmin", checks.real("fmin", self.fmin))
        object.__setattr__(self, "df", checks.real("df", self.df))
        object.__setattr__(self, "nf", checks.integer("nf", self.nf))
        if self.fmin < 0:
            raise ValueError(f"fmin must be >= 0, got {self.fmin}")
        if self.df <= 0:
            raise ValueError(f"df must be > 0, got {self.df}")
        if not 1 <= self.nf <= MAX_NF:
            raise ValueError(f"nf must be in [1, {MAX_NF}], got {self.nf}")
        if not math.isfinite(self.fmax):
            raise ValueError(f"the last frequency overflows: fmin={self.fmin}, df={self.df}")

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_range(cls, fmin: float, fmax: float, nf: int) -> FrequencyGrid:
        """``nf`` frequencies from ``fmin`` up to, but excluding, ``fmax``.

        Parameters
        ----------
        fmin, fmax : float
            Bounds, ``0 <= fmin < fmax``; ``df = (fmax - fmin) / nf``.
        nf : int
            Number of frequencies.

        Returns
        -------
        FrequencyGrid
        """
        fmin, fmax = checks.real("fmin", fmin), checks.real("fmax", fmax)
        nf = checks.integer("nf", nf)
        if fmax <= fmin:
            raise ValueError(f"fmax must be > fmin, got fmin={fmin}, fmax={fmax}")
        if nf < 1:
            raise ValueError(f"nf must be >= 1, got {nf}")
        return cls(fmin, (fmax - fmin) / nf, nf)

    @classmethod
    def from_step(cls, fmin: float, df: float, nf: int) -> FrequencyGrid:
        """``nf`` frequencies ``fmin + k * df``."""
        return cls(fmin, df, nf)

    @classmethod
    def from_frequencies(cls, frequencies: Any) -> FrequencyGrid | FrequencyArray:
        """Any ordinary frequencies: e.g. uniform in period, log-spaced, unsorted.

        Parameters
        ----------
        frequencies : array_like
            1-D, at least one, finite and >= 0, in any order, repeats
            allowed. The power at a frequency of 0 is NaN, as on a uniform
            grid.

        Returns
        -------
        FrequencyGrid or FrequencyArray
            A FrequencyGrid (the uniform kernels) when the frequencies rise
            evenly: each within 8 units of roundoff (of the largest) of
            ``f0 + k * df`` through the first and last; one frequency is a
            grid of one. Otherwise a :class:`FrequencyArray` of them, as
            given: every search that takes a grid evaluates each of its
            frequencies as it would evaluate that frequency alone.

        Raises
        ------
        TypeError
            Not real numbers.
        ValueError
            Not 1-D, empty, masked, NaN, infinite or negative values, or more
            than ``2**31 - 1`` of them.
        """
        values = checked_frequencies(frequencies)
        uniform = _uniform_grid(values)
        return FrequencyArray(values) if uniform is None else uniform

    @classmethod
    def auto(
        cls,
        catalog_or_t: Catalog | Any,
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        minimum_frequency: float | None = None,
        maximum_frequency: float | None = None,
    ) -> FrequencyGrid:
        """The grid of astropy's ``LombScargle.autofrequency``.

        With ``T = max(t) - min(t)`` and ``n`` points::

            df   = 1 / T / samples_per_peak
            fmin = minimum_frequency or 0.5 * df
            fmax = maximum_frequency or nyquist_factor * 0.5 * n / T
            nf   = 1 + round((fmax - fmin) / df)

        For a catalog ``T`` is the largest per-object baseline and ``n`` the
        largest object length, so one grid resolves every object.

        Parameters
        ----------
        catalog_or_t : Catalog, list or array_like
            A catalog, a list of light curves (as
            :meth:`~clperiod.Catalog.from_lightcurves` takes), or the times of one
            light curve.
        samples_per_peak : float
            Grid points across a peak of width ``1 / T``.
        nyquist_factor : float
            Multiple of the average Nyquist frequency used as the upper limit.
        minimum_frequency, maximum_frequency : float, optional
            Override the limits.

        Returns
        -------
        FrequencyGrid
            Its :attr:`fmax` equals astropy's
            ``autofrequency(..., return_freq_limits=True)[1]``.
        """
        samples_per_peak = checks.real("samples_per_peak", samples_per_peak, positive=True)
        nyquist_factor = checks.real("nyquist_factor", nyquist_factor, positive=True)
        baseline, n_samples = _baseline_and_size(catalog_or_t)
        df = 1.0 / baseline / samples_per_peak
        fmin = (
            0.5 * df
            if minimum_frequency is None
            else checks.real("minimum_frequency", minimum_frequency)
        )
        if maximum_frequency is None:
            maximum_frequency = nyquist_factor * (0.5 * n_samples / baseline)
        maximum_frequency = checks.real("maximum_frequency", maximum_frequency)
        if maximum_frequency < fmin:
            raise ValueError(
                f"maximum_frequency ({maximum_frequency}) must not be below the "
                f"minimum frequency ({fmin})"
            )
        nf = 1 + int(np.round((maximum_frequency - fmin) / df))
        return cls(fmin, df, nf)

    @classmethod
    def survey(
        cls,
        catalog_or_t: Catalog | Any,
        samples_per_peak: float = 5,
        nyquist_factor: float = 5,
        min_period: float = SURVEY_MIN_PERIOD,
        minimum_frequency: float | None = None,
        maximum_frequency: float | None = None,
    ) -> FrequencyGrid:
        """The default grid of catalog runs: :meth:`auto`, reaching ``1 / min_period``.

        Survey light curves have few points over long baselines, so the
        average Nyquist frequency of :meth:`auto` (``0.5 n / T``) stops far
        below the frequencies that irregular sampling still resolves: a few
        hundred points over years give about 2.5 cycles per day. This grid
        keeps astropy's step and lower limit and raises the upper limit to
        at least ``1 / min_period``::

            fmax = maximum_frequency or max(nyquist_factor * 0.5 * n / T, 1 / min_period)

        Parameters
        ----------
        catalog_or_t : Catalog or array_like
            A catalog, or the times of one light curve.
        samples_per_peak, nyquist_factor : float
            As in :meth:`auto`.
        min_period : float
            Shortest period searched at least, in the time unit (days for
            MJD/JD/BJD times: :data:`~clperiod.grid.SURVEY_MIN_PERIOD`, 0.05 d, by default).
        minimum_frequency, maximum_frequency : float, optional
            Override the limits (``maximum_frequency`` replaces the rule).

        Returns
        -------
        FrequencyGrid
        """
        if not min_period > 0:
            raise ValueError(f"min_period must be > 0, got {min_period}")
        baseline, n_samples = _baseline_and_size(catalog_or_t)
        if maximum_frequency is None:
            nyquist = nyquist_factor * (0.5 * n_samples / baseline)
            maximum_frequency = max(nyquist, 1.0 / min_period)
        return cls.auto(
            catalog_or_t, samples_per_peak, nyquist_factor, minimum_frequency, maximum_frequency
        )

    @classmethod
    def richards(cls, catalog_or_t: Catalog | Any, fmin: float, fmax: float) -> FrequencyGrid:
        """The Richards et al. (2011) rule of gpu_lomb_scargle.

        ``T = t_last - t_first`` per object in row order (rows are assumed
        time-sorted), ``T_max`` the largest, ``nf = int((fmax - fmin) /
        (0.1 / T_max))``, then :meth:`from_range` (so the final step is
        ``(fmax - fmin) / nf``, marginally above ``0.1 / T_max``).

        Parameters
        ----------
        catalog_or_t : Catalog, list or array_like
            A catalog, a list of light curves, or the times of one light curve.
        fmin, fmax : float
            Bounds; ``fmax`` is excluded.

        Returns
        -------
        FrequencyGrid
        """
        fmin, fmax = checks.real("fmin", fmin), checks.real("fmax", fmax)
        if fmax <= fmin:
            raise ValueError(f"fmax must be > fmin, got fmin={fmin}, fmax={fmax}")
        t_max = _richards_baseline(catalog_or_t)
        nf = int((fmax - fmin) / (0.1 / t_max))
        return cls.from_range(fmin, fmax, nf)

    # ------------------------------------------------------------------ access
    @property
    def fmax(self) -> float:
        """The last evaluated frequency, ``fmin + df * (nf - 1)``."""
        return self.fmin + self.df * (self.nf - 1)

    def __len__(self) -> int:
        return self.nf

    def phase_inputs(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """fp32 phase inputs of times ``tau`` (float64, relative to an epoch).

        Returns float32 ``a = frac(fmin * tau)`` and the double-single pair
        ``b_hi + b_lo = frac(df * tau)`` (fractions in [-1/2, 1/2)), from which
        fp32 kernels form the phase of grid index k as ``a + k (b_hi + b_lo)``
        to ~1e-7 cycles whatever the size of the times.
        """
        a = self.fmin * tau
        b = self.df * tau
        a -= np.round(a)
        b -= np.round(b)
        b_hi = b.astype(np.float32)
        return a.astype(np.float32), b_hi, (b - b_hi).astype(np.float32)

    def frequencies(self) -> np.ndarray:
        """All ``nf`` frequencies, float64."""
        return self.fmin + self.df * np.arange(self.nf)

    def periods(self) -> np.ndarray:
        """``1 / frequencies()`` (``inf`` where the frequency is 0)."""
        with np.errstate(divide="ignore"):
            return 1.0 / self.frequencies()

    def frequency(self, k: Any) -> np.ndarray | float:
        """Frequency of index ``k`` (int or int array), ``fmin + k * df``."""
        index = np.asarray(k)
        if index.dtype.kind not in "iu":
            raise TypeError(f"frequency indices must be integers, got dtype {index.dtype}")
        if np.any((index < 0) | (index >= self.nf)):
            raise IndexError(f"frequency index out of range [0, {self.nf})")
        value = self.fmin + self.df * index
        return float(value) if value.ndim == 0 else value

    def chunks(self, max_nf: int) -> list[tuple[int, FrequencyGrid]]:
        """Cut the grid into consecutive pieces of at most ``max_nf`` frequencies.

        Parameters
        ----------
        max_nf : int
            Largest piece, >= 1.

        Returns
        -------
        list of (int, FrequencyGrid)
            ``(start, piece)`` in order; ``piece`` has ``fmin = fmin + start *
            df`` and the same ``df`` (its frequencies equal the parent's up to
            rounding of that sum).
        """
        max_nf = checks.integer("max_nf", max_nf, low=1)
        return [
            (start, type(self)(self.fmin + start * self.df, self.df, min(max_nf, self.nf - start)))
            for start in range(0, self.nf, max_nf)
        ]


class GridWarning(enum.IntFlag):
    """Ways a grid fails to resolve an object's periodogram (bit flags).

    COARSE_STEP
        The step is coarser than ``1 / (RESOLVED_SAMPLES_PER_PEAK * T)``, ``T``
        the object's baseline: a peak of width ``1 / T`` can fall between two
        grid frequencies and lose power.
    LOW_FMAX
        The grid stops more than one step below the frequency the sampling
        supports, capped at the survey range ``1 / SURVEY_MIN_PERIOD``:
        periods the data can show are not searched. Times on a lattice
        (every spacing a multiple of the shortest, ``dt``) support up to the
        Nyquist frequency ``1 / (2 dt)``; irregular times support the whole
        survey range.
    """

    COARSE_STEP = 1
    LOW_FMAX = 2


def grid_warnings(grid: FrequencyGrid | FrequencyArray, catalog: Catalog) -> np.ndarray:
    """Per-object :class:`GridWarning` flags of a grid searched on a catalog.

    Parameters
    ----------
    grid : FrequencyGrid or FrequencyArray
        The searched grid. The step of a FrequencyArray is the largest
        spacing of its distinct frequencies in rising order (its coarsest
        part), and it stops at its largest frequency plus the last spacing.
    catalog : Catalog
        The searched objects.

    Returns
    -------
    ndarray of int8, shape (n_objects,)
        Bitwise OR of :class:`GridWarning` values; 0 where the grid resolves
        the object or the object has fewer than two distinct times.
    """
    coarsest_step, next_frequency = _resolution(grid)
    flags = np.zeros(catalog.n_objects, dtype=np.int8)
    with np.errstate(invalid="ignore", divide="ignore"):
        coarse = coarsest_step * RESOLVED_SAMPLES_PER_PEAK * catalog.baselines() > 1 + 1e-9
        reach = np.minimum(supported_frequencies(catalog), 1.0 / SURVEY_MIN_PERIOD)
        low = next_frequency < reach
    flags[coarse] |= GridWarning.COARSE_STEP
    flags[low] |= GridWarning.LOW_FMAX
    return flags


def _resolution(grid: FrequencyGrid | FrequencyArray) -> tuple[float, float]:
    """The coarsest step of a grid and the frequency one step above its last."""
    searched, _ = search_grid(grid)
    if isinstance(searched, FrequencyGrid):
        return searched.df, searched.fmax + searched.df
    steps = np.diff(searched.frequencies())  # rising and distinct, at least two
    return float(steps.max()), searched.fmax + float(steps[-1])


def grid_warning_names(flags: Any) -> np.ndarray:
    """Comma-separated :class:`GridWarning` names of flags (``""`` for none)."""
    names = np.array(["", "coarse_step", "low_fmax", "coarse_step,low_fmax"], dtype=object)
    return names[np.asarray(flags) & 3]


def supported_frequencies(catalog: Catalog) -> np.ndarray:
    """Per object, the highest frequency its sampling resolves.

    ``1 / (2 dt)`` for times on a lattice (every spacing of distinct times
    within 1 % of a multiple of the shortest, ``dt``), ``inf`` for irregular
    times (no Nyquist limit), NaN with fewer than two distinct times.
    Remembered (read-only) for as long as ``catalog`` lives, so it can be
    computed while the device searches.
    """

    def read_only() -> np.ndarray:
        supported = _supported_frequencies(catalog)
        supported.flags.writeable = False
        return supported

    return remembered(catalog, "supported_frequencies", read_only)


def _supported_frequencies(catalog: Catalog) -> np.ndarray:
    """:func:`supported_frequencies`, computed."""
    lengths, starts = catalog.lengths, catalog.offsets[:-1]
    several = lengths >= 2
    supported = np.full(catalog.n_objects, np.nan)
    if not np.any(several):
        return supported
    gaps = _gaps(catalog)
    # object k's gaps are gaps[starts[k]:starts[k] + lengths[k] - 1], then an inf
    gaps = np.append(gaps, np.inf)
    shortest = np.full(catalog.n_objects, np.nan)
    shortest[several] = np.minimum.reduceat(gaps, starts[several])
    shortest[np.isinf(shortest)] = np.nan  # all times equal
    with np.errstate(invalid="ignore"):
        ratio = gaps[:-1] / np.repeat(shortest, lengths)[: gaps.size - 1]
        off_lattice = np.append(np.abs(ratio - np.round(ratio)) > 0.01, False)  # not inf, NaN
    irregular = np.logical_or.reduceat(off_lattice, starts[several])
    supported[several] = np.where(irregular, np.inf, 0.5 / shortest[several])
    return supported


def _gaps(catalog: Catalog) -> np.ndarray:
    """Spacings of consecutive times within objects (time-sorted), ``inf`` where
    two times are equal or the next row belongs to another object."""
    t = catalog.t
    crossings = catalog.offsets[1:-1]
    crossings = crossings[(crossings > 0) & (crossings < t.size)] - 1
    gaps = np.diff(t)
    gaps[crossings] = np.inf
    if np.any(gaps < 0):  # some object is not time-sorted
        owner = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
        gaps = np.diff(t[np.lexsort((t, owner))])
        gaps[crossings] = np.inf
    gaps[gaps <= 0] = np.inf
    return gaps


#: Frequencies form one uniform grid when every one lies within this many
#: units of roundoff (of the largest) of ``f0 + k * df``.
_UNIFORM_ULPS = 8


class FrequencyArray:
    """Ordinary frequencies in any order (:meth:`~clperiod.FrequencyGrid.from_frequencies`).

    The searches take it wherever they take a :class:`FrequencyGrid` (their
    direct sums, and Lomb-Scargle's type-3 NUFFT): they evaluate its
    distinct frequencies in rising order (see
    :func:`~clperiod.grid.search_grid`), each as it would evaluate the
    frequency alone, and return periodograms whose columns follow the order
    given here. Peaks are local maxima along frequency.

    Parameters
    ----------
    frequencies : array_like
        1-D, at least one, finite and >= 0, in any order, repeats allowed.

    Raises
    ------
    TypeError, ValueError
        As :meth:`~clperiod.FrequencyGrid.from_frequencies`.
    """

    __slots__ = ("_search", "_values")

    def __init__(self, frequencies: Any) -> None:
        self._values = checked_frequencies(frequencies)
        self._search: tuple[FrequencyGrid | FrequencyArray, np.ndarray | None] | None = None

    @property
    def nf(self) -> int:
        """Number of frequencies (repeats counted)."""
        return self._values.size

    @property
    def fmin(self) -> float:
        """The smallest frequency."""
        return float(self._values.min())

    @property
    def fmax(self) -> float:
        """The largest frequency."""
        return float(self._values.max())

    def __len__(self) -> int:
        return self.nf

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FrequencyArray):
            return NotImplemented
        return np.array_equal(self._values, other._values)

    def __hash__(self) -> int:
        return hash(self._values.tobytes())

    def __repr__(self) -> str:
        return f"FrequencyArray(nf={self.nf}, fmin={self.fmin:.6g}, fmax={self.fmax:.6g})"

    def frequencies(self) -> np.ndarray:
        """All ``nf`` frequencies, float64, in the order given."""
        return self._values.copy()

    def periods(self) -> np.ndarray:
        """``1 / frequencies()`` (``inf`` where the frequency is 0)."""
        with np.errstate(divide="ignore"):
            return 1.0 / self._values

    def frequency(self, k: Any) -> np.ndarray | float:
        """Frequency of index ``k`` (int or int array)."""
        index = np.asarray(k)
        if index.dtype.kind not in "iu":
            raise TypeError(f"frequency indices must be integers, got dtype {index.dtype}")
        if np.any((index < 0) | (index >= self.nf)):
            raise IndexError(f"frequency index out of range [0, {self.nf})")
        value = self._values[index]
        return float(value) if value.ndim == 0 else value

    def searched(self) -> tuple[FrequencyGrid | FrequencyArray, np.ndarray | None]:
        """:func:`~clperiod.grid.search_grid` of this array (computed once)."""
        if self._search is None:
            self._search = _search_of(self._values, self)
        return self._search


def search_grid(
    grid: FrequencyGrid | FrequencyArray,
) -> tuple[FrequencyGrid | FrequencyArray, np.ndarray | None]:
    """The frequencies a search evaluates for ``grid``, and where ``grid``'s lie among them.

    Parameters
    ----------
    grid : FrequencyGrid or FrequencyArray
        The grid a search was given.

    Returns
    -------
    searched : FrequencyGrid or FrequencyArray
        ``grid`` itself when it is a FrequencyGrid; for a FrequencyArray its
        distinct frequencies in rising order: a FrequencyGrid when they are
        evenly spaced (as :meth:`~clperiod.FrequencyGrid.from_frequencies` decides),
        else a FrequencyArray (``grid`` itself when already rising).
    positions : ndarray of int64, or None
        ``grid.frequencies()`` is ``searched.frequencies()[positions]``; None
        when the two are the same.

    Raises
    ------
    TypeError
        ``grid`` is neither.
    """
    if isinstance(grid, FrequencyGrid):
        return grid, None
    if isinstance(grid, FrequencyArray):
        return grid.searched()
    raise TypeError(f"grid must be a FrequencyGrid or FrequencyArray, got {type(grid).__name__}")


def _search_of(
    values: np.ndarray, array: FrequencyArray
) -> tuple[FrequencyGrid | FrequencyArray, np.ndarray | None]:
    rising = values.size == 1 or bool(np.all(values[1:] > values[:-1]))
    distinct, positions = (values, None) if rising else np.unique(values, return_inverse=True)
    uniform = _uniform_grid(distinct)
    if uniform is not None:
        return uniform, positions
    return (array if rising else FrequencyArray(distinct)), positions


def _uniform_grid(values: np.ndarray) -> FrequencyGrid | None:
    """The grid ``f0 + k * df`` through strictly rising ``values``' end points
    when every one lies on it (within :data:`_UNIFORM_ULPS` units of roundoff
    of the largest), else None. One frequency is a grid of one."""
    if values.size == 1:
        return FrequencyGrid(values[0], 1.0, 1)  # the step of a one-point grid is unused
    if not np.all(values[1:] > values[:-1]):
        return None
    df = (values[-1] - values[0]) / (values.size - 1)
    grid = FrequencyGrid(values[0], df, values.size)
    tolerance = _UNIFORM_ULPS * np.finfo(np.float64).eps * float(values[-1])
    if np.max(np.abs(grid.frequencies() - values)) > tolerance:
        return None
    return grid


def checked_frequencies(frequencies: Any) -> np.ndarray:
    """``frequencies`` as a read-only float64 1-D copy.

    Raises
    ------
    TypeError
        Not real numbers (strings, booleans, objects, complex).
    ValueError
        Not 1-D, empty, longer than ``2**31 - 1``, masked entries, NaN,
        infinite or negative values; each message names ``frequencies``.
    """
    refuse_masked("frequencies", frequencies)
    values = np.asarray(np.ma.getdata(frequencies))
    if values.dtype.kind not in "iuf":
        raise TypeError(f"frequencies must be real numbers, got dtype {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"frequencies must be a 1-D array, got shape {values.shape}")
    if values.size == 0:
        raise ValueError("frequencies must not be empty")
    if values.size > MAX_NF:
        raise ValueError(f"frequencies must hold at most {MAX_NF} values, got {values.size}")
    values = np.array(values, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(values) & (values >= 0)))
    if bad.size:
        raise ValueError(
            f"frequencies must be finite and >= 0, got {values[bad[0]]} at index {bad[0]} "
            f"({bad.size} such values)"
        )
    values.flags.writeable = False
    return values


def split_float32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (float64) as float32 pairs ``hi + lo``: ``hi`` is ``x`` rounded, ``lo``
    the rest rounded, so the pair holds ``x`` to about 2**-48 of it (fp32
    kernels form products with the frequency array's pairs from them)."""
    x = np.asarray(x, dtype=np.float64)
    hi = x.astype(np.float32)
    return hi, (x - hi).astype(np.float32)


def _times(catalog_or_t: Catalog | Any) -> np.ndarray:
    """Checked float64 times (masked entries left out)."""
    mask = mask_of(catalog_or_t)
    values: Any = getattr(catalog_or_t, "unmasked", catalog_or_t)
    t = np.asarray(np.ma.getdata(values))
    if mask is not None and t.shape == mask.shape:
        t = t[~mask]
    if t.dtype.kind not in "iuf":
        raise TypeError(f"expected a Catalog or real times, got dtype {t.dtype}")
    if t.ndim != 1:
        raise ValueError(f"times must be 1-D, got shape {t.shape}")
    t = t.astype(np.float64, copy=False)
    if t.size == 0 or not np.all(np.isfinite(t)):
        raise ValueError("times must be a non-empty array of finite values")
    return t


def _positive(baseline: float) -> float:
    if not baseline > 0:
        raise ValueError(f"the time baseline must be > 0, got {baseline}")
    return float(baseline)


def _listed(catalog_or_t: Catalog | Any) -> Catalog | Any:
    """A list of light curves as its catalog (rows with a non-finite value
    left out, as a search with ``nan_policy="omit"`` leaves them); anything
    else as given."""
    if is_lightcurve_list(catalog_or_t):
        return Catalog.from_lightcurves(catalog_or_t, nan_policy="omit")
    return catalog_or_t


def _baseline_and_size(catalog_or_t: Catalog | Any) -> tuple[float, int]:
    """Largest ``max(t) - min(t)`` and largest length (one object or a catalog)."""
    catalog_or_t = _listed(catalog_or_t)
    if isinstance(catalog_or_t, Catalog):
        baselines = catalog_or_t.baselines()
        baseline = np.nanmax(baselines) if np.any(np.isfinite(baselines)) else np.nan
        return _positive(baseline), int(catalog_or_t.lengths.max())
    t = _times(catalog_or_t)
    return _positive(t.max() - t.min()), t.size


def _richards_baseline(catalog_or_t: Catalog | Any) -> float:
    """Largest ``t_last - t_first`` in row order."""
    catalog_or_t = _listed(catalog_or_t)
    if isinstance(catalog_or_t, Catalog):
        filled = catalog_or_t.lengths > 0
        first = catalog_or_t.offsets[:-1][filled]
        last = catalog_or_t.offsets[1:][filled] - 1
        spans = catalog_or_t.t[last] - catalog_or_t.t[first]
        return _positive(spans.max() if spans.size else np.nan)
    t = _times(catalog_or_t)
    return _positive(t[-1] - t[0])
