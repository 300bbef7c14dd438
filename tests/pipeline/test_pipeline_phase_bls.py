"""PDM, AOV, conditional entropy and BLS in catalog runs: run_catalog with
PeriodSearch("pdm" | "aov" | "conditional_entropy" | "bls") writes what the library call
gives for the whole catalog (results and periodograms), with the value columns named for
the best value (statistic_min for PDM and conditional entropy) and BLS's box fields."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import Catalog
from clperiod.io import load_example
from clperiod.io.tables import result_columns
from clperiod.pipeline import PeriodSearch, run_catalog

GRID = clperiod.FrequencyGrid.from_range(0.5, 4.0, 400)
SEARCHES = {
    "pdm": ({"n_bins": 8, "n_covers": 2, "top_k": 2}, "statistic_min"),
    "aov": ({"n_bins": 6, "top_k": 2}, "statistic_max"),
    "conditional_entropy": ({"phase_bins": 8, "magnitude_bins": 4, "top_k": 2},
                            "statistic_min"),
    "bls": ({"durations": [0.02, 0.05], "objective": "snr", "top_k": 2}, "power"),
}
pytestmark = pytest.mark.filterwarnings("ignore::clperiod.pipeline.GridResolutionWarning")


@pytest.fixture(scope="module")
def stars() -> Catalog:
    """Eight Stripe 82 RR Lyrae and a 5-point object (TOO_FEW_POINTS for the binned
    statistics; BLS searches it)."""
    rr = load_example("stripe82").subset(np.arange(8))
    ids = np.concatenate([np.repeat(rr.ids, rr.lengths), np.full(5, 99)])
    t = np.concatenate([rr.t, 55000.0 + np.arange(5.0)])
    y = np.concatenate([rr.y, [17.0, 17.2, 17.1, 16.9, 17.3]])
    dy = np.concatenate([rr.dy, np.full(5, 0.02)])
    return Catalog.from_arrays(ids, t, y, dy)


@pytest.mark.parametrize("algorithm", sorted(SEARCHES))
def test_run_in_chunks_equals_the_library(tmp_path, stars, cpu_device, algorithm):
    options, value = SEARCHES[algorithm]
    search = PeriodSearch(algorithm, GRID, options)
    assert search.fap_column is None
    run = run_catalog(stars, search, tmp_path / "out.parquet", chunk_rows=200,
                      periodogram=tmp_path / "out.npy", device=cpu_device, progress=False)
    assert run.n_chunks > 2 and run.n_objects == 9
    function = getattr(clperiod, algorithm)
    direct = function(stars, GRID, periodogram=True, device=cpu_device, **options)
    table = pq.read_table(run.output).to_pandas()
    pd.testing.assert_frame_equal(table, pd.DataFrame(result_columns(direct, fap_method=None)),
                                  check_exact=True)
    assert [value, f"{value}_1", f"{value}_2"] == [c for c in table.columns
                                                    if c.startswith(value)]
    assert "fap" not in table.columns
    assert ("power" in table.columns) == (value == "power")
    np.testing.assert_array_equal(np.load(run.periodogram), direct.power)
    assert (table["status_name"][:8] == "OK").all()


def test_columns_of_each_result(stars, cpu_device):
    """The best value under its label, the top-k values, BLS's box fields after power."""
    pdm = clperiod.pdm(stars, GRID, top_k=2, device=cpu_device)
    columns = result_columns(pdm, fap_method="baluev")
    assert list(columns)[:5] == ["id", "n_points", "period", "frequency", "statistic_min"]
    np.testing.assert_array_equal(columns["statistic_min"], pdm.statistic_best)
    np.testing.assert_array_equal(columns["statistic_min_2"], pdm.top_k_statistic[:, 1])
    assert columns["status_name"][8] == "TOO_FEW_POINTS"
    aov = result_columns(clperiod.aov(stars, GRID, device=cpu_device))
    assert "statistic_max" in aov and "statistic_max_1" in aov and "fap" not in aov
    bls = clperiod.bls(stars, GRID, [0.02, 0.05], device=cpu_device)
    columns = result_columns(bls)
    assert list(columns)[4:11] == ["power", "depth", "depth_err", "duration", "transit_time",
                                   "depth_snr", "log_likelihood"]
    np.testing.assert_array_equal(columns["depth"], bls.depth_best)
    np.testing.assert_array_equal(columns["period"], bls.period_best)


def test_options_are_those_of_each_search():
    with pytest.raises(ValueError, match=r"unknown pdm option\(s\) \['magnitude_bins'\]"):
        PeriodSearch("pdm", GRID, {"magnitude_bins": 4})
    with pytest.raises(ValueError, match=r"unknown bls option\(s\) \['periods'\]"):
        PeriodSearch("bls", GRID, {"periods": [1.0], "durations": [0.1]})
    search = PeriodSearch("conditional_entropy", GRID, {"magnitude_bins": 4})
    assert search.function is clperiod.conditional_entropy
    assert search.settings()["options"] == {"magnitude_bins": 4}


def test_bls_durations_longer_than_a_period_raise(tmp_path, stars, cpu_device):
    search = PeriodSearch("bls", GRID, {"durations": [0.3]})
    with pytest.raises(ValueError, match="duration"):
        run_catalog(stars, search, tmp_path / "bls.parquet", device=cpu_device,
                    progress=False)
