"""Figures of clperiod.plot: what is drawn (lines, levels, phases) and where it is saved."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection

import clperiod
from clperiod import Catalog, FrequencyGrid
from clperiod.periodograms import stats
from clperiod.plot import plot_objects, plot_result
from clperiod.testing import sinusoid_lightcurve

GRID = FrequencyGrid.from_range(0.05, 5.0, 4000)
PERIODS = (0.8, 1.7, 3.1)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    rng = np.random.default_rng(7)
    curves = [sinusoid_lightcurve(rng, 60 + 10 * k, period, baseline=40.0, mean=15.0,
                                  amplitude=0.3)
              for k, period in enumerate(PERIODS)]
    return Catalog.from_lightcurves(curves, ids=[101, 202, 303])


@pytest.fixture(scope="module")
def result(catalog, cpu_device):
    return clperiod.lombscargle(catalog, GRID, periodogram=True, top_k=3, device=cpu_device)


def fap_lines(ax):
    return [line for line in ax.get_lines() if str(line.get_gid()).startswith("fap")]


def legend_texts(ax):
    legend = ax.get_legend()
    return [] if legend is None else [text.get_text() for text in legend.get_texts()]


def folded_x(ax):
    """x of the fold panel's points (plain markers or errorbar data line)."""
    return np.concatenate([line.get_xdata() for line in ax.get_lines()])


def test_plot_result_draws_periodogram_peaks_fap_levels_and_fold(result, catalog):
    fig = plot_result(result, catalog, 1)
    top, bottom = fig.axes
    frequency, power = top.get_lines()[0].get_data()
    np.testing.assert_array_equal(frequency, GRID.frequencies())
    np.testing.assert_array_equal(power, result.power[1])
    best_line = [ln for ln in top.get_lines() if ln.get_linestyle() == "--"]
    assert len(best_line) == 1
    assert best_line[0].get_xdata()[0] == result.frequency_best[1]
    assert abs(1 / result.frequency_best[1] - PERIODS[1]) < 0.02
    assert any(f"P = {result.period[1]:.6g}" in text for text in legend_texts(top))

    t, _, dy = catalog.lightcurve(1)
    expected = stats.false_alarm_level(
        [0.1, 0.01, 0.001], n=t.size, fmax=GRID.fmax, t=t, dy=dy, normalization="standard"
    )
    heights = [line.get_ydata()[0] for line in fap_lines(top)]
    np.testing.assert_allclose(heights, expected, rtol=1e-12)
    # The levels are the inverse of the result's own false-alarm probabilities.
    faps = result.false_alarm_probability(power=np.tile(heights, (3, 1)))[1]
    np.testing.assert_allclose(faps, [0.1, 0.01, 0.001], rtol=1e-8)
    labels = {text.get_text() for text in top.texts}
    assert {"FAP 0.1", "FAP 0.01", "FAP 0.001"} <= labels

    phase = ((t - t.min()) * result.frequency_best[1]) % 1.0
    np.testing.assert_allclose(folded_x(bottom), np.concatenate((phase, phase + 1.0)))
    errorbars = [c for c in bottom.collections if isinstance(c, LineCollection)]
    assert len(errorbars) == 1 and len(errorbars[0].get_segments()) == 2 * t.size


@pytest.mark.parametrize("normalization", ["psd", "log"])
def test_fap_levels_follow_the_normalization(catalog, cpu_device, normalization):
    one = catalog.subset([0])
    r = clperiod.lombscargle(one, GRID, normalization=normalization, periodogram=True,
                             device=cpu_device)
    fig = plot_result(r, one, fap_levels=[0.05], fap_method="davies")
    t, _, dy = one.lightcurve(0)
    level = stats.false_alarm_level(0.05, n=t.size, fmax=GRID.fmax, t=t, dy=dy,
                                    normalization=normalization, method="davies")
    (line,) = fap_lines(fig.axes[0])
    assert line.get_ydata()[0] == pytest.approx(level, rel=1e-12)


