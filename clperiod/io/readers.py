"""Read catalog files in chunks of whole objects, never loading a file whole.

Layouts (``layout=``; ``"auto"`` picks one from the suffix and the content):

* ``"lightcurve-csv"``: the reference papers' layout, no header, one
  observation per line, ``objId, t, y`` or ``objId, t, y, dy`` (comma and
  optional spaces; ``#`` comment lines and blank lines skipped). Its columns
  are called ``id``, ``t``, ``y`` and ``dy``.
* ``"csv"``: long format with a header line, one row per observation
  (blank and ``#`` comment lines before the header are skipped).
* ``"parquet"``: long format Parquet.
* ``"nested-parquet"``: one row per object, an id column and a
  ``list<struct>`` column whose struct fields hold the observations (the
  nested-pandas / LSDB layout). The ragged offsets come straight from the
  Arrow list array.

CSV is parsed with pandas (``.gz``, ``.bz2`` and ``.xz`` files decompressed
on the fly) and Parquet with pyarrow, page by page (never a whole row group
at once): ``pip install clperiod[catalog]``.

**Chunks.** :class:`CatalogReader` yields ``CatalogChunk`` objects: whole
objects, at most ``chunk_rows`` observations and at most ``chunk_objects``
objects each (an object longer than ``chunk_rows`` is a chunk of its own).
An object whose rows span a read block is carried to the next block intact.
Which objects form a chunk depends only on the file's content and these two
limits, not on how the file is read, so a run that stops can resume at a
chunk.

**Grouping.** The rows of one object must be contiguous, or the reader sorts
them by id (``grouping="sort"``, or ``"auto"`` when a first read of the ids
finds them not contiguous: ``clperiod.io.grouping``, an external merge sort
with bounded memory). Chunks of a sorted file count rows in the sorted order.

**Checks.** Errors name the file and the row. Rows are counted from 0 in the
order of the data (a header line, comment and blank lines not counted; for
nested files a row is an object). Checked: missing or repeated columns, a
first data row with more fields than the header, a line cut short (fewer
fields than the header), values that are not numbers, missing ids,
non-finite values (``nan_policy="raise"``; ``"omit"`` drops those rows),
``dy <= 0``, and ids that appear twice: an id whose rows start again after
another object (long layouts read as contiguous) or a repeated row id
(nested), within and across chunks. Undecodable text, damaged compressed
data and damaged Parquet pages name the file and the line and byte, or the
row group (:mod:`clperiod.io.file_errors`).

**Types.** Ids are integers (int64, or uint64 for ids beyond int64) or text
for the whole file: Parquet by the column type, CSV by the ids of the first
read block. Times may be numbers or timestamps (converted to MJD, see
:mod:`clperiod.io.frames`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from clperiod.catalog import NAN_POLICIES, Catalog, fixed_bands
from clperiod.io import formats, grouping
from clperiod.io.chunks import Block, Chunker, SeenIds, check_block, check_values

__all__ = [
    "DEFAULT_CHUNK_ROWS",
    "GROUPINGS",
    "LAYOUTS",
    "CatalogChunk",
    "CatalogReader",
    "open_catalog",
]

LAYOUTS = ("lightcurve-csv", "csv", "parquet", "nested-parquet")
#: How the rows of an object are found (``grouping=``).
GROUPINGS = ("contiguous", "sort", "auto")
#: Default largest number of observations per chunk.
DEFAULT_CHUNK_ROWS = 1_000_000
#: Default most observations of the first chunk (the next ones may hold
#: twice as many as the one before, up to ``chunk_rows``): a run's device
#: starts after a short read, and the reading of the next chunk overlaps it.
FIRST_CHUNK_ROWS = 1 << 14


@dataclass(frozen=True)
class CatalogChunk:
    """Whole objects read from a catalog file.

    Attributes
    ----------
    index : int
        Chunk number, from 0.
    first_row : int
        File row of its first observation (first object for nested files;
        for a file sorted by id, its position in the sorted rows).
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
        """JSON-ready facts identifying the chunk and its content (for resumable runs)."""
        ids = self.catalog.ids
        return {
            "index": self.index,
            "first_row": self.first_row,
            "n_rows": self.n_rows,
            "n_objects": int(ids.size),
            "first_id": _plain_id(ids[0]),
            "last_id": _plain_id(ids[-1]),
            "checksum": self.checksum,
        }

    @functools.cached_property
    def checksum(self) -> str:
        """BLAKE2b digest (128 bits, hex) of the chunk's objects as read: ids,
        offsets, ``t``, ``y`` and ``dy`` with their types, and the bands where
        there are some (computed once, on the arrays in memory, when first
        asked for)."""
        digest = hashlib.blake2b(digest_size=16)
        cat = self.catalog
        arrays = [cat.ids, cat.offsets, cat.t, cat.y, cat.dy]
        if cat.bands is not None:
            digest.update(repr(cat.bands).encode())
            arrays.append(cat.band_codes)
        for array in arrays:
            if array is None:
                digest.update(b"none")
                continue
            if array.dtype == object:  # text ids
                array = array.astype(str)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)
        return digest.hexdigest()


