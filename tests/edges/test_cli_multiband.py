"""clperiod lombscargle-multiband: the multiband Lomb-Scargle of every object of a catalog
file, on the bundled ugriz RR Lyrae stars (clperiod/data/README.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import cli
from clperiod.io import example_path, load_example

UGRIZ = example_path("stripe82_ugriz")
COLUMNS = ("--t-col", "mjd", "--y-col", "mag", "--dy-col", "mag_err")
GRID_OPTIONS = ("--fmin", 0.5, "--fmax", 4, "--nf", 3000)
GRID = clperiod.FrequencyGrid.from_range(0.5, 4, 3000)
#: Sesar et al. (2010), Table 2.
PERIODS = {1096833: 0.554791623256, 27887: 0.311494036020}
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


def _cli(capsys, *args) -> tuple[int, str, str]:
    status = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def _device(cpu_device) -> tuple[str, str]:
    return "--device", cpu_device.label.split()[0]


def test_the_command_matches_the_library(tmp_path, capsys, cpu_device):
    out = tmp_path / "res.parquet"
    status, text, _ = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "--band-col",
                           "band", *GRID_OPTIONS, "--nterms-base", 3, "--nterms-band", 2,
                           "--top-k", 2, "-o", out, "--no-progress", *_device(cpu_device))
    assert status == 0
    assert text.startswith(f"2 objects in 1 chunk(s) written to {out} (lombscargle-multiband, "
                           "3,000 frequencies from 0.5 to 3.99883, fp64, 0:")
    direct = clperiod.lombscargle_multiband(load_example("stripe82_ugriz"), GRID, top_k=2,
                                            nterms_base=3, nterms_band=2, device=cpu_device)
    table = pq.read_table(out)
    assert "fap" not in table.column_names
    assert table.column("id").to_pylist() == list(PERIODS)
    np.testing.assert_array_equal(table.column("power").to_numpy(), direct.power_best)
    np.testing.assert_array_equal(table.column("period_2").to_numpy(), direct.top_k_period[:, 1])
    search = table.schema.metadata[b"clperiod"].decode()
    assert '"algorithm": "lombscargle_multiband"' in search
    assert '"options": {"nterms_band": 2, "nterms_base": 3, "precision": "fp64", "top_k": 2}' in search


def test_center_data_and_the_default_output_name(tmp_path, capsys, cpu_device):
    source = tmp_path / "rrlyrae.csv"
    source.write_bytes(UGRIZ.read_bytes())
    status, _, _ = _cli(capsys, "lombscargle-multiband", source, *COLUMNS, "--band-col", "band",
                        *GRID_OPTIONS, "--no-center-data", "--nterms-band", 0, "--no-progress",
                        *_device(cpu_device))
    assert status == 0
    table = pq.read_table(tmp_path / "rrlyrae.lombscargle-multiband.parquet")
    direct = clperiod.lombscargle_multiband(load_example("stripe82_ugriz"), GRID, nterms_band=0,
                                            center_data=False, device=cpu_device)
    np.testing.assert_array_equal(table.column("power").to_numpy(), direct.power_best)


@pytest.mark.slow
def test_the_literature_periods_as_the_guide_finds_them(tmp_path, capsys, cpu_device):
    """The command of the multiband guide: three base and two band terms, periods from
    0.2 to 2 days on the automatic grid with 10 samples per peak."""
    out = tmp_path / "rr.csv"
    status, _, _ = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "--band-col", "band",
                        "--nterms-base", 3, "--nterms-band", 2, "--min-period", 0.2,
                        "--max-period", 2, "--samples-per-peak", 10, "-o", out,
                        "--no-progress", *_device(cpu_device))
    assert status == 0
    table = pd.read_csv(out)
    np.testing.assert_allclose(table["period"], list(PERIODS.values()), rtol=2e-5)


@pytest.mark.slow
def test_figures_fold_each_band(tmp_path, capsys, cpu_device):
    status, text, _ = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "--band-col",
                           "band", *GRID_OPTIONS, "-o", tmp_path / "res.csv", "--plot",
                           tmp_path / "figures", "--plot-ids", 27887, "--no-progress",
                           *_device(cpu_device))
    assert status == 0 and text.rstrip().endswith(f"1 figure(s) written to {tmp_path / 'figures'}")
    assert [p.name for p in (tmp_path / "figures").iterdir()] == ["27887.png"]


def test_the_band_column_is_required(tmp_path, capsys):
    status, text, err = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "-o",
                             tmp_path / "res.csv")
    assert status == 1 and text == ""
    assert err == ("clperiod: error: lombscargle-multiband models each band: name the band "
                   "label column with --band-col\n")
    assert not (tmp_path / "res.csv").exists()


@pytest.mark.parametrize("option", [("--memory", "local"), ("--method", "standard"),
                                    ("--fap-method", "naive")])
def test_options_of_other_searches_are_refused(tmp_path, capsys, option):
    with pytest.raises(SystemExit) as stop:
        cli.main(["lombscargle-multiband", str(UGRIZ), "--band-col", "band", *option])
    assert stop.value.code == 2
    assert f"unrecognized arguments: {' '.join(option)}" in capsys.readouterr().err


def test_fp32_finds_the_fp64_peaks(tmp_path, capsys, cpu_device):
    tables = []
    for precision in ("fp64", "fp32"):
        out = tmp_path / f"{precision}.parquet"
        status, text, _ = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "--band-col",
                               "band", *GRID_OPTIONS, "--precision", precision, "-o", out,
                               "--no-progress", *_device(cpu_device))
        assert status == 0 and f", {precision}, " in text
        tables.append(pq.read_table(out).to_pydict())
    assert tables[1]["frequency"] == tables[0]["frequency"]
    np.testing.assert_allclose(tables[1]["power"], tables[0]["power"], rtol=1e-5)


def test_bad_model_options_name_the_option(tmp_path, capsys, cpu_device):
    status, _, err = _cli(capsys, "lombscargle-multiband", UGRIZ, *COLUMNS, "--band-col", "band",
                          *GRID_OPTIONS, "--nterms-base", 5, "-o", tmp_path / "res.csv",
                          "--no-progress", *_device(cpu_device))
    assert status == 1
    assert err.startswith("clperiod: error: --nterms-base must be")
