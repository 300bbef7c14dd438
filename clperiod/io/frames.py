"""Catalogs from in-memory tables: pandas DataFrames and astropy Tables.

Both take long-format tables (one row per observation, the rows of one object
contiguous, or ``sort=True``); a DataFrame may instead hold one row per object
with a nested ``list<struct>`` column (``nested_col``, the nested-pandas
layout).

Times and units (the catalog itself holds plain float64 numbers):

* numbers are used as they are; frequencies are then in cycles per that unit;
* astropy ``Time`` columns become MJD (days) in the TDB scale by default
  (``time_scale``): one uniform scale, so time differences, which periods
  depend on, carry no leap seconds;
* ``TimeDelta`` columns and time ``Quantity`` columns become days;
* ``datetime64`` columns (pandas timestamps, Arrow timestamps in files) become
  MJD counted on their own time line (UTC without leap seconds, as NumPy and
  pandas count); time-zone aware ones are converted to UTC first;
* ``y`` loses its unit and ``dy`` is first converted to the unit of ``y``
  (to ``mag`` for magnitude units such as ``ABmag``), so both stay consistent;
  a ``dy`` without a unit next to a ``y`` with one is an error, as in astropy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clperiod.catalog import Catalog

__all__ = ["catalog_from_dataframe", "catalog_from_table", "lightcurve_columns",
           "mjd_from_datetime64"]

#: MJD 0 on the NumPy time line.
_MJD_ZERO = np.datetime64("1858-11-17T00:00:00", "ns")


def catalog_from_dataframe(
    frame: Any,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = None,
    *,
    nested_col: str | None = None,
    sort: bool = False,
    nan_policy: str = "raise",
) -> Catalog:
    """Build a catalog from a pandas DataFrame.

    Parameters
    ----------
    frame : pandas.DataFrame
        Long format (one row per observation), or one row per object with a
        nested column (``nested_col``).
    id_col : str
        Object id column; the index is used when it has this name.
    t_col, y_col : str
        Time and value columns (fields of ``nested_col`` when given). Times
        may be numbers or ``datetime64`` (converted to MJD, see the module
        notes).
    dy_col : str, optional
        Uncertainty column; None reads none.
    nested_col : str, optional
        A column of Arrow ``list<struct>`` values (``pd.ArrowDtype``, as
        nested-pandas stores light curves) holding the observations of each
        row's object.
    sort : bool
        Long format: stable-sort the rows by id first (objects then follow
        the sorted ids).
    nan_policy : {"raise", "omit"}
        See :meth:`Catalog.from_arrays`.

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        A missing column (the message lists the columns found), a value that
        is not a number (named by column and row label), or the checks of
        :class:`Catalog`.
    """
    labels = frame.index
    series = _frame_column(frame, id_col)
    ids = _present_ids(series.to_numpy(), series.isna().to_numpy(), id_col, labels)
    if nested_col is not None:
        import pyarrow as pa

        from clperiod.io.readers import nested_to_catalog

        require_columns([nested_col], list(frame.columns))
        fields = {"t": t_col, "y": y_col} | ({"dy": dy_col} if dy_col else {})
        return nested_to_catalog(ids, pa.array(frame[nested_col]), fields, nan_policy=nan_policy,
                                 where=f"DataFrame column {nested_col!r}")
    columns = {}
    for name, col in (("t", t_col), ("y", y_col), ("dy", dy_col)):
        if col is None:
            continue
        columns[name] = _numbers(_frame_column(frame, col), col, labels, times=name == "t")
    return _long_catalog(ids, columns, sort, nan_policy)


def catalog_from_table(
    table: Any,
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = None,
    *,
    time_scale: str | None = "tdb",
    sort: bool = False,
    nan_policy: str = "raise",
) -> Catalog:
    """Build a catalog from an astropy Table, QTable or TimeSeries (long format).

    Parameters
    ----------
    table : astropy.table.Table
        One row per observation. For a ``TimeSeries`` pass ``t_col="time"``.
    id_col, t_col, y_col : str
        Object id, time and value columns.
    dy_col : str, optional
        Uncertainty column; None reads none.
    time_scale : str or None
        Scale in which ``Time`` columns are expressed as MJD (``"tdb"``,
        ``"tai"``, ``"tt"``, ``"utc"``, ...); None keeps each column's own
        scale.
    sort : bool
        Stable-sort the rows by id first.
    nan_policy : {"raise", "omit"}
        See :meth:`Catalog.from_arrays`. Masked entries count as NaN.

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        A missing column, a time column with a non-time unit, ``dy`` whose
        unit does not convert to that of ``y`` (or has none while ``y`` has
        one), or the checks of :class:`Catalog`.
    """
    names = list(table.colnames)
    require_columns([c for c in (id_col, t_col, y_col, dy_col) if c is not None], names)
    ids = np.asarray(table[id_col])  # masked entries hold some value: check the mask
    missing = np.ma.getmaskarray(table[id_col])
    if ids.dtype.kind == "f":
        missing = missing | np.isnan(ids)
    ids = _present_ids(ids, missing, id_col, range(len(table)))
    columns = {"t": _table_times(table[t_col], t_col, time_scale)}
    y_unit = _unit(table[y_col])
    columns["y"] = _plain(table[y_col], y_col)
    if dy_col is not None:
        columns["dy"] = _uncertainties(table[dy_col], dy_col, y_unit, y_col)
    return _long_catalog(ids, columns, sort, nan_policy)


def lightcurve_columns(
    table: Any,
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = "auto",
    *,
    time_scale: str | None = "tdb",
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The float64 ``t``, ``y`` and ``dy`` of one light curve in a table.

    Parameters
    ----------
    table : pandas.DataFrame or astropy.table.Table
        One row per observation of one object.
    t_col, y_col : str
        Time and value columns (converted as in :func:`catalog_from_dataframe`
        and :func:`catalog_from_table`: datetimes and ``Time`` to MJD, units
        dropped, masked entries NaN).
    dy_col : str or None
        Uncertainty column; ``"auto"`` (default): ``dy`` when the table has
        it; None: none.
    time_scale : str or None
        For ``Time`` columns of astropy tables, as in :func:`catalog_from_table`.

    Returns
    -------
    t, y : ndarray
    dy : ndarray or None

    Raises
    ------
    TypeError
        ``table`` is neither a DataFrame nor an astropy Table.
    ValueError
        A missing column or a value that is not a number.
    """
    from clperiod.catalog import _is_table

    if not _is_table(table):
        raise TypeError(f"expected a pandas DataFrame or an astropy Table, got "
                        f"{type(table).__name__}")
    if hasattr(table, "colnames"):
        return _table_lightcurve(table, t_col, y_col, dy_col, time_scale)
    return _frame_lightcurve(table, t_col, y_col, dy_col)


