"""The one data model of clperiod: a ragged catalog of light curves.

A :class:`Catalog` holds ``n_objects`` light curves as flat float64 arrays
``t``, ``y`` and (optionally) ``dy`` plus an ``offsets`` array: the rows of
object ``k`` are ``offsets[k]:offsets[k + 1]``.  A single light curve is a
catalog of one object, so every algorithm has one data path.

A catalog may carry a band (filter) label per row, stored as an int16 code
per row (``band_codes``) into the tuple of labels ``bands``; the rows of one
object keep their order and the bands of an object may interleave.

All host arrays are C-contiguous, read-only copies of the caller's data:
inputs are never mutated and a catalog cannot be changed after it is built.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import operator
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import DTypeLike

from clperiod import checks
from clperiod.columns import is_table, lightcurve_columns
from clperiod.engine.devices import select_devices
from clperiod.engine.staging import HOST_POOL, PINNED_POOL, in_parts, parallel_copy

NAN_POLICIES = ("raise", "omit")

# Where a builder puts its copy of a column: ``empty(shape, dtype)`` gives a new array.
ColumnMemory = Callable[[tuple[int, ...], DTypeLike], np.ndarray]


class Status(enum.IntEnum):
    """Per-object status of a period search (objects that are not OK get NaN)."""

    OK = 0
    TOO_FEW_POINTS = 1  # fewer points than the search needs (see each search)
    ZERO_VARIANCE = 2  # the values are equal to within rounding
    NOT_FINITE = 3  # a t, y or (used) dy is NaN or infinite (Catalog() does not check)
    ZERO_BASELINE = 4  # all times are equal: no frequency is told from another
    OUT_OF_RANGE = 5  # values beyond the precision's range: no finite power anywhere
    BAD_UNCERTAINTY = 6  # a (used) dy is zero or negative (Catalog() does not check)


@dataclass(frozen=True, eq=False, repr=False)
class Catalog:
    """Ragged light curves: object ids, row offsets and flat t/y/dy.

    Build one with :meth:`from_arrays` (long format), :meth:`from_lightcurves`
    or :meth:`from_single`; those validate the values.  The constructor
    itself only checks the structure and is meant for internal use (a search
    gives objects with a non-finite value or a ``dy <= 0`` the status
    NOT_FINITE or BAD_UNCERTAINTY).

    Attributes
    ----------
    ids : ndarray
        ``(n_objects,)`` object ids (any dtype), in first-appearance order.
    offsets : ndarray
        ``(n_objects + 1,)`` int64; ``offsets[0] == 0`` and object ``k``
        owns rows ``offsets[k]:offsets[k + 1]``.
    t, y : ndarray
        Flat float64 times and values.
    dy : ndarray or None
        Flat float64 uncertainties (all > 0), or None.
    n_dropped : int
        Rows dropped by ``nan_policy="omit"`` when the catalog was built.
    band_codes : ndarray or None
        Flat int16 band of every row, an index into ``bands``; None for a
        catalog without bands.
    bands : tuple or None
        The band labels (all str or all int): in the order given by the
        ``bands`` argument of the builders, else sorted (numbers ascending,
        strings in code-point order, e.g. ``("g", "i", "r")``).  It may
        name bands in which no object has rows.  None without bands.
    checked : bool
        Whether a builder validated the values (finite, ``dy > 0``); a
        search then skips checking them again. False for the constructor.

    Notes
    -----
    The period searches of one band (Lomb-Scargle, SuperSmoother, ...)
    ignore the bands: they pool the rows of all bands of an object, as if
    the catalog had none.
    """

    ids: np.ndarray
    offsets: np.ndarray
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray | None = None
    n_dropped: int = 0
    band_codes: np.ndarray | None = None
    bands: tuple[Any, ...] | None = None
    checked: bool = False

    def __post_init__(self) -> None:
        ids = _readonly(np.asarray(self.ids))
        offsets = _readonly(np.asarray(self.offsets), np.int64)
        t = _readonly(self.t, np.float64)
        y = _readonly(self.y, np.float64)
        dy = None if self.dy is None else _readonly(self.dy, np.float64)
        _check_structure(ids, offsets, t, y, dy)
        for name, value in (("ids", ids), ("offsets", offsets), ("t", t), ("y", y), ("dy", dy)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "n_dropped", operator.index(self.n_dropped))
        codes, bands = _check_bands(self.band_codes, self.bands, t.size)
        object.__setattr__(self, "band_codes", codes)
        object.__setattr__(self, "bands", bands)

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_arrays(
        cls,
        ids: Any,
        t: Any,
        y: Any,
        dy: Any = None,
        *,
        nan_policy: str = "raise",
        band: Any = None,
        bands: Any = None,
    ) -> Catalog:
        """Build a catalog from long-format columns.

        Parameters
        ----------
        ids : array_like
            ``(n_rows,)`` object id of every row.  The rows of one object must
            be contiguous: objects are the runs of equal ids, in file order.
            Ids must equal themselves (no NaN or None) and be all strings
            or all numbers.
        t, y : array_like
            ``(n_rows,)`` times and values (real numbers; ints are converted).
        dy : array_like, optional
            ``(n_rows,)`` uncertainties, all > 0.
        nan_policy : {"raise", "omit"}
            What to do with rows whose t, y or dy is not finite or masked
            (NumPy masked arrays, astropy ``Masked``): raise a ValueError, or
            drop them (an object may be left with 0 rows).  Dropped rows
            drop their band label too.
        band : array_like, optional
            ``(n_rows,)`` band (filter) label of every row: all strings or
            all integers (integral floats are read as integers).  A missing
            label (None, NaN, masked or ``""``) raises whatever
            ``nan_policy`` is.
        bands : sequence, optional
            The band labels, fixed by the caller (needs ``band``): a label
            of ``band`` not in it raises; bands without rows are kept.  Its
            order is the order of ``bands``; default: the sorted labels
            that occur.

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError
            Complex, boolean, object or string values; ids that mix
            strings and numbers; band labels that mix strings and numbers
            or are neither.
        ValueError
            Non-1-D or mismatched columns, an empty catalog, an id that
            appears in two separate runs, a NaN, None or masked id,
            non-finite or masked values (with ``nan_policy="raise"``),
            ``dy <= 0``, a missing band label or one not in ``bands``;
            messages name the object id, the row index within the object
            and the value.
        """
        _check_nan_policy(nan_policy)
        ids = _as_1d("ids", ids)
        columns, masked = _columns(t, y, dy)
        _check_lengths({"ids": ids, **columns})
        if ids.size == 0:
            raise ValueError("empty catalog: no rows given")
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        run_ids = ids[starts]
        _check_ids(run_ids, starts, "row")
        repeat = _first_repeat(run_ids)
        if repeat is not None:
            first, again = starts[repeat[0]], starts[repeat[1]]
            raise ValueError(
                f"object id {_show(run_ids[repeat[0]])} appears again at row {again} after "
                f"other objects (its first run starts at row {first}); the rows of one "
                "object must be contiguous"
            )
        offsets = np.append(starts, ids.size)
        labels = _band_column(band, bands, ids.size)
        columns, scans = _owned(columns, HOST_POOL.empty)
        return _build(cls, run_ids, offsets, columns, nan_policy, masked, labels, bands, scans)

    @classmethod
    def from_lightcurves(
        cls,
        lightcurves: Iterable[Any],
        ids: Any = None,
        *,
        nan_policy: str = "raise",
        bands: Any = None,
    ) -> Catalog:
        """Build a catalog from separate light curves.

        Parameters
        ----------
        lightcurves : iterable
            Each item is a ``(t, y)``, ``(t, y, dy)`` or ``(t, y, dy, band)``
            tuple (``dy`` may be None; ``band`` is one label for the whole
            light curve or one per row, as for :meth:`from_arrays`), or a pandas
            DataFrame or astropy Table (QTable, TimeSeries) of one light
            curve with columns ``t``, ``y`` and, when present, ``dy`` (read
            as :func:`clperiod.columns.lightcurve_columns` reads them: times,
            units and masks as in :mod:`clperiod.columns`). Every item must
            have uncertainties, or none, and a band, or none.
        ids : array_like, optional
            One unique id per light curve; default ``0 .. K-1``.
        nan_policy : {"raise", "omit"}
            See :meth:`from_arrays`.
        bands : sequence, optional
            The band labels, fixed by the caller: see :meth:`from_arrays`.

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError, ValueError
            As :meth:`from_arrays`; also for items that are not 2-, 3- or
            4-tuples or tables, a mix of items with and without dy or band,
            missing columns, or duplicate ids.
        """
        return _lightcurves_catalog(cls, lightcurves, ids, nan_policy, bands, HOST_POOL.empty)

    @classmethod
    def from_offsets(
        cls,
        ids: Any,
        offsets: Any,
        t: Any,
        y: Any,
        dy: Any = None,
        *,
        nan_policy: str = "raise",
        band: Any = None,
        bands: Any = None,
    ) -> Catalog:
        """Build a catalog from the ragged (CSR) form: ids, row offsets, flat columns.

        This is the layout of a nested (list) column of Arrow/Parquet: the
        offsets of a ``ListArray`` and its flattened children can be passed
        as they are, with no loop over objects.

        Parameters
        ----------
        ids : array_like
            ``(n_objects,)`` unique object ids.
        offsets : array_like of int
            ``(n_objects + 1,)``, from 0 up to the number of rows, never
            decreasing; object ``k`` owns rows ``offsets[k]:offsets[k + 1]``
            (objects with 0 rows are allowed).
        t, y : array_like
            ``(n_rows,)`` times and values.
        dy : array_like, optional
            ``(n_rows,)`` uncertainties, all > 0.
        nan_policy : {"raise", "omit"}
            See :meth:`from_arrays`.
        band : array_like, optional
            ``(n_rows,)`` band labels: see :meth:`from_arrays`.
        bands : sequence, optional
            The band labels, fixed by the caller: see :meth:`from_arrays`.

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError, ValueError
            As :meth:`from_arrays`; also for duplicate ids and offsets that
            do not rise from 0 to the number of rows.
        """
        _check_nan_policy(nan_policy)
        ids = _as_1d("ids", ids).copy()
        offsets = _as_1d("offsets", offsets)
        if offsets.dtype.kind not in "iu":
            raise TypeError(f"offsets must be integers, got dtype {offsets.dtype}")
        columns, masked = _columns(t, y, dy)
        _check_lengths(columns)
        if ids.size == 0:
            raise ValueError("empty catalog: no objects given")
        n_rows = columns["t"].size
        if offsets.shape != (ids.size + 1,):
            raise ValueError(
                f"offsets must have shape ({ids.size + 1},) for {ids.size} ids, "
                f"got {offsets.shape}"
            )
        if offsets[0] != 0 or offsets[-1] != n_rows or np.any(np.diff(offsets) < 0):
            raise ValueError(f"offsets must rise from 0 to the number of rows ({n_rows})")
        _check_ids(ids, np.arange(ids.size), "object")
        _check_unique_ids(ids, "objects")
        labels = _band_column(band, bands, n_rows)
        columns, scans = _owned(columns, HOST_POOL.empty)
        return _build(cls, ids, offsets, columns, nan_policy, masked, labels, bands, scans)

    @classmethod
    def from_single(
        cls,
        t: Any,
        y: Any,
        dy: Any = None,
        *,
        nan_policy: str = "raise",
        id: Any = 0,
        band: Any = None,
        bands: Any = None,
    ) -> Catalog:
        """Build a catalog of one light curve (what the API does for arrays).

        Parameters
        ----------
        t, y : array_like
            Times and values.
        dy : array_like, optional
            Uncertainties, all > 0.
        nan_policy : {"raise", "omit"}
            See :meth:`from_arrays`.
        id : scalar, optional
            The object id, default 0.
        band : scalar or array_like, optional
            The band label of every row, or one label for all rows.
        bands : sequence, optional
            The band labels, fixed by the caller: see :meth:`from_arrays`.

        Returns
        -------
        Catalog
        """
        item: tuple[Any, ...] = (t, y) if dy is None else (t, y, dy)
        if band is not None:
            item = (t, y, dy, band)
        return cls.from_lightcurves([item], ids=[id], nan_policy=nan_policy, bands=bands)

    # ------------------------------------------------------------------ access
    @property
    def n_objects(self) -> int:
        """Number of objects."""
        return self.ids.size

    @property
    def lengths(self) -> np.ndarray:
        """Rows per object, int64."""
        return np.diff(self.offsets)

    @functools.cached_property
    def time_ordered(self) -> bool:
        """Whether the rows of every object are in ascending time order (equal
        times allowed; NaN times compare with nothing). The builders learn it
        while copying the times."""
        falls = np.flatnonzero(self.t[1:] < self.t[:-1]) + 1
        return bool(np.isin(falls, self.offsets).all())

    def __len__(self) -> int:
        return self.n_objects

    def __repr__(self) -> str:
        lengths = self.lengths if self.n_objects else np.zeros(1, dtype=np.int64)
        dropped = f", n_dropped={self.n_dropped}" if self.n_dropped else ""
        bands = "" if self.bands is None else f", bands={list(self.bands)}"
        return (
            f"Catalog(n_objects={self.n_objects}, rows={self.t.size}, "
            f"length=[{lengths.min()}, {lengths.max()}], "
            f"dy={'yes' if self.dy is not None else 'no'}{bands}{dropped})"
        )

    @property
    def n_bands(self) -> int:
        """Number of band labels; 1 for a catalog without bands (one unnamed band)."""
        return 1 if self.bands is None else len(self.bands)

    def lightcurve(self, k: int) -> tuple[Any, ...]:
        """Read-only views ``(t, y, dy)`` of object ``k`` (dy is None if absent),
        and ``band`` (the label of every row) for a catalog with bands.

        The 4-tuple ``(t, y, dy, band)`` is an item of :meth:`from_lightcurves`.

        Parameters
        ----------
        k : int
            Object index, ``0 <= k < n_objects``.
        """
        k = checks.integer("k", k)
        if not 0 <= k < self.n_objects:
            raise IndexError(f"object index {k} out of range for {self.n_objects} objects")
        rows = slice(self.offsets[k], self.offsets[k + 1])
        dy = None if self.dy is None else self.dy[rows]
        if self.band_codes is None:
            return self.t[rows], self.y[rows], dy
        return self.t[rows], self.y[rows], dy, self.band_labels()[self.band_codes[rows]]

    def band_labels(self) -> np.ndarray:
        """The band labels as an array (int64 or str), indexable by ``band_codes``."""
        if self.bands is None:
            raise ValueError("this catalog has no bands")
        return np.asarray(self.bands)

    def band_counts(self) -> np.ndarray:
        """Rows per object and band: an ``(n_objects, n_bands)`` int64 array,
        columns in the order of ``bands`` (one column without bands)."""
        if self.band_codes is None:
            return self.lengths[:, None].copy()
        owner = np.repeat(np.arange(self.n_objects), self.lengths)
        cells = owner * self.n_bands + self.band_codes
        counts = np.bincount(cells, minlength=self.n_objects * self.n_bands)
        return counts.reshape(self.n_objects, self.n_bands).astype(np.int64)

    def select_bands(self, labels: Any) -> Catalog:
        """The rows of the bands ``labels`` (a label or a sequence of labels), as
        a new catalog of the same objects (some may be left with 0 rows).

        Its ``bands`` are ``labels`` in the order of this catalog's bands.

        Raises
        ------
        ValueError
            A catalog without bands, or a label not in ``bands``.
        """
        if self.bands is None or self.band_codes is None:
            raise ValueError("this catalog has no bands to select")
        wanted = [labels] if isinstance(labels, (str, int, np.integer)) else list(labels)
        for label in wanted:
            if label not in self.bands:
                raise ValueError(f"band {label!r} is not one of the bands {list(self.bands)}")
        keep = np.array([label in wanted for label in self.bands])
        recode = np.cumsum(keep) - 1
        rows = keep[self.band_codes]
        owner = np.repeat(np.arange(self.n_objects), self.lengths)
        kept = np.bincount(owner[rows], minlength=self.n_objects)
        return type(self)(
            self.ids,
            np.concatenate(([0], np.cumsum(kept))),
            self.t[rows],
            self.y[rows],
            None if self.dy is None else self.dy[rows],
            self.n_dropped,
            recode[self.band_codes[rows]],
            tuple(label for label, chosen in zip(self.bands, keep, strict=True) if chosen),
        )

    def subset(self, indices: Any) -> Catalog:
        """A new catalog of the objects ``indices`` (ints or a boolean mask), in that order."""
        indices = np.asarray(indices)
        if indices.dtype == bool:
            if indices.shape != (self.n_objects,):
                raise ValueError(f"boolean mask must have shape ({self.n_objects},)")
            indices = np.flatnonzero(indices)
        elif indices.size == 0:
            indices = np.zeros(0, dtype=np.int64)
        indices = indices.astype(np.int64, casting="safe").ravel()
        if indices.size and (indices.min() < 0 or indices.max() >= self.n_objects):
            raise IndexError(f"object indices out of range for {self.n_objects} objects")
        lengths = self.lengths[indices]
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        rows = _ranges(self.offsets[indices], lengths)
        dy = None if self.dy is None else self.dy[rows]
        codes = None if self.band_codes is None else self.band_codes[rows]
        ids = self.ids[indices]
        subset = type(self)(
            ids, offsets, self.t[rows], self.y[rows], dy, 0, codes, self.bands, self.checked
        )
        return _inherit_time_order(subset, self)

    def slice(self, start: int, stop: int) -> Catalog:
        """The objects ``start:stop`` as a catalog of views (no copy)."""
        lo, hi = int(self.offsets[start]), int(self.offsets[stop])
        part = type(self)(
            self.ids[start:stop],
            self.offsets[start : stop + 1] - lo,
            self.t[lo:hi],
            self.y[lo:hi],
            None if self.dy is None else self.dy[lo:hi],
            0,
            None if self.band_codes is None else self.band_codes[lo:hi],
            self.bands,
            self.checked,
        )
        return _inherit_time_order(part, self)

    def page_locked(self, device: Any = None) -> Catalog:
        """The catalog with its ``t``, ``y`` and ``dy`` copied into page-locked
        host memory, which the devices read at the bus speed.

        Lomb-Scargle searches on devices that prepare the points themselves
        (those with fp64: the direct and NUFFT algorithms) then upload these
        columns where they lie instead of first copying them into page-locked
        staging memory on every call; the results are identical. Worth it for
        a catalog searched more than once, or on several GPUs: page-locking
        costs a fraction of a second per GB once, and the staging copy it saves
        is about a fifth of a NUFFT search of long light curves on a GPU.

        Parameters
        ----------
        device
            Device selection (see :func:`clperiod.select_devices`); the memory
            is page-locked through its first device. On NVIDIA's platform it
            serves every GPU (:func:`clperiod.engine.staging.serves`);
            elsewhere the other devices copy from it as from ordinary memory.

        Returns
        -------
        Catalog
            The same objects, bands and known time order. Where the host
            cannot spare the memory or the runtime refuses it, the columns are
            ordinary memory. The memory returns to a pool when the catalog is
            garbage-collected.
        """
        info = select_devices(device)[0]
        return relocated(self, functools.partial(PINNED_POOL.empty, info))

    def baselines(self) -> np.ndarray:
        """Per-object ``max(t) - min(t)``; NaN for objects with 0 rows."""
        low, high = self._t_range()
        return high - low

    def start_times(self) -> np.ndarray:
        """Per-object earliest time ``min(t)``; NaN for objects with 0 rows."""
        return self._t_range()[0]

    def epochs(self) -> np.ndarray:
        """Per-object reference epoch ``0.5 * (min(t) + max(t))``; NaN for 0 rows."""
        low, high = self._t_range()
        return 0.5 * (low + high)

    def _t_range(self) -> tuple[np.ndarray, np.ndarray]:
        low = np.full(self.n_objects, np.nan)
        high = np.full(self.n_objects, np.nan)
        filled = self.lengths > 0
        if filled.any():
            starts = self.offsets[:-1][filled]
            if self.checked and self.time_ordered:  # finite times, ascending
                low[filled] = self.t[starts]
                high[filled] = self.t[self.offsets[1:][filled] - 1]
            else:
                # Empty objects own no rows, so reducing from each non-empty
                # start to the next one covers exactly that object's rows.
                low[filled] = np.minimum.reduceat(self.t, starts)
                high[filled] = np.maximum.reduceat(self.t, starts)
        return low, high


def remembered(catalog: Catalog, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, computed once per ``key`` and remembered for as long as
    ``catalog`` lives (its arrays are read-only), so it can be computed ahead,
    e.g. while a device searches. Thread-safe: two first callers may both
    compute; the first result is kept."""
    with _remembered_lock:
        known = _remembered.setdefault(catalog, {})
        if key in known:
            return known[key]
    value = compute()
    with _remembered_lock:
        return known.setdefault(key, value)


