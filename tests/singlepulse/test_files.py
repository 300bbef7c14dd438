"""PRESTO/.npy readers, candidate writers (spec §4) and the ``singlepulse`` CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from clperiod import cli
from clperiod.singlepulse.files import (
    read_heimdall_cand,
    read_npy_series,
    read_presto_dat,
    read_presto_inf,
    read_presto_series,
    read_singlepulse,
    write_astroaccelerate,
    write_candidates,
    write_heimdall_cand,
    write_singlepulse,
)

# The candidate record of clperiod.singlepulse.search.
CANDIDATE_DTYPE = np.dtype([
    ("dm_index", np.int32), ("dm", np.float64), ("sample", np.int64), ("time", np.float64),
    ("snr", np.float32), ("width", np.int32), ("members", np.int32), ("begin", np.int64),
    ("end", np.int64),
])
TSAMP = 6.4e-5


def _inf_text(basename: str, dm: float, n: int, dt: float = TSAMP) -> str:
    """An .inf as PRESTO's prepsubband writes it (C writer labels)."""
    return (
        f" Data file name without suffix          =  {basename}\n"
        " Telescope used                         =  GBT\n"
        " Instrument used                        =  GUPPI\n"
        " Object being observed                  =  J0000+0000\n"
        " J2000 Right Ascension (hh:mm:ss.ssss)  =  00:00:00.0000\n"
        " J2000 Declination     (dd:mm:ss.ssss)  =  -07:43:43.0000\n"
        " Data observed by                       =  Unknown\n"
        " Epoch of observation (MJD)             =  55000.123456789012345\n"
        " Barycentered?           (1=yes, 0=no)  =  0\n"
        f" Number of bins in the time series      =  {n:<11d}\n"
        f" Width of each time series bin (sec)    =  {dt:.15g}\n"
        " Any breaks in the data? (1=yes, 0=no)  =  1\n"
        " On/Off bin pair #  1                   =  0          , 99         \n"
        f" Dispersion measure (cm-3 pc)           =  {dm:.12g}\n"
        " Central freq of low channel (Mhz)      =  1100.1953125\n"
        " Total bandwidth (Mhz)                  =  800\n"
        " Number of channels                     =  2048\n"
        " Channel bandwidth (Mhz)                =  0.390625\n"
        " Data analyzed by                       =  clperiod tests\n"
        " Any additional notes:\n"
        "    Input filterbank samples have 8 bits.\n"
    )


def _write_dat(directory: Path, dm: float, series: np.ndarray, **inf) -> Path:
    basename = f"obs_DM{dm:.2f}"
    (directory / f"{basename}.inf").write_text(_inf_text(basename, dm, len(series), **inf))
    series.astype("<f4").tofile(directory / f"{basename}.dat")
    return directory / f"{basename}.dat"


def _cands() -> np.ndarray:
    cands = np.zeros(4, dtype=CANDIDATE_DTYPE)
    cands["dm_index"] = [3, 0, 3, 7]
    cands["dm"] = [30.5, 0.0, 30.5, 1234.567]
    cands["sample"] = [150, 20, 12, 987654]
    cands["time"] = cands["sample"] * TSAMP
    cands["snr"] = [12.345, 6.01, 8.5, 100.25]
    cands["width"] = [1, 3, 6, 32]
    cands["members"] = [5, 1, 2, 40]
    cands["begin"] = cands["sample"] - 2
    cands["end"] = cands["sample"] + 2
    return cands


# ---------------------------------------------------------------------- readers


def test_read_presto_inf_fields(tmp_path: Path) -> None:
    inf = tmp_path / "obs_DM30.50.inf"
    inf.write_text(_inf_text("obs_DM30.50", 30.5, 1000))
    info = read_presto_inf(inf)
    assert info["basename"] == "obs_DM30.50"
    assert info["dm"] == 30.5 and info["tsamp"] == TSAMP and info["n_samples"] == 1000
    assert info["epoch"] == pytest.approx(55000.123456789012345)
    assert info["barycentered"] == 0 and info["breaks"] == 1 and info["onoff"] == [(0, 99)]
    assert info["dec"] == "-07:43:43.0000" and info["n_channels"] == 2048
    assert info["notes"] == "Input filterbank samples have 8 bits."


def test_read_presto_inf_unknown_label_kept(tmp_path: Path) -> None:
    inf = tmp_path / "x.inf"
    inf.write_text(" Type of observation (EM band)          =  X-ray\n"
                   " Field-of-view diameter (arcsec)        =  3.00\n")
    assert read_presto_inf(inf) == {"waveband": "X-ray",
                                    "Field-of-view diameter (arcsec)": "3.00"}


