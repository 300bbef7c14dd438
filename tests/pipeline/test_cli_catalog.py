"""The catalog subcommands of the command line: clperiod lombscargle / supersmoother."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import clperiod
import clperiod.plot
from clperiod import cli, pipeline
from clperiod.io import example_path, load_example

STRIPE82 = str(example_path("stripe82"))


def _cli(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _besides_grid_warnings(err: str) -> str:
    """stderr less the grid-resolution warnings of the tests' deliberately coarse grids."""
    return "".join(line for line in err.splitlines(keepends=True)
                   if not line.startswith("clperiod: warning: the grid ("))


def test_lombscargle_command_matches_the_library(tmp_path, capsys, cpu_device):
    out = tmp_path / "res.parquet"
    status, text, err = _cli(capsys, "lombscargle", STRIPE82, "--fmin", 0.5, "--fmax", 4, "--nf",
                             2000, "--top-k", 3, "--chunk-rows", 3000, "-o", out,
                             "--no-progress", "--device", cpu_device.label.split()[0])
    assert status == 0
    # periods below 0.25 d are not searched: the sampling shows them, so it warns
    assert err.startswith("clperiod: warning: the grid (2,000 frequencies from 0.5 to 3.99825) "
                          "does not resolve every object: ")
    assert "136 with low_fmax" in err and err.count("\n") == 1
    assert "a higher fmax" in err and "if such periods are wanted" in err
    assert text.startswith(f"136 objects in 3 chunk(s) written to {out} (lombscargle, 2,000 "
                           "frequencies from 0.5 to 3.99825, fp64")
    grid = clperiod.FrequencyGrid.from_range(0.5, 4, 2000)
    direct = clperiod.lombscargle(load_example("stripe82"), grid, top_k=3, device=cpu_device)
    table = pq.read_table(out)
    np.testing.assert_array_equal(table.column("period").to_numpy(), direct.period)
    np.testing.assert_array_equal(table.column("period_3").to_numpy(), direct.top_k_period[:, 2])
    np.testing.assert_array_equal(table.column("fap").to_numpy(),
                                  direct.false_alarm_probability())


def test_options_reach_the_search(tmp_path, capsys, monkeypatch):
    seen = {}

    def fake_run(reader, search, output, **options):
        seen.update(reader=reader, search=search, output=output, **options)
        raise ValueError("stop here")

    monkeypatch.setattr(pipeline, "run_catalog", fake_run)
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, "--fmin", 0.1, "--df", 0.01, "--nf",
                          50, "--precision", "fp32", "--method", "standard", "--normalization",
                          "none", "--fap-method", "none", "--chunk-objects", 7, "--no-dy",
                          "--periodogram", tmp_path / "p.h5", "--plot", tmp_path / "f",
                          "--plot-ids", "12,ab", "--restart")
    assert status == 1 and err == "clperiod: error: stop here\n"
    search = seen["search"]
    assert search.grid == clperiod.FrequencyGrid.from_step(0.1, 0.01, 50)
    assert search.options == {"memory": "auto", "method": "standard", "normalization": None,
                              "precision": "fp32", "top_k": 1}
    assert search.fap_method is None
    assert seen["reader"].chunk_objects == 7 and "dy" not in seen["reader"].columns
    assert seen["output"] == Path(STRIPE82).with_name("SDSS_stripe82_band_z.lombscargle.parquet")
    assert seen["plot_ids"] == ["12", "ab"] and seen["restart"] is True
    assert seen["progress"] is None and seen["periodogram"] == str(tmp_path / "p.h5")
    _cli(capsys, "supersmoother", STRIPE82, "--variant", "single_pass", "--alpha", 3,
         "--samples-per-peak", 2, "--fmax", 5, "--no-progress")
    assert seen["search"].options == {"alpha": 3.0, "compat": False, "memory": "auto",
                                      "precision": "fp64", "top_k": 1, "variant": "single_pass"}
    assert seen["search"].grid == pipeline.AutoGrid(2.0, 5.0, None, 5.0)
    assert seen["progress"] is False
    _cli(capsys, "supersmoother", STRIPE82, "--no-periodic", "--max-period", 4, "--min-period",
         0.25, "--nf", 100)
    assert seen["search"].options["periodic"] is False
    assert seen["search"].grid == clperiod.FrequencyGrid.from_range(0.25, 4.0, 100)
    _cli(capsys, "lombscargle", STRIPE82, "--no-fit-mean", "--center-data", "--max-period", 2)
    assert seen["search"].options["fit_mean"] is False
    assert seen["search"].options["center_data"] is True
    assert seen["search"].grid == pipeline.AutoGrid(5, 5, 0.5, None)
    (tmp_path / "lc.csv.bz2").write_bytes(bz2.compress(b"id,t,y\n1,0,0\n"))
    _cli(capsys, "lombscargle", tmp_path / "lc.csv.bz2")
    assert seen["output"] == tmp_path / "lc.lombscargle.parquet"


