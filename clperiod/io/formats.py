"""Parse catalog files into blocks of objects: CSV with pandas, Parquet with pyarrow.

Internal to :mod:`clperiod.io.readers`. Each ``*_blocks`` generator yields
:class:`~clperiod.io.chunks.Block` objects in file order, with float64 value
columns and int64 (or uint64) or str ids; values that are not numbers and
missing ids raise a ValueError naming the file and row.
"""

from __future__ import annotations

import csv
import itertools
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from clperiod.catalog import read_band_labels
from clperiod.columns import first_non_number, mjd_from_datetime64
from clperiod.io.chunks import Block, long_block
from clperiod.io.file_errors import OPENERS, damage_message, is_damage, text_errors

#: Largest and smallest read block, in observations. Blocks only bound memory
#: and latency, they never change the chunks: a reader asks for blocks about
#: the size of its chunks (up to READ_ROWS), so the first chunk is ready (and
#: the device busy) before the whole file is parsed. The chunker joins the
#: blocks of a chunk once; 2^18 rows took 185 MiB above the interpreter to
#: read a 10^7-row Parquet file in chunks of 10^6 rows, 2^20 rows 250 MiB.
READ_ROWS = 1 << 18
MIN_READ_ROWS = 1 << 14
#: Bytes that the Parquet reader buffers per column (pages are decoded as the
#: rows are read; pyarrow's default pre-buffering would read whole row
#: groups, or the whole file, at once). 256 KiB read the first 32,768 rows of
#: a file 20 % sooner than 1 MiB and a whole 1.6x10^6-row file as fast;
#: 64 KiB read the whole file 20 % slower.
PARQUET_BUFFER = 1 << 18
#: Suffixes of Parquet files.
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Text compressions known by suffix (pandas' names).
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}


def block_rows(chunk_rows: int) -> int:
    """Observations per read block for chunks of ``chunk_rows`` observations."""
    return min(READ_ROWS, max(MIN_READ_ROWS, chunk_rows))


def ramp(first: int, most: int) -> Iterator[int]:
    """Block sizes ``first, 2 first, 4 first, ...`` up to ``most``, then ``most``
    for ever (the first block of a file is ready soon; see the chunker's ramp)."""
    size = min(first, most)
    while True:
        yield size
        size = min(most, 2 * size)