_remembered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_remembered_lock = threading.Lock()


# ---------------------------------------------------------------------- lists
def is_lightcurve_list(value: Any) -> TypeGuard[list | tuple]:
    """Whether ``value`` is a non-empty list or tuple of light curves: tuples
    or lists ``(t, y[, dy[, band]])``, 2-D arrays (rows t, y[, dy]), pandas DataFrames
    or astropy Tables (what :meth:`~clperiod.Catalog.from_lightcurves` takes)."""
    if not isinstance(value, (list, tuple)) or not value:
        return False
    return all(
        isinstance(item, (list, tuple))
        or is_table(item)
        or (isinstance(item, np.ndarray) and item.ndim == 2)
        for item in value
    )


def catalog_of(value: Any, nan_policy: str = "raise", name: str = "catalog") -> Catalog:
    """A Catalog as given, or the catalog of a list of light curves.

    Parameters
    ----------
    value : Catalog or list
        A catalog, or a list of light curves (see
        :meth:`~clperiod.Catalog.from_lightcurves`; ids ``0 .. K-1``).
    nan_policy : {"raise", "omit"}
        For a list: see :meth:`~clperiod.Catalog.from_arrays`.
    name : str
        The argument's name in error messages.

    Raises
    ------
    TypeError
        ``value`` is neither.
    """
    if isinstance(value, Catalog):
        return value
    if is_lightcurve_list(value):
        return Catalog.from_lightcurves(value, nan_policy=nan_policy)
    raise TypeError(
        f"{name} must be a Catalog or a list of (t, y[, dy]) light curves "
        f"(tuples, DataFrames or astropy Tables), got {type(value).__name__}"
    )


