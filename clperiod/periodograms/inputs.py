"""Host-side helpers shared by the search front ends."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast, get_args

import numpy as np

from clperiod import checks
from clperiod.catalog import Catalog, Status, catalog_of, is_lightcurve_list
from clperiod.grid import FrequencyArray, FrequencyGrid

__all__ = [
    "NO_PEAK",
    "Deferred",
    "PeakResults",
    "as_catalog",
    "band_order",
    "banded_status",
    "blank_failed",
    "check_choice",
    "check_top_k",
    "degenerate_status",
    "progress_bar",
    "reference_times",
    "row_cells",
    "segment_max",
    "segment_reduce",
    "segment_sum",
    "summed_seconds",
    "top_k_arrays",
]


T = TypeVar("T")

#: Grid index of a top-k slot that no peak filled (the kernels' marker).
NO_PEAK = np.iinfo(np.int32).max


class Deferred(Generic[T]):
    """A result the device may still be computing: :meth:`result` waits for it
    (once, whichever thread asks first; later calls return the same object)."""

    def __init__(self, finish: Callable[[], T]) -> None:
        self._finish: Callable[[], T] | None = finish
        self._value: T | None = None
        self._finishing = threading.Lock()

    @classmethod
    def ready(cls, value: T) -> Deferred[T]:
        """An already finished result."""
        return cls(lambda: value)

    def result(self) -> T:
        """Wait for the device and return the result."""
        with self._finishing:
            if self._finish is not None:
                self._value = self._finish()
                self._finish = None
        return cast(T, self._value)


class PeakResults:
    """Derived views shared by the per-object search results (dataclasses with
    ``frequency_best``, ``top_k_frequency``, ``catalog`` and ``grid``)."""

    frequency_best: np.ndarray
    top_k_frequency: np.ndarray
    catalog: Catalog
    grid: FrequencyGrid | FrequencyArray

    @property
    def period(self) -> np.ndarray:
        """Best period of each object (``1 / frequency_best``)."""
        return 1.0 / self.frequency_best

    @property
    def top_k_period(self) -> np.ndarray:
        """Periods of the top-k peaks."""
        return 1.0 / self.top_k_frequency

    @property
    def n_points(self) -> np.ndarray:
        """Observations per object."""
        return self.catalog.lengths

    def frequency(self) -> np.ndarray:
        """The grid frequencies (columns of :attr:`power`)."""
        return self.grid.frequencies()


def as_catalog(cat_or_t: Any, y: Any, dy: Any, nan_policy: str) -> Catalog:
    """The catalog of a search call: a Catalog as given, a list of light
    curves (:meth:`Catalog.from_lightcurves`), or one light curve."""
    if isinstance(cat_or_t, Catalog) or (y is None and is_lightcurve_list(cat_or_t)):
        if y is not None or dy is not None:
            raise ValueError(
                "give y and dy inside the Catalog or the light curves, not as arguments"
            )
        return catalog_of(cat_or_t, nan_policy)
    if y is None:
        raise ValueError(
            "y is required when the first argument is a time array (or pass a "
            "Catalog, or a list of (t, y[, dy]) tuples, DataFrames or Tables)"
        )
    return Catalog.from_single(cat_or_t, y, dy, nan_policy=nan_policy)


def check_top_k(top_k: Any, largest: int) -> int:
    """``top_k`` as an int in ``[1, largest]``, or TypeError/ValueError."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
        raise TypeError(f"top_k must be an integer, got {top_k!r}")
    if not 1 <= top_k <= largest:
        raise ValueError(f"top_k must be in [1, {largest}], got {top_k}")
    return int(top_k)


def check_choice(name: str, value: Any, kind: Any) -> None:
    """Raise ValueError unless ``value`` is one of the ``Literal`` ``kind``'s values."""
    checks.choice(name, value, get_args(kind))


@contextlib.contextmanager
def progress_bar(enabled: bool, total: int, desc: str) -> Iterator[Any]:
    """A tqdm bar over ``total`` work items, or None when disabled."""
    if not enabled:
        yield None
        return
    try:
        from tqdm.auto import tqdm
    except ImportError as error:
        raise ImportError("progress=True needs tqdm: pip install clperiod[progress]") from error
    with tqdm(total=total, unit="batch", desc=desc) as bar:
        yield bar


