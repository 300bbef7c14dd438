"""The multi-harmonic AOV in catalog runs: run_catalog with PeriodSearch("mhaov") writes what
clperiod.mhaov gives for the whole catalog, with or without bands, resumes, and reads the
bands of a file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import Catalog, MhaovResult
from clperiod.io import example_path, load_example, open_catalog
from clperiod.io.tables import result_columns
from clperiod.pipeline import PeriodSearch, run_catalog, work_directory

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 900)
MODEL = {"nharmonics": 2, "min_points": 8}
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


@pytest.fixture(scope="module")
def banded() -> Catalog:
    """Stripe 82 RR Lyrae z-band light curves, each row labelled g, r or i in turn (the
    labels only split the rows into bands), plus a 5-point object (TOO_FEW_POINTS)."""
    stars = load_example("stripe82").subset(np.arange(10))
    band = np.array(["g", "r", "i"])[np.arange(stars.t.size) % 3]
    ids = np.concatenate([np.repeat(stars.ids, stars.lengths), np.full(5, 7)])
    t = np.concatenate([stars.t, 55000.0 + np.arange(5.0)])
    y = np.concatenate([stars.y, [17.0, 17.2, 17.1, 16.9, 17.3]])
    dy = np.concatenate([stars.dy, np.full(5, 0.02)])
    band = np.concatenate([band, ["g", "r", "i", "g", "r"]])
    return Catalog.from_arrays(ids, t, y, dy, band=band)


def pooled(catalog: Catalog) -> Catalog:
    return Catalog(catalog.ids, catalog.offsets, catalog.t, catalog.y, catalog.dy)


def _search(**options) -> PeriodSearch:
    return PeriodSearch("mhaov", GRID, {"top_k": 2, **MODEL, **options}, fap_method=None)


def _direct(catalog: Catalog, device, **options) -> pd.DataFrame:
    result = clperiod.mhaov(catalog, GRID, top_k=2, device=device, **{**MODEL, **options})
    return pd.DataFrame(result_columns(result, fap_method=None))


@pytest.mark.parametrize("bands", [True, False], ids=["bands", "one band"])
def test_run_in_chunks_equals_the_library(tmp_path, banded, cpu_device, bands):
    catalog = banded if bands else pooled(banded)
    run = run_catalog(catalog, _search(), tmp_path / "mh.parquet", chunk_rows=150,
                      periodogram=tmp_path / "mh.npy", device=cpu_device, progress=False)
    assert run.n_chunks > 2 and run.n_objects == 11
    table = pq.read_table(run.output).to_pandas()
    assert "fap" not in table.columns
    pd.testing.assert_frame_equal(table, _direct(catalog, cpu_device), check_exact=True)
    assert table["status_name"].tolist() == ["OK"] * 10 + ["TOO_FEW_POINTS"]
    direct = clperiod.mhaov(catalog, GRID, periodogram=True, device=cpu_device, **MODEL)
    np.testing.assert_array_equal(np.load(run.periodogram), direct.power)


def test_the_bands_change_the_results(banded, cpu_device):
    """The same rows without labels give other powers at every object, so the equality
    of the test above shows that every chunk reached the search with its bands."""
    power_one = _direct(pooled(banded), cpu_device)["power"].to_numpy()[:10]
    power_three = _direct(banded, cpu_device)["power"].to_numpy()[:10]
    assert np.all(np.abs(power_three / power_one - 1) > 1e-3)


def test_no_fap_column_whatever_the_fap_method(tmp_path, banded, monkeypatch, cpu_device):
    """The fap column is the analytic false-alarm probability of Lomb-Scargle: the MHAOV
    bootstrap is never asked for, even with the default fap_method."""
    def bootstrap(self, *args, **options):
        raise AssertionError("the run asked for the MHAOV false-alarm probability")

    monkeypatch.setattr(MhaovResult, "false_alarm_probability", bootstrap)
    search = PeriodSearch("mhaov", GRID, {"top_k": 2, **MODEL})
    assert search.fap_method == "baluev" and search.fap_column is None
    run = run_catalog(banded, search, tmp_path / "mh.parquet", chunk_rows=150,
                      device=cpu_device, progress=False)
    table = pq.read_table(run.output).to_pandas()
    pd.testing.assert_frame_equal(table, _direct(banded, cpu_device), check_exact=True)


def test_an_interrupted_run_resumes(tmp_path, banded, monkeypatch, cpu_device):
    reference = run_catalog(banded, _search(), tmp_path / "ref.parquet", chunk_rows=150,
                            device=cpu_device, progress=False)
    original, calls = PeriodSearch.start, []

    def failing(self, catalog, **options):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("device lost")
        return original(self, catalog, **options)

    monkeypatch.setattr(PeriodSearch, "start", failing)
    output = tmp_path / "out.parquet"
    with pytest.raises(RuntimeError, match="device lost"):
        run_catalog(banded, _search(), output, chunk_rows=150, device=cpu_device,
                    progress=False)
    assert sorted(p.name for p in work_directory(output).glob("part-*")) == [
        "part-000000.arrow", "part-000001.arrow"]
    monkeypatch.undo()
    message = r"other settings \(search.options.nharmonics: 2 there, 3 now\)"
    with pytest.raises(ValueError, match=message):
        run_catalog(banded, _search(nharmonics=3), output, chunk_rows=150, device=cpu_device,
                    progress=False)
    run = run_catalog(banded, _search(), output, chunk_rows=150, device=cpu_device,
                      progress=False)
    assert run.n_resumed == 2
    pd.testing.assert_frame_equal(pq.read_table(output).to_pandas(),
                                  pq.read_table(reference.output).to_pandas(), check_exact=True)


def test_a_file_with_a_band_column(tmp_path, cpu_device):
    """The bundled ugriz stars, read in chunks of whole objects with their bands, in fp32."""
    reader = open_catalog(example_path("stripe82_ugriz"), t_col="mjd", y_col="mag",
                          dy_col="mag_err", band_col="band", chunk_rows=300)
    run = run_catalog(reader, _search(precision="fp32"), tmp_path / "ugriz.csv",
                      device=cpu_device, progress=False)
    assert run.n_chunks == 2
    table = pd.read_csv(run.output)
    expected = _direct(load_example("stripe82_ugriz"), cpu_device, precision="fp32")
    np.testing.assert_array_equal(table["id"], expected["id"])
    np.testing.assert_array_equal(table["power"], expected["power"])
    np.testing.assert_array_equal(table["period_2"], expected["period_2"])


def test_figures_of_a_run(tmp_path, banded, cpu_device):
    run = run_catalog(banded, _search(), tmp_path / "mh.parquet", plot=tmp_path / "figures",
                      plot_ids=[banded.ids[0]], device=cpu_device, progress=False)
    assert [path.name for path in run.figures] == [f"{banded.ids[0]}.png"]
    assert run.figures[0].read_bytes()[:4] == b"\x89PNG"


def test_options_are_those_of_the_mhaov_search():
    with pytest.raises(ValueError, match=r"unknown mhaov option\(s\) \['nterms_base'\]; "
                                         r"accepted: \['nharmonics', 'fit_harmonics'"):
        PeriodSearch("mhaov", GRID, {"nterms_base": 1})
    search = _search(fit_harmonics=2)
    assert search.function is clperiod.mhaov
    assert search.settings()["options"] == {"fit_harmonics": 2, "min_points": 8,
                                            "nharmonics": 2, "top_k": 2}
