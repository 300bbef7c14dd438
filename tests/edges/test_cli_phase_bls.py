"""clperiod pdm, aov, conditional-entropy and bls: each command writes what the library
call gives on the bundled ugriz RR Lyrae stars (bands pooled; clperiod/data/README.md)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import cli
from clperiod.io import example_path, load_example
from clperiod.io.tables import result_columns

UGRIZ = example_path("stripe82_ugriz")
COLUMNS = ("--t-col", "mjd", "--y-col", "mag", "--dy-col", "mag_err")
GRID_OPTIONS = ("--fmin", 0.5, "--fmax", 4, "--nf", 600)
GRID = clperiod.FrequencyGrid.from_range(0.5, 4, 600)
#: command -> (its options, the library function, its keyword arguments)
COMMANDS = {
    "pdm": (("--bins", 8, "--covers", 3, "--no-weighted"), clperiod.pdm,
            {"n_bins": 8, "n_covers": 3, "weighted": False}),
    "aov": (("--bins", 12), clperiod.aov, {"n_bins": 12}),
    "conditional-entropy": (("--phase-bins", 12, "--magnitude-bins", 6),
                            clperiod.conditional_entropy,
                            {"phase_bins": 12, "magnitude_bins": 6}),
    "bls": (("--durations", 0.02, 0.05, "--objective", "snr", "--method", "exact",
             "--oversample", 4), clperiod.bls,
            {"durations": [0.02, 0.05], "objective": "snr", "method": "exact",
             "oversample": 4}),
}
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


def _cli(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _device(cpu_device) -> tuple[str, str]:
    return "--device", cpu_device.label.split()[0]


def _catalog() -> clperiod.Catalog:
    """The stars as the commands read them: without --band-col, the bands pooled."""
    stars = load_example("stripe82_ugriz")
    return clperiod.Catalog(stars.ids, stars.offsets, stars.t, stars.y, stars.dy)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_command_matches_the_library(tmp_path, capsys, cpu_device, command):
    own, function, options = COMMANDS[command]
    out = tmp_path / "res.parquet"
    status, text, err = _cli(capsys, command, UGRIZ, *COLUMNS, *GRID_OPTIONS, *own,
                             "--top-k", 2, "--precision", "fp32", "-o", out, "--no-progress",
                             *_device(cpu_device))
    assert status == 0, err
    assert text.startswith(f"2 objects in 1 chunk(s) written to {out} ({command}, "
                           "600 frequencies from 0.5 to 3.99417, fp32, 0:")
    direct = function(_catalog(), GRID, top_k=2, precision="fp32", device=cpu_device,
                      **options)
    table = pq.read_table(out)
    pd.testing.assert_frame_equal(table.to_pandas(),
                                  pd.DataFrame(result_columns(direct, fap_method=None)),
                                  check_exact=True)
    settings = json.loads(table.schema.metadata[b"clperiod"].decode())["search"]
    assert settings["algorithm"] == command.replace("-", "_")
    assert settings["options"] == {**options, "precision": "fp32", "top_k": 2,
                                   **({"compat": None} if command == "bls" else {})}


def test_the_minimum_statistics_are_labelled(tmp_path, capsys, cpu_device):
    """PDM's lowest theta in statistic_min (no power column), its default output name."""
    source = tmp_path / "rrlyrae.csv"
    source.write_bytes(UGRIZ.read_bytes())
    status, _, _ = _cli(capsys, "pdm", source, *COLUMNS, *GRID_OPTIONS, "--no-progress",
                        *_device(cpu_device))
    assert status == 0
    table = pd.read_parquet(tmp_path / "rrlyrae.pdm.parquet")
    assert list(table.columns[4:6]) == ["statistic_min", "period_1"]
    direct = clperiod.pdm(_catalog(), GRID, device=cpu_device)
    np.testing.assert_array_equal(table["statistic_min"], direct.statistic_best)
    assert (table["statistic_min"] < 1).all()


def test_bls_duration_range(tmp_path, capsys, cpu_device):
    """--duration-range 0.02 0.05 4 searches the durations 0.02, 0.03, 0.04, 0.05; the
    box fields follow the power column."""
    out = tmp_path / "bls.csv"
    status, _, err = _cli(capsys, "bls", UGRIZ, *COLUMNS, *GRID_OPTIONS, "--duration-range",
                          0.02, 0.05, 4, "-o", out, "--no-progress", *_device(cpu_device))
    assert status == 0, err
    table = pd.read_csv(out)
    direct = clperiod.bls(_catalog(), GRID, [0.02, 0.03, 0.04, 0.05], device=cpu_device)
    np.testing.assert_allclose(table["power"], direct.power_best, rtol=1e-15)
    np.testing.assert_allclose(table["duration"], direct.duration_best, rtol=1e-15)
    assert list(table.columns[4:11]) == ["power", "depth", "depth_err", "duration",
                                         "transit_time", "depth_snr", "log_likelihood"]


@pytest.mark.parametrize(("arguments", "message"), [
    (("--duration-range", 0.05, 0.02, 3), "0 < DMIN <= DMAX"),
    (("--duration-range", 0.02, 0.05, 2.5), "N must be a whole number"),
    (("--durations", 0.3), "duration"),
    (("--durations", 0.02, "--compat", "--method", "exact"), "not --method exact"),
])
def test_bls_bad_durations(tmp_path, capsys, cpu_device, arguments, message):
    status, _, err = _cli(capsys, "bls", UGRIZ, *COLUMNS, *GRID_OPTIONS, *arguments, "-o",
                          tmp_path / "x.parquet", "--no-progress", *_device(cpu_device))
    assert status == 1
    assert message in err


def test_bls_needs_durations(capsys):
    with pytest.raises(SystemExit) as exit_status:
        cli.main(["bls", str(UGRIZ)])
    assert exit_status.value.code == 2
    assert "--durations" in capsys.readouterr().err


def test_bad_bins_name_the_option(tmp_path, capsys, cpu_device):
    status, _, err = _cli(capsys, "conditional-entropy", UGRIZ, *COLUMNS, *GRID_OPTIONS,
                          "--magnitude-bins", 0, "-o", tmp_path / "x.parquet", "--no-progress",
                          *_device(cpu_device))
    assert status == 1 and "--magnitude-bins must be" in err


@pytest.mark.slow
@pytest.mark.parametrize("command", ["pdm", "bls"])
def test_figures_of_a_run(tmp_path, capsys, cpu_device, command):
    """--plot draws the chosen objects (periodogram and fold; BLS's box model)."""
    own = COMMANDS[command][0]
    status, text, err = _cli(capsys, command, UGRIZ, *COLUMNS, *GRID_OPTIONS, *own,
                             "-o", tmp_path / "r.parquet", "--plot", tmp_path / "fig",
                             "--plot-ids", 27887, "--no-progress", *_device(cpu_device))
    assert status == 0, err
    assert "1 figure(s) written to" in text
    assert (tmp_path / "fig" / "27887.png").read_bytes()[:4] == b"\x89PNG"
