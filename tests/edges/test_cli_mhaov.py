"""clperiod mhaov: the multi-harmonic AOV of every object of a catalog file, multiband with
--band-col and single-band without, on the bundled ugriz RR Lyrae stars
(clperiod/data/README.md)."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import Catalog, cli
from clperiod.io import example_path, load_example

UGRIZ = example_path("stripe82_ugriz")
COLUMNS = ("--t-col", "mjd", "--y-col", "mag", "--dy-col", "mag_err")
GRID_OPTIONS = ("--fmin", 0.5, "--fmax", 4, "--nf", 3000)
GRID = clperiod.FrequencyGrid.from_range(0.5, 4, 3000)
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


def _cli(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _device(cpu_device) -> tuple[str, str]:
    return "--device", cpu_device.label.split()[0]


def _pooled() -> Catalog:
    stars = load_example("stripe82_ugriz")
    return Catalog(stars.ids, stars.offsets, stars.t, stars.y, stars.dy)


def test_the_multiband_command_matches_the_library(tmp_path, capsys, cpu_device):
    out = tmp_path / "res.parquet"
    status, text, _ = _cli(capsys, "mhaov", UGRIZ, *COLUMNS, "--band-col", "band",
                           *GRID_OPTIONS, "--nharmonics", 3, "--fit-harmonics", 2,
                           "--min-points", 15, "--top-k", 2, "-o", out, "--no-progress",
                           *_device(cpu_device))
    assert status == 0
    assert text.startswith(f"2 objects in 1 chunk(s) written to {out} (mhaov, 3,000 "
                           "frequencies from 0.5 to 3.99883, fp64, 0:")
    direct = clperiod.mhaov(load_example("stripe82_ugriz"), GRID, nharmonics=3,
                            fit_harmonics=2, min_points=15, top_k=2, device=cpu_device)
    table = pq.read_table(out)
    assert "fap" not in table.column_names
    np.testing.assert_array_equal(table.column("id").to_numpy(), direct.ids)
    np.testing.assert_array_equal(table.column("power").to_numpy(), direct.power_best)
    np.testing.assert_array_equal(table.column("period_2").to_numpy(), direct.top_k_period[:, 1])
    search = table.schema.metadata[b"clperiod"].decode()
    assert '"algorithm": "mhaov"' in search
    assert ('"options": {"fit_harmonics": 2, "min_points": 15, "nharmonics": 3, '
            '"precision": "fp64", "top_k": 2}') in search


def test_without_a_band_column_it_is_the_single_band_statistic(tmp_path, capsys, cpu_device):
    source = tmp_path / "rrlyrae.csv"
    source.write_bytes(UGRIZ.read_bytes())
    status, _, _ = _cli(capsys, "mhaov", source, *COLUMNS, *GRID_OPTIONS, "--nharmonics", 2,
                        "--precision", "fp32", "--no-progress", *_device(cpu_device))
    assert status == 0
    table = pq.read_table(tmp_path / "rrlyrae.mhaov.parquet")
    direct = clperiod.mhaov(_pooled(), GRID, nharmonics=2, precision="fp32", device=cpu_device)
    np.testing.assert_array_equal(table.column("power").to_numpy(), direct.power_best)
    banded = clperiod.mhaov(load_example("stripe82_ugriz"), GRID, nharmonics=2,
                            precision="fp32", device=cpu_device)
    assert not np.isclose(direct.power_best, banded.power_best).any()
    search = table.schema.metadata[b"clperiod"].decode()
    assert '"options": {"nharmonics": 2, "precision": "fp32", "top_k": 1}' in search


@pytest.mark.slow
def test_figures_fold_each_band(tmp_path, capsys, cpu_device):
    status, text, _ = _cli(capsys, "mhaov", UGRIZ, *COLUMNS, "--band-col", "band",
                           *GRID_OPTIONS, "-o", tmp_path / "res.csv", "--plot",
                           tmp_path / "figures", "--plot-ids", 27887, "--no-progress",
                           *_device(cpu_device))
    assert status == 0 and text.rstrip().endswith(f"1 figure(s) written to {tmp_path / 'figures'}")
    assert [p.name for p in (tmp_path / "figures").iterdir()] == ["27887.png"]


@pytest.mark.parametrize("option", [("--memory", "local"), ("--nterms-base", "1"),
                                    ("--fap-method", "naive")])
def test_options_of_other_searches_are_refused(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as stop:
        cli.main(["mhaov", str(UGRIZ), *option])
    assert stop.value.code == 2
    assert f"unrecognized arguments: {' '.join(option)}" in capsys.readouterr().err


@pytest.mark.parametrize(("option", "message"), [
    (("--nharmonics", 9), "nharmonics must be"),
    (("--fit-harmonics", 2), "--fit-harmonics=2 needs a catalog with bands"),
    (("--min-points", 3), "--min-points must be"),
])
def test_bad_options_name_the_option(tmp_path, capsys, cpu_device, option, message):
    status, _, err = _cli(capsys, "mhaov", UGRIZ, *COLUMNS, *GRID_OPTIONS, *option, "-o",
                          tmp_path / "res.csv", "--no-progress", *_device(cpu_device))
    assert status == 1
    assert err.startswith(f"clperiod: error: {message}")
    assert not (tmp_path / "res.csv").exists()
