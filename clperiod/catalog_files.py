"""Read catalog files in chunks of whole objects, never loading a file whole.

Layouts (``layout=``; ``"auto"`` picks one from the suffix and the content):

* ``"lightcurve-csv"``: the reference papers' layout, no header, one
  observation per line, ``objId, t, y`` or ``objId, t, y, dy`` (comma and
  optional spaces; ``#`` comment lines and blank lines skipped). Its columns
  are called ``id``, ``t``, ``y`` and ``dy``.
* ``"csv"``: long format with a header line, one row per observation.
* ``"parquet"``: long format Parquet.
* ``"nested-parquet"``: one row per object, an id column and a
  ``list<struct>`` column whose struct fields hold the observations (the
  nested-pandas / LSDB layout). The ragged offsets come straight from the
  Arrow list array.

CSV is parsed with pandas (``.gz`` and other compressions by suffix) and
Parquet with pyarrow: ``pip install clperiod[catalog]``.

**Chunks.** :class:`CatalogReader` yields :class:`CatalogChunk` objects: whole
objects, at most ``chunk_rows`` observations and at most ``chunk_objects``
objects each (an object longer than ``chunk_rows`` is a chunk of its own).
An object whose rows span a read block is carried to the next block intact.
Which objects form a chunk depends only on the file's content and these two
limits, not on how the file is read, so a run that stops can resume at a
chunk.

**Checks.** Errors name the file and the row. Rows are counted from 0 in the
order of the data (a header line, comment and blank lines not counted; for
nested files a row is an object). Checked: missing columns, values that are
not numbers, missing ids, non-finite values (``nan_policy="raise"``; ``"omit"``
drops those rows), ``dy <= 0``, and ids that appear twice: an id whose rows
start again after another object (long layouts: rows of one object must be
contiguous) or a repeated row id (nested), within and across chunks.

**Types.** Ids are integers (int64) or text for the whole file: Parquet by the
column type, CSV by the ids of the first read block. Times may be numbers or
timestamps (converted to MJD, see :mod:`clperiod.frames`).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .catalog import NAN_POLICIES, Catalog
from .frames import first_non_number, mjd_from_datetime64

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "LAYOUTS",
    "CatalogChunk",
    "CatalogReader",
    "nested_to_catalog",
    "open_catalog",
]

LAYOUTS = ("lightcurve-csv", "csv", "parquet", "nested-parquet")
#: Default largest number of observations per chunk.
DEFAULT_CHUNK_ROWS = 1_000_000
#: Rows (observations, or objects for nested files) per read block; blocks
#: only bound memory, they never change the chunks.
READ_ROWS = 1 << 18
READ_OBJECTS = 1 << 14
_PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class CatalogChunk:
    """Whole objects read from a catalog file.

    Attributes
    ----------
    index : int
        Chunk number, from 0.
    first_row : int
        File row of its first observation (first object for nested files).
    n_rows : int
        File rows it covers (observations; objects for nested files),
        dropped rows included.
    catalog : Catalog
        The objects.
    """

    index: int
    first_row: int
    n_rows: int
    catalog: Catalog

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts identifying the chunk (for resumable runs)."""
        ids = self.catalog.ids
        return {
            "index": self.index,
            "first_row": self.first_row,
            "n_rows": self.n_rows,
            "n_objects": int(ids.size),
            "first_id": _plain_id(ids[0]),
            "last_id": _plain_id(ids[-1]),
        }


def open_catalog(path: str | os.PathLike[str], **options: Any) -> CatalogReader:
    """Open a catalog file for chunked reading (see :class:`CatalogReader`)."""
    return CatalogReader(path, **options)


