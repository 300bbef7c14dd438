"""clperiod.pipeline: resumable catalog runs from a file to a results file."""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys
import time
import warnings
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod.pipeline import run as pipeline
from clperiod.io.readers import open_catalog
from clperiod.io import load_example
from clperiod.pipeline import AutoGrid, PeriodSearch, run_catalog, work_directory
from clperiod.io.tables import result_columns

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 1200)


@pytest.fixture(scope="module")
def catalog():
    return load_example("stripe82").subset(np.arange(24))


@pytest.fixture
def input_file(tmp_path, catalog):
    ids = np.repeat(catalog.ids, catalog.lengths)
    path = tmp_path / "catalog.parquet"
    pq.write_table(pa.table({"id": ids, "t": catalog.t, "y": catalog.y, "dy": catalog.dy}), path)
    return path


def _search(**options):
    return PeriodSearch("lombscargle", GRID, {"top_k": 2, **options})


def _reader(path, chunk_rows=300):
    return open_catalog(path, chunk_rows=chunk_rows)


def _fail_on_call(monkeypatch, method: str, call: int, error: Exception) -> None:
    """Make ``PeriodSearch.<method>`` raise ``error`` on its ``call``-th call."""
    original, calls = getattr(PeriodSearch, method), []

    def failing(self, catalog, **options):
        calls.append(catalog.n_objects)
        if len(calls) == call:
            raise error
        return original(self, catalog, **options)

    monkeypatch.setattr(PeriodSearch, method, failing)


def _same_table(a, b) -> None:
    left, right = pq.read_table(a), pq.read_table(b)
    assert left.equals(right)
    assert left.schema.metadata == right.schema.metadata


def test_run_matches_one_direct_search(tmp_path, input_file, catalog, cpu_device):
    run = run_catalog(_reader(input_file), _search(), tmp_path / "out.parquet",
                      periodogram=tmp_path / "power.npy", device=cpu_device, progress=False)
    assert run.n_chunks == len(list(_reader(input_file))) == 5
    assert run.n_objects == 24 and run.n_resumed == 0
    assert run.grid == GRID and set(run.timings) == {"read_s", "compute_s", "write_s", "join_s",
                                                     "total_s"}
    direct = clperiod.lombscargle(catalog, GRID, top_k=2, periodogram=True, device=cpu_device)
    table = pq.read_table(run.output)
    for name, values in result_columns(direct).items():
        got = table.column(name).to_numpy(zero_copy_only=False)
        assert got.tolist() == values.tolist() or np.array_equal(got, values, equal_nan=True), name
    np.testing.assert_array_equal(np.load(run.periodogram), direct.power)
    provenance = json.loads(table.schema.metadata[b"clperiod"])
    assert provenance["search"]["grid"] == {"fmin": GRID.fmin, "df": GRID.df, "nf": GRID.nf}
    assert provenance["input"]["path"] == str(input_file.resolve())
    assert not work_directory(run.output).exists()


#: Uneven frequencies (log-spaced), unsorted, one repeated.
ARRAY = clperiod.FrequencyGrid.from_frequencies(
    np.random.default_rng(4).permutation(np.r_[np.geomspace(0.5, 4.0, 900), 1.0])
)


def test_a_run_on_a_frequency_array_matches_the_direct_search(tmp_path, input_file, catalog,
                                                              cpu_device):
    assert isinstance(ARRAY, clperiod.FrequencyArray)
    run = run_catalog(_reader(input_file), PeriodSearch("lombscargle", ARRAY, {"top_k": 2}),
                      tmp_path / "out.parquet", periodogram=tmp_path / "power.npz",
                      device=cpu_device, progress=False)
    assert run.grid == ARRAY and run.n_chunks == 5
    direct = clperiod.lombscargle(catalog, ARRAY, top_k=2, periodogram=True, device=cpu_device)
    table = pq.read_table(run.output)
    for name, values in result_columns(direct).items():
        got = table.column(name).to_numpy(zero_copy_only=False)
        assert got.tolist() == values.tolist() or np.array_equal(got, values, equal_nan=True), name
    with np.load(run.periodogram) as archive:
        np.testing.assert_array_equal(archive["power"], direct.power)
        np.testing.assert_array_equal(archive["frequencies"], ARRAY.frequencies())
    grid = json.loads(table.schema.metadata[b"clperiod"])["search"]["grid"]
    assert grid["nf"] == 901 and (grid["fmin"], grid["fmax"]) == (0.5, 4.0)
    assert re.fullmatch("[0-9a-f]{32}", grid["frequencies_blake2b"])