def _lightcurve_tuple(item: Any, number: int) -> tuple[Any, ...]:
    """``(t, y)``, ``(t, y, dy)`` or ``(t, y, dy, band)`` of one item of
    :meth:`~clperiod.Catalog.from_lightcurves`."""
    if is_table(item):
        try:
            t, y, dy = lightcurve_columns(item)
        except (TypeError, ValueError) as error:
            raise type(error)(f"light curve {number}: {error}") from None
        return (t, y) if dy is None else (t, y, dy)
    if isinstance(item, (str, bytes)) or not isinstance(item, (Sequence, np.ndarray)):
        raise TypeError(
            f"light curve {number} must be a (t, y) or (t, y, dy) tuple, a "
            f"DataFrame or an astropy Table, got {type(item).__name__}"
        )
    item = tuple(item)
    if len(item) not in (2, 3, 4):
        raise ValueError(
            f"light curve {number} must be a (t, y), (t, y, dy) or (t, y, dy, band) tuple, "
            f"got {len(item)} entries"
        )
    return item


# ---------------------------------------------------------------------- builders
def single_catalog(t: Any, y: Any, dy: Any, nan_policy: str, empty: ColumnMemory) -> Catalog:
    """:meth:`clperiod.Catalog.from_single` (id 0, no bands), its copies of the
    columns in memory of the caller's choice.

    Parameters
    ----------
    t, y, dy, nan_policy
        As for :meth:`clperiod.Catalog.from_single` (``dy`` may be None).
    empty
        ``empty(shape, dtype)`` gives each new column (instead of
        :data:`~clperiod.engine.staging.HOST_POOL`): a search passes page-locked
        memory and uploads the columns from there.

    Returns
    -------
    Catalog
        Checked as by :meth:`clperiod.Catalog.from_single` (same errors);
        :func:`relocated` moves its columns to memory of their own.
    """
    item = (t, y) if dy is None else (t, y, dy)
    return _lightcurves_catalog(Catalog, [item], [0], nan_policy, None, empty)