def top_k_arrays(
    top_val: np.ndarray, top_idx: np.ndarray, grid: FrequencyGrid | FrequencyArray
) -> tuple[np.ndarray, np.ndarray]:
    """Powers and frequencies of the top-k slots (``top_idx``: indices of
    ``grid``), NaN where no peak filled them."""
    found = top_idx != NO_PEAK
    frequency = np.full(top_idx.shape, np.nan)
    frequency[found] = grid.frequency(top_idx[found])
    return np.where(found, top_val, np.nan), frequency


def blank_failed(
    status: np.ndarray, top_val: np.ndarray, top_freq: np.ndarray, power: np.ndarray | None
) -> None:
    """NaN, in place, for the peaks and periodogram rows of objects not OK."""
    failed = status != Status.OK
    top_val[failed] = top_freq[failed] = np.nan
    if power is not None and failed.any():
        power[failed] = np.nan


def summed_seconds(results: Iterable[Any]) -> dict[str, float]:
    """Stage times summed over batch results (each with a ``seconds`` dict)."""
    timings: dict[str, float] = {}
    for result in results:
        for name, value in result.seconds.items():
            timings[name] = timings.get(name, 0.0) + value
    return timings


def degenerate_status(
    catalog: Catalog, status: np.ndarray, power_best: np.ndarray, use_dy: bool
) -> np.ndarray:
    """The per-object status of a search with the cause of every degenerate result.

    Parameters
    ----------
    catalog
        The catalog searched.
    status
        The search's status (OK, TOO_FEW_POINTS, ZERO_VARIANCE).
    power_best
        The best power of each object (NaN where no peak was found).
    use_dy
        Whether the search weighted by ``catalog.dy``.

    Returns
    -------
    ndarray of int8
        ``status`` with, in order of precedence: NOT_FINITE and
        BAD_UNCERTAINTY for invalid values (only a catalog made by the
        constructor, which does not check values, holds them; checked
        catalogs are not scanned again); ZERO_BASELINE
        for OK objects whose times are all equal; for OK objects without a
        finite power and for ZERO_VARIANCE objects, ZERO_VARIANCE if their
        weighted variance, evaluated scale-free, is below rounding, else
        OUT_OF_RANGE (their squares or weights left the floating-point
        range).
    """
    status = np.array(status, dtype=np.int8)
    status[(status == Status.OK) & _equal_times(catalog)] = Status.ZERO_BASELINE
    no_peak = (status == Status.OK) & ~np.isfinite(power_best)
    suspect = np.flatnonzero(no_peak | (status == Status.ZERO_VARIANCE))
    status[suspect] = np.where(
        _varies(catalog, suspect, use_dy), Status.OUT_OF_RANGE, Status.ZERO_VARIANCE
    )
    if catalog.checked:  # a builder validated the values
        return status
    dy = catalog.dy if use_dy else None
    if dy is not None and not (dy > 0).all():
        status[_owners(catalog, dy <= 0)] = Status.BAD_UNCERTAINTY
    invalid = _not_finite(catalog.t, catalog.y, dy)
    if invalid is not None:
        status[_owners(catalog, invalid)] = Status.NOT_FINITE
    return status


def banded_status(
    catalog: Catalog, status: np.ndarray, power_best: np.ndarray, use_dy: bool
) -> np.ndarray:
    """:func:`degenerate_status` of a search that models each band: it keeps
    ZERO_VARIANCE for objects whose values are constant within each band
    (their pooled values may vary)."""
    final = degenerate_status(catalog, status, power_best, use_dy=use_dy)
    final[(status == Status.ZERO_VARIANCE) & (final == Status.OUT_OF_RANGE)] = Status.ZERO_VARIANCE
    return final


def _equal_times(catalog: Catalog) -> np.ndarray:
    """Per object, whether it has rows and all its times are equal."""
    return (catalog.lengths > 0) & (catalog.baselines() == 0)


def _not_finite(*columns: np.ndarray | None) -> np.ndarray | None:
    """Rows where a column is NaN or infinite, or None when all are finite."""
    present = [column for column in columns if column is not None]
    if all(np.isfinite(column).all() for column in present):
        return None
    return np.logical_or.reduce([~np.isfinite(column) for column in present])


def _owners(catalog: Catalog, rows: np.ndarray) -> np.ndarray:
    """Indices of the objects that own the ``rows`` marked True."""
    return np.unique(np.searchsorted(catalog.offsets, np.flatnonzero(rows), side="right") - 1)


