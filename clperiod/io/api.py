"""Read light-curve files into a :class:`~clperiod.catalog.Catalog`.

Two layouts are supported:

* the reference papers' CSV layout (:func:`read_lightcurve_csv`): no header,
  one observation per line, ``objId, t, y`` or ``objId, t, y, dy`` separated
  by a comma and optional spaces, the rows of one object contiguous;
* long-format tables with a header (:func:`read_catalog`): CSV, or Parquet
  when pyarrow (or pandas) is installed.

The light curves bundled with clperiod (see ``clperiod/data/README.md``) are
found with :func:`example_path` and loaded with :func:`load_example`; the
bundled radial velocities with :func:`load_rv_example` (an :class:`RVData`,
also read from any file of the same layouts by :func:`read_rv`).

Catalogs too large to load whole are read in chunks by :func:`open_catalog`
(also nested Parquet; :mod:`clperiod.io.readers`); pandas DataFrames and
astropy Tables become catalogs with :func:`catalog_from_dataframe` and
:func:`catalog_from_table` (:mod:`clperiod.io.frames`); results and periodograms
are written by :func:`write_results` and :func:`write_periodograms`
(:mod:`clperiod.io.results`).
"""

from __future__ import annotations

import csv
import itertools
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clperiod.catalog import Catalog
from clperiod.columns import require_columns
from clperiod.io.file_errors import is_damage, text_errors
from clperiod.io.formats import (
    PARQUET_SUFFIXES,
    csv_header,
    first_fields,
    leading_record,
    open_parquet,
    open_text,
    parquet_schema,
    readable_batches,
)
from clperiod.io.frames import catalog_from_dataframe, catalog_from_table
from clperiod.io.readers import CatalogReader, open_catalog
from clperiod.io.results import write_periodograms, write_results

__all__ = [
    "EXAMPLES",
    "RV_EXAMPLES",
    "CatalogReader",
    "RVData",
    "catalog_from_dataframe",
    "catalog_from_table",
    "example_path",
    "load_example",
    "load_rv_example",
    "open_catalog",
    "read_catalog",
    "read_lightcurve_csv",
    "read_rv",
    "write_periodograms",
    "write_results",
]

#: Bundled example light curves: name -> file in ``clperiod/data``.
EXAMPLES: dict[str, str] = {
    "ida": "243_normalized_ztf_filter2.txt",
    "8205": "8205_normalized.txt",
    "8205_errors": "8205_normalized_with_error.txt",
    "stripe82": "SDSS_stripe82_band_z.txt",
    "stripe82_ugriz": "SDSS_stripe82_RRLyrae_ugriz.csv",
    "hat-p-7": "kplr010666592_Q0_sc_pdcsap.csv",
}

#: The bundled examples in the long layout (a header line): their id, t, y, dy and
#: band columns (None: no bands); the others are in the papers' layout
#: (:func:`read_lightcurve_csv`).
_LONG_EXAMPLES: dict[str, tuple[str, str, str, str, str | None]] = {
    "stripe82_ugriz": ("id", "mjd", "mag", "mag_err", "band"),
    "hat-p-7": ("kic", "time", "flux", "flux_err", None),
}

#: Bundled radial velocities (radvel's example data): name -> file.
RV_EXAMPLES: dict[str, str] = {
    "hd164922": "164922_fixed.txt",
    "k2-24": "epic203771098.csv",
}