def test_read_presto_inf_non_numeric(tmp_path: Path) -> None:
    inf = tmp_path / "bad.inf"
    inf.write_text(_inf_text("bad", 10.0, 100).replace("=  10\n", "=  ten\n"))
    with pytest.raises(ValueError, match=r"bad\.inf: line 14: 'Dispersion measure .* number, "
                                         r"got 'ten'"):
        read_presto_inf(inf)


def test_read_presto_dat_round_trip(tmp_path: Path, rng: np.random.Generator) -> None:
    written = rng.normal(size=1000).astype(np.float32)
    series, info = read_presto_dat(_write_dat(tmp_path, 12.25, written))
    assert series.dtype == np.float32 and info["dm"] == 12.25 and info["n_samples"] == 1000
    np.testing.assert_array_equal(series, written)


def test_read_presto_dat_missing_inf(tmp_path: Path) -> None:
    dat = tmp_path / "lonely.dat"
    np.zeros(10, "<f4").tofile(dat)
    with pytest.raises(FileNotFoundError, match=r"lonely\.dat: no PRESTO metadata file .*"
                                                r"lonely\.inf"):
        read_presto_dat(dat)


def test_read_presto_dat_length_mismatch(tmp_path: Path) -> None:
    dat = _write_dat(tmp_path, 1.0, np.zeros(100, np.float32))
    np.zeros(99, "<f4").tofile(dat)
    with pytest.raises(ValueError, match=r"DM1\.00\.dat: 396 bytes, but its \.inf gives 100"):
        read_presto_dat(dat)


def test_read_presto_dat_inf_without_tsamp(tmp_path: Path) -> None:
    dat = _write_dat(tmp_path, 1.0, np.zeros(10, np.float32))
    inf = dat.with_suffix(".inf")
    inf.write_text("".join(l for l in inf.read_text().splitlines(True) if "Width" not in l))
    with pytest.raises(ValueError, match="no 'Width of each time series bin"):
        read_presto_dat(dat)


def test_read_presto_series_sorts_by_dm(tmp_path: Path, rng: np.random.Generator) -> None:
    rows = {dm: rng.normal(size=256).astype(np.float32) for dm in (20.0, 0.0, 10.0)}
    paths = [_write_dat(tmp_path, dm, series) for dm, series in rows.items()]
    data, dm, tsamp = read_presto_series(paths)
    assert data.shape == (3, 256) and data.dtype == np.float32 and tsamp == TSAMP
    np.testing.assert_array_equal(dm, [0.0, 10.0, 20.0])
    for row, value in enumerate(dm):
        np.testing.assert_array_equal(data[row], rows[value])


def test_read_presto_series_mismatches(tmp_path: Path) -> None:
    a = _write_dat(tmp_path, 0.0, np.zeros(64, np.float32))
    b = _write_dat(tmp_path, 5.0, np.zeros(65, np.float32))
    with pytest.raises(ValueError, match=r"DM5\.00\.dat: 65 samples differ from 64"):
        read_presto_series([a, b])
    c = _write_dat(tmp_path, 9.0, np.zeros(64, np.float32), dt=2 * TSAMP)
    with pytest.raises(ValueError, match=r"DM9\.00\.dat: time step .* differs"):
        read_presto_series([a, c])
    with pytest.raises(ValueError, match="no .dat files"):
        read_presto_series([])


def test_read_npy_series(tmp_path: Path) -> None:
    path = tmp_path / "plane.npy"
    np.save(path, np.arange(12, dtype=np.float32).reshape(3, 4))
    data, dm, tsamp = read_npy_series(path, dm_start=5.0, dm_step=0.5, tsamp=1e-3)
    assert isinstance(data, np.memmap) and data.shape == (3, 4) and tsamp == 1e-3
    np.testing.assert_array_equal(dm, [5.0, 5.5, 6.0])
    assert read_npy_series(path, [1, 2, 4], tsamp=1e-3)[1].tolist() == [1.0, 2.0, 4.0]


@pytest.mark.parametrize(
    ("array", "kwargs", "message"),
    [
        (np.zeros(5), {"dm_start": 0, "dm_step": 1}, r"2-D .* shape \(5,\)"),
        (np.zeros((2, 5), complex), {"dm_start": 0, "dm_step": 1}, "real array"),
        (np.zeros((2, 5)), {}, "give the DMs"),
        (np.zeros((2, 5)), {"dm_start": 0}, "give the DMs"),
        (np.zeros((2, 5)), {"dm": [1, 2, 3]}, r"expected 2 finite DMs"),
        (np.zeros((2, 5)), {"dm": [1, 2], "dm_start": 0}, "not both"),
        (np.zeros((2, 5)), {"dm": [1, 2], "tsamp": 0.0}, "sampling time must be positive"),
    ],
)
def test_read_npy_series_errors(tmp_path: Path, array: np.ndarray, kwargs: dict,
                                message: str) -> None:
    path = tmp_path / "bad.npy"
    np.save(path, array)
    with pytest.raises(ValueError, match=message):
        read_npy_series(path, **({"tsamp": 1e-3} | kwargs))