def test_version_and_mutually_exclusive_bounds(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"clperiod {version('clperiod')}\n"
    with pytest.raises(SystemExit) as stop:
        cli.main(["lombscargle", STRIPE82, "--fmax", "2", "--min-period", "0.5"])
    assert stop.value.code == 2
    assert "--min-period: not allowed with argument --fmax" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nf", "10", "--fmin", "1"], r"--nf needs --fmin \(or --max-period\) and one of"),
        (["--nf", "10", "--fmin", "1", "--fmax", "2", "--df", "0.1"], "one of --fmax"),
        (["--nf", "10", "--fmin", "1", "--min-period", "0"], "--min-period must be > 0"),
        (["--df", "0.1"], "--df needs --fmin and --nf"),
        (["--t-col", "mjd"], r"no column\(s\) \['mjd'\]"),
        (["-o", STRIPE82], "is the input .*never overwrites; choose another path"),
        (["--nf", "10", "--fmin", "1", "--fmax", "2", "--samples-per-peak", "10"],
         "--samples-per-peak shape the automatic grid, which --nf"),
        (["--no-dy", "--dy-col", "dy"], "--no-dy ignores uncertainties and --dy-col names"),
        (["--plot-ids", "1"], "--plot-ids chooses the objects that --plot DIR draws"),
        (["--periodogram", STRIPE82], "--periodogram .* is the input"),
        (["--fmin", "1", "--fmax", "0.5", "--nf", "10"], "fmax must be > fmin"),
    ],
)
def test_bad_options_exit_1_with_a_message(capsys, argv, message):
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, *argv)
    assert status == 1
    assert err.startswith("clperiod: error: ") and re.search(message, err)


def test_a_periods_file_is_searched_as_given(tmp_path, capsys, cpu_device):
    periods = np.random.default_rng(8).permutation(np.linspace(0.3, 2.0, 600))
    listing = tmp_path / "periods.txt"
    lines = [f"{float(p)!r}  # P" for p in periods]
    listing.write_text("# trial periods (d)\n\n" + "\n".join(lines))
    out = tmp_path / "res.parquet"
    status, text, err = _cli(capsys, "lombscargle", STRIPE82, "--periods-file", listing,
                             "--periodogram", tmp_path / "p.h5", "-o", out, "--no-progress",
                             "--device", cpu_device.label.split()[0])
    assert status == 0 and _besides_grid_warnings(err) == "", err
    assert "600 frequencies from 0.5 to 3.33333" in text
    grid = clperiod.FrequencyGrid.from_frequencies(1 / periods)
    direct = clperiod.lombscargle(load_example("stripe82"), grid, periodogram=True,
                                  device=cpu_device)
    np.testing.assert_array_equal(pq.read_table(out).column("period").to_numpy(), direct.period)
    import h5py

    with h5py.File(tmp_path / "p.h5") as handle:
        np.testing.assert_array_equal(handle["frequencies"][:], 1 / periods)
        np.testing.assert_array_equal(handle["power"][:], direct.power)