def test_a_run_on_a_frequency_array_resumes_only_with_the_same_frequencies(
        tmp_path, input_file, monkeypatch, cpu_device):
    search = PeriodSearch("lombscargle", ARRAY, {"top_k": 2})
    output = tmp_path / "out.parquet"
    _fail_on_call(monkeypatch, "start", 3, OSError("device lost"))
    with pytest.raises(OSError, match="device lost"):
        run_catalog(_reader(input_file), search, output, device=cpu_device, progress=False)
    monkeypatch.undo()
    shifted = clperiod.FrequencyArray(ARRAY.frequencies() * (1 + 1e-12))
    with pytest.raises(ValueError, match=r"search\.grid\.frequencies_blake2b: '[0-9a-f]+' there"):
        run_catalog(_reader(input_file), PeriodSearch("lombscargle", shifted, {"top_k": 2}),
                    output, device=cpu_device)
    run = run_catalog(_reader(input_file), search, output, device=cpu_device, progress=False)
    assert run.n_resumed == 2 and run.n_objects == 24
    reference = run_catalog(_reader(input_file), search, tmp_path / "ref.parquet",
                            device=cpu_device, progress=False)
    assert pq.read_table(output).equals(pq.read_table(reference.output))


def test_a_repeated_run_replaces_its_output_and_leaves_nothing_behind(tmp_path, input_file,
                                                                       cpu_device):
    output = tmp_path / "out.parquet"
    first = run_catalog(_reader(input_file), _search(), output, device=cpu_device,
                        progress=False)
    expected = pq.read_table(first.output)
    reader = open(output, "rb")  # the old version stays readable while it is replaced
    run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False,
                restart=True)
    assert pq.read_table(output).equals(expected)
    assert pq.read_table(reader).equals(expected)
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.parquet", "out.parquet"]
    assert output.stat().st_nlink == 1


def test_catalog_source_csv_output_and_supersmoother(tmp_path, catalog, cpu_device):
    search = PeriodSearch("supersmoother", clperiod.FrequencyGrid.from_range(0.5, 4.0, 300),
                          {"variant": "single_pass"})
    run = run_catalog(catalog, search, tmp_path / "out.csv", chunk_rows=500, device=cpu_device,
                      progress=False)
    import pandas as pd

    frame = pd.read_csv(run.output)
    direct = clperiod.supersmoother(catalog, search.grid, variant="single_pass", device=cpu_device)
    np.testing.assert_array_equal(frame["id"], catalog.ids)
    np.testing.assert_allclose(frame["period"], direct.period, rtol=1e-15)
    assert "fap" not in frame.columns and run.n_chunks == 3


def test_a_list_of_light_curves_is_a_source(tmp_path, catalog, cpu_device):
    curves = [catalog.lightcurve(k) for k in range(5)]
    run = run_catalog(curves, _search(), tmp_path / "out.parquet", device=cpu_device,
                      progress=False)
    table = pq.read_table(run.output).to_pandas()
    direct = clperiod.lombscargle(catalog.subset(np.arange(5)), GRID, top_k=2, device=cpu_device)
    np.testing.assert_array_equal(table["id"], np.arange(5))
    np.testing.assert_array_equal(table["period"], direct.period)


def test_auto_grid_is_astropy_rule_over_the_whole_catalog(tmp_path, input_file, catalog,
                                                          cpu_device):
    auto = AutoGrid(samples_per_peak=2, maximum_frequency=3.0)
    run = run_catalog(_reader(input_file), PeriodSearch("lombscargle", auto),
                      tmp_path / "out.parquet", device=cpu_device, progress=False)
    assert run.grid == clperiod.FrequencyGrid.auto(catalog, samples_per_peak=2,
                                                   maximum_frequency=3.0)


def test_interrupted_run_resumes_without_loss_or_repeats(tmp_path, input_file, monkeypatch,
                                                         cpu_device):
    kwargs = {"periodogram": tmp_path / "power.h5", "device": cpu_device, "progress": False}
    reference = run_catalog(_reader(input_file), _search(), tmp_path / "ref.parquet",
                            periodogram=tmp_path / "ref.h5", device=cpu_device, progress=False)
    _fail_on_call(monkeypatch, "run", 4, RuntimeError("device lost"))
    output = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError, match="device lost"):
        run_catalog(_reader(input_file), _search(), output, **kwargs)
    work = work_directory(output)
    parts = sorted(p.name for p in work.glob("part-*"))
    assert parts == [f"part-00000{i}.arrow" for i in range(3)]
    assert not output.exists()
    # what a killed run leaves: files being written under temporary names
    strays = [tmp_path / ".out.parquet.tmp-99999", tmp_path / ".power.h5.tmp-99999",
              work / ".part-000003.arrow.tmp-99999"]
    for stray in strays:
        stray.write_bytes(b"half")
    monkeypatch.undo()
    run = run_catalog(_reader(input_file), _search(), output, **kwargs)
    assert run.n_resumed == 3 and run.n_chunks == 5 and run.n_objects == 24
    assert not any(stray.exists() for stray in strays)
    table = pq.read_table(output)
    assert table.equals(pq.read_table(reference.output))
    import h5py

    with h5py.File(run.periodogram) as got, h5py.File(reference.periodogram) as expected:
        np.testing.assert_array_equal(got["power"][:], expected["power"][:])
        np.testing.assert_array_equal(got["id"][:], expected["id"][:])


