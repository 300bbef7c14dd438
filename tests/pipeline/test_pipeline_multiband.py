"""The multiband Lomb-Scargle in catalog runs: run_catalog with
PeriodSearch("lombscargle_multiband") writes what clperiod.lombscargle_multiband gives
for the whole catalog, resumes, and reads the bands of a file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import Catalog, MultibandResult
from clperiod.io import example_path, load_example, open_catalog
from clperiod.io.tables import result_columns
from clperiod.pipeline import PeriodSearch, run_catalog, work_directory

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 900)
MODEL = {"nterms_base": 2, "nterms_band": 1}
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


def _search(**options) -> PeriodSearch:
    return PeriodSearch("lombscargle_multiband", GRID, {"top_k": 2, **MODEL, **options},
                        fap_method=None)


def _direct(catalog: Catalog, device, **options) -> pd.DataFrame:
    result = clperiod.lombscargle_multiband(catalog, GRID, top_k=2, device=device,
                                            **MODEL, **options)
    return pd.DataFrame(result_columns(result, fap_method=None))


def test_run_in_chunks_equals_the_library(tmp_path, banded, cpu_device):
    run = run_catalog(banded, _search(), tmp_path / "mb.parquet", chunk_rows=150,
                      periodogram=tmp_path / "mb.npy", device=cpu_device, progress=False)
    assert run.n_chunks > 2 and run.n_objects == 11
    table = pq.read_table(run.output).to_pandas()
    assert "fap" not in table.columns
    pd.testing.assert_frame_equal(table, _direct(banded, cpu_device), check_exact=True)
    assert table["status_name"].tolist() == ["OK"] * 10 + ["TOO_FEW_POINTS"]
    direct = clperiod.lombscargle_multiband(banded, GRID, periodogram=True, device=cpu_device,
                                            **MODEL)
    np.testing.assert_array_equal(np.load(run.periodogram), direct.power)


def test_the_bands_change_the_results(tmp_path, banded, cpu_device):
    """The same rows without labels give other powers at every object, so the equality
    of the test above shows that every chunk reached the search with its bands."""
    pooled = Catalog(banded.ids, banded.offsets, banded.t, banded.y, banded.dy)
    one = run_catalog(pooled, _search(), tmp_path / "one.parquet", device=cpu_device,
                      progress=False)
    power_one = pq.read_table(one.output).column("power").to_numpy()[:10]
    power_three = _direct(banded, cpu_device)["power"].to_numpy()[:10]
    assert np.all(np.abs(power_three - power_one) > 1e-3)


def test_no_fap_column_whatever_the_fap_method(tmp_path, banded, monkeypatch, cpu_device):
    """The fap column is the analytic false-alarm probability of Lomb-Scargle: a multiband
    result's (a costly bootstrap, with other arguments) is never asked for, even with the
    default fap_method."""
    def bootstrap(self, *args, **options):
        raise AssertionError("the run asked for the multiband false-alarm probability")

    monkeypatch.setattr(MultibandResult, "false_alarm_probability", bootstrap, raising=False)
    search = PeriodSearch("lombscargle_multiband", GRID, {"top_k": 2, **MODEL})
    assert search.fap_method == "baluev" and search.fap_column is None
    run = run_catalog(banded, search, tmp_path / "mb.parquet", chunk_rows=150,
                      device=cpu_device, progress=False)
    table = pq.read_table(run.output).to_pandas()
    pd.testing.assert_frame_equal(table, _direct(banded, cpu_device), check_exact=True)
    assert PeriodSearch("lombscargle", GRID).fap_column == "baluev"
    assert PeriodSearch("supersmoother", GRID, fap_method="naive").fap_column is None


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
    message = r"other settings \(search.options.nterms_band: 1 there, 2 now\)"
    with pytest.raises(ValueError, match=message):
        run_catalog(banded, _search(nterms_band=2), output, chunk_rows=150, device=cpu_device,
                    progress=False)
    run = run_catalog(banded, _search(), output, chunk_rows=150, device=cpu_device,
                      progress=False)
    assert run.n_resumed == 2
    pd.testing.assert_frame_equal(pq.read_table(output).to_pandas(),
                                  pq.read_table(reference.output).to_pandas(), check_exact=True)


def test_a_file_with_a_band_column(tmp_path, cpu_device):
    """The bundled ugriz stars, read in chunks of whole objects with their bands."""
    reader = open_catalog(example_path("stripe82_ugriz"), t_col="mjd", y_col="mag",
                          dy_col="mag_err", band_col="band", chunk_rows=300)
    run = run_catalog(reader, _search(), tmp_path / "ugriz.csv", device=cpu_device,
                      progress=False)
    assert run.n_chunks == 2
    table = pd.read_csv(run.output)
    expected = _direct(load_example("stripe82_ugriz"), cpu_device)
    np.testing.assert_array_equal(table["id"], expected["id"])
    np.testing.assert_array_equal(table["power"], expected["power"])
    np.testing.assert_array_equal(table["period_2"], expected["period_2"])


def test_options_are_those_of_the_multiband_search():
    with pytest.raises(ValueError, match=r"unknown lombscargle_multiband option\(s\) "
                                         r"\['method'\]; accepted: \['nterms_base'"):
        PeriodSearch("lombscargle_multiband", GRID, {"method": "standard"})
    with pytest.raises(ValueError, match=r"unknown lombscargle_multiband option\(s\) "
                                         r"\['catalog'\]"):
        PeriodSearch("lombscargle_multiband", GRID, {"catalog": None})
    search = _search(center_data=False)
    assert search.function is clperiod.lombscargle_multiband
    assert search.settings()["options"] == {"center_data": False, "nterms_band": 1,
                                            "nterms_base": 2, "top_k": 2}
