"""clperiod.io.readers: chunked reading of catalog files, their checks and errors."""

from __future__ import annotations

import gzip
import itertools
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clperiod import Catalog

from clperiod.io import readers as catalog_files

from clperiod.io import formats as catalog_formats
from clperiod.io.readers import CatalogReader, open_catalog
from clperiod.io.chunks import Block, Chunker, long_block
from clperiod.io import example_path, load_example


def _stripe82(n_objects: int = 12) -> Catalog:
    return load_example("stripe82").subset(np.arange(n_objects))


def _long_table(cat: Catalog, **names: str) -> pa.Table:
    ids = np.repeat(cat.ids, cat.lengths)
    columns = {"id": ids, "t": cat.t, "y": cat.y, "dy": cat.dy}
    return pa.table({names.get(k, k): v for k, v in columns.items()})


def _nested_table(cat: Catalog, id_name: str = "id", nested: str = "lc") -> pa.Table:
    struct = pa.StructArray.from_arrays([pa.array(cat.t), pa.array(cat.y), pa.array(cat.dy)],
                                        names=["t", "y", "dy"])
    lists = pa.ListArray.from_arrays(pa.array(cat.offsets.astype(np.int32)), struct)
    return pa.table({id_name: cat.ids, "ra": np.zeros(cat.n_objects), nested: lists})


def _write_lightcurve_csv(path: Path, cat: Catalog) -> Path:
    ids = np.repeat(cat.ids, cat.lengths)
    rows = zip(ids.tolist(), cat.t.tolist(), cat.y.tolist(), cat.dy.tolist())
    lines = [f"{i}, {t!r}, {y!r}, {dy!r}" for i, t, y, dy in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _assert_same(got: Catalog, expected: Catalog) -> None:
    for name in ("ids", "offsets", "t", "y", "dy"):
        np.testing.assert_array_equal(getattr(got, name), getattr(expected, name), err_msg=name)


# ---------------------------------------------------------------------- layouts


def test_every_layout_reads_the_same_catalog(tmp_path):
    cat = _stripe82()
    csv_path = tmp_path / "long.csv"
    _long_table(cat).to_pandas().to_csv(csv_path, index=False)
    packed = tmp_path / "long.csv.gz"
    packed.write_bytes(gzip.compress(csv_path.read_bytes()))
    pq.write_table(_long_table(cat), tmp_path / "long.parquet", row_group_size=100)
    pq.write_table(_nested_table(cat), tmp_path / "nested.parquet", row_group_size=5)
    files = {
        "lightcurve-csv": _write_lightcurve_csv(tmp_path / "lc.txt", cat),
        "csv": csv_path,
        "csv.gz": packed,
        "parquet": tmp_path / "long.parquet",
        "nested-parquet": tmp_path / "nested.parquet",
    }
    for layout, path in files.items():
        reader = open_catalog(path, chunk_rows=150)
        assert reader.layout == layout.removesuffix(".gz")
        assert reader.columns == {"id": "id", "t": "t", "y": "y", "dy": "dy"}
        _assert_same(reader.read(), cat)
    assert open_catalog(files["nested-parquet"]).n_rows == 12
    assert open_catalog(files["parquet"]).n_rows == cat.t.size
    assert open_catalog(files["csv"]).n_rows is None


def test_bundled_file_matches_read_lightcurve_csv():
    reader = open_catalog(example_path("stripe82"), chunk_rows=1000)
    chunks = list(reader)
    assert len(chunks) == 8
    assert [c.index for c in chunks] == list(range(8))
    assert all(c.n_rows <= 1000 for c in chunks)
    assert sum(c.n_rows for c in chunks) == 7064
    assert chunks[1].first_row == chunks[0].n_rows == int(chunks[0].catalog.offsets[-1])
    _assert_same(reader.read(), load_example("stripe82"))
    assert chunks[0].summary() == {"index": 0, "first_row": 0, "n_rows": chunks[0].n_rows,
                                   "n_objects": chunks[0].catalog.n_objects,
                                   "first_id": 2794912, "last_id": int(chunks[0].catalog.ids[-1]),
                                   "checksum": chunks[0].checksum}


def test_chunk_checksums_follow_the_rows_not_the_file(tmp_path):
    """A chunk's checksum depends on its rows only: the same rows in another
    layout give the same one, a changed value or id another, chunk by chunk."""
    cat = _stripe82()
    pq.write_table(_long_table(cat), tmp_path / "long.parquet")
    _write_lightcurve_csv(tmp_path / "lc.txt", cat)
    checksums = {name: [c.checksum for c in open_catalog(tmp_path / name, chunk_rows=150)]
                 for name in ("long.parquet", "lc.txt")}
    assert checksums["long.parquet"] == checksums["lc.txt"]
    assert len(set(checksums["lc.txt"])) == len(checksums["lc.txt"]) == 6
    assert all(len(c) == 32 and int(c, 16) >= 0 for c in checksums["lc.txt"])
    y = cat.y.copy()
    y[int(cat.offsets[5]) + 1] += 1e-9  # one value of object 5, in chunk 2 (objects 4, 5)
    changed = Catalog(cat.ids, cat.offsets, cat.t, y, cat.dy)
    pq.write_table(_long_table(changed), tmp_path / "changed.parquet")
    after = [c.checksum for c in open_catalog(tmp_path / "changed.parquet", chunk_rows=150)]
    assert [a != b for a, b in zip(after, checksums["lc.txt"])] == [0, 0, 1, 0, 0, 0]
    text = Catalog(cat.ids.astype(str), cat.offsets, cat.t, cat.y, cat.dy)
    pq.write_table(_long_table(text), tmp_path / "text.parquet")
    assert [c.checksum for c in open_catalog(tmp_path / "text.parquet", chunk_rows=150)] != (
        checksums["lc.txt"])


def test_named_columns_no_dy_and_delimiter(tmp_path):
    cat = _stripe82(3)
    frame = _long_table(cat, id="source", t="mjd", y="mag", dy="err").to_pandas()
    frame.to_csv(tmp_path / "a.tsv", sep="\t", index=False)
    reader = open_catalog(tmp_path / "a.tsv", id_col="source", t_col="mjd", y_col="mag",
                          dy_col="err", delimiter="\t")
    _assert_same(reader.read(), cat)
    plain = open_catalog(tmp_path / "a.tsv", id_col="source", t_col="mjd", y_col="mag",
                         delimiter="\t")
    assert plain.columns == {"id": "source", "t": "mjd", "y": "mag"}  # no column named dy
    assert plain.read().dy is None
    assert open_catalog(example_path("stripe82"), dy_col=None).read().dy is None
    assert open_catalog(example_path("ida")).read().dy is None  # three columns


def test_nested_fields_are_chosen_and_nulls_are_empty_objects(tmp_path):
    struct = pa.StructArray.from_arrays(
        [pa.array([1.0, 2.0, 3.0, 4.0]), pa.array([5.0, 6.0, 7.0, 8.0], pa.float32()),
         pa.array(["r", "g", "r", "r"])], names=["mjd", "flux", "band"])
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 4], pa.int32()), struct,
                                     mask=pa.array([False, True, False]))
    table = pa.table({"objectId": pa.array(["a", "b", "c"]), "src": lists,
                      "other": pa.array([[{"x": 1.0}], [], []])})
    pq.write_table(table, tmp_path / "n.parquet")
    reader = open_catalog(tmp_path / "n.parquet", id_col="objectId", t_col="mjd", y_col="flux")
    assert reader.nested_col == "src"  # the only list<struct> column with a field "mjd"
    message = r"give nested_col.*\('t'\); candidates: \['src', 'other'\]"
    with pytest.raises(ValueError, match=message):
        open_catalog(tmp_path / "n.parquet", id_col="objectId", layout="nested-parquet")
    cat = reader.read()
    assert reader.layout == "nested-parquet" and cat.ids.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(cat.offsets, [0, 2, 2, 4])
    np.testing.assert_array_equal(cat.y, [5.0, 6.0, 7.0, 8.0])
    assert cat.dy is None
    with pytest.raises(ValueError, match=r"no column\(s\) \['err'\] in the fields of column 'src'"):
        open_catalog(tmp_path / "n.parquet", id_col="objectId", t_col="mjd", y_col="flux",
                     dy_col="err", nested_col="src")
    with pytest.raises(ValueError, match="no column 'id'"):
        open_catalog(tmp_path / "n.parquet", t_col="mjd", y_col="flux", nested_col="src")


