"""clperiod.io: the papers' CSV layout, long-format tables, bundled examples."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clperiod import Catalog
from clperiod.io import EXAMPLES, example_path, load_example, read_catalog, read_lightcurve_csv


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---------------------------------------------------------------------- bundled examples


@pytest.mark.parametrize(
    ("name", "n_objects", "rows", "has_dy"),
    [("ida", 1, 29, False), ("8205", 1, 3555, False), ("8205_errors", 1, 3555, True),
     ("stripe82", 136, 7064, True), ("hat-p-7", 1, 2655, True)],
)
def test_load_example_shapes(name, n_objects, rows, has_dy):
    cat = load_example(name)
    assert isinstance(cat, Catalog)
    assert cat.n_objects == n_objects
    assert cat.t.size == rows
    assert (cat.dy is not None) == has_dy
    assert cat.ids.dtype.kind == "i"
    assert np.all(np.diff(cat.t[cat.offsets[0]:cat.offsets[1]]) > 0)  # time-sorted


def test_examples_match_numpy_parse(data_dir):
    raw = np.loadtxt(data_dir / "SDSS_stripe82_band_z.txt", delimiter=",")
    cat = load_example("stripe82")
    np.testing.assert_array_equal(cat.t, raw[:, 1])
    np.testing.assert_array_equal(cat.y, raw[:, 2])
    np.testing.assert_array_equal(cat.dy, raw[:, 3])
    starts = np.flatnonzero(np.r_[True, raw[1:, 0] != raw[:-1, 0]])
    np.testing.assert_array_equal(cat.offsets, np.r_[starts, len(raw)])
    np.testing.assert_array_equal(cat.ids, raw[starts, 0].astype(np.int64))
    assert cat.lengths.min() == 14 and cat.lengths.max() == 81


def test_ida_is_asteroid_243_in_jd():
    cat = load_example("ida")
    assert cat.ids.tolist() == [243]
    assert 2458600 < cat.t.min() < cat.t.max() < 2459000


def test_hat_p_7_is_kepler_q0_short_cadence():
    """Every fifth cadence (5 x 58.85 s) of quarter 0, BJD - 2454833, PDCSAP e-/s."""
    cat = load_example("hat-p-7")
    assert cat.ids.tolist() == [10666592]
    assert 120.52 < cat.t.min() < cat.t.max() < 130.26
    np.testing.assert_allclose(np.min(np.diff(cat.t)), 5 * 58.85 / 86400, rtol=1e-3)
    assert 1.02e6 < np.median(cat.y) < 1.04e6 and 140 < cat.dy.min() < cat.dy.max() < 250


def test_example_files_and_provenance(data_dir):
    assert {example_path(name).name for name in EXAMPLES} <= {p.name for p in data_dir.iterdir()}
    readme = (data_dir / "README.md").read_text()
    assert "Mike Gowanlock and Brian Donnelly" in readme
    assert "Permission is hereby granted" in readme
    for filename in EXAMPLES.values():
        assert filename in readme


def test_example_path_unknown_name():
    with pytest.raises(ValueError, match="unknown example 'vega'.*'ida'"):
        example_path("vega")


# ---------------------------------------------------------------------- papers' CSV layout


def test_read_three_columns(tmp_path):
    text = "7, 1.0, 0.5\n7, 2.5, -0.5\n9, 0.25, 1.0\n9, 3.0, 2.0\n9, 4.0, 3.0"  # no final newline
    path = _write(tmp_path / "lc.txt", text)
    cat = read_lightcurve_csv(path)
    assert cat.ids.tolist() == [7, 9]
    assert cat.offsets.tolist() == [0, 2, 5]
    np.testing.assert_array_equal(cat.t, [1.0, 2.5, 0.25, 3.0, 4.0])
    np.testing.assert_array_equal(cat.y, [0.5, -0.5, 1.0, 2.0, 3.0])
    assert cat.dy is None


def test_read_four_columns_and_with_errors(tmp_path):
    path = _write(tmp_path / "lc.txt", "1,10.0,1.0,0.1\n1,11.0,2.0,0.2\n")
    np.testing.assert_array_equal(read_lightcurve_csv(path).dy, [0.1, 0.2])
    np.testing.assert_array_equal(read_lightcurve_csv(path, with_errors=True).dy, [0.1, 0.2])
    assert read_lightcurve_csv(path, with_errors=False).dy is None


def test_with_errors_needs_fourth_column(tmp_path):
    path = _write(tmp_path / "lc.txt", "1, 10.0, 1.0\n")
    with pytest.raises(ValueError, match="with_errors=True but the file has no dy column"):
        read_lightcurve_csv(path, with_errors=True)


@pytest.mark.parametrize("line", ["1, 2.0", "1, 2.0, 3.0, 4.0, 5.0"])
def test_wrong_column_count(tmp_path, line):
    path = _write(tmp_path / "lc.txt", line + "\n")
    with pytest.raises(ValueError, match="expected 3 .* or 4 .* columns, found"):
        read_lightcurve_csv(path)


def test_comments_blank_lines_single_row_and_gzip(tmp_path):
    text = "# objId, t, y\n\n5, 1.5, 2.5\n"
    cat = read_lightcurve_csv(_write(tmp_path / "one.txt", text))
    assert cat.ids.tolist() == [5] and cat.t.tolist() == [1.5] and cat.y.tolist() == [2.5]
    packed = tmp_path / "one.txt.gz"
    with gzip.open(packed, "wt") as handle:
        handle.write(text)
    assert read_lightcurve_csv(packed).t.tolist() == [1.5]


def test_string_and_large_integer_ids(tmp_path):
    cat = read_lightcurve_csv(_write(tmp_path / "s.txt", "ZTF18a, 1, 2\nZTF18a, 2, 3\nb, 1, 1\n"))
    assert cat.ids.tolist() == ["ZTF18a", "b"]
    big = 1237663784734294016  # an SDSS objId: exact only as an integer, not as float64
    cat = read_lightcurve_csv(_write(tmp_path / "big.txt", f"{big}, 1, 2\n{big}, 2, 3\n"))
    assert cat.ids.dtype == np.int64 and cat.ids.tolist() == [big]


def test_errors_name_the_file_and_row(tmp_path):
    path = _write(tmp_path / "bad.txt", "1, 1.0, 2.0\n1, oops, 3.0\n")
    with pytest.raises(ValueError, match=r"bad\.txt.*oops"):
        read_lightcurve_csv(path)
    with pytest.raises(ValueError, match="no data rows"):
        read_lightcurve_csv(_write(tmp_path / "empty.txt", "# nothing\n\n"))


def test_non_contiguous_objects_rejected(tmp_path):
    path = _write(tmp_path / "lc.txt", "1, 1, 1\n2, 1, 1\n1, 2, 2\n")
    with pytest.raises(ValueError, match=r"lc\.txt: object id 1 appears again at row 2"):
        read_lightcurve_csv(path)


def test_nan_policy(tmp_path):
    path = _write(tmp_path / "lc.txt", "1, 1, 1\n1, 2, nan\n1, 3, 3\n")
    with pytest.raises(ValueError, match=r"lc\.txt: non-finite y in object 1 at row 1"):
        read_lightcurve_csv(path)
    cat = read_lightcurve_csv(path, nan_policy="omit")
    assert cat.t.tolist() == [1.0, 3.0] and cat.n_dropped == 1


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    values=st.lists(st.floats(-1e9, 1e9, allow_nan=False), min_size=3 * 30, max_size=3 * 30),
    with_dy=st.booleans(),
)
def test_round_trip(tmp_path_factory, lengths, values, with_dy):
    n = sum(lengths)
    t, y = np.array(values[:n]), np.array(values[30:30 + n])
    dy = np.abs(np.array(values[60:60 + n])) + 0.5
    ids = np.repeat(np.arange(len(lengths)) * 11 + 3, lengths)
    columns = [ids, t, y] + ([dy] if with_dy else [])
    text = "\n".join(", ".join(repr(c[k].item()) for c in columns) for k in range(n))
    path = tmp_path_factory.mktemp("rt") / "lc.txt"
    cat = read_lightcurve_csv(_write(path, text))
    expected = Catalog.from_arrays(ids, t, y, dy if with_dy else None)
    np.testing.assert_array_equal(cat.ids, expected.ids)
    np.testing.assert_array_equal(cat.offsets, expected.offsets)
    np.testing.assert_array_equal(cat.t, t)
    np.testing.assert_array_equal(cat.y, y)
    if with_dy:
        np.testing.assert_array_equal(cat.dy, dy)


# ---------------------------------------------------------------------- long-format tables


def test_read_catalog_csv_named_columns(tmp_path):
    text = "mag_err,mjd,mag,source,band\n0.1,1.0,15.0,a,r\n0.2,2.0,15.5,a,r\n0.3,0.5,14.0,b,g\n"
    path = _write(tmp_path / "long.csv", text)
    cat = read_catalog(path, id_col="source", t_col="mjd", y_col="mag", dy_col="mag_err")
    assert cat.ids.tolist() == ["a", "b"]
    np.testing.assert_array_equal(cat.t, [1.0, 2.0, 0.5])
    np.testing.assert_array_equal(cat.y, [15.0, 15.5, 14.0])
    np.testing.assert_array_equal(cat.dy, [0.1, 0.2, 0.3])
    assert read_catalog(path, id_col="source", t_col="mjd", y_col="mag").dy is None


def test_read_catalog_defaults_quotes_and_delimiter(tmp_path):
    path = _write(tmp_path / "long.csv", 'id,t,y\n"12",1.0,2.0\n"12",2.0,3.0\n')
    cat = read_catalog(path)
    assert cat.ids.tolist() == [12] and cat.y.tolist() == [2.0, 3.0]
    path = _write(tmp_path / "long.tsv", "id\tt\ty\n4\t1.0\t2.0\n")
    assert read_catalog(path, delimiter="\t").ids.tolist() == [4]


def test_read_catalog_missing_column(tmp_path):
    path = _write(tmp_path / "long.csv", "id,time,flux\n1,1.0,2.0\n")
    with pytest.raises(ValueError, match=r"no column\(s\) \['t', 'y'\].*\['id', 'time', 'flux'\]"):
        read_catalog(path)


def test_read_catalog_sort(tmp_path):
    path = _write(tmp_path / "long.csv", "id,t,y\n2,1.0,20\n1,1.0,10\n2,2.0,21\n1,2.0,11\n")
    with pytest.raises(ValueError, match=r"long\.csv: object id 2 appears again at row 2"):
        read_catalog(path)
    cat = read_catalog(path, sort=True)
    assert cat.ids.tolist() == [1, 2]
    np.testing.assert_array_equal(cat.y, [10, 11, 20, 21])
    np.testing.assert_array_equal(cat.t, [1.0, 2.0, 1.0, 2.0])


def test_read_catalog_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"oid": ["x", "x", "y"], "t": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0],
                      "dy": [0.1, 0.1, 0.2]})
    pq.write_table(table, tmp_path / "long.parquet")
    cat = read_catalog(tmp_path / "long.parquet", id_col="oid", dy_col="dy")
    assert cat.ids.tolist() == ["x", "y"]
    np.testing.assert_array_equal(cat.dy, [0.1, 0.1, 0.2])
    with pytest.raises(ValueError, match="no column"):
        read_catalog(tmp_path / "long.parquet")


def test_read_catalog_parquet_without_pyarrow_or_pandas(tmp_path, monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet", "pandas"):
        monkeypatch.setitem(sys.modules, name, None)  # makes "import name" fail
    with pytest.raises(ImportError, match="pip install pyarrow"):
        read_catalog(tmp_path / "long.parquet")


def test_damaged_files_name_the_file_and_the_place(tmp_path):
    rng = np.random.default_rng(2)
    text = "".join(f"1, {t!r}, {y!r}\n" for t, y in zip(rng.uniform(size=20_000),
                                                         rng.normal(size=20_000)))
    packed = gzip.compress(text.encode())
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(ValueError, match=r"cut\.txt\.gz: line \d+ \(byte \d+ of the "
                                         r"decompressed text\): the compressed data end early"):
        read_lightcurve_csv(cut)
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,t,y\n1,1,2\n1,2,3\n# Jos\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin\.csv: line 4 \(byte 24\): byte 0xe9 is not "
                                         r"UTF-8"):  # len("id,t,y\n1,1,2\n1,2,3\n# Jos")
        read_catalog(latin)
    papers = tmp_path / "lc.txt"
    papers.write_bytes("1, 1, 2\n1, 2, 3 # Jos\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"lc\.txt: line 2 \(byte 21\): byte 0xe9"):
        read_lightcurve_csv(papers)


def test_corrupt_parquet_names_the_row_group(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "bad.parquet"
    n = 2000
    table = pa.table({"id": np.repeat(np.arange(20), 100), "t": np.arange(n, dtype=float),
                      "y": np.random.default_rng(0).normal(size=n)})
    pq.write_table(table, path, row_group_size=1000, compression="snappy", use_dictionary=False)
    chunk = pq.read_metadata(path).row_group(1).column(2)
    data = bytearray(path.read_bytes())
    data[chunk.data_page_offset + 40:chunk.data_page_offset + 240] = bytes(200)
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"bad\.parquet: at or after row 1000 \(row group 1 of "
                                         r"2, rows 1000 to 1999\): cannot read the Parquet data"):
        read_catalog(path)


def test_repeated_column_names_name_the_file(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from clperiod.io import read_rv

    table = pa.Table.from_arrays([pa.array([1, 1]), pa.array([0.0, 1.0]), pa.array([1.0, 2.0]),
                                  pa.array([3.0, 4.0])], names=["id", "t", "y", "y"])
    pq.write_table(table, tmp_path / "two.parquet")
    with pytest.raises(ValueError, match=r"more than one column named \['y'\] in .*two\.parquet"):
        read_catalog(tmp_path / "two.parquet")
    rv = _write(tmp_path / "rv.txt", "time mnvel errvel tel mnvel\n1 2 3 a 4\n")
    with pytest.raises(ValueError, match=r"more than one column named \['mnvel'\] in .*rv\.txt"):
        read_rv(rv)