def relocated(catalog: Catalog, empty: ColumnMemory = HOST_POOL.empty) -> Catalog:
    """``catalog`` with copies of its columns in memory of its own.

    Parameters
    ----------
    catalog
        Any catalog (e.g. of :func:`single_catalog`).
    empty
        ``empty(shape, dtype)`` gives each copy; by default memory of
        :data:`~clperiod.engine.staging.HOST_POOL`.

    Returns
    -------
    Catalog
        The same ids, offsets, bands and known time order; ``t``, ``y`` and
        ``dy`` copied (on several threads) into read-only arrays.
    """

    def copy(column: np.ndarray) -> np.ndarray:
        own = empty(column.shape, column.dtype)
        parallel_copy(own, column)
        own.setflags(write=False)
        return own

    moved = dataclasses.replace(
        catalog,
        t=copy(catalog.t),
        y=copy(catalog.y),
        dy=None if catalog.dy is None else copy(catalog.dy),
    )
    if "time_ordered" in catalog.__dict__:
        _know_time_order(moved, catalog.time_ordered)
    return moved


def _lightcurves_catalog(
    cls, lightcurves: Iterable[Any], ids: Any, nan_policy: str, bands: Any, empty: ColumnMemory
) -> Catalog:
    """:meth:`clperiod.Catalog.from_lightcurves`, whose copies of the columns of a
    single light curve come from ``empty``."""
    _check_nan_policy(nan_policy)
    items = [_lightcurve_tuple(item, number) for number, item in enumerate(lightcurves)]
    if not items:
        raise ValueError("empty catalog: no light curves given")
    ids = np.arange(len(items)) if ids is None else _as_1d("ids", ids).copy()
    if ids.size != len(items):
        raise ValueError(f"got {ids.size} ids for {len(items)} light curves")
    _check_ids(ids, np.arange(ids.size), "light curve")
    _check_unique_ids(ids, "light curves")
    if len({len(item) >= 3 and item[2] is not None for item in items}) > 1:
        raise ValueError("give dy for every light curve or for none")
    if len({len(item) == 4 for item in items}) > 1:
        raise ValueError("give a band for every light curve or for none")
    parts = [_columns(*item[:3]) for item in items]
    for object_id, (part, _) in zip(ids, parts, strict=True):
        _check_lengths(part, f" of object {_show(object_id)}")
    lengths = [part["t"].size for part, _ in parts]
    if sum(lengths) == 0:
        raise ValueError("empty catalog: every light curve has 0 rows")
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    names = parts[0][0]
    if len(parts) == 1:
        columns, scans = _owned(parts[0][0], empty)
    else:
        columns, scans = (
            {name: np.concatenate([p[name] for p, _ in parts]) for name in names},
            {},
        )
    masked = {
        name: np.concatenate([m.get(name, np.zeros(p[name].size, bool)) for p, m in parts])
        for name in names
        if any(name in m for _, m in parts)
    }
    labels = None
    if len(items[0]) == 4:
        labels = _lightcurve_bands(items, lengths, ids)
    elif bands is not None:
        raise ValueError("bands needs a band label in every light curve")
    return _build(cls, ids, offsets, columns, nan_policy, masked, labels, bands, scans)