def test_no_fap_lines_when_not_asked_and_uncentred_lines_from_the_zero_mean_null(
        result, catalog, cpu_device):
    fig = plot_result(result, catalog, 0, fap_levels=())
    assert fap_lines(fig.axes[0]) == []
    raw = clperiod.lombscargle(catalog, GRID, method="standard", periodogram=True,
                               device=cpu_device)  # fit_mean = center_data = False
    fig = plot_result(raw, catalog, 0, fap_levels=[0.01])
    t, _, _ = catalog.lightcurve(0)
    level = stats.false_alarm_level(0.01, n=t.size, fmax=GRID.fmax, t=t,
                                    normalization=raw.normalization, fit_mean=False,
                                    center_data=False)
    centred = stats.false_alarm_level(0.01, n=t.size, fmax=GRID.fmax, t=t,
                                      normalization=raw.normalization)
    (line,) = fap_lines(fig.axes[0])
    assert line.get_ydata()[0] == pytest.approx(level, rel=1e-12)
    assert level != pytest.approx(centred, rel=1e-6)  # dH = 0, not the centred null


def test_supersmoother_result_plots_without_fap(catalog, cpu_device):
    one = catalog.subset([2])
    grid = FrequencyGrid.from_range(0.05, 2.0, 600)
    r = clperiod.supersmoother(one, grid, periodogram=True, top_k=2, device=cpu_device)
    fig = plot_result(r, one)
    top, bottom = fig.axes
    np.testing.assert_array_equal(top.get_lines()[0].get_ydata(), r.power[0])
    assert fap_lines(top) == []
    assert any("SuperSmoother has no analytic FAP" in text for text in legend_texts(top))
    assert "SuperSmoother (original)" in top.get_title()
    t, _, _ = one.lightcurve(0)
    phase = ((t - t.min()) * r.frequency_best[0]) % 1.0
    np.testing.assert_allclose(folded_x(bottom), np.concatenate((phase, phase + 1.0)))


def test_axes_in_a_subfigure_give_the_whole_figure_and_save_it(result, catalog, tmp_path):
    from matplotlib.figure import Figure

    fig = Figure()
    panels = fig.subfigures(1, 2)[1].subplots(2, 1)
    path = tmp_path / "in_subfigure.png"
    assert plot_result(result, catalog, 0, ax=list(panels), path=path) is fig
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert panels[0].get_lines()[0].get_ydata().tolist() == result.power[0].tolist()


def test_without_periodogram_only_the_fold_is_drawn(catalog, cpu_device):
    r = clperiod.lombscargle(catalog, GRID, device=cpu_device)
    fig = plot_result(r, catalog, 2)
    (ax,) = fig.axes
    assert "periodogram not stored" in " ".join(text.get_text() for text in ax.texts)
    assert f"P = {r.period[2]:.6g}" in ax.get_title()


def test_long_periodogram_is_drawn_as_an_envelope_keeping_every_peak(catalog, cpu_device):
    one = catalog.subset([0])
    grid = FrequencyGrid.from_range(0.05, 5.0, 50_000)
    r = clperiod.lombscargle(one, grid, periodogram=True, device=cpu_device)
    fig = plot_result(r, one, fap_levels=())
    frequency, power = fig.axes[0].get_lines()[0].get_data()
    assert frequency.size == 20_000
    assert power.max() == r.power[0].max() and power.min() == r.power[0].min()


def test_a_frequency_array_is_drawn_along_frequency(catalog, cpu_device):
    """A shuffled array with repeats: the line runs along rising frequency, and the
    townsend levels count the distinct frequencies, as the result's probabilities."""
    one = catalog.subset([1])
    rng = np.random.default_rng(2)
    values = 1.0 / np.linspace(0.25, 15.0, 500)
    frequencies = rng.permutation(np.concatenate([values, values[:20]]))
    r = clperiod.lombscargle(one, FrequencyGrid.from_frequencies(frequencies),
                             periodogram=True, device=cpu_device)
    fig = plot_result(r, one, fap_levels=[0.01], fap_method="townsend")
    frequency, power = fig.axes[0].get_lines()[0].get_data()
    rising = np.argsort(frequencies, kind="stable")
    np.testing.assert_array_equal(frequency, frequencies[rising])
    np.testing.assert_array_equal(power, r.power[0, rising])
    (line,) = fap_lines(fig.axes[0])
    fap = r.false_alarm_probability("townsend", power=np.array([line.get_ydata()[0]]))
    np.testing.assert_allclose(fap, 0.01, rtol=1e-8)