class CatalogReader:
    """A catalog file opened for reading in chunks of whole objects.

    Iterating over the reader reads the file from the start and yields
    :class:`CatalogChunk` objects; :meth:`read` returns the whole file as one
    :class:`Catalog`.

    Parameters
    ----------
    path : path-like
        The file.
    layout : {"auto", "lightcurve-csv", "csv", "parquet", "nested-parquet"}
        See the module notes. ``"auto"``: Parquet by the suffix ``.parquet``
        / ``.pq`` (nested when a ``list<struct>`` column holds ``t_col``),
        else CSV, without header when the second and third fields of the
        first line are numbers.
    id_col, t_col, y_col : str
        Column names (struct field names for ``t``/``y``/``dy`` of nested
        files).
    dy_col : str or None
        Uncertainty column. ``"auto"`` (default): the column ``dy`` when the
        file has one (the fourth column of the headerless layout); None: no
        uncertainties.
    nested_col : str, optional
        The ``list<struct>`` column of a nested file (default: the only one
        whose struct holds ``t_col``).
    delimiter : str
        CSV field separator.
    chunk_rows : int
        Largest number of observations per chunk (an object longer than
        that forms a chunk of its own).
    chunk_objects : int, optional
        Largest number of objects per chunk.
    nan_policy : {"raise", "omit"}
        Non-finite ``t``, ``y`` or ``dy``: raise, or drop those rows.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Unknown layout, a missing column (the message lists the columns
        found), or bad limits.
    ImportError
        pandas (CSV) or pyarrow (Parquet) is missing.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        layout: str = "auto",
        id_col: str = "id",
        t_col: str = "t",
        y_col: str = "y",
        dy_col: str | None = "auto",
        nested_col: str | None = None,
        delimiter: str = ",",
        chunk_rows: int = DEFAULT_CHUNK_ROWS,
        chunk_objects: int | None = None,
        nan_policy: str = "raise",
    ) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such file")
        if layout != "auto" and layout not in LAYOUTS:
            raise ValueError(f"layout must be 'auto' or one of {LAYOUTS}, got {layout!r}")
        if nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
        self.chunk_rows = _positive_int("chunk_rows", chunk_rows)
        self.chunk_objects = (None if chunk_objects is None
                              else _positive_int("chunk_objects", chunk_objects))
        self.delimiter = delimiter
        self.nan_policy = nan_policy
        self.nested_col = nested_col
        if layout == "auto":
            layout = self._detect_layout(t_col)
        self.layout = layout
        found = self._column_names()
        if dy_col == "auto":
            dy_col = "dy" if "dy" in found else None
        names = {"id": id_col, "t": t_col, "y": y_col} | ({"dy": dy_col} if dy_col else {})
        if layout == "nested-parquet":
            top = list(_parquet_schema(self.path).names)
            if id_col not in top:
                raise ValueError(f"{self.path}: no column {id_col!r}; found {top}")
            names_found = [c for role, c in names.items() if role != "id"]
            where = f" in the fields of column {self.nested_col!r}"
        else:
            names_found, where = list(names.values()), ""
        absent = [name for name in names_found if name not in found]
        if absent:
            raise ValueError(f"{self.path}: no column(s) {absent}{where}; found {found}")
        #: Role (``id``, ``t``, ``y``, ``dy``) -> column name.
        self.columns: dict[str, str] = names

    # ------------------------------------------------------------------ facts
    @property
    def n_objects(self) -> int | None:
        """Number of objects when the file says so without reading (nested), else None."""
        if self.layout != "nested-parquet":
            return None
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.path).metadata.num_rows

    def identity(self) -> dict[str, Any]:
        """The file's resolved path, size and modification time (ns)."""
        stat = self.path.stat()
        return {"path": str(self.path.resolve()), "size": stat.st_size,
                "mtime_ns": stat.st_mtime_ns}

    def settings(self) -> dict[str, Any]:
        """Everything that decides the chunks and their content (JSON-ready)."""
        return {
            "layout": self.layout,
            "columns": dict(self.columns),
            "nested_col": self.nested_col,
            "delimiter": self.delimiter,
            "chunk_rows": self.chunk_rows,
            "chunk_objects": self.chunk_objects,
            "nan_policy": self.nan_policy,
        }

    def __repr__(self) -> str:
        return f"CatalogReader({str(self.path)!r}, layout={self.layout!r}, columns={self.columns})"

    # ------------------------------------------------------------------ reading
    def __iter__(self) -> Iterator[CatalogChunk]:
        chunker = _Chunker(self.chunk_rows, self.chunk_objects,
                           rows_are_objects=self.layout == "nested-parquet")
        seen = _SeenIds()
        index = 0
        for block in self._blocks():
            for part in chunker.add(block):
                yield self._chunk(index, part, seen)
                index += 1
        for part in chunker.finish():
            yield self._chunk(index, part, seen)
            index += 1
        if index == 0:
            raise ValueError(f"{self.path}: no data rows")

    def read(self) -> Catalog:
        """The whole file as one catalog (chunk by chunk, then joined)."""
        parts = [chunk.catalog for chunk in self]
        return join_catalogs(parts)

    def _chunk(self, index: int, block: _Block, seen: _SeenIds) -> CatalogChunk:
        _check_block(self.path, block, seen, self.nan_policy,
                     nested=self.layout == "nested-parquet")
        catalog = Catalog.from_offsets(block.ids, block.offsets, block.columns["t"],
                                       block.columns["y"], block.columns.get("dy"),
                                       nan_policy=self.nan_policy)
        n_rows = block.ids.size if self.layout == "nested-parquet" else int(block.offsets[-1])
        return CatalogChunk(index, block.first_row, n_rows, catalog)

    def _blocks(self) -> Iterator[_Block]:
        if self.layout in ("csv", "lightcurve-csv"):
            return _csv_blocks(self)
        if self.layout == "parquet":
            return _parquet_blocks(self)
        return _nested_blocks(self)

    # ------------------------------------------------------------------ layout
    def _detect_layout(self, t_col: str) -> str:
        if self.path.suffix.lower() in _PARQUET_SUFFIXES:
            schema = _parquet_schema(self.path)
            if self.nested_col is not None:
                return "nested-parquet"
            if t_col in schema.names:
                return "parquet"
            nested = _nested_columns(schema, t_col)
            return "nested-parquet" if nested else "parquet"
        fields = _first_record(self.path).split(self.delimiter)
        return "lightcurve-csv" if len(fields) >= 3 and _are_numbers(fields[1:3]) else "csv"

    def _column_names(self) -> list[str]:
        """Observation columns of the file (struct fields for nested files)."""
        if self.layout == "lightcurve-csv":
            n = len(_first_record(self.path).split(self.delimiter))
            if n not in (3, 4):
                raise ValueError(f"{self.path}: expected 3 (objId, t, y) or 4 (objId, t, y, dy) "
                                 f"comma-separated columns, found {n}")
            return ["id", "t", "y", "dy"][:n]
        if self.layout == "csv":
            return _csv_header(self.path, self.delimiter)
        schema = _parquet_schema(self.path)
        if self.layout == "parquet":
            return list(schema.names)
        if self.nested_col is None:
            return self._guess_nested(schema)
        if self.nested_col not in schema.names:
            raise ValueError(f"{self.path}: no column {self.nested_col!r}; found {schema.names}")
        fields = _struct_fields(schema.field(self.nested_col).type)
        if fields is None:
            raise ValueError(f"{self.path}: column {self.nested_col!r} has type "
                             f"{schema.field(self.nested_col).type}, not list<struct>")
        return fields

    def _guess_nested(self, schema: Any) -> list[str]:
        nested = _nested_columns(schema, None)
        if len(nested) != 1:
            raise ValueError(f"{self.path}: give nested_col, the list<struct> column holding "
                             f"the observations; candidates: {nested or 'none'}")
        self.nested_col = nested[0]
        return _struct_fields(schema.field(self.nested_col).type)