def test_a_run_stopped_before_its_output_is_in_place_searches_the_last_chunk_again(
        tmp_path, input_file, monkeypatch, cpu_device):
    """The last chunk has no part file (its rows complete the output): a run
    that stops before the output is renamed into place resumes every other
    chunk and searches that one again."""
    reference = run_catalog(_reader(input_file), _search(), tmp_path / "ref.parquet",
                            device=cpu_device, progress=False)
    output = tmp_path / "out.parquet"
    replace = os.replace

    def killed(source, destination):
        if Path(destination) == output:
            raise KeyboardInterrupt
        replace(source, destination)

    monkeypatch.setattr(os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    monkeypatch.setattr(os, "replace", replace)
    parts = sorted(p.name for p in work_directory(output).glob("part-*"))
    assert parts == [f"part-00000{i}.arrow" for i in range(4)] and not output.exists()
    searched = []
    start = PeriodSearch.start
    monkeypatch.setattr(PeriodSearch, "start", lambda self, catalog, **options: (
        searched.append(catalog.n_objects) or start(self, catalog, **options)))
    run = run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert run.n_resumed == 4 and run.n_chunks == 5 and len(searched) == 1
    assert pq.read_table(output).equals(pq.read_table(reference.output))
    assert not work_directory(output).exists()


@pytest.mark.slow
def test_a_second_interrupt_still_waits_for_the_writes_under_way(tmp_path, input_file,
                                                                 monkeypatch, cpu_device):
    """Ctrl-C, then Ctrl-C again while the run hands over its last chunk: the run
    cancels the writes not started, waits for the one under way and only then
    unlocks its outputs and raises; it resumes to the full output."""
    reference = run_catalog(_reader(input_file), _search(), tmp_path / "ref.parquet",
                            device=cpu_device, progress=False)
    write, wait_for = pipeline._write, pipeline._wait_for
    writing, waits = [], []

    def slow_write(*args, **kwargs):
        writing.append(1)
        time.sleep(0.3)
        result = write(*args, **kwargs)
        writing.pop()
        return result

    def interrupted(*args, **kwargs):
        waits.append(1)
        if len(waits) >= 3:
            raise KeyboardInterrupt
        return wait_for(*args, **kwargs)

    monkeypatch.setattr(pipeline, "_write", slow_write)
    monkeypatch.setattr(pipeline, "_wait_for", interrupted)
    output = tmp_path / "out.parquet"
    with pytest.raises(KeyboardInterrupt):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert not writing and len(waits) == 4
    assert not list(tmp_path.glob(".*.tmp-*")) and not list(tmp_path.glob(".*.lock"))
    monkeypatch.undo()
    run = run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert run.n_resumed >= 1 and pq.read_table(output).equals(pq.read_table(reference.output))


def test_a_run_that_wrote_no_part_does_not_block_other_settings(tmp_path, input_file,
                                                                cpu_device):
    """A run whose search refused an option wrote no part: the corrected run (other
    settings) starts afresh instead of being refused; once a part exists, other
    settings are refused (below)."""
    output = tmp_path / "out.parquet"
    bad = PeriodSearch("lombscargle", _search().grid, {"top_k": 0})
    with pytest.raises(ValueError, match="top_k"):
        run_catalog(_reader(input_file), bad, output, device=cpu_device, progress=False)
    assert [p.name for p in work_directory(output).iterdir()] == ["manifest.json"]
    run = run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert run.n_resumed == 0 and run.n_objects == 24 and not work_directory(output).exists()


def test_work_directory_of_other_settings_is_refused(tmp_path, input_file, monkeypatch,
                                                     cpu_device):
    output = tmp_path / "out.parquet"
    _fail_on_call(monkeypatch, "start", 2, OSError("x"))  # the second chunk's search
    with pytest.raises(OSError):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    monkeypatch.undo()
    manifest = json.loads((work_directory(output) / "manifest.json").read_text())
    assert manifest["settings"]["reader"]["chunk_rows"] == 300
    message = r"other settings \(reader\.chunk_rows: 300 there, 400 now\)"
    with pytest.raises(ValueError, match=message):
        run_catalog(_reader(input_file, 400), _search(), output, device=cpu_device)
    with pytest.raises(ValueError, match=r"search\.options\.top_k: 2 there, 3 now"):
        run_catalog(_reader(input_file), _search(top_k=3), output, device=cpu_device)
    input_file.touch()  # a newer modification time: another input
    with pytest.raises(ValueError, match=r"input\.mtime_ns"):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device)
    run = run_catalog(_reader(input_file, 400), _search(), output, restart=True,
                      device=cpu_device, progress=False)
    assert run.n_resumed == 0 and run.n_objects == 24


