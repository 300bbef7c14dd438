"""clperiod.results_files: result tables and periodograms written to files."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod.io import load_example
from clperiod.results_files import (
    PeriodogramWriter,
    atomic_path,
    periodogram_format,
    result_format,
    write_periodograms,
    write_results,
)
from clperiod.tables import result_columns


@pytest.fixture(scope="module")
def result(cpu_device):
    cat = load_example("stripe82").subset(np.arange(6))
    grid = clperiod.FrequencyGrid.from_range(0.5, 4.0, 1500)
    return clperiod.lombscargle(cat, grid, periodogram=True, top_k=2, device=cpu_device)


def test_results_parquet_and_csv_round_trip(tmp_path, result):
    expected = result_columns(result)
    assert write_results(tmp_path / "r.parquet", result, metadata={"run": 1}) == "parquet"
    table = pq.read_table(tmp_path / "r.parquet")
    assert table.column_names == list(expected)
    for name, values in expected.items():
        got = table.column(name).to_numpy(zero_copy_only=False)
        assert got.tolist() == values.tolist() or np.array_equal(got, values, equal_nan=True)
    assert json.loads(table.schema.metadata[b"clperiod"]) == {"run": 1}
    assert write_results(tmp_path / "r.csv", result, fap_method=None) == "csv"
    frame = pd.read_csv(tmp_path / "r.csv")
    assert "fap" not in frame.columns
    np.testing.assert_array_equal(frame["id"], result.ids)
    np.testing.assert_array_equal(frame["period"], result.period)  # shortest round-trip text
    assert frame["status_name"].tolist() == ["OK"] * 6


def test_formats_from_suffix_or_name():
    assert result_format("a.PQ") == "parquet" and result_format("a.txt", "csv") == "csv"
    assert periodogram_format("a.hdf5") == "hdf5" and periodogram_format("x", "npz") == "npz"
    with pytest.raises(ValueError, match=r"cannot tell the results format of 'a\.txt'.*\.csv"):
        result_format("a.txt")
    with pytest.raises(ValueError, match="unknown periodogram format 'fits'"):
        periodogram_format("a.npy", "fits")


def test_periodograms_in_every_format(tmp_path, result):
    grid = result.grid
    for name in ("p.npy", "p.npz", "p.h5", "p.parquet"):
        write_periodograms(tmp_path / name, result)
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), result.power)
    with np.load(tmp_path / "p.npz") as archive:
        np.testing.assert_array_equal(archive["power"], result.power)
        np.testing.assert_array_equal(archive["id"], result.ids)
        assert (archive["fmin"], archive["df"], archive["nf"]) == (grid.fmin, grid.df, grid.nf)
    with h5py.File(tmp_path / "p.h5") as handle:
        np.testing.assert_array_equal(handle["power"][:], result.power)
        np.testing.assert_array_equal(handle["id"][:], result.ids)
        assert handle.attrs["df"] == grid.df and handle.attrs["nf"] == grid.nf
    table = pq.read_table(tmp_path / "p.parquet")
    np.testing.assert_array_equal(np.stack(table.column("power").to_numpy(zero_copy_only=False)),
                                  result.power)
    assert json.loads(table.schema.metadata[b"clperiod"]) == {"fmin": grid.fmin, "df": grid.df,
                                                              "nf": grid.nf}


def test_periodogram_writer_in_parts_with_text_ids(tmp_path, result):
    ids = np.array(["a", "bb", "c", "dd", "e", "ff"])
    for name in ("q.h5", "q.npz", "q.parquet", "q.npy"):
        with PeriodogramWriter(tmp_path / name, 6, result.grid) as writer:
            writer.write(ids[:4], result.power[:4])
            writer.write(ids[4:].astype(object), result.power[4:])  # as pyarrow gives text
    with h5py.File(tmp_path / "q.h5") as handle:
        assert handle["id"].asstr()[:].tolist() == ids.tolist()
        np.testing.assert_array_equal(handle["power"][:], result.power)
    with np.load(tmp_path / "q.npz") as archive:
        assert archive["id"].tolist() == ids.tolist()
    assert pq.read_table(tmp_path / "q.parquet").column("id").to_pylist() == ids.tolist()
    np.testing.assert_array_equal(np.load(tmp_path / "q.npy"), result.power)


def test_periodogram_writer_errors_leave_no_file(tmp_path, result, cpu_device):
    with pytest.raises(ValueError, match="4 periodograms written, 6 announced"):
        with PeriodogramWriter(tmp_path / "short.npy", 6, result.grid) as writer:
            writer.write(result.ids[:4], result.power[:4])
    with pytest.raises(ValueError, match=r"power must have shape \(2, 1500\)"):
        with PeriodogramWriter(tmp_path / "bad.h5", 6, result.grid) as writer:
            writer.write(result.ids[:2], result.power[:3])
    assert list(tmp_path.iterdir()) == []
    without = clperiod.lombscargle(result.catalog, result.grid, device=cpu_device)
    with pytest.raises(ValueError, match="holds no periodograms"):
        write_periodograms(tmp_path / "p.npy", without)


def test_atomic_path_keeps_the_old_file_on_error(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temporary:
            temporary.write_text("half")
            raise RuntimeError("killed")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new"