def _varies(catalog: Catalog, objects: np.ndarray, use_dy: bool) -> np.ndarray:
    """For each of ``objects`` (all with rows), whether its values have a
    weighted variance above rounding, evaluated scale-free (values divided by
    their largest magnitude, weights ``(min dy / dy)**2``) so that nothing
    overflows or underflows."""
    if objects.size == 0:
        return np.zeros(0, dtype=bool)
    sub = catalog.subset(objects)
    lengths, starts = sub.lengths, sub.offsets[:-1]
    with np.errstate(all="ignore"):
        y = sub.y / np.repeat(np.maximum.reduceat(np.abs(sub.y), starts), lengths)
        w = np.ones_like(y)
        if use_dy and sub.dy is not None:
            w = (np.repeat(np.minimum.reduceat(sub.dy, starts), lengths) / sub.dy) ** 2
        total = segment_sum(w, sub.offsets)
        centred = y - np.repeat(segment_sum(w * y, sub.offsets) / total, lengths)
        variance = segment_sum(w * centred * centred, sub.offsets) / total
        second = segment_sum(w * y * y, sub.offsets) / total
    return variance > (64 * np.finfo(np.float64).eps) ** 2 * second


def row_cells(catalog: Catalog) -> tuple[np.ndarray, np.ndarray]:
    """The object and the band code of every row (code 0 without bands)."""
    owners = np.repeat(np.arange(catalog.n_objects), catalog.lengths)
    codes = np.zeros(owners.size, np.int16) if catalog.band_codes is None else catalog.band_codes
    return owners, codes


def band_order(counts: np.ndarray, owners: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Row indices that put each object's rows band by band, keeping their
    order within a band: ``np.lexsort((codes, owners))`` for rows grouped by
    object, as a counting sort (one pass over the rows per band).

    ``counts`` is :meth:`clperiod.Catalog.band_counts`, ``owners`` and
    ``codes`` each row's object and band code (:func:`row_cells`). Every
    object's rows keep their place in the catalog: only their order within
    it changes.
    """
    n_objects, n_bands = counts.shape
    order = np.arange(owners.size)
    if n_bands == 1:
        return order
    cells = counts.ravel()
    # first output row of each (object, band) cell, less the rows of that band
    # in earlier objects: the j-th row of band b goes to shift[object, b] + j
    shift = (np.cumsum(cells) - cells).reshape(n_objects, n_bands) - (
        np.cumsum(counts, axis=0) - counts
    )
    for band in range(n_bands):
        rows = np.flatnonzero(codes == band)
        order[shift[owners[rows], band] + np.arange(rows.size)] = rows
    return order


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-object sums of ``values`` (segments given by ``offsets``; empty -> 0)."""
    return segment_reduce(np.add, values, offsets)


def segment_max(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per-object maxima of ``values`` (segments given by ``offsets``; empty -> 0)."""
    return segment_reduce(np.maximum, values, offsets)


def segment_reduce(
    ufunc: np.ufunc, values: np.ndarray, offsets: np.ndarray, empty: float = 0.0
) -> np.ndarray:
    """Per-object ``ufunc.reduce`` of ``values`` (segments given by ``offsets``);
    ``empty`` for objects without rows."""
    reduced = np.full(len(offsets) - 1, empty)
    nonempty = np.flatnonzero(np.diff(offsets) > 0)
    if len(nonempty):
        reduced[nonempty] = ufunc.reduceat(values, offsets[:-1][nonempty])
    return reduced


def reference_times(catalog: Catalog) -> np.ndarray:
    """Per object, the time of its observation nearest the middle of its time
    range (the first such row; NaN for objects without rows).

    Phases are measured from it: at every frequency that observation has
    phase 0, and wherever the phases of all observations bunch together
    (f -> 0, or the 1/day alias of ground-based data) they bunch around 0,
    where the fp32 kernel's ``cos - 1`` sums keep their digits.
    """
    reference = np.full(catalog.n_objects, np.nan)
    filled = catalog.lengths > 0
    if not filled.any():
        return reference
    lengths = catalog.lengths
    distance = np.abs(catalog.t - np.repeat(catalog.epochs(), lengths))
    nearest = np.full(catalog.n_objects, np.nan)
    nearest[filled] = np.minimum.reduceat(distance, catalog.offsets[:-1][filled])
    rows = np.flatnonzero(distance == np.repeat(nearest, lengths))
    objects = np.searchsorted(catalog.offsets, rows, side="right") - 1  # row owners
    # non-decreasing: keep each object's first row
    first = np.flatnonzero(np.diff(objects, prepend=-1))
    reference[objects[first]] = catalog.t[rows[first]]
    return reference