def csv_blocks(
    path: Path,
    layout: str,
    roles: dict[str, str],
    delimiter: str,
    rows: int,
    first: int | None = None,
) -> Iterator[Block]:
    """Blocks of ``rows`` lines of a CSV file ("csv" or "lightcurve-csv" layout), by pandas.

    ``roles`` maps ``id``, ``t``, ``y`` (and ``dy``) to column names. With
    ``first``, the block sizes ramp up from it (:func:`ramp`). A line with
    fewer fields than the header (a file cut off mid-line) is an error,
    not missing values (:class:`_ShortRows`).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError(
            f"reading the CSV file {path} in chunks needs pandas: pip install clperiod[catalog]"
        ) from None
    if layout == "lightcurve-csv":
        names = lightcurve_columns(path, delimiter)
        options: dict[str, Any] = {"header": None, "names": names, "comment": "#"}
        lines_before = 0
    else:
        skip, names = csv_header(path, delimiter)
        options = {"header": 0, "names": names, "skiprows": skip}
        lines_before = skip + 1
    # Every column is parsed (no usecols): pandas then rejects lines with too
    # many fields instead of silently cutting them; index_col=False stops it
    # from taking the first column as an index (csv_header checked row 0).
    options |= {
        "sep": delimiter,
        "skipinitialspace": True,
        "index_col": False,
        "compression": COMPRESSIONS.get(path.suffix.lower()),
    }
    id_kind = _csv_id_kind(path, options, roles["id"], rows)
    options["dtype"] = {roles["band"]: str} if "band" in roles else {}
    if id_kind == "text":
        options["dtype"][roles["id"]] = str
    row = 0
    short_rows = _ShortRows(path, layout, delimiter, lines_before, names, roles)
    try:
        with short_rows, pd.read_csv(path, chunksize=rows, **options) as frames:
            for size in ramp(first or rows, rows):
                try:
                    frame = frames.get_chunk(size)
                except StopIteration:
                    break
                if frame.empty:
                    continue
                short_rows.check(frame, row)
                ids = _csv_ids(path, frame[roles["id"]], row, id_kind)
                columns = {
                    role: (_csv_labels if role == "band" else _csv_numbers)(
                        path, frame[name], name, row
                    )
                    for role, name in roles.items()
                    if role != "id"
                }
                yield long_block(ids, columns, row)
                row += len(frame)
    except Exception as error:
        raise _csv_error(path, error) from None


def _csv_error(path: Path, error: Exception) -> Exception:
    """The error to raise for one met reading a CSV file: pandas' parse errors and
    damaged data as ValueErrors naming the file and line; others as they are."""
    import pandas as pd

    if isinstance(error, pd.errors.ParserError):
        return ValueError(f"{path}: {' '.join(str(error).split())}")
    if is_damage(error):
        return ValueError(damage_message(path, error))
    return error


def _csv_id_kind(path: Path, options: dict[str, Any], id_col: str, rows: int) -> str:
    """``"int64"``, ``"uint64"`` or ``"text"``: the type of the ids of the first read block."""
    import pandas as pd

    try:
        ids = pd.read_csv(path, nrows=rows, usecols=[id_col], **options)[id_col]
    except Exception as error:
        raise _csv_error(path, error) from None
    if not pd.api.types.is_integer_dtype(ids.dtype):
        return "text"
    return "uint64" if ids.dtype == np.uint64 else "int64"


class _ShortRows:
    """Tell a line cut short (fewer fields than the header) from one with empty fields.

    pandas reads both as missing values. A block's rows whose last column
    and some used column are missing are looked up in the file again with
    Python's csv module (forward only, opened at the first such row), and
    one with fewer fields than the header is an error naming the file, row
    and line.
    """

    def __init__(
        self,
        path: Path,
        layout: str,
        delimiter: str,
        lines_before: int,
        names: list[str],
        roles: dict[str, str],
    ) -> None:
        self.path, self.layout, self.delimiter = path, layout, delimiter
        self.lines_before, self.names = lines_before, names
        self.used = list(roles.values())
        self.id_field = names.index(roles["id"])
        self._handle: IO[str] | None = None
        self._records: Any = None
        self._row = -1
        self._last: list[str] = []

    def __enter__(self) -> _ShortRows:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._handle is not None:
            self._handle.close()

    def check(self, frame: Any, first_row: int) -> None:
        """Raise for the first row of ``frame`` (file row ``first_row`` on) cut short."""
        missing = frame[self.names[-1]].isna().to_numpy()
        if not missing.any():
            return
        missing = missing & frame[self.used].isna().to_numpy().any(axis=1)
        for k in np.flatnonzero(missing):
            line, record = self._record(first_row + int(k))
            if len(record) < len(self.names) and self._same_id(record, frame.iloc[k]):
                raise ValueError(
                    f"{self.path}: row {first_row + int(k)} (line {line}) is cut short: "
                    f"{len(record)} of {len(self.names)} fields "
                    f"({self.delimiter.join(record)!r}); the file may be truncated"
                )

    def _record(self, row: int) -> tuple[int, list[str]]:
        """Line number (from 1) and fields of data row ``row`` (asked in increasing order)."""
        if self._records is None:
            self._handle = open_text(self.path)
            lines: Iterator[str] = itertools.islice(self._handle, self.lines_before, None)
            if self.layout == "lightcurve-csv":
                lines = (line.split("#", 1)[0] for line in lines)
            self._records = csv.reader(lines, delimiter=self.delimiter, skipinitialspace=True)
        while self._row < row:
            record = next(self._records, None)
            if record is None:
                return 0, list(self.names)  # the file changed: nothing to tell
            self._last = record
            if len(self._last) > 1 or "".join(self._last).strip():  # pandas skips blank lines
                self._row += 1
        return self.lines_before + self._records.line_num, self._last

    def _same_id(self, record: list[str], parsed: Any) -> bool:
        """Whether the record's id field holds the id that pandas read for the row."""
        if self.id_field >= len(record):
            return False
        value = parsed.iloc[self.id_field]
        text = record[self.id_field].strip()
        if isinstance(value, str):
            return text == value.strip()
        return _integer(text) == value


