"""The default grid of catalog runs (FrequencyGrid.survey / AutoGrid) and grid warnings."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

import clperiod
from clperiod import cli
from clperiod.catalog import Catalog
from clperiod.grid import (SURVEY_MIN_PERIOD, FrequencyGrid, GridWarning, grid_warning_names,
                           grid_warnings, supported_frequencies)
from clperiod.pipeline import AutoGrid, GridResolutionWarning, PeriodSearch, run_catalog


def _ztf_like(n_objects: int = 50, seed: int = 7) -> tuple[np.ndarray, Catalog]:
    """Sinusoids with periods 0.1-10 d, one visit a night at a random hour, over three
    eight-month seasons (200-400 points over about 1000 d)."""
    rng = np.random.default_rng(seed)
    periods = np.exp(rng.uniform(np.log(0.1), np.log(10), n_objects))
    nights = np.flatnonzero(np.arange(1100) % 365 < 240)
    curves = []
    for period in periods:
        n = rng.integers(200, 400)
        t = 58200.0 + np.sort(rng.choice(nights, n, replace=False) + rng.uniform(0.15, 0.45, n))
        y = 17 + 0.3 * np.sin(2 * np.pi * t / period + rng.uniform(0, 2 * np.pi))
        curves.append((t, y + rng.normal(0, 0.05, n), np.full(n, 0.05)))
    return periods, Catalog.from_lightcurves(curves)


@pytest.fixture(scope="module")
def survey() -> tuple[np.ndarray, Catalog]:
    return _ztf_like()


def _write_csv(path, catalog: Catalog) -> None:
    ids = np.repeat(catalog.ids, catalog.lengths)
    rows = np.column_stack([ids, catalog.t, catalog.y, catalog.dy])
    np.savetxt(path, rows, delimiter=",", header="id,t,y,dy", comments="",
               fmt=["%d", "%.6f", "%.5f", "%.3f"])


@pytest.mark.slow
def test_default_catalog_run_recovers_short_periods(tmp_path, capsys, survey, cpu_device):
    periods, catalog = survey
    source = tmp_path / "ztf.csv"
    _write_csv(source, catalog)
    out = tmp_path / "ztf.parquet"
    status = cli.main(["lombscargle", str(source), "-o", str(out), "--no-progress",
                       "--device", cpu_device.label.split()[0]])
    text, err = capsys.readouterr()
    assert (status, err) == (0, "")
    grid = FrequencyGrid.survey(catalog)
    assert f"{grid.nf:,} frequencies from {grid.fmin:.6g} to {grid.fmax:.6g}" in text
    table = pq.read_table(out)
    found = table.column("period").to_numpy()
    np.testing.assert_array_less(np.abs(found / periods - 1), 0.01)  # all 50
    assert set(table.column("grid_warning").to_pylist()) == {""}


def test_astropy_rule_misses_them_and_says_so(tmp_path, survey, cpu_device):
    periods, catalog = survey
    search = PeriodSearch("lombscargle", AutoGrid(min_period=None))
    with pytest.warns(GridResolutionWarning, match=r"50 with low_fmax"):
        run = run_catalog(catalog, search, tmp_path / "out.parquet", device=cpu_device,
                          progress=False)
    assert run.grid == FrequencyGrid.auto(catalog)
    assert run.grid.fmax < 1  # the average Nyquist frequency of a few hundred points a year
    assert run.grid_warnings == {"low_fmax": 50}
    table = pq.read_table(run.output)
    assert set(table.column("grid_warning").to_pylist()) == {"low_fmax"}
    missed = np.abs(table.column("period").to_numpy() / periods - 1) > 0.01
    assert missed.sum() >= 20


def test_survey_grid_limits(survey):
    _, catalog = survey
    auto, grid = FrequencyGrid.auto(catalog), FrequencyGrid.survey(catalog)
    assert (grid.fmin, grid.df) == (auto.fmin, auto.df)
    assert abs(grid.fmax - 1 / SURVEY_MIN_PERIOD) <= grid.df / 2
    # dense sampling: astropy's rule is higher and wins
    dense = np.linspace(0, 10, 5000)
    assert FrequencyGrid.survey(dense) == FrequencyGrid.auto(dense)
    assert FrequencyGrid.survey(dense).fmax > 1000
    # explicit bounds win, and min_period moves the floor
    assert FrequencyGrid.survey(catalog, maximum_frequency=3.0) == FrequencyGrid.auto(
        catalog, maximum_frequency=3.0)
    assert abs(FrequencyGrid.survey(catalog, min_period=0.01).fmax - 100) <= grid.df
    with pytest.raises(ValueError, match="min_period must be > 0"):
        FrequencyGrid.survey(catalog, min_period=0.0)


def test_auto_grid_resolves_to_the_survey_grid(survey):
    _, catalog = survey
    baseline, n = float(np.nanmax(catalog.baselines())), int(catalog.lengths.max())
    assert AutoGrid().resolve(baseline, n) == FrequencyGrid.survey(catalog)
    assert AutoGrid(min_period=None).resolve(baseline, n) == FrequencyGrid.auto(catalog)
    assert PeriodSearch("lombscargle").grid == AutoGrid()


def test_supported_frequencies_lattice_irregular_and_degenerate():
    curves = [
        np.array([1.0, 1.0, 3.0, 5.0]),       # lattice of step 2 (a repeated time)
        np.array([2.0]),                       # one point
        np.array([]),                          # empty
        np.array([5.0, 1.0, 2.5]),             # irregular, not time-sorted
        np.array([3.0, 3.0]),                  # no two distinct times
        np.array([0.0, 0.5, 1.0, 3.0, 2.5]),   # lattice of step 0.5 with a gap, unsorted
    ]
    catalog = Catalog.from_lightcurves([(t, np.ones(t.size)) for t in curves])
    np.testing.assert_array_equal(supported_frequencies(catalog),
                                  [0.25, np.nan, np.nan, np.inf, np.nan, 1.0])

    remembered = supported_frequencies(catalog)
    assert remembered is supported_frequencies(catalog)
    with pytest.raises(ValueError, match="read-only"):
        remembered[0] = 1.0


def test_evenly_sampled_data_are_not_flagged_below_their_nyquist_frequency():
    t = np.arange(0, 30, 0.02)
    catalog = Catalog.from_single(np.r_[t, t + 40], np.sin(np.r_[t, t + 40]))
    assert supported_frequencies(catalog)[0] == pytest.approx(25)
    assert grid_warnings(FrequencyGrid.from_range(0.01, 25.0, 350000), catalog)[0] == 0
    low = FrequencyGrid.from_range(0.01, 10.0, 350000)
    assert grid_warnings(low, catalog)[0] == GridWarning.LOW_FMAX


def test_coarse_step_is_relative_to_each_baseline():
    short, long = np.linspace(0, 10, 50), np.linspace(0, 100, 50)
    catalog = Catalog.from_lightcurves([(short, np.sin(short)), (long, np.sin(long))])
    grid = FrequencyGrid.from_step(0.01, 1 / (5 * 50), 500)  # 5 per peak at T = 50
    flags = grid_warnings(grid, catalog)
    assert flags[0] & GridWarning.COARSE_STEP == 0
    assert flags[1] & GridWarning.COARSE_STEP
    assert list(grid_warning_names(flags)) == ["low_fmax", "coarse_step"]  # lattices


def test_cli_prints_the_grid_warning_once(tmp_path, capsys, survey, cpu_device):
    _, catalog = survey
    source = tmp_path / "ztf.csv"
    _write_csv(source, catalog)
    status = cli.main(["lombscargle", str(source), "-o", str(tmp_path / "o.csv"), "--fmin",
                       "0.01", "--fmax", "2", "--nf", "1000", "--no-progress",
                       "--device", cpu_device.label.split()[0]])
    _, err = capsys.readouterr()
    assert status == 0
    assert err.count("clperiod: warning: the grid (1,000 frequencies") == 1
    assert "50 with coarse_step, 50 with low_fmax" in err


def test_single_light_curve_results_carry_the_flags(cpu_device):
    t = np.linspace(0, 100, 200) + np.random.default_rng(1).uniform(0, 0.3, 200)
    result = clperiod.lombscargle(t, FrequencyGrid.from_range(0.01, 1, 1000), np.sin(t),
                                  device=cpu_device)
    columns = clperiod.io.tables.result_columns(result)
    assert list(columns["grid_warning"]) == ["low_fmax"]


def test_frequency_arrays_are_flagged_by_their_coarsest_step_and_last_frequency():
    t = np.linspace(0, 50, 40) + np.random.default_rng(2).uniform(0, 0.2, 40)  # irregular
    catalog = Catalog.from_single(t, np.sin(t))
    assert 1 / (5 * catalog.baselines()[0]) > 0.00397
    fine = np.geomspace(0.01, 21, 45_000)  # largest step 21 (2100**(1/44999) - 1) = 0.00358
    assert grid_warnings(FrequencyGrid.from_frequencies(fine), catalog)[0] == 0
    coarse = np.geomspace(0.01, 21, 4_000)  # largest step 0.040
    assert grid_warnings(FrequencyGrid.from_frequencies(coarse), catalog)[0] == (
        GridWarning.COARSE_STEP
    )
    low = np.geomspace(0.01, 19.9, 45_000)  # stops at 19.9 + 0.0034 < 1 / SURVEY_MIN_PERIOD
    repeated = np.random.default_rng(3).permutation(np.r_[low, low[::7]])
    assert grid_warnings(FrequencyGrid.from_frequencies(repeated), catalog)[0] == (
        GridWarning.LOW_FMAX
    )