@pytest.mark.slow
def test_plot_objects_saves_one_figure_per_object(result, catalog, tmp_path, monkeypatch):
    drawn = {}
    original = plot_result

    def spy(res, cat, index, **kwargs):
        fig = original(res, cat, index, **kwargs)
        drawn[str(kwargs["path"])] = (index, fig)
        return fig

    monkeypatch.setattr("clperiod.plot.plot_result", spy)
    open_before = plt.get_fignums()
    paths = plot_objects(result, catalog, [303, "101", np.int64(303)], tmp_path / "figs",
                         fap_levels=[0.2])
    assert plt.get_fignums() == open_before
    assert paths == [tmp_path / "figs" / "303.png", tmp_path / "figs" / "101.png",
                     tmp_path / "figs" / "303.png"]
    assert sorted(drawn) == sorted({str(p) for p in paths})  # the repeated id is drawn once
    for path in set(paths):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        index, fig = drawn[str(path)]
        assert result.ids[index] == int(path.stem)
        t, _, dy = catalog.lightcurve(index)
        phase = ((t - t.min()) * result.frequency_best[index]) % 1.0
        np.testing.assert_allclose(folded_x(fig.axes[1]), np.concatenate((phase, phase + 1.0)))
        level = stats.false_alarm_level(0.2, n=t.size, fmax=GRID.fmax, t=t, dy=dy)
        (line,) = fap_lines(fig.axes[0])
        assert line.get_ydata()[0] == pytest.approx(level, rel=1e-12)


def test_plot_objects_file_names_and_formats(catalog, cpu_device, tmp_path):
    renamed = Catalog(np.array(["a/b c", "a_b_c", ".hidden"]), catalog.offsets,
                      catalog.t, catalog.y, catalog.dy)
    r = clperiod.lombscargle(renamed, GRID, device=cpu_device)
    paths = plot_objects(r, renamed, [".hidden", "a/b c", "a_b_c"], tmp_path, fmt="svg")
    assert [p.name for p in paths] == [f"_.hidden-{_digest('.hidden')}.svg",
                                       f"a_b_c-{_digest('a/b c')}.svg", "a_b_c.svg"]
    for path in paths:
        assert path.read_text().lstrip().startswith("<?xml")


def _digest(text: str) -> str:
    import hashlib

    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def test_file_names_stay_unique_across_calls_and_short(catalog, cpu_device, tmp_path):
    """Ids that clash once made safe, or are too long for a file name, get a hash of
    the id: distinct names in separate calls (the chunks of a catalog run)."""
    from clperiod.plot import file_stem

    long_id = "x" * 300
    ids = ["a/b", "a_b", long_id]
    figures = []
    for k, object_id in enumerate(ids):  # one call per id, as in a run's chunks
        one = Catalog(np.array([object_id]), catalog.offsets[:2], catalog.t[:60],
                      catalog.y[:60], catalog.dy[:60])
        r = clperiod.lombscargle(one, GRID, device=cpu_device)
        figures += plot_objects(r, one, [object_id], tmp_path, fap_levels=())
    assert len(set(figures)) == 3 and sorted(tmp_path.iterdir()) == sorted(figures)
    assert [p.name for p in figures] == [f"a_b-{_digest('a/b')}.png", "a_b.png",
                                         f"{'x' * 100}-{_digest(long_id)}.png"]
    # an id that reads like a hashed name is hashed itself, so it cannot take another's
    lookalike = f"a_b-{_digest('a/b')}"
    assert file_stem(lookalike) == f"{lookalike}-{_digest(lookalike)}"
    assert file_stem(np.int64(1234)) == "1234" and file_stem("") == f"_-{_digest('')}"