def open_catalog(path: str | os.PathLike[str], **options: Any) -> CatalogReader:
    """Open a catalog file for chunked reading (see :class:`CatalogReader`)."""
    return CatalogReader(path, **options)


class CatalogReader:
    """A catalog file opened for reading in chunks of whole objects.

    Iterating over the reader reads the file from the start and yields
    ``CatalogChunk`` objects; :meth:`read` returns the whole file as one
    :class:`~clperiod.Catalog`.

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
    first_chunk_rows : int or None
        Ramp: chunk ``i`` holds at most ``min(chunk_rows, first_chunk_rows *
        2**i)`` observations (the file is also read in blocks that grow so),
        so the first chunk is ready soon; None: every chunk up to
        ``chunk_rows``.
    nan_policy : {"raise", "omit"}
        Non-finite ``t``, ``y`` or ``dy``: raise, or drop those rows.
    grouping : {"contiguous", "sort", "auto"}
        Long layouts: ``"contiguous"`` (default) takes the rows of one object
        to be contiguous (an id that comes back after other objects is an
        error); ``"sort"`` sorts the rows by id first, for files in time order
        (``clperiod.io.grouping``: an external merge sort with temporary files,
        memory bounded; objects then follow the sorted ids and chunk rows count
        in that order); ``"auto"`` reads the id column once first and sorts
        only when the rows are not contiguous. Nested files have one row per
        object and are never sorted.

    Raises
    ------
    FileNotFoundError
        No such file.
    IsADirectoryError
        The path is a directory.
    ValueError
        Unknown layout or grouping, a missing or repeated column (the message
        lists the columns found), or bad limits.
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
        first_chunk_rows: int | None = FIRST_CHUNK_ROWS,
        nan_policy: str = "raise",
        grouping: str = "contiguous",
        band_col: str | None = None,
        bands: Any = None,
    ) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(
                f"{self.path} is a directory: give one catalog file (for a directory of "
                "Parquet files, clperiod.dask reads it with dask.dataframe.read_parquet)"
            )
        if not self.path.is_file():
            raise FileNotFoundError(f"{self.path}: no such file")
        if layout != "auto" and layout not in LAYOUTS:
            raise ValueError(f"layout must be 'auto' or one of {LAYOUTS}, got {layout!r}")
        if nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be one of {NAN_POLICIES}, got {nan_policy!r}")
        if grouping not in GROUPINGS:
            raise ValueError(f"grouping must be one of {GROUPINGS}, got {grouping!r}")
        self.chunk_rows = _positive_int("chunk_rows", chunk_rows)
        self.chunk_objects = (
            None if chunk_objects is None else _positive_int("chunk_objects", chunk_objects)
        )
        self.first_chunk_rows = (
            None
            if first_chunk_rows is None
            else _positive_int("first_chunk_rows", first_chunk_rows)
        )
        self.delimiter = delimiter
        self.nan_policy = nan_policy
        self.nested_col = nested_col
        if layout == "auto":
            layout = self._detect_layout(t_col)
        self.layout = layout
        found = self._column_names(t_col)
        if dy_col == "auto":
            dy_col = "dy" if "dy" in found else None
        names = {"id": id_col, "t": t_col, "y": y_col} | ({"dy": dy_col} if dy_col else {})
        if band_col is not None:
            names["band"] = band_col
        elif bands is not None:
            raise ValueError("bands fixes the band labels but no band_col was given")
        self.bands = None if bands is None else fixed_bands(bands)
        if layout == "nested-parquet":
            top = list(formats.parquet_schema(self.path).names)
            if id_col not in top:
                raise ValueError(f"{self.path}: no column {id_col!r}; found {top}")
            names_found = [c for role, c in names.items() if role != "id"]
            where = f" in the fields of column {self.nested_col!r}"
        else:
            names_found, where = list(names.values()), ""
        absent = [name for name in names_found if name not in found]
        if absent:
            raise ValueError(f"{self.path}: no column(s) {absent}{where}; found {found}")
        repeated = sorted({name for name in names_found if found.count(name) > 1})
        if repeated:
            raise ValueError(
                f"{self.path}: more than one column named {repeated}{where}; found {found}"
            )
        #: Role (``id``, ``t``, ``y``, ``dy``, ``band``) -> column name.
        self.columns: dict[str, str] = names
        if grouping == "sort" and layout == "nested-parquet":
            raise ValueError(
                f"{self.path}: grouping='sort' applies to long layouts; a nested "
                "file holds one row per object"
            )
        self._grouping = "contiguous" if layout == "nested-parquet" else grouping

    # ------------------------------------------------------------------ facts
    @property
    def n_rows(self) -> int | None:
        """File rows (observations; objects for nested files) if the file says, else None.

        Parquet files record it in their metadata; CSV files would have to be
        read.
        """
        if self.layout not in ("parquet", "nested-parquet"):
            return None
        return formats.parquet_metadata(self.path).num_rows

    @property
    def timestamps(self) -> bool:
        """Whether the time column holds timestamps or dates (read as MJD, days)."""
        if self.layout not in ("parquet", "nested-parquet"):
            return False
        import pyarrow as pa

        schema = formats.parquet_schema(self.path)
        if self.layout == "parquet":
            kind = schema.field(self.columns["t"]).type
        else:
            kind = schema.field(self.nested_col).type.value_type.field(self.columns["t"]).type
        return pa.types.is_timestamp(kind) or pa.types.is_date(kind)

    def identity(self) -> dict[str, Any]:
        """The file's resolved path, size and modification time (ns)."""
        stat = self.path.stat()
        return {
            "path": str(self.path.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
        }

    @property
    def grouping(self) -> str:
        """``"contiguous"`` or ``"sort"``: how the rows of an object are found
        (``"auto"`` is decided here, by a read of the id column, once)."""
        if self._grouping == "auto":
            ids_only = {"id": self.columns["id"]}
            self._grouping = (
                "contiguous" if grouping.is_grouped(self._raw_blocks(ids_only)) else "sort"
            )
        return self._grouping

    def settings(self) -> dict[str, Any]:
        """Everything that decides the chunks and their content (JSON-ready)."""
        return {
            "layout": self.layout,
            "grouping": self.grouping,
            "columns": dict(self.columns),
            "nested_col": self.nested_col,
            "delimiter": self.delimiter,
            "chunk_rows": self.chunk_rows,
            "chunk_objects": self.chunk_objects,
            "first_chunk_rows": self.first_chunk_rows,
            "nan_policy": self.nan_policy,
        } | ({} if self.bands is None else {"bands": list(self.bands)})

    def __repr__(self) -> str:
        return (
            f"CatalogReader({str(self.path)!r}, layout={self.layout!r}, "
            f"columns={self.columns}, grouping={self._grouping!r})"
        )

    # ------------------------------------------------------------------ reading
    def __iter__(self) -> Iterator[CatalogChunk]:
        """The chunks, in file order, each checked before it is yielded. A
        Parquet file is opened here, in the calling thread; it is read from
        the first ``next`` on."""
        return self._chunks(self._blocks())

    def _chunks(self, blocks: Iterator[Block]) -> Iterator[CatalogChunk]:
        chunker = Chunker(
            self.chunk_rows,
            self.chunk_objects,
            rows_are_objects=self.layout == "nested-parquet",
            first_rows=self.first_chunk_rows,
        )
        seen = SeenIds()
        index = 0
        for part in chunker.cut(blocks):
            check_block(
                self.path, part, seen, self.nan_policy, nested=self.layout == "nested-parquet"
            )
            yield self._chunk(index, part)
            index += 1
        if index == 0:
            raise ValueError(f"{self.path}: no data rows")

    def read(self) -> Catalog:
        """The whole file as one catalog (chunk by chunk, then joined)."""
        parts = [chunk.catalog for chunk in self]
        return _join_catalogs(parts)

    def _chunk(self, index: int, block: Block) -> CatalogChunk:
        """The chunk of a checked block."""
        t, y, dy = block.columns["t"], block.columns["y"], block.columns.get("dy")
        band = block.columns.get("band")
        if band is not None:  # labels to codes: the catalog checks them
            catalog = Catalog.from_offsets(
                block.ids,
                block.offsets,
                t,
                y,
                dy,
                nan_policy=self.nan_policy,
                band=band,
                bands=_bands_like(self.bands, band),
            )
        elif self.nan_policy == "raise":
            # every id and value is checked, and the arrays are this reader's
            # own: lock them instead of validating and copying again
            for values in block.columns.values():
                values.setflags(write=False)
            catalog = Catalog(block.ids, block.offsets, t, y, dy)
        else:
            catalog = Catalog.from_offsets(
                block.ids, block.offsets, t, y, dy, nan_policy=self.nan_policy
            )
        n_rows = block.ids.size if self.layout == "nested-parquet" else int(block.offsets[-1])
        return CatalogChunk(index, block.first_row, n_rows, catalog)

    def _blocks(self) -> Iterator[Block]:
        rows = formats.block_rows(self.chunk_rows)
        first = None
        if self.first_chunk_rows is not None:
            # the first block holds the first chunk and one row more, so that
            # chunk is cut as soon as one block is read, and the ramp of blocks
            # (first, 2 first, 4 first, ...) then completes each chunk of the
            # chunker's ramp with one block; a nested file's blocks count objects
            # from the mean length, so there the first block holds a quarter
            # more (a margin for the estimate; block k then still ends past
            # chunk k's last row)
            most = min(self.chunk_rows, self.first_chunk_rows)
            nested = self.layout == "nested-parquet"
            first = formats.block_rows(most + most // 4 if nested else most + 1)
        if self.grouping == "sort":
            # values are checked in file order, so that errors name file rows
            raw = self._raw_blocks(self.columns)
            checked_raw = (_values_checked(self.path, block, self.nan_policy) for block in raw)
            return grouping.sorted_blocks(checked_raw, rows)
        return self._raw_blocks(self.columns, rows, first)

    def _raw_blocks(
        self, roles: dict[str, str], rows: int = formats.READ_ROWS, first: int | None = None
    ) -> Iterator[Block]:
        """The ``roles`` columns of the file in blocks, in file order."""
        if self.layout in ("csv", "lightcurve-csv"):
            return formats.csv_blocks(self.path, self.layout, roles, self.delimiter, rows, first)
        if self.layout == "parquet":
            return formats.parquet_blocks(self.path, roles, rows, first)
        assert self.nested_col is not None  # the nested layout has one
        return formats.nested_blocks(self.path, roles, self.nested_col, rows, first)

    # ------------------------------------------------------------------ layout
    def _detect_layout(self, t_col: str) -> str:
        if self.path.suffix.lower() in formats.PARQUET_SUFFIXES:
            schema = formats.parquet_schema(self.path)
            if self.nested_col is not None:
                return "nested-parquet"
            if t_col in schema.names:
                return "parquet"
            nested = formats.nested_columns(schema, t_col)
            return "nested-parquet" if nested else "parquet"
        fields = formats.first_fields(self.path, self.delimiter)
        return "lightcurve-csv" if len(fields) >= 3 and formats.are_numbers(fields[1:3]) else "csv"

    def _column_names(self, t_col: str) -> list[str]:
        """Observation columns of the file (struct fields for nested files)."""
        if self.layout == "lightcurve-csv":
            return formats.lightcurve_columns(self.path, self.delimiter)
        if self.layout == "csv":
            return formats.csv_header(self.path, self.delimiter)[1]
        schema = formats.parquet_schema(self.path)
        if self.layout == "parquet":
            return list(schema.names)
        if self.nested_col is None:
            return self._guess_nested(schema, t_col)
        if self.nested_col not in schema.names:
            raise ValueError(f"{self.path}: no column {self.nested_col!r}; found {schema.names}")
        fields = formats.struct_fields(schema.field(self.nested_col).type)
        if fields is None:
            raise ValueError(
                f"{self.path}: column {self.nested_col!r} has type "
                f"{schema.field(self.nested_col).type}, not list<struct>"
            )
        return fields

    def _guess_nested(self, schema: Any, t_col: str) -> list[str]:
        """Fields of the one ``list<struct>`` column holding ``t_col`` (it becomes nested_col)."""
        nested = formats.nested_columns(schema, t_col)
        if len(nested) != 1:
            candidates = formats.nested_columns(schema, None) or "none"
            raise ValueError(
                f"{self.path}: give nested_col, the list<struct> column holding "
                f"the observations ({t_col!r}); candidates: {candidates}"
            )
        self.nested_col = nested[0]
        fields = formats.struct_fields(schema.field(self.nested_col).type)
        assert fields is not None  # nested_columns lists list<struct> columns only
        return fields


def _join_catalogs(parts: list[Catalog]) -> Catalog:
    """One catalog of several with distinct ids (chunks of one file), in order."""
    if len(parts) == 1:
        return parts[0]
    lengths = np.concatenate([part.lengths for part in parts])
    dy = None if parts[0].dy is None else np.concatenate([part.dy for part in parts])
    codes, bands = _joined_bands(parts)
    return Catalog(
        np.concatenate([part.ids for part in parts]),
        np.concatenate(([0], np.cumsum(lengths))),
        np.concatenate([part.t for part in parts]),
        np.concatenate([part.y for part in parts]),
        dy,
        sum(part.n_dropped for part in parts),
        codes,
        bands,
    )


def _bands_like(bands: tuple[Any, ...] | None, labels: np.ndarray) -> tuple[Any, ...] | None:
    """Fixed ``bands`` given as text (the command line's) as integers where the
    file's ``labels`` are integers and every band is an integer literal."""
    if bands is None or labels.dtype.kind not in "iu":
        return bands
    try:
        return tuple(int(label) if isinstance(label, str) else label for label in bands)
    except ValueError:
        return bands


def _joined_bands(parts: list[Catalog]) -> tuple[np.ndarray | None, tuple[Any, ...] | None]:
    """The band codes and labels of joined chunks: one chunk's labels when all
    chunks have the same (a fixed band set), else the sorted union."""
    if parts[0].bands is None:
        return None, None
    if all(part.bands == parts[0].bands for part in parts):
        bands = parts[0].bands
    else:
        bands = tuple(np.unique(np.concatenate([part.band_labels() for part in parts])).tolist())
    position = {label: k for k, label in enumerate(bands)}
    codes = [
        np.array([position[label] for label in part.bands or ()], dtype=np.int16)[part.band_codes]
        for part in parts
    ]
    return np.concatenate(codes), bands


def _values_checked(path: Path, block: Block, nan_policy: str) -> Block:
    """``block`` once its values pass :func:`~clperiod.io.chunks.check_values`."""
    check_values(path, block, nan_policy, nested=False)
    return block


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _plain_id(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
