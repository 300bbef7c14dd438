"""Write per-object results and periodograms to files.

**Results** are the columns of :func:`clperiod.io.tables.result_columns` (one row
per object: ``id``, ``n_points``, ``period``, ``frequency``, ``power``,
``fap``, ``period_1 ..``, ``power_1 ..``, ``status``, ``status_name``), written
as Parquet (``.parquet``, ``.pq``) or CSV (``.csv``). Parquet files carry the
run's settings as JSON under the schema metadata key ``clperiod``.

**Periodograms** (``periodogram=True`` results) are written as

* ``.npy``: the power array, shape ``(n_objects, nf)``, rows in the order of
  the results;
* ``.npz``: ``power``, ``id``, and the grid as ``fmin``, ``df``, ``nf``;
* ``.h5`` / ``.hdf5`` (h5py): datasets ``power`` and ``id``, the grid as
  attributes ``fmin``, ``df``, ``nf``;
* ``.parquet``: columns ``id`` and ``power`` (a fixed-size list of ``nf``
  values per object), the grid in the schema metadata (JSON under the key
  ``clperiod``).

Frequencies are ``fmin + k * df``, ``k = 0 .. nf - 1``. On a
:class:`~clperiod.FrequencyArray` the files hold the frequencies themselves,
in the order of the power columns, in place of ``fmin`` and ``df``: the
array ``frequencies`` (float64) next to ``nf`` in ``.npz`` files, the dataset
``frequencies`` next to the attribute ``nf`` in HDF5 files, and the list
``frequencies`` next to ``nf`` in the Parquet metadata (each number as JSON
writes a float64, exactly).
:class:`PeriodogramWriter` writes any of these part by part, so a catalog's
periodograms never have to be in memory at once.

Every file is written under a temporary name next to it and moved into place
(``os.replace``) when complete and on the disk (:func:`durable_replace`). A
temporary is a new file with an unpredictable name,
``.<name>.tmp-<pid>-<random>``, created with ``O_CREAT | O_EXCL | O_NOFOLLOW``
(:func:`exclusive_temporary`): a file or symbolic link that another user
placed in a shared directory is never opened, let alone overwritten. A write
that fails, the final rename included, removes its temporary.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import secrets
import shutil
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from clperiod.grid import FrequencyArray
from clperiod.io.tables import result_columns

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "PERIODOGRAM_FORMATS",
    "RESULT_FORMATS",
    "PeriodogramWriter",
    "ResultsWriter",
    "atomic_path",
    "durable_replace",
    "exclusive_temporary",
    "is_temporary",
    "periodogram_format",
    "remove_path",
    "remove_temporaries",
    "result_format",
    "results_table",
    "write_periodograms",
    "write_results",
    "write_results_table",
]

#: Result file formats and their suffixes.
RESULT_FORMATS: dict[str, tuple[str, ...]] = {"parquet": (".parquet", ".pq"), "csv": (".csv",)}
#: Periodogram file formats and their suffixes.
PERIODOGRAM_FORMATS: dict[str, tuple[str, ...]] = {
    "npy": (".npy",),
    "npz": (".npz",),
    "hdf5": (".h5", ".hdf5"),
    "parquet": (".parquet", ".pq"),
}
#: Schema metadata key of the run settings in Parquet files.
METADATA_KEY = b"clperiod"


def result_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The results format: ``fmt`` if given, else from the suffix of ``path``."""
    return _format(path, fmt, RESULT_FORMATS, "results")