def join_catalogs(parts: list[Catalog]) -> Catalog:
    """One catalog of several with distinct ids (chunks of one file), in order."""
    if len(parts) == 1:
        return parts[0]
    lengths = np.concatenate([part.lengths for part in parts])
    dy = None if parts[0].dy is None else np.concatenate([part.dy for part in parts])
    return Catalog(
        np.concatenate([part.ids for part in parts]),
        np.concatenate(([0], np.cumsum(lengths))),
        np.concatenate([part.t for part in parts]),
        np.concatenate([part.y for part in parts]),
        dy,
        sum(part.n_dropped for part in parts),
    )


def nested_to_catalog(ids: Any, nested: Any, fields: dict[str, str], *,
                      nan_policy: str = "raise", where: str = "nested column") -> Catalog:
    """A catalog from object ids and an Arrow ``list<struct>`` array of observations.

    Parameters
    ----------
    ids : array_like
        One id per list entry.
    nested : pyarrow.ListArray or LargeListArray (or a ChunkedArray of one)
        The observations of each object; null entries are objects with 0 rows.
    fields : dict
        Role (``t``, ``y``, optionally ``dy``) -> struct field name.
    nan_policy : {"raise", "omit"}
        See :meth:`Catalog.from_arrays`.
    where : str
        Names the source in error messages.

    Returns
    -------
    Catalog
    """
    import pyarrow as pa

    if isinstance(nested, pa.ChunkedArray):
        nested = nested.combine_chunks()
    ids = _id_values(ids, "id", 0, where)
    block = _nested_block(nested, ids, fields, 0, where)
    _check_block(where, block, _SeenIds(), nan_policy, nested=True)
    return Catalog.from_offsets(block.ids, block.offsets, block.columns["t"],
                                block.columns["y"], block.columns.get("dy"),
                                nan_policy=nan_policy)