def example_path(name: str) -> Path:
    """Path of a bundled example light-curve file.

    Parameters
    ----------
    name : {"ida", "8205", "8205_errors", "stripe82", "stripe82_ugriz", "hat-p-7"}
        ``"ida"``: asteroid (243) Ida, ZTF r band, 29 points, t in JD.
        ``"8205"`` / ``"8205_errors"``: a synthetic asteroid with a ZTF-like
        cadence, 3555 points, without / with uncertainties.
        ``"stripe82"``: 136 RR Lyrae stars of SDSS Stripe 82 (z band,
        magnitudes with uncertainties, t in MJD).
        ``"stripe82_ugriz"``: two of those RR Lyrae stars in all five bands
        (u, g, r, i, z; a CSV file with columns ``id, mjd, mag, mag_err,
        band``), for multiband searches.
        ``"hat-p-7"``: the transiting hot Jupiter HAT-P-7 b (Kepler-2 b,
        P = 2.2047 d) in Kepler's short-cadence commissioning data (Q0, 9.7
        days; every fifth unflagged cadence, 2655 points; a CSV file with
        columns ``kic, time, flux, flux_err``: BJD - 2454833 and PDCSAP flux
        in e-/s), for transit searches.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        Unknown name.
    """
    try:
        filename = EXAMPLES[name]
    except KeyError:
        raise ValueError(
            f"unknown example {name!r}; choose one of {', '.join(map(repr, EXAMPLES))}"
        ) from None
    return Path(__file__).resolve().parent.parent / "data" / filename


def load_example(name: str) -> Catalog:
    """Load a bundled example as a :class:`~clperiod.Catalog` (see :func:`example_path`);
    ``"stripe82_ugriz"`` carries the band of each row."""
    path = example_path(name)
    columns = _LONG_EXAMPLES.get(name)
    if columns is None:
        return read_lightcurve_csv(path)
    id_col, t_col, y_col, dy_col, band_col = columns
    return read_catalog(path, id_col, t_col, y_col, dy_col, band_col=band_col)


def read_lightcurve_csv(
    path: str | os.PathLike[str],
    *,
    with_errors: bool | None = None,
    nan_policy: str = "raise",
) -> Catalog:
    """Read a file in the papers' layout: ``objId, t, y[, dy]`` per line.

    Fields are separated by a comma and optional spaces; there is no header
    (lines starting with ``#`` are skipped). Rows of one object must be
    contiguous. A ``.gz`` file is decompressed on the fly.

    Parameters
    ----------
    path : path-like
        The file.
    with_errors : bool, optional
        ``None`` (default): use the fourth column as ``dy`` when the file has
        four columns. ``True``: require it. ``False``: ignore it if present.
    nan_policy : {"raise", "omit"}
        Passed to :meth:`~clperiod.Catalog.from_arrays`.

    Returns
    -------
    Catalog
        Object ids are integers when every id is an integer, else strings.

    Raises
    ------
    ValueError
        Not 3 or 4 columns, ``with_errors=True`` without a ``dy`` column,
        unparsable numbers (the message names the row and column), or the
        catalog checks of :meth:`~clperiod.Catalog.from_arrays`.
    """
    path = Path(path)
    n_columns = len(first_fields(path, ","))
    if n_columns not in (3, 4):
        raise ValueError(
            f"{path}: expected 3 (objId, t, y) or 4 (objId, t, y, dy) comma-separated "
            f"columns, found {n_columns}"
        )
    if with_errors and n_columns == 3:
        raise ValueError(f"{path}: with_errors=True but the file has no dy column")
    use_dy = n_columns == 4 and with_errors is not False
    ids = _loadtxt(path, dtype=str, delimiter=",", usecols=0)
    values = _load_columns(path, (1, 2, 3) if use_dy else (1, 2), delimiter=",")
    dy = values[:, 2] if use_dy else None
    return _catalog(path, _object_ids(ids), values[:, 0], values[:, 1], dy, nan_policy)