def _frame_lightcurve(frame: Any, t_col: str, y_col: str,
                      dy_col: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if dy_col == "auto":
        dy_col = "dy" if "dy" in frame.columns else None
    labels = frame.index
    t, y, dy = (None if col is None
                else _numbers(_frame_column(frame, col), col, labels, times=role == "t")
                for role, col in (("t", t_col), ("y", y_col), ("dy", dy_col)))
    return t, y, dy


def _table_lightcurve(table: Any, t_col: str, y_col: str, dy_col: str | None,
                      time_scale: str | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    names = list(table.colnames)
    if dy_col == "auto":
        dy_col = "dy" if "dy" in names else None
    require_columns([c for c in (t_col, y_col, dy_col) if c is not None], names)
    t = _table_times(table[t_col], t_col, time_scale)
    y = _plain(table[y_col], y_col)
    dy = (None if dy_col is None
          else _uncertainties(table[dy_col], dy_col, _unit(table[y_col]), y_col))
    return t, y, dy


def mjd_from_datetime64(values: Any) -> np.ndarray:
    """Modified Julian Dates (float64 days) of ``datetime64`` values; NaT gives NaN."""
    values = np.asarray(values)
    if values.dtype.kind != "M":
        raise TypeError(f"expected datetime64 values, got dtype {values.dtype}")
    return (values.astype("datetime64[ns]") - _MJD_ZERO) / np.timedelta64(1, "D")


# ---------------------------------------------------------------------- helpers


def require_columns(names: list[str], found: list[str], where: str = "the table") -> None:
    """Raise a ValueError naming the ``names`` absent from ``found`` (in ``where``), or
    found more than once."""
    absent = [name for name in names if name not in found]
    if absent:
        raise ValueError(f"no column(s) {absent} in {where}; it has columns {found}")
    repeated = sorted({name for name in names if list(found).count(name) > 1})
    if repeated:
        raise ValueError(f"more than one column named {repeated} in {where}; it has columns "
                         f"{found}")


def _present_ids(ids: np.ndarray, missing: np.ndarray, name: str, labels: Any) -> np.ndarray:
    """``ids``, or a ValueError naming the first row whose id is ``missing``."""
    if missing.any():
        row = int(np.argmax(missing))
        raise ValueError(f"column {name!r}, row {_label(labels, row)!r}: missing object id")
    return ids


def _label(labels: Any, row: int) -> Any:
    """The label of a row as a plain Python value."""
    label = labels[row]
    return label.item() if isinstance(label, np.generic) else label


def _long_catalog(ids: np.ndarray, columns: dict[str, np.ndarray], sort: bool,
                  nan_policy: str) -> Catalog:
    if ids.dtype.kind in "OUS":
        ids = ids.astype(str)
    if sort:
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        columns = {name: values[order] for name, values in columns.items()}
    return Catalog.from_arrays(ids, columns["t"], columns["y"], columns.get("dy"),
                               nan_policy=nan_policy)


def _frame_column(frame: Any, name: str) -> Any:
    """A column of a DataFrame, or its index when the index has that name."""
    if name in frame.columns:
        return frame[name]
    if name in (frame.index.names or []):
        return frame.index.get_level_values(name).to_series(index=frame.index)
    found = list(frame.columns) + [n for n in frame.index.names if n is not None]
    raise ValueError(f"no column(s) {[name]} in the table; it has columns {found}")


def _numbers(series: Any, name: str, labels: Any, times: bool) -> np.ndarray:
    """A pandas column as float64; datetimes become MJD for the time column."""
    import pandas as pd

    if times and pd.api.types.is_datetime64_any_dtype(series.dtype):
        if getattr(series.dt, "tz", None) is not None:
            series = series.dt.tz_convert("UTC").dt.tz_localize(None)
        return mjd_from_datetime64(series.to_numpy(dtype="datetime64[ns]"))
    if pd.api.types.is_bool_dtype(series.dtype):
        raise ValueError(f"column {name!r} holds booleans, not numbers")
    if not pd.api.types.is_numeric_dtype(series.dtype):
        numbers = pd.to_numeric(series, errors="coerce")
        bad = np.flatnonzero(numbers.isna().to_numpy() & series.notna().to_numpy())
        if bad.size:
            row = int(bad[0])
            raise ValueError(f"column {name!r}, row {_label(labels, row)!r}: "
                             f"{series.iloc[row]!r} is not a number")
        series = numbers
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def first_non_number(values: Any) -> int | None:
    """Index of the first entry that is neither a number (or numeric text) nor None."""
    for index, value in enumerate(values):
        if value is None:
            continue
        if isinstance(value, (bool, np.bool_)):
            return index
        try:
            float(value)
        except (TypeError, ValueError):
            return index
    return None


def _unit(column: Any) -> Any:
    return getattr(column, "unit", None)


def _unmasked(column: Any) -> Any:
    """The data of a (possibly masked) column, masked entries NaN (ints become floats)."""
    mask = getattr(column, "mask", None)
    if mask is None or not np.any(mask):
        return column
    if column.dtype.kind in "iub":
        column = column.astype(np.float64)
    return column.filled(np.nan)


def _plain(column: Any, name: str) -> np.ndarray:
    """Values without their unit, float64 (masked entries -> NaN)."""
    data = _unmasked(column)
    values = np.asarray(getattr(data, "value", data))
    if values.dtype.kind in "iuf":
        return values.astype(np.float64)
    listed = values.tolist()
    bad = first_non_number(listed)
    if bad is not None:
        raise ValueError(f"column {name!r}, row {bad}: {listed[bad]!r} is not a number")
    return np.array([np.nan if v is None else float(v) for v in listed], dtype=np.float64)


def _table_times(column: Any, name: str, time_scale: str | None) -> np.ndarray:
    from astropy import units as u
    from astropy.time import Time, TimeDelta

    if isinstance(column, TimeDelta):
        return np.asarray(column.to_value(u.day), dtype=np.float64)
    if isinstance(column, Time):
        if time_scale is not None:
            try:
                column = getattr(column, time_scale)
            except Exception as error:  # astropy raises several types for bad scales
                raise ValueError(
                    f"column {name!r}: cannot express scale {column.scale!r} times in "
                    f"{time_scale!r} ({error}); pass time_scale=None to keep the column's scale"
                ) from None
        mjd = column.mjd
        mask = getattr(column, "mask", None)
        return np.where(mask, np.nan, mjd) if mask is not None else np.asarray(mjd, np.float64)
    unit = _unit(column)
    if unit is not None:
        try:
            return np.asarray(u.Quantity(_unmasked(column)).to_value(u.day), dtype=np.float64)
        except u.UnitConversionError:
            raise ValueError(f"column {name!r} has unit {unit}, which is not a time") from None
    return _plain(column, name)


def _uncertainties(column: Any, name: str, y_unit: Any, y_name: str) -> np.ndarray:
    from astropy import units as u

    unit = _unit(column)
    if y_unit is None and unit is None:
        return _plain(column, name)
    if unit is None or y_unit is None:
        which = (name, y_name) if unit is None else (y_name, name)
        raise ValueError(f"column {which[1]!r} has a unit but {which[0]!r} has none; "
                         "give y and dy in convertible units (or both without)")
    target = getattr(y_unit, "function_unit", y_unit)  # magnitudes: errors are in mag
    try:
        return np.asarray(
            u.Quantity(_unmasked(column)).to_value(target), dtype=np.float64
        )
    except u.UnitConversionError:
        raise ValueError(f"units of {name!r} ({unit}) do not convert to those of "
                         f"{y_name!r} ({y_unit})") from None
