"""clperiod.io.results: result tables and periodograms written to files."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod.io import load_example
from clperiod.io.results import (
    PeriodogramWriter,
    atomic_path,
    exclusive_temporary,
    is_temporary,
    periodogram_format,
    remove_path,
    remove_temporaries,
    result_format,
    write_periodograms,
    write_results,
)
from clperiod.io.tables import result_columns


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
    with pytest.raises(ValueError, match=r"format 'csv' disagrees with the suffix of 'x\.parquet'"):
        result_format("x.parquet", "csv")
    assert result_format("x.parquet", "parquet") == "parquet"


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


@pytest.fixture(scope="module")
def array_result(cpu_device):
    cat = load_example("stripe82").subset(np.arange(4))
    periods = np.random.default_rng(5).permutation(np.linspace(0.3, 2.0, 700))
    grid = clperiod.FrequencyGrid.from_frequencies(1 / periods)  # uniform in period, unsorted
    assert isinstance(grid, clperiod.FrequencyArray)
    return clperiod.lombscargle(cat, grid, periodogram=True, device=cpu_device)


def test_periodograms_on_a_frequency_array_store_its_frequencies(tmp_path, array_result):
    frequencies = array_result.grid.frequencies()
    for name in ("a.npy", "a.npz", "a.h5", "a.parquet"):
        write_periodograms(tmp_path / name, array_result)
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), array_result.power)
    with np.load(tmp_path / "a.npz") as archive:
        assert sorted(archive.files) == ["frequencies", "id", "nf", "power"]
        np.testing.assert_array_equal(archive["frequencies"], frequencies)
        np.testing.assert_array_equal(archive["power"], array_result.power)
        assert archive["nf"] == 700
    with h5py.File(tmp_path / "a.h5") as handle:
        np.testing.assert_array_equal(handle["frequencies"][:], frequencies)
        np.testing.assert_array_equal(handle["power"][:], array_result.power)
        assert dict(handle.attrs) == {"nf": 700}
    table = pq.read_table(tmp_path / "a.parquet")
    stored = json.loads(table.schema.metadata[b"clperiod"])
    assert stored["nf"] == 700 and set(stored) == {"nf", "frequencies"}
    np.testing.assert_array_equal(stored["frequencies"], frequencies)  # exact through JSON
    np.testing.assert_array_equal(
        np.stack(table.column("power").to_numpy(zero_copy_only=False)), array_result.power
    )
    write_results(tmp_path / "r.parquet", array_result)
    rows = pq.read_table(tmp_path / "r.parquet")
    np.testing.assert_array_equal(rows.column("period").to_numpy(), array_result.period)


def test_periodogram_writer_on_a_frequency_array_checks_the_width(tmp_path, array_result):
    with (
        pytest.raises(ValueError, match=r"power must have shape \(4, 700\), got \(4, 699\)"),
        PeriodogramWriter(tmp_path / "w.h5", 4, array_result.grid) as writer,
    ):
        writer.write(array_result.ids, array_result.power[:, 1:])
    assert list(tmp_path.iterdir()) == []


def test_periodograms_of_a_uniform_grid_are_written_as_before(tmp_path, result):
    write_periodograms(tmp_path / "u.h5", result)
    write_periodograms(tmp_path / "u.npz", result)
    with h5py.File(tmp_path / "u.h5") as handle:
        assert sorted(handle) == ["id", "power"] and sorted(handle.attrs) == ["df", "fmin", "nf"]
    with np.load(tmp_path / "u.npz") as archive:
        assert sorted(archive.files) == ["df", "fmin", "id", "nf", "power"]


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


def _write_with(writer: str, target, result) -> None:
    """Write ``target`` through one of the safe writers."""
    if writer == "results":
        write_results(target, result)
    elif writer == "periodograms":
        write_periodograms(target, result)
    else:
        with atomic_path(target) as temporary:
            temporary.write_text("complete")


@pytest.mark.parametrize("writer", ["results", "periodograms", "atomic_path"])
def test_outputs_reach_the_disk_before_and_after_their_rename(tmp_path, result, writer,
                                                             monkeypatch):
    """The complete temporary is synced before it replaces the output, and its
    directory after (a power loss leaves the old file or the whole new one)."""
    events = []
    fsync, replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append(
        ("fsync", os.path.realpath(f"/proc/self/fd/{fd}"))) or fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append(("replace", str(b)))
                        or replace(a, b))
    target = tmp_path / {"results": "r.parquet", "periodograms": "p.npy",
                         "atomic_path": "t.txt"}[writer]
    _write_with(writer, target, result)
    kinds = [kind for kind, _ in events]
    assert kinds == ["fsync", "replace", "fsync"]
    assert is_temporary(Path(events[0][1])) and events[1][1] == str(target)
    assert events[2][1] == str(tmp_path)


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="the directory .*nowhere does not exist"):
        with atomic_path(tmp_path / "nowhere" / "out.txt"):
            pass


def _plant_links(directory, name, victim):
    """Symbolic links at the names an attacker could guess: the old
    ``.<name>.tmp-<pid>`` and every small counter of the hidden names."""
    pid = os.getpid()
    guesses = [f".{name}.tmp-{pid}"] + [f".{name}.tmp-{pid}-{n}-old" for n in range(4)]
    for guess in guesses:
        (directory / guess).symlink_to(victim)
    return guesses


@pytest.mark.parametrize("writer", ["results", "periodograms", "atomic_path"])
def test_no_temporary_follows_a_planted_symbolic_link(tmp_path, result, writer):
    """CWE-59: in a shared directory another user places links where the
    temporaries would go; the victim file is never written, and the output is
    complete."""
    shared = tmp_path / "shared"
    shared.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    name = {"results": "r.parquet", "periodograms": "p.npy", "atomic_path": "t.txt"}[writer]
    guesses = _plant_links(shared, name, victim)
    target = shared / name
    for _ in range(2):  # the second time replaces the first output
        if writer == "results":
            write_results(target, result)
            assert pq.read_table(target).num_rows == 6
        elif writer == "periodograms":
            write_periodograms(target, result)
            np.testing.assert_array_equal(np.load(target), result.power)
        else:
            with atomic_path(target) as temporary:
                temporary.write_text("new")
            assert target.read_text() == "new"
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in shared.iterdir()) == sorted([name, *guesses])
    assert all((shared / g).is_symlink() for g in guesses)


def test_exclusive_temporaries_are_new_unpredictable_and_umask_ruled(tmp_path):
    names = set()
    old_mask = os.umask(0o027)
    try:
        for _ in range(3):
            temporary = exclusive_temporary(tmp_path / "out.parquet")
            names.add(temporary.name)
            assert stat.S_IMODE(temporary.stat().st_mode) == 0o640
            assert temporary.stat().st_size == 0 and is_temporary(temporary)
            assert re.fullmatch(rf"\.out\.parquet\.tmp-{os.getpid()}-[0-9a-f]{{16}}",
                                temporary.name)
    finally:
        os.umask(old_mask)
    assert len(names) == 3
    with pytest.raises(FileNotFoundError):
        exclusive_temporary(tmp_path / "missing" / "out.parquet")


@pytest.mark.parametrize("writer", ["results", "periodograms", "atomic_path"])
def test_a_failed_final_rename_leaves_no_temporary(tmp_path, result, writer):
    """The destination turned out to be a directory: the rename fails, and the
    complete temporary is removed with it."""
    target = tmp_path / {"results": "r.csv", "periodograms": "p.h5", "atomic_path": "t"}[writer]
    target.mkdir()
    with pytest.raises(IsADirectoryError):
        _write_with(writer, target, result)
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_remove_temporaries_removes_what_an_ended_process_left(tmp_path):
    target = tmp_path / "out.parquet"
    (tmp_path / ".out.parquet.tmp-1-0-old" / "x").mkdir(parents=True)
    (tmp_path / ".out.parquet.tmp-1-1-old").write_text("old link")
    (tmp_path / ".out.parquet.tmp-1").write_text("half written")
    (tmp_path / ".other.parquet.tmp-1").write_text("not ours")
    remove_temporaries(target)
    assert [p.name for p in tmp_path.iterdir()] == [".other.parquet.tmp-1"]


def test_remove_path_removes_a_directory_or_a_file_and_ignores_a_missing_one(tmp_path):
    work = tmp_path / "out.parquet.parts"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "part.arrow").write_bytes(b"x" * 10_000)
    (work / "manifest.json").write_text("{}")
    remove_path(work)
    remove_path(tmp_path / "absent")
    (tmp_path / "file.txt").write_text("x")
    remove_path(tmp_path / "file.txt")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_removal_cut_short_leaves_only_a_temporary(tmp_path, monkeypatch):
    """The directory is renamed before its files are deleted: a process that
    ends meanwhile leaves nothing under its name, and remove_temporaries of
    that name removes the rest."""
    work = tmp_path / "out.parquet.parts"
    work.mkdir()
    (work / "manifest.json").write_text("{}")
    (work / "part-000000.arrow").write_bytes(b"x")

    def killed(path, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr("shutil.rmtree", killed)
    with pytest.raises(KeyboardInterrupt):
        remove_path(work)
    monkeypatch.undo()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1
    assert re.fullmatch(rf"\.out\.parquet\.parts\.tmp-{os.getpid()}-[0-9a-f]{{16}}-old", left[0])
    assert sorted(p.name for p in (tmp_path / left[0]).iterdir()) == [
        "manifest.json", "part-000000.arrow"]
    remove_temporaries(work)
    assert list(tmp_path.iterdir()) == []


def test_a_link_planted_under_a_guessable_hidden_name_is_left_alone(tmp_path):
    target = tmp_path / "out.parquet"
    target.write_text("old")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    planted = tmp_path / f".out.parquet.tmp-{os.getpid()}-0-old"
    planted.symlink_to(victim)
    remove_path(target)
    assert victim.read_text() == "precious" and planted.is_symlink() and not target.exists()
