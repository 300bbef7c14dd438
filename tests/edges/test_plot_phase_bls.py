"""clperiod.plot.plot_result on PDM, AOV, conditional-entropy and BLS results: the
periodogram with the best value marked (the minimum for PDM and conditional entropy), the
fold at the best period and, for BLS, the best box model over it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.plot import plot_objects, plot_result
from clperiod.testing import sinusoid_lightcurve

GRID = FrequencyGrid.from_range(0.1, 3.0, 1500)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    rng = np.random.default_rng(11)
    curves = [sinusoid_lightcurve(rng, 90, period, baseline=60.0, mean=15.0, amplitude=0.4)
              for period in (0.7, 2.2)]
    return Catalog.from_lightcurves(curves, ids=[5, 6])


@pytest.fixture(scope="module")
def transits() -> Catalog:
    """Two box transits (period 2.3 and 3.1 days, 0.15 days long, 1 % deep) over 30 days."""
    rng = np.random.default_rng(3)
    curves = []
    for period in (2.3, 3.1):
        t = np.sort(rng.uniform(0, 30, 600)) + 58000.0
        dy = np.full(t.size, 0.002)
        y = 1.0 + dy * rng.standard_normal(t.size)
        y[np.abs((t - 58000.4 + period / 2) % period - period / 2) < 0.075] -= 0.01
        curves.append((t, y, dy))
    return Catalog.from_lightcurves(curves)


def lines_by_marker(ax, marker):
    return [line for line in ax.get_lines() if line.get_marker() == marker]


def legend_texts(ax):
    legend = ax.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


@pytest.mark.parametrize("search", [clperiod.pdm, clperiod.conditional_entropy])
def test_minimum_statistics_mark_their_lowest_values(catalog, cpu_device, search):
    result = search(catalog, GRID, top_k=3, periodogram=True, device=cpu_device)
    fig = plot_result(result, catalog, 1)
    top, bottom = fig.axes
    frequency, values = top.get_lines()[0].get_data()
    np.testing.assert_array_equal(frequency, GRID.frequencies())
    np.testing.assert_array_equal(values, result.statistic[1])
    (best,) = [ln for ln in lines_by_marker(top, "^") if ln.get_color() == "tab:red"]
    assert best.get_ydata()[0] == result.statistic_best[1] == np.nanmin(result.statistic[1])
    assert best.get_xdata()[0] == result.frequency_best[1]
    assert abs(result.period[1] - 2.2) < 0.05
    assert lines_by_marker(top, "v") == []
    others = [ln for ln in lines_by_marker(top, "^") if ln.get_color() == "tab:orange"]
    np.testing.assert_array_equal(others[0].get_ydata(), result.top_k_statistic[1, 1:])
    texts = legend_texts(top)
    assert any(text.startswith("best (minimum): f = ") for text in texts)
    assert "other top-k minima" in texts
    assert "lowest at the period" in top.get_ylabel()
    assert any("has no analytic FAP" in text for text in texts)
    t, _, _ = catalog.lightcurve(1)
    phase = ((t - t.min()) * result.frequency_best[1]) % 1.0
    folded = np.concatenate([line.get_xdata() for line in bottom.get_lines()])
    np.testing.assert_allclose(folded, np.concatenate((phase, phase + 1.0)))
    assert f"{result.statistic_best[1]:.3g}, n = 90" in bottom.get_title()


def test_aov_marks_its_highest_value_and_names_its_bins(catalog, cpu_device):
    result = clperiod.aov(catalog, GRID, n_bins=8, periodogram=True, precision="fp32",
                          device=cpu_device)
    top, bottom = plot_result(result, catalog, 0).axes
    (best,) = [ln for ln in lines_by_marker(top, "v") if ln.get_color() == "tab:red"]
    assert best.get_ydata()[0] == result.statistic_best[0] == np.nanmax(result.statistic[0])
    assert top.get_title() == "object 5: AOV (n bins 8), 1,500 frequencies, fp32"
    assert top.get_ylabel() == r"AOV $\theta$ (highest at the period)"
    assert bottom.get_title().startswith("object 5 folded at P = ")
    assert r"AOV $\theta$" in bottom.get_title()


def test_bls_draws_the_box_model_on_the_fold(transits, cpu_device, tmp_path):
    periods = np.linspace(1.5, 4.0, 400)
    result = clperiod.bls(transits, periods, [0.1, 0.15], top_k=2, periodogram=True,
                          device=cpu_device)
    path = tmp_path / "bls.png"
    top, bottom = plot_result(result, transits, 1, path=path).axes
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    frequency, power = top.get_lines()[0].get_data()
    rising = np.argsort(1.0 / periods)
    np.testing.assert_array_equal(frequency, (1.0 / periods)[rising])
    expected = np.where(np.isneginf(result.power[1]), np.nan, result.power[1])[rising]
    np.testing.assert_array_equal(power, expected)
    assert top.get_ylabel() == "BLS power: log-likelihood"
    assert "BLS (likelihood, binned, 2 durations)" in top.get_title()
    assert abs(result.period_best[1] - 3.1) < 0.02
    (box,) = [ln for ln in bottom.get_lines() if ln.get_gid() == "box model"]
    t = transits.lightcurve(1)[0]
    phase = box.get_xdata()
    np.testing.assert_array_equal(phase, np.linspace(0.0, 2.0, 8000))
    f = 1.0 / result.period_best[1]
    np.testing.assert_array_equal(box.get_ydata(), result.model(1, t.min() + phase / f))
    depth = box.get_ydata().max() - box.get_ydata().min()
    assert abs(depth - result.depth_best[1]) < 1e-12 and abs(depth - 0.01) < 1e-3
    assert "box model in black" in bottom.get_title()


@pytest.mark.slow
def test_plot_objects_writes_the_new_results(transits, catalog, cpu_device, tmp_path):
    pdm = clperiod.pdm(catalog, GRID, periodogram=True, device=cpu_device)
    assert [p.name for p in plot_objects(pdm, catalog, [6], tmp_path)] == ["6.png"]
    bls = clperiod.bls(transits, np.linspace(1.5, 4.0, 100), 0.15, device=cpu_device)
    (path,) = plot_objects(bls, transits, [0], tmp_path / "bls", fmt="pdf")
    assert path.read_bytes()[:5] == b"%PDF-"