def periodogram_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The periodogram format: ``fmt`` if given, else from the suffix of ``path``."""
    return _format(path, fmt, PERIODOGRAM_FORMATS, "periodogram")


def results_table(
    columns: Mapping[str, np.ndarray], metadata: Mapping[str, Any] | None = None
) -> pa.Table:
    """A pyarrow Table of result columns (see :func:`clperiod.io.tables.result_columns`).

    ``metadata`` (JSON-ready) is stored under the schema metadata key ``clperiod``.
    """
    pa = _pyarrow()
    table = pa.table({name: pa.array(np.asarray(values)) for name, values in columns.items()})
    if metadata is not None:
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(dict(metadata))})
    return table


def write_results(
    path: str | os.PathLike[str],
    result: Any,
    *,
    fap_method: str | None = "baluev",
    format: str | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> str:
    """Write the per-object results of a period search (one row per object).

    Parameters
    ----------
    path : path-like
        Output file.
    result : LombScargleResult, SuperSmootherResult, MultibandResult or MhaovResult
        The search result.
    fap_method : str or None
        False-alarm-probability method of the ``fap`` column (Lomb-Scargle
        only), or None for no such column.
    format : {"parquet", "csv"}, optional
        Default: from the suffix.
    metadata : mapping, optional
        JSON-ready settings stored in Parquet files (key ``clperiod``).

    Returns
    -------
    str
        The format written.
    """
    fmt = result_format(path, format)
    table = results_table(result_columns(result, fap_method=fap_method), metadata)
    write_results_table(path, table, fmt)
    return fmt


def write_results_table(path: str | os.PathLike[str], table: Any, fmt: str) -> None:
    """Write a results Table atomically (see :class:`ResultsWriter`)."""
    with ResultsWriter(path, fmt) as writer:
        writer.write(table)


class ResultsWriter:
    """Write result Tables of one schema, in turn, into one file.

    Use as a context manager; the file appears (atomically) on a clean exit
    and is not written when an exception leaves the block.

    Parameters
    ----------
    path : path-like
        Output file.
    fmt : {"parquet", "csv"}
        Format.
    metadata : mapping, optional
        JSON-ready settings that replace each table's schema metadata
        (Parquet key ``clperiod``).
    """

    def __init__(
        self, path: str | os.PathLike[str], fmt: str, metadata: Mapping[str, Any] | None = None
    ) -> None:
        self.path = Path(path)
        self.format = result_format(path, fmt)
        self.metadata = None if metadata is None else {METADATA_KEY: json.dumps(dict(metadata))}
        self.written = 0
        self._temporary: Path | None = None  # created with the first rows
        self._sink: Any = None

    def __enter__(self) -> ResultsWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._temporary is None:
            return
        with _discarded_on_error(self._temporary):
            if self._sink is not None:
                self._sink.close()
            if kind is None and self._sink is not None:
                durable_replace(self._temporary, self.path)
                return
        self._temporary.unlink(missing_ok=True)

    def write(self, table: Any) -> None:
        """Append the rows of ``table`` (a pyarrow Table)."""
        if self.metadata is not None:
            table = table.replace_schema_metadata(self.metadata)
        if self._sink is None:
            self._temporary = exclusive_temporary(self.path)
            if self.format == "parquet":
                # dictionaries only for text: results are mostly distinct numbers
                text = [f.name for f in table.schema if _is_text(f.type)]
                self._sink = _pyarrow_parquet().ParquetWriter(
                    self._temporary, table.schema, use_dictionary=text
                )
            else:
                import pyarrow.csv as pcsv

                self._sink = pcsv.CSVWriter(self._temporary, table.schema)
        self._sink.write_table(table)
        self.written += table.num_rows


def write_periodograms(
    path: str | os.PathLike[str],
    result: Any,
    *,
    format: str | None = None,
) -> str:
    """Write the periodograms of a result computed with ``periodogram=True``.

    Parameters
    ----------
    path : path-like
        Output file (format from the suffix, see the module notes).
    result : LombScargleResult or SuperSmootherResult
        Must hold ``power``.
    format : {"npy", "npz", "hdf5", "parquet"}, optional
        Default: from the suffix.

    Returns
    -------
    str
        The format written.

    Raises
    ------
    ValueError
        The result holds no periodograms, or an unknown format.
    """
    if result.power is None:
        raise ValueError("the result holds no periodograms: run the search with periodogram=True")
    fmt = periodogram_format(path, format)
    with PeriodogramWriter(path, len(result.ids), result.grid, fmt) as writer:
        writer.write(np.asarray(result.ids), np.asarray(result.power))
    return fmt


class PeriodogramWriter:
    """Write periodograms part by part into one file (see the module notes).

    Use as a context manager; the file appears (atomically) on a clean exit
    and is not written when an exception leaves the block.

    Parameters
    ----------
    path : path-like
        Output file.
    n_objects : int
        Rows the file will hold in total.
    grid : FrequencyGrid or FrequencyArray
        The grid of every row.
    fmt : {"npy", "npz", "hdf5", "parquet"}, optional
        Default: from the suffix.
    """

    def __init__(
        self, path: str | os.PathLike[str], n_objects: int, grid: Any, fmt: str | None = None
    ) -> None:
        self.path = Path(path)
        self.format = periodogram_format(path, fmt)
        self.n_objects = int(n_objects)
        self.grid = grid
        self.written = 0
        self._ids: list[np.ndarray] = []
        self._temporary: Path | None = None  # created with the first rows
        self._sink: Any = None
        self._archive: zipfile.ZipFile | None = None

    def __enter__(self) -> PeriodogramWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            if kind is None:
                self._finish()
        except BaseException:
            self._discard()
            raise
        if self._temporary is None:  # failed before the first rows
            return
        with _discarded_on_error(self._temporary):
            self._close_sink()
            if kind is None:
                durable_replace(self._temporary, self.path)
                return
        self._temporary.unlink(missing_ok=True)

    def write(self, ids: np.ndarray, power: np.ndarray) -> None:
        """Append the periodograms ``power`` (rows) of the objects ``ids``."""
        power = np.asarray(power)
        ids = np.asarray(ids)
        if ids.dtype == object:  # text ids as pyarrow and pandas give them
            ids = ids.astype(str)
        if power.shape != (ids.size, self.grid.nf):
            raise ValueError(
                f"power must have shape ({ids.size}, {self.grid.nf}), got {power.shape}"
            )
        if self.written + ids.size > self.n_objects:
            raise ValueError(f"more than the announced {self.n_objects} periodograms")
        if self._sink is None:
            self._open(ids, power)
        getattr(self, f"_write_{self.format}")(ids, power)
        self.written += ids.size

    # ------------------------------------------------------------------ formats
    def _open(self, ids: np.ndarray, power: np.ndarray) -> None:
        shape = (self.n_objects, self.grid.nf)
        self._temporary = exclusive_temporary(self.path)
        if self.format in ("npy", "npz"):
            header = {
                "descr": np.lib.format.dtype_to_descr(power.dtype),
                "fortran_order": False,
                "shape": shape,
            }
            if self.format == "npy":
                self._sink = open(self._temporary, "wb")  # noqa: SIM115 (open across writes)
            else:
                self._archive = zipfile.ZipFile(self._temporary, "w", allowZip64=True)
                self._sink = self._archive.open("power.npy", "w", force_zip64=True)
            np.lib.format.write_array_header_2_0(self._sink, header)
        elif self.format == "hdf5":
            h5py = _h5py()
            self._sink = h5py.File(self._temporary, "w")
            self._sink.create_dataset(
                "power", shape=shape, dtype=power.dtype, chunks=True if self.n_objects else None
            )
            id_dtype = h5py.string_dtype() if ids.dtype.kind in "OUS" else ids.dtype
            self._sink.create_dataset("id", shape=(self.n_objects,), dtype=id_dtype)
            for name, value in self._grid_facts().items():
                self._sink.attrs[name] = value
            for name, array in self._grid_arrays().items():
                self._sink.create_dataset(name, data=array)
        else:
            pa = _pyarrow()
            rows = pa.list_(pa.from_numpy_dtype(power.dtype), self.grid.nf)
            schema = pa.schema(
                [("id", pa.array(ids).type), ("power", rows)],
                metadata={METADATA_KEY: json.dumps(self._grid_metadata())},
            )
            self._sink = _pyarrow_parquet().ParquetWriter(self._temporary, schema)

    def _write_npy(self, ids: np.ndarray, power: np.ndarray) -> None:
        # the array's own bytes (a memory map's pages), never a copy of them
        self._sink.write(np.ascontiguousarray(power).reshape(-1).view(np.uint8))

    def _write_npz(self, ids: np.ndarray, power: np.ndarray) -> None:
        self._ids.append(ids)
        self._write_npy(ids, power)

    def _write_hdf5(self, ids: np.ndarray, power: np.ndarray) -> None:
        rows = slice(self.written, self.written + ids.size)
        self._sink["power"][rows] = power
        self._sink["id"][rows] = ids.astype(object) if ids.dtype.kind == "U" else ids

    def _write_parquet(self, ids: np.ndarray, power: np.ndarray) -> None:
        pa = _pyarrow()
        values = pa.array(np.ascontiguousarray(power).ravel())
        lists = pa.FixedSizeListArray.from_arrays(values, self.grid.nf)
        self._sink.write_table(
            pa.table({"id": pa.array(ids), "power": lists}, schema=self._sink.schema)
        )

    def _finish(self) -> None:
        if self.written != self.n_objects:
            raise ValueError(f"{self.written} periodograms written, {self.n_objects} announced")
        if self._sink is None:  # no objects at all: an empty file of the format
            self._open(np.zeros(0, dtype=np.int64), np.zeros((0, self.grid.nf)))
        if self.format == "npz":
            self._sink.close()
            self._sink = None
            ids = np.concatenate(self._ids) if self._ids else np.zeros(0)
            facts = {name: np.asarray(value) for name, value in self._grid_facts().items()}
            arrays = {"id": ids} | facts | self._grid_arrays()
            assert self._archive is not None  # opened with the npz sink
            for name, array in arrays.items():
                with self._archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array, allow_pickle=False)

    def _discard(self) -> None:
        """Close what is open and remove the temporary (after an error)."""
        with contextlib.suppress(Exception):
            self._close_sink()
        if self._temporary is not None:
            self._temporary.unlink(missing_ok=True)

    def _close_sink(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        if self._archive is not None:
            self._archive.close()
            self._archive = None

    def _grid_facts(self) -> dict[str, Any]:
        """The grid's numbers: ``fmin``, ``df``, ``nf`` of a uniform grid, ``nf`` of an array."""
        if isinstance(self.grid, FrequencyArray):
            return {"nf": self.grid.nf}
        return {"fmin": self.grid.fmin, "df": self.grid.df, "nf": self.grid.nf}

    def _grid_arrays(self) -> dict[str, np.ndarray]:
        """The frequencies of an array grid (none for a uniform grid)."""
        if isinstance(self.grid, FrequencyArray):
            return {"frequencies": self.grid.frequencies()}
        return {}

    def _grid_metadata(self) -> dict[str, Any]:
        """The grid as JSON-ready Parquet metadata."""
        arrays = {name: array.tolist() for name, array in self._grid_arrays().items()}
        return self._grid_facts() | arrays


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A new empty temporary file next to ``path`` (:func:`exclusive_temporary`),
    moved onto ``path`` on a clean exit.

    The temporary file is removed when the block or the move raises, so
    ``path`` is either absent, the old file, or the complete new file; never
    a part.
    """
    path = Path(path)
    temporary = exclusive_temporary(path)
    with _discarded_on_error(temporary):
        yield temporary
        durable_replace(temporary, path)


def durable_replace(temporary: Path, path: Path) -> None:
    """Move the complete file ``temporary`` onto ``path`` so that a power loss
    or system crash leaves the old file or the complete new one: the data
    reach the disk (``fsync``) before the rename, and the rename before the
    call returns (``fsync`` of the directory, where the system allows it)."""
    with open(temporary, "rb") as written:
        os.fsync(written.fileno())
    os.replace(temporary, path)
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:  # directories cannot be opened here (Windows)
        return
    try:
        with contextlib.suppress(OSError):  # nor synced on some file systems
            os.fsync(directory)
    finally:
        os.close(directory)


# ---------------------------------------------------------------------- helpers


def _format(path: Any, fmt: str | None, formats: dict[str, tuple[str, ...]], what: str) -> str:
    suffix = Path(path).suffix.lower()
    if fmt is not None:
        if fmt not in formats:
            raise ValueError(f"unknown {what} format {fmt!r}; choose one of {tuple(formats)}")
        implied = [name for name, suffixes in formats.items() if suffix in suffixes]
        if implied and implied[0] != fmt:
            raise ValueError(
                f"the {what} format {fmt!r} disagrees with the suffix of {str(path)!r} "
                f"({implied[0]}); give a matching path or format"
            )
        return fmt
    for name, suffixes in formats.items():
        if suffix in suffixes:
            return name
    known = ", ".join(s for suffixes in formats.values() for s in suffixes)
    raise ValueError(
        f"cannot tell the {what} format of {str(path)!r} from its suffix "
        f"(known: {known}); give the format"
    )


def remove_temporaries(path: str | os.PathLike[str]) -> None:
    """Remove the temporary files that interrupted writes of ``path`` left next
    to it, and the directories that a process ending during a
    :func:`remove_path` of ``path`` left."""
    path = Path(path)
    for stray in path.parent.glob(f".{glob.escape(path.name)}.tmp-*"):
        _remove_now(stray)


def remove_path(path: str | os.PathLike[str]) -> None:
    """Remove a file or directory; a missing ``path`` is ignored.

    A directory is first renamed to an unpredictable hidden name next to it
    (``.<name>.tmp-<pid>-<random>-old``), then deleted: a process that ends
    meanwhile leaves no part of it under ``path``, only a temporary that
    :func:`remove_temporaries` of ``path`` removes.
    """
    path = Path(path)
    hidden = _temporary_name(path, "-old")
    try:
        os.rename(path, hidden)
    except FileNotFoundError:
        return
    _remove_now(hidden)


def is_temporary(path: Path) -> bool:
    """Whether ``path`` is the temporary name of a file being written."""
    return path.name.startswith(".") and ".tmp-" in path.name


def _remove_now(path: Path) -> None:
    """Delete a file or a directory tree (what cannot be deleted stays, under its name)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _temporary_name(path: Path, suffix: str = "") -> Path:
    """``.<name>.tmp-<pid>-<random><suffix>`` next to ``path`` (64 random bits)."""
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(8)}{suffix}")