def read_catalog(
    path: str | os.PathLike[str],
    id_col: str = "id",
    t_col: str = "t",
    y_col: str = "y",
    dy_col: str | None = None,
    *,
    delimiter: str = ",",
    sort: bool = False,
    nan_policy: str = "raise",
    band_col: str | None = None,
    bands: Any = None,
) -> Catalog:
    """Read a long-format table (one row per observation, with a header).

    Parameters
    ----------
    path : path-like
        A CSV file with a header line (``.gz`` allowed), or a Parquet file
        (suffix ``.parquet`` or ``.pq``; needs pyarrow, or pandas with a
        Parquet engine).
    id_col, t_col, y_col : str
        Column names of the object id, time and value.
    dy_col : str, optional
        Column name of the uncertainties; None reads no uncertainties.
    delimiter : str
        CSV field separator.
    sort : bool
        Stable-sort the rows by object id first, for files whose objects are
        not contiguous (the order of objects then follows the sorted ids).
    nan_policy : {"raise", "omit"}
        Passed to :meth:`~clperiod.Catalog.from_arrays`.
    band_col : str, optional
        Column name of the band (filter) labels; None reads no bands. A CSV
        file's labels are read as text (``"1"``, not 1); a Parquet file's
        keep their type (strings, integers or a dictionary of them).
    bands : sequence, optional
        The band labels, fixed (see :meth:`~clperiod.Catalog.from_arrays`).

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        A named column is missing (the message lists the columns found), or
        the catalog checks of :meth:`~clperiod.Catalog.from_arrays` fail (e.g. an
        object's rows are not contiguous and ``sort`` is False).
    ImportError
        A Parquet file and neither pyarrow nor pandas is installed.
    """
    path = Path(path)
    names = [id_col, t_col, y_col] + ([dy_col] if dy_col is not None else [])
    parquet = path.suffix.lower() in PARQUET_SUFFIXES
    if parquet:
        columns = _read_parquet(path, names + ([band_col] if band_col is not None else []))
    else:
        columns = _read_csv(path, names, delimiter)
        if band_col is not None:
            columns.append(_read_csv_text(path, band_col, delimiter))
    ids = columns[0] if columns[0].dtype.kind in "iuf" else _object_ids(columns[0])
    if sort:
        order = np.argsort(ids, kind="stable")
        columns = [column[order] for column in columns]
        ids = ids[order]
    dy = columns[3] if dy_col is not None else None
    band = columns[-1] if band_col is not None else None
    return _catalog(path, ids, columns[1], columns[2], dy, nan_policy, band, bands)


# ---------------------------------------------------------------------- helpers


def _catalog(
    path: Path,
    ids: np.ndarray,
    t: np.ndarray,
    y: np.ndarray,
    dy: np.ndarray | None,
    nan_policy: str,
    band: np.ndarray | None = None,
    bands: Any = None,
) -> Catalog:
    """:meth:`~clperiod.Catalog.from_arrays`, its errors prefixed with the file's name."""
    try:
        return Catalog.from_arrays(ids, t, y, dy, nan_policy=nan_policy, band=band, bands=bands)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


def _read_csv(path: Path, names: list[str], delimiter: str) -> list[np.ndarray]:
    skip, header = csv_header(path, delimiter)
    require_columns(names, header, str(path))
    index = [header.index(name) for name in names]
    options = {"delimiter": delimiter, "skiprows": skip + 1, "quotechar": '"'}
    ids = _loadtxt(path, dtype=str, usecols=index[0], **options)
    values = _load_columns(path, tuple(index[1:]), **options)
    return [ids, *values.T]


def _read_csv_text(path: Path, name: str, delimiter: str) -> np.ndarray:
    """One column of a CSV file with a header, as stripped text."""
    skip, header = csv_header(path, delimiter)
    require_columns([name], header, str(path))
    options = {"delimiter": delimiter, "skiprows": skip + 1, "quotechar": '"'}
    text = _loadtxt(path, dtype=str, usecols=header.index(name), **options)
    return np.char.strip(text)


def _read_parquet(path: Path, names: list[str]) -> list[np.ndarray]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        pq = None
    if pq is not None:
        import pyarrow as pa

        require_columns(names, parquet_schema(path).names, str(path))
        with open_parquet(path) as parquet:
            groups = range(parquet.metadata.num_row_groups)
            batches = itertools.chain.from_iterable(  # by row group: errors name the group
                parquet.iter_batches(columns=names, row_groups=[g]) for g in groups
            )
            readable = readable_batches(parquet.metadata, path, batches)
            schema = pa.schema([parquet.schema_arrow.field(name) for name in names])
            table = pa.Table.from_batches(list(readable), schema=schema)
        return [table.column(name).to_numpy() for name in names]
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            f"reading the Parquet file {path} needs pyarrow (pip install pyarrow) or pandas "
            "with a Parquet engine"
        ) from None
    frame = pd.read_parquet(path)
    require_columns(names, list(frame.columns), str(path))
    return [frame[name].to_numpy() for name in names]