def _csv_ids(path: Path, ids: Any, first_row: int, kind: str) -> np.ndarray:
    """A block's ids as ``kind`` (see :func:`_csv_id_kind`), naming the row of a bad one."""
    missing = np.flatnonzero(ids.isna().to_numpy())
    if missing.size:
        raise ValueError(f"{path}: row {first_row + int(missing[0])}: missing object id")
    if kind == "text":
        return np.asarray(ids.str.strip().to_numpy(dtype=object), dtype=str)
    import pandas as pd

    limits = np.iinfo(kind)
    bad: np.ndarray | list[int]
    if pd.api.types.is_integer_dtype(ids.dtype):
        values = ids.to_numpy()
        bad = np.flatnonzero((values < limits.min) | (values > limits.max))
        if not bad.size:
            return values.astype(kind)
    else:
        values = ids.to_numpy(dtype=object)
        numbers = [_integer(value) for value in values]
        bad = [k for k, n in enumerate(numbers) if n is None or not limits.min <= n <= limits.max]
        if not bad:
            return np.array(numbers, dtype=kind)
    k = int(bad[0])
    raise ValueError(
        f"{path}: row {first_row + k}: object id {_plain(values[k])!r} is not an integer of the "
        f"file's id type ({kind}, from the ids at its start); the ids of one file must all "
        "be integers of one type or all text"
    )


def _integer(value: Any) -> int | None:
    """``value`` (text or number) as a Python int, or None if it is not an integer."""
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _csv_numbers(path: Path, values: Any, name: str, first_row: int) -> np.ndarray:
    """A block's column as float64 (empty -> NaN), naming the row of a non-number."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
        values.dtype
    ):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    numbers = pd.to_numeric(values, errors="coerce")
    bad = np.flatnonzero(numbers.isna().to_numpy() & values.notna().to_numpy())
    if bad.size or pd.api.types.is_bool_dtype(values.dtype):
        k = int(bad[0]) if bad.size else 0
        raise ValueError(
            f"{path}: row {first_row + k}: column {name!r} has "
            f"{_plain(values.iloc[k])!r}, not a number"
        )
    return numbers.to_numpy(dtype=np.float64, na_value=np.nan)


def _csv_labels(path: Path, values: Any, name: str, first_row: int) -> np.ndarray:
    """A block's band label column as stripped text; an empty label is an error."""
    text = values.fillna("").to_numpy(dtype=str)
    text = np.char.strip(text)
    empty = text == ""
    if empty.any():
        raise ValueError(
            f"{path}: row {first_row + int(np.argmax(empty))}: column {name!r} has no band label"
        )
    return text


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def open_text(path: Path) -> IO[str]:
    """Open a text file, decompressing ``.gz``, ``.bz2`` and ``.xz`` files (a BOM is dropped)."""
    opener: Callable[..., IO[str]] = OPENERS.get(path.suffix.lower(), open)
    return opener(path, "rt", encoding="utf-8-sig", newline="")


def leading_record(path: Path) -> tuple[int, str]:
    """The first line that is neither blank nor a ``#`` comment, and how many lines precede it.

    Raises a ValueError naming the file (and the line and byte) for text that
    is not UTF-8, damaged compressed data, NUL bytes (UTF-16 text without a
    byte-order mark, or binary data) and a file without data rows.
    """
    with text_errors(path), open_text(path) as handle:
        for index, line in enumerate(handle):
            if "\0" in line:
                raise ValueError(
                    f"{path}: line {index + 1} holds NUL bytes: the file is not "
                    "UTF-8 text (UTF-16 without a byte-order mark, or binary)"
                )
            if line.split("#", 1)[0].strip():
                return index, line.strip()
    raise ValueError(f"{path}: no data rows")


def first_fields(path: Path, delimiter: str) -> list[str]:
    """The fields of the first line that is neither blank nor a comment (comment cut off)."""
    return leading_record(path)[1].split("#", 1)[0].split(delimiter)


def lightcurve_columns(path: Path, delimiter: str) -> list[str]:
    """Column names of a file in the papers' layout: ``id, t, y`` or ``id, t, y, dy``."""
    n = len(first_fields(path, delimiter))
    if n not in (3, 4):
        raise ValueError(
            f"{path}: expected 3 (objId, t, y) or 4 (objId, t, y, dy) "
            f"{delimiter!r}-separated columns, found {n}"
        )
    return ["id", "t", "y", "dy"][:n]


