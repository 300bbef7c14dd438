"""Band labels through the io layer: DataFrames, Tables, files, nested layout, chunks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from astropy.table import Table

from clperiod import Catalog
from clperiod.io import catalog_from_dataframe, catalog_from_table, open_catalog, read_catalog

N_OBJECTS, PER_OBJECT = 8, 5


@pytest.fixture
def frame():
    rng = np.random.default_rng(3)
    n = N_OBJECTS * PER_OBJECT
    return pd.DataFrame({
        "id": np.repeat(np.arange(N_OBJECTS) * 10, PER_OBJECT),
        "t": np.tile(np.arange(PER_OBJECT, dtype=float), N_OBJECTS),
        "y": rng.normal(size=n),
        "dy": rng.uniform(0.1, 0.2, size=n),
        "filter": rng.choice(["g", "r", "i"], size=n),
    })


def expected(frame, **kwargs) -> Catalog:
    return Catalog.from_arrays(frame["id"], frame["t"], frame["y"], frame["dy"],
                               band=frame["filter"].to_numpy(), **kwargs)


def assert_same(got: Catalog, want: Catalog) -> None:
    for name in ("ids", "offsets", "t", "y", "dy", "band_codes"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert got.bands == want.bands


def test_dataframe_and_table(frame):
    assert_same(catalog_from_dataframe(frame, dy_col="dy", band_col="filter"), expected(frame))
    table = Table.from_pandas(frame)
    assert_same(catalog_from_table(table, dy_col="dy", band_col="filter"), expected(frame))
    fixed = catalog_from_dataframe(frame, dy_col="dy", band_col="filter", bands=list("ugriz"))
    assert fixed.bands == tuple("ugriz")
    assert_same(fixed, expected(frame, bands=list("ugriz")))


def test_dataframe_sort_moves_the_bands_with_the_rows(frame):
    shuffled = frame.sample(frac=1.0, random_state=2)
    got = catalog_from_dataframe(shuffled, dy_col="dy", band_col="filter", sort=True)
    for k in range(got.n_objects):
        rows = shuffled[shuffled["id"] == got.ids[k]]
        np.testing.assert_array_equal(got.lightcurve(k)[3], rows["filter"])
        np.testing.assert_array_equal(got.lightcurve(k)[0], rows["t"])


def test_missing_labels_name_the_row(frame):
    frame.loc[7, "filter"] = None
    with pytest.raises(ValueError, match=r"missing band label in object 10 at row 2 .*row 7"):
        catalog_from_dataframe(frame, band_col="filter")
    table = Table.from_pandas(frame.fillna({"filter": "g"}))
    table["filter"] = Table.MaskedColumn(table["filter"], mask=np.arange(len(table)) == 12)
    with pytest.raises(ValueError, match=r"missing band label in object 20 at row 2"):
        catalog_from_table(table, band_col="filter")


def test_nested_dataframe(frame):
    nested = pa.array([
        [{"t": t, "y": y, "band": b} for t, y, b in zip(part["t"], part["y"], part["filter"])]
        for _, part in frame.groupby("id", sort=False)
    ])
    objects = pd.DataFrame({"id": frame["id"].unique(),
                            "lc": pd.Series(nested, dtype=pd.ArrowDtype(nested.type))})
    got = catalog_from_dataframe(objects, nested_col="lc", band_col="band")
    want = Catalog.from_arrays(frame["id"], frame["t"], frame["y"], band=frame["filter"])
    np.testing.assert_array_equal(got.band_codes, want.band_codes)
    assert got.bands == ("g", "i", "r")


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_read_catalog_and_chunked_reader(frame, tmp_path, suffix):
    path = tmp_path / f"banded.{suffix}"
    if suffix == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    want = expected(frame)
    assert_same(read_catalog(path, dy_col="dy", band_col="filter"), want)
    reader = open_catalog(path, band_col="filter", chunk_rows=12, first_chunk_rows=None)
    chunks = list(reader)
    assert len(chunks) == 4
    assert_same(reader.read(), want)
    start = 0
    for chunk in chunks:
        stop = start + chunk.catalog.n_objects
        np.testing.assert_array_equal(chunk.catalog.band_counts().sum(axis=1),
                                      want.lengths[start:stop])
        start = stop


def test_chunks_of_different_labels_join_in_sorted_order(frame, tmp_path):
    frame["filter"] = np.where(frame["id"] < 40, "r", "g")
    path = tmp_path / "two.parquet"
    frame.to_parquet(path)
    reader = open_catalog(path, band_col="filter", chunk_rows=20, first_chunk_rows=None)
    assert [chunk.catalog.bands for chunk in reader] == [("r",), ("g",)]
    joined = reader.read()
    assert joined.bands == ("g", "r")
    np.testing.assert_array_equal(joined.band_counts()[:, 1], [5, 5, 5, 5, 0, 0, 0, 0])


def test_sorted_grouping_keeps_bands_with_rows(frame, tmp_path):
    path = tmp_path / "by_time.csv"
    frame.sample(frac=1.0, random_state=4).to_csv(path, index=False)
    got = open_catalog(path, band_col="filter", grouping="sort", chunk_rows=12).read()
    np.testing.assert_array_equal(got.band_counts(), expected(frame).band_counts())


def test_integer_labels_in_parquet_and_text_in_csv(frame, tmp_path):
    frame["filter"] = frame["filter"].map({"g": 1, "r": 2, "i": 3})
    frame.to_parquet(tmp_path / "ints.parquet")
    frame.to_csv(tmp_path / "ints.csv", index=False)
    assert read_catalog(tmp_path / "ints.parquet", band_col="filter").bands == (1, 2, 3)
    assert read_catalog(tmp_path / "ints.csv", band_col="filter").bands == ("1", "2", "3")
    reader = open_catalog(tmp_path / "ints.parquet", band_col="filter", bands=["3", "2", "1"])
    assert reader.read().bands == (3, 2, 1)
    assert open_catalog(tmp_path / "ints.csv", band_col="filter").read().bands == ("1", "2", "3")


def test_reader_names_the_file_row_of_a_missing_label(frame, tmp_path):
    frame.loc[13, "filter"] = None
    for suffix in ("csv", "parquet"):
        path = tmp_path / f"gap.{suffix}"
        frame.to_csv(path, index=False) if suffix == "csv" else frame.to_parquet(path)
        with pytest.raises(ValueError, match=rf"gap.{suffix}: row 13: column 'filter' has no "
                           "band label"):
            open_catalog(path, band_col="filter").read()


def test_nested_parquet_file(frame, tmp_path):
    nested = pa.array([
        [{"t": t, "y": y, "band": b} for t, y, b in zip(part["t"], part["y"], part["filter"])]
        for _, part in frame.groupby("id", sort=False)
    ])
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"id": frame["id"].unique(), "lc": nested}), path)
    got = open_catalog(path, band_col="band").read()
    want = Catalog.from_arrays(frame["id"], frame["t"], frame["y"], band=frame["filter"])
    np.testing.assert_array_equal(got.band_codes, want.band_codes)


def test_chunk_checksum_covers_the_bands(frame, tmp_path):
    path = tmp_path / "banded.parquet"
    frame.to_parquet(path)
    plain = next(iter(open_catalog(path)))
    banded = next(iter(open_catalog(path, band_col="filter")))
    assert plain.checksum != banded.checksum
    assert plain.checksum == next(iter(open_catalog(path))).checksum