def _object_ids(raw: np.ndarray) -> np.ndarray:
    """Integer ids when every id is an integer literal, else the stripped strings."""
    ids = np.char.strip(raw.astype(str))
    try:
        return ids.astype(np.int64)
    except (ValueError, OverflowError):
        return ids


def _loadtxt(path: Path, **kwargs: Any) -> np.ndarray:
    """``np.loadtxt`` (at least 1-D) with the file named in parse errors."""
    with warnings.catch_warnings():
        # NumPy notes that comment/blank lines do not count towards its
        # internal chunk size; irrelevant here.
        warnings.filterwarnings("ignore", message="Input line", category=UserWarning)
        with text_errors(path):
            try:
                return np.loadtxt(path, ndmin=1, encoding="utf-8-sig", **kwargs)
            except ValueError as error:
                if is_damage(error):  # undecodable text: text_errors says where
                    raise
                raise ValueError(f"{path}: {error}") from None


def _load_columns(path: Path, columns: tuple[int, ...], **kwargs: Any) -> np.ndarray:
    """Float64 columns of a delimited text file, shape (rows, len(columns))."""
    return _loadtxt(path, dtype=np.float64, usecols=columns, **kwargs).reshape(-1, len(columns))


@dataclass(frozen=True)
class RVData:
    """Radial velocities of one star.

    Attributes
    ----------
    t, v, sigma
        Times, velocities and uncertainties (float64).
    instrument
        Instrument label of each observation (str array).
    """

    t: np.ndarray
    v: np.ndarray
    sigma: np.ndarray
    instrument: np.ndarray


def read_rv(path: str | os.PathLike) -> RVData:
    """Read radial velocities in radvel's example layouts.

    Two layouts are recognised from the header: whitespace-separated
    ``time mnvel errvel tel ...`` (HIRES-style, ``tel`` = instrument), and
    CSV with columns ``t``, ``vel``, ``errvel`` (one instrument, label
    ``"0"``); further columns are ignored.

    Raises
    ------
    ValueError
        A required column is missing or a value is not a number (the message
        names the file and row).
    """
    path = Path(path)
    header = leading_record(path)[1]
    csv_layout = "," in header
    names = header.replace(",", " ").split() if not csv_layout else header.split(",")
    names = [n.strip() for n in names]
    columns: tuple[str, ...]
    if "mnvel" in names:
        columns = ("time", "mnvel", "errvel", "tel")
    else:
        columns = ("t", "vel", "errvel")
    require_columns(list(columns), names, str(path))
    with text_errors(path), open_text(path) as handle:
        reader = csv.reader(handle) if csv_layout else (line.split() for line in handle)
        rows = list(reader)[1:]
    index = [names.index(c) for c in columns]
    values: list[list[float]] = [[], [], []]
    labels = []
    for row_number, row in enumerate(rows, start=2):
        if not row:
            continue
        try:
            for k in range(3):
                values[k].append(float(row[index[k]]))
        except (ValueError, IndexError):
            raise ValueError(
                f"{path}: row {row_number}: expected numbers in columns {columns[:3]}, got {row!r}"
            ) from None
        labels.append(row[index[3]] if len(columns) == 4 else "0")
    t, v, sigma = (np.asarray(a, dtype=np.float64) for a in values)
    return RVData(t, v, sigma, np.asarray(labels, dtype=str))


def load_rv_example(name: str) -> RVData:
    """Bundled radial velocities.

    Parameters
    ----------
    name : {"hd164922", "k2-24"}
        ``"hd164922"``: HD 164922, 401 velocities from three instruments
        (``a``, ``j``, ``k``), t in BJD; two known planets (P ~ 1200 d and
        ~ 76 d). ``"k2-24"``: K2-24 (EPIC 203771098), 32 velocities, t in
        BJD - 2454833; two known planets (P ~ 20.9 d and ~ 42.4 d).
    """
    try:
        filename = RV_EXAMPLES[name]
    except KeyError:
        raise ValueError(
            f"unknown RV example {name!r}; choose one of {', '.join(map(repr, RV_EXAMPLES))}"
        ) from None
    return read_rv(Path(__file__).resolve().parent.parent / "data" / filename)