# ---------------------------------------------------------------------- helpers
def _readonly(array: Any, dtype: type | None = None) -> np.ndarray:
    """``array`` as a read-only C-contiguous array, copied unless already one."""
    array = np.asarray(array)
    done = array.flags.c_contiguous and not array.flags.writeable
    if done and (dtype is None or array.dtype == dtype):
        return array
    out = np.array(array, dtype=dtype, order="C", copy=True)
    out.setflags(write=False)
    return out


def _check_structure(ids, offsets, t, y, dy) -> None:
    if ids.ndim != 1 or t.ndim != 1:
        raise ValueError("ids, t, y and dy must be 1-D")
    if offsets.shape != (ids.size + 1,):
        raise ValueError("offsets must have shape (n_objects + 1,)")
    if offsets[0] != 0 or offsets[-1] != t.size or np.any(np.diff(offsets) < 0):
        raise ValueError("offsets must rise from 0 to the number of rows")
    for name, column in (("y", y), ("dy", dy)):
        if column is not None and column.shape != t.shape:
            raise ValueError(f"{name} has shape {column.shape}, t has {t.shape}")


def _check_nan_policy(nan_policy: str) -> None:
    checks.choice("nan_policy", nan_policy, NAN_POLICIES)


def _check_ids(ids: np.ndarray, positions: np.ndarray, unit: str) -> None:
    """Raise for object ids that cannot identify objects: NaN, None, or a mix
    of strings and numbers (which do not sort together); ``positions[k]`` is
    where id ``k`` is, counted in ``unit``s, for the message."""
    if ids.dtype.kind == "f" and np.isnan(ids).any():
        at = int(positions[np.argmax(np.isnan(ids))])
        raise ValueError(
            f"ids: NaN at {unit} {at} is not an object id (NaN equals nothing); "
            "ids must be integers, strings or other values equal to themselves"
        )
    if ids.dtype.kind != "O":
        return
    kinds: dict[bool, int] = {}
    for k, value in enumerate(ids):
        if value is None or (isinstance(value, float) and value != value):
            raise ValueError(f"ids: missing id ({value!r}) at {unit} {int(positions[k])}")
        kinds.setdefault(isinstance(value, (str, bytes)), k)
    if len(kinds) > 1:
        shown = ", ".join(f"{ids[k]!r} at {unit} {int(positions[k])}" for k in kinds.values())
        raise TypeError(
            f"ids mix strings and other values ({shown}); give every id as a "
            "string or every id as a number"
        )


def mask_of(values: Any) -> np.ndarray | None:
    """The mask of a NumPy masked array or an astropy ``Masked`` array
    (True: masked), else None."""
    if isinstance(values, np.ma.MaskedArray):
        return np.ma.getmaskarray(values)
    masked = sys.modules.get("astropy.utils.masked")
    if masked is not None and isinstance(values, masked.Masked):
        return np.asarray(values.mask)
    return None


def refuse_masked(name: str, values: Any) -> None:
    """Raise a ValueError naming ``name`` if ``values`` has masked entries
    (for functions that evaluate every entry and so cannot leave any out)."""
    mask = mask_of(values)
    if mask is not None and mask.any():
        first = np.argwhere(mask)[0].tolist() if mask.ndim else []
        raise ValueError(
            f"{name} has {int(mask.sum())} masked entries (the first at index "
            f"{first}); this function uses every value: fill them or leave "
            "them out first"
        )


