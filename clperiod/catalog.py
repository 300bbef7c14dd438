"""The one data model of clperiod: a ragged catalog of light curves.

A :class:`Catalog` holds ``n_objects`` light curves as flat float64 arrays
``t``, ``y`` and (optionally) ``dy`` plus an ``offsets`` array: the rows of
object ``k`` are ``offsets[k]:offsets[k + 1]``.  A single light curve is a
catalog of one object, so every algorithm has one data path.

All host arrays are C-contiguous, read-only copies of the caller's data:
inputs are never mutated and a catalog cannot be changed after it is built.
"""

from __future__ import annotations

import enum
import operator
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np

from clperiod import checks
from clperiod.columns import is_table, lightcurve_columns

NAN_POLICIES = ("raise", "omit")


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
    """

    ids: np.ndarray
    offsets: np.ndarray
    t: np.ndarray
    y: np.ndarray
    dy: np.ndarray | None = None
    n_dropped: int = 0

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
            drop them (an object may be left with 0 rows).

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError
            Complex, boolean, object or string values; ids that mix
            strings and numbers.
        ValueError
            Non-1-D or mismatched columns, an empty catalog, an id that
            appears in two separate runs, a NaN, None or masked id,
            non-finite or masked values (with ``nan_policy="raise"``) or
            ``dy <= 0``; messages name the object id, the row index within
            the object and the value.
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
        return _build(cls, run_ids, offsets, columns, nan_policy, masked)

    @classmethod
    def from_lightcurves(
        cls,
        lightcurves: Iterable[Any],
        ids: Any = None,
        *,
        nan_policy: str = "raise",
    ) -> Catalog:
        """Build a catalog from separate light curves.

        Parameters
        ----------
        lightcurves : iterable
            Each item is a ``(t, y)`` or ``(t, y, dy)`` tuple, or a pandas
            DataFrame or astropy Table (QTable, TimeSeries) of one light
            curve with columns ``t``, ``y`` and, when present, ``dy`` (read
            as :func:`clperiod.columns.lightcurve_columns` reads them: times,
            units and masks as in :mod:`clperiod.columns`). Every item must
            have uncertainties, or none.
        ids : array_like, optional
            One unique id per light curve; default ``0 .. K-1``.
        nan_policy : {"raise", "omit"}
            See :meth:`from_arrays`.

        Returns
        -------
        Catalog

        Raises
        ------
        TypeError, ValueError
            As :meth:`from_arrays`; also for items that are not 2- or
            3-tuples or tables, a mix of items with and without dy, missing
            columns, or duplicate ids.
        """
        _check_nan_policy(nan_policy)
        items = [_lightcurve_tuple(item, number) for number, item in enumerate(lightcurves)]
        if not items:
            raise ValueError("empty catalog: no light curves given")
        ids = np.arange(len(items)) if ids is None else _as_1d("ids", ids).copy()
        if ids.size != len(items):
            raise ValueError(f"got {ids.size} ids for {len(items)} light curves")
        _check_ids(ids, np.arange(ids.size), "light curve")
        repeat = _first_repeat(ids)
        if repeat is not None:
            raise ValueError(
                f"duplicate object id {_show(ids[repeat[0]])} (light curves {repeat[0]} "
                f"and {repeat[1]})"
            )
        if len({len(item) == 3 and item[2] is not None for item in items}) > 1:
            raise ValueError("give dy for every light curve or for none")
        parts = [_columns(*item, copy=False) for item in items]  # concatenate copies
        for object_id, (part, _) in zip(ids, parts, strict=True):
            _check_lengths(part, f" of object {_show(object_id)}")
        lengths = [part["t"].size for part, _ in parts]
        if sum(lengths) == 0:
            raise ValueError("empty catalog: every light curve has 0 rows")
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        names = parts[0][0]
        columns = {name: np.concatenate([p[name] for p, _ in parts]) for name in names}
        masked = {
            name: np.concatenate([m.get(name, np.zeros(p[name].size, bool)) for p, m in parts])
            for name in names
            if any(name in m for _, m in parts)
        }
        return _build(cls, ids, offsets, columns, nan_policy, masked)

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
        repeat = _first_repeat(ids)
        if repeat is not None:
            raise ValueError(
                f"duplicate object id {_show(ids[repeat[0]])} "
                f"(objects {repeat[0]} and {repeat[1]})"
            )
        return _build(cls, ids, offsets, columns, nan_policy, masked)

    @classmethod
    def from_single(
        cls,
        t: Any,
        y: Any,
        dy: Any = None,
        *,
        nan_policy: str = "raise",
        id: Any = 0,
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

        Returns
        -------
        Catalog
        """
        item = (t, y) if dy is None else (t, y, dy)
        return cls.from_lightcurves([item], ids=[id], nan_policy=nan_policy)

    # ------------------------------------------------------------------ access
    @property
    def n_objects(self) -> int:
        """Number of objects."""
        return self.ids.size

    @property
    def lengths(self) -> np.ndarray:
        """Rows per object, int64."""
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return self.n_objects

    def __repr__(self) -> str:
        lengths = self.lengths if self.n_objects else np.zeros(1, dtype=np.int64)
        dropped = f", n_dropped={self.n_dropped}" if self.n_dropped else ""
        return (
            f"Catalog(n_objects={self.n_objects}, rows={self.t.size}, "
            f"length=[{lengths.min()}, {lengths.max()}], "
            f"dy={'yes' if self.dy is not None else 'no'}{dropped})"
        )

    def lightcurve(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Read-only views ``(t, y, dy)`` of object ``k`` (dy is None if absent).

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
        return self.t[rows], self.y[rows], dy

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
        return type(self)(self.ids[indices], offsets, self.t[rows], self.y[rows], dy)

    def slice(self, start: int, stop: int) -> Catalog:
        """The objects ``start:stop`` as a catalog of views (no copy)."""
        lo, hi = int(self.offsets[start]), int(self.offsets[stop])
        return type(self)(
            self.ids[start:stop],
            self.offsets[start : stop + 1] - lo,
            self.t[lo:hi],
            self.y[lo:hi],
            None if self.dy is None else self.dy[lo:hi],
        )

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
            # Empty objects own no rows, so reducing from each non-empty start
            # to the next one covers exactly that object's rows.
            starts = self.offsets[:-1][filled]
            low[filled] = np.minimum.reduceat(self.t, starts)
            high[filled] = np.maximum.reduceat(self.t, starts)
        return low, high


# ---------------------------------------------------------------------- lists
def is_lightcurve_list(value: Any) -> TypeGuard[list | tuple]:
    """Whether ``value`` is a non-empty list or tuple of light curves: tuples
    or lists ``(t, y[, dy])``, 2-D arrays (rows t, y[, dy]), pandas DataFrames
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
    """``(t, y)`` or ``(t, y, dy)`` of one item of :meth:`~clperiod.Catalog.from_lightcurves`."""
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
    if len(item) not in (2, 3):
        raise ValueError(
            f"light curve {number} must be a (t, y) or (t, y, dy) tuple, got {len(item)} entries"
        )
    return item


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


def _as_real(name: str, values: Any, copy: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """``values`` as float64 1-D (a copy if ``copy``; masked entries NaN) and
    its mask (None when nothing is masked); ints are accepted, other kinds are not."""
    mask = mask_of(values)
    if mask is not None:
        values = np.ma.getdata(getattr(values, "unmasked", values))
    array = _as_1d(name, values)
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, got dtype {array.dtype}")
    if mask is None or not mask.any():
        return np.array(array, dtype=np.float64, order="C", copy=True if copy else None), None
    if mask.shape != array.shape:
        raise ValueError(f"{name} has a mask of shape {mask.shape} for shape {array.shape}")
    return np.where(mask, np.nan, array.astype(np.float64)), mask


def _columns(
    t: Any, y: Any, dy: Any = None, *, copy: bool = True
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Validated float64 columns t, y (and dy if given), masked entries NaN,
    and the masks of the columns that have masked entries."""
    named = {"t": t, "y": y} if dy is None else {"t": t, "y": y, "dy": dy}
    columns, masked = {}, {}
    for name, values in named.items():
        columns[name], mask = _as_real(name, values, copy)
        if mask is not None:
            masked[name] = mask
    return columns, masked


def _check_lengths(columns: dict[str, np.ndarray], where: str = "") -> None:
    sizes = {name: array.size for name, array in columns.items()}
    if len(set(sizes.values())) > 1:
        shown = ", ".join(f"{name}={size}" for name, size in sizes.items())
        raise ValueError(f"mismatched lengths{where}: {shown}")


def _first_repeat(values: np.ndarray) -> tuple[int, int] | None:
    """Positions ``(i, j)``, ``i < j``, of the first value that occurs twice, or None."""
    _, first, counts = np.unique(values, return_index=True, return_counts=True)
    if np.all(counts == 1):
        return None
    i = int(first[counts > 1].min())
    j = int(np.flatnonzero(values == values[i])[1])
    return i, j


def _build(
    cls, ids, offsets, columns, nan_policy: str, masked: dict[str, np.ndarray] | None = None
) -> Catalog:
    """Validate the values of flat columns, apply ``nan_policy`` (to non-finite
    and ``masked`` entries, which are NaN in ``columns``) and make the catalog."""
    offsets = np.asarray(offsets, dtype=np.int64)
    finite = np.logical_and.reduce([np.isfinite(column) for column in columns.values()])
    all_finite = bool(finite.all())
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
        _raise_at("dy <= 0 in", (dy <= 0) if all_finite else finite & (dy <= 0), dy, ids, offsets)
    n_dropped = 0 if all_finite else int(finite.size - np.count_nonzero(finite))
    if n_dropped:
        owner = np.repeat(np.arange(ids.size), np.diff(offsets))
        kept = np.bincount(owner[finite], minlength=ids.size)
        offsets = np.concatenate(([0], np.cumsum(kept)))
        columns = {name: column[finite] for name, column in columns.items()}
    for column in columns.values():
        column.setflags(write=False)  # our own copies: lock them instead of copying again
    return cls(ids, offsets, columns["t"], columns["y"], columns.get("dy"), n_dropped)


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