def test_text_ids_keep_leading_zeros_and_timestamps_become_mjd(tmp_path):
    (tmp_path / "ids.csv").write_text("id,t,y\n007,1,2\n007,2,3\nx,1,1\nx,2,2\n")
    assert open_catalog(tmp_path / "ids.csv").read().ids.tolist() == ["007", "x"]
    times = np.array(["2020-01-01T00:00", "2020-01-02T12:00"], dtype="datetime64[ms]")
    pq.write_table(pa.table({"id": [1, 1], "t": times, "y": [1.0, 2.0]}), tmp_path / "ts.parquet")
    np.testing.assert_allclose(open_catalog(tmp_path / "ts.parquet").read().t,
                               [58849.0, 58850.5], rtol=0, atol=1e-9)


def test_compressed_files_byte_order_mark_comments_and_spaced_names(tmp_path):
    import bz2
    import lzma

    body = "source , t , y\na ,1,2\na ,2,3\nb,1,5\n"
    (tmp_path / "a.csv").write_text("# made by a pipeline\n\n" + body)
    (tmp_path / "b.csv.bz2").write_bytes(bz2.compress(("# x\n" + body).encode()))
    (tmp_path / "c.csv").write_text("\ufeff" + body, encoding="utf-8")
    for name in ("a.csv", "b.csv.bz2", "c.csv"):
        reader = open_catalog(tmp_path / name, id_col="source")
        assert reader.layout == "csv", name
        cat = reader.read()
        assert cat.ids.tolist() == ["a", "b"] and cat.y.tolist() == [2.0, 3.0, 5.0], name
    (tmp_path / "lc.txt.xz").write_bytes(lzma.compress(b"# objId, t, y\n7, 1, 2\n7, 2, 3\n"))
    reader = open_catalog(tmp_path / "lc.txt.xz")
    assert reader.layout == "lightcurve-csv" and reader.read().t.tolist() == [1.0, 2.0]


def test_a_first_row_longer_than_the_header_is_an_error(tmp_path):
    # pandas would take the first column as the index and shift the others
    (tmp_path / "a.csv").write_text("id,t,y\n1,2,3,4\n1,3,4\n")
    with pytest.raises(ValueError, match=r"a\.csv: row 0 has 4 fields, the header 3"):
        open_catalog(tmp_path / "a.csv")


def test_integer_ids_beyond_int64(tmp_path, monkeypatch):
    big = 2**63 + 5
    (tmp_path / "u.csv").write_text(f"id,t,y\n{big},1,2\n{big},2,3\n{big + 1},1,1\n")
    ids = open_catalog(tmp_path / "u.csv").read().ids
    assert ids.dtype == np.uint64 and ids.tolist() == [big, big + 1]
    monkeypatch.setattr(catalog_formats, "READ_ROWS", 2)
    (tmp_path / "i.csv").write_text(f"id,t,y\n1,0,0\n2,1,1\n3,0,0\n{big},1,1\n")
    message = rf"i\.csv: row 3: object id {big} is not an integer of the file's id type \(int64"
    with pytest.raises(ValueError, match=message):
        open_catalog(tmp_path / "i.csv").read()
    (tmp_path / "n.csv").write_text(f"id,t,y\n{big},0,0\n{big},1,1\n3,0,0\n-4,1,1\n")
    with pytest.raises(ValueError, match=r"row 3: object id -4 is not .* \(uint64"):
        open_catalog(tmp_path / "n.csv").read()