def test_a_set_up_failure_stops_the_run_before_any_search(tmp_path, input_file, monkeypatch,
                                                          cpu_device):
    """A failure while the work directory is set up (its manifest written)
    starts no search and leaves nothing to resume."""
    output = tmp_path / "out.parquet"
    searched = []
    monkeypatch.setattr(PeriodSearch, "start", lambda *a, **k: searched.append(1))
    monkeypatch.setattr(pipeline, "_new_manifest",
                        lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert searched == [] and not output.exists()
    monkeypatch.undo()
    run = run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert run.n_resumed == 0 and run.n_objects == 24


def test_a_part_of_another_chunk_is_refused(tmp_path, input_file, monkeypatch, cpu_device):
    output = tmp_path / "out.parquet"
    original = PeriodSearch.start
    calls = []

    def failing(self, catalog, **options):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("stop")
        return original(self, catalog, **options)

    monkeypatch.setattr(PeriodSearch, "start", failing)
    with pytest.raises(RuntimeError):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert sorted(p.name for p in work_directory(output).glob("part-*")) == [
        "part-000000.arrow", "part-000001.arrow"]  # the chunk queued before is kept
    monkeypatch.setattr(PeriodSearch, "start", original)
    work = work_directory(output)
    (work / "part-000001.arrow").replace(work / "part-000000.arrow")
    with pytest.raises(ValueError, match="but chunk 0 of the input is .*stale"):
        run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    killed = work_directory(tmp_path / "early.parquet")  # killed while writing its manifest
    killed.mkdir()
    (killed / ".manifest.json.tmp-99999").write_text("{")
    run = run_catalog(_reader(input_file), _search(), tmp_path / "early.parquet",
                      device=cpu_device, progress=False)
    assert run.n_objects == 24 and not killed.exists()
    (tmp_path / "junk.parquet.parts").mkdir()
    (tmp_path / "junk.parquet.parts" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a clperiod work directory"):
        run_catalog(_reader(input_file), _search(), tmp_path / "junk.parquet", device=cpu_device)


@pytest.mark.slow
def test_figures_for_chosen_or_first_objects(tmp_path, input_file, catalog, monkeypatch,
                                             cpu_device):
    import clperiod.plot

    drawn = []
    real = clperiod.plot.plot_objects

    def spy(result, cat, objects, directory, **options):
        drawn.append((list(objects), result.power.shape[0], cat.n_objects))
        return real(result, cat, objects, directory, **options)

    monkeypatch.setattr(clperiod.plot, "plot_objects", spy)
    wanted = [str(catalog.ids[2]), str(catalog.ids[20]), "no-such-id"]
    with pytest.warns(UserWarning, match=r"no object with id\(s\) no-such-id in the input"):
        run = run_catalog(_reader(input_file), _search(), tmp_path / "out.parquet",
                          plot=tmp_path / "figs", plot_ids=wanted, device=cpu_device,
                          progress=False)
    assert sorted(p.name for p in run.figures) == sorted(f"{i}.png" for i in wanted[:2])
    assert all(p.stat().st_size > 1000 for p in run.figures)
    assert [objects for objects, _, _ in drawn] == [[catalog.ids[2]], [catalog.ids[20]]]
    assert all(n == m == 1 for _, n, m in drawn)  # only those objects were searched again
    drawn.clear()

    def record(result, cat, objects, directory, fmt, labels):  # the wiring, no drawing
        drawn.append(list(objects))
        assert labels == clperiod.plot.PlotLabels("t", "y")  # the input's columns
        return [directory / f"{i}.{fmt}" for i in objects]

    monkeypatch.setattr(clperiod.plot, "plot_objects", record)
    run = run_catalog(_reader(input_file, 100), _search(), tmp_path / "b.parquet",
                      plot=tmp_path / "first", plot_format="svg", device=cpu_device,
                      progress=False)
    first = catalog.ids[:pipeline.DEFAULT_PLOTS].tolist()
    assert [p.name for p in run.figures] == [f"{i}.svg" for i in first]
    assert len(drawn) > 1 and sum(drawn, []) == first  # spread over the first chunks


def test_progress_bar_only_when_asked_or_on_a_terminal(tmp_path, input_file, capsys, cpu_device):
    run_catalog(_reader(input_file), _search(), tmp_path / "a.parquet", device=cpu_device)
    assert capsys.readouterr().err == ""  # not a terminal: tqdm's disable=None stays quiet
    run_catalog(_reader(input_file), _search(), tmp_path / "b.parquet", device=cpu_device,
                progress=True)
    err = capsys.readouterr().err
    rows = pq.read_metadata(input_file).num_rows
    assert "lombscargle: 100%" in err and f"{rows / 1000:.2f}k/{rows / 1000:.2f}k" in err


def test_search_settings_are_checked():
    with pytest.raises(ValueError, match="algorithm must be one of"):
        PeriodSearch("boxes", GRID)
    message = r"unknown lombscargle option\(s\) \['device', 'variant'\]"
    with pytest.raises(ValueError, match=message):
        PeriodSearch("lombscargle", GRID, {"variant": "original", "device": "cpu"})
    with pytest.raises(TypeError, match="JSON"):
        PeriodSearch("lombscargle", GRID, {"top_k": np.int32(2)})
    with pytest.raises(TypeError, match="FrequencyGrid, FrequencyArray or AutoGrid, got ndarray"):
        PeriodSearch("lombscargle", np.arange(3.0))
    search = PeriodSearch("supersmoother", AutoGrid(), {"alpha": 5.0})
    assert search.settings() == {
        "algorithm": "supersmoother", "options": {"alpha": 5.0}, "fap_method": "baluev",
        "grid": {"auto": {"samples_per_peak": 5, "nyquist_factor": 5, "minimum_frequency": None,
                          "maximum_frequency": None, "min_period": 0.05}},
    }
    with pytest.raises(ValueError, match="resolve the AutoGrid"):
        search.run(load_example("ida"))


def test_bad_row_stops_the_run_after_saving_the_chunks_before_it(tmp_path, catalog, cpu_device):
    ids = np.repeat(catalog.ids, catalog.lengths)
    y = catalog.y.copy()
    bad_row = int(catalog.offsets[20]) + 3
    y[bad_row] = np.nan
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "t": catalog.t, "y": y}), path)
    output = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=rf"bad\.parquet: row {bad_row} \(object "
                                         rf"{catalog.ids[20]}\): y is nan"):
        run_catalog(_reader(path), _search(), output, device=cpu_device, progress=False)
    parts = sorted(work_directory(output).glob("part-*.arrow"))
    assert len(parts) >= 3 and not output.exists()
    saved = np.concatenate([feather.read_table(p).column("id").to_numpy() for p in parts])
    np.testing.assert_array_equal(saved, catalog.ids[:saved.size])
    assert catalog.ids[20] not in saved
    run = run_catalog(open_catalog(path, chunk_rows=300, nan_policy="omit"), _search(), output,
                      restart=True, device=cpu_device, progress=False)
    n_points = pq.read_table(output).column("n_points").to_numpy()
    assert run.n_objects == 24 and n_points[20] == catalog.lengths[20] - 1