@pytest.mark.parametrize("given, t_axis, frequency_axis, y_axis, inverted", [
    (None, "t", "frequency [cycles per unit of t]", "y", False),
    ({"t": "mjd", "y": "mag"}, "mjd [d]", "frequency [1/d]", "mag", True),
    ({"t": "BJD_TDB", "y": "psfMag_r"}, "BJD_TDB [d]", "frequency [1/d]", "psfMag_r", True),
    ({"t": "time", "y": "z", "y_unit": "ABmag"}, "time", "frequency [cycles per unit of time]",
     "z [ABmag]", True),
    ({"t": "mjd", "y": "mag", "invert_y": False}, "mjd [d]", "frequency [1/d]", "mag", False),
    ({"t": "t", "y": "flux", "t_unit": "s", "y_unit": "e-/s"}, "t [s]", "frequency [1/s]",
     "flux [e-/s]", False),
    ({"t": "hjd", "y": "image_flux"}, "hjd [d]", "frequency [1/d]", "image_flux", False),
])
def test_axes_carry_column_names_units_and_magnitudes_grow_downwards(
        result, catalog, given, t_axis, frequency_axis, y_axis, inverted):
    from clperiod.plot import PlotLabels

    labels = None if given is None else PlotLabels(**given)
    fig = plot_result(result, catalog, 1, labels=labels)
    top, bottom = fig.axes
    assert top.get_xlabel() == frequency_axis
    assert bottom.get_ylabel() == y_axis
    assert bool(bottom.yaxis_inverted()) is inverted and not top.yaxis_inverted()
    t_name = "t" if labels is None else labels.t
    t0 = catalog.lightcurve(1)[0].min()
    assert bottom.get_xlabel() == f"phase (two cycles; phase 0 at {t_name} = {t0:.6f})"
    unit = "" if labels is None else labels.time_unit
    period = f"{result.period[1]:.6g}" + (f" {unit}" if unit else "")
    assert f"folded at P = {period} (" in bottom.get_title()
    assert any(f"P = {period}" in text for text in legend_texts(top))
    assert (labels or PlotLabels()).time_label == t_axis


def test_an_object_without_a_period_is_drawn_against_named_time(catalog, cpu_device):
    from clperiod.plot import PlotLabels

    short = Catalog.from_lightcurves([(catalog.t[:3], catalog.y[:3], catalog.dy[:3])], ids=[7])
    r = clperiod.lombscargle(short, GRID, periodogram=True, device=cpu_device)
    assert r.status[0] == clperiod.Status.TOO_FEW_POINTS
    bottom = plot_result(r, short, labels=PlotLabels("mjd", "g", y_unit="mag")).axes[-1]
    assert (bottom.get_xlabel(), bottom.get_ylabel()) == ("mjd [d]", "g [mag]")
    assert bottom.yaxis_inverted() and bottom.get_title() == "object 7: no period (TOO_FEW_POINTS)"


def test_titles_name_the_object_and_the_power_axis_its_normalization(result, catalog,
                                                                     cpu_device):
    fig = plot_result(result, catalog, 2, name="RR Lyr")
    top, bottom = fig.axes
    assert top.get_title().startswith("RR Lyr: generalized Lomb-Scargle, 4,000 frequencies")
    assert bottom.get_title().startswith("RR Lyr folded at P = ")
    assert top.get_ylabel() == r"power, standard normalization: $1 - \chi^2/\chi^2_{\rm ref}$"
    assert plot_result(result, catalog, 2).axes[0].get_title().startswith("object 303: ")
    psd = clperiod.lombscargle(catalog.subset([0]), GRID, normalization=None, periodogram=True,
                               device=cpu_device)
    assert plot_result(psd, catalog.subset([0])).axes[0].get_ylabel().startswith(
        "power, psd normalization: ")


def test_plot_objects_rejects_unknown_ids_and_formats(result, catalog, tmp_path):
    with pytest.raises(KeyError, match=r"not in the result: 999, 'x'"):
        plot_objects(result, catalog, [101, 999, "x"], tmp_path)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="fmt must be a format matplotlib writes"):
        plot_objects(result, catalog, [101], tmp_path, fmt="docx")
    with pytest.raises(ValueError, match=r"must lie in \(0, 1\)"):
        plot_objects(result, catalog, [101], tmp_path, fap_levels=[0.5, 1.0])
    with pytest.raises(TypeError, match="sequence of object ids"):
        plot_objects(result, catalog, "101", tmp_path)
    with pytest.raises(ValueError, match="catalog does not match"):
        plot_objects(result, catalog.subset([0, 1]), [101], tmp_path)
    with pytest.raises(TypeError, match="LombScargleResult, SuperSmootherResult, MultibandResult"):
        plot_objects(object(), catalog, [101], tmp_path)


MB_GRID = FrequencyGrid.from_range(0.05, 3.0, 1500)