def csv_header(path: Path, delimiter: str) -> tuple[int, list[str]]:
    """Lines before the header (blank, ``#`` comments) and the column names of a CSV file.

    Raises a ValueError when the first data row has more fields than the
    header (pandas would silently take the first column as an index).
    """
    skip, _ = leading_record(path)
    with text_errors(path), open_text(path) as handle:
        records = csv.reader(itertools.islice(handle, skip, None), delimiter=delimiter)
        names = [name.strip() for name in next(records)]
        first = next((row for row in records if any(field.strip() for field in row)), None)
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"{path}: line {skip + 1}: the header names the column(s) {repeated} "
            f"more than once ({names}); column names must be unique"
        )
    if first is not None and len(first) > len(names):
        raise ValueError(
            f"{path}: row 0 has {len(first)} fields, the header {len(names)} ({names})"
        )
    return skip, names


def are_numbers(fields: list[str]) -> bool:
    """Whether every field parses as a number."""
    try:
        [float(field) for field in fields]
    except ValueError:
        return False
    return True


def _pyarrow_parquet(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            f"reading the Parquet file {path} needs pyarrow: pip install clperiod[catalog]"
        ) from None
    return pq


def open_parquet(path: Path) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` that reads as it goes, never a whole
    row group at once (buffered reads of :data:`PARQUET_BUFFER` bytes per
    column, so a file truncated while it is read gives an error, not a crash)."""
    return _pyarrow_parquet(path).ParquetFile(
        path, metadata=parquet_metadata(path), pre_buffer=False, buffer_size=PARQUET_BUFFER
    )


def parquet_metadata(path: Path) -> Any:
    """The footer (``FileMetaData``) of a Parquet file, read once per version
    of the file (its device and inode, size and modification time)."""
    pq = _pyarrow_parquet(path)
    stat = os.stat(path)
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _FOOTERS_LOCK:
        if key in _FOOTERS:
            return _FOOTERS[key]
    try:
        metadata = pq.read_metadata(path)
    except (OSError, ValueError) as error:  # pyarrow's ArrowIOError / ArrowInvalid
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None
    with _FOOTERS_LOCK:
        _FOOTERS[key] = metadata
        while len(_FOOTERS) > _FOOTERS_KEPT:
            del _FOOTERS[next(iter(_FOOTERS))]
    return metadata


_FOOTERS: dict[tuple[int, int, int, int], Any] = {}
_FOOTERS_KEPT = 16
_FOOTERS_LOCK = threading.Lock()


def parquet_schema(path: Path) -> Any:
    """The Arrow schema of a Parquet file."""
    return parquet_metadata(path).schema.to_arrow_schema()


def struct_fields(arrow_type: Any) -> list[str] | None:
    """Field names of a ``list<struct>`` (or large list) type, else None."""
    import pyarrow as pa

    if not (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)):
        return None
    value_type = arrow_type.value_type
    if not pa.types.is_struct(value_type):
        return None
    return [value_type.field(i).name for i in range(value_type.num_fields)]


def nested_columns(schema: Any, field: str | None) -> list[str]:
    """``list<struct>`` columns (that hold ``field``, when given)."""
    found = []
    for name in schema.names:
        fields = struct_fields(schema.field(name).type)
        if fields is not None and (field is None or field in fields):
            found.append(name)
    return found


def parquet_blocks(
    path: Path, roles: dict[str, str], rows: int, first: int | None = None
) -> Iterator[Block]:
    """Blocks of ``rows`` rows of a long-format Parquet file (only ``roles`` columns
    read); with ``first``, the block sizes ramp up from it (:func:`ramp`).

    The file is opened at once, in the caller's thread, and read from the
    first ``next`` on (a reader thread then starts with the decoding)."""
    return _long_blocks(open_parquet(path), path, roles, rows, first)


def _long_blocks(
    parquet: Any, path: Path, roles: dict[str, str], rows: int, first: int | None
) -> Iterator[Block]:
    row = 0
    with parquet:
        batches = _ramped_batches(parquet, list(roles.values()), first or rows, rows)
        for batch in readable_batches(parquet.metadata, path, batches):
            ids = id_values(batch.column(roles["id"]), roles["id"], row, path)
            columns = {
                role: (arrow_labels if role == "band" else arrow_numbers)(
                    batch.column(name), name, row, path
                )
                for role, name in roles.items()
                if role != "id"
            }
            yield long_block(ids, columns, row)
            row += batch.num_rows


def nested_blocks(
    path: Path, roles: dict[str, str], nested_col: str, rows: int, first: int | None = None
) -> Iterator[Block]:
    """Blocks of a nested Parquet file: one object per row, observations in ``nested_col``.

    Only the id column and the struct fields named in ``roles`` are read, in
    blocks of about ``rows`` observations (objects per block from the mean
    light-curve length that the file's metadata gives); with ``first``, the
    block sizes ramp up from about that many (:func:`ramp`). Opened at once,
    like :func:`parquet_blocks`.
    """
    return _nested_blocks(open_parquet(path), path, roles, nested_col, rows, first)


def _nested_blocks(
    parquet: Any, path: Path, roles: dict[str, str], nested_col: str, rows: int, first: int | None
) -> Iterator[Block]:
    id_col = roles["id"]
    roles = {role: name for role, name in roles.items() if role != "id"}
    row = 0
    with parquet:
        paths = [id_col, *_leaf_paths(parquet.schema, nested_col, set(roles.values()))]
        objects = _objects_per_block(parquet, paths[1], rows)
        first_objects = _objects_per_block(parquet, paths[1], first or rows)
        batches = _ramped_batches(parquet, paths, first_objects, objects)
        for batch in readable_batches(parquet.metadata, path, batches):
            ids = id_values(batch.column(id_col), id_col, row, path)
            yield nested_block(batch.column(nested_col), ids, roles, row, path)
            row += batch.num_rows


def readable_batches(metadata: Any, path: Path, batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` of a whole Parquet file, pyarrow's errors on damaged data
    (``Corrupt snappy compressed data.``, bad pages) as ValueErrors naming the
    file, the row group and the row where the batch that failed starts; so is
    an end before the rows that the footer announces (pyarrow can stop
    without an error at a row group cut off by a file truncated while it is
    read)."""
    import pyarrow as pa

    row = 0
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            if row < metadata.num_rows:
                raise ValueError(
                    f"{path}: {parquet_place(metadata, row)}: the Parquet data "
                    f"end early, after {row} of the {metadata.num_rows} rows "
                    "that the footer announces (the file was truncated or "
                    "replaced while it was read)"
                ) from None
            return
        except (OSError, ValueError, pa.ArrowException) as error:
            raise ValueError(
                f"{path}: {parquet_place(metadata, row)}: cannot read the Parquet "
                f"data ({' '.join(str(error).split())})"
            ) from None
        yield batch
        row += batch.num_rows


def parquet_place(metadata: Any, row: int) -> str:
    """``at or after row R (row group G of N, rows A to B)``: where a read from file row
    ``row`` on lies in a Parquet file."""
    start = 0
    for group in range(metadata.num_row_groups):
        size = metadata.row_group(group).num_rows
        if row < start + size:
            return (
                f"at or after row {row} (row group {group} of {metadata.num_row_groups}, "
                f"rows {start} to {start + size - 1})"
            )
        start += size
    return f"after row {row}"


def _ramped_batches(parquet: Any, columns: list[str], first: int, most: int) -> Iterator[Any]:
    """Record batches of the sizes :func:`ramp` gives (the first row group is
    read in batches of ``first`` rows, joined up to each size; later row
    groups in batches of ``most`` rows, as the ramp has ended by then)."""
    import pyarrow as pa

    groups = parquet.metadata.num_row_groups
    if not groups:
        return
    sizes = ramp(first, most)
    size, pending, count = next(sizes), [], 0
    for batch in parquet.iter_batches(
        batch_size=min(first, most), columns=columns, row_groups=[0]
    ):
        pending.append(batch)
        count += batch.num_rows
        if count >= size:
            yield pending[0] if len(pending) == 1 else _joined(pa, pending)
            size, pending, count = next(sizes), [], 0
    if count:
        yield _joined(pa, pending)
    if groups > 1:
        yield from parquet.iter_batches(
            batch_size=most, columns=columns, row_groups=range(1, groups)
        )


def _joined(pa: Any, batches: list[Any]) -> Any:
    """Consecutive record batches as one."""
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _objects_per_block(parquet: Any, leaf_path: str, rows: int) -> int:
    """Objects holding about ``rows`` observations, from the leaf column's value count."""
    meta = parquet.metadata
    leaf = [parquet.schema.column(k).path for k in range(len(parquet.schema))].index(leaf_path)
    values = sum(meta.row_group(g).column(leaf).num_values for g in range(meta.num_row_groups))
    per_object = max(1.0, values / max(1, meta.num_rows))
    return max(1, int(rows / per_object))