def test_a_bad_first_chunk_leaves_no_work_directory(tmp_path, catalog, cpu_device):
    ids = np.repeat(catalog.ids, catalog.lengths)
    dy = catalog.dy.copy()
    dy[5] = -1.0
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "t": catalog.t, "y": catalog.y, "dy": dy}), path)
    output = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=r"bad\.parquet: row 5 .*dy"):
        run_catalog(_reader(path), _search(), output, device=cpu_device, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]


def test_a_bad_first_chunk_is_reported_before_any_search(tmp_path, catalog, monkeypatch,
                                                         cpu_device):
    """Rows are checked, then searched: a bad row of the first chunk stops the
    run with the row's error before a search starts (so without NumPy warnings
    about the bad values), and leaves nothing behind."""
    ids = np.repeat(catalog.ids, catalog.lengths)
    t, dy = catalog.t.copy(), catalog.dy.copy()
    t[7], dy[9] = np.inf, 0.0
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "t": t, "y": catalog.y, "dy": dy}), path)
    started = []
    start = PeriodSearch.start
    monkeypatch.setattr(PeriodSearch, "start",
                        lambda self, cat, **k: started.append(cat) or start(self, cat, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"bad\.parquet: row 7 \(object .*\): t is inf"):
            run_catalog(_reader(path), _search(), tmp_path / "out.parquet", device=cpu_device,
                        progress=False)
    assert started == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.parquet"]


def test_a_bad_row_and_a_failed_search_each_report_their_own_error(tmp_path, catalog,
                                                                   input_file, monkeypatch,
                                                                   cpu_device):
    ids = np.repeat(catalog.ids, catalog.lengths)
    y = catalog.y.copy()
    y[3] = np.nan
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"id": ids, "t": catalog.t, "y": y, "dy": catalog.dy}), path)
    _fail_on_call(monkeypatch, "start", 1, RuntimeError("the search failed"))
    with pytest.raises(ValueError, match=r"row 3 \(object .*\): y is nan"):
        run_catalog(_reader(path), _search(), tmp_path / "a.parquet", device=cpu_device,
                    progress=False)
    _fail_on_call(monkeypatch, "start", 1, RuntimeError("the search failed"))
    with pytest.raises(RuntimeError, match="the search failed"):  # good rows: its own error
        run_catalog(_reader(input_file), _search(), tmp_path / "b.parquet", device=cpu_device,
                    progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.parquet.parts", "bad.parquet",
                                                          "catalog.parquet"]
    # the failed search's run set up its work directory: a rerun resumes it
    assert [p.name for p in (tmp_path / "b.parquet.parts").iterdir()] == ["manifest.json"]