def test_a_frequencies_file_as_text_or_npy_reaches_the_search(tmp_path, capsys, monkeypatch):
    seen = {}

    def fake_run(reader, search, output, **options):
        seen.update(search=search)
        raise ValueError("stop here")

    monkeypatch.setattr(pipeline, "run_catalog", fake_run)
    frequencies = np.geomspace(0.1, 10, 50)
    np.save(tmp_path / "f.npy", frequencies)
    (tmp_path / "f.txt").write_text("\n".join(map(repr, frequencies.tolist())) + "\n")
    for name in ("f.npy", "f.txt"):
        status, _, err = _cli(capsys, "lombscargle", STRIPE82, "--frequencies-file",
                              tmp_path / name)
        assert status == 1 and err == "clperiod: error: stop here\n"
        assert seen.pop("search").grid == clperiod.FrequencyArray(frequencies)
    (tmp_path / "even.txt").write_text("0.5\n1.0\n1.5\n")  # evenly spaced: a uniform grid
    _cli(capsys, "lombscargle", STRIPE82, "--frequencies-file", tmp_path / "even.txt")
    assert seen["search"].grid == clperiod.FrequencyGrid(0.5, 0.5, 3)


@pytest.mark.parametrize(
    ("name", "content", "extra", "message"),
    [
        ("f.txt", "0.5\n1,5\n", (), r"f\.txt, line 2: '1,5' is not a number"),
        ("f.txt", "# none\n\n", (), r"f\.txt holds no frequencies"),
        ("f.txt", "0.5\n\n-1\n", (), r"f\.txt, line 3: frequencies must be finite and >= 0, "
                                     "got -1.0"),
        ("p.txt", "2\n0\n", ("periods",), r"p\.txt, line 2: periods must be finite and > 0"),
        ("p.npy", np.array([1.0, np.nan]), ("periods",), r"p\.npy, index 1: periods must be"),
        ("f.npy", np.ones((2, 2)), (), r"f\.npy: frequencies must be a 1-D array of numbers, "
                                       r"got shape \(2, 2\)"),
        ("f.npy", "0.5\n", (), r"f\.npy: not a \.npy file of numbers"),
        ("f.txt", b"\xff\xfe\x00", (), r"f\.txt is not a text file"),
        ("f.txt", "1\n", ("--nf", "10"), r"--frequencies-file gives the grid: drop --nf"),
        ("f.txt", "1\n", ("--fmin", "0"), r"--frequencies-file gives the grid: drop --fmin"),
        ("missing.txt", None, (), r"No such file or directory: '.*missing\.txt'"),
    ],
)
def test_bad_frequency_files_exit_1_naming_file_and_line(tmp_path, capsys, name, content, extra,
                                                         message):
    path = tmp_path / name
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    periods = extra[:1] == ("periods",)
    option = "--periods-file" if periods else "--frequencies-file"
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, option, path, *extra[periods:])
    assert status == 1
    assert err.startswith("clperiod: error: ") and re.search(message, err), err


def test_frequencies_and_periods_files_are_exclusive(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["lombscargle", STRIPE82, "--frequencies-file", "a", "--periods-file", "b"])
    assert stop.value.code == 2
    assert "not allowed with argument --frequencies-file" in capsys.readouterr().err