# ---------------------------------------------------------------------- blocks and chunks


@dataclass
class _Block:
    """Objects in ragged form: ids, offsets from 0, flat float64 columns."""

    ids: np.ndarray
    offsets: np.ndarray
    columns: dict[str, np.ndarray]
    first_row: int
    open_end: bool  # the last object may continue in the next block

    @property
    def n_objects(self) -> int:
        return self.ids.size

    def take(self, n: int, rows_are_objects: bool) -> tuple[_Block, _Block]:
        """The first ``n`` objects, and the rest."""
        cut = int(self.offsets[n])
        head = _Block(self.ids[:n], self.offsets[: n + 1],
                      {k: v[:cut] for k, v in self.columns.items()}, self.first_row, False)
        rest_first = self.first_row + (n if rows_are_objects else cut)
        rest = _Block(self.ids[n:], self.offsets[n:] - cut,
                      {k: v[cut:] for k, v in self.columns.items()}, rest_first, self.open_end)
        return head, rest


class _Chunker:
    """Cut a stream of blocks into chunks of whole objects, deterministically.

    A chunk holds the largest number of leading objects with at most
    ``chunk_rows`` observations and at most ``chunk_objects`` objects, and at
    least one object. The cut is made only once data that could change it
    cannot arrive any more, so it never depends on the block boundaries.
    """

    def __init__(self, chunk_rows: int, chunk_objects: int | None, rows_are_objects: bool):
        self.chunk_rows = chunk_rows
        self.chunk_objects = chunk_objects if chunk_objects is not None else np.iinfo(np.int64).max
        self.rows_are_objects = rows_are_objects
        self.buffer: _Block | None = None

    def add(self, block: _Block) -> Iterator[_Block]:
        if not block.n_objects:
            return
        self.buffer = block if self.buffer is None else _append(self.buffer, block)
        yield from self._emit(final=False)

    def finish(self) -> Iterator[_Block]:
        if self.buffer is not None:
            self.buffer.open_end = False
            yield from self._emit(final=True)

    def _emit(self, final: bool) -> Iterator[_Block]:
        while self.buffer is not None and self.buffer.n_objects:
            n = self._cut(final)
            if n is None:
                return
            chunk, self.buffer = self.buffer.take(n, self.rows_are_objects)
            yield chunk

    def _cut(self, final: bool) -> int | None:
        """Objects in the next chunk, or None while more data could change it."""
        buffer = self.buffer
        ends = buffer.offsets[1:]
        n_closed = buffer.n_objects - (1 if buffer.open_end else 0)
        decided = (final or ends[-1] > self.chunk_rows
                   or buffer.n_objects > self.chunk_objects)
        if not decided:
            return None
        fits = int(np.searchsorted(ends[:n_closed], self.chunk_rows, side="right"))
        n = min(fits, self.chunk_objects)
        if n == 0:  # the first object alone is longer than chunk_rows
            n = 1 if n_closed >= 1 else 0
        return n or None