@pytest.mark.slow
def test_figures_of_ids_that_clash_as_file_names_stay_apart(tmp_path, catalog, cpu_device):
    """"a/b" and "a_b" in different chunks, and an id too long for a file name."""
    cat = catalog.subset(np.arange(3))
    ids = np.repeat(np.array(["a/b", "a_b", "x" * 300]), cat.lengths)
    path = tmp_path / "clash.csv"
    pd.DataFrame({"id": ids, "mjd": cat.t, "mag": cat.y, "dy": cat.dy}).to_csv(path, index=False)
    reader = open_catalog(path, t_col="mjd", y_col="mag", chunk_rows=1, first_chunk_rows=None)
    run = run_catalog(reader, _search(), tmp_path / "out.parquet", plot=tmp_path / "figs",
                      plot_ids=["a/b", "a_b", "x" * 300], device=cpu_device, progress=False)
    assert run.n_chunks == 3 and len(run.figures) == 3
    assert sorted(run.figures) == sorted((tmp_path / "figs").iterdir())
    assert [p.name for p in run.figures] == [
        f"{clperiod.plot.file_stem('a/b')}.png", "a_b.png",
        f"{clperiod.plot.file_stem('x' * 300)}.png"]
    assert len(run.figures[2].name) == 100 + 17 + 4


def test_figures_name_the_input_columns_and_invert_magnitudes(tmp_path, catalog, monkeypatch,
                                                              cpu_device):
    import clperiod.plot

    figures = []
    real = clperiod.plot.plot_result

    def keep(*args, **options):
        figures.append(real(*args, **options))
        return figures[-1]

    monkeypatch.setattr(clperiod.plot, "plot_result", keep)
    cat = catalog.subset([0])
    ids = np.repeat(cat.ids, cat.lengths)
    days = (cat.t - 40587.0) * 86400e9  # MJD -> ns since 1970
    table = pa.table({"oid": ids, "obs_time": pa.array(days.astype("datetime64[ns]")),
                      "psfMag": cat.y})
    pq.write_table(table, tmp_path / "stamps.parquet")
    reader = open_catalog(tmp_path / "stamps.parquet", id_col="oid", t_col="obs_time",
                          y_col="psfMag", dy_col=None)
    assert reader.timestamps
    run_catalog(reader, _search(), tmp_path / "out.parquet", plot=tmp_path / "figs",
                device=cpu_device, progress=False)
    top, bottom = figures[0].axes
    assert top.get_xlabel() == "frequency [1/d]"
    assert bottom.get_ylabel() == "psfMag" and bottom.yaxis_inverted()
    assert "phase 0 at obs_time (MJD) = " in bottom.get_xlabel()
    figures[0].savefig(tmp_path / "look.png")


def _time_sorted_file(path, catalog):
    order = np.argsort(catalog.t, kind="stable")
    ids = np.repeat(catalog.ids, catalog.lengths)
    pq.write_table(pa.table({"id": ids[order], "t": catalog.t[order], "y": catalog.y[order],
                             "dy": catalog.dy[order]}), path, row_group_size=200)
    return path


def test_a_time_sorted_input_runs_and_resumes_like_the_grouped_one(tmp_path, catalog,
                                                                   monkeypatch, cpu_device):
    from clperiod.io import grouping

    monkeypatch.setattr(grouping, "SORT_RUN_ROWS", 250)  # merged from temporary files
    by_id = catalog.subset(np.argsort(catalog.ids, kind="stable"))
    grouped = tmp_path / "grouped.parquet"
    ids = np.repeat(by_id.ids, by_id.lengths)
    pq.write_table(pa.table({"id": ids, "t": by_id.t, "y": by_id.y, "dy": by_id.dy}), grouped)
    reference = run_catalog(_reader(grouped), _search(), tmp_path / "ref.parquet",
                            device=cpu_device, progress=False)
    timed = _time_sorted_file(tmp_path / "timed.parquet", catalog)

    def reader():
        return open_catalog(timed, chunk_rows=300, grouping="auto")

    output = tmp_path / "out.parquet"
    _fail_on_call(monkeypatch, "start", 3, RuntimeError("device lost"))
    with pytest.raises(RuntimeError, match="device lost"):
        run_catalog(reader(), _search(), output, device=cpu_device, progress=False)
    monkeypatch.undo()
    monkeypatch.setattr(grouping, "SORT_RUN_ROWS", 250)
    run = run_catalog(reader(), _search(), output, device=cpu_device, progress=False)
    assert run.n_resumed >= 1 and run.n_chunks == reference.n_chunks
    got, expected = pq.read_table(output), pq.read_table(reference.output)
    assert got.column("id").to_pylist() == sorted(catalog.ids.tolist())
    for name in expected.column_names:
        assert got.column(name).equals(expected.column(name)), name
    assert reader().settings()["grouping"] == "sort"


# ---------------------------------------------------------------------- run safety


def _write_csv(path: Path, catalog) -> Path:
    ids = np.repeat(catalog.ids, catalog.lengths)
    rows = zip(ids.tolist(), catalog.t.tolist(), catalog.y.tolist(), catalog.dy.tolist())
    path.write_text("id,t,y,dy\n" + "".join(f"{i},{t!r},{y!r},{dy!r}\n" for i, t, y, dy in rows))
    return path