@pytest.fixture(scope="module")
def band_catalog() -> Catalog:
    """Object 11 in bands g, r, i (different means); object 22 in g and i only."""
    rng = np.random.default_rng(23)
    curves = []
    for bands in (("g", "r", "i"), ("g", "i")):
        for band, mean in zip(bands, (15.0, 14.2, 13.9), strict=False):
            t, y, dy = sinusoid_lightcurve(rng, 40, 1.3, baseline=30.0, mean=mean,
                                           amplitude=0.4)
            curves.append((t, y, dy, [band] * t.size))
    ids = [11] * 3 + [22] * 2
    t, y, dy, band = (np.concatenate(c) for c in zip(*curves, strict=True))
    return Catalog.from_arrays(np.repeat(ids, 40), t, y, dy, band=band, bands=("g", "r", "i"))


@pytest.fixture(scope="module")
def band_result(band_catalog, cpu_device):
    return clperiod.lombscargle_multiband(band_catalog, MB_GRID, periodogram=True, top_k=2,
                                          device=cpu_device)


def test_multiband_result_plots_one_fold_panel_per_band_with_the_model(
        band_result, band_catalog, tmp_path):
    path = tmp_path / "multiband.png"
    fig = plot_result(band_result, band_catalog, 0, path=path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    top, *folds = fig.axes
    assert len(folds) == 3
    np.testing.assert_array_equal(top.get_lines()[0].get_ydata(), band_result.power[0])
    assert "multiband Lomb-Scargle (nterms 1+1)" in top.get_title()
    assert top.get_ylabel().startswith("power, multiband: ")
    assert fap_lines(top) == []
    assert any("the multiband FAP is a bootstrap" in text for text in legend_texts(top))
    assert abs(band_result.period[0] - 1.3) < 0.01
    assert f"P = {band_result.period[0]:.6g}" in folds[0].get_title()

    t, y, _, band = band_catalog.lightcurve(0)
    f = band_result.frequency_best[0]
    model = band_result.fit(0).model(t.min() + np.linspace(0, 2, 400) / f, f)
    for ax, label, expected in zip(folds, "gri", model, strict=True):
        assert [text.get_text() for text in ax.texts] == [f"{label} (n = 40)"]
        rows = band == label
        phase = ((t[rows] - t.min()) * f) % 1.0
        points = [ln for ln in ax.get_lines() if ln.get_gid() is None]
        np.testing.assert_allclose(np.concatenate([ln.get_xdata() for ln in points]),
                                   np.concatenate((phase, phase + 1.0)))
        (curve,) = [ln for ln in ax.get_lines() if ln.get_gid() == f"model {label}"]
        np.testing.assert_allclose(curve.get_ydata(), expected, rtol=1e-12)
        # The model follows the band's own level (means 15.0, 14.2, 13.9).
        assert abs(np.mean(expected) - np.mean(y[rows])) < 0.1
    assert folds[-1].get_xlabel().startswith("phase (two cycles")
    assert folds[0].get_xlabel() == ""


def test_the_title_names_the_precision_of_a_multiband_search(band_catalog, cpu_device):
    r = clperiod.lombscargle_multiband(band_catalog, MB_GRID, periodogram=True,
                                       precision="fp32", device=cpu_device)
    title = plot_result(r, band_catalog, 0).axes[0].get_title()
    assert title.endswith("1,500 frequencies, fp32")


def test_multiband_panels_are_the_bands_with_rows_and_axes_can_be_given(
        band_result, band_catalog):
    fig = plot_result(band_result, band_catalog, 1)
    labels = [[text.get_text() for text in ax.texts] for ax in fig.axes[1:]]
    assert labels == [["g (n = 40)"], ["i (n = 40)"]]
    from matplotlib.figure import Figure

    own = Figure()
    panels = own.subplots(3, 1)
    assert plot_result(band_result, band_catalog, 1, ax=list(panels)) is own
    with pytest.raises(ValueError, match="must provide 3 Axes"):
        plot_result(band_result, band_catalog, 1, ax=list(panels[:2]))


def test_multiband_without_bands_or_periodogram_draws_one_fold_panel(catalog, cpu_device):
    one = catalog.subset([0])
    r = clperiod.lombscargle_multiband(one, MB_GRID, device=cpu_device)
    (ax,) = plot_result(r, one).axes
    assert ax.texts[0].get_text().startswith("periodogram not stored")
    assert len([ln for ln in ax.get_lines() if ln.get_gid() == "model None"]) == 1
    assert f"P = {r.period[0]:.6g}" in ax.get_title()


def astropy_model(t, y, dy, nterms, t_fit, frequency):
    """astropy's weighted least-squares fit of a mean and ``nterms`` harmonics."""
    from astropy.timeseries import LombScargle

    return LombScargle(t, y, dy, nterms=nterms).model(t_fit, frequency)


def test_mhaov_result_plots_one_fold_panel_per_band_with_each_bands_fit(
        band_catalog, cpu_device, tmp_path):
    r = clperiod.mhaov(band_catalog, MB_GRID, nharmonics=2, fit_harmonics=2, periodogram=True,
                       top_k=2, device=cpu_device)
    path = tmp_path / "mhaov.png"
    fig = plot_result(r, band_catalog, 0, path=path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    top, *folds = fig.axes
    assert len(folds) == 3
    np.testing.assert_array_equal(top.get_lines()[0].get_ydata(), r.power[0])
    assert "multiband MHAOV (nharmonics 2, 2 fitted per band)" in top.get_title()
    assert top.get_ylabel().startswith("power, MHAOV: ")
    assert fap_lines(top) == []
    assert any("MHAOV's FAP is a bootstrap" in text for text in legend_texts(top))
    assert abs(r.period[0] - 1.3) < 0.01
    assert f"P = {r.period[0]:.6g}" in folds[0].get_title()
    t, y, dy, band = band_catalog.lightcurve(0)
    f = r.frequency_best[0]
    phase_grid = np.linspace(0, 2, 400)
    for ax, label in zip(folds, "gri", strict=True):
        assert [text.get_text() for text in ax.texts] == [f"{label} (n = 40)"]
        rows = band == label
        (curve,) = [ln for ln in ax.get_lines() if ln.get_gid() == f"model {label}"]
        expected = astropy_model(t[rows], y[rows], dy[rows], 2, t.min() + phase_grid / f, f)
        np.testing.assert_allclose(curve.get_xdata(), phase_grid)
        np.testing.assert_allclose(curve.get_ydata(), expected, rtol=1e-9)


def test_mhaov_panels_say_which_band_the_statistic_left_out(band_catalog, cpu_device):
    """Object 22's band i keeps 5 rows: below min_points=6, left out, drawn without a fit."""
    keep = np.ones(band_catalog.t.size, bool)
    keep[np.flatnonzero(band_catalog.band_codes == 2)[-35:]] = False  # codes: g 0, r 1, i 2
    ids = np.repeat(band_catalog.ids, band_catalog.lengths)[keep]
    labels = band_catalog.band_labels()[band_catalog.band_codes[keep]]
    cut = Catalog.from_arrays(ids, band_catalog.t[keep], band_catalog.y[keep],
                              band_catalog.dy[keep], band=labels, bands=band_catalog.bands)
    r = clperiod.mhaov(cut, MB_GRID, min_points=6, device=cpu_device)
    assert r.band_used[1].tolist() == [True, False, False]
    panels = plot_result(r, cut, 1).axes
    assert [ax.texts[0].get_text() for ax in panels] == [
        "g (n = 40)", "i (n = 5, left out: too few rows)"]
    assert [len([ln for ln in ax.get_lines() if ln.get_gid() is not None]) for ax in panels] \
        == [1, 0]
    assert panels[1].texts[1].get_text().startswith("periodogram not stored")


def test_single_band_mhaov_draws_one_fold_panel_with_the_fit(catalog, cpu_device):
    r = clperiod.mhaov(catalog, GRID, nharmonics=3, use_errors=False, periodogram=True,
                       device=cpu_device)
    top, fold = plot_result(r, catalog, 2).axes
    assert "MHAOV (nharmonics 3), 4,000 frequencies, fp64" in top.get_title()
    (curve,) = [ln for ln in fold.get_lines() if ln.get_gid() == "model None"]
    t, y = catalog.lightcurve(2)[:2]
    f = r.frequency_best[2]
    expected = astropy_model(t, y, None, 3, t.min() + np.linspace(0, 2, 400) / f, f)
    np.testing.assert_allclose(curve.get_ydata(), expected, rtol=1e-9)
    assert f"P = {r.period[2]:.6g}" in fold.get_title()