# ---------------------------------------------------------------------- writers


def test_singlepulse_exact_rows(tmp_path: Path) -> None:
    path = tmp_path / "c.singlepulse"
    write_singlepulse(path, _cands())
    lines = path.read_text().splitlines(True)
    assert lines[0] == "# DM      Sigma      Time (s)     Sample    Downfact\n"
    # sorted by DM then sample, "%7.2f %7.2f %13.6f %10d     %3d"
    assert lines[1] == "   0.00    6.01      0.001280         20       3\n"
    assert lines[2] == "  30.50    8.50      0.000768         12       6\n"
    assert lines[3] == "  30.50   12.35      0.009600        150       1\n"
    assert lines[4] == "1234.57  100.25     63.209856     987654      32\n"
    back = read_singlepulse(path)
    table = np.loadtxt(path, comments="#")  # PRESTO's own reader
    assert table.shape == (4, 5)
    np.testing.assert_array_equal(back["sample"], [20, 12, 150, 987654])
    np.testing.assert_array_equal(back["width"], [3, 6, 1, 32])
    np.testing.assert_allclose(back["time"], back["sample"] * TSAMP, atol=5e-7)


def test_singlepulse_empty_file_without_header(tmp_path: Path) -> None:
    path = tmp_path / "none.singlepulse"
    write_singlepulse(path, np.zeros(0, CANDIDATE_DTYPE))
    assert path.read_bytes() == b""
    assert read_singlepulse(path).shape == (0,)


def test_heimdall_nine_columns_trailing_tab(tmp_path: Path) -> None:
    cands = _cands()
    path = tmp_path / "c.cand"
    write_heimdall_cand(path, cands)
    lines = path.read_text().splitlines()
    assert len(lines) == 4
    for line in lines:
        assert line.endswith("\t") and len(line.split("\t")) == 10 and line.split("\t")[9] == ""
    assert lines[0] == "12.345\t150\t0.0096\t0\t3\t30.5\t5\t148\t152\t"
    back = read_heimdall_cand(path)
    # filter = round(log2(width)): 1 -> 0, 3 -> 2 (4 samples), 6 -> 3 (8), 32 -> 5
    np.testing.assert_array_equal(back["filter"], [0, 2, 3, 5])
    for name in ("sample", "dm_index", "members", "begin", "end"):
        np.testing.assert_array_equal(back[name], cands[name])
    np.testing.assert_allclose(back["snr"], cands["snr"], rtol=1e-5)
    np.testing.assert_allclose(back["time"], cands["time"], rtol=1e-12)
    np.testing.assert_allclose(back["dm"], cands["dm"], rtol=1e-9)


def test_astroaccelerate_binary(tmp_path: Path) -> None:
    cands = _cands()
    path = tmp_path / "c.aa.bin"
    write_astroaccelerate(path, cands)
    assert path.stat().st_size == 4 * 4 * len(cands)
    records = np.fromfile(path, dtype="<f4").reshape(-1, 4)
    expected = np.column_stack([cands["dm"], cands["time"], cands["snr"], cands["width"]])
    np.testing.assert_array_equal(records, expected.astype(np.float32))


@pytest.mark.parametrize(
    ("name", "expected"),
    [("a.singlepulse", "singlepulse"), ("a.cand", "heimdall"),
     ("a.aa.bin", "astroaccelerate"), ("a.npy", "npy"), ("a.csv", "csv")],
)
def test_write_candidates_by_suffix(tmp_path: Path, name: str, expected: str) -> None:
    assert write_candidates(tmp_path / name, _cands()) == expected


def test_write_candidates_npy_and_csv_round_trip(tmp_path: Path) -> None:
    cands = _cands()
    write_candidates(tmp_path / "c.npy", cands)
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), cands)
    write_candidates(tmp_path / "c.txt", cands, format="csv")
    text = (tmp_path / "c.txt").read_text().splitlines()
    assert text[0] == ",".join(CANDIDATE_DTYPE.names)
    back = np.genfromtxt(tmp_path / "c.txt", delimiter=",", names=True, dtype=CANDIDATE_DTYPE)
    np.testing.assert_array_equal(back, cands)