def test_an_input_edited_in_place_is_refused_on_resume(tmp_path, catalog, monkeypatch,
                                                       cpu_device):
    """Same size, same modification time, other values: the finished chunk
    whose rows changed is named, and a restart gives a fresh run's output."""
    path = _write_csv(tmp_path / "catalog.csv", catalog)
    output = tmp_path / "out.parquet"
    _fail_on_call(monkeypatch, "start", 3, RuntimeError("stop"))
    with pytest.raises(RuntimeError, match="stop"):
        run_catalog(_reader(path), _search(), output, device=cpu_device, progress=False)
    monkeypatch.undo()
    assert sorted(p.name for p in work_directory(output).glob("part-*")) == [
        "part-000000.arrow", "part-000001.arrow"]
    stat = path.stat()
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[1 + 3].split(",")  # row 3: object 0, chunk 0
    fields[2] = fields[2][:-1] + str((int(fields[2][-1]) + 1) % 10)  # y's last digit
    lines[1 + 3] = ",".join(fields)
    path.write_text("".join(lines))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert _reader(path).identity() == json.loads(
        (work_directory(output) / "manifest.json").read_text())["settings"]["input"]
    message = (r"the rows of chunk 0 of the input \(file rows 0 to 285\) changed since .*"
               r"part-000000\.arrow was written \(checksum [0-9a-f]{32} there, [0-9a-f]{32} "
               r"now\): the input was modified after the run stopped; restart the run")
    with pytest.raises(ValueError, match=message):
        run_catalog(_reader(path), _search(), output, device=cpu_device, progress=False)
    run = run_catalog(_reader(path), _search(), output, restart=True, device=cpu_device,
                      progress=False)
    fresh = run_catalog(_reader(path), _search(), tmp_path / "fresh.parquet", device=cpu_device,
                        progress=False)
    assert run.n_resumed == 0
    assert pq.read_table(output).equals(pq.read_table(fresh.output))


@pytest.mark.slow
def test_a_second_run_on_the_same_output_stops_and_leaves_the_first_alone(
        tmp_path, input_file, monkeypatch, cpu_device):
    """The normal accident: the same job started twice. The second process
    exits at once with a message naming the first, removes nothing of it,
    and the first finishes with a correct output."""
    # the settings of the command below, so that without a lock it would resume this run
    search = _search(memory="auto", method="generalized", normalization="standard",
                     precision="fp64")
    reference = run_catalog(_reader(input_file), search, tmp_path / "ref.parquet",
                            device=cpu_device, progress=False)
    output = tmp_path / "out.parquet"
    argv = [sys.executable, "-m", "clperiod", "lombscargle", str(input_file), "--fmin", "0.5",
            "--fmax", "4", "--nf", "1200", "--top-k", "2", "--chunk-rows", "300",
            "--no-progress", "-o", str(output)]
    second, calls = {}, []
    start = PeriodSearch.start

    def start_then_run_again(self, catalog, **options):
        calls.append(1)
        if len(calls) == 4:  # the first run is under way, with files on disk
            work = work_directory(output)
            deadline = time.monotonic() + 60
            while not (work / "part-000000.arrow").exists() or not list(
                    tmp_path.glob(".out.parquet.tmp-*")):  # the writer thread's first chunk
                assert time.monotonic() < deadline
                time.sleep(0.001)
            # files that stay until the run ends: committed parts, the
            # manifest, the output being written under its temporary name
            stable = [*work.glob("part-*.arrow"), work / "manifest.json",
                      *tmp_path.glob(".out.parquet.tmp-*")]
            before = {p: p.stat().st_ino for p in stable}
            second["done"] = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                                            env=dict(os.environ))
            second["kept"] = {p: p.stat().st_ino for p in stable} == before
        return start(self, catalog, **options)

    monkeypatch.setattr(PeriodSearch, "start", start_then_run_again)
    run = run_catalog(_reader(input_file), search, output, device=cpu_device, progress=False)
    done = second["done"]
    assert done.returncode == 1 and done.stdout == ""
    assert re.fullmatch(rf"clperiod: error: another run \(pid {os.getpid()} on .+\) is writing "
                        rf"{re.escape(str(output))} \(lock file .*\.out\.parquet\.lock\); "
                        r"wait for it to finish, or write to another file\n", done.stderr), (
        done.stderr)
    assert second["kept"]
    assert run.n_objects == 24
    assert pq.read_table(output).equals(pq.read_table(reference.output))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.parquet", "out.parquet",
                                                          "ref.parquet"]


def test_a_lock_left_by_a_killed_run_does_not_block(tmp_path, input_file, cpu_device):
    output = tmp_path / "out.parquet"
    (tmp_path / ".out.parquet.lock").write_text("pid 99999 on elsewhere\n")  # nobody holds it
    run = run_catalog(_reader(input_file), _search(), output, device=cpu_device, progress=False)
    assert run.n_objects == 24 and not (tmp_path / ".out.parquet.lock").exists()