def test_supersmoother_command_with_periodograms_and_figures(tmp_path, capsys, cpu_device):
    cat = load_example("stripe82").subset(np.arange(4))
    ids = np.repeat(cat.ids, cat.lengths)
    pd.DataFrame({"oid": ids, "mjd": cat.t, "mag": cat.y, "err": cat.dy}).to_csv(
        tmp_path / "lc.csv", index=False)
    status, text, _ = _cli(capsys, "supersmoother", tmp_path / "lc.csv", "--id-col", "oid",
                           "--t-col", "mjd", "--y-col", "mag", "--dy-col", "err", "--fmin", 1,
                           "--fmax", 3, "--nf", 256, "-o", tmp_path / "ss.csv", "--periodogram",
                           tmp_path / "ss.npz", "--plot", tmp_path / "figs", "--plot-ids",
                           cat.ids[1], "--no-progress")
    assert status == 0, text
    assert "periodograms in" in text and "1 figure(s)" in text
    grid = clperiod.FrequencyGrid.from_range(1, 3, 256)
    direct = clperiod.supersmoother(cat, grid, periodogram=True, device=cpu_device)
    frame = pd.read_csv(tmp_path / "ss.csv")
    np.testing.assert_allclose(frame["period"], direct.period, rtol=1e-15)
    with np.load(tmp_path / "ss.npz") as archive:
        np.testing.assert_array_equal(archive["power"], direct.power)
    assert [p.name for p in (tmp_path / "figs").iterdir()] == [f"{cat.ids[1]}.png"]


def test_interrupt_keeps_the_work_directory(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_catalog", interrupted)
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, "-o", tmp_path / "r.parquet")
    assert status == 130
    assert f"finished chunks are kept in {tmp_path / 'r.parquet.parts'}" in err
    assert "run the same command again to resume" in err