def test_write_candidates_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot tell the format"):
        write_candidates(tmp_path / "c.txt", _cands())
    with pytest.raises(ValueError, match="unknown format 'votable'"):
        write_candidates(tmp_path / "c.txt", _cands(), format="votable")
    with pytest.raises(ValueError, match=r"lack the field\(s\) \['members'"):
        write_candidates(tmp_path / "c.cand", _cands()[["snr", "sample", "time", "width",
                                                         "dm_index", "dm"]])


def test_read_singlepulse_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "bad.singlepulse"
    path.write_text("# DM Sigma\n 1.0 6.0 0.1 abc 1\n")
    with pytest.raises(ValueError, match=r"bad\.singlepulse: "):
        read_singlepulse(path)


# ---------------------------------------------------------------------- CLI


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = cli.main(["singlepulse", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_parses_options() -> None:
    args = cli.build_parser().parse_args(["singlepulse", "x.npy", "--tsamp", "1e-3",
                                          "--dm-start", "0", "--dm-step", "0.5"])
    assert args.inputs == ["x.npy"] and args.tsamp == 1e-3 and args.dm_step == 0.5
    assert (args.max_width, args.threshold, args.plan, args.snr_mode) == (32, 6.0, "dit", "approx")
    assert (args.robust, args.nan_policy, args.no_cluster, args.device) == (
        False, "raise", False, None)
    assert args.output is None and args.format is None
    args = cli.build_parser().parse_args(
        ["singlepulse", "a.dat", "b.dat", "-o", "o.cand", "--format", "heimdall",
         "--plan", "full", "--snr-mode", "exact", "--robust", "--nan-policy", "mask",
         "--no-cluster", "--device", "cpu", "--max-width", "64", "--threshold", "7.5"])
    assert args.inputs == ["a.dat", "b.dat"] and args.format == "heimdall"
    assert (args.plan, args.snr_mode, args.robust, args.nan_policy, args.no_cluster) == (
        "full", "exact", True, "mask", True)
    assert (args.device, args.max_width, args.threshold) == ("cpu", 64, 7.5)


@pytest.mark.parametrize(
    "argv",
    [["--dm-start", "0", "--dm-file", "d.txt"], ["--format", "votable"], ["--plan", "box"]],
)
def test_cli_rejects_bad_options(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.build_parser().parse_args(["singlepulse", "x.npy", *argv])
    assert exit_info.value.code == 2


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the CLI reaches the search."""
    def search(*args, **kwargs):
        raise AssertionError("the search must not run")

    monkeypatch.setattr("clperiod.singlepulse.search", search)


@pytest.mark.usefixtures("no_search")
def test_cli_input_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npy = tmp_path / "plane.npy"
    np.save(npy, np.zeros((2, 8), np.float32))
    dat = _write_dat(tmp_path, 1.0, np.zeros(8, np.float32))
    cases = [
        ([npy, "--dm-start", "0", "--dm-step", "1"], "needs --tsamp"),
        ([npy, "--tsamp", "1e-3"], "give the DMs"),
        ([npy, "--tsamp", "1e-3", "--dm-file", tmp_path / "none.txt"], "none.txt"),
        ([npy, npy, "--tsamp", "1e-3"], "one .npy file or one or more PRESTO .dat"),
        ([tmp_path / "x.fil"], "one .npy file or one or more PRESTO .dat"),
        ([dat, "--tsamp", "1e-3"], "from the .inf files"),
        ([tmp_path / "gone.dat"], "gone.dat: no PRESTO metadata file"),
        ([npy, "--tsamp", "1e-3", "--dm-start", "0", "--dm-step", "1", "-o", npy],
         "which clperiod never overwrites"),
    ]
    for argv, message in cases:
        status, out, err = _cli(capsys, *argv)
        assert status == 1 and out == "", argv
        assert err.startswith("clperiod: error: ") and message in err, (argv, err)


def test_cli_dm_file_bad_number(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                no_search: None) -> None:
    npy = tmp_path / "plane.npy"
    np.save(npy, np.zeros((2, 8), np.float32))
    (tmp_path / "dms.txt").write_text("1.0\nbad\n")
    status, _, err = _cli(capsys, npy, "--tsamp", "1e-3", "--dm-file", tmp_path / "dms.txt")
    assert status == 1 and "dms.txt: " in err


def test_cli_writes_and_summarises(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch,
                                   rng: np.random.Generator) -> None:
    """With a stand-in search: arguments reach it, the output name, file and summary."""
    calls = []

    def search(data, dm, tsamp, **kwargs):
        calls.append((data, dm, tsamp, kwargs))
        return _cands()

    monkeypatch.setattr("clperiod.singlepulse.search", search)
    paths = [_write_dat(tmp_path, dm, rng.normal(size=64).astype(np.float32))
             for dm in (10.0, 0.0)]
    status, out, err = _cli(capsys, *paths, "--threshold", "7", "--no-cluster", "--plan", "full")
    assert status == 0, err
    data, dm, tsamp, kwargs = calls[0]
    assert data.shape == (2, 64) and dm.tolist() == [0.0, 10.0] and tsamp == TSAMP
    assert kwargs == {"max_width": 32, "threshold": 7.0, "plan": "full", "snr_mode": "approx",
                      "robust": False, "nan_policy": "raise", "cluster": False, "device": None}
    output = tmp_path / "obs.singlepulse"  # several .dat files: basename up to "_DM"
    assert len(read_singlepulse(output)) == 4
    assert out == (f"4 candidate(s) over 2 DMs written to {output} (singlepulse); best S/N "
                   "100.25 at DM 1234.57, t = 63.209856 s (sample 987654), width 32\n")
    status, out, _ = _cli(capsys, paths[0], "--format", "heimdall")
    assert status == 0 and (tmp_path / "obs_DM10.00.cand").is_file()


def test_cli_end_to_end_finds_injected_pulse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rng: np.random.Generator, cpu_device
) -> None:
    data = rng.normal(size=(16, 16384)).astype(np.float32)
    data[9, 2000:2008] += 10.0  # S/N 10 * sqrt(8) = 28 at width 8, less the pulse's share of σ
    npy = tmp_path / "plane.npy"
    np.save(npy, data)
    status, out, err = _cli(capsys, npy, "--tsamp", "1e-3", "--dm-start", "100",
                            "--dm-step", "2")
    assert status == 0, err
    cands = read_singlepulse(tmp_path / "plane.singlepulse")
    best = cands[cands["snr"].argmax()]
    assert best["dm"] == 118.0 and 2000 <= best["sample"] <= 2007
    assert best["snr"] > 15 and 4 <= best["width"] <= 16
    assert best["time"] == pytest.approx(best["sample"] * 1e-3, abs=1e-6)
    assert "best S/N" in out and "DM 118.00" in out


def test_a_huge_sample_count_is_refused_before_any_allocation(tmp_path: Path) -> None:
    import tracemalloc

    paths = [_write_dat(tmp_path, dm, np.zeros(64, np.float32)) for dm in (0.0, 1.0)]
    for path in paths:  # .inf files claiming 10^12 samples (3.6 TiB for two DMs)
        inf = path.with_suffix(".inf")
        inf.write_text(inf.read_text().replace("=  64 ", "=  1000000000000 "))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"DM0\.00\.dat: 256 bytes, but its \.inf gives "
                                             r"1000000000000 float32 samples"):
            read_presto_series(paths)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("count", [0, -5])
def test_sample_counts_below_one_name_the_inf(tmp_path: Path, count: int) -> None:
    dat = _write_dat(tmp_path, 3.0, np.zeros(4, np.float32))
    inf = dat.with_suffix(".inf")
    inf.write_text(inf.read_text().replace("=  4 ", f"=  {count} "))
    with pytest.raises(ValueError, match=rf"DM3\.00\.inf: 'Number of bins in the time series' "
                                         rf"must be at least 1, got {count}"):
        read_presto_series([dat])


def test_non_finite_samples_name_the_dat_file(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              no_search: None) -> None:
    series = np.zeros(100, np.float32)
    series[[42, 77]] = [np.nan, np.inf]
    good = _write_dat(tmp_path, 0.0, np.zeros(100, np.float32))
    bad = _write_dat(tmp_path, 7.0, series)
    with pytest.raises(ValueError, match=r"DM7\.00\.dat: sample 42 \(t = 0\.002688 s\) is nan, "
                                         r"and 2 sample\(s\) in all are not finite"):
        read_presto_series([good, bad], require_finite=True)
    data, _, _ = read_presto_series([good, bad])  # kept for nan_policy="mask"
    assert np.isnan(data[1, 42])
    status, out, err = _cli(capsys, good, bad)
    assert status == 1 and out == ""
    assert err.startswith("clperiod: error: ") and "DM7.00.dat: sample 42" in err
    assert err.count("\n") == 1


def test_undecodable_candidate_files_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "x.singlepulse"
    before = "# DM Sigma\n1.0 6.0 0.1 10 1 # "
    path.write_bytes(f"{before}\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"x\.singlepulse: line 2 \(byte {len(before)}\): "
                                         r"byte 0xe9"):
        read_singlepulse(path)