def test_an_output_that_is_a_directory_is_refused_before_searching(tmp_path, input_file,
                                                                   monkeypatch, cpu_device):
    searched = []
    monkeypatch.setattr(PeriodSearch, "start", lambda *a, **k: searched.append(1))
    monkeypatch.setattr(PeriodSearch, "run", lambda *a, **k: searched.append(1))
    (tmp_path / "out.parquet").mkdir()
    with pytest.raises(IsADirectoryError, match=r"out\.parquet is a directory; give the name"):
        run_catalog(_reader(input_file), _search(), tmp_path / "out.parquet", device=cpu_device)
    (tmp_path / "power.npy").mkdir()
    with pytest.raises(IsADirectoryError, match=r"power\.npy is a directory"):
        run_catalog(_reader(input_file), _search(), tmp_path / "a.parquet",
                    periodogram=tmp_path / "power.npy", device=cpu_device)
    (tmp_path / "figures").write_text("a file")
    with pytest.raises(NotADirectoryError, match="figures is a file, not a folder"):
        run_catalog(_reader(input_file), _search(), tmp_path / "a.parquet",
                    plot=tmp_path / "figures", device=cpu_device)
    with pytest.raises(ValueError, match="the results and the periodograms would both go"):
        run_catalog(_reader(input_file), _search(), tmp_path / "a.parquet",
                    periodogram=tmp_path / "a.parquet", output_format="parquet",
                    periodogram_format="parquet", device=cpu_device)
    assert searched == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.parquet", "figures",
                                                          "out.parquet", "power.npy"]


@pytest.mark.slow
def test_periodogram_groups_are_written_as_they_finish(tmp_path, input_file, monkeypatch,
                                                        cpu_device):
    """No group's periodograms are still held when the next group is searched,
    and the groups follow the available host memory."""
    reference = run_catalog(_reader(input_file), _search(), tmp_path / "ref.parquet",
                            periodogram=tmp_path / "ref.npy", device=cpu_device,
                            progress=False)
    monkeypatch.setattr(pipeline, "PERIODOGRAM_BYTES", 3 * 8 * GRID.nf)  # 3 objects per group
    held, groups = [], []
    run_search = PeriodSearch.run

    def watched(self, cat, **options):
        gc.collect()
        held.append(sum(ref() is not None for ref in groups))
        result = run_search(self, cat, **options)
        groups.append(weakref.ref(result.power))
        return result

    monkeypatch.setattr(PeriodSearch, "run", watched)
    run = run_catalog(_reader(input_file), _search(), tmp_path / "out.parquet",
                      periodogram=tmp_path / "out.npy", device=cpu_device, progress=False)
    chunk_objects = [c.catalog.n_objects for c in _reader(input_file)]
    assert len(groups) == sum(-(-n // 3) for n in chunk_objects) > run.n_chunks
    assert held == [0] * len(groups)
    np.testing.assert_array_equal(np.load(run.periodogram), np.load(reference.periodogram))
    assert pq.read_table(run.output).equals(pq.read_table(reference.output))
    groups.clear()
    monkeypatch.setattr(pipeline, "available_host_memory", lambda: 4 * 2 * 8 * GRID.nf)
    run = run_catalog(_reader(input_file), _search(), tmp_path / "small.parquet",
                      periodogram=tmp_path / "small.h5", device=cpu_device, progress=False)
    assert len(groups) == sum(-(-n // 2) for n in chunk_objects)  # 2 objects per group
    import h5py

    with h5py.File(run.periodogram) as handle:
        np.testing.assert_array_equal(handle["power"][:], np.load(reference.periodogram))


def test_the_reader_is_waited_for_through_a_second_interrupt(monkeypatch):
    """Leaving the prefetch stops its reader thread and waits for it even when
    interrupted again (the items are closed next and must not be running)."""
    import concurrent.futures

    def slow_items():
        for k in range(3):
            time.sleep(0.05)
            yield k

    prefetch = pipeline._Prefetch(slow_items(), {"read_s": 0.0})
    items = prefetch.__enter__()
    assert next(items) == 0
    wait, calls = concurrent.futures.wait, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return wait(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "wait", interrupted)
    prefetch.__exit__(None, None, None)
    monkeypatch.undo()
    assert prefetch._job.done() and len(calls) >= 2


def test_grid_warnings_give_the_remedies_of_the_kinds_found():
    grid = clperiod.FrequencyGrid.from_range(0.5, 4.0, 100)
    with pytest.warns(pipeline.GridResolutionWarning) as caught:
        pipeline._warn_grid(grid, {"low_fmax": 3})
    text = str(caught[0].message)
    assert "3 with low_fmax" in text and "a higher fmax" in text and "finer step" not in text
    with pytest.warns(pipeline.GridResolutionWarning) as caught:
        pipeline._warn_grid(grid, {"coarse_step": 2})
    text = str(caught[0].message)
    assert "finer step" in text and "higher fmax" not in text
