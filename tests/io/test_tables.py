"""The per-object result table (clperiod.io.tables)."""

import numpy as np

import clperiod
from clperiod.catalog import Status
from clperiod.io.tables import result_columns
from clperiod.testing import sinusoid_lightcurve


def _catalog():
    t, y, _ = sinusoid_lightcurve(np.random.default_rng(3), 80, 2.5, baseline=50.0, epoch=0.0,
                                  dy=None)
    return clperiod.Catalog.from_lightcurves([(t, y, np.full(80, 0.1)), (t[:2], y[:2], np.full(2, 0.1))], ids=["a", "b"])


def test_lombscargle_columns(cpu_device):
    cat = _catalog()
    grid = clperiod.FrequencyGrid.from_range(0.05, 2.0, 2000)
    result = clperiod.lombscargle(cat, grid, top_k=3, device=cpu_device)
    columns = result_columns(result)
    assert list(columns) == ["id", "n_points", "period", "frequency", "power", "fap",
                             "period_1", "period_2", "period_3",
                             "power_1", "power_2", "power_3", "status", "status_name",
                             "grid_warning"]
    assert list(columns["id"]) == ["a", "b"]
    assert list(columns["n_points"]) == [80, 2]
    assert abs(columns["period"][0] - 2.5) < 0.01
    np.testing.assert_array_equal(columns["period_1"], result.top_k_period[:, 0])
    np.testing.assert_array_equal(columns["fap"], result.false_alarm_probability())
    assert columns["fap"][0] < 1e-10
    assert list(columns["status"]) == [Status.OK, Status.TOO_FEW_POINTS]
    assert list(columns["status_name"]) == ["OK", "TOO_FEW_POINTS"]
    assert np.isnan(columns["period"][1]) and np.isnan(columns["power_3"][1])
    assert "fap" not in result_columns(result, fap_method=None)


def test_supersmoother_columns_have_no_fap(cpu_device):
    grid = clperiod.FrequencyGrid.from_range(0.05, 2.0, 500)
    result = clperiod.supersmoother(_catalog(), grid, device=cpu_device)
    columns = result_columns(result)
    assert "fap" not in columns
    assert abs(columns["period"][0] - 2.5) < 0.02
    np.testing.assert_array_equal(columns["power_1"], result.top_k_power[:, 0])


def test_bootstrap_results_have_no_fap_column(tmp_path, cpu_device):
    """Multiband Lomb-Scargle and MHAOV have a bootstrap false_alarm_probability (other
    arguments, costly): the table never asks for it, whatever fap_method says."""
    cat = _catalog()
    grid = clperiod.FrequencyGrid.from_range(0.05, 2.0, 500)
    for search in (clperiod.lombscargle_multiband, clperiod.mhaov):
        result = search(cat, grid, device=cpu_device)
        columns = result_columns(result, fap_method="baluev")
        assert "fap" not in columns
        np.testing.assert_array_equal(columns["power"], result.power_best)
        path = tmp_path / f"{search.__name__}.csv"
        clperiod.io.write_results(path, result)
        assert path.read_text().startswith('"id","n_points","period","frequency","power",'
                                           '"period_1"')
