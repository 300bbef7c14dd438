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
from clperiod.columns import (
    frame_column,
    frame_numbers,
    lightcurve_columns,
    mjd_from_datetime64,
    require_columns,
    row_label,
    table_times,
    table_uncertainties,
    table_values,
)
from clperiod.io import formats
from clperiod.io.chunks import SeenIds, check_block

# lightcurve_columns and mjd_from_datetime64 live in clperiod.columns (the catalog uses them
# too) and are handed on here, where they have always been importable.
__all__ = [
    "catalog_from_dataframe",
    "catalog_from_table",
    "lightcurve_columns",
    "mjd_from_datetime64",
    "nested_to_catalog",
]


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
    band_col: str | None = None,
    bands: Any = None,
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
        See :meth:`~clperiod.Catalog.from_arrays`.
    band_col : str, optional
        Band (filter) label column (a field of ``nested_col`` when given):
        strings or integers; None reads no bands.
    bands : sequence, optional
        The band labels, fixed (see :meth:`~clperiod.Catalog.from_arrays`).

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        A missing column (the message lists the columns found), a value that
        is not a number (named by column and row label), or the checks of
        :class:`~clperiod.Catalog`.
    """
    labels = frame.index
    series = frame_column(frame, id_col)
    ids = _present_ids(series.to_numpy(), series.isna().to_numpy(), id_col, labels)
    if nested_col is not None:
        import pyarrow as pa

        require_columns([nested_col], list(frame.columns))
        fields = {"t": t_col, "y": y_col} | ({"dy": dy_col} if dy_col else {})
        return nested_to_catalog(
            ids,
            pa.array(frame[nested_col]),
            fields | ({"band": band_col} if band_col else {}),
            nan_policy=nan_policy,
            where=f"DataFrame column {nested_col!r}",
            bands=bands,
        )
    columns = {}
    for name, col in (("t", t_col), ("y", y_col), ("dy", dy_col)):
        if col is None:
            continue
        columns[name] = frame_numbers(frame_column(frame, col), col, labels, times=name == "t")
    band = None if band_col is None else frame_column(frame, band_col).to_numpy()
    return _long_catalog(ids, columns, sort, nan_policy, band, bands)


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
    band_col: str | None = None,
    bands: Any = None,
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
        See :meth:`~clperiod.Catalog.from_arrays`. Masked entries count as NaN.
    band_col : str, optional
        Band (filter) label column, strings or integers (a masked label is
        an error); None reads no bands.
    bands : sequence, optional
        The band labels, fixed (see :meth:`~clperiod.Catalog.from_arrays`).

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        A missing column, a time column with a non-time unit, ``dy`` whose
        unit does not convert to that of ``y`` (or has none while ``y`` has
        one), or the checks of :class:`~clperiod.Catalog`.
    """
    names = list(table.colnames)
    wanted = (id_col, t_col, y_col, dy_col, band_col)
    require_columns([c for c in wanted if c is not None], names)
    ids = np.asarray(table[id_col])  # masked entries hold some value: check the mask
    missing = np.ma.getmaskarray(table[id_col])
    if ids.dtype.kind == "f":
        missing = missing | np.isnan(ids)
    ids = _present_ids(ids, missing, id_col, range(len(table)))
    columns = {"t": table_times(table[t_col], t_col, time_scale)}
    columns["y"] = table_values(table[y_col], y_col)
    if dy_col is not None:
        columns["dy"] = table_uncertainties(table[dy_col], dy_col, table[y_col], y_col)
    band = None
    if band_col is not None:
        band = np.ma.array(np.asarray(table[band_col]), mask=np.ma.getmaskarray(table[band_col]))
    return _long_catalog(ids, columns, sort, nan_policy, band, bands)


def nested_to_catalog(
    ids: Any,
    nested: Any,
    fields: dict[str, str],
    *,
    nan_policy: str = "raise",
    where: str = "nested column",
    bands: Any = None,
) -> Catalog:
    """A catalog from object ids and an Arrow ``list<struct>`` array of observations.

    Parameters
    ----------
    ids : array_like
        One id per list entry.
    nested : pyarrow.ListArray or LargeListArray (or a ChunkedArray of one)
        The observations of each object; null entries are objects with 0 rows.
    fields : dict
        Role (``t``, ``y``, optionally ``dy`` and ``band``) -> struct field name.
    nan_policy : {"raise", "omit"}
        See :meth:`~clperiod.Catalog.from_arrays`.
    where : str
        Names the source in error messages.
    bands : sequence, optional
        The band labels, fixed (see :meth:`~clperiod.Catalog.from_arrays`).

    Returns
    -------
    Catalog
    """
    import pyarrow as pa

    if isinstance(nested, pa.ChunkedArray):
        nested = nested.combine_chunks()
    ids = formats.id_values(ids, "id", 0, where)
    block = formats.nested_block(nested, ids, fields, 0, where)
    check_block(where, block, SeenIds(), nan_policy, nested=True)
    return Catalog.from_offsets(
        block.ids,
        block.offsets,
        block.columns["t"],
        block.columns["y"],
        block.columns.get("dy"),
        nan_policy=nan_policy,
        band=block.columns.get("band"),
        bands=bands,
    )


# ---------------------------------------------------------------------- helpers


def _present_ids(ids: np.ndarray, missing: np.ndarray, name: str, labels: Any) -> np.ndarray:
    """``ids``, or a ValueError naming the first row whose id is ``missing``."""
    if missing.any():
        row = int(np.argmax(missing))
        raise ValueError(f"column {name!r}, row {row_label(labels, row)!r}: missing object id")
    return ids


def _long_catalog(
    ids: np.ndarray,
    columns: dict[str, np.ndarray],
    sort: bool,
    nan_policy: str,
    band: np.ndarray | None = None,
    bands: Any = None,
) -> Catalog:
    if ids.dtype.kind in "OUS":
        ids = ids.astype(str)
    if sort:
        order = np.argsort(ids, kind="stable")
        ids = ids[order]
        columns = {name: values[order] for name, values in columns.items()}
        band = None if band is None else band[order]
    return Catalog.from_arrays(
        ids,
        columns["t"],
        columns["y"],
        columns.get("dy"),
        nan_policy=nan_policy,
        band=band,
        bands=bands,
    )