def exclusive_temporary(path: str | os.PathLike[str]) -> Path:
    """Create a new empty file with an unpredictable name next to ``path``.

    The name is ``.<name>.tmp-<pid>-<random>`` (:func:`remove_temporaries`
    finds it), and the file is created with ``O_CREAT | O_EXCL |
    O_NOFOLLOW`` and the permissions a new file gets (``0o666`` less the
    umask): nothing that exists under that name, a symbolic link included,
    is opened. Writers then open the file by its name; in a directory that
    others may write to, its sticky bit keeps them from replacing it.

    Raises
    ------
    OSError
        The directory is missing or not writable.
    """
    path = Path(path)
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    while True:
        candidate = _temporary_name(path)
        try:
            os.close(os.open(candidate, flags, 0o666))
        except FileExistsError:  # 2**-64 for a name this process did not make
            continue
        except FileNotFoundError as error:
            if path.parent.is_dir():
                raise
            raise FileNotFoundError(
                f"cannot write {path}: the directory {path.parent} does not exist"
            ) from error
        return candidate


@contextlib.contextmanager
def _discarded_on_error(temporary: Path) -> Iterator[None]:
    """Remove ``temporary`` when the block raises."""
    try:
        yield
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _is_text(arrow_type: Any) -> bool:
    pa = _pyarrow()
    return (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
    )


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError:
        raise ImportError(
            "writing Parquet and CSV files needs pyarrow: pip install clperiod[catalog]"
        ) from None
    return pa


def _pyarrow_parquet() -> Any:
    _pyarrow()
    import pyarrow.parquet as pq

    return pq


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:
        raise ImportError("writing HDF5 files needs h5py: pip install clperiod[hdf5]") from None
    return h5py