def _append(buffer: _Block, block: _Block) -> _Block:
    """``buffer`` followed by ``block``; an open last object continues into it."""
    ids, offsets = block.ids, block.offsets
    buffer_offsets = buffer.offsets
    if buffer.open_end and buffer.n_objects and ids.size and ids[0] == buffer.ids[-1]:
        continued = offsets[1]  # rows of the open object that are in this block
        buffer_offsets = buffer_offsets.copy()
        buffer_offsets[-1] += continued
        ids, offsets = ids[1:], offsets[1:] - continued
    return _Block(
        np.concatenate((buffer.ids, ids)),
        np.concatenate((buffer_offsets, offsets[1:] + buffer_offsets[-1])),
        {k: np.concatenate((v, block.columns[k])) for k, v in buffer.columns.items()},
        buffer.first_row,
        block.open_end,
    )


class _SeenIds:
    """Ids read so far with the file row where each started, for duplicate checks.

    Kept as sorted runs merged like a binary counter, so checking and adding
    ``n`` ids costs ``O(n log^2 n)`` over a whole file.
    """

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def find(self, ids: np.ndarray) -> tuple[int, int] | None:
        """``(i, row)``: the first ``ids[i]`` seen before, and where it started."""
        hits = []
        for run_ids, run_rows in self.runs:
            pos = np.searchsorted(run_ids, ids)
            pos = np.minimum(pos, run_ids.size - 1)
            found = np.flatnonzero(run_ids[pos] == ids)
            if found.size:
                hits.append((int(found[0]), int(run_rows[pos[found[0]]])))
        return min(hits) if hits else None

    def add(self, ids: np.ndarray, rows: np.ndarray) -> None:
        order = np.argsort(ids, kind="stable")
        run = (ids[order], rows[order])
        while self.runs and self.runs[-1][0].size <= run[0].size:
            last = self.runs.pop()
            merged_ids = np.concatenate((last[0], run[0]))
            order = np.argsort(merged_ids, kind="stable")
            run = (merged_ids[order], np.concatenate((last[1], run[1]))[order])
        self.runs.append(run)


def _check_block(path: Any, block: _Block, seen: _SeenIds, nan_policy: str,
                 nested: bool) -> None:
    """Duplicate ids, non-finite values and dy <= 0, named by file row."""
    ids = block.ids
    rows = block.first_row + (np.arange(ids.size) if nested else block.offsets[:-1])
    order = np.argsort(ids, kind="stable")
    same = np.flatnonzero(ids[order][1:] == ids[order][:-1])
    if same.size:  # the repeat that occurs first in the file
        later = order[same + 1]
        k = int(later.min())
        first = int(order[same[np.argmin(later)]])
        _duplicate(path, ids[k], int(rows[first]), int(rows[k]), nested)
    hit = seen.find(ids)
    if hit is not None:
        _duplicate(path, ids[hit[0]], hit[1], int(rows[hit[0]]), nested)
    seen.add(ids, rows)
    for name, values in block.columns.items():
        bad = ~np.isfinite(values) if nan_policy == "raise" else np.zeros(values.size, bool)
        if name == "dy":
            bad |= np.isfinite(values) & (values <= 0)
        if bad.any():
            _bad_value(path, block, name, int(np.argmax(bad)), nested)