@pytest.mark.slow
def test_reading_a_larger_file_needs_no_more_memory(tmp_path):
    """Peak memory when reading in small chunks does not grow with the file's size.

    Each layout is read in a fresh process: first a small file (imports,
    thread pools and allocator arenas reach their size), then one four times
    larger (61 MiB of observations, 31 MiB for CSV); the peak RSS may not
    rise by 15 MiB (a reader that loads a whole Parquet row group adds 46).
    """
    import subprocess
    import sys

    import pyarrow.csv as pcsv

    n = 2_000_000
    rng = np.random.default_rng(0)
    table = pa.table({"id": np.arange(n) // 20, "t": rng.random(n), "y": rng.random(n),
                      "dy": rng.random(n) + 1})
    offsets = pa.array(np.arange(0, n + 1, 20, dtype=np.int32))
    struct = pa.StructArray.from_arrays([table["t"].combine_chunks(), table["y"].combine_chunks()],
                                        names=["t", "y"])
    nested = pa.table({"id": np.arange(n // 20), "lc": pa.ListArray.from_arrays(offsets, struct)})
    short = pa.table({"id": table["id"], "t": np.arange(n) % 1024 / 4 + 1})  # quick to write
    short = short.append_column("y", short["t"]).append_column("dy", short["t"])
    for size, rows in (("small", n // 4), ("large", n)):
        pq.write_table(table[:rows], tmp_path / f"{size}.parquet", row_group_size=rows)
        pq.write_table(nested[:rows // 20], tmp_path / f"{size}-nested.parquet",
                       row_group_size=rows // 20)
        pcsv.write_csv(short[:rows // 2], tmp_path / f"{size}.csv")
    code = (
        "import resource, sys\n"
        "from clperiod.io.readers import open_catalog\n"
        "def peak(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "list(open_catalog(sys.argv[1], chunk_rows=1 << 15))\n"
        "start = peak()\n"
        "rows = sum(c.n_rows for c in open_catalog(sys.argv[2], chunk_rows=1 << 15))\n"
        "print(rows, peak() - start)\n"
    )
    processes = {
        suffix: subprocess.Popen([sys.executable, "-c", code, str(tmp_path / f"small{suffix}"),
                                  str(tmp_path / f"large{suffix}")], stdout=subprocess.PIPE,
                                 text=True)
        for suffix in (".parquet", "-nested.parquet", ".csv")
    }
    for suffix, process in processes.items():
        rows, growth_mib = process.communicate()[0].split()
        assert process.returncode == 0
        assert int(rows) == {".parquet": n, "-nested.parquet": n // 20, ".csv": n // 2}[suffix]
        assert float(growth_mib) < 15, (suffix, growth_mib)


# ---------------------------------------------------------------------- chunks


def test_an_object_spanning_read_blocks_is_carried_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_formats, "READ_ROWS", 3)
    ids = np.repeat([5, 6, 7], [2, 10, 4])
    t = np.arange(16.0)
    pq.write_table(pa.table({"id": ids, "t": t, "y": t}), tmp_path / "a.parquet")
    chunks = list(open_catalog(tmp_path / "a.parquet", chunk_rows=6))
    assert [c.catalog.ids.tolist() for c in chunks] == [[5], [6], [7]]
    assert [c.first_row for c in chunks] == [0, 2, 12]
    np.testing.assert_array_equal(chunks[1].catalog.t, np.arange(2.0, 12.0))
    chunks = list(open_catalog(tmp_path / "a.parquet", chunk_rows=12))
    assert [c.catalog.ids.tolist() for c in chunks] == [[5, 6], [7]]
    chunks = list(open_catalog(tmp_path / "a.parquet", chunk_rows=100, chunk_objects=2))
    assert [c.catalog.ids.tolist() for c in chunks] == [[5, 6], [7]]


def _blocks(lengths: list[int], cuts: list[int], rows_are_objects: bool) -> list[Block]:
    """The catalog of ``lengths`` as long-format (or nested) blocks cut at ``cuts``."""
    ids = np.arange(len(lengths)) * 3 + 1
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    rows = np.arange(offsets[-1], dtype=np.float64)
    blocks = []
    if rows_are_objects:
        edges = sorted({0, len(lengths), *(c % (len(lengths) + 1) for c in cuts)})
        for a, b in itertools.pairwise(edges):
            lo, hi = offsets[a], offsets[b]
            blocks.append(Block(ids[a:b], offsets[a:b + 1] - lo, {"t": rows[lo:hi]}, a, False))
        return blocks
    row_ids = np.repeat(ids, lengths)
    edges = sorted({0, int(offsets[-1]), *(c % (int(offsets[-1]) + 1) for c in cuts)})
    for a, b in itertools.pairwise(edges):
        part = row_ids[a:b]
        starts = np.flatnonzero(np.concatenate(([True], part[1:] != part[:-1])))
        blocks.append(Block(part[starts], np.append(starts, b - a), {"t": rows[a:b]}, a, True))
    return blocks


def _chunk(blocks, chunk_rows, chunk_objects, rows_are_objects, first_rows=None):
    chunker = Chunker(chunk_rows, chunk_objects, rows_are_objects, first_rows)
    out = [c for block in blocks for c in chunker.add(block)] + list(chunker.finish())
    return [(c.ids.tolist(), c.offsets.tolist(), c.first_row) for c in out]


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 9), min_size=1, max_size=25),
    cuts=st.lists(st.integers(0, 300), max_size=8),
    chunk_rows=st.integers(1, 20),
    chunk_objects=st.one_of(st.none(), st.integers(1, 6)),
    nested=st.booleans(),
    first_rows=st.one_of(st.none(), st.integers(1, 8)),
)
def test_chunks_do_not_depend_on_read_blocks(lengths, cuts, chunk_rows, chunk_objects, nested,
                                             first_rows):
    if not nested:
        lengths = [n or 1 for n in lengths]  # long format has no empty objects
    args = (chunk_rows, chunk_objects, nested, first_rows)
    whole = _chunk(_blocks(lengths, [], nested), *args)
    assert _chunk(_blocks(lengths, cuts, nested), *args) == whole
    assert [i for ids, _, _ in whole for i in ids] == [3 * k + 1 for k in range(len(lengths))]
    position = 0
    for index, (ids, offsets, first_row) in enumerate(whole):
        # the ramp: chunk i holds at most min(chunk_rows, first_rows * 2^i) rows
        limit = chunk_rows if first_rows is None else min(chunk_rows, first_rows << index)
        assert first_row == position
        position += len(ids) if nested else offsets[-1]
        assert len(ids) >= 1 and len(ids) <= (chunk_objects or len(ids))
        assert offsets[-1] <= limit or len(ids) == 1  # only a lone long object exceeds it
        k = [3 * j + 1 for j in range(len(lengths))].index(ids[-1]) + 1
        more_rows = offsets[-1] + lengths[k] if k < len(lengths) else None
        if more_rows is not None:  # the next object would have broken a limit
            assert more_rows > limit or len(ids) == chunk_objects


def test_an_object_of_many_blocks_is_copied_once(monkeypatch):
    """Blocks are joined when a chunk is cut, not one by one (that copied n^2 / 2 rows)."""
    from clperiod.io import chunks as chunking

    copied = []
    join = chunking._join

    def counting(blocks):
        if len(blocks) > 1:
            copied.append(sum(int(b.offsets[-1]) for b in blocks))
        return join(blocks)

    monkeypatch.setattr(chunking, "_join", counting)
    lengths = [3, 5000, 4]  # the long object arrives in 500 blocks of 10 rows
    blocks = _blocks(lengths, list(range(0, 5007, 10)), rows_are_objects=False)
    assert len(blocks) > 500
    chunks = _chunk(blocks, 100, None, rows_are_objects=False)
    assert [ids for ids, _, _ in chunks] == [[1], [4], [7]]
    assert sum(copied) <= 2 * sum(lengths)


def test_chunks_of_a_file_are_the_same_for_any_read_size(tmp_path, monkeypatch):
    cat = _stripe82(20)
    pq.write_table(_long_table(cat), tmp_path / "a.parquet", row_group_size=64)
    pq.write_table(_nested_table(cat), tmp_path / "n.parquet", row_group_size=3)
    _write_lightcurve_csv(tmp_path / "a.txt", cat)
    expected = [c.summary() for c in open_catalog(tmp_path / "a.parquet", chunk_rows=200)]
    objects = [c.catalog.ids.tolist() for c in open_catalog(tmp_path / "a.parquet",
                                                            chunk_rows=200)]
    monkeypatch.setattr(catalog_formats, "MIN_READ_ROWS", 1)
    for read_rows in (7, 100, 5000):
        monkeypatch.setattr(catalog_formats, "READ_ROWS", read_rows)
        for name in ("a.parquet", "a.txt"):
            got = [c.summary() for c in open_catalog(tmp_path / name, chunk_rows=200)]
            assert got == expected
        nested = open_catalog(tmp_path / "n.parquet", chunk_rows=200)
        assert [c.catalog.ids.tolist() for c in nested] == objects


def test_first_chunks_ramp_up_and_the_read_blocks_with_them(tmp_path, monkeypatch):
    cat = _stripe82(20)
    pq.write_table(_long_table(cat), tmp_path / "a.parquet", row_group_size=500)
    pq.write_table(_nested_table(cat), tmp_path / "n.parquet")
    _write_lightcurve_csv(tmp_path / "a.txt", cat)
    monkeypatch.setattr(catalog_formats, "MIN_READ_ROWS", 1)
    roles = {"id": "id", "t": "t", "y": "y", "dy": "dy"}
    blocks = list(catalog_formats.parquet_blocks(tmp_path / "a.parquet", roles, 200, first=25))
    # row group 0 (500 rows) in batches of 25 joined up the ramp, then batches of 200
    assert [int(b.offsets[-1]) for b in blocks][:6] == [25, 50, 100, 200, 125, 200]
    assert sum(int(b.offsets[-1]) for b in blocks) == cat.t.size
    blocks = catalog_formats.csv_blocks(tmp_path / "a.txt", "lightcurve-csv", roles, ",", 200,
                                        first=25)
    assert [int(b.offsets[-1]) for b in blocks][:5] == [25, 50, 100, 200, 200]
    whole = None
    for name in ("a.parquet", "a.txt", "n.parquet"):
        chunks = list(open_catalog(tmp_path / name, chunk_rows=200, first_chunk_rows=25))
        for index, chunk in enumerate(chunks):
            rows, limit = int(chunk.catalog.offsets[-1]), min(200, 25 << index)
            assert rows <= limit or chunk.catalog.n_objects == 1
            if index + 1 < len(chunks):  # the next object would not have fitted
                assert rows + int(chunks[index + 1].catalog.lengths[0]) > limit
        assert len(chunks) > len(list(open_catalog(tmp_path / name, chunk_rows=200,
                                                   first_chunk_rows=None)))
        ids = [c.catalog.ids.tolist() for c in chunks]
        assert whole is None or ids == whole
        whole = ids
        _assert_same(CatalogReader(tmp_path / name, first_chunk_rows=25).read(), cat)


def test_each_early_chunk_needs_one_more_block(tmp_path, monkeypatch):
    """A long file's first block holds the first chunk and one row more; chunk
    ``k`` of the ramp is cut once block ``k`` is read, with nothing read ahead."""
    cat = _stripe82(20)
    pq.write_table(_long_table(cat), tmp_path / "a.parquet")
    _write_lightcurve_csv(tmp_path / "a.txt", cat)
    monkeypatch.setattr(catalog_formats, "MIN_READ_ROWS", 1)
    long_block = catalog_formats.long_block
    for name in ("a.parquet", "a.txt"):
        sizes = []
        monkeypatch.setattr(catalog_formats, "long_block",
                            lambda ids, *a: sizes.append(ids.size) or long_block(ids, *a))
        reader = iter(open_catalog(tmp_path / name, chunk_rows=800, first_chunk_rows=100))
        for k in range(1, 4):
            next(reader)
            assert len(sizes) == k, name
        assert sizes == [101, 202, 404], name


def test_each_early_chunk_of_a_nested_file_needs_one_more_block(tmp_path, monkeypatch):
    """A nested file's first block holds a quarter more objects than the mean
    length puts in the first chunk, and the blocks ramp up from there: chunk
    ``k`` of the ramp is cut once block ``k`` is read."""
    cat = _stripe82(120)
    pq.write_table(_nested_table(cat), tmp_path / "n.parquet")
    monkeypatch.setattr(catalog_formats, "MIN_READ_ROWS", 1)
    nested_block = catalog_formats.nested_block
    sizes = []
    monkeypatch.setattr(catalog_formats, "nested_block",
                        lambda nested, ids, *a: sizes.append(ids.size)
                        or nested_block(nested, ids, *a))
    chunks = iter(open_catalog(tmp_path / "n.parquet", chunk_rows=4000, first_chunk_rows=400))
    per_object = cat.t.size / cat.n_objects
    for k in range(1, 4):
        chunk = next(chunks)
        assert len(sizes) == k
        assert chunk.catalog.n_objects <= 400 * 2 ** (k - 1) / per_object * 1.25
    first = int(500 / per_object)  # 1.25 x 400 observations
    assert sizes == [first, 2 * first, 4 * first]


# ---------------------------------------------------------------------- errors


def test_missing_columns_name_the_file(tmp_path):
    (tmp_path / "a.csv").write_text("id,time,flux\n1,1.0,2.0\n")
    message = r"a\.csv: no column\(s\) \['t', 'y'\]; found \['id', 'time', 'flux'\]"
    with pytest.raises(ValueError, match=message):
        open_catalog(tmp_path / "a.csv")
    pq.write_table(pa.table({"id": [1], "t": [1.0]}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"a\.parquet: no column\(s\) \['y'\]"):
        open_catalog(tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"no column\(s\) \['err'\]"):
        open_catalog(tmp_path / "a.parquet", y_col="t", dy_col="err")
    with pytest.raises(FileNotFoundError, match="no such file"):
        open_catalog(tmp_path / "absent.csv")
    with pytest.raises(IsADirectoryError, match="is a directory: give one catalog file"):
        open_catalog(tmp_path)
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ValueError, match="not a readable Parquet file"):
        open_catalog(tmp_path / "bad.parquet")


def test_non_numeric_values_name_file_row_and_column(tmp_path):
    (tmp_path / "lc.txt").write_text("1, 1.0, 2.0\n# comment\n1, 2.0, 3.0\n2, oops, 3.0\n")
    with pytest.raises(ValueError, match=r"lc\.txt: row 2: column 't' has 'oops', not a number"):
        open_catalog(tmp_path / "lc.txt").read()
    pq.write_table(pa.table({"id": [1, 1], "t": ["1.5", "x"], "y": [1.0, 2.0]}),
                   tmp_path / "s.parquet")
    with pytest.raises(ValueError, match=r"s\.parquet: row 1: column 't' \(string\) has 'x'"):
        open_catalog(tmp_path / "s.parquet").read()
    struct = pa.StructArray.from_arrays([pa.array([1.0, 2.0, 3.0]), pa.array(["1", "2", "b"])],
                                        names=["t", "y"])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), struct)
    pq.write_table(pa.table({"id": [1, 2], "lc": lists}), tmp_path / "n.parquet")
    with pytest.raises(ValueError, match=r"row 1, observation 1: column 'y' \(string\) has 'b'"):
        open_catalog(tmp_path / "n.parquet").read()


def test_malformed_csv_line_names_the_file(tmp_path):
    (tmp_path / "a.csv").write_text("id,t,y\n1,1,2\n1,2,3,4,5\n")
    with pytest.raises(ValueError, match=r"a\.csv: .*line 3"):
        open_catalog(tmp_path / "a.csv").read()


def test_interleaved_ids_within_and_across_chunks(tmp_path):
    text = "id,t,y\n1,0,0\n1,1,1\n2,0,0\n2,1,1\n3,0,0\n1,2,2\n"
    (tmp_path / "a.csv").write_text(text)
    message = (r"a\.csv: object id 1 appears again at row 5 after other objects "
               r"\(its rows start at row 0\)")
    for chunk_rows in (100, 2):  # one chunk, or the repeat in a later chunk
        with pytest.raises(ValueError, match=message):
            list(open_catalog(tmp_path / "a.csv", chunk_rows=chunk_rows))
    chunks = open_catalog(tmp_path / "a.csv", chunk_rows=2)
    iterator = iter(chunks)
    assert next(iterator).catalog.ids.tolist() == [1]  # chunks before the bad row are read


def test_duplicate_ids_in_nested_files(tmp_path):
    cat = _stripe82(4)
    table = _nested_table(cat)
    ids = np.array(cat.ids)
    ids[3] = ids[1]
    pq.write_table(table.set_column(0, "id", pa.array(ids)), tmp_path / "n.parquet")
    for chunk_objects in (None, 1):
        with pytest.raises(ValueError, match=rf"object id {ids[1]} at row 3 repeats row 1"):
            list(open_catalog(tmp_path / "n.parquet", chunk_objects=chunk_objects))


def test_missing_and_mixed_ids(tmp_path):
    (tmp_path / "a.csv").write_text("id,t,y\n1,0,0\n,1,1\n")
    with pytest.raises(ValueError, match=r"a\.csv: row 1: missing object id"):
        open_catalog(tmp_path / "a.csv").read()
    pq.write_table(pa.table({"id": pa.array([1, None], pa.int64()), "t": [0.0, 1.0],
                             "y": [0.0, 1.0]}), tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"a\.parquet: row 1: missing object id"):
        open_catalog(tmp_path / "a.parquet").read()
    pq.write_table(pa.table({"id": [1.0, 1.0], "t": [0.0, 1.0], "y": [0.0, 1.0]}),
                   tmp_path / "f.parquet")
    with pytest.raises(ValueError, match="holds double values; object ids must be integers or"):
        open_catalog(tmp_path / "f.parquet").read()


def test_text_id_after_integer_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog_formats, "READ_ROWS", 2)
    (tmp_path / "a.csv").write_text("id,t,y\n1,0,0\n2,1,1\n3,0,0\nabc,1,1\n")
    with pytest.raises(ValueError, match=r"row 3: object id 'abc' is not an integer"):
        open_catalog(tmp_path / "a.csv").read()


@pytest.mark.parametrize("policy", ["raise", "omit"])
def test_non_finite_values_and_bad_uncertainties(tmp_path, policy):
    (tmp_path / "a.csv").write_text("id,t,y,dy\n1,0,0,1\n1,1,nan,1\n2,0,0,1\n2,1,1,1\n")
    reader = open_catalog(tmp_path / "a.csv", nan_policy=policy)
    if policy == "raise":
        with pytest.raises(ValueError, match=r"a\.csv: row 1 \(object 1\): y is nan, not a finite"):
            reader.read()
    else:
        cat = reader.read()
        assert cat.n_dropped == 1 and cat.lengths.tolist() == [1, 2]
    (tmp_path / "b.csv").write_text("id,t,y,dy\n1,0,0,1\n1,1,1,1\n2,0,0,0\n")
    message = r"b\.csv: row 2 \(object 2\): dy = 0\.0; uncertainties must be > 0"
    with pytest.raises(ValueError, match=message):
        open_catalog(tmp_path / "b.csv", nan_policy=policy).read()
    cat = _stripe82(3)
    dy = np.where(np.arange(cat.t.size) == 50, -1, cat.dy)
    struct = pa.StructArray.from_arrays([pa.array(cat.t), pa.array(cat.y), pa.array(dy)],
                                        names=["t", "y", "dy"])
    lists = pa.ListArray.from_arrays(pa.array(cat.offsets.astype(np.int32)), struct)
    pq.write_table(pa.table({"id": cat.ids, "lc": lists}), tmp_path / "n.parquet")
    k = int(np.searchsorted(cat.offsets, 50, side="right")) - 1
    with pytest.raises(ValueError, match=rf"row {k} \(object {cat.ids[k]}\), observation "
                                         rf"{50 - cat.offsets[k]}: dy = -1\.0"):
        open_catalog(tmp_path / "n.parquet", nan_policy=policy).read()


def test_bad_options(tmp_path):
    path = example_path("ida")
    with pytest.raises(ValueError, match="layout must be"):
        CatalogReader(path, layout="fits")
    with pytest.raises(ValueError, match="chunk_rows must be a positive integer"):
        CatalogReader(path, chunk_rows=0)
    with pytest.raises(ValueError, match="chunk_objects must be a positive integer"):
        CatalogReader(path, chunk_objects=1.5)
    with pytest.raises(ValueError, match="first_chunk_rows must be a positive integer"):
        CatalogReader(path, first_chunk_rows=-5)
    with pytest.raises(ValueError, match="nan_policy"):
        CatalogReader(path, nan_policy="drop")
    (tmp_path / "five.txt").write_text("1, 2, 3, 4, 5\n")
    with pytest.raises(ValueError, match="expected 3 .* or 4 .* columns, found 5"):
        CatalogReader(tmp_path / "five.txt")
    (tmp_path / "head.csv").write_text("id,t,y\n")
    for grouping_option in ("contiguous", "sort", "auto"):
        with pytest.raises(ValueError, match=r"head\.csv: no data rows"):
            CatalogReader(tmp_path / "head.csv", grouping=grouping_option).read()


@pytest.mark.slow
def test_optional_dependencies_are_imported_only_when_used(tmp_path, monkeypatch):
    import subprocess
    import sys

    code = ("import sys, clperiod.io, clperiod.pipeline, clperiod.cli; "
            "print(sorted(m for m in ('pandas', 'pyarrow', 'h5py', 'astropy', 'tqdm') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    (tmp_path / "a.csv").write_text("id,t,y\n1,0,0\n")
    pq.write_table(pa.table({"id": [1], "t": [0.0], "y": [0.0]}), tmp_path / "a.parquet")
    monkeypatch.setitem(sys.modules, "pandas", None)  # makes "import pandas" fail
    with pytest.raises(ImportError, match=r"needs pandas: pip install clperiod\[catalog\]"):
        open_catalog(tmp_path / "a.csv").read()
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match=r"needs pyarrow: pip install clperiod\[catalog\]"):
        open_catalog(tmp_path / "a.parquet")


def test_parquet_footer_is_read_once_per_version_of_the_file(tmp_path, monkeypatch):
    import os

    path = tmp_path / "a.parquet"
    pq.write_table(_long_table(_stripe82(3)), path)
    reads = []
    original = pq.read_metadata
    monkeypatch.setattr(pq, "read_metadata", lambda p: reads.append(p) or original(p))
    first = CatalogReader(path)
    assert first.n_rows == _stripe82(3).t.size
    _assert_same(first.read(), _stripe82(3))
    assert len(reads) == 1
    pq.write_table(_long_table(_stripe82(5)), path)  # another version: read again
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert CatalogReader(path).n_rows == _stripe82(5).t.size
    _assert_same(CatalogReader(path).read(), _stripe82(5))
    assert len(reads) == 2


_READ_WHILE_TRUNCATED = """
import os, sys
from clperiod.io.readers import open_catalog

path = sys.argv[1]
chunks = iter(open_catalog(path, chunk_rows=5000, first_chunk_rows=None))
next(chunks)
os.truncate(path, os.path.getsize(path) // 2)
print(sum(chunk.catalog.n_objects for chunk in chunks))
"""


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["parquet", "nested-parquet"])
def test_a_parquet_file_truncated_while_it_is_read_is_an_error_naming_it(tmp_path, layout):
    """Neither a crash (SIGBUS, as with a memory-mapped file) nor a silent
    end: pyarrow may stop at a cut row group without an error, so the rows
    read are counted against the footer. Run in a child process, which a
    crash would end."""
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    lengths = np.full(400, 100)
    cat = Catalog(np.arange(400), np.concatenate(([0], np.cumsum(lengths))),
                  rng.random(40_000), rng.random(40_000), 1 + rng.random(40_000))
    path = tmp_path / "cut.parquet"
    if layout == "parquet":
        pq.write_table(_long_table(cat), path, row_group_size=5000)
    else:
        pq.write_table(_nested_table(cat), path, row_group_size=50)
    done = subprocess.run([sys.executable, "-c", _READ_WHILE_TRUNCATED, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith(f"ValueError: {path}: at or after row "), message
    assert re.search(r"\(row group \d of 8, rows \d+ to \d+\)", message), message


# ---------------------------------------------------------------------- time-sorted files


def _time_sorted(cat: Catalog) -> pd.DataFrame:
    """The rows of ``cat`` in time order (objects interleaved), as a survey writes them."""
    order = np.argsort(cat.t, kind="stable")
    ids = np.repeat(cat.ids, cat.lengths)
    return pd.DataFrame({"id": ids[order], "t": cat.t[order], "y": cat.y[order],
                         "dy": cat.dy[order]})


@pytest.mark.parametrize("run_rows", [1 << 22, 400, 37])  # one run in memory, or merged files
def test_time_sorted_files_are_sorted_by_id(tmp_path, monkeypatch, run_rows):
    from clperiod.io import grouping

    monkeypatch.setattr(grouping, "SORT_RUN_ROWS", run_rows)
    monkeypatch.setattr(grouping, "MERGE_ROWS", 64)
    monkeypatch.setattr(grouping, "_MIN_PIECE", 5)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cat = _stripe82(40)
    frame = _time_sorted(cat)
    frame.to_csv(tmp_path / "time.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "time.parquet",
                   row_group_size=500)
    expected = cat.subset(np.argsort(cat.ids, kind="stable"))
    for name in ("time.csv", "time.parquet"):
        with pytest.raises(ValueError, match=r"appears again at row \d+ after other objects .*"
                                             r"grouping='sort'"):
            open_catalog(tmp_path / name).read()  # the default takes objects as contiguous
        for grouping_option in ("auto", "sort"):
            reader = open_catalog(tmp_path / name, chunk_rows=300, grouping=grouping_option)
            chunks = list(reader)
            assert reader.grouping == "sort" and reader.settings()["grouping"] == "sort"
            _assert_same(catalog_files._join_catalogs([c.catalog for c in chunks]), expected)
            # chunks hold whole objects; their rows count in the sorted order
            assert [c.first_row for c in chunks] == np.cumsum(
                [0] + [c.n_rows for c in chunks[:-1]]).tolist()
            assert sum(c.n_rows for c in chunks) == cat.t.size
    assert list((tmp_path / "tmp").iterdir()) == []  # the run files are gone


def test_auto_grouping_keeps_a_grouped_file_as_it_is(tmp_path):
    cat = _stripe82(5)
    pq.write_table(_long_table(cat), tmp_path / "grouped.parquet")
    reader = open_catalog(tmp_path / "grouped.parquet", grouping="auto")
    assert reader.grouping == "contiguous"
    _assert_same(reader.read(), cat)  # file order, not sorted ids
    assert cat.ids.tolist() != sorted(cat.ids.tolist())
    pq.write_table(_nested_table(cat), tmp_path / "nested.parquet")
    assert open_catalog(tmp_path / "nested.parquet", grouping="auto").grouping == "contiguous"
    with pytest.raises(ValueError, match="grouping='sort' applies to long layouts"):
        open_catalog(tmp_path / "nested.parquet", grouping="sort")
    with pytest.raises(ValueError, match="grouping must be one of"):
        open_catalog(tmp_path / "grouped.parquet", grouping="yes")


def test_sorted_files_name_file_rows_in_value_errors(tmp_path):
    text = "id,t,y,dy\n2,0,0,1\n1,0,0,1\n2,1,1,1\n1,1,nan,1\n1,2,2,-1\n"
    (tmp_path / "a.csv").write_text(text)
    with pytest.raises(ValueError, match=r"a\.csv: row 3 \(object 1\): y is nan"):
        open_catalog(tmp_path / "a.csv", grouping="sort").read()
    with pytest.raises(ValueError, match=r"a\.csv: row 4 \(object 1\): dy = -1\.0"):
        open_catalog(tmp_path / "a.csv", grouping="sort", nan_policy="omit").read()
    cat = open_catalog(tmp_path / "a.csv", grouping="sort", nan_policy="omit",
                       dy_col=None).read()
    assert cat.ids.tolist() == [1, 2] and cat.t.tolist() == [0, 2, 0, 1] and cat.n_dropped == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=120), st.integers(1, 40),
       st.integers(1, 50), st.booleans())
def test_external_sort_is_a_stable_sort_by_id(keys, run_rows, merge_rows, text_ids):
    from clperiod.io import grouping

    ids = np.array([f"s{k:03d}" for k in keys]) if text_ids else np.array(keys, np.int64)
    values = np.arange(ids.size, dtype=np.float64)
    blocks = [long_block(ids[a:a + 7], {"t": values[a:a + 7]}, a)
              for a in range(0, ids.size, 7)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouping, "SORT_RUN_ROWS", run_rows)
        patch.setattr(grouping, "MERGE_ROWS", merge_rows)
        patch.setattr(grouping, "_MIN_PIECE", 1)
        out = list(grouping.sorted_blocks(blocks, 5))
    order = np.argsort(ids, kind="stable")
    got_ids = np.concatenate([np.repeat(b.ids, np.diff(b.offsets)) for b in out])
    np.testing.assert_array_equal(got_ids, ids[order])
    np.testing.assert_array_equal(np.concatenate([b.columns["t"] for b in out]), values[order])
    # no object is split between blocks
    firsts = np.concatenate([b.ids for b in out])
    assert np.unique(firsts).size == firsts.size
    assert grouping.is_grouped(blocks) == (np.unique(ids).size == np.flatnonzero(
        np.concatenate(([True], ids[1:] != ids[:-1]))).size)


# ---------------------------------------------------------------------- damaged files


def test_a_row_cut_short_is_reported_as_truncated(tmp_path):
    (tmp_path / "a.csv").write_text("id,t,y,dy\n1,0,0,1\n1,1,1,1\n2,0,0,1\n2,1,1,1\n2,2")
    for policy in ("raise", "omit"):
        with pytest.raises(ValueError, match=r"a\.csv: row 4 \(line 6\) is cut short: 2 of 4 "
                                             r"fields \('2,2'\); the file may be truncated"):
            open_catalog(tmp_path / "a.csv", nan_policy=policy).read()
    (tmp_path / "lc.txt").write_text("1, 0, 0\n# note\n\n1, 1, 1\n2, 0, 0\n2, 1")
    with pytest.raises(ValueError, match=r"lc\.txt: row 3 \(line 6\) is cut short: 2 of 3"):
        open_catalog(tmp_path / "lc.txt").read()
    # empty fields are missing values, not a cut: the value is named
    (tmp_path / "b.csv").write_text("id,t,y,dy\n1,0,0,1\n1,1,,\n2,0,0,1\n")
    with pytest.raises(ValueError, match=r"b\.csv: row 1 \(object 1\): y is nan"):
        open_catalog(tmp_path / "b.csv").read()


def _corrupt_parquet(path: Path) -> Path:
    rng = np.random.default_rng(3)
    n = 3000
    table = pa.table({"id": np.repeat(np.arange(30), 100), "t": rng.uniform(0, 100, n),
                      "y": rng.normal(size=n), "dy": rng.uniform(0.1, 0.2, n)})
    pq.write_table(table, path, row_group_size=1000, compression="snappy",
                   use_dictionary=False)
    chunk = pq.read_metadata(path).row_group(1).column(2)  # y of rows 1000-1999
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + 40:chunk.data_page_offset + 240] = bytes(200)
    path.write_bytes(bytes(data))
    return path


def test_corrupt_parquet_data_name_the_file_and_row_group(tmp_path):
    path = _corrupt_parquet(tmp_path / "bad.parquet")
    message = (r"bad\.parquet: at or after row 1000 \(row group 1 of 3, rows 1000 to 1999\): "
               r"cannot read the Parquet data \(Corrupt snappy compressed data\.\)")
    for options in ({}, {"chunk_rows": 500, "first_chunk_rows": None}, {"grouping": "sort"}):
        with pytest.raises(ValueError, match=message):
            open_catalog(path, **options).read()


def _random_csv(n: int = 60_000) -> bytes:
    rng = np.random.default_rng(5)
    rows = "".join(f"{k // 100},{t!r},{y!r},0.1\n"
                   for k, t, y in zip(range(n), rng.uniform(0, 1e3, n), rng.normal(size=n)))
    return ("id,t,y,dy\n" + rows).encode()


@pytest.mark.slow
def test_damaged_compressed_files_name_the_file_and_line(tmp_path):
    packed = gzip.compress(_random_csv())
    (tmp_path / "cut.csv.gz").write_bytes(packed[: len(packed) // 2])
    (tmp_path / "plain.csv.gz").write_bytes(_random_csv(100))
    broken = bytearray(packed)
    broken[-6] ^= 0xFF  # the stored length: the data decompress, the check fails
    (tmp_path / "check.csv.gz").write_bytes(bytes(broken))
    cases = {
        "cut.csv.gz": r"line \d+ \(byte \d+ of the decompressed text\): the compressed data "
                      r"end early: the file is truncated",
        "plain.csv.gz": r"line 1 \(byte 0 of the decompressed text\): damaged or unreadable "
                        r"compressed data \(Not a gzipped file",
        "check.csv.gz": r"line 60002 \(byte \d+ of the decompressed text\): damaged or "
                        r"unreadable compressed data",
    }
    for name, message in cases.items():
        with pytest.raises(ValueError, match=rf"{name.replace('.', r'[.]')}: {message}"):
            open_catalog(tmp_path / name).read()


def test_text_that_is_not_utf8_names_the_file_line_and_byte(tmp_path):
    (tmp_path / "latin.csv").write_bytes("id,t,y\n1,0,0\n1,1,1\ncaf\u00e9,2,2\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.csv: line 4 \(byte 22\): byte 0xe9 is not "
                                         r"UTF-8 text"):  # len("id,t,y\n1,0,0\n1,1,1\ncaf")
        open_catalog(tmp_path / "latin.csv").read()
    body = "".join(f"{k},{k},1\n" for k in range(50_000))  # the bad byte far in
    (tmp_path / "late.csv").write_bytes(f"id,t,y\n{body}9,1,\u00b5\n".encode("latin-1"))
    offset = len(f"id,t,y\n{body}9,1,")
    with pytest.raises(ValueError, match=rf"late\.csv: line 50002 \(byte {offset}\): byte 0xb5"):
        open_catalog(tmp_path / "late.csv").read()
    (tmp_path / "wide.csv").write_bytes("id,t,y\n1,0,0\n".encode("utf-16"))
    with pytest.raises(ValueError, match=r"wide\.csv: the file is UTF-16 text .* iconv"):
        open_catalog(tmp_path / "wide.csv")
    (tmp_path / "wide_le.csv").write_bytes("id,t,y\n1,0,0\n".encode("utf-16-le"))
    with pytest.raises(ValueError, match=r"wide_le\.csv: line 1 holds NUL bytes"):
        open_catalog(tmp_path / "wide_le.csv")


def test_repeated_column_names_are_refused(tmp_path):
    (tmp_path / "a.csv").write_text("id,t,y,y\n1,0,0,1\n")
    with pytest.raises(ValueError, match=r"a\.csv: line 1: the header names the column\(s\) "
                                         r"\['y'\] more than once"):
        open_catalog(tmp_path / "a.csv")
    table = pa.Table.from_arrays([pa.array([1, 1]), pa.array([0.0, 1.0]), pa.array([1.0, 2.0]),
                                  pa.array([3.0, 4.0])], names=["id", "t", "y", "y"])
    pq.write_table(table, tmp_path / "a.parquet")
    with pytest.raises(ValueError, match=r"a\.parquet: more than one column named \['y'\]"):
        open_catalog(tmp_path / "a.parquet")