@pytest.mark.slow
def test_killed_process_resumes_to_the_same_output(tmp_path, capsys):
    """A real run killed with SIGKILL after its first part file, then resumed."""
    rng = np.random.default_rng(5)
    n_objects, n_points = 200, 20
    t = np.sort(rng.uniform(0, 100, (n_objects, n_points)), axis=1).ravel()
    y = np.sin(2 * np.pi * t / 3.3) + rng.normal(0, 0.3, t.size)
    ids = np.repeat(np.arange(n_objects) + 1000, n_points)
    pq.write_table(pa.table({"id": ids, "t": t, "y": y}), tmp_path / "in.parquet")
    argv = ["lombscargle", str(tmp_path / "in.parquet"), "--fmin", "0.1", "--fmax", "2",
            "--nf", "1000", "--chunk-rows", "40", "--no-progress"]
    out = tmp_path / "out.parquet"
    work = pipeline.work_directory(out)
    process = subprocess.Popen([sys.executable, "-m", "clperiod", *argv, "-o", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=dict(os.environ))
    deadline = time.monotonic() + 120
    while not (work / "part-000000.arrow").exists():
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "no part file appeared"
        time.sleep(0.002)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    done = len(list(work.glob("part-*.arrow")))
    assert not out.exists() and 1 <= done < n_objects // 2
    status, text, _ = _cli(capsys, *argv, "-o", out)
    assert status == 0 and f"{done} chunk(s) resumed" in text
    status, _, _ = _cli(capsys, *argv, "-o", tmp_path / "ref.parquet")
    got, expected = pq.read_table(out), pq.read_table(tmp_path / "ref.parquet")
    assert got.column("id").to_pylist() == list(range(1000, 1000 + n_objects))
    assert got.equals(expected) and got.schema.metadata == expected.schema.metadata


def test_a_time_sorted_file_is_searched_by_id(tmp_path, capsys, cpu_device):
    cat = load_example("stripe82").subset(np.arange(30))
    order = np.argsort(cat.t, kind="stable")
    ids = np.repeat(cat.ids, cat.lengths)
    pd.DataFrame({"id": ids[order], "t": cat.t[order], "y": cat.y[order],
                  "dy": cat.dy[order]}).to_csv(tmp_path / "nightly.csv", index=False)
    argv = ["lombscargle", tmp_path / "nightly.csv", "--fmin", 0.5, "--fmax", 4, "--nf", 500,
            "--chunk-rows", 400, "--no-progress", "--device", cpu_device.label.split()[0]]
    status, text, err = _cli(capsys, *argv, "-o", tmp_path / "out.csv")
    assert (status, _besides_grid_warnings(err)) == (0, "")
    assert text.rstrip().endswith("; input rows sorted by id")
    status, _, err = _cli(capsys, *argv, "--grouping", "contiguous", "-o", tmp_path / "x.csv")
    assert status == 1 and "appears again at row" in err and "--grouping sort" in err
    grid = clperiod.FrequencyGrid.from_range(0.5, 4, 500)
    by_id = cat.subset(np.argsort(cat.ids, kind="stable"))
    direct = clperiod.lombscargle(by_id, grid, device=cpu_device)
    frame = pd.read_csv(tmp_path / "out.csv")
    assert frame["id"].tolist() == by_id.ids.tolist()
    np.testing.assert_array_equal(frame["period"], direct.period)


def _damaged_inputs(folder: Path) -> dict[str, str]:
    """File name -> what the error must say about it."""
    rng = np.random.default_rng(4)
    n = 30_000
    text = "id,t,y\n" + "".join(f"{k // 100},{t!r},{y!r}\n" for k, t, y in
                                zip(range(n), rng.uniform(0, 1e3, n), rng.normal(size=n)))
    packed = gzip.compress(text.encode())
    (folder / "cut.csv.gz").write_bytes(packed[: len(packed) // 3])
    (folder / "fake.csv.gz").write_bytes(text.encode())
    (folder / "cut.csv.bz2").write_bytes(bz2.compress(text.encode())[:5000])
    (folder / "cut.csv.xz").write_bytes(lzma.compress(text.encode())[:5000])
    (folder / "latin.csv").write_bytes("id,t,y\n1,0,0\nJos\u00e9,1,1\n".encode("latin-1"))
    (folder / "wide.csv").write_bytes("id,t,y\n1,0,0\n".encode("utf-16"))
    (folder / "dup.csv").write_text("id,t,y,t\n1,0,0,0\n")
    (folder / "short.csv").write_text("id,t,y\n1,0,0\n1,1,1\n1,2")
    (folder / "junk.parquet").write_bytes(b"PAR1 not really")
    return {
        "cut.csv.gz": "the compressed data end early",
        "fake.csv.gz": "Not a gzipped file",
        "cut.csv.bz2": "the compressed data end early",
        "cut.csv.xz": "the compressed data end early",
        "latin.csv": "line 3 (byte 16): byte 0xe9 is not UTF-8",  # len("id,t,y\n1,0,0\nJos")
        "wide.csv": "the file is UTF-16 text",
        "dup.csv": "the header names the column(s) ['t'] more than once",
        "short.csv": "row 2 (line 4) is cut short",
        "junk.parquet": "not a readable Parquet file",
    }


@pytest.mark.slow
def test_damaged_files_exit_1_with_one_line_naming_the_file(tmp_path, capsys):
    for name, message in _damaged_inputs(tmp_path).items():
        status, out, err = _cli(capsys, "lombscargle", tmp_path / name, "--fmin", 1, "--fmax", 2,
                                "--nf", 10, "--no-progress", "-o", tmp_path / "out.parquet")
        assert status == 1 and out == "", name
        assert err.startswith(f"clperiod: error: {tmp_path / name}: ") and message in err, err
        assert err.count("\n") == 1, err


@pytest.mark.slow
def test_figure_options_and_the_figures_written(tmp_path, capsys, monkeypatch, cpu_device):
    cat = load_example("stripe82").subset(np.arange(3))
    ids = np.repeat(np.array(["a/b", "a_b", "c" * 300]), cat.lengths)
    path = tmp_path / "clash.csv"
    pd.DataFrame({"id": ids, "hjd": cat.t, "flux": cat.y, "dy": cat.dy}).to_csv(path,
                                                                                  index=False)
    argv = ["lombscargle", path, "--t-col", "hjd", "--y-col", "flux", "--fmin", 1, "--fmax", 3,
            "--nf", 200, "--chunk-rows", 1, "--first-chunk-rows", 0, "--no-progress",
            "--plot", tmp_path / "figs", "--plot-ids", "a/b,a_b," + "c" * 300]
    status, text, err = _cli(capsys, *argv, "-o", tmp_path / "out.parquet")
    assert (status, _besides_grid_warnings(err)) == (0, "")
    assert text.rstrip().endswith(f"; 3 figure(s) written to {tmp_path / 'figs'}")
    assert len(list((tmp_path / "figs").iterdir())) == 3
    seen = {}

    def fake_run(reader, search, output, **options):
        seen.update(options)
        raise ValueError("stop here")

    monkeypatch.setattr(pipeline, "run_catalog", fake_run)
    _cli(capsys, *argv, "--y-unit", "mag", "--t-unit", "BJD", "-o", tmp_path / "b.parquet")
    assert seen["plot_labels"] == clperiod.plot.PlotLabels("hjd", "flux", "BJD", "mag")
    assert seen["plot_labels"].inverted
    _cli(capsys, *argv, "--no-invert-y", "-o", tmp_path / "b.parquet")
    assert seen["plot_labels"] == clperiod.plot.PlotLabels("hjd", "flux", invert_y=False)
    assert seen["plot_labels"].time_unit == "d"


def test_an_output_directory_or_a_memory_error_is_one_line(tmp_path, capsys, monkeypatch):
    """-o naming a directory stops before any search and leaves nothing behind;
    a MemoryError (periodograms larger than the host can hold) exits 1 too."""
    searched = []
    monkeypatch.setattr(pipeline.PeriodSearch, "start", lambda *a, **k: searched.append(1))
    (tmp_path / "res.parquet").mkdir()
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, "--fmin", 1, "--fmax", 2, "--nf", 10,
                          "-o", tmp_path / "res.parquet", "--no-progress")
    assert status == 1 and searched == []
    assert err == (f"clperiod: error: {tmp_path / 'res.parquet'} is a directory; give the name "
                   "of a file to write\n")
    assert [p.name for p in tmp_path.iterdir()] == ["res.parquet"]

    def too_large(*args, **kwargs):
        raise MemoryError("the periodograms of 136 objects x 10 frequencies need ...")

    monkeypatch.setattr(pipeline, "run_catalog", too_large)
    status, _, err = _cli(capsys, "lombscargle", STRIPE82, "-o", tmp_path / "r.parquet")
    assert status == 1 and err == ("clperiod: error: the periodograms of 136 objects x 10 "
                                   "frequencies need ...\n")


def _banded_csv(path: Path) -> Path:
    """The first 6 Stripe 82 objects, each row given a band g or r."""
    cat = load_example("stripe82").subset(range(6))
    rows = np.arange(cat.t.size)
    frame = pd.DataFrame({"id": np.repeat(cat.ids, cat.lengths), "t": cat.t, "y": cat.y,
                          "dy": cat.dy, "filter": np.where(rows % 3 == 0, "g", "r")})
    frame.to_csv(path, index=False)
    return path


def test_band_col_pools_the_bands_of_single_band_searches(tmp_path, capsys):
    source = _banded_csv(tmp_path / "banded.csv")
    common = ["--fmin", 0.5, "--fmax", 4, "--nf", 500, "--no-progress"]
    status, _, _ = _cli(capsys, "lombscargle", source, *common, "-o", tmp_path / "plain.parquet")
    assert status == 0
    status, _, _ = _cli(capsys, "lombscargle", source, *common, "--band-col", "filter",
                        "--bands", "u,g,r", "-o", tmp_path / "banded.parquet")
    assert status == 0
    plain, banded = pq.read_table(tmp_path / "plain.parquet"), pq.read_table(
        tmp_path / "banded.parquet")
    assert banded.num_rows == 6
    assert banded.column_names == plain.column_names
    for name in ("id", "period", "power", "n_points", "status"):
        assert banded.column(name).equals(plain.column(name))


@pytest.mark.parametrize(("extra", "message"), [
    (["--band-col", "band"], r"no column\(s\) \['band'\]"),
    (["--band-col", "filter", "--bands", "g"],
     r"band label 'r' \(not in bands \['g'\]\) in object .* at row 1 of that object"),
    (["--bands", "g"], "no --band-col"),
])
def test_band_options_errors(tmp_path, capsys, extra, message):
    source = _banded_csv(tmp_path / "banded.csv")
    status, _, err = _cli(capsys, "lombscargle", source, "--fmin", 0.5, "--fmax", 4, "--nf", 100,
                          "--no-progress",
                          "-o", tmp_path / "out.parquet", *extra)
    assert status == 1
    assert re.search(message, err), err


@pytest.mark.slow
def test_a_reader_that_goes_away_ends_the_command_quietly():
    """`clperiod info | head -0`: the reader closes the pipe first; the command ends
    with status 141 (as for SIGPIPE) and no traceback."""
    process = subprocess.Popen([sys.executable, "-m", "clperiod", "info", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the command writes anything
    _, err = process.communicate(timeout=120)
    assert process.returncode == 141 and b"Traceback" not in err, err.decode()[-2000:]


def test_counts_may_be_written_like_1e5(capsys):
    parser = cli.build_parser()
    args = parser.parse_args(["lombscargle", "x.csv", "--nf", "1e5", "--chunk-rows", "2_000"])
    assert args.nf == 100_000 and args.chunk_rows == 2000
    assert parser.parse_args(["lombscargle", "x.csv", "--delimiter", "\\t"]).delimiter == "\t"
    for bad in ("2.5", "1e400", "ten"):
        with pytest.raises(SystemExit) as stopped:
            parser.parse_args(["lombscargle", "x.csv", "--nf", bad])
        assert stopped.value.code == 2 and "is not a whole number" in capsys.readouterr().err


def test_the_summary_counts_the_objects_without_a_result(tmp_path, capsys, cpu_device):
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0, 30, 60))
    rows = [(1, ti, np.sin(ti), 0.1) for ti in t] + [(2, 0.0, 1.0, 0.1), (2, 1.0, 2.0, 0.1)]
    path = tmp_path / "two.csv"
    path.write_text("id,t,y,dy\n" + "".join(f"{i},{ti},{yi},{di}\n" for i, ti, yi, di in rows))
    status, text, _ = _cli(capsys, "lombscargle", path, "--fmin", 0.1, "--fmax", 2, "--nf", 500,
                           "-o", tmp_path / "out.csv", "--no-progress",
                           "--device", cpu_device.label.split()[0])
    assert status == 0 and text.startswith("2 objects in 1 chunk(s)")
    assert text.rstrip().endswith("; 1 object without a result (1 TOO_FEW_POINTS)")


def test_errors_name_the_options_not_the_library_parameters():
    assert cli._in_option_names("nterms_base must be in [0, 4], got 5") == (
        "--nterms-base must be in [0, 4], got 5")
    assert cli._in_option_names("rows with NaN (nan_policy='omit' drops such rows)") == (
        "rows with NaN (--nan-policy omit drops such rows)")
    assert cli._in_option_names("n_bins must be >= 2; see clperiod.pdm(n_bins=...)") == (
        "--bins must be >= 2; see clperiod.pdm(--bins=...)")
    assert cli._in_option_names("an id top_kx and a path /a/top_k.csv stay") == (
        "an id top_kx and a path /a/top_k.csv stay")


@pytest.mark.parametrize(("argv", "message"), [
    (["lombscargle", "x.csv", "--nf", "ten"],
     "clperiod lombscargle: error: argument --nf: 'ten' is not a whole number"),
    (["lombscargle", "x.csv", "--bogus", "1"],
     "clperiod lombscargle: error: unrecognized arguments: --bogus 1"),
    (["rv", "evaluate", "a.txt", "b.npy", "--bogus"],
     "clperiod rv evaluate: error: unrecognized arguments: --bogus"),
])
def test_argument_errors_are_one_line_of_the_command_they_were_given_to(capsys, argv, message):
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1 and "usage:" not in err
    assert err.startswith(message) and "--help` lists the options" in err