def _duplicate(path: Any, object_id: Any, first: int, again: int, nested: bool) -> None:
    if nested:
        raise ValueError(f"{path}: object id {_show(object_id)} at row {again} repeats row {first}")
    raise ValueError(
        f"{path}: object id {_show(object_id)} appears again at row {again} after other "
        f"objects (its rows start at row {first}); the rows of one object must be "
        "contiguous (sort the file by id)"
    )


def _bad_value(path: Any, block: _Block, name: str, index: int, nested: bool) -> None:
    k = int(np.searchsorted(block.offsets, index, side="right")) - 1
    value = float(block.columns[name][index])
    if nested:
        where = (f"row {block.first_row + k} (object {_show(block.ids[k])}), "
                 f"observation {index - int(block.offsets[k])}")
    else:
        where = f"row {block.first_row + index} (object {_show(block.ids[k])})"
    if name == "dy" and np.isfinite(value):
        raise ValueError(f"{path}: {where}: dy = {value!r}; uncertainties must be > 0")
    raise ValueError(f"{path}: {where}: {name} is {value!r}, not a finite number "
                     "(nan_policy='omit' drops such rows)")


# ---------------------------------------------------------------------- CSV


def _csv_blocks(reader: CatalogReader) -> Iterator[_Block]:
    """Blocks of a CSV file, parsed by pandas."""
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(f"reading the CSV file {reader.path} in chunks needs pandas: "
                          "pip install clperiod[catalog]") from None
    roles = dict(reader.columns)
    if reader.layout == "lightcurve-csv":
        n = len(_first_record(reader.path).split(reader.delimiter))
        options = {"header": None, "names": ["id", "t", "y", "dy"][:n], "comment": "#"}
    else:
        options = {"header": 0}
    # Every column is parsed (no usecols): pandas then rejects lines with too
    # many fields instead of silently cutting them.
    options |= {"sep": reader.delimiter, "skipinitialspace": True, "chunksize": READ_ROWS}
    text_ids = _csv_ids_are_text(reader.path, options, roles["id"])
    if text_ids:
        options["dtype"] = {roles["id"]: str}
    row = 0
    try:
        with pd.read_csv(reader.path, **options) as frames:
            for frame in frames:
                if frame.empty:
                    continue
                ids = _csv_ids(reader.path, frame[roles["id"]], row, text_ids)
                columns = {role: _csv_numbers(reader.path, frame[name], name, row)
                           for role, name in roles.items() if role != "id"}
                yield _long_block(ids, columns, row)
                row += len(frame)
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{reader.path}: {error}") from None


def _csv_ids_are_text(path: Path, options: dict[str, Any], id_col: str) -> bool:
    """Whether the ids of the first read block are text (pandas did not read integers)."""
    import pandas as pd

    first = dict(options, chunksize=None, nrows=READ_ROWS)
    try:
        ids = pd.read_csv(path, **first)[id_col]
    except pd.errors.ParserError as error:
        raise ValueError(f"{path}: {error}") from None
    return not (pd.api.types.is_integer_dtype(ids.dtype) and not ids.isna().any())