def _as_1d(name: str, values: Any) -> np.ndarray:
    mask = mask_of(values)
    if mask is not None and mask.any():
        raise ValueError(
            f"{name} has a masked entry (at index {int(np.argmax(mask))}); every row needs a value"
        )
    array = np.asarray(values if mask is None else getattr(values, "unmasked", values))
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    return array


def _as_real(name: str, values: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` as float64 1-D (not copied when it is one; masked entries NaN) and
    its mask (None when nothing is masked); ints are accepted, other kinds are not."""
    mask = mask_of(values)
    if mask is not None:
        values = np.ma.getdata(getattr(values, "unmasked", values))
    array = _as_1d(name, values)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, got dtype {array.dtype}")
    if mask is None or not mask.any():
        return np.asarray(array, dtype=np.float64), None
    if mask.shape != array.shape:
        raise ValueError(f"{name} has a mask of shape {mask.shape} for shape {array.shape}")
    return np.where(mask, np.nan, array.astype(np.float64)), mask


def _columns(
    t: Any, y: Any, dy: Any = None
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Validated float64 columns t, y (and dy if given), masked entries NaN,
    and the masks of the columns that have masked entries (the columns may
    be the caller's arrays: see :func:`_owned`)."""
    named = {"t": t, "y": y} if dy is None else {"t": t, "y": y, "dy": dy}
    columns, masked = {}, {}
    for name, values in named.items():
        columns[name], mask = _as_real(name, values)
        if mask is not None:
            masked[name] = mask
    return columns, masked


#: Rows of a column that :func:`_scanned_copy` checks at a time, while they are in
#: cache: 4 MB of float64. Blocks of 2**15 rows made the copy and checks of 10**6 rows
#: three times slower on a 16-core GPU host (9.8 against 3.2 ms) and on 2 cores.
_SCAN_BLOCK = 1 << 19


@dataclass(frozen=True)
class _Scan:
    """What the pass that copied a column saw (:func:`_scanned_copy`).

    Attributes
    ----------
    total : float
        The sum of the values: finite only if every value is (unless finite
        values overflow it).
    least : float
        The smallest value (meaningful when every value is finite).
    falls : ndarray
        The rows ``i > 0`` whose value is below that of row ``i - 1``.
    """

    total: float
    least: float
    falls: np.ndarray


def _owned(
    columns: dict[str, np.ndarray], empty: ColumnMemory
) -> tuple[dict[str, np.ndarray], dict[str, _Scan]]:
    """The catalog's own copies of ``columns`` (in memory from ``empty``) and
    what copying each saw (the falls of t, the least dy)."""
    owned, scans = {}, {}
    for name, column in columns.items():
        owned[name], scans[name] = _scanned_copy(
            column, empty(column.shape, np.float64), least=name == "dy", falls=name == "t"
        )
    return owned, scans


def _scanned_copy(
    source: np.ndarray, copy: np.ndarray, least: bool, falls: bool
) -> tuple[np.ndarray, _Scan]:
    """``copy`` filled with the float64 ``source``, and its :class:`_Scan`, in one pass on
    several threads: each block of :data:`_SCAN_BLOCK` rows is summed (and,
    if asked, its minimum taken and its falls found) while it is still in
    cache (a separate pass over a long column costs as much as the copy);
    ``least`` is infinite and ``falls`` empty when not asked for."""
    parts: list[tuple[int, float, float, list[np.ndarray]]] = []

    def scan(lo: int, hi: int) -> None:
        total, smallest, found = 0.0, np.inf, []
        with np.errstate(over="ignore", invalid="ignore"):  # per thread
            for start in range(lo, hi, _SCAN_BLOCK):
                stop = min(start + _SCAN_BLOCK, hi)
                block = copy[start:stop]
                np.copyto(block, source[start:stop])
                total += np.add.reduce(block)
                if least:
                    smallest = min(smallest, np.minimum.reduce(block))
                first = max(start, lo + 1)  # rows compared with the one before
                if falls and first < stop:
                    down = np.flatnonzero(copy[first:stop] < copy[first - 1 : stop - 1])
                    if down.size:
                        found.append(down + first)
        parts.append((lo, float(total), float(smallest), found))  # list.append is atomic

    in_parts(copy.size, scan)
    parts.sort(key=lambda part: part[0])
    rows = [np.zeros(0, dtype=np.int64)]
    if falls:  # the first row of each part against the last of the one before
        starts = np.array([part[0] for part in parts[1:]], dtype=np.int64)
        rows += [starts[copy[starts] < copy[starts - 1]]] + [r for p in parts for r in p[3]]
    total = sum(part[1] for part in parts)
    smallest = min(part[2] for part in parts)
    return copy, _Scan(total, smallest, np.sort(np.concatenate(rows)))


def _check_lengths(columns: dict[str, np.ndarray], where: str = "") -> None:
    sizes = {name: array.size for name, array in columns.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{name}={size}" for name, size in sizes.items())
        raise ValueError(f"mismatched lengths{where}: {shown}")


def _check_unique_ids(ids: np.ndarray, items: str) -> None:
    """Raise unless every id is unique, naming the first repeated one and its ``items``."""
    repeat = _first_repeat(ids)
    if repeat is not None:
        raise ValueError(
            f"duplicate object id {_show(ids[repeat[0]])} ({items} {repeat[0]} and {repeat[1]})"
        )


def _first_repeat(values: np.ndarray) -> tuple[int, int] | None:
    """Positions ``(i, j)``, ``i < j``, of the first value that occurs twice, or None."""
    _, first, counts = np.unique(values, return_index=True, return_counts=True)
    if np.all(counts == 1):
        return None
    i = int(first[counts > 1].min())
    j = int(np.flatnonzero(values == values[i])[1])
    return i, j


def _build(
    cls,
    ids,
    offsets,
    columns,
    nan_policy: str,
    masked: dict[str, np.ndarray] | None = None,
    labels: BandLabels | None = None,
    bands: Any = None,
    scans: dict[str, _Scan] | None = None,
) -> Catalog:
    """Validate the values of flat columns, apply ``nan_policy`` (to non-finite
    and ``masked`` entries, which are NaN in ``columns``) and make the catalog
    (with the band ``labels`` of the rows coded in the band set ``bands``);
    ``scans``: what copying the columns saw (:func:`_owned`), if they were."""
    offsets = np.asarray(offsets, dtype=np.int64)
    codes, band_set = (None, None) if labels is None else _band_codes(labels, bands, ids, offsets)
    scans = scans or {}
    all_finite = all(_all_finite(column, scans.get(name)) for name, column in columns.items())
    finite = (
        np.ones(0, dtype=bool)  # not read when all_finite
        if all_finite
        else np.logical_and.reduce([np.isfinite(column) for column in columns.values()])
    )
    if nan_policy == "raise" and not all_finite:
        for name, mask in (masked or {}).items():
            _raise_at(
                f"masked {name} in",
                mask,
                columns[name],
                ids,
                offsets,
                "; nan_policy='omit' leaves masked rows out",
            )
        for name, column in columns.items():
            _raise_at(f"non-finite {name} in", ~np.isfinite(column), column, ids, offsets)
    if "dy" in columns:
        dy = columns["dy"]
        least = scans["dy"].least if "dy" in scans else dy.min(initial=np.inf)
        if not (all_finite and least > 0):
            bad = (dy <= 0) if all_finite else finite & (dy <= 0)
            _raise_at("dy <= 0 in", bad, dy, ids, offsets)
    n_dropped = 0 if all_finite else int(finite.size - np.count_nonzero(finite))
    if n_dropped:
        owner = np.repeat(np.arange(ids.size), np.diff(offsets))
        kept = np.bincount(owner[finite], minlength=ids.size)
        offsets = np.concatenate(([0], np.cumsum(kept)))
        columns = {name: column[finite] for name, column in columns.items()}
        codes = None if codes is None else codes[finite]
    for column in columns.values():
        column.setflags(write=False)  # our own copies: lock them instead of copying again
    dy = columns.get("dy")
    catalog = cls(ids, offsets, columns["t"], columns["y"], dy, n_dropped, codes, band_set, True)
    if "t" in scans and not n_dropped:
        _know_time_order(catalog, bool(np.isin(scans["t"].falls, offsets).all()))
    return catalog


def _know_time_order(catalog: Catalog, ordered: bool) -> None:
    """Set :attr:`Catalog.time_ordered` (a builder learnt it while copying the times)."""
    object.__setattr__(catalog, "time_ordered", ordered)


def _inherit_time_order(part: Catalog, whole: Catalog) -> Catalog:
    """``part`` (whole objects of ``whole``, rows in their order), knowing
    its rows ascend in time when ``whole``'s are known to."""
    if whole.__dict__.get("time_ordered"):
        _know_time_order(part, True)
    return part


def _all_finite(column: np.ndarray, scan: _Scan | None = None) -> bool:
    """Whether every value of ``column`` is finite: its sum (``scan``'s, if
    given) is finite only then (one pass, no mask), unless finite values overflow it."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(column) if scan is None else scan.total
        if np.isfinite(total):
            return True
    return bool(np.isfinite(column).all())


def _raise_at(
    what: str, bad: np.ndarray, column: np.ndarray, ids, offsets, note: str = ""
) -> None:
    """Raise a ValueError naming the first bad row by object id and index within
    it (and its value, unless a ``note`` is given instead)."""
    if not bad.any():
        return
    row = int(np.argmax(bad))
    k = int(np.searchsorted(offsets, row, side="right")) - 1
    shown = note or f": {float(column[row])!r}"
    raise ValueError(
        f"{what} object {_show(ids[k])} at row {row - offsets[k]} of that object "
        f"(row {row} overall){shown}"
    )


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + n)`` for every (start, length)."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    shift = np.repeat(starts - (ends - lengths), lengths)
    return np.arange(total, dtype=np.int64) + shift


def _show(object_id: Any) -> str:
    """``repr`` of an id as a plain Python value."""
    return repr(object_id.item() if isinstance(object_id, np.generic) else object_id)


# ---------------------------------------------------------------------- bands
MAX_BANDS = int(np.iinfo(np.int16).max)


@dataclass(frozen=True)
class BandLabels:
    """Band labels of rows as read: ``values`` (int64 or str; a placeholder
    where ``missing``) and ``missing`` (None, NaN, masked or empty labels)."""

    values: np.ndarray
    missing: np.ndarray


def _band_column(band: Any, bands: Any, n_rows: int) -> BandLabels | None:
    """The labels of the ``band`` argument of a builder (None without one)."""
    if band is None:
        if bands is not None:
            raise ValueError("bands fixes the band labels but no band column was given")
        return None
    labels = read_band_labels("band", band)
    if labels.values.size != n_rows:
        raise ValueError(f"mismatched lengths: band={labels.values.size}, t={n_rows}")
    return labels


def _lightcurve_bands(items: list[tuple[Any, ...]], lengths: list[int], ids) -> BandLabels:
    """The band labels of the 4-tuples of :meth:`Catalog.from_lightcurves`, joined."""
    parts: list[BandLabels] = []
    kinds: dict[bool, int] = {}
    for number, (item, length) in enumerate(zip(items, lengths, strict=True)):
        where = f"band of light curve {number} (object {_show(ids[number])})"
        value = item[3]
        if np.ndim(value) == 0 and not isinstance(value, np.ma.MaskedArray):
            labels = read_band_labels(where, np.array([value], dtype=object))
            labels = BandLabels(
                np.repeat(labels.values, length), np.repeat(labels.missing, length)
            )
        else:
            labels = read_band_labels(where, value)
            if labels.values.size != length:
                raise ValueError(f"{where} has {labels.values.size} labels for {length} rows")
        kinds.setdefault(labels.values.dtype.kind == "U", number)
        parts.append(labels)
    if len(kinds) > 1:
        raise TypeError(
            "band labels mix strings (light curve "
            f"{kinds[True]}) and integers (light curve {kinds[False]})"
        )
    return BandLabels(
        np.concatenate([part.values for part in parts]),
        np.concatenate([part.missing for part in parts]),
    )


def read_band_labels(name: str, values: Any) -> BandLabels:
    """Band labels as int64 or str, and where they are missing.

    Parameters
    ----------
    name : str
        The argument's name in error messages.
    values : array_like
        1-D labels: integers, integral floats (NaN: missing), strings (``""``:
        missing) or objects of those (None, NaN, ``pandas.NA``: missing);
        masked entries are missing.

    Raises
    ------
    TypeError
        Labels of another kind (bool, non-integral float, ...) or a mix of
        strings and numbers.
    ValueError
        ``values`` is not 1-D.
    """
    mask = mask_of(values)
    if mask is not None:
        values = np.ma.getdata(getattr(values, "unmasked", values))
    # a list of strings and numbers would become strings: read it item by item
    array = np.asarray(values, dtype=object if isinstance(values, (list, tuple)) else None)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if array.dtype.kind == "O":
        array, missing = _object_labels(name, array)
    else:
        missing = np.zeros(array.size, dtype=bool)
    kind = array.dtype.kind
    if kind in "iu":
        labels = array.astype(np.int64)
    elif kind == "f":
        missing = missing | ~np.isfinite(array)
        labels = _integral(name, np.where(missing, 0.0, array))
    elif kind in "US":
        labels = array.astype(str)
        missing = missing | (labels == "")
    else:
        raise TypeError(f"{name} labels must be strings or integers, got dtype {array.dtype}")
    if mask is not None:
        missing = missing | np.asarray(mask, dtype=bool)
    return BandLabels(labels, missing)


def _integral(name: str, values: np.ndarray) -> np.ndarray:
    """Float labels as int64; raise for one that is not a whole number."""
    fraction = values != np.round(values)
    if fraction.any():
        row = int(np.argmax(fraction))
        raise TypeError(
            f"{name} labels must be strings or integers, got {float(values[row])!r} at row {row}"
        )
    return values.astype(np.int64)


def _object_labels(name: str, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Object labels as an str or float array (NaN where missing), and the missing ones."""
    first: dict[Any, int] = {}
    inverse = np.fromiter(
        (first.setdefault(_label_key(v), row) for row, v in enumerate(array)),
        dtype=np.int64,
        count=array.size,
    )
    kinds: dict[str, int] = {}
    for key, row in first.items():
        kinds.setdefault(_label_kind(name, key[1], row), row)
    if "str" in kinds and "number" in kinds:
        raise TypeError(
            f"{name} labels mix strings (row {kinds['str']}) and numbers "
            f"(row {kinds['number']}); give every label as a string or every one as an integer"
        )
    missing = np.isin(inverse, [row for key, row in first.items() if _is_missing(key[1])])
    if "str" in kinds:
        filled = np.where(missing, "", array)
        return filled.astype(str), missing
    filled = np.where(missing, np.nan, array)
    return filled.astype(np.float64), missing


def _label_key(value: Any) -> tuple[str, Any]:
    """A dict key for a label: the type name keeps 1, 1.0 and True apart."""
    try:
        hash(value)
    except TypeError:
        return (type(value).__name__, id(value))
    return (type(value).__name__, value)


def _is_missing(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, (float, np.floating)) and not np.isfinite(value))
        or type(value).__name__ == "NAType"
    )


def _label_kind(name: str, value: Any, row: int) -> str:
    """A label's kind, "str", "number" or "missing"; raise for a value that is no label."""
    if _is_missing(value):
        return "missing"
    if isinstance(value, (str, np.str_)):
        return "str"
    if isinstance(value, (int, np.integer, float, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        return "number"
    raise TypeError(
        f"{name} labels must be strings or integers, got {value!r} "
        f"({type(value).__name__}) at row {row}"
    )


def fixed_bands(bands: Any) -> tuple[Any, ...]:
    """The caller's band set (a sequence of labels) as a tuple of Python labels,
    checked: at least one label, none missing or repeated."""
    if isinstance(bands, (str, bytes)):
        raise TypeError(f"bands must be a sequence of labels, got the string {bands!r}")
    labels = read_band_labels("bands", np.asarray(list(bands), dtype=object))
    if labels.values.size == 0:
        raise ValueError("bands must name at least one band")
    if labels.missing.any():
        raise ValueError(f"bands: missing label at position {int(np.argmax(labels.missing))}")
    repeat = _first_repeat(labels.values)
    if repeat is not None:
        raise ValueError(
            f"bands: duplicate label {_show(labels.values[repeat[0]])} "
            f"(positions {repeat[0]} and {repeat[1]})"
        )
    return tuple(value.item() for value in labels.values)


def _band_codes(labels: BandLabels, bands: Any, ids, offsets) -> tuple[np.ndarray, tuple]:
    """The int16 code of every row and the band labels (``bands``, or the sorted labels)."""
    _raise_at(
        "missing band label in",
        labels.missing,
        labels.values,
        ids,
        offsets,
        "; every row needs a band label",
    )
    present, inverse = np.unique(labels.values, return_inverse=True)
    if bands is None:
        band_set = tuple(value.item() for value in present)
        codes = inverse
    else:
        band_set = fixed_bands(bands)
        position = {label: k for k, label in enumerate(band_set)}
        table = np.array([position.get(value.item(), -1) for value in present], dtype=np.int64)
        unknown = table[inverse] < 0
        if unknown.any():
            _raise_at(
                f"band label {_show(labels.values[np.argmax(unknown)])} (not in bands "
                f"{list(band_set)}) in",
                unknown,
                labels.values,
                ids,
                offsets,
                "; add it to bands or leave the row out",
            )
        codes = table[inverse]
    if len(band_set) > MAX_BANDS:
        raise ValueError(f"{len(band_set)} band labels; at most {MAX_BANDS} are supported")
    return codes.astype(np.int16), band_set


def _check_bands(
    codes: Any, bands: Any, n_rows: int
) -> tuple[np.ndarray | None, tuple[Any, ...] | None]:
    """The ``band_codes`` and ``bands`` fields, checked: both or neither."""
    if codes is None and bands is None:
        return None, None
    if codes is None or bands is None:
        raise ValueError("band_codes and bands must be given together")
    band_set = tuple(value.item() if isinstance(value, np.generic) else value for value in bands)
    if not 0 < len(band_set) <= MAX_BANDS:
        raise ValueError(f"bands must have 1 to {MAX_BANDS} labels, got {len(band_set)}")
    if len(set(band_set)) != len(band_set):
        raise ValueError(f"bands must be distinct labels, got {list(band_set)}")
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu":
        raise TypeError(f"band_codes must be integers, got dtype {codes.dtype}")
    if codes.shape != (n_rows,):
        raise ValueError(f"band_codes has shape {codes.shape}, t has ({n_rows},)")
    if codes.size and (codes.min() < 0 or codes.max() >= len(band_set)):
        raise ValueError(f"band_codes must lie in [0, {len(band_set)})")
    return _readonly(codes, np.int16), band_set
