"""Table columns as float64 numbers: the conversions the catalog and the readers share.

A catalog holds plain float64 numbers; this module turns the columns of pandas
DataFrames, astropy Tables and Arrow arrays into them:

* numbers are used as they are;
* astropy ``Time`` columns become MJD (days), by default in the TDB scale
  (``time_scale``);
* ``TimeDelta`` columns and time ``Quantity`` columns become days;
* ``datetime64`` values become MJD counted on their own time line (UTC
  without leap seconds, as NumPy and pandas count); time-zone aware pandas
  columns are converted to UTC first;
* ``y`` loses its unit and ``dy`` is converted to the unit of ``y`` (to
  ``mag`` for magnitude units such as ``ABmag``);
* masked entries become NaN.

It imports neither pandas nor astropy until a column of theirs arrives.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

__all__ = [
    "first_non_number",
    "frame_column",
    "frame_numbers",
    "is_table",
    "lightcurve_columns",
    "mjd_from_datetime64",
    "require_columns",
    "row_label",
    "table_times",
    "table_uncertainties",
    "table_values",
]

#: MJD 0 on the NumPy time line.
_MJD_ZERO = np.datetime64("1858-11-17T00:00:00", "ns")


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
        Time and value columns (converted as the module notes say: datetimes
        and ``Time`` to MJD, units dropped, masked entries NaN).
    dy_col : str or None
        Uncertainty column; ``"auto"`` (default): ``dy`` when the table has
        it; None: none.
    time_scale : str or None
        Scale in which the ``Time`` columns of astropy tables are expressed
        as MJD; None keeps each column's own scale.

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
    if not is_table(table):
        raise TypeError(
            f"expected a pandas DataFrame or an astropy Table, got {type(table).__name__}"
        )
    if hasattr(table, "colnames"):
        return _table_lightcurve(table, t_col, y_col, dy_col, time_scale)
    return _frame_lightcurve(table, t_col, y_col, dy_col)


def is_table(item: Any) -> bool:
    """Whether ``item`` is a pandas DataFrame or an astropy Table (without
    importing either: an instance's module is loaded already)."""
    pandas = sys.modules.get("pandas")
    tables = sys.modules.get("astropy.table")
    return (pandas is not None and isinstance(item, pandas.DataFrame)) or (
        tables is not None and isinstance(item, tables.Table)
    )


def mjd_from_datetime64(values: Any) -> np.ndarray:
    """Modified Julian Dates (float64 days) of ``datetime64`` values; NaT gives NaN."""
    values = np.asarray(values)
    if values.dtype.kind != "M":
        raise TypeError(f"expected datetime64 values, got dtype {values.dtype}")
    return (values.astype("datetime64[ns]") - _MJD_ZERO) / np.timedelta64(1, "D")


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


def require_columns(names: list[str], found: list[str], where: str = "the table") -> None:
    """Raise a ValueError naming the ``names`` absent from ``found`` (in ``where``), or
    found more than once."""
    absent = [name for name in names if name not in found]
    if absent:
        raise ValueError(f"no column(s) {absent} in {where}; it has columns {found}")
    repeated = sorted({name for name in names if list(found).count(name) > 1})
    if repeated:
        raise ValueError(
            f"more than one column named {repeated} in {where}; it has columns {found}"
        )


def row_label(labels: Any, row: int) -> Any:
    """The label of a row as a plain Python value."""
    label = labels[row]
    return label.item() if isinstance(label, np.generic) else label


# ------------------------------------------------------------ pandas DataFrames


def frame_column(frame: Any, name: str) -> Any:
    """A column of a DataFrame, or its index when the index has that name."""
    if name in frame.columns:
        return frame[name]
    if name in (frame.index.names or []):
        return frame.index.get_level_values(name).to_series(index=frame.index)
    found = list(frame.columns) + [n for n in frame.index.names if n is not None]
    raise ValueError(f"no column(s) {[name]} in the table; it has columns {found}")


def frame_numbers(series: Any, name: str, labels: Any, times: bool) -> np.ndarray:
    """A pandas column as float64; datetimes become MJD for the time column (``times``).

    Errors name the column and the row label from ``labels``.
    """
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
            raise ValueError(
                f"column {name!r}, row {row_label(labels, row)!r}: "
                f"{series.iloc[row]!r} is not a number"
            )
        series = numbers
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def _frame_lightcurve(
    frame: Any, t_col: str, y_col: str, dy_col: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    if dy_col == "auto":
        dy_col = "dy" if "dy" in frame.columns else None
    labels = frame.index
    t = frame_numbers(frame_column(frame, t_col), t_col, labels, times=True)
    y = frame_numbers(frame_column(frame, y_col), y_col, labels, times=False)
    dy = (
        None
        if dy_col is None
        else frame_numbers(frame_column(frame, dy_col), dy_col, labels, times=False)
    )
    return t, y, dy


# --------------------------------------------------------------- astropy Tables


def table_values(column: Any, name: str) -> np.ndarray:
    """Values of a table column without their unit, float64 (masked entries -> NaN)."""
    data = _unmasked(column)
    values = np.asarray(getattr(data, "value", data))
    if values.dtype.kind in "iuf":
        return values.astype(np.float64)
    listed = values.tolist()
    bad = first_non_number(listed)
    if bad is not None:
        raise ValueError(f"column {name!r}, row {bad}: {listed[bad]!r} is not a number")
    return np.array([np.nan if v is None else float(v) for v in listed], dtype=np.float64)


def table_times(column: Any, name: str, time_scale: str | None) -> np.ndarray:
    """A table's time column as float64: ``Time`` as MJD in ``time_scale``,
    ``TimeDelta`` and time quantities in days, numbers as they are."""
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
    return table_values(column, name)


def table_uncertainties(column: Any, name: str, y_column: Any, y_name: str) -> np.ndarray:
    """A table's uncertainty column in the unit of its value column ``y_column``, float64.

    Raises
    ------
    ValueError
        Only one of the two columns has a unit, or the units do not convert.
    """
    from astropy import units as u

    unit = _unit(column)
    y_unit = _unit(y_column)
    if y_unit is None and unit is None:
        return table_values(column, name)
    if unit is None or y_unit is None:
        which = (name, y_name) if unit is None else (y_name, name)
        raise ValueError(
            f"column {which[1]!r} has a unit but {which[0]!r} has none; "
            "give y and dy in convertible units (or both without)"
        )
    target = getattr(y_unit, "function_unit", y_unit)  # magnitudes: errors are in mag
    try:
        return np.asarray(u.Quantity(_unmasked(column)).to_value(target), dtype=np.float64)
    except u.UnitConversionError:
        raise ValueError(
            f"units of {name!r} ({unit}) do not convert to those of {y_name!r} ({y_unit})"
        ) from None


def _table_lightcurve(
    table: Any, t_col: str, y_col: str, dy_col: str | None, time_scale: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    names = list(table.colnames)
    if dy_col == "auto":
        dy_col = "dy" if "dy" in names else None
    require_columns([c for c in (t_col, y_col, dy_col) if c is not None], names)
    t = table_times(table[t_col], t_col, time_scale)
    y = table_values(table[y_col], y_col)
    dy = (
        None if dy_col is None else table_uncertainties(table[dy_col], dy_col, table[y_col], y_col)
    )
    return t, y, dy


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