def _csv_ids(path: Path, ids: Any, first_row: int, text: bool) -> np.ndarray:
    missing = np.flatnonzero(ids.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{path}: row {first_row + int(missing[0])}: missing object id")
    if text:
        return np.asarray(ids.to_numpy(dtype=object), dtype=str)
    import pandas as pd

    if pd.api.types.is_integer_dtype(ids.dtype):
        return ids.to_numpy(dtype=np.int64)
    values = ids.to_numpy(dtype=object)
    bad = next(k for k, v in enumerate(values) if not _is_integer_text(v))
    raise ValueError(
        f"{path}: row {first_row + bad}: object id {values[bad]!r} is not an integer, but the "
        "ids at the start of the file are; the ids of one file must all be integers or all text"
    )


def _csv_numbers(path: Path, values: Any, name: str, first_row: int) -> np.ndarray:
    import pandas as pd

    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    numbers = pd.to_numeric(values, errors="coerce")
    bad = np.flatnonzero(numbers.isna().to_numpy() & values.notna().to_numpy())
    if bad.size or pd.api.types.is_bool_dtype(values.dtype):
        k = int(bad[0]) if bad.size else 0
        raise ValueError(f"{path}: row {first_row + k}: column {name!r} has "
                         f"{values.iloc[k]!r}, not a number")
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def _is_integer_text(value: Any) -> bool:
    try:
        int(str(value).strip())
    except ValueError:
        return False
    return True


def _csv_header(path: Path, delimiter: str) -> list[str]:
    from .io import _open_text

    with _open_text(path) as handle:
        header = next(csv.reader(handle, delimiter=delimiter), None)
    if header is None:
        raise ValueError(f"{path}: empty file")
    return [name.strip() for name in header]


def _first_record(path: Path) -> str:
    from .io import _first_record as first

    return first(path)


def _are_numbers(fields: list[str]) -> bool:
    try:
        [float(field) for field in fields]
    except ValueError:
        return False
    return True


def _long_block(ids: np.ndarray, columns: dict[str, np.ndarray], first_row: int) -> _Block:
    """A block of long-format rows: objects are the runs of equal ids."""
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
    offsets = np.append(starts, ids.size).astype(np.int64)
    return _Block(ids[starts], offsets, columns, first_row, open_end=True)


# ---------------------------------------------------------------------- Parquet


def _pyarrow_parquet(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"reading the Parquet file {path} needs pyarrow: "
                          "pip install clperiod[catalog]") from None
    return pq


def _parquet_schema(path: Path) -> Any:
    pq = _pyarrow_parquet(path)
    try:
        return pq.read_schema(path)
    except Exception as error:  # pyarrow raises ArrowInvalid / OSError subclasses
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None


def _struct_fields(arrow_type: Any) -> list[str] | None:
    """Field names of a ``list<struct>`` (or large list) type, else None."""
    import pyarrow as pa

    if not (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        return None
    value_type = arrow_type.value_type
    if not pa.types.is_struct(value_type):
        return None
    return [value_type.field(i).name for i in range(value_type.num_fields)]


def _nested_columns(schema: Any, field: str | None) -> list[str]:
    """``list<struct>`` columns (that hold ``field``, when given)."""
    found = []
    for name in schema.names:
        fields = _struct_fields(schema.field(name).type)
        if fields is not None and (field is None or field in fields):
            found.append(name)
    return found


def _parquet_blocks(reader: CatalogReader) -> Iterator[_Block]:
    pq = _pyarrow_parquet(reader.path)
    roles = reader.columns
    row = 0
    with pq.ParquetFile(reader.path) as parquet:
        for batch in parquet.iter_batches(batch_size=READ_ROWS, columns=list(roles.values())):
            ids = _id_values(batch.column(roles["id"]), roles["id"], row, reader.path)
            columns = {role: _arrow_numbers(batch.column(name), name, row, reader.path)
                       for role, name in roles.items() if role != "id"}
            yield _long_block(ids, columns, row)
            row += batch.num_rows


def _nested_blocks(reader: CatalogReader) -> Iterator[_Block]:
    pq = _pyarrow_parquet(reader.path)
    roles = {role: name for role, name in reader.columns.items() if role != "id"}
    id_col, nested_col = reader.columns["id"], reader.nested_col
    row = 0
    with pq.ParquetFile(reader.path) as parquet:
        paths = [id_col] + _leaf_paths(parquet.schema, nested_col, set(roles.values()))
        for batch in parquet.iter_batches(batch_size=READ_OBJECTS, columns=paths):
            ids = _id_values(batch.column(id_col), id_col, row, reader.path)
            yield _nested_block(batch.column(nested_col), ids, roles, row, reader.path)
            row += batch.num_rows


def _leaf_paths(schema: Any, nested_col: str, fields: set[str]) -> list[str]:
    """Parquet column paths of the struct fields we need (only those are read)."""
    paths = []
    for k in range(len(schema)):
        parts = schema.column(k).path.split(".")
        if parts[0] == nested_col and parts[-1] in fields:
            paths.append(schema.column(k).path)
    return paths


def _nested_block(nested: Any, ids: np.ndarray, roles: dict[str, str], first_row: int,
                  where: Any) -> _Block:
    """A block from a ``list<struct>`` array: offsets from the list, flat struct fields."""
    import pyarrow.compute as pc

    if _struct_fields(nested.type) is None:
        raise ValueError(f"{where}: the nested column has type {nested.type}, not list<struct>")
    if len(nested) != ids.size:
        raise ValueError(f"{where}: {ids.size} ids for {len(nested)} nested entries")
    if nested.null_count == 0:
        offsets = np.asarray(nested.offsets, dtype=np.int64)
        offsets -= offsets[0]
    else:
        lengths = pc.fill_null(pc.list_value_length(nested), 0).to_numpy()
        offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    names = _struct_fields(nested.type)
    # flatten() honours the slice offset, null lists and null struct entries
    fields = dict(zip(names, nested.flatten().flatten()))
    columns = {}
    for role, name in roles.items():
        if name not in fields:
            raise ValueError(f"{where}: no field {name!r} in the nested column; found {names}")
        columns[role] = _arrow_numbers(fields[name], name, first_row, where, nested_rows=offsets)
    return _Block(ids, offsets, columns, first_row, open_end=False)


def _id_values(values: Any, name: str, first_row: int, where: Any) -> np.ndarray:
    """Object ids as int64 (or uint64) or str, rejecting missing ids."""
    import pyarrow as pa

    if not isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = pa.array(np.asarray(values))
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if values.null_count:
        k = int(np.argmax(np.asarray(values.is_null())))
        raise ValueError(f"{where}: row {first_row + k}: missing object id")
    kind = values.type
    if pa.types.is_integer(kind):
        return values.to_numpy().astype(np.uint64 if kind == pa.uint64() else np.int64,
                                        copy=False)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=str)
    raise ValueError(f"{where}: column {name!r} holds {kind} values; object ids must be "
                     "integers or text")


def _arrow_numbers(values: Any, name: str, first_row: int, where: Any,
                   nested_rows: np.ndarray | None = None) -> np.ndarray:
    """A numeric (or timestamp) Arrow array as float64; nulls become NaN."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    kind = values.type
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        if getattr(kind, "tz", None) is not None:
            values = values.cast(pa.timestamp(kind.unit))
        return mjd_from_datetime64(values.to_numpy(zero_copy_only=False))
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return values.cast(pa.float64()).to_numpy(zero_copy_only=False)
    listed = values.to_pylist()
    bad = first_non_number(listed)
    if bad is None:
        return np.array([np.nan if v is None else float(v) for v in listed], dtype=np.float64)
    if nested_rows is None:
        where_row = f"row {first_row + bad}"
    else:
        k = int(np.searchsorted(nested_rows, bad, side="right")) - 1
        where_row = f"row {first_row + k}, observation {bad - int(nested_rows[k])}"
    raise ValueError(f"{where}: {where_row}: column {name!r} ({kind}) has {listed[bad]!r}, "
                     "not a number")


# ---------------------------------------------------------------------- small helpers


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _plain_id(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _show(object_id: Any) -> str:
    return repr(_plain_id(object_id))