def _leaf_paths(schema: Any, nested_col: str, fields: set[str]) -> list[str]:
    """Parquet column paths of the struct fields we need (only those are read)."""
    paths = []
    for k in range(len(schema)):
        parts = schema.column(k).path.split(".")
        if parts[0] == nested_col and parts[-1] in fields:
            paths.append(schema.column(k).path)
    return paths


def nested_block(
    nested: Any, ids: np.ndarray, roles: dict[str, str], first_row: int, where: Any
) -> Block:
    """A block from a ``list<struct>`` array: offsets from the list, flat struct fields."""
    import pyarrow.compute as pc

    names = struct_fields(nested.type)
    if names is None:
        raise ValueError(f"{where}: the nested column has type {nested.type}, not list<struct>")
    if len(nested) != ids.size:
        raise ValueError(f"{where}: {ids.size} ids for {len(nested)} nested entries")
    if nested.null_count == 0:
        offsets = np.asarray(nested.offsets, dtype=np.int64)
        offsets -= offsets[0]
    else:
        lengths = pc.fill_null(pc.list_value_length(nested), 0).to_numpy()
        offsets = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    # flatten() honours the slice offset, null lists and null struct entries
    fields = dict(zip(names, nested.flatten().flatten(), strict=True))
    columns = {}
    for role, name in roles.items():
        if name not in fields:
            raise ValueError(f"{where}: no field {name!r} in the nested column; found {names}")
        read = arrow_labels if role == "band" else arrow_numbers
        columns[role] = read(fields[name], name, first_row, where, nested_rows=offsets)
    return Block(ids, offsets, columns, first_row, open_end=False)


