"""Tests of clperiod.grid: construction, astropy autofrequency, Richards rule, chunks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from astropy.timeseries import LombScargle

from clperiod.catalog import Catalog
from clperiod.grid import FrequencyArray, FrequencyGrid, search_grid

SDSS = Path(__file__).resolve().parents[1] / "clperiod" / "data" / "SDSS_stripe82_band_z.txt"


@pytest.fixture(scope="module")
def times():
    rng = np.random.default_rng(42)
    return np.sort(rng.uniform(55000.0, 55130.0, size=97))


def test_from_range_excludes_endpoint():
    grid = FrequencyGrid.from_range(0.1, 10.0, 330)
    f = grid.frequencies()
    assert grid.df == (10.0 - 0.1) / 330
    assert f.size == len(grid) == 330 and f.dtype == np.float64
    assert f[0] == 0.1 and f[-1] < 10.0
    np.testing.assert_allclose(f[-1] + grid.df, 10.0, rtol=1e-15)
    assert grid.fmax == f[-1]
    np.testing.assert_array_equal(grid.periods(), 1.0 / f)


def test_from_step_and_frequency():
    grid = FrequencyGrid.from_step(0.0, 0.25, 5)
    np.testing.assert_array_equal(grid.frequencies(), [0.0, 0.25, 0.5, 0.75, 1.0])
    assert grid.periods()[0] == np.inf
    assert grid.frequency(3) == 0.75 and isinstance(grid.frequency(3), float)
    np.testing.assert_array_equal(grid.frequency(np.array([0, 4])), [0.0, 1.0])
    with pytest.raises(IndexError):
        grid.frequency(5)
    with pytest.raises(IndexError):
        grid.frequency(-1)
    with pytest.raises(TypeError):
        grid.frequency(1.5)


@pytest.mark.parametrize(
    "spp, nyq, fmin, fmax",
    [
        (5, 5, None, None),
        (10, 2, None, None),
        (3.3, 7.5, None, None),
        (5, 5, 0.05, None),
        (5, 5, None, 3.0),
        (7, 1, 0.2, 4.4),
        (1, 1, 0.0, 1.0),
    ],
)
def test_auto_matches_astropy(times, spp, nyq, fmin, fmax):
    ls = LombScargle(times, np.sin(times))
    kwargs = dict(
        samples_per_peak=spp, nyquist_factor=nyq, minimum_frequency=fmin, maximum_frequency=fmax
    )
    expected = ls.autofrequency(**kwargs)
    grid = FrequencyGrid.auto(times, **kwargs)
    assert grid.nf == expected.size
    np.testing.assert_array_equal(grid.frequencies(), expected)
    assert (grid.fmin, grid.fmax) == ls.autofrequency(**kwargs, return_freq_limits=True)


def test_auto_for_a_catalog_uses_largest_baseline_and_length(times):
    short = times[:30] - times[0]  # shorter baseline, fewer points
    long_ = np.linspace(0.0, 200.0, 50)  # longest baseline, not the most points
    cat = Catalog.from_lightcurves([(short, short), (long_, long_), (times, times)])
    grid = FrequencyGrid.auto(cat)
    df = 1.0 / 200.0 / 5
    assert grid.df == df and grid.fmin == 0.5 * df
    assert grid.nf == 1 + int(np.round((5 * 0.5 * times.size / 200.0 - 0.5 * df) / df))


def test_auto_accepts_int_times_and_rejects_degenerate():
    assert FrequencyGrid.auto(np.arange(10)).df == 1.0 / 9 / 5
    with pytest.raises(ValueError, match="baseline"):
        FrequencyGrid.auto(np.ones(5))
    with pytest.raises(ValueError, match="maximum_frequency .* below the minimum frequency"):
        FrequencyGrid.auto(np.arange(10.0), minimum_frequency=2.0, maximum_frequency=1.0)
    with pytest.raises(ValueError):
        FrequencyGrid.auto(np.arange(10.0), samples_per_peak=0)
    with pytest.raises(ValueError, match="finite"):
        FrequencyGrid.auto(np.array([0.0, np.nan, 2.0]))
    with pytest.raises(TypeError):
        FrequencyGrid.auto(np.arange(3) + 0j)


def test_richards_paper_example():
    # gpu_lomb_scargle Example 9: T_max = 119.989583 gives N_f = 11878 on [0.1, 10].
    grid = FrequencyGrid.richards(np.array([0.0, 50.0, 119.989583]), 0.1, 10.0)
    assert grid.nf == 11878
    assert grid.df == 9.9 / 11878


def test_richards_uses_row_order():
    t = np.array([5.0, 0.0, 10.0, 7.0])  # t_last - t_first = 2, not max - min = 10
    assert FrequencyGrid.richards(t, 1.0, 2.0).nf == int(1.0 / (0.1 / 2.0))


def test_richards_on_sdss_stripe82():
    data = np.loadtxt(SDSS, delimiter=",")
    cat = Catalog.from_arrays(data[:, 0].astype(np.int64), data[:, 1], data[:, 2], data[:, 3])
    assert cat.n_objects == 136 and cat.t.size == 7064
    spans = [t[-1] - t[0] for t in (cat.lightcurve(k)[0] for k in range(cat.n_objects))]
    t_max = max(spans)
    grid = FrequencyGrid.richards(cat, 0.1, 10.0)
    nf = int((10.0 - 0.1) / (0.1 / t_max))
    assert grid.nf == nf
    assert grid.fmin == 0.1 and grid.df == (10.0 - 0.1) / nf
    assert 0.1 / t_max <= grid.df < 0.1 / t_max * (1 + 1.0 / nf)  # from_range rounds df up


@pytest.mark.parametrize("nf, max_nf", [(10, 3), (10, 10), (10, 25), (1, 1), (1000, 7)])
def test_chunks_cover_the_grid(nf, max_nf):
    grid = FrequencyGrid.from_range(0.5, 3.0, nf)
    pieces = grid.chunks(max_nf)
    starts = [start for start, _ in pieces]
    sizes = [piece.nf for _, piece in pieces]
    assert starts == list(np.cumsum([0] + sizes[:-1]))
    assert sum(sizes) == nf and max(sizes) <= max_nf and min(sizes) >= 1
    joined = np.concatenate([piece.frequencies() for _, piece in pieces])
    np.testing.assert_allclose(joined, grid.frequencies(), rtol=1e-14)
    assert all(piece.df == grid.df for _, piece in pieces)
    with pytest.raises(ValueError):
        grid.chunks(0)


@pytest.mark.parametrize(
    "build",
    [
        lambda: FrequencyGrid(np.nan, 0.1, 10),
        lambda: FrequencyGrid(0.1, np.inf, 10),
        lambda: FrequencyGrid(-0.1, 0.1, 10),
        lambda: FrequencyGrid(0.1, 0.0, 10),
        lambda: FrequencyGrid(0.1, -0.1, 10),
        lambda: FrequencyGrid(0.1, 0.1, 0),
        lambda: FrequencyGrid(0.1, 0.1, 2**31),
        lambda: FrequencyGrid.from_range(1.0, 1.0, 10),
        lambda: FrequencyGrid.from_range(2.0, 1.0, 10),
        lambda: FrequencyGrid.from_range(0.1, np.inf, 10),
        lambda: FrequencyGrid.from_range(0.1, 1.0, 0),
        lambda: FrequencyGrid.richards(np.arange(10.0), 1.0, 1.001),  # nf = 0
    ],
)
def test_invalid_grids_raise(build):
    with pytest.raises(ValueError):
        build()


def test_nf_must_be_an_integer():
    with pytest.raises(TypeError):
        FrequencyGrid(0.1, 0.1, 10.5)
    assert FrequencyGrid(0.1, 0.1, np.int64(3)).nf == 3
    assert FrequencyGrid(0.1, 0.1, 2**31 - 1).nf == 2**31 - 1


# {{{ any frequencies


@pytest.mark.parametrize("values", [
    np.linspace(0.1, 5.0, 1000),
    np.arange(0.0, 3.0, 0.01),
    FrequencyGrid.from_range(0.3, 7.0, 333).frequencies(),
    np.array([2.5]),
    np.array([0.0]),
])
def test_from_frequencies_recognises_a_uniform_grid(values):
    grid = FrequencyGrid.from_frequencies(values)
    assert type(grid) is FrequencyGrid and grid.nf == values.size
    assert grid.fmin == values[0]
    tolerance = 8 * np.finfo(np.float64).eps * values[-1]
    np.testing.assert_allclose(grid.frequencies(), values, rtol=0, atol=tolerance)
    assert search_grid(grid) == (grid, None)


@pytest.mark.parametrize("values", [
    1.0 / np.linspace(0.5, 10.0, 200),  # uniform in period
    np.geomspace(0.01, 10.0, 300),  # log-spaced
    0.2 + np.cumsum(1e-3 * np.cumprod(np.full(2000, 1 + 1e-12))),  # spacing drifts slowly
    np.linspace(0.1, 5.0, 1000)[::-1],  # uniform but falling
    np.array([0.3, 0.1, 0.2]),
    np.array([1.0, 1.0]),
    np.concatenate([np.linspace(0.1, 1.0, 10), [1.5], np.linspace(2.0, 3.0, 11)]),
])
def test_from_frequencies_keeps_other_arrays_as_given(values):
    grid = FrequencyGrid.from_frequencies(values)
    assert isinstance(grid, FrequencyArray)
    np.testing.assert_array_equal(grid.frequencies(), values)
    np.testing.assert_array_equal(grid.periods(), 1.0 / values)
    assert grid.nf == len(grid) == values.size
    assert (grid.fmin, grid.fmax) == (values.min(), values.max())
    assert grid.frequency(1) == values[1] and isinstance(grid.frequency(1), float)
    np.testing.assert_array_equal(grid.frequency(np.array([0, 1])), values[:2])
    with pytest.raises(IndexError):
        grid.frequency(values.size)
    with pytest.raises(TypeError):
        grid.frequency(0.5)
    searched, positions = search_grid(grid)
    distinct = np.unique(values)
    np.testing.assert_allclose(searched.frequencies(), distinct, rtol=0,
                               atol=8 * np.finfo(np.float64).eps * distinct[-1])
    evaluated = searched.frequencies() if positions is None else searched.frequencies()[positions]
    np.testing.assert_allclose(evaluated, values, rtol=0,
                               atol=8 * np.finfo(np.float64).eps * distinct[-1])
    assert search_grid(grid)[0] is searched  # computed once


def test_search_grid_of_arrays():
    rising = FrequencyGrid.from_frequencies(np.geomspace(0.1, 1.0, 50))
    assert search_grid(rising) == (rising, None)
    falling = FrequencyGrid.from_frequencies(np.linspace(0.1, 1.0, 50)[::-1])
    uniform, positions = search_grid(falling)  # a uniform kernel's grid, read backwards
    assert type(uniform) is FrequencyGrid and uniform.nf == 50
    np.testing.assert_array_equal(positions, np.arange(50)[::-1])
    repeated = FrequencyGrid.from_frequencies([0.5, 0.2, 0.5, 0.9])
    distinct, positions = search_grid(repeated)
    np.testing.assert_array_equal(distinct.frequencies(), [0.2, 0.5, 0.9])
    np.testing.assert_array_equal(positions, [1, 0, 1, 2])
    with pytest.raises(TypeError, match="grid must be a FrequencyGrid or FrequencyArray"):
        search_grid(np.array([0.1, 0.2]))


def test_frequency_arrays_are_values():
    values = np.array([0.3, 0.1, 0.2])
    grid = FrequencyGrid.from_frequencies(values)
    values[0] = 7.0  # the grid holds a copy
    assert grid.frequencies()[0] == 0.3
    out = grid.frequencies()
    out[0] = 9.0
    assert grid.frequencies()[0] == 0.3
    same = FrequencyArray([0.3, 0.1, 0.2])
    assert grid == same and hash(grid) == hash(same) and grid != FrequencyArray([0.3, 0.1])
    assert "FrequencyArray(nf=3" in repr(grid)
    assert FrequencyGrid.from_frequencies([1, 3, 2]).frequencies().dtype == np.float64


@pytest.mark.parametrize("values, error, match", [
    ([], ValueError, "frequencies must not be empty"),
    ([[0.1, 0.2]], ValueError, r"frequencies must be a 1-D array, got shape \(1, 2\)"),
    (0.5, ValueError, "frequencies must be a 1-D array"),
    ([0.1, -0.2], ValueError, r"frequencies must be finite and >= 0, got -0.2 at index 1"),
    ([0.1, np.nan], ValueError, "frequencies must be finite and >= 0, got nan"),
    ([np.inf], ValueError, "frequencies must be finite and >= 0, got inf"),
    (["0.1", "0.2"], TypeError, "frequencies must be real numbers"),
    ([True, False], TypeError, "frequencies must be real numbers"),
    ([1 + 2j], TypeError, "frequencies must be real numbers"),
    (np.ma.masked_array([0.1, 0.2], [False, True]), ValueError, "frequencies has 1 masked"),
])
def test_from_frequencies_bad_input(values, error, match):
    with pytest.raises(error, match=match):
        FrequencyGrid.from_frequencies(values)
    with pytest.raises(error, match=match):
        FrequencyArray(values)


# }}}