def id_values(values: Any, name: str, first_row: int, where: Any) -> np.ndarray:
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
        return values.to_numpy().astype(np.uint64 if kind == pa.uint64() else np.int64, copy=False)
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=str)
    raise ValueError(
        f"{where}: column {name!r} holds {kind} values; object ids must be integers or text"
    )


def arrow_numbers(
    values: Any, name: str, first_row: int, where: Any, nested_rows: np.ndarray | None = None
) -> np.ndarray:
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
    raise ValueError(
        f"{where}: {_row_of(bad, first_row, nested_rows)}: column {name!r} ({kind}) has "
        f"{listed[bad]!r}, not a number"
    )


def arrow_labels(
    values: Any, name: str, first_row: int, where: Any, nested_rows: np.ndarray | None = None
) -> np.ndarray:
    """A band label Arrow array (strings, integers or a dictionary of them) as str
    or int64 labels; a null, NaN or empty label is an error naming its row."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    kind = values.type
    if not (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_integer(kind)
        or pa.types.is_floating(kind)
    ):
        raise ValueError(f"{where}: column {name!r} ({kind}) holds no band labels")
    labels = read_band_labels(f"{where}: column {name!r}", values.to_numpy(zero_copy_only=False))
    if labels.missing.any():
        bad = int(np.argmax(labels.missing))
        raise ValueError(
            f"{where}: {_row_of(bad, first_row, nested_rows)}: column {name!r} has no band label"
        )
    return labels.values


def _row_of(index: int, first_row: int, nested_rows: np.ndarray | None) -> str:
    """Where entry ``index`` of a block is: a file row, or a row and observation."""
    if nested_rows is None:
        return f"row {first_row + index}"
    k = int(np.searchsorted(nested_rows, index, side="right")) - 1
    return f"row {first_row + k}, observation {index - int(nested_rows[k])}"
